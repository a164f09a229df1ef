/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pace.h - the least spacing between the deliveries to one receiver: when
 * a sink whose receiver limits its rate (Slack: one message per second per
 * incoming webhook) may start its next attempt.
 *
 * The spacing runs from the end of the previous attempt (its answer, or
 * its failure), not from its start: the receiver saw that request before
 * it answered, and the next one leaves only after the spacing, so the
 * receiver sees arrivals at least interval_ms apart whatever the network
 * latency.  A retry is an attempt like any other.  Nothing is dropped
 * here: a notice that may not go yet waits in its sink's bounded queue
 * (notifier.h), which counts what it has to drop.
 *
 * Pure: the caller passes the monotonic clock.
 */
#ifndef LOCKWATCH_PACE_H
#define LOCKWATCH_PACE_H

#include <stdbool.h>
#include <stdint.h>

/* The attempts that ended, of one sink; zeroed: none yet. */
struct pace {
    int64_t last_end_mono;      /* when the last attempt ended */
    bool any;                   /* an attempt has ended */
};

/*
 * When an attempt that is otherwise due at due_mono (its retry backoff,
 * or now) may start, for a receiver that wants interval_ms between
 * requests (0: no spacing) and whose last attempt is last (NULL: none):
 * due_mono, or later if the spacing has not passed.  With several sinks
 * posting to one receiver, last is the latest of their paces (pace_later).
 */
int64_t pace_start_at(int64_t interval_ms, const struct pace *last, int64_t due_mono);

/* The later-ending of two paces of one receiver; either may be NULL. */
const struct pace *pace_later(const struct pace *a, const struct pace *b);

/* An attempt ended at now_mono. */
void pace_ended(struct pace *p, int64_t now_mono);

#endif
