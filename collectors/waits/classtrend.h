/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * classtrend.h - per lock class, what the scans say over time: the lease
 * its locks carry (the TTL at first sight), how many locks it has against
 * its trailing baseline, and how fast they are created and deleted (issue
 * 28: LockLeaseTooShort / TooLong, LockCountSurge, /api/v1/classes).
 *
 * Fed from two places:
 *  - classtrend_note(): each ok snapshot a target publishes, with the one
 *    it replaces, gives per class the locks at first sight (created), the
 *    locks gone since (deleted = previous + created - now, never below 0)
 *    and the TTLs of the new locks (the lease histogram since start, and
 *    the longest in the last wait_window: "the lease");
 *  - classtrend_sample(): once a tick, the count of every class summed
 *    over the targets' shown snapshots goes into a ring of
 *    CLASSTREND_SLOTS slots covering [rules] count_baseline_window; the
 *    baseline is the median of the slots before the current one, known
 *    once at least half of them have a count.
 *
 * The first snapshot of a target (no previous one) counts no creations or
 * deletions: every lock is new to the scanner then, not to Redis.  A
 * scanner sees only the locks alive at its scans, so a lock created and
 * deleted between two scans counts in neither rate.
 *
 * Classes: names as the scan gives them (class_of with [classes], valid
 * UTF-8), interned in one class_set shared by every target (CLASS_MAX
 * places plus "other", the cap of one target's classes), so the series are
 * per class only and bounded as lockwatch_locks' class label is.
 * Memory: about 1.4 KiB a class, allocated at its first note.
 *
 * Thread safety: one mutex; note runs on the scanner threads, sample and
 * view on the main and HTTP threads.  Times are monotonic ms from the
 * caller, so tests drive them.
 */
#ifndef LOCKWATCH_CLASSTREND_H
#define LOCKWATCH_CLASSTREND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/locks/snapshot.h"
#include "conf/config.h"

#define CLASSTREND_SLOTS      60    /* baseline ring: 60 x 1 min for 1 h */
#define CLASSTREND_RATE_SLICES 12   /* rate ring: 12 x 5 s */
#define CLASSTREND_RATE_MS    60000 /* rates are over the last minute */
#define CLASSTREND_LEASE_SLICES 12  /* lease ring over wait_window */

struct classtrend;

struct classtrend_class {
    const char *name;               /* into the view's storage */
    uint64_t count;                 /* locks now, over every target */
    bool baseline_known;            /* half the ring has counts */
    double baseline;                /* median count of the ring */
    uint64_t created_total, deleted_total;  /* since start */
    double created_rate, deleted_rate;      /* per second, last minute */
    uint32_t lease_bucket[SNAP_LEASE_NBOUNDS + 1];  /* since start, not
                                                     * cumulative */
    uint64_t lease_count;           /* since start */
    double lease_sum_s;
    bool lease_known;               /* a TTL at first sight in the window */
    int64_t lease_ms;               /* the longest of those */
    bool watchdog;                  /* a lock outlived 1.5 x the lease in
                                     * the window: its locks are renewed */
    int64_t renewal_ms;             /* then: lease - the lowest TTL seen,
                                     * the renewal period as the scans see it
                                     * (at most the real one) */
};

struct classtrend_view {
    struct classtrend_class *classes;
    size_t nclasses;
    int64_t baseline_window_ms;
    char *names;
};

/* A new trend store under cfg's [rules] (wait_window, count_baseline_window,
 * copied).  NULL on ENOMEM. */
struct classtrend *classtrend_new(const struct config *cfg);
void classtrend_free(struct classtrend *ct);

/* A reloaded config: a changed window restarts that ring (the counters
 * and the lease histogram stay). */
void classtrend_configure(struct classtrend *ct, const struct config *cfg);

/* An ok snapshot s that replaces prev (NULL: the target's first). */
void classtrend_note(struct classtrend *ct, const struct snapshot *prev,
                     const struct snapshot *s, int64_t now_ms);

/* The counts of every class over the snapshots shown now (NULL entries
 * skipped); classes with no locks anywhere count 0. */
void classtrend_sample(struct classtrend *ct, const struct snapshot *const *snaps,
                       size_t n, int64_t now_ms);

/* Copy out every class ever noted.  0, or -1 on ENOMEM (v empty). */
int classtrend_view(struct classtrend *ct, int64_t now_ms, struct classtrend_view *v);
void classtrend_view_release(struct classtrend_view *v);

/* The class of v named name, or NULL. */
const struct classtrend_class *classtrend_find(const struct classtrend_view *v,
                                               const char *name);

/* The median of n values (sorted in place); 0 when n is 0.  For tests. */
double classtrend_median(uint64_t *vals, size_t n);

#endif
