/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_targets.c - sample renderers of per-target counters that carry
 * a label of their own, for rows of metric_families[] (metrics.c).
 *
 * lockwatch_locks_lost_total{target,cause}: every cause for every target,
 * 0 until it happens (3 series a target), so increase() sees the first
 * loss (collectors/scan/lost.c counts them).
 *
 * lockwatch_reconnects_total{target,reason}: the same for the kept
 * connections found closed by their peer while idle and opened again
 * (conn.h's REDISCONN_CLOSED_REASONS, 3 series a target; the scanner and
 * follow mode count them).
 */
#include <inttypes.h>
#include <stddef.h>

#include "agent/http/metrics_impl.h"
#include "collectors/locks/lostview.h"

void
lost_by_cause(struct metrics_out *o, const struct metric_family *mf)
{
    size_t i, k;

    for (i = 0; i < o->v->ntargets; i++) {
        const struct snapshot *s = o->v->targets[i].snap;

        for (k = 0; k < LOST_CAUSE_COUNT; k++) {
            target_label(o->sb, mf->name, o->v->targets[i].name);
            sb_addf(o->sb, ",cause=\"%s\"} %" PRIu64 "\n", lost_cause_name((enum lost_cause)k),
                    s != NULL ? s->counters.lost_total[k] : 0);
        }
    }
}

void
reconnects_by_reason(struct metrics_out *o, const struct metric_family *mf)
{
    size_t i, k;

    for (i = 0; i < o->v->ntargets; i++) {
        const struct snapshot *s = o->v->targets[i].snap;

        for (k = 0; k < REDISCONN_CLOSED_COUNT; k++) {
            target_label(o->sb, mf->name, o->v->targets[i].name);
            sb_addf(o->sb, ",reason=\"%s\"} %" PRIu64 "\n",
                    redisconn_closed_name((enum redisconn_closed)k),
                    s != NULL ? s->counters.reconnects[k] : 0);
        }
    }
}
