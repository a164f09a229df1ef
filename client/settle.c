/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * settle.c - lost replies on the command connection: keeping it in step
 * after a command timeout, and undoing an acquire whose reply never came,
 * so it cannot leave a lock that no live handle owns.
 *
 * The trap.  A command that times out on our side has not necessarily
 * failed: Redis may be paused (SIGSTOP, DEBUG SLEEP, a slow fork) with the
 * command in its input buffer, and run it when it resumes.  For SET NX
 * that means a lock held by a token nobody owns any more, until its lease
 * runs out.  Deleting it from another connection is no cure: Redis does
 * not order one connection's commands against another's, so the delete
 * could run first and the SET after it.
 *
 * The cure.  hiredis marks a context failed on a read timeout, but its
 * reader and buffers are intact; so after a timeout we clear the error and
 * keep the connection, and append the settle script (lua/settle.lua) right
 * behind the lost command.  Redis runs a connection's commands in order, so
 * the settle runs after the lost acquire whatever happens: it deletes our
 * token if the SET took it (plain), or takes back the one hold the acquire
 * added if our field is there (reentrant: only this client writes the
 * field, and nothing of ours runs in between, so the field is there only if
 * the lost acquire took it; counting the thread's live lock objects instead
 * is wrong when an outer hold expired meanwhile and the lost acquire took
 * the lock afresh), and publishes the wake-up a release would.
 * The settle echoes a marker unique to this client; the next user of the
 * connection reads and drops every reply up to the marker's before it sends
 * anything, so no stale reply is ever taken for a fresh one.  While Redis
 * stays silent that read times out and the call fails at once, without
 * piling more commands behind the stalled ones.
 *
 * A connection that broke (EOF, reset) cannot carry the settle: what it
 * would have undone goes to the limbo (LWC_LIMBO_MAX entries; more are
 * counted in orphans_dropped) and is settled first thing on the next
 * connection (a reentrant field is cut back to the holds of the thread's
 * live lock objects, since whether the lost acquire ran is unknown there):
 * the program's next call, or the background thread, which
 * tries every LWC_RECHECK_MAX_US while the limbo holds something.  A broken connection is closed by the server side or the
 * network, after which the server runs nothing more from it, so there the
 * order holds too; docs/fencing.md lists the limits.
 *
 * Everything here runs with cmd_mu held; the hold count of a reentrant
 * orphan is read under bg.mu (cmd_mu before bg.mu, as client_impl.h says).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "client_impl.h"

static void
orphan_clear(struct lwc_orphan *o)
{
    free(o->names);
    memset(o, 0, sizeof(*o));
}

void
lwc_orphans_free(lw_client *c)
{
    orphan_clear(&c->lost);
    orphan_clear(&c->settling);
    for (size_t i = 0; i < LWC_LIMBO_MAX; i++)
        orphan_clear(&c->limbo[i]);
}

void
lwc_orphan_note(lw_client *c, const struct lw_lock *lk)
{
    struct lwc_orphan *o = &c->lost;

    orphan_clear(o);
    if (lk->holderlen == 0 || lk->holderlen >= sizeof(o->holder))
        return;
    o->names = malloc(lk->keylen + 1 + lk->channellen + 1);
    if (o->names == NULL) {
        atomic_fetch_add_explicit(&c->stats.orphans_dropped, 1,
                                  memory_order_relaxed);
        return;
    }
    memcpy(o->names, lk->key, lk->keylen + 1);
    memcpy(o->names + lk->keylen + 1, lk->channel, lk->channellen + 1);
    o->keylen = lk->keylen;
    o->channellen = lk->channellen;
    memcpy(o->holder, lk->holder, lk->holderlen + 1);
    o->holderlen = lk->holderlen;
    o->rlock = lk->kind == &lwc_kind_reentrant;
    o->tid = lk->tid;
    o->used = true;
    LWC_T("lost reply: key %s holder %s", o->names, o->holder);
}

/* Have the background thread open the command connection in a while. */
static void
limbo_arm(lw_client *c)
{
    pthread_mutex_lock(&c->bg.mu);
    if (c->bg.settle_us == 0) {
        c->bg.settle_us = clock_deadline_us(LWC_RECHECK_MAX_US);
        lwc_bg_arm_locked(c, c->bg.settle_us);
    }
    pthread_mutex_unlock(&c->bg.mu);
}

