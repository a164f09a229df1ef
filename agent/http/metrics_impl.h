/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_impl.h - what the files of the /metrics exposition share;
 * internal to agent/http/.
 *
 *   metrics.c          the family table, the shared renderers, the labels
 *                      and number writers (the HTTP server's rows:
 *                      METRICS_HTTP_ROWS below)
 *   classmetrics.c     the class-trend families (their rows: the macro
 *                      METRIC_FAMILIES_TREND below, expanded in its place
 *                      in metric_families[], in exposition order)
 *   metrics_targets.c  renderers of per-target counters by a label of
 *                      their own (locks lost by cause); the rows of the
 *                      scan counters (METRIC_FAMILIES_SCAN_COUNTERS)
 *   metrics_graph.c    the wait-for graph's families (their rows: the
 *                      macro METRICS_GRAPH_ROWS below)
 *   leasemetrics.c     the lease families of issue 26 (expirations, lease
 *                      overruns; their rows: METRIC_FAMILIES_LEASE below)
 *   metrics_ha.c       the replica and shard families (METRICS_HA_ROWS)
 *   metrics_sinks.c    the [webhook] sinks' families (METRICS_SINK_ROWS)
 *   metrics_config.c   the last reload's families (METRICS_CONFIG_ROWS)
 *   procmetrics.c      the standard process_* families of the agent process
 *                      (METRICS_PROCESS_ROWS)
 *
 * Kept apart so metrics.c stays one file under the size limit.  A
 * renderer of another file is named in metric_families[] like any other:
 * its prototype goes here.
 */
#ifndef LOCKWATCH_METRICS_IMPL_H
#define LOCKWATCH_METRICS_IMPL_H

#include "agent/http/metrics.h"
#include "agent/http/procmetrics.h"
#include "alerts/alerts.h"
#include "common/strbuf.h"
#include "collectors/graph/graph.h"

/* What the sample renderers write to and read from: the view, and each
 * source of metric_families[] (NULL when this render has not got it). */
struct metrics_out {
    struct strbuf *sb;
    const struct view *v;
    const void *source[SRC_COUNT];
    struct alerts_stats alerts;     /* source[SRC_ALERTS] when taken */
    struct proc_sample proc;        /* source[SRC_PROCESS] when taken */
};

/* A double as the shortest text that reads back the same. */
void add_double(struct strbuf *sb, const double d);
/* "name suffix{class="cls"" (escaped), and ",outcome="o"" when not NULL;
 * the caller closes the brace. */
void class_series(struct strbuf *sb, const char *name, const char *suffix, const char *cls,
                  const char *outcome);

/* classmetrics.c */
void lease_histograms(struct metrics_out *o, const struct metric_family *mf);
void lease_headroom(struct metrics_out *o, const struct metric_family *mf);
void class_baseline(struct metrics_out *o, const struct metric_family *mf);
void class_lease(struct metrics_out *o, const struct metric_family *mf);
void class_renewal(struct metrics_out *o, const struct metric_family *mf);
void class_churn(struct metrics_out *o, const struct metric_family *mf);

#define METRIC_FAMILIES_TREND                                                              \
    { "lockwatch_lease_seconds", "histogram", SRC_TREND, lease_histograms, 0, VAL_U64,      \
      "Leases of the class's locks: the TTL of each lock when the scans first saw it "      \
      "(a new key or a new holder; no TTL: not counted), since start." },                   \
    { "lockwatch_lease_headroom_ratio", "gauge", SRC_TREND, lease_headroom, 0, VAL_U64,    \
      "Lease (the longest TTL at first sight in wait_window) / hold P99.9 (holds in "       \
      "wait_window); for a class renewed by a watchdog, lease / renewal period. Under "     \
      "1 / lease_short_at (1.25) raises LockLeaseTooShort. Absent without both." },         \
    { "lockwatch_class_lease_seconds", "gauge", SRC_TREND, class_lease, 0, VAL_U64,        \
      "The class's lease as the agent judges it: the longest TTL at first sight in "       \
      "wait_window (the headroom's numerator)." },                                         \
    { "lockwatch_class_renewal_seconds", "gauge", SRC_TREND, class_renewal, 0, VAL_U64,    \
      "A class renewed by a watchdog: its renewal period as the scans see it (the lease "  \
      "less the lowest TTL read; the headroom's denominator). Absent for other classes." }, \
    { "lockwatch_class_locks_baseline", "gauge", SRC_TREND, class_baseline, 0, VAL_U64,    \
      "Median count of the class's locks (all targets) over count_baseline_window, "        \
      "once half the window has counts: the baseline of LockCountSurge." },                 \
    { "lockwatch_locks_created_total", "counter", SRC_TREND, class_churn,                   \
      offsetof(struct classtrend_class, created_total), VAL_U64,                            \
      "Locks the scans saw at first sight (a new key or a new holder), by class; a lock "   \
      "created and gone between two scans is not seen." },                                  \
    { "lockwatch_locks_deleted_total", "counter", SRC_TREND, class_churn,                   \
      offsetof(struct classtrend_class, deleted_total), VAL_U64,                            \
      "Locks gone between two scans (previous count + created - count), by class." },

