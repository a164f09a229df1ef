/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reentrant.c - reentrant locks in Redisson's RLock wire format, and the
 * holder registry that tells lockwatchd who holds them.
 *
 * The lock is a hash <key> with one field "<client uuid>:<thread id>" whose
 * value counts the holds; it has a PEXPIRE lease; the last release deletes
 * it and publishes "0" on redisson_lock__channel:{<key>}.  That is exactly
 * what Redisson writes (reference/lock-formats.md 1.2), so a Redisson
 * RLock and this library exclude each other on one key, and each one's
 * waiters wake on the other's release.  The scripts are in scripts.c.
 *
 * Redisson's field names no host, pid or time, so the holder's identity
 * goes to a registry hash per client handle (a contract with the agent):
 *
 *     lockwatch:client:{<uuid>}
 *         host            sanitised host name (as in the lw1 token)
 *         pid             decimal
 *         at:<tid>:<key>  Unix ms when thread <tid> first took <key>
 *
 * The at: field is set when a thread's hold count goes 0 -> 1 and deleted
 * when it goes back to 0.  Every acquisition, and every watchdog tick while
 * reentrant locks are held, PEXPIREs the registry to 3 x the default lease,
 * so the registry of a client that died goes away by itself.  The registry
 * lives in its own cluster slot, so it is written with separate commands
 * after the acquisition, pipelined in one round trip, and best effort: a
 * failed registry write never fails a lock call (the agent then shows the
 * lock without host and pid).
 */
#include <string.h>

#include "client_impl.h"

/* "at:<tid>:<key>" into out (room for LW_KEY_MAX + 32); its length. */
static size_t
registry_field(char *out, const struct lw_lock *lk)
{
    size_t n = 0;

    memcpy(out, "at:", 3);
    n = 3;
    n += lwc_fmt_u64(out + n, (uint64_t)lk->tid);
    out[n++] = ':';
    memcpy(out + n, lk->key, lk->keylen);
    return n + lk->keylen;
}

/* Read n replies and drop them; the connection stays in step. */
static void
discard_replies(redisContext *ctx, int n)
{
    for (int i = 0; i < n; i++) {
        void *v = NULL;

        if (lwc_get_reply(ctx, &v) != REDIS_OK)
            return;
        freeReplyObject(v);
    }
}

static void
registry_acquired(lw_client *c, redisContext *ctx, const struct lw_lock *lk)
{
    char field[LW_KEY_MAX + 32], ms[24], pid[24], ttl[24];
    const char *argv[8] = { "HSET", c->registry_key, "host", c->hostname,
                            "pid", pid, field, ms };
    size_t lens[8] = { 4, strlen(c->registry_key), 4, strlen(c->hostname), 3, 0,
                       0, 0 };
    const char *pargv[3] = { "PEXPIRE", c->registry_key, ttl };
    size_t plens[3] = { 7, strlen(c->registry_key), 0 };
    int argc = 6;

    lens[5] = lwc_fmt_u64(pid, (uint64_t)c->pid);
    if (lk->holds == 1) {
        lens[6] = registry_field(field, lk);
        lens[7] = lwc_fmt_u64(ms, (uint64_t)lk->acquired_unix_ms);
        argc = 8;
    }
    plens[2] = lwc_fmt_u64(ttl, (uint64_t)(3 * c->default_lease_ms));
    if (redisAppendCommandArgv(ctx, argc, argv, lens) != REDIS_OK)
        return;
    if (redisAppendCommandArgv(ctx, 3, pargv, plens) != REDIS_OK) {
        discard_replies(ctx, 1);
        return;
    }
    discard_replies(ctx, 2);
}

static void
registry_released(lw_client *c, redisContext *ctx, const struct lw_lock *lk)
{
    char field[LW_KEY_MAX + 32];
    const char *argv[3] = { "HDEL", c->registry_key, field };
    size_t lens[3] = { 4, strlen(c->registry_key), 0 };

    lens[2] = registry_field(field, lk);
    if (redisAppendCommandArgv(ctx, 3, argv, lens) == REDIS_OK)
        discard_replies(ctx, 1);
}

static lw_status
rlock_attempt(lw_client *c, redisContext *ctx, struct lw_lock *lk,
              bool want_pttl, long long *pttl, lw_error *err)
{
    char lease[24];
    const char *kv[5];
    size_t kvlen[5];
    redisReply *r;
    lw_status st;

    (void)want_pttl;                /* the script always answers the PTTL */
    if (lk->holderlen == 0) {
        size_t n = LWC_UUID_LEN;

        memcpy(lk->holder, c->id, LWC_UUID_LEN);
        lk->holder[n++] = ':';
        n += lwc_fmt_u64(lk->holder + n, (uint64_t)lk->tid);
        lk->holder[n] = '\0';
        lk->holderlen = n;
    }
    kv[0] = lk->key;
    kvlen[0] = lk->keylen;
    kv[1] = lk->fence_key;
    kvlen[1] = lk->fence_keylen;
    kv[2] = lease;
    kvlen[2] = lwc_fmt_u64(lease, (uint64_t)lk->lease_ms);
    kv[3] = lk->holder;
    kvlen[3] = lk->holderlen;
    kv[4] = lk->fencing ? "1" : "0";
    kvlen[4] = 1;

    r = lwc_eval(c, ctx, LWC_RLOCK_ACQUIRE, 2, 3, kv, kvlen, err);
    if (r == NULL)
        return LW_ERR;
    st = lwc_acquire_result(r, lk, pttl, err);
    freeReplyObject(r);
    if (st == LW_OK) {
        lk->acquired_unix_ms = clock_now_ms();
        registry_acquired(c, ctx, lk);
    }
    return st;
}

static lw_status
rlock_release(lw_client *c, redisContext *ctx, struct lw_lock *lk, lw_error *err)
{
    char lease[24];
    const char *kv[4] = { lk->key, lk->channel, lk->holder, lease };
    size_t kvlen[4] = { lk->keylen, lk->channellen, lk->holderlen, 0 };
    redisReply *r;
    lw_status st;
    bool forget = false;

    kvlen[3] = lwc_fmt_u64(lease, (uint64_t)lk->lease_ms);
    r = lwc_eval(c, ctx, LWC_RLOCK_RELEASE, 2, 2, kv, kvlen, err);
    if (r == NULL)
        return LW_ERR;
    if (r->type != REDIS_REPLY_INTEGER) {
        st = lwc_reply_error(r, "release script", err);
    } else if (r->integer >= 0) {
        st = LW_OK;
        forget = r->integer == 0;       /* this thread's last hold went */
    } else {
        st = lwc_seterr(err, LW_LOST, "lw_unlock %.200s: the lock was no longer "
                        "ours (it expired or was taken over); it was left alone",
                        lk->key);
        /* Keep the registry entry if this thread holds the key again
         * through another lock object. */
        pthread_mutex_lock(&c->bg.mu);
        forget = !lwc_bg_same_hold_locked(c, lk);
        pthread_mutex_unlock(&c->bg.mu);
    }
    freeReplyObject(r);
    if (forget)
        registry_released(c, ctx, lk);
    return st;
}

const struct lwc_kind lwc_kind_reentrant = {
    .name = "reentrant",
    .redis_type = "hash",
    .channel_prefix = LWC_RLOCK_CHANNEL,
    .extend_script = LWC_RLOCK_EXTEND,
    .attempt = rlock_attempt,
    .release = rlock_release,
};
