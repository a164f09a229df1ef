-- SPDX-License-Identifier: BSD-3-Clause
-- expire.lua - the guarded expire, run after guard.lua and formats.lua:
-- the gentle twin of the release.  It gives a lock that has no TTL (a
-- leak) the TTL in ARGV[11], under the same guards, and audits it.  A
-- lock that already has a TTL is refused ("has_ttl"): its holder's own
-- lease or watchdog is in charge, and an operator's TTL would only
-- shorten or stretch it.  Nothing else changes: no wake-up (the lock is
-- still held until the TTL runs out, and waiters retry on their own when
-- it does).  A semaphore is refused (wrongtype): a TTL on it would take
-- every permit with it.

lw_check('expire')
if lw.refusal == nil and lw.pttl ~= -1 then
    lw.refusal = 'has_ttl'
end
if lw.refusal == nil and lw_ttl_ms <= 0 then
    return redis.error_reply('ERR lockwatch expire: the TTL must be positive')
end
if lw.refusal ~= nil then
    lw_audit('expire', lw.refusal)
    return lw_reply(lw.refusal)
end
if lw_dry then
    return lw_reply('would_expire')
end
lw_audit('expire', 'expired')
redis.call('pexpire', lw_key, lw_ttl_ms)
lw.pttl = lw_ttl_ms
return lw_reply('expired')
