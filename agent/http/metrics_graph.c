/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_graph.c - the sample renderers of the wait-for graph's families
 * with labels of their own (rows of metric_families[] in metrics.c; the
 * graph: collectors/graph/graph.h).  Both are bounded: one series per
 * configured target and "*", and one per kind of cap.
 */
#include <inttypes.h>

#include "agent/http/metrics_impl.h"
#include "collectors/graph/graph.h"

/* Deadlocks now per target, every configured one, and "*" for those
 * across targets or known only from reporters. */
void
metrics_graph_deadlocks(struct metrics_out *o, const struct metric_family *mf)
{
    const struct graph_report *r = o->source[SRC_GRAPH];
    size_t i;

    for (i = 0; i < o->v->ntargets; i++) {
        target_label(o->sb, mf->name, o->v->targets[i].name);
        sb_addf(o->sb, "} %zu\n", graph_report_count(r, o->v->targets[i].name));
    }
    target_label(o->sb, mf->name, GRAPH_CROSS_TARGET);
    sb_addf(o->sb, "} %zu\n", graph_report_count(r, GRAPH_CROSS_TARGET));
}

/* What the graph's caps cut, by what. */
void
metrics_graph_dropped(struct metrics_out *o, const struct metric_family *mf)
{
    const struct graph_stats *s = &((const struct graph_report *)o->source[SRC_GRAPH])->stats;
    const struct { const char *what; uint64_t n; } rows[] = {
        { "nodes", s->nodes_dropped }, { "edges", s->edges_dropped },
        { "long_cycles", s->cycles_cut }, { "candidates", s->candidates_dropped },
        { "deadlocks", s->deadlocks_dropped }, { "orders", s->orders_evicted },
        { "inversions", s->inversions_dropped },
    };
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        sb_addf(o->sb, "%s{what=\"%s\"} %" PRIu64 "\n", mf->name, rows[i].what, rows[i].n);
}
