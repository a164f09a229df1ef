/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.h - the process's two clocks, in milliseconds.
 *
 * clock_now_ms() is Unix time (CLOCK_REALTIME): what goes on the wire, in
 * JSON and in Redis values.  clock_mono_ms() is CLOCK_MONOTONIC: every
 * interval, deadline and timeout, so a clock step never shortens or
 * stretches one.  Header-only (static inline) so that liblockwatch, which
 * links nothing of the agent, uses the same two.
 *
 * Deadlines are monotonic ms (clock_deadline(); the client's are us,
 * clock_deadline_us()), INT64_MAX for never; every timed wait on a
 * condition variable waits for one with clock_cond_wait_until(), on a
 * condition variable made by clock_cond_init() (its timed waits count on
 * CLOCK_MONOTONIC: a wall clock stepped back would otherwise stall the
 * waiter for as long as the step).
 */
#ifndef LOCKWATCH_CLOCK_H
#define LOCKWATCH_CLOCK_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline int64_t
clock_ms_of(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t
clock_now_ms(void)
{
    return clock_ms_of(CLOCK_REALTIME);
}

static inline int64_t
clock_mono_ms(void)
{
    return clock_ms_of(CLOCK_MONOTONIC);
}

/* Monotonic microseconds, for the client's wait and hold samples. */
static inline int64_t
clock_mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The monotonic ms at which a timeout of timeout_ms from now ends;
 * INT64_MAX (never) for a negative timeout. */
static inline int64_t
clock_deadline(int64_t timeout_ms)
{
    if (timeout_ms < 0)
        return INT64_MAX;
    return clock_mono_ms() + timeout_ms;
}

/* Milliseconds left until deadline_ms (monotonic), 0 once it has passed. */
static inline int64_t
clock_left(int64_t deadline_ms)
{
    int64_t now = clock_mono_ms();

    return deadline_ms > now ? deadline_ms - now : 0;
}

/* The same two in microseconds (clock_mono_us()), for liblockwatch, whose
 * waits, leases and samples count in them. */
static inline int64_t
clock_deadline_us(int64_t timeout_us)
{
    if (timeout_us < 0)
        return INT64_MAX;
    return clock_mono_us() + timeout_us;
}

static inline int64_t
clock_left_us(int64_t deadline_us)
{
    int64_t now = clock_mono_us();

    return deadline_us > now ? deadline_us - now : 0;
}

/* Initialise cv so that its timed waits count on CLOCK_MONOTONIC.  0, or
 * an errno value. */
static inline int
clock_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    int rc;

    if ((rc = pthread_condattr_init(&ca)) != 0)
        return rc;
    if ((rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) == 0)
        rc = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

/* Wait on cv (made by clock_cond_init(), mu held) until it is signalled
 * or the monotonic deadline_ms passes: 0, or ETIMEDOUT once it has passed
 * (at once when it already had).  INT64_MAX waits without a timeout.
 * Spurious wake-ups return 0, as pthread_cond_wait's do: loop on the
 * predicate. */
static inline int
clock_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
    struct timespec ts;

    if (deadline_ms == INT64_MAX)
        return pthread_cond_wait(cv, mu);
    if (clock_left(deadline_ms) == 0)
        return ETIMEDOUT;
    ts.tv_sec = (time_t)(deadline_ms / 1000);
    ts.tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
    return pthread_cond_timedwait(cv, mu, &ts);
}

#endif
