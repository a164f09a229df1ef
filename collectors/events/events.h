/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * events.h - the timeline of what locks lived through: one bounded ring of
 * recent lock events, shared by every layer that sees one (docs/events.md).
 *
 * An event is a fact about one lock (or one cycle of locks) that on-call
 * wants in order and after the fact: a lease lost while held, a renewed
 * lock that expired, a holder working past its lease, locks lost at a
 * failover, a deadlock, a lock-order inversion, a forced release.  The
 * kinds are one table, EVENT_KINDS below: a new kind is one row there
 * (its name is its `kind` in /api/v1/events and `lockctl events`).
 *
 * The ring keeps the newest EVENTS_MAX events; pushing into a full ring
 * drops the oldest, and events_dropped() counts them.  Every event gets a
 * sequence number, 1 for the first, one more for each, never reused, so a
 * reader that remembers the last number it saw reads only what is new
 * (events_each(after, ...)) and knows from a gap that it missed some.
 *
 * Text fields are copied and bounded: a key of up to EVENT_KEY_MAX bytes
 * (longer ones are cut, key_cut says so), a holder of up to
 * EVENT_HOLDER_MAX (holder_cut), the other strings to their field sizes.
 * Keys and holders are bytes with a length, kept as given whatever they
 * hold (a NUL, invalid UTF-8: a client chose them); renderers escape them.
 *
 * Thread safety: one mutex guards the ring; events_each() holds it while
 * it calls fn, so fn must not push.  The ring is process-wide: the
 * agent's collectors, alerts and HTTP share one; events_reset() empties
 * it, for tests.
 */
#ifndef LOCKWATCH_EVENTS_H
#define LOCKWATCH_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EVENTS_MAX      1024    /* events kept */
#define EVENT_KEY_MAX   1024    /* key bytes kept */
#define EVENT_TEXT_MAX  1024    /* detail bytes kept */
#define EVENT_HOLDER_MAX 256    /* holder bytes kept */

/* X(id, name, severity): severity is the alert severity words of
 * docs/alerts.md ("critical", "warning", "info"). */
#define EVENT_KINDS(X) \
    X(EVENT_LEASE_LOST,       "lease_lost",       "warning")  \
    X(EVENT_EXPIRED_RENEWED,  "expired_renewed",  "warning")  \
    X(EVENT_LEASE_OVERRUN,    "lease_overrun",    "critical") \
    X(EVENT_LOST_AT_FAILOVER, "lost_at_failover", "critical") \
    X(EVENT_DEADLOCK,         "deadlock",         "critical") \
    X(EVENT_INVERSION,        "inversion",        "warning")  \
    X(EVENT_FORCE_RELEASE,    "force_release",    "info")

enum event_kind {
#define EVENT_ENUM(id, name, sev) id,
    EVENT_KINDS(EVENT_ENUM)
#undef EVENT_ENUM
    EVENT_KIND_COUNT
};

/* What a pusher gives: strings NUL-terminated (NULL or "" for none), key
 * and holder as bytes (keylen / holderlen 0: none).  seconds: the event's
 * duration (held, overrun), < 0 for none. */
struct event_in {
    enum event_kind kind;
    const char *target;
    const char *key;
    size_t keylen;
    const char *holder;         /* holderlen bytes: a Redis holder id or an owner */
    size_t holderlen;
    const char *klass;
    const char *detail;         /* one sentence for humans */
    double seconds;
    int64_t at_ms;              /* Unix ms it happened; 0: now, as pushed */
};

/* One event as events_each() shows it; valid during the call only. */
struct event {
    uint64_t seq;
    int64_t at_ms;              /* Unix ms when pushed */
    enum event_kind kind;
    char target[128];
    char holder[EVENT_HOLDER_MAX];      /* holderlen bytes, not NUL-terminated */
    size_t holderlen;                   /* 0: none */
    bool holder_cut;                    /* holder was longer than EVENT_HOLDER_MAX */
    char klass[128];
    const char *key;            /* keylen bytes, not NUL-terminated */
    size_t keylen;
    bool key_cut;               /* key was longer than EVENT_KEY_MAX */
    uint64_t key_hash;          /* keyhash() of the whole key as pushed */
    uint32_t holder_hash;       /* (uint32_t)keyhash() of the whole holder;
                                 * 0: none (lease.h's pair hashes) */
    const char *detail;         /* NUL-terminated, maybe "" */
    double seconds;             /* < 0: none */
};

/* Push one event; returns its sequence number, 0 when it could not be
 * allocated (then events_dropped() counts it too). */
uint64_t events_push(const struct event_in *in);

/* Call fn on every kept event with seq > after, oldest first, at most max
 * of them (0: no limit); returns how many fn saw. */
size_t events_each(uint64_t after, size_t max,
                   void (*fn)(const struct event *e, void *arg), void *arg);

uint64_t events_last_seq(void);         /* newest seq, 0 for none yet */
uint64_t events_total(enum event_kind k); /* pushed since start, per kind */
uint64_t events_dropped(void);          /* pushed out of a full ring, or lost to ENOMEM */
size_t events_kept(void);

const char *event_kind_name(enum event_kind k);
const char *event_kind_severity(enum event_kind k);
/* The kind named name (of namelen bytes); -1 when none is. */
int event_kind_of(const char *name, size_t namelen);

/* Empty the ring and zero every count (tests). */
void events_reset(void);

#endif
