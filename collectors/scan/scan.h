/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scan.h - one full, paced scan of one Redis target into a snapshot.
 *
 * The scanner owns its Redis connections (one, or one per cluster shard),
 * its first-seen tracker and the target's cumulative counters; all
 * survive from scan to scan (and across config reloads, which hand the
 * same scanner the new settings).  It is used by one thread at a time;
 * a cluster scan runs one thread per shard inside scanner_run().
 * Topologies: mode = standalone scans the URL's server; sentinel scans
 * the primary the sentinels name (ROLE-checked, resolved again on every
 * reconnect); cluster scans every shard's primary (or a replica with
 * scan_replicas) in parallel into one snapshot, with a per-shard result
 * in snapshot->shards.
 */
#ifndef LOCKWATCH_SCAN_H
#define LOCKWATCH_SCAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"
#include "conf/config.h"
#include "collectors/locks/snapshot.h"

/* What a scan judges and classifies by.  judge is the config's [rules]
 * state part, copied whole (cfg->rules.judge); classes point into the
 * config, which outlives the scans that use it (a reload stops them
 * first). */
struct scan_rules {
    struct lockstate_rules judge;
    const struct class_rule *classes;
    size_t nclasses;
    bool redlock_map;           /* fill snapshot->redlock (the target is in
                                 * a [redlock] group) */
};

struct scanner;

struct scanner *scanner_new(const char *target_name);
void scanner_free(struct scanner *sc);

/*
 * Scan every pattern of target once.  Returns a new snapshot (the caller
 * owns one reference): ok with the locks found, or !ok with err saying
 * what failed.  Returns NULL when *stop became true mid-scan (nothing to
 * publish) or on memory exhaustion (errno ENOMEM).  Connections are
 * opened on demand and kept open between scans; after an error they are
 * dropped and the next call reconnects (a cluster's topology is
 * discovered again on every call).  A cluster snapshot is ok while at
 * least one shard was scanned; the shards that failed say so in
 * snapshot->shards, and their locks of the last ok snapshot are carried
 * into it as last known (snap_lock.stale_since_ms; carry.c).
 */
struct snapshot *scanner_run(struct scanner *sc, const struct target_conf *target,
                             const struct scan_rules *rules, const atomic_int *stop);

/* Hand over a snapshot to publish (the callee owns the reference). */
typedef void scan_publish_fn(void *arg, struct snapshot *s);

/* Drop the connections (next run reconnects). */
void scanner_disconnect(struct scanner *sc);

/*
 * The nodes this scanner found silent (a wait of command_timeout without a
 * byte; collectors/redis/conn.h): the scope of every pass keeps them, and
 * so may the caller's reads between passes (follow mode's check, the audit
 * tail), so that they do not wait for a node the pass found silent, and
 * the pass after is not held by waiting for a node they found silent.
 * Each scanner_run() asks again every node the reads since the pass
 * before did not find silent.
 */
struct redisconn_silent *scanner_silent(struct scanner *sc);

/*
 * The nodes this scanner knows as its cluster's (the last discovery's,
 * its hints for the next: *n of them), or NULL for none; valid on the
 * scanner's thread until its next pass (the audit tail reads through
 * them).  scanner_stamp_nodes() copies them into s->nodes, for the
 * threads that read s (the release endpoint, lockctl through the API):
 * 0, or -1 on ENOMEM with s keeping none.
 */
const struct cluster_node *scanner_known(const struct scanner *sc, size_t *n);
int scanner_stamp_nodes(const struct scanner *sc, struct snapshot *s);

/*
 * The duty-cycle pacing every scan of Redis keeps to (the agent's streams
 * and lockctl list): after busy_ms of work since the last pause, how long
 * to pause so that at most duty (0 < duty <= 1, scan_duty) of the wall
 * time goes to the scan.  0 (go on) until a slice of PACE_SLICE_MS has
 * been used, so pauses are few and Redis sees bursts of a slice at most.
 */
#define PACE_SLICE_MS   20
int64_t scan_duty_pause(double duty, int64_t busy_ms);


#endif
