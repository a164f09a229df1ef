/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scan.c - a full scan of one target: the runs by topology and the
 * connections kept between them.
 *
 * One stream (stream.c: the pipelined SCAN / META / VALS pass with its
 * pacing) runs per Redis node scanned.  A standalone target is one
 * stream; a Sentinel target is one stream to the primary the sentinels
 * name (resolved again on every reconnect, and the pass is retried once
 * on the new primary when a failover cuts the connection); a cluster
 * target is one stream per shard, each on its own thread, against the
 * shard's primary (or a replica, READONLY, with scan_replicas), all
 * recording (record.c) into the one snapshot of the target.  After the
 * streams, one client-registry look-up (registry.c) completes the
 * Redisson-format locks, the last-known locks of any shard that failed
 * are carried from the view before (carry.c), and the snapshot is
 * finished.
 *
 * Connections survive from scan to scan: the standalone or Sentinel one
 * in the scanner, a cluster's by node address (taken by the stream of
 * the shard on that node, put back when its pass went well).  A config
 * reload that changes where or how the scanner connects (conn_key())
 * drops them all.  open_by_mode() is the one place a connection is
 * opened.
 *
 * A full scan has one deadline, scan_timeout from its start: every read
 * of it, on every shard's thread, keeps to it (the scanner's
 * redisconn_scope), and the stream stops sending at it, so neither a
 * server answering a byte at a time nor a SCAN cursor that never comes
 * back to 0 holds the target: the scan fails naming scan_timeout and the
 * target is down.  The same scope carries the stop flag, so a SIGTERM
 * ends a scan within REDISCONN_STOP_TICK_MS whatever the server does.
 * It costs a clock read per segment and nothing per key.
 */
#include "collectors/scan/scan_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/redis/conn.h"
#include "collectors/redis/serverinfo.h"
#include "collectors/redis/target.h"
#include "common/clock.h"
#include "common/keytext.h"
#include "common/log.h"

void
scan_errf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

void
scan_reconnect_noted(struct scanner *sc, struct scan_counters *cnt, enum redisconn_closed why,
                     const char *host, int port)
{
    cnt->reconnects[why]++;
    if (!atomic_exchange(&sc->reconnect_said, true))
        log_info("target %s: the connection to %s:%d was closed while idle (%s: the "
                 "server's timeout, a proxy's idle timeout, a CLIENT KILL or a restart, which "
                 "the scan then names); reconnected (lockwatch_reconnects_total; said once)",
                 sc->name, host, port,
                 redisconn_closed_name(why));
    else
        log_debug("target %s: the connection to %s:%d was closed while idle (%s); "
                  "reconnected", sc->name, host, port, redisconn_closed_name(why));
}

struct scanner *
scanner_new(const char *target_name)
{
    struct scanner *sc = calloc(1, sizeof(*sc));

    if (sc == NULL)
        return NULL;
    sc->name = strdup(target_name);
    sc->tracker = tracker_new(lease_expired);
    sc->scope.deadline_ms = INT64_MAX;
    redisconn_silent_init(&sc->silent);
    sc->scope.silent = &sc->silent;
    if (sc->name == NULL || sc->tracker == NULL) {
        scanner_free(sc);
        return NULL;
    }
    return sc;
}

void
scanner_free(struct scanner *sc)
{
    if (sc == NULL)
        return;
    if (sc->hooks.release != NULL)
        sc->hooks.release(sc->hooks_arg);
    scanner_disconnect(sc);
    free(sc->conns);
    free(sc->known);
    tracker_free(sc->tracker);
    lost_forget(sc);
    redisconn_silent_destroy(&sc->silent);
    free(sc->name);
    free(sc);
}

void
scanner_set_hooks(struct scanner *sc, const struct scan_hooks *h, void *arg)
{
    sc->hooks = *h;
    sc->hooks_arg = arg;
}

void
scanner_disconnect(struct scanner *sc)
{
    size_t i;

    if (sc->c != NULL) {
        redisFree(sc->c);
        sc->c = NULL;
    }
    for (i = 0; i < sc->nconns; i++)
        if (sc->conns[i].c != NULL)
            redisFree(sc->conns[i].c);
    sc->nconns = 0;
}

/* A hash of everything in t that decides where and how the scanner
 * connects: a reload that changes any of it must not reuse a connection
 * made the old way (another server, user, password or database). */
