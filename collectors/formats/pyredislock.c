/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pyredislock.c - python-redis-lock (ionelmc): key "lock:<name>", value
 * b64encode(urandom(18)) (24 characters of standard base64, no padding,
 * since 18 bytes need none), no TTL unless expire= was given.
 *
 * Its waiters BLPOP the list "lock-signal:<name>", a helper key of this
 * lock (helpers.c), not a lock.  The value is random: no time, no host.
 * The key prefix is required: 24 unpadded base64 characters alone are
 * too common a shape to name a library.
 */
#include "collectors/formats/formats_impl.h"

bool
fmt_pyredislock_claims(const struct raw_lock *raw)
{
    return fmt_whole_string(raw) && fmt_key_has_prefix(raw, "lock:") &&
           raw->valuelen == 24 && fmt_is_base64(raw->value, raw->valuelen, 0);
}

int
fmt_pyredislock_decode(const struct raw_lock *raw, struct lock_view *view)
{
    return fmt_decode_token(raw, view, fmt_pyredislock_claims);
}
