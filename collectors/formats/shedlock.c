/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shedlock.c - ShedLock's Redis providers.
 *
 * ShedLock stores "ADDED:<ISO-8601 UTC>@<hostname>:<uuid>" (6.7.0 and
 * later; before that without ":<uuid>"), which tells us when and on which
 * host a scheduled job took its lock.  The time is parsed by
 * formats_parse_iso_utc() (formats.c) rather than with strptime()/timegm()
 * so the decoder depends on no locale or time zone and stays pure.
 * ShedLock writes exactly three fractional digits; one to nine are
 * accepted (Java's ISO_INSTANT drops zeros), none too.
 *
 * Remember when reading these locks that ShedLock keeps its key for
 * lockAtLeastFor after the job ends: a young key is not a stuck job.
 */
#include <string.h>

#include "collectors/formats/formats_impl.h"

#define ADDED_PREFIX     "ADDED:"
#define ADDED_PREFIX_LEN (sizeof(ADDED_PREFIX) - 1)
#define HOSTNAME_MAX     255    /* DNS limit; longer is not a host name */

struct shed_value {
    int64_t acquired_ms;
    const char *host;
    size_t hostlen;
};

static int
parse_shedlock(const struct raw_lock *raw, struct shed_value *out)
{
    const char *s = raw->value, *rest;
    size_t len = raw->valuelen, used, rlen;

    /* A ShedLock value is far below RAW_VALUE_MAX; a cut one is not it. */
    if (raw->type != RAW_STRING || raw->value_truncated || s == NULL ||
        len < ADDED_PREFIX_LEN ||
        memcmp(s, ADDED_PREFIX, ADDED_PREFIX_LEN) != 0)
        return -1;
    s += ADDED_PREFIX_LEN;
    len -= ADDED_PREFIX_LEN;

    used = formats_parse_iso_utc(s, len, &out->acquired_ms);
    if (used == 0 || used >= len || s[used] != '@' ||
        !fmt_time_plausible(out->acquired_ms))
        return -1;
    rest = s + used + 1;
    rlen = len - used - 1;

    /* ShedLock itself takes the uuid after the last ':'; only strip it
     * when it really is one, so an old value's host name stays whole. */
    if (rlen >= FMT_UUID_LEN + 1 && rest[rlen - FMT_UUID_LEN - 1] == ':' &&
        fmt_is_uuid(rest + rlen - FMT_UUID_LEN, FMT_UUID_LEN, false))
        rlen -= FMT_UUID_LEN + 1;

    if (rlen == 0 || rlen > HOSTNAME_MAX)
        return -1;
    for (size_t i = 0; i < rlen; i++) {
        unsigned char c = (unsigned char)rest[i];

        if (c < 0x21 || c > 0x7e)
            return -1;
    }
    out->host = rest;
    out->hostlen = rlen;
    return 0;
}

bool
fmt_shedlock_claims(const struct raw_lock *raw)
{
    struct shed_value v;

    return parse_shedlock(raw, &v) == 0;
}

int
fmt_shedlock_decode(const struct raw_lock *raw, struct lock_view *view)
{
    struct shed_value v;

    fmt_view_reset(view);
    if (parse_shedlock(raw, &v) == -1)
        return -1;
    fmt_add_holder(view, raw->value, raw->valuelen, false, 1);
    fmt_set_host(view, v.host, v.hostlen);
    view->acquired_ms = v.acquired_ms;
    return 0;
}
