/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * helperkeys.c - helper keys counted to their locks.
 *
 * A helper key (collectors/formats/helpers.c: a fair lock's queue, a
 * fenced lock's token counter, a reader's rwlock_timeout key, ...) is not
 * a lock: the stream does not read its value and does not record it.  It
 * is noted here as (its own hash, its lock's owner hash, its kind), 16
 * bytes, whatever order SCAN returns keys in; once the streams are done,
 * helperkeys_finish() drops the keys SCAN returned twice and gives every
 * retained lock the count of its helpers, and the format its helpers
 * prove (formats_kin(): a hash lock with a fencing token is
 * "redisson-fenced").  Locks counted but not retained keep their count
 * and format unknown; the table is bounded by COMPANIONS_MAX entries
 * (the rest are counted in helpers_total only).
 *
 * A helper outside the target's patterns (with patterns = lock:*, the
 * fencing counter redisson_lock_token:{lock:x} is) is never scanned, so
 * helperkeys_probe() asks for the ones that make a format, as the rows'
 * kin columns say (formats_kin_probes()): for each retained "redisson"
 * lock EXISTS of its token counter and fair-lock queue, for each "plain"
 * lock holding a decimal and each semaphore (a Redisson semaphore's
 * permits) ZCARD and the first members of its permits zset.  Pipelined, PROBE_CHUNK to a round
 * trip, on the lock's own shard (a helper shares its hash tag); bounded by
 * the retained locks.  An error reply (an ACL without those keys) leaves
 * the lock as it was.
 */
#include "collectors/scan/scan_impl.h"

#include <stdlib.h>
#include <string.h>

#include "collectors/formats/formats.h"
#include "collectors/locks/lockfacts.h"
#include "collectors/locks/lockstate.h"
#include "common/keyhash.h"
#include "common/prefixname.h"

#define COMPANIONS_MAX (1u << 20)

struct comp_entry {
    uint64_t owner;
    uint64_t self;              /* the helper key's own hash: dedupe */
    uint8_t kind;
};

struct helper_table {
    struct comp_entry *e;
    size_t n, cap;
};

int
record_helper(struct run *r, const struct scan_key *k, struct scan_counters *cnt)
{
    struct helper_key hk;
    struct comp_entry ce;
    int rc = 0;

    if (formats_helper(k->key, k->keylen, k->type, &hk) == HELPER_NONE)
        return 0;
    ce.owner = formats_owner_hash(hk.style, keyhash, hk.owner, hk.ownerlen);
    ce.self = keyhash(k->key, k->keylen);
    ce.kind = (uint8_t)hk.kind;
    pthread_mutex_lock(&r->mu);
    cnt->helpers_total++;
    if (r->comp == NULL && (r->comp = calloc(1, sizeof(*r->comp))) == NULL) {
        rc = -1;
    } else if (r->comp->n == r->comp->cap && r->comp->cap < COMPANIONS_MAX) {
        size_t cap = r->comp->cap ? r->comp->cap * 2 : 256;
        struct comp_entry *e = realloc(r->comp->e, cap * sizeof(*e));

        if (e == NULL) {
            rc = -1;
        } else {
            r->comp->e = e;
            r->comp->cap = cap;
        }
    }
    if (rc == 0 && r->comp->n < r->comp->cap)
        r->comp->e[r->comp->n++] = ce;
    pthread_mutex_unlock(&r->mu);
    return rc;
}

static int
by_owner(const void *a, const void *b)
{
    const struct comp_entry *x = a, *y = b;

    if (x->owner != y->owner)
        return x->owner < y->owner ? -1 : 1;
    if (x->self != y->self)
        return x->self < y->self ? -1 : 1;
    return 0;
}

