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

/* metrics_graph.c */
void metrics_graph_deadlocks(struct metrics_out *o, const struct metric_family *mf);
void metrics_graph_dropped(struct metrics_out *o, const struct metric_family *mf);

#endif
