/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waitstats.h - acquire-wait and hold-time statistics per lock class, fed
 * by the samples clients send (SPEC "Wait and hold samples").
 *
 * Per class, kept since start (never reset, not even by a reload):
 *  - a classic histogram of waits per outcome (ok / timeout / error) and
 *    one of hold times, with the fixed bounds in waitstats_bounds_us[]
 *    (the `le` labels of lockwatch_acquire_wait_seconds and
 *    lockwatch_hold_seconds), plus sum and count;
 *  - a sliding window of wait sketches (all outcomes together) over
 *    [rules] wait_window, for the P99 gauge and the LockWaitP99High rule;
 *  - a second one of hold times over the same window, for the hold
 *    P50 / P99 / P99.9 of /api/v1/classes and the lease rules
 *    (LockLeaseTooShort, LockLeaseTooLong: classtrend.h has the lease).
 *
 * Classes: a sample's key goes through class_of() with the [classes]
 * rules, the name is made valid UTF-8 (invalid bytes become U+FFFD, as
 * in every label) and interned in one class_set (CLASS_MAX places) shared
 * by every sender, which no sender can fill on its own:
 *  - the names of the [classes] rules are interned first, at start and at
 *    every reload, so a configured class always has its place;
 *  - classes no rule names (derived from keys) take at most
 *    WAITSTATS_DERIVED_MAX places, leaving room for rules a reload adds;
 *  - each source (sender address) may add at most WAITSTATS_SOURCE_CLASSES
 *    derived classes; WAITSTATS_SOURCES sources are tracked, later ones
 *    share one more budget.
 * A sample whose class a cap refuses counts as "other" (class_overflowed
 * says how many samples folded).  Only classes that had a sample are
 * reported.
 *
 * `waiting` and `lost` lines add to no class: they are counted per kind
 * (events[]) and `waiting` lines (and 6-field holds) kept per (owner, key)
 * in a waiting_table (waiting.h) for the wait-for graph.  Lines that name
 * their holder (6-field holds, waiting, lost) are also matched with the
 * leases the agent saw run out (collectors/lease/lease.h): a match, or a
 * lost line's own overrun, adds to the class's overrun histogram
 * (lockwatch_lease_overrun_seconds), and a lost line pushes a lease_lost
 * event.  Datagrams that
 * a key check refused are counted per reason (rejected[]) and nothing
 * else.
 *
 * Memory per class: a class's histograms and window frames cost about
 * 1.5 KiB, allocated at its first sample, and each window slice about
 * 4.4 KiB (sizeof(struct sketch)), allocated when a sample first lands in
 * it: at most waitstats_class_bytes_max() (~107 KiB with 12 slices in
 * each of the two windows) per class, ~22 MiB for all CLASS_MAX + 1
 * classes with every slice of both windows busy.
 * Slices are reused as the window turns, never freed before exit.
 *
 * Thread safety: one mutex guards everything.  The ingest thread holds it
 * for one datagram's samples at a time; a renderer holds it while it
 * copies the counters and merges each class's window into one sketch,
 * then renders from the copy (struct waitstats_view) without it.
 */
#ifndef LOCKWATCH_WAITSTATS_H
#define LOCKWATCH_WAITSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "collectors/locks/lockclass.h"
#include "collectors/waits/sampleauth.h"
#include "collectors/waits/samples.h"
#include "collectors/waits/sketch.h"
#include "collectors/waits/waiting.h"
#include "collectors/waits/waitstate.h"
#include "conf/config.h"

#define WAITSTATS_SLICES    12      /* window slices: 12 x 5 s for 1 m */
#define WAITSTATS_NBOUNDS   16      /* finite histogram bounds; +Inf is extra */
#define WAITSTATS_DERIVED_MAX   150 /* places for classes no rule names */
#define WAITSTATS_SOURCE_CLASSES 32 /* derived classes one source may add */
#define WAITSTATS_SOURCES       256 /* sources tracked; more share one budget */

/* The kinds of lockwatch_samples_events_total, in label order. */
enum waitstats_event {
    WS_EVENT_WAITING_START,
    WS_EVENT_WAITING_END,
    WS_EVENT_LOST_RENEWAL,
    WS_EVENT_LOST_EXPIRED,
    WS_EVENTS
};
extern const char *const waitstats_event_names[WS_EVENTS];

/* Where a datagram came from: the sender's address without its port
 * (ports are ephemeral; one host is one source). */
struct sample_source {
    int family;                 /* AF_INET, AF_INET6; 0: unknown */
    unsigned char addr[16];     /* AF_INET: the first 4 bytes */
};

/* The histogram bounds, in us and as the `le` label text (seconds). */
extern const uint64_t waitstats_bounds_us[WAITSTATS_NBOUNDS];
extern const char *const waitstats_bounds_le[WAITSTATS_NBOUNDS];

struct wait_hist {
    uint64_t bucket[WAITSTATS_NBOUNDS + 1];  /* per bound, NOT cumulative;
                                              * the last is "above 60 s" */
    uint64_t count;
    double sum_us;              /* double: 2048 hostile 2^53 us samples
                                 * would wrap a uint64 */
};

struct waitstats;

struct waitstats_class {
    const char *name;           /* into the view's storage */
    bool has_wait, has_hold;    /* any such sample since start */
    bool has_overrun;           /* any lease overrun since start */
    struct wait_hist wait[SAMPLE_OUTCOMES];
    struct wait_hist hold;
    struct wait_hist overrun;   /* lockwatch_lease_overrun_seconds */
    uint64_t window_count;      /* waits in the window now (all outcomes) */
    double window_p99_us;       /* when window_count > 0 */
    uint64_t hold_window_count; /* holds in the window now */
    double hold_p50_us, hold_p99_us, hold_p999_us;  /* when it is > 0 */
};

