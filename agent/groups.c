/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * groups.c - the [redlock] groups of the agent: building them over the
 * running targets, comparing them and publishing their reports, and the
 * single comparison of --once.
 *
 * A member target, right after publishing a snapshot, compares each of
 * its groups again with the newest snapshot of every member (each one
 * taken by reference under its own mutex, one at a time) and publishes
 * the group's report under the group's mutex, which also serialises the
 * group's state (since when keys are under quorum).  The comparison is a
 * merge of sorted maps, milliseconds for 100k locks, so it costs the
 * member's thread little and needs no thread of its own.
 */
#include "agent/groups.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "collectors/locks/lockclass.h"

struct group_rt {
    char *name;
    struct group_member *members;       /* group order; agent.c's targets */
    size_t nmembers;
    const struct config *cfg;           /* the running one: its [rules] leak_grace
                                         * (how long a key without a TTL counts)
                                         * and [classes]; a reload rebuilds the
                                         * groups with the new one */
    pthread_mutex_t mu;                 /* guards state and report */
    struct redlock_state *state;
    struct redlock_report *report;
    bool was_inconsistent;
};

bool
groups_has_member(const struct config *cfg, const char *target)
{
    size_t i, j;

    for (i = 0; i < cfg->nredlocks; i++)
        for (j = 0; j < cfg->redlocks[i].ntargets; j++)
            if (strcmp(cfg->redlocks[i].targets[j], target) == 0)
                return true;
    return false;
}

/* The lock class of each detailed key, for the alert's class label. */
static void
issue_classes(struct redlock_report *rep, const struct class_rule *classes, size_t nclasses)
{
    size_t i;

    for (i = 0; i < rep->nissues; i++)
        class_of(rep->issues[i].key, rep->issues[i].key_len, classes, nclasses,
                 rep->issues[i].cls, sizeof(rep->issues[i].cls));
}

static void
group_free(struct group_rt *g)
{
    if (g == NULL)
        return;
    redlock_report_unref(g->report);
    redlock_state_free(g->state);
    pthread_mutex_destroy(&g->mu);
    free(g->members);
    free(g->name);
    free(g);
}

void
groups_free(struct group_rt **groups, size_t n)
{
    size_t i;

    for (i = 0; groups != NULL && i < n; i++)
        group_free(groups[i]);
    free(groups);
}

static struct group_rt *
group_new(const char *name)
{
    struct group_rt *g = calloc(1, sizeof(*g));

    if (g == NULL)
        return NULL;
    g->name = strdup(name);
    g->state = redlock_state_new();
    if (g->name == NULL || g->state == NULL) {
        redlock_state_free(g->state);
        free(g->name);
        free(g);
        return NULL;
    }
    pthread_mutex_init(&g->mu, NULL);
    return g;
}

/* Point g at the members rc names among targets[0..ntargets). */
static int
group_set_members(struct group_rt *g, const struct redlock_conf *rc,
                  const struct group_member *targets, size_t ntargets)
{
    size_t j, k;

    free(g->members);
    g->nmembers = 0;
    g->members = calloc(rc->ntargets ? rc->ntargets : 1, sizeof(*g->members));
    if (g->members == NULL)
        return -1;
    for (j = 0; j < rc->ntargets; j++)
        for (k = 0; k < ntargets; k++)
            if (strcmp(targets[k].name, rc->targets[j]) == 0) {
                g->members[g->nmembers++] = targets[k];
                break;
            }
    return 0;
}

int
groups_build(const struct config *cfg, const struct group_member *targets, size_t ntargets,
             struct group_rt **old, size_t nold, struct group_rt ***out)
{
    struct group_rt **list;
    size_t i, j;

    *out = NULL;
    list = calloc(cfg->nredlocks ? cfg->nredlocks : 1, sizeof(*list));
    if (list == NULL)
        goto fail;
    for (i = 0; i < cfg->nredlocks; i++) {
        const struct redlock_conf *rc = &cfg->redlocks[i];

        for (j = 0; j < nold && list[i] == NULL; j++)
            if (old[j] != NULL && strcmp(old[j]->name, rc->name) == 0) {
                list[i] = old[j];
                old[j] = NULL;
            }
        if (list[i] == NULL && (list[i] = group_new(rc->name)) == NULL)
            goto fail;
        if (group_set_members(list[i], rc, targets, ntargets) == -1)
            goto fail;
        list[i]->cfg = cfg;
    }
    groups_free(old, nold);
    *out = list;
    return 0;
fail:
    groups_free(list, cfg->nredlocks);
    groups_free(old, nold);
    return -1;
}

bool
group_has_member(const struct group_rt *g, const char *target)
{
    size_t k;

    for (k = 0; k < g->nmembers; k++)
        if (strcmp(g->members[k].name, target) == 0)
            return true;
    return false;
}

