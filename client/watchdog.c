/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watchdog.c - the client's background thread: it renews watchdog locks,
 * keeps the holder registry alive, flushes buffered samples, and undoes
 * lost acquires a broken connection left in the limbo (settle.c).
 *
 * One thread per client handle, started by lw_connect() and joined by
 * lw_client_free(); it sleeps on a condition variable (CLOCK_MONOTONIC)
 * until the earliest of:
 *   - the renewal tick, every default_lease_ms / 3 while the client holds a
 *     watchdog lock or any reentrant lock (10 s with the default 30 s
 *     lease, as Redisson's watchdog).  A tick renews every watched lock with
 *     the kind's compare-and-pexpire script to its lease (the default one,
 *     or the longer one lw_extend() gave it), pipelined on the thread's own
 *     Redis connection (LWC_RENEW_BATCH per round trip), and PEXPIREs the
 *     registry key lockwatch:client:{<uuid>} to 3 x the lease while
 *     reentrant locks are held;
 *   - LWC_FLUSH_US after the first sample of a batch was buffered;
 *   - every LWC_RECHECK_MAX_US while the limbo holds a lost acquire: it
 *     opens the command connection, which undoes the limbo first.
 * When nothing is held and nothing buffered it sleeps until signalled, so
 * an idle client costs no wake-ups.  Callers signal it only when they need
 * it earlier than it planned to wake (lwc_bg_arm_locked), so a tight lock
 * loop does not pay a futex wake per call.
 *
 * A lock is lost when its renewal answers 0 (the key is gone or holds
 * another holder), or when no renewal has succeeded for a whole lease
 * (Redis unreachable: the TTL has run out by now).  Then it leaves the
 * watch list, is marked lost, and on_lost runs on this thread, outside every
 * mutex, while this thread holds a reference to the lock object, so the
 * object stays valid even if another thread lw_unlock()s it meanwhile.
 *
 * Lock objects are never copied here: the thread takes a reference on each
 * lock it renews (under bg.mu), drops the mutex for the network round trip,
 * and re-checks under bg.mu that the lock is still watched before marking
 * it lost.  lw_unlock() unwatches a lock before it runs the release script,
 * so a renewal that fails because the lock was just released is never
 * reported as a loss.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_impl.h"

int
lwc_bg_init(lw_client *c)
{
    struct lwc_bg *bg = &c->bg;

    if (clock_cond_init(&bg->cond) != 0)
        return -1;
    if (pthread_mutex_init(&bg->mu, NULL) != 0) {
        pthread_cond_destroy(&bg->cond);
        return -1;
    }
    return 0;
}

void
lwc_bg_destroy(lw_client *c)
{
    pthread_cond_destroy(&c->bg.cond);
    pthread_mutex_destroy(&c->bg.mu);
}

static int64_t
period_us(const lw_client *c)
{
    return c->default_lease_ms * 1000 / 3;
}

/* The lease a renewal of lk sets, with bg.mu held: what lw_extend() made
 * its lease, but never less than the default lease, whose period the
 * renewals keep (a shorter one could run out between two of them). */
static long long
renew_lease_locked(const lw_client *c, const struct lw_lock *lk)
{
    return lk->lease_ms > c->default_lease_ms ? lk->lease_ms : c->default_lease_ms;
}

void
lwc_bg_arm_locked(lw_client *c, int64_t deadline_us)
{
    if (c->bg.sleep_until_us != 0 && deadline_us < c->bg.sleep_until_us)
        pthread_cond_signal(&c->bg.cond);
}

