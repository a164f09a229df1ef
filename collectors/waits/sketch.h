/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sketch.h - a fixed-size log-bucket quantile sketch of durations in
 * microseconds, and a sliding window made of a ring of such sketches.
 *
 * The mapping is DDSketch's (Masson, Rim, Lee, VLDB 2019): with
 * gamma = (1 + a) / (1 - a) and a = SKETCH_ALPHA = 0.01, bin i holds the
 * values in (gamma^(i-1), gamma^i], i = 0 .. SKETCH_BINS - 1, which covers
 * 1 us to gamma^1101 us (about 61 minutes).  The value 0 has a bin of its
 * own; larger values than the last bin's bound go to an overflow bin.  A
 * quantile is the nearest-rank sample's bin, reported as the bin's
 * representative 2 gamma^i / (gamma + 1) = (1 - a) gamma^i, which is within
 * a relative a of every value in the bin; it is also clamped to the exact
 * minimum and maximum seen (and the first and last ranks are answered with
 * them), so a constant input comes back exact.  Merging
 * adds bin counts, so a merged sketch answers as if it had seen every
 * sample itself.
 *
 * Memory is fixed: sizeof(struct sketch) is about 4.4 KiB (32-bit counts).
 * A bin that would pass 2^32 - 1 refuses the sample and counts it in
 * `dropped`, so count always equals the sum of the bins.
 *
 * Nothing here locks, allocates (except the window's slices) or reads a
 * clock: the window takes `now` from the caller, so tests drive time.
 */
#ifndef LOCKWATCH_SKETCH_H
#define LOCKWATCH_SKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SKETCH_ALPHA    0.01    /* relative accuracy of a quantile */
#define SKETCH_BINS     1102    /* bins 0..1101: 1 us .. ~3.66e9 us (61 min) */
#define SKETCH_VALUE_MAX ((uint64_t)1 << 53)  /* largest value add() takes */

struct sketch {
    uint64_t count;             /* samples held: zero + overflow + sum(bins) */
    uint64_t dropped;           /* refused because their bin was full */
    uint64_t zero;              /* samples of value 0 */
    uint64_t overflow;          /* samples above sketch_bin_upper(SKETCH_BINS-1) */
    uint64_t min, max;          /* exact extremes; meaningless while count is 0 */
    uint32_t lo, hi;            /* bins in use lie in [lo, hi]; lo > hi: none */
    uint32_t bins[SKETCH_BINS];
};

/* Make s empty (s may be uninitialised memory). */
void sketch_init(struct sketch *s);
/* Empty an initialised sketch; costs only the bins that were used. */
void sketch_reset(struct sketch *s);
/* Add one value (us; values above SKETCH_VALUE_MAX are clamped to it).
 * 0, or -1 when its bin is full (counted in dropped). */
int sketch_add(struct sketch *s, uint64_t us);
/* dst += src.  Bins that would overflow keep 2^32-1 and the excess goes
 * to dst->dropped. */
void sketch_merge(struct sketch *dst, const struct sketch *src);
/*
 * The q-quantile (0 <= q <= 1) by nearest rank: the value of the
 * ceil(q * count)-th smallest sample (at least the first), estimated as
 * described above; q is taken to 6 decimals so that 0.99 * 100 is 99,
 * not 100.  Returns 0 and sets *us, or -1 when the sketch is empty.
 */
int sketch_quantile(const struct sketch *s, double q, double *us);

/* The bin of a value >= 1 (SKETCH_BINS when it overflows); the upper
 * bound gamma^i and representative (1 - a) gamma^i of bin i.  For tests
 * and documentation. */
size_t sketch_bin_of(uint64_t us);
double sketch_bin_upper(size_t i);
double sketch_bin_value(size_t i);

/*
 * The sliding window: nslices sketches, each covering slice_ms of time
 * (window_ms / nslices, rounded up).  Time is cut into epochs
 * floor(now / slice_ms); a sample goes to its epoch's slice, and a read at
 * `now` sees the slices of the last nslices epochs, the current one
 * included, so it spans between (nslices - 1) and nslices slices of time.
 * An older slice is reset when its slot is reused and ignored before.
 * Slices are allocated on first use, so a quiet window costs almost
 * nothing and a busy one at most SKETCH_WINDOW_BYTES(nslices).
 * `now` must come from a monotonic clock; it may start anywhere.
 */
#define SKETCH_WINDOW_SLICES_MAX 32
#define SKETCH_WINDOW_BYTES(n) \
    (sizeof(struct sketch_window) + (size_t)(n) * sizeof(struct sketch))

struct sketch_window {
    int64_t slice_ms;
    int nslices;
    int64_t epoch[SKETCH_WINDOW_SLICES_MAX];     /* of each slot's slice */
    struct sketch *slice[SKETCH_WINDOW_SLICES_MAX];     /* NULL until used */
};

/* window_ms >= 1, 1 <= nslices <= SKETCH_WINDOW_SLICES_MAX; 0 or -1. */
int sketch_window_init(struct sketch_window *w, int64_t window_ms, int nslices);
/* Free the slices; w can be initialised again. */
void sketch_window_release(struct sketch_window *w);
/* Add a value at time now.  0; -1 when a slice could not be allocated
 * (ENOMEM) or its bin was full. */
int sketch_window_add(struct sketch_window *w, int64_t now_ms, uint64_t us);
/* Merge the live slices at time now into dst (not reset first). */
void sketch_window_merge(const struct sketch_window *w, int64_t now_ms, struct sketch *dst);
/* Samples in the live slices at time now. */
uint64_t sketch_window_count(const struct sketch_window *w, int64_t now_ms);
/* Bytes the window holds now (struct and allocated slices). */
size_t sketch_window_bytes(const struct sketch_window *w);

#endif
