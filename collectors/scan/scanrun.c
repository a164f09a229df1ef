/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scanrun.c - the scanner driven from above (scanrun.h): the connections
 * the last pass kept, re-reads of named keys with the stream's own
 * pipelined reads, snapshots replayed through the per-key step, and
 * whether the nodes of the last pass still serve the target.
 *
 * A re-read is one batch of the stream (stream_read_batch()) on a kept
 * connection, its keys handed to the caller instead of recorded; a
 * replay is a run (run_begin()) whose keys come from the caller instead
 * of a pass, completed exactly as a pass's are (registry, helper keys,
 * waiters, finish), so whichever path made a snapshot, it says the same.
 */
#include "collectors/scan/scan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/redis/conn.h"
#include "collectors/redis/target.h"
#include "common/clock.h"
#include "common/log.h"

struct redisconn_silent *
scanner_silent(struct scanner *sc)
{
    return &sc->silent;
}

const struct cluster_node *
scanner_known(const struct scanner *sc, size_t *n)
{
    *n = sc->nknown;
    return sc->nknown > 0 ? sc->known : NULL;
}

int
scanner_stamp_nodes(const struct scanner *sc, struct snapshot *s)
{
    free(s->nodes);
    s->nodes = NULL;
    s->nnodes = 0;
    if (sc->nknown == 0)
        return 0;
    if ((s->nodes = malloc(sc->nknown * sizeof(*s->nodes))) == NULL)
        return -1;
    memcpy(s->nodes, sc->known, sc->nknown * sizeof(*s->nodes));
    s->nnodes = sc->nknown;
    return 0;
}

redisContext *
scanner_conn(const struct scanner *sc, const char **host, int *port)
{
    *host = sc->host;
    *port = sc->port;
    return sc->c;
}

redisContext *
scanner_node_conn(const struct scanner *sc, const char *host, int port)
{
    size_t i;

    for (i = 0; i < sc->nconns; i++)
        if (sc->conns[i].c != NULL && sc->conns[i].port == port &&
            strcmp(sc->conns[i].host, host) == 0)
            return sc->conns[i].c;
    return NULL;
}

/* Kept connection *cp to host:port (readonly: a cluster replica, told
 * READONLY) again when its peer closed it: 1 opened again, 0 not closed
 * so (left as it is), -1 (err) not reopened (dropped). */
static int
revive_one(struct scanner *sc, const struct target_conf *t, redisContext **cp, const char *host,
           int port, bool readonly, char *err, size_t errlen)
{
    const char *argv[1] = { "READONLY" };
    enum redisconn_closed why;
    struct target_conf node;
    redisReply *rep;
    redisContext *c;

    if (*cp == NULL || !redisconn_closed(*cp, &why))
        return 0;
    redisFree(*cp);
    *cp = NULL;
    redisconn_node(t, host, port, &node);
    if ((c = redisconn_open(&node, err, errlen)) == NULL)
        return -1;
    if (readonly) {
        rep = redisconn_command(c, &node, "READONLY", 1, argv, NULL, err, errlen);
        if (rep == NULL || rep->type == REDIS_REPLY_ERROR) {
            if (rep != NULL)
                scan_errf(err, errlen, "READONLY on %s:%d refused", host, port);
            freeReplyObject(rep);
            redisFree(c);
            return -1;
        }
        freeReplyObject(rep);
    }
    if (t->mode == TARGET_SENTINEL &&
        target_verify(t, &sc->sentinel_first, c, &node, err, errlen) != 1) {
        scan_errf(err, errlen, "%s:%d: no longer the primary the sentinels name", host, port);
        redisFree(c);
        return -1;
    }
    *cp = c;
    scan_reconnect_noted(sc, &sc->counters, why, host, port);
    return 1;
}

int
scanner_revive(struct scanner *sc, const struct target_conf *t, char *err, size_t errlen)
{
    size_t i;
    int n = 0, rc;

    if ((rc = revive_one(sc, t, &sc->c, sc->host, sc->port, false, err, errlen)) == -1)
        return -1;
    n += rc;
    for (i = 0; i < sc->nconns; i++) {
        rc = revive_one(sc, t, &sc->conns[i].c, sc->conns[i].host, sc->conns[i].port,
                        sc->conns[i].readonly, err, errlen);
        if (rc == -1)
            return -1;
        n += rc;
    }
    return n;
}