/* The first entry of owner h in the sorted table, or n. */
static size_t
find(const struct helper_table *c, uint64_t h)
{
    size_t lo = 0, hi = c->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (c->e[mid].owner < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void
helperkeys_finish(struct run *r, bool attach)
{
    struct helper_table *c = r->comp;
    struct snapshot *snap = r->snap;
    size_t i, j, k;

    if (c == NULL)
        return;
    if (attach && c->n > 0) {
        qsort(c->e, c->n, sizeof(*c->e), by_owner);
        /* SCAN may return a key twice: keep one */
        for (i = 1, j = 1; i < c->n; i++)
            if (c->e[i].owner != c->e[j - 1].owner || c->e[i].self != c->e[j - 1].self)
                c->e[j++] = c->e[i];
        c->n = j;
        for (i = 0; i < snap->nlocks; i++) {
            struct snap_lock *l = snap->locks[i];
            const char *ids[HOLDERS_MAX];
            size_t lens[HOLDERS_MAX], nh = 0, no;
            uint64_t owners[FORMATS_OWNER_HASHES_MAX];
            unsigned kinds = 0;
            uint32_t count = 0;

            if (l->flags & SNAP_KEY_TRUNCATED)
                continue;       /* its helpers name bytes we did not keep */
            for (k = 0; k < l->nholders && k < HOLDERS_MAX; k++, nh++) {
                ids[k] = l->holders[k].id;
                lens[k] = l->holders[k].id_len;
            }
            no = formats_lock_owner_hashes(l->key, l->key_len, ids, lens, nh, keyhash, owners);
            for (k = 0; k < no; k++)
                for (j = find(c, owners[k]); j < c->n && c->e[j].owner == owners[k]; j++) {
                    if (count < UINT32_MAX)
                        count++;
                    kinds |= 1u << c->e[j].kind;
                }
            l->helper_keys = count;
            if (kinds != 0) {
                bool ttl_optional;
                const struct lock_format *f = lockfacts_kin(&formats_table[l->format], kinds,
                                                            &ttl_optional);

                snapshot_reformat(snap, l, (uint8_t)formats_index(f), ttl_optional);
            }
        }
    }
    free(c->e);
    free(c);
    r->comp = NULL;
}

/* ---- probing helper keys outside the patterns ------------------------------- */

#define PROBE_CHUNK 1000
#define PROBE_NAME_MAX 1024     /* longer lock names are not probed */

struct probe {
    uint32_t lock;              /* index into snap->locks */
    size_t stream;
    uint8_t kind;
    bool seen;                  /* inside the patterns: the pass counted it */
    char *name;                 /* the helper key */
    size_t namelen;
    long long count;            /* EXISTS, or ZCARD of a permits zset */
    redisReply *members;        /* ZRANGE 0 HOLDERS_MAX-1 of a permits zset */
};

/* A plain lock whose value is a decimal (a Redisson semaphore's permits). */
static bool
decimal_holder(const struct snap_lock *l)
{
    const struct snap_holder *h = l->nholders == 1 ? &l->holders[0] : NULL;

    if (h == NULL || h->truncated || h->id_len == 0 || h->id_len > 19)
        return false;
    for (size_t i = h->id[0] == '-' ? 1 : 0; i < h->id_len; i++)
        if (h->id[i] < '0' || h->id[i] > '9')
            return false;
    return h->id_len > (h->id[0] == '-' ? 1u : 0u);
}

static int
add_probe(struct probe **pv, size_t *n, size_t *cap, const struct probe *pr)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct probe *p = realloc(*pv, nc * sizeof(*p));

        if (p == NULL)
            return -1;
        *pv = p;
        *cap = nc;
    }
    (*pv)[*n] = *pr;
    if (((*pv)[*n].name = malloc(pr->namelen + 1)) == NULL)
        return -1;
    memcpy((*pv)[*n].name, pr->name, pr->namelen + 1);
    (*n)++;
    return 0;
}

#define STR_(x) #x
#define STR(x) STR_(x)
_Static_assert(HOLDERS_LAST + 1 == HOLDERS_MAX, "HOLDERS_LAST");

/* The probes of stream `want`, PROBE_CHUNK to a round trip: EXISTS, or
 * for a permits zset ZCARD and its first HOLDERS_MAX members.  An error
 * reply (an ACL without those keys) only means "not known". */
static int
probe_stream(struct stream *st, size_t want, struct probe *pv, size_t n)
{
    size_t start = 0, i;

    while (start < n) {
        size_t idx[PROBE_CHUNK], sent = 0;

        for (i = start; i < n && sent < PROBE_CHUNK; i++) {
            const char *argv[5] = { "EXISTS", pv[i].name, "0", STR(HOLDERS_LAST),
                                    NULL };
            size_t lens[5] = { 6, pv[i].namelen, 1, strlen(STR(HOLDERS_LAST)), 0 };

            if (pv[i].stream != want)
                continue;
            if (formats_helper_holds_holders(pv[i].kind)) {
                argv[0] = "ZCARD";
                lens[0] = 5;
                redisAppendCommandArgv(st->c, 2, argv, lens);
                argv[0] = "ZRANGE";
                lens[0] = 6;
                redisAppendCommandArgv(st->c, 4, argv, lens);
            } else {
                redisAppendCommandArgv(st->c, 2, argv, lens);
            }
            idx[sent++] = i;
        }
        start = i;
        for (size_t j = 0; j < sent; j++) {
            struct probe *pr = &pv[idx[j]];
            redisReply *rep;

            if (stream_reply(st, &rep) == -1)
                return -1;
            pr->count = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
            freeReplyObject(rep);
            if (!formats_helper_holds_holders(pr->kind))
                continue;
            if (stream_reply(st, &rep) == -1)
                return -1;
            if (rep->type == REDIS_REPLY_ARRAY)
                pr->members = rep;
            else
                freeReplyObject(rep);
        }
    }
    return 0;
}

