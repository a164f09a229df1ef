/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tracker.c - first-seen tracking across scan passes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "collectors/scan/tracker.h"

/* one holder hash, as a one-element list */
static const uint32_t *
hs(uint64_t h)
{
    static uint32_t one[64];
    static unsigned n;

    n = (n + 1) % 64;
    one[n] = (uint32_t)h;
    return &one[n];
}

static void
age_survives_renewals_and_restarts_on_new_holder(void **state)
{
    struct tracker *t = tracker_new();
    struct track_result r;

    (void)state;
    assert_non_null(t);
    assert_int_equal(tracker_visit(t, 42, hs(7), 1, 1, 10000, 0, 1, &r), 0);
    assert_int_equal(r.first_seen_ms, 10000);
    /* same holder, later passes (a watchdog renewal changes nothing) */
    tracker_visit(t, 42, hs(7), 1, 2, 20000, 0, 1, &r);
    tracker_visit(t, 42, hs(7), 1, 3, 30000, 0, 1, &r);
    assert_int_equal(r.first_seen_ms, 10000);
    /* a new holder restarts the clock, back-dated by its idle time */
    tracker_visit(t, 42, hs(8), 1, 4, 40000, 500, 1, &r);
    assert_int_equal(r.first_seen_ms, 39500);
    tracker_free(t);
}

static void
start_age_backdates_new_entries(void **state)
{
    struct tracker *t = tracker_new();
    struct track_result r;

    (void)state;
    tracker_visit(t, 1, hs(1), 1, 1, 100000, 60000, 0, &r);
    assert_int_equal(r.first_seen_ms, 40000);
    assert_int_equal(r.nottl_since_ms, 40000);  /* no TTL since it appeared */
    tracker_free(t);
}

static void
ttl_loss_and_gain_tracked(void **state)
{
    struct tracker *t = tracker_new();
    struct track_result r;

    (void)state;
    tracker_visit(t, 5, hs(1), 1, 1, 1000, 0, 1, &r);
    assert_int_equal(r.nottl_since_ms, 0);
    tracker_visit(t, 5, hs(1), 1, 2, 2000, 0, 0, &r);   /* PERSIST */
    assert_int_equal(r.nottl_since_ms, 2000);
    tracker_visit(t, 5, hs(1), 1, 3, 3000, 0, 0, &r);
    assert_int_equal(r.nottl_since_ms, 2000);
    tracker_visit(t, 5, hs(1), 1, 4, 4000, 0, 1, &r);   /* got a TTL again */
    assert_int_equal(r.nottl_since_ms, 0);
    tracker_free(t);
}

static void
duplicates_within_a_pass(void **state)
{
    struct tracker *t = tracker_new();
    struct track_result r;

    (void)state;
    assert_false(tracker_seen(t, 9, 1));
    tracker_visit(t, 9, hs(1), 1, 1, 0, 0, 1, &r);
    assert_false(r.duplicate);
    assert_true(tracker_seen(t, 9, 1));
    tracker_visit(t, 9, hs(1), 1, 1, 0, 0, 1, &r);
    assert_true(r.duplicate);
    assert_false(tracker_seen(t, 9, 2));
    tracker_free(t);
}

static void
joining_reader_keeps_the_age_leaving_one_passes_it_on(void **state)
{
    struct tracker *t = tracker_new();
    struct track_result r;
    uint32_t a[1] = { 11 }, ab[2] = { 11, 22 }, b[1] = { 22 };

    (void)state;
    tracker_visit(t, 3, a, 1, 1, 1000, 0, 1, &r);
    tracker_visit(t, 3, ab, 2, 2, 5000, 0, 1, &r);
    assert_int_equal(r.first_seen_ms, 1000);     /* B joined: A still timed */
    tracker_visit(t, 3, b, 1, 3, 9000, 0, 1, &r);
    assert_int_equal(r.first_seen_ms, 5000);     /* A left: B's age, not 0 */
    tracker_sweep(t, 3);
    tracker_visit(t, 3, a, 1, 4, 12000, 0, 1, &r);
    assert_int_equal(r.first_seen_ms, 12000);    /* a new holder: restart */
    tracker_free(t);
}

static void
sweep_drops_unseen_and_keeps_seen(void **state)
{
    struct tracker *t = tracker_new();
    struct track_result r;
    uint64_t k;

    (void)state;
    for (k = 1; k <= 100000; k++)
        assert_int_equal(tracker_visit(t, k * 0x9e3779b97f4a7c15ULL | 1, hs(k), 1, 1, 0, 0, 1, &r), 0);
    assert_int_equal(tracker_count(t), 100000);
    for (k = 1; k <= 100000; k += 2)
        tracker_visit(t, k * 0x9e3779b97f4a7c15ULL | 1, hs(k), 1, 2, 5000, 0, 1, &r);
    assert_int_equal(tracker_sweep(t, 2), 50000);
    /* every survivor is still found after the in-place re-pack */
    for (k = 1; k <= 100000; k++)
        assert_int_equal(tracker_seen(t, k * 0x9e3779b97f4a7c15ULL | 1, 2), k % 2 == 1);
    /* a survivor keeps its first-seen time */
    tracker_visit(t, 1 * 0x9e3779b97f4a7c15ULL | 1, hs(1), 1, 3, 9000, 0, 1, &r);
    assert_int_equal(r.first_seen_ms, 0);
    /* a dropped one is new again */
    tracker_visit(t, 2 * 0x9e3779b97f4a7c15ULL | 1, hs(2), 1, 3, 9000, 0, 1, &r);
    assert_int_equal(r.first_seen_ms, 9000);
    tracker_free(t);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(age_survives_renewals_and_restarts_on_new_holder),
        cmocka_unit_test(start_age_backdates_new_entries),
        cmocka_unit_test(ttl_loss_and_gain_tracked),
        cmocka_unit_test(duplicates_within_a_pass),
        cmocka_unit_test(joining_reader_keeps_the_age_leaving_one_passes_it_on),
        cmocka_unit_test(sweep_drops_unseen_and_keeps_seen),
    };

    return cmocka_run_group_tests_name("tracker", tests, NULL, NULL);
}