int
scanner_reread(struct scanner *sc, const struct target_conf *t, redisContext *c,
               const char *host, int port, bool asking, const char *const *keys,
               const size_t *lens, size_t n, scan_key_fn *each, scan_moved_fn *moved,
               void *arg, char *err, size_t errlen)
{
    struct key_meta meta[SCAN_REREAD_MAX];
    struct stream st;
    struct batch b;
    struct run r;
    size_t i;
    int rc;

    if (n > SCAN_REREAD_MAX) {
        scan_errf(err, errlen, "%zu keys to re-read at once (at most %d)", n, SCAN_REREAD_MAX);
        return -1;
    }
    /* a run of its own: nothing is recorded, and the values are not
     * decoded here (raw.now_ms stays 0, as the replay's) */
    memset(&r, 0, sizeof(r));
    r.sc = sc;
    r.t = t;
    memset(&st, 0, sizeof(st));
    memset(&b, 0, sizeof(b));
    memset(meta, 0, n * sizeof(meta[0]));
    for (i = 0; i < n; i++) {
        meta[i].k.key = keys[i];
        meta[i].k.keylen = lens[i];
        meta[i].asking = asking;
    }
    b.meta = meta;
    b.n = n;
    st.r = &r;
    st.c = c;
    snprintf(st.host, sizeof(st.host), "%s", host);
    st.port = port;
    st.on_key = each;
    st.on_moved = moved;
    st.on_key_arg = arg;
    /* under an LFU policy (the last pass's INFO, or an earlier re-read's
     * error) OBJECT IDLETIME is not asked */
    st.no_idle = atomic_load(&sc->no_idle);
    rc = stream_read_batch(&st, &b);
    if (st.no_idle)
        atomic_store(&sc->no_idle, true);
    for (i = 0; i < SCAN_READ_KINDS; i++)
        sc->counters.read_errors[i] += st.cnt.read_errors[i];
    sc->counters.asking_total += st.cnt.asking_total;
    if (rc == -1 || st.refused > 0) {
        scan_errf(err, errlen, "%s", st.refused > 0 ? st.refused_err : st.err);
        return -1;
    }
    return 0;
}

/* The streams a replay's look-ups send on: one per shard of topo in its
 * order, or the one connection's.  NULL when one has no connection kept
 * (or on ENOMEM). */
static struct stream *
replay_streams(struct run *r, const struct cluster_topo *topo, size_t *n)
{
    struct scanner *sc = r->sc;
    struct stream *st;
    const char *host;
    size_t i;

    *n = topo != NULL ? topo->nshards : 1;
    if ((st = calloc(*n ? *n : 1, sizeof(*st))) == NULL)
        return NULL;
    for (i = 0; i < *n; i++) {
        st[i].r = r;
        if (topo != NULL) {
            host = topo->shards[i].primary.host;
            st[i].port = topo->shards[i].primary.port;
            st[i].c = scanner_node_conn(sc, host, st[i].port);
        } else {
            st[i].c = scanner_conn(sc, &host, &st[i].port);
        }
        if (st[i].c == NULL) {
            free(st);
            return NULL;
        }
        snprintf(st[i].host, sizeof(st[i].host), "%s", host);
    }
    return st;
}

/* One try of scanner_replay(). */
static struct snapshot *
replay_once(struct scanner *sc, const struct target_conf *t, const struct scan_rules *rules,
            const atomic_int *stop, const struct cluster_topo *topo, scan_replay_fn *each,
            void *arg, int64_t *now_ms, int64_t *next_due_ms)
{
    struct scan_counters scratch;       /* a replay's counts are not a scan's */
    struct stream *streams = NULL;
    struct snapshot *s;
    struct run r;
    size_t i, nstreams = 0;
    int ok = 1;

    if ((s = run_begin(&r, sc, t, rules, stop)) == NULL)
        return NULL;
    sc->pass++;
    if (sc->pass == 0)
        sc->pass = 1;
    memset(&scratch, 0, sizeof(scratch));
    if (each(arg, &r, &scratch) == -1)
        ok = 0;
    if (ok && (streams = replay_streams(&r, topo, &nstreams)) == NULL)
        ok = 0;
    if (ok && registry_lookup(&r, streams, nstreams, topo) == -1)
        ok = 0;
    /* as a full scan does: the helper keys kept, those outside the
     * patterns, then the waiters (after the formats the helpers give) */
    helperkeys_finish(&r, ok);
    if (ok && helperkeys_probe(&r, streams, nstreams, topo) == -1)
        ok = 0;
    if (ok && waiters_lookup(&r, streams, nstreams, topo) == -1)
        ok = 0;
    for (i = 0; ok && i < nstreams; i++)
        if (streams[i].failed)
            ok = 0;             /* a connection failed: a full scan says what */
    free(streams);
    if (ok && record_finish(&r) == -1)
        ok = 0;
    class_set_free(r.classes);
    pthread_mutex_destroy(&r.mu);
    if (!ok) {
        redlock_map_free(r.rmap);
        snapshot_unref(s);
        scanner_outage(sc, r.now_ms);   /* the full scan after it reads what drained */
        return NULL;
    }
    tracker_sweep(sc->tracker, sc->pass, clock_now_ms(), sc->outage ? sc->outage_since_ms : 0);
    if (r.rmap != NULL) {
        redlock_map_finish(r.rmap);
        s->redlock = r.rmap;
    }
    s->ok = true;
    s->counters = sc->counters;
    s->server = sc->server;
    lost_stamp(sc, s, false);
    *now_ms = r.now_ms;
    *next_due_ms = r.next_due_ms;
    return s;
}