/* Move *from into a free limbo slot (or count it dropped). */
static void
limbo_put(lw_client *c, struct lwc_orphan *from)
{
    if (!from->used)
        return;
    for (size_t i = 0; i < LWC_LIMBO_MAX; i++)
        if (!c->limbo[i].used) {
            c->limbo[i] = *from;
            memset(from, 0, sizeof(*from));
            limbo_arm(c);
            return;
        }
    atomic_fetch_add_explicit(&c->stats.orphans_dropped, 1, memory_order_relaxed);
    orphan_clear(from);
}

/* The holds thread o->tid really has on o's key: its live lock objects. */
static long
live_holds(lw_client *c, const struct lwc_orphan *o)
{
    long n = 0;

    pthread_mutex_lock(&c->bg.mu);
    for (const struct lw_lock *lk = c->bg.reentrant; lk != NULL; lk = lk->rnext)
        if (lk->tid == o->tid && lk->keylen == o->keylen &&
            memcmp(lk->key, o->names, o->keylen) == 0)
            n++;
    pthread_mutex_unlock(&c->bg.mu);
    return n;
}

/* Append EVAL settle for o (NULL: only the marker) to ctx.  adjacent: it
 * goes right behind o's lost acquire on the same connection, so a
 * reentrant hold is undone exactly (one hold off); otherwise the count is
 * cut to the holds the thread's live lock objects have.  0 or -1. */
static int
settle_append(lw_client *c, redisContext *ctx, const struct lwc_orphan *o,
              bool adjacent, const char *marker, size_t markerlen)
{
    char holds[24];
    const char *kv[6];
    size_t kvlen[6];
    const char *argv[9];
    size_t lens[9];
    const char *src = lwc_scripts[LWC_SETTLE].src;
    int argc = 0, n = 0;

    argv[argc] = "EVAL";
    lens[argc++] = 4;
    argv[argc] = src;
    lens[argc++] = strlen(src);
    if (o != NULL && o->used) {
        kv[n] = o->names;
        kvlen[n++] = o->keylen;
        kv[n] = o->names + o->keylen + 1;
        kvlen[n++] = o->channellen;
    }
    argv[argc] = n == 2 ? "2" : "0";
    lens[argc++] = 1;
    kv[n] = marker;
    kvlen[n++] = markerlen;
    if (o != NULL && o->used) {
        kv[n] = !o->rlock ? "plain" : adjacent ? "rlock" : "rlock-cut";
        kvlen[n] = strlen(kv[n]);
        n++;
        kv[n] = o->holder;
        kvlen[n++] = o->holderlen;
        kv[n] = holds;
        kvlen[n++] = lwc_fmt_u64(holds, (uint64_t)(o->rlock && !adjacent ?
                                                   live_holds(c, o) : 0));
    } else {
        kv[n] = "none";
        kvlen[n++] = 4;
    }
    for (int i = 0; i < n; i++) {
        argv[argc] = kv[i];
        lens[argc++] = kvlen[i];
    }
    return redisAppendCommandArgv(ctx, argc, argv, lens) == REDIS_OK ? 0 : -1;
}

/* A fresh marker for c->cmd_marker: never equal to a reply of ours.  The
 * array has room for the prefix, the UUID, ':' and 20 digits. */
static void
new_marker(lw_client *c)
{
    size_t n;

    memcpy(c->cmd_marker, "lwc-settle:", 11);
    n = 11;
    memcpy(c->cmd_marker + n, c->id, LWC_UUID_LEN);
    n += LWC_UUID_LEN;
    c->cmd_marker[n++] = ':';
    n += lwc_fmt_u64(c->cmd_marker + n, ++c->marker_seq);
    c->cmd_marker[n] = '\0';
    c->cmd_markerlen = n;
}

/*
 * Did the last call on ctx fail by a timeout (the peer silent, the
 * connection itself fine)?  hiredis 0.14 reports SO_RCVTIMEO/SO_SNDTIMEO
 * as an I/O error with strerror(EAGAIN); 1.x may say REDIS_ERR_TIMEOUT.
 */
