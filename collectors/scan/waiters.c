/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waiters.c - how many wait for each lock, where Redis shows it without
 * any instrumentation of the clients.
 *
 * After a pass (scan.c calls waiters_lookup() once the streams are done,
 * beside the registry look-up) the scanner asks, for the locks the
 * snapshot kept:
 *   - a lock whose row's waiters column is FMT_WAITERS_QUEUE (a Redisson
 *     RLock, FairLock, FencedLock): LRANGE 0 SNAP_QUEUE_IDS-1 of its fair
 *     queue redisson_lock_queue:{K}, the FairLock's waiters in order (an
 *     RLock has none, and a missing key is an empty list): their count,
 *     and their `<uuid>:<tid>` ids, which the lock keeps for the wait-for
 *     graph (collectors/graph/); only a queue that fills the range, or
 *     whose LRANGE was refused (an ACL without +lrange: counted), is
 *     asked its LLEN too, so one command a queue as a rule, as LLEN was;
 *   - every lock whose row has a waiters source and a wake channel
 *     (Redisson locks, RW locks, semaphores, liblockwatch): PUBSUB NUMSUB
 *     of that channel, the clients subscribed to its unlock message, and
 *     of the row's legacy name where it has one (Redisson 2.x:
 *     redisson_lock__channel__{K}, redisson_rwlock__{K}), summed.
 *     Redisson subscribes once per client instance and channel, however
 *     many of its threads wait, so this counts waiting clients, not
 *     threads.
 * The lock's waiters are the larger of the two (a FairLock's waiters
 * listen on channels of their own, which its queue already counts).
 * Bounded: one PUBSUB NUMSUB per WAITERS_BATCH channels, at most
 * WAITERS_MAX channels and WAITERS_MAX queues a scan (the locks past them,
 * and formats whose clients poll, have waiters unknown); all pipelined, so
 * a few round trips a scan whatever the number of locks.  In a cluster
 * each look-up goes to the shard that serves the lock's slot, and PUBSUB
 * SHARDNUMSUB of the same channels counts the sharded subscribers
 * (Redisson >= 3.22 on Redis Cluster 7); a client subscribed to another
 * node with a plain SUBSCRIBE is not seen there.  An error reply
 * (an ACL without +pubsub|numsub or +llen) leaves the locks it covers
 * unknown and is counted (lockwatch_scan_waiter_errors_total); it never
 * fails the pass.
 */
#include "collectors/scan/scan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/formats/formats.h"
#include "common/prefixname.h"

#define WAITERS_MAX    4096     /* channels, and queues, asked per scan */
#define WAITERS_BATCH  256      /* channels per PUBSUB NUMSUB */
#define WAITERS_CHUNK  1000     /* LLENs in flight */

struct wait_lock {
    uint32_t lock;              /* index into snap->locks */
    size_t stream;              /* the shard that serves its slot */
    char *channel[2];           /* its wake channels (current, 2.x), or NULL */
    size_t chlen[2];
    bool queue;                 /* a Redisson hash: ask its fair queue */
    long long queued, subscribed;   /* -1: not asked or refused */
    char *ids;                  /* the queue's first members, NUL-ended, back
                                 * to back (snap_lock.queue); NULL: none */
    uint16_t nids;
};

/* "<prefix>{<key>}", malloc'd. */
static char *
legacy_name(const char *prefix, const char *key, size_t keylen, size_t *len)
{
    size_t plen = strlen(prefix);
    char *p = malloc(plen + keylen + 3);

    if (p == NULL)
        return NULL;
    memcpy(p, prefix, plen);
    p[plen] = '{';
    memcpy(p + plen + 1, key, keylen);
    p[plen + 1 + keylen] = '}';
    p[plen + 2 + keylen] = '\0';
    *len = plen + 2 + keylen;
    return p;
}

/* The first members of a queue's LRANGE reply, each cut to HOLDER_ID_MAX. */
static int
keep_ids(struct wait_lock *x, const redisReply *rep)
{
    size_t i, need = 0, n = rep->elements < SNAP_QUEUE_IDS ? rep->elements : SNAP_QUEUE_IDS;
    char *p;

    for (i = 0; i < n; i++)
        if (rep->element[i]->type == REDIS_REPLY_STRING)
            need += (rep->element[i]->len < HOLDER_ID_MAX ? rep->element[i]->len
                     : HOLDER_ID_MAX) + 1;
    if (need == 0)
        return 0;
    if ((x->ids = p = malloc(need)) == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        const redisReply *e = rep->element[i];
        size_t len;

        if (e->type != REDIS_REPLY_STRING)
            continue;
        len = e->len < HOLDER_ID_MAX ? e->len : HOLDER_ID_MAX;
        memcpy(p, e->str, len);
        p[len] = '\0';
        p += len + 1;
        x->nids++;
    }
    return 0;
}

