/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * orders.c - lock orders and their inversions (graph.h "Lock orders").
 *
 * Each pass groups the waiting table's pairs by owner.  Within an owner,
 * a pair that holds its key (acquired at H, and not vouched gone by the
 * snapshots: graph.c mark_gone()) and another pair that waits
 * now, or holds a key it acquired later, both since H, say the owner held
 * the first class while acquiring the second: one order, learnt with its
 * site.  Orders live in a table of GRAPH_ORDERS_MAX (a linear search: a
 * pass learns few, and the table is small), the least recently seen
 * evicted when it is full; when an order is learnt whose reverse is known
 * from another owner, the two make an inversion.  Only the first
 * ORDER_OWNER_PAIRS pairs of an owner are looked at (an owner holding
 * hundreds of keys at once is counted, not learnt from quadratically).
 */
#include "collectors/graph/graph_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/events/events.h"

#define ORDER_OWNER_PAIRS 32

static int
by_owner(const void *a, const void *b)
{
    const struct gpair *x = *(struct gpair *const *)a, *y = *(struct gpair *const *)b;
    int c = memcmp(x->owner, y->owner, x->ownerlen < y->ownerlen ? x->ownerlen : y->ownerlen);

    if (c != 0)
        return c;
    if (x->ownerlen != y->ownerlen)
        return x->ownerlen < y->ownerlen ? -1 : 1;
    if (x->at_ms != y->at_ms)
        return x->at_ms < y->at_ms ? -1 : 1;
    /* in one millisecond, a hold came before a wait: the owner waits now,
     * holding the key (the waiting table's order is no order) */
    return (int)gpair_holds(y) - (int)gpair_holds(x);
}

static bool
same_owner(const struct gpair *x, const struct gpair *y)
{
    return x->ownerlen == y->ownerlen && memcmp(x->owner, y->owner, x->ownerlen) == 0;
}

static struct gorder *
find_order(struct graph *g, const char *a, const char *b)
{
    size_t i;

    for (i = 0; i < g->norders; i++)
        if (strcmp(g->orders[i].a, a) == 0 && strcmp(g->orders[i].b, b) == 0)
            return &g->orders[i];
    return NULL;
}

static void
order_drop(struct graph *g, size_t i)
{
    gsite_free(&g->orders[i].site);
    g->orders[i] = g->orders[--g->norders];
}

static void
inversion_event(const struct graph_inversion *v)
{
    char detail[EVENT_TEXT_MAX];
    struct event_in in = { .kind = EVENT_INVERSION, .key = v->ab.held_key.p,
                           .keylen = v->ab.held_key.len, .holder = v->ab.owner.p,
                           .holderlen = v->ab.owner.len, .klass = v->class_a,
                           .detail = detail, .seconds = -1 };

    const struct { const char *held, *wanted; const struct graph_site *s; } half[2] = {
        { v->class_a, v->class_b, &v->ab }, { v->class_b, v->class_a, &v->ba } };
    size_t len = 0;

    /* keys and owners are bytes: a NUL in one must not end the text */
    detail[0] = '\0';
    for (size_t i = 0; i < 2; i++) {
        const struct graph_site *s = half[i].s;

        graph_detail_add(detail, sizeof(detail), &len, i ? ", and " : "class ", 6);
        graph_detail_add(detail, sizeof(detail), &len, half[i].held, strlen(half[i].held));
        graph_detail_add(detail, sizeof(detail), &len, " held while acquiring ", 22);
        graph_detail_add(detail, sizeof(detail), &len, half[i].wanted, strlen(half[i].wanted));
        graph_detail_add(detail, sizeof(detail), &len, " (owner ", 8);
        graph_detail_add(detail, sizeof(detail), &len, s->owner.p, s->owner.len);
        graph_detail_add(detail, sizeof(detail), &len, ": ", 2);
        graph_detail_add(detail, sizeof(detail), &len, s->held_key.p, s->held_key.len);
        graph_detail_add(detail, sizeof(detail), &len, " then ", 6);
        graph_detail_add(detail, sizeof(detail), &len, s->wanted_key.p, s->wanted_key.len);
        graph_detail_add(detail, sizeof(detail), &len, ")", 1);
    }
    graph_detail_add(detail, sizeof(detail), &len, "; the two orders can deadlock", 29);
    events_push(&in);
}

