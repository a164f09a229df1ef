/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scan_impl.h - what the files of the scanner share; internal to
 * collectors/scan/ (nothing outside it includes this).
 *
 * One scanner_run() is a run: the target, its rules, the snapshot being
 * built and what the streams record into together.  A stream is one
 * connection's pass over one Redis node: its pipeline of SCAN / META /
 * VALS segments, its pacing and its counters.
 *
 *   scan.c      the runs by topology, connections kept between scans,
 *               the public API of scan.h
 *   stream.c    the pipelined segment stream and its pacing
 *   record.c    per key: decode, class, track, judge, snapshot
 *   registry.c  the Redisson holders' client-registry look-up
 *   waiters.c   the waiters of each kept lock (fair queues, PUBSUB NUMSUB)
 *   tracker.c   first-seen times across scans (tracker.h)
 *   carry.c     a failed cluster shard's last-known locks
 *   reborn.c    a node that restarted empty: no lock older than its start
 *
 * scanrun.h is what a layer above drives (follow mode, collectors/follow/):
 * the per-key step, the hooks a full scan calls, re-reads and replays.
 *
 * What a run's streams share (the scanner's tracker, the class set, the
 * snapshot, the Redlock map) is guarded by run.mu, taken once per lock
 * recorded; everything in a stream is its own thread's.
 */
#ifndef LOCKWATCH_SCAN_IMPL_H
#define LOCKWATCH_SCAN_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hiredis.h>

#include "collectors/locks/lockclass.h"
#include "collectors/locks/lockstate.h"
#include "collectors/locks/redlock.h"
#include "collectors/redis/cluster.h"
#include "collectors/formats/rawread.h"
#include "collectors/redis/conn.h"
#include "collectors/scan/scan.h"
#include "collectors/scan/scanrun.h"
#include "collectors/scan/tracker.h"

/* A connection kept between scans, by the address it goes to. */
struct node_conn {
    char host[256];
    int port;
    bool readonly;              /* a replica, told READONLY */
    redisContext *c;
};

struct scanner {
    char *name;
    struct tracker *tracker;
    struct scan_counters counters;
    uint32_t pass;
    char seed_note[400];        /* cluster: why not through the URL's node
                                 * (cluster_topo.note), as last logged */
    int64_t looked_ms;          /* start of the last pass that saw every
                                 * node (0: none yet): a holder first seen
                                 * after it took its lock after it
                                 * (lockfacts_corroborate()) */
    atomic_bool reconnect_said; /* a kept connection found closed was
                                 * logged at info once (then at debug) */
    atomic_bool replica_said;   /* a cluster shard read on its primary, its
                                 * replica's link down: at info once */
    atomic_bool info_said;      /* INFO refused (no +info): at info once */
    atomic_bool no_idle;        /* a node's INFO memory named an LFU
                                 * policy at its last pass, or a re-read
                                 * met OBJECT IDLETIME's LFU error since:
                                 * follow mode's re-reads (another thread)
                                 * do not ask for IDLETIME either */
    /* standalone and sentinel: the one connection, and where it goes */
    redisContext *c;
    char host[256];
    int port;
    size_t sentinel_first;      /* sentinel to ask first */
    char fail_next[SNAP_ERR_MAX];   /* follow mode's check found what a
                                     * pass would only wait for again: no
                                     * sentinel answering (scanner_moved():
                                     * their answers), the node silent past
                                     * command_timeout (scanner_fail_next()):
                                     * the next pass fails with it at once */
    /* cluster: connections by node, and the nodes of the last topology
     * (asked when the configured address does not answer) */
    struct node_conn *conns;
    size_t nconns;
    struct cluster_node *known;
    size_t nknown;
    uint64_t conn_key;          /* how the connections were made (conn_key()) */
    struct scan_hooks hooks;    /* scanner_set_hooks(); all NULL without */
    void *hooks_arg;
    struct redisconn_scope scope;   /* the full scan under way: scan_timeout
                                     * from its start and the stop flag, for
                                     * every read of every thread (scan.c) */
    struct redisconn_silent silent; /* nodes found silent (scope.silent):
                                     * not waited for again in the pass */
    /* locks lost at a change of server (lost.c) */
    struct snapshot *last_view; /* the last ok snapshot returned (a full
                                 * scan's or a replay's): the view before */
    struct snapshot *last_whole;    /* the last of them with every cluster
                                     * shard read (else last_view's): the
                                     * view before of a shard that failed */
    int64_t proven_ms;          /* Unix ms the views are proven current up
                                 * to: a full scan's start, or follow mode's
                                 * last freshness proof (scanner_view_proven) */
    struct server_id server;  /* standalone, sentinel: the last pass's node */
    struct snap_lost lost;      /* the last loss, stamped on every snapshot */
    bool outage;                /* a pass failed or a shard went unread
                                 * since the last pass that read every
                                 * shard (lost.c) */
    int64_t outage_since_ms;    /* then: Unix ms its first pass began */
};

