/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * groups.h - the agent's [redlock] groups: each one compares the newest
 * snapshots of its member targets (collectors/locks/redlock.h) and
 * publishes the report the way a target publishes a snapshot.
 *
 * A group never owns its members.  It reads each one through a struct
 * group_member, the member target's name, mutex and published snapshot,
 * all of them agent.c's; the group's own mutex guards its state (since
 * when keys are under quorum) and its report, so two members finishing a
 * scan at once compare in turn.  Everything here is the agent's internal
 * business: only agent.c calls it.
 */
#ifndef LOCKWATCH_GROUPS_H
#define LOCKWATCH_GROUPS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent/agent.h"

/* A target as a group reads it: the snapshot *snap, published under *mu.
 * The pointers stay valid while the group is built over the target. */
struct group_member {
    const char *name;
    pthread_mutex_t *mu;
    struct snapshot *const *snap;
};

/* Is target a member of some [redlock] group of cfg?  (Its scan then
 * fills the snapshot's Redlock map.) */
bool groups_has_member(const struct config *cfg, const char *target);

/*
 * Build the groups of cfg over the candidate members targets[0..ntargets)
 * (a group's member that is not among them is left out), into *out, a
 * list of cfg->nredlocks.  A group of old[0..nold) whose name stays is
 * reused, with its state and last report; every other old group is freed
 * and so is old itself, on failure too.  No comparison may run meanwhile.
 * The groups read cfg's [rules] and [classes] when they compare: cfg must
 * outlive every comparison until the next groups_build() (a reload stops
 * the targets, which compare, before it frees the old config).
 * 0, or -1 on ENOMEM with *out NULL.
 */
int groups_build(const struct config *cfg, const struct group_member *targets,
                 size_t ntargets, struct group_rt **old, size_t nold,
                 struct group_rt ***out);
/* Free a list from groups_build(); NULL is fine. */
void groups_free(struct group_rt **groups, size_t n);

/* Is the target named target a member of g? */
bool group_has_member(const struct group_rt *g, const char *target);

/* Compare g on its members' newest snapshots now and publish the report;
 * logs when the group turns inconsistent or agrees again.  On ENOMEM the
 * comparison is skipped, with a word in the log. */
void group_compare(struct group_rt *g);

/* The group's name and a reference to its newest report, for a view.
 * 0, or -1 on ENOMEM (out unchanged). */
int group_view(struct group_rt *g, struct view_group *out);

/* --once: compare each group of cfg once on the snapshots of v into
 * v->groups (splits only: under quorum needs time).  0, or -1 on ENOMEM
 * (what was filled in is v's, for view_release). */
int groups_compare_once(const struct config *cfg, struct view *v);

#endif
