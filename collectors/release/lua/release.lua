-- SPDX-License-Identifier: BSD-3-Clause
-- release.lua - the guarded release (force-unlock), run after guard.lua.
--
-- When every guard holds: write the audit entry, DEL the lock, then wake
-- the waiters the lock's format has, chosen by what the script sees, in
-- the same atomic step as the guards:
--   hash with a "mode" field   Redisson RW lock: "1" on redisson_rwlock:{K}
--                              (Redisson's READ_UNLOCK_MESSAGE, wakes all)
--   other hash                 Redisson RLock (and FencedLock, SpinLock...):
--                              "0" on redisson_lock__channel:{K}; a fair
--                              lock's queue head also gets "0" on its own
--                              channel redisson_lock__channel:{K}:<head>
--   string "lw1:..."           liblockwatch: "0" on lockwatch_lock__channel:{K}
--   string of 24 base64 chars  python-redis-lock (key lock:<name>): its
--                              signal list gets DEL, LPUSH 1, PEXPIRE 1000
--   string UUID                Spring RedisLockRegistry (PUB_SUB_LOCK): the
--                              key is published on <registryKey>-channel:<K>
--                              for each ':'-prefix of K (at most 4) that
--                              could be the registryKey
-- Every other format polls; the DEL is all its waiters need.  In cluster
-- mode the Redisson and liblockwatch wake-ups go out with SPUBLISH too.
-- Fencing counters (redisson_lock_token:{K}, lockwatch_fence:{K}), fair
-- queues and RW timeout keys are never touched: only KEYS[1] is deleted.

lw_check()
if lw.refusal ~= nil then
    lw_audit('release', lw.refusal)
    return lw_reply(lw.refusal)
end
if lw_dry then
    return lw_reply('would_release')
end
lw_audit('release', 'released')
redis.call('del', lw_key)

local function each(role, fn)
    for _, k in ipairs(lw_role[role] or {}) do fn(k) end
end

if lw.type == 'hash' then
    if lw.rw then
        each('redisson-rw', function(ch) lw_publish(ch, '1', true) end)
    else
        each('redisson', function(ch)
            lw_publish(ch, '0', true)
            each('redisson-queue', function(q)
                local head = redis.pcall('lindex', q, 0)
                if type(head) == 'string' then lw_publish(ch .. ':' .. head, '0', true) end
            end)
        end)
    end
else
    local v = lw.value
    if string.sub(v, 1, 4) == 'lw1:' then
        each('liblockwatch', function(ch) lw_publish(ch, '0', true) end)
    elseif #v == 24 and string.find(v, '^[%w+/]+$') ~= nil then
        each('signal', function(sig)
            local ok = type(redis.pcall('del', sig)) == 'number' and
                type(redis.pcall('lpush', sig, '1')) == 'number' and
                type(redis.pcall('pexpire', sig, 1000)) == 'number'
            if not ok then lw.wake_errors = lw.wake_errors + 1 end
        end)
    elseif #v == 36 and string.find(v, '^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$') ~= nil then
        local from, found = 1, 0
        while found < 4 do
            local at = string.find(lw_key, ':', from, true)
            if at == nil then break end
            if at > 1 then
                lw_publish(string.sub(lw_key, 1, at - 1) .. '-channel:' .. lw_key, lw_key, false)
                found = found + 1
            end
            from = at + 1
        end
    end
end
return lw_reply('released')
