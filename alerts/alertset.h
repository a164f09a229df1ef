/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alertset.h - the set of alert instances and their lifecycle.
 *
 * An alert instance is one alertname with one set of labels (alertname,
 * target, class, key, shard, node; absent labels are NULL).  Its identity is the
 * fingerprint of those labels, computed the way Alertmanager computes it
 * (labels sorted by name, FNV-1a 64 over name 0xff value 0xff), so the
 * fingerprint lockwatch shows is the one Alertmanager shows.
 *
 * Lifecycle, once per evaluation ("tick"):
 *
 *     alertset_begin()              a new generation
 *     alertset_observe() ...        every alert whose condition holds now
 *     alertset_keep_target() ...    targets whose per-lock alerts are not
 *                                   re-judged this tick (no new snapshot,
 *                                   or the scan failed: we do not know)
 *     alertset_end()                the transitions, as events
 *
 *   (absent) --observed--> FIRING --not observed--> RESOLVED --5 min--> (absent)
 *                            ^                           |
 *                            +-------- observed ---------+  (a new startsAt)
 *
 *   FIRING --another occurrence (alertset_occurred)--> FIRING  (a new startsAt)
 *
 * A FIRING alert yields EV_FIRING once, EV_REPEAT every repeat_interval
 * while it fires, and EV_RESOLVED when it ends.  An alert whose texts tell
 * of one discrete event (alertset_occurred: LockLostAtFailover's loss of
 * locks) and that is told of another while it fires starts a new episode
 * in place: a new startsAt and EV_FIRING again, at once, since no sink
 * has heard of that event (its labels, hence its fingerprint, stay: one
 * instance).  Resolved alerts are kept
 * ALERTSET_RESOLVED_KEEP_MS so that Alertmanager keeps hearing that they
 * ended (its API asks clients to re-send resolutions for a while); every
 * ALERTSET_REFRESH_MS all firing and kept resolved alerts are yielded as
 * EV_REFRESH, which only the Alertmanager sink takes.
 *
 * Bounds: at most ALERTSET_FIRING_MAX firing instances; an observation
 * that would make one more is suppressed and counted (alertset_suppressed)
 * for that tick.  At most ALERTSET_FIRING_MAX resolved ones are kept too;
 * past that a resolution is sent and then forgotten.
 *
 * Not thread-safe: the owner (alerts.c) serialises every call.  Pointers
 * to instances and the event array stay valid until the next
 * alertset_begin() or alertset_free().
 */
#ifndef LOCKWATCH_ALERTSET_H
#define LOCKWATCH_ALERTSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alerts/alert_kinds.h"

#define ALERTSET_FIRING_MAX       10000
#define ALERTSET_RESOLVED_KEEP_MS (5 * 60 * 1000)
#define ALERTSET_REFRESH_MS       (60 * 1000)

/* One per row of ALERT_KINDS (alerts/alert_kinds.h); ALERT_NAMES counts them. */
#define ALERT_KIND_ENUM(e, name, severity, scope, holds, texts) ALERT_##e,
enum alert_name { ALERT_KINDS(ALERT_KIND_ENUM) ALERT_NAMES };
#undef ALERT_KIND_ENUM

/* "LockLeaked", ... */
const char *alert_name_str(enum alert_name n);

/* An alert kind's severity (its row of ALERT_KINDS), worst first: the
 * enum's order is the order the status page lists them in. */
enum alert_severity { ALERT_SEVERITY_CRITICAL, ALERT_SEVERITY_WARNING, ALERT_SEVERITY_INFO,
                      ALERT_SEVERITIES };
enum alert_severity alert_severity_of(enum alert_name n);
/* "critical" / "warning" / "info": the severity label, as the Prometheus rules write it */
const char *alert_severity_str(enum alert_severity s);

enum alert_state { ALERT_FIRING, ALERT_RESOLVED };

/* What an observation names; strings are valid UTF-8, NULL when the
 * label does not apply. */
struct alert_labels {
    enum alert_name name;
    const char *target;
    const char *class_;
    const char *key;
    const char *shard;              /* a cluster shard's slot ranges */
    const char *node;               /* the address its shard was scanned on */
};

struct alert {
    uint64_t fp;
    enum alert_name name;
    char *target, *class_, *key;    /* NULL when absent */
    char *shard, *node;             /* NULL when absent */
    char *summary, *description;    /* never NULL */
    enum alert_state state;
    int64_t starts_ms;              /* Unix ms */
    int64_t ends_ms;                /* Unix ms, when resolved */
    int64_t last_sent_ms;           /* Unix ms a notice last carried it; 0 never */
    int64_t notified_mono;          /* last EV_FIRING / EV_REPEAT; 0: none
                                     * yet this episode */
    int64_t occurrence;             /* the event its texts tell of
                                     * (alertset_occurred); 0: none */
    int64_t resolved_mono;
    uint64_t seen;                  /* generation it was last observed in */
    int64_t hold_until_ms;          /* Unix ms: firing until then though not
                                     * observed (alertset_hold); 0: none */
    uint64_t event_gen;             /* generation of its last event that the
                                     * refresh's sinks get (not a repeat) */
    bool dead;                      /* to be freed at the next begin */
};

