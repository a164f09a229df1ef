-- SPDX-License-Identifier: BSD-3-Clause
-- release.lua - the guarded release (force-unlock), run after guard.lua
-- and formats.lua.
--
-- When every guard holds: write the audit entry, then release the one
-- holder named in ARGV[1] the way its format's row of the release table
-- says (formats.lua: a reader of a RW lock, a permit of a semaphore, the
-- holder of a lock, with the wake-up its clients listen for), in the same
-- atomic step as the guards.  Keys are deleted only when no holder is
-- left; fencing counters (redisson_lock_token:{K}, lockwatch_fence:{K})
-- are never touched, and another holder's hold never is.

local lw_row = lw_check('release')
if lw.refusal ~= nil then
    lw_audit('release', lw.refusal)
    return lw_reply(lw.refusal)
end
if lw_dry then
    return lw_reply('would_release')
end
lw_audit('release', 'released')
lw_row.release()
return lw_reply('released')
