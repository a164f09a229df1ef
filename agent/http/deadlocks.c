/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * deadlocks.c - GET /api/v1/deadlocks: the wait-for graph's newest report
 * as JSON (docs/http-api.md "Deadlocks"): the deadlocks now, each with its
 * steps in cycle order and the lock to release, the lock-order inversions
 * known, who waits for whom now (the graph's edges, deadlocked or not, as
 * steps), and the graph's counts.
 *
 * Keys, holders and owners are bytes: each comes as sanitised UTF-8 and
 * percent-encoded (`key`, `key_escaped`), as in /api/v1/locks, so hostile
 * bytes never break the document; each was cut to the report's bounds
 * (GRAPH_KEY_MAX, GRAPH_NAME_MAX), `*_cut` says so.  A step's `holder` is a
 * node (an owner, or a holder id no line names); `holder_id` is the id the
 * lock's value shows, what `lockctl release --holder` takes (null when no
 * one knows it).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "collectors/graph/graph.h"
#include "collectors/locks/lockjson.h"

/* name, name_escaped and name_cut (when cut) of b into o. */
static int
set_bytes(json_t *o, const char *name, const struct graph_bytes *b)
{
    char esc[64], cut[64];
    int bad = 0;

    snprintf(esc, sizeof(esc), "%s_escaped", name);
    snprintf(cut, sizeof(cut), "%s_cut", name);
    bad |= json_object_set_new(o, name, lockjson_text(b->p, b->len));
    bad |= json_object_set_new(o, esc, lockjson_escaped(b->p, b->len));
    if (b->cut)
        bad |= json_object_set_new(o, cut, json_true());
    return bad;
}

static json_t *
step_json(const struct graph_step *s, int64_t at_ms)
{
    json_t *o = json_object();
    int bad = o == NULL;

    if (bad)
        return NULL;
    bad |= set_bytes(o, "waiter", &s->waiter);
    bad |= set_bytes(o, "key", &s->key);
    bad |= json_object_set_new(o, "target", s->target[0] ? json_string(s->target) : json_null());
    bad |= json_object_set_new(o, "class", lockjson_text(s->klass, strlen(s->klass)));
    bad |= set_bytes(o, "holder", &s->holder);
    if (s->holder_id.len > 0) {
        bad |= set_bytes(o, "holder_id", &s->holder_id);
    } else {
        bad |= json_object_set_new(o, "holder_id", json_null());
        bad |= json_object_set_new(o, "holder_id_escaped", json_null());
    }
    bad |= json_object_set_new(o, "held_since", lockjson_time(s->held_since_ms));
    bad |= json_object_set_new(o, "held_seconds", s->held_since_ms > 0 ?
                               json_real((double)(at_ms - s->held_since_ms) / 1000.0) :
                               json_null());
    bad |= json_object_set_new(o, "source", json_string(s->source));
    bad |= json_object_set_new(o, "unconfirmed_target", s->unconfirmed[0] ?
                               json_string(s->unconfirmed) : json_null());
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *
deadlock_json(const struct graph_deadlock *d, int64_t at_ms)
{
    json_t *o = json_object(), *steps = json_array(), *s;
    char id[17];
    int bad = o == NULL || steps == NULL;
    size_t i;

    for (i = 0; !bad && i < d->nsteps; i++)
        bad |= (s = step_json(&d->steps[i], at_ms)) == NULL || json_array_append_new(steps, s) == -1;
    if (bad) {
        json_decref(o);
        json_decref(steps);
        return NULL;
    }
    snprintf(id, sizeof(id), "%016llx", (unsigned long long)d->id);
    bad |= json_object_set_new(o, "id", json_string(id));
    bad |= json_object_set_new(o, "target", json_string(d->target));
    bad |= json_object_set_new(o, "since", lockjson_time(d->since_ms));
    bad |= json_object_set_new(o, "confirmed", lockjson_time(d->confirmed_ms));
    bad |= json_object_set_new(o, "release", json_integer((json_int_t)d->breaker));
    bad |= json_object_set_new(o, "steps", steps);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *
site_json(const struct graph_site *s, const char *held, const char *wanted)
{
    json_t *o = json_object();
    int bad = o == NULL;

    if (bad)
        return NULL;
    bad |= set_bytes(o, "owner", &s->owner);
    bad |= json_object_set_new(o, "held_class", lockjson_text(held, strlen(held)));
    bad |= set_bytes(o, "held_key", &s->held_key);
    bad |= json_object_set_new(o, "wanted_class", lockjson_text(wanted, strlen(wanted)));
    bad |= set_bytes(o, "wanted_key", &s->wanted_key);
    bad |= json_object_set_new(o, "seen", lockjson_time(s->seen_ms));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *
inversion_json(const struct graph_inversion *v)
{
    json_t *o = json_object();
    int bad = o == NULL;

    if (bad)
        return NULL;
    bad |= json_object_set_new(o, "classes", json_pack("[o,o]",
                               lockjson_text(v->class_a, strlen(v->class_a)),
                               lockjson_text(v->class_b, strlen(v->class_b))));
    bad |= json_object_set_new(o, "since", lockjson_time(v->since_ms));
    bad |= json_object_set_new(o, "sites", json_pack("[o,o]",
                               site_json(&v->ab, v->class_a, v->class_b),
                               site_json(&v->ba, v->class_b, v->class_a)));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *
stats_json(const struct graph_stats *s)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I}}",
                     "passes", (json_int_t)s->passes, "nodes", (json_int_t)s->nodes,
                     "edges", (json_int_t)s->edges, "candidates", (json_int_t)s->candidates,
                     "orders", (json_int_t)s->orders, "dropped",
                     "nodes", (json_int_t)s->nodes_dropped,
                     "edges", (json_int_t)s->edges_dropped,
                     "long_cycles", (json_int_t)s->cycles_cut,
                     "candidates", (json_int_t)s->candidates_dropped,
                     "deadlocks", (json_int_t)s->deadlocks_dropped,
                     "orders", (json_int_t)s->orders_evicted,
                     "inversions", (json_int_t)s->inversions_dropped);
}