enum alert_event_kind {
    EV_FIRING,                  /* started firing */
    EV_REPEAT,                  /* still firing, repeat_interval passed */
    EV_RESOLVED,                /* stopped firing */
    EV_REFRESH,                 /* periodic re-post (Alertmanager) */
    EV_KINDS
};

struct alert_event {
    enum alert_event_kind kind;
    struct alert *alert;
};

struct alertset;

/* NULL on ENOMEM.  alertset_free(NULL) is fine. */
struct alertset *alertset_new(void);
void alertset_free(struct alertset *set);

/* Start a tick at now_ms (Unix) / mono_ms (monotonic). */
void alertset_begin(struct alertset *set, int64_t now_ms, int64_t mono_ms);

/*
 * The alert with these labels holds now.  Returns its instance (new,
 * re-fired or still firing) so the caller can set its annotations with
 * alert_annotate(), or NULL when it was suppressed by the cap or memory
 * ran out.
 */
struct alert *alertset_observe(struct alertset *set, const struct alert_labels *l);

/* Keep a firing alert firing until until_ms (Unix) even in ticks that do
 * not observe it: an EVENT kind's alert holds for RULES_EVENT_FIRING_MS
 * after its newest event, whether or not the event is still in the
 * timeline's ring (a burst of events pushes it out). */
void alertset_hold(struct alert *a, int64_t until_ms);

/* The firing or resolved alert with these labels, or NULL; and a's hold
 * dropped (alertset_hold): it resolves at this tick's end unless observed
 * in it. */
struct alert *alertset_find(struct alertset *set, const struct alert_labels *l);
void alertset_release(struct alert *a);
/* alertset_release() every alert whose target label is target (a target
 * a reload removed: its event alerts' holds end with it). */
void alertset_release_target(struct alertset *set, const char *target);

/*
 * The alert a (just observed) tells of one discrete event, named by id
 * (nonzero; the same id for the same event every tick).  When a fires,
 * was already notified and told of another id, the new event is news: a
 * starts a new episode (starts_ms = this tick, EV_FIRING at
 * alertset_end, repeats counted from then) under the same labels.  The
 * first id it is told of, or one told before its first notice, only
 * records the id.
 */
void alertset_occurred(struct alertset *set, struct alert *a, int64_t id);

/* Replace an instance's annotations (copied).  -1 on ENOMEM (the old
 * ones stay). */
int alert_annotate(struct alert *a, const char *summary, const char *description);

/* n alerts whose condition holds were not observed (their locks are
 * counted but not kept in detail): counted with those past the cap. */
void alertset_suppress(struct alertset *set, size_t n);

/* Alerts carrying this target label and a key or a shard label (per-lock
 * and per-shard alerts) keep their state this tick even if not observed.  The string must stay
 * valid until alertset_end(). */
void alertset_keep_target(struct alertset *set, const char *target);

/*
 * End the tick: resolve what was not observed, and list the events.
 * repeat_ms is repeat_interval; refresh says whether EV_REFRESH events are
 * wanted at all (an Alertmanager sink exists).  *ev points to an array
 * owned by the set.  -1 on ENOMEM (states are still updated; events of
 * this tick may be missing).
 */
int alertset_end(struct alertset *set, int64_t repeat_ms, bool refresh,
                 const struct alert_event **ev, size_t *nev);

/* Did the last alertset_end() re-post (EV_REFRESH) what fires: a tick of
 * the refresh schedule? */
bool alertset_refreshed(const struct alertset *set);

/* Firing instances per alertname, and observations suppressed by the cap
 * in the last tick. */
void alertset_counts(const struct alertset *set, size_t firing[ALERT_NAMES],
                     size_t *suppressed);

/* Iterate over the live instances (any state): i from 0 until NULL. */
const struct alert *alertset_at(const struct alertset *set, size_t i);

/* After alertset_end(): the firing instances that started at or after
 * since_ms (Unix) and had no EV_FIRING or EV_REPEAT this tick (what an
 * agent that starts to speak says again), in a malloc'd array of *n; NULL
 * with *n 0 when there are none, NULL with *n > 0 on ENOMEM. */
struct alert **alertset_unnotified(struct alertset *set, int64_t since_ms, size_t *n);

/* After alertset_end(): the resolved instances still kept that ended at
 * or after since_ms (Unix) and not this tick (their EV_RESOLVED was just
 * yielded): the resolutions an agent that starts to speak says again, as
 * alertset_unnotified(). */
struct alert **alertset_resolved_since(struct alertset *set, int64_t since_ms, size_t *n);

/* Record that a notice carrying a was handed to the sinks at now_ms. */
void alert_mark_sent(struct alert *a, int64_t now_ms);

/* The Alertmanager fingerprint of a label set. */
uint64_t alert_fingerprint(const struct alert_labels *l);

#endif
