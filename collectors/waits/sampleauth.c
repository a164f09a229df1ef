/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sampleauth.c - verify (and, for tests, make) a datagram's mac line.
 *
 * The mac is checked before the time: a forged datagram counts as
 * bad_mac whatever time it claims, so `stale` means a genuine datagram
 * that is old (a replay, or a sender whose clock is off), which is what
 * an operator needs to tell those apart.  The comparison is constant-time
 * (CRYPTO_memcmp) so the mac cannot be learnt a byte at a time.
 */
#include "collectors/waits/sampleauth.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/lw1.h"
#include "common/lw1mac.h"

static const char *const reason_names[SAMPLEAUTH_REJECTS] = {
    [SAMPLEAUTH_UNSIGNED] = "unsigned",
    [SAMPLEAUTH_BAD_MAC] = "bad_mac",
    [SAMPLEAUTH_STALE] = "stale",
    [SAMPLEAUTH_TRUNCATED] = "truncated",
    [SAMPLEAUTH_REPLAY] = "replay",
};

const char *
sampleauth_reason_str(enum sampleauth_verdict v)
{
    return (unsigned)v < SAMPLEAUTH_REJECTS ? reason_names[v] : "?";
}

static int
hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;              /* upper case too: the writer's form is exact */
}

enum sampleauth_verdict
sampleauth_check(const void *key, size_t keylen, const char *buf, size_t len,
                 bool truncated, int64_t now_s, size_t *skip)
{
    unsigned char want[LW1_MAC_BYTES], got[LW1_MAC_BYTES];
    const char *nl;
    size_t linelen, i;
    uint64_t t;
    bool has_mac = len >= LW1_MAC_PREFIX_LEN &&
                   memcmp(buf, LW1_MAC_PREFIX, LW1_MAC_PREFIX_LEN) == 0;

    *skip = 0;
    nl = memchr(buf, '\n', len);
    if (keylen == 0) {
        /* No key: skip a leading mac line unread (a cut one swallows the
         * whole datagram: it had no sample line anyway). */
        if (has_mac)
            *skip = nl != NULL ? (size_t)(nl - buf) + 1 : len;
        return SAMPLEAUTH_OK;
    }
    if (truncated)
        return SAMPLEAUTH_TRUNCATED;
    if (!has_mac)
        return SAMPLEAUTH_UNSIGNED;
    if (nl == NULL)
        return SAMPLEAUTH_BAD_MAC;
    linelen = (size_t)(nl - buf);
    if (linelen <= LW1_MAC_COVER_OFF || buf[LW1_MAC_COVER_OFF - 1] != ' ')
        return SAMPLEAUTH_BAD_MAC;
    for (i = 0; i < LW1_MAC_BYTES; i++) {
        int hi = hexval((unsigned char)buf[LW1_MAC_PREFIX_LEN + 2 * i]);
        int lo = hexval((unsigned char)buf[LW1_MAC_PREFIX_LEN + 2 * i + 1]);

        if (hi < 0 || lo < 0)
            return SAMPLEAUTH_BAD_MAC;
        got[i] = (unsigned char)(hi << 4 | lo);
    }
    /* the time: canonical digits up to the "\n" ("\r" is not a digit) */
    if (lw1_parse_udec(buf + LW1_MAC_COVER_OFF, linelen - LW1_MAC_COVER_OFF,
                       LW1_MAC_TIME_DIGITS, true, &t) == -1)
        return SAMPLEAUTH_BAD_MAC;
    if (lw1_mac(key, keylen, buf + LW1_MAC_COVER_OFF, len - LW1_MAC_COVER_OFF, want) == -1 ||
        CRYPTO_memcmp(want, got, LW1_MAC_BYTES) != 0)
        return SAMPLEAUTH_BAD_MAC;
    if ((int64_t)t < now_s - LW1_MAC_WINDOW_S || (int64_t)t > now_s + LW1_MAC_WINDOW_S)
        return SAMPLEAUTH_STALE;
    *skip = linelen + 1;
    return SAMPLEAUTH_OK;
}

void
sampleauth_mac_of(const char *buf, unsigned char *mac)
{
    for (size_t i = 0; i < LW1_MAC_BYTES; i++)
        mac[i] = (unsigned char)(hexval((unsigned char)buf[LW1_MAC_PREFIX_LEN + 2 * i]) << 4 |
                                 hexval((unsigned char)buf[LW1_MAC_PREFIX_LEN + 2 * i + 1]));
}

size_t
sampleauth_sign(const void *key, size_t keylen, const char *body, size_t body_len,
                int64_t now_s, char *out, size_t outlen)
{
    unsigned char mac[LW1_MAC_BYTES];
    char tail[LW1_MAC_TIME_DIGITS + 2];
    int tn = snprintf(tail, sizeof(tail), "%lld\n", (long long)now_s);
    size_t need;

    if (tn <= 0 || (size_t)tn >= sizeof(tail) || now_s < 0)
        return 0;
    need = LW1_MAC_COVER_OFF + (size_t)tn;
    /* the mac covers the time line and the body: build them in place */
    if (outlen < need + body_len)
        return 0;
    memcpy(out, LW1_MAC_PREFIX, LW1_MAC_PREFIX_LEN);
    out[LW1_MAC_COVER_OFF - 1] = ' ';
    memcpy(out + LW1_MAC_COVER_OFF, tail, (size_t)tn);
    memcpy(out + need, body, body_len);
    if (lw1_mac(key, keylen, out + LW1_MAC_COVER_OFF, (size_t)tn + body_len, mac) == -1)
        return 0;
    lw1_mac_hex(mac, out + LW1_MAC_PREFIX_LEN);
    return need + body_len;
}
