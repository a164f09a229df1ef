/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lostview.h - the pure half of "locks lost at a failover, restart or
 * flush": did the server under a target change between two views, and
 * the bounded list of the locks lost, oldest hold first.
 *
 * The scanner (collectors/scan/lost.c) holds the last view before a
 * change and compares it with the first complete view after; what it
 * finds it notes here, into the struct snap_lost the target's snapshots
 * carry (snapshot.h).  Pure: no I/O, no clock, no locks.
 */
#ifndef LOCKWATCH_LOSTVIEW_H
#define LOCKWATCH_LOSTVIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "collectors/locks/snapshot.h"

/* "restart", "failover", "flush", "swapdb" (the cause label). */
const char *lost_cause_name(enum lost_cause c);

/* How a text says the change: "a SWAPDB", with *prep "on" (before the
 * node: "a SWAPDB on N", "a failover to N"). */
const char *lost_cause_words(enum lost_cause c, const char **prep);

/*
 * Did the server serving a view change between was (read on was_node,
 * "host:port") and now (on now_node)?  true with *cause: another run_id
 * on another address is a failover, on the same address a restart; the
 * same run_id with another replication ID (a full sync from another
 * primary, a promotion) a failover; the same run_id with other flush
 * counts, or statistics reset, is a flush, with other SWAPDB counts a
 * swapdb.  false when either identity
 * is unknown (INFO refused) or nothing changed.
 */
bool lost_server_changed(const struct server_id *was, const char *was_node,
                         const struct server_id *now, const char *now_node,
                         enum lost_cause *cause);

/* The worse of two causes, for a view of several nodes (a cluster):
 * failover, then restart, then flush, then swapdb. */
enum lost_cause lost_cause_worse(enum lost_cause a, enum lost_cause b);

/* Is one of l's holders the one whose 32-bit hash (common/keyhash.h, cut
 * to 32 bits, as the tracker keeps it) is holder_hash?  A lock with no
 * holder named, or whose holders were cut by the read caps, counts as
 * held by it (nothing says otherwise). */
bool lost_same_holder(const struct snap_lock *l, uint32_t holder_hash);

/* Count lock l as lost into out (taken: there after, by another holder),
 * and name it if its hold is among the LOST_LIST_MAX oldest noted.
 * Returns the index it took in out->listed (those from there on moved up
 * one, the last one out when the list was full), -1 when not named. */
int lost_note(struct snap_lost *out, const struct snap_lock *l, bool taken);

#endif
