/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waiting.c - a bounded hash table of (owner, key) pairs with LRU eviction.
 *
 * Entries live in a fixed array of WAITING_MAX; a chained hash over
 * WAITING_BUCKETS heads finds a pair, and a doubly-linked list in update
 * order says which pair to evict.  Indices instead of pointers keep the
 * bookkeeping small.  The hash is keyhash() (SipHash under a key drawn
 * per process), so a sender cannot aim pairs at one chain; for the 20-60
 * bytes of a pair it costs about what the unkeyed byte-at-a-time FNV-1a
 * it replaced did (this table sees two lines of every lock a reporter
 * takes).  A second open-addressed index over WAITING_SOURCE_SLOTS'
 * addresses gives each sender its source number (waiting.h); a number is
 * taken back out of it (backward-shift deletion, so no tombstones) when
 * it is given to a new address.
 */
#include "collectors/waits/waiting.h"

#include <stdlib.h>
#include <string.h>

#include "common/keyhash.h"

#define WAITING_BUCKETS 8192    /* power of two, twice WAITING_MAX */
#define TOMB_SLOTS 256          /* power of two: releases seen before their acquire */
#define TOMB_MS 5000            /* how long such a release waits for its acquire */
#define SRC_BUCKETS 512         /* power of two, twice WAITING_SOURCE_SLOTS */
#define NIL UINT32_MAX

struct entry {
    char *bytes;                /* owner, key, holder back to back */
    size_t cap;                 /* bytes allocated */
    size_t ownerlen, keylen, holderlen;
    uint64_t hash, ohash;       /* of the pair; of its owner alone */
    bool waiting;
    enum sample_outcome outcome;
    int64_t at_ms;
    uint32_t chain;             /* next in its bucket */
    uint32_t ochain;            /* next in its owner's bucket */
    uint32_t prev, next;        /* update order: older, newer */
    uint32_t sprev, snext;      /* update order among its source's pairs */
    uint16_t src;               /* the source of its latest line */
};

/* A release (a 6-field hold) that found its owner holding nothing there:
 * its acquire's line may come after it (reordered), and must not then
 * make the owner a holder for good. */
struct tomb {
    uint64_t pair;              /* hash_pair(); 0: empty */
    uint32_t holder;            /* (uint32_t)keyhash() of the holder id */
    int64_t at_ms;
};

struct waiting_table {
    struct entry e[WAITING_MAX];
    struct tomb tomb[TOMB_SLOTS];
    uint32_t bucket[WAITING_BUCKETS];
    uint32_t obucket[WAITING_BUCKETS];      /* by owner: an owner's pairs */
    uint32_t free_head;         /* unused entries, chained by .chain */
    uint32_t oldest, newest;
    uint32_t soldest[WAITING_SOURCES], snewest[WAITING_SOURCES];
    uint32_t scount[WAITING_SOURCES];      /* pairs per source */
    unsigned char saddr[WAITING_SOURCE_SLOTS][17];  /* family, address */
    uint64_t shash[WAITING_SOURCE_SLOTS];
    uint16_t sbucket[SRC_BUCKETS];          /* source number + 1; 0 = empty */
    size_t nsources;                        /* numbers ever given out */
    size_t count, nwaiting, bytes;
    uint64_t evicted, superseded, sources_reused, sources_shared;
    uint64_t late_acquires;     /* acquires whose release came first */
    uint64_t changes;           /* pairs set or removed (waiting_changes) */
};

struct waiting_table *
waiting_new(void)
{
    struct waiting_table *t = calloc(1, sizeof(*t));
    uint32_t i;

    if (t == NULL)
        return NULL;
    for (i = 0; i < WAITING_BUCKETS; i++)
        t->bucket[i] = t->obucket[i] = NIL;
    for (i = 0; i < WAITING_SOURCES; i++)
        t->soldest[i] = t->snewest[i] = NIL;
    for (i = 0; i < WAITING_MAX; i++)
        t->e[i].chain = i + 1 < WAITING_MAX ? i + 1 : NIL;
    t->free_head = 0;
    t->oldest = t->newest = NIL;
    return t;
}

void
waiting_free(struct waiting_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < WAITING_MAX; i++)
        free(t->e[i].bytes);
    free(t);
}

static uint64_t
hash_pair(const struct sample *s)
{
    /* owner, its length (so no split of the same bytes hashes alike), key:
     * one pass over a copy when they fit, else two hashes mixed. */
    unsigned char buf[256];
    uint64_t n = s->ownerlen;

    if (s->ownerlen + sizeof(n) + s->keylen <= sizeof(buf)) {
        memcpy(buf, s->owner, s->ownerlen);
        memcpy(buf + s->ownerlen, &n, sizeof(n));
        memcpy(buf + s->ownerlen + sizeof(n), s->key, s->keylen);
        return keyhash(buf, s->ownerlen + sizeof(n) + s->keylen);
    }
    return keyhash(s->owner, s->ownerlen) * UINT64_C(0x9e3779b97f4a7c15) ^
           keyhash(s->key, s->keylen);
}

