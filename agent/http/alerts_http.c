/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerts_http.c - where the agent meets alerts/: the tick, the JSON list
 * of firing alerts and the alert metrics.
 *
 * The tick takes the same kind of view HTTP renders from (references to
 * the newest snapshots, a copy of the wait statistics), so the rules read
 * exactly what /metrics shows and never block a scanner.  It runs on the
 * main thread once a second (main.c's sigtimedwait loop).
 */
#include "agent/http/alerts_http.h"

#include <inttypes.h>
#include <stdlib.h>

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
    alerts_tick(a->alerts, t, v.ntargets, g, v.ngroups, v.wait, v.now_ms);
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
render_alert_metrics(struct alerts *al, struct strbuf *sb)
{
    static const char *const results[] = { "sent", "retried", "dropped" };
    struct alerts_stats st;
    size_t i, r;
    int n;

    if (al == NULL)
        return;
    if (alerts_stats(al, &st) == -1) {
        sb->failed = true;
        return;
    }
    sb_adds(sb, "# HELP lockwatch_alerts_firing Alerts firing now, by alertname (every "
            "alertname is always present).\n# TYPE lockwatch_alerts_firing gauge\n");
    for (n = 0; n < ALERT_NAMES; n++)
        sb_addf(sb, "lockwatch_alerts_firing{alertname=\"%s\"} %zu\n",
                alert_name_str((enum alert_name)n), st.firing[n]);
    sb_adds(sb, "# HELP lockwatch_alerts_suppressed Alerts whose condition holds but that "
            "were not raised because 10000 already fire (last evaluation).\n"
            "# TYPE lockwatch_alerts_suppressed gauge\n");
    sb_addf(sb, "lockwatch_alerts_suppressed %zu\n", st.suppressed);
    sb_adds(sb, "# HELP lockwatch_notifications_total Notices per [webhook] sink: sent "
            "(2xx), retried (a failed try tried again), dropped (never delivered).\n"
            "# TYPE lockwatch_notifications_total counter\n");
    /* sink names are [a-zA-Z0-9_.-] (conf checks), no escaping needed */
    for (i = 0; i < st.nsinks; i++)
        for (r = 0; r < 3; r++)
            sb_addf(sb, "lockwatch_notifications_total{sink=\"%s\",result=\"%s\"} %" PRIu64
                    "\n", st.sinks[i].name, results[r],
                    r == 0 ? st.sinks[i].sent : r == 1 ? st.sinks[i].retried :
                    st.sinks[i].dropped);
    alerts_stats_release(&st);
}

void
serve_alerts(const struct http_request *rq, struct http_response *out)
{
    char *body = NULL;
    size_t len = 0;
    int status = render_api_alerts(rq->agent, &body, &len);

    http_json(out, status, body, len);
}
