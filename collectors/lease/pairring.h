/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairring.h - a bounded memory of (key, holder) pairs, oldest forgotten
 * first: a ring of at most `cap` pair hashes (lease_pair_hash(), never 0)
 * in the order they were noted, indexed by an open-addressing table of
 * twice the ring's size (linear probing, backward-shift deletion), so a
 * lookup costs a probe or two however many pairs are kept.
 *
 * The ring holds only the hashes; what a user keeps of a pair lives in its
 * own array indexed by the ring position pairring_add() returns.  The
 * storage is the caller's (static arrays: PAIRRING_DECLARE); no locking:
 * the caller holds its own mutex.  Used by lease.c (expiries) and
 * released.c (releases).
 */
#ifndef LOCKWATCH_PAIRRING_H
#define LOCKWATCH_PAIRRING_H

#include <stddef.h>
#include <stdint.h>

struct pairring {
    uint64_t *pairs;            /* [cap]; 0: free */
    uint16_t *index;            /* [2 * cap]: ring position + 1; 0 empty */
    size_t cap;                 /* a power of two, at most 32768 */
    size_t head;                /* the next position to write */
    size_t n;                   /* pairs kept */
};

/* Static storage for a ring named NAME of CAP pairs. */
#define PAIRRING_DECLARE(name, cap_)                                        \
    static uint64_t name##_pairs[(cap_)];                                   \
    static uint16_t name##_index[2 * (cap_)];                               \
    static struct pairring name = { name##_pairs, name##_index, (cap_), 0, 0 }

/* The ring position of pair, or -1 when it is not kept. */
long pairring_find(const struct pairring *r, uint64_t pair);

/*
 * Keep pair: its position when it is kept already (*fresh false), else a
 * new one (*fresh true), the oldest pair forgotten to make room (its
 * position is the one returned: the caller overwrites its data).
 */
size_t pairring_add(struct pairring *r, uint64_t pair, int *fresh);

/* Forget the pair at position k (kept). */
void pairring_drop(struct pairring *r, size_t k);

/* Forget every pair. */
void pairring_clear(struct pairring *r);

#endif
