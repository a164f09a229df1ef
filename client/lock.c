/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.c - the lock calls every kind shares: lw_lock / lw_trylock /
 * lw_unlock / lw_extend and the lock object's accessors.
 *
 * What differs between a plain lock and a reentrant one (the commands, the
 * scripts, what "ours" means) is a row of struct lwc_kind (plain.c,
 * reentrant.c); this file does the rest in one place: argument checks,
 * timing and the wait/hold samples, handing a watchdog lock to the
 * background thread, and the object's lifetime.
 *
 * A lock object is one allocation: the struct followed by the key, its wake
 * channel and its fence counter name.  It is reference counted (the caller,
 * plus the watchdog while it renews or reports it), and it holds a
 * reference on its client.
 */
#include <stdlib.h>
#include <string.h>

#include "client_impl.h"

static struct lw_lock *
lock_new(lw_client *c, const char *call, const char *key, size_t keylen,
         const struct lwc_kind *kind, long long lease_ms, int flags,
         lw_error *err)
{
    size_t chlen = prefix_name(NULL, 0, kind->channel_prefix, key, keylen);
    size_t fklen = prefix_name(NULL, 0, LWC_FENCE_PREFIX, key, keylen);
    struct lw_lock *lk;
    char *p;

    lk = calloc(1, sizeof(*lk) + keylen + 1 + chlen + 1 + fklen + 1);
    if (lk == NULL) {
        lwc_seterr(err, LW_ERR, "%s %.200s: out of memory for a lock object",
                   call, key);
        return NULL;
    }
    p = lk->names;
    memcpy(p, key, keylen);
    p[keylen] = '\0';
    lk->key = p;
    lk->keylen = keylen;
    p += keylen + 1;
    lk->channellen = prefix_name(p, chlen + 1, kind->channel_prefix, key, keylen);
    lk->channel = p;
    p += chlen + 1;
    lk->fence_keylen = prefix_name(p, fklen + 1, LWC_FENCE_PREFIX, key, keylen);
    lk->fence_key = p;

    lk->client = c;
    lk->call = call;
    lk->kind = kind;
    lk->fencing = (flags & LW_FENCING) != 0;
    lk->watchdog = lease_ms == 0;
    lk->lease_ms = lease_ms != 0 ? lease_ms : c->default_lease_ms;
    lk->tid = lwc_gettid();
    atomic_init(&lk->lost, 0);
    atomic_init(&lk->refs, 1);
    atomic_fetch_add(&c->refs, 1);
    return lk;
}

void
lwc_lock_unref(struct lw_lock *lk)
{
    lw_client *c;

    if (atomic_fetch_sub(&lk->refs, 1) != 1)
        return;
    c = lk->client;
    free(lk);
    lwc_client_unref(c);
}

int64_t
lwc_lease_overrun(lw_client *c, const struct lw_lock *lk, int64_t now_us)
{
    int64_t end;

    pthread_mutex_lock(&c->bg.mu);
    end = lk->renewed_mono_us + lk->lease_ms * 1000;
    pthread_mutex_unlock(&c->bg.mu);
    return now_us > end ? now_us - end : 0;
}

void
lwc_mark_lost(struct lw_lock *lk)
{
    atomic_store(&lk->lost, 1);
    lwc_bg_unwatch(lk->client, lk);
}

lw_status
lwc_attempt(lw_client *c, struct lw_lock *lk, bool want_pttl, long long *pttl,
            bool *transient, lw_error *err)
{
    redisContext *ctx = lwc_cmd_get(c, err);
    lw_status st;

    if (transient != NULL)
        *transient = ctx == NULL;
    if (ctx == NULL) {
        lwc_err_prefix(err, lk->call, lk->key, lk->keylen);
        return LW_ERR;
    }
    st = lk->kind->attempt(c, ctx, lk, want_pttl, pttl, err);
    if (st == LW_ERR)
        lwc_err_prefix(err, lk->call, lk->key, lk->keylen);
    LWC_T("attempt %s holder %s: %d%s", lk->key, lk->holder, (int)st,
          ctx->err ? " (conn error)" : "");
    if (st == LW_ERR && ctx->err) {
        /* The acquire may have reached Redis and may still run there. */
        lwc_orphan_note(c, lk);
        if (transient != NULL)
            *transient = true;
    }
    lwc_cmd_put(c, ctx);
    return st;
}

