/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tracker.h - first-seen time per (key, holder) across scans.
 *
 * A watchdog renews a lock's TTL without changing its holder, so the age
 * of a holder cannot be read from Redis; it has to be remembered from scan
 * to scan.  The tracker keeps, per key, a hash of the holder it times
 * (the oldest one still there, for shared read locks), when that holder
 * was first seen, since when the key has had no TTL, and the pass that
 * last saw it.  Keys are remembered by a 64-bit hash only
 * (64 bytes an entry, open addressing), so a million locks cost 64-128 MB
 * and the key bytes live only in the snapshot.  Entries not seen in
 * a completed pass are dropped at its end.
 *
 * A holder id may take a lock again (Redisson's "<uuid>:<thread>", a
 * constant token): between two reads that looks like a renewal.  So each
 * entry also keeps since when the holding is proven unbroken: its first
 * sight, or the last read that found its lease set again or its TTL given
 * or lost (track_result.settled_ms: what a guarded release's age may
 * count; the first sight stays the lock's age for alerts).
 *
 * Leases (collectors/lease/lease.h): each entry also keeps when its
 * holder's lease runs out as last read (the read's time plus PTTL), the
 * row of its (target, class) and whether the holder renewed it (that
 * time moved later by more than TRACKER_RENEW_SLACK_MS between two
 * reads).  A lease ends when the key is gone at a sweep, or held by
 * another holder at a visit, once that time has passed (gone before it:
 * released, not expired); the tracker's end function hears of it.  The
 * time is taken when the reply is handled, so it may run late by as long
 * as a busy agent took to get there: a key gone or taken within
 * TRACKER_END_SLACK_MS before it counts as expired too (a live holder of
 * a renewed lock renews a third of a lease ahead, never that close).  The
 * key and holder of a renewed lock are kept too (at most
 * TRACKER_NAMES_MAX locks at once, a key's first TRACKER_NAME_KEY_MAX
 * bytes), for the event that names them; past that an ending is reported
 * without names.
 *
 * A tracker belongs to one scanner thread; it has no lock of its own.
 */
#ifndef LOCKWATCH_TRACKER_H
#define LOCKWATCH_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/lease/lease.h"

#define TRACKER_RENEW_SLACK_MS  250     /* a later expiry by more: renewed */
#define TRACKER_END_SLACK_MS    250     /* gone or taken this close before
                                         * the expiry: it ran out */
#define TRACKER_NAMES_MAX       4096    /* renewed locks whose names are kept */
#define TRACKER_NAME_KEY_MAX    1025    /* key bytes kept (the event ring
                                         * keeps 1024 and marks a longer one cut) */
#define TRACKER_NAME_HOLDER_MAX 255     /* holder bytes kept */

struct tracker;

/* What a visit says about the lease, besides the holders. */
struct track_lease {
    int64_t expires_ms;         /* Unix ms the TTL runs out as read; 0: no TTL */
    int row;                    /* lease_row() of its target and class; -1 none */
    const char *key;            /* the key's bytes (kept if the lock is renewed) */
    size_t keylen;
    const char *holder;         /* holders[0]'s id bytes; NULL: none */
    size_t holderlen;
    int64_t at_ms;              /* Unix ms of the read: a lease that ran out
                                 * by then and whose holder changed ended */
    bool blind_before;          /* no pass saw every node before this one (the
                                 * agent just started): a holding first seen
                                 * now may be older than its first sight */
};

/* Told of every lease that ended (the tracker's thread; names valid
 * during the call only). */
typedef void tracker_end_fn(const struct lease_end *e);

struct track_result {
    int64_t first_seen_ms;      /* current holder set first seen */
    int64_t settled_ms;         /* the holding proven unbroken since
                                 * (>= first_seen_ms): its first sight, or
                                 * the last read that found its lease set
                                 * again (a renewal, or the same holder id
                                 * taking the lock again between two reads:
                                 * they look alike) or a TTL given or lost */
    int64_t nottl_since_ms;     /* 0 while the key has a TTL */
    int duplicate;              /* already visited in this pass */
    bool renewed;               /* the holder has renewed its lease */
    bool renewed_since_outage;  /* ... and again since tracker_outage() */
    bool seen_at_start;         /* first seen by a visit with blind_before:
                                 * its first sight is only a lower bound */
    int acquired;               /* a new key, or a new timed holder: the
                                 * lock was taken since the last sighting
                                 * (its first sight) */
};

/* end: told of leases that ended (NULL: nobody). */
struct tracker *tracker_new(tracker_end_fn *end);
void tracker_free(struct tracker *t);

