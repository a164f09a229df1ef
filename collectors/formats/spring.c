/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spring.c - Spring Integration's RedisLockRegistry: key
 * "<registryKey>:<lockKey>", value the registry's clientId,
 * UUID.randomUUID().toString() (a lowercase version 4 UUID, one per
 * registry instance, so every lock of one registry has the same holder),
 * PX expireAfter (60 s by default).
 *
 * The row takes any string that is exactly a lowercase v4 UUID and that
 * the rows above (redis-semaphore's "mutex:", pottery's "redlock:") left:
 * redlock-rb's SecureRandom.uuid has the same shape, so the label is a
 * hint.  No time, no host.
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