/* `name{target="T"` (the label value sanitised and escaped), open for
 * more labels. */
void target_label(struct strbuf *sb, const char *name, const char *target);
/* The same with `,class="C"`, open for more labels. */
void target_class_label(struct strbuf *sb, const char *name, const char *target,
                        const char *cls);
/* One classic histogram series set of a class (and outcome when not NULL):
 * cumulative buckets, +Inf, sum, count. */
void wait_histogram(struct strbuf *sb, const char *name, const char *cls, const char *outcome,
                    const struct wait_hist *h);

/* metrics_targets.c */
void lost_by_cause(struct metrics_out *o, const struct metric_family *mf);
void reconnects_by_reason(struct metrics_out *o, const struct metric_family *mf);

/*
 * The rows of metric_families[] (metrics.c) of the cumulative scan counters
 * (struct scan_counters) a target's every snapshot carries, kept here for
 * metrics.c's size; every_target is metrics.c's renderer, visible where
 * they expand.
 */
#define METRIC_FAMILIES_SCAN_COUNTERS \
    { "lockwatch_scan_keys_total", "counter", SRC_VIEW, every_target,                          \
      offsetof(struct snapshot, counters.keys_total), VAL_U64,                                 \
      "Keys examined (returned by SCAN for the lock patterns), all scans." },                  \
    { "lockwatch_scan_vanished_keys_total", "counter", SRC_VIEW, every_target,                 \
      offsetof(struct snapshot, counters.vanished_total), VAL_U64,                             \
      "Keys that disappeared between SCAN and the reads of their type and value." },           \
    { "lockwatch_scan_asking_keys_total", "counter", SRC_VIEW, every_target,                   \
      offsetof(struct snapshot, counters.asking_total), VAL_U64,                               \
      "Cluster: keys read after ASKING on the node importing their slot (a slot migration "    \
      "under way: SCAN found them there, MOVED without ASKING), and follow mode's re-reads "   \
      "an ASK led there." },                                                                   \
    { "lockwatch_scan_duplicate_keys_total", "counter", SRC_VIEW, every_target,                \
      offsetof(struct snapshot, counters.duplicates_total), VAL_U64,                           \
      "Keys SCAN returned more than once in one pass (counted once)." },                       \
    { "lockwatch_scan_waiter_errors_total", "counter", SRC_VIEW, every_target,                 \
      offsetof(struct snapshot, counters.waiter_errors_total), VAL_U64,                        \
      "Waiter look-ups (PUBSUB NUMSUB, LRANGE or LLEN of a fair queue) refused with an error " \
      "reply; those locks' waiters (or a queue's members) are unknown." },                     \
    { "lockwatch_scan_truncated_values_total", "counter", SRC_VIEW, every_target,              \
      offsetof(struct snapshot, counters.truncated_total), VAL_U64,                            \
      "Lock values or hash fields cut by the per-key read caps." },

/*
 * The rows of metric_families[] (metrics.c) of the wait-for graph, kept
 * with their renderers' concern; scalar is metrics.c's shared renderer,
 * visible where the rows expand.
 */
