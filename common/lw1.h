/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lw1.h - the lw1 grammar that liblockwatch writes and the agent reads:
 * the holder token of a plain lock and the fields of a sample line.
 *
 * Both sides of each contract compile these same lines, so a rule cannot
 * drift between the writer and the reader: client/token.c formats and
 * parses tokens, collectors/formats/liblockwatch.c decodes them;
 * client/report.c writes sample lines, collectors/waits/samples.c parses
 * them.  Header-only (static inline) because liblockwatch is built PIC
 * with hidden visibility and links nothing of the agent.  Pure: no I/O,
 * no allocation, nothing read past len.
 *
 * The token (collectors/formats/formats.h documents each field):
 *
 *     lw1:<host>:<pid>.<nonce>:<thread>:<acquired_unix_ms>:<16 lowercase hex>
 *
 * where <nonce> (16 lowercase hex) is drawn once per process start; the
 * older form without ".<nonce>" is still read.  Its party, the bytes up to
 * the fourth ':' ("lw1:<host>:<pid>.<nonce>:<thread>"), is one thread of
 * one process (collectors/graph/pairs.c ties a liblockwatch lock taken at
 * once to its owner by it): host, pid and thread recur (a restarted
 * container is pid 1 again), the nonce does not.
 *
 * A sample line (docs/line-protocol.md):
 *
 *     lw1 wait <key> <microseconds> <ok|timeout|error>
 *     lw1 hold <key> <microseconds> [<owner> <holder>]
 *     lw1 waiting <key> <owner> <holder> <start|ok|timeout|error>
 *     lw1 lost <key> <owner> <holder> <held-us> <overrun-us|-> <renewal|expired>
 *
 * and a signed datagram's first line, lw1 mac <32 hex> <unix-seconds>
 * (common/lw1mac.h computes the mac).
 */
#ifndef LOCKWATCH_LW1_H
#define LOCKWATCH_LW1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- the token ------------------------------------------------------------- */

#define LW1_PREFIX          "lw1:"
#define LW1_HOST_MAX        63          /* bytes of the host field */
#define LW1_RANDOM_HEX      16          /* hex digits of the random field */
#define LW1_NONCE_HEX       16          /* hex digits of the pid's nonce */
#define LW1_TOKEN_LEN_MAX   146         /* 4 + 64 + 28 + 20 + 14 + 16 */
/* Acquisition times outside [2000, 2100) are refused on both sides. */
#define LW1_TIME_MIN_MS     INT64_C(946684800000)
#define LW1_TIME_MAX_MS     INT64_C(4102444800000)

