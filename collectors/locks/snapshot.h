/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * snapshot.h - the immutable result of one full scan of one target.
 *
 * A scan builds a snapshot privately and publishes it with one pointer
 * swap; readers (HTTP, --once, later the rules) take a reference and
 * render from it while the next scan builds the next one.  Nobody writes
 * to a published snapshot.
 *
 * A snapshot counts every lock (per-class statistics) but keeps the
 * details — key bytes, holders, identity — only for the worst
 * SNAP_RETAIN_MAX locks, within SNAP_RETAIN_BYTES.  Memory therefore does
 * not grow with the keyspace: a million healthy locks cost their class
 * counters and the tracker's 24 bytes each, not a copy of every key (and
 * while the next scan builds, the previous snapshot is still alive, so a
 * full copy would cost twice).  What is not kept is counted.
 */
#ifndef LOCKWATCH_SNAPSHOT_H
#define LOCKWATCH_SNAPSHOT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/formats/formats.h"
#include "collectors/redis/cluster.h"
#include "collectors/redis/conn.h"
#include "collectors/redis/serverinfo.h"

/* Lock states (a lock can be in several). */
#define LOCK_HELD            0x01
#define LOCK_LEAKED          0x02
#define LOCK_LONG            0x04
#define LOCK_REENTRANT_HIGH  0x08
#define LOCK_BAD (LOCK_LEAKED | LOCK_LONG | LOCK_REENTRANT_HIGH)

/* snap_lock.flags */
#define SNAP_KEY_TRUNCATED     0x01   /* key longer than SNAP_KEY_MAX */
#define SNAP_VALUE_TRUNCATED   0x02   /* value/fields cut by the read caps */
#define SNAP_MODE_READ         0x04
#define SNAP_MODE_WRITE        0x08
#define SNAP_WAITERS_KNOWN     0x10   /* waiters was looked up (waiters.c) */
#define SNAP_WAITERS_QUEUE     0x20   /* ... and is a fair lock's queue length */
#define SNAP_AGE_AT_LEAST      0x80   /* first seen when the agent had looked at
                                       * nothing before: its age, and the time
                                       * it has had no TTL, are lower bounds */
#define SNAP_RENEWED           0x40   /* its TTL went back up while this holder
                                       * held it: renewed (a watchdog, an
                                       * extension), so the holder is alive */

#define SNAP_KEY_MAX       (128 * 1024)       /* key bytes kept per lock */
#define SNAP_RETAIN_MAX    10000              /* locks kept in detail */
#define SNAP_RETAIN_BYTES  (32u * 1024 * 1024)
#define FORMATS_MAX        24                 /* bound on formats_count */
#define SNAP_QUEUE_IDS     16                 /* fair-queue waiters kept per lock */
#define SNAP_ERR_MAX       512                /* a failed scan's reason: room for
                                               * 3 sentinels' answers */

struct snap_holder {
    const char *id;                   /* id_len bytes, NUL after them */
    uint16_t id_len;
    uint16_t truncated;
    int64_t count;
};

/* One lock.  Retained locks are single allocations owning their bytes;
 * a candidate handed to snapshot_offer() points into the scan's buffers. */
