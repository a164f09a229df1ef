/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spring.c - Spring Integration's RedisLockRegistry: key
 * "<registryKey>:<lockKey>", value the registry's clientId,
 * UUID.randomUUID().toString() (a lowercase version 4 UUID, one per
 * registry instance, so every lock of one registry has the same holder),
 * PX expireAfter (60 s by default).
 *
 * A lowercase v4 UUID is what sherlock, aioredlock, redlock-rb's
 * SecureRandom.uuid and most hand-rolled locks write too, and the key has
 * no mark of its own, so the row is FMT_PROVES_DECLARED: it decodes only
 * keys a target's format_patterns declare spring (an undeclared uuid4 is
 * "plain").  No time, no host.
 */
#include "collectors/formats/formats_impl.h"

bool
fmt_spring_claims(const struct raw_lock *raw)
{
    return fmt_whole_string(raw) && fmt_is_uuid4(raw->value, raw->valuelen);
}

int
fmt_spring_decode(const struct raw_lock *raw, struct lock_view *view)
{
    return fmt_decode_token(raw, view, fmt_spring_claims);
}
