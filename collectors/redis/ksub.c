/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ksub.c - the keyspace-notification subscriber of ksub.h: the flag check,
 * the channel parser, CONFIG GET, PSUBSCRIBE and the polled reader, which
 * reads within the subscriber's limits (conn.h's redisconn_read_pushed():
 * KSUB_MESSAGE_MAX bytes, KSUB_OBJECTS_MAX objects a message) and hands
 * on no key over the caller's cap.
 */
#include "collectors/redis/ksub.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "collectors/redis/conn.h"
#include "common/clock.h"

#define CHANNEL_PREFIX  "__keyspace@"
#define PATTERN_MAX     1100    /* bytes of one channel pattern */
#define PSUB_ARGS_MAX   64      /* patterns of one PSUBSCRIBE */

struct ksub {
    redisContext *c;
    int db;
    size_t key_max;             /* longer keys are handed on as NULL */
    char where[300];            /* "host:port", for messages */
    int64_t deadline_ms;        /* the node's command_timeout: a PING's */
    int64_t ping_mono;          /* the unanswered PING went then; 0 none */
    int64_t last_ping_mono;     /* the last PING went then */
    int64_t proven_mono;        /* the last answered PING went then */
    int64_t heard_mono;         /* bytes last came then */
    int64_t behind_mono;        /* behind since then (a PING answered late
                                 * while messages kept coming); 0 not */
};

/* A PING unanswered this many times command_timeout, though bytes keep
 * coming, is no longer a subscriber behind but one that never catches
 * up: lost (a full scan starts over). */
#define KSUB_BEHIND_MAX 10

bool
ksub_flags_cover(const char *flags, size_t len, char *missing, size_t msize)
{
    /* A (all) stands for g$lshzxet: every class but K, E, m, n, d */
    const char *need = KSUB_FLAGS_NEEDED, *all = "g$lshzxet";
    bool has_all = memchr(flags, 'A', len) != NULL, ok = true;
    size_t i, n = 0;

    for (i = 0; need[i] != '\0'; i++) {
        bool has = memchr(flags, need[i], len) != NULL ||
            (has_all && strchr(all, need[i]) != NULL);

        if (has)
            continue;
        ok = false;
        if (n + 1 < msize)
            missing[n++] = need[i];
    }
    if (msize > 0)
        missing[n] = '\0';
    return ok;
}

unsigned
ksub_event_class(const char *event, size_t len)
{
    /* Redis 7.0's event names by class (notify.c's callers): the names a
     * class may announce a lock, a helper key or any key under a pattern
     * with.  A name missing here only proves less. */
    static const struct { char cls; const char *names; } rows[] = {
        { 'g', " del expire persist rename_from rename_to move_from move_to copy_to restore " },
        { '$', " set setrange incrby incrbyfloat append setbit pfadd pfmerge pfdebug " },
        { 'l', " lpush rpush lpop rpop linsert lset lrem ltrim sortstore " },
        { 's', " sadd srem spop sinterstore sunionstore sdiffstore " },
        { 'h', " hset hsetnx hdel hincrby hincrbyfloat " },
        { 'z', " zadd zincr zrem zremrangebyscore zremrangebyrank zremrangebylex zpopmin "
               "zpopmax zunionstore zinterstore zdiffstore zrangestore " },
        { 'x', " expired " },
        { 'e', " evicted " },
        { 't', " xadd xtrim xdel xsetid xclaim xautoclaim xgroup-create xgroup-destroy "
               "xgroup-setid xgroup-createconsumer xgroup-delconsumer " },
    };
    char word[32];

    if (len == 0 || len + 3 > sizeof(word) || memchr(event, ' ', len) != NULL)
        return 0;
    word[0] = ' ';
    memcpy(word + 1, event, len);
    word[len + 1] = ' ';
    word[len + 2] = '\0';
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (strstr(rows[i].names, word) != NULL)
            return KSUB_CLASS(rows[i].cls);
    return 0;
}

void
ksub_class_names(unsigned bits, char *buf, size_t size)
{
    static const char *const names[] = { "generic", "string", "list", "set", "hash",
                                         "sorted set", "expired", "evicted", "stream" };
    size_t at = 0;

    if (size > 0)
        buf[0] = '\0';
    for (size_t i = 0; KSUB_CLASSES[i] != '\0' && at < size; i++) {
        if (!(bits & (1u << i)))
            continue;
        at += (size_t)snprintf(buf + at, size - at, "%s'%c' (%s)", at > 0 ? ", " : "",
                               KSUB_CLASSES[i], names[i]);
    }
}

