/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerts_http.c - where the agent meets alerts/: the tick and the JSON
 * list of firing alerts (the alert metrics are rows of metrics.c).
 *
 * The tick takes the same kind of view HTTP renders from (references to
 * the newest snapshots, a copy of the wait statistics), so the rules read
 * exactly what /metrics shows and never block a scanner.  It runs on the
 * main thread once a second (main.c's sigtimedwait loop).  The rules judge
 * the wait-for graph's newest report too; its passes (agent_graph_tick,
 * over the same kind of view and the waiting table) run twice a second on
 * the same thread, and one that finds a new deadlock or inversion has the
 * alerts evaluated at once.
 */
#include "agent/http/alerts_http.h"

#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "alerts/alerts.h"
#include "common/clock.h"

/* The ids of r's deadlocks and inversions, summed with a mixer: equal for
 * the same sets (in any order). */
static uint64_t
report_ids(const struct graph_report *r)
{
    uint64_t h = 0;
    size_t i;

    for (i = 0; r != NULL && i < r->ndeadlocks; i++)
        h += (r->deadlocks[i].id ^ 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
    for (i = 0; r != NULL && i < r->ninversions; i++)
        h += (r->inversions[i].id + 0x94d049bb133111ebULL) * 0x2545f4914f6cdd1dULL;
    return h;
}

bool
agent_graph_tick(struct agent *a)
{
    struct graph_target *gt;
    struct graph_report *old, *r = NULL;
    struct view v;
    size_t i;
    bool changed;

    if (a->graph == NULL)
        return false;
    if (agent_view(a, &v) == -1) {
        log_warnx("wait-for graph: out of memory; this pass is skipped");
        return false;
    }
    old = v.graph;              /* the report before this pass */
    /* the main thread reloads the config too: a->cfg is steady here.  The
     * targets other shards watch come too, with no snapshot: a key their
     * patterns take is one no snapshot here can vouch for */
    gt = calloc(v.ntargets + a->cfg->naway + 1, sizeof(*gt));
    if (gt != NULL) {
        for (i = 0; i < v.ntargets; i++) {
            gt[i].name = v.targets[i].name;
            gt[i].snap = v.targets[i].snap;
            gt[i].conf = config_target(a->cfg, v.targets[i].name);
        }
        for (i = 0; i < a->cfg->naway; i++) {
            gt[v.ntargets + i].name = a->cfg->away[i].name;
            gt[v.ntargets + i].conf = &a->cfg->away[i];
        }
        r = graph_pass(a->graph, gt, v.ntargets + a->cfg->naway, a->waits, a->cfg->classes,
                       a->cfg->nclasses, v.now_ms, clock_mono_ms());
        free(gt);
    }
    if (r == NULL) {
        log_warnx("wait-for graph: out of memory; this pass is skipped");
        view_release(&v);
        return false;
    }
    changed = report_ids(r) != report_ids(old) ||
              r->ndeadlocks != (old ? old->ndeadlocks : 0) ||
              r->ninversions != (old ? old->ninversions : 0);
    graph_report_unref(r);
    view_release(&v);
    return changed;
}

void
agent_alerts_tick(struct agent *a)
{
    struct rules_target *t;
    struct rules_group *g;
    struct graph_report *gr;
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
    gr = a->graph != NULL ? graph_latest(a->graph) : NULL;
    t = calloc(v.ntargets ? v.ntargets : 1, sizeof(*t));
    g = calloc(v.ngroups ? v.ngroups : 1, sizeof(*g));
    if (t == NULL || g == NULL) {
        log_warnx("alerts: out of memory; this evaluation is skipped");
        free(t);
        free(g);
        graph_report_unref(gr);
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
    alerts_tick(a->alerts, t, v.ntargets, g, v.ngroups, v.wait, v.trend, gr, v.now_ms);
    graph_report_unref(gr);
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
