/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tracker.c - open-addressing hashes of tracked locks (see tracker.h).
 *
 * Two tables of the same 48-byte entry: one entry per lock key, and, for
 * locks with several holders at once (shared read locks), one entry per
 * (key, holder) so the lock's age can pass to the next-oldest holder when
 * the timed one leaves.  Single-holder locks, nearly all of them, never
 * touch the second table.
 *
 * Linear probing over power-of-two tables kept at most 70% full.  Hash 0
 * marks an empty slot (keyhash never returns 0).  Sweeping re-packs
 * a table in place, O(slots) once per completed pass: cheaper and simpler
 * than tombstones, and it needs no second table.
 *
 * The names of renewed locks (for the event their expiry pushes) live in
 * a pool of TRACKER_NAMES_MAX slots beside the tables, an entry pointing
 * at its slot; a slot is freed when its entry's holder changes or the
 * entry is swept.
 */
#include "collectors/scan/tracker.h"

#include <stdlib.h>
#include <string.h>

/* 56 bytes.  A 32-bit holder hash is enough: a collision only hides a
 * holder change when the old and new holder collide, 1 in 4e9. */
struct track_entry {
    uint64_t key_hash;
    int64_t first_seen_ms;
    int64_t nottl_since_ms;
    int64_t expires_ms;         /* the lease's end as last read; 0: no TTL */
    int64_t settled_ms;         /* the holding proven unbroken since */
    int64_t seen_ms;            /* the last read that found it held */
    uint32_t holder_hash;
    uint32_t pass;
    int16_t row;                /* lease_row(); -1 none */
    uint16_t flags;             /* ENTRY_* */
    uint32_t name;              /* names slot + 1; 0: none */
};

#define ENTRY_RENEWED 0x1
#define ENTRY_AT_START 0x2      /* first seen with nothing looked at before */
#define ENTRY_OTHER 0x4         /* counted in the class "other" (the cap) */
#define ENTRY_RENEWED_AFTER 0x8 /* renewed since the last tracker_outage() */

_Static_assert(sizeof(struct track_entry) == 64, "64 bytes an entry");

struct track_name {
    char *key;                  /* NULL: the slot is free */
    size_t keylen;
    char holder[TRACKER_NAME_HOLDER_MAX];
    size_t holderlen;
};

struct table {
    struct track_entry *slots;
    size_t cap;                 /* power of two */
    size_t count;
};

struct tracker {
    struct table locks;
    struct table holders;       /* (key, holder) of multi-holder locks */
    tracker_end_fn *end;
    struct track_name *names;   /* TRACKER_NAMES_MAX, allocated on first use */
    size_t nnames;
    size_t name_hint;           /* where to look for a free slot first */
    size_t ends_unknown;        /* tracker_take_ends_unknown() */
};

#define TRACKER_MIN_CAP 1024

static int
table_init(struct table *tb)
{
    tb->slots = calloc(TRACKER_MIN_CAP, sizeof(*tb->slots));
    tb->cap = TRACKER_MIN_CAP;
    tb->count = 0;
    return tb->slots ? 0 : -1;
}

struct tracker *
tracker_new(tracker_end_fn *end)
{
    struct tracker *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    t->end = end;
    if (table_init(&t->locks) == -1 || table_init(&t->holders) == -1) {
        tracker_free(t);
        return NULL;
    }
    return t;
}

void
tracker_free(struct tracker *t)
{
    if (t == NULL)
        return;
    free(t->locks.slots);
    free(t->holders.slots);
    if (t->names != NULL)
        for (size_t i = 0; i < TRACKER_NAMES_MAX; i++)
            free(t->names[i].key);
    free(t->names);
    free(t);
}

/* ---- the names of renewed locks --------------------------------------------------- */

/* Keep ls's key and holder for e (once).  Nothing kept when the pool is
 * full or memory is short: the ending is then told without names. */