static uint64_t
conn_key(const struct target_conf *t)
{
    char buf[1024];
    uint64_t h;
    size_t i;
    int n;

    n = snprintf(buf, sizeof(buf), "%d|%s|%d|%d|%s|%s|%d|%lld|%lld|%s", (int)t->mode,
                 t->host, t->port, t->db, t->user ? t->user : "", t->master_name ?
                 t->master_name : "", t->scan_replicas, (long long)t->connect_timeout_ms,
                 (long long)t->command_timeout_ms, t->password ? t->password : "");
    h = keytext_hash(buf, n > 0 ? ((size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf)) : 0);
    for (i = 0; i < t->nsentinels; i++) {
        n = snprintf(buf, sizeof(buf), "%016llx|%s|%d", (unsigned long long)h,
                     t->sentinels[i].host, t->sentinels[i].port);
        h = keytext_hash(buf, n > 0 ? ((size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf)) : 0);
    }
    explicit_bzero(buf, sizeof(buf));
    return h;
}

/*
 * Open a stream's connection.  A cluster shard's node is already known
 * (host:port, a primary or a replica from the discovery): it is opened
 * as one node with the target's credentials and timeouts, touching
 * nothing of sc, since the shards' threads call this at once.  Otherwise
 * target_open() (collectors/redis/target.h) goes where the mode says:
 * the URL's server, or the primary the sentinels name now; host and port
 * say where it went.  NULL with err set on failure.
 */
static redisContext *
open_by_mode(struct scanner *sc, const struct target_conf *t, char *host, size_t hostlen,
             int *port, char *err, size_t errlen)
{
    struct target_conf node;
    redisContext *c;

    if (t->mode == TARGET_CLUSTER) {
        redisconn_node(t, host, *port, &node);
        return redisconn_open(&node, err, errlen);
    }
    c = target_open(t, NULL, 0, &sc->sentinel_first, &node, err, errlen);
    if (c != NULL) {
        snprintf(host, hostlen, "%s", node.host);
        *port = node.port;
    }
    return c;
}

/* Open the stream's connection unless it has one (the scanner's, for the
 * one stream of standalone and sentinel; one kept from the last scan, for
 * a cluster shard's); a cluster replica is told READONLY so it answers
 * for its keys. */
static int
stream_connect(struct stream *s)
{
    const char *argv[1] = { "READONLY" };
    struct target_conf node;
    redisReply *rep;
    int rc = 0;

    if (s->c != NULL)
        return 0;
    s->c = open_by_mode(s->r->sc, s->r->t, s->host, sizeof(s->host), &s->port, s->err,
                        sizeof(s->err));
    if (s->c == NULL) {
        s->conn_lost = true;
        return -1;
    }
    if (!s->readonly)
        return 0;
    redisconn_node(s->r->t, s->host, s->port, &node);
    rep = redisconn_command(s->c, &node, "READONLY", 1, argv, NULL, s->err, sizeof(s->err));
    if (rep == NULL) {
        s->conn_lost = true;
        return -1;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        stream_err(s, "READONLY on %s:%d refused: %.*s (the ACL user needs +readonly)",
                   s->host, s->port, (int)(rep->len > 120 ? 120 : rep->len), rep->str);
        rc = -1;
    }
    freeReplyObject(rep);
    return rc;
}

/* Which server the stream reads (serverinfo.h), and whether it restarted
 * empty (reborn.c), before its first key: a refused INFO leaves it unknown; -1 when the connection failed, or when
 * the node is a replica whose link to its primary is down (s->err says
 * so; the connection is fine): what it holds is the data of when the link
 * broke, and a pass over it would pass that off as the current view.  The
 * same INFO replication as the identity, so it costs nothing more. */
static int
stream_identify(struct stream *s)
{
    struct target_conf node;
    char addr[sizeof(s->host) + 8];
    int rc;

    redisconn_node(s->r->t, s->host, s->port, &node);
    rc = serverinfo_read(s->c, &node, &s->server, s->err, sizeof(s->err));
    if (rc == -1) {
        s->conn_lost = true;
        return -1;
    }
    if (rc == 0) {
        /* refused: the identity stays unknown, and with it what only it
         * shows; said once, as an ACL that lacks it is no outage */
        if (!atomic_exchange(&s->r->sc->info_said, true))
            log_info("target %s: INFO refused on %s:%d (%s): locks lost at a restart, "
                     "failover or flush go unseen (LockLostAtFailover), and a replica cut "
                     "off from its primary is not told; grant the ACL user +info (said once)",
                     s->r->sc->name, s->host, s->port,
                     strstr(s->err, "NOPERM") != NULL ? "the ACL user lacks +info" : s->err);
        s->err[0] = '\0';
    }
    if (rc == 1 && s->server.link_down) {
        snprintf(addr, sizeof(addr), "%s:%d", s->host, s->port);
        serverinfo_link_why(addr, s->server.link_down_s, s->server.link_silent_s,
                            serverinfo_silence_s(&node), false, s->err, sizeof(s->err));
        return -1;
    }
    /* a restart that left it empty: no lock there is older (reborn.c) */
    if (rc == 1 && reborn_check(s) == -1) {
        s->conn_lost = true;
        return -1;
    }
    return 0;
}

