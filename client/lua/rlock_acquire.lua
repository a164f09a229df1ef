-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: take a reentrant lock, Redisson's RLock acquire in effect:
-- take it when the hash does not exist or our field is in it, HINCRBY the
-- field, PEXPIRE the lease.  KEYS[1] lock hash, KEYS[2] fence counter;
-- ARGV[1] lease ms, ARGV[2] "<uuid>:<thread>", ARGV[3] "1" to take a fence.
-- {1, hold count, fence} when taken, else {0, pttl of the holder, 0}.
-- HEXISTS runs under pcall: a string key is someone else's lock.
if redis.call('exists', KEYS[1]) == 0 or
   redis.pcall('hexists', KEYS[1], ARGV[2]) == 1 then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    local f = 0
    if ARGV[3] == '1' then
        f = redis.call('incr', KEYS[2])
    end
    return {1, n, f}
end
return {0, redis.call('pttl', KEYS[1]), 0}