static bool
timed_out(const redisContext *ctx)
{
#ifdef REDIS_ERR_TIMEOUT
    if (ctx->err == REDIS_ERR_TIMEOUT)
        return true;
#endif
    return ctx->err == REDIS_ERR_IO &&
           (strcmp(ctx->errstr, strerror(EAGAIN)) == 0 ||
            strcmp(ctx->errstr, strerror(EWOULDBLOCK)) == 0);
}

static void
clear_ctx_error(redisContext *ctx)
{
    ctx->err = 0;
    ctx->errstr[0] = '\0';
}

static void
drop_cmd(lw_client *c)
{
    LWC_T("drop cmd (err %d %s): settling %s lost %s", c->cmd ? c->cmd->err : -1,
          c->cmd ? c->cmd->errstr : "", c->settling.used ? c->settling.holder : "-",
          c->lost.used ? c->lost.holder : "-");
    if (c->cmd != NULL)
        redisFree(c->cmd);
    c->cmd = NULL;
    c->cmd_sync = false;
    c->cmd_queued = 0;
    limbo_put(c, &c->settling);
    limbo_put(c, &c->lost);
}

/* Hand what c->cmd has buffered to the kernel now, so Redis runs it as
 * soon as it resumes, whether or not anyone calls again.  A full socket
 * buffer only means the rest goes with the next read. */
static void
flush_cmd(lw_client *c)
{
    redisContext *ctx = c->cmd;
    int done = 0;

    while (!done)
        if (redisBufferWrite(ctx, &done) != REDIS_OK) {
            if (!timed_out(ctx)) {
                drop_cmd(c);
                return;
            }
            clear_ctx_error(ctx);
            break;
        }
}

void
lwc_settle_after_error(lw_client *c)
{
    redisContext *ctx = c->cmd;

    if (c->lost.used)
        atomic_fetch_add_explicit(&c->stats.lost_replies, 1, memory_order_relaxed);
    if (!timed_out(ctx) || c->cmd_sync) {
        drop_cmd(c);
        return;
    }
    clear_ctx_error(ctx);
    new_marker(c);
    if (settle_append(c, ctx, &c->lost, true, c->cmd_marker, c->cmd_markerlen) != 0) {
        drop_cmd(c);
        return;
    }
    c->settling = c->lost;
    memset(&c->lost, 0, sizeof(c->lost));
    LWC_T("settle appended %s for %s", c->cmd_marker,
          c->settling.used ? c->settling.holder : "-");
    c->cmd_sync = true;
    flush_cmd(c);
}

/* The queued release's script, by its source (a NOSCRIPT would be one more
 * reply to skip, and the release would not have run). */
static int
release_append(redisContext *ctx, const struct lw_lock *lk)
{
    bool rlock = lk->kind == &lwc_kind_reentrant;
    const char *src = lwc_scripts[rlock ? LWC_RLOCK_RELEASE : LWC_PLAIN_RELEASE].src;
    char lease[24];
    const char *argv[7] = { "EVAL", src, "2", lk->key, lk->channel, lk->holder,
                            lease };
    size_t lens[7] = { 4, strlen(src), 1, lk->keylen, lk->channellen,
                       lk->holderlen, 0 };

    lens[6] = lwc_fmt_u64(lease, (uint64_t)lk->lease_ms);
    return redisAppendCommandArgv(ctx, rlock ? 7 : 6, argv, lens) == REDIS_OK ? 0 : -1;
}

bool
lwc_release_queue(lw_client *c, const struct lw_lock *lk)
{
    bool queued = false;

    pthread_mutex_lock(&c->cmd_mu);
    if (c->cmd != NULL && c->cmd_sync && c->cmd_queued < LWC_QUEUE_MAX &&
        lk->holderlen > 0) {
        /* The release and a new marker behind it: every reply before the
         * new marker (the old one's too) is stale. */
        new_marker(c);
        if (release_append(c->cmd, lk) != 0 ||
            settle_append(c, c->cmd, NULL, true, c->cmd_marker,
                          c->cmd_markerlen) != 0) {
            drop_cmd(c);
        } else {
            c->cmd_queued++;
            queued = true;
            LWC_T("release queued %s holder %s", lk->key, lk->holder);
            flush_cmd(c);
        }
    }
    pthread_mutex_unlock(&c->cmd_mu);
    return queued;
}

