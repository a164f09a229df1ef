/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_impl.h - what metrics.c (the table and the shared renderers)
 * shares with the files that hold the renderers of one concern's families
 * (metrics_graph.c: the wait-for graph's).
 */
#ifndef LOCKWATCH_METRICS_IMPL_H
#define LOCKWATCH_METRICS_IMPL_H

#include "agent/http/metrics.h"
#include "alerts/alerts.h"
#include "collectors/graph/graph.h"

/* What the sample renderers write to and read from: the view, and each
 * source of metric_families[] (NULL when this render has not got it). */
struct metrics_out {
    struct strbuf *sb;
    const struct view *v;
    const void *source[SRC_COUNT];
    struct alerts_stats alerts;     /* source[SRC_ALERTS] when taken */
};

/* `name{target="T"` (escaped; the caller closes the braces). */
void metrics_target_label(struct strbuf *sb, const char *name, const char *target);

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

/* metrics_graph.c */
void metrics_graph_deadlocks(struct metrics_out *o, const struct metric_family *mf);
void metrics_graph_dropped(struct metrics_out *o, const struct metric_family *mf);

#endif
