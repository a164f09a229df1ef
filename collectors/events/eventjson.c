/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * eventjson.c - lock events as JSON (eventjson.h): one event, and the
 * page /api/v1/events answers, read from the ring in one pass.
 *
 * The pass sees every kept event newer than after (at most EVENTS_MAX),
 * filters by kind and target, and keeps either the first limit matches
 * (after given: reading forward) or the last limit (none given: the
 * newest, in a circle of limit slots).  The first event the pass sees
 * tells whether some were dropped since after (gap); the last, where the
 * next read starts when nothing was left out (next_after), so a reader
 * with a filter does not read the same unmatched events again.
 */
#include "collectors/events/eventjson.h"

#include <stdlib.h>
#include <string.h>

#include "collectors/locks/lockjson.h"

static json_t *
text_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? lockjson_text(s, strlen(s)) : json_null();
}

json_t *
event_json(const struct event *e)
{
    json_t *o = json_object();
    int bad = 0;

    if (o == NULL)
        return NULL;
    bad |= json_object_set_new(o, "seq", json_integer((json_int_t)e->seq));
    bad |= json_object_set_new(o, "time", lockjson_time(e->at_ms));
    bad |= json_object_set_new(o, "time_ms", json_integer(e->at_ms));
    bad |= json_object_set_new(o, "kind", json_string(event_kind_name(e->kind)));
    bad |= json_object_set_new(o, "severity", json_string(event_kind_severity(e->kind)));
    bad |= json_object_set_new(o, "target", text_or_null(e->target));
    bad |= json_object_set_new(o, "key", e->keylen > 0 ? lockjson_text(e->key, e->keylen)
                               : json_null());
    bad |= json_object_set_new(o, "key_escaped", e->keylen > 0 ?
                               lockjson_escaped(e->key, e->keylen) : json_null());
    bad |= json_object_set_new(o, "key_cut", json_boolean(e->key_cut));
    bad |= json_object_set_new(o, "holder", e->holderlen > 0 ?
                               lockjson_text(e->holder, e->holderlen) : json_null());
    bad |= json_object_set_new(o, "holder_escaped", e->holderlen > 0 ?
                               lockjson_escaped(e->holder, e->holderlen) : json_null());
    bad |= json_object_set_new(o, "holder_cut", json_boolean(e->holder_cut));
    bad |= json_object_set_new(o, "class", text_or_null(e->klass));
    bad |= json_object_set_new(o, "detail", lockjson_text(e->detail, strlen(e->detail)));
    bad |= json_object_set_new(o, "seconds", e->seconds >= 0 ? json_real(e->seconds)
                               : json_null());
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

struct pass {
    const struct events_query *q;
    json_t **kept;              /* limit slots */
    size_t matched;             /* matching events seen */
    uint64_t first_seen;        /* seq of the first event of the pass, 0 none */
    uint64_t last_seen;         /* of the last */
    uint64_t last_kept;         /* seq of the last event kept */
    bool failed;
};

static bool
matches(const struct events_query *q, const struct event *e)
{
    return (q->kind < 0 || (int)e->kind == q->kind) &&
        (q->target == NULL || strcmp(q->target, e->target) == 0);
}

static void
visit(const struct event *e, void *arg)
{
    struct pass *p = arg;
    size_t slot;
    json_t *o;

    if (p->first_seen == 0)
        p->first_seen = e->seq;
    p->last_seen = e->seq;
    if (!matches(p->q, e))
        return;
    p->matched++;
    if (p->q->has_after && p->matched > p->q->limit)
        return;                 /* left for the next read */
    if ((o = event_json(e)) == NULL) {
        p->failed = true;
        return;
    }
    slot = (p->matched - 1) % p->q->limit;
    json_decref(p->kept[slot]);     /* the newest only: the oldest goes */
    p->kept[slot] = o;
    p->last_kept = e->seq;
}

/* The kept events, oldest first, into a new array (the slots emptied). */
static json_t *
kept_array(struct pass *p)
{
    json_t *a = json_array();
    size_t n = p->matched < p->q->limit ? p->matched : p->q->limit, i, start;

    start = p->matched > p->q->limit && !p->q->has_after ? p->matched % p->q->limit : 0;
    for (i = 0; i < n; i++) {
        json_t *o = p->kept[(start + i) % p->q->limit];

        p->kept[(start + i) % p->q->limit] = NULL;
        if (a != NULL && json_array_append_new(a, o) == -1) {
            json_decref(a);
            a = NULL;
        } else if (a == NULL) {
            json_decref(o);
        }
    }
    return a;
}

json_t *
events_page_json(const struct events_query *q)
{
    struct pass p;
    struct events_query eq = *q;
    uint64_t newest = events_last_seq(), next;
    json_t *root = NULL, *events;
    bool gap = false, more;
    int bad = 0;

    if (eq.limit == 0 || eq.limit > EVENTS_MAX)
        eq.limit = EVENTS_PAGE_DEFAULT;
    if (eq.has_after && eq.after > newest) {
        /* seqs restarted (a new agent): whatever it holds is new */
        gap = true;
        eq.after = 0;
    }
    memset(&p, 0, sizeof(p));
    p.q = &eq;
    if ((p.kept = calloc(eq.limit, sizeof(*p.kept))) == NULL)
        return NULL;
    events_each(eq.has_after ? eq.after : 0, 0, visit, &p);
    events = kept_array(&p);
    for (size_t i = 0; i < eq.limit; i++)
        json_decref(p.kept[i]);
    free(p.kept);
    if (events == NULL || p.failed) {
        json_decref(events);
        return NULL;
    }
    if (eq.has_after && p.first_seen > eq.after + 1)
        gap = true;             /* some newer than after were pushed out */
    more = p.matched > eq.limit;
    /* forward: after the last one given when some are left, else after
     * everything this pass saw; the newest page: after everything */
    next = eq.has_after && more ? p.last_kept :
        p.last_seen > 0 ? p.last_seen : (eq.has_after ? eq.after : newest);
    if (p.last_seen > newest)
        newest = p.last_seen;
    if ((root = json_object()) == NULL) {
        json_decref(events);
        return NULL;
    }
    bad |= json_object_set_new(root, "count", json_integer((json_int_t)json_array_size(events)));
    bad |= json_object_set_new(root, "last_seq", json_integer((json_int_t)newest));
    bad |= json_object_set_new(root, "next_after", json_integer((json_int_t)next));
    bad |= json_object_set_new(root, "more", json_boolean(more));
    bad |= json_object_set_new(root, "gap", json_boolean(gap));
    bad |= json_object_set_new(root, "dropped", json_integer((json_int_t)events_dropped()));
    bad |= json_object_set_new(root, "events", events);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}
