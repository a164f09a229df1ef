/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * graph_impl.h - what graph.c (the pass, the cycles, the report) and
 * orders.c (lock orders and inversions) share inside collectors/graph/.
 */
#ifndef LOCKWATCH_GRAPH_IMPL_H
#define LOCKWATCH_GRAPH_IMPL_H

#include "collectors/graph/graph.h"

/* A pair of the waiting table, copied out for one pass. */
struct gpair {
    char *owner, *key, *holder;         /* one allocation, owner first */
    size_t ownerlen, keylen, holderlen;
    size_t partylen;                    /* a liblockwatch token's party bytes,
                                         * "lw1:host:pid.nonce:thread" (or
                                         * "lw1:host:pid:thread"); 0: no token */
    bool waiting;
    enum sample_outcome outcome;
    int64_t at_ms;                      /* monotonic */
    bool gone;                          /* holds by its lines, but whole snapshots
                                         * made since its acquire lack the key */
};

/* Does the pair hold its key: acquired, not released since. */
static inline bool
gpair_holds(const struct gpair *p)
{
    return !p->waiting && p->outcome == SAMPLE_OK;
}

/* The pairs of one pass and their indexes (pairs.c). */
struct gindex {
    struct gpair *pairs;
    size_t npairs;
    struct gpair **byholder, **bykey, **byparty;    /* bykey: by key, then holder id */
    size_t nbyholder, nbykey, nbyparty;
    bool *matched;                      /* per bykey entry: a snapshot held its key */
};

/* pairs.c: copy the waiting table of ws (NULL: none) and index it; 0, or
 * -1 on ENOMEM.  gindex_free frees what a load made, failed or not. */
int gindex_load(struct gindex *ix, struct waitstats *ws);
void gindex_free(struct gindex *ix);
/* The first index of bykey whose key is key, or nbykey; whether index i
 * is a pair of key. */
size_t gindex_key_first(const struct gindex *ix, const char *key, size_t len);
bool gindex_key_at(const struct gindex *ix, size_t i, const char *key, size_t len);
/*
 * The pair whose owner holder id holder (len 0: none) belongs to on key:
 * a pair of that key that names it (the latest that holds the key, else
 * the latest that waits for it; never a timeout or error end), since hand-written locks write one constant ("1",
 * "locked", a hostname) for every owner on every key; else, for an id
 * unique by construction, a pair on any key: Redisson's "<uuid>:<tid>"
 * (its uuid drawn per client instance) or another token of the same
 * liblockwatch thread.  NULL: no owner known.
 */
const struct gpair *gindex_owner_of(const struct gindex *ix, const char *key, size_t keylen,
                                    const char *holder, size_t len);

/* One learnt order: class a held while acquiring class b. */
struct gorder {
    char a[CLASS_NAME_MAX], b[CLASS_NAME_MAX];
    struct graph_site site;
    int64_t last_mono;                  /* last seen */
};

struct ginversion {
    struct graph_inversion inv;         /* its sites are copies it owns */
    bool live;
};

struct graph {
    struct cycles *cy;
    pthread_mutex_t mu;                 /* guards latest */
    struct graph_report *latest;
    struct gcand *cands;                /* cycles of the last pass */
    size_t ncands;
    struct gorder *orders;              /* GRAPH_ORDERS_MAX */
    size_t norders;
    struct ginversion inv[GRAPH_INVERSIONS_MAX];
    size_t ninv;
    struct graph_stats stats;
};

/* graph.c */
int gbytes_set(struct graph_bytes *b, const char *p, size_t len, size_t max);
/* Append n bytes to buf (cap bytes, *len used, kept NUL-terminated), a NUL
 * byte among them written U+FFFD; what does not fit is dropped. */
void graph_detail_add(char *buf, size_t cap, size_t *len, const char *s, size_t n);
void gbytes_free(struct graph_bytes *b);
int gbytes_copy(struct graph_bytes *dst, const struct graph_bytes *src);
void gsite_free(struct graph_site *s);

/* orders.c: learn from the pairs (sorted by owner), find inversions,
 * forget old orders; the inversions are copied into r. -1 on ENOMEM. */
int orders_pass(struct graph *g, struct gpair *pairs, size_t npairs,
                const struct class_rule *rules, size_t nrules, int64_t now_ms, int64_t mono_ms);
int orders_report(const struct graph *g, struct graph_report *r);
void orders_free(struct graph *g);

#endif