/*
 * Connect if needed and read which server the stream reads: the first
 * command of the pass.  A connection kept from an earlier pass may have
 * been closed by its peer while it waited (the server's idle timeout, a
 * proxy's, a CLIENT KILL): then that command fails at once on the error
 * that says so (redisconn_closed()), and the node is opened again and
 * asked once more, rather than the target reported down.  Nothing is
 * sent for it on the normal path.  A server really down refuses the new
 * connection (or the second try fails): the stream fails as it did, as
 * fast, and nothing is counted or logged as reconnected (that is said
 * only once the new connection answered).
 */
static int
stream_begin(struct stream *s)
{
    enum redisconn_closed why;
    char host[sizeof(s->host)];
    int port;

    /* a node this pass already found silent (its discovery, the follow
     * hooks run before the streams): its kept connection is not waited
     * for again, and the open below fails at once, saying why */
    if (s->c != NULL && redisconn_is_silent(s->host, s->port)) {
        redisFree(s->c);
        s->c = NULL;
        s->kept = false;
    }
    if (stream_connect(s) == -1)
        return -1;
    if (stream_identify(s) == 0)
        return 0;
    if (!s->kept || !redisconn_closed(s->c, &why))
        return -1;
    snprintf(host, sizeof(host), "%s", s->host);
    port = s->port;
    redisFree(s->c);
    s->c = NULL;
    s->kept = false;
    s->conn_lost = false;
    s->err[0] = '\0';
    if (stream_connect(s) == -1 || stream_identify(s) == -1)
        return -1;
    /* counted once the new connection answered: a server really gone
     * (EOF, then the connect refused) is no reconnect */
    scan_reconnect_noted(s->r->sc, &s->cnt, why, host, port);
    return 0;
}

/*
 * A cluster replica whose link to its primary is down (stream_identify())
 * holds what it had when the link broke: the shard is read on its primary
 * instead, as shard_node() does for a replica the cluster calls unhealthy
 * (the cluster does not: its health is gossip, the link is the replica's
 * own).  Both reasons are kept when the primary cannot be read either, as
 * when it is down, which is what most often takes the link down; the
 * shard is then stale.  While the link stays down, each pass asks the
 * replica again (one connection and its INFO) before the primary.
 */
static int
stream_to_primary(struct stream *s)
{
    char why[sizeof(s->err)], err[sizeof(s->err)];

    snprintf(why, sizeof(why), "%s", s->err);
    redisFree(s->c);
    s->c = NULL;
    s->kept = false;
    s->readonly = false;
    snprintf(s->host, sizeof(s->host), "%s", s->primary->host);
    s->port = s->primary->port;
    s->err[0] = '\0';
    if (stream_connect(s) == 0 && stream_identify(s) == 0) {
        if (!atomic_exchange(&s->r->sc->replica_said, true))
            log_info("target %s: %s; reading the shard on its primary %s:%d (said once)",
                     s->r->sc->name, why, s->host, s->port);
        else
            log_debug("target %s: %s; reading the shard on its primary %s:%d",
                      s->r->sc->name, why, s->host, s->port);
        return 0;
    }
    snprintf(err, sizeof(err), "%s", s->err[0] != '\0' ? s->err : "not read");
    stream_err(s, "%s; its primary %s:%d: %s", why, s->host, s->port, err);
    return -1;
}

/* A cluster shard's whole pass: connect if needed, then the streamed
 * scan (which releases its batches, so a stream is freed with free()). */
static void
stream_run(struct stream *s)
{
    int rc;

    s->start_mono = clock_mono_ms();
    rc = stream_begin(s);
    if (rc == -1 && s->primary != NULL && s->server.link_down && !s->conn_lost)
        rc = stream_to_primary(s);
    if (rc == -1 || stream_scan(s) == -1)
        s->failed = true;
    s->duration_s = (double)(clock_mono_ms() - s->start_mono) / 1000.0;
}

static void *
stream_main(void *arg)
{
    struct stream *s = arg;
    const struct redisconn_scope *prev = redisconn_scope_enter(&s->r->sc->scope);

    stream_run(s);
    redisconn_scope_leave(prev);
    return NULL;
}

/* What the hooks are told of r's pass: c, host and port for standalone
 * and sentinel, topo for a cluster. */
static void
pass_of(const struct run *r, redisContext *c, const char *host, int port,
        const struct cluster_topo *topo, struct scan_pass *p)
{
    memset(p, 0, sizeof(*p));
    p->t = r->t;
    p->stop = r->stop;
    p->conn_key = r->sc->conn_key;
    p->c = c;
    p->host = host;
    p->port = port;
    p->topo = topo;
    p->start_mono = r->start_mono;
}

