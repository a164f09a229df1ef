/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * released.h - the releases holders reported: what lets a lock gone at a
 * change of server (a restart, a failover, a flush) be told from a lock
 * released just before it.
 *
 * In scan mode nothing in Redis shows a release made between the last
 * scan before the change and the change: the key is gone either way.  A
 * holder that reports its waits and holds (liblockwatch, the reporters)
 * sends a 6-field `hold` line when it releases, naming the key and its
 * holder id, a `lost` line when its lease ended while held (a release
 * that found the lock gone sends both), and a 7-field `wait` or a
 * `waiting` end, outcome ok, when it acquires.  Each such line is
 * remembered here by the hash of (key, holder): the arrival of the last
 * `hold` and `lost`, and the order of the last acquire, hold and loss.
 * The scanner (collectors/scan/lost.c) asks released_since() for each
 * lock of the view before the change that is gone: a holder that
 * reported its release after that view was started, did not acquire the
 * key again after that release (a holder id is often reused: Redisson's
 * "<uuid>:<thread>", a constant "1"), and reported no loss since, released
 * it; the lock is not counted lost.
 *
 * Like lease.c: process-wide, one mutex, static memory, at most
 * RELEASED_MAX pairs (the oldest noted goes first); an unsigned line can
 * be forged by any sender that knows the key and holder id
 * (docs/line-protocol.md: `[samples] key_file` signs them).
 */
#ifndef LOCKWATCH_RELEASED_H
#define LOCKWATCH_RELEASED_H

#include <stdbool.h>
#include <stdint.h>

#define RELEASED_MAX 4096           /* (key, holder) pairs remembered */

enum released_what {
    RELEASED_ACQUIRE,           /* a 7-field wait or a waiting end, ok */
    RELEASED_HOLD,              /* a 6-field hold: released */
    RELEASED_LOST,              /* a lost line */
};

/* A line of holder_hash ((uint32_t)keyhash() of its id) on key_hash
 * (keyhash() of the key) saying what arrived at at_ms (Unix ms); lines are
 * noted in the order they arrive. */
void released_note(uint64_t key_hash, uint32_t holder_hash, enum released_what what,
                   int64_t at_ms);

/* Did the holder report releasing the key at or after since_ms (Unix ms),
 * with no acquire of it after that release and no loss reported since
 * since_ms? */
bool released_since(uint64_t key_hash, uint32_t holder_hash, int64_t since_ms);

/* Forget everything (tests). */
void released_reset(void);

#endif
