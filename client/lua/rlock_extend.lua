-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: extend a reentrant lock if our field is still in it, as
-- Redisson's watchdog renewal (LockTask) does.  KEYS[1] lock hash;
-- ARGV[1] "<uuid>:<thread>", ARGV[2] lease ms.  1 extended, 0 not ours.
-- The TTL is raised to ARGV[2], never cut: the hash is shared by every
-- hold of the thread, and renewing an inner hold must not shorten a longer
-- lease an outer hold asked for.
if redis.pcall('hexists', KEYS[1], ARGV[1]) == 1 then
    if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
        redis.call('pexpire', KEYS[1], ARGV[2])
    end
    return 1
end
return 0
