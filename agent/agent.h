/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * agent.h - the running agent: one scanner thread per target, each
 * publishing immutable snapshots, the [redlock] groups compared on them,
 * and the config they all run under; and --once, the same scan done once.
 *
 * HTTP and --once never touch a scanner; they take a "view": the list of
 * targets with a reference to each one's newest snapshot, plus the few
 * settings renderers need, copied under the agent lock.  A reload stops
 * the threads, hands each surviving target (same name) its old scanner
 * (so first-seen times and counters survive) and starts them again.
 *
 * A [redlock] group is compared again each time one of its members
 * publishes a snapshot, on that member's thread (agent/groups.h); its
 * report is published the same way as a snapshot.
 *
 * The wait-for graph (deadlocks, lock-order inversions) makes a pass on
 * the main thread before each alert evaluation (agent/http/alerts_http.c),
 * over the newest snapshots and the wait statistics' waiting table; the
 * view carries its newest report.
 *
 * The wait statistics (samples from clients over UDP) live beside the
 * targets for the life of the process: a reload hands them the new
 * [classes] rules and wait_window and keeps every counter.  The ingest
 * thread that feeds them is started and stopped by main (agent/ingest.h).
 */
#ifndef LOCKWATCH_AGENT_H
#define LOCKWATCH_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "agent/leader.h"
#include "agent/peers.h"
#include "conf/config.h"
#include "collectors/lease/lease.h"
#include "collectors/graph/graph.h"
#include "collectors/locks/redlock.h"
#include "collectors/locks/snapshot.h"
#include "collectors/waits/classtrend.h"
#include "collectors/waits/waitstats.h"

/* The last reload (SIGHUP): whether it failed, the previous configuration
 * then still in charge (lockwatch_config_last_reload_successful, /readyz). */
struct reload_state {
    bool failed;
    int64_t ok_ms;              /* Unix ms of the start, or of the last good reload */
    int64_t failed_ms;          /* Unix ms of the failed one */
    char why[512];              /* what the failed one said (CONFIG_ERR_LEN) */
};

struct target_rt;
struct group_rt;
struct alerts;
struct throttle;

struct agent {
    pthread_mutex_t mu;         /* guards cfg and targets */
    struct config *cfg;
    struct target_rt **targets;
    size_t ntargets;
    int64_t started_ms;
    struct waitstats *waits;    /* NULL when samples = off; set at start,
                                 * never replaced (it has its own lock) */
    struct alerts *alerts;      /* alert set, rules and sinks (alerts/alerts.h);
                                 * set at start, kept across reloads, own lock */
    atomic_uint_fast64_t releases[3];   /* lockwatch_releases_total by result,
                                         * RELEASES_* of agent/http/release_http.h */
    atomic_int releases_running;        /* HTTP releases under way (at most
                                         * RELEASE_HTTP_RUNNING_MAX) */
    struct group_rt **groups;   /* [redlock] groups, in config order */
    size_t ngroups;
    struct throttle *throttle;  /* release-token guessing per client
                                 * (agent/http/throttle.h); own lock */
    struct classtrend *trend;   /* per-class leases and counts over time
                                 * (collectors/waits/classtrend.h); set at
                                 * start, never replaced, own lock */
    struct graph *graph;        /* the wait-for graph (collectors/graph/):
                                 * a pass each alert tick, on the main
                                 * thread; its reports are shared */
    struct leader *leader;      /* [agent] leader_target: the election
                                 * (agent/leader.h), own lock; NULL: none */
    struct peers *peers;        /* [agent] shard_peers: the checks of the
                                 * other shards (agent/peers.h), own lock;
                                 * NULL: none */
    struct reload_state reload; /* under mu */
    /* [samples] state_file (agent/state.c; main thread only) */
    char *state_path;           /* the file checked to be a waiting table (or
                                 * none) before the first write to it */
    bool state_refused;         /* it holds something else: never written */
    bool state_failing;         /* the last write failed */
    bool state_written;         /* a write to state_path worked */
    uint64_t state_changes;     /* waiting_changes() at the last write */
};

struct view_target {
    char *name;
    char *address;              /* config_target_address() of its config;
                                 * NULL when not known */
    struct snapshot *snap;      /* newest, or NULL before the first scan;
                                 * whose locks to show: snapshot_shown(snap) */
};

/* A [redlock] group and its newest comparison (NULL before the first). */
struct view_group {
    char *name;
    struct redlock_report *report;
};

/* A target another shard watches (conf/shard.h), and that shard. */
struct view_away {
    char *name;
    int shard;
};

struct view {
    struct view_target *targets;
    size_t ntargets;
    struct view_group *groups;
    size_t ngroups;
    int top_offenders;
    int64_t now_ms;
    int64_t started_ms;             /* Unix ms the agent started; 0 in --once */
    struct waitstats_view *wait;    /* NULL: no sample ingest (samples =
                                     * off, or --once) */
    struct alerts *alerts;          /* the agent's, not a copy (own lock);
                                     * NULL in --once */
    const atomic_uint_fast64_t *releases;   /* the agent's counters; NULL in --once */
    struct throttle *throttle;      /* the agent's, own lock; NULL in --once */
    struct classtrend_view *trend;  /* leases and counts per class; NULL in
                                     * --once */
    struct graph_report *graph;     /* the wait-for graph's newest report (a
                                     * reference); NULL before the first
                                     * pass and in --once */
    struct lease_view *lease;       /* leases that ran out (collectors/lease);
                                     * NULL in --once */
    /* HA and sharding, copied from the config: [agent] replica (NULL:
     * none), shard = I/N, the targets other shards watch and their base
     * URLs (shard_peers, NULL when unset; else shard_total of them) */
    char *replica;
    int shard_index, shard_total;
    struct view_away *away;
    size_t naway;
    char **shard_peers;
    bool has_leader;                /* [agent] leader_target is set */
    struct leader_state leader;     /* then: who leads, this agent's fence */
    struct peer_view *peers;        /* every other shard's peer, in shard
                                     * order (agent/peers.h); NULL: none
                                     * checked (no shard_peers, --once) */
    size_t npeers;
    struct reload_state reload;     /* ok_ms 0 in --once */
};

/* Take ownership of cfg and start one scanner thread per target; create
 * the wait statistics unless cfg says samples = off. */
int agent_start(struct agent *a, struct config *cfg);
/* Replace the config (a was started); the old config is freed. */
int agent_reload(struct agent *a, struct config *cfg);
/* Stop every thread and free everything. */
void agent_stop(struct agent *a);

/* A consistent view for rendering; view_release drops the references. */
int agent_view(struct agent *a, struct view *v);
void view_release(struct view *v);

/* Record the class counts of v's shown snapshots in the baseline ring
 * (the alert tick, once a second). */
void agent_trend_sample(struct agent *a, const struct view *v);

/*
 * --once: scan every target of cfg once, in parallel, into v, and compare
 * the [redlock] groups once (splits only: under quorum needs time).  A
 * target whose scan could not even start for want of memory has a NULL
 * snap.  Returns the number of targets whose scan failed, with v to be
 * released by view_release(); or -1 with errno ENOMEM and v empty (there
 * is nothing to release then).
 */
int agent_scan_once(const struct config *cfg, struct view *v);

#endif
