/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * leasemetrics.c - the sample renderers of the lease families (issue 26,
 * collectors/lease/lease.h): leases that ran out while held, per (target,
 * class, renewed), and how long holders kept reporting a lock past its
 * lease, per class.  Their rows are METRIC_FAMILIES_LEASE in
 * metric_families[] (metrics_impl.h).
 *
 * Bounded by construction: at most LEASE_ROWS_MAX x 2 expiration series,
 * and an overrun histogram only for the classes of the wait statistics
 * (at most CLASS_MAX + 1) that have had an overrun.
 */
#include <inttypes.h>
#include <stddef.h>

#include "agent/http/metrics_impl.h"
#include "collectors/lease/lease.h"

/* Leases that ran out, per (target, class) row, renewed or not: a row's
 * two series from its first expiration on (a row exists for every class
 * scanned). */
void
lease_expirations(struct metrics_out *o, const struct metric_family *mf)
{
    const struct lease_view *l = o->source[SRC_LEASE];
    size_t i;
    int r;

    for (i = 0; i < l->nrows; i++)
        for (r = 0; r < 2 && l->rows[i].expired[0] + l->rows[i].expired[1] > 0; r++) {
            target_class_label(o->sb, mf->name, l->rows[i].target, l->rows[i].klass);
            sb_addf(o->sb, ",renewed=\"%s\"} %" PRIu64 "\n", r ? "yes" : "no",
                    l->rows[i].expired[r]);
        }
}

/* The overrun histogram of each class that has had an overrun. */
void
overrun_histograms(struct metrics_out *o, const struct metric_family *mf)
{
    const struct waitstats_view *w = o->v->wait;
    size_t i;

    for (i = 0; i < w->nclasses; i++)
        if (w->classes[i].has_overrun)
            wait_histogram(o->sb, mf->name, w->classes[i].name, NULL, &w->classes[i].overrun);
}