lw_status
lwc_check_type(lw_client *c, struct lw_lock *lk, bool *transient, lw_error *err)
{
    const char *argv[] = { "TYPE", lk->key };
    size_t lens[] = { 4, lk->keylen };
    redisContext *ctx = lwc_cmd_get(c, err);
    redisReply *r;
    lw_status st = LW_OK;

    *transient = ctx == NULL;
    if (ctx == NULL) {
        lwc_err_prefix(err, lk->call, lk->key, lk->keylen);
        return LW_ERR;
    }
    r = lwc_command(ctx, 2, argv, lens, "TYPE", err);
    if (r == NULL) {
        *transient = true;
        lwc_err_prefix(err, lk->call, lk->key, lk->keylen);
        st = LW_ERR;
    } else if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "none") != 0 &&
               strcmp(r->str, lk->kind->redis_type) != 0) {
        st = lwc_seterr(err, LW_ERR, "%s %.200s: the key is a %.32s, not a %s lock (its key "
                        "is a %s): no holder will ever release it; check the key's name, "
                        "and whether this is a %s lock", lk->call, lk->key, r->str,
                        lk->kind->name, lk->kind->redis_type,
                        lk->kind == &lwc_kind_plain ? "reentrant (LW_REENTRANT)" : "plain");
    }
    if (r != NULL)
        freeReplyObject(r);
    lwc_cmd_put(c, ctx);
    return st;
}

lw_status
lwc_acquire_result(const redisReply *r, struct lw_lock *lk, long long *pttl,
              lw_error *err)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[2]->type != REDIS_REPLY_INTEGER)
        return lwc_reply_error(r, "acquire script", err);
    if (r->element[0]->integer == 1) {
        lk->holds = (long)r->element[1]->integer;
        lk->fence = r->element[2]->integer;
        return LW_OK;
    }
    if (pttl != NULL)
        *pttl = r->element[1]->integer;
    return LW_BUSY;
}

static lw_status
check_call(lw_client *c, const char *fn, const char *key, long long lease_ms,
           int flags, lw_lock_t **out, lw_error *err)
{
    size_t keylen;

    if (c == NULL || out == NULL || key == NULL)
        return lwc_seterr(err, LW_ERR, "%s: client, key and out must not be NULL",
                          fn);
    keylen = strnlen(key, LW_KEY_MAX + 1);
    if (keylen == 0 || keylen > LW_KEY_MAX)
        return lwc_seterr(err, LW_ERR, "%s: the key must be 1..%d bytes", fn,
                          LW_KEY_MAX);
    if (lease_ms < 0 || lease_ms > LWC_LEASE_MAX_MS)
        return lwc_seterr(err, LW_ERR, "%s %.200s: lease_ms %lld is not 0 "
                          "(watchdog) or 1..%lld", fn, key, lease_ms,
                          (long long)LWC_LEASE_MAX_MS);
    if ((flags & ~(LW_REENTRANT | LW_FENCING)) != 0)
        return lwc_seterr(err, LW_ERR, "%s %.200s: unknown flags 0x%x", fn, key,
                          (unsigned)flags);
    if (atomic_load(&c->closed))
        return lwc_seterr(err, LW_ERR, "%s %.200s: the client was freed", fn, key);
    return LW_OK;
}

