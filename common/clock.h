/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.h - the process's two clocks, in milliseconds.
 *
 * clock_now_ms() is Unix time (CLOCK_REALTIME): what goes on the wire, in
 * JSON and in Redis values.  clock_mono_ms() is CLOCK_MONOTONIC: every
 * interval, deadline and timeout, so a clock step never shortens or
 * stretches one.  Header-only (static inline) so that liblockwatch, which
 * links nothing of the agent, uses the same two.
 */
#ifndef LOCKWATCH_CLOCK_H
#define LOCKWATCH_CLOCK_H

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

#endif