/* Send one command about the fair queue of lock w: LRANGE 0 SNAP_QUEUE_IDS-1,
 * or LLEN. */
static int
send_queue(struct run *r, struct stream *st, const struct wait_lock *w, bool llen)
{
    const struct snap_lock *l = r->snap->locks[w->lock];
    size_t need = formats_helper_lock_name(HELPER_FAIR_QUEUE, l->key, l->key_len, NULL, 0);
    const char *argv[4] = { llen ? "LLEN" : "LRANGE", NULL, "0", NULL };
    size_t lens[4] = { llen ? 4 : 6, need, 1, 0 };
    char stop[16], *q;

    if ((q = malloc(need + 1)) == NULL)
        return -1;
    formats_helper_lock_name(HELPER_FAIR_QUEUE, l->key, l->key_len, q, need + 1);
    argv[1] = q;
    snprintf(stop, sizeof(stop), "%d", SNAP_QUEUE_IDS - 1);
    argv[3] = stop;
    lens[3] = strlen(stop);
    redisAppendCommandArgv(st->c, llen ? 2 : 4, argv, lens);
    free(q);
    return 0;
}

/* The fair queue of every queue lock on this stream: its first members,
 * and for a queue that fills the range its length. */
static int
ask_queues(struct run *r, struct stream *st, size_t want, struct wait_lock *w, size_t n)
{
    size_t i = 0, j;

    while (i < n) {
        size_t idx[WAITERS_CHUNK], sent = 0, full = 0;

        for (; i < n && sent < WAITERS_CHUNK; i++) {
            if (!w[i].queue || w[i].stream != want)
                continue;
            if (send_queue(r, st, &w[i], false) == -1)
                return -1;
            idx[sent++] = i;
        }
        for (j = 0; j < sent; j++) {
            struct wait_lock *x = &w[idx[j]];
            redisReply *rep;

            if (stream_reply(st, &rep) == -1)
                return -1;
            if (rep->type == REDIS_REPLY_ARRAY) {
                x->queued = (long long)rep->elements;
                if (keep_ids(x, rep) == -1) {
                    freeReplyObject(rep);
                    return -1;
                }
            } else {
                /* refused (an ACL without +lrange): counted, and its
                 * LLEN still gives the count */
                r->sc->counters.waiter_errors_total++;
            }
            freeReplyObject(rep);
            if (x->queued >= SNAP_QUEUE_IDS || x->queued < 0)
                idx[full++] = idx[j];   /* j >= full: idx[j] is read already */
        }
        for (j = 0; j < full; j++)
            if (send_queue(r, st, &w[idx[j]], true) == -1)
                return -1;
        for (j = 0; j < full; j++) {
            redisReply *rep;

            if (stream_reply(st, &rep) == -1)
                return -1;
            if (rep->type == REDIS_REPLY_INTEGER)
                w[idx[j]].queued = rep->integer;
            else
                r->sc->counters.waiter_errors_total++;
            freeReplyObject(rep);
        }
    }
    return 0;
}

/* PUBSUB NUMSUB (and in a cluster SHARDNUMSUB) of the channels of this
 * stream's locks, WAITERS_BATCH a command; the reply is channel, count
 * pairs in the order asked, and a lock's channels and both kinds of
 * subscriber add up. */
static int
ask_channels(struct run *r, struct stream *st, size_t want, struct wait_lock *w, size_t n,
             bool sharded)
{
    size_t pos = 0, j;          /* channel c of lock i is pos 2i + c */

    while (pos < 2 * n) {
        const char *argv[2 + WAITERS_BATCH];
        size_t lens[2 + WAITERS_BATCH], idx[WAITERS_BATCH], k = 0;
        redisReply *rep;

        argv[0] = "PUBSUB";
        lens[0] = 6;
        argv[1] = "NUMSUB";
        lens[1] = 6;
        for (; pos < 2 * n && k < WAITERS_BATCH; pos++) {
            const struct wait_lock *x = &w[pos / 2];

            if (x->channel[pos % 2] == NULL || x->stream != want)
                continue;
            argv[2 + k] = x->channel[pos % 2];
            lens[2 + k] = x->chlen[pos % 2];
            idx[k++] = pos / 2;
        }
        if (k == 0)
            break;
        redisAppendCommandArgv(st->c, (int)(2 + k), argv, lens);
        if (sharded) {
            argv[1] = "SHARDNUMSUB";
            lens[1] = 11;
            redisAppendCommandArgv(st->c, (int)(2 + k), argv, lens);
        }
        for (int q = 0; q < (sharded ? 2 : 1); q++) {
            if (stream_reply(st, &rep) == -1)
                return -1;
            if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 * k) {
                for (j = 0; j < k; j++) {
                    const redisReply *e = rep->element[2 * j + 1];
                    struct wait_lock *x = &w[idx[j]];

                    if (e->type == REDIS_REPLY_INTEGER)
                        x->subscribed = (x->subscribed > 0 ? x->subscribed : 0) + e->integer;
                }
            } else {
                r->sc->counters.waiter_errors_total++;
            }
            freeReplyObject(rep);
        }
    }
    return 0;
}

