/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * classmetrics.c - the sample renderers of the class-trend families
 * (issue 28): the lease histogram, the lease headroom, the count baseline
 * and the creation and deletion counters, each per class only, over the
 * classes of the trend store (at most CLASS_MAX + 1: the cap of one
 * target's classes), so at most 201 x 19 histogram series and 201 of
 * each other family.  Their rows are METRIC_FAMILIES_TREND in
 * metric_families[] (metrics_impl.h).
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "agent/http/metrics_impl.h"
#include "collectors/waits/leaseadvice.h"

void
lease_histograms(struct metrics_out *o, const struct metric_family *mf)
{
    const struct classtrend_view *tv = o->v->trend;
    size_t i, b;

    for (i = 0; i < tv->nclasses; i++) {
        const struct classtrend_class *c = &tv->classes[i];
        uint64_t cum = 0;

        if (c->lease_count == 0)
            continue;
        for (b = 0; b <= SNAP_LEASE_NBOUNDS; b++) {
            cum += c->lease_bucket[b];
            class_series(o->sb, mf->name, "_bucket", c->name, NULL);
            sb_addf(o->sb, ",le=\"%s\"} %" PRIu64 "\n",
                    b < SNAP_LEASE_NBOUNDS ? snap_lease_bounds_le[b] : "+Inf", cum);
        }
        class_series(o->sb, mf->name, "_sum", c->name, NULL);
        sb_adds(o->sb, "} ");
        add_double(o->sb, c->lease_sum_s);
        sb_adds(o->sb, "\n");
        class_series(o->sb, mf->name, "_count", c->name, NULL);
        sb_addf(o->sb, "} %" PRIu64 "\n", c->lease_count);
    }
}

void
lease_headroom(struct metrics_out *o, const struct metric_family *mf)
{
    const struct classtrend_view *tv = o->v->trend;
    struct lease_judgement j;
    struct rules_conf p;

    memset(&p, 0, sizeof(p));   /* the ratio needs no setting */
    for (size_t i = 0; i < tv->nclasses; i++) {
        lease_judge(&p, &tv->classes[i], waitstats_view_class(o->v->wait, tv->classes[i].name), &j);
        if (!j.headroom_known)
            continue;
        class_series(o->sb, mf->name, "", tv->classes[i].name, NULL);
        sb_adds(o->sb, "} ");
        add_double(o->sb, j.headroom);
        sb_adds(o->sb, "\n");
    }
}

/* The class's lease as the agent judges it (the longest TTL at first sight
 * in wait_window), and a watchdog class's renewal period as the scans see
 * it: what the headroom is made of. */
void
class_lease(struct metrics_out *o, const struct metric_family *mf)
{
    const struct classtrend_view *tv = o->v->trend;

    for (size_t i = 0; i < tv->nclasses; i++) {
        if (!tv->classes[i].lease_known)
            continue;
        class_series(o->sb, mf->name, "", tv->classes[i].name, NULL);
        sb_adds(o->sb, "} ");
        add_double(o->sb, (double)tv->classes[i].lease_ms / 1000.0);
        sb_adds(o->sb, "\n");
    }
}

void
class_renewal(struct metrics_out *o, const struct metric_family *mf)
{
    const struct classtrend_view *tv = o->v->trend;

    for (size_t i = 0; i < tv->nclasses; i++) {
        const struct classtrend_class *c = &tv->classes[i];

        if (!c->lease_known || !c->watchdog || c->renewal_ms <= 0)
            continue;
        class_series(o->sb, mf->name, "", c->name, NULL);
        sb_adds(o->sb, "} ");
        add_double(o->sb, (double)c->renewal_ms / 1000.0);
        sb_adds(o->sb, "\n");
    }
}

void
class_baseline(struct metrics_out *o, const struct metric_family *mf)
{
    const struct classtrend_view *tv = o->v->trend;

    for (size_t i = 0; i < tv->nclasses; i++) {
        if (!tv->classes[i].baseline_known)
            continue;
        class_series(o->sb, mf->name, "", tv->classes[i].name, NULL);
        sb_adds(o->sb, "} ");
        add_double(o->sb, tv->classes[i].baseline);
        sb_adds(o->sb, "\n");
    }
}

void
class_churn(struct metrics_out *o, const struct metric_family *mf)
{
    const struct classtrend_view *tv = o->v->trend;

    for (size_t i = 0; i < tv->nclasses; i++) {
        uint64_t n;

        memcpy(&n, (const char *)&tv->classes[i] + mf->at, sizeof(n));
        class_series(o->sb, mf->name, "", tv->classes[i].name, NULL);
        sb_addf(o->sb, "} %" PRIu64 "\n", n);
    }
}
