/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keymap.h - a bounded map from key bytes to a pointer and a time stamp.
 *
 * Follow mode (follow.c) keeps two of them per target: the lock records
 * of the last full scan plus what events changed since (unbounded but for
 * memory: it holds what the scan found), and the pending set of keys
 * named in events and not yet re-read (bounded in keys and in bytes: a
 * flood of events, or of long keys, fills it to a cap, and the caller
 * falls back to a full scan).  A key put
 * twice is stored once: that is the coalescing of a burst of events for
 * one key (the stamp of the first put stays, so the lag is measured from
 * the oldest event not yet applied).
 *
 * Keys are hashed with common/keyhash.h's keyed hash and compared in
 * full, so crafted keys can neither collide into one entry nor be told
 * apart by timing.  Open addressing, linear probing, backward-shift
 * deletion (no tombstones: a set that churns does not degrade).  Not
 * thread-safe: the owner locks.
 */
#ifndef LOCKWATCH_KEYMAP_H
#define LOCKWATCH_KEYMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keymap;

/* What an entry costs beside its key's bytes (its slot and the copy's
 * allocation), as keymap_bytes() counts it. */
#define KEYMAP_ENTRY_COST 64

/* A map holding at most cap keys and byte_cap bytes (keymap_bytes(); 0:
 * no cap but memory).  NULL on ENOMEM. */
struct keymap *keymap_new(size_t cap, size_t byte_cap);

/* Free the map, calling free_val (when not NULL) on every value. */
void keymap_free(struct keymap *m, void (*free_val)(void *));

/*
 * Put key (len bytes, copied) with val and stamp.  A key already there
 * keeps its stamp and has its value replaced; the old value is returned
 * in *old (NULL when the key is new, or old is NULL).  1 when the key is
 * new, 0 when it was there, -1 when the new key would take the map past
 * a cap (nothing changed) or on ENOMEM (errno says which: ENOSPC or
 * ENOMEM).
 */
int keymap_put(struct keymap *m, const char *key, size_t len, void *val, int64_t stamp,
               void **old);

/* Is key there?  Its value in *val and stamp in *stamp (either may be NULL). */
bool keymap_get(const struct keymap *m, const char *key, size_t len, void **val,
                int64_t *stamp);

/* Remove key; its value in *val (may be NULL).  false when it was not there. */
bool keymap_del(struct keymap *m, const char *key, size_t len, void **val);

size_t keymap_count(const struct keymap *m);

/* The keys' bytes plus KEYMAP_ENTRY_COST an entry. */
size_t keymap_bytes(const struct keymap *m);

/*
 * Iterate: start with *pos = 0; each call gives the next entry and true,
 * false at the end.  The map must not change during an iteration.
 */
bool keymap_next(const struct keymap *m, size_t *pos, const char **key, size_t *len,
                 void **val, int64_t *stamp);

#endif
