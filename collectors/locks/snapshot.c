/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * snapshot.c - counting, retaining, ordering and freeing scan snapshots,
 * and the names of the read errors their counters are kept by.
 *
 * Retention is a bounded min-heap keyed on badness: the root is the least
 * bad lock kept, so a new lock is kept only if it is worse than the root,
 * which it then replaces.  Each kept lock is one allocation holding the
 * record, its holders and its bytes, so evicting it is one free().
 */
#include "collectors/locks/snapshot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/locks/redlock.h"

static const char *const read_error_names[SCAN_READ_KINDS] = {
#define X(id, name) [SCAN_READ_##id] = name,
    SCAN_READ_ERRORS(X)
#undef X
};

const char *
scan_read_error_name(enum scan_read_error k)
{
    return (unsigned)k < SCAN_READ_KINDS ? read_error_names[k] : "other";
}

enum scan_read_error
scan_read_error_of(const char *str, size_t len)
{
    size_t n = 0, k;

    while (n < len && str[n] != ' ')
        n++;
    for (k = 0; k < SCAN_READ_OTHER; k++)
        if (strlen(read_error_names[k]) == n && memcmp(read_error_names[k], str, n) == 0)
            return (enum scan_read_error)k;
    return SCAN_READ_OTHER;
}

struct snapshot *
snapshot_new(const char *target)
{
    struct snapshot *s;

    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->target = strdup(target);
    if (s->target == NULL) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->ref_mu, NULL);
    s->refs = 1;
    return s;
}

void
snapshot_ref(struct snapshot *s)
{
    pthread_mutex_lock(&s->ref_mu);
    s->refs++;
    pthread_mutex_unlock(&s->ref_mu);
}

void
snapshot_unref(struct snapshot *s)
{
    int left;
    size_t i;

    if (s == NULL)
        return;
    pthread_mutex_lock(&s->ref_mu);
    left = --s->refs;
    pthread_mutex_unlock(&s->ref_mu);
    if (left > 0)
        return;
    for (i = 0; i < s->nclasses; i++)
        free(s->classes[i]);
    free(s->classes);
    free(s->class_stats);
    for (i = 0; i < s->nlocks; i++) {
        free(s->locks[i]->queue);
        free(s->locks[i]);
    }
    free(s->locks);
    free(s->shards);
    free(s->nodes);
    redlock_map_free(s->redlock);
    snapshot_unref(s->last_good);
    free(s->target);
    pthread_mutex_destroy(&s->ref_mu);
    free(s);
}

int
snapshot_rank(uint8_t states)
{
    return ((states & LOCK_LEAKED) ? 4 : 0) + ((states & LOCK_LONG) ? 2 : 0) +
        ((states & LOCK_REENTRANT_HIGH) ? 1 : 0);
}

const char *
snapshot_worst_state(uint8_t states)
{
    if (states & LOCK_LEAKED)
        return "leaked";
    if (states & LOCK_LONG)
        return "long";
    if (states & LOCK_REENTRANT_HIGH)
        return "reentrant_high";
    return "held";
}

bool
snapshot_worse(const struct snap_lock *a, const struct snap_lock *b)
{
    int ra = snapshot_rank(a->states), rb = snapshot_rank(b->states);

    if (ra != rb)
        return ra > rb;
    return a->first_seen_ms < b->first_seen_ms;
}

static struct snap_class *
class_slot(struct snapshot *s, uint16_t idx)
{
    if (idx >= s->class_cap) {
        size_t ncap = s->class_cap ? s->class_cap : 16;
        struct snap_class *nc;

        while (ncap <= idx)
            ncap *= 2;
        nc = realloc(s->class_stats, ncap * sizeof(*nc));
        if (nc == NULL)
            return NULL;
        memset(nc + s->class_cap, 0, (ncap - s->class_cap) * sizeof(*nc));
        s->class_stats = nc;
        s->class_cap = ncap;
    }
    return &s->class_stats[idx];
}

const int64_t snap_lease_bounds_ms[SNAP_LEASE_NBOUNDS] = {
    100, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000,
    120000, 300000, 600000, 1800000, 3600000, 86400000,
};

const char *const snap_lease_bounds_le[SNAP_LEASE_NBOUNDS] = {
    "0.1", "0.25", "0.5", "1", "2", "5", "10", "15", "30", "60",
    "120", "300", "600", "1800", "3600", "86400",
};

/* A lock at first sight: counted as created, its TTL (when it has one)
 * as a lease. */
