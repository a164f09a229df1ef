/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_sketch.c - the log-bucket quantile sketch and its sliding window:
 * quantiles against exact nearest-rank values (uniform, log-uniform,
 * bimodal, constant inputs) within the promised 1%, merging, the bin
 * layout, and window rotation driven by an explicit clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/waits/sketch.h"

/* 1% relative, plus room for the last bits of double rounding. */
#define TOLERANCE (SKETCH_ALPHA + 1e-9)

static uint64_t rng_state;

static uint64_t
rng(void)
{
    /* xorshift64*: deterministic, good enough to spread test values */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static uint64_t
uniform(uint64_t lo, uint64_t hi)
{
    return lo + rng() % (hi - lo + 1);
}

/* Uniform within a random octave: log-uniform to within a factor of 2. */
static uint64_t
log_uniform(unsigned max_exp)
{
    unsigned e = (unsigned)(rng() % (max_exp + 1));
    uint64_t base = (uint64_t)1 << e;

    return base + rng() % base;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Nearest rank of the per-million quantile qm, exactly. */
static uint64_t
exact(uint64_t *v, size_t n, uint64_t qm)
{
    uint64_t rank = (qm * n + 999999) / 1000000;

    if (rank == 0)
        rank = 1;
    return v[rank - 1];
}

static void
assert_close(double got, uint64_t want, const char *what, uint64_t qm)
{
    double err = want == 0 ? got : (got - (double)want) / (double)want;

    if (err < 0)
        err = -err;
    if (err > TOLERANCE) {
        print_error("%s q=%.6f: got %.3f want %llu (rel err %.5f)\n", what,
                    (double)qm / 1e6, got, (unsigned long long)want, err);
        fail();
    }
}

static const uint64_t quantiles[] = { 0, 1, 10000, 250000, 500000, 900000, 950000,
                                      990000, 999000, 999900, 1000000 };

/* Feed v to a sketch and compare every quantile with the exact one. */
static void
check_against_exact(uint64_t *v, size_t n, const char *what)
{
    struct sketch *s = malloc(sizeof(*s));
    size_t i;
    double got;

    assert_non_null(s);
    sketch_init(s);
    for (i = 0; i < n; i++)
        assert_int_equal(sketch_add(s, v[i]), 0);
    assert_int_equal(s->count, n);
    qsort(v, n, sizeof(*v), cmp_u64);
    assert_int_equal(s->min, v[0]);
    assert_int_equal(s->max, v[n - 1]);
    for (i = 0; i < sizeof(quantiles) / sizeof(quantiles[0]); i++) {
        assert_int_equal(sketch_quantile(s, (double)quantiles[i] / 1e6, &got), 0);
        assert_close(got, exact(v, n, quantiles[i]), what, quantiles[i]);
    }
    free(s);
}

#define N 200000

static void
uniform_input(void **state)
{
    uint64_t *v = malloc(N * sizeof(*v));
    size_t i;

    (void)state;
    rng_state = 0x1234567;
    for (i = 0; i < N; i++)
        v[i] = uniform(1, 2000000);
    check_against_exact(v, N, "uniform 1us..2s");
    for (i = 0; i < 1000; i++)
        v[i] = uniform(0, 50);         /* small integers, zero included */
    check_against_exact(v, 1000, "uniform 0..50us");
    free(v);
}

static void
log_uniform_input(void **state)
{
    uint64_t *v = malloc(N * sizeof(*v));
    size_t i;

    (void)state;
    rng_state = 0xfeedbeef;
    for (i = 0; i < N; i++)
        v[i] = log_uniform(30);        /* 1 us .. ~35 min */
    check_against_exact(v, N, "log-uniform");
    free(v);
}

static void
bimodal_input(void **state)
{
    uint64_t *v = malloc(N * sizeof(*v));
    size_t i;

    (void)state;
    rng_state = 42;
    /* 90% fast (~1 ms), 10% slow (~2 s): P99 sits in the slow mode */
    for (i = 0; i < N; i++)
        v[i] = rng() % 10 == 0 ? uniform(1500000, 2500000) : uniform(800, 1200);
    check_against_exact(v, N, "bimodal 90/10");
    /* 99.2% fast: P99 sits on the fast mode's tail, P999 in the slow one */
    for (i = 0; i < N; i++)
        v[i] = rng() % 1000 < 8 ? uniform(1500000, 2500000) : uniform(800, 1200);
    check_against_exact(v, N, "bimodal 99.2/0.8");
    free(v);
}

static void
constant_input_is_exact(void **state)
{
    struct sketch s;
    double got;
    int i;

    (void)state;
    sketch_init(&s);
    for (i = 0; i < 1000; i++)
        sketch_add(&s, 1234);
    assert_int_equal(sketch_quantile(&s, 0.99, &got), 0);
    assert_true(got == 1234.0);         /* clamped to the exact min/max */
    assert_int_equal(sketch_quantile(&s, 0.0, &got), 0);
    assert_true(got == 1234.0);

    sketch_reset(&s);
    for (i = 0; i < 10; i++)
        sketch_add(&s, 0);
    assert_int_equal(sketch_quantile(&s, 0.5, &got), 0);
    assert_true(got == 0.0);
    assert_int_equal(s.zero, 10);
}

static void
empty_sketch(void **state)
{
    struct sketch s, t;
    double got = -7;

    (void)state;
    sketch_init(&s);
    sketch_init(&t);
    assert_int_equal(s.count, 0);
    assert_int_equal(sketch_quantile(&s, 0.99, &got), -1);
    assert_true(got == -7);             /* untouched */
    sketch_merge(&s, &t);
    assert_int_equal(s.count, 0);
    assert_int_equal(sketch_quantile(&s, 0.5, &got), -1);
    /* reset of a used sketch makes it empty again */
    sketch_add(&s, 5);
    sketch_add(&s, 5000000);
    sketch_reset(&s);
    assert_int_equal(s.count, 0);
    assert_int_equal(sketch_quantile(&s, 0.5, &got), -1);
    assert_memory_equal(s.bins, t.bins, sizeof(s.bins));
}

static void
rank_is_exact_for_p99_of_100(void **state)
{
    struct sketch s;
    double got;
    int i;

    (void)state;
    sketch_init(&s);
    /* ranks 1..99 are 1 ms, rank 100 is 1 s: ceil(0.99 * 100) is 99, and
     * floating point must not make it 100 */
    for (i = 0; i < 99; i++)
        sketch_add(&s, 1000);
    sketch_add(&s, 1000000);
    assert_int_equal(sketch_quantile(&s, 0.99, &got), 0);
    assert_close(got, 1000, "p99 of 100", 990000);
    assert_int_equal(sketch_quantile(&s, 0.991, &got), 0);
    assert_true(got == 1000000.0);
    assert_int_equal(sketch_quantile(&s, 1.0, &got), 0);
    assert_true(got == 1000000.0);
}

static void
merge_equals_one_sketch(void **state)
{
    struct sketch *all = malloc(sizeof(*all)), *part = malloc(3 * sizeof(*part)),
                  *merged = malloc(sizeof(*merged));
    size_t i;
    double a, b;

    (void)state;
    rng_state = 99;
    sketch_init(all);
    sketch_init(merged);
    for (i = 0; i < 3; i++)
        sketch_init(&part[i]);
    for (i = 0; i < 50000; i++) {
        uint64_t v = i % 7 == 0 ? 0 : i % 11 == 0 ? SKETCH_VALUE_MAX : log_uniform(33);

        sketch_add(all, v);
        sketch_add(&part[rng() % 3], v);
    }
    for (i = 0; i < 3; i++)
        sketch_merge(merged, &part[i]);
    assert_int_equal(merged->count, all->count);
    assert_int_equal(merged->zero, all->zero);
    assert_int_equal(merged->overflow, all->overflow);
    assert_int_equal(merged->min, all->min);
    assert_int_equal(merged->max, all->max);
    assert_int_equal(merged->lo, all->lo);
    assert_int_equal(merged->hi, all->hi);
    assert_memory_equal(merged->bins, all->bins, sizeof(all->bins));
    for (i = 0; i <= 1000; i++) {
        assert_int_equal(sketch_quantile(merged, (double)i / 1000, &a), 0);
        assert_int_equal(sketch_quantile(all, (double)i / 1000, &b), 0);
        assert_true(a == b);
    }
    free(all);
    free(part);
    free(merged);
}

static void
bin_layout(void **state)
{
    size_t i;
    uint64_t v;

    (void)state;
    /* 1 us .. 1 h fits; the last bin ends past an hour */
    assert_true(sketch_bin_upper(SKETCH_BINS - 1) >= 3600e6);
    assert_int_equal(sketch_bin_of(1), 0);
    assert_int_equal(sketch_bin_of(3600000000ULL) < SKETCH_BINS, 1);
    assert_int_equal(sketch_bin_of(SKETCH_VALUE_MAX), SKETCH_BINS);
    /* every value lies in (upper[i-1], upper[i]] and its bin's
     * representative is within a of it */
    rng_state = 7;
    for (i = 0; i < 100000; i++) {
        size_t b;
        double rel;

        v = log_uniform(30);
        b = sketch_bin_of(v);
        assert_true(b < SKETCH_BINS);
        assert_true((double)v <= sketch_bin_upper(b));
        if (b > 0)
            assert_true((double)v > sketch_bin_upper(b - 1));
        rel = (sketch_bin_value(b) - (double)v) / (double)v;
        assert_true(rel <= TOLERANCE && rel >= -TOLERANCE);
    }
}

static void
overflow_answers_with_the_max(void **state)
{
    struct sketch s;
    double got;

    (void)state;
    sketch_init(&s);
    sketch_add(&s, 10);
    sketch_add(&s, 5000000000ULL);     /* 83 min: past the last bin */
    sketch_add(&s, UINT64_MAX);          /* clamped to 2^53 */
    assert_int_equal(s.overflow, 2);
    assert_int_equal(s.max, SKETCH_VALUE_MAX);
    assert_int_equal(sketch_quantile(&s, 1.0, &got), 0);
    assert_true(got == (double)SKETCH_VALUE_MAX);
    assert_int_equal(sketch_quantile(&s, 0.3, &got), 0);
    assert_close(got, 10, "p30", 300000);
}

static void
full_bin_refuses_and_counts(void **state)
{
    struct sketch *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));

    (void)state;
    sketch_init(a);
    sketch_init(b);
    sketch_add(a, 100);
    a->bins[sketch_bin_of(100)] = UINT32_MAX;     /* as if 4 billion were added */
    a->count = UINT32_MAX;
    assert_int_equal(sketch_add(a, 100), -1);
    assert_int_equal(a->dropped, 1);
    assert_int_equal(a->count, UINT32_MAX);
    sketch_add(b, 100);
    sketch_add(b, 100);
    sketch_merge(a, b);
    assert_int_equal(a->bins[sketch_bin_of(100)], UINT32_MAX);
    assert_int_equal(a->count, UINT32_MAX);
    assert_int_equal(a->dropped, 3);
    free(a);
    free(b);
}