struct snap_lock {
    const char *key;                  /* key_len bytes, NUL after them */
    char *host;                       /* host_len bytes (0: unknown); in a
                                       * retained lock a HOST_MAX area */
    struct snap_holder *holders;
    uint32_t key_len;
    uint32_t holders_total;
    uint16_t nholders;                /* kept, <= HOLDERS_MAX */
    uint16_t class_idx;
    uint8_t format;                   /* index into formats_table */
    uint8_t states;
    uint8_t flags;
    uint8_t host_len;
    uint8_t format_source;            /* enum fmt_source (formats.h) */
    bool format_contradicts;          /* declared, the value is not that */
    bool renewed_since_outage;        /* SNAP_RENEWED, and renewed again since
                                       * the scanner's last outage (tracker.h
                                       * tracker_outage()): its TTL shows how
                                       * low its holder lets it run, not how
                                       * long the outage drained it */
    int32_t pid;                      /* 0 unknown */
    int64_t thread;                   /* -1 unknown */
    int64_t max_count;
    int64_t pttl_ms;                  /* -1 no TTL */
    int64_t first_seen_ms;            /* Unix ms, current holder */
    int64_t settled_ms;               /* Unix ms since the holding is proven
                                       * unbroken (tracker.h): first_seen_ms,
                                       * or the last read that found its
                                       * lease set again */
    int64_t nottl_since_ms;           /* Unix ms since the key has had no
                                       * TTL; 0 while it has one */
    int64_t acquired_ms;              /* Unix ms from the format; 0 unknown */
    int64_t expires_ms;               /* Unix ms its TTL runs out, counted
                                       * from its read; 0: no TTL */
    uint32_t helper_keys;             /* helper keys of this lock seen in
                                       * the scan (formats_helper()) */
    uint32_t waiters;                 /* clients waiting, where Redis shows
                                       * it (SNAP_WAITERS_KNOWN) */
    char *queue;                      /* the first SNAP_QUEUE_IDS members of its
                                       * fair queue (waiters.c), for the
                                       * wait-for graph: nqueue ids, each
                                       * NUL-terminated, back to back, each at
                                       * most HOLDER_ID_MAX bytes; NULL: none.
                                       * Its own allocation, freed with the
                                       * snapshot */
    uint16_t nqueue;
    size_t bytes;                     /* size of the allocation */
    bool first_sight;                 /* taken since the last scan saw the
                                       * key (a new key or a new holder):
                                       * counted in created, its TTL in the
                                       * class's lease figures */
    int64_t stale_since_ms;           /* a last-known lock of a cluster shard
                                       * this scan could not read, carried
                                       * from the view before (scan/carry.c):
                                       * Unix ms its shard went stale; 0: read
                                       * by this scan */
};

/* The bounds of the lease histogram (lockwatch_lease_seconds), in ms and
 * as `le` label text; a lease above the last is counted past it. */
#define SNAP_LEASE_NBOUNDS 16
extern const int64_t snap_lease_bounds_ms[SNAP_LEASE_NBOUNDS];
extern const char *const snap_lease_bounds_le[SNAP_LEASE_NBOUNDS];

struct snap_class {
    uint64_t locks[FORMATS_MAX];      /* by format index */
    uint64_t total;
    uint64_t leaked;
    uint64_t long_held;
    uint64_t reentrant_high;
    int64_t oldest_ms;                /* oldest holder age; 0 when none */
    int64_t max_reentrancy;
    uint64_t waiters;                 /* of the retained locks whose
                                       * waiters are known */
    /* Locks at first sight in this scan (snap_lock.first_sight): how many,
     * and the TTLs of those that had one ("the lease": the TTL a lock
     * carries when first seen), per bound of snap_lease_bounds_ms (not
     * cumulative; the last slot is past the last bound) and the largest. */
    uint64_t created;
    /* Locks seen before (not at first sight), renewed while held
     * (SNAP_RENEWED), with a TTL: how many, the longest age + TTL (a lock
     * that outlives every lease: a watchdog) and the shortest TTL (how low
     * its renewals let it run). */
    uint64_t held_ttl_n;
    int64_t span_max_ms;
    uint64_t held_low_n;              /* of them renewed_since_outage: the
                                       * shortest TTL is theirs */
    int64_t held_min_pttl_ms;
    uint64_t lease_n;
    double lease_sum_ms;
    int64_t lease_max_ms;
    uint32_t lease_bucket[SNAP_LEASE_NBOUNDS + 1];
};

/*
 * The kinds of error reply that refuse a read of a key's type or value
 * (TYPE, HLEN, GETRANGE, HSCAN), by Redis's error code: the kind label of
 * lockwatch_scan_read_errors_total.  WRONGTYPE (the key changed type) and
 * cluster redirections (its slot moved) are not refusals.  A code not in
 * the table is "other", so the label stays bounded.
 */
#define SCAN_READ_ERRORS(X)                                                 \
    X(NOPERM, "NOPERM")             /* the ACL user may not run it */       \
    X(NOAUTH, "NOAUTH")             /* not authenticated */                 \
    X(LOADING, "LOADING")           /* Redis is loading its dataset */      \
    X(BUSY, "BUSY")                 /* a script or function runs */         \
    X(MASTERDOWN, "MASTERDOWN")     /* a replica lost its primary */        \
    X(CLUSTERDOWN, "CLUSTERDOWN")   /* the cluster cannot serve */          \
    X(ERR, "ERR")                   /* Redis's generic error */             \
    X(OTHER, "other")