/* o (a held, b wanted) and its reverse r from another owner: an inversion,
 * unless it is known already. */
static int
inversion_add(struct graph *g, const struct gorder *o, const struct gorder *r, int64_t now_ms)
{
    const struct gorder *ab = strcmp(o->a, o->b) < 0 ? o : r, *ba = ab == o ? r : o;
    struct graph_inversion *v;
    size_t i;

    for (i = 0; i < g->ninv; i++)
        if (strcmp(g->inv[i].inv.class_a, ab->a) == 0 && strcmp(g->inv[i].inv.class_b, ab->b) == 0)
            return 0;
    if (g->ninv == GRAPH_INVERSIONS_MAX) {
        g->stats.inversions_dropped++;
        return 0;
    }
    v = &g->inv[g->ninv].inv;
    memset(v, 0, sizeof(*v));
    snprintf(v->class_a, sizeof(v->class_a), "%s", ab->a);
    snprintf(v->class_b, sizeof(v->class_b), "%s", ab->b);
    v->since_ms = now_ms;
    v->id = (uint64_t)g->stats.inversions_total + 1;
    if (gbytes_copy(&v->ab.owner, &ab->site.owner) == -1 ||
        gbytes_copy(&v->ab.held_key, &ab->site.held_key) == -1 ||
        gbytes_copy(&v->ab.wanted_key, &ab->site.wanted_key) == -1 ||
        gbytes_copy(&v->ba.owner, &ba->site.owner) == -1 ||
        gbytes_copy(&v->ba.held_key, &ba->site.held_key) == -1 ||
        gbytes_copy(&v->ba.wanted_key, &ba->site.wanted_key) == -1) {
        gsite_free(&v->ab);
        gsite_free(&v->ba);
        return -1;
    }
    v->ab.seen_ms = ab->site.seen_ms;
    v->ba.seen_ms = ba->site.seen_ms;
    g->inv[g->ninv].live = true;
    g->ninv++;
    g->stats.inversions_total++;
    inversion_event(v);
    return 0;
}

/* Owner of h held class a (key of h) while acquiring class b (key of w). */
static int
learn(struct graph *g, const char *a, const char *b, const struct gpair *h,
      const struct gpair *w, int64_t now_ms, int64_t mono_ms)
{
    struct gorder *o = find_order(g, a, b), *r;
    size_t i, lru = 0;

    if (o != NULL) {
        o->last_mono = mono_ms;
        return 0;
    }
    if (g->norders == GRAPH_ORDERS_MAX) {
        for (i = 1; i < g->norders; i++)
            if (g->orders[i].last_mono < g->orders[lru].last_mono)
                lru = i;
        order_drop(g, lru);
        g->stats.orders_evicted++;
    }
    o = &g->orders[g->norders];
    memset(o, 0, sizeof(*o));
    snprintf(o->a, sizeof(o->a), "%s", a);
    snprintf(o->b, sizeof(o->b), "%s", b);
    o->last_mono = mono_ms;
    o->site.seen_ms = now_ms;
    if (gbytes_set(&o->site.owner, h->owner, h->ownerlen, GRAPH_NAME_MAX) == -1 ||
        gbytes_set(&o->site.held_key, h->key, h->keylen, GRAPH_KEY_MAX) == -1 ||
        gbytes_set(&o->site.wanted_key, w->key, w->keylen, GRAPH_KEY_MAX) == -1) {
        gsite_free(&o->site);
        return -1;
    }
    g->norders++;
    r = find_order(g, b, a);
    if (r != NULL && (r->site.owner.len != o->site.owner.len ||
                      memcmp(r->site.owner.p, o->site.owner.p, o->site.owner.len) != 0))
        return inversion_add(g, o, r, now_ms);
    return 0;
}

