/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * graph.h - the wait-for graph: deadlocks between lock holders, and
 * lock-order inversions (docs/alerts.md "LockDeadlock", "LockOrderInversion").
 *
 * Once per pass (the agent's alert tick, about once a second) graph_pass()
 * draws the graph over the newest snapshot of every target and the
 * (owner, key) pairs of the waiting table (waiting.h):
 *
 *   nodes  parties that hold and wait: an owner of the line protocol
 *          (docs/line-protocol.md "Owners and holder ids"), or where no
 *          owner is known a holder id as Redis shows it (Redisson's
 *          `<uuid>:<tid>`).  A holder id that a pair of the table names
 *          on a key is that pair's owner on that key (hand-written locks
 *          write one constant for every owner), so a Java process that
 *          reports and the Redisson hash field it holds are one node;
 *          only ids unique by construction (Redisson's, liblockwatch's
 *          tokens) are tied across keys (gindex_owner_of);
 *   edges  waiter -> holder, labelled with the lock: from every fair queue
 *          the scanner read (redisson_lock_queue:{K}: each queued
 *          `<uuid>:<tid>` waits for each holder of K), and from every pair
 *          that is waiting now (its owner waits for each holder the
 *          snapshots show for its key, on any target; a key no snapshot
 *          can vouch for is held by the owners whose pairs acquired it
 *          and have not released it).  A snapshot vouches for a key its
 *          target's patterns take (not excluded) when it is ok, complete
 *          (every lock kept in detail, every shard read) and newer than
 *          the acquire (follow mode's current view, or a scan begun after
 *          the pair's line): a key every target that takes it vouches for,
 *          absent from them all, is held by nobody, whatever stale pairs
 *          say (a lock released by on-call, or expired, sends no `hold`).
 *
 * A cycle (cycles.h: one per strongly connected set) is a deadlock when it
 * was found in two passes in a row and every edge that came from a target
 * that scans (not following keyspace notifications) comes from a newer
 * scan than at its first sighting, and every edge of reporters' lines on
 * a key such a target's patterns take waits for a scan of each begun
 * after its first sighting (which vouches the key gone, if it is): for a
 * scanning target that is two scans, for a following one or for lines on
 * keys no scanning target takes two passes.  A
 * deadlock pushes one EVENT_DEADLOCK when confirmed, and is reported until
 * a pass no longer finds it.  Its breaker is the lock whose release
 * breaks it with the least loss: the youngest hold in it (the least work
 * to redo), ties to the first in cycle order.
 *
 * Lock orders: each pass, an owner that holds a key (a pair that acquired
 * and has not released, and whose key the snapshots do not vouch gone, as
 * for the edges above) while it waits for, or later acquired, a key of
 * another class teaches "class A held while acquiring class B", kept with
 * its site (owner, both keys) in a table of GRAPH_ORDERS_MAX pairs
 * (least recently seen evicted, counted), forgotten GRAPH_ORDER_KEEP_MS
 * after it was last seen.  When both A->B and B->A are known from
 * different owners the pair is an inversion (at most GRAPH_INVERSIONS_MAX
 * kept): one EVENT_INVERSION when found, reported until one of its orders
 * is forgotten.  Holds shorter than a pass may go unseen: the table is
 * read once a pass, not on every line.
 *
 * A report also lists the pass's edges, deadlocked or not (who waits for
 * whom now, on which lock), the waits behind the oldest holdings first.
 * Bounded: the graph's caps (cycles.h), GRAPH_QUEUE_IDS queue members a
 * lock (collectors/scan/waiters.c), GRAPH_DEADLOCKS_MAX deadlocks and
 * GRAPH_WAITS_MAX edges a report; what is cut is counted in the report's
 * stats (the edges listed against waits_total).
 *
 * Thread safety: graph_pass() is for one thread (the agent's main
 * thread); a report is immutable and reference counted, readable from any
 * thread.
 */
#ifndef LOCKWATCH_GRAPH_H
#define LOCKWATCH_GRAPH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/graph/cycles.h"
#include "collectors/locks/lockclass.h"
#include "collectors/locks/snapshot.h"
#include "collectors/waits/waitstats.h"
#include "conf/config.h"

#define GRAPH_DEADLOCKS_MAX   64        /* deadlocks in one report */
#define GRAPH_WAITS_MAX       256       /* edges listed in one report (who
                                         * waits for whom now, the oldest
                                         * holdings first) */
#define GRAPH_CANDIDATES_MAX  256       /* cycles tracked between passes */
#define GRAPH_ORDERS_MAX      1024      /* lock orders learnt */
#define GRAPH_INVERSIONS_MAX  64        /* inversions kept */
#define GRAPH_ORDER_KEEP_MS   (60 * 60 * 1000)  /* an order not seen for this long goes */
#define GRAPH_KEY_MAX         1024      /* key bytes kept in a report */
#define GRAPH_NAME_MAX        256       /* holder / owner bytes kept in a report */
#define GRAPH_HOLDER_ID_MAX   512       /* holder id bytes kept (LW1_HOLDER_MAX) */
#define GRAPH_CROSS_TARGET    "*"       /* the target label of a deadlock whose
                                         * locks are on several targets, or
                                         * known only from reporters */