void
lwc_bg_track(lw_client *c, struct lw_lock *lk)
{
    struct lwc_bg *bg = &c->bg;

    pthread_mutex_lock(&bg->mu);
    if (lk->watchdog && !lk->watched) {
        lk->wprev = NULL;
        lk->wnext = bg->watched;
        if (bg->watched != NULL)
            bg->watched->wprev = lk;
        bg->watched = lk;
        lk->watched = true;
        bg->nwatched++;
    }
    if (lk->kind == &lwc_kind_reentrant && !lk->registered) {
        lk->rprev = NULL;
        lk->rnext = bg->reentrant;
        if (bg->reentrant != NULL)
            bg->reentrant->rprev = lk;
        bg->reentrant = lk;
        lk->registered = true;
        bg->nreentrant++;
    }
    if (bg->next_tick_us == 0 && (bg->nwatched > 0 || bg->nreentrant > 0)) {
        bg->next_tick_us = clock_deadline_us(period_us(c));
        lwc_bg_arm_locked(c, bg->next_tick_us);
    }
    pthread_mutex_unlock(&bg->mu);
}

static void
unwatch_locked(struct lwc_bg *bg, struct lw_lock *lk)
{
    if (!lk->watched)
        return;
    if (lk->wprev != NULL)
        lk->wprev->wnext = lk->wnext;
    else
        bg->watched = lk->wnext;
    if (lk->wnext != NULL)
        lk->wnext->wprev = lk->wprev;
    lk->wprev = lk->wnext = NULL;
    lk->watched = false;
    bg->nwatched--;
}

void
lwc_bg_unwatch(lw_client *c, struct lw_lock *lk)
{
    pthread_mutex_lock(&c->bg.mu);
    unwatch_locked(&c->bg, lk);
    pthread_mutex_unlock(&c->bg.mu);
}

void
lwc_bg_untrack(lw_client *c, struct lw_lock *lk)
{
    struct lwc_bg *bg = &c->bg;

    pthread_mutex_lock(&bg->mu);
    unwatch_locked(bg, lk);
    if (lk->registered) {
        if (lk->rprev != NULL)
            lk->rprev->rnext = lk->rnext;
        else
            bg->reentrant = lk->rnext;
        if (lk->rnext != NULL)
            lk->rnext->rprev = lk->rprev;
        lk->rprev = lk->rnext = NULL;
        lk->registered = false;
        bg->nreentrant--;
    }
    /* An armed tick with nothing left to do disarms itself. */
    pthread_mutex_unlock(&bg->mu);
}

bool
lwc_bg_same_hold_locked(lw_client *c, const struct lw_lock *lk)
{
    for (const struct lw_lock *o = c->bg.reentrant; o != NULL; o = o->rnext)
        if (o != lk && o->tid == lk->tid && o->keylen == lk->keylen &&
            memcmp(o->key, lk->key, lk->keylen) == 0)
            return true;
    return false;
}

/*
 * Renew n locks, locks[i] to lease_ms[i] (and the registry when asked) on
 * the thread's connection.  result[i]: 1 renewed, 0 not ours any more, -1
 * could not ask.
 */
