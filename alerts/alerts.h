/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerts.h - the agent's alerting: the alert set, the rules' settings and
 * the notifier with its sinks, behind one handle.
 *
 * Data flows one way.  Once a second the agent's main thread hands
 * alerts_tick() the newest snapshot of each target and a copy of the wait
 * statistics; the rules judge them into the alert set, the set's events
 * are rendered per sink and queued, and the notifier thread sends them.
 * Nothing here runs on a scanner thread, and nothing here waits for the
 * network: a dead sink costs its own queue, never a scan or a tick.
 *
 * The handle lives as long as the agent.  A reload (alerts_configure)
 * takes the new [rules] and [webhook] settings and rebuilds the sinks;
 * the alert set is kept, so an alert that fires before the reload is
 * still the same firing alert after it (no second "new" notice).
 *
 * Thread safety: one mutex guards the set and the settings; the tick,
 * alerts_configure and the readers (alerts_render_json, alerts_stats) may
 * run on different threads.
 */
#ifndef LOCKWATCH_ALERTS_H
#define LOCKWATCH_ALERTS_H

#include <stddef.h>
#include <stdint.h>

#include "alerts/alertset.h"
#include "alerts/notifier.h"
#include "alerts/rules.h"
#include "conf/config.h"

#define ALERTS_FLUSH_MS 5000    /* last chance for queued notices at exit */

struct alerts;

/* Once per process around everything else (libcurl's global state). */
int alerts_global_init(void);
void alerts_global_cleanup(void);

/* Start alerting with cfg's settings (copied; cfg is not kept).  NULL on
 * failure (errno set). */
struct alerts *alerts_new(const struct config *cfg);

/* Take a reloaded config's settings and sinks; the alert set is kept.
 * 0, or -1 on ENOMEM with the previous sinks kept. */
int alerts_configure(struct alerts *a, const struct config *cfg);

/*
 * One evaluation.  targets[i].name and .snap describe every configured
 * target (fresh is computed here); groups[] every [redlock] group; w may
 * be NULL; graph is the wait-for graph's newest report (NULL: none, and
 * its alerts keep their state).  now_ms is Unix time.
 */
void alerts_tick(struct alerts *a, struct rules_target *targets, size_t ntargets,
                 const struct rules_group *groups, size_t ngroups,
                 const struct waitstats_view *w, const struct classtrend_view *tv,
                 const struct graph_report *graph,
                 int64_t now_ms);

/* {"alerts": [...firing...], "total": n, "suppressed": k}; malloc'd.
 * 0 / -1 (ENOMEM). */
int alerts_render_json(struct alerts *a, char **body, size_t *len);

struct alerts_stats {
    size_t firing[ALERT_NAMES];
    size_t suppressed;          /* would fire, past the cap (last tick) */
    uint64_t events_unjudged;   /* timeline events gone before a tick judged them */
    struct notifier_stats *sinks;
    size_t nsinks;
};
int alerts_stats(struct alerts *a, struct alerts_stats *st);
void alerts_stats_release(struct alerts_stats *st);

/* Flush for up to ALERTS_FLUSH_MS and free everything.  NULL is fine. */
void alerts_free(struct alerts *a);

/*
 * Replicas electing a leader (agent/leader.h): fence(arg) is this agent's
 * fencing token while it leads, < 0 while no replica can lead (it speaks
 * unfenced), else 0.  From now on the sinks whose format is leader_only
 * (generic, slack) get notices only while this agent leads (or speaks
 * unfenced), each with its term's fence in the body and the
 * X-Lockwatch-Fence header, and an attempt that starts after the term
 * ended is dropped unsent, but for a resolution made less than grace_ms
 * (the lease) before (notifier_set_gate).  When this agent starts to
 * speak, it says again, to those sinks, the firing alerts that started at
 * or after quiet(arg) (Unix ms) and the resolutions made since: since
 * then no leader may have said them.  NULL: no election.
 */
typedef int64_t (*alerts_quiet_fn)(void *arg);
void alerts_set_leader(struct alerts *a, notifier_fence_fn fence, alerts_quiet_fn quiet,
                       void *arg, int64_t grace_ms);

#endif
