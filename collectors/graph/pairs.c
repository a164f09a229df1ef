/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairs.c - the waiting table's pairs as one pass of the graph reads them:
 * copied out (the statistics' mutex held only for the copy) and indexed by
 * key then holder id, by holder id alone and by the party of a
 * liblockwatch token (`lw1:<host>:<pid>.<nonce>:<thread>`, the nonce drawn
 * per process start; `lw1:<host>:<pid>:<thread>` of the older form), and
 * which owner a holder id that Redis shows on a key belongs to
 * (graph_impl.h).
 */
#include "collectors/graph/graph_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/lw1.h"

static int
bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);

    return c != 0 ? c : al < bl ? -1 : al > bl;
}

struct copy_arg {
    struct gpair *pairs;
    size_t n;
    bool nomem;
};

static void
copy_pair(const struct waiting_pair *p, void *arg)
{
    struct copy_arg *c = arg;
    struct gpair *q = &c->pairs[c->n];
    char *b;

    if (c->n == WAITING_MAX || p->ownerlen == 0)
        return;
    if ((b = malloc(p->ownerlen + p->keylen + p->holderlen + 1)) == NULL) {
        c->nomem = true;
        return;
    }
    memcpy(b, p->owner, p->ownerlen);
    memcpy(b + p->ownerlen, p->key, p->keylen);
    if (p->holderlen > 0)
        memcpy(b + p->ownerlen + p->keylen, p->holder, p->holderlen);
    q->owner = b;
    q->key = b + p->ownerlen;
    q->holder = b + p->ownerlen + p->keylen;
    q->ownerlen = p->ownerlen;
    q->keylen = p->keylen;
    q->holderlen = p->holderlen;
    q->waiting = p->waiting;
    q->outcome = p->outcome;
    q->at_ms = p->at_ms;
    c->n++;
}

static int
by_holder(const void *a, const void *b)
{
    const struct gpair *x = *(struct gpair *const *)a, *y = *(struct gpair *const *)b;

    return bytes_cmp(x->holder, x->holderlen, y->holder, y->holderlen);
}

/* By key, then holder id: a key's pairs together, its holder ids found by
 * bisection (node_of). */
static int
by_key(const void *a, const void *b)
{
    const struct gpair *x = *(struct gpair *const *)a, *y = *(struct gpair *const *)b;
    int c = bytes_cmp(x->key, x->keylen, y->key, y->keylen);

    return c != 0 ? c : bytes_cmp(x->holder, x->holderlen, y->holder, y->holderlen);
}

/* The length of a liblockwatch token's party ("lw1:host:pid.nonce:thread",
 * or "lw1:host:pid:thread" of the older form: one thread of one process
 * start, as the nonce tells a restarted pid 1 from the one before it), 0
 * when the bytes are no token. */
static size_t
lw1_party(const char *holder, size_t len)
{
    struct lw1_token t;

    if (lw1_token_parse(holder, len, &t) == -1)
        return 0;
    return t.partylen;
}

static int
by_party(const void *a, const void *b)
{
    const struct gpair *x = *(struct gpair *const *)a, *y = *(struct gpair *const *)b;

    return bytes_cmp(x->holder, x->partylen, y->holder, y->partylen);
}