static void
renew(lw_client *c, struct lw_lock **locks, const long long *lease_ms, size_t n,
      bool registry, int *result)
{
    struct lwc_bg *bg = &c->bg;
    char lease[24], ttl[24];
    size_t ttllen = lwc_fmt_u64(ttl, (uint64_t)(3 * c->default_lease_ms));
    size_t start = 0;

    for (size_t i = 0; i < n; i++)
        result[i] = -1;
    if (bg->redis == NULL)
        bg->redis = lwc_redis_connect(c, "watchdog", INT64_MAX, NULL);
    if (bg->redis == NULL)
        return;

    do {
        size_t end = n - start > LWC_RENEW_BATCH ? start + LWC_RENEW_BATCH : n;
        bool with_registry = registry && start == 0;
        size_t expect = end - start + (with_registry ? 1 : 0);

        for (size_t i = start; i < end; i++) {
            struct lw_lock *lk = locks[i];
            const char *kv[3] = { lk->key, lk->holder, lease };
            size_t kvlen[3] = { lk->keylen, lk->holderlen, 0 };

            kvlen[2] = lwc_fmt_u64(lease, (uint64_t)lease_ms[i]);
            if (lwc_eval_append(c, bg->redis, lk->kind->extend_script, 1, 2,
                                kv, kvlen) != 0)
                goto broken;
        }
        if (with_registry) {
            const char *argv[3] = { "PEXPIRE", c->registry_key, ttl };
            size_t lens[3] = { 7, strlen(c->registry_key), ttllen };

            if (redisAppendCommandArgv(bg->redis, 3, argv, lens) != REDIS_OK)
                goto broken;
        }
        /* Read every reply asked for, so the connection stays in step. */
        for (size_t k = 0; k < expect; k++) {
            void *v = NULL;
            redisReply *r;

            if (lwc_get_reply(bg->redis, &v) != REDIS_OK)
                goto broken;
            r = v;
            if (start + k < end) {
                if (r->type == REDIS_REPLY_INTEGER)
                    result[start + k] = r->integer == 1 ? 1 : 0;
                else if (lwc_reply_is_noscript(r))
                    result[start + k] = -2;     /* again below, by EVAL */
            }
            freeReplyObject(r);
        }
        for (size_t i = start; i < end; i++) {
            struct lw_lock *lk = locks[i];
            const char *kv[3] = { lk->key, lk->holder, lease };
            size_t kvlen[3] = { lk->keylen, lk->holderlen, 0 };
            redisReply *r;

            if (result[i] != -2)
                continue;
            kvlen[2] = lwc_fmt_u64(lease, (uint64_t)lease_ms[i]);
            result[i] = -1;
            r = lwc_eval(c, bg->redis, lk->kind->extend_script, 1, 2, kv, kvlen,
                         NULL);
            if (r == NULL)
                goto broken;
            if (r->type == REDIS_REPLY_INTEGER)
                result[i] = r->integer == 1 ? 1 : 0;
            freeReplyObject(r);
        }
        start = end;
    } while (start < n);
    return;

broken:
    redisFree(bg->redis);
    bg->redis = NULL;
}

/* One renewal round.  Called and returns with bg.mu held; drops it for the
 * network and the callbacks. */
static void
tick_locked(lw_client *c)
{
    struct lwc_bg *bg = &c->bg;
    struct lw_lock **locks = NULL;
    int *result = NULL;
    int64_t *overrun = NULL;        /* of a lost lock: past its lease end */
    long long *lease = NULL;        /* what each renewal sets */
    size_t n = 0;
    int64_t started = clock_mono_us(), now;
    bool registry = bg->nreentrant > 0, renewal;

    if (bg->nwatched > 0) {
        locks = calloc(bg->nwatched, sizeof(*locks));
        result = calloc(bg->nwatched, sizeof(*result));
        overrun = calloc(bg->nwatched, sizeof(*overrun));
        lease = calloc(bg->nwatched, sizeof(*lease));
        if (locks == NULL || result == NULL || overrun == NULL || lease == NULL) {
            /* Try again soon; the lease still has two periods to go. */
            free(locks);
            free(result);
            free(overrun);
            free(lease);
            bg->next_tick_us = started + period_us(c) / 4 + 1;
            return;
        }
        for (struct lw_lock *lk = bg->watched; lk != NULL; lk = lk->wnext) {
            atomic_fetch_add_explicit(&lk->refs, 1, memory_order_relaxed);
            lease[n] = renew_lease_locked(c, lk);
            locks[n++] = lk;
        }
    }
    pthread_mutex_unlock(&bg->mu);

    if (n > 0 || registry)
        renew(c, locks, lease, n, registry, result);

    pthread_mutex_lock(&bg->mu);
    now = clock_mono_us();
    for (size_t i = 0; i < n; i++) {
        struct lw_lock *lk = locks[i];
        bool lost;

        if (result[i] == 1) {
            lk->renewed_mono_us = started;
            atomic_fetch_add_explicit(&c->stats.renewals, 1, memory_order_relaxed);
        }
        lost = result[i] == 0 ||
               (result[i] < 0 && now - lk->renewed_mono_us >= lease[i] * 1000);
        renewal = result[i] == 0;
        result[i] = 0;
        if (lost && lk->watched) {
            unwatch_locked(bg, lk);
            atomic_fetch_add_explicit(&c->stats.locks_lost, 1, memory_order_relaxed);
            /* tell on_lost below, and the agent once (renewal: 1, the
             * lease ran out with Redis unreachable: 2) */
            result[i] = atomic_exchange(&lk->lost, 1) == 0 ? (renewal ? 1 : 2) : 3;
            overrun[i] = now - (lk->renewed_mono_us + lease[i] * 1000);
        }
    }
    bg->next_tick_us = (bg->nwatched > 0 || bg->nreentrant > 0)
                       ? started + period_us(c) : 0;
    pthread_mutex_unlock(&bg->mu);

    for (size_t i = 0; i < n; i++) {
        if (result[i] == 1 || result[i] == 2)
            lwc_report_lost(c, locks[i], result[i] == 1, now - locks[i]->acquired_mono_us,
                            overrun[i] > 0 ? overrun[i] : 0);
        if (result[i] != 0 && c->on_lost != NULL)
            c->on_lost(locks[i], locks[i]->key, c->on_lost_data);
    }
    for (size_t i = 0; i < n; i++)
        lwc_lock_unref(locks[i]);
    free(locks);
    free(result);
    free(overrun);
    free(lease);
    pthread_mutex_lock(&bg->mu);
}