/* A permit semaphore's holders are its permits in use: the members of
 * its permits zset (ids of 16 raw bytes, or 32 hex before 3.17). */
static int
permit_holders(struct snapshot *s, const struct probe *pr)
{
    struct snap_holder h[HOLDERS_MAX];
    size_t n = 0;

    for (size_t j = 0; pr->members != NULL && j < pr->members->elements && n < HOLDERS_MAX;
         j++) {
        const redisReply *e = pr->members->element[j];

        if (e->type != REDIS_REPLY_STRING)
            continue;
        h[n].id = e->str;
        h[n].id_len = (uint16_t)(e->len < HOLDER_ID_MAX - 1 ? e->len : HOLDER_ID_MAX - 1);
        h[n].truncated = e->len > h[n].id_len;
        h[n].count = 1;
        n++;
    }
    return snapshot_reholder(s, pr->lock, h, n,
                             (uint32_t)(pr->count > UINT32_MAX ? UINT32_MAX : pr->count));
}

int
helperkeys_probe(struct run *r, struct stream *streams, size_t nstreams,
                 const struct cluster_topo *topo)
{
    struct snapshot *s = r->snap;
    struct probe *pv = NULL;
    size_t n = 0, cap = 0, i, k, nk;
    enum helper_kind kinds[HELPER_KINDS];
    char name[PROBE_NAME_MAX + 64];
    int rc = -1;

    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = s->locks[i];
        struct probe pr;

        if ((l->flags & SNAP_KEY_TRUNCATED) || l->key_len > PROBE_NAME_MAX)
            continue;
        memset(&pr, 0, sizeof(pr));
        pr.lock = (uint32_t)i;
        if (topo != NULL) {
            /* a helper has the lock's hash tag: the lock's shard */
            pr.stream = topo->slot_shard[cluster_keyslot(l->key, l->key_len)];
            if (pr.stream >= nstreams)
                continue;
        }
        nk = formats_kin_probes(&formats_table[l->format], decimal_holder(l), kinds);
        for (k = 0; k < nk; k++) {
            pr.kind = (uint8_t)kinds[k];
            pr.namelen = formats_helper_lock_name(kinds[k], l->key, l->key_len, name,
                                                  sizeof(name));
            pr.name = name;
            if (pr.namelen == 0 || pr.namelen >= sizeof(name) ||
                lock_key_excluded(r->t, name, pr.namelen))
                continue;       /* excluded: never read */
            /* inside the patterns the pass saw it; a permits zset is
             * still asked for its permits (its value was not read) */
            pr.seen = lockstate_in_patterns(r->t, name, pr.namelen);
            if (pr.seen && !formats_helper_holds_holders(pr.kind))
                continue;
            if (add_probe(&pv, &n, &cap, &pr) == -1)
                goto out;
        }
    }
    for (i = 0; i < nstreams && n > 0; i++) {
        if (streams[i].failed || streams[i].c == NULL)
            continue;
        if (probe_stream(&streams[i], i, pv, n) == -1)
            streams[i].failed = true;
    }
    for (i = 0; i < n; i++) {
        struct snap_lock *l = s->locks[pv[i].lock];
        const struct lock_format *f;
        bool ttl_optional;

        if (pv[i].count <= 0)
            continue;
        if (!pv[i].seen && l->helper_keys < UINT32_MAX)
            l->helper_keys++;
        f = lockfacts_kin(&formats_table[l->format], 1u << pv[i].kind, &ttl_optional);
        snapshot_reformat(s, l, (uint8_t)formats_index(f), ttl_optional);
        if (formats_helper_holds_holders(pv[i].kind) && permit_holders(s, &pv[i]) == -1)
            goto out;
    }
    rc = 0;
out:
    for (i = 0; i < n; i++) {
        free(pv[i].name);
        if (pv[i].members != NULL)
            freeReplyObject(pv[i].members);
    }
    free(pv);
    return rc;
}
