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
 */
#include "collectors/scan/scan_impl.h"

#include <stdlib.h>
#include <string.h>

#include "collectors/formats/formats.h"
#include "common/keyhash.h"

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
