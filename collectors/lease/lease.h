/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lease.h - leases that ended while held: the expirations the scanner and
 * follow mode see, and the holders that report after their lease ended
 * (docs/alerts.md "LockLeaseLost", "LockLeaseOverrun").
 *
 * Three signals meet here:
 *
 *  - the scanner (scan mode, and follow mode's snapshots) tells
 *    lease_expired() when a lock's lease ran out: the key was gone, or
 *    held by another holder, once the expiry its last read promised had
 *    passed.  Each is counted per (target, class, renewed): renewed when
 *    the holder's TTL went back up between two reads (a watchdog or an
 *    extension renewed it), so an expiry of a renewed lock means the
 *    renewals stopped without an unlock.  Such an expiry is pushed to the
 *    event ring as EVENT_EXPIRED_RENEWED (collectors/events/events.h);
 *  - every expiry whose holder is known (by its hash) is remembered for
 *    LEASE_RECENT_MS in a table of at most LEASE_RECENT_MAX entries (the
 *    oldest is dropped to make room);
 *  - a `hold` or `lost` line of that holder on that key that arrives
 *    while the entry is remembered (lease_overrun()) is the
 *    holder still working after its lease ended: the overrun is the
 *    line's arrival (a `hold`'s: the sooner of that and its acquire's
 *    arrival plus its hold) minus the expiry; the entry is used up (one
 *    overrun per lease) and EVENT_LEASE_OVERRUN is pushed.  A `hold` line
 *    within LEASE_HOLD_SLACK_MS of the expiry is a release the agent
 *    cannot tell from one after it, and is none.  A `lost` line
 *    (lease_lost()) pushes EVENT_LEASE_LOST: the holder itself says its
 *    lease ended; one that no expiry matched and whose own overrun is
 *    above 0 pushes EVENT_LEASE_OVERRUN too (lease_overrun_reported()).
 *
 * Holders and keys are matched by common/keyhash.h's hash of their bytes
 * (the tracker's key hash, and its 32-bit holder hash), so the table
 * keeps no names; the names in events come from the caller.
 *
 * The (target, class) rows of lockwatch_lock_expirations_total are at
 * most LEASE_ROWS_MAX; a class that finds the table full counts in its
 * target's "other" row (room for which is kept), and past that in
 * overflow (lease_view's rows_overflow).
 *
 * Process-wide, like the event ring: one mutex guards it; it pushes to
 * the event ring under it (the ring's mutex is taken after this one).
 * lease_reset() empties it, for tests.
 */
#ifndef LOCKWATCH_LEASE_H
#define LOCKWATCH_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEASE_ROWS_MAX      2048    /* (target, class) rows */
#define LEASE_ROWS_OTHER    64      /* of which kept for targets' "other" rows */
#define LEASE_RECENT_MAX    4096    /* expiries remembered for a match */
#define LEASE_RECENT_MS     (10 * 60 * 1000)    /* and for how long */
/* A `hold` line that arrives less than this after the lease's end as the
 * agent timed it proves no overrun: a key gone up to TRACKER_END_SLACK_MS
 * before that end counts as run out, and a reporter sends a release's line
 * up to 300 ms after it (docs/reporters.md "Batching"), so the release may
 * well have come first; a release that found its lock gone says so in a
 * `lost` line, which matches at any time. */
#define LEASE_HOLD_SLACK_MS 1000
#define LEASE_TARGET_MAX    128     /* bytes of a target name kept */
#define LEASE_CLASS_MAX     128     /* bytes of a class name kept */

/*
 * The row of (target, klass): an id >= 0 to hand back in lease_expired(),
 * stable for the process's life.  A new class when the table has only the
 * reserve left gets the target's "other" row; -1 when even that cannot be
 * made (the expiry is then counted in rows_overflow only).
 */
int lease_row(const char *target, const char *klass);

/* The hash of a (key hash, holder hash) pair, never 0: the recent table's
 * key, and the tracker's for a shared lock's holders. */
uint64_t lease_pair_hash(uint64_t key_hash, uint32_t holder_hash);

/* One lease that ran out. */
struct lease_end {
    int row;                    /* lease_row(), or -1 */
    uint64_t key_hash;          /* keyhash() of the key's bytes */
    uint32_t holder_hash;       /* (uint32_t)keyhash() of the holder id; 0: none */
    const char *key;            /* the key's bytes, for the event; NULL: not known */
    size_t keylen;
    const char *holder;         /* the holder id, for the event; NULL: not known */
    size_t holderlen;
    bool renewed;               /* its TTL went back up while this holder held it */
    int64_t first_seen_ms;      /* Unix ms the holder was first seen */
    int64_t last_seen_ms;       /* Unix ms of the last read that found it
                                 * held; 0: not known (first_seen_ms) */
    int64_t expires_ms;         /* Unix ms the lease ran out */
};

/* Count it, remember it for lease_overrun(), and push EVENT_EXPIRED_RENEWED
 * when it was renewed; unless its holder reported releasing the key after
 * the last read that found it held (e->last_seen_ms) and took it no more
 * (released.h): then it was no expiry, counted only in released_early.  A
 * release reported before that read was an earlier holding's (a holder id
 * that takes the key again at once, Redisson's <uuid>:<thread>, sends no
 * acquire line when it does not wait).  Never fails (memory is static). */
void lease_expired(const struct lease_end *e);

/* A line of a holder: key and holder as bytes; owner may be NULL. */
struct lease_line {
    const char *key;
    size_t keylen;
    const char *holder;
    size_t holderlen;
    const char *owner;
    size_t ownerlen;
    const char *verb;           /* "hold", "waiting", "lost": for the event's text */
    int64_t at_ms;              /* Unix ms it arrived */
    int64_t held_us;            /* a hold line's hold, us; 0: none */
};

/*
 * Did the agent see this holder's lease on this key run out (within
 * LEASE_RECENT_MS)?  Then *overrun_s is how long after the expiry the line
 * arrived (0 if it arrived before), or for a `hold` line how long after it
 * the holding ended: the arrival of its acquire (a waiting end or 7-field
 * wait, ok, with no hold line of the pair since: else it was an earlier
 * holding's, and this one sent none) plus the hold the line reports, when
 * that is earlier than the line's own arrival (a sender that stalled after
 * the release sends late; its acquire arrived after the acquire, so the
 * sum is never before the real release).  The entry is used up, the target and
 * the class of the key when it ran out are copied to target and klass
 * (LEASE_TARGET_MAX and LEASE_CLASS_MAX bytes; either may be NULL),
 * EVENT_LEASE_OVERRUN is pushed, and true is returned.  false, and
 * nothing written, when no expiry matches, or when a `hold` line's holding
 * ended (so reckoned) within LEASE_HOLD_SLACK_MS of it (the entry is used
 * up: that release ended the holding).
 */
bool lease_overrun(const struct lease_line *l, double *overrun_s, char *target, char *klass);

/* The holder took the key again (an acquire's `waiting ... ok`): a holder
 * id that stays the same from one acquire to the next (Redisson's
 * <id>:<thread>) starts a new holding, and the expiry remembered for the
 * last one is forgotten, so the new holding's release is no overrun; the
 * acquire's time is kept too (the last LEASE_RECENT_MAX pairs), so an
 * expiry the scanner records later but that ended before it is no
 * overrun either. */
void lease_forget(const struct lease_line *l);

/* A `lost` line whose own overrun (overrun_s > 0) stands for an expiry the
 * agent did not see: push EVENT_LEASE_OVERRUN, as lease_overrun() does for
 * one it saw (the overrun histogram has it either way). */
void lease_overrun_reported(const struct lease_line *l, double overrun_s, const char *target,
                            const char *klass);

/* A `lost` line: push EVENT_LEASE_LOST.  held_s: how long it had held it
 * (< 0 unknown); overrun_s: its overrun (< 0 unknown); expired: its reason
 * was `expired` (else `renewal`); target ("" or NULL: not known) and klass
 * name where it was held. */
void lease_lost(const struct lease_line *l, double held_s, double overrun_s, bool expired,
                const char *target, const char *klass);

/* What the metrics show. */
struct lease_row_view {
    char target[LEASE_TARGET_MAX];
    char klass[LEASE_CLASS_MAX];
    uint64_t expired[2];        /* [0] renewed="no", [1] renewed="yes" */
};

struct lease_view {
    struct lease_row_view *rows;    /* malloc'd; NULL when none */
    size_t nrows;
    uint64_t rows_overflow;     /* expiries counted in no row */
    size_t recent;              /* expiries remembered now */
    uint64_t overruns;          /* lines matched to an expiry since start */
    uint64_t released_early;    /* gone at the lease's end, but its holder
                                 * reported the release: no expiry */
};

/* Copy out the counters.  0, or -1 on ENOMEM (v then empty). */
int lease_view_take(struct lease_view *v);
void lease_view_release(struct lease_view *v);

/* Forget everything (tests). */
void lease_reset(void);

#endif
