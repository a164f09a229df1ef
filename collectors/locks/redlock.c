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
    const struct redlock_entry **at;    /* per member: its entry for the key, or NULL */
    uint64_t *distinct;                 /* holder hashes, first-appearance order */
    unsigned *count;
    struct redlock_issue *split, *uq;   /* REDLOCK_ISSUES_MAX each */
    size_t nsplit, nuq;
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

struct redlock_report *
redlock_compare(const char *group, const struct redlock_input *in, size_t n,
                struct redlock_state *st, int64_t now_ms, int64_t no_ttl_validity_ms)
{
    struct redlock_report *r = NULL;
    struct cmp c;
    size_t *pos = NULL, i, k, sp = 0, nnext = 0, capnext = 0, unknown_base = 0;
    struct uq *next = NULL;
    int ok = 0;

    memset(&c, 0, sizeof(c));
    c.in = in;
    c.n = n;
    r = calloc(1, sizeof(*r));
    pos = calloc(n ? n : 1, sizeof(*pos));
    c.at = calloc(n ? n : 1, sizeof(*c.at));
    c.distinct = calloc(n ? n : 1, sizeof(*c.distinct));
    c.count = calloc(n ? n : 1, sizeof(*c.count));
    c.split = calloc(REDLOCK_ISSUES_MAX, sizeof(*c.split));
    c.uq = calloc(REDLOCK_ISSUES_MAX, sizeof(*c.uq));
    if (r == NULL || pos == NULL || c.at == NULL || c.distinct == NULL || c.count == NULL ||
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

    for (;;) {
        uint64_t h = UINT64_MAX;
        bool any = false, split = false;
        size_t ndistinct = 0, unknown = unknown_base;
        unsigned best = 0, held = 0;

        for (i = 0; i < n; i++)
            if (in[i].map != NULL && pos[i] < in[i].map->n &&
                (!any || in[i].map->e[pos[i]].key_hash < h)) {
                h = in[i].map->e[pos[i]].key_hash;
                any = true;
            }
        if (!any)
            break;
        for (i = 0; i < n; i++) {
            c.at[i] = NULL;
            if (in[i].map == NULL)
                continue;
            if (pos[i] < in[i].map->n && in[i].map->e[pos[i]].key_hash == h)
                c.at[i] = &in[i].map->e[pos[i]++];
            else if (in[i].map->dropped > 0)
                unknown++;      /* its map is cut: it may hold the key */
        }
        r->keys++;
        for (i = 0; i < n; i++) {
            if (c.at[i] == NULL)
                continue;
            held++;
            for (k = 0; k < ndistinct && c.distinct[k] != c.at[i]->holder_hash; k++)
                ;
            if (k == ndistinct) {
                c.distinct[ndistinct] = c.at[i]->holder_hash;
                c.count[ndistinct++] = 0;
            }
            if (++c.count[k] > best)
                best = c.count[k];
        }
        for (i = 0; i < n && !split && ndistinct > 1; i++)
            for (k = i + 1; k < n && !split; k++)
                if (c.at[i] != NULL && c.at[k] != NULL &&
                    c.at[i]->holder_hash != c.at[k]->holder_hash &&
                    overlap(c.at[i], c.at[k]))
                    split = true;

        /* the state entry for h, if any (both sorted by hash) */
        while (sp < st->n && st->v[sp].key_hash < h)
            sp++;

        if (split) {
            r->split++;
            if (add_issue(&c, REDLOCK_SPLIT, h, ndistinct, best, held, now_ms) == -1)
                goto out;
        } else if ((size_t)best + unknown >= r->quorum) {
            r->consistent++;
        } else {
            int64_t since = now_ms, validity = -1;

            if (sp < st->n && st->v[sp].key_hash == h) {
                since = st->v[sp].since_ms;
                validity = st->v[sp].validity_ms;
            } else {
                for (i = 0; i < n; i++)
                    if (c.at[i] != NULL && c.at[i]->pttl_ms > validity)
                        validity = c.at[i]->pttl_ms;
                if (validity < 0)
                    validity = no_ttl_validity_ms;
            }
            if (nnext == capnext) {
                size_t ncap = capnext ? capnext * 2 : 64;
                struct uq *nv = realloc(next, ncap * sizeof(*nv));

                if (nv == NULL)
                    goto out;
                next = nv;
                capnext = ncap;
            }
            next[nnext].key_hash = h;
            next[nnext].since_ms = since;
            next[nnext++].validity_ms = validity;
            if (now_ms - since > validity) {
                r->under_quorum++;
                if (add_issue(&c, REDLOCK_UNDER_QUORUM, h, ndistinct, best, held,
                              since) == -1)
                    goto out;
            } else {
                r->pending++;
            }
        }
    }

    /* the report: split keys first, then under-quorum ones, to the cap */
    r->issues = calloc(c.nsplit + c.nuq ? c.nsplit + c.nuq : 1, sizeof(*r->issues));
    if (r->issues == NULL)
        goto out;
    for (i = 0; i < c.nsplit; i++)
        r->issues[r->nissues++] = c.split[i];
    for (i = 0; i < c.nuq && r->nissues < REDLOCK_ISSUES_MAX; i++)
        r->issues[r->nissues++] = c.uq[i];
    for (; i < c.nuq; i++)
        free(c.uq[i].key);
    c.nsplit = c.nuq = 0;       /* moved into the report */
    free(st->v);
    st->v = next;
    st->n = nnext;
    next = NULL;
    ok = 1;
out:
    free_issues(c.split, c.nsplit);
    free_issues(c.uq, c.nuq);
    free(c.split);
    free(c.uq);
    free(c.at);
    free(c.distinct);
    free(c.count);
    free(pos);
    free(next);
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