enum scan_read_error {
#define X(id, name) SCAN_READ_##id,
    SCAN_READ_ERRORS(X)
#undef X
    SCAN_READ_KINDS
};

/* The kind's label value ("NOPERM", ..., "other"). */
const char *scan_read_error_name(enum scan_read_error k);

/* The kind of an error reply's text (len bytes at str): its first word. */
enum scan_read_error scan_read_error_of(const char *str, size_t len);

/*
 * Why locks were lost at a change of server (collectors/scan/lost.c): the
 * cause label of lockwatch_locks_lost_total, a bounded set.  A run_id that
 * changed on the same address is a restart; another address serving the
 * target (a Sentinel or Cluster failover) is a failover; FLUSHDB or
 * FLUSHALL calls (or their counts reset) on the same server are a flush,
 * SWAPDB calls a swapdb.  The name, and how a text says the change: "a
 * restart of N", "a failover to N (was M)", "a SWAPDB on N".
 */
#define LOST_CAUSES(X)                                                      \
    X(RESTART, "restart", "a restart", "of")                                \
    X(FAILOVER, "failover", "a failover", "to")                             \
    X(FLUSH, "flush", "a flush", "of")                                      \
    X(SWAPDB, "swapdb", "a SWAPDB", "on")

enum lost_cause {
#define X(id, name, words, prep) LOST_##id,
    LOST_CAUSES(X)
#undef X
    LOST_CAUSE_COUNT
};

/* Cumulative per-target counters, carried from scan to scan. */
struct scan_counters {
    uint64_t scans_ok;
    uint64_t scans_error;
    uint64_t keys_total;              /* keys examined, all scans */
    uint64_t vanished_total;          /* keys gone between SCAN and read */
    uint64_t moved_total;             /* of those, keys the node SCAN found
                                       * them on said had moved (MOVED, ASK:
                                       * a slot moving between shards) */
    uint64_t asking_total;            /* keys read after ASKING on a node
                                       * importing their slot (stream.c),
                                       * and follow mode's re-reads an ASK
                                       * led to */
    uint64_t truncated_total;         /* values/fields cut by the caps */
    uint64_t duplicates_total;        /* keys SCAN returned twice in a pass */
    uint64_t helpers_total;           /* helper keys seen (not locks) */
    uint64_t waiter_errors_total;     /* waiter look-ups refused (waiters.c) */
    uint64_t read_errors[SCAN_READ_KINDS];  /* reads refused, by kind */
    uint64_t lost_total[LOST_CAUSE_COUNT];  /* locks lost at a change of
                                             * server, by cause */
    uint64_t reconnects[REDISCONN_CLOSED_COUNT];    /* kept connections found
                                                     * closed by their peer
                                                     * (an idle timeout, a
                                                     * CLIENT KILL) and opened
                                                     * again, by reason */
};

#define LOST_LIST_MAX    25           /* lost locks named, oldest hold first */
#define LOST_KEY_MAX     160          /* key bytes kept per named lock */
#define LOST_HOLDER_MAX  96           /* holder bytes kept per named lock */

struct snap_lost_lock {
    char key[LOST_KEY_MAX];           /* key_len bytes, not NUL-terminated */
    char holder[LOST_HOLDER_MAX];     /* holder_len bytes; 0: none known */
    uint16_t key_len, holder_len;
    bool key_cut, holder_cut;
    bool taken;                       /* there after, by another holder */
    int64_t first_seen_ms;            /* its holder's hold began (Unix ms) */
};

/* The last loss of locks at a change of server: what the last view before
 * the change held and the first complete view after did not (or held by
 * another holder), their TTL not run out.  Carried from snapshot to
 * snapshot of the target; at_ms 0: none yet. */
struct snap_lost {
    int64_t at_ms;                    /* Unix ms the view after was made */
    int64_t before_ms;                /* Unix ms of the view before */
    uint8_t cause;                    /* enum lost_cause */
    char was[280], now[280];          /* the node before and after */
    uint64_t count;                   /* locks lost */
    uint64_t compared;                /* locks of the view before compared */
    uint64_t released;                /* of them gone, but released as their
                                       * holders reported (not lost) */
    bool partial;                     /* the view before kept fewer locks
                                       * in detail than it counted */
    uint32_t nlisted;                 /* listed[] used, oldest hold first */
    struct snap_lost_lock listed[LOST_LIST_MAX];
};

