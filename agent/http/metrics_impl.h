/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_impl.h - what the exposition's files share: the render state
 * the sample renderers get, the label and number writers of metrics.c,
 * and the rows of the families rendered in classmetrics.c (kept there so
 * metrics.c stays one file under the size cap; their rows still sit in
 * metric_families[], in exposition order).
 */
#ifndef LOCKWATCH_METRICS_IMPL_H
#define LOCKWATCH_METRICS_IMPL_H

#include "agent/http/metrics.h"
#include "alerts/alerts.h"

struct metrics_out {
    struct strbuf *sb;
    const struct view *v;
    const void *source[SRC_COUNT];
    struct alerts_stats alerts;     /* source[SRC_ALERTS] when taken */
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
void class_churn(struct metrics_out *o, const struct metric_family *mf);

#define METRIC_FAMILIES_TREND                                                              \
    { "lockwatch_lease_seconds", "histogram", SRC_TREND, lease_histograms, 0, VAL_U64,      \
      "Leases of the class's locks: the TTL of each lock when the scans first saw it "      \
      "(a new key or a new holder; no TTL: not counted), since start." },                   \
    { "lockwatch_lease_headroom_ratio", "gauge", SRC_TREND, lease_headroom, 0, VAL_U64,    \
      "Lease (the longest TTL at first sight in wait_window) / hold P99.9 (holds in "       \
      "wait_window); for a class renewed by a watchdog, lease / renewal period. Under "     \
      "1 / lease_short_at (1.25) raises LockLeaseTooShort. Absent without both." },         \
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

#endif
