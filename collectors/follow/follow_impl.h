/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * follow_impl.h - what the files of follow mode share; internal to
 * collectors/follow/.
 *
 *   follow.c      attaching to a full scan, what a reconcile fixed, the
 *                 follow loop
 *   followsub.c   the subscriptions and their reader threads (the PING)
 *   followread.c  the lock records, the re-reads of the keys named in
 *                 events, the snapshots made from the records
 *   keymap.c      the bounded key map of the records and the pending set
 *   freshness.c   the per-tick check of what notifications cannot say
 *                 (a restart, FLUSHDB, FLUSHALL, SWAPDB, CONFIG SET)
 *
 * struct follow hangs on the scanner it hooks (follow_new(); the
 * scanner's release hook frees it): the target's thread owns all of it
 * but the part under mu, which the reader threads write, and fill, which
 * a cluster pass's stream threads write under the run's mutex.
 */
#ifndef LOCKWATCH_FOLLOW_IMPL_H
#define LOCKWATCH_FOLLOW_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collectors/follow/follow.h"
#include "collectors/follow/freshness.h"
#include "collectors/follow/keymap.h"
#include "collectors/redis/ksub.h"
#include "collectors/scan/scanrun.h"

#define FOLLOW_PENDING_MAX  65536   /* keys awaiting a re-read */
#define FOLLOW_PENDING_BYTES (16u << 20)    /* their bytes (keymap_bytes()) */
#define FOLLOW_KEY_MAX      SNAP_KEY_MAX    /* an event's key: longer ones are
                                             * lost (the view keeps no more) */
#define FOLLOW_READ_BATCH   SCAN_REREAD_MAX     /* keys re-read per pipeline */
#define FOLLOW_READ_BYTES   (1u << 20)  /* and their bytes, at most about */
#define FOLLOW_PUBLISH_MS   250     /* at most one snapshot from events per this */
#define FOLLOW_RECORDS_BYTES (128u << 20)   /* the copies of locks kept: past
                                     * it, the target scans instead (a
                                     * full scan keeps the old and the
                                     * new: 256 MiB at the most) */
#define FOLLOW_RECORDS_RETRY_MS (10 * 60 * 1000)    /* and follows again
                                     * no sooner than this */
#define FOLLOW_PUBLISH_COST 10      /* and per this many times the CPU time the
                                     * last one took: a snapshot replays every
                                     * record, so with 150,000 locks one costs
                                     * tens of ms, and snapshots take at most
                                     * a tenth of a core */
#define FOLLOW_TICK_MS      50      /* the loop wakes at least this often */
#define FOLLOW_EXPIRE_MS    500     /* local expiries: at most a snapshot per this */
#define FOLLOW_QUEUES_MS    500     /* a held lock with a fair queue: a snapshot
                                     * (its waiters read again) at least this
                                     * often, for the wait-for graph ... */
#define FOLLOW_QUEUES_PER   256     /* ... once more for each this many such
                                     * locks (their queue reads' cost) */
#define FOLLOW_PING_MS(t)   ((t)->scan_interval_ms / 2 < 5000 ? \
                             (t)->scan_interval_ms / 2 : 5000)
                                    /* each subscriber is PINGed this
                                     * often (ksub_ping()): one dropped on
                                     * the way is found within this and
                                     * command_timeout, and a freshness
                                     * check that passes vouches for the
                                     * view up to its last answer */
#define FOLLOW_NODES_MAX    64      /* subscriptions: cluster primaries */
#define REGISTRY_PREFIX     "lockwatch:client:"
#define DRIFT_STREAK        2       /* scheduled reconciles with fixes in a row */
#define FOLLOW_RECHECK_MS   10000   /* scanning because notify-keyspace-events
                                     * lacks a class: a full scan reads it
                                     * again (one CONFIG GET a node) at most
                                     * this often, and at a reload */

/* One lock key as last read: enough to decode and judge it again. */
struct frec {
    enum raw_type type;
    long long pttl;
    int64_t read_mono, read_ms;
    long long idle_s, hlen;
    int64_t idle_at_ms;         /* when idle_s was read (scan_key) */
    bool value_truncated, fields_truncated;
    /* a hash's "mode" read on its own (raw_lock.mode_read): only "read"
     * and "write" mean anything, so 8 bytes keep every answer apart */
    bool mode_read;
    char mode[8];
    size_t modelen;
    bool helper;                /* a helper key: counted to its lock */
    char *value;
    size_t valuelen;
    struct raw_field *fields;
    size_t nfields;
    uint64_t content;           /* type, value and TTL-or-not, hashed */
    size_t size;                /* its bytes, its key's and the map entry's */
};

enum reconcile_why { WHY_NONE, WHY_SCHEDULED, WHY_LOSS };

struct follow;

/* One subscription (a node: the standalone or Sentinel primary, or one
 * cluster primary) and its reader thread. */
struct fsub {
    struct follow *fw;
    struct ksub *k;
    int64_t ping_ms;            /* PING it this often (FOLLOW_PING_MS) */
    _Atomic int64_t proven_mono;    /* ksub_proven_mono(), for the target's
                                     * thread: every notification sent
                                     * before then has been taken */
    atomic_bool behind;             /* ksub_ping() said it is behind */
    char behind_why[256];           /* why, under the follow's mu */
    pthread_t th;
    bool th_running;
};

struct follow {
    struct scanner *sc;         /* whose full scans this follows (it owns us) */
    bool wanted;                /* a target of the scanner asked to follow once */

    /* the subscriptions */
    struct fsub subs[FOLLOW_NODES_MAX];
    size_t nsubs;
    uint64_t sub_key;           /* nodes, credentials and patterns subscribed */
    bool verified;              /* CONFIG GET said the setting covers it */
    bool gave_up;               /* not again until the config changes
                                 * (but see lacking) */
    uint64_t gave_up_key;
    bool lacking;               /* gave up because CONFIG GET showed the
                                 * setting lacks a class: read again
                                 * every FOLLOW_RECHECK_MS, and at a reload */
    int64_t lacking_mono;       /* when it was last read so */
    bool lacking_meant;         /* and following was meant: incremental =
                                 * on, or a setting someone made (not
                                 * empty, Redis's default), as one left
                                 * from an older release: /readyz says it */
    bool recheck;               /* a reload: read it at the next full scan */
    bool announce;              /* it lacked a class and now has them: say
                                 * so once the pass that subscribed ends */
    atomic_int th_quit;

    /* shared with the reader threads, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct keymap *pending;
    bool overflow;
    char overflow_why[160];     /* which cap, for the full scan's note */
    bool sub_lost;
    bool sub_over;              /* the subscriber's reply limits ended it */
    char sub_err[256];
    uint64_t events_total;
    unsigned ev_classes;        /* the classes (KSUB_CLASS()) of the events
                                 * since subscribing: part of the proof */

    /* the proof of freshness: the target's thread's */
    uint64_t proven;            /* events since subscribing whose re-read
                                 * found a change: a PUBLISH cannot fake one */
    unsigned key_classes;       /* the classes whose events announce writes
                                 * of the keys followed since subscribing
                                 * (their types: '$' a string, 'h' a hash,
                                 * 'z' a sorted set; 'g' always, for DEL):
                                 * unverified, the proof needs an event of
                                 * each (follow_unproven()) */
    struct fresh_state fresh[FOLLOW_NODES_MAX];         /* baselines, by node */
    size_t nfresh;
    bool fresh_denied;          /* the ACL denies INFO: unchecked */
    unsigned fresh_short[FOLLOW_NODES_MAX];     /* checks in a row with fewer
                                 * keys than locks, by node: each its own
                                 * (one shared, the next node that agreed
                                 * reset it, and a node short check after
                                 * check was never caught) */
    char fresh_note[300];       /* why the last full scan ran, or what it
                                 * found: said once */

    /* the target's thread's own */
    struct keymap *retry;       /* keys a node said are moving (TRYAGAIN, a
                                 * redirection not followed): re-read on the
                                 * next tick (bounded as pending) */
    bool retry_overflow;
    struct keymap *fill;        /* the records of the full scan under way
                                 * (its keep hook, under the run's mutex) */
    bool following;             /* subscribed, and a full scan filled locks */
    struct keymap *locks;       /* the records; kept across a lost
                                 * subscription, so the reconcile after it
                                 * counts what it fixed */
    int64_t reconcile_mono;     /* last full scan */
    enum reconcile_why why;
    unsigned drift_streak;
    size_t fill_bytes, locks_bytes;     /* the records' sizes (frec.size) */
    bool fill_over;             /* the pass's records passed
                                 * FOLLOW_RECORDS_BYTES or max_locks:
                                 * none kept */
    size_t max_locks;           /* the target's follow_max_locks */
    int64_t too_many_mono;      /* mono ms that made it scan; 0 never */
    int64_t pub_gap_ms;         /* the least time between snapshots from
                                 * events now (FOLLOW_PUBLISH_COST) */
    uint64_t fixed_total, overflows_total, reconciles_total, published_total;
    double lag_s;
    bool registry_dirty;
    size_t queues_held;         /* held locks of the last snapshot whose
                                 * waiters are a fair queue (FMT_WAITERS_QUEUE):
                                 * queue pushes send no event on the lock's
                                 * key, so with any it is published every
                                 * FOLLOW_QUEUES_MS x (1 + n / FOLLOW_QUEUES_PER) */
    /* cluster: the topology of the last full scan, and its shards' report */
    bool cluster;
    struct cluster_topo topo;
    struct snap_shard *shards;
    size_t nshards;
    /* the last full scan's figures, for the snapshots made from events */
    int64_t scan_started_ms, scan_finished_ms;
    int64_t proven_ms;          /* Unix ms of the last freshness check passed */
    int64_t behind_since_ms;    /* Unix ms a subscriber fell behind; 0 not */
    char behind_why[256];
    double scan_duration_s;
    uint64_t scan_keys;
    char note[400];
};

/* ---- followsub.c ---------------------------------------------------------------- */

/* Subscribe on every node of t (nodes, n), each with its reader thread:
 * 1, or (nothing subscribed, fw->note saying why) -1 when a server
 * refused, 0 when one could not be reached or did not answer in time. */
int follow_subscribe(struct follow *fw, const struct target_conf *t,
                     const struct target_conf *nodes, size_t n);

/* Stop the readers and close the subscriptions.  The records stay (a
 * reconcile compares with them) but are no longer followed. */
void follow_unsubscribe(struct follow *fw);

/* Is a subscriber behind now (its PING unanswered past command_timeout,
 * while notifications keep coming)?  why gets the first one's words. */
bool follow_subs_behind(struct follow *fw, char *why, size_t whylen);

/* ---- follow.c ------------------------------------------------------------------- */

/* snprintf into fw->note; a note is cut to fit, on purpose. */
void follow_note(struct follow *fw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- freshness.c ------------------------------------------------------------------ */

/* Read node's run_id, commandstats counters and key count over c: 1, 0
 * when the ACL denies INFO, -1 when the connection failed (err). */
int fresh_read(redisContext *c, const struct target_conf *node, struct fresh_state *st,
               char *err, size_t errlen);

/* Take the baselines, before a full scan reads a key: of the one node c
 * is connected to (nodes[0]), or with c NULL of each of the n nodes (a
 * cluster's primaries, in its topology's order) on a connection of its
 * own, closed after. */
void fresh_baseline(struct follow *fw, redisContext *c, const struct target_conf *nodes,
                    size_t n);

/* Check every node against its baseline: 0 fine, 1 a full scan is due
 * (why; *resub: subscribe again too), -1 a connection failed (why), -2 a
 * node gave no reply within command_timeout (why).  A kept connection
 * its peer closed while idle is opened again and the node checked once
 * more first (scanner_revive()). */
int fresh_check(struct follow *fw, const struct target_conf *t, bool *resub, char *why,
                size_t whylen);

/* A check passed: fw->proven_ms is now, or the oldest last answer of a
 * subscriber's PING (fsub.proven_mono) when older, never earlier than it
 * was; unchanged while one has not answered yet. */
void fresh_proven(struct follow *fw);

/* ---- followread.c ---------------------------------------------------------------- */

void frec_free(void *p);

/* When record f's TTL runs out (the PTTL it was read with, counted from
 * its read) on the monotonic clock; 0 when it has no TTL. */
int64_t frec_expires_mono(const struct frec *f);

/* Keep a copy of key k, read at read_ms, in fw->fill (the full scan's
 * keep hook).  0, or -1 on ENOMEM. */
int follow_keep(struct follow *fw, const struct scan_key *k, const struct raw_lock *raw,
                long long hlen, int64_t read_ms);

/*
 * Take the pending set and re-read its keys of target t on the
 * connections the last full scan kept (a cluster's by the shard that
 * serves the key's slot).  *oldest gets the mono time of the earliest
 * event applied (unchanged when none).  1 when a record changed or the
 * registry must be asked again, 0 when nothing did, -1 when a re-read
 * failed (err), -2 when the pending set overflowed: both mean a full scan
 * now.
 */
int follow_apply_pending(struct follow *fw, const struct target_conf *t, int64_t *oldest,
                         char *err, size_t errlen);

/*
 * A snapshot of the records, made as a scan makes one (scanner_replay():
 * every record through the per-key step, timed at its read, the registry
 * look-up, the finish), with the last full scan's figures.  *due_mono
 * gets the monotonic deadline by which a kept lock's state changes by
 * time alone (at most scan_interval away).  NULL on ENOMEM or when a
 * look-up failed on a connection.
 */
struct snapshot *follow_snapshot(struct follow *fw, const struct target_conf *t,
                                 const struct scan_rules *rules, const atomic_int *stop,
                                 int64_t *due_mono);

/* The held locks s keeps whose waiters are a fair queue. */
size_t follow_queue_locks(const struct snapshot *s);
/* CPU time the calling thread has used, in microseconds. */
int64_t follow_cpu_us(void);

#endif