/* --- window --------------------------------------------------------------- */

static void
window_rotation_drops_old_slices(void **state)
{
    struct sketch_window w;
    struct sketch *m = malloc(sizeof(*m));
    int64_t t0 = 1000000;       /* monotonic clocks start anywhere */
    double got;
    int i;

    (void)state;
    assert_int_equal(sketch_window_init(&w, 60000, 12), 0);
    assert_int_equal(w.slice_ms, 5000);
    assert_int_equal(sketch_window_count(&w, t0), 0);
    assert_int_equal(sketch_window_bytes(&w), sizeof(w));   /* lazy */

    for (i = 0; i < 100; i++)
        assert_int_equal(sketch_window_add(&w, t0, 1000), 0);   /* slice 200 */
    assert_int_equal(sketch_window_bytes(&w), sizeof(w) + sizeof(struct sketch));
    for (i = 0; i < 10; i++)
        assert_int_equal(sketch_window_add(&w, t0 + 30000, 2000000), 0);
    assert_int_equal(sketch_window_count(&w, t0 + 30000), 110);

    sketch_init(m);
    sketch_window_merge(&w, t0 + 30000, m);
    assert_int_equal(sketch_quantile(m, 0.5, &got), 0);
    assert_close(got, 1000, "window p50", 500000);
    assert_int_equal(sketch_quantile(m, 0.99, &got), 0);
    assert_true(got == 2000000.0);     /* the max: clamped */

    /* t0's slice (epoch 200) lives through epoch 211, i.e. until t0 + 60 s */
    assert_int_equal(sketch_window_count(&w, t0 + 59999), 110);
    assert_int_equal(sketch_window_count(&w, t0 + 60000), 10);
    sketch_reset(m);
    sketch_window_merge(&w, t0 + 60000, m);
    assert_int_equal(m->count, 10);
    assert_int_equal(sketch_quantile(m, 0.5, &got), 0);
    assert_true(got == 2000000.0);
    /* and everything is gone a window after the last sample */
    assert_int_equal(sketch_window_count(&w, t0 + 90000), 0);
    sketch_reset(m);
    sketch_window_merge(&w, t0 + 90000, m);
    assert_int_equal(sketch_quantile(m, 0.99, &got), -1);

    /* reusing a slot resets it: slot of epoch 200 again at epoch 212 */
    assert_int_equal(sketch_window_add(&w, t0 + 60000, 7), 0);
    assert_int_equal(sketch_window_count(&w, t0 + 60000), 11);
    sketch_reset(m);
    sketch_window_merge(&w, t0 + 60000, m);
    assert_int_equal(m->min, 7);
    assert_int_equal(m->max, 2000000);
    assert_int_equal(sketch_window_bytes(&w), sizeof(w) + 2 * sizeof(struct sketch));

    /* a late sample (clock stepped back) never wipes a newer slice */
    assert_int_equal(sketch_window_add(&w, t0, 9), 0);
    assert_int_equal(sketch_window_count(&w, t0 + 60000), 12);

    sketch_window_release(&w);
    free(m);
}

