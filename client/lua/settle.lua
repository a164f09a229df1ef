-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: undo an acquire whose reply was lost (command timeout or a
-- broken connection), so it cannot leave a lock no live handle owns.
-- Sent on the same connection right after the lost command, or, when that
-- connection broke, first thing on the next one (conn.c).
-- KEYS[1] lock, KEYS[2] wake channel; ARGV[1] marker, ARGV[2] "plain" or
-- "rlock", ARGV[3] holder id (lw1 token or "<uuid>:<thread>"), ARGV[4] the
-- hold count the thread really has (rlock).
-- plain: delete the lock if it holds the token (unique to the lost
-- attempt).  rlock: cut our field's count back to ARGV[4], removing the
-- field (and the hash when it was the last) at 0.  A release publishes "0"
-- on the wake channel.  Returns ARGV[1], by which the caller knows every
-- reply before it has been read.
if ARGV[2] == 'plain' then
    if redis.pcall('get', KEYS[1]) == ARGV[3] then
        redis.call('del', KEYS[1])
        redis.call('publish', KEYS[2], '0')
    end
elseif ARGV[2] == 'rlock' then
    local n = redis.pcall('hget', KEYS[1], ARGV[3])
    local want = tonumber(ARGV[4])
    if type(n) == 'string' and tonumber(n) > want then
        if want > 0 then
            redis.call('hset', KEYS[1], ARGV[3], want)
        else
            redis.call('hdel', KEYS[1], ARGV[3])
            if redis.call('hlen', KEYS[1]) == 0 then
                redis.call('del', KEYS[1])
                redis.call('publish', KEYS[2], '0')
            end
        end
    end
end
return ARGV[1]
