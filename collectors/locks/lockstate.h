/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstate.h - the one judge of a lock's state and the one pattern check.
 *
 * The agent's scanner, lockctl and the HTTP API must call the same lock
 * leaked, long or reentrant_high, and agree on which keys are locks at
 * all; so the rules ([rules] leak_grace, max_hold, max_reentrancy) are
 * written here once, and each caller brings what it knows.  The scanner
 * knows, from its tracker, when the current holder was first seen and
 * since when the key has had no TTL; lockctl, which keeps nothing between
 * runs, knows only what it reads now: the holder's starting age (the
 * larger of OBJECT IDLETIME and the acquisition time the format encodes)
 * stands in for both.  Pure functions: no I/O, no allocation, no clock.
 */
#ifndef LOCKWATCH_LOCKSTATE_H
#define LOCKWATCH_LOCKSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

/* The [rules] that decide the states, struct lockstate_rules, are the
 * config's own (conf/config.h, cfg->rules.judge): callers pass that. */

/* What the caller knows of one lock at the time it judges it. */
struct lockstate_facts {
    int64_t pttl_ms;            /* PTTL: -1 when the key has no TTL */
    size_t nholders;            /* holders the format names (0: it names none) */
    int64_t max_count;          /* highest hold count of any holder */
    int64_t held_ms;            /* how long the current holder has held it */
    int64_t nottl_ms;           /* how long the key has been without a TTL;
                                 * negative when it has one or nobody knows */
    bool semaphore;             /* a count of permits (the row's FMT_SEM_COUNT, lockfacts_fill()):
                                 * no TTL by design, its "holder" is a count */
};

/*
 * The LOCK_* states (collectors/locks/snapshot.h) of a lock: always
 * LOCK_HELD; LOCK_LEAKED when it has no TTL and has been without one for
 * at least leak_grace; LOCK_LONG when a named holder has held it for
 * more than max_hold; LOCK_REENTRANT_HIGH when max_reentrancy is set and
 * a hold count is at or above it.  A semaphore is never leaked or long.
 */
uint8_t lockstate_judge(const struct lockstate_rules *rules, const struct lockstate_facts *f);

/*
 * How old a holder is at least when all one knows is what Redis says now:
 * the larger of idle_s less a second (OBJECT IDLETIME, whose clock ticks
 * in whole seconds; negative when unknown) and the
 * time since acquired_ms (the format's acquisition time; 0 when unknown,
 * counted as 0 when it lies ahead of now_ms: the holder's clock may run
 * ahead of ours).  Never negative.  *acquired (may be NULL) says whether
 * the acquisition time gave the age (it wins a tie).
 */
int64_t lockstate_start_age(long long idle_s, int64_t acquired_ms, int64_t now_ms,
                            bool *acquired);

/*
 * Is the key (keylen bytes, any bytes) one of the target's locks: does it
 * match one of its patterns, in the SCAN MATCH dialect
 * (collectors/locks/lockclass.h class_glob_match())?
 */
bool lockstate_in_patterns(const struct target_conf *t, const char *key, size_t keylen);

/*
 * The states a --state / ?state= name selects: "leaked", "long",
 * "reentrant_high", or "held" and "all" (every lock).  0, or -1 for any
 * other name.
 */
int lockstate_mask(const char *name, uint8_t *mask);

#endif
