/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * classes_api.c - GET /api/v1/classes: per lock class, what the scans and
 * the clients' samples say together (issue 28): the count of its locks
 * over every target, its baseline and whether it surges, the creation and
 * deletion rates, the wait P99 and the hold P50 / P99 / P99.9 of
 * wait_window, the lease (the longest TTL at first sight in wait_window),
 * whether a watchdog renews it and how often, the headroom (lease / hold
 * P99.9; a watchdog's: lease / renewal period) and the advice of leaseadvice.h with
 * the lease that would fit.  lockctl classes prints it.
 *
 * The classes are those of the trend store (but one that never had a lock
 * nor a sample), then those that only sent samples, each at most once: within CLASS_MAX + 1 each, so the answer
 * is bounded by the class caps.  Names are sanitised UTF-8.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "collectors/locks/lockjson.h"
#include "collectors/waits/leaseadvice.h"

static json_t *
seconds_or_null(bool known, double s)
{
    return known ? json_real(s) : json_null();
}

/* The scans' half of a class (t may be NULL: it only sent samples). */
static int
add_trend(json_t *o, const struct rules_conf *p, const struct classtrend_class *t)
{
    int bad = 0;

    bad |= json_object_set_new(o, "count", json_integer(t != NULL ? (json_int_t)t->count : 0));
    bad |= json_object_set_new(o, "baseline", seconds_or_null(t != NULL && t->baseline_known,
                                                              t != NULL ? t->baseline : 0));
    bad |= json_object_set_new(o, "surge_above",
                               seconds_or_null(t != NULL && t->baseline_known,
                                               t != NULL ? count_surge_threshold(p, t) : 0));
    bad |= json_object_set_new(o, "surging", json_boolean(t != NULL && count_surges(p, t)));
    bad |= json_object_set_new(o, "created_per_s", json_real(t != NULL ? t->created_rate : 0));
    bad |= json_object_set_new(o, "deleted_per_s", json_real(t != NULL ? t->deleted_rate : 0));
    bad |= json_object_set_new(o, "lease_s", seconds_or_null(t != NULL && t->lease_known,
                                                             t != NULL ? t->lease_ms / 1e3 : 0));
    bad |= json_object_set_new(o, "watchdog", json_boolean(t != NULL && t->watchdog));
    /* null too when the scans never saw the TTL run below the lease */
    bad |= json_object_set_new(o, "renewal_s",
                               seconds_or_null(t != NULL && t->watchdog && t->renewal_ms > 0,
                                               t != NULL ? t->renewal_ms / 1e3 : 0));
    return bad;
}

/* The samples' half, and the advice of both. */
static int
add_holds(json_t *o, const struct rules_conf *p, const struct classtrend_class *t,
          const struct waitstats_class *w)
{
    struct lease_judgement j;
    bool holds = w != NULL && w->hold_window_count > 0;
    int bad = 0;

    lease_judge(p, t, w, &j);
    bad |= json_object_set_new(o, "wait_p99_s", seconds_or_null(w != NULL && w->window_count > 0,
                                                                w != NULL ? w->window_p99_us / 1e6 : 0));
    bad |= json_object_set_new(o, "waits_in_window",
                               json_integer(w != NULL ? (json_int_t)w->window_count : 0));
    bad |= json_object_set_new(o, "wait_p99_high", json_boolean(wait_p99_high(p, w)));
    bad |= json_object_set_new(o, "holds_in_window",
                               json_integer(holds ? (json_int_t)w->hold_window_count : 0));
    bad |= json_object_set_new(o, "hold_p50_s", seconds_or_null(holds, holds ? w->hold_p50_us / 1e6 : 0));
    bad |= json_object_set_new(o, "hold_p99_s", seconds_or_null(holds, holds ? w->hold_p99_us / 1e6 : 0));
    bad |= json_object_set_new(o, "hold_p999_s",
                               seconds_or_null(holds, holds ? w->hold_p999_us / 1e6 : 0));
    bad |= json_object_set_new(o, "headroom", seconds_or_null(j.headroom_known, j.headroom));
    bad |= json_object_set_new(o, "advice", json_string(lease_verdict_str(j.verdict)));
    bad |= json_object_set_new(o, "suggested_lease_s",
                               seconds_or_null(j.suggest_ms > 0, j.suggest_ms / 1e3));
    return bad;
}

static int
add_class(json_t *arr, const struct rules_conf *p, const char *name,
          const struct classtrend_class *t, const struct waitstats_class *w)
{
    json_t *o = json_object();
    int bad = o == NULL;

    if (bad)
        return -1;
    bad |= json_object_set_new(o, "class", lockjson_text(name, strlen(name)));
    bad |= add_trend(o, p, t);
    bad |= add_holds(o, p, t, w);
    bad |= json_array_append_new(arr, o);
    return bad ? -1 : 0;
}

static int
render_classes(const struct view *v, const struct rules_conf *p, char **body, size_t *len)
{
    json_t *root = json_object(), *arr = json_array();
    size_t i;
    int bad = root == NULL || arr == NULL;

    for (i = 0; !bad && v->trend != NULL && i < v->trend->nclasses; i++) {
        const struct classtrend_class *t = &v->trend->classes[i];
        const struct waitstats_class *w = waitstats_view_class(v->wait, t->name);

        /* a class that never had a lock nor a sample (the "other" every
         * class table has) has nothing to say */
        if (t->count == 0 && t->created_total == 0 && t->deleted_total == 0 &&
            !t->lease_known && (w == NULL || (w->window_count == 0 && w->hold_window_count == 0)))
            continue;
        bad |= add_class(arr, p, t->name, t, w) != 0;
    }
    for (i = 0; !bad && v->wait != NULL && i < v->wait->nclasses; i++) {
        const struct waitstats_class *w = &v->wait->classes[i];

        if (classtrend_find(v->trend, w->name) == NULL)
            bad |= add_class(arr, p, w->name, NULL, w) != 0;
    }
    if (bad || root == NULL) {
        json_decref(arr);
        json_decref(root);
        return 500;
    }
    bad |= json_object_set_new(root, "classes", arr);
    bad |= json_object_set_new(root, "wait_window_s", json_real(p->wait_window_ms / 1e3));
    bad |= json_object_set_new(root, "count_baseline_window_s",
                               json_real(p->count_baseline_window_ms / 1e3));
    bad |= json_object_set_new(root, "samples", json_boolean(v->wait != NULL));
    if (!bad && (*body = json_dumps(root, JSON_COMPACT | LOCKJSON_REALS)) != NULL) {
        *len = strlen(*body);
        json_decref(root);
        return 200;
    }
    json_decref(root);
    return 500;
}

void
serve_classes(const struct http_request *rq, struct http_response *out)
{
    struct rules_conf p;
    struct view v;
    char *body = NULL;
    size_t len = 0;
    int status;

    if (agent_view(rq->agent, &v) == -1) {
        http_text(out, 500, HTTP_OOM_TEXT);
        return;
    }
    pthread_mutex_lock(&rq->agent->mu);
    p = rq->agent->cfg->rules;      /* a copy: a reload may free the config */
    pthread_mutex_unlock(&rq->agent->mu);
    status = render_classes(&v, &p, &body, &len);
    view_release(&v);
    http_json(out, status, body, len);
}
