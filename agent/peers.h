/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peers.h - is every other shard's agent alive: with [agent] shard_peers,
 * a thread of its own GETs <peer>/api/v1/shard of each other shard every
 * PEER_CHECK_MS (all at once, each within PEER_TIMEOUT_MS), and a peer
 * counts as down after PEER_DOWN_CHECKS failures in a row (no answer, or
 * an answer as another shard), up again at its first answer as that shard
 * (agent/peerhealth.h).  The view shows it:
 * lockwatch_shard_peer_up, /readyz and the status page (docs/deploying.md
 * "When a shard dies").  A peer is the one URL the config names for that
 * shard: with replicas, the others of that shard are not checked.
 *
 * Never on an HTTP worker or a scan thread; stopping wakes the thread out
 * of its wait and out of a check under way at once.
 */
#ifndef LOCKWATCH_PEERS_H
#define LOCKWATCH_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/peerhealth.h"
#include "conf/config.h"

struct peers;

/* One other shard's peer, for a view. */
struct peer_view {
    int shard;
    bool down;
    int64_t failing_ms;         /* how long its checks have failed, 0 while it answers */
    uint64_t checks;            /* checks made; 0: none yet (counted up) */
    char err[160];              /* why the last check failed, "" */
};

/* Start checking the peers of cfg (shard_peers set, shard_total > 1);
 * NULL when there is nothing to check, or on ENOMEM or a thread that
 * cannot start (logged).  The URLs are copied: cfg may go. */
struct peers *peers_start(const struct config *cfg);

/* Would a and b check the same peers (same shard, same URLs)? */
bool peers_same(const struct config *a, const struct config *b);

/* Stop the thread and free; NULL is a no-op. */
void peers_stop(struct peers *p);

/* A copy of every other shard's state, in shard order, into *out
 * (*n of them; free(*out)).  0, or -1 on ENOMEM; NULL p gives none. */
int peers_view(struct peers *p, struct peer_view **out, size_t *n);

#endif
