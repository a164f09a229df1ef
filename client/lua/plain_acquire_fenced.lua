-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: take a plain lock and a fencing token in one atomic step.
-- KEYS[1] lock, KEYS[2] fence counter (lockwatch_fence:{key});
-- ARGV[1] lw1 token, ARGV[2] lease ms.
-- {1, 1, fence} when taken, else {0, pttl of the holder, 0}.
-- (Without a fence, a plain lock is taken with a bare SET NX PX.)
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return {1, 1, redis.call('incr', KEYS[2])}
end
return {0, redis.call('pttl', KEYS[1]), 0}
