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
 * (32 bytes an entry, open addressing), so a million locks cost 32-64 MB
 * and the key bytes live only in the snapshot.  Entries not seen in
 * a completed pass are dropped at its end.
 *
 * A tracker belongs to one scanner thread; it has no lock of its own.
 */
#ifndef LOCKWATCH_TRACKER_H
#define LOCKWATCH_TRACKER_H

#include <stddef.h>
#include <stdint.h>

struct tracker;

struct track_result {
    int64_t first_seen_ms;      /* current holder set first seen */
    int64_t nottl_since_ms;     /* 0 while the key has a TTL */
    int duplicate;              /* already visited in this pass */
    int acquired;               /* a new key, or a new timed holder: the
                                 * lock was taken since the last sighting
                                 * (its first sight) */
};

struct tracker *tracker_new(void);
void tracker_free(struct tracker *t);

/*
 * Record a sighting in pass `pass` at now_ms.  holders are hashes of the
 * current holders, in the order Redis keeps them: while the timed holder
 * is among them its clock runs on (a reader joining a read lock does not
 * make the lock young); otherwise holders[0] becomes the timed holder and
 * the clock restarts.  start_age_ms is how old the holder may already be
 * when first seen (OBJECT IDLETIME, or the
 * acquisition time the format encodes); it back-dates new entries and
 * holder changes.  has_ttl is PTTL >= 0.  Returns -1 on ENOMEM.
 */
int tracker_visit(struct tracker *t, uint64_t key_hash, const uint32_t *holders,
                  size_t nholders, uint32_t pass, int64_t now_ms, int64_t start_age_ms,
                  int has_ttl, struct track_result *res);

/*
 * The current holder is known to have taken the lock at acquired_ms (from
 * a source read after the visit, such as the client registry): move its
 * first-seen time back to that if it is earlier.  Returns 0 with the
 * times now in force in *res; -1 when the key is not tracked.
 */
int tracker_backdate(struct tracker *t, uint64_t key_hash, int64_t acquired_ms,
                     struct track_result *res);

/* Has the key already been visited in this pass?  (Cheap SCAN dedupe.) */
int tracker_seen(const struct tracker *t, uint64_t key_hash, uint32_t pass);

/* Was the key visited in this pass?  1 with the hash of the holder it
 * times (0: none named), else 0. */
int tracker_holder(const struct tracker *t, uint64_t key_hash, uint32_t pass,
                   uint32_t *holder_hash);

/* Drop every entry not visited in `pass`.  Returns entries kept. */
size_t tracker_sweep(struct tracker *t, uint32_t pass);

size_t tracker_count(const struct tracker *t);

#endif