static void
name_keep(struct tracker *t, struct track_entry *e, const struct track_lease *ls)
{
    struct track_name *n;
    size_t i, kl = ls->keylen > TRACKER_NAME_KEY_MAX ? TRACKER_NAME_KEY_MAX : ls->keylen;

    if (e->name != 0 || ls->key == NULL || t->nnames == TRACKER_NAMES_MAX)
        return;
    if (t->names == NULL && (t->names = calloc(TRACKER_NAMES_MAX, sizeof(*t->names))) == NULL)
        return;
    for (i = t->name_hint; t->names[i].key != NULL; i = (i + 1) % TRACKER_NAMES_MAX)
        ;
    n = &t->names[i];
    if ((n->key = malloc(kl ? kl : 1)) == NULL)
        return;
    memcpy(n->key, ls->key, kl);
    n->keylen = kl;
    n->holderlen = ls->holder == NULL ? 0 : ls->holderlen > sizeof(n->holder) ?
        sizeof(n->holder) : ls->holderlen;
    if (n->holderlen > 0)
        memcpy(n->holder, ls->holder, n->holderlen);
    e->name = (uint32_t)i + 1;
    t->nnames++;
    t->name_hint = (i + 1) % TRACKER_NAMES_MAX;
}

static void
name_drop(struct tracker *t, struct track_entry *e)
{
    if (e->name == 0)
        return;
    free(t->names[e->name - 1].key);
    t->names[e->name - 1].key = NULL;
    t->nnames--;
    e->name = 0;
}

/* e's holder's lease ran out at e->expires_ms: tell, then forget its names. */
static void
lease_ended(struct tracker *t, struct track_entry *e)
{
    struct lease_end le;

    if (t->end != NULL) {
        memset(&le, 0, sizeof(le));
        le.row = e->row;
        le.key_hash = e->key_hash;
        le.holder_hash = e->holder_hash;
        if (e->name != 0) {
            le.key = t->names[e->name - 1].key;
            le.keylen = t->names[e->name - 1].keylen;
            le.holder = t->names[e->name - 1].holder;
            le.holderlen = t->names[e->name - 1].holderlen;
        }
        le.renewed = (e->flags & ENTRY_RENEWED) != 0;
        le.first_seen_ms = e->first_seen_ms;
        le.last_seen_ms = e->seen_ms;
        le.expires_ms = e->expires_ms;
        t->end(&le);
    }
    name_drop(t, e);
}

/* The lease part of a visit by the same holder: renewed when the TTL now
 * runs out later than the last read said.  A lease set again, or a TTL
 * given or taken away, may as well be the same holder id taking the lock
 * again (released, or run out, between the reads): the holding is proven
 * unbroken only since this read (now_ms). */
static void
lease_visit(struct tracker *t, struct track_entry *e, const struct track_lease *ls,
            int64_t now_ms)
{
    if (ls->expires_ms > 0 && e->expires_ms > 0 &&
        ls->expires_ms > e->expires_ms + TRACKER_RENEW_SLACK_MS) {
        e->flags |= ENTRY_RENEWED | ENTRY_RENEWED_AFTER;
        name_keep(t, e, ls);
        e->settled_ms = now_ms;
    } else if ((ls->expires_ms > 0) != (e->expires_ms > 0) ||
               (ls->expires_ms > 0 && ls->expires_ms + TRACKER_RENEW_SLACK_MS < e->expires_ms)) {
        /* given, lost, or earlier: the same id taking the lock again with
         * a shorter lease (a red-team) looks like a lease running down
         * only while its end stays where it was */
        e->settled_ms = now_ms;
    }
    e->expires_ms = ls->expires_ms;
    e->row = (int16_t)ls->row;
}

/* A new holder (or a new lock): the old holder's lease ended if it had
 * run out by this read; the new one starts unrenewed. */
static void
lease_restart(struct tracker *t, struct track_entry *e, const struct track_lease *ls,
              int fresh)
{
    if (!fresh && e->expires_ms > 0 && e->expires_ms <= ls->at_ms + TRACKER_END_SLACK_MS)
        lease_ended(t, e);
    name_drop(t, e);
    e->flags = 0;
    e->expires_ms = ls->expires_ms;
    e->row = (int16_t)ls->row;
}