static bool
same_pair(const struct entry *e, const struct sample *s, uint64_t h)
{
    return e->hash == h && e->ownerlen == s->ownerlen && e->keylen == s->keylen &&
           memcmp(e->bytes, s->owner, s->ownerlen) == 0 &&
           memcmp(e->bytes + e->ownerlen, s->key, s->keylen) == 0;
}

/* Unlink entry i from the update order, the table's and its source's. */
static void
list_unlink(struct waiting_table *t, uint32_t i)
{
    struct entry *e = &t->e[i];

    if (e->sprev != NIL)
        t->e[e->sprev].snext = e->snext;
    else
        t->soldest[e->src] = e->snext;
    if (e->snext != NIL)
        t->e[e->snext].sprev = e->sprev;
    else
        t->snewest[e->src] = e->sprev;
    t->scount[e->src]--;
    if (e->prev != NIL)
        t->e[e->prev].next = e->next;
    else
        t->oldest = e->next;
    if (e->next != NIL)
        t->e[e->next].prev = e->prev;
    else
        t->newest = e->prev;
}

/* Make entry i the newest, of the table and of its source (e->src). */
static void
list_push(struct waiting_table *t, uint32_t i)
{
    struct entry *e = &t->e[i];

    e->sprev = t->snewest[e->src];
    e->snext = NIL;
    if (t->snewest[e->src] != NIL)
        t->e[t->snewest[e->src]].snext = i;
    else
        t->soldest[e->src] = i;
    t->snewest[e->src] = i;
    t->scount[e->src]++;
    e->prev = t->newest;
    e->next = NIL;
    if (t->newest != NIL)
        t->e[t->newest].next = i;
    else
        t->oldest = i;
    t->newest = i;
}

/* Take entry i out of its bucket, the list and the counts; keep its
 * allocation for reuse. */
static void
remove_entry(struct waiting_table *t, uint32_t i)
{
    struct entry *e = &t->e[i];
    uint32_t *p = &t->bucket[e->hash & (WAITING_BUCKETS - 1)];

    while (*p != i)
        p = &t->e[*p].chain;
    *p = e->chain;
    p = &t->obucket[e->ohash & (WAITING_BUCKETS - 1)];
    while (*p != i)
        p = &t->e[*p].ochain;
    *p = e->ochain;
    list_unlink(t, i);
    if (e->waiting)
        t->nwaiting--;
    t->count--;
    e->chain = t->free_head;
    t->free_head = i;
    t->changes++;
}

static uint32_t
find(const struct waiting_table *t, const struct sample *s, uint64_t h)
{
    uint32_t i;

    for (i = t->bucket[h & (WAITING_BUCKETS - 1)]; i != NIL; i = t->e[i].chain)
        if (same_pair(&t->e[i], s, h))
            return i;
    return NIL;
}

/*
 * An acquire of owner that acquired (a waiting end with outcome ok, on
 * entry i) ends the owner's starts on other keys that it can no longer be
 * waiting in (waiting.h): those that came WAITING_SUPERSEDE_MS or more
 * before this acquire began (its arrival less the wait it measured), with
 * a holder id other than this acquire's (or none).  Each goes, counted.
 */
static void
supersede(struct waiting_table *t, uint32_t i, const struct sample *s, int64_t now_ms)
{
    const struct entry *ok = &t->e[i];
    int64_t began = now_ms - (int64_t)(s->us / 1000);
    uint32_t j = t->obucket[ok->ohash & (WAITING_BUCKETS - 1)], next;

    for (; j != NIL; j = next) {
        const struct entry *e = &t->e[j];

        next = e->ochain;
        if (j == i || !e->waiting || e->ohash != ok->ohash || e->ownerlen != ok->ownerlen ||
            memcmp(e->bytes, ok->bytes, ok->ownerlen) != 0 ||
            e->at_ms > began - WAITING_SUPERSEDE_MS)
            continue;
        if (e->holderlen > 0 && e->holderlen == s->holderlen &&
            memcmp(e->bytes + e->ownerlen + e->keylen, s->holder, s->holderlen) == 0)
            continue;   /* one holder id: one process's (a Redisson thread's
                         * lockAsync still pending, a multi-key acquire) */
        remove_entry(t, j);
        t->superseded++;
    }
}

/* Make room for a new pair in a full table: the oldest pair of the
 * source that holds the most goes (a flood evicts its own first).
 * Counted. */
