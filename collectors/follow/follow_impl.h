/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * follow_impl.h - what the two files of follow mode share; internal to
 * collectors/scan/.
 *
 *   follow.c      the subscriptions and their reader threads, attaching to
 *                 a full scan, what a reconcile fixed, the follow loop
 *   followread.c  the lock records, the re-reads of the keys named in
 *                 events, the snapshots made from the records
 *
 * struct follow is the scanner's (sc->fw): the target's thread owns all
 * of it but the part under mu, which the reader threads write.
 */
#ifndef LOCKWATCH_FOLLOW_IMPL_H
#define LOCKWATCH_FOLLOW_IMPL_H

#include "collectors/scan/scan_impl.h"

#include "collectors/redis/ksub.h"
#include "collectors/scan/keymap.h"

#define FOLLOW_PENDING_MAX  65536   /* keys awaiting a re-read */
#define FOLLOW_READ_BATCH   256     /* keys re-read per pipeline */
#define FOLLOW_PUBLISH_MS   250     /* at most one snapshot from events per this */
#define FOLLOW_TICK_MS      50      /* the loop wakes at least this often */
#define FOLLOW_NODES_MAX    64      /* subscriptions: cluster primaries */
#define REGISTRY_PREFIX     "lockwatch:client:"
#define DRIFT_STREAK        2       /* scheduled reconciles with fixes in a row */

/* One lock key as last read: enough to decode and judge it again. */
struct frec {
    enum raw_type type;
    long long pttl;
    int64_t read_mono, read_ms;
    long long idle_s, hlen;
    bool value_truncated, fields_truncated;
    bool helper;                /* a helper key: counted to its lock */
    char *value;
    size_t valuelen;
    struct raw_field *fields;
    size_t nfields;
    uint64_t content;           /* type, value and TTL-or-not, hashed */
};

enum reconcile_why { WHY_NONE, WHY_SCHEDULED, WHY_LOSS };

struct follow;

/* One subscription (a node: the standalone or Sentinel primary, or one
 * cluster primary) and its reader thread. */
struct fsub {
    struct follow *fw;
    struct ksub *k;
    pthread_t th;
    bool th_running;
};

struct follow {
    /* the subscriptions */
    struct fsub subs[FOLLOW_NODES_MAX];
    size_t nsubs;
    uint64_t sub_key;           /* nodes, credentials and patterns subscribed */
    bool verified;              /* CONFIG GET said the setting covers it */
    bool gave_up;               /* auto: not again until the config changes */
    uint64_t gave_up_key;
    atomic_int th_quit;

    /* shared with the reader threads, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct keymap *pending;
    bool overflow;
    bool sub_lost;
    char sub_err[256];
    uint64_t events_total;

    /* the target's thread's own */
    bool following;             /* subscribed, and a full scan filled locks */
    struct keymap *locks;       /* the records; kept across a lost
                                 * subscription, so the reconcile after it
                                 * counts what it fixed */
    int64_t reconcile_mono;     /* last full scan */
    enum reconcile_why why;
    unsigned drift_streak;
    uint64_t fixed_total, overflows_total, reconciles_total, published_total;
    double lag_s;
    bool registry_dirty;
    /* cluster: the topology of the last full scan, and its shards' report */
    bool cluster;
    struct cluster_topo topo;
    struct snap_shard *shards;
    size_t nshards;
    /* the last full scan's figures, for the snapshots made from events */
    int64_t scan_started_ms, scan_finished_ms;
    double scan_duration_s;
    uint64_t scan_keys;
    char note[400];
};

/* ---- followread.c ---------------------------------------------------------------- */

void frec_free(void *p);

/*
 * Take the pending set and re-read its keys on the connections the last
 * full scan kept (a cluster's by the shard that serves the key's slot).
 * *oldest gets the mono time of the earliest event applied (unchanged
 * when none).  1 when a record changed or the registry must be asked
 * again, 0 when nothing did, -1 when a re-read failed (r->err), -2 when
 * the pending set overflowed: both mean a full scan now.
 */
int follow_apply_pending(struct run *r, int64_t *oldest);

/*
 * A snapshot of the records, made as a scan makes one: every record
 * through record_key() (timed at its read), the registry look-up, the
 * finish.  *next_due_ms gets the earliest Unix ms at which a kept lock's
 * state changes by time alone (at most scan_interval away).  NULL on
 * ENOMEM or when the registry look-up failed on a connection.
 */
struct snapshot *follow_snapshot(struct scanner *sc, const struct target_conf *t,
                                 const struct scan_rules *rules, const atomic_int *stop,
                                 int64_t *next_due_ms);

#endif
