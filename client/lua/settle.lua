-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: undo an acquire whose reply was lost (command timeout or a
-- broken connection), so it cannot leave a lock no live handle owns.
-- Sent on the same connection right after the lost command, or, when that
-- connection broke, first thing on the next one (conn.c).
-- KEYS[1] lock, KEYS[2] wake channel; ARGV[1] marker, ARGV[2] "plain",
-- "rlock" or "rlock-cut", ARGV[3] holder id (lw1 token or
-- "<uuid>:<thread>"), ARGV[4] the hold count the thread really has
-- (rlock-cut).
-- plain: delete the lock if it holds the token (unique to the lost
-- attempt).  rlock, right behind the lost acquire on its connection: our
-- field is there only if that acquire took it (nothing but this client
-- writes the field, and it sent nothing in between), so take back the one
-- hold it added, whatever the count was before (an outer hold may have
-- expired meanwhile).  rlock-cut, on a new connection (whether the lost
-- acquire ran is unknown): cut our field's count back to ARGV[4].  A count
-- that reaches 0 removes the field (and the hash when it was the last).  A
-- release publishes "0" on the wake channel.  Returns ARGV[1], by which the
-- caller knows every reply before it has been read.
local function set_holds(n)
    if n > 0 then
        redis.call('hset', KEYS[1], ARGV[3], n)
        return
    end
    redis.call('hdel', KEYS[1], ARGV[3])
    if redis.call('hlen', KEYS[1]) == 0 then
        redis.call('del', KEYS[1])
        redis.call('publish', KEYS[2], '0')
    end
end

if ARGV[2] == 'plain' then
    if redis.pcall('get', KEYS[1]) == ARGV[3] then
        redis.call('del', KEYS[1])
        redis.call('publish', KEYS[2], '0')
    end
elseif ARGV[2] == 'rlock' or ARGV[2] == 'rlock-cut' then
    local n = redis.pcall('hget', KEYS[1], ARGV[3])
    if type(n) == 'string' then
        n = tonumber(n)
        if ARGV[2] == 'rlock' then
            set_holds(n - 1)
        elseif n > tonumber(ARGV[4]) then
            set_holds(tonumber(ARGV[4]))
        end
    end
end
return ARGV[1]
