/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redsync.c - go-redsync/redsync v4: SET <name> <value> NX PX <expiry>,
 * the value base64.StdEncoding of 16 random bytes (24 characters ending
 * in "==").  Random: no time, no host.  A value given with WithValue or
 * WithGenValueFunc is whatever the program chose and decodes as "plain".
 */
#include "collectors/formats/formats_impl.h"

bool
fmt_redsync_claims(const struct raw_lock *raw)
{
    return fmt_whole_string(raw) && raw->valuelen == 24 &&
           fmt_is_base64(raw->value, raw->valuelen, 2);
}

int
fmt_redsync_decode(const struct raw_lock *raw, struct lock_view *view)
{
    return fmt_decode_token(raw, view, fmt_redsync_claims);
}
