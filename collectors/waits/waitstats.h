/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waitstats.h - acquire-wait and hold-time statistics per lock class, fed
 * by the samples clients send (SPEC "Wait and hold samples").
 *
 * Per class, kept since start (never reset, not even by a reload):
 *  - a classic histogram of waits per outcome (ok / timeout / error) and
 *    one of hold times, with the fixed bounds in waitstats_bounds_us[]
 *    (the `le` labels of lockwatch_acquire_wait_seconds and
 *    lockwatch_hold_seconds), plus sum and count;
 *  - a sliding window of wait sketches (all outcomes together) over
 *    [rules] wait_window, for the P99 gauge and the LockWaitP99High rule.
 *
 * Classes: a sample's key goes through class_of() with the [classes]
 * rules, the name is made valid UTF-8 (invalid bytes become U+FFFD, as
 * in every label) and interned in one class_set shared by every sender: the first CLASS_MAX classes seen since start keep their own
 * statistics, later ones count as "other" (class_overflowed says how many
 * samples that folded).  Only classes that had a sample are reported.
 *
 * Memory per class: a class's histograms and window frame cost about
 * 1.2 KiB, allocated at its first sample, and each window slice about
 * 4.4 KiB (sizeof(struct sketch)), allocated when a sample first lands in
 * it: at most waitstats_class_bytes_max() (~54 KiB with 12 slices) per
 * class, ~11 MiB for all CLASS_MAX + 1 classes with every slice busy.
 * Slices are reused as the window turns, never freed before exit.
 *
 * Thread safety: one mutex guards everything.  The ingest thread holds it
 * for one datagram's samples at a time; a renderer holds it while it
 * copies the counters and merges each class's window into one sketch,
 * then renders from the copy (struct waitstats_view) without it.
 */
#ifndef LOCKWATCH_WAITSTATS_H
#define LOCKWATCH_WAITSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "collectors/locks/lockclass.h"
#include "collectors/waits/samples.h"
#include "collectors/waits/sketch.h"
#include "conf/config.h"

#define WAITSTATS_SLICES    12      /* window slices: 12 x 5 s for 1 m */
#define WAITSTATS_NBOUNDS   16      /* finite histogram bounds; +Inf is extra */

/* The histogram bounds, in us and as the `le` label text (seconds). */
extern const uint64_t waitstats_bounds_us[WAITSTATS_NBOUNDS];
extern const char *const waitstats_bounds_le[WAITSTATS_NBOUNDS];

struct wait_hist {
    uint64_t bucket[WAITSTATS_NBOUNDS + 1];  /* per bound, NOT cumulative;
                                              * the last is "above 60 s" */
    uint64_t count;
    double sum_us;              /* double: 2048 hostile 2^53 us samples
                                 * would wrap a uint64 */
};

struct waitstats;

struct waitstats_class {
    const char *name;           /* into the view's storage */
    bool has_wait, has_hold;    /* any such sample since start */
    struct wait_hist wait[SAMPLE_OUTCOMES];
    struct wait_hist hold;
    uint64_t window_count;      /* waits in the window now (all outcomes) */
    double window_p99_us;       /* when window_count > 0 */
};

struct waitstats_view {
    struct waitstats_class *classes;    /* classes that had samples */
    size_t nclasses;
    uint64_t received;          /* lines, valid or not */
    uint64_t invalid;           /* malformed lines */
    uint64_t class_overflowed;  /* valid samples folded into "other" */
    uint64_t kernel_drops;      /* datagrams the kernel dropped (receive
                                 * buffer full), as the ingest reports it */
    uint64_t window_lost;       /* waits missing from the window (ENOMEM) */
    int64_t window_ms;
    size_t bytes;               /* memory held by the statistics */
    char *names;                /* storage for classes[].name */
};

/*
 * A new, empty set of statistics with a copy of cfg's [classes] rules and
 * its wait_window.  NULL on ENOMEM.  Free with waitstats_free (NULL fine).
 */
struct waitstats *waitstats_new(const struct config *cfg);
void waitstats_free(struct waitstats *ws);

/*
 * Take a reloaded config's [classes] rules and wait_window (a copy; cfg
 * is not kept).  Statistics are kept: the rules apply to samples from now
 * on, and a changed window restarts every class's window (the histograms
 * stay).  0, or -1 on ENOMEM with nothing changed.
 */
int waitstats_configure(struct waitstats *ws, const struct config *cfg);

/*
 * Count one datagram: n valid samples, lines = every non-empty line of it
 * (invalid ones included), invalid = the malformed ones.  now_ms is a
 * monotonic clock reading (the window's time).  Never fails: a class that
 * cannot be allocated counts as "other".
 */
void waitstats_record(struct waitstats *ws, const struct sample *s, size_t n,
                      uint64_t lines, uint64_t invalid, int64_t now_ms);

/* The ingest thread's running total of kernel-dropped datagrams. */
void waitstats_set_kernel_drops(struct waitstats *ws, uint64_t total);

/*
 * Copy out everything a renderer or a rule needs, window P99s computed at
 * now_ms (monotonic, same clock as record).  0, or -1 on ENOMEM (v is then
 * empty).  Release with waitstats_view_release.
 */
int waitstats_view(struct waitstats *ws, int64_t now_ms, struct waitstats_view *v);
void waitstats_view_release(struct waitstats_view *v);

/* The most one class can cost, window slices included (bytes). */
size_t waitstats_class_bytes_max(void);

#endif