struct waitstats_view {
    struct waitstats_class *classes;    /* classes that had samples */
    size_t nclasses;
    uint64_t received;          /* lines, valid or not */
    uint64_t invalid;           /* malformed lines */
    uint64_t class_overflowed;  /* valid samples folded into "other" */
    uint64_t events[WS_EVENTS]; /* waiting and lost lines, per kind */
    bool keyed;                 /* [samples] key_file is set */
    uint64_t rejected[SAMPLEAUTH_REJECTS];  /* datagrams, per reason */
    uint64_t replay_unchecked;  /* signed datagrams taken unchecked for
                                 * replay (its cache full) */
    size_t waiting_now;         /* (owner, key) pairs waiting now */
    uint64_t waiting_evicted;   /* pairs evicted from the full table */
    uint64_t waiting_late_acquires; /* acquires after their own release */
    uint64_t waiting_superseded;    /* starts ended by a later acquire of
                                     * their owner (waiting.h) */
    uint64_t waiting_sources_shared;    /* datagrams whose sender shared a
                                         * source number (waiting.h) */
    size_t sources;             /* sources tracked for the class budget */
    size_t sources_over_budget; /* of which had a new class refused */
    uint64_t kernel_drops;      /* datagrams the kernel dropped (receive
                                 * buffer full), as the ingest reports it */
    uint64_t window_lost;       /* waits missing from the window (ENOMEM) */
    int64_t window_ms;
    size_t bytes;               /* memory held by the statistics */
    char *names;                /* storage for classes[].name */
};

/*
 * A new, empty set of statistics with a copy of cfg's [classes] rules and
 * its wait_window.  NULL on ENOMEM.  Free with waitstats_free (NULL fine).
 */
struct waitstats *waitstats_new(const struct config *cfg);
void waitstats_free(struct waitstats *ws);

/*
 * Take a reloaded config's [classes] rules and wait_window (a copy; cfg
 * is not kept), and whether it has a samples key (for the rejected
 * counters' presence).  Statistics are kept: the rules apply to samples
 * from now on (their class names are interned now, while there is room),
 * and a changed window restarts every class's window (the histograms
 * stay).  0, or -1 on ENOMEM with nothing changed.
 */
int waitstats_configure(struct waitstats *ws, const struct config *cfg);

/*
 * Count one datagram from src: n valid samples, lines = every non-empty
 * line of it (invalid ones included), invalid = the malformed ones.
 * now_ms is a monotonic clock reading (the window's time).  Never fails:
 * a class that cannot be allocated counts as "other".  src NULL: a sender
 * with no per-source budget (tests, benches); the ingest always passes
 * one.  waitstats_record is waitstats_record_from with src NULL.
 */
void waitstats_record_from(struct waitstats *ws, const struct sample_source *src,
                           const struct sample *s, size_t n,
                           uint64_t lines, uint64_t invalid, int64_t now_ms);
void waitstats_record(struct waitstats *ws, const struct sample *s, size_t n,
                      uint64_t lines, uint64_t invalid, int64_t now_ms);

/*
 * The [samples] key the ingest checks datagrams with, kept here because
 * waitstats_new/configure are where a (re)loaded config reaches the
 * samples side.  When the key changed since generation *gen (start with
 * 0), copy it to key (room for LW1_KEY_MAX bytes), set *keylen (0: no
 * key) and *gen, and return true; else false, nothing written.  One
 * mutex acquisition: call it once per batch, not per datagram.
 */
bool waitstats_samples_key(struct waitstats *ws, uint64_t *gen, void *key, size_t *keylen);

/* The waiting table as its state file has it (waitstate.h), under the
 * mutex; and read back from one (its text modified in place). */
void waitstats_waiting_render(struct waitstats *ws, struct strbuf *sb, int64_t mono_ms,
                              int64_t wall_ms);
int waitstats_waiting_restore(struct waitstats *ws, char *text, size_t len, int64_t mono_ms,
                              int64_t wall_ms, int64_t touched_ms, waitstate_keep_fn keep,
                              void *arg, struct waitstate_read *r, char *err, size_t errlen);
/* waiting_changes() of the table, under the mutex. */
uint64_t waitstats_waiting_changes(struct waitstats *ws);

/*
 * Call fn on each (owner, key) pair of the waiting table, least recently
 * updated first, with the mutex held (fn must be quick and must not call
 * back into ws).  For the wait-for graph (issue 26).
 */
void waitstats_waiting_each(struct waitstats *ws,
                            void (*fn)(const struct waiting_pair *p, void *arg), void *arg);

/* Count a datagram the key check rejected (and nothing else of it). */
void waitstats_reject(struct waitstats *ws, enum sampleauth_verdict why);

/* The ingest thread's running total of kernel-dropped datagrams. */
void waitstats_set_kernel_drops(struct waitstats *ws, uint64_t total);
/* The ingest thread's running total of signed datagrams taken without the
 * replay check, its cache full (collectors/waits/replay.h). */
void waitstats_set_replay_unchecked(struct waitstats *ws, uint64_t total);

/*
 * Copy out everything a renderer or a rule needs, window P99s computed at
 * now_ms (monotonic, same clock as record).  0, or -1 on ENOMEM (v is then
 * empty).  Release with waitstats_view_release.
 */
int waitstats_view(struct waitstats *ws, int64_t now_ms, struct waitstats_view *v);
void waitstats_view_release(struct waitstats_view *v);

/* The class of v named name, or NULL (v may be NULL). */
const struct waitstats_class *waitstats_view_class(const struct waitstats_view *v,
                                                   const char *name);

/* The most one class can cost, window slices included (bytes). */
size_t waitstats_class_bytes_max(void);

#endif
