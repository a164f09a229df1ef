/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockfacts.h - what every reader of a lock makes of it before the judge
 * (lockstate.h) sees it: its row of the format table, its holders, whether
 * it is a semaphore, and the row its helper keys give it.
 *
 * The agent's scanner (collectors/scan/record.c, helperkeys.c), follow
 * mode and lockctl (cli/inspect.c, cli/verdict.c) read keys in their own
 * ways, but from the bytes read on they must agree on what the lock is;
 * so the steps that turn a read into facts are here once, and every
 * difference between formats is a column of the row (formats.h), never a
 * name.  Pure functions: no I/O, no allocation, no clock.
 */
#ifndef LOCKWATCH_LOCKFACTS_H
#define LOCKWATCH_LOCKFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/formats/formats.h"
#include "collectors/locks/lockstate.h"
#include "conf/config.h"

/*
 * Decode one key read from target t into *view and return its row: the
 * table's pick (formats_decode()); then, when that row proves nothing but
 * a fallback (FMT_PROVES_FALLBACK, "plain") and the key is in t's
 * semaphore_patterns, the semaphore row when the value is a count
 * (formats_semaphore()); then the holders past the read cap (hlen: HLEN or
 * ZCARD, -1 unknown) counted in holders_total.
 */
const struct lock_format *lockfacts_decode(const struct target_conf *t,
                                           const struct raw_lock *raw, long long hlen,
                                           struct lock_view *view);

/*
 * The judge's facts of a lock of row fmt (NULL: none known): the caller's
 * PTTL, holders, highest hold count, holder age and time without a TTL,
 * and the semaphore flag from fmt's semaphore column.
 */
void lockfacts_fill(struct lockstate_facts *f, const struct lock_format *fmt,
                    int64_t pttl_ms, size_t nholders, int64_t max_count, int64_t held_ms,
                    int64_t nottl_ms);

/*
 * The row a lock of row fmt becomes given its helper keys' kinds (a bit
 * set, formats_kin()); *ttl_optional (may be NULL) says that row lives
 * without a TTL by design (its semaphore column), so a LOCK_LEAKED judged
 * before it was known is to go.
 */
const struct lock_format *lockfacts_kin(const struct lock_format *fmt, unsigned helper_kinds,
                                        bool *ttl_optional);

#endif
