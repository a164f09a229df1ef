/*
 * snapshot.c - building, ordering and freeing scan snapshots.
 *
 * Arrays grow by doubling; the arena holds every byte string of the scan
 * with a NUL after each so a string can be used as a C string where it
 * has no NUL of its own.  Offsets are 32-bit: a scan that would need an
 * arena over 4 GiB fails with ENOMEM rather than wrapping.
 */
#include "collectors/snapshot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct snapshot *
snapshot_new(const char *target)
{
    struct snapshot *s;

    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->target = strdup(target);
    if (s->target == NULL) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->ref_mu, NULL);
    s->refs = 1;
    return s;
}

void
snapshot_ref(struct snapshot *s)
{
    pthread_mutex_lock(&s->ref_mu);
    s->refs++;
    pthread_mutex_unlock(&s->ref_mu);
}

void
snapshot_unref(struct snapshot *s)
{
    int left;
    size_t i;

    if (s == NULL)
        return;
    pthread_mutex_lock(&s->ref_mu);
    left = --s->refs;
    pthread_mutex_unlock(&s->ref_mu);
    if (left > 0)
        return;
    for (i = 0; i < s->nclasses; i++)
        free(s->classes[i]);
    free(s->classes);
    free(s->class_stats);
    free(s->order);
    free(s->arena);
    free(s->holders);
    free(s->locks);
    free(s->target);
    pthread_mutex_destroy(&s->ref_mu);
    free(s);
}

static int
grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t ncap = *cap ? *cap : 1024;
    void *np;

    if (need <= *cap)
        return 0;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem) {
            errno = ENOMEM;
            return -1;
        }
        ncap *= 2;
    }
    np = realloc(*p, ncap * elem);
    if (np == NULL)
        return -1;
    *p = np;
    *cap = ncap;
    return 0;
}

int
snapshot_add_bytes(struct snapshot *s, const char *p, size_t n, uint32_t *off)
{
    if (s->arena_len + n + 1 > UINT32_MAX) {
        errno = ENOMEM;
        return -1;
    }
    if (grow((void **)&s->arena, &s->arena_cap, s->arena_len + n + 1, 1) == -1)
        return -1;
    *off = (uint32_t)s->arena_len;
    if (n > 0)
        memcpy(s->arena + s->arena_len, p, n);
    s->arena[s->arena_len + n] = '\0';
    s->arena_len += n + 1;
    return 0;
}

struct snap_lock *
snapshot_add_lock(struct snapshot *s)
{
    struct snap_lock *l;

    if (s->nlocks >= UINT32_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    if (grow((void **)&s->locks, &s->locks_cap, s->nlocks + 1, sizeof(*l)) == -1)
        return NULL;
    l = &s->locks[s->nlocks++];
    memset(l, 0, sizeof(*l));
    l->holder_first = (uint32_t)s->nholders;
    return l;
}

int
snapshot_add_holder(struct snapshot *s, const struct lock_holder *h)
{
    struct snap_holder *sh;
    uint32_t off;
    size_t len = h->idlen > UINT16_MAX ? UINT16_MAX : h->idlen;

    if (s->nholders >= UINT32_MAX) {
        errno = ENOMEM;
        return -1;
    }
    if (snapshot_add_bytes(s, h->id, len, &off) == -1)
        return -1;
    if (grow((void **)&s->holders, &s->holders_cap, s->nholders + 1, sizeof(*sh)) == -1)
        return -1;
    sh = &s->holders[s->nholders++];
    sh->id_off = off;
    sh->id_len = (uint16_t)len;
    sh->truncated = h->id_truncated;
    sh->count = h->count;
    return 0;
}

int
snapshot_rank(uint8_t states)
{
    return ((states & LOCK_LEAKED) ? 4 : 0) + ((states & LOCK_LONG) ? 2 : 0) +
        ((states & LOCK_REENTRANT_HIGH) ? 1 : 0);
}

const char *
snapshot_worst_state(uint8_t states)
{
    if (states & LOCK_LEAKED)
        return "leaked";
    if (states & LOCK_LONG)
        return "long";
    if (states & LOCK_REENTRANT_HIGH)
        return "reentrant_high";
    return "held";
}

/*
 * Order: worst state first, then the oldest holder, then the key bytes so
 * the order is total and stable from scan to scan.  The sort key is
 * packed into one array so qsort touches 16 bytes per lock, not a record.
 */
struct order_key {
    uint64_t k;         /* rank in the top bits, then age */
    uint32_t idx;
};

static int
order_cmp(const void *a, const void *b)
{
    const struct order_key *x = a, *y = b;

    if (x->k != y->k)
        return x->k > y->k ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int
snapshot_finish(struct snapshot *s, int64_t now_ms)
{
    struct order_key *keys = NULL;
    size_t i;
    int rc = -1;

    if (s->nclasses > 0) {
        s->class_stats = calloc(s->nclasses, sizeof(*s->class_stats));
        if (s->class_stats == NULL)
            goto out;
    }
    s->order = malloc((s->nlocks ? s->nlocks : 1) * sizeof(*s->order));
    keys = malloc((s->nlocks ? s->nlocks : 1) * sizeof(*keys));
    if (s->order == NULL || keys == NULL)
        goto out;

    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = &s->locks[i];
        int64_t age = now_ms - l->first_seen_ms;
        uint64_t a = age < 0 ? 0 : (uint64_t)age;

        if (a > (UINT64_C(1) << 59) - 1)
            a = (UINT64_C(1) << 59) - 1;
        keys[i].k = (uint64_t)snapshot_rank(l->states) << 59 | a;
        keys[i].idx = (uint32_t)i;

        if (l->class_idx < s->nclasses) {
            struct snap_class *c = &s->class_stats[l->class_idx];

            if (l->format < FORMATS_MAX)
                c->locks[l->format]++;
            if (l->states & LOCK_LEAKED)
                c->leaked++;
            if (l->states & LOCK_LONG)
                c->long_held++;
            if (l->nholders > 0 && age > c->oldest_ms)
                c->oldest_ms = age;
            if (l->max_count > c->max_reentrancy)
                c->max_reentrancy = l->max_count;
        }
    }
    qsort(keys, s->nlocks, sizeof(*keys), order_cmp);
    for (i = 0; i < s->nlocks; i++)
        s->order[i] = keys[i].idx;
    rc = 0;
out:
    free(keys);
    return rc;
}