#define METRICS_GRAPH_ROWS \
    { "lockwatch_deadlocks", "gauge", SRC_GRAPH, metrics_graph_deadlocks, 0, VAL_SIZE,         \
      "Deadlocks now: cycles of lock holders each waiting for the next, seen on two passes "   \
      "in a row, by target (\"*\": across targets, or known only from reporters)." },          \
    { "lockwatch_deadlocks_total", "counter", SRC_GRAPH, scalar,                               \
      offsetof(struct graph_report, stats.deadlocks_total), VAL_U64,                           \
      "Deadlocks found since start (each counted once, when confirmed)." },                    \
    { "lockwatch_lock_order_inversions", "gauge", SRC_GRAPH, scalar,                           \
      offsetof(struct graph_report, ninversions), VAL_SIZE,                                    \
      "Pairs of lock classes known to be taken in both orders (by different owners) now." },   \
    { "lockwatch_lock_order_inversions_total", "counter", SRC_GRAPH, scalar,                   \
      offsetof(struct graph_report, stats.inversions_total), VAL_U64,                          \
      "Lock-order inversions found since start." },                                            \
    { "lockwatch_wait_graph_edges", "gauge", SRC_GRAPH, scalar,                                \
      offsetof(struct graph_report, stats.edges), VAL_SIZE,                                    \
      "Waiter-to-holder edges of the wait-for graph's last pass." },                           \
    { "lockwatch_wait_graph_dropped_total", "counter", SRC_GRAPH, metrics_graph_dropped, 0, VAL_U64, \
      "What the wait-for graph's caps left out since start, by what: nodes, edges, "           \
      "long_cycles (over 16 holders), candidates, deadlocks, orders (evicted), inversions." },

/*
 * The rows of metric_families[] (metrics.c) of the HTTP server's admission
 * (agent/http/guard.c, struct guard_stats); scalar and http_rejected are
 * metrics.c's renderers, visible where the rows expand.
 */
#define METRICS_HTTP_ROWS \
    { "lockwatch_http_connections", "gauge", SRC_HTTP, scalar,                                 \
      offsetof(struct guard_stats, open), VAL_U64,                                             \
      "HTTP connections open now (at most http_max_connections)." },                           \
    { "lockwatch_http_request_timeouts_total", "counter", SRC_HTTP, scalar,                    \
      offsetof(struct guard_stats, timeouts), VAL_U64,                                         \
      "HTTP connections closed because a request's headers and body were not in "              \
      "within http_request_timeout (1s over http_max_connections_per_client)." },              \
    { "lockwatch_http_request_deadlines_extended_total", "counter", SRC_HTTP, scalar,          \
      offsetof(struct guard_stats, extended), VAL_U64,                                         \
      "HTTP request deadlines that passed while bytes the client had sent were still "         \
      "unread by the server (its threads behind): renewed, not closed." },                     \
    { "lockwatch_http_rejected_total", "counter", SRC_HTTP, http_rejected, 0, VAL_U64,         \
      "API and status page requests answered 503 with Retry-After: busy "                      \
      "(http_max_api_requests in flight) or client_limit "                                     \
      "(over http_max_connections_per_client)." },

/* A label value, sanitised to UTF-8 and escaped (metrics.c). */
void label_str(struct strbuf *sb, const char *s);

/* metrics_config.c */
void metrics_config_reload_ok(struct metrics_out *o, const struct metric_family *mf);
void metrics_config_reload_ok_time(struct metrics_out *o, const struct metric_family *mf);

#define METRICS_CONFIG_ROWS                                                                \
    { "lockwatch_config_last_reload_successful", "gauge", SRC_VIEW,                        \
      metrics_config_reload_ok, 0, VAL_U64,                                               \
      "0 after a reload (SIGHUP) that failed, the previous configuration still in effect; " \
      "1 after the start or a reload that took effect." },                                 \
    { "lockwatch_config_last_reload_success_timestamp_seconds", "gauge", SRC_VIEW,         \
      metrics_config_reload_ok_time, 0, VAL_U64,                                          \
      "Unix time the running configuration was loaded (the start, or the last good "      \
      "reload)." },

/* metrics_sinks.c */
void metrics_notifications(struct metrics_out *o, const struct metric_family *mf);
void metrics_notification_queue(struct metrics_out *o, const struct metric_family *mf);
void metrics_notification_disabled(struct metrics_out *o, const struct metric_family *mf);

#define METRICS_SINK_ROWS \
    { "lockwatch_notifications_total", "counter", SRC_ALERTS, metrics_notifications, 0, VAL_U64, \
      "Notices per [webhook] sink: sent (2xx), retried (a failed try tried again), dropped " \
      "(never delivered)." },                                                              \
    { "lockwatch_notification_queue", "gauge", SRC_ALERTS, metrics_notification_queue, 0, VAL_U64, \
      "Notices per [webhook] sink waiting to be sent (at most 1000): a backlog grows while " \
      "the receiver is down or slower than the alerts." },                                 \
    { "lockwatch_notification_sink_disabled", "gauge", SRC_ALERTS, metrics_notification_disabled, 0, \
      VAL_U64, "1 while the [webhook] sink is off: its receiver answered 410 Gone; a reload " \
      "(SIGHUP) turns it on again." },                                                     \

