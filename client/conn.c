/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.c - Redis connections: connecting (AUTH, SELECT, timeouts), the
 * shared command connection, and running the lock scripts.
 *
 * A client has one command connection that every thread shares behind
 * cmd_mu: lock commands are single short round trips, so serialising them
 * costs little and keeps a client to one connection however many threads
 * use it.  The watchdog thread and each waiting lw_lock() have connections
 * of their own (a blocking read for a wake-up must not hold the command
 * connection).  A connection that failed is dropped, and the next command
 * reconnects; a command is never retried by itself, because one that failed
 * after reaching the server (SET NX, a release) may have taken effect.
 *
 * Scripts run by EVALSHA with the SHA1 that SCRIPT LOAD returned at
 * connect, and loaded again on every new command connection.  A NOSCRIPT
 * answer (SCRIPT FLUSH, failover to a replica that never saw the script, a
 * restart seen first by another connection) falls back to EVAL, which also
 * puts the script back in the server's cache for the next EVALSHA.
 *
 * Every reply is read by lwc_get_reply(): hiredis' timeout counts per
 * read, so a server answering one byte at a time held a call for as long
 * as it liked (the try_lock example took 115 s); here the connection's
 * timeout (command_timeout_ms; a waiter's own for its subscriber) is the
 * budget of the whole reply, and running out reads as hiredis' own
 * timeout does (EAGAIN), so the callers' handling of a silent server
 * applies unchanged.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "client_impl.h"
#include "common/clock.h"

int
lwc_get_reply(redisContext *ctx, void **out)
{
    struct timeval tv = { 0, 0 };
    socklen_t tvlen = sizeof(tv);
    struct pollfd pfd;
    int64_t deadline = INT64_MAX, left;
    int done = 0, rc;

    *out = NULL;
    if (redisGetReplyFromReader(ctx, out) == REDIS_ERR)
        return REDIS_ERR;
    if (*out != NULL)
        return REDIS_OK;        /* already buffered: no clock, no syscall */
    while (!done)
        if (redisBufferWrite(ctx, &done) == REDIS_ERR)
            return REDIS_ERR;
    if (getsockopt(ctx->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &tvlen) == 0 &&
        (tv.tv_sec > 0 || tv.tv_usec > 0))
        deadline = clock_deadline((int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000);
    for (;;) {
        left = deadline == INT64_MAX ? -1 : clock_left(deadline);
        if (left == 0) {
            ctx->err = REDIS_ERR_IO;
            snprintf(ctx->errstr, sizeof(ctx->errstr), "%s", strerror(EAGAIN));
            return REDIS_ERR;
        }
        pfd.fd = ctx->fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        rc = poll(&pfd, 1, left < 0 ? -1 : (int)(left > INT_MAX ? INT_MAX : left));
        if (rc == 0 || (rc < 0 && errno == EINTR))
            continue;
        if (rc < 0) {
            ctx->err = REDIS_ERR_IO;
            snprintf(ctx->errstr, sizeof(ctx->errstr), "poll: %s", strerror(errno));
            return REDIS_ERR;
        }
        if (redisBufferRead(ctx) == REDIS_ERR ||
            redisGetReplyFromReader(ctx, out) == REDIS_ERR)
            return REDIS_ERR;
        if (*out != NULL)
            return REDIS_OK;
    }
}

#define EVAL_ARGV_MAX 12

/* tv, or less when deadline_us (monotonic; INT64_MAX: none) comes first,
 * but at least 1 ms (a zero timeval means no timeout to hiredis). */
struct timeval
lwc_tv_within(struct timeval tv, int64_t deadline_us)
{
    int64_t us = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec, left;

    if (deadline_us == INT64_MAX)
        return tv;
    left = clock_left_us(deadline_us);
    if (left < us)
        us = left < 1000 ? 1000 : left;
    tv.tv_sec = (time_t)(us / 1000000);
    tv.tv_usec = (suseconds_t)(us % 1000000);
    return tv;
}

redisContext *
lwc_redis_connect(const lw_client *c, const char *what, int64_t deadline_us,
                  lw_error *err)
{
    redisContext *ctx = NULL;
    redisReply *r = NULL;

    ctx = redisConnectWithTimeout(c->host, c->port,
                                  lwc_tv_within(c->connect_tv, deadline_us));
    if (ctx == NULL) {
        lwc_seterr(err, LW_ERR, "%s: out of memory connecting to Redis", what);
        goto fail;
    }
    if (ctx->err) {
        lwc_seterr(err, LW_ERR, "%s: cannot connect to Redis at %s:%d: %s "
                   "(check that redis-server runs there and the host/port "
                   "options)", what, c->host, c->port, ctx->errstr);
        goto fail;
    }
    if (redisSetTimeout(ctx, lwc_tv_within(c->command_tv, deadline_us)) != REDIS_OK) {
        lwc_seterr(err, LW_ERR, "%s: cannot set the command timeout on the "
                   "Redis connection to %s:%d: %s", what, c->host, c->port,
                   ctx->errstr);
        goto fail;
    }
    /* Keepalive only helps notice a dead peer; not worth failing over. */
    (void)redisEnableKeepAlive(ctx);
    /* TLS (tls.c) before anything is sent; never a plaintext retry */
    if (lwc_tls_connect(c, ctx, what, err) != LW_OK)
        goto fail;

    if (c->password != NULL) {
        const char *argv[3] = { "AUTH", NULL, NULL };
        size_t lens[3] = { 4, 0, 0 };
        int argc = 0;

        if (c->username != NULL) {
            argv[1] = c->username;
            lens[1] = strlen(c->username);
            argv[2] = c->password;
            lens[2] = strlen(c->password);
            argc = 3;
        } else {
            argv[1] = c->password;
            lens[1] = strlen(c->password);
            argc = 2;
        }
        r = lwc_command(ctx, argc, argv, lens, what, err);
        if (r == NULL)
            goto fail;
        if (r->type == REDIS_REPLY_ERROR) {
            lwc_seterr(err, LW_ERR, "%s: Redis at %s:%d refused AUTH%s%s: %s "
                       "(check the password and username options)", what,
                       c->host, c->port, c->username ? " as " : "",
                       c->username ? c->username : "", r->str);
            goto fail;
        }
        freeReplyObject(r);
        r = NULL;
    }
    if (c->db != 0) {
        char num[24];
        const char *argv[2] = { "SELECT", num };
        size_t lens[2] = { 6, 0 };

        lens[1] = lwc_fmt_u64(num, (uint64_t)c->db);
        r = lwc_command(ctx, 2, argv, lens, what, err);
        if (r == NULL)
            goto fail;
        if (r->type == REDIS_REPLY_ERROR) {
            lwc_seterr(err, LW_ERR, "%s: Redis at %s:%d refused SELECT %d: %s "
                       "(check the db option)", what, c->host, c->port, c->db,
                       r->str);
            goto fail;
        }
        freeReplyObject(r);
        r = NULL;
    }
    return ctx;

fail:
    if (r != NULL)
        freeReplyObject(r);
    if (ctx != NULL)
        redisFree(ctx);
    return NULL;
}

redisContext *
lwc_cmd_get(lw_client *c, lw_error *err)
{
    pthread_mutex_lock(&c->cmd_mu);
    if (c->cmd != NULL && lwc_settle_sync(c, err) != 0) {
        pthread_mutex_unlock(&c->cmd_mu);
        return NULL;
    }
    if (c->cmd == NULL) {
        c->cmd = lwc_redis_connect(c, "command connection", INT64_MAX, err);
        if (c->cmd != NULL && lwc_scripts_reload(c, c->cmd, err) != 0) {
            redisFree(c->cmd);
            c->cmd = NULL;
        }
        if (c->cmd != NULL) {
            atomic_fetch_add_explicit(&c->stats.reconnects, 1,
                                      memory_order_relaxed);
            LWC_T("cmd connected fd %d", c->cmd->fd);
            lwc_limbo_replay(c);
            if (c->cmd == NULL)
                lwc_seterr(err, LW_ERR, "command connection: Redis at %s:%d "
                           "dropped the connection right after connecting",
                           c->host, c->port);
        }
    }
    if (c->cmd == NULL) {
        pthread_mutex_unlock(&c->cmd_mu);
        return NULL;
    }
    return c->cmd;
}

void
lwc_cmd_put(lw_client *c, redisContext *ctx)
{
    if (ctx != NULL && ctx->err)
        lwc_settle_after_error(c);
    c->cmd_used_us = clock_mono_us();
    pthread_mutex_unlock(&c->cmd_mu);
}

/*
 * hiredis reports a passed socket timeout as EAGAIN, "Resource temporarily
 * unavailable", which names neither the timeout nor the direction.  The
 * timeout is the socket's own (redisSetTimeout() set SO_SNDTIMEO and
 * SO_RCVTIMEO to command_timeout_ms); bytes left in the output buffer
 * mean the write timed out (the server is not reading).  0 when ctx's
 * error is not a timeout.
 */
static int
timeout_text(const redisContext *ctx, char *buf, size_t len)
{
    struct timeval tv = { 0, 0 };
    socklen_t tl = sizeof(tv);
    bool writing = ctx->obuf != NULL && sdslen(ctx->obuf) > 0;

    if (ctx->err != REDIS_ERR_IO || (strcmp(ctx->errstr, strerror(EAGAIN)) != 0 &&
                                     strcmp(ctx->errstr, strerror(EWOULDBLOCK)) != 0))
        return 0;
    if (getsockopt(ctx->fd, SOL_SOCKET, writing ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, &tl) == -1)
        tv.tv_sec = tv.tv_usec = 0;
    snprintf(buf, len, writing ? "write to Redis timed out after %lld ms (command_timeout_ms; "
             "the server is not reading: busy, paused or unreachable)"
             : "read from Redis timed out after %lld ms (command_timeout_ms: no reply)",
             (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000);
    return 1;
}

lw_status
lwc_conn_error(const redisContext *ctx, const char *what, lw_error *err)
{
    char why[200];

    if (timeout_text(ctx, why, sizeof(why)))
        return lwc_seterr(err, LW_ERR, "%s: %s", what, why);
    return lwc_seterr(err, LW_ERR, "%s: Redis connection failed: %s (Redis "
                      "stopped, the network dropped, or the command timeout "
                      "passed)", what, ctx->errstr[0] ? ctx->errstr : "no reply");
}

redisReply *
lwc_command(redisContext *ctx, int argc, const char **argv, const size_t *lens,
            const char *what, lw_error *err)
{
    void *v = NULL;

    if (redisAppendCommandArgv(ctx, argc, argv, lens) == REDIS_OK &&
        lwc_get_reply(ctx, &v) == REDIS_OK)
        return v;
    lwc_conn_error(ctx, what, err);
    return NULL;
}

bool
lwc_reply_is_noscript(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR && r->str != NULL &&
           strncmp(r->str, "NOSCRIPT", 8) == 0;
}

lw_status
lwc_reply_error(const redisReply *r, const char *what, lw_error *err)
{
    if (r != NULL && r->type == REDIS_REPLY_ERROR)
        return lwc_seterr(err, LW_ERR, "%s: Redis answered an error: %.*s",
                          what, (int)(r->len > 160 ? 160 : r->len), r->str);
    return lwc_seterr(err, LW_ERR, "%s: unexpected reply from Redis (type %d)",
                      what, r != NULL ? r->type : -1);
}

/*
 * The argv of EVALSHA/EVAL: command, sha or source, numkeys, keys, args.
 * nbuf holds the numkeys digits.  Returns argc, or -1 when it cannot fit.
 */
static int
eval_argv(const lw_client *c, enum lwc_script_id id, bool by_sha, int nkeys,
          int nargs, const char **kv, const size_t *kvlen, const char **argv,
          size_t *lens, char nbuf[24])
{
    int argc = 0;

    if (nkeys < 0 || nargs < 0 || 3 + nkeys + nargs > EVAL_ARGV_MAX)
        return -1;
    if (by_sha) {
        argv[argc] = "EVALSHA";
        lens[argc++] = 7;
        argv[argc] = c->sha[id];
        lens[argc++] = strlen(c->sha[id]);
    } else {
        argv[argc] = "EVAL";
        lens[argc++] = 4;
        argv[argc] = lwc_scripts[id].src;
        lens[argc++] = strlen(lwc_scripts[id].src);
    }
    lens[argc] = lwc_fmt_u64(nbuf, (uint64_t)nkeys);
    argv[argc++] = nbuf;
    for (int i = 0; i < nkeys + nargs; i++) {
        argv[argc] = kv[i];
        lens[argc++] = kvlen[i];
    }
    return argc;
}

redisReply *
lwc_eval(lw_client *c, redisContext *ctx, enum lwc_script_id id, int nkeys,
         int nargs, const char **kv, const size_t *kvlen, lw_error *err)
{
    const char *argv[EVAL_ARGV_MAX];
    size_t lens[EVAL_ARGV_MAX];
    char nbuf[24];
    redisReply *r = NULL;
    int argc;

    if (c->sha[id][0] != '\0') {
        argc = eval_argv(c, id, true, nkeys, nargs, kv, kvlen, argv, lens, nbuf);
        if (argc < 0)
            goto toolong;
        r = lwc_command(ctx, argc, argv, lens, lwc_scripts[id].name, err);
        if (!lwc_reply_is_noscript(r))
            return r;
        freeReplyObject(r);
    }
    argc = eval_argv(c, id, false, nkeys, nargs, kv, kvlen, argv, lens, nbuf);
    if (argc < 0)
        goto toolong;
    return lwc_command(ctx, argc, argv, lens, lwc_scripts[id].name, err);

toolong:
    lwc_seterr(err, LW_ERR, "%s: internal error: too many script arguments",
               lwc_scripts[id].name);
    return NULL;
}

int
lwc_eval_append(lw_client *c, redisContext *ctx, enum lwc_script_id id,
                int nkeys, int nargs, const char **kv, const size_t *kvlen)
{
    const char *argv[EVAL_ARGV_MAX];
    size_t lens[EVAL_ARGV_MAX];
    char nbuf[24];
    int argc = eval_argv(c, id, c->sha[id][0] != '\0', nkeys, nargs, kv, kvlen,
                         argv, lens, nbuf);

    if (argc < 0)
        return -1;
    return redisAppendCommandArgv(ctx, argc, argv, lens) == REDIS_OK ? 0 : -1;
}

int
lwc_scripts_load(lw_client *c, redisContext *ctx, lw_error *err)
{
    int appended = 0, rc = 0;

    for (int i = 0; i < LWC_SCRIPT_COUNT; i++) {
        const char *argv[3] = { "SCRIPT", "LOAD", lwc_scripts[i].src };
        size_t lens[3] = { 6, 4, strlen(lwc_scripts[i].src) };

        c->sha[i][0] = '\0';
        if (redisAppendCommandArgv(ctx, 3, argv, lens) != REDIS_OK)
            break;
        appended++;
    }
    /* Read every reply we asked for, so the connection stays in step. */
    for (int i = 0; i < appended; i++) {
        void *v = NULL;
        redisReply *r;

        if (lwc_get_reply(ctx, &v) != REDIS_OK) {
            lwc_seterr(err, LW_ERR, "lw_connect: Redis at %s:%d dropped the "
                       "connection while loading scripts: %s", c->host, c->port,
                       ctx->errstr);
            return -1;
        }
        r = v;
        if (r->type == REDIS_REPLY_STRING && r->len == 40) {
            memcpy(c->sha[i], r->str, 41);
        } else if (r->type == REDIS_REPLY_ERROR && rc == 0 &&
                   strncmp(r->str, "NOAUTH", 6) == 0) {
            /* Any other refusal (an ACL without SCRIPT, say) only means
             * EVAL instead of EVALSHA; this one means nothing will work. */
            lwc_seterr(err, LW_ERR, "lw_connect: Redis at %s:%d wants a "
                       "password: %s (set the password or password_file "
                       "option)", c->host, c->port, r->str);
            rc = -1;
        }
        freeReplyObject(r);
    }
    return rc;
}

int
lwc_scripts_reload(lw_client *c, redisContext *ctx, lw_error *err)
{
    int appended = 0;

    for (int i = 0; i < LWC_SCRIPT_COUNT; i++) {
        const char *argv[3] = { "SCRIPT", "LOAD", lwc_scripts[i].src };
        size_t lens[3] = { 6, 4, strlen(lwc_scripts[i].src) };

        if (c->sha[i][0] == '\0')
            continue;           /* refused at connect: EVAL it is */
        if (redisAppendCommandArgv(ctx, 3, argv, lens) != REDIS_OK)
            break;
        appended++;
    }
    for (int i = 0; i < appended; i++) {
        void *v = NULL;

        if (lwc_get_reply(ctx, &v) != REDIS_OK) {
            lwc_seterr(err, LW_ERR, "command connection: Redis at %s:%d dropped "
                       "the connection while loading scripts: %s", c->host,
                       c->port, ctx->errstr);
            return -1;
        }
        freeReplyObject(v);
    }
    return 0;
}