/* A byte the host field may hold: [A-Za-z0-9._-] (never ':'). */
static inline bool
lw1_host_byte_ok(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/*
 * len bytes at s as an unsigned decimal: 1..maxdigits digits (maxdigits
 * <= 19, so the value always fits 64 bits and no overflow check is
 * needed), no sign, no space.  canonical also refuses a leading zero
 * ("0" itself is fine).  0, or -1 with *out untouched.
 */
static inline int
lw1_parse_udec(const char *s, size_t len, size_t maxdigits, bool canonical, uint64_t *out)
{
    uint64_t v = 0;

    if (len == 0 || len > maxdigits || maxdigits > 19)
        return -1;
    if (canonical && len > 1 && s[0] == '0')
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

/*
 * len bytes at s as exactly digits lowercase hex digits (digits <= 16: a
 * token's random field, its nonce).  0, or -1 with *out untouched.
 */
static inline int
lw1_parse_hex(const char *s, size_t len, size_t digits, uint64_t *out)
{
    uint64_t v = 0;

    if (len != digits || digits > 16)
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c >= '0' && c <= '9')
            v = (v << 4) | (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = (v << 4) | (uint64_t)(c - 'a' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* A parsed token; host points into the parsed bytes (not NUL-terminated). */
struct lw1_token {
    const char *host;
    size_t hostlen;
    uint64_t pid;               /* 1 .. INT32_MAX */
    bool has_nonce;             /* "<pid>.<nonce>"; false: the older form */
    uint64_t nonce;             /* 0 without one */
    uint64_t thread;            /* 0 .. INT64_MAX */
    uint64_t acquired_ms;       /* [LW1_TIME_MIN_MS, LW1_TIME_MAX_MS) */
    uint64_t random;
    size_t partylen;            /* bytes of "lw1:<host>:<pid>[.<nonce>]:<thread>" */
};

/* The pid field: "<pid>.<nonce>", or "<pid>" alone (the older form). */
static inline int
lw1_parse_pid(const char *s, size_t len, struct lw1_token *t)
{
    const char *dot = memchr(s, '.', len);
    size_t pidlen = dot != NULL ? (size_t)(dot - s) : len;

    t->has_nonce = dot != NULL;
    t->nonce = 0;
    if (dot != NULL && lw1_parse_hex(dot + 1, len - pidlen - 1, LW1_NONCE_HEX, &t->nonce) != 0)
        return -1;
    if (lw1_parse_udec(s, pidlen, 10, true, &t->pid) != 0 || t->pid == 0 ||
        t->pid > INT32_MAX)
        return -1;
    return 0;
}

/*
 * Parse len bytes at s as a token, strictly: exactly six ':'-separated
 * fields, each as the grammar says, numbers canonical.  0, or -1 when any
 * rule is broken (then *t is partly written).
 */
static inline int
lw1_token_parse(const char *s, size_t len, struct lw1_token *t)
{
    const char *f[6];
    size_t flen[6], nf = 0, pos = 0;

    if (s == NULL || len < sizeof(LW1_PREFIX) - 1 ||
        memcmp(s, LW1_PREFIX, sizeof(LW1_PREFIX) - 1) != 0)
        return -1;
    for (;;) {
        const char *colon = memchr(s + pos, ':', len - pos);
        size_t stop = colon != NULL ? (size_t)(colon - s) : len;

        if (nf == 6)
            return -1;
        f[nf] = s + pos;
        flen[nf++] = stop - pos;
        if (colon == NULL)
            break;
        pos = stop + 1;
    }
    if (nf != 6 || flen[1] == 0 || flen[1] > LW1_HOST_MAX)
        return -1;
    for (size_t i = 0; i < flen[1]; i++)
        if (!lw1_host_byte_ok((unsigned char)f[1][i]))
            return -1;
    t->host = f[1];
    t->hostlen = flen[1];
    if (lw1_parse_pid(f[2], flen[2], t) != 0)
        return -1;
    if (lw1_parse_udec(f[3], flen[3], 19, true, &t->thread) != 0 ||
        t->thread > (uint64_t)INT64_MAX)
        return -1;
    t->partylen = (size_t)(f[3] - s) + flen[3];
    if (lw1_parse_udec(f[4], flen[4], 13, true, &t->acquired_ms) != 0 ||
        t->acquired_ms < (uint64_t)LW1_TIME_MIN_MS ||
        t->acquired_ms >= (uint64_t)LW1_TIME_MAX_MS)
        return -1;
    return lw1_parse_hex(f[5], flen[5], LW1_RANDOM_HEX, &t->random);
}

/* ---- sample lines ---------------------------------------------------------- */

#define LW1_VERSION         "lw1"
#define LW1_VERB_WAIT       "wait"
#define LW1_VERB_HOLD       "hold"
#define LW1_VERB_WAITING    "waiting"
#define LW1_VERB_LOST       "lost"
#define LW1_PHASE_START     "start"
#define LW1_LOST_RENEWAL    "renewal"
#define LW1_LOST_EXPIRED    "expired"
#define LW1_UNKNOWN         "-"         /* holder id or overrun not known */
#define LW1_OWNER_MAX       256         /* bytes of an owner, decoded */
#define LW1_HOLDER_MAX      512         /* bytes of a holder id, decoded */
#define LW1_KEY_MIN         16          /* bytes of a samples key */
#define LW1_KEY_MAX         4096
#define LW1_OUTCOME_OK      "ok"
#define LW1_OUTCOME_TIMEOUT "timeout"
#define LW1_OUTCOME_ERROR   "error"
#define LW1_US_MAX          ((uint64_t)1 << 53)
#define LW1_US_DIGITS       16          /* 2^53 has 16 digits */

/* A byte a line may hold outside its separating spaces: 0x21..0x7e. */
static inline bool
lw1_line_byte_ok(unsigned char c)
{
    return c >= 0x21 && c <= 0x7e;
}

/* A key byte the writer must send as %XX: anything a line may not hold,
 * and '%' itself. */
static inline bool
lw1_key_byte_escaped(unsigned char c)
{
    return !lw1_line_byte_ok(c) || c == '%';
}

/*
 * The <microseconds> field: decimal digits only, 1..LW1_US_DIGITS of them
 * (leading zeros are digits too), value at most LW1_US_MAX.  0, or -1.
 */
static inline int
lw1_parse_us(const char *s, size_t len, uint64_t *out)
{
    uint64_t v;

    if (lw1_parse_udec(s, len, LW1_US_DIGITS, false, &v) != 0 || v > LW1_US_MAX)
        return -1;
    *out = v;
    return 0;
}

#endif