static struct track_entry *
find_slot(struct track_entry *slots, size_t cap, uint64_t hash)
{
    size_t i = (size_t)hash & (cap - 1);

    while (slots[i].key_hash != 0 && slots[i].key_hash != hash)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* Move the entries into a table of new_cap slots (to grow). */
static int
rehash(struct table *tb, size_t new_cap)
{
    struct track_entry *ns;
    size_t i, n = 0;

    ns = calloc(new_cap, sizeof(*ns));
    if (ns == NULL)
        return -1;
    for (i = 0; i < tb->cap; i++) {
        struct track_entry *e = &tb->slots[i];

        if (e->key_hash == 0)
            continue;
        *find_slot(ns, new_cap, e->key_hash) = *e;
        n++;
    }
    free(tb->slots);
    tb->slots = ns;
    tb->cap = new_cap;
    tb->count = n;
    return 0;
}

/* The entry for hash, inserted (zeroed but for the hash) if absent;
 * *fresh says which.  NULL on ENOMEM. */
static struct track_entry *
table_get(struct table *tb, uint64_t hash, int *fresh)
{
    struct track_entry *e;

    if ((tb->count + 1) * 10 > tb->cap * 7 && rehash(tb, tb->cap * 2) == -1)
        return NULL;
    e = find_slot(tb->slots, tb->cap, hash);
    *fresh = e->key_hash == 0;
    if (*fresh) {
        memset(e, 0, sizeof(*e));
        e->key_hash = hash;
        tb->count++;
    }
    return e;
}

/*
 * Shared locks: remember when each holder was first seen; return the
 * holder that has been there longest and its first-seen time (holders
 * new in this visit, or first seen before born_ms, count from since_ms).
 */
static int
visit_holders(struct tracker *t, uint64_t key_hash, const uint32_t *holders,
              size_t n, uint32_t pass, int64_t since_ms, int64_t born_ms, uint32_t *oldest,
              int64_t *oldest_ms)
{
    struct track_entry *e;
    size_t i;
    int fresh;

    *oldest_ms = INT64_MAX;
    for (i = 0; i < n; i++) {
        e = table_get(&t->holders, lease_pair_hash(key_hash, holders[i]), &fresh);
        if (e == NULL)
            return -1;
        /* first seen before an empty server's start: of a holding lost */
        if (fresh || e->first_seen_ms < born_ms) {
            e->holder_hash = holders[i];
            e->first_seen_ms = since_ms;
        }
        e->pass = pass;
        if (e->first_seen_ms < *oldest_ms) {
            *oldest_ms = e->first_seen_ms;
            *oldest = holders[i];
        }
    }
    return 0;
}

/* Of the current holders, the one seen longest in the holders table (the
 * lock had several holders before); 0 when none is there. */
static int64_t
oldest_known(const struct tracker *t, uint64_t key_hash, const uint32_t *holders,
             size_t n, uint32_t *oldest)
{
    const struct track_entry *e;
    int64_t best = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        e = find_slot(t->holders.slots, t->holders.cap, lease_pair_hash(key_hash, holders[i]));
        if (e->key_hash != 0 && (best == 0 || e->first_seen_ms < best)) {
            best = e->first_seen_ms;
            *oldest = holders[i];
        }
    }
    return best;
}

static int
holds(const uint32_t *holders, size_t n, uint32_t h)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (holders[i] == h)
            return 1;
    return n == 0 && h == 0;
}

static void
result_of(const struct track_entry *e, struct track_result *res)
{
    res->first_seen_ms = e->first_seen_ms;
    res->nottl_since_ms = e->nottl_since_ms;
    res->settled_ms = e->settled_ms > e->first_seen_ms ? e->settled_ms : e->first_seen_ms;
    res->renewed = (e->flags & ENTRY_RENEWED) != 0;
    res->renewed_since_outage = (e->flags & ENTRY_RENEWED_AFTER) != 0;
    res->seen_at_start = (e->flags & ENTRY_AT_START) != 0;
}

int
tracker_visit(struct tracker *t, uint64_t key_hash, const uint32_t *holders,
              size_t nholders, uint32_t pass, int64_t now_ms, int64_t start_age_ms,
              int has_ttl, const struct track_lease *ls, struct track_result *res)
{
    return tracker_visit_born(t, key_hash, holders, nholders, pass, now_ms, start_age_ms, 0,
                              has_ttl, ls, res);
}

int
tracker_visit_born(struct tracker *t, uint64_t key_hash, const uint32_t *holders,
                   size_t nholders, uint32_t pass, int64_t now_ms, int64_t start_age_ms,
                   int64_t born_ms, int has_ttl, const struct track_lease *ls,
                   struct track_result *res)
{
    struct track_entry *e;
    uint32_t oldest = nholders > 0 ? holders[0] : 0;
    int64_t since, oldest_ms = 0;
    int fresh, anew;