static lw_status
acquire(lw_client *c, const char *key, long long lease_ms, long long timeout_ms,
        int flags, bool try, lw_lock_t **out, lw_error *err)
{
    const char *fn = try ? "lw_trylock" : "lw_lock";
    int64_t t0 = clock_mono_us(), now, deadline_us;
    struct lw_lock *lk = NULL;
    bool transient = false, waited = false;
    lw_status st;

    lwc_clearerr(err);
    if (out != NULL)
        *out = NULL;
    st = check_call(c, fn, key, lease_ms, flags, out, err);
    if (st != LW_OK)
        return st;
    if (timeout_ms < 0 && timeout_ms != LW_WAIT_FOREVER)
        return lwc_seterr(err, LW_ERR, "%s %.200s: timeout_ms %lld is negative "
                          "(LW_WAIT_FOREVER waits without limit)", fn, key,
                          timeout_ms);
    /* from the call, as waited_us counts (nothing above waits);
     * LW_WAIT_FOREVER, negative, never passes */
    deadline_us = clock_deadline_us(timeout_ms * 1000);

    lk = lock_new(c, fn, key, strlen(key),
                  (flags & LW_REENTRANT) ? &lwc_kind_reentrant : &lwc_kind_plain,
                  lease_ms, flags, err);
    if (lk == NULL) {
        lwc_report_wait(c, key, strlen(key), clock_mono_us() - t0, LW_ERR);
        return LW_ERR;
    }

    st = lwc_attempt(c, lk, false, NULL, &transient, err);
    /* A first attempt that used up the time (a silent Redis: one command
     * timeout) ends the call: nothing more is sent, nor waited for. */
    if ((st == LW_BUSY || (st == LW_ERR && transient)) && !try && timeout_ms != 0 &&
        clock_mono_us() < deadline_us) {
        /* Only an acquire that really waits says so (docs/reporters.md):
         * an uncontended lock costs no extra line.  The holder id is the
         * first attempt's token; the 7-field wait that ends it carries
         * the final one. */
        waited = true;
        lwc_report_waiting(c, lk, true, LW_OK);
        st = lwc_wait_acquire(c, lk, deadline_us, err);
    }
    now = clock_mono_us();
    lk->waited_us = now - t0;

    if (st == LW_OK) {
        lk->acquired_mono_us = now;
        lk->renewed_mono_us = now;
        if (lk->watchdog || lk->kind == &lwc_kind_reentrant)
            lwc_bg_track(c, lk);
        if (waited)
            lwc_report_wait_end(c, lk, lk->waited_us, LW_OK);
        else
            lwc_report_wait(c, lk->key, lk->keylen, lk->waited_us, LW_OK);
        *out = lk;
        lwc_clearerr(err);
        return LW_OK;
    }
    if (st == LW_BUSY && !try)
        st = LW_TIMEOUT;
    if (st == LW_BUSY)
        lwc_seterr(err, LW_BUSY, "%s %.200s: held by someone else", fn, key);
    else if (st == LW_TIMEOUT)
        lwc_seterr(err, LW_TIMEOUT, "%s %.200s: still held by someone else after "
                   "%lld ms", fn, key, timeout_ms);
    if (waited)
        lwc_report_wait_end(c, lk, lk->waited_us, st);
    else
        lwc_report_wait(c, lk->key, lk->keylen, lk->waited_us, st);
    lwc_lock_unref(lk);
    return st;
}

LW_API lw_status
lw_lock(lw_client *c, const char *key, long long lease_ms, long long timeout_ms,
        int flags, lw_lock_t **out, lw_error *err)
{
    return acquire(c, key, lease_ms, timeout_ms, flags, false, out, err);
}

LW_API lw_status
lw_trylock(lw_client *c, const char *key, long long lease_ms, int flags,
           lw_lock_t **out, lw_error *err)
{
    return acquire(c, key, lease_ms, 0, flags, true, out, err);
}

LW_API lw_status
lw_unlock(lw_lock_t *lk, lw_error *err)
{
    lw_client *c;
    redisContext *ctx;
    lw_status st;

    lwc_clearerr(err);
    if (lk == NULL)
        return LW_OK;
    c = lk->client;
    /* Unwatch first: a renewal racing with this release must not be taken
     * for a loss. */
    lwc_bg_untrack(c, lk);
    if (atomic_load(&c->closed)) {
        st = lwc_seterr(err, LW_ERR, "lw_unlock %.200s: the client was freed; "
                        "the lock is left to expire", lk->key);
        goto out;
    }
    ctx = lwc_cmd_get(c, err);
    if (ctx == NULL) {
        /* Redis silent behind a lost reply: the release waits in line and
         * runs when it resumes, instead of leaving the lock (and, for a
         * reentrant one, a hold the thread's next lock would build on) for
         * a whole lease. */
        if (lwc_release_queue(c, lk))
            lwc_seterr(err, LW_ERR, "lw_unlock %.200s: Redis at %s:%d has not "
                       "answered a command sent before within the command "
                       "timeout (busy or paused); the release was sent behind "
                       "it and runs when Redis resumes", lk->key, c->host,
                       c->port);
        else
            lwc_err_prefix(err, "lw_unlock", lk->key, lk->keylen);
        st = LW_ERR;
        goto out;
    }
    st = lk->kind->release(c, ctx, lk, err);
    if (st == LW_ERR)
        lwc_err_prefix(err, "lw_unlock", lk->key, lk->keylen);
    LWC_T("release %s holder %s: %d%s", lk->key, lk->holder, (int)st,
          ctx->err ? " (conn error)" : "");
    lwc_cmd_put(c, ctx);
    if (st == LW_OK)
        lwc_clearerr(err);
    else if (st == LW_LOST && atomic_exchange(&lk->lost, 1) == 0)
        /* the release found the lease run out before anyone noticed */
        lwc_report_lost(c, lk, false, clock_mono_us() - lk->acquired_mono_us,
                        lwc_lease_overrun(c, lk, clock_mono_us()));
out:
    /* A no-op once the client is freed (its socket is closed). */
    lwc_report_hold(c, lk, clock_mono_us() - lk->acquired_mono_us);
    lwc_lock_unref(lk);
    return st;
}