/* What the streams of one run share, on the stack of scanner_run. */
struct run {
    struct scanner *sc;
    const struct target_conf *t;
    const struct scan_rules *rules;
    const atomic_int *stop;
    struct snapshot *snap;
    struct class_set *classes;
    struct redlock_map *rmap;   /* NULL unless the target is in a Redlock group */
    struct helper_table *comp;  /* helper keys by their lock (helperkeys.c) */
    int64_t now_ms;             /* the scan's start: every state is judged at it */
    int64_t start_mono;
    pthread_mutex_t mu;         /* guards sc->tracker, classes, snap, rmap */
    char err[SNAP_ERR_MAX];
    bool keeping;               /* the hooks' attach() asked for every key
                                 * recorded (hooks.keep()) */
    int64_t next_due_ms;        /* the earliest Unix ms a lock recorded will
                                 * change state by time alone (0: none) */
    int16_t lease_rows[CLASS_MAX + 1];  /* lease_row() by class index; -2
                                         * not asked yet (record.c) */
};

/* One key of a SCAN batch, once its META replies are read. */
struct key_meta {
    struct scan_key k;          /* its key points into the batch's SCAN reply */
    bool skip;                  /* vanished or unreadable */
    bool unread;                /* skipped because a read was refused (not
                                 * vanished: the pass fails) */
    bool asking;                /* each read of it is preceded by ASKING: its
                                 * node answered MOVED without (it imports
                                 * the key's slot), or an ASK led here */
    bool reread;                /* its META is to be sent again, asking */
};

struct batch {
    redisReply *scan;           /* owns the key strings */
    struct key_meta *meta;
    size_t n, cap;
    bool busy;
    bool idle;                  /* its META asked for OBJECT IDLETIME */
    size_t nreread;             /* keys of its last META to read again,
                                 * asking (key_meta.reread) */
};

#define INFLIGHT_MAX    4       /* batches between SCAN and VALS */

/* SEG_ASKING: the META of a batch's keys its node answered MOVED for,
 * again, each after ASKING (stream.c). */
enum seg_kind { SEG_SCAN, SEG_META, SEG_ASKING, SEG_VALS };

struct segment {
    enum seg_kind kind;
    struct batch *b;
};

/* at most one SCAN plus two segments per batch in flight (a batch has
 * one at a time: its META, ASKING or VALS) */
#define SEG_RING (3 * INFLIGHT_MAX + 4)

/* One connection's scan: one node, its pipeline, its pacing. */
struct stream {
    struct run *r;
    redisContext *c;
    char host[256];             /* for messages */
    int port;
    bool readonly;              /* a cluster replica: send READONLY first */
    const struct cluster_node *primary; /* a replica's shard's primary, read
                                 * instead when the replica's link to it
                                 * is down (the pass's topology) */
    const uint16_t *slot_shard; /* cluster: the pass's slot -> shard table
                                 * (cluster_topo), to tell a key of a slot
                                 * it says no node serves; NULL otherwise */
    bool kept;                  /* c was kept from an earlier pass: its peer
                                 * may have closed it while it waited */
    long max_kps;               /* this stream's share of max_keys_per_second */
    int64_t start_mono;
    int64_t resume_mono;        /* end of the last pacing pause */
    uint64_t keys;              /* examined this run */
    struct scan_counters cnt;   /* vanished, truncated, duplicates, read errors */
    uint64_t refused;           /* value reads refused this pass */
    char refused_err[200];      /* the first of them */
    bool failed;
    bool conn_lost;             /* failed on the connection (not a refusal) */
    bool no_idle;               /* an LFU policy: OBJECT IDLETIME is an
                                 * error there, so it is not asked for */
    char err[256];
    double duration_s;
    struct server_id server;  /* the node's identity, read once connected */
    int64_t born_ms;            /* its start when it restarted empty since
                                 * the view before (reborn.c); 0 not so */

