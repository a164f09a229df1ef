/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h - the /metrics families as one table (metrics.c).
 *
 * Each row names a family, its type and help, where its samples come
 * from and how they are rendered, in the order of the exposition.  A new
 * metric is one row: the HELP and TYPE lines, the check that its source
 * exists and the walk over targets, classes or shards are shared, and
 * the sample renderer writes the row's name, never a name of its own.
 * tests/unit/test_render.c checks that every row's HELP and TYPE appear
 * once and that every sample belongs to the row above it.
 */
#ifndef LOCKWATCH_METRICS_H
#define LOCKWATCH_METRICS_H

#include <stddef.h>

#include "common/strbuf.h"
#include "agent/agent.h"

struct guard_stats;
struct metrics_out;

/* Where a family's samples come from; a family whose source this render
 * does not have is left out whole, HELP and TYPE too. */
enum metric_source {
    SRC_VIEW,           /* the targets' snapshots and the Redlock groups: always */
    SRC_WAIT,           /* the wait statistics: only when the agent ingests samples */
    SRC_WAIT_KEYED,     /* the same, only while [samples] key_file is set */
    SRC_ALERTS,         /* the alerts' counts: not in --once */
    SRC_RELEASES,       /* the guarded-release counters: not in --once */
    SRC_THROTTLE,       /* the release endpoint's token throttle: not in --once */
    SRC_HTTP,           /* the HTTP server's admission counters: the /metrics route only */
    SRC_TREND,          /* the class trends (leases, counts): not in --once */
    SRC_LEASE,          /* the leases that ran out (collectors/lease): not in --once */
    SRC_GRAPH,          /* the wait-for graph's report: not in --once, nor before its
                         * first pass */
    SRC_PROCESS,        /* the agent process's own figures (process_*, from /proc;
                         * procmetrics.h): the /metrics route only */
    SRC_COUNT
};

/* How a value the row points at (metric_family.at) is stored and written. */
enum metric_value {
    VAL_U64,            /* uint64_t, as an integer */
    VAL_I64,            /* int64_t, as an integer */
    VAL_SIZE,           /* size_t, as an integer */
    VAL_BOOL,           /* bool, as 1 or 0 */
    VAL_SECONDS,        /* double seconds, to the microsecond */
    VAL_MS,             /* int64_t milliseconds, as seconds to the millisecond */
};

struct metric_family {
    const char *name;
    const char *type;               /* "gauge", "counter" or "histogram" */
    enum metric_source source;
    /* Write the samples (never the HELP and TYPE lines) under mf->name. */
    void (*samples)(struct metrics_out *o, const struct metric_family *mf);
    size_t at;                      /* for the shared renderers: the value's
                                     * offset in the struct they walk */
    enum metric_value value;        /* and its type */
    const char *help;
};

/* The families, in the order of the exposition. */
extern const struct metric_family metric_families[];
extern const size_t metric_nfamilies;

/*
 * The exposition of v, and of the HTTP server's counters when http is
 * not NULL (render_metrics is this with http NULL).  0, or -1 when the
 * buffer failed.
 */
int render_metrics_http(const struct view *v, const struct guard_stats *http,
                        struct strbuf *sb);

#endif