static void
make_room(struct waiting_table *t, uint16_t src)
{
    uint16_t k, most = src;

    if (t->free_head != NIL)
        return;
    for (k = 0; k < WAITING_SOURCES; k++)
        if (t->scount[k] > t->scount[most])
            most = k;
    remove_entry(t, t->soldest[most]);
    t->evicted++;
}

/* Take source number n out of the address index (backward shift: each
 * later entry of the run moves up unless its home lies after the gap). */
static void
source_unindex(struct waiting_table *t, uint16_t n)
{
    size_t i = (size_t)t->shash[n] & (SRC_BUCKETS - 1), j, home;

    while (t->sbucket[i] != n + 1)
        i = (i + 1) & (SRC_BUCKETS - 1);
    for (j = i;;) {
        j = (j + 1) & (SRC_BUCKETS - 1);
        if (t->sbucket[j] == 0)
            break;
        home = (size_t)t->shash[t->sbucket[j] - 1] & (SRC_BUCKETS - 1);
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;   /* its home is in (i, j]: it stays */
        t->sbucket[i] = t->sbucket[j];
        i = j;
    }
    t->sbucket[i] = 0;
}

unsigned
waiting_source(struct waiting_table *t, int family, const unsigned char addr[16])
{
    unsigned char a[17];
    uint64_t h;
    size_t i;
    uint16_t n;

    a[0] = (unsigned char)family;
    memcpy(a + 1, addr, 16);
    h = keyhash(a, sizeof(a));
    for (i = (size_t)h & (SRC_BUCKETS - 1); t->sbucket[i] != 0; i = (i + 1) & (SRC_BUCKETS - 1))
        if (t->shash[t->sbucket[i] - 1] == h &&
            memcmp(t->saddr[t->sbucket[i] - 1], a, sizeof(a)) == 0)
            return t->sbucket[i] - 1u;
    if (t->nsources < WAITING_SOURCE_SLOTS) {
        n = (uint16_t)t->nsources++;
    } else {
        for (n = 0; n < WAITING_SOURCE_SLOTS && t->scount[n] > 0; n++)
            ;
        if (n == WAITING_SOURCE_SLOTS) {
            t->sources_shared++;
            return WAITING_SOURCE_SHARED;
        }
        source_unindex(t, n);   /* its pairs are all gone: the number is free */
        t->sources_reused++;
        for (i = (size_t)h & (SRC_BUCKETS - 1); t->sbucket[i] != 0;
             i = (i + 1) & (SRC_BUCKETS - 1))
            ;           /* the gap may have moved */
    }
    memcpy(t->saddr[n], a, sizeof(a));
    t->shash[n] = h;
    t->sbucket[i] = (uint16_t)(n + 1);
    return n;
}

static int set_pair(struct waiting_table *t, const struct sample *s, uint64_t h, uint32_t i,
                    unsigned src, int64_t at_ms, uint32_t *at);

int
waiting_note(struct waiting_table *t, const struct sample *s, unsigned src, int64_t now_ms)
{
    uint64_t h;
    uint32_t i;

    if (s->ownerlen == 0 || (s->kind != SAMPLE_WAITING && s->kind != SAMPLE_HOLD))
        return 0;
    h = hash_pair(s);
    i = find(t, s, h);
    if (s->kind == SAMPLE_HOLD && s->holderlen > 0 && (i == NIL || t->e[i].waiting)) {
        /* released while not holding, as far as the table knows: the
         * acquire's line, reordered, may follow */
        struct tomb *tb = &t->tomb[h & (TOMB_SLOTS - 1)];

        tb->pair = h;
        tb->holder = (uint32_t)keyhash(s->holder, s->holderlen);
        tb->at_ms = now_ms;
    } else if (s->kind == SAMPLE_WAITING && !s->start && s->outcome == SAMPLE_OK &&
               s->holderlen > 0 && t->tomb[h & (TOMB_SLOTS - 1)].pair == h) {
        struct tomb *tb = &t->tomb[h & (TOMB_SLOTS - 1)];

        if (now_ms - tb->at_ms <= TOMB_MS &&
            tb->holder == (uint32_t)keyhash(s->holder, s->holderlen)) {
            /* the acquire of a holding already released */
            tb->pair = 0;
            t->late_acquires++;
            if (i != NIL)
                remove_entry(t, i);
            return 0;
        }
    }
    if (s->kind == SAMPLE_HOLD || (!s->start && s->outcome != SAMPLE_OK)) {
        /* released, or gave up: the owner neither holds nor waits */
        if (i != NIL)
            remove_entry(t, i);
        return 0;
    }
    if (set_pair(t, s, h, i, src, now_ms, &i) == -1)
        return -1;
    if (!s->start && s->outcome == SAMPLE_OK)
        supersede(t, i, s, now_ms);
    return 0;
}

