/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.c - the per-target lock maps and the comparison across the
 * members of a Redlock group (see redlock.h for the rules).
 *
 * The comparison is a k-way merge of the members' maps, each sorted by
 * key hash, so it costs O(keys x members) and allocates only the report
 * and the next state.  The state (keys under quorum and since when) is a
 * sorted array walked in step with the merge.
 */
#include "collectors/locks/redlock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct uq {
    uint64_t key_hash;
    int64_t since_ms;
    int64_t validity_ms;
};

struct redlock_state {
    struct uq *v;
    size_t n;
};

struct redlock_map *
redlock_map_new(void)
{
    return calloc(1, sizeof(struct redlock_map));
}

void
redlock_map_free(struct redlock_map *m)
{
    if (m == NULL)
        return;
    free(m->e);
    free(m->keys);
    free(m);
}

int
redlock_map_add(struct redlock_map *m, const char *key, size_t keylen, uint64_t key_hash,
                uint32_t holder_hash, int64_t first_seen_ms, int64_t observed_ms,
                int64_t pttl_ms)
{
    struct redlock_entry *e;
    size_t kl = keylen > REDLOCK_KEY_MAX ? REDLOCK_KEY_MAX : keylen;

    if (m->n >= REDLOCK_MAP_MAX) {
        m->dropped++;
        return 0;
    }
    if (m->n == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 1024;

        if (ncap > REDLOCK_MAP_MAX)
            ncap = REDLOCK_MAP_MAX;
        e = realloc(m->e, ncap * sizeof(*e));
        if (e == NULL)
            return -1;
        m->e = e;
        m->cap = ncap;
    }
    e = &m->e[m->n];
    memset(e, 0, sizeof(*e));
    e->key_hash = key_hash;
    e->holder_hash = holder_hash;
    e->first_seen_ms = first_seen_ms;
    e->observed_ms = observed_ms;
    e->pttl_ms = pttl_ms;
    /* the key bytes only name the key in an alert: past the arena cap the
     * lock is still compared, by hash */
    if (m->keys_len + kl <= REDLOCK_KEYBYTES_MAX && kl > 0) {
        if (m->keys_len + kl > m->keys_cap) {
            size_t ncap = m->keys_cap ? m->keys_cap : 16384;
            char *nk;

            while (ncap < m->keys_len + kl)
                ncap *= 2;
            if (ncap > REDLOCK_KEYBYTES_MAX)
                ncap = REDLOCK_KEYBYTES_MAX;
            if ((nk = realloc(m->keys, ncap)) == NULL)
                return -1;
            m->keys = nk;
            m->keys_cap = ncap;
        }
        memcpy(m->keys + m->keys_len, key, kl);
        e->key_off = (uint32_t)m->keys_len;
        e->key_len = (uint32_t)kl;
        m->keys_len += kl;
    }
    m->n++;
    return 0;
}

static int
entry_cmp(const void *a, const void *b)
{
    const struct redlock_entry *x = a, *y = b;

    if (x->key_hash != y->key_hash)
        return x->key_hash < y->key_hash ? -1 : 1;
    /* equal hashes (the scan dedupes keys, so only a hash collision):
     * the earlier observation first, and it is the one kept */
    return x->observed_ms < y->observed_ms ? -1 : x->observed_ms > y->observed_ms;
}

void
redlock_map_finish(struct redlock_map *m)
{
    size_t i, w;

    if (m->n < 2)
        return;
    qsort(m->e, m->n, sizeof(*m->e), entry_cmp);
    for (i = 1, w = 1; i < m->n; i++)
        if (m->e[i].key_hash != m->e[w - 1].key_hash)
            m->e[w++] = m->e[i];
    m->n = w;
}

const char *
redlock_kind_str(enum redlock_kind k)
{
    return k == REDLOCK_SPLIT ? "split" : "under_quorum";
}

struct redlock_state *
redlock_state_new(void)
{
    return calloc(1, sizeof(struct redlock_state));
}

void
redlock_state_free(struct redlock_state *st)
{
    if (st == NULL)
        return;
    free(st->v);
    free(st);
}

void
redlock_report_ref(struct redlock_report *r)
{
    atomic_fetch_add(&r->refs, 1);
}

