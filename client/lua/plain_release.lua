-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: release a plain lock only if it still holds our token, and
-- wake the waiters.  KEYS[1] lock, KEYS[2] wake channel
-- (lockwatch_lock__channel:{key}); ARGV[1] lw1 token.
-- 1 released, 0 not ours (left alone).  GET runs under pcall: a key of
-- another type is someone else's lock, not an error.
if redis.pcall('get', KEYS[1]) ~= ARGV[1] then
    return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1
