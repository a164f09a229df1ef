/*
 * tracker.c - open-addressing hash of tracked locks (see tracker.h).
 *
 * Linear probing over a power-of-two table kept at most 70% full.  The
 * key hash 0 marks an empty slot (keytext_hash never returns 0).  Sweeping
 * rebuilds the table from the survivors, which is O(entries) once per
 * completed pass: cheaper and simpler than tombstones.
 */
#include "collectors/tracker.h"

#include <stdlib.h>
#include <string.h>

struct track_entry {
    uint64_t key_hash;
    uint64_t holder_hash;
    int64_t first_seen_ms;
    int64_t nottl_since_ms;
    uint32_t pass;
    uint32_t flags;
};

struct tracker {
    struct track_entry *slots;
    size_t cap;                 /* power of two */
    size_t count;
};

#define TRACKER_MIN_CAP 1024

struct tracker *
tracker_new(void)
{
    struct tracker *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    t->slots = calloc(TRACKER_MIN_CAP, sizeof(*t->slots));
    if (t->slots == NULL) {
        free(t);
        return NULL;
    }
    t->cap = TRACKER_MIN_CAP;
    return t;
}

void
tracker_free(struct tracker *t)
{
    if (t == NULL)
        return;
    free(t->slots);
    free(t);
}

static struct track_entry *
find_slot(struct track_entry *slots, size_t cap, uint64_t key_hash)
{
    size_t i = (size_t)key_hash & (cap - 1);

    while (slots[i].key_hash != 0 && slots[i].key_hash != key_hash)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* Move live entries (those seen in keep_pass, or all when keep_all) into a
 * table of new_cap slots. */
static int
rehash(struct tracker *t, size_t new_cap, int keep_all, uint32_t keep_pass)
{
    struct track_entry *ns;
    size_t i, n = 0;

    ns = calloc(new_cap, sizeof(*ns));
    if (ns == NULL)
        return -1;
    for (i = 0; i < t->cap; i++) {
        struct track_entry *e = &t->slots[i];

        if (e->key_hash == 0 || (!keep_all && e->pass != keep_pass))
            continue;
        *find_slot(ns, new_cap, e->key_hash) = *e;
        n++;
    }
    free(t->slots);
    t->slots = ns;
    t->cap = new_cap;
    t->count = n;
    return 0;
}

int
tracker_visit(struct tracker *t, uint64_t key_hash, uint64_t holder_hash,
              uint32_t pass, int64_t now_ms, int64_t start_age_ms,
              int has_ttl, struct track_result *res)
{
    struct track_entry *e;
    int fresh = 0;

    if ((t->count + 1) * 10 > t->cap * 7 &&
        rehash(t, t->cap * 2, 1, 0) == -1)
        return -1;
    if (start_age_ms < 0)
        start_age_ms = 0;

    e = find_slot(t->slots, t->cap, key_hash);
    memset(res, 0, sizeof(*res));
    if (e->key_hash == 0) {
        e->key_hash = key_hash;
        t->count++;
        fresh = 1;
    } else if (e->pass == pass) {
        res->duplicate = 1;
    }
    if (fresh || e->holder_hash != holder_hash) {
        /* A new lock, or the lock changed hands: the clock restarts,
         * back-dated by what Redis or the format says about its age. */
        e->holder_hash = holder_hash;
        e->first_seen_ms = now_ms - start_age_ms;
        e->nottl_since_ms = has_ttl ? 0 : e->first_seen_ms;
    } else if (!has_ttl && e->nottl_since_ms == 0) {
        e->nottl_since_ms = now_ms;     /* lost its TTL (PERSIST) */
    } else if (has_ttl) {
        e->nottl_since_ms = 0;
    }
    e->pass = pass;
    res->first_seen_ms = e->first_seen_ms;
    res->nottl_since_ms = e->nottl_since_ms;
    return 0;
}

int
tracker_backdate(struct tracker *t, uint64_t key_hash, int64_t acquired_ms,
                 struct track_result *res)
{
    struct track_entry *e = find_slot(t->slots, t->cap, key_hash);

    memset(res, 0, sizeof(*res));
    if (e->key_hash == 0)
        return -1;
    if (acquired_ms > 0 && acquired_ms < e->first_seen_ms) {
        if (e->nottl_since_ms == e->first_seen_ms)
            e->nottl_since_ms = acquired_ms;
        e->first_seen_ms = acquired_ms;
    }
    res->first_seen_ms = e->first_seen_ms;
    res->nottl_since_ms = e->nottl_since_ms;
    return 0;
}

int
tracker_seen(const struct tracker *t, uint64_t key_hash, uint32_t pass)
{
    size_t i = (size_t)key_hash & (t->cap - 1);

    while (t->slots[i].key_hash != 0) {
        if (t->slots[i].key_hash == key_hash)
            return t->slots[i].pass == pass;
        i = (i + 1) & (t->cap - 1);
    }
    return 0;
}

size_t
tracker_sweep(struct tracker *t, uint32_t pass)
{
    size_t live = 0, i, cap = TRACKER_MIN_CAP;

    for (i = 0; i < t->cap; i++)
        if (t->slots[i].key_hash != 0 && t->slots[i].pass == pass)
            live++;
    while (live * 10 > cap * 5)
        cap *= 2;
    if (rehash(t, cap, 0, pass) == -1) {
        /* Out of memory: keep the stale entries rather than lose the
         * live ones; they go at the next sweep. */
        return t->count;
    }
    return t->count;
}

size_t
tracker_count(const struct tracker *t)
{
    return t->count;
}