void
redlock_report_unref(struct redlock_report *r)
{
    size_t i;

    if (r == NULL || atomic_fetch_sub(&r->refs, 1) > 1)
        return;
    for (i = 0; i < r->nissues; i++)
        free(r->issues[i].key);
    free(r->issues);
    free(r->group);
    free(r);
}

static int64_t
expires(const struct redlock_entry *e)
{
    return e->pttl_ms < 0 ? INT64_MAX : e->observed_ms + e->pttl_ms;
}

/* Were both holders holding at one moment? */
static bool
overlap(const struct redlock_entry *a, const struct redlock_entry *b)
{
    return a->first_seen_ms <= expires(b) && b->first_seen_ms <= expires(a);
}

/* Everything one comparison works with. */
struct cmp {
    const struct redlock_input *in;
    size_t n;
    size_t *pos;                        /* per member: its next entry in the merge */
    const struct redlock_entry **at;    /* per member: its entry for the key, or NULL */
    uint64_t *distinct;                 /* holder hashes, first-appearance order */
    unsigned *count;
    struct redlock_issue *split, *uq;   /* REDLOCK_ISSUES_MAX each */
    size_t nsplit, nuq;
    size_t sp;                          /* the state's entry for the key, or past it */
    struct uq *next;                    /* the next state: keys under quorum now */
    size_t nnext, capnext;
};

/* One key of the merge, as the members see it. */
struct cmp_key {
    uint64_t hash;
    size_t unknown;             /* members that may hold it unseen: not
                                 * scanned, or their map was cut */
    size_t ndistinct;           /* holders */
    unsigned best;              /* members that agree on the most common holder */
    unsigned held;              /* members that hold it at all */
};

static void
issue_text(const struct cmp *c, struct redlock_issue *is, size_t ndistinct)
{
    size_t i, k, used = 0;
    int w;

    is->nodes[0] = '\0';
    for (i = 0; i < c->n; i++) {
        char mark[4] = "?";

        if (c->at[i] != NULL) {
            for (k = 0; k < ndistinct && c->distinct[k] != c->at[i]->holder_hash; k++)
                ;
            mark[0] = (char)(k < 26 ? 'A' + (int)k : '*');
            mark[1] = '\0';
        } else if (c->in[i].map != NULL && c->in[i].map->dropped == 0) {
            mark[0] = '-';
        }
        w = snprintf(is->nodes + used, sizeof(is->nodes) - used, "%s%s=%s",
                     used ? " " : "", c->in[i].target, mark);
        if (w < 0 || (size_t)w >= sizeof(is->nodes) - used) {
            is->nodes[used] = '\0';
            break;
        }
        used += (size_t)w;
    }
}

static int
add_issue(struct cmp *c, enum redlock_kind kind, uint64_t key_hash, size_t ndistinct,
          unsigned best, unsigned held, int64_t since_ms)
{
    struct redlock_issue *arr = kind == REDLOCK_SPLIT ? c->split : c->uq;
    size_t *n = kind == REDLOCK_SPLIT ? &c->nsplit : &c->nuq, i;
    struct redlock_issue *is;
    const char *key = NULL;
    size_t klen = 0;

    if (*n >= REDLOCK_ISSUES_MAX)
        return 0;               /* counted, not detailed */
    for (i = 0; i < c->n && key == NULL; i++)
        if (c->at[i] != NULL && c->at[i]->key_len > 0) {
            key = c->in[i].map->keys + c->at[i]->key_off;
            klen = c->at[i]->key_len;
        }
    is = &arr[*n];
    memset(is, 0, sizeof(*is));
    if (key == NULL) {
        char name[32];

        /* the arena was full on every node: name the key by its hash */
        snprintf(name, sizeof(name), "#%016llx", (unsigned long long)key_hash);
        key = name;
        klen = strlen(name);
        if ((is->key = malloc(klen + 1)) == NULL)
            return -1;
        memcpy(is->key, key, klen + 1);
    } else {
        if ((is->key = malloc(klen + 1)) == NULL)
            return -1;
        memcpy(is->key, key, klen);
        is->key[klen] = '\0';
    }
    is->key_len = klen;
    is->kind = kind;
    is->key_hash = key_hash;
    is->holders = (unsigned)ndistinct;
    is->best = best;
    is->held = held;
    is->since_ms = since_ms;
    issue_text(c, is, ndistinct);
    (*n)++;
    return 0;
}

