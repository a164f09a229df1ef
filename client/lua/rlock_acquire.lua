-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: take a reentrant lock, Redisson's RLock acquire in effect:
-- take it when the hash does not exist or our field is in it, HINCRBY the
-- field, PEXPIRE the lease.  KEYS[1] lock hash, KEYS[2] fence counter;
-- ARGV[1] lease ms, ARGV[2] "<uuid>:<thread>", ARGV[3] "1" to take a fence.
-- {1, hold count, fence} when taken, else {0, pttl of the holder, 0}.
-- HEXISTS runs under pcall: a string key is someone else's lock.
-- Unlike Redisson, a nested acquire never shortens the hold: the TTL only
-- grows (to ARGV[1]) and is never cut to a shorter inner lease.
-- The fence is the counter's next value but at least the server's clock in
-- microseconds (see plain_acquire_fenced.lua for why).
if redis.replicate_commands then
    redis.replicate_commands()
end
if redis.call('exists', KEYS[1]) == 0 or
   redis.pcall('hexists', KEYS[1], ARGV[2]) == 1 then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local ttl = redis.call('pttl', KEYS[1])
    if ttl < tonumber(ARGV[1]) then
        redis.call('pexpire', KEYS[1], ARGV[1])
    end
    local f = 0
    if ARGV[3] == '1' then
        local t = redis.call('time')
        local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
        f = redis.call('incr', KEYS[2])
        if f < now then
            redis.call('set', KEYS[2], string.format('%d', now))
            f = now
        end
    end
    return {1, n, f}
end
return {0, redis.call('pttl', KEYS[1]), 0}
