/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scripts.c - the table of Lua scripts behind every lock operation that
 * must be atomic on the server.
 *
 * Each script lives in its own file, client/lua/<name>.lua, which the
 * Makefile embeds as the NUL-terminated array client_lua_<name>_lua[]; each
 * file's header says what it takes and returns.  Every script checks that
 * the lock is still ours and acts in the same atomic step, so a client
 * whose lock expired and was taken over can never delete or extend the new
 * holder's lock.  They are loaded once per client with SCRIPT LOAD and run
 * by EVALSHA; conn.c falls back to EVAL when the server answers NOSCRIPT
 * (restart, SCRIPT FLUSH, failover).
 *
 * Keys a script touches are passed in KEYS, never built in Lua, so each
 * script stays correct on a Redis Cluster shard (the lock, its wake channel
 * and its fence counter share a hash tag; see common/prefixname.h).
 *
 * The reentrant scripts are Redisson's RLock scripts (RedissonLock.java) in
 * effect: the same hash, the same field, the same counts, and the same "0"
 * published on redisson_lock__channel:{name} when the last hold goes, so
 * Redisson clients and this library can share a lock.  The return values
 * differ (we also return the hold count and the fence), and so do the TTLs
 * in one way: ours never cut a hold's TTL to a shorter inner lease, as
 * Redisson's PEXPIRE does.  settle.lua undoes an acquire whose reply was
 * lost (settle.c).
 */
#include "client_impl.h"

/* The embedded files (Makefile: $(BUILD)/gen/client/lua/<name>.lua.c).
 * Hidden: the linker keeps the most restrictive visibility it sees, so
 * these stay out of liblockwatch.so's exported symbols. */
#define LWC_LUA(name) \
    extern const char client_lua_##name##_lua[] __attribute__((visibility("hidden")))

LWC_LUA(plain_acquire_fenced);
LWC_LUA(plain_release);
LWC_LUA(plain_extend);
LWC_LUA(rlock_acquire);
LWC_LUA(rlock_release);
LWC_LUA(rlock_extend);
LWC_LUA(settle);

const struct lwc_script lwc_scripts[LWC_SCRIPT_COUNT] = {
    [LWC_PLAIN_ACQUIRE_FENCED] = { "plain acquire", client_lua_plain_acquire_fenced_lua },
    [LWC_PLAIN_RELEASE]        = { "plain release", client_lua_plain_release_lua },
    [LWC_PLAIN_EXTEND]         = { "plain extend", client_lua_plain_extend_lua },
    [LWC_RLOCK_ACQUIRE]        = { "reentrant acquire", client_lua_rlock_acquire_lua },
    [LWC_RLOCK_RELEASE]        = { "reentrant release", client_lua_rlock_release_lua },
    [LWC_RLOCK_EXTEND]         = { "reentrant extend", client_lua_rlock_extend_lua },
    [LWC_SETTLE]               = { "settle", client_lua_settle_lua },
};
