/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.h - Redlock consistency: do the independent nodes of a
 * [redlock NAME] group agree on who holds each lock?
 *
 * Input.  A snapshot keeps details for only the worst SNAP_RETAIN_MAX
 * locks, so comparing snapshots would miss most keys.  Instead a scan of
 * a target that belongs to a Redlock group also fills a redlock_map: per
 * lock, the 64-bit key hash, a 32-bit hash of its first holder (the
 * hashes the tracker already computes), when that holder was first seen,
 * when the lock was observed and its PTTL, plus the key bytes (for the
 * alert's key label).  That is 48 bytes and the key per lock, at most
 * REDLOCK_MAP_MAX locks and REDLOCK_KEYBYTES_MAX key bytes per target;
 * what does not fit is counted (dropped) and makes the member "unknown"
 * for keys it lacks, so a cap can never invent an inconsistency.
 *
 * Judgement, per key seen on any member (N members, quorum N/2+1):
 *   consistent    one holder on >= quorum nodes;
 *   split         two different holders on different nodes at the same
 *                 time (their [first seen, observed + PTTL] intervals
 *                 overlap: scans of different nodes run at different
 *                 moments, and a lock that changed hands between them is
 *                 not a split);
 *   under quorum  held on fewer than quorum nodes (counting members
 *                 without a scan as possibly holding it) for longer than
 *                 its validity: the largest PTTL seen when it first fell
 *                 under quorum, or no_ttl_validity_ms (leak_grace) when no
 *                 node gave it a TTL.  Shorter than that it is "pending":
 *                 an acquisition or release in progress looks the same.
 * Inconsistent = split + under quorum; that is
 * lockwatch_redlock_inconsistent{group} and what LockRedlockSplit
 * alerts on.
 *
 * Pure: no I/O, no clock, no locks.  The caller serialises calls on one
 * redlock_state.
 */
#ifndef LOCKWATCH_REDLOCK_H
#define LOCKWATCH_REDLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REDLOCK_MAP_MAX       (1u << 20)           /* locks per target */
#define REDLOCK_KEYBYTES_MAX  (32u * 1024 * 1024)  /* key bytes per target */
#define REDLOCK_KEY_MAX       1024                 /* bytes kept of one key */
#define REDLOCK_ISSUES_MAX    100                  /* detailed per group */
#define REDLOCK_NODES_TEXT    256

struct redlock_entry {
    uint64_t key_hash;
    uint32_t holder_hash;
    uint32_t key_off;           /* into the key arena */
    uint32_t key_len;           /* 0: key bytes not kept (arena full) */
    int64_t first_seen_ms;      /* current holder first seen, Unix ms */
    int64_t observed_ms;
    int64_t pttl_ms;            /* -1: no TTL */
};

struct redlock_map {
    struct redlock_entry *e;    /* sorted by key_hash after finish */
    size_t n, cap;
    char *keys;
    size_t keys_len, keys_cap;
    uint64_t dropped;           /* locks over REDLOCK_MAP_MAX */
};

struct redlock_map *redlock_map_new(void);
void redlock_map_free(struct redlock_map *m);
/* Record one lock.  0, or -1 on ENOMEM (a lock over the caps is counted
 * in dropped, not an error). */
int redlock_map_add(struct redlock_map *m, const char *key, size_t keylen,
                    uint64_t key_hash, uint32_t holder_hash, int64_t first_seen_ms,
                    int64_t observed_ms, int64_t pttl_ms);
/* Sort by key hash; of two records of one hash the earlier is kept. */
void redlock_map_finish(struct redlock_map *m);

enum redlock_kind { REDLOCK_SPLIT, REDLOCK_UNDER_QUORUM };

const char *redlock_kind_str(enum redlock_kind k);     /* "split", "under_quorum" */

struct redlock_issue {
    enum redlock_kind kind;
    char *key;                  /* key_len bytes, NUL after them */
    size_t key_len;
    uint64_t key_hash;
    unsigned holders;           /* distinct holders seen */
    unsigned best;              /* nodes agreeing on the most common holder */
    unsigned held;              /* nodes holding it */
    int64_t since_ms;           /* under quorum since (split: observed) */
    char cls[128];              /* its lock class (the caller fills it in:
                                 * classes need the config) */
    char nodes[REDLOCK_NODES_TEXT];     /* "r1=A r2=A r3=B r4=B r5=-" */
};

struct redlock_report {
    atomic_int refs;
    char *group;
    size_t members;             /* configured */
    size_t scanned;             /* members with a map this time */
    size_t quorum;              /* members / 2 + 1 */
    bool judged;                /* at least quorum members scanned */
    int64_t evaluated_ms;
    uint64_t keys;              /* distinct keys compared */
    uint64_t consistent;
    uint64_t split;
    uint64_t under_quorum;      /* past their validity */
    uint64_t pending;           /* under quorum, within validity */
    struct redlock_issue *issues;   /* split ones first; at most REDLOCK_ISSUES_MAX */
    size_t nissues;
};

/* One member of a group: its target name and newest map (NULL when it
 * has no good scan). */
struct redlock_input {
    const char *target;
    const struct redlock_map *map;
};

/* What a group remembers between comparisons: since when each key has
 * been under quorum. */
struct redlock_state;
struct redlock_state *redlock_state_new(void);
void redlock_state_free(struct redlock_state *st);

/*
 * Compare the members' maps at now_ms.  Returns a new report (one
 * reference, the caller's), NULL on ENOMEM (st unchanged then).
 */
struct redlock_report *redlock_compare(const char *group, const struct redlock_input *in,
                                       size_t n, struct redlock_state *st, int64_t now_ms,
                                       int64_t no_ttl_validity_ms);

void redlock_report_ref(struct redlock_report *r);
void redlock_report_unref(struct redlock_report *r);     /* NULL is fine */

static inline uint64_t
redlock_inconsistent(const struct redlock_report *r)
{
    return r->split + r->under_quorum;
}

#endif
