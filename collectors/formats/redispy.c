/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redispy.c - redis-py's Lock, whose default token is uuid.uuid1().hex.
 *
 * A uuid1 carries a 60-bit timestamp (100 ns ticks since 1582-10-15) and a
 * 48-bit node id, normally the host's MAC, so a redis-py lock tells us when
 * it was taken and roughly where.  That matters most for redis-py, whose
 * locks have no TTL by default and are the classic leak.
 *
 * node-redlock's and redis-semaphore's random 32-hex tokens look the
 * same; only the version and variant nibbles tell them apart, and a random
 * token passes that test one time in 64.  A plausible timestamp on top
 * (with the scan's time, within REDISPY_AGE_MAX_MS before it) leaves about
 * 1 in 77,000 random tokens, which at a million locks is a dozen locks
 * "held" for months.  A value cannot prove it is a uuid1, so the row is
 * FMT_PROVES_DECLARED: it decodes only keys a target's format_patterns
 * declare redis-py, where the operator's word makes the time a fact.
 */
#include <string.h>

#include "collectors/formats/formats_impl.h"
#include "common/keytext.h"

#define UUID1_HEX_LEN 32
/* How far from the scan's time a uuid1's time may be: held up to ~3 years
 * (a lock without a TTL that old is still shown, as "node-redlock" or
 * "plain", only without its time), or ahead by a day of clock skew. */
#define REDISPY_AGE_MAX_MS   (INT64_C(3) * 366 * 86400 * 1000)
#define REDISPY_AHEAD_MAX_MS (INT64_C(86400) * 1000)
/* 100 ns ticks from the Gregorian reform (uuid1's epoch) to 1970-01-01. */
#define UUID1_UNIX_OFFSET UINT64_C(0x01B21DD213814000)

struct uuid1 {
    int64_t unix_ms;
    unsigned char node[6];
};

static uint64_t
hex_field(const char *s, size_t n)
{
    uint64_t v = 0;

    for (size_t i = 0; i < n; i++)
        v = v << 4 | (uint64_t)keytext_hexval((unsigned char)s[i]);
    return v;
}

static int
parse_uuid1_hex(const struct raw_lock *raw, struct uuid1 *out)
{
    const char *s = raw->value;
    uint64_t ticks;

    if (raw->type != RAW_STRING || raw->value_truncated || s == NULL ||
        raw->valuelen != UUID1_HEX_LEN)
        return -1;
    for (size_t i = 0; i < UUID1_HEX_LEN; i++) {
        unsigned char c = (unsigned char)s[i];

        /* uuid.hex is lowercase; an uppercase token came from elsewhere. */
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return -1;
    }
    /* Version nibble 1, RFC 4122 variant (10xx). */
    if (s[12] != '1' || (s[16] != '8' && s[16] != '9' && s[16] != 'a' &&
                         s[16] != 'b'))
        return -1;

    /* Layout: time_low(8) time_mid(4) version(1) time_hi(3) clock_seq(4)
     * node(12).  The timestamp is time_hi:time_mid:time_low. */
    ticks = hex_field(s + 13, 3) << 48 | hex_field(s + 8, 4) << 32 |
            hex_field(s, 8);
    if (ticks < UUID1_UNIX_OFFSET)
        return -1;
    out->unix_ms = (int64_t)((ticks - UUID1_UNIX_OFFSET) / 10000);
    if (!fmt_time_plausible(out->unix_ms))
        return -1;
    /* A random 32-hex token (node-redlock) passes the nibble test 1 time
     * in 64 and then decodes to a time anywhere in 1582..5236: only a
     * time near the scan's makes it a uuid1 worth believing. */
    if (raw->now_ms > 0 && (out->unix_ms < raw->now_ms - REDISPY_AGE_MAX_MS ||
                            out->unix_ms > raw->now_ms + REDISPY_AHEAD_MAX_MS))
        return -1;
    for (size_t i = 0; i < 6; i++)
        out->node[i] = (unsigned char)hex_field(s + 20 + 2 * i, 2);
    return 0;
}

bool
fmt_redispy_claims(const struct raw_lock *raw)
{
    struct uuid1 u;

    return parse_uuid1_hex(raw, &u) == 0;
}

int
fmt_redispy_decode(const struct raw_lock *raw, struct lock_view *view)
{
    static const char hex[] = "0123456789abcdef";
    struct uuid1 u;

    fmt_view_reset(view);
    if (parse_uuid1_hex(raw, &u) == -1)
        return -1;
    fmt_add_holder(view, raw->value, raw->valuelen, false, 1);
    view->acquired_ms = u.unix_ms;

    /* Python sets the multicast bit when it had to make a node id up; only
     * a real MAC says anything about the host. */
    if ((u.node[0] & 0x01) == 0) {
        char mac[sizeof("mac:xx:xx:xx:xx:xx:xx")];
        size_t n = 0;

        memcpy(mac, "mac", 3);
        n = 3;
        for (size_t i = 0; i < 6; i++) {
            mac[n++] = ':';
            mac[n++] = hex[u.node[i] >> 4];
            mac[n++] = hex[u.node[i] & 0x0f];
        }
        fmt_set_host(view, mac, n);
    }
    return 0;
}
