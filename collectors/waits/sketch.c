/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sketch.c - the log-bucket quantile sketch and its sliding window.
 *
 * Bin bounds gamma^i are computed once into a table by repeated
 * multiplication (1101 steps lose well under 1e-12 relative, nothing next
 * to a = 1e-2) and a value's bin is found by binary search over it.  That
 * keeps libm out of the link and makes the bin of an exact power the one
 * the documentation promises, where ceil(log(v) / log(gamma)) can land one
 * off.  Values are integers of at most 2^53, so their conversion to double
 * is exact and the comparison is too.
 *
 * Every loop over bins runs over [lo, hi], the bins actually used: a
 * sketch of waits that all fall between 1 ms and 1 s touches ~350 of the
 * 1102 bins, and reset, merge and quantile cost only those.
 */
#include "collectors/waits/sketch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define GAMMA ((1.0 + SKETCH_ALPHA) / (1.0 - SKETCH_ALPHA))

static double upper[SKETCH_BINS];
static pthread_once_t upper_once = PTHREAD_ONCE_INIT;

static void
upper_init(void)
{
    size_t i;

    upper[0] = 1.0;
    for (i = 1; i < SKETCH_BINS; i++)
        upper[i] = upper[i - 1] * GAMMA;
}

static const double *
bounds(void)
{
    pthread_once(&upper_once, upper_init);
    return upper;
}

size_t
sketch_bin_of(uint64_t us)
{
    const double *u = bounds();
    double v = (double)us;
    size_t lo = 0, hi = SKETCH_BINS;

    /* First i with u[i] >= v; SKETCH_BINS when there is none. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (u[mid] >= v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

double
sketch_bin_upper(size_t i)
{
    return i < SKETCH_BINS ? bounds()[i] : 0.0;
}

double
sketch_bin_value(size_t i)
{
    /* 2 gamma^i / (gamma + 1) simplifies to (1 - a) gamma^i. */
    return sketch_bin_upper(i) * (1.0 - SKETCH_ALPHA);
}

void
sketch_init(struct sketch *s)
{
    memset(s, 0, sizeof(*s));
    s->lo = SKETCH_BINS;
    s->hi = 0;
}

void
sketch_reset(struct sketch *s)
{
    if (s->lo <= s->hi)
        memset(&s->bins[s->lo], 0, (size_t)(s->hi - s->lo + 1) * sizeof(s->bins[0]));
    s->count = s->dropped = s->zero = s->overflow = 0;
    s->min = s->max = 0;
    s->lo = SKETCH_BINS;
    s->hi = 0;
}

static void
note_extremes(struct sketch *s, uint64_t min, uint64_t max)
{
    if (s->count == 0 || min < s->min)
        s->min = min;
    if (s->count == 0 || max > s->max)
        s->max = max;
}

int
sketch_add(struct sketch *s, uint64_t us)
{
    size_t i;

    if (us > SKETCH_VALUE_MAX)
        us = SKETCH_VALUE_MAX;
    if (us == 0) {
        note_extremes(s, 0, 0);
        s->zero++;
        s->count++;
        return 0;
    }
    i = sketch_bin_of(us);
    if (i >= SKETCH_BINS) {
        note_extremes(s, us, us);
        s->overflow++;
        s->count++;
        return 0;
    }
    if (s->bins[i] == UINT32_MAX) {
        s->dropped++;
        return -1;
    }
    note_extremes(s, us, us);
    s->bins[i]++;
    s->count++;
    if (i < s->lo)
        s->lo = (uint32_t)i;
    if (i > s->hi)
        s->hi = (uint32_t)i;
    return 0;
}

void
sketch_merge(struct sketch *dst, const struct sketch *src)
{
    uint64_t added = src->zero + src->overflow, excess = 0;
    uint32_t i;

    if (src->count == 0) {
        dst->dropped += src->dropped;
        return;
    }
    for (i = src->lo; i <= src->hi && i < SKETCH_BINS; i++) {
        uint64_t sum = (uint64_t)dst->bins[i] + src->bins[i];

        if (src->bins[i] == 0)
            continue;
        if (sum > UINT32_MAX) {
            excess += sum - UINT32_MAX;
            sum = UINT32_MAX;
        }
        added += sum - dst->bins[i];
        dst->bins[i] = (uint32_t)sum;
        if (i < dst->lo)
            dst->lo = i;
        if (i > dst->hi)
            dst->hi = i;
    }
    note_extremes(dst, src->min, src->max);
    dst->zero += src->zero;
    dst->overflow += src->overflow;
    dst->count += added;
    dst->dropped += src->dropped + excess;
}