LW_API lw_status
lw_extend(lw_lock_t *lk, long long lease_ms, lw_error *err)
{
    char lease[24];
    const char *kv[3];
    size_t kvlen[3];
    lw_client *c;
    redisContext *ctx;
    redisReply *r;
    lw_status st;

    lwc_clearerr(err);
    if (lk == NULL)
        return lwc_seterr(err, LW_ERR, "lw_extend: lock must not be NULL");
    c = lk->client;
    if (lease_ms < 1 || lease_ms > LWC_LEASE_MAX_MS)
        return lwc_seterr(err, LW_ERR, "lw_extend %.200s: lease_ms %lld is not "
                          "in 1..%lld", lk->key, lease_ms,
                          (long long)LWC_LEASE_MAX_MS);
    if (atomic_load(&c->closed))
        return lwc_seterr(err, LW_ERR, "lw_extend %.200s: the client was freed",
                          lk->key);
    kv[0] = lk->key;
    kvlen[0] = lk->keylen;
    kv[1] = lk->holder;
    kvlen[1] = lk->holderlen;
    kv[2] = lease;
    kvlen[2] = lwc_fmt_u64(lease, (uint64_t)lease_ms);

    ctx = lwc_cmd_get(c, err);
    if (ctx == NULL) {
        lwc_err_prefix(err, "lw_extend", lk->key, lk->keylen);
        return LW_ERR;
    }
    r = lwc_eval(c, ctx, lk->kind->extend_script, 1, 2, kv, kvlen, err);
    lwc_cmd_put(c, ctx);
    if (r == NULL) {
        lwc_err_prefix(err, "lw_extend", lk->key, lk->keylen);
        return LW_ERR;
    }
    if (r->type != REDIS_REPLY_INTEGER) {
        st = lwc_reply_error(r, "extend script", err);
        lwc_err_prefix(err, "lw_extend", lk->key, lk->keylen);
    } else if (r->integer == 1) {
        pthread_mutex_lock(&c->bg.mu);      /* renewed_mono_us: bg.mu */
        lk->lease_ms = lease_ms;
        lk->renewed_mono_us = clock_mono_us();
        pthread_mutex_unlock(&c->bg.mu);
        st = LW_OK;
    } else {
        /* exchange: the watchdog may find it lost at the same moment, and
         * the agent hears of a loss once */
        if (atomic_exchange(&lk->lost, 1) == 0)
            lwc_report_lost(c, lk, true, clock_mono_us() - lk->acquired_mono_us,
                            lwc_lease_overrun(c, lk, clock_mono_us()));
        lwc_mark_lost(lk);
        st = lwc_seterr(err, LW_LOST, "lw_extend %.200s: the lock is no longer "
                        "ours (it expired or was taken over)", lk->key);
    }
    freeReplyObject(r);
    return st;
}

LW_API long long
lw_lock_fence(const lw_lock_t *lk)
{
    return lk != NULL ? lk->fence : 0;
}

LW_API int
lw_lock_is_lost(const lw_lock_t *lk)
{
    return lk != NULL && atomic_load(&((lw_lock_t *)lk)->lost) != 0;
}

LW_API const char *
lw_lock_token(const lw_lock_t *lk)
{
    return lk != NULL ? lk->holder : "";
}

LW_API const char *
lw_lock_key(const lw_lock_t *lk)
{
    return lk != NULL ? lk->key : "";
}

LW_API long long
lw_lock_waited_us(const lw_lock_t *lk)
{
    return lk != NULL ? (long long)lk->waited_us : 0;
}