int
ksub_channel_key(const char *ch, size_t len, int db, const char **key, size_t *keylen)
{
    size_t plen = sizeof(CHANNEL_PREFIX) - 1, i;
    long v = 0;

    if (len < plen + 4 || memcmp(ch, CHANNEL_PREFIX, plen) != 0)
        return -1;
    for (i = plen; i < len && ch[i] >= '0' && ch[i] <= '9' && i < plen + 6; i++)
        v = v * 10 + (ch[i] - '0');
    if (i == plen || v != db || len - i < 3 || memcmp(ch + i, "__:", 3) != 0)
        return -1;
    *key = ch + i + 3;
    *keylen = len - i - 3;
    return 0;
}

int
ksub_server_flags(redisContext *c, const struct target_conf *node, char *flags, size_t fsize,
                  char *missing, size_t msize, bool *lost, char *err, size_t errlen)
{
    const char *argv[3] = { "CONFIG", "GET", "notify-keyspace-events" };
    redisReply *rep;
    int rc = -1;

    *lost = false;
    rep = redisconn_command(c, node, "CONFIG GET", 3, argv, NULL, err, errlen);
    if (rep == NULL) {
        *lost = true;
        return -1;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "CONFIG GET notify-keyspace-events on %s:%d refused: %.*s",
                 node->host, node->port, (int)(rep->len > 120 ? 120 : rep->len), rep->str);
    } else if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
               rep->element[1]->type != REDIS_REPLY_STRING) {
        snprintf(err, errlen, "CONFIG GET notify-keyspace-events on %s:%d: unexpected reply",
                 node->host, node->port);
    } else {
        snprintf(flags, fsize, "%.*s", (int)rep->element[1]->len, rep->element[1]->str);
        rc = ksub_flags_cover(rep->element[1]->str, rep->element[1]->len, missing, msize)
            ? 1 : 0;
    }
    freeReplyObject(rep);
    return rc;
}

void
ksub_close(struct ksub *k)
{
    if (k == NULL)
        return;
    if (k->c != NULL)
        redisFree(k->c);
    free(k);
}

/* An error reply that says "not now" (a script running, a dataset
 * loading, a cluster slot moving, a replica cut off), not "not allowed". */
static bool
busy_reply(const redisReply *rep)
{
    static const char *const words[] = { "BUSY ", "LOADING ", "TRYAGAIN ", "MASTERDOWN " };
    size_t i;

    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (rep->len >= strlen(words[i]) && memcmp(rep->str, words[i], strlen(words[i])) == 0)
            return true;
    return false;
}

/* A PSUBSCRIBE reply, within the caller's scope but noting no node silent
 * (conn.h): a subscription that gets no answer (a middlebox that drops
 * pub/sub connections alone) says nothing of the node's data connections,
 * which the pass still reads. */
static int
sub_reply(redisContext *c, redisReply **rep)
{
    struct redisconn_scope own = { .deadline_ms = INT64_MAX };
    const struct redisconn_scope *prev = redisconn_scope_enter(&own);
    int rc;

    if (prev != NULL)
        own = *prev;
    own.silent = NULL;
    if (prev == NULL) {
        redisconn_scope_leave(prev);    /* outside any scope: as hiredis waits */
        return redisconn_get_reply(c, rep);
    }
    rc = redisconn_get_reply(c, rep);
    redisconn_scope_leave(prev);
    return rc;
}