/* Log when g turns inconsistent, or agrees again (g->mu held). */
static void
log_turn(struct group_rt *g, const struct redlock_report *rep)
{
    if (!rep->judged || (redlock_inconsistent(rep) > 0) == g->was_inconsistent)
        return;
    g->was_inconsistent = redlock_inconsistent(rep) > 0;
    if (g->was_inconsistent)
        log_warnx("redlock %s: %llu key(s) inconsistent (%llu split, %llu under "
                  "quorum), e.g. %s: %s", g->name,
                  (unsigned long long)redlock_inconsistent(rep),
                  (unsigned long long)rep->split,
                  (unsigned long long)rep->under_quorum,
                  rep->nissues ? rep->issues[0].key : "?",
                  rep->nissues ? rep->issues[0].nodes : "?");
    else
        log_info("redlock %s: the nodes agree again", g->name);
}

void
group_compare(struct group_rt *g)
{
    size_t n = g->nmembers ? g->nmembers : 1;
    struct redlock_input *in = calloc(n, sizeof(*in));
    struct snapshot **snaps = calloc(n, sizeof(*snaps));
    struct redlock_report *rep = NULL, *old = NULL;
    size_t i;

    if (in == NULL || snaps == NULL) {
        log_warnx("redlock %s: out of memory; this comparison is skipped", g->name);
        goto out;
    }
    for (i = 0; i < g->nmembers; i++) {
        const struct group_member *m = &g->members[i];

        pthread_mutex_lock(m->mu);
        snaps[i] = *m->snap;
        if (snaps[i] != NULL)
            snapshot_ref(snaps[i]);
        pthread_mutex_unlock(m->mu);
        in[i].target = m->name;
        in[i].map = snaps[i] != NULL && snaps[i]->ok ? snaps[i]->redlock : NULL;
    }
    pthread_mutex_lock(&g->mu);
    rep = redlock_compare(g->name, in, g->nmembers, g->state, clock_now_ms(),
                          g->cfg->rules.judge.leak_grace_ms);
    if (rep != NULL) {
        issue_classes(rep, g->cfg->classes, g->cfg->nclasses);
        old = g->report;
        g->report = rep;
        log_turn(g, rep);
    }
    pthread_mutex_unlock(&g->mu);
    if (rep == NULL)
        log_warnx("redlock %s: out of memory; this comparison is skipped", g->name);
    redlock_report_unref(old);
out:
    for (i = 0; snaps != NULL && i < g->nmembers; i++)
        snapshot_unref(snaps[i]);
    free(snaps);
    free(in);
}

int
group_view(struct group_rt *g, struct view_group *out)
{
    char *name = strdup(g->name);

    if (name == NULL)
        return -1;
    out->name = name;
    pthread_mutex_lock(&g->mu);
    out->report = g->report;
    if (g->report != NULL)
        redlock_report_ref(g->report);
    pthread_mutex_unlock(&g->mu);
    return 0;
}

/* One group's comparison on the snapshots of v, or NULL on ENOMEM. */
static struct redlock_report *
compare_once(const struct config *cfg, const struct redlock_conf *rc, const struct view *v)
{
    struct redlock_input *in = calloc(rc->ntargets ? rc->ntargets : 1, sizeof(*in));
    struct redlock_state *st = redlock_state_new();
    struct redlock_report *rep = NULL;
    size_t j, k;

    if (in == NULL || st == NULL)
        goto out;
    for (j = 0; j < rc->ntargets; j++) {
        in[j].target = rc->targets[j];
        for (k = 0; k < v->ntargets; k++)
            if (strcmp(v->targets[k].name, rc->targets[j]) == 0 &&
                v->targets[k].snap != NULL && v->targets[k].snap->ok)
                in[j].map = v->targets[k].snap->redlock;
    }
    rep = redlock_compare(rc->name, in, rc->ntargets, st, v->now_ms,
                          cfg->rules.judge.leak_grace_ms);
    if (rep != NULL)
        issue_classes(rep, cfg->classes, cfg->nclasses);
out:
    free(in);
    redlock_state_free(st);
    return rep;
}

int
groups_compare_once(const struct config *cfg, struct view *v)
{
    size_t g;

    v->groups = calloc(cfg->nredlocks ? cfg->nredlocks : 1, sizeof(*v->groups));
    if (v->groups == NULL)
        return -1;
    for (g = 0; g < cfg->nredlocks; g++) {
        const struct redlock_conf *rc = &cfg->redlocks[g];

        if ((v->groups[g].name = strdup(rc->name)) == NULL)
            return -1;
        v->ngroups = g + 1;
        if ((v->groups[g].report = compare_once(cfg, rc, v)) == NULL)
            return -1;
    }
    return 0;
}
