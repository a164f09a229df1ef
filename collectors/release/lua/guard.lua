-- SPDX-License-Identifier: BSD-3-Clause
-- guard.lua - the guards of lockwatch's guarded release and expire.
--
-- This file is not a script on its own: collectors/release/release.c runs
-- guard.lua, then formats.lua (the release table), then release.lua (the
-- release script) or expire.lua (the expire script), as one text, with
-- one SHA.  Keeping the guards in
-- one place means a fix to the glob matcher or to a guard reaches both.
-- Everything here is local: the script defines no globals.
--
-- The contract (docs/lockctl.md, "The scripts"):
--   KEYS[1]   the lock key
--   KEYS[2..] companions, named in order by the words of ARGV[12]:
--             audit         the audit stream (XADD MAXLEN ~ 10000)
--             redisson      redisson_lock__channel:{K}    (RLock wake-up)
--             redisson-rw   redisson_rwlock:{K}           (RW lock wake-up)
--             liblockwatch  lockwatch_lock__channel:{K}   (lw1 lock wake-up)
--             redisson-queue redisson_lock_queue:{K}      (fair-lock waiters)
--             signal        lock-signal:<name> for a key lock:<name>
--                           (python-redis-lock's wake-up list)
--             The caller leaves out what cannot be in the lock's cluster
--             slot; a missing companion only means no such wake-up.
--   ARGV[1]   holder: the whole value of a string lock, the field of a
--             hash lock ("<uuid>:<tid>", or "<uuid>:<tid>:write")
--   ARGV[2]   "1": only when the key has no TTL (PTTL -1)
--   ARGV[3]   ms: only when the holder is at least this old ("0": no
--             condition); age = max(OBJECT IDLETIME - 1 s, ARGV[4]'s),
--             IDLETIME not counted for a value Redis may share (0..9999)
--   ARGV[4]   "A" or "A:B:P:S", ms: the holder's age as the caller knows it
--             (A; "0": unknown), and B, an age that counts only while the
--             key's lease is as the caller read it: PTTL within S of P (P
--             "-1": the key still has no TTL).  Another PTTL is a lease set
--             since (a renewal, or the same holder id taking the lock again,
--             with a longer or a shorter lease: they look alike), so B is
--             not this holding's age.
--   ARGV[5]   "1": dry run - every guard, no write, no audit entry
--   ARGV[6]   "1": Redis Cluster - SPUBLISH every wake-up as well
--   ARGV[7]   audit time, Unix ms (the caller's clock)
--   ARGV[8]   operator        ARGV[9]  reason      ARGV[10] target name
--   ARGV[11]  ms: the TTL to set (expire; "0" for release)
--   ARGV[12]  companion roles, space separated, one per KEYS[2..]
--   ARGV[13]  number of patterns n; ARGV[14 .. 13+n] the target's globs
--   ARGV[14+n] optional: the format the caller decoded the lock as
--             ("redisson-rw", "plain", ...).  The script then releases it
--             as that format's row of lw_rows (formats.lua) and refuses
--             with holder_changed when the key no longer has that shape;
--             without it, or for a format without a row, the row is
--             chosen by what the script sees.
-- Reply: { outcome, type, pttl, idle_s, old, audit_id, wake_errors,
--          format, left, purged }
--   outcome   released | expired | would_release | would_expire, or the
--             refusal: pattern | gone | holder_changed | wrongtype |
--             not_leaked | too_young | has_ttl
--   old       the value (string lock), "field=count ..." (hash lock) or
--             "member=score ..." (zset semaphore), at most 512 bytes;
--             audit_id "" when nothing was written.
--   format    the row the script used ("" for a pattern or type refusal)
--   left      holders still holding the key after a release (0: the key
--             was deleted; -1: not a release, or not counted)
--   purged    dead waiters dropped from a fair lock's queue

local LW_OLD_MAX = 512
local LW_HASH_FIELDS = 64
local LW_AUDIT_MAXLEN = '10000'

local lw_key = KEYS[1]
local lw_holder = ARGV[1]
local lw_if_leaked = ARGV[2] == '1'
local lw_older_ms = tonumber(ARGV[3]) or 0
local lw_known_age_ms, lw_lease_age_ms, lw_lease_pttl, lw_lease_slack =
    tonumber(ARGV[4]) or 0, 0, nil, 0
do
    local a, b, p, sl = string.match(ARGV[4] or '', '^(%d+):(%d+):(%-?%d+):(%d+)$')
    if a ~= nil then
        lw_known_age_ms, lw_lease_age_ms = tonumber(a), tonumber(b)
        lw_lease_pttl, lw_lease_slack = tonumber(p), tonumber(sl)
    end
end
local lw_dry = ARGV[5] == '1'
local lw_cluster = ARGV[6] == '1'
local lw_ttl_ms = tonumber(ARGV[11]) or 0
local lw_npat = tonumber(ARGV[13]) or 0

-- companions by role
local lw_role = {}
do
    local i = 1
    for r in string.gmatch(ARGV[12] or '', '%S+') do
        i = i + 1
        if KEYS[i] == nil then
            return redis.error_reply('ERR lockwatch release: more roles than KEYS')
        end
        lw_role[r] = lw_role[r] or {}
        table.insert(lw_role[r], KEYS[i])
    end
    if i ~= #KEYS then
        return redis.error_reply('ERR lockwatch release: KEYS and roles differ')
    end
    if #ARGV ~= 13 + lw_npat and #ARGV ~= 14 + lw_npat then
        return redis.error_reply('ERR lockwatch release: wrong number of arguments')
    end
end
local lw_format = ARGV[14 + lw_npat] or ''

-- Redis' glob dialect (stringmatchlen in util.c), as SCAN MATCH applies it.
-- The glob is first cut into tokens, exactly as stringmatchlen walks it:
-- '*' (runs merged), '?', a literal byte ('\x' escapes x; a lone trailing
-- '\' is itself), or a set '[...]' ('^' negates, '\x' escapes inside, 'a-z'
-- ranges in either order, an unclosed '[' takes the rest of the glob).
-- Every token but '*' matches exactly one byte, so matching is the classic
-- backtrack-to-the-last-star walk: O(glob x key) at worst, never
-- exponential, whatever an attacker puts in a key.
local LW_STAR, LW_ANY = -1, -2

-- Range ends compare as C chars do in Redis on x86: bytes >= 0x80 are
-- negative.  (Equality does not care.)
local function lw_schar(b)
    if b >= 128 then return b - 256 end
    return b
end

local function lw_glob_compile(p)
    local toks, n, i = {}, #p, 1
    while i <= n do
        local c = string.byte(p, i)
        if c == 42 then                                 -- '*'
            if toks[#toks] ~= LW_STAR then toks[#toks + 1] = LW_STAR end
            i = i + 1
        elseif c == 63 then                             -- '?'
            toks[#toks + 1] = LW_ANY
            i = i + 1
        elseif c == 91 then                             -- '['
            local set = { neg = false, lits = {}, ranges = {} }
            i = i + 1
            if string.byte(p, i) == 94 then              -- '^'
                set.neg = true
                i = i + 1
            end
            while true do
                local rem = n - i + 1
                local d = string.byte(p, i)
                if d == 92 and rem >= 2 then            -- '\x'
                    set.lits[string.byte(p, i + 1)] = true
                    i = i + 2
                elseif d == 93 then                     -- ']'
                    i = i + 1
                    break
                elseif rem <= 0 then                    -- unclosed
                    break
                elseif rem >= 3 and string.byte(p, i + 1) == 45 then -- 'a-z'
                    local a, b = lw_schar(d), lw_schar(string.byte(p, i + 2))
                    if a > b then a, b = b, a end
                    set.ranges[#set.ranges + 1] = { a, b }
                    i = i + 3
                else
                    set.lits[d] = true
                    i = i + 1
                end
            end
            toks[#toks + 1] = set
        elseif c == 92 and i < n then                   -- '\x'
            toks[#toks + 1] = string.byte(p, i + 1)
            i = i + 2
        else
            toks[#toks + 1] = c
            i = i + 1
        end
    end
    return toks
end

local function lw_tok_match(t, b)
    if t == LW_ANY then return true end
    if type(t) == 'number' then return t == b end
    local m = t.lits[b] == true
    if not m then
        local sb = lw_schar(b)
        for _, r in ipairs(t.ranges) do
            if sb >= r[1] and sb <= r[2] then
                m = true
                break
            end
        end
    end
    if t.neg then return not m end
    return m
end

local function lw_glob_match(p, s)
    -- SCAN short-cuts a lone '*' to every key (even ""), while
    -- stringmatchlen matches nothing against an empty key.
    if p == '*' then return true end
    local toks = lw_glob_compile(p)
    local n, nt = #s, #toks
    if n == 0 then return nt == 0 end
    local ti, si, star, mark = 1, 1, 0, 0
    while si <= n do
        local t = toks[ti]
        if t == LW_STAR then
            star, mark = ti, si
            ti = ti + 1
        elseif t ~= nil and lw_tok_match(t, string.byte(s, si)) then
            ti, si = ti + 1, si + 1
        elseif star > 0 then
            mark = mark + 1
            ti, si = star + 1, mark
        else
            return false
        end
    end
    while toks[ti] == LW_STAR do ti = ti + 1 end
    return ti > nt
end

-- The lock as the guards saw it.
local lw = { refusal = nil, type = '', pttl = -2, idle = -1, old = '', rw = false,
             value = nil, audit_id = '', wake_errors = 0, format = '', left = -1,
             age = lw_known_age_ms }

local function lw_cut(s)
    if #s > LW_OLD_MAX then return string.sub(s, 1, LW_OLD_MAX) end
    return s
end

-- Read the hash's fields for the audit entry, bounded like the scanner's
-- read (one HSCAN of about LW_HASH_FIELDS fields).
local function lw_hash_old()
    local r = redis.call('hscan', lw_key, '0', 'COUNT', tostring(LW_HASH_FIELDS))
    local kv, parts, size = r[2], {}, 0
    for j = 1, #kv - 1, 2 do
        local item = kv[j] .. '=' .. kv[j + 1]
        parts[#parts + 1] = item
        size = size + #item + 1
        if size > LW_OLD_MAX or #parts >= LW_HASH_FIELDS then break end
    end
    return lw_cut(table.concat(parts, ' '))
end

-- The release table, keyed by format name; formats.lua (run between this
-- file and release.lua / expire.lua) fills it.  A row is
--   types    the TYPEs it applies to, e.g. { string = true }
--   sees()   the shape the format has (nil: any key of those types)
--   held()   whether ARGV[1] names a holder of it now; sets lw.old
--   expire   false when the expire may not touch it (a semaphore), or a
--            function saying whether it may
--   refine() nil, or the name of the row the key really is (checked once)
--   label()  optional: the format to report and audit for what the guards
--            saw, when it is not the row's own name (nil: the row's)
--   release() the release of that one holder (the guards all held)
-- lw_detect lists, in order, the rows tried when the caller named no
-- format it has a row for.
local lw_rows = {}
local lw_detect = {}

-- The holder check of a string lock: the whole value.  STRLEN first: a
-- huge value that cannot be the holder is never read.
local function lw_string_held()
    if redis.call('strlen', lw_key) ~= #lw_holder then
        lw.old = redis.call('getrange', lw_key, 0, LW_OLD_MAX - 1)
        return false
    end
    lw.value = redis.call('get', lw_key)
    lw.old = lw_cut(lw.value)
    return lw.value == lw_holder
end

-- The holder check of a hash lock: exactly that field (never "mode").
local function lw_field_held()
    lw.old = lw_hash_old()
    return lw_holder ~= 'mode' and lw_holder ~= '' and
        redis.call('hexists', lw_key, lw_holder) == 1
end

-- The row for this key: the caller's format when it has a row and the key
-- still has its shape; otherwise the first row of lw_detect that fits.
-- Returns the row, or nil and the refusal.
local function lw_pick(action)
    local row = lw_rows[lw_format]
    if row ~= nil then
        if not row.types[lw.type] then
            if lw.type ~= 'string' and lw.type ~= 'hash' and lw.type ~= 'zset' then
                return nil, 'wrongtype'
            end
            return nil, 'holder_changed'    -- not what the caller saw
        end
        if row.sees ~= nil and not row.sees() then return nil, 'holder_changed' end
        lw.format = lw_format
    else
        for _, name in ipairs(lw_detect) do
            local r = lw_rows[name]
            if r.types[lw.type] and (r.sees == nil or r.sees()) then
                row = r
                lw.format = name
                break
            end
        end
        if row == nil then return nil, 'wrongtype' end
    end
    -- a row may see that the key is really another format's (a semaphore
    -- whose count decodes as a plain token)
    if row.refine ~= nil then
        local other = row.refine()
        if other ~= nil then
            row = lw_rows[other]
            lw.format = other
        end
    end
    if action == 'expire' and (row.expire == false or
                               (type(row.expire) == 'function' and not row.expire())) then
        lw.format = ''
        return nil, 'wrongtype'
    end
    return row
end

-- Run the guards in the SPEC's order.  Sets lw.refusal, or leaves it nil
-- when every guard holds, and returns the format's row.  Nothing here
-- writes.
local function lw_check(action)
    local matched = false
    for j = 1, lw_npat do
        if lw_glob_match(ARGV[13 + j], lw_key) then
            matched = true
            break
        end
    end
    if not matched then
        -- Not a lock: never read it (an ACL limited to the lock patterns
        -- would refuse the read anyway).
        lw.refusal = 'pattern'
        return nil
    end
    -- OBJECT IDLETIME first: any read below resets it.  Under an LFU
    -- maxmemory-policy it is an error, so it is not asked when INFO
    -- memory names one (an ACL without +info: asked, and the error is an
    -- unknown age); the age is then the caller's alone.
    local mem = redis.pcall('info', 'memory')
    if type(mem) ~= 'string' or string.find(mem, 'maxmemory_policy:[%w-]*lfu') == nil then
        local idle = redis.pcall('object', 'idletime', lw_key)
        if type(idle) == 'number' then lw.idle = idle end
    end
    lw.type = redis.call('type', lw_key).ok
    lw.pttl = redis.call('pttl', lw_key)
    if lw.type == 'none' then
        lw.refusal = 'gone'
        return nil
    end
    -- A string Redis reads as an integer 0..9999 may be one object shared
    -- by every key with that value (OBJ_SHARED_INTEGERS): its idle time is
    -- not this key's (docs/formats.md "What is a fact").
    if lw.idle >= 0 and lw.type == 'string' then
        local v = redis.call('getrange', lw_key, 0, 4)
        if v == '0' or string.find(v, '^[1-9]%d?%d?%d?$') ~= nil then lw.idle = -1 end
    end
    lw.rw = lw.type == 'hash' and redis.call('hexists', lw_key, 'mode') == 1
    local row, why = lw_pick(action)
    if row ~= nil and row.label ~= nil then lw.format = row.label() or lw.format end
    if row == nil then
        lw.refusal = why
        if lw.type == 'string' then
            lw.old = redis.call('getrange', lw_key, 0, LW_OLD_MAX - 1)
        elseif lw.type == 'hash' then
            lw.old = lw_hash_old()
        end
        return nil
    end
    if not row.held() then
        lw.refusal = 'holder_changed'
        return nil
    end
    if lw_if_leaked and lw.pttl ~= -1 then
        lw.refusal = 'not_leaked'
        return row
    end
    local age = lw_known_age_ms
    -- IDLETIME's clock ticks in whole seconds: a second less is sure
    if lw.idle > 1 and (lw.idle - 1) * 1000 > age then age = (lw.idle - 1) * 1000 end
    if lw_lease_age_ms > age and lw_lease_pttl ~= nil then
        local kept
        if lw_lease_pttl < 0 then kept = lw.pttl == -1
        else
            kept = lw.pttl >= 0 and lw.pttl <= lw_lease_pttl + lw_lease_slack and
                   lw.pttl >= lw_lease_pttl - lw_lease_slack
        end
        if kept then age = lw_lease_age_ms end
    end
    lw.age = age
    if lw_older_ms > 0 then
        if age < lw_older_ms then
            lw.refusal = 'too_young'
            return row
        end
    end
    return row
end

-- The audit entry, written before any change so that a failed XADD (OOM,
-- ACL) aborts the script with nothing changed: no unaudited release.
-- Not in dry runs, and not here in cluster mode (no 'audit' companion:
-- the stream is in another slot; the caller writes the entry).
--
-- A refusal must never push a done release or expire out of the capped
-- stream: during a flood of refusals - the newest LW_AUDIT_LOOK entries
-- all refusals, all within LW_AUDIT_QUIET_MS of this one - a refusal is
-- not written (audit_id ""), so refusals take at most LW_AUDIT_LOOK
-- entries a LW_AUDIT_QUIET_MS, and the 10,000 entries the stream keeps
-- hold every release of the last hours however many were refused.  Every
-- refusal is still counted (lockwatch_releases_total) and logged by the
-- agent; a release or expire is always written.
local LW_AUDIT_LOOK = 50
local LW_AUDIT_QUIET_MS = 60000

local function lw_refusal_flood(stream)
    local now = tonumber(ARGV[7]) or 0
    local tail = redis.call('xrevrange', stream, '+', '-', 'COUNT', LW_AUDIT_LOOK)
    if #tail < LW_AUDIT_LOOK then return false end
    for _, e in ipairs(tail) do
        local ms = tonumber(string.match(e[1], '^(%d+)')) or 0
        if now - ms >= LW_AUDIT_QUIET_MS then return false end
        local outcome
        for i = 1, #e[2], 2 do
            if e[2][i] == 'outcome' then outcome = e[2][i + 1] end
        end
        if outcome == 'released' or outcome == 'expired' then return false end
    end
    return true
end

local function lw_audit(action, outcome)
    local a = lw_role['audit']
    if a == nil or lw_dry then return end
    if outcome ~= 'released' and outcome ~= 'expired' and lw_refusal_flood(a[1]) then
        return
    end
    local args = { 'xadd', a[1], 'MAXLEN', '~', LW_AUDIT_MAXLEN, '*',
                   'time', ARGV[7], 'operator', ARGV[8], 'reason', ARGV[9],
                   'action', action, 'target', ARGV[10], 'key', lw_key,
                   'holder', lw_holder, 'type', lw.type, 'pttl', tostring(lw.pttl),
                   'old', lw.old, 'outcome', outcome, 'format', lw.format,
                   'age', tostring(lw.age) }
    if action == 'expire' then
        args[#args + 1] = 'ttl'
        args[#args + 1] = tostring(lw_ttl_ms)
    end
    lw.audit_id = redis.call(unpack(args))
end

-- A wake-up must never undo a release that is done and audited: errors
-- (an ACL without the channel, say) are counted and reported instead.
local function lw_publish(ch, msg, sharded)
    local r = redis.pcall('publish', ch, msg)
    if type(r) == 'table' and r.err then lw.wake_errors = lw.wake_errors + 1 end
    if sharded and lw_cluster then
        r = redis.pcall('spublish', ch, msg)
        if type(r) == 'table' and r.err then lw.wake_errors = lw.wake_errors + 1 end
    end
end

local function lw_reply(outcome)
    return { outcome, lw.type, lw.pttl, lw.idle, lw.old, lw.audit_id, lw.wake_errors,
             lw.format, lw.left, lw.purged or 0 }
end
