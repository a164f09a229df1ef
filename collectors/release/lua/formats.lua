-- SPDX-License-Identifier: BSD-3-Clause
-- formats.lua - the release table: per lock format, what "release this
-- one holder" means and which wake-up its clients listen for.
--
-- Run between guard.lua and release.lua / expire.lua (one text, one SHA;
-- collectors/release/release.c joins them).  Each row of lw_rows is keyed
-- by the format's name in the format table (collectors/formats/
-- formats_impl.h), whose release column names the companions the row
-- uses; guard.lua's header says what a row holds.  Every row is one
-- assignment to lw_rows, keyed by the quoted name, at the start of a
-- line: tests/unit/test_release.c reads them and fails unless they are
-- exactly the formats with a release column.  A release
-- only ever takes what belongs to the holder named in ARGV[1]:
--
--   redisson-rw   one holder's field of a Redisson RReadWriteLock (a
--                 reader "<uuid>:<tid>" with all its reentries, or the
--                 writer "<uuid>:<tid>:write"), and a reader's
--                 rwlock_timeout keys; the other holders keep theirs.
--                 "mode" is set to what is left (write while a writer
--                 holds, else read), the hash TTL to the longest lease
--                 left (as RedissonReadLock's unlock does); the key is
--                 deleted when no holder is left.  Wake-ups "0" and "1"
--                 (all waiters; 2.x knows only "0") when the key goes or
--                 turns from write to read.
--   redisson      the holder's field of an RLock / FencedLock / SpinLock /
--                 FairLock hash (the key goes with its last holder).  The
--                 fencing counter is never touched.  A fair lock's queue
--                 first loses its dead heads - their turn timed out (as
--                 RedissonFairLock's own unlock drops them) or nobody is
--                 subscribed to their channel (the client died) - so the
--                 live waiter behind a dead head is the one woken, on its
--                 own channel.
--   redisson-semaphore         one permit back: INCRBY 1, the new count
--                 published on redisson_sc:{K}.  The holder is the count
--                 the operator saw (an RSemaphore names no holders).
--   redisson-permit-semaphore  one permit: its id leaves {K}:timeout and
--                 the count goes up by one, published on redisson_sc:{K}.
--   redis-semaphore  its Semaphore (zset): ZREM of that holder; its Mutex
--                 (string): DEL.  It polls: no wake-up.
--   liblockwatch, python-redis-lock, spring  DEL, and their wake-up.
--   plain         DEL; the wake-up is chosen by the value's shape (lw1
--                 token, python-redis-lock token, Spring UUID) since
--                 those formats' values also decode as plain.  A count
--                 with a permits set or a semaphore waiter is released as
--                 that semaphore instead (never deleted), and expire never
--                 gives a count a TTL.
--
-- Wake channels of older Redisson versions (2.x: redisson_lock__channel__
-- {K}, redisson_rwlock__{K}) get the same message as the current ones: a
-- waiter cannot be told by version from Redis, a channel nobody listens
-- on costs nothing, and a waiter woken for nothing simply retries.

local LW_RW_TIMEOUTS_MAX = 10000    -- rwlock_timeout keys deleted/probed
local LW_RW_FIELDS_MAX = 20000      -- hash fields read to fix "mode"
local LW_PURGE_MAX = 1000           -- dead fair-lock waiters dropped
local lw_now = tonumber(ARGV[7]) or 0
lw.purged = 0

local function lw_each(role, fn)
    for _, k in ipairs(lw_role[role] or {}) do fn(k) end
end

local function lw_first(role)
    local r = lw_role[role]
    if r == nil then return nil end
    return r[1]
end

local function lw_braced()
    return string.find(lw_key, '{', 1, true) ~= nil
end

-- ---- Redisson RReadWriteLock ------------------------------------------------

-- A reader's n-th timeout key: Redisson's suffixName(K, field) ..
-- ":rwlock_timeout:" .. n, and the 2.x name K:field:rwlock_timeout:n
-- (the same when K has a '{'; outside K's slot otherwise, so standalone
-- only).
local function lw_rw_timeouts(field, n)
    local cur
    if lw_braced() then
        cur = lw_key .. ':' .. field .. ':rwlock_timeout:' .. n
    else
        cur = '{' .. lw_key .. '}:' .. field .. ':rwlock_timeout:' .. n
    end
    local old = lw_key .. ':' .. field .. ':rwlock_timeout:' .. n
    if old == cur or lw_cluster then return cur, nil end
    return cur, old
end

-- "0" (UNLOCK_MESSAGE: one waiter per client) is what every version's
-- LockPubSub knows; "1" (READ_UNLOCK_MESSAGE: every waiter) came later
-- and 2.x ignores it.  Both, on both names: a waiter woken twice retries.
local function lw_rw_wake()
    for _, role in ipairs({ 'redisson-rw', 'redisson-rw-v2' }) do
        lw_each(role, function(ch)
            lw_publish(ch, '0', true)
            lw_publish(ch, '1', true)
        end)
    end
end

local function lw_is_writer(field)
    return #field > 6 and string.sub(field, -6) == ':write'
end

local function lw_rw_release()
    local count = tonumber(redis.call('hget', lw_key, lw_holder)) or 0
    redis.call('hdel', lw_key, lw_holder)
    if not lw_is_writer(lw_holder) then
        if count > LW_RW_TIMEOUTS_MAX then count = LW_RW_TIMEOUTS_MAX end
        for i = 1, count do
            local cur, old = lw_rw_timeouts(lw_holder, i)
            redis.call('del', cur)
            if old ~= nil then redis.call('del', old) end
        end
    end
    local nfields = redis.call('hlen', lw_key)
    local has_mode = redis.call('hexists', lw_key, 'mode') == 1
    local left = nfields
    if has_mode then left = left - 1 end
    if left <= 0 then
        redis.call('del', lw_key)
        lw.left = 0
        lw_rw_wake()
        return
    end
    lw.left = left
    if nfields > LW_RW_FIELDS_MAX then return end   -- too big to look at: as it is
    local all = redis.call('hgetall', lw_key)
    local writer, longest, probes = false, -3, 0
    for j = 1, #all - 1, 2 do
        local f = all[j]
        if f ~= 'mode' then
            if lw_is_writer(f) then
                writer = true
            else
                local c = tonumber(all[j + 1]) or 0
                for i = c, 1, -1 do
                    probes = probes + 1
                    if probes > LW_RW_TIMEOUTS_MAX then break end
                    local cur, old = lw_rw_timeouts(f, i)
                    longest = math.max(longest, redis.call('pttl', cur))
                    if old ~= nil then longest = math.max(longest, redis.call('pttl', old)) end
                end
            end
        end
    end
    local want = 'read'
    if writer then want = 'write' end
    if redis.call('hget', lw_key, 'mode') ~= want then
        redis.call('hset', lw_key, 'mode', want)
        -- the writer is gone and readers hold: waiting readers may join
        if want == 'read' then lw_rw_wake() end
    end
    -- the hash lives as long as the longest read lease left (Redisson's
    -- read unlock); with no lease found, its TTL stays as it is
    if not writer and longest > 0 and probes <= LW_RW_TIMEOUTS_MAX then
        redis.call('pexpire', lw_key, longest)
    end
end

-- ---- Redisson RLock, FencedLock, SpinLock, FairLock -------------------------

-- Whether anybody listens for waiter w's turn: a waiting Redisson thread
-- is subscribed to its own channel <channel>:<w> (either version's name;
-- sharded in a cluster with Redisson >= 3.22).  An error (an ACL without
-- +pubsub|numsub) counts as listening: such a head is kept.
local function lw_listens(w)
    local asked = false
    for _, role in ipairs({ 'redisson', 'redisson-v2' }) do
        for _, ch in ipairs(lw_role[role] or {}) do
            for _, sub in ipairs(lw_cluster and { 'numsub', 'shardnumsub' } or { 'numsub' }) do
                local r = redis.pcall('pubsub', sub, ch .. ':' .. w)
                if type(r) ~= 'table' or r.err then return true end
                asked = true
                if (tonumber(r[2]) or 0) > 0 then return true end
            end
        end
    end
    return not asked        -- no channel to ask: assume it listens
end

-- The fair lock's next live waiter.  Heads are dropped from the queue and
-- the timeout set while they are dead: their turn timed out (score <=
-- now, or no score), as RedissonFairLock's own unlock drops them, or
-- nobody listens for their turn (the waiting client died: its
-- subscription went with its connection, while its score stays minutes
-- ahead).  Scores are epoch ms from the clients' clocks, compared with
-- the caller's (ARGV[7]).  The waiters behind keep their scores.
local function lw_fair_head()
    local q, z = lw_first('redisson-queue'), lw_first('redisson-timeout')
    if q == nil then return nil end
    for _ = 1, LW_PURGE_MAX do
        local head = redis.call('lindex', q, 0)
        if type(head) ~= 'string' then return nil end
        local t = lw_now + 1
        if z ~= nil then t = tonumber(redis.call('zscore', z, head)) end
        if t ~= nil and t > lw_now and lw_listens(head) then return head end
        if z ~= nil then redis.call('zrem', z, head) end
        redis.call('lpop', q)
        lw.purged = lw.purged + 1
    end
    local head = redis.call('lindex', q, 0)
    if type(head) == 'string' then return head end
    return nil
end

local function lw_redisson_release()
    redis.call('hdel', lw_key, lw_holder)
    lw.left = redis.call('hlen', lw_key)
    if lw.left > 0 then return end      -- other holders keep the key
    local head = lw_fair_head()
    for _, role in ipairs({ 'redisson', 'redisson-v2' }) do
        lw_each(role, function(ch)
            lw_publish(ch, '0', true)
            if head ~= nil then lw_publish(ch .. ':' .. head, '0', true) end
        end)
    end
end

-- One row for every Redisson hash: the "mode" field, read atomically
-- here, tells a read/write lock from the others (the caller's decoder may
-- have read too few fields of a big hash to see it).
local lw_redisson = {
    types = { hash = true },
    -- a hash with "mode" is reported as what it is, whatever the caller saw
    label = function()
        if lw.rw then return 'redisson-rw' end
        return nil
    end,
    held = lw_field_held,
    release = function()
        if lw.rw then return lw_rw_release() end
        return lw_redisson_release()
    end,
}
lw_rows['redisson-rw'] = lw_redisson
lw_rows['redisson'] = lw_redisson
lw_rows['redisson-fair'] = lw_redisson
lw_rows['redisson-fenced'] = lw_redisson

-- ---- semaphores ---------------------------------------------------------------

local function lw_is_count()
    local v = redis.call('getrange', lw_key, 0, 31)
    return string.find(v, '^%-?%d+$') ~= nil
end

local function lw_permit_back()
    local value = redis.call('incrby', lw_key, 1)
    lw_each('redisson-sc', function(ch) lw_publish(ch, tostring(value), true) end)
end

lw_rows['redisson-semaphore'] = {
    types = { string = true },
    sees = lw_is_count,
    held = lw_string_held,
    expire = false,
    release = lw_permit_back,
}

lw_rows['redisson-permit-semaphore'] = {
    types = { string = true },
    sees = lw_is_count,
    held = function()
        local z = lw_first('permits')
        lw.old = redis.call('getrange', lw_key, 0, LW_OLD_MAX - 1)
        return z ~= nil and redis.call('zscore', z, lw_holder) ~= false
    end,
    expire = false,
    release = function()
        local z = lw_first('permits')
        redis.call('zrem', z, lw_holder)
        lw.left = redis.call('zcard', z)
        lw_permit_back()
    end,
}

local function lw_zset_old()
    local r = redis.call('zrange', lw_key, 0, LW_HASH_FIELDS - 1, 'WITHSCORES')
    local parts = {}
    for j = 1, #r - 1, 2 do parts[#parts + 1] = r[j] .. '=' .. r[j + 1] end
    return lw_cut(table.concat(parts, ' '))
end

lw_rows['redis-semaphore'] = {
    types = { string = true, zset = true },
    held = function()
        if lw.type == 'string' then return lw_string_held() end
        lw.old = lw_zset_old()
        return redis.call('zscore', lw_key, lw_holder) ~= false
    end,
    expire = false,
    release = function()
        if lw.type == 'string' then
            redis.call('del', lw_key)
            lw.left = 0
            return
        end
        redis.call('zrem', lw_key, lw_holder)
        lw.left = redis.call('zcard', lw_key)
    end,
}

-- ---- string locks -----------------------------------------------------------

local function lw_wake_liblockwatch()
    lw_each('liblockwatch', function(ch) lw_publish(ch, '0', true) end)
end

local function lw_wake_signal()
    lw_each('signal', function(sig)
        local ok = type(redis.pcall('del', sig)) == 'number' and
            type(redis.pcall('lpush', sig, '1')) == 'number' and
            type(redis.pcall('pexpire', sig, 1000)) == 'number'
        if not ok then lw.wake_errors = lw.wake_errors + 1 end
    end)
end

-- Spring RedisLockRegistry (PUB_SUB_LOCK): the key on
-- <registryKey>-channel:<K> for each ':'-prefix of K (at most 4) that
-- could be the registryKey, which cannot be told from the key.
local function lw_wake_spring()
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

local function lw_del_then(wake)
    return function()
        redis.call('del', lw_key)
        lw.left = 0
        if wake ~= nil then wake() end
    end
end

local LW_UUID = '^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$'

lw_rows['liblockwatch'] = { types = { string = true }, held = lw_string_held,
                            release = lw_del_then(lw_wake_liblockwatch) }
lw_rows['python-redis-lock'] = { types = { string = true }, held = lw_string_held,
                                 release = lw_del_then(lw_wake_signal) }
lw_rows['spring'] = { types = { string = true }, held = lw_string_held,
                      release = lw_del_then(lw_wake_spring) }
-- A count under a lock pattern may be a Redisson semaphore that decodes
-- as a plain token (lockctl reads one key): deleting it would take every
-- permit.  Its permits set {K}:timeout, or a waiter on redisson_sc:{K},
-- says which it is; a plain RSemaphore nobody waits on cannot be told.
local function lw_plain_refine()
    if not lw_is_count() then return nil end
    local z = lw_first('permits')
    if z ~= nil and redis.call('type', z).ok == 'zset' then
        return 'redisson-permit-semaphore'
    end
    local ch = lw_first('redisson-sc')
    if ch ~= nil then
        local n = redis.pcall('pubsub', 'numsub', ch)
        if type(n) == 'table' and tonumber(n[2]) ~= nil and tonumber(n[2]) > 0 then
            return 'redisson-semaphore'
        end
    end
    return nil
end

local lw_plain = {
    types = { string = true },
    refine = lw_plain_refine,
    held = lw_string_held,
    -- a bare count is more likely a semaphore (or a counter) than a lock
    -- token: a TTL would take it away whole, so expire leaves it alone
    expire = function() return not lw_is_count() end,
    release = lw_del_then(function()
        local v = lw.value
        if string.sub(v, 1, 4) == 'lw1:' then
            lw_wake_liblockwatch()
        elseif #v == 24 and string.find(v, '^[%w+/]+$') ~= nil then
            lw_wake_signal()
        elseif #v == 36 and string.find(v, LW_UUID) ~= nil then
            lw_wake_spring()
        end
    end),
}
lw_rows['plain'] = lw_plain
-- formats whose clients poll: the DEL is all their waiters need (the
-- shape-based wake-ups of plain cost nothing when nobody listens)
lw_rows['shedlock'] = lw_plain
lw_rows['redis-py'] = lw_plain
lw_rows['node-redlock'] = lw_plain
lw_rows['redsync'] = lw_plain
lw_rows['pottery'] = lw_plain

-- Tried in this order when the caller named no format with a row.  A
-- semaphore is never guessed: its value looks like any counter's.
lw_detect = { 'redisson', 'plain' }