static void
class_lease(struct snap_class *c, int64_t pttl_ms)
{
    size_t i;

    c->created++;
    if (pttl_ms < 0)
        return;
    for (i = 0; i < SNAP_LEASE_NBOUNDS && pttl_ms > snap_lease_bounds_ms[i]; i++)
        ;
    c->lease_bucket[i]++;
    c->lease_n++;
    c->lease_sum_ms += (double)pttl_ms;
    if (pttl_ms > c->lease_max_ms)
        c->lease_max_ms = pttl_ms;
}

/* A lock seen before, renewed while held, with a TTL: its age + TTL and
 * its TTL (a low only when renewed since the last outage: low).  (One never renewed says nothing of renewals: a lock set with a
 * TTL far above its class's lease lives past 1.5 leases unrenewed.) */
static void
class_span(struct snap_class *c, int64_t span_ms, int64_t pttl_ms, bool low)
{
    if (low && (c->held_low_n == 0 || pttl_ms < c->held_min_pttl_ms))
        c->held_min_pttl_ms = pttl_ms;
    c->held_low_n += low;
    if (span_ms > c->span_max_ms)
        c->span_max_ms = span_ms;
    c->held_ttl_n++;
}

static void
class_add(struct snap_class *c, const struct snap_lock *l, int64_t now_ms)
{
    int64_t age = now_ms - l->first_seen_ms;

    if (l->format < FORMATS_MAX)
        c->locks[l->format]++;
    c->total++;
    if (l->states & LOCK_LEAKED)
        c->leaked++;
    if (l->states & LOCK_LONG)
        c->long_held++;
    if (l->states & LOCK_REENTRANT_HIGH)
        c->reentrant_high++;
    if (l->nholders > 0 && age > c->oldest_ms)
        c->oldest_ms = age;
    if (l->max_count > c->max_reentrancy)
        c->max_reentrancy = l->max_count;
    if (l->first_sight)
        class_lease(c, l->pttl_ms);
    else if (l->pttl_ms >= 0 && (l->flags & SNAP_RENEWED))
        class_span(c, age + l->pttl_ms, l->pttl_ms, l->renewed_since_outage);
}

/* One allocation: record, holders, then key and ids, each followed by a
 * NUL, then a HOST_MAX area for the host (the client registry may fill it
 * in after the lock was kept). */
static struct snap_lock *
copy_lock(const struct snap_lock *l)
{
    size_t need = sizeof(*l) + l->nholders * sizeof(struct snap_holder) +
        l->key_len + 1 + HOST_MAX, i;
    struct snap_lock *c;
    char *p;

    for (i = 0; i < l->nholders; i++)
        need += l->holders[i].id_len + 1;
    c = malloc(need);
    if (c == NULL)
        return NULL;
    *c = *l;
    c->bytes = need;
    c->queue = NULL;            /* set on the retained copy only (waiters.c) */
    c->nqueue = 0;
    c->holders = (struct snap_holder *)(c + 1);
    p = (char *)(c->holders + l->nholders);
    for (i = 0; i < l->nholders; i++) {
        c->holders[i] = l->holders[i];
        memcpy(p, l->holders[i].id, l->holders[i].id_len);
        p[l->holders[i].id_len] = '\0';
        c->holders[i].id = p;
        p += l->holders[i].id_len + 1;
    }
    memcpy(p, l->key, l->key_len);
    p[l->key_len] = '\0';
    c->key = p;
    p += l->key_len + 1;
    c->host = p;
    c->host_len = l->host != NULL && l->host_len < HOST_MAX ? l->host_len : 0;
    if (c->host_len > 0)
        memcpy(p, l->host, c->host_len);
    p[c->host_len] = '\0';
    return c;
}

/* min-heap on badness: parent is never worse than its children */
static void
sift_up(struct snap_lock **h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;

        if (!snapshot_worse(h[p], h[i]))
            break;
        struct snap_lock *t = h[p];
        h[p] = h[i];
        h[i] = t;
        i = p;
    }
}

static void
sift_down(struct snap_lock **h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;

        if (l < n && snapshot_worse(h[m], h[l]))
            m = l;
        if (r < n && snapshot_worse(h[m], h[r]))
            m = r;
        if (m == i)
            break;
        struct snap_lock *t = h[m];
        h[m] = h[i];
        h[i] = t;
        i = m;
    }
}

static void
evict_root(struct snapshot *s)
{
    s->retained_bytes -= s->locks[0]->bytes;
    free(s->locks[0]->queue);
    free(s->locks[0]);
    s->locks[0] = s->locks[--s->nlocks];
    if (s->nlocks > 0)
        sift_down(s->locks, s->nlocks, 0);
}

