/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keymap.c - the bounded key map of keymap.h: open addressing on the
 * keyed hash, linear probing, backward-shift deletion, grown at 3/4 full.
 */
#include "collectors/follow/keymap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/keyhash.h"

struct slot {
    uint64_t hash;
    char *key;                  /* NULL: empty */
    size_t len;
    void *val;
    int64_t stamp;
};

struct keymap {
    struct slot *slots;
    size_t cap;                 /* slots, a power of two */
    size_t count;
    size_t limit;               /* keys allowed; 0 none */
    size_t bytes;               /* keys' bytes + KEYMAP_ENTRY_COST each */
    size_t byte_limit;          /* bytes allowed; 0 none */
};

#define KEYMAP_MIN_SLOTS 16

struct keymap *
keymap_new(size_t limit, size_t byte_limit)
{
    struct keymap *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return NULL;
    m->slots = calloc(KEYMAP_MIN_SLOTS, sizeof(*m->slots));
    if (m->slots == NULL) {
        free(m);
        return NULL;
    }
    m->cap = KEYMAP_MIN_SLOTS;
    m->limit = limit;
    m->byte_limit = byte_limit;
    return m;
}

void
keymap_free(struct keymap *m, void (*free_val)(void *))
{
    size_t i;

    if (m == NULL)
        return;
    for (i = 0; i < m->cap; i++)
        if (m->slots[i].key != NULL) {
            if (free_val != NULL)
                free_val(m->slots[i].val);
            free(m->slots[i].key);
        }
    free(m->slots);
    free(m);
}

/* The slot holding key, or the empty slot where it would go. */
static size_t
find(const struct keymap *m, uint64_t h, const char *key, size_t len)
{
    size_t i = (size_t)h & (m->cap - 1);

    while (m->slots[i].key != NULL) {
        if (m->slots[i].hash == h && m->slots[i].len == len &&
            memcmp(m->slots[i].key, key, len) == 0)
            return i;
        i = (i + 1) & (m->cap - 1);
    }
    return i;
}

static int
grow(struct keymap *m)
{
    struct slot *old = m->slots, *ns;
    size_t oldcap = m->cap, i, j;

    ns = calloc(oldcap * 2, sizeof(*ns));
    if (ns == NULL)
        return -1;
    m->slots = ns;
    m->cap = oldcap * 2;
    for (i = 0; i < oldcap; i++) {
        if (old[i].key == NULL)
            continue;
        j = (size_t)old[i].hash & (m->cap - 1);
        while (ns[j].key != NULL)
            j = (j + 1) & (m->cap - 1);
        ns[j] = old[i];
    }
    free(old);
    return 0;
}

int
keymap_put(struct keymap *m, const char *key, size_t len, void *val, int64_t stamp,
           void **old)
{
    uint64_t h = keyhash(key, len);
    size_t i = find(m, h, key, len);
    char *copy;

    if (old != NULL)
        *old = NULL;
    if (m->slots[i].key != NULL) {
        if (old != NULL)
            *old = m->slots[i].val;
        m->slots[i].val = val;
        return 0;
    }
    if ((m->limit > 0 && m->count >= m->limit) ||
        (m->byte_limit > 0 && (len > m->byte_limit ||
                               m->bytes + KEYMAP_ENTRY_COST > m->byte_limit - len))) {
        errno = ENOSPC;
        return -1;
    }
    if ((m->count + 1) * 4 > m->cap * 3) {
        if (grow(m) == -1) {
            errno = ENOMEM;
            return -1;
        }
        i = find(m, h, key, len);
    }
    if ((copy = malloc(len ? len : 1)) == NULL) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(copy, key, len);
    m->slots[i].hash = h;
    m->slots[i].key = copy;
    m->slots[i].len = len;
    m->slots[i].val = val;
    m->slots[i].stamp = stamp;
    m->count++;
    m->bytes += len + KEYMAP_ENTRY_COST;
    return 1;
}

bool
keymap_get(const struct keymap *m, const char *key, size_t len, void **val, int64_t *stamp)
{
    size_t i = find(m, keyhash(key, len), key, len);

    if (m->slots[i].key == NULL)
        return false;
    if (val != NULL)
        *val = m->slots[i].val;
    if (stamp != NULL)
        *stamp = m->slots[i].stamp;
    return true;
}

bool
keymap_del(struct keymap *m, const char *key, size_t len, void **val)
{
    size_t i = find(m, keyhash(key, len), key, len), j, home;

    if (m->slots[i].key == NULL)
        return false;
    if (val != NULL)
        *val = m->slots[i].val;
    free(m->slots[i].key);
    m->slots[i].key = NULL;
    m->count--;
    m->bytes -= m->slots[i].len + KEYMAP_ENTRY_COST;
    /* backward shift: move up every entry of the run after i that may
     * live in the hole, so lookups never stop early at it */
    j = i;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (m->slots[j].key == NULL)
            break;
        home = (size_t)m->slots[j].hash & (m->cap - 1);
        /* j's entry may move to i unless its home lies in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->slots[i] = m->slots[j];
            m->slots[j].key = NULL;
            i = j;
        }
    }
    return true;
}

size_t
keymap_count(const struct keymap *m)
{
    return m->count;
}

size_t
keymap_bytes(const struct keymap *m)
{
    return m->bytes;
}

bool
keymap_next(const struct keymap *m, size_t *pos, const char **key, size_t *len, void **val,
            int64_t *stamp)
{
    while (*pos < m->cap) {
        const struct slot *s = &m->slots[(*pos)++];

        if (s->key == NULL)
            continue;
        if (key != NULL)
            *key = s->key;
        if (len != NULL)
            *len = s->len;
        if (val != NULL)
            *val = s->val;
        if (stamp != NULL)
            *stamp = s->stamp;
        return true;
    }
    return false;
}
