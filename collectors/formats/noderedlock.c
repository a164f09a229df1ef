/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * noderedlock.c - node-redlock (npm "redlock"): SET <resource>
 * randomBytes(16).toString("hex") PX <duration>.
 *
 * 32 lowercase hex digits.  redis-py's uuid1().hex has the same shape;
 * its row decodes only where declared (redispy.c), so an undeclared one
 * lands here too.  The value is random: it encodes no time and no host,
 * so this row reports none (a random value read as a uuid1 would give a
 * made-up acquisition time).  Any other library writing 32 random hex
 * digits lands here as well: the label is a guess (FMT_PROVES_SHAPE),
 * harmless since the holder is the whole value either way.
 */
#include "collectors/formats/formats_impl.h"

bool
fmt_noderedlock_claims(const struct raw_lock *raw)
{
    return fmt_whole_string(raw) && fmt_is_hex32(raw->value, raw->valuelen);
}

int
fmt_noderedlock_decode(const struct raw_lock *raw, struct lock_view *view)
{
    return fmt_decode_token(raw, view, fmt_noderedlock_claims);
}
