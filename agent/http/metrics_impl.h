/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_impl.h - what the files of the /metrics exposition share;
 * internal to agent/http/.
 *
 *   metrics.c          the family table, the shared renderers, the labels
 *   metrics_targets.c  renderers of per-target counters by a label of
 *                      their own, kept apart so metrics.c stays one file
 *                      under the size limit (locks lost by cause)
 *
 * A renderer of another file is named in metric_families[] like any
 * other: its prototype goes here.
 */
#ifndef LOCKWATCH_METRICS_IMPL_H
#define LOCKWATCH_METRICS_IMPL_H

#include "agent/http/metrics.h"
#include "alerts/alerts.h"
#include "common/strbuf.h"

/* What the sample renderers write to and read from: the view, and each
 * source of metric_families[] (NULL when this render has not got it). */
struct metrics_out {
    struct strbuf *sb;
    const struct view *v;
    const void *source[SRC_COUNT];
    struct alerts_stats alerts;     /* source[SRC_ALERTS] when taken */
};

/* `name{target="T"` (the label value sanitised and escaped), open for
 * more labels. */
void target_label(struct strbuf *sb, const char *name, const char *target);

/* metrics_targets.c */
void lost_by_cause(struct metrics_out *o, const struct metric_family *mf);

#endif