/* The pass knows its nodes: ask the hooks whether to keep its keys. */
static void
attach_hooks(struct run *r, redisContext *c, const char *host, int port,
             const struct cluster_topo *topo)
{
    struct scan_pass p;

    if (r->sc->hooks.attach == NULL)
        return;
    pass_of(r, c, host, port, topo, &p);
    r->keeping = r->sc->hooks.attach(r->sc->hooks_arg, &p) && r->sc->hooks.keep != NULL;
}

/* The pass is over (s NULL: it was stopped): tell the hooks that kept. */
static void
scanned_hooks(struct run *r, struct snapshot *s, const struct cluster_topo *topo)
{
    struct scan_pass p;

    if (!r->keeping || r->sc->hooks.scanned == NULL)
        return;
    pass_of(r, r->sc->c, r->sc->host, r->sc->port, topo, &p);
    r->sc->hooks.scanned(r->sc->hooks_arg, &p, s);
    r->keeping = false;
}

/* Standalone and sentinel: one stream on the scanner's connection,
 * opened (and, for sentinel, the primary resolved) when there is none.
 * *had_conn says whether the connection predates this pass. */
static int
run_single(struct run *r, struct stream *st, bool *had_conn)
{
    struct scanner *sc = r->sc;
    const struct target_conf *t = r->t;
    enum redisconn_closed why = 0;
    char closed_host[sizeof(sc->host)];
    int closed_port = 0;
    bool closed = false;
    int rc;

    /* A failover promotes a replica while the old primary may still call
     * itself one (until the sentinels reconfigure it, or for good when it
     * cannot be) and keeps answering reads: so each pass asks the
     * sentinels where the primary is now and checks ROLE, two round trips
     * a scan, and moves when either says so.  When no sentinel answers,
     * nothing proves the connection reads the primary: the pass fails
     * with their answers, as when the primary cannot be reached, and the
     * last view stays, stale (target_verify(); no I/O for the other
     * modes).  When follow mode's check has just had their answers
     * (scanner_moved()), or waited command_timeout for the node
     * (scanner_fail_next()), the pass fails with that: it is the scan
     * follow mode runs, and waiting again would hold the view fresh for
     * another command_timeout.  A primary that does not answer ROLE
     * within command_timeout fails the pass there (target_verify()), and
     * a node found silent is not waited for again until the pass and its
     * retry are over (sc->silent, conn.h): one wait a pass, so the view
     * is stale within scan_interval + command_timeout of its last read. */
    if (sc->fail_next[0] != '\0') {
        run_err(r, "%s", sc->fail_next);
        sc->fail_next[0] = '\0';
        return -1;
    }
    if (sc->c != NULL) {
        struct target_conf node;

        redisconn_node(t, sc->host, sc->port, &node);
        rc = target_verify(t, &sc->sentinel_first, sc->c, &node, r->err, sizeof(r->err));
        if (rc == -1)
            return -1;
        /* ROLE on a connection its peer closed while idle fails: opened
         * again below, as for a failover, and counted once the new one
         * answered (not when the server is gone: the connect fails) */
        if (rc == 0 && redisconn_closed(sc->c, &why)) {
            closed = true;
            snprintf(closed_host, sizeof(closed_host), "%s", sc->host);
            closed_port = sc->port;
        }
        if (rc == 0)
            scanner_disconnect(sc);
    }
    *had_conn = sc->c != NULL;
    if (sc->c == NULL) {
        sc->c = open_by_mode(sc, t, sc->host, sizeof(sc->host), &sc->port, r->err,
                             sizeof(r->err));
        if (sc->c == NULL)
            return -1;
    }
    st->r = r;
    st->c = sc->c;
    st->kept = *had_conn;
    snprintf(st->host, sizeof(st->host), "%s", sc->host);
    st->port = sc->port;
    st->max_kps = t->max_keys_per_second;
    /* The stream's first command comes before the hooks see the
     * connection: a kept one its peer closed while idle is opened again
     * there (stream_begin()), and the hooks get the one that works. */
    sc->c = NULL;
    st->start_mono = clock_mono_ms();
    rc = stream_begin(st);
    if (rc == 0 && closed)
        scan_reconnect_noted(sc, &sc->counters, why, closed_host, closed_port);
    sc->c = st->c;
    snprintf(sc->host, sizeof(sc->host), "%s", st->host);
    sc->port = st->port;
    /* a pass that fails at once (a replica cut off) subscribes nothing */
    if (sc->c != NULL && rc == 0)
        attach_hooks(r, sc->c, sc->host, sc->port, NULL);
    if (rc == -1 || stream_scan(st) == -1)
        st->failed = true;
    st->duration_s = (double)(clock_mono_ms() - st->start_mono) / 1000.0;
    return 0;
}