    /* the pipeline */
    struct batch pool[INFLIGHT_MAX];
    size_t inflight;
    struct segment ring[SEG_RING];
    size_t head, count;
    size_t pat;                 /* pattern being scanned */
    char cursor[32];
    bool scan_outstanding;
    bool scan_done;

    /* where read keys go: the per-key step when NULL (scanner_reread()
     * hands them to its caller instead, with their index in the batch) */
    scan_key_fn *on_key;
    void *on_key_arg;
    /* and the keys whose TYPE met MOVED (even after ASKING), ASK or
     * TRYAGAIN (scanner_reread(): the caller follows them); NULL in a
     * pass */
    scan_moved_fn *on_moved;
};

/* ---- scan.c ------------------------------------------------------------------- */

/* snprintf into an error buffer; messages are cut to fit, on purpose. */
void scan_errf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define run_err(r, ...) scan_errf((r)->err, sizeof((r)->err), __VA_ARGS__)
#define stream_err(s, ...) scan_errf((s)->err, sizeof((s)->err), __VA_ARGS__)

/* A kept connection to host:port was found closed by its peer (why) and
 * is opened again: counted in cnt (lockwatch_reconnects_total), logged
 * at info the first time for sc, at debug after; never an alarm. */
void scan_reconnect_noted(struct scanner *sc, struct scan_counters *cnt,
                          enum redisconn_closed why, const char *host, int port);

/* Begin a run of sc over t: *r set up (classes, Redlock map, mutex) with
 * a new snapshot, its start time now.  NULL on ENOMEM. */
/* A discovery's topology: said when it is not read through the URL's node
 * (cluster_topo.note), and its nodes kept as the next one's hints. */
void scanner_cluster_found(struct scanner *sc, const struct cluster_topo *topo);

struct snapshot *run_begin(struct run *r, struct scanner *sc, const struct target_conf *t,
                           const struct scan_rules *rules, const atomic_int *stop);

/* ---- stream.c ----------------------------------------------------------------- */

/* Has the agent asked the run to stop? */
bool scan_stopped(const struct run *r);

/*
 * Stream every pattern of the target through s->c (connected, and
 * READONLY where it must be), recording each key.  0 when the pass is
 * complete; -1 with s->err set (s->conn_lost when the connection failed),
 * or when the run was asked to stop.  The batches are released either way.
 */
int stream_scan(struct stream *s);

/*
 * Read the keys of b (b->meta[i].k.key set, asking when an ASK led to s->c,
 * the rest zeroed) on s->c in two round trips (META, then the values), a
 * third (META again, after ASKING) for keys whose node answered MOVED,
 * handing each key that is there to s->on_key.  0, or -1 with s->err set
 * (s->conn_lost when the connection failed; a refused read is counted in
 * s->cnt and s->refused).
 */
int stream_read_batch(struct stream *s, struct batch *b);

/* Read one reply on s->c: 0, or -1 with s->err set and s->conn_lost. */
int stream_reply(struct stream *s, redisReply **rep);

/* ---- record.c ----------------------------------------------------------------- */

/*
 * Record one lock key of run r whose value was read into raw (hlen: HLEN
 * of a hash, else -1): decode, class, dedupe and time it, judge it, count
 * it in the snapshot and maybe keep it, add it to the Redlock map, and
 * hand it to hooks.keep() when the run is keeping.  Takes run.mu.  0, or
 * -1 on ENOMEM.  (scan_record() of scanrun.h is the step for any key.)
 */
int record_key(struct run *r, const struct scan_key *k, const struct raw_lock *raw,
               long long hlen, struct scan_counters *cnt);

/* The states of l at the scan's time, its holder first seen at
 * first_seen_ms and the key without a TTL since nottl_since_ms (0: it
 * has one). */
uint8_t record_states(const struct run *r, const struct snap_lock *l, int64_t first_seen_ms,
                      int64_t nottl_since_ms);

/* Hand the run's class names to the snapshot and sort it.  0, or -1 on
 * ENOMEM. */
int record_finish(struct run *r);

/* ---- helperkeys.c ------------------------------------------------------------ */

/* Count helper key k (formats_helper()) to its lock.  Takes run.mu.  0,
 * or -1 on ENOMEM. */