static void *
bg_main(void *arg)
{
    lw_client *c = arg;
    struct lwc_bg *bg = &c->bg;

    pthread_mutex_lock(&bg->mu);
    while (!bg->stop) {
        int64_t now = clock_mono_us(), wake = INT64_MAX;

        if (bg->rep.flush_us != 0) {
            if (now >= bg->rep.flush_us)
                lwc_report_flush_locked(c);
            else
                wake = bg->rep.flush_us;
        }
        if (bg->settle_us != 0) {
            if (now >= bg->settle_us) {
                bg->settle_us = 0;
                pthread_mutex_unlock(&bg->mu);
                lwc_limbo_retry(c);
                pthread_mutex_lock(&bg->mu);
                continue;
            }
            if (bg->settle_us < wake)
                wake = bg->settle_us;
        }
        if (bg->next_tick_us != 0) {
            if (now >= bg->next_tick_us) {
                tick_locked(c);
                continue;
            }
            if (bg->next_tick_us < wake)
                wake = bg->next_tick_us;
        }
        bg->sleep_until_us = wake;
        /* the wait counts in ms: round up, since a wake-up before wake
         * would find nothing due and wait again */
        (void)clock_cond_wait_until(&bg->cond, &bg->mu,
                                    wake == INT64_MAX ? INT64_MAX : (wake + 999) / 1000);
        bg->sleep_until_us = 0;
    }
    lwc_report_flush_locked(c);
    pthread_mutex_unlock(&bg->mu);
    if (bg->redis != NULL) {
        redisFree(bg->redis);
        bg->redis = NULL;
    }
    return NULL;
}

lw_status
lwc_bg_start(lw_client *c, lw_error *err)
{
    int rc = pthread_create(&c->bg.thread, NULL, bg_main, c);

    if (rc != 0)
        return lwc_seterr(err, LW_ERR, "cannot start the client's background "
                          "thread: %s", strerror(rc));
    c->bg.started = true;
    return LW_OK;
}

void
lwc_bg_stop(lw_client *c)
{
    if (!c->bg.started)
        return;
    pthread_mutex_lock(&c->bg.mu);
    c->bg.stop = true;
    pthread_cond_signal(&c->bg.cond);
    pthread_mutex_unlock(&c->bg.mu);
    pthread_join(c->bg.thread, NULL);
    c->bg.started = false;
}