/* Take the kept connection to host:port, if there is one. */
static redisContext *
take_conn(struct scanner *sc, const char *host, int port)
{
    redisContext *c;
    size_t i;

    for (i = 0; i < sc->nconns; i++)
        if (sc->conns[i].c != NULL && sc->conns[i].port == port &&
            strcmp(sc->conns[i].host, host) == 0) {
            c = sc->conns[i].c;
            sc->conns[i].c = NULL;
            return c;
        }
    return NULL;
}

/* The node of a shard to scan: its primary, or with scan_replicas its
 * first healthy replica (the primary when it has none). */
static const struct cluster_node *
shard_node(const struct target_conf *t, const struct cluster_shard *sh, bool *replica)
{
    size_t i;

    *replica = false;
    if (t->scan_replicas)
        for (i = 0; i < sh->nreplicas; i++)
            if (sh->replicas[i].healthy) {
                *replica = true;
                return &sh->replicas[i];
            }
    return &sh->primary;
}

/* Cluster: discover the shards, then scan them all at once, one thread
 * per shard.  -1 only when there is nothing to scan (r->err says why). */
static int
run_cluster(struct run *r, struct cluster_topo *topo, struct stream **out, size_t *nout)
{
    struct scanner *sc = r->sc;
    const struct target_conf *t = r->t;
    struct stream *st;
    pthread_t *th = NULL;
    bool *started = NULL;
    size_t i, n;
    long share;

    if (cluster_discover(t, sc->known, sc->nknown, topo, r->err, sizeof(r->err)) == -1)
        return -1;
    scanner_cluster_found(sc, topo);
    n = topo->nshards;
    if (n == 0) {
        run_err(r, "cluster via %s: no shard serves any slot (is the cluster set up?)",
                topo->via);
        return -1;
    }
    st = calloc(n, sizeof(*st));
    th = calloc(n, sizeof(*th));
    started = calloc(n, sizeof(*started));
    if (st == NULL || th == NULL || started == NULL) {
        free(st);
        free(th);
        free(started);
        run_err(r, "out of memory");
        return -1;
    }
    share = t->max_keys_per_second > 0 ? t->max_keys_per_second / (long)n : 0;
    if (t->max_keys_per_second > 0 && share < 1)
        share = 1;
    for (i = 0; i < n; i++) {
        const struct cluster_node *node = shard_node(t, &topo->shards[i], &st[i].readonly);

        st[i].r = r;
        st[i].primary = st[i].readonly ? &topo->shards[i].primary : NULL;
        st[i].slot_shard = topo->slot_shard;
        snprintf(st[i].host, sizeof(st[i].host), "%s", node->host);
        st[i].port = node->port;
        st[i].max_kps = share;
        st[i].c = take_conn(sc, node->host, node->port);
        st[i].kept = st[i].c != NULL;
    }
    /* connections to nodes no longer scanned */
    scanner_disconnect(sc);
    attach_hooks(r, NULL, NULL, 0, topo);
    for (i = 0; i < n; i++)
        started[i] = pthread_create(&th[i], NULL, stream_main, &st[i]) == 0;
    for (i = 0; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            stream_run(&st[i]);         /* no thread to spare: scan it here */
    }
    free(th);
    free(started);
    *out = st;
    *nout = n;
    return 0;
}

/* After a cluster pass: keep the good connections for the next one. */
static void
keep_conns(struct scanner *sc, struct stream *st, size_t n)
{
    struct node_conn *nc;
    size_t i;

    /* the kept ones no stream took (a node gone from the topology, or a
     * pass that failed before its streams: the ASan pass found them lost) */
    for (i = 0; i < sc->nconns; i++)
        if (sc->conns[i].c != NULL)
            redisFree(sc->conns[i].c);
    nc = realloc(sc->conns, (n ? n : 1) * sizeof(*nc));
    if (nc != NULL)
        sc->conns = nc;
    sc->nconns = 0;
    for (i = 0; i < n; i++) {
        if (st[i].c == NULL)
            continue;
        if (st[i].failed || nc == NULL) {
            redisFree(st[i].c);
        } else {
            snprintf(nc[sc->nconns].host, sizeof(nc[sc->nconns].host), "%s", st[i].host);
            nc[sc->nconns].port = st[i].port;
            nc[sc->nconns].readonly = st[i].readonly;
            nc[sc->nconns++].c = st[i].c;
        }
        st[i].c = NULL;
    }
}

