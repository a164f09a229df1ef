/*
 * snapshot.h - the immutable result of one full scan of one target.
 *
 * A scan builds a snapshot privately and publishes it with one pointer
 * swap; readers (HTTP, --once, later the rules) take a reference and
 * render from it while the next scan builds the next one.  Nobody writes
 * to a published snapshot.
 *
 * Storage is compact because a snapshot may hold a million locks: fixed
 * records in one array, holders in a second, and every byte string (keys,
 * holder ids, hosts) in one arena addressed by 32-bit offsets.
 */
#ifndef LOCKWATCH_SNAPSHOT_H
#define LOCKWATCH_SNAPSHOT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/formats.h"

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

#define SNAP_KEY_MAX  (128 * 1024)    /* key bytes kept per lock */
#define FORMATS_MAX   16              /* bound on formats_count */

struct snap_holder {
    uint32_t id_off;
    uint16_t id_len;
    uint16_t truncated;
    int64_t count;
};

struct snap_lock {
    uint32_t key_off;
    uint32_t key_len;
    uint32_t holder_first;            /* index into holders[] */
    uint32_t holders_total;
    uint16_t nholders;                /* stored, <= HOLDERS_MAX */
    uint16_t class_idx;
    uint8_t format;                   /* index into formats_table */
    uint8_t states;
    uint8_t flags;
    uint8_t host_len;
    uint32_t host_off;
    int32_t pid;                      /* 0 unknown */
    int64_t thread;                   /* -1 unknown */
    int64_t max_count;
    int64_t pttl_ms;                  /* -1 no TTL */
    int64_t first_seen_ms;            /* Unix ms, current holder */
    int64_t acquired_ms;              /* Unix ms from the format; 0 unknown */
};

struct snap_class {
    uint64_t locks[FORMATS_MAX];      /* by format index */
    uint64_t leaked;
    uint64_t long_held;
    int64_t oldest_ms;                /* oldest holder age; 0 when none */
    int64_t max_reentrancy;
};

/* Cumulative per-target counters, carried from scan to scan. */
struct scan_counters {
    uint64_t scans_ok;
    uint64_t scans_error;
    uint64_t keys_total;              /* keys examined, all scans */
    uint64_t vanished_total;          /* keys gone between SCAN and read */
    uint64_t truncated_total;         /* values/fields cut by the caps */
    uint64_t duplicates_total;        /* keys SCAN returned twice in a pass */
};

struct snapshot {
    pthread_mutex_t ref_mu;
    int refs;

    char *target;
    bool ok;
    char err[256];                    /* why the scan failed, when !ok */
    int64_t started_ms, finished_ms;  /* Unix ms */
    double duration_s;
    uint64_t keys_examined;           /* this scan */
    struct scan_counters counters;

    struct snap_lock *locks;
    size_t nlocks, locks_cap;
    struct snap_holder *holders;
    size_t nholders, holders_cap;
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t *order;                  /* lock indices, worst first */

    char **classes;                   /* class names; index = class_idx */
    size_t nclasses;
    struct snap_class *class_stats;   /* nclasses entries */
    uint64_t classes_overflowed;      /* keys counted as "other" by the cap */
};

struct snapshot *snapshot_new(const char *target);
/* Reference counting; snapshot_unref(NULL) is fine. */
void snapshot_ref(struct snapshot *s);
void snapshot_unref(struct snapshot *s);

/* Builders, used by the scanner only (before publishing). -1 on ENOMEM. */
int snapshot_add_bytes(struct snapshot *s, const char *p, size_t n, uint32_t *off);
struct snap_lock *snapshot_add_lock(struct snapshot *s);
int snapshot_add_holder(struct snapshot *s, const struct lock_holder *h);
/* Sort order[] worst first and compute class_stats; call once at the end. */
int snapshot_finish(struct snapshot *s, int64_t now_ms);

static inline const char *
snapshot_str(const struct snapshot *s, uint32_t off)
{
    return s->arena + off;
}

/* Worst state for labels: "leaked", "long", "reentrant_high" or "held". */
const char *snapshot_worst_state(uint8_t states);
/* Severity rank used for ordering; higher is worse. */
int snapshot_rank(uint8_t states);

#endif
