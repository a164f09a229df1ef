/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairring.c - the bounded, oldest-first memory of (key, holder) pairs
 * (pairring.h).
 */
#include "collectors/lease/pairring.h"

#include <string.h>

/* The index slot of pair, or of the empty slot where it would go. */
static size_t
slot_of(const struct pairring *r, uint64_t pair)
{
    size_t mask = 2 * r->cap - 1, i = (size_t)pair & mask;

    while (r->index[i] != 0 && r->pairs[r->index[i] - 1] != pair)
        i = (i + 1) & mask;
    return i;
}

/* Take the entry at index slot i out of the index (backward shift). */
static void
slot_delete(struct pairring *r, size_t i)
{
    size_t mask = 2 * r->cap - 1, j = i, home;

    for (;;) {
        j = (j + 1) & mask;
        if (r->index[j] == 0)
            break;
        home = (size_t)r->pairs[r->index[j] - 1] & mask;
        /* may the entry at j move back to i?  Only when its home is not
         * in the cyclic interval (i, j] */
        if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
            r->index[i] = r->index[j];
            i = j;
        }
    }
    r->index[i] = 0;
}

long
pairring_find(const struct pairring *r, uint64_t pair)
{
    size_t i;

    if (r->n == 0 || pair == 0)
        return -1;
    i = slot_of(r, pair);
    return r->index[i] != 0 ? (long)(r->index[i] - 1) : -1;
}

void
pairring_drop(struct pairring *r, size_t k)
{
    size_t i = slot_of(r, r->pairs[k]);

    if (r->index[i] != 0)
        slot_delete(r, i);
    r->pairs[k] = 0;
    r->n--;
}

size_t
pairring_add(struct pairring *r, uint64_t pair, int *fresh)
{
    size_t i = slot_of(r, pair), k;

    if (r->index[i] != 0) {
        *fresh = 0;
        return r->index[i] - 1u;
    }
    k = r->head;
    r->head = (r->head + 1) % r->cap;
    if (r->pairs[k] != 0) {
        pairring_drop(r, k);            /* the oldest goes */
        i = slot_of(r, pair);
    }
    r->index[i] = (uint16_t)(k + 1);
    r->pairs[k] = pair;
    r->n++;
    *fresh = 1;
    return k;
}

void
pairring_clear(struct pairring *r)
{
    memset(r->pairs, 0, r->cap * sizeof(*r->pairs));
    memset(r->index, 0, 2 * r->cap * sizeof(*r->index));
    r->head = 0;
    r->n = 0;
}