/* The per-shard results, for lockwatch_shard_up and readyz. */
static int
record_shards(struct snapshot *s, const struct cluster_topo *topo, const struct stream *st,
              size_t n)
{
    size_t i;
    char gap[sizeof(s->shards->shard)];

    if ((s->shards = calloc(n + 1, sizeof(*s->shards))) == NULL)
        return -1;
    s->nshards = n;
    /* slots no node serves (a cluster with cluster-require-full-coverage
     * no) are a shard down, not an empty one: their locks are unknown, the
     * view before's kept last known (carry.c; a freshness trial) */
    if (cluster_uncovered(topo, gap, sizeof(gap)) > 0) {
        snprintf(s->shards[n].shard, sizeof(s->shards[n].shard), "%s", gap);
        snprintf(s->shards[n].node, sizeof(s->shards[n].node), "none");
        snprintf(s->shards[n].err, sizeof(s->shards[n].err), "no node serves slots %s "
                 "(CLUSTER SHARDS names none): their locks are unknown", gap);
        s->nshards = n + 1;
    }
    for (i = 0; i < n; i++) {
        struct snap_shard *sh = &s->shards[i];

        snprintf(sh->shard, sizeof(sh->shard), "%s", topo->shards[i].ranges);
        snprintf(sh->node, sizeof(sh->node), "%s:%d", st[i].host, st[i].port);
        sh->replica = st[i].readonly;
        sh->ok = !st[i].failed;
        sh->keys = st[i].keys;
        sh->duration_s = st[i].duration_s;
        sh->server = st[i].server;
        if (st[i].failed)
            snprintf(sh->err, sizeof(sh->err), "%s", st[i].err[0] ? st[i].err : "scan failed");
    }
    return 0;
}

