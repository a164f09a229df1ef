/*
 * scripts.c - the Lua scripts behind every lock operation that must be
 * atomic on the server.
 *
 * Each script checks that the lock is still ours and acts in the same
 * atomic step, so a client whose lock expired and was taken over can never
 * delete or extend the new holder's lock.  They are loaded once per client
 * with SCRIPT LOAD and run by EVALSHA; conn.c falls back to EVAL when the
 * server answers NOSCRIPT (restart, SCRIPT FLUSH, failover).
 *
 * Keys a script touches are passed in KEYS, never built in Lua, so each
 * script stays correct on a Redis Cluster shard (the lock, its wake channel
 * and its fence counter share a hash tag; see names.c).
 *
 * The reentrant scripts are Redisson's RLock scripts (RedissonLock.java) in
 * effect: the same hash, the same field, the same counts, TTLs and the same
 * "0" published on redisson_lock__channel:{name} when the last hold goes, so
 * Redisson clients and this library can share a lock.  Only the return
 * values differ, because we also return the hold count and the fence.
 *
 * GET and HEXISTS run under redis.pcall: a key of the other type (someone
 * else's lock in another format) is "not ours", not a script error.
 */
#include "client_impl.h"

/*
 * KEYS[1] lock, KEYS[2] fence counter; ARGV[1] token, ARGV[2] lease ms.
 * {1, 1, fence} when taken, else {0, pttl of the holder, 0}.
 * (Without LW_FENCING a plain lock is taken with a bare SET NX PX.)
 */
static const char plain_acquire_fenced[] =
    "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "    return {1, 1, redis.call('incr', KEYS[2])}\n"
    "end\n"
    "return {0, redis.call('pttl', KEYS[1]), 0}\n";

/*
 * KEYS[1] lock, KEYS[2] wake channel; ARGV[1] token.
 * 1 released (and waiters woken), 0 not ours (left alone).
 */
static const char plain_release[] =
    "if redis.pcall('get', KEYS[1]) ~= ARGV[1] then\n"
    "    return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', KEYS[2], '0')\n"
    "return 1\n";

/* KEYS[1] lock; ARGV[1] token, ARGV[2] lease ms.  1 extended, 0 not ours. */
static const char plain_extend[] =
    "if redis.pcall('get', KEYS[1]) == ARGV[1] then\n"
    "    redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "    return 1\n"
    "end\n"
    "return 0\n";

/*
 * KEYS[1] lock hash, KEYS[2] fence counter; ARGV[1] lease ms,
 * ARGV[2] "<uuid>:<thread>", ARGV[3] "1" to take a fence token.
 * Redisson: take it when the hash does not exist or the field is ours,
 * HINCRBY the field, PEXPIRE the lease.  {1, hold count, fence} when taken,
 * else {0, pttl of the holder, 0}.
 */
static const char rlock_acquire[] =
    "if redis.call('exists', KEYS[1]) == 0 or\n"
    "   redis.pcall('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "    local f = 0\n"
    "    if ARGV[3] == '1' then\n"
    "        f = redis.call('incr', KEYS[2])\n"
    "    end\n"
    "    return {1, n, f}\n"
    "end\n"
    "return {0, redis.call('pttl', KEYS[1]), 0}\n";

/*
 * KEYS[1] lock hash, KEYS[2] wake channel; ARGV[1] "<uuid>:<thread>",
 * ARGV[2] lease ms.  Redisson's unlock without its retry latch (our client
 * does not retry an unlock): -1 not ours; n > 0 still held n times (lease
 * renewed); 0 the last hold went: hash deleted and "0" (Redisson's
 * UNLOCK_MESSAGE) published.
 */
static const char rlock_release[] =
    "if redis.pcall('hexists', KEYS[1], ARGV[1]) ~= 1 then\n"
    "    return -1\n"
    "end\n"
    "local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)\n"
    "if n > 0 then\n"
    "    redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "    return n\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', KEYS[2], '0')\n"
    "return 0\n";

/* KEYS[1] lock hash; ARGV[1] "<uuid>:<thread>", ARGV[2] lease ms.  Redisson's
 * renewal (LockTask): 1 extended, 0 not ours. */
static const char rlock_extend[] =
    "if redis.pcall('hexists', KEYS[1], ARGV[1]) == 1 then\n"
    "    redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "    return 1\n"
    "end\n"
    "return 0\n";

const struct lwc_script lwc_scripts[LWC_SCRIPT_COUNT] = {
    [LWC_PLAIN_ACQUIRE_FENCED] = { "plain acquire", plain_acquire_fenced },
    [LWC_PLAIN_RELEASE]        = { "plain release", plain_release },
    [LWC_PLAIN_EXTEND]         = { "plain extend", plain_extend },
    [LWC_RLOCK_ACQUIRE]        = { "reentrant acquire", rlock_acquire },
    [LWC_RLOCK_RELEASE]        = { "reentrant release", rlock_release },
    [LWC_RLOCK_EXTEND]         = { "reentrant extend", rlock_extend },
};