/* metrics_ha.c */
void metrics_ha_info(struct metrics_out *o, const struct metric_family *mf);
void metrics_ha_leader(struct metrics_out *o, const struct metric_family *mf);
void metrics_ha_unfenced(struct metrics_out *o, const struct metric_family *mf);
void metrics_shard_peer_up(struct metrics_out *o, const struct metric_family *mf);

#define METRICS_HA_ROWS \
    { "lockwatch_ha_info", "gauge", SRC_VIEW, metrics_ha_info, 0, VAL_U64,                     \
      "This agent's [agent] replica (\"\" when unset) and shard of shards; always 1." },     \
    { "lockwatch_ha_leader", "gauge", SRC_VIEW, metrics_ha_leader, 0, VAL_U64,                 \
      "1 while this replica holds the leader lock and its lease (only with leader_target)." }, \
    { "lockwatch_ha_unfenced", "gauge", SRC_VIEW, metrics_ha_unfenced, 0, VAL_U64,             \
      "1 while this replica sends to the direct sinks unelected and unfenced: the leader "    \
      "lock unreachable for longer than the lease + 1s (only with leader_target)." },        \
    { "lockwatch_shard_peer_up", "gauge", SRC_VIEW, metrics_shard_peer_up, 0, VAL_U64,         \
      "0 once the shard_peers URL of that other shard failed 3 checks in a row (no answer, "  \
      "or not as that shard: about 30 s), 1 otherwise (only with shard_peers)." },

/* metrics_graph.c */
void metrics_graph_deadlocks(struct metrics_out *o, const struct metric_family *mf);
void metrics_graph_dropped(struct metrics_out *o, const struct metric_family *mf);
/* leasemetrics.c */
void lease_expirations(struct metrics_out *o, const struct metric_family *mf);
void overrun_histograms(struct metrics_out *o, const struct metric_family *mf);

#define METRIC_FAMILIES_LEASE                                                              \
    { "lockwatch_lock_expirations_total", "counter", SRC_LEASE, lease_expirations, 0,      \
      VAL_U64,                                                                              \
      "Locks whose lease ran out while held (gone, or another holder's, after the expiry "  \
      "last read), by target, class and whether the holder had renewed it (renewed=yes: "   \
      "the renewals stopped without an unlock)." },                                         \
    { "lockwatch_lock_expirations_released_total", "counter", SRC_LEASE, scalar,           \
      offsetof(struct lease_view, released_early), VAL_U64,                                 \
      "Locks gone at their lease's end whose holder had reported the release after the "   \
      "last read that found them held: no expiry, in no other counter." },                 \
    { "lockwatch_lease_overrun_seconds", "histogram", SRC_WAIT, overrun_histograms, 0,     \
      VAL_U64,                                                                              \
      "How long after its lease ran out a holder still reported the lock (a hold, waiting " \
      "or lost line), by lock class, since start: two holders may both have been inside." },

/* procmetrics.c: the families every Prometheus exporter has, under the
 * client libraries' names, types and HELP texts (no lockwatch_ prefix). */
void process_value(struct metrics_out *o, const struct metric_family *mf);

#define METRICS_PROCESS_ROWS \
    { "process_cpu_seconds_total", "counter", SRC_PROCESS, process_value,                     \
      offsetof(struct proc_sample, cpu_seconds), VAL_U64,                                      \
      "Total user and system CPU time spent in seconds." },                                    \
    { "process_open_fds", "gauge", SRC_PROCESS, process_value,                                 \
      offsetof(struct proc_sample, open_fds), VAL_U64,                                         \
      "Number of open file descriptors." },                                                    \
    { "process_max_fds", "gauge", SRC_PROCESS, process_value,                                  \
      offsetof(struct proc_sample, max_fds), VAL_U64,                                          \
      "Maximum number of open file descriptors." },                                            \
    { "process_virtual_memory_bytes", "gauge", SRC_PROCESS, process_value,                     \
      offsetof(struct proc_sample, virtual_bytes), VAL_U64,                                    \
      "Virtual memory size in bytes." },                                                       \
    { "process_resident_memory_bytes", "gauge", SRC_PROCESS, process_value,                    \
      offsetof(struct proc_sample, resident_bytes), VAL_U64,                                   \
      "Resident memory size in bytes." },                                                      \
    { "process_start_time_seconds", "gauge", SRC_PROCESS, process_value,                       \
      offsetof(struct proc_sample, start_seconds), VAL_U64,                                    \
      "Start time of the process since unix epoch in seconds." },

#endif