/* The first index of bykey whose key is key, or nbykey. */
size_t
gindex_key_first(const struct gindex *p, const char *key, size_t len)
{
    size_t lo = 0, hi = p->nbykey;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct gpair *m = p->bykey[mid];

        if (bytes_cmp(m->key, m->keylen, key, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool
gindex_key_at(const struct gindex *p, size_t i, const char *key, size_t len)
{
    return i < p->nbykey && p->bykey[i]->keylen == len &&
           memcmp(p->bykey[i]->key, key, len) == 0;
}

int
gindex_load(struct gindex *p, struct waitstats *ws)
{
    struct copy_arg c = { NULL, 0, false };
    size_t i;

    if (ws == NULL)
        return 0;
    if ((c.pairs = calloc(WAITING_MAX, sizeof(*c.pairs))) == NULL)
        return -1;
    waitstats_waiting_each(ws, copy_pair, &c);
    p->pairs = c.pairs;
    p->npairs = c.n;
    p->byholder = calloc(c.n ? c.n : 1, sizeof(*p->byholder));
    p->byparty = calloc(c.n ? c.n : 1, sizeof(*p->byparty));
    p->bykey = calloc(c.n ? c.n : 1, sizeof(*p->bykey));
    p->matched = calloc(c.n ? c.n : 1, sizeof(*p->matched));
    if (c.nomem || p->byholder == NULL || p->byparty == NULL || p->bykey == NULL ||
        p->matched == NULL)
        return -1;
    for (i = 0; i < c.n; i++) {
        if (c.pairs[i].holderlen > 0)
            p->byholder[p->nbyholder++] = &c.pairs[i];
        if ((c.pairs[i].partylen = lw1_party(c.pairs[i].holder, c.pairs[i].holderlen)) > 0)
            p->byparty[p->nbyparty++] = &c.pairs[i];
        p->bykey[p->nbykey++] = &c.pairs[i];
    }
    qsort(p->byholder, p->nbyholder, sizeof(*p->byholder), by_holder);
    qsort(p->byparty, p->nbyparty, sizeof(*p->byparty), by_party);
    qsort(p->bykey, p->nbykey, sizeof(*p->bykey), by_key);
    return 0;
}

void
gindex_free(struct gindex *p)
{
    size_t i;

    for (i = 0; i < p->npairs; i++)
        free(p->pairs[i].owner);
    free(p->pairs);
    free(p->byholder);
    free(p->byparty);
    free(p->bykey);
    free(p->matched);
}

/* The pair of index (n of them, sorted by the first len bytes of their
 * holders) whose holder's first len bytes are key's, or NULL. */
static const struct gpair *
find_holder(struct gpair *const *index, size_t n, const char *key, size_t len, bool party)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct gpair *m = index[mid];
        int c = bytes_cmp(m->holder, party ? m->partylen : m->holderlen, key, len);

        if (c == 0)
            return m;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Is a holder id Redisson's "<uuid>:<thread id>": the uuid is drawn per
 * client instance, so the id is one thread's on every key it holds. */
static bool
redisson_id(const char *h, size_t len)
{
    size_t i;

    if (len < 38 || len > 36 + 1 + 20 || h[36] != ':')
        return false;
    for (i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;

        if (dash ? h[i] != '-' : !((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f') ||
                                    (h[i] >= 'A' && h[i] <= 'F')))
            return false;
    }
    for (i = 37; i < len; i++)
        if (h[i] < '0' || h[i] > '9')
            return false;
    return true;
}

/* The pair of key that names holder id holder: of those that do, the
 * latest that holds the key, else the latest that waits for it (a waiter
 * whose ok line has not come yet: its own id on the key is itself); never
 * one whose acquire ended in a timeout or an error (it holds nothing, and
 * a constant id like "1" on the key is someone else's).  NULL when none
 * does. */
static const struct gpair *
key_holder(const struct gindex *p, const char *key, size_t keylen, const char *holder,
           size_t len)
{
    size_t lo = gindex_key_first(p, key, keylen), hi = p->nbykey;
    const struct gpair *best = NULL;

    while (lo < hi) {           /* the first pair of (key, holder) */
        size_t mid = lo + (hi - lo) / 2;
        const struct gpair *m = p->bykey[mid];
        int c = bytes_cmp(m->key, m->keylen, key, keylen);

        if (c == 0)
            c = bytes_cmp(m->holder, m->holderlen, holder, len);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; gindex_key_at(p, lo, key, keylen) && p->bykey[lo]->holderlen == len &&
           memcmp(p->bykey[lo]->holder, holder, len) == 0; lo++) {
        const struct gpair *m = p->bykey[lo];

        if (!gpair_holds(m) && !m->waiting)
            continue;   /* a timeout or error end */
        if (best == NULL || (gpair_holds(m) && !gpair_holds(best)) ||
            (gpair_holds(m) == gpair_holds(best) && m->at_ms >= best->at_ms))
            best = m;
    }
    return best;
}

const struct gpair *
gindex_owner_of(const struct gindex *ix, const char *key, size_t keylen, const char *holder,
                size_t len)
{
    const struct gpair *m = len > 0 ? key_holder(ix, key, keylen, holder, len) : NULL;
    size_t party;

    if (m == NULL && redisson_id(holder, len))
        m = find_holder(ix->byholder, ix->nbyholder, holder, len, false);
    if (m == NULL && (party = lw1_party(holder, len)) > 0)
        m = find_holder(ix->byparty, ix->nbyparty, holder, party, true);
    return m;
}