/* The lock's waiters from what was asked, and its class's sum. */
static void
apply(struct run *r, struct wait_lock *w)
{
    struct snapshot *s = r->snap;
    struct snap_lock *l = s->locks[w->lock];
    long long v = w->queued > w->subscribed ? w->queued : w->subscribed;

    if (w->ids != NULL && l->queue == NULL) {
        l->queue = w->ids;      /* the lock owns it now */
        l->nqueue = w->nids;
        w->ids = NULL;
    }

    if (v < 0)
        return;
    if (v > UINT32_MAX)
        v = UINT32_MAX;
    l->waiters = (uint32_t)v;
    l->flags |= SNAP_WAITERS_KNOWN;
    if (w->queued > 0 && w->queued >= w->subscribed)
        l->flags |= SNAP_WAITERS_QUEUE;
    if (l->class_idx < s->class_cap)
        s->class_stats[l->class_idx].waiters += (uint64_t)v;
}

int
waiters_lookup(struct run *r, struct stream *streams, size_t nstreams,
               const struct cluster_topo *topo)
{
    struct snapshot *s = r->snap;
    struct wait_lock *w = NULL;
    size_t n = 0, nch = 0, nq = 0, i;
    int rc = 0;

    if (s->nlocks > 0 && (w = calloc(s->nlocks, sizeof(*w))) == NULL)
        return -1;
    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = s->locks[i];
        const struct lock_format *f = &formats_table[l->format < formats_count ? l->format
                                                     : formats_count - 1];
        struct wait_lock *x = &w[n];

        x->lock = (uint32_t)i;
        x->queued = x->subscribed = -1;
        if (topo != NULL) {
            x->stream = topo->slot_shard[cluster_keyslot(l->key, l->key_len)];
            if (x->stream >= nstreams)
                continue;       /* no shard serves it now */
        }
        if (f->waiters == FMT_WAITERS_QUEUE && nq < WAITERS_MAX) {
            x->queue = true;
            nq++;
        }
        if (f->waiters != FMT_WAITERS_NONE && f->wake_channel != NULL && nch < WAITERS_MAX) {
            /* formats_wake_channel() names it by prefixName(), as here */
            size_t need = prefix_name(NULL, 0, f->wake_channel, l->key, l->key_len);
            const char *old = f->wake_legacy;
            long got;

            if ((x->channel[0] = malloc(need + 1)) == NULL) {
                rc = -1;
                goto out;
            }
            got = formats_wake_channel(f, l->key, l->key_len, x->channel[0], need + 1);
            if (got < 0) {
                free(x->channel[0]);
                x->channel[0] = NULL;
            } else {
                x->chlen[0] = (size_t)got;
                nch++;
            }
            if (old != NULL && x->channel[0] != NULL &&
                (x->channel[1] = legacy_name(old, l->key, l->key_len, &x->chlen[1])) == NULL) {
                rc = -1;
                goto out;
            }
        }
        if (x->queue || x->channel[0] != NULL)
            n++;
    }
    for (i = 0; i < nstreams && n > 0; i++) {
        if (streams[i].failed || streams[i].c == NULL)
            continue;
        if (ask_queues(r, &streams[i], i, w, n) == -1 ||
            ask_channels(r, &streams[i], i, w, n, topo != NULL) == -1) {
            streams[i].failed = true;
            if (streams[i].err[0] == '\0')
                stream_err(&streams[i], "out of memory in the waiters look-up");
        }
    }
    for (i = 0; i < n; i++)
        apply(r, &w[i]);
out:
    for (i = 0; w != NULL && i < s->nlocks; i++) {
        free(w[i].channel[0]);
        free(w[i].channel[1]);
        free(w[i].ids);
    }
    free(w);
    return rc;
}