/* One cluster shard's part of a scan (bounded by the shard count). */
struct snap_shard {
    char shard[64];                   /* its slot ranges, "0-5460" */
    char node[280];                   /* "host:port" scanned */
    bool replica;                     /* scanned a replica (scan_replicas) */
    bool ok;
    char err[256];                    /* why not, when !ok */
    uint64_t keys;                    /* examined on this shard */
    double duration_s;
    struct server_id server;          /* its node's identity (serverinfo.h),
                                       * read at the start of the pass */
    /* !ok: its part of the view is the last known (scan/carry.c) */
    int64_t stale_since_ms;           /* Unix ms of the first pass since its
                                       * last read that failed to read it */
    int64_t last_success_ms;          /* the last proof of freshness of a
                                       * view that read it; 0: none known */
    uint64_t carried;                 /* its last-known locks carried */
};

/* Follow mode (keyspace notifications between full scans), per target;
 * all zero for a target that scans. */
struct snap_follow {
    bool active;                      /* following when this was published */
    bool from_events;                 /* published from events, not a scan */
    uint64_t events_total;            /* notifications received */
    uint64_t fixed_total;             /* keys full scans found changed
                                       * without an event */
    uint64_t overflows_total;         /* pending-set caps hit (each: a scan) */
    uint64_t reconciles_total;        /* full scans while following */
    uint64_t published_total;         /* snapshots made from events: with the
                                       * scan counts, what tells the alert
                                       * rules a snapshot is new */
    double lag_s;                     /* first event to publication, last one */
    bool drift;                       /* reconciles keep finding drift */
    bool lacking;                     /* scanning, though following was
                                       * meant (incremental = on, or a
                                       * notify-keyspace-events someone
                                       * set): the setting lacks a class */
    int64_t behind_since_ms;          /* Unix ms notifications were found
                                       * lost (a pending-set cap, a
                                       * subscription that ended): the view
                                       * may miss changes from then until
                                       * the full scan that repairs it
                                       * publishes; 0 otherwise */
    char note[400];                   /* why not following, or the drift;
                                       * "" when there is nothing to say */
};

/* Since when l's holding is proven unbroken (never before its first sight). */
static inline int64_t
snap_unbroken_ms(const struct snap_lock *l)
{
    return l->settled_ms > l->first_seen_ms ? l->settled_ms : l->first_seen_ms;
}

struct redlock_map;

struct snapshot {
    pthread_mutex_t ref_mu;
    int refs;

    char *target;
    bool ok;
    char err[SNAP_ERR_MAX];           /* why the scan failed, when !ok */
    int64_t started_ms, finished_ms;  /* Unix ms; states are judged at started_ms */
    double duration_s;
    uint64_t keys_examined;           /* this scan */
    uint64_t keys_moved;              /* this scan: keys a node said had
                                       * moved, even after ASKING, perhaps
                                       * read nowhere (a resharding): the
                                       * view may lack them */
    struct scan_counters counters;

    /* Retained locks: a min-heap (least bad at [0]) while the scan runs,
     * worst first after snapshot_finish(). */
    struct snap_lock **locks;
    size_t nlocks, locks_cap;
    size_t retained_bytes;
    uint64_t locks_total;             /* every lock counted */
    uint64_t format_contradictions;   /* locks whose value is not the format
                                       * format_patterns declare (this scan) */

    char **classes;                   /* class names; index = class_idx */
    size_t nclasses;
    struct snap_class *class_stats;   /* class_cap entries, nclasses used */
    size_t class_cap;
    uint64_t classes_overflowed;      /* keys counted as "other" by the cap */

