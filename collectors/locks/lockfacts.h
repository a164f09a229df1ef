/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockfacts.h - what every reader of a lock makes of it before the judge
 * (lockstate.h) sees it: its row of the format table and where that row
 * came from, its holders, whether it is a semaphore, the row its helper
 * keys give it, and which of the ages Redis and the value offer are facts.
 *
 * The agent's scanner (collectors/scan/record.c, helperkeys.c), follow
 * mode and lockctl (cli/inspect.c, cli/verdict.c) read keys in their own
 * ways, but from the bytes read on they must agree on what the lock is;
 * so the steps that turn a read into facts are here once, and every
 * difference between formats is a column of the row (formats.h), never a
 * name.  Pure functions: no I/O, no allocation, no clock.
 *
 * The rule (docs/formats.md "What is a fact"): a fact is shown as known
 * only when the data proves it; otherwise it is marked as a guess or left
 * out.  A format is "declared" (the target's format_patterns), "proven"
 * (a layout only that client writes) or "guessed" (a shape others write
 * too); a guessed format's time is not an age, and its release is plain
 * compare-and-delete.  OBJECT IDLETIME is an age only of an object that
 * is the key's own: never of a value Redis may share (lockfacts_idle_s()).
 * An age nothing proves is the agent's own first sight of the holder.
 */
#ifndef LOCKWATCH_LOCKFACTS_H
#define LOCKWATCH_LOCKFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/formats/formats.h"
#include "collectors/locks/lockstate.h"
#include "conf/config.h"

/* What the builder says about a read beside the view. */
struct lockfacts_src {
    enum fmt_source source;
    bool contradicts;           /* declared, but the value is not that
                                 * format: it keeps the row detection gives
                                 * it, and is flagged (counted and shown) */
    int64_t claimed_ms;         /* a time read from a guessed value: not an
                                 * age (view->acquired_ms is 0) unless
                                 * lockfacts_corroborate() believes it; 0
                                 * when there is none */
};

/*
 * Decode one key read from target t into *view and return its row.  A key
 * in t's format_patterns (the first glob that matches) is decoded as the
 * format declared there when the value is that format (source declared),
 * else by detection with src->contradicts set.  Detection is the table's
 * pick (formats_decode()); then, when that row proves nothing but a
 * fallback (FMT_PROVES_FALLBACK, "plain") and the key is in t's
 * semaphore_patterns, the semaphore row when the value is a count
 * (formats_semaphore(), source declared); then the holders past the read
 * cap (hlen: HLEN or ZCARD, -1 unknown) counted in holders_total.  A row
 * that proves a layout, claimed on a whole read, is proven; any other is
 * guessed, and its time moves from view->acquired_ms to src->claimed_ms.
 * src may be NULL.
 */
const struct lock_format *lockfacts_decode(const struct target_conf *t,
                                           const struct raw_lock *raw, long long hlen,
                                           struct lock_view *view, struct lockfacts_src *src);

/* The row the target declares for KEY (format_patterns), or NULL. */
const struct lock_format *lockfacts_declared(const struct target_conf *t, const char *key,
                                             size_t keylen);

/*
 * May a string value be one of the integer objects Redis shares between
 * keys?  Redis (object.c, OBJ_SHARED_INTEGERS = 10000) stores a value that
 * string2l() reads as 0..9999 - "0" or 1-4 digits without a leading zero
 * or sign - as one shared object, unless maxmemory is set with an LRU or
 * LFU policy at the time of the write: since the policy can change after
 * the write, any such value may be shared.
 */
bool lockfacts_value_shared(const struct raw_lock *raw);

/* OBJECT IDLETIME's idle_s (negative: unknown) when it is an age of this
 * key's value; -1 when the value may be shared (its idle time is every
 * key's with that value, up to the server's uptime). */
long long lockfacts_idle_s(const struct raw_lock *raw, long long idle_s);

/*
 * A claimed time (lockfacts_src.claimed_ms) believed as the holder's
 * acquisition: when the agent's first sight of the holder came after
 * blind_since_ms, the start of the last pass that saw the key without it
 * (0: the agent never looked before), the holder took the lock after
 * blind_since_ms, so a claim no older than that is corroborated.  Returns
 * the claim (at most now_ms), or 0 when it is not believed.
 */
int64_t lockfacts_corroborate(int64_t claimed_ms, int64_t blind_since_ms, int64_t now_ms);

/* Clocks of the holder and of the reader may differ by this much. */
#define LOCKFACTS_SKEW_MS   (60 * 1000)

/*
 * After lockfacts_decode(), read at now_ms: a time a value gives that is
 * later than now_ms + LOCKFACTS_SKEW_MS proves nothing (a clock far off, a
 * forged value): it is dropped, fact or claim, and the age is not known
 * from the value.  Returns whether one was dropped.
 */
bool lockfacts_drop_future(struct lock_view *view, struct lockfacts_src *src, int64_t now_ms);

/*
 * The judge's facts of a lock of row fmt (NULL: none known): the caller's
 * PTTL, holders, highest hold count, holder age and time without a TTL,
 * and the semaphore flag from fmt's semaphore column.
 */
void lockfacts_fill(struct lockstate_facts *f, const struct lock_format *fmt,
                    int64_t pttl_ms, size_t nholders, int64_t max_count, int64_t held_ms,
                    int64_t nottl_ms);

/*
 * The row a lock of row fmt becomes given its helper keys' kinds (a bit
 * set, formats_kin()); *ttl_optional (may be NULL) says that row lives
 * without a TTL by design (its semaphore column), so a LOCK_LEAKED judged
 * before it was known is to go.
 */
const struct lock_format *lockfacts_kin(const struct lock_format *fmt, unsigned helper_kinds,
                                        bool *ttl_optional);

#endif
