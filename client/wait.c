/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wait.c - waiting for a lock: pub/sub wake-ups with a bounded re-check.
 *
 * Design.  Each waiting lw_lock() call SUBSCRIBEs to the lock's wake
 * channel on a pub/sub connection of its own, taken from a small per-client
 * pool of idle ones (LWC_POOL_MAX) or freshly connected.  The alternative, a
 * shared per-client subscriber thread that fans messages out to waiters,
 * saves connections when hundreds of threads wait at once, but it adds a
 * hop (and a futex wake-up) to every hand-off and a protocol between the
 * waiter and the thread to know when a SUBSCRIBE has taken effect.  With a
 * connection per waiting call, the waiter itself reads the SUBSCRIBE
 * confirmation and the wake-up, so hand-off is one PUBLISH plus one SET,
 * and the pool makes a repeated wait cost no connect.  Only calls that
 * actually wait use one: an uncontended lw_lock() never touches pub/sub.
 *
 * The loop, after the first attempt failed:
 *
 *     SUBSCRIBE channel          (confirmed before going on)
 *     loop:
 *         attempt                (SET NX / the acquire script, + PTTL)
 *         taken, or deadline passed -> done
 *         wait for a message on the channel, at most
 *             min(re-check interval, holder's PTTL + 1 ms, time left)
 *
 * Subscribing before the re-try closes the lost-wake-up race: a release
 * between the failed attempt and the SUBSCRIBE is caught by the re-try, and
 * one after the SUBSCRIBE arrives as a message.  The re-check interval
 * starts at 50 ms and doubles to 250 ms, so a holder that releases without
 * publishing (redis-py, redlock, a TTL running out, a DEL by hand) is
 * noticed within 250 ms at worst, and sooner when its TTL says so, while a
 * long wait costs at most 4 attempts a second.
 *
 * liblockwatch publishes "0" on lockwatch_lock__channel:{key} when it
 * releases a plain lock and Redisson (and this library) "0" on
 * redisson_lock__channel:{key} for a reentrant one; any message on the
 * channel is a reason to retry.  Every waiter is woken by a release and
 * all but one go back to waiting: fine for the handful of waiters a lock
 * has, and it needs no queue in Redis.
 *
 * If SUBSCRIBE is impossible (an ACL without pub/sub, say), the wait falls
 * back to the re-check interval alone, trying to subscribe again once per
 * LWC_RECHECK_MAX_US.
 *
 * Redis going away (a restart, a pause past the command timeout) does not
 * end a wait: an attempt that fails on the connection is re-tried at the
 * re-check interval until the deadline, and a broken subscription is
 * opened again, so a waiter blocked across a restart takes the lock as
 * soon as Redis is back and the lock free.  A wait that reaches its
 * deadline on such a failure returns LW_ERR with that failure's message.
 * A paused Redis accepts connections and answers nothing, so connecting
 * and subscribing are cut to the deadline; only an attempt started before
 * it may run past it, by at most one command timeout (liblockwatch(3)).
 *
 * A pooled connection is returned after an UNSUBSCRIBE that is sent but not
 * waited for (its confirmation would cost the lock holder a round trip);
 * the next user skips that confirmation and any late message for the old
 * channel, and counts only messages for its own.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "client_impl.h"

static redisContext *
pool_take(lw_client *c)
{
    redisContext *ctx = NULL;

    pthread_mutex_lock(&c->pool_mu);
    if (c->npool > 0)
        ctx = c->pool[--c->npool];
    pthread_mutex_unlock(&c->pool_mu);
    return ctx;
}

static void
pool_give(lw_client *c, redisContext *ctx)
{
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool < LWC_POOL_MAX && !atomic_load(&c->closed)) {
        c->pool[c->npool++] = ctx;
        ctx = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (ctx != NULL)
        redisFree(ctx);
}

void
lwc_pool_close(lw_client *c)
{
    pthread_mutex_lock(&c->pool_mu);
    while (c->npool > 0)
        redisFree(c->pool[--c->npool]);
    pthread_mutex_unlock(&c->pool_mu);
}

static bool
is_push(const redisReply *r, const char *kind, const char *channel, size_t chlen)
{
    size_t klen = strlen(kind);

    return r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
           r->element[0]->type == REDIS_REPLY_STRING &&
           r->element[0]->len == klen &&
           memcmp(r->element[0]->str, kind, klen) == 0 &&
           r->element[1]->type == REDIS_REPLY_STRING &&
           r->element[1]->len == chlen &&
           memcmp(r->element[1]->str, channel, chlen) == 0;
}

/* SUBSCRIBE and read up to its confirmation.  0 subscribed, -1 connection
 * failed, -2 refused by the server. */
static int
subscribe(redisContext *ctx, const char *channel, size_t chlen)
{
    const char *argv[2] = { "SUBSCRIBE", channel };
    size_t lens[2] = { 9, chlen };

    if (redisAppendCommandArgv(ctx, 2, argv, lens) != REDIS_OK)
        return -1;
    for (;;) {
        void *v = NULL;
        redisReply *r;
        bool done, refused;

        if (lwc_get_reply(ctx, &v) != REDIS_OK)
            return -1;
        r = v;
        refused = r->type == REDIS_REPLY_ERROR;
        done = is_push(r, "subscribe", channel, chlen);
        freeReplyObject(r);
        if (refused)
            return -2;
        if (done)
            return 0;
        /* else: the previous user's "unsubscribe" or a late message */
    }
}

/* A connection subscribed to channel, or NULL (then wait by re-checks).
 * Connecting and the SUBSCRIBE's confirmation are cut to deadline_us: a
 * paused Redis accepts the connection and answers nothing, and the wait
 * must not outlive its lw_lock() deadline by it.  A connection whose
 * confirmation did not come is closed (nothing of it stays on Redis). */
static redisContext *
sub_open(lw_client *c, const char *channel, size_t chlen, int64_t deadline_us)
{
    redisContext *ctx = pool_take(c);
    int rc;

    if (ctx != NULL) {
        rc = redisSetTimeout(ctx, lwc_tv_within(c->command_tv, deadline_us)) == REDIS_OK
             ? subscribe(ctx, channel, chlen) : -1;
        if (rc == 0)
            return ctx;
        redisFree(ctx);
        if (rc == -2 || clock_left_us(deadline_us) == 0)
            return NULL;
        /* a pooled connection went stale (server timeout): one fresh try */
    }
    ctx = lwc_redis_connect(c, "lw_lock wait", deadline_us, NULL);
    if (ctx == NULL)
        return NULL;
    if (subscribe(ctx, channel, chlen) != 0) {
        redisFree(ctx);
        return NULL;
    }
    return ctx;
}

static void
sub_close(lw_client *c, redisContext *ctx, const char *channel, size_t chlen)
{
    const char *argv[2] = { "UNSUBSCRIBE", channel };
    size_t lens[2] = { 11, chlen };
    int done = 0;

    if (redisAppendCommandArgv(ctx, 2, argv, lens) != REDIS_OK)
        goto drop;
    while (!done)
        if (redisBufferWrite(ctx, &done) != REDIS_OK)
            goto drop;
    pool_give(c, ctx);
    return;
drop:
    redisFree(ctx);
}

/*
 * Wait up to timeout_us for a message on channel.  1 message, 0 timed out,
 * -1 connection failed.  With timeout_us 0 it only looks at what has
 * arrived already.
 */
static int
sub_wait(redisContext *ctx, const char *channel, size_t chlen, int64_t timeout_us)
{
    int64_t deadline = clock_deadline_us(timeout_us);

    for (;;) {
        struct pollfd pfd = { .fd = ctx->fd, .events = POLLIN };
        struct timespec ts;
        int64_t left;
        void *v = NULL;
        int rc;

        if (redisGetReplyFromReader(ctx, &v) != REDIS_OK)
            return -1;
        if (v != NULL) {
            bool wake = is_push(v, "message", channel, chlen);

            freeReplyObject(v);
            if (wake)
                return 1;
            continue;
        }
        left = clock_left_us(deadline);
        ts.tv_sec = (time_t)(left / 1000000);
        ts.tv_nsec = (long)(left % 1000000) * 1000;
        rc = ppoll(&pfd, 1, &ts, NULL);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -1;
        if (rc == 0)
            return 0;
        if (redisBufferRead(ctx) != REDIS_OK)
            return -1;
    }
}

static void
sleep_us(int64_t us)
{
    struct timespec ts = { .tv_sec = (time_t)(us / 1000000),
                           .tv_nsec = (long)(us % 1000000) * 1000 };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

lw_status
lwc_wait_acquire(lw_client *c, struct lw_lock *lk, int64_t deadline_us,
                 lw_error *err)
{
    redisContext *sub = NULL;
    int64_t interval = LWC_RECHECK_MIN_US;
    int64_t resub_us = 0;           /* next try at SUBSCRIBE when sub is NULL */
    bool typed = false;             /* a key without TTL was asked its type */
    lw_status st;

    for (;;) {
        long long pttl = -1;
        bool transient = false;
        int64_t now, w;
        int rc;

        if (sub == NULL && clock_mono_us() >= resub_us) {
            /* Subscribe (first time round), or restore the subscription a
             * Redis restart broke; at most once per re-check interval,
             * and never past the deadline, so that what the wait may
             * spend past it is the one attempt below. */
            sub = sub_open(c, lk->channel, lk->channellen, deadline_us);
            resub_us = clock_deadline_us(LWC_RECHECK_MAX_US);
        }
        st = lwc_attempt(c, lk, true, &pttl, &transient, err);
        if (st != LW_BUSY && !(st == LW_ERR && transient))
            break;
        now = clock_mono_us();
        if (now >= deadline_us) {
            /* A wait that ends on a connection error says so (err holds
             * it); one that ends on a holder is a timeout. */
            if (st == LW_BUSY)
                st = LW_TIMEOUT;
            break;
        }
        if (st == LW_ERR)
            pttl = -1;              /* Redis down or paused: re-check */
        else
            lwc_clearerr(err);
        if (pttl == -2)
            continue;               /* gone since the attempt: try again */
        if (pttl == -1 && st == LW_BUSY && !typed) {
            /* held with no TTL: a leak, or a key of another type that
             * SET NX never takes (asked once a wait, never on the
             * uncontended path) */
            typed = true;
            if (lwc_check_type(c, lk, &transient, err) == LW_ERR && !transient) {
                st = LW_ERR;
                break;
            }
            lwc_clearerr(err);
        }
        w = interval;
        if (pttl >= 0 && pttl * 1000 + 1000 < w)
            w = pttl * 1000 + 1000; /* it expires first: be there */
        if (deadline_us - now < w)
            w = deadline_us - now;

        if (sub != NULL) {
            rc = sub_wait(sub, lk->channel, lk->channellen, w);
        } else {
            sleep_us(w);
            rc = 0;
        }
        if (rc > 0) {
            atomic_fetch_add_explicit(&c->stats.wakeups, 1, memory_order_relaxed);
            /* Several releases may have published meanwhile: one retry is
             * enough for all of them. */
            while (sub_wait(sub, lk->channel, lk->channellen, 0) > 0)
                ;
        } else if (rc == 0) {
            atomic_fetch_add_explicit(&c->stats.rechecks, 1, memory_order_relaxed);
            interval = interval * 2 > LWC_RECHECK_MAX_US ? LWC_RECHECK_MAX_US
                                                         : interval * 2;
        } else {
            redisFree(sub);
            sub = NULL;
            resub_us = 0;
        }
    }
    if (sub != NULL)
        sub_close(c, sub, lk->channel, lk->channellen);
    return st;
}