/* ceil(q * n) for q taken to 6 decimals, in integers: no 0.99 * 100 = 99.000001. */
static uint64_t
rank_of(double q, uint64_t n)
{
    uint64_t qm, a, b, r;

    if (!(q > 0.0))
        qm = 0;
    else if (q >= 1.0)
        qm = 1000000;
    else
        qm = (uint64_t)(q * 1e6 + 0.5);
    a = n / 1000000;
    b = n % 1000000;
    r = a * qm + (b * qm + 999999) / 1000000;
    return r == 0 ? 1 : r;
}

int
sketch_quantile(const struct sketch *s, double q, double *us)
{
    uint64_t rank, seen;
    double v;
    uint32_t i;

    if (s->count == 0)
        return -1;
    rank = rank_of(q, s->count);
    /* The smallest and the largest sample are known exactly. */
    if (rank == 1 || rank == s->count) {
        *us = (double)(rank == 1 ? s->min : s->max);
        return 0;
    }
    seen = s->zero;
    if (seen >= rank) {
        *us = 0.0;
        return 0;
    }
    v = (double)s->max;         /* the answer if the rank is in overflow */
    for (i = s->lo; i <= s->hi && i < SKETCH_BINS; i++) {
        seen += s->bins[i];
        if (seen >= rank) {
            v = sketch_bin_value(i);
            break;
        }
    }
    /* The true value lies in [min, max]: clamping only moves toward it. */
    if (v > (double)s->max)
        v = (double)s->max;
    if (v < (double)s->min)
        v = (double)s->min;
    *us = v;
    return 0;
}

/* --- the sliding window ---------------------------------------------------- */

static int64_t
floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;

    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static size_t
slot_of(int64_t epoch, int n)
{
    int64_t m = epoch % n;

    return (size_t)(m < 0 ? m + n : m);
}

int
sketch_window_init(struct sketch_window *w, int64_t window_ms, int nslices)
{
    int i;

    memset(w, 0, sizeof(*w));
    if (window_ms < 1 || nslices < 1 || nslices > SKETCH_WINDOW_SLICES_MAX)
        return -1;
    w->nslices = nslices;
    w->slice_ms = (window_ms + nslices - 1) / nslices;
    for (i = 0; i < nslices; i++)
        w->epoch[i] = INT64_MIN;
    return 0;
}

void
sketch_window_release(struct sketch_window *w)
{
    int i;

    for (i = 0; i < SKETCH_WINDOW_SLICES_MAX; i++)
        free(w->slice[i]);
    memset(w, 0, sizeof(*w));
}

static bool
live(const struct sketch_window *w, size_t slot, int64_t cur)
{
    int64_t e = w->epoch[slot];

    /* e <= cur, and cur - e < nslices written so INT64_MIN cannot overflow */
    return w->slice[slot] != NULL && e != INT64_MIN && e <= cur && e > cur - w->nslices;
}

int
sketch_window_add(struct sketch_window *w, int64_t now_ms, uint64_t us)
{
    int64_t cur;
    size_t slot;

    if (w->nslices < 1)
        return -1;
    cur = floor_div(now_ms, w->slice_ms);
    slot = slot_of(cur, w->nslices);
    if (w->slice[slot] == NULL) {
        w->slice[slot] = malloc(sizeof(struct sketch));
        if (w->slice[slot] == NULL)
            return -1;
        sketch_init(w->slice[slot]);
        w->epoch[slot] = cur;
    } else if (w->epoch[slot] != cur) {
        /* A sample from before the slot's slice (a clock that stepped
         * back) must not wipe newer data: it lands in the newer slice. */
        if (w->epoch[slot] < cur) {
            sketch_reset(w->slice[slot]);
            w->epoch[slot] = cur;
        }
    }
    return sketch_add(w->slice[slot], us);
}

void
sketch_window_merge(const struct sketch_window *w, int64_t now_ms, struct sketch *dst)
{
    int64_t cur;
    int i;

    if (w->nslices < 1)
        return;
    cur = floor_div(now_ms, w->slice_ms);
    for (i = 0; i < w->nslices; i++)
        if (live(w, (size_t)i, cur))
            sketch_merge(dst, w->slice[i]);
}

uint64_t
sketch_window_count(const struct sketch_window *w, int64_t now_ms)
{
    uint64_t n = 0;
    int64_t cur;
    int i;

    if (w->nslices < 1)
        return 0;
    cur = floor_div(now_ms, w->slice_ms);
    for (i = 0; i < w->nslices; i++)
        if (live(w, (size_t)i, cur))
            n += w->slice[i]->count;
    return n;
}

size_t
sketch_window_bytes(const struct sketch_window *w)
{
    size_t n = sizeof(*w);
    int i;

    for (i = 0; i < SKETCH_WINDOW_SLICES_MAX; i++)
        if (w->slice[i] != NULL)
            n += sizeof(struct sketch);
    return n;
}
