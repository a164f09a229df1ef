/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.c - the Sentinel client protocol (see sentinel.h).
 *
 * Every step is bounded: SENTINEL_CONNECT_TIMEOUT_MS per sentinel to
 * connect and SENTINEL_COMMAND_TIMEOUT_MS (or the target's command_timeout
 * when shorter) for its answer, which a healthy sentinel gives at once: a
 * stopped one is left for the next within a second, not command_timeout
 * (5 s by default) each.  At most
 * SENTINEL_ROLE_RETRIES rounds when the named node is not (yet) a
 * primary, SENTINEL_RETRY_WAIT_MS apart; none after a node that did not
 * answer within command_timeout (it is silent: the next pass asks again,
 * so a stopped primary costs a pass one command_timeout, not three).  A
 * resolution therefore costs a scan at most a few seconds even when every
 * sentinel is down.
 */
#include "collectors/redis/sentinel.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "collectors/redis/conn.h"
#include "collectors/redis/tls.h"

/* Append "; <text>" to a bounded message. */
static void
note(char *buf, size_t size, const char *text)
{
    size_t n = strlen(buf);

    if (n + 3 < size)
        snprintf(buf + n, size - n, "%s%s", n ? "; " : "", text);
}

/* Ask one sentinel.  0 with the address, or -1 with why in why. */
static int
ask_sentinel(const struct target_conf *t, const struct hostport *s, char *host,
             size_t hostlen, int *port, char *why, size_t whylen)
{
    const char *argv[3] = { "SENTINEL", "get-master-addr-by-name", t->master_name };
    int64_t to = t->connect_timeout_ms < SENTINEL_CONNECT_TIMEOUT_MS ?
        t->connect_timeout_ms : SENTINEL_CONNECT_TIMEOUT_MS;
    int64_t cto = t->command_timeout_ms < SENTINEL_COMMAND_TIMEOUT_MS ?
        t->command_timeout_ms : SENTINEL_COMMAND_TIMEOUT_MS;
    struct redisconn_scope capped = { .deadline_ms = INT64_MAX, .idle_ms = cto };
    const struct redisconn_scope *prev;
    redisContext *c;
    redisReply *rep = NULL;
    long p = 0;
    size_t i;
    int rc = -1;
    bool got;

    c = redisConnectWithTimeout(s->host, s->port, redisconn_tv(to));
    if (c == NULL || c->err) {
        snprintf(why, whylen, "sentinel %s:%d: %s", s->host, s->port,
                 c ? c->errstr : "out of memory");
        goto out;
    }
    redisSetTimeout(c, redisconn_tv(cto));
    /* rediss://: sentinels speak TLS too; each is checked against its
     * address as written in sentinels (or tls_server_name). */
    if (t->tls) {
        int n = snprintf(why, whylen, "sentinel: ");

        if (n < 0 || (size_t)n >= whylen ||
            redisconn_tls(c, t, s->host, s->port, s->host, why + n, whylen - (size_t)n) == -1)
            goto out;
        why[0] = '\0';
    }
    redisconn_guard(c);
    /* the reply is waited for within the caller's scope (a scan's
     * deadline and stop flag), but no longer than cto for a byte */
    prev = redisconn_scope_enter(&capped);
    if (prev != NULL)
        capped = *prev;
    capped.silent = NULL;       /* a sentinel is never opened through the set */
    if (capped.idle_ms <= 0 || capped.idle_ms > cto)
        capped.idle_ms = cto;
    got = redisAppendCommandArgv(c, 3, argv, NULL) == REDIS_OK &&
        redisconn_get_reply(c, &rep) == 0;
    redisconn_scope_leave(prev);
    if (!got) {
        struct target_conf node;

        /* a stopped or partitioned sentinel */
        if (redisconn_timed_out(c)) {
            snprintf(why, whylen, "sentinel %s:%d: no answer within %lld ms (stopped, "
                     "overloaded or cut off)", s->host, s->port, (long long)cto);
            goto out;
        }
        redisconn_node(t, s->host, s->port, &node);
        redisconn_error(c, &node, "sentinel", why, whylen);
        goto out;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        snprintf(why, whylen, "sentinel %s:%d refused: %.*s", s->host, s->port,
                 (int)(rep->len > 120 ? 120 : rep->len), rep->str);
        goto out;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_STRING ||
        rep->element[0]->len == 0 || rep->element[0]->len >= hostlen) {
        snprintf(why, whylen, "sentinel %s:%d does not know master_name \"%s\"",
                 s->host, s->port, t->master_name);
        goto out;
    }
    for (i = 0; i < rep->element[1]->len && p <= 65535; i++) {
        char ch = rep->element[1]->str[i];

        if (ch < '0' || ch > '9')
            break;
        p = p * 10 + (ch - '0');
    }
    if (i != rep->element[1]->len || p <= 0 || p > 65535) {
        snprintf(why, whylen, "sentinel %s:%d gave a bad port", s->host, s->port);
        goto out;
    }
    memcpy(host, rep->element[0]->str, rep->element[0]->len);
    host[rep->element[0]->len] = '\0';
    *port = (int)p;
    rc = 0;
out:
    if (rep != NULL)
        freeReplyObject(rep);
    if (c != NULL)
        redisFree(c);
    return rc;
}