    if (start_age_ms < 0)
        start_age_ms = 0;
    since = now_ms - start_age_ms;
    /* nothing there is older than the empty server's start (which may be
     * after now_ms, the run's start, by the time it took to ask) */
    if (born_ms > 0 && since < born_ms)
        since = born_ms < now_ms ? born_ms : now_ms;
    memset(res, 0, sizeof(*res));
    e = table_get(&t->locks, key_hash, &fresh);
    if (e == NULL)
        return -1;
    if (!fresh && e->pass == pass)
        res->duplicate = 1;
    /* a new lock, or one first seen before an empty server's start: a
     * holding that server lost, whoever holds the key now */
    anew = fresh || (born_ms > 0 && e->first_seen_ms < born_ms);
    if (nholders > 1) {
        if (visit_holders(t, key_hash, holders, nholders, pass,
                          anew ? since : now_ms, born_ms, &oldest, &oldest_ms) == -1)
            return -1;
        /* a brand-new lock: every holder dates from its start age */
        if (anew)
            oldest_ms = since;
    }

    if (fresh)
        e->row = -1;
    if (anew || !holds(holders, nholders, e->holder_hash)) {
        /* A new lock, or the timed holder left: the clock restarts with
         * the holder that has been there longest, or back-dated by what
         * Redis or the format says about the new holder's age. */
        if (ls != NULL) {
            lease_restart(t, e, ls, fresh);
            if (ls->blind_before)
                e->flags |= ENTRY_AT_START;
        }
        if (!anew && nholders == 1)
            oldest_ms = oldest_known(t, key_hash, holders, nholders, &oldest);
        int64_t nottl = e->nottl_since_ms;

        e->holder_hash = oldest;
        res->acquired = 1;
        e->first_seen_ms = !anew && oldest_ms > 0 ? oldest_ms : since;
        /* the key had no TTL before the new holder wrote it without one
         * either: it has had none since then (a leak overwritten is still
         * one: LockLeaked goes on) */
        e->nottl_since_ms = has_ttl ? 0 : !anew && nottl > 0 ? nottl : e->first_seen_ms;
        e->settled_ms = e->first_seen_ms;
    } else {
        if (!has_ttl && e->nottl_since_ms == 0)
            e->nottl_since_ms = now_ms;     /* lost its TTL (PERSIST) */
        else if (has_ttl)
            e->nottl_since_ms = 0;
        if (ls != NULL)
            lease_visit(t, e, ls, now_ms);
    }
    e->pass = pass;
    e->seen_ms = ls != NULL && ls->at_ms > 0 ? ls->at_ms : now_ms;
    result_of(e, res);
    return 0;
}

int
tracker_backdate(struct tracker *t, uint64_t key_hash, int64_t acquired_ms, int64_t born_ms,
                 struct track_result *res)
{
    struct track_entry *e = find_slot(t->locks.slots, t->locks.cap, key_hash);

    memset(res, 0, sizeof(*res));
    if (e->key_hash == 0)
        return -1;
    if (acquired_ms > 0 && acquired_ms < e->first_seen_ms && acquired_ms >= born_ms) {
        if (e->nottl_since_ms == e->first_seen_ms)
            e->nottl_since_ms = acquired_ms;
        /* a claim of when this holding began (the registry's entry is
         * written again when the holder takes the lock again) */
        if (e->settled_ms <= e->first_seen_ms)
            e->settled_ms = acquired_ms;
        e->first_seen_ms = acquired_ms;
    }
    result_of(e, res);
    return 0;
}

/* The entry of key_hash, or NULL. */
static const struct track_entry *
lookup(const struct tracker *t, uint64_t key_hash)
{
    size_t i = (size_t)key_hash & (t->locks.cap - 1);

    while (t->locks.slots[i].key_hash != 0) {
        if (t->locks.slots[i].key_hash == key_hash)
            return &t->locks.slots[i];
        i = (i + 1) & (t->locks.cap - 1);
    }
    return NULL;
}

