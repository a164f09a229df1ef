-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: extend a reentrant lock if our field is still in it, as
-- Redisson's watchdog renewal (LockTask) does.  KEYS[1] lock hash;
-- ARGV[1] "<uuid>:<thread>", ARGV[2] lease ms.  1 extended, 0 not ours.
if redis.pcall('hexists', KEYS[1], ARGV[1]) == 1 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 1
end
return 0