int
lwc_settle_sync(lw_client *c, lw_error *err)
{
    redisContext *ctx = c->cmd;

    if (c->cmd_sync) {
        for (int i = 0; i < LWC_SYNC_MAX; i++) {
            void *v = NULL;
            redisReply *r;
            bool marker;

            if (lwc_get_reply(ctx, &v) != REDIS_OK) {
                if (!timed_out(ctx)) {
                    /* Broken (a restart, say): what it owed goes to the
                     * limbo, and the caller connects afresh. */
                    drop_cmd(c);
                    return 0;
                }
                LWC_T("settle sync: still silent (%s)", c->cmd_marker);
                lwc_seterr(err, LW_ERR, "Redis at %s:%d has not answered a "
                           "command that timed out earlier on this client's "
                           "connection, nor within one more command timeout "
                           "(busy or paused); nothing new was sent", c->host,
                           c->port);
                clear_ctx_error(ctx);
                return -1;
            }
            r = v;
            marker = r->type == REDIS_REPLY_STRING &&
                     r->len == c->cmd_markerlen &&
                     memcmp(r->str, c->cmd_marker, r->len) == 0;
            LWC_T("settle sync: reply type %d%s", r->type, marker ? " (marker)" : "");
            freeReplyObject(r);
            if (marker) {
                if (c->settling.used)
                    atomic_fetch_add_explicit(&c->stats.orphans_undone, 1,
                                              memory_order_relaxed);
                orphan_clear(&c->settling);
                c->cmd_sync = false;
                c->cmd_queued = 0;
                return 0;
            }
        }
        /* The settle itself failed (its error was one of those replies):
         * start afresh, and undo from the limbo. */
        drop_cmd(c);
        return 0;
    }
    if (clock_mono_us() - c->cmd_used_us >= LWC_IDLE_CHECK_US) {
        /* Nothing is owed on this connection, so anything readable is the
         * server closing it (a restart, a timeout, CLIENT KILL): reconnect
         * now instead of failing the command.  A connection that answered
         * less than LWC_IDLE_CHECK_US ago is trusted, which keeps the
         * system call off a busy client's path. */
        struct pollfd pfd = { .fd = ctx->fd, .events = POLLIN };

        if (poll(&pfd, 1, 0) != 0) {
            LWC_T("idle cmd readable: %s", "dropped");
            drop_cmd(c);
        }
    }
    return 0;
}

void
lwc_limbo_replay(lw_client *c)
{
    for (size_t i = 0; i < LWC_LIMBO_MAX && c->cmd != NULL; i++) {
        struct lwc_orphan *o = &c->limbo[i];
        void *v = NULL;

        if (!o->used)
            continue;
        new_marker(c);
        if (settle_append(c, c->cmd, o, false, c->cmd_marker, c->cmd_markerlen) != 0 ||
            lwc_get_reply(c->cmd, &v) != REDIS_OK) {
            /* Keep it for the next connection; this one is gone. */
            redisFree(c->cmd);
            c->cmd = NULL;
            return;
        }
        LWC_T("limbo undo %s: reply type %d", o->holder, ((redisReply *)v)->type);
        if (((redisReply *)v)->type == REDIS_REPLY_STRING)
            atomic_fetch_add_explicit(&c->stats.orphans_undone, 1,
                                      memory_order_relaxed);
        else
            atomic_fetch_add_explicit(&c->stats.orphans_dropped, 1,
                                      memory_order_relaxed);
        freeReplyObject(v);
        orphan_clear(o);
    }
}

void
lwc_limbo_retry(lw_client *c)
{
    redisContext *ctx;
    bool left = false;

    if (atomic_load(&c->closed))
        return;
    ctx = lwc_cmd_get(c, NULL);     /* a new connection replays the limbo */
    if (ctx != NULL)
        lwc_cmd_put(c, ctx);
    pthread_mutex_lock(&c->cmd_mu);
    for (size_t i = 0; i < LWC_LIMBO_MAX; i++)
        left |= c->limbo[i].used;
    if (left)
        limbo_arm(c);
    pthread_mutex_unlock(&c->cmd_mu);
}