struct snapshot *
run_begin(struct run *r, struct scanner *sc, const struct target_conf *t,
          const struct scan_rules *rules, const atomic_int *stop)
{
    struct snapshot *s;

    memset(r, 0, sizeof(*r));
    r->sc = sc;
    r->t = t;
    r->rules = rules;
    r->stop = stop;
    r->start_mono = clock_mono_ms();
    for (size_t i = 0; i < sizeof(r->lease_rows) / sizeof(r->lease_rows[0]); i++)
        r->lease_rows[i] = -2;
    s = snapshot_new(sc->name);
    if (s == NULL)
        return NULL;
    r->snap = s;
    s->started_ms = clock_now_ms();
    /* States are judged against the time the run started, so one run is
     * one consistent picture. */
    r->now_ms = s->started_ms;
    r->classes = class_set_new();
    /* the classes of the view before keep their places (lockclass.h) */
    if (r->classes != NULL && sc->last_view != NULL &&
        class_set_prefer(r->classes, sc->last_view->classes, sc->last_view->nclasses) == -1) {
        class_set_free(r->classes);
        r->classes = NULL;
    }
    if (rules->redlock_map)
        r->rmap = redlock_map_new();
    if (r->classes == NULL || (rules->redlock_map && r->rmap == NULL)) {
        class_set_free(r->classes);
        redlock_map_free(r->rmap);
        snapshot_unref(s);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    return s;
}

/* A reload that changed the address, mode or credentials (or the first
 * run): no connection or discovery hint made the old way is reused. */
static void
check_conn_key(struct scanner *sc, const struct target_conf *t)
{
    if (conn_key(t) == sc->conn_key)
        return;
    scanner_disconnect(sc);
    redisconn_silent_clear(&sc->silent);
    lost_forget(sc);            /* another server by config is no failover */
    free(sc->known);
    sc->known = NULL;
    sc->nknown = 0;
    sc->sentinel_first = 0;
    sc->fail_next[0] = '\0';
    sc->conn_key = conn_key(t);
}

/* The pass was asked to stop: nothing to publish, and the connections
 * cannot be reused (replies may still be in flight). */
static void
pass_stopped(struct run *r, struct stream *st, size_t nst, struct cluster_topo *topo)
{
    size_t i;

    for (i = 0; i < nst && r->t->mode == TARGET_CLUSTER; i++)
        if (st[i].c != NULL)
            redisFree(st[i].c);
    scanner_disconnect(r->sc);
    scanned_hooks(r, NULL, NULL);
    free(st);
    cluster_topo_clear(topo);
    class_set_free(r->classes);
    redlock_map_free(r->rmap);
    helperkeys_finish(r, false);
    pthread_mutex_destroy(&r->mu);
    snapshot_unref(r->snap);
}

/* The streams' counts into the scanner's counters and the snapshot. */
static void
add_counts(struct scanner *sc, struct snapshot *s, const struct stream *st, size_t nst)
{
    size_t i, k;

    for (i = 0; i < nst; i++) {
        sc->counters.keys_total += st[i].keys;
        sc->counters.vanished_total += st[i].cnt.vanished_total;
        sc->counters.moved_total += st[i].cnt.moved_total;
        sc->counters.asking_total += st[i].cnt.asking_total;
        s->keys_moved += st[i].cnt.moved_total;
        sc->counters.truncated_total += st[i].cnt.truncated_total;
        sc->counters.duplicates_total += st[i].cnt.duplicates_total;
        sc->counters.helpers_total += st[i].cnt.helpers_total;
        for (k = 0; k < SCAN_READ_KINDS; k++)
            sc->counters.read_errors[k] += st[i].cnt.read_errors[k];
        for (k = 0; k < REDISCONN_CLOSED_COUNT; k++)
            sc->counters.reconnects[k] += st[i].cnt.reconnects[k];
        s->keys_examined += st[i].keys;
    }
}

/* After the streams, what completes the retained locks: the registry
 * look-up, the helper keys (those the pass saw, then those outside the
 * patterns), then the waiters (after the formats the helpers give).
 * false with r->err set on ENOMEM. */
static bool
complete_locks(struct run *r, struct stream *st, size_t nst, const struct cluster_topo *topo,
               bool ok)
{
    if (ok && registry_lookup(r, st, nst, topo) == -1) {
        run_err(r, "out of memory in the registry look-up");
        ok = false;
    }
    helperkeys_finish(r, ok);
    if (ok && helperkeys_probe(r, st, nst, topo) == -1) {
        run_err(r, "out of memory probing helper keys");
        ok = false;
    }
    if (ok && waiters_lookup(r, st, nst, topo) == -1) {
        run_err(r, "out of memory in the waiters look-up");
        ok = false;
    }
    return ok;
}

/* Did the streams read the target?  A single node's failure is the
 * target's (*retry when a Sentinel target lost a connection that predates
 * the pass); a cluster's shards say each for itself, and all of them
 * failing is the target's.  *nok gets the streams that did not fail. */
static bool
streams_verdict(struct run *r, const struct cluster_topo *topo, struct stream *st, size_t nst,
                bool had_conn, size_t *nok, bool *retry)
{
    struct snapshot *s = r->snap;
    size_t i;

    for (i = 0, *nok = 0; i < nst; i++)
        if (!st[i].failed)
            (*nok)++;
    if (r->t->mode != TARGET_CLUSTER) {
        if (!st[0].failed)
            return true;
        run_err(r, "%s", st[0].err[0] ? st[0].err : "scan failed");
        *retry = r->t->mode == TARGET_SENTINEL && had_conn && st[0].conn_lost;
        return false;
    }
    if (record_shards(s, topo, st, nst) == -1) {
        run_err(r, "out of memory");
        return false;
    }
    if (*nok == 0) {
        /* a shard that fails marks only itself; all of them is the target */
        run_err(r, "every shard failed; %s: %s", s->shards[0].node, s->shards[0].err);
        return false;
    }
    return true;
}

/* The end of a pass that was not stopped: a good one's snapshot finished
 * (and the tracker swept when it saw everything), a failed one's emptied
 * with its error; the hooks told; the run's state freed. */
static void
pass_end(struct run *r, bool ok, size_t nok, size_t nst, const struct cluster_topo *topo)
{
    struct scanner *sc = r->sc;
    struct snapshot *s = r->snap;
    bool cluster = r->t->mode == TARGET_CLUSTER;

    if (ok) {
        if (record_finish(r) == -1) {
            run_err(r, "out of memory finishing the snapshot");
            ok = false;
        } else if (nok == nst) {
            /* entries of a shard that failed must survive until it is
             * scanned again: sweep only after a pass that saw everything */
            tracker_sweep(sc->tracker, sc->pass, clock_now_ms(), sc->outage ? sc->outage_since_ms : 0);
            sc->looked_ms = r->now_ms;  /* a holder not seen in it came later */
        }
    }
    class_set_free(r->classes);
    if (!ok) {
        /* A failed scan publishes no locks: a half-scanned picture would
         * under-count, and the target is reported down instead. */
        if (!cluster)
            scanner_disconnect(sc);
        while (s->nlocks > 0)
            free(s->locks[--s->nlocks]);
        s->locks_total = 0;
        s->retained_bytes = 0;
        snprintf(s->err, sizeof(s->err), "%s", r->err[0] ? r->err : "scan failed");
        redlock_map_free(r->rmap);
    } else if (r->rmap != NULL && !snapshot_whole(s)) {
        /* a cluster shard unread: its keys are not in the map, and a
         * member that lacks them would read as disagreeing; unknown */
        redlock_map_free(r->rmap);
    } else if (r->rmap != NULL) {
        redlock_map_finish(r->rmap);
        s->redlock = r->rmap;
    }
    s->ok = ok;
    scanned_hooks(r, s, cluster ? topo : NULL);
    pthread_mutex_destroy(&r->mu);
    s->finished_ms = clock_now_ms();
    s->duration_s = (double)(clock_mono_ms() - r->start_mono) / 1000.0;
}

/*
 * One pass over the target.  *retry is set when a Sentinel target lost a
 * connection that predates the pass (a failover cuts the clients of the
 * old primary): the caller may run the pass again at once, resolving the
 * new primary, rather than report the target down.
 */
static struct snapshot *
run_pass(struct scanner *sc, const struct target_conf *t, const struct scan_rules *rules,
         const atomic_int *stop, bool *retry)
{
    struct run r;
    struct snapshot *s;
    struct stream *st = NULL;
    struct cluster_topo topo;
    size_t nst = 0, nok = 0, nst_seen;
    bool had_conn = false, cluster = t->mode == TARGET_CLUSTER;
    bool ok;

    *retry = false;
    memset(&topo, 0, sizeof(topo));
    if ((s = run_begin(&r, sc, t, rules, stop)) == NULL)
        return NULL;
    check_conn_key(sc, t);
    sc->pass++;
    if (sc->pass == 0)
        sc->pass = 1;           /* 0 never marks a visited pass */

    if (cluster) {
        ok = run_cluster(&r, &topo, &st, &nst) == 0;
    } else if ((st = calloc(1, sizeof(*st))) == NULL) {
        run_err(&r, "out of memory");
        ok = false;
    } else {
        nst = 1;
        ok = run_single(&r, st, &had_conn) == 0;
        if (ok) {
            snprintf(s->node, sizeof(s->node), "%s:%d", sc->host, sc->port);
            s->server = st->server;
            sc->server = st->server;
        }
    }
    if (scan_stopped(&r)) {
        pass_stopped(&r, st, nst, &topo);
        return NULL;
    }
    add_counts(sc, s, st, nst);
    ok = complete_locks(&r, st, nst, cluster ? &topo : NULL, ok);
    if (ok)
        ok = streams_verdict(&r, &topo, st, nst, had_conn, &nok, retry);
    else
        nok = 0;
    /* slots no node serves: one shard more, never read (nothing swept) */
    nst_seen = ok && cluster && s->nshards > nst ? nst + 1 : nst;
    if (ok && cluster && nok < nst_seen && carry_failed_shards(&r, &topo) == -1) {
        run_err(&r, "out of memory carrying the last-known locks of a shard that failed");
        ok = false;
    }
    if (cluster)
        keep_conns(sc, st, nst);
    pass_end(&r, ok, nok, nst_seen, &topo);
    if (s->ok)
        lost_compare(sc, s, cluster ? &topo : NULL);
    free(st);
    cluster_topo_clear(&topo);
    return s;
}

void
scanner_fail_next(struct scanner *sc, const char *why)
{
    snprintf(sc->fail_next, sizeof(sc->fail_next), "%s", why);
}

struct snapshot *
scanner_run(struct scanner *sc, const struct target_conf *target,
            const struct scan_rules *rules, const atomic_int *stop)
{
    const struct redisconn_scope *prev;
    struct snapshot *s;
    bool retry;

    sc->scope.deadline_ms = clock_deadline(target->scan_timeout_ms);
    sc->scope.idle_ms = target->command_timeout_ms;
    sc->scope.stop = stop;
    sc->silent.keep_ms = target->scan_interval_ms + target->command_timeout_ms;
    snprintf(sc->scope.what, sizeof(sc->scope.what), "scan_timeout (%lld ms)",
             (long long)target->scan_timeout_ms);
    /* ask again what the pass before found silent, not what the reads
     * since (follow mode's check, the audit tail) found */
    redisconn_silent_forget(&sc->silent);
    prev = redisconn_scope_enter(&sc->scope);
    s = run_pass(sc, target, rules, stop, &retry);
    if (s != NULL && !s->ok && retry) {
        /* a failover cut the old primary's clients: the next primary is
         * one sentinel question away, so scan it now instead of
         * reporting the target down until the next interval (a primary
         * that went silent is not waited for again: sc->silent) */
        snapshot_unref(s);
        s = run_pass(sc, target, rules, stop, &retry);
    }
    redisconn_scope_leave(prev);
    redisconn_silent_turn(&sc->silent);      /* the next pass asks them again */
    if (s == NULL)
        return NULL;
    if (s->ok)
        sc->counters.scans_ok++;
    else
        sc->counters.scans_error++;
    s->counters = sc->counters;
    lost_stamp(sc, s, true);
    (void)scanner_stamp_nodes(sc, s);     /* none on ENOMEM: the URL's node alone */
    if (sc->hooks.stamp != NULL)
        sc->hooks.stamp(sc->hooks_arg, s);
    return s;
}
