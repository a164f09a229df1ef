/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plain.c - the two catch-all rows: "plain" and "unknown".
 *
 * "plain" is the common SET key token NX PX lock of node-redlock, redsync,
 * redislock, Spring, Laravel and many more: the holder is whatever token
 * the value holds, and the guarded release compares exactly those bytes.
 * It takes every string the more specific rows above it left, so its only
 * job is to keep the token bounded and say when it is not whole.
 *
 * "unknown" takes everything else (other types, hashes no decoder
 * accepts, keys gone between SCAN and TYPE) so that formats_decode() always
 * has an answer; it reports no holders because it cannot know any.
 */
#include "collectors/formats/formats_impl.h"

bool
fmt_plain_claims(const struct raw_lock *raw)
{
    return raw->type == RAW_STRING && (raw->value != NULL || raw->valuelen == 0);
}

int
fmt_plain_decode(const struct raw_lock *raw, struct lock_view *view)
{
    fmt_view_reset(view);
    if (!fmt_plain_claims(raw))
        return -1;
    fmt_add_holder(view, raw->value, raw->valuelen, raw->value_truncated, 1);
    return 0;
}

bool
fmt_unknown_claims(const struct raw_lock *raw)
{
    (void)raw;
    return true;
}

int
fmt_unknown_decode(const struct raw_lock *raw, struct lock_view *view)
{
    (void)raw;
    fmt_view_reset(view);
    return 0;
}
