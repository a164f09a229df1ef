-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: take a plain lock and a fencing token in one atomic step.
-- KEYS[1] lock, KEYS[2] fence counter (lockwatch_fence:{key});
-- ARGV[1] lw1 token, ARGV[2] lease ms.
-- {1, 1, fence} when taken, else {0, pttl of the holder, 0}.
-- (Without a fence, a plain lock is taken with a bare SET NX PX.)
--
-- The fence is the counter's next value, but at least the server's clock
-- in microseconds: a counter lost with a restart without persistence, or
-- behind on a replica promoted by a failover, starts again above every
-- token issued before (docs/fencing.md states the guarantee and its
-- limits).  TIME makes the script non-deterministic, so its effects, not
-- the script, are replicated (the default from Redis 7; asked for before).
if redis.replicate_commands then
    redis.replicate_commands()
end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    local t = redis.call('time')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local f = redis.call('incr', KEYS[2])
    if f < now then
        redis.call('set', KEYS[2], string.format('%d', now))
        f = now
    end
    return {1, 1, f}
end
return {0, redis.call('pttl', KEYS[1]), 0}