/* A target as a pass reads it. */
struct graph_target {
    const char *name;
    const struct snapshot *snap;        /* newest, or NULL */
    const struct target_conf *conf;     /* its patterns: a key they take that its
                                         * snapshot lacks is not held there;
                                         * NULL: unknown, its snapshot vouches
                                         * for no key it lacks */
};

/* Bytes cut to a bound; valid UTF-8 or not (renderers sanitise). */
struct graph_bytes {
    char *p;                            /* malloc'd, NUL after len bytes */
    size_t len;
    bool cut;                           /* the original was longer */
};

/* One step of a deadlock: waiter waits for lock key, which holder holds. */
struct graph_step {
    struct graph_bytes waiter, holder, key;
    struct graph_bytes holder_id;       /* the Redis holder id of holder's holding
                                         * of key (the value, the hash field, the
                                         * token: what `lockctl release --holder`
                                         * takes; holder is its owner, a node):
                                         * the one the snapshot showed, or the
                                         * `waiting ... ok` line's.  len 0: not
                                         * known (a line with "-"); cut: longer
                                         * than the snapshot or the report kept */
    char target[CONFIG_NAME_MAX + 1];   /* "" when only reporters know the lock */
    char unconfirmed[CONFIG_NAME_MAX + 1];  /* a target whose patterns take the
                                         * key but whose newest snapshot is not
                                         * whole (its scan failed, a shard not
                                         * read, capped): the holding is only
                                         * the holders' own lines' word; "" none */
    char klass[CLASS_NAME_MAX];
    const char *source;                 /* "fair-queue" or "waiting" */
    int64_t held_since_ms;              /* Unix ms the holder was first seen
                                         * holding it; 0 unknown */
};

struct graph_deadlock {
    uint64_t id;                        /* the same cycle has the same id */
    char target[CONFIG_NAME_MAX + 1];   /* its one target, or GRAPH_CROSS_TARGET;
                                         * as when it was confirmed, for its life */
    struct graph_step steps[CYCLE_LEN_MAX];
    size_t nsteps;
    size_t breaker;                     /* the step whose lock to release */
    int64_t since_ms;                   /* Unix ms of its first sighting */
    int64_t confirmed_ms;               /* Unix ms it was confirmed */
};

/* Where an order was seen: owner held held_key while acquiring wanted_key. */
struct graph_site {
    struct graph_bytes owner, held_key, wanted_key;
    int64_t seen_ms;                    /* Unix ms first seen */
};

struct graph_inversion {
    uint64_t id;
    char class_a[CLASS_NAME_MAX], class_b[CLASS_NAME_MAX];   /* a < b bytewise */
    struct graph_site ab, ba;           /* a held while acquiring b, and the reverse */
    int64_t since_ms;                   /* Unix ms found */
};

struct graph_stats {
    uint64_t passes;
    size_t nodes, edges;                /* of the last pass */
    size_t candidates;                  /* cycles of the last pass not (yet) confirmed */
    size_t orders;                      /* lock orders known */
    uint64_t nodes_dropped, edges_dropped, cycles_cut;  /* since start */
    uint64_t candidates_dropped, deadlocks_dropped;      /* since start */
    uint64_t orders_evicted, inversions_dropped;        /* since start */
    uint64_t deadlocks_total, inversions_total;         /* found since start */
};

struct graph_report {
    pthread_mutex_t ref_mu;
    int refs;
    int64_t at_ms;                      /* Unix ms of its pass */
    struct graph_deadlock *deadlocks;
    size_t ndeadlocks;
    struct graph_inversion *inversions;
    size_t ninversions;
    struct graph_step *waits;           /* the pass's edges, deadlocked or not:
                                         * those of the oldest holdings (unknown
                                         * ages last), at most GRAPH_WAITS_MAX */
    size_t nwaits, waits_total;         /* listed, and edges in all */
    struct graph_stats stats;
};

struct graph;

/* NULL on ENOMEM; graph_free(NULL) is fine. */
struct graph *graph_new(void);
void graph_free(struct graph *g);

/*
 * One pass over targets (every configured one) and the waiting table of
 * ws (NULL: no sample ingest), classes from rules (the config's [classes]).
 * now_ms Unix, mono_ms monotonic.  Pushes the events of what it finds.
 * Returns the new report (one reference for the caller), or NULL on ENOMEM
 * (then nothing changed).
 */
struct graph_report *graph_pass(struct graph *g, const struct graph_target *targets,
                                size_t ntargets, struct waitstats *ws,
                                const struct class_rule *rules, size_t nrules,
                                int64_t now_ms, int64_t mono_ms);

/* The newest report (a new reference); before the first pass an empty
 * one (at_ms 0). */
struct graph_report *graph_latest(struct graph *g);

void graph_report_ref(struct graph_report *r);
void graph_report_unref(struct graph_report *r);     /* NULL is fine */

/* Confirmed deadlocks whose target label is target (GRAPH_CROSS_TARGET
 * for the cross-target ones). */
size_t graph_report_count(const struct graph_report *r, const char *target);

#endif