bool
tracker_in_other(const struct tracker *t, uint64_t key_hash, const uint32_t *holders,
                 size_t nholders)
{
    const struct track_entry *e = lookup(t, key_hash);

    return e != NULL && (e->flags & ENTRY_OTHER) && holds(holders, nholders, e->holder_hash);
}

void
tracker_note_other(struct tracker *t, uint64_t key_hash, bool other)
{
    struct track_entry *e = (struct track_entry *)lookup(t, key_hash);

    if (e != NULL && other)
        e->flags |= ENTRY_OTHER;
    else if (e != NULL)
        e->flags &= (uint16_t)~ENTRY_OTHER;
}

int
tracker_seen(const struct tracker *t, uint64_t key_hash, uint32_t pass)
{
    size_t i = (size_t)key_hash & (t->locks.cap - 1);

    while (t->locks.slots[i].key_hash != 0) {
        if (t->locks.slots[i].key_hash == key_hash)
            return t->locks.slots[i].pass == pass;
        i = (i + 1) & (t->locks.cap - 1);
    }
    return 0;
}

int
tracker_holder(const struct tracker *t, uint64_t key_hash, uint32_t pass,
               uint32_t *holder_hash)
{
    size_t i = (size_t)key_hash & (t->locks.cap - 1);

    while (t->locks.slots[i].key_hash != 0) {
        if (t->locks.slots[i].key_hash == key_hash) {
            if (t->locks.slots[i].pass != pass)
                return 0;
            *holder_hash = t->locks.slots[i].holder_hash;
            return 1;
        }
        i = (i + 1) & (t->locks.cap - 1);
    }
    return 0;
}

/*
 * Drop the entries not seen in `pass`, in place: no second table, so the
 * sweep costs no memory at its peak.  Stale slots are emptied first; then
 * every surviving entry is re-inserted, starting just after an empty slot
 * so that each probe cluster is walked from its beginning.  A re-inserted
 * entry only moves towards its home slot, into a slot already passed, so
 * each entry is handled once.
 */
static void
table_sweep(struct tracker *t, struct table *tb, uint32_t pass, int64_t now_ms,
            int64_t unknown_after_ms)
{
    size_t i, k, start = 0, mask = tb->cap - 1;
    struct track_entry e;

    for (i = 0; i < tb->cap; i++) {
        if (tb->slots[i].key_hash != 0 && tb->slots[i].pass != pass) {
            /* gone: expired if its lease had run out, else released */
            if (tb == &t->locks && tb->slots[i].expires_ms > 0 &&
                tb->slots[i].expires_ms <= now_ms + TRACKER_END_SLACK_MS) {
                if (unknown_after_ms > 0 && tb->slots[i].expires_ms >= unknown_after_ms)
                    t->ends_unknown++;
                else
                    lease_ended(t, &tb->slots[i]);
            }
            name_drop(t, &tb->slots[i]);
            memset(&tb->slots[i], 0, sizeof(tb->slots[i]));
            tb->count--;
        }
    }
    for (i = 0; i < tb->cap; i++)
        if (tb->slots[i].key_hash == 0) {
            start = i;
            break;
        }
    for (k = 1; k <= tb->cap; k++) {
        i = (start + k) & mask;
        if (tb->slots[i].key_hash == 0)
            continue;
        e = tb->slots[i];
        tb->slots[i].key_hash = 0;
        *find_slot(tb->slots, tb->cap, e.key_hash) = e;
    }
}

size_t
tracker_sweep(struct tracker *t, uint32_t pass, int64_t now_ms, int64_t unknown_after_ms)
{
    table_sweep(t, &t->locks, pass, now_ms, unknown_after_ms);
    table_sweep(t, &t->holders, pass, now_ms, unknown_after_ms);
    return t->locks.count;
}

void
tracker_outage(struct tracker *t)
{
    for (size_t i = 0; i < t->locks.cap; i++)
        t->locks.slots[i].flags &= (uint16_t)~ENTRY_RENEWED_AFTER;
}

size_t
tracker_take_ends_unknown(struct tracker *t)
{
    size_t n = t->ends_unknown;

    t->ends_unknown = 0;
    return n;
}

size_t
tracker_names(const struct tracker *t)
{
    return t->nnames;
}

size_t
tracker_count(const struct tracker *t)
{
    return t->locks.count;
}
