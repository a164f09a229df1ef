/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * graph.c - one pass of the wait-for graph: the edges from the snapshots'
 * fair queues and the waiting table, the cycles, their confirmation across
 * passes, the deadlock events and the report (see graph.h).
 *
 * A pass copies the waiting table out and indexes it (pairs.c: a holder
 * id is its owner's on the key the owner named it for; Redisson's fields
 * and liblockwatch's tokens, unique by construction, on any key), then
 * walks each target's retained locks once: a lock with a fair
 * queue gives queue -> holder edges, a lock whose key a waiting pair names
 * gives owner -> holder edges.  A waiting pair whose key no snapshot holds
 * in detail points at the owners whose pairs hold that key, unless the
 * snapshots vouch that the key is gone: every target whose patterns take
 * it has a complete snapshot newer than the holding pair's acquire, and
 * none has the key (a lock released without its `hold` line, by on-call
 * or by its TTL, is no one's).  Every edge's
 * label is its lock's index in the pass's lock list, which keeps what the
 * report says of the step (target, key, class, since when it is held,
 * and the scan generation it came from).
 */
#include "collectors/graph/graph_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/events/events.h"
#include "collectors/locks/lockstate.h"

#define PASS_LOCKS_MAX CYCLES_EDGES_MAX

struct gcand {
    uint64_t id;
    int64_t first_ms;
    uint64_t passes;
    uint64_t stamps[CYCLE_LEN_MAX];
    size_t n;
    bool confirmed;
    bool just;                          /* confirmed by this pass */
    int64_t confirmed_ms;
    char target[CONFIG_NAME_MAX + 1];   /* its label, fixed when confirmed: a lock
                                         * first known from lines, then from a
                                         * scan, keeps the cycle's alert */
};

/* An edge's lock: waiter waits for it, holder holds it. */
struct glock {
    const char *target;                 /* NULL: only reporters know it */
    const char *key;
    size_t keylen;
    const char *klass;                  /* NULL: class_of() with the rules */
    uint32_t waiter, holder;            /* nodes */
    const char *source;
    int64_t held_since_ms;
    uint64_t stamp;                     /* a scanning target's generation; 0 live */
    const char *holder_id;              /* holder's id as Redis has it (in the
                                         * snapshot or the pair); NULL: unknown */
    size_t holder_idlen;
    bool holder_id_cut;                 /* the snapshot kept only part of it */
    const char *unconfirmed;            /* graph_step.unconfirmed; NULL none */
    bool need_scan;                     /* a reporters' edge on a key a scanning
                                         * target's patterns take: confirmed only
                                         * once each such target's newest scan
                                         * began after the cycle was first seen */
    int64_t scanned_ms;                 /* the oldest of those scans' starts
                                         * (Unix ms); INT64_MIN: one has none */
};

struct pass {
    struct graph *g;
    const struct graph_target *targets;
    size_t ntargets;
    struct gindex ix;                   /* the waiting table's pairs */
    struct glock *locks;
    size_t nlocks;
    const struct class_rule *rules;
    size_t nrules;
    int64_t now_ms, mono_ms;
    struct gcand *cands;                /* this pass's */
    size_t ncands;
    struct graph_report *r;
    bool nomem;
};

/* ---- bytes ------------------------------------------------------------------ */

int
gbytes_set(struct graph_bytes *b, const char *p, size_t len, size_t max)
{
    size_t n = len < max ? len : max;

    b->p = malloc(n + 1);
    if (b->p == NULL)
        return -1;
    if (n > 0)
        memcpy(b->p, p, n);
    b->p[n] = '\0';
    b->len = n;
    b->cut = n < len;
    return 0;
}

void
gbytes_free(struct graph_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

int
gbytes_copy(struct graph_bytes *dst, const struct graph_bytes *src)
{
    if (gbytes_set(dst, src->p, src->len, src->len) == -1)
        return -1;
    dst->cut = src->cut;
    return 0;
}

void
gsite_free(struct graph_site *s)
{
    gbytes_free(&s->owner);
    gbytes_free(&s->held_key);
    gbytes_free(&s->wanted_key);
}

static uint64_t
hash_more(uint64_t h, const char *p, size_t n)
{
    while (n-- > 0)
        h = (h ^ (unsigned char)*p++) * UINT64_C(0x100000001b3);
    return (h ^ 0xff) * UINT64_C(0x100000001b3);
}

/* ---- the graph's life ------------------------------------------------------ */

static struct graph_report *report_new(int64_t now_ms);

struct graph *
graph_new(void)
{
    struct graph *g = calloc(1, sizeof(*g));

    if (g == NULL)
        return NULL;
    g->cy = cycles_new();
    g->orders = calloc(GRAPH_ORDERS_MAX, sizeof(*g->orders));
    g->cands = calloc(GRAPH_CANDIDATES_MAX, sizeof(*g->cands));
    /* an empty report from the start: the families and the API are there
     * before the first pass, as they will be after it */
    g->latest = report_new(0);
    if (g->cy == NULL || g->orders == NULL || g->cands == NULL || g->latest == NULL) {
        graph_report_unref(g->latest);
        cycles_free(g->cy);
        free(g->orders);
        free(g->cands);
        free(g);
        return NULL;
    }
    pthread_mutex_init(&g->mu, NULL);
    return g;
}

void
graph_free(struct graph *g)
{
    if (g == NULL)
        return;
    graph_report_unref(g->latest);
    orders_free(g);
    cycles_free(g->cy);
    free(g->cands);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

struct graph_report *
graph_latest(struct graph *g)
{
    struct graph_report *r;

    pthread_mutex_lock(&g->mu);
    r = g->latest;
    if (r != NULL)
        graph_report_ref(r);
    pthread_mutex_unlock(&g->mu);
    return r;
}

void
graph_report_ref(struct graph_report *r)
{
    pthread_mutex_lock(&r->ref_mu);
    r->refs++;
    pthread_mutex_unlock(&r->ref_mu);
}

/* The bytes of a step (those not filled are NULL). */
static void
step_free(struct graph_step *st)
{
    gbytes_free(&st->waiter);
    gbytes_free(&st->holder);
    gbytes_free(&st->holder_id);
    gbytes_free(&st->key);
}

static void
deadlock_free(struct graph_deadlock *d)
{
    for (size_t k = 0; k < d->nsteps; k++)
        step_free(&d->steps[k]);
}

void
graph_report_unref(struct graph_report *r)
{
    size_t i;
    int left;

    if (r == NULL)
        return;
    pthread_mutex_lock(&r->ref_mu);
    left = --r->refs;
    pthread_mutex_unlock(&r->ref_mu);
    if (left > 0)
        return;
    for (i = 0; i < r->ndeadlocks; i++)
        deadlock_free(&r->deadlocks[i]);
    for (i = 0; i < r->ninversions; i++) {
        gsite_free(&r->inversions[i].ab);
        gsite_free(&r->inversions[i].ba);
    }
    for (i = 0; i < r->nwaits; i++)
        step_free(&r->waits[i]);
    free(r->deadlocks);
    free(r->inversions);
    free(r->waits);
    pthread_mutex_destroy(&r->ref_mu);
    free(r);
}

size_t
graph_report_count(const struct graph_report *r, const char *target)
{
    size_t i, n = 0;

    for (i = 0; r != NULL && i < r->ndeadlocks; i++)
        if (strcmp(r->deadlocks[i].target, target) == 0)
            n++;
    return n;
}

/* ---- nodes ------------------------------------------------------------------ */

/* The node of holder id holder on key: its owner (gindex_owner_of), else
 * the id itself. */
static long
node_of(struct pass *p, const char *key, size_t keylen, const char *holder, size_t len)
{
    const struct gpair *m = gindex_owner_of(&p->ix, key, keylen, holder, len);

    if (m != NULL)
        return cycles_node(p->g->cy, m->owner, m->ownerlen);
    return cycles_node(p->g->cy, holder, len);
}

/* ---- edges ------------------------------------------------------------------ */

static void
add_edge(struct pass *p, long waiter, long holder, const struct glock *tmpl)
{
    struct glock *l;

    if (waiter < 0 || holder < 0 || waiter == holder)
        return;
    if (p->nlocks == PASS_LOCKS_MAX) {
        p->g->stats.edges_dropped++;
        return;
    }
    l = &p->locks[p->nlocks];
    *l = *tmpl;
    l->waiter = (uint32_t)waiter;
    l->holder = (uint32_t)holder;
    if (cycles_edge(p->g->cy, l->waiter, l->holder, (uint32_t)p->nlocks) == 0)
        p->nlocks++;
}

/* Every holder of snapshot lock l is waited for by waiter. */
static void
edges_to_holders(struct pass *p, long waiter, const struct snap_lock *l, struct glock *tmpl)
{
    uint16_t h;

    for (h = 0; h < l->nholders; h++) {
        tmpl->holder_id = l->holders[h].id;
        tmpl->holder_idlen = l->holders[h].id_len;
        tmpl->holder_id_cut = l->holders[h].truncated != 0;
        add_edge(p, waiter, node_of(p, l->key, l->key_len, l->holders[h].id,
                                    l->holders[h].id_len), tmpl);
    }
}

static void
lock_edges(struct pass *p, const char *target, const struct snapshot *s,
           const struct snap_lock *l, uint64_t stamp)
{
    struct glock t = { .target = target, .key = l->key, .keylen = l->key_len,
                       .klass = l->class_idx < s->nclasses ? s->classes[l->class_idx] : NULL,
                       .held_since_ms = l->first_seen_ms, .stamp = stamp };
    const char *q = l->queue;
    size_t i;

    if (l->nholders == 0)
        return;
    t.source = "fair-queue";
    for (i = 0; q != NULL && i < l->nqueue; i++, q += strlen(q) + 1)
        edges_to_holders(p, node_of(p, l->key, l->key_len, q, strlen(q)), l, &t);
    t.source = "waiting";
    for (i = gindex_key_first(&p->ix, l->key, l->key_len); gindex_key_at(&p->ix, i, l->key, l->key_len); i++) {
        const struct gpair *w = p->ix.bykey[i];

        p->ix.matched[i] = true;
        if (w->waiting)
            edges_to_holders(p, cycles_node(p->g->cy, w->owner, w->ownerlen), l, &t);
    }
}

/* Does snapshot s show every lock of its target: ok, every lock kept in
 * detail (not past SNAP_RETAIN_MAX or SNAP_RETAIN_BYTES), every shard read? */
static bool
snap_whole(const struct snapshot *s)
{
    size_t i;

    if (s == NULL || !s->ok || !snapshot_complete(s))
        return false;
    for (i = 0; s->shards != NULL && i < s->nshards; i++)
        if (!s->shards[i].ok)
            return false;
    return true;
}

/*
 * Until when (Unix ms) the snapshots vouch for key, which none of them
 * has: a holding acquired before then has been released since.  Every
 * target whose patterns take the key (not excluded) must vouch, with a
 * whole snapshot: follow mode's view for every acquire so far, a scan for
 * those before it began.  INT64_MIN when none can: no target takes the
 * key, or one that does cannot vouch (a failed or capped snapshot, a
 * shard not read, a target whose patterns are not known), so the key may
 * be held where no snapshot shows it.  With unwhole, also the first target
 * whose patterns take the key but whose snapshot is not whole (it can
 * neither show nor deny a holding of it), or NULL.
 */
static int64_t
vouched_until(const struct pass *p, const char *key, size_t len, const char **unwhole)
{
    int64_t until = INT64_MAX;
    bool taken = false, blind = false;
    size_t t;

    if (unwhole != NULL)
        *unwhole = NULL;
    for (t = 0; t < p->ntargets && !(blind && unwhole == NULL); t++) {
        const struct target_conf *c = p->targets[t].conf;
        const struct snapshot *s = p->targets[t].snap;

        if (c == NULL) {
            blind = true;
            continue;
        }
        if (!lockstate_in_patterns(c, key, len) || lock_key_excluded(c, key, len))
            continue;
        if (!snap_whole(s)) {
            blind = true;
            if (unwhole != NULL && *unwhole == NULL)
                *unwhole = p->targets[t].name;
            continue;
        }
        taken = true;
        if (!s->follow.active && s->started_ms < until)
            until = s->started_ms;
    }
    return taken && !blind ? until : INT64_MIN;
}

/* Does a target that scans (not following keyspace notifications, and
 * scanned by this agent) take key with its patterns: then a cycle through
 * a holding of it that only lines show waits for a scan begun after its
 * first sighting (one that can vouch the key gone), as a cycle from
 * scanned locks does; *scanned_ms: the oldest of their newest scans'
 * starts.  Only a key no such target takes goes by the lines alone. */
static bool
scan_covers(const struct pass *p, const char *key, size_t len, int64_t *scanned_ms)
{
    bool covered = false;
    size_t t;

    *scanned_ms = INT64_MAX;
    for (t = 0; t < p->ntargets; t++) {
        const struct target_conf *c = p->targets[t].conf;
        const struct snapshot *s = p->targets[t].snap;

        if (c == NULL || s == NULL || s->follow.active ||
            !lockstate_in_patterns(c, key, len) || lock_key_excluded(c, key, len))
            continue;
        covered = true;
        if (s->started_ms < *scanned_ms)
            *scanned_ms = s->started_ms;
    }
    return covered;
}

/* A waiting pair whose key no snapshot showed held: the owners whose pairs
 * hold the key are its holders (from their own lines), unless snapshots
 * newer than their acquire vouch that the key is gone. */
static void
reporter_edges(struct pass *p)
{
    size_t i, j;

    for (i = 0; i < p->ix.nbykey; i++) {
        const struct gpair *w = p->ix.bykey[i];
        int64_t until, scanned_ms;
        const char *unconfirmed;
        bool need_scan;

        if (!w->waiting || p->ix.matched[i])
            continue;
        until = vouched_until(p, w->key, w->keylen, &unconfirmed);
        need_scan = scan_covers(p, w->key, w->keylen, &scanned_ms);
        for (j = gindex_key_first(&p->ix, w->key, w->keylen); gindex_key_at(&p->ix, j, w->key, w->keylen); j++) {
            const struct gpair *h = p->ix.bykey[j];
            struct glock t = { .key = w->key, .keylen = w->keylen, .source = "waiting",
                               .held_since_ms = p->now_ms - (p->mono_ms - h->at_ms),
                               .holder_id = h->holder, .holder_idlen = h->holderlen,
                               .unconfirmed = unconfirmed, .need_scan = need_scan,
                               .scanned_ms = scanned_ms };

            if (!gpair_holds(h) || (h->ownerlen == w->ownerlen &&
                                    memcmp(h->owner, w->owner, w->ownerlen) == 0))
                continue;
            if (t.held_since_ms < until)
                continue;       /* gone from snapshots made after it was taken */
            add_edge(p, cycles_node(p->g->cy, w->owner, w->ownerlen),
                     cycles_node(p->g->cy, h->owner, h->ownerlen), &t);
        }
    }
}

/* A target that scans: its snapshot's generation (new with each scan);
 * following: 0, its view is current. */
static uint64_t
snap_stamp(const struct snapshot *s)
{
    if (s->follow.active)
        return 0;
    return s->counters.scans_ok + s->counters.scans_error + s->follow.published_total + 1;
}

static void
all_edges(struct pass *p, const struct graph_target *targets, size_t n)
{
    size_t t, i;

    for (t = 0; t < n; t++) {
        const struct snapshot *s = targets[t].snap;

        /* a failed scan's locks are stale: no edge from them */
        if (s == NULL || !s->ok)
            continue;
        for (i = 0; i < s->nlocks; i++)
            lock_edges(p, targets[t].name, s, s->locks[i], snap_stamp(s));
    }
    reporter_edges(p);
}

/* The holding pairs whose key no snapshot showed, where whole snapshots
 * made since their acquire vouch that the key is gone: released without
 * a `hold` line (lockctl release, a crash, an expiry), so no order may be
 * learnt from them as held now (orders.c). */
static void
mark_gone(struct pass *p)
{
    size_t i;

    for (i = 0; i < p->ix.nbykey; i++) {
        struct gpair *h = p->ix.bykey[i];

        if (p->ix.matched[i] || !gpair_holds(h))
            continue;
        h->gone = p->now_ms - (p->mono_ms - h->at_ms) < vouched_until(p, h->key, h->keylen, NULL);
    }
}

/* ---- cycles ----------------------------------------------------------------- */

static uint64_t
cycle_id(const struct pass *p, const uint32_t *labels, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    size_t i, len;

    for (i = 0; i < n; i++) {
        const struct glock *l = &p->locks[labels[i]];
        const char *w = cycles_name(p->g->cy, l->waiter, &len);

        /* not the target: the same cycle whether a scan or only the
         * reporters' lines showed its locks */
        h = hash_more(h, w, len);
        h = hash_more(h, l->key, l->keylen);
    }
    return h;
}

/* The youngest hold of the cycle: the least work lost by releasing it. */
static size_t
breaker_of(const struct pass *p, const uint32_t *labels, size_t n)
{
    size_t i, best = 0;

    for (i = 1; i < n; i++) {
        int64_t a = p->locks[labels[i]].held_since_ms, b = p->locks[labels[best]].held_since_ms;

        if (a > b)
            best = i;
    }
    return best;
}

static int
step_fill(const struct pass *p, struct graph_step *st, const struct glock *l)
{
    size_t len;
    const char *w = cycles_name(p->g->cy, l->waiter, &len);

    if (gbytes_set(&st->waiter, w, len, GRAPH_NAME_MAX) == -1)
        return -1;
    w = cycles_name(p->g->cy, l->holder, &len);
    if (gbytes_set(&st->holder, w, len, GRAPH_NAME_MAX) == -1 ||
        gbytes_set(&st->key, l->key, l->keylen, GRAPH_KEY_MAX) == -1 ||
        gbytes_set(&st->holder_id, l->holder_id, l->holder_idlen, GRAPH_HOLDER_ID_MAX) == -1)
        return -1;
    st->holder_id.cut |= l->holder_id_cut;
    snprintf(st->target, sizeof(st->target), "%s", l->target ? l->target : "");
    snprintf(st->unconfirmed, sizeof(st->unconfirmed), "%s", l->unconfirmed ? l->unconfirmed : "");
    if (l->klass != NULL)
        snprintf(st->klass, sizeof(st->klass), "%s", l->klass);
    else
        class_of(l->key, l->keylen, p->rules, p->nrules, st->klass, sizeof(st->klass));
    st->source = l->source;
    st->held_since_ms = l->held_since_ms;
    return 0;
}

/* Append n bytes to a bounded text (an event's detail, a C string): a NUL
 * byte of a key or a name becomes U+FFFD, as the sanitiser writes it, so
 * the text goes on past it (graph_impl.h). */
void
graph_detail_add(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
    static const char fffd[] = "\xef\xbf\xbd";
    size_t i, run;

    for (i = 0; i < n && *len + 1 < cap; i += run) {
        if (s[i] == '\0') {
            if (*len + 3 >= cap)
                break;
            memcpy(buf + *len, fffd, 3);
            *len += 3;
            run = 1;
            continue;
        }
        for (run = 0; i + run < n && s[i + run] != '\0'; run++)
            ;
        if (run > cap - 1 - *len)
            run = cap - 1 - *len;
        memcpy(buf + *len, s + i, run);
        *len += run;
    }
    buf[*len] = '\0';
}

static void
push_event(const struct graph_deadlock *d)
{
    char detail[EVENT_TEXT_MAX], num[64];
    const struct graph_step *b = &d->steps[d->breaker];
    struct event_in in = { .kind = EVENT_DEADLOCK, .target = d->target, .key = b->key.p,
                           .keylen = b->key.len, .holder = b->holder.p,
                           .holderlen = b->holder.len, .klass = b->klass,
                           .detail = detail, .seconds = -1 };
    size_t len = 0, i;

    detail[0] = '\0';
    snprintf(num, sizeof(num), "a cycle of %zu: ", d->nsteps);
    graph_detail_add(detail, sizeof(detail), &len, num, strlen(num));
    for (i = 0; i < d->nsteps; i++) {
        const struct graph_step *s = &d->steps[i];

        graph_detail_add(detail, sizeof(detail), &len, s->waiter.p, s->waiter.len);
        graph_detail_add(detail, sizeof(detail), &len, " waits for ", 11);
        graph_detail_add(detail, sizeof(detail), &len, s->key.p, s->key.len);
        graph_detail_add(detail, sizeof(detail), &len, " held by ", 9);
        graph_detail_add(detail, sizeof(detail), &len, s->holder.p, s->holder.len);
        graph_detail_add(detail, sizeof(detail), &len, "; ", 2);
    }
    graph_detail_add(detail, sizeof(detail), &len, "release ", 8);
    graph_detail_add(detail, sizeof(detail), &len, b->key.p, b->key.len);
    if (b->holder_id.len > 0) {
        /* what lockctl release --holder takes: the id, not the owner */
        graph_detail_add(detail, sizeof(detail), &len, " (holder id ", 12);
        graph_detail_add(detail, sizeof(detail), &len, b->holder_id.p, b->holder_id.len);
        graph_detail_add(detail, sizeof(detail), &len, b->holder_id.cut ? "...: " : ": ",
                   b->holder_id.cut ? 5 : 2);
    } else {
        graph_detail_add(detail, sizeof(detail), &len, " (", 2);
    }
    graph_detail_add(detail, sizeof(detail), &len, "the youngest hold) to break it", 30);
    events_push(&in);
}

static int
deadlock_fill(const struct pass *p, struct graph_deadlock *d, const uint32_t *labels,
              size_t n, struct gcand *c)
{
    size_t i;

    memset(d, 0, sizeof(*d));
    d->id = c->id;
    d->nsteps = n;
    d->since_ms = c->first_ms;
    d->confirmed_ms = c->confirmed_ms;
    d->breaker = breaker_of(p, labels, n);
    for (i = 0; i < n; i++)
        if (step_fill(p, &d->steps[i], &p->locks[labels[i]]) == -1) {
            deadlock_free(d);           /* not counted in the report: its own */
            return -1;
        }
    snprintf(d->target, sizeof(d->target), "%s", d->steps[0].target);
    for (i = 1; i < n; i++)
        if (strcmp(d->steps[i].target, d->target) != 0)
            break;
    if (i < n || d->target[0] == '\0')
        snprintf(d->target, sizeof(d->target), "%s", GRAPH_CROSS_TARGET);
    if (c->target[0] != '\0')
        snprintf(d->target, sizeof(d->target), "%s", c->target);
    return 0;
}

/* The candidate this cycle continues, with its passes, or a new one. */
static struct gcand *
candidate(struct pass *p, uint64_t id, const uint32_t *labels, size_t n)
{
    struct graph *g = p->g;
    struct gcand *c;
    size_t i;
    bool advanced = true;

    if (p->ncands == GRAPH_CANDIDATES_MAX) {
        g->stats.candidates_dropped++;
        return NULL;
    }
    c = &p->cands[p->ncands++];
    for (i = 0; i < g->ncands; i++)
        if (g->cands[i].id == id && g->cands[i].n == n)
            break;
    if (i == g->ncands) {
        memset(c, 0, sizeof(*c));
        c->id = id;
        c->n = n;
        c->first_ms = p->now_ms;
        for (i = 0; i < n; i++)
            c->stamps[i] = p->locks[labels[i]].stamp;
        c->passes = 1;
        return c;
    }
    *c = g->cands[i];
    c->passes++;
    c->just = false;
    /* every edge from a scanning target: from a newer scan than at first;
     * every edge of lines on a key a scanning target takes: its scans begun
     * since the first sighting (and they did not vouch the key gone) */
    for (i = 0; i < n; i++) {
        const struct glock *l = &p->locks[labels[i]];

        if (c->stamps[i] != 0 && c->stamps[i] == l->stamp)
            advanced = false;
        if (l->need_scan && l->scanned_ms <= c->first_ms)
            advanced = false;
    }
    if (!c->confirmed && c->passes >= 2 && advanced) {
        c->confirmed = true;
        c->just = true;
        c->confirmed_ms = p->now_ms;
    }
    return c;
}

static void
on_cycle(const uint32_t *nodes, const uint32_t *labels, size_t n, void *arg)
{
    struct pass *p = arg;
    struct graph_report *r = p->r;
    struct gcand *c;

    (void)nodes;
    c = candidate(p, cycle_id(p, labels, n), labels, n);
    if (c == NULL || !c->confirmed)
        return;
    if (r->ndeadlocks == GRAPH_DEADLOCKS_MAX) {
        p->g->stats.deadlocks_dropped++;
        return;
    }
    if (deadlock_fill(p, &r->deadlocks[r->ndeadlocks], labels, n, c) == -1) {
        p->nomem = true;
        return;
    }
    if (c->target[0] == '\0')
        snprintf(c->target, sizeof(c->target), "%s", r->deadlocks[r->ndeadlocks].target);
    if (c->just) {
        p->g->stats.deadlocks_total++;
        push_event(&r->deadlocks[r->ndeadlocks]);
    }
    r->ndeadlocks++;
}

/* ---- the waits listed ------------------------------------------------------ */

/* The oldest holding first, unknown ages last. */
static int
by_held_since(const void *a, const void *b)
{
    int64_t x = (*(const struct glock *const *)a)->held_since_ms;
    int64_t y = (*(const struct glock *const *)b)->held_since_ms;

    if (x == 0 || y == 0)
        return (x == 0) - (y == 0);
    return (x > y) - (x < y);
}

/* Copy the edges of the oldest holdings into the report.  -1 on ENOMEM. */
static int
report_waits(struct pass *p)
{
    const struct glock **order;
    size_t i, n = p->nlocks < GRAPH_WAITS_MAX ? p->nlocks : GRAPH_WAITS_MAX;

    p->r->waits_total = p->nlocks;
    if (n == 0)
        return 0;
    order = malloc(p->nlocks * sizeof(*order));
    p->r->waits = calloc(n, sizeof(*p->r->waits));
    if (order == NULL || p->r->waits == NULL) {
        free(order);
        return -1;
    }
    for (i = 0; i < p->nlocks; i++)
        order[i] = &p->locks[i];
    qsort(order, p->nlocks, sizeof(*order), by_held_since);
    for (i = 0; i < n; i++) {
        /* counted first: a step filled in part is freed with the report */
        p->r->nwaits++;
        if (step_fill(p, &p->r->waits[i], order[i]) == -1) {
            free(order);
            return -1;
        }
    }
    free(order);
    return 0;
}

/* ---- the pass ---------------------------------------------------------------- */

static struct graph_report *
report_new(int64_t now_ms)
{
    struct graph_report *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    if ((r->deadlocks = calloc(GRAPH_DEADLOCKS_MAX, sizeof(*r->deadlocks))) == NULL) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->ref_mu, NULL);
    r->refs = 1;
    r->at_ms = now_ms;
    return r;
}

/* Keep this pass's candidates for the next, count the graph, publish r. */
static void
pass_finish(struct pass *p, struct cycles_stats *cs)
{
    struct graph *g = p->g;
    struct graph_report *old;
    size_t i, unconfirmed = 0;

    memcpy(g->cands, p->cands, p->ncands * sizeof(*p->cands));
    g->ncands = p->ncands;
    for (i = 0; i < p->ncands; i++)
        if (!p->cands[i].confirmed)
            unconfirmed++;
    g->stats.passes++;
    g->stats.nodes = cs->nodes;
    g->stats.edges = cs->edges;
    g->stats.nodes_dropped += cs->nodes_dropped;
    g->stats.edges_dropped += cs->edges_dropped;
    g->stats.cycles_cut += cs->cut;
    g->stats.candidates = unconfirmed;
    g->stats.orders = g->norders;
    p->r->stats = g->stats;
    graph_report_ref(p->r);
    pthread_mutex_lock(&g->mu);
    old = g->latest;
    g->latest = p->r;
    pthread_mutex_unlock(&g->mu);
    graph_report_unref(old);
}

struct graph_report *
graph_pass(struct graph *g, const struct graph_target *targets, size_t ntargets,
           struct waitstats *ws, const struct class_rule *rules, size_t nrules,
           int64_t now_ms, int64_t mono_ms)
{
    struct pass p = { .g = g, .targets = targets, .ntargets = ntargets, .rules = rules,
                      .nrules = nrules, .now_ms = now_ms, .mono_ms = mono_ms };
    struct cycles_stats cs;

    cycles_reset(g->cy);
    p.r = report_new(now_ms);
    p.locks = malloc(PASS_LOCKS_MAX * sizeof(*p.locks));
    p.cands = malloc(GRAPH_CANDIDATES_MAX * sizeof(*p.cands));
    if (p.r == NULL || p.locks == NULL || p.cands == NULL || gindex_load(&p.ix, ws) == -1)
        goto nomem;
    all_edges(&p, targets, ntargets);
    mark_gone(&p);
    if (cycles_find(g->cy, on_cycle, &p) == -1 || p.nomem || report_waits(&p) == -1)
        goto nomem;
    /* orders learn from the pairs sorted by owner: bykey's order is done with */
    if (orders_pass(g, p.ix.pairs, p.ix.npairs, rules, nrules, now_ms, mono_ms) == -1 ||
        orders_report(g, p.r) == -1)
        goto nomem;
    cycles_stats(g->cy, &cs);
    pass_finish(&p, &cs);
    gindex_free(&p.ix);
    free(p.locks);
    free(p.cands);
    return p.r;
nomem:
    gindex_free(&p.ix);
    free(p.locks);
    free(p.cands);
    graph_report_unref(p.r);
    return NULL;
}