int
sentinel_is_primary(redisContext *c, const struct target_conf *node, char *why,
                    size_t whylen)
{
    const char *argv[1] = { "ROLE" };
    redisReply *rep = redisconn_command(c, node, "ROLE", 1, argv, NULL, why, whylen);
    int rc = -1;

    if (rep == NULL)
        return -1;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
        rep->element[0]->type == REDIS_REPLY_STRING && rep->element[0]->len == 6 &&
        memcmp(rep->element[0]->str, "master", 6) == 0)
        rc = 0;
    else if (rep->type == REDIS_REPLY_ERROR)
        snprintf(why, whylen, "ROLE on %s:%d refused: %.*s (the ACL user needs +role)",
                 node->host, node->port, (int)(rep->len > 120 ? 120 : rep->len), rep->str);
    else
        snprintf(why, whylen, "%s:%d is not a primary (ROLE); a failover may be under way",
                 node->host, node->port);
    freeReplyObject(rep);
    return rc;
}

static void
sleep_ms(int64_t ms)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

int
sentinel_primary_addr(const struct target_conf *t, size_t *first, char *host, size_t hostlen,
                      int *port, char *err, size_t errlen)
{
    char why[600], all[2000] = "";
    size_t i, k;

    if (t->nsentinels == 0) {
        snprintf(err, errlen, "mode = sentinel needs sentinels");
        return -1;
    }
    if (*first >= t->nsentinels)
        *first = 0;
    for (k = 0; k < t->nsentinels; k++) {
        i = (*first + k) % t->nsentinels;
        if (ask_sentinel(t, &t->sentinels[i], host, hostlen, port, why, sizeof(why)) == 0) {
            *first = i;         /* the first responder is asked first next time */
            return 0;
        }
        note(all, sizeof(all), why);
    }
    snprintf(err, errlen, "no sentinel named the primary of \"%s\": %s", t->master_name, all);
    return -1;
}

redisContext *
sentinel_open_primary(const struct target_conf *t, size_t *first, char *host,
                      size_t hostlen, int *port, char *err, size_t errlen)
{
    char why[600], all[2000];
    struct target_conf node;
    redisContext *c = NULL;
    bool timed_out;
    int round;

    for (round = 0; round < SENTINEL_ROLE_RETRIES; round++) {
        all[0] = '\0';
        if (round > 0)
            sleep_ms(SENTINEL_RETRY_WAIT_MS);
        if (sentinel_primary_addr(t, first, host, hostlen, port, err, errlen) == -1)
            return NULL;        /* no sentinel answers: retrying soon is the caller's */
        redisconn_node(t, host, *port, &node);
        if ((c = redisconn_open(&node, why, sizeof(why))) == NULL) {
            note(all, sizeof(all), why);
            /* silent (a wait of command_timeout without a byte): asked
             * again in the next pass, not waited for again in this one */
            if (redisconn_is_silent(host, *port))
                break;
            continue;
        }
        if (sentinel_is_primary(c, &node, why, sizeof(why)) == 0)
            return c;
        note(all, sizeof(all), why);
        timed_out = redisconn_timed_out(c);
        redisFree(c);
        c = NULL;
        if (timed_out)
            break;
    }
    snprintf(err, errlen, "primary of \"%s\" not reachable: %s", t->master_name, all);
    return NULL;
}
