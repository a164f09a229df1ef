/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_sinks.c - the sample renderers of the [webhook] sinks' families
 * (docs/alerts.md "Delivery"): per sink, its notices sent, retried and
 * dropped, the queue waiting now, and whether a 410 Gone turned it off.
 * Bounded by the configured sinks.  Their rows are METRICS_SINK_ROWS
 * (metrics_impl.h).
 */
#include "agent/http/metrics_impl.h"

#include <inttypes.h>

#include "alerts/alerts.h"

void
metrics_notifications(struct metrics_out *o, const struct metric_family *mf)
{
    static const char *const results[] = { "sent", "retried", "dropped" };
    const struct alerts_stats *st = &o->alerts;
    size_t i, r;

    /* sink names are [a-zA-Z0-9_.-] (conf checks), no escaping needed */
    for (i = 0; i < st->nsinks; i++)
        for (r = 0; r < 3; r++)
            sb_addf(o->sb, "%s{sink=\"%s\",result=\"%s\"} %" PRIu64 "\n", mf->name,
                    st->sinks[i].name, results[r],
                    r == 0 ? st->sinks[i].sent : r == 1 ? st->sinks[i].retried :
                    st->sinks[i].dropped);
}

/* The sinks' queues now, and the sinks a 410 Gone turned off. */
void
metrics_notification_queue(struct metrics_out *o, const struct metric_family *mf)
{
    const struct alerts_stats *st = &o->alerts;

    for (size_t i = 0; i < st->nsinks; i++)
        sb_addf(o->sb, "%s{sink=\"%s\"} %zu\n", mf->name, st->sinks[i].name,
                st->sinks[i].queued);
}

void
metrics_notification_disabled(struct metrics_out *o, const struct metric_family *mf)
{
    const struct alerts_stats *st = &o->alerts;

    for (size_t i = 0; i < st->nsinks; i++)
        sb_addf(o->sb, "%s{sink=\"%s\"} %d\n", mf->name, st->sinks[i].name,
                st->sinks[i].disabled ? 1 : 0);
}