static void
free_issues(struct redlock_issue *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(v[i].key);
}

/*
 * The next key of the k-way merge, smallest hash first: c->at says which
 * members hold it, and each of those moves past it.  false when every
 * map is done.
 */
static bool
merge_next(struct cmp *c, size_t unknown_base, struct cmp_key *ck)
{
    const struct redlock_input *in = c->in;
    bool any = false;
    size_t i;

    ck->hash = UINT64_MAX;
    for (i = 0; i < c->n; i++)
        if (in[i].map != NULL && c->pos[i] < in[i].map->n &&
            (!any || in[i].map->e[c->pos[i]].key_hash < ck->hash)) {
            ck->hash = in[i].map->e[c->pos[i]].key_hash;
            any = true;
        }
    if (!any)
        return false;
    ck->unknown = unknown_base;
    for (i = 0; i < c->n; i++) {
        c->at[i] = NULL;
        if (in[i].map == NULL)
            continue;
        if (c->pos[i] < in[i].map->n && in[i].map->e[c->pos[i]].key_hash == ck->hash)
            c->at[i] = &in[i].map->e[c->pos[i]++];
        else if (in[i].map->dropped > 0)
            ck->unknown++;      /* its map is cut: it may hold the key */
    }
    return true;
}

/* Who holds the key: its distinct holders (c->distinct), how many members
 * hold it, and how many agree on the most common holder. */
static void
count_holders(struct cmp *c, struct cmp_key *ck)
{
    size_t i, k;

    ck->ndistinct = 0;
    ck->best = ck->held = 0;
    for (i = 0; i < c->n; i++) {
        if (c->at[i] == NULL)
            continue;
        ck->held++;
        for (k = 0; k < ck->ndistinct && c->distinct[k] != c->at[i]->holder_hash; k++)
            ;
        if (k == ck->ndistinct) {
            c->distinct[ck->ndistinct] = c->at[i]->holder_hash;
            c->count[ck->ndistinct++] = 0;
        }
        if (++c->count[k] > ck->best)
            ck->best = c->count[k];
    }
}

/* Did two members hold the key for different holders at one moment? */
static bool
split_now(const struct cmp *c, size_t ndistinct)
{
    size_t i, k;

    for (i = 0; i < c->n && ndistinct > 1; i++)
        for (k = i + 1; k < c->n; k++)
            if (c->at[i] != NULL && c->at[k] != NULL &&
                c->at[i]->holder_hash != c->at[k]->holder_hash &&
                overlap(c->at[i], c->at[k]))
                return true;
    return false;
}

/*
 * A key held on fewer than a quorum, even counting the members that may
 * hold it unseen: since when (the state's entry, else now) and for how
 * long a client may believe it holds it (the state's, else the longest
 * TTL seen, else no_ttl_validity_ms).  It goes into the next state; it is
 * under quorum once past that validity, pending until then.  0, or -1 on
 * ENOMEM.
 */
static int
judge_minority(struct cmp *c, struct redlock_report *r, const struct redlock_state *st,
               const struct cmp_key *ck, int64_t now_ms, int64_t no_ttl_validity_ms)
{
    int64_t since = now_ms, validity = -1;
    size_t i;

    /* the state entry for the key, if any (both sorted by hash) */
    while (c->sp < st->n && st->v[c->sp].key_hash < ck->hash)
        c->sp++;
    if (c->sp < st->n && st->v[c->sp].key_hash == ck->hash) {
        since = st->v[c->sp].since_ms;
        validity = st->v[c->sp].validity_ms;
    } else {
        for (i = 0; i < c->n; i++)
            if (c->at[i] != NULL && c->at[i]->pttl_ms > validity)
                validity = c->at[i]->pttl_ms;
        if (validity < 0)
            validity = no_ttl_validity_ms;
    }
    if (c->nnext == c->capnext) {
        size_t ncap = c->capnext ? c->capnext * 2 : 64;
        struct uq *nv = realloc(c->next, ncap * sizeof(*nv));

        if (nv == NULL)
            return -1;
        c->next = nv;
        c->capnext = ncap;
    }
    c->next[c->nnext].key_hash = ck->hash;
    c->next[c->nnext].since_ms = since;
    c->next[c->nnext++].validity_ms = validity;
    if (now_ms - since > validity) {
        r->under_quorum++;
        return add_issue(c, REDLOCK_UNDER_QUORUM, ck->hash, ck->ndistinct, ck->best, ck->held,
                         since);
    }
    r->pending++;
    return 0;
}

