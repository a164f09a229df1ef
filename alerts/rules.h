/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rules.h - the alert rules: which alerts hold, judged from the newest
 * snapshots and the wait statistics (SPEC "Alerts").  The kinds, their
 * conditions and labels are the rows of ALERT_KINDS (alerts/alert_kinds.h).
 *
 * The lock states themselves (leak_grace, max_hold, max_reentrancy) are
 * judged by the scan; the rules only read them.  Per-lock alerts come from
 * the locks a snapshot keeps in detail, the worst SNAP_RETAIN_MAX of a
 * target: past that many bad locks, the worst ones alert and the class
 * gauges still count them all.  A target's per-lock alerts are re-judged
 * only when it has a new snapshot (every scan_interval); until then, and
 * while its scans fail, they keep their state, since nothing new is known.
 *
 * Label values are valid UTF-8: keys and class names are sanitised the way
 * metric labels are, and a key longer than RULES_KEY_LABEL_MAX bytes is cut
 * and ends in "…#<hash of the whole key>", the same text as the key label
 * of lockwatch_lock_offender_info.
 *
 * Pure: no locks, no I/O, no clock.
 */
#ifndef LOCKWATCH_RULES_H
#define LOCKWATCH_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alerts/alertset.h"
#include "conf/config.h"
#include "collectors/events/events.h"
#include "collectors/graph/graph.h"
#include "collectors/locks/redlock.h"
#include "collectors/locks/snapshot.h"
#include "collectors/waits/classtrend.h"
#include "collectors/waits/waitstats.h"

#define RULES_KEY_LABEL_MAX     200
#define RULES_HOLDER_TEXT_MAX   128
#define RULES_SUMMARY_MAX       512
#define RULES_DESCRIPTION_MAX   2048
/* LockLostAtFailover fires this long after the loss it names (the
 * shipped Prometheus rule looks back as far: increase(...[15m])) */
#define RULES_LOST_FIRING_MS    (15 * 60 * 1000)

struct rules_target {
    const char *name;
    const struct snapshot *snap;    /* newest; NULL before the first scan */
    bool fresh;                     /* snap was not evaluated before */
};

/*
 * Observe every alert that holds into set, which the caller has begun
 * (alertset_begin) and will end, under the [rules] p (the config's; its
 * lock-state rules are only quoted in texts).  w may be NULL (no sample
 * ingest).  tv, the class trends (leases, counts), may be NULL too.
 * now_ms is the Unix time the texts measure ages against.
 */
void rules_eval(struct alertset *set, const struct rules_conf *p,
                const struct rules_target *targets, size_t ntargets,
                const struct waitstats_view *w, const struct classtrend_view *tv,
                int64_t now_ms);

/* A [redlock] group and its newest comparison (NULL before the first). */
struct rules_group {
    const char *name;
    const struct redlock_report *report;
};

/*
 * Observe the GROUP kinds (LockRedlockSplit) for every inconsistent key
 * a group's report details (at most REDLOCK_ISSUES_MAX a group).  A group
 * not judged yet (fewer than a quorum of its members scanned) keeps its
 * alerts' state.
 */
void rules_eval_redlock(struct alertset *set, const struct rules_group *groups,
                        size_t ngroups, int64_t now_ms);

/*
 * Observe the wait-for graph's kinds: LockDeadlock for every deadlock the
 * report holds ({target = its target or "*", key = its keys in cycle
 * order joined by " -> ", as a key label, a key's '>' and '\\' escaped
 * by a '\\'}), LockOrderInversion for every inversion ({class = its two
 * classes, "A,B", a class's ',' and '\\' escaped}): two never share a
 * label.  r NULL: none yet.
 */
void rules_eval_graph(struct alertset *set, const struct graph_report *r, int64_t now_ms);

/*
 * Observe the EVENT kinds (LockLeaseLost, LockLeaseOverrun) for event e
 * of the ring when it was pushed within RULES_EVENT_FIRING_MS of now_ms:
 * the caller walks the ring (alerts.c), oldest first, so a lock's newest
 * event writes its texts.  Its labels are the event's target (none when
 * the event has none), class and key.  at_failover: e is a holder's own
 * `lost` line (lease_lost) for the holding of a lock a change of server
 * lost (collectors/lease/lostat.h), sent before or after the change was
 * seen: one loss, which LockLostAtFailover tells; it raises no
 * LockLeaseLost, and one it raised before the change was seen is
 * released (resolved unless another event of its labels holds it).
 */
#define RULES_EVENT_FIRING_MS   (15 * 60 * 1000)
void rules_eval_event(struct alertset *set, const struct rules_conf *p, const struct event *e,
                      bool at_failover, int64_t now_ms);

/*
 * A key as an alert's key label: sanitised UTF-8, cut as described above.
 * Returns a malloc'd string, NULL on ENOMEM.
 */
char *rules_key_label(const char *key, size_t keylen);

#endif
