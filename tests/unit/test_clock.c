/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_clock.c - the monotonic deadline helpers of common/clock.h: a
 * deadline in the past times out at once, a timed wait ends at (never
 * before) its deadline, a negative timeout never ends, a signal ends a
 * wait early.  The waits are real but short (at most a few hundred ms);
 * upper bounds are loose, since the machine may be busy.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "common/clock.h"

#define SLACK_MS 2000           /* how late a wake-up may be on a loaded machine */

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t deadline;
    bool go;                    /* the predicate: set under mu, then signalled */
    bool done;
    int rc;
};

static void
waiter_init(struct waiter *w, int64_t deadline)
{
    pthread_mutex_init(&w->mu, NULL);
    assert_int_equal(clock_cond_init(&w->cv), 0);
    w->deadline = deadline;
    w->go = false;
    w->done = false;
    w->rc = -1;
}

static void
waiter_destroy(struct waiter *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* Wait for go or the deadline, looping over spurious wake-ups. */
static void *
waiter_main(void *arg)
{
    struct waiter *w = arg;
    int rc = 0;

    pthread_mutex_lock(&w->mu);
    while (!w->go && rc != ETIMEDOUT)
        rc = clock_cond_wait_until(&w->cv, &w->mu, w->deadline);
    w->rc = rc;
    w->done = true;
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void
negative_timeout_is_never(void **state)
{
    (void)state;
    assert_true(clock_deadline(-1) == INT64_MAX);
    assert_true(clock_deadline(INT64_MIN) == INT64_MAX);
    assert_true(clock_deadline_us(-1) == INT64_MAX);
    assert_true(clock_left(INT64_MAX) > 0);
}

static void
deadline_is_now_plus_timeout(void **state)
{
    int64_t before, d, after;

    (void)state;
    before = clock_mono_ms();
    d = clock_deadline(250);
    after = clock_mono_ms();
    assert_true(d >= before + 250 && d <= after + 250);
    assert_true(clock_left(d) <= 250);
    assert_true(clock_deadline(0) <= clock_mono_ms());

    before = clock_mono_us();
    d = clock_deadline_us(250000);
    after = clock_mono_us();
    assert_true(d >= before + 250000 && d <= after + 250000);
    assert_true(clock_left_us(d) <= 250000);
}

static void
left_is_zero_once_passed(void **state)
{
    (void)state;
    assert_int_equal(clock_left(clock_mono_ms() - 1), 0);
    assert_int_equal(clock_left(0), 0);
    assert_int_equal(clock_left_us(clock_mono_us() - 1), 0);
    assert_int_equal(clock_left_us(0), 0);
}

/* A deadline already passed times out without waiting at all: no one
 * signals, and the call still returns. */
static void
past_deadline_times_out_at_once(void **state)
{
    struct waiter w;
    int64_t t0;
    int rc;

    (void)state;
    waiter_init(&w, 0);
    t0 = clock_mono_ms();
    pthread_mutex_lock(&w.mu);
    rc = clock_cond_wait_until(&w.cv, &w.mu, clock_mono_ms() - 1000);
    assert_int_equal(rc, ETIMEDOUT);
    rc = clock_cond_wait_until(&w.cv, &w.mu, clock_deadline(0));
    assert_int_equal(rc, ETIMEDOUT);
    pthread_mutex_unlock(&w.mu);
    assert_true(clock_mono_ms() - t0 < SLACK_MS);
    waiter_destroy(&w);
}

/* A timed wait with no signal ends at its deadline, never before. */
static void
wait_ends_at_its_deadline(void **state)
{
    struct waiter w;
    int64_t t0, end;

    (void)state;
    t0 = clock_mono_ms();
    waiter_init(&w, clock_deadline(120));
    waiter_main(&w);
    end = clock_mono_ms();
    assert_int_equal(w.rc, ETIMEDOUT);
    assert_true(end >= w.deadline);
    assert_true(end - t0 >= 120);
    assert_true(end - t0 < 120 + SLACK_MS);
    waiter_destroy(&w);
}

/* A signal ends a wait long before its deadline, with 0. */
static void
signal_ends_wait_early(void **state)
{
    struct waiter w;
    pthread_t th;
    int64_t t0;

    (void)state;
    waiter_init(&w, clock_deadline(60000));
    t0 = clock_mono_ms();
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
    sleep_ms(30);
    pthread_mutex_lock(&w.mu);
    w.go = true;
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(th, NULL);
    assert_true(w.done);
    assert_int_equal(w.rc, 0);
    assert_true(clock_mono_ms() - t0 < SLACK_MS + 30);
    waiter_destroy(&w);
}

/* A wait on the deadline of a negative timeout (INT64_MAX) does not end
 * by itself; a signal ends it. */
static void
negative_timeout_waits_until_signalled(void **state)
{
    struct waiter w;
    pthread_t th;
    bool done;

    (void)state;
    waiter_init(&w, clock_deadline(-1));
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
    sleep_ms(300);
    pthread_mutex_lock(&w.mu);
    done = w.done;
    w.go = true;
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(th, NULL);
    assert_false(done);
    assert_true(w.done);
    assert_int_equal(w.rc, 0);
    waiter_destroy(&w);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(negative_timeout_is_never),
        cmocka_unit_test(deadline_is_now_plus_timeout),
        cmocka_unit_test(left_is_zero_once_passed),
        cmocka_unit_test(past_deadline_times_out_at_once),
        cmocka_unit_test(wait_ends_at_its_deadline),
        cmocka_unit_test(signal_ends_wait_early),
        cmocka_unit_test(negative_timeout_waits_until_signalled),
    };

    return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
