/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lostat.h - the locks a change of server lost (a failover, a restart, a
 * flush: collectors/scan/lost.c), each by (key, holder), with where and
 * when: what tells a holder's own `lost` line for such a lock from a loss
 * of its own.  The holder learns of it at its next renewal or release,
 * before or after the agent's next scan sees the change; either way it
 * is the same loss, which LockLostAtFailover tells, and its line raises
 * no LockLeaseLost (alerts/alerts.c asks lostat_explains() of every
 * lease_lost event it judges).
 *
 * A line explains itself by the holding it reports: the one the view
 * before the change saw held (its holding began no later than that view
 * finished, LOSTAT_SLACK_MS allowed, and was reported lost after the view
 * started), on the same target when the line's lock has one, reported
 * within LOSTAT_KEEP_MS of the change.  A later holding of the same key
 * by the same holder id (a Redisson thread's id is constant) is another
 * loss.
 *
 * Every lock a change lost is noted, every holder the view kept of it
 * (a lock with more holders than it kept is noted for any holder:
 * LOSTAT_ANY_HOLDER), not only the ones the alert names; like released.c:
 * process-wide, one mutex, static memory, at most LOSTAT_MAX pairs over
 * every target (more than one view keeps: the oldest noted goes first, a
 * line whose loss was forgotten pages as its own; alerts.c remembers a
 * line it found explained).
 */
#ifndef LOCKWATCH_LOSTAT_H
#define LOCKWATCH_LOSTAT_H

#include <stdbool.h>
#include <stdint.h>

#define LOSTAT_MAX      32768                   /* (key, holder) pairs */
#define LOSTAT_ANY_HOLDER 1u                    /* holder_hash: any holder */
#define LOSTAT_KEEP_MS  (15 * 60 * 1000)        /* a line this long after */
#define LOSTAT_SLACK_MS 1000                    /* clocks and arrival */

/* The lock key_hash (keyhash() of the key) held by holder_hash
 * ((uint32_t)keyhash() of its id, or LOSTAT_ANY_HOLDER) on the target
 * target_hash (keyhash() of its name), seen held by the view started at
 * started_ms and finished at finished_ms, was lost at a change of server
 * found at lost_ms (Unix ms). */
void lostat_note(uint64_t key_hash, uint32_t holder_hash, uint64_t target_hash,
                 int64_t started_ms, int64_t finished_ms, int64_t lost_ms);

/* Is a holder's line, reported at reported_ms, of a holding it began at
 * acquired_ms, the loss of such a lock?  target_hash 0: the line's lock
 * has no target (any target's loss explains it). */
bool lostat_explains(uint64_t key_hash, uint32_t holder_hash, uint64_t target_hash,
                     int64_t acquired_ms, int64_t reported_ms);

/* Forget everything (tests). */
void lostat_reset(void);

#endif