/* The report's issues, split keys first, then under-quorum ones, to the
 * cap; the group's state becomes the next one.  0, or -1 on ENOMEM with
 * nothing moved. */
static int
finish(struct cmp *c, struct redlock_report *r, struct redlock_state *st)
{
    size_t i;

    r->issues = calloc(c->nsplit + c->nuq ? c->nsplit + c->nuq : 1, sizeof(*r->issues));
    if (r->issues == NULL)
        return -1;
    for (i = 0; i < c->nsplit; i++)
        r->issues[r->nissues++] = c->split[i];
    for (i = 0; i < c->nuq && r->nissues < REDLOCK_ISSUES_MAX; i++)
        r->issues[r->nissues++] = c->uq[i];
    for (; i < c->nuq; i++)
        free(c->uq[i].key);
    c->nsplit = c->nuq = 0;     /* moved into the report */
    free(st->v);
    st->v = c->next;
    st->n = c->nnext;
    c->next = NULL;
    return 0;
}

struct redlock_report *
redlock_compare(const char *group, const struct redlock_input *in, size_t n,
                struct redlock_state *st, int64_t now_ms, int64_t no_ttl_validity_ms)
{
    struct redlock_report *r = NULL;
    struct cmp_key ck;
    struct cmp c;
    size_t i, unknown_base = 0;
    int ok = 0;

    memset(&c, 0, sizeof(c));
    c.in = in;
    c.n = n;
    r = calloc(1, sizeof(*r));
    c.pos = calloc(n ? n : 1, sizeof(*c.pos));
    c.at = calloc(n ? n : 1, sizeof(*c.at));
    c.distinct = calloc(n ? n : 1, sizeof(*c.distinct));
    c.count = calloc(n ? n : 1, sizeof(*c.count));
    c.split = calloc(REDLOCK_ISSUES_MAX, sizeof(*c.split));
    c.uq = calloc(REDLOCK_ISSUES_MAX, sizeof(*c.uq));
    if (r == NULL || c.pos == NULL || c.at == NULL || c.distinct == NULL || c.count == NULL ||
        c.split == NULL || c.uq == NULL || (r->group = strdup(group)) == NULL)
        goto out;
    atomic_init(&r->refs, 1);
    r->members = n;
    r->quorum = n / 2 + 1;
    r->evaluated_ms = now_ms;
    for (i = 0; i < n; i++) {
        if (in[i].map != NULL)
            r->scanned++;
        else
            unknown_base++;
    }
    r->judged = r->scanned >= r->quorum;
    if (!r->judged) {
        ok = 1;                 /* nothing to say; the state is kept as is */
        goto out;
    }

    while (merge_next(&c, unknown_base, &ck)) {
        r->keys++;
        count_holders(&c, &ck);
        if (split_now(&c, ck.ndistinct)) {
            r->split++;
            if (add_issue(&c, REDLOCK_SPLIT, ck.hash, ck.ndistinct, ck.best, ck.held,
                          now_ms) == -1)
                goto out;
        } else if ((size_t)ck.best + ck.unknown >= r->quorum) {
            r->consistent++;
        } else if (judge_minority(&c, r, st, &ck, now_ms, no_ttl_validity_ms) == -1) {
            goto out;
        }
    }
    if (finish(&c, r, st) == -1)
        goto out;
    ok = 1;
out:
    free_issues(c.split, c.nsplit);
    free_issues(c.uq, c.nuq);
    free(c.split);
    free(c.uq);
    free(c.at);
    free(c.distinct);
    free(c.count);
    free(c.pos);
    free(c.next);
    if (!ok) {
        if (r != NULL) {
            atomic_init(&r->refs, 1);
            redlock_report_unref(r);
        }
        errno = ENOMEM;
        return NULL;
    }
    return r;
}