/* The orders one owner's pairs (n of them, by acquisition time) teach. */
static int
learn_owner(struct graph *g, struct gpair **q, size_t n, const struct class_rule *rules,
            size_t nrules, int64_t now_ms, int64_t mono_ms)
{
    char cls[ORDER_OWNER_PAIRS][CLASS_NAME_MAX];
    size_t i, j;

    if (n > ORDER_OWNER_PAIRS)
        n = ORDER_OWNER_PAIRS;
    for (i = 0; i < n; i++)
        class_of(q[i]->key, q[i]->keylen, rules, nrules, cls[i], sizeof(cls[i]));
    for (i = 0; i < n; i++) {
        if (!gpair_holds(q[i]) || q[i]->gone)
            continue;
        for (j = 0; j < n; j++) {
            bool later = q[j]->waiting || gpair_holds(q[j]);

            if (j == i || !later || q[j]->at_ms < q[i]->at_ms ||
                (q[j]->at_ms == q[i]->at_ms && j < i) || strcmp(cls[i], cls[j]) == 0)
                continue;
            if (learn(g, cls[i], cls[j], q[i], q[j], now_ms, mono_ms) == -1)
                return -1;
        }
    }
    return 0;
}

/* Forget orders not seen for GRAPH_ORDER_KEEP_MS, and the inversions
 * that lost one of their two orders. */
static void
forget(struct graph *g, int64_t mono_ms)
{
    size_t i = 0;

    while (i < g->norders) {
        if (mono_ms - g->orders[i].last_mono > GRAPH_ORDER_KEEP_MS)
            order_drop(g, i);
        else
            i++;
    }
    for (i = 0; i < g->ninv;) {
        struct graph_inversion *v = &g->inv[i].inv;

        if (find_order(g, v->class_a, v->class_b) == NULL ||
            find_order(g, v->class_b, v->class_a) == NULL) {
            gsite_free(&v->ab);
            gsite_free(&v->ba);
            g->inv[i] = g->inv[--g->ninv];
        } else {
            i++;
        }
    }
}

int
orders_pass(struct graph *g, struct gpair *pairs, size_t npairs,
            const struct class_rule *rules, size_t nrules, int64_t now_ms, int64_t mono_ms)
{
    struct gpair **q = calloc(npairs ? npairs : 1, sizeof(*q));
    size_t i, start;
    int rc = 0;

    if (q == NULL)
        return -1;
    for (i = 0; i < npairs; i++)
        q[i] = &pairs[i];
    qsort(q, npairs, sizeof(*q), by_owner);
    for (start = 0; start < npairs && rc == 0; start = i) {
        for (i = start + 1; i < npairs && same_owner(q[i], q[start]); i++)
            ;
        if (i - start >= 2)
            rc = learn_owner(g, q + start, i - start, rules, nrules, now_ms, mono_ms);
    }
    free(q);
    forget(g, mono_ms);
    return rc;
}

int
orders_report(const struct graph *g, struct graph_report *r)
{
    size_t i;

    r->ninversions = 0;
    if (g->ninv == 0)
        return 0;
    if ((r->inversions = calloc(g->ninv, sizeof(*r->inversions))) == NULL)
        return -1;
    for (i = 0; i < g->ninv; i++) {
        const struct graph_inversion *v = &g->inv[i].inv;
        struct graph_inversion *c = &r->inversions[i];

        *c = *v;
        memset(&c->ab, 0, sizeof(c->ab));
        memset(&c->ba, 0, sizeof(c->ba));
        r->ninversions = i + 1;
        if (gbytes_copy(&c->ab.owner, &v->ab.owner) == -1 ||
            gbytes_copy(&c->ab.held_key, &v->ab.held_key) == -1 ||
            gbytes_copy(&c->ab.wanted_key, &v->ab.wanted_key) == -1 ||
            gbytes_copy(&c->ba.owner, &v->ba.owner) == -1 ||
            gbytes_copy(&c->ba.held_key, &v->ba.held_key) == -1 ||
            gbytes_copy(&c->ba.wanted_key, &v->ba.wanted_key) == -1)
            return -1;
        c->ab.seen_ms = v->ab.seen_ms;
        c->ba.seen_ms = v->ba.seen_ms;
    }
    return 0;
}

void
orders_free(struct graph *g)
{
    size_t i;

    while (g->norders > 0)
        order_drop(g, g->norders - 1);
    for (i = 0; i < g->ninv; i++) {
        gsite_free(&g->inv[i].inv.ab);
        gsite_free(&g->inv[i].inv.ba);
    }
    g->ninv = 0;
    free(g->orders);
}
