/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * liblockwatch.c - the lw1 token our own client library writes as the
 * value of a plain lock.
 *
 * The token carries the holder's identity (host, pid, thread, acquisition
 * time) so the agent can show who holds a lock without asking anyone.  Its
 * grammar is the contract documented in formats.h; the parser is
 * lw1_token_parse() of common/lw1.h, the same lines liblockwatch reads its
 * tokens back with.  Parsing is strict: a value that is almost a token was
 * not written by liblockwatch, and showing identity fields taken from it
 * would mislead, so it is left to "plain".
 */
#include <string.h>

#include "collectors/formats/formats_impl.h"

/* A whole, untruncated string value that parses as a token. */
static int
parse_lw1(const struct raw_lock *raw, struct lw1_token *tok)
{
    /* A cut value is not a whole token; "plain" will mark it truncated. */
    if (raw->type != RAW_STRING || raw->value_truncated)
        return -1;
    return lw1_token_parse(raw->value, raw->valuelen, tok);
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