static void
window_every_slice(void **state)
{
    struct sketch_window w;
    int64_t t;

    (void)state;
    /* one sample per second for 3 minutes: always 60 live, minus the
     * part of the oldest slice that has left */
    assert_int_equal(sketch_window_init(&w, 60000, 12), 0);
    for (t = 0; t < 180000; t += 1000) {
        uint64_t n;

        assert_int_equal(sketch_window_add(&w, t, (uint64_t)t + 1), 0);
        n = sketch_window_count(&w, t);
        if (t >= 60000)
            assert_true(n >= 56 && n <= 60);
    }
    assert_int_equal(sketch_window_bytes(&w), sizeof(w) + 12 * sizeof(struct sketch));
    sketch_window_release(&w);
    /* odd windows round the slice up, so the window is never shorter */
    assert_int_equal(sketch_window_init(&w, 1000, 12), 0);
    assert_int_equal(w.slice_ms, 84);
    sketch_window_release(&w);
    assert_int_equal(sketch_window_init(&w, 0, 12), -1);
    assert_int_equal(sketch_window_init(&w, 1000, SKETCH_WINDOW_SLICES_MAX + 1), -1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uniform_input),
        cmocka_unit_test(log_uniform_input),
        cmocka_unit_test(bimodal_input),
        cmocka_unit_test(constant_input_is_exact),
        cmocka_unit_test(empty_sketch),
        cmocka_unit_test(rank_is_exact_for_p99_of_100),
        cmocka_unit_test(merge_equals_one_sketch),
        cmocka_unit_test(bin_layout),
        cmocka_unit_test(overflow_answers_with_the_max),
        cmocka_unit_test(full_bin_refuses_and_counts),
        cmocka_unit_test(window_rotation_drops_old_slices),
        cmocka_unit_test(window_every_slice),
    };

    return cmocka_run_group_tests_name("sketch", tests, NULL, NULL);
}
