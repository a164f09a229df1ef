/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.h - find the current primary of a Sentinel-managed target.
 *
 * The Sentinel client protocol (redis.io "Sentinel client spec"): ask
 * each sentinel in turn, with a short connect timeout, for
 * SENTINEL GET-MASTER-ADDR-BY-NAME <master_name>; the first that answers
 * with an address wins and is asked first next time.  Then connect to
 * that address as to any target (timeouts, AUTH, SELECT) and confirm
 * with ROLE that it is a primary: during a failover a sentinel can still
 * name the old one.  Callers resolve again on every reconnect.
 *
 * Sentinels are asked without credentials: sentinel auth is separate
 * from the data nodes' ACL and lockwatch has no setting for it (see
 * docs/topologies.md).
 */
#ifndef LOCKWATCH_SENTINEL_H
#define LOCKWATCH_SENTINEL_H

#include <stddef.h>
#include <hiredis.h>

#include "conf/config.h"

#define SENTINEL_CONNECT_TIMEOUT_MS 300     /* per sentinel */
#define SENTINEL_COMMAND_TIMEOUT_MS 1000    /* its answer, at most (command_timeout) */
#define SENTINEL_ROLE_RETRIES       3       /* ROLE said replica: ask again */
#define SENTINEL_RETRY_WAIT_MS      200

/*
 * Ask the sentinels (first responder first, as below) for the address of
 * t's primary, without connecting to it.  0, or -1 with err naming each
 * sentinel's answer.
 */
int sentinel_primary_addr(const struct target_conf *t, size_t *first, char *host,
                          size_t hostlen, int *port, char *err, size_t errlen);

/*
 * Resolve t's primary and connect to it.  *first is the index of the
 * sentinel to ask first (updated to the one that answered; keep it
 * between calls, start at 0).  On success returns the connection and
 * writes the primary's address to host/port; NULL with err set (naming
 * each sentinel's answer) on failure.
 */
redisContext *sentinel_open_primary(const struct target_conf *t, size_t *first,
                                    char *host, size_t hostlen, int *port,
                                    char *err, size_t errlen);

/*
 * Does node (c's address) say with ROLE that it is a primary?  0, or -1
 * with why set: a replica (a failover under way), ROLE refused (the ACL
 * user needs +role), or the connection failed (then drop c).
 */
int sentinel_is_primary(redisContext *c, const struct target_conf *node, char *why,
                        size_t whylen);

#endif
