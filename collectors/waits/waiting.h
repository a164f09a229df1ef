/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waiting.h - the latest `waiting` line of each (owner, key) pair, the
 * table the wait-for graph of issue 26 reads (docs/line-protocol.md
 * "Owners and holder ids").
 *
 * A `waiting` line (start or end) sets its pair's entry: the holder id the
 * owner will write, whether it is waiting now, the outcome of its end, and
 * when it came.  A 6-field `hold` ends the pair (the owner released the
 * key), and so removes it, as does an end that did not acquire (timeout,
 * error: the owner neither waits nor holds; a busy try-lock's ends would
 * otherwise fill the table with pairs that say nothing).  An acquire that acquired (a waiting end with
 * outcome ok) also ends its owner's starts on other keys that its owner,
 * one thread of control, can no longer be waiting in: a start that came
 * WAITING_SUPERSEDE_MS or more before this acquire began (the line's
 * arrival less the wait a 7-field `wait` measured; a 6-field ok began on
 * arrival) and names another holder id than this acquire's (or "-").
 * Such a start was left by a process that died mid-wait (no end line
 * ever comes), its owner name taken up by the next process (a
 * StatefulSet pod's name); a live owner that waits cannot begin another
 * acquire.  Acquires of one call or one process that run at once are
 * spared: node-redlock's multi-resource acquire (its oks began with its
 * starts) and a Redisson thread's pending lockAsync (one holder id for all
 * its locks).  waiting_superseded() counts them.
 * The table holds at most WAITING_MAX pairs; a source (a sender's
 * address, waiting_source()) may use all of them.  A new pair that finds
 * the table full takes the place of the least recently updated pair of
 * the source that holds the most pairs, so one sender's flood evicts its
 * own, not the pairs of the others (their live waits and holdings: the
 * graph's edges).  waiting_evicted() counts them.  WAITING_SOURCE_SLOTS
 * addresses have a source number of their own at a time; the number of a
 * source left with no pairs is given to the next new address
 * (waiting_sources_reused()); a new address that finds every number in
 * use by pairs shares WAITING_SOURCE_SHARED (waiting_sources_shared()).
 *
 * Memory: each pair is one allocation of its owner, key and holder bytes
 * (at most ~4.9 KiB with the protocol's longest fields), made when the
 * pair is first seen or grows, so at most WAITING_MAX of them.
 *
 * Not thread-safe: its owner (waitstats) holds its mutex around every call.
 */
#ifndef LOCKWATCH_WAITING_H
#define LOCKWATCH_WAITING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/waits/samples.h"

#define WAITING_MAX 4096        /* (owner, key) pairs kept */
#define WAITING_SOURCE_SLOTS 256   /* addresses with a source number of their own */
#define WAITING_SOURCE_SHARED WAITING_SOURCE_SLOTS  /* the rest, while those are in use */
#define WAITING_SOURCE_NONE (WAITING_SOURCE_SLOTS + 1)  /* no source (tests, benches) */
#define WAITING_SOURCES (WAITING_SOURCE_SLOTS + 2)      /* source numbers */
#define WAITING_SUPERSEDE_MS 1000   /* a start this long before an acquire of
                                     * its owner began is over (above) */

struct waiting_table;

/* One pair as waiting_each() shows it; pointers valid during the call. */
struct waiting_pair {
    const char *owner, *key, *holder;   /* bytes, not NUL-terminated */
    size_t ownerlen, keylen, holderlen; /* holderlen 0: not known */
    bool waiting;               /* its latest line was a start */
    enum sample_outcome outcome;        /* when !waiting */
    int64_t at_ms;              /* monotonic time of its latest line */
};

/* NULL on ENOMEM.  Free with waiting_free (NULL is fine). */
struct waiting_table *waiting_new(void);
void waiting_free(struct waiting_table *t);

/*
 * The source number of the address (family, 16 bytes: AF_INET's in the
 * first 4, the rest 0) that sent the lines about to be noted: its own
 * while it has pairs, else a number no pairs use (first unused, then one
 * whose pairs are all gone), else WAITING_SOURCE_SHARED.  Valid until the
 * next call.
 */
unsigned waiting_source(struct waiting_table *t, int family, const unsigned char addr[16]);

/*
 * Take one parsed line: a SAMPLE_WAITING sets its pair (an ok end also
 * ends the owner's superseded starts; its us, when not 0, is how long the
 * acquire waited), a SAMPLE_HOLD with an owner removes its pair, anything
 * else is ignored.  src: the line's source number (waiting_source()), or
 * WAITING_SOURCE_NONE (a number past the table is none).  now_ms: monotonic.
 * 0, or -1 when the pair could not be allocated (then it is not kept).
 */
int waiting_note(struct waiting_table *t, const struct sample *s, unsigned src,
                 int64_t now_ms);

/* Set a pair as a saved table had it (waitstate.c): s a waiting start or
 * ok end with an owner, its latest line at at_ms (monotonic), no other
 * pair touched, the source none.  0, or -1 (not such a line, ENOMEM). */
int waiting_restore(struct waiting_table *t, const struct sample *s, int64_t at_ms);

/* Acquires (a waiting end, ok) ignored because their holding's release
 * (a 6-field hold of the same owner, key and holder id) came first, within
 * 5 s: reordered datagrams, which would leave the owner a holder for good. */
uint64_t waiting_late_acquires(const struct waiting_table *t);
size_t waiting_count(const struct waiting_table *t);         /* pairs held */
uint64_t waiting_changes(const struct waiting_table *t);     /* pairs set or removed,
                                                              * ever: a save's due */
size_t waiting_waiting(const struct waiting_table *t);       /* of which waiting */
uint64_t waiting_evicted(const struct waiting_table *t);     /* pairs evicted */
uint64_t waiting_superseded(const struct waiting_table *t);  /* starts ended by an
                                                              * acquire of their owner */
uint64_t waiting_sources_reused(const struct waiting_table *t); /* numbers given
                                                                 * to a new address */
uint64_t waiting_sources_shared(const struct waiting_table *t); /* calls answered
                                                                 * WAITING_SOURCE_SHARED */
size_t waiting_bytes(const struct waiting_table *t);         /* memory held */

/* Call fn on each pair, least recently updated first. */
void waiting_each(const struct waiting_table *t,
                  void (*fn)(const struct waiting_pair *p, void *arg), void *arg);

#endif