/* The report as a JSON document; NULL on ENOMEM. */
static json_t *
report_json(const struct graph_report *r)
{
    json_t *root = json_object(), *dl = json_array(), *inv = json_array(), *x;
    json_t *waits = json_array();
    int bad = root == NULL || dl == NULL || inv == NULL || waits == NULL;
    size_t i;

    for (i = 0; !bad && i < r->ndeadlocks; i++)
        bad |= (x = deadlock_json(&r->deadlocks[i], r->at_ms)) == NULL || json_array_append_new(dl, x);
    for (i = 0; !bad && i < r->ninversions; i++)
        bad |= (x = inversion_json(&r->inversions[i])) == NULL || json_array_append_new(inv, x);
    for (i = 0; !bad && i < r->nwaits; i++)
        bad |= (x = step_json(&r->waits[i], r->at_ms)) == NULL || json_array_append_new(waits, x);
    if (bad) {
        json_decref(root);
        json_decref(dl);
        json_decref(inv);
        json_decref(waits);
        return NULL;
    }
    bad |= json_object_set_new(root, "at", lockjson_time(r->at_ms));
    bad |= json_object_set_new(root, "deadlocks", dl);
    bad |= json_object_set_new(root, "inversions", inv);
    bad |= json_object_set_new(root, "waits", waits);
    bad |= json_object_set_new(root, "waits_total", json_integer((json_int_t)r->waits_total));
    bad |= json_object_set_new(root, "graph", stats_json(&r->stats));
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

void
serve_deadlocks(const struct http_request *rq, struct http_response *out)
{
    struct graph_report *r = rq->agent->graph != NULL ? graph_latest(rq->agent->graph) : NULL;
    char *body = NULL;
    size_t len = 0;
    json_t *doc;
    int status;

    if (r == NULL) {
        status = render_api_error(503, "the wait-for graph has made no pass yet", &body, &len);
        http_json(out, status, body, len);
        return;
    }
    doc = report_json(r);
    graph_report_unref(r);
    body = doc != NULL ? json_dumps(doc, JSON_COMPACT | LOCKJSON_REALS) : NULL;
    json_decref(doc);
    if (body == NULL) {
        http_text(out, 500, HTTP_OOM_TEXT);
        return;
    }
    http_json(out, 200, body, strlen(body));
}