int
snapshot_add(struct snapshot *s, const struct snap_lock *l, int64_t now_ms)
{
    struct snap_class *c = class_slot(s, l->class_idx);
    struct snap_lock *copy;

    if (c == NULL)
        return -1;
    class_add(c, l, now_ms);
    s->locks_total++;
    if (l->format_contradicts)
        s->format_contradictions++;

    /* Make room: drop less bad locks while over a cap. */
    while (s->nlocks > 0 && (s->nlocks >= SNAP_RETAIN_MAX ||
                             s->retained_bytes + l->key_len > SNAP_RETAIN_BYTES)) {
        if (!snapshot_worse(l, s->locks[0]))
            return 0;           /* not worse than anything kept: counted only */
        evict_root(s);
    }
    if (s->nlocks == s->locks_cap) {
        size_t ncap = s->locks_cap ? s->locks_cap * 2 : 256;
        struct snap_lock **nl;

        if (ncap > SNAP_RETAIN_MAX)
            ncap = SNAP_RETAIN_MAX;
        nl = realloc(s->locks, ncap * sizeof(*nl));
        if (nl == NULL)
            return -1;
        s->locks = nl;
        s->locks_cap = ncap;
    }
    copy = copy_lock(l);
    if (copy == NULL)
        return -1;
    s->retained_bytes += copy->bytes;
    s->locks[s->nlocks] = copy;
    sift_up(s->locks, s->nlocks);
    s->nlocks++;
    return 0;
}

void
snapshot_restate(struct snapshot *s, struct snap_lock *l, uint8_t states,
                 int64_t first_seen_ms, int64_t now_ms)
{
    struct snap_class *c = l->class_idx < s->class_cap ? &s->class_stats[l->class_idx] : NULL;
    int64_t age = now_ms - first_seen_ms;

    if (c != NULL) {
        if ((states & LOCK_LONG) && !(l->states & LOCK_LONG))
            c->long_held++;
        if ((states & LOCK_LEAKED) && !(l->states & LOCK_LEAKED))
            c->leaked++;
        if (l->nholders > 0 && age > c->oldest_ms)
            c->oldest_ms = age;
    }
    l->states = states;
    l->first_seen_ms = first_seen_ms;
}

void
snapshot_reformat(struct snapshot *s, struct snap_lock *l, uint8_t format, bool ttl_optional)
{
    struct snap_class *c = l->class_idx < s->class_cap ? &s->class_stats[l->class_idx] : NULL;

    if (format == l->format || format >= FORMATS_MAX)
        return;
    if (c != NULL) {
        if (c->locks[l->format] > 0)
            c->locks[l->format]--;
        c->locks[format]++;
        if (ttl_optional && (l->states & LOCK_LEAKED) && c->leaked > 0)
            c->leaked--;
    }
    if (ttl_optional)
        l->states &= (uint8_t)~LOCK_LEAKED;
    l->format = format;
    if (l->format_source != FMT_SOURCE_DECLARED)
        l->format_source = FMT_SOURCE_PROVEN;
}

int
snapshot_reholder(struct snapshot *s, size_t i, const struct snap_holder *holders, size_t n,
                  uint32_t total)
{
    struct snap_lock tmp, *c, *old = s->locks[i];
    int64_t maxc = 0;

    tmp = *old;
    tmp.holders = (struct snap_holder *)holders;
    tmp.nholders = (uint16_t)(n < HOLDERS_MAX ? n : HOLDERS_MAX);
    tmp.holders_total = total;
    for (size_t k = 0; k < tmp.nholders; k++)
        if (holders[k].count > maxc)
            maxc = holders[k].count;
    tmp.max_count = maxc;
    if ((c = copy_lock(&tmp)) == NULL)
        return -1;
    s->retained_bytes = s->retained_bytes - old->bytes + c->bytes;
    s->locks[i] = c;
    free(old);
    return 0;
}

static int
worst_first(const void *a, const void *b)
{
    const struct snap_lock *x = *(const struct snap_lock *const *)a;
    const struct snap_lock *y = *(const struct snap_lock *const *)b;

    if (snapshot_worse(x, y))
        return -1;
    if (snapshot_worse(y, x))
        return 1;
    if (x->key_len != y->key_len)
        return x->key_len < y->key_len ? -1 : 1;
    return memcmp(x->key, y->key, x->key_len);
}

void
snapshot_finish(struct snapshot *s)
{
    if (s->nlocks > 1)
        qsort(s->locks, s->nlocks, sizeof(*s->locks), worst_first);
}
