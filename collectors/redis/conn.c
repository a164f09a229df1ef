/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.c - connect to one node of a target: timeouts, AUTH, SELECT.
 *
 * Factored out of the scanner so that lockctl and the agent's release
 * endpoint connect exactly as a scan does (same timeouts, same AUTH with
 * ACL user, same database) and report failures in the same words.  Every
 * connection also asks for CLIENT NO-TOUCH where the server has it (7.2+),
 * so that reading a lock's value does not make it look freshly used.
 * A rediss:// target gets its TLS handshake (tls.c) right after the TCP
 * connect, before AUTH.  This is the bottom of collectors/redis (with
 * tls.c): sentinel.c, cluster.c and target.c call it, and it calls none of
 * them.
 */
#include "collectors/redis/conn.h"
#include "collectors/redis/tls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

int
redisconn_lfu_reply(const redisReply *rep)
{
    static const char field[] = "maxmemory_policy:";
    const char *p, *end;

    if (rep == NULL || rep->type != REDIS_REPLY_STRING || rep->str == NULL)
        return 0;
    end = rep->str + rep->len;
    p = memmem(rep->str, rep->len, field, sizeof(field) - 1);
    if (p == NULL)
        return 0;
    /* allkeys-lfu, volatile-lfu */
    for (p += sizeof(field) - 1; p + 3 <= end && *p != '\r' && *p != '\n'; p++)
        if (memcmp(p, "lfu", 3) == 0)
            return 1;
    return 0;
}

int
redisconn_lfu(redisContext *c)
{
    redisReply *rep = redisCommand(c, "INFO memory");
    int lfu;

    if (rep == NULL)
        return -1;
    lfu = redisconn_lfu_reply(rep);
    freeReplyObject(rep);
    return lfu;
}

bool
redisconn_lfu_error(const char *str, size_t len)
{
    return str != NULL && memmem(str, len, "LFU", 3) != NULL;
}

struct timeval
redisconn_tv(int64_t ms)
{
    struct timeval tv;

    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    return tv;
}

void
redisconn_error(const redisContext *c, const struct target_conf *t,
                const char *what, char *err, size_t errlen)
{
    if (err == NULL || errlen == 0)
        return;
    /* hiredis reports a command timeout as EAGAIN; say what it means. */
    if (c != NULL && c->err == REDIS_ERR_IO &&
        (strcmp(c->errstr, strerror(EAGAIN)) == 0 ||
         strcmp(c->errstr, strerror(EWOULDBLOCK)) == 0))
        snprintf(err, errlen, "%s on %s:%d: timed out after %lld ms (command_timeout)",
                 what, t->host, t->port, (long long)t->command_timeout_ms);
    else
        snprintf(err, errlen, "%s on %s:%d: %s%s", what, t->host, t->port,
                 c == NULL ? "out of memory" : c->errstr[0] ? c->errstr : "connection lost",
                 /* TLS 1.3: a server that wants a client certificate
                  * accepts the handshake, then drops the connection */
                 t->tls && t->tls_cert == NULL && c != NULL &&
                 (c->err == REDIS_ERR_IO || c->err == REDIS_ERR_EOF) ?
                 " (over TLS: does the server require a client certificate? set "
                 "tls_cert_file and tls_key_file)" : "");
}

redisReply *
redisconn_command(redisContext *c, const struct target_conf *t, const char *what,
                  int argc, const char **argv, const size_t *argvlen,
                  char *err, size_t errlen)
{
    redisReply *rep = redisCommandArgv(c, argc, argv, argvlen);

    if (rep == NULL)
        redisconn_error(c, t, what, err, errlen);
    return rep;
}

/* AUTH or SELECT; 0 when the server said OK.  Only the server's reply is
 * quoted, never the arguments (the password). */
static int
setup_cmd(redisContext *c, const struct target_conf *t, int argc, const char **argv,
          char *err, size_t errlen)
{
    redisReply *rep = redisCommandArgv(c, argc, argv, NULL);
    int rc = 0;

    if (rep == NULL) {
        redisconn_error(c, t, argv[0], err, errlen);
        return -1;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s on %s:%d refused: %.*s", argv[0], t->host, t->port,
                     (int)(rep->len > 160 ? 160 : rep->len), rep->str);
        rc = -1;
    }
    freeReplyObject(rep);
    return rc;
}

void
redisconn_node(const struct target_conf *t, const char *host, int port,
               struct target_conf *out)
{
    *out = *t;
    if (host != out->host)
        snprintf(out->host, sizeof(out->host), "%s", host);
    out->port = port;
    /* A sentinel target's node is the address the sentinels gave: there
     * is no other name to check its certificate against (tls_server_name
     * overrides it).  A cluster node keeps the URL's host. */
    if (t->mode == TARGET_SENTINEL && host != out->tls_name)
        snprintf(out->tls_name, sizeof(out->tls_name), "%s", host);
}

redisContext *
redisconn_open(const struct target_conf *t, char *err, size_t errlen)
{
    redisContext *c;
    char db[16], scratch[64];

    c = redisConnectWithTimeout(t->host, t->port, redisconn_tv(t->connect_timeout_ms));
    if (c == NULL || c->err) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "connect to %s:%d: %s", t->host, t->port,
                     c ? c->errstr : "out of memory");
        goto fail;
    }
    if (redisSetTimeout(c, redisconn_tv(t->command_timeout_ms)) != REDIS_OK) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "set timeout on %s:%d: %s", t->host, t->port, c->errstr);
        goto fail;
    }
    /* rediss://: the handshake, bounded by the command timeout; never a
     * fall back to plaintext. */
    if (t->tls && redisconn_tls(c, t, t->host, t->port, t->tls_name[0] ? t->tls_name : t->host,
                                err != NULL ? err : scratch,
                                err != NULL ? errlen : sizeof(scratch)) == -1)
        goto fail;
    if (t->password != NULL) {
        const char *argv[3] = { "AUTH", t->user ? t->user : t->password, t->password };

        if (setup_cmd(c, t, t->user ? 3 : 2, argv, err, errlen) == -1)
            goto fail;
    }
    if (t->db != 0) {
        const char *argv[2] = { "SELECT", db };

        snprintf(db, sizeof(db), "%d", t->db);
        if (setup_cmd(c, t, 2, argv, err, errlen) == -1)
            goto fail;
    }
    /* Redis >= 7.2: our reads must not reset OBJECT IDLETIME, the only age
     * a lock without an encoded acquisition time has.  Older servers
     * answer with an error, which changes nothing. */
    {
        redisReply *rep = redisCommand(c, "CLIENT NO-TOUCH ON");

        if (rep == NULL) {
            redisconn_error(c, t, "CLIENT NO-TOUCH", err, errlen);
            goto fail;
        }
        freeReplyObject(rep);
    }
    return c;
fail:
    if (c != NULL)
        redisFree(c);
    return NULL;
}