/* Set the pair of s (hash h; entry i, or NIL: a new one) to what s says,
 * as its latest line, which came at at_ms: *at gets its entry.  0, or -1
 * when its bytes could not be allocated (then it is not kept). */
static int
set_pair(struct waiting_table *t, const struct sample *s, uint64_t h, uint32_t i, unsigned src,
         int64_t at_ms, uint32_t *at)
{
    struct entry *e;
    size_t need;

    need = s->ownerlen + s->keylen + s->holderlen;
    if (src >= WAITING_SOURCES)
        src = WAITING_SOURCE_NONE;
    if (i == NIL) {
        make_room(t, (uint16_t)src);
        i = t->free_head;
        e = &t->e[i];
        if (e->cap < need) {
            char *b = realloc(e->bytes, need);

            if (b == NULL)
                return -1;      /* e stays on the free list */
            t->bytes += need - e->cap;
            e->bytes = b;
            e->cap = need;
        }
        t->free_head = e->chain;
        e->hash = h;
        e->ownerlen = s->ownerlen;
        e->keylen = s->keylen;
        memcpy(e->bytes, s->owner, s->ownerlen);
        memcpy(e->bytes + s->ownerlen, s->key, s->keylen);
        e->chain = t->bucket[h & (WAITING_BUCKETS - 1)];
        t->bucket[h & (WAITING_BUCKETS - 1)] = i;
        e->ohash = keyhash(s->owner, s->ownerlen);
        e->ochain = t->obucket[e->ohash & (WAITING_BUCKETS - 1)];
        t->obucket[e->ohash & (WAITING_BUCKETS - 1)] = i;
        e->waiting = false;
        t->count++;
        e->src = (uint16_t)src;
        list_push(t, i);
    } else {
        e = &t->e[i];
        if (e->cap < need) {
            char *b = realloc(e->bytes, need);

            if (b == NULL) {
                remove_entry(t, i);     /* a stale holder is worse than none */
                return -1;
            }
            t->bytes += need - e->cap;
            e->bytes = b;
            e->cap = need;
        }
        list_unlink(t, i);
        e->src = (uint16_t)src;
        list_push(t, i);
    }
    if (s->holderlen > 0)
        memcpy(e->bytes + e->ownerlen + e->keylen, s->holder, s->holderlen);
    e->holderlen = s->holderlen;
    if (e->waiting != s->start) {
        if (s->start)
            t->nwaiting++;
        else
            t->nwaiting--;
    }
    e->waiting = s->start;
    e->outcome = s->outcome;
    e->at_ms = at_ms;
    *at = i;
    t->changes++;
    return 0;
}

int
waiting_restore(struct waiting_table *t, const struct sample *s, int64_t at_ms)
{
    uint64_t h;
    uint32_t i;

    if (s->ownerlen == 0 || s->kind != SAMPLE_WAITING || (!s->start && s->outcome != SAMPLE_OK))
        return -1;
    h = hash_pair(s);
    return set_pair(t, s, h, find(t, s, h), WAITING_SOURCE_NONE, at_ms, &i);
}

uint64_t
waiting_late_acquires(const struct waiting_table *t)
{
    return t->late_acquires;
}

uint64_t
waiting_changes(const struct waiting_table *t)
{
    return t->changes;
}

size_t
waiting_count(const struct waiting_table *t)
{
    return t->count;
}

size_t
waiting_waiting(const struct waiting_table *t)
{
    return t->nwaiting;
}

uint64_t
waiting_evicted(const struct waiting_table *t)
{
    return t->evicted;
}

uint64_t
waiting_superseded(const struct waiting_table *t)
{
    return t->superseded;
}

uint64_t
waiting_sources_reused(const struct waiting_table *t)
{
    return t->sources_reused;
}

uint64_t
waiting_sources_shared(const struct waiting_table *t)
{
    return t->sources_shared;
}

size_t
waiting_bytes(const struct waiting_table *t)
{
    return sizeof(*t) + t->bytes;
}

void
waiting_each(const struct waiting_table *t,
             void (*fn)(const struct waiting_pair *p, void *arg), void *arg)
{
    struct waiting_pair p;
    uint32_t i;

    for (i = t->oldest; i != NIL; i = t->e[i].next) {
        const struct entry *e = &t->e[i];

        p.owner = e->bytes;
        p.ownerlen = e->ownerlen;
        p.key = e->bytes + e->ownerlen;
        p.keylen = e->keylen;
        p.holder = e->bytes + e->ownerlen + e->keylen;
        p.holderlen = e->holderlen;
        p.waiting = e->waiting;
        p.outcome = e->outcome;
        p.at_ms = e->at_ms;
        fn(&p, arg);
    }
}
