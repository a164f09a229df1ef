/*
 * liblockwatch.c - the lw1 token our own client library writes as the
 * value of a plain lock.
 *
 * The token carries the holder's identity (host, pid, thread, acquisition
 * time) so the agent can show who holds a lock without asking anyone.  Its
 * grammar is the contract documented in formats.h next to LW1_PREFIX; this
 * file is the only reader.  Parsing is strict: a value that is almost a
 * token was not written by liblockwatch, and showing identity fields taken
 * from it would mislead, so it is left to "plain".
 */
#include <string.h>

#include "collectors/formats/formats_impl.h"

#define LW1_FIELDS 6            /* "lw1" + five fields */

struct lw1_token {
    const char *host;
    size_t hostlen;
    uint64_t pid, thread, acquired_ms;
};

static bool
host_byte_ok(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

static int
parse_lw1(const struct raw_lock *raw, struct lw1_token *tok)
{
    const char *f[LW1_FIELDS];
    size_t flen[LW1_FIELDS];
    const char *s = raw->value;
    size_t nf = 0, pos = 0, len = raw->valuelen;

    /* A cut value is not a whole token; "plain" will mark it truncated. */
    if (raw->type != RAW_STRING || raw->value_truncated || s == NULL ||
        raw->valuelen < sizeof(LW1_PREFIX) - 1 ||
        memcmp(s, LW1_PREFIX, sizeof(LW1_PREFIX) - 1) != 0)
        return -1;

    /* Split on ':' into exactly six fields; none of them may hold ':'. */
    for (;;) {
        const char *c = memchr(s + pos, ':', len - pos);
        size_t stop = c != NULL ? (size_t)(c - s) : len;

        if (nf == LW1_FIELDS)
            return -1;
        f[nf] = s + pos;
        flen[nf] = stop - pos;
        nf++;
        if (c == NULL)
            break;
        pos = stop + 1;
    }
    if (nf != LW1_FIELDS)
        return -1;

    if (flen[1] == 0 || flen[1] > LW1_HOST_MAX)
        return -1;
    for (size_t i = 0; i < flen[1]; i++)
        if (!host_byte_ok((unsigned char)f[1][i]))
            return -1;
    tok->host = f[1];
    tok->hostlen = flen[1];

    if (fmt_parse_udec(f[2], flen[2], 10, true, &tok->pid) == -1 ||
        tok->pid == 0 || tok->pid > INT32_MAX)
        return -1;
    if (fmt_parse_udec(f[3], flen[3], 19, true, &tok->thread) == -1 ||
        tok->thread > (uint64_t)INT64_MAX)
        return -1;
    if (fmt_parse_udec(f[4], flen[4], 13, true, &tok->acquired_ms) == -1 ||
        !fmt_time_plausible((int64_t)tok->acquired_ms))
        return -1;

    if (flen[5] != LW1_RANDOM_HEX)
        return -1;
    for (size_t i = 0; i < LW1_RANDOM_HEX; i++) {
        unsigned char c = (unsigned char)f[5][i];

        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return -1;
    }
    return 0;
}

bool
fmt_lw1_claims(const struct raw_lock *raw)
{
    struct lw1_token tok;

    return parse_lw1(raw, &tok) == 0;
}

int
fmt_lw1_decode(const struct raw_lock *raw, struct lock_view *view)
{
    struct lw1_token tok;

    fmt_view_reset(view);
    if (parse_lw1(raw, &tok) == -1)
        return -1;
    fmt_add_holder(view, raw->value, raw->valuelen, false, 1);
    fmt_set_host(view, tok.host, tok.hostlen);
    view->pid = (long)tok.pid;
    view->thread = (long long)tok.thread;
    view->acquired_ms = (int64_t)tok.acquired_ms;
    return 0;
}