int record_helper(struct run *r, const struct scan_key *k, struct scan_counters *cnt);

/* With attach, give every retained lock of the run's snapshot its
 * helper_keys count and the format its helpers prove; free the run's
 * helper table either way.  Call once the streams are done. */
void helperkeys_finish(struct run *r, bool attach);

/* EXISTS the helpers that make a format (fencing counter, fair-lock
 * queue, permits zset) of retained locks when they are outside the
 * target's patterns, and count them.  streams and topo as for
 * registry_lookup(); a stream whose connection fails is marked failed.
 * 0, or -1 on ENOMEM. */
int helperkeys_probe(struct run *r, struct stream *streams, size_t nstreams,
                     const struct cluster_topo *topo);

/* ---- lost.c ------------------------------------------------------------------ */

/*
 * A full pass made s (ok): when the server under the target changed since
 * sc->last_view (s->server, or each shard's in s->shards with topo the
 * pass's cluster topology), compare the locks of the view before with what
 * the pass saw (the tracker, at sc->pass): those gone, or there by another
 * holder, whose TTL had not run out, are lost.  Counts them in
 * sc->counters.lost_total, keeps the loss in sc->lost, logs it and pushes
 * one EVENT_LOST_AT_FAILOVER.
 */
void lost_compare(struct scanner *sc, struct snapshot *s, const struct cluster_topo *topo);

/* Stamp s (any snapshot the scanner returns) with the last loss, and
 * keep it as the view before the next change when it is ok; proven: a
 * full scan's (what it read proves it current as of its start), not a
 * replay's (notifications since the last freshness check: a FLUSHDB
 * notifies no key, so locks taken after one may be in it). */
void lost_stamp(struct scanner *sc, struct snapshot *s, bool proven);
/* The target, or part of it, could not be read by the pass begun at at_ms
 * (lost.c): the outage the renewal lows and the ends of gone locks heed. */
void scanner_outage(struct scanner *sc, int64_t at_ms);

/* Drop the views before (a reload aimed the target elsewhere: the next
 * server is not a change to compare across).  The last loss stays. */
void lost_forget(struct scanner *sc);

/* ---- reborn.c ---------------------------------------------------------------- */

/*
 * Stream s has just read its node's identity (s->server): when the node
 * restarted since the scanner's last whole view (else its last ok view)
 * read it (another run_id at the same address) and INFO persistence says
 * it loaded no data, s->born_ms gets its start (else 0) and it is logged.
 * 0, or -1 when the connection failed (s->err); a refused INFO is 0.
 */
int reborn_check(struct stream *s);

/* The born_ms of the stream that read key (topo NULL: streams[0]); 0
 * when no stream serves its slot. */
int64_t reborn_of(const struct stream *streams, size_t nstreams,
                  const struct cluster_topo *topo, const char *key, size_t keylen);

/* ---- carry.c ----------------------------------------------------------------- */

/*
 * A cluster pass read some shards of topo but not all (r->snap->shards
 * says which): stamp each failed shard with since when its part of the
 * view is stale and when it was last fresh, and add to r->snap, as last
 * known, the locks of the scanner's last view whose slot a failed shard
 * serves (each with its shard's stale_since_ms), unless this pass read
 * the key elsewhere.  Before record_finish().  0, or -1 on ENOMEM.
 */
int carry_failed_shards(struct run *r, const struct cluster_topo *topo);

/* ---- registry.c --------------------------------------------------------------- */

/*
 * Look up the client registry of every retained Redisson-format lock and
 * back-date (and judge again) the locks it knows better.  streams are the
 * run's (one per shard in a cluster, in topology order); topo is NULL
 * outside a cluster.  A stream whose look-up fails is marked failed.
 * 0, or -1 on ENOMEM.
 */
int registry_lookup(struct run *r, struct stream *streams, size_t nstreams,
                    const struct cluster_topo *topo);

/* ---- waiters.c ---------------------------------------------------------------- */

/*
 * Look up how many wait for every retained lock (a Redisson fair lock's
 * queue length, PUBSUB NUMSUB of a wake channel) and sum them per class.
 * streams and topo as for registry_lookup().  A stream whose connection
 * fails is marked failed; error replies are counted, never fatal.  0, or
 * -1 on ENOMEM.
 */
int waiters_lookup(struct run *r, struct stream *streams, size_t nstreams,
                   const struct cluster_topo *topo);

#endif
