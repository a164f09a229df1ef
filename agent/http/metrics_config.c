/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_config.c - the sample renderers of the configuration's families:
 * whether the last reload (SIGHUP) took effect, and when the running
 * configuration was loaded (a failed reload leaves the previous one in
 * charge: docs/deploying.md "Reloading").  Their rows are
 * METRICS_CONFIG_ROWS (metrics_impl.h).  Not in --once.
 */
#include "agent/http/metrics_impl.h"

#include "agent/agent.h"

void
metrics_config_reload_ok(struct metrics_out *o, const struct metric_family *mf)
{
    if (o->v->reload.ok_ms > 0)
        sb_addf(o->sb, "%s %d\n", mf->name, o->v->reload.failed ? 0 : 1);
}

void
metrics_config_reload_ok_time(struct metrics_out *o, const struct metric_family *mf)
{
    if (o->v->reload.ok_ms > 0)
        sb_addf(o->sb, "%s %lld.%03lld\n", mf->name, (long long)(o->v->reload.ok_ms / 1000),
                (long long)(o->v->reload.ok_ms % 1000));
}