    char node[280];                   /* "host:port" scanned (standalone,
                                       * sentinel: the primary); "" for a
                                       * cluster or a failed connect */
    struct snap_shard *shards;        /* cluster only: one per shard */
    size_t nshards;
    struct cluster_node *nodes;       /* cluster only: every node the scanner
                                       * knows as the cluster's (its discovery
                                       * hints), for the release and lockctl
                                       * to find the cluster through */
    size_t nnodes;
    struct server_id server;          /* standalone, sentinel: the node's
                                       * identity, read at the pass's start */
    struct snap_lost lost;            /* the target's last loss at a change
                                       * of server (collectors/scan/lost.c) */
    struct snap_follow follow;
    struct redlock_map *redlock;      /* every lock, compactly, when the
                                       * target is in a [redlock] group;
                                       * else NULL (collectors/locks/redlock.h) */

    /* Freshness, set by the agent when it publishes (agent/agent.c).  A
     * failed scan keeps a reference to the target's last good snapshot,
     * whose locks stay visible marked stale (snapshot_shown()). */
    struct snapshot *last_good;       /* !ok: the last ok snapshot, or NULL */
    int64_t stale_since_ms;           /* !ok: Unix ms of the first failed scan
                                       * since the last good one; 0 when ok */
    int64_t last_success_ms;          /* the last proof of freshness of an ok
                                       * snapshot (this one's when ok): its
                                       * proven_ms, else its finished_ms;
                                       * 0: none yet */
    int64_t proven_ms;                /* Unix ms the view was last proven
                                       * current, when later than finished_ms
                                       * (follow mode's checks between full
                                       * scans); 0: finished_ms is it */
};

/* The snapshot whose locks to show for s: s itself when its scan
 * succeeded, else the last good one it keeps (stale), else NULL. */
static inline const struct snapshot *
snapshot_shown(const struct snapshot *s)
{
    return s == NULL ? NULL : s->ok ? s : s->last_good;
}

struct snapshot *snapshot_new(const char *target);
/* Reference counting; snapshot_unref(NULL) is fine. */
void snapshot_ref(struct snapshot *s);
void snapshot_unref(struct snapshot *s);

/*
 * Count lock l in its class and keep a copy of it if it is among the
 * worst seen so far (rank, then age, decide).  l and what it points to
 * are only read.  -1 on ENOMEM.
 */
int snapshot_add(struct snapshot *s, const struct snap_lock *l, int64_t now_ms);

/* A retained lock's states or first-seen time changed after it was
 * added (the client registry back-dated it): fix it and its class. */
void snapshot_restate(struct snapshot *s, struct snap_lock *l, uint8_t states,
                      int64_t first_seen_ms, int64_t now_ms);

/* A retained lock is a kin of its decoded format (formats_kin()): move
 * it to row format in its class's per-format count.  ttl_optional: that
 * format lives without a TTL by design (a semaphore), so no TTL is no
 * leak: the state and its class count are taken back. */
void snapshot_reformat(struct snapshot *s, struct snap_lock *l, uint8_t format,
                       bool ttl_optional);

/* (snapshot_reformat: a row given by a helper key its client writes
 * is proven, FMT_SOURCE_PROVEN, unless it was declared.) */

/* Give retained lock i other holders (n of them, at most HOLDERS_MAX
 * kept; total counted), as a format given by helper keys knows them (a
 * permit semaphore's permits).  Before snapshot_finish().  -1 on ENOMEM
 * (the lock is left as it was). */
int snapshot_reholder(struct snapshot *s, size_t i, const struct snap_holder *holders, size_t n,
                      uint32_t total);

/* Sort the retained locks worst first; call once at the end. */
void snapshot_finish(struct snapshot *s);

/* Did the scan read every shard (a view that is not a cluster's: its one
 * node)?  A shard that failed leaves its part of the view last known. */
static inline bool
snapshot_whole(const struct snapshot *s)
{
    for (size_t i = 0; i < s->nshards; i++)
        if (!s->shards[i].ok)
            return false;
    return true;
}

/* Did the snapshot keep every lock it counted? */
static inline bool
snapshot_complete(const struct snapshot *s)
{
    return s->nlocks == s->locks_total;
}

/* Worst state for labels: "leaked", "long", "reentrant_high" or "held". */
const char *snapshot_worst_state(uint8_t states);
/* Severity rank used for ordering; higher is worse. */
int snapshot_rank(uint8_t states);
/* Is a worse than b?  (rank, then the older holder) */
bool snapshot_worse(const struct snap_lock *a, const struct snap_lock *b);

#endif