/*
 * Record a sighting in pass `pass` at now_ms.  holders are hashes of the
 * current holders, in the order Redis keeps them: while the timed holder
 * is among them its clock runs on (a reader joining a read lock does not
 * make the lock young); otherwise holders[0] becomes the timed holder and
 * the clock restarts.  start_age_ms is how old the holder may already be
 * when first seen (OBJECT IDLETIME, or the
 * acquisition time the format encodes); it back-dates new entries and
 * holder changes.  has_ttl is PTTL >= 0.  ls (may be NULL: no lease
 * tracking) says when the TTL runs out: a later time than the last visit's
 * marks the lock renewed; a holder change after the last visit's time
 * ends the old holder's lease (told to the end function).  Returns -1 on
 * ENOMEM.
 */
int tracker_visit(struct tracker *t, uint64_t key_hash, const uint32_t *holders,
                  size_t nholders, uint32_t pass, int64_t now_ms, int64_t start_age_ms,
                  int has_ttl, const struct track_lease *ls, struct track_result *res);

/*
 * tracker_visit() of a key whose server started at born_ms having loaded
 * no data (collectors/scan/reborn.c; 0: not known so, as tracker_visit()):
 * no holding there is older than that start.  An entry first seen before
 * it is of a holding the server lost (it restarted empty since), not of
 * the one there now, even under the same holder: the clock restarts as
 * for a new holder (res->acquired; its start age back-dates it, never to
 * before born_ms), the holders of a shared lock too.  Not to born_ms
 * itself: the lock may have been taken any time since, and an age too
 * high fires false leak alerts and lets a guarded release take a fresh
 * lock, where one too low only delays an alert.
 */
int tracker_visit_born(struct tracker *t, uint64_t key_hash, const uint32_t *holders,
                       size_t nholders, uint32_t pass, int64_t now_ms, int64_t start_age_ms,
                       int64_t born_ms, int has_ttl, const struct track_lease *ls,
                       struct track_result *res);

/*
 * The current holder is known to have taken the lock at acquired_ms (from
 * a source read after the visit, such as the client registry): move its
 * first-seen time back to that if it is earlier, unless it is before
 * born_ms (tracker_visit_born(); 0: no bound): a claim older than an
 * empty server's start is not of the holding it has.  Returns 0 with the
 * times now in force in *res; -1 when the key is not tracked.
 */
int tracker_backdate(struct tracker *t, uint64_t key_hash, int64_t acquired_ms,
                     int64_t born_ms, struct track_result *res);

/*
 * Class places (CLASS_MAX a view): was key_hash's holding counted in the
 * class "other" when last seen, a bad lock (LOCK_BAD: its alert labelled
 * "other"), its timed holder still among holders?  Then it stays there
 * while the holding lasts, in scan and follow mode alike: a leak's alert,
 * whose class is a label, neither resolves nor fires again when a class
 * place frees up (a freshness trial).  tracker_note_other() says so after
 * each visit (a new holding: anew).
 */
bool tracker_in_other(const struct tracker *t, uint64_t key_hash, const uint32_t *holders,
                      size_t nholders);
void tracker_note_other(struct tracker *t, uint64_t key_hash, bool other);

/* Has the key already been visited in this pass?  (Cheap SCAN dedupe.) */
int tracker_seen(const struct tracker *t, uint64_t key_hash, uint32_t pass);

/* Was the key visited in this pass?  1 with the hash of the holder it
 * times (0: none named), else 0. */
int tracker_holder(const struct tracker *t, uint64_t key_hash, uint32_t pass,
                   uint32_t *holder_hash);

/* Drop every entry not visited in `pass`; those whose lease had run out
 * by now_ms (Unix) ended by expiring (told to the end function).  A lock
 * gone before its lease ran out was released, or lost at a failover,
 * restart or flush (collectors/scan/lost.c compares those after the
 * sweep, through tracker_holder()).  unknown_after_ms (Unix ms; 0: none):
 * the pass follows an outage whose first pass began then, in which the
 * reads that would have seen a renewal did not happen: a lease that ran
 * out at or after it may have been renewed and released unseen, and is
 * not told as an expiry, only counted (tracker_take_ends_unknown()); one
 * that ran out before it is judged as ever.  Returns entries kept. */
size_t tracker_sweep(struct tracker *t, uint32_t pass, int64_t now_ms, int64_t unknown_after_ms);

/* The scanner could not read some or all of the target (a pass that
 * failed, a cluster shard unread) or found its server changed: every
 * lock's TTL may drain unrenewed meanwhile, so none is taken for a
 * renewal low (snap_lock.renewed_since_outage) until its next renewal.
 * A walk of the table. */
void tracker_outage(struct tracker *t);

/* The locks sweeps found gone, their leases run out, whose end they could
 * not tell (unknown_after_ms), since the last call; zeroes the count. */
size_t tracker_take_ends_unknown(struct tracker *t);

/* Renewed locks whose names are kept now. */
size_t tracker_names(const struct tracker *t);

size_t tracker_count(const struct tracker *t);

#endif
