/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_pace.c - the spacing between deliveries to a rate-limited receiver
 * (alerts/pace.h), with the clock passed in: a burst waits its turn one
 * interval after each attempt ends, a retry's own backoff wins when it is
 * later, and sinks sharing a receiver share its spacing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alerts/pace.h"

static void
first_attempt_goes_at_once(void **state)
{
    struct pace p = { 0 };

    (void)state;
    assert_int_equal(pace_start_at(1000, &p, 5000), 5000);
    assert_int_equal(pace_start_at(1000, NULL, 5000), 5000);
}

/* A burst of five notices, each attempt taking 30 ms: every one starts a
 * full interval after the previous one ended, so starts are 1030 ms apart
 * and no two arrivals are closer than the interval. */
static void
burst_is_spaced_from_each_end(void **state)
{
    struct pace p = { 0 };
    int64_t now = 10000, start, prev_end = -1;
    int i;

    (void)state;
    for (i = 0; i < 5; i++) {
        start = pace_start_at(1000, &p, now);
        if (prev_end >= 0)
            assert_int_equal(start, prev_end + 1000);
        else
            assert_int_equal(start, now);
        now = start + 30;           /* the attempt's round trip */
        pace_ended(&p, now);
        prev_end = now;
    }
    assert_int_equal(prev_end, 10000 + 4 * 1030 + 30);
}

static void
later_due_time_wins(void **state)
{
    struct pace p = { 0 };

    (void)state;
    pace_ended(&p, 2000);
    /* a retry backed off until 4500: the spacing (3000) is already kept */
    assert_int_equal(pace_start_at(1000, &p, 4500), 4500);
    /* due at 2100: held until 3000 */
    assert_int_equal(pace_start_at(1000, &p, 2100), 3000);
    /* exactly at the boundary */
    assert_int_equal(pace_start_at(1000, &p, 3000), 3000);
}

static void
no_limit_means_no_wait(void **state)
{
    struct pace p = { 0 };

    (void)state;
    pace_ended(&p, 2000);
    assert_int_equal(pace_start_at(0, &p, 2001), 2001);
    assert_int_equal(pace_start_at(-5, &p, 2001), 2001);
}

static void
shared_receiver_takes_the_latest_end(void **state)
{
    struct pace a = { 0 }, b = { 0 }, none = { 0 };

    (void)state;
    pace_ended(&a, 1000);
    pace_ended(&b, 1700);
    assert_ptr_equal(pace_later(&a, &b), &b);
    assert_ptr_equal(pace_later(&b, &a), &b);
    assert_ptr_equal(pace_later(&none, &a), &a);
    assert_ptr_equal(pace_later(&a, &none), &a);
    assert_ptr_equal(pace_later(NULL, &a), &a);
    assert_int_equal(pace_start_at(1000, pace_later(&a, &b), 1800), 2700);
}

/* The clock is monotonic, but an end booked out of order must not move
 * the spacing back. */
static void
an_earlier_end_does_not_rewind(void **state)
{
    struct pace p = { 0 };

    (void)state;
    pace_ended(&p, 5000);
    pace_ended(&p, 4000);
    assert_int_equal(pace_start_at(1000, &p, 0), 6000);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_attempt_goes_at_once),
        cmocka_unit_test(burst_is_spaced_from_each_end),
        cmocka_unit_test(later_due_time_wins),
        cmocka_unit_test(no_limit_means_no_wait),
        cmocka_unit_test(shared_receiver_takes_the_latest_end),
        cmocka_unit_test(an_earlier_end_does_not_rewind),
    };

    return cmocka_run_group_tests_name("pace", tests, NULL, NULL);
}
