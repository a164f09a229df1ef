/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target.h - open a configured target, or the node that serves a key, by
 * the target's mode.
 *
 * This is the one place where [target] mode turns into a node to connect
 * to, for the scanner, lockctl and the agent's release endpoint alike:
 *
 *   standalone  the target's own address
 *   sentinel    the primary the sentinels name now, confirmed with ROLE
 *               (sentinel.h); a caller that keeps its connection between
 *               uses checks it with target_verify(), opens again when it
 *               moved, and fails when no sentinel answers
 *   cluster     the primary that serves the key's hash slot, from a
 *               discovery (CLUSTER SHARDS, else SLOTS) asked of the
 *               target's address (cluster.h); no key: slot 0's primary
 *
 * A node whose address is already known (a shard the scanner streams, the
 * node a MOVED or ASK names) involves no mode: redisconn_node() and
 * redisconn_open() in conn.h open it.  The includes of collectors/redis
 * run conn <- sentinel, cluster <- target; nothing below includes this.
 */
#ifndef LOCKWATCH_TARGET_H
#define LOCKWATCH_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis.h>

#include "conf/config.h"

/*
 * Open t, or (cluster) the node that serves key (keylen bytes; NULL for
 * none).  *node gets a copy of t aimed at the node connected to
 * (redisconn_node(): shallow, mode kept), to run commands with and to
 * name in messages.  sentinel_first is the index of the sentinel to ask
 * first, kept by a caller that opens again and again (the scanner) so the
 * last responder is asked first; NULL asks them in config order.  Returns
 * the connection, which the caller frees with redisFree(), or NULL with
 * err set (naming each sentinel's answer, or every address a discovery
 * tried).  A cluster is discovered through the nodes the thread's scope
 * knows (redisconn_scope.known), when it has them, or checked against
 * them (known_check).  Thread-safe; err may not be NULL.
 */
redisContext *target_open(const struct target_conf *t, const char *key, size_t keylen,
                          size_t *sentinel_first, struct target_conf *node,
                          char *err, size_t errlen);

/*
 * Is c, opened by target_open() on *node, still where t's mode points?
 * Sentinel: asks the sentinels (as target_open(), first responder first)
 * and then ROLE on c, two round trips.  1: a sentinel names node's
 * address and ROLE says primary.  0: a sentinel names another address,
 * or ROLE no longer says primary (during a failover the old primary
 * keeps answering reads until it is reconfigured, and for good when it
 * cannot be): drop c and open again.  -1, with err naming every sentinel
 * and its error, and no ROLE sent: no sentinel names a primary, so
 * nothing proves c is the primary now (the sentinels may have failed over
 * behind a partition) and what c reads must not be shown as current: the
 * caller fails as when c is lost (the target is down).  -1 too, with err
 * saying so, when the node the sentinels name did not answer ROLE within
 * command_timeout: it is silent (stopped, or cut off from us), and
 * opening it again would wait as long once more; the view is failed now,
 * within scan_interval + command_timeout of its last good read.  Other
 * modes: 1, with no I/O.  err may not be NULL.
 */
int target_verify(const struct target_conf *t, size_t *sentinel_first, redisContext *c,
                  const struct target_conf *node, char *err, size_t errlen);

#endif
