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
 * helperkeys_probe() asks for the ones that make a format: for each
 * retained "redisson" lock EXISTS of its token counter and fair-lock
 * queue, for each "plain" lock holding a decimal (a Redisson semaphore's
 * permits) EXISTS of its permits zset.  Pipelined, PROBE_CHUNK to a round
 * trip, on the lock's own shard (a helper shares its hash tag); bounded by
 * the retained locks.  An error reply (an ACL without those keys) leaves
 * the lock as it was.
 */
#include "collectors/scan/scan_impl.h"

#include <stdlib.h>
#include <string.h>

#include "collectors/formats/formats.h"
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
record_helper(struct stream *s, const struct key_meta *m)
{
    struct run *r = s->r;
    struct helper_key hk;
    struct comp_entry ce;
    int rc = 0;

    if (formats_helper(m->key->str, m->key->len, m->type, &hk) == HELPER_NONE)
        return 0;
    ce.owner = formats_owner_hash(hk.style, keyhash, hk.owner, hk.ownerlen);
    ce.self = keyhash(m->key->str, m->key->len);
    ce.kind = (uint8_t)hk.kind;
    pthread_mutex_lock(&r->mu);
    s->cnt.helpers_total++;
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
                const struct lock_format *f = formats_kin(&formats_table[l->format], kinds);

                snapshot_reformat(snap, l, (uint8_t)formats_index(f),
                                  strcmp(f->name, "redisson-permit-semaphore") == 0);
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
    char *name;                 /* the helper key */
    size_t namelen;
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

/* Redisson's suffixName(name, suffix): the tag, then ":<suffix>". */
static size_t
suffix_name(char *out, size_t cap, const char *key, size_t keylen, const char *suffix)
{
    bool braced = memchr(key, '{', keylen) != NULL;
    size_t slen = strlen(suffix), n = 0;

    if (keylen + slen + 4 > cap)
        return 0;
    if (!braced)
        out[n++] = '{';
    memcpy(out + n, key, keylen);
    n += keylen;
    if (!braced)
        out[n++] = '}';
    out[n++] = ':';
    memcpy(out + n, suffix, slen);
    n += slen;
    out[n] = '\0';
    return n;
}

static int
add_probe(struct probe **pv, size_t *n, size_t *cap, uint32_t lock, size_t stream,
          enum helper_kind kind, const char *name, size_t len)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct probe *p = realloc(*pv, nc * sizeof(*p));

        if (p == NULL)
            return -1;
        *pv = p;
        *cap = nc;
    }
    if (((*pv)[*n].name = malloc(len + 1)) == NULL)
        return -1;
    memcpy((*pv)[*n].name, name, len + 1);
    (*pv)[*n].namelen = len;
    (*pv)[*n].lock = lock;
    (*pv)[*n].stream = stream;
    (*pv)[*n].kind = (uint8_t)kind;
    (*n)++;
    return 0;
}

/* The probes of stream `want`: EXISTS each, PROBE_CHUNK to a round trip;
 * an error reply (an ACL without those keys) only means "not known". */
static int
probe_stream(struct stream *st, size_t want, struct probe *pv, size_t n, uint8_t *found)
{
    size_t start = 0, i;

    while (start < n) {
        size_t idx[PROBE_CHUNK], sent = 0;

        for (i = start; i < n && sent < PROBE_CHUNK; i++) {
            const char *argv[2] = { "EXISTS", pv[i].name };
            size_t lens[2] = { 6, pv[i].namelen };

            if (pv[i].stream != want)
                continue;
            redisAppendCommandArgv(st->c, 2, argv, lens);
            idx[sent++] = i;
        }
        start = i;
        for (size_t j = 0; j < sent; j++) {
            redisReply *rep;

            if (stream_reply(st, &rep) == -1)
                return -1;
            found[idx[j]] = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
            freeReplyObject(rep);
        }
    }
    return 0;
}

int
helperkeys_probe(struct run *r, struct stream *streams, size_t nstreams,
                 const struct cluster_topo *topo)
{
    static const struct { enum helper_kind kind; const char *prefix; } rs_helpers[] = {
        { HELPER_FENCE_TOKEN, "redisson_lock_token" },
        { HELPER_FAIR_QUEUE, "redisson_lock_queue" },
    };
    struct snapshot *s = r->snap;
    const struct lock_format *rs = formats_by_name("redisson");
    const struct lock_format *pl = formats_by_name("plain");
    struct probe *pv = NULL;
    uint8_t *found = NULL;
    size_t n = 0, cap = 0, i, k;
    char name[PROBE_NAME_MAX + 64];
    int rc = -1;

    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = s->locks[i];
        size_t stream = 0, len;

        if ((l->flags & SNAP_KEY_TRUNCATED) || l->key_len > PROBE_NAME_MAX)
            continue;
        if (topo != NULL) {
            /* a helper has the lock's hash tag: the lock's shard */
            stream = topo->slot_shard[cluster_keyslot(l->key, l->key_len)];
            if (stream >= nstreams)
                continue;
        }
        for (k = 0; k < 3; k++) {
            enum helper_kind kind;

            if (k < 2 && l->format == formats_index(rs)) {
                kind = rs_helpers[k].kind;
                len = prefix_name(name, sizeof(name), rs_helpers[k].prefix, l->key, l->key_len);
            } else if (k == 2 && l->format == formats_index(pl) && decimal_holder(l)) {
                kind = HELPER_PERMIT_TIMEOUT;
                len = suffix_name(name, sizeof(name), l->key, l->key_len, "timeout");
            } else {
                continue;
            }
            /* inside the patterns the scan saw it already; excluded: never read */
            if (len == 0 || len >= sizeof(name) || lockstate_in_patterns(r->t, name, len) ||
                lock_key_excluded(r->t, name, len))
                continue;
            if (add_probe(&pv, &n, &cap, (uint32_t)i, stream, kind, name, len) == -1)
                goto out;
        }
    }
    if (n == 0) {
        rc = 0;
        goto out;
    }
    if ((found = calloc(n, 1)) == NULL)
        goto out;
    for (i = 0; i < nstreams; i++) {
        if (streams[i].failed || streams[i].c == NULL)
            continue;
        if (probe_stream(&streams[i], i, pv, n, found) == -1)
            streams[i].failed = true;
    }
    for (i = 0; i < n; i++) {
        struct snap_lock *l = s->locks[pv[i].lock];
        const struct lock_format *f;

        if (!found[i])
            continue;
        if (l->helper_keys < UINT32_MAX)
            l->helper_keys++;
        f = formats_kin(&formats_table[l->format], 1u << pv[i].kind);
        snapshot_reformat(s, l, (uint8_t)formats_index(f),
                          strcmp(f->name, "redisson-permit-semaphore") == 0);
    }
    rc = 0;
out:
    for (i = 0; i < n; i++)
        free(pv[i].name);
    free(pv);
    free(found);
    return rc;
}
