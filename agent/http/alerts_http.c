/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerts_http.c - where the agent meets alerts/: the tick and the JSON
 * list of firing alerts (the alert metrics are rows of metrics.c).
 *
 * The tick takes the same kind of view HTTP renders from (references to
 * the newest snapshots, a copy of the wait statistics), so the rules read
 * exactly what /metrics shows and never block a scanner.  It runs on the
 * main thread once a second (main.c's sigtimedwait loop).
 */
#include "agent/http/alerts_http.h"

#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "alerts/alerts.h"

void
agent_alerts_tick(struct agent *a)
{
    struct rules_target *t;
    struct rules_group *g;
    struct view v;
    size_t i;

    if (a->alerts == NULL)
        return;
    if (agent_view(a, &v) == -1) {
        log_warnx("alerts: out of memory; this evaluation is skipped");
        return;
    }
    /* the counts first, so the trend the rules read includes them */
    agent_trend_sample(a, &v);
    if (v.trend != NULL) {
        classtrend_view_release(v.trend);
        if (classtrend_view(a->trend, clock_mono_ms(), v.trend) == -1) {
            free(v.trend);
            v.trend = NULL;
        }
    }
    t = calloc(v.ntargets ? v.ntargets : 1, sizeof(*t));
    g = calloc(v.ngroups ? v.ngroups : 1, sizeof(*g));
    if (t == NULL || g == NULL) {
        log_warnx("alerts: out of memory; this evaluation is skipped");
        free(t);
        free(g);
        view_release(&v);
        return;
    }
    for (i = 0; i < v.ntargets; i++) {
        t[i].name = v.targets[i].name;
        t[i].snap = v.targets[i].snap;
    }
    for (i = 0; i < v.ngroups; i++) {
        g[i].name = v.groups[i].name;
        g[i].report = v.groups[i].report;
    }
    alerts_tick(a->alerts, t, v.ntargets, g, v.ngroups, v.wait, v.trend, v.now_ms);
    free(t);
    free(g);
    view_release(&v);
}

/* GET /api/v1/alerts: an HTTP status and a malloc'd JSON body. */
static int
render_api_alerts(struct agent *a, char **body, size_t *len)
{
    if (a->alerts == NULL)
        return render_api_error(503, "alerting is not running", body, len);
    if (alerts_render_json(a->alerts, body, len) == -1)
        return 500;
    return 200;
}

void
serve_alerts(const struct http_request *rq, struct http_response *out)
{
    char *body = NULL;
    size_t len = 0;
    int status = render_api_alerts(rq->agent, &body, &len);

    http_json(out, status, body, len);
}
