-- SPDX-License-Identifier: BSD-3-Clause
-- liblockwatch: extend a plain lock only if it still holds our token (also
-- the watchdog's renewal).  KEYS[1] lock; ARGV[1] lw1 token, ARGV[2] lease ms.
-- 1 extended, 0 not ours.
if redis.pcall('get', KEYS[1]) == ARGV[1] then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 1
end
return 0
