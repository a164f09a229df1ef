/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pottery.c - pottery's Redlock (Python): key "redlock:<key>", value
 * str(uuid.uuid4()) (36 lowercase characters), SET NX PX
 * auto_release_time (10 s by default).  Random: no time, no host.
 * RedLock.net's default key format is "redlock:<resource>" with a .NET
 * GUID, which has the same shape; the label is a hint for that one.
 */
#include "collectors/formats/formats_impl.h"

bool
fmt_pottery_claims(const struct raw_lock *raw)
{
    return fmt_whole_string(raw) && fmt_key_has_prefix(raw, "redlock:") &&
           fmt_is_uuid4(raw->value, raw->valuelen);
}

int
fmt_pottery_decode(const struct raw_lock *raw, struct lock_view *view)
{
    return fmt_decode_token(raw, view, fmt_pottery_claims);
}
