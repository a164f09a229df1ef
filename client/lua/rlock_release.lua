-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: release one hold of a reentrant lock, Redisson's RLock
-- unlock without its retry latch (we never retry an unlock).
-- KEYS[1] lock hash, KEYS[2] wake channel (redisson_lock__channel:{key});
-- ARGV[1] "<uuid>:<thread>", ARGV[2] lease ms.
-- -1 not ours; n > 0 still held n times; 0 the last hold went: hash
-- deleted and "0" (Redisson's UNLOCK_MESSAGE) published.
-- Unlike Redisson, releasing an inner hold never shortens what is left of
-- the outer ones: the TTL is raised to ARGV[2] if below it, never cut.
if redis.pcall('hexists', KEYS[1], ARGV[1]) ~= 1 then
    return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
    if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
        redis.call('pexpire', KEYS[1], ARGV[2])
    end
    return n
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 0