struct ksub *
ksub_open(const struct target_conf *node, char *const *patterns, size_t npatterns,
          size_t key_max, bool *refused, char *err, size_t errlen)
{
    char chans[PSUB_ARGS_MAX][PATTERN_MAX];
    const char *argv[PSUB_ARGS_MAX + 1];
    size_t lens[PSUB_ARGS_MAX + 1], i, n;
    struct ksub *k;
    redisReply *rep = NULL;

    *refused = false;
    if ((k = calloc(1, sizeof(*k))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    k->db = node->db;
    k->key_max = key_max;
    k->deadline_ms = node->command_timeout_ms;
    snprintf(k->where, sizeof(k->where), "%s:%d", node->host, node->port);
    n = npatterns < PSUB_ARGS_MAX ? npatterns : PSUB_ARGS_MAX;
    argv[0] = "PSUBSCRIBE";
    lens[0] = strlen(argv[0]);
    for (i = 0; i < n; i++) {
        int w = snprintf(chans[i], sizeof(chans[i]), CHANNEL_PREFIX "%d__:%s", node->db,
                         patterns[i]);

        if (w < 0 || (size_t)w >= sizeof(chans[i])) {
            snprintf(err, errlen, "pattern %.60s...: too long for a channel pattern",
                     patterns[i]);
            goto fail;
        }
        argv[i + 1] = chans[i];
        lens[i + 1] = (size_t)w;
    }
    if ((k->c = redisconn_open(node, err, errlen)) == NULL)
        goto fail;
    if (redisAppendCommandArgv(k->c, (int)n + 1, argv, lens) != REDIS_OK) {
        redisconn_error(k->c, node, "PSUBSCRIBE", err, errlen);
        goto fail;
    }
    for (i = 0; i < n; i++) {
        if (sub_reply(k->c, &rep) == -1) {
            redisconn_error(k->c, node, "PSUBSCRIBE", err, errlen);
            goto fail;
        }
        if (rep->type == REDIS_REPLY_ERROR && busy_reply(rep)) {
            snprintf(err, errlen, "PSUBSCRIBE on %s: %.*s (the server is busy: subscribing "
                     "again later)", k->where, (int)(rep->len > 100 ? 100 : rep->len),
                     rep->str);
            goto fail;
        }
        if (rep->type == REDIS_REPLY_ERROR) {
            char need[600];
            size_t j, at = 0;

            /* Redis' ACL compares a PSUBSCRIBE pattern with the user's
             * channel patterns literally: name each one */
            need[0] = '\0';
            for (j = 0; j < n && at < sizeof(need); j++) {
                int w = snprintf(need + at, sizeof(need) - at, "%s&%s", j ? " " : "",
                                 chans[j]);

                if (w < 0)
                    break;
                at += (size_t)w;
            }
            *refused = true;
            snprintf(err, errlen, "PSUBSCRIBE on %s refused: %.*s (the ACL user needs "
                     "+psubscribe and, exactly, %s)", k->where,
                     (int)(rep->len > 100 ? 100 : rep->len), rep->str, need);
            goto fail;
        }
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3) {
            snprintf(err, errlen, "PSUBSCRIBE on %s: unexpected reply", k->where);
            goto fail;
        }
        freeReplyObject(rep);
        rep = NULL;
    }
    return k;
fail:
    if (rep != NULL)
        freeReplyObject(rep);
    ksub_close(k);
    return NULL;
}

/* Where ksub_read() hands the messages. */
struct sink {
    struct ksub *k;
    ksub_event_fn *fn;
    void *arg;
};

/* Is rep the answer to a PING: ["pong", ""] on a subscribed RESP2
 * connection, +PONG on RESP3, or an error (an ACL without +ping: an
 * answer all the same, after everything queued before it)? */
static bool
is_pong(const redisReply *rep)
{
    if (rep->type == REDIS_REPLY_STATUS || rep->type == REDIS_REPLY_ERROR)
        return true;
    return rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[0]->type == REDIS_REPLY_STRING && rep->element[0]->len == 4 &&
        strncasecmp(rep->element[0]->str, "pong", 4) == 0;
}

/* One reply of a subscribed connection: a pmessage on a keyspace channel
 * of our database goes to fn (its key as NULL when over the cap); the
 * answer to our PING proves what came before it; anything else is
 * ignored. */
static void
deliver(void *arg, const redisReply *rep)
{
    const struct sink *sk = arg;
    const char *key;
    size_t keylen;

    if (sk->k->ping_mono != 0 && is_pong(rep)) {
        /* answered within command_timeout: caught up, if it was behind */
        if (clock_mono_ms() - sk->k->ping_mono <= sk->k->deadline_ms)
            sk->k->behind_mono = 0;
        sk->k->proven_mono = sk->k->ping_mono;
        sk->k->ping_mono = 0;
        return;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4 ||
        rep->element[0]->type != REDIS_REPLY_STRING || rep->element[0]->len != 8 ||
        memcmp(rep->element[0]->str, "pmessage", 8) != 0 ||
        rep->element[2]->type != REDIS_REPLY_STRING ||
        rep->element[3]->type != REDIS_REPLY_STRING)
        return;
    if (ksub_channel_key(rep->element[2]->str, rep->element[2]->len, sk->k->db, &key,
                         &keylen) == -1)
        return;
    /* a read of a missing key (class m, if the server sends it): the
     * agent's own re-read of a key gone would announce itself, and each
     * announcement ask for another re-read, for ever */
    if (rep->element[3]->len == 7 && memcmp(rep->element[3]->str, "keymiss", 7) == 0)
        return;
    sk->fn(sk->arg, keylen > sk->k->key_max ? NULL : key, keylen, rep->element[3]->str,
           rep->element[3]->len);
}

/* Read (or with read false only take what is buffered) within the
 * limits: 0, -1 the connection is gone, -2 a limit refused a message. */
static int
take(struct ksub *k, bool read, const struct sink *sk, char *err, size_t errlen)
{
    int rc = redisconn_read_pushed(k->c, read, KSUB_MESSAGE_MAX, KSUB_OBJECTS_MAX, deliver,
                                   (void *)sk);

    if (rc == -2)
        snprintf(err, errlen, "subscriber on %s: %s", k->where, k->c->errstr);
    else if (rc == -1 && read)
        snprintf(err, errlen, "subscriber connection to %s lost: %s (a restart, a failover, "
                 "or the server's client-output-buffer-limit for pubsub)", k->where,
                 k->c->errstr[0] ? k->c->errstr : "closed");
    else if (rc == -1)
        snprintf(err, errlen, "subscriber on %s: %s", k->where,
                 k->c->errstr[0] ? k->c->errstr : "protocol error");
    return rc;
}

/* Is a PING unanswered past command_timeout?  While messages keep coming
 * (the last within command_timeout) that is a subscriber behind, from
 * when that PING went: 0, or -1 with err set when nothing comes. */
static int
judge_late(struct ksub *k, int64_t now, char *err, size_t errlen)
{
    if (k->ping_mono == 0 || now - k->ping_mono <= k->deadline_ms)
        return 0;
    if (k->heard_mono > k->ping_mono && now - k->heard_mono <= k->deadline_ms) {
        if (k->behind_mono == 0)
            k->behind_mono = k->ping_mono;
        return 0;
    }
    snprintf(err, errlen, "subscriber on %s timed out: no answer to a PING within "
             "command_timeout (%lld ms), and nothing else comes, so notifications may not be "
             "arriving (a proxy, NAT or firewall that dropped the connection without closing "
             "it?)", k->where, (long long)k->deadline_ms);
    return -1;
}

int
ksub_ping(struct ksub *k, int64_t every_ms, char *err, size_t errlen)
{
    int64_t now = clock_mono_ms();
    int done = 0;

    if (judge_late(k, now, err, errlen) == -1)
        return -1;
    if (k->ping_mono == 0 && (k->last_ping_mono == 0 || now - k->last_ping_mono >= every_ms)) {
        /* a few bytes on a connection that sends nothing else: the
         * socket buffer takes them at once, or the connection is broken */
        if (redisAppendCommand(k->c, "PING") != REDIS_OK)
            goto fail;
        while (!done)
            if (redisBufferWrite(k->c, &done) != REDIS_OK)
                goto fail;
        k->ping_mono = now;
        k->last_ping_mono = now;
    }
    if (k->behind_mono == 0)
        return 0;
    /* behind until a PING is answered within command_timeout (deliver()):
     * the episode, not one PING, is what KSUB_BEHIND_MAX bounds */
    snprintf(err, errlen, "subscriber on %s is %sbehind: for %lld ms its PINGs have been "
             "answered late, though notifications keep coming (Redis sends them faster than "
             "the agent takes them)", k->where,
             now - k->behind_mono > KSUB_BEHIND_MAX * k->deadline_ms ? "too far " : "",
             (long long)(now - k->behind_mono));
    return now - k->behind_mono > KSUB_BEHIND_MAX * k->deadline_ms ? -1 : 1;
fail:
    snprintf(err, errlen, "subscriber connection to %s lost: %s", k->where,
             k->c->errstr[0] ? k->c->errstr : "PING not sent");
    return -1;
}

int64_t
ksub_proven_mono(const struct ksub *k)
{
    return k->proven_mono;
}

int
ksub_read(struct ksub *k, int timeout_ms, ksub_event_fn *fn, void *arg, char *err,
          size_t errlen)
{
    const struct sink sk = { k, fn, arg };
    struct pollfd pfd;
    int n;

    if ((n = take(k, false, &sk, err, errlen)) != 0)
        return n;
    pfd.fd = k->c->fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    n = poll(&pfd, 1, timeout_ms);
    if (n < 0) {
        if (errno == EINTR)
            return 0;
        snprintf(err, errlen, "poll: %s", strerror(errno));
        return -1;
    }
    if (n == 0)
        return 0;
    if ((n = take(k, true, &sk, err, errlen)) == 0)
        k->heard_mono = clock_mono_ms();
    return n;
}