struct snapshot *
scanner_replay(struct scanner *sc, const struct target_conf *t, const struct scan_rules *rules,
               const atomic_int *stop, const struct cluster_topo *topo, scan_replay_fn *each,
               void *arg, int64_t *now_ms, int64_t *next_due_ms)
{
    struct snapshot *s = replay_once(sc, t, rules, stop, topo, each, arg, now_ms, next_due_ms);
    char err[256];

    /* a look-up's first command met a kept connection its peer closed
     * while idle: once more on the connection opened again (the records
     * are only read, so a second try makes the same view) */
    if (s == NULL && (stop == NULL || !atomic_load(stop)) &&
        scanner_revive(sc, t, err, sizeof(err)) > 0)
        s = replay_once(sc, t, rules, stop, topo, each, arg, now_ms, next_due_ms);
    return s;
}

bool
scanner_moved(struct scanner *sc, const struct target_conf *t, const struct cluster_topo *topo)
{
    struct cluster_topo now;
    struct target_conf node;
    char err[256];
    size_t i;
    bool moved = false;
    int rc;

    if (t->mode == TARGET_STANDALONE)
        return false;
    if (t->mode == TARGET_SENTINEL) {
        redisconn_node(t, sc->host, sc->port, &node);
        rc = target_verify(t, &sc->sentinel_first, sc->c, &node, sc->fail_next,
                           sizeof(sc->fail_next));
        /* ROLE met the connection closed while idle: the node opened
         * again is asked again (and is kept only if it is the primary) */
        if (rc == 0 && scanner_revive(sc, t, err, sizeof(err)) > 0)
            rc = 1;
        /* no sentinel answering proves no primary either: the full scan
         * this sets off fails at once with their answers */
        if (rc != -1)
            sc->fail_next[0] = '\0';
        return rc != 1;
    }
    memset(&now, 0, sizeof(now));
    if (cluster_discover(t, sc->known, sc->nknown, &now, err, sizeof(err)) == -1)
        return false;
    /* said as a full scan says it (a red-team: follow mode never did) */
    scanner_cluster_found(sc, &now);
    if (now.nshards != topo->nshards ||
        memcmp(now.slot_shard, topo->slot_shard, CLUSTER_SLOTS * sizeof(*now.slot_shard)))
        moved = true;
    for (i = 0; !moved && i < now.nshards; i++)
        moved = now.shards[i].primary.port != topo->shards[i].primary.port ||
            strcmp(now.shards[i].primary.host, topo->shards[i].primary.host) != 0;
    cluster_topo_clear(&now);
    return moved;
}

/* Remember every node of topo as a discovery hint for next time. */
static void
remember_nodes(struct scanner *sc, const struct cluster_topo *topo)
{
    struct cluster_node *k;
    size_t i, j, n = 0;

    for (i = 0; i < topo->nshards; i++)
        n += 1 + topo->shards[i].nreplicas;
    /* a node serving no slot names no other: the old hints stay, to find
     * the cluster through when the URL's node has left it */
    if (n == 0 || (k = calloc(n, sizeof(*k))) == NULL)
        return;                 /* keep the old hints */
    for (i = 0, n = 0; i < topo->nshards; i++) {
        k[n++] = topo->shards[i].primary;
        for (j = 0; j < topo->shards[i].nreplicas; j++)
            k[n++] = topo->shards[i].replicas[j];
    }
    free(sc->known);
    sc->known = k;
    sc->nknown = n;
}

void
scanner_cluster_found(struct scanner *sc, const struct cluster_topo *topo)
{
    if (strcmp(topo->note, sc->seed_note) != 0) {
        if (topo->note[0] != '\0')
            log_warnx("target %s: %s", sc->name, topo->note);
        else if (sc->seed_note[0] != '\0')
            log_info("target %s: the cluster is read through its URL's node again", sc->name);
        snprintf(sc->seed_note, sizeof(sc->seed_note), "%s", topo->note);
    }
    remember_nodes(sc, topo);
}
