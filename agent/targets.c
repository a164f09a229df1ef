/*
 * targets.c - scanner threads, snapshot publication and reload.
 *
 * Each target thread loops: scan, publish, wait.  The wait is the rest of
 * scan_interval after a good scan, or a capped exponential backoff after
 * a failed one (0.5 s doubling up to max(scan_interval, 1 s)), so a dead
 * target is retried soon after it comes back and never more often than
 * that.  A target that is down never stops the others: each has its own
 * thread, connection and timeouts.
 *
 * Publication is one pointer swap under the target's mutex; readers take
 * a reference and render without holding any lock.
 *
 * Redlock groups: a member target, right after publishing, compares its
 * group again with the newest snapshot of every member (each one taken by
 * reference under its own mutex, one at a time) and publishes the
 * group's report under the group's mutex, which also serialises the
 * group's state (since when keys are under quorum).  The comparison is a
 * merge of sorted maps, milliseconds for 100k locks, so it costs the
 * member's thread little and needs no thread of its own.
 */
#include "agent/targets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "alerts/alerts.h"
#include "collectors/locks/lockclass.h"

struct target_rt {
    char *name;
    struct scanner *scanner;
    const struct target_conf *conf;     /* into agent->cfg */
    struct scan_rules rules;
    pthread_t thread;
    bool running;
    atomic_int stop;
    pthread_mutex_t mu;                 /* guards snap, and the cv */
    pthread_cond_t cv;
    struct snapshot *snap;
    bool was_down;
    char node[280];                     /* last node scanned, for the log */
    struct group_rt **groups;           /* the groups it is a member of */
    size_t ngroups;
};

struct group_rt {
    char *name;
    struct target_rt **members;         /* into agent->targets, group order */
    size_t nmembers;
    int64_t no_ttl_validity_ms;         /* leak_grace */
    pthread_mutex_t mu;                 /* guards state and report */
    struct redlock_state *state;
    struct redlock_report *report;
    bool was_inconsistent;
};

/* Is target `name` a member of a [redlock] group of cfg? */
static bool
in_redlock_group(const struct config *cfg, const char *name)
{
    size_t i, j;

    for (i = 0; i < cfg->nredlocks; i++)
        for (j = 0; j < cfg->redlocks[i].ntargets; j++)
            if (strcmp(cfg->redlocks[i].targets[j], name) == 0)
                return true;
    return false;
}

static void
rules_from(struct scan_rules *r, const struct config *cfg, const char *target)
{
    r->redlock_map = in_redlock_group(cfg, target);
    r->leak_grace_ms = cfg->leak_grace_ms;
    r->max_hold_ms = cfg->max_hold_ms;
    r->max_reentrancy = cfg->max_reentrancy;
    r->classes = cfg->classes;
    r->nclasses = cfg->nclasses;
}

static struct target_rt *
target_new(const char *name)
{
    struct target_rt *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    t->name = strdup(name);
    t->scanner = scanner_new(name);
    if (t->name == NULL || t->scanner == NULL) {
        free(t->name);
        scanner_free(t->scanner);
        free(t);
        return NULL;
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    return t;
}

static void
target_free(struct target_rt *t)
{
    if (t == NULL)
        return;
    snapshot_unref(t->snap);
    free(t->groups);
    scanner_free(t->scanner);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->name);
    free(t);
}

static void
publish(struct target_rt *t, struct snapshot *s)
{
    struct snapshot *old;

    pthread_mutex_lock(&t->mu);
    old = t->snap;
    t->snap = s;
    pthread_mutex_unlock(&t->mu);
    snapshot_unref(old);
}

/* The lock class of each detailed key, for the alert's class label. */
static void
issue_classes(struct redlock_report *rep, const struct scan_rules *rules)
{
    size_t i;

    for (i = 0; i < rep->nissues; i++)
        class_of(rep->issues[i].key, rep->issues[i].key_len, rules->classes,
                 rules->nclasses, rep->issues[i].cls, sizeof(rep->issues[i].cls));
}

/* Compare group g on its members' newest snapshots and publish the report. */
static void
group_evaluate(struct group_rt *g)
{
    struct redlock_input *in = calloc(g->nmembers, sizeof(*in));
    struct snapshot **snaps = calloc(g->nmembers, sizeof(*snaps));
    struct redlock_report *rep = NULL, *old = NULL;
    size_t i;

    if (in == NULL || snaps == NULL) {
        log_warnx("redlock %s: out of memory; this comparison is skipped", g->name);
        goto out;
    }
    for (i = 0; i < g->nmembers; i++) {
        struct target_rt *m = g->members[i];

        pthread_mutex_lock(&m->mu);
        snaps[i] = m->snap;
        if (snaps[i] != NULL)
            snapshot_ref(snaps[i]);
        pthread_mutex_unlock(&m->mu);
        in[i].target = m->name;
        in[i].map = snaps[i] != NULL && snaps[i]->ok ? snaps[i]->redlock : NULL;
    }
    pthread_mutex_lock(&g->mu);
    rep = redlock_compare(g->name, in, g->nmembers, g->state, clock_now_ms(),
                          g->no_ttl_validity_ms);
    if (rep != NULL && g->nmembers > 0)
        issue_classes(rep, &g->members[0]->rules);
    if (rep != NULL) {
        old = g->report;
        g->report = rep;
        if (rep->judged && (redlock_inconsistent(rep) > 0) != g->was_inconsistent) {
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

/* Wait ms or until asked to stop. */
static void
target_wait(struct target_rt *t, int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->mu);
    while (!atomic_load(&t->stop))
        if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&t->mu);
}

static void *
target_main(void *arg)
{
    struct target_rt *t = arg;
    int64_t backoff = 0, cap, start, wait;
    struct snapshot *s;
    size_t i;

    cap = t->conf->scan_interval_ms > 1000 ? t->conf->scan_interval_ms : 1000;
    while (!atomic_load(&t->stop)) {
        start = clock_mono_ms();
        s = scanner_run(t->scanner, t->conf, &t->rules, &t->stop);
        if (s == NULL) {
            if (atomic_load(&t->stop))
                break;
            log_warnx("target %s: out of memory during scan; retrying", t->name);
            target_wait(t, 1000);
            continue;
        }
        if (s->ok) {
            if (t->was_down)
                log_info("target %s: scanning again", t->name);
            t->was_down = false;
            backoff = 0;
            log_debug("target %s: scanned %llu keys, %zu locks in %.3fs", t->name,
                      (unsigned long long)s->keys_examined, s->nlocks, s->duration_s);
            wait = t->conf->scan_interval_ms - (clock_mono_ms() - start);
        } else {
            if (!t->was_down)
                log_warnx("target %s: scan failed: %s", t->name, s->err);
            t->was_down = true;
            backoff = backoff == 0 ? 500 : backoff * 2;
            if (backoff > cap)
                backoff = cap;
            wait = backoff;
        }
        if (s->ok && s->node[0] != '\0' && strcmp(s->node, t->node) != 0) {
            if (t->node[0] != '\0')
                log_info("target %s: now scanning %s (was %s)", t->name, s->node, t->node);
            snprintf(t->node, sizeof(t->node), "%s", s->node);
        }
        publish(t, s);
        for (i = 0; i < t->ngroups; i++)
            group_evaluate(t->groups[i]);
        target_wait(t, wait);
    }
    return NULL;
}

static int
target_run(struct target_rt *t, const struct target_conf *conf, const struct config *cfg)
{
    int err;

    t->conf = conf;
    rules_from(&t->rules, cfg, t->name);
    atomic_store(&t->stop, 0);
    err = pthread_create(&t->thread, NULL, target_main, t);
    if (err != 0) {
        errno = err;
        return -1;
    }
    t->running = true;
    return 0;
}

static void
target_halt(struct target_rt *t)
{
    if (!t->running)
        return;
    pthread_mutex_lock(&t->mu);
    atomic_store(&t->stop, 1);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    t->running = false;
}

static bool
in_list(struct target_rt *const *list, size_t n, const struct target_rt *t)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (list[i] == t)
            return true;
    return false;
}

/* Build the target list for cfg, reusing the entries of old[] whose name
 * the new config keeps (target names are unique).  old is not changed. */
static int
build_targets(const struct config *cfg, struct target_rt *const *old, size_t nold,
              struct target_rt ***out)
{
    struct target_rt **list;
    size_t i, j;

    list = calloc(cfg->ntargets ? cfg->ntargets : 1, sizeof(*list));
    if (list == NULL)
        return -1;
    for (i = 0; i < cfg->ntargets; i++) {
        for (j = 0; j < nold && list[i] == NULL; j++)
            if (strcmp(old[j]->name, cfg->targets[i].name) == 0)
                list[i] = old[j];
        if (list[i] == NULL && (list[i] = target_new(cfg->targets[i].name)) == NULL)
            goto fail;
    }
    *out = list;
    return 0;
fail:
    for (i = 0; i < cfg->ntargets; i++)
        if (list[i] != NULL && !in_list(old, nold, list[i]))
            target_free(list[i]);
    free(list);
    return -1;
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

static struct target_rt *
target_named(struct agent *a, const char *name)
{
    size_t i;

    for (i = 0; i < a->ntargets; i++)
        if (strcmp(a->targets[i]->name, name) == 0)
            return a->targets[i];
    return NULL;
}

/*
 * Build a->groups for a->cfg over a->targets, keeping the state and
 * report of groups whose name stays (old[0..nold)); the old list's other
 * groups are freed.  Threads must be stopped.
 */
static int
build_groups(struct agent *a, struct group_rt **old, size_t nold)
{
    const struct config *cfg = a->cfg;
    struct group_rt **list;
    size_t i, j;

    list = calloc(cfg->nredlocks ? cfg->nredlocks : 1, sizeof(*list));
    if (list == NULL)
        return -1;
    for (i = 0; i < cfg->nredlocks; i++) {
        const struct redlock_conf *rc = &cfg->redlocks[i];
        struct group_rt *g = NULL;

        for (j = 0; j < nold && g == NULL; j++)
            if (old[j] != NULL && strcmp(old[j]->name, rc->name) == 0) {
                g = old[j];
                old[j] = NULL;
            }
        if (g == NULL) {
            if ((g = calloc(1, sizeof(*g))) == NULL ||
                (g->name = strdup(rc->name)) == NULL ||
                (g->state = redlock_state_new()) == NULL) {
                if (g != NULL) {
                    free(g->name);
                    free(g);
                }
                goto fail;
            }
            pthread_mutex_init(&g->mu, NULL);
        }
        list[i] = g;
        free(g->members);
        g->nmembers = 0;
        if ((g->members = calloc(rc->ntargets, sizeof(*g->members))) == NULL)
            goto fail;
        for (j = 0; j < rc->ntargets; j++)
            if ((g->members[g->nmembers] = target_named(a, rc->targets[j])) != NULL)
                g->nmembers++;
        g->no_ttl_validity_ms = cfg->leak_grace_ms;
    }
    for (j = 0; j < nold; j++)
        group_free(old[j]);
    free(old);
    a->groups = list;
    a->ngroups = cfg->nredlocks;
    return 0;
fail:
    for (i = 0; i < cfg->nredlocks; i++)
        group_free(list[i]);
    for (j = 0; j < nold; j++)
        group_free(old[j]);
    free(old);
    free(list);
    a->groups = NULL;
    a->ngroups = 0;
    return -1;
}

/* Tell each target the groups it is a member of. */
static int
link_groups(struct agent *a)
{
    size_t i, g, k;

    for (i = 0; i < a->ntargets; i++) {
        struct target_rt *t = a->targets[i];

        free(t->groups);
        t->groups = NULL;
        t->ngroups = 0;
        for (g = 0; g < a->ngroups; g++)
            for (k = 0; k < a->groups[g]->nmembers; k++)
                if (a->groups[g]->members[k] == t) {
                    struct group_rt **ng = realloc(t->groups,
                                                   (t->ngroups + 1) * sizeof(*ng));

                    if (ng == NULL)
                        return -1;
                    t->groups = ng;
                    t->groups[t->ngroups++] = a->groups[g];
                }
    }
    return 0;
}

static int
start_all(struct agent *a)
{
    size_t i;

    if (link_groups(a) == -1)
        log_warnx("out of memory: Redlock groups are not compared until the next reload");

    for (i = 0; i < a->ntargets; i++)
        if (target_run(a->targets[i], &a->cfg->targets[i], a->cfg) == -1) {
            log_warn("target %s: cannot start its thread", a->targets[i]->name);
            return -1;
        }
    return 0;
}

int
agent_start(struct agent *a, struct config *cfg)
{
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->mu, NULL);
    a->started_ms = clock_now_ms();
    if (!cfg->samples_off && (a->waits = waitstats_new(cfg)) == NULL)
        return -1;
    if ((a->alerts = alerts_new(cfg)) == NULL)
        return -1;
    if (build_targets(cfg, NULL, 0, &a->targets) == -1)
        return -1;
    a->cfg = cfg;
    a->ntargets = cfg->ntargets;
    if (build_groups(a, NULL, 0) == -1)
        return -1;
    return start_all(a);
}

int
agent_reload(struct agent *a, struct config *cfg)
{
    struct target_rt **old, **list = NULL;
    struct group_rt **oldgroups;
    struct config *oldcfg;
    size_t nold, noldgroups, i;

    pthread_mutex_lock(&a->mu);
    old = a->targets;
    nold = a->ntargets;
    pthread_mutex_unlock(&a->mu);

    /* Halting outside the lock: a thread may sit in a Redis call for up
     * to command_timeout, and readers must not wait for that. */
    for (i = 0; i < nold; i++)
        target_halt(old[i]);

    if (build_targets(cfg, old, nold, &list) == -1)
        goto restart_old;
    pthread_mutex_lock(&a->mu);
    oldcfg = a->cfg;
    a->cfg = cfg;
    a->targets = list;
    a->ntargets = cfg->ntargets;
    pthread_mutex_unlock(&a->mu);
    for (i = 0; i < nold; i++)
        if (!in_list(list, cfg->ntargets, old[i]))
            target_free(old[i]);        /* dropped by the new config */
    free(old);
    config_free(oldcfg);
    /* groups whose name stays keep their state (keys under quorum since) */
    pthread_mutex_lock(&a->mu);
    oldgroups = a->groups;
    noldgroups = a->ngroups;
    if (build_groups(a, oldgroups, noldgroups) == -1)
        log_warnx("reload: out of memory; Redlock groups are not compared until the next "
                  "reload");
    pthread_mutex_unlock(&a->mu);
    /* New [classes] rules and wait_window apply to samples from now on;
     * on ENOMEM the old ones stay, which is worth a word, not a failure. */
    if (a->waits != NULL && waitstats_configure(a->waits, cfg) == -1)
        log_warnx("reload: out of memory; wait statistics keep the previous "
                  "[classes] rules and wait_window");
    /* the alert set stays (firing alerts keep firing); sinks are rebuilt */
    if (alerts_configure(a->alerts, cfg) == -1)
        log_warnx("reload: out of memory; alerting keeps the previous [rules] and "
                  "[webhook] settings");
    return start_all(a);

restart_old:
    config_free(cfg);
    start_all(a);
    errno = ENOMEM;
    return -1;
}

void
agent_stop(struct agent *a)
{
    size_t i;

    for (i = 0; i < a->ntargets; i++)
        target_halt(a->targets[i]);
    for (i = 0; i < a->ntargets; i++)
        target_free(a->targets[i]);
    free(a->targets);
    for (i = 0; i < a->ngroups; i++)
        group_free(a->groups[i]);
    free(a->groups);
    config_free(a->cfg);
    waitstats_free(a->waits);
    alerts_free(a->alerts);     /* a bounded last chance for queued notices */
    pthread_mutex_destroy(&a->mu);
    memset(a, 0, sizeof(*a));
}

int
agent_view(struct agent *a, struct view *v)
{
    size_t i;

    memset(v, 0, sizeof(*v));
    pthread_mutex_lock(&a->mu);
    v->targets = calloc(a->ntargets ? a->ntargets : 1, sizeof(*v->targets));
    if (v->targets == NULL)
        goto fail;
    v->top_offenders = a->cfg->top_offenders;
    v->alerts = a->alerts;
    v->releases = a->releases;
    for (i = 0; i < a->ntargets; i++) {
        struct target_rt *t = a->targets[i];

        v->targets[i].name = strdup(t->name);
        if (v->targets[i].name == NULL)
            goto fail;
        v->ntargets = i + 1;
        pthread_mutex_lock(&t->mu);
        v->targets[i].snap = t->snap;
        if (t->snap != NULL)
            snapshot_ref(t->snap);
        pthread_mutex_unlock(&t->mu);
    }
    v->groups = calloc(a->ngroups ? a->ngroups : 1, sizeof(*v->groups));
    if (v->groups == NULL)
        goto fail;
    for (i = 0; i < a->ngroups; i++) {
        struct group_rt *g = a->groups[i];

        if ((v->groups[i].name = strdup(g->name)) == NULL)
            goto fail;
        v->ngroups = i + 1;
        pthread_mutex_lock(&g->mu);
        v->groups[i].report = g->report;
        if (g->report != NULL)
            redlock_report_ref(g->report);
        pthread_mutex_unlock(&g->mu);
    }
    pthread_mutex_unlock(&a->mu);
    v->now_ms = clock_now_ms();
    /* a->waits is set once at start, so it needs no agent lock; the copy
     * takes the statistics' own lock. */
    if (a->waits != NULL) {
        v->wait = malloc(sizeof(*v->wait));
        if (v->wait == NULL)
            goto fail_unlocked;
        if (waitstats_view(a->waits, clock_mono_ms(), v->wait) == -1) {
            free(v->wait);
            v->wait = NULL;
            goto fail_unlocked;
        }
    }
    return 0;
fail_unlocked:
    view_release(v);
    return -1;
fail:
    pthread_mutex_unlock(&a->mu);
    view_release(v);
    return -1;
}

void
view_release(struct view *v)
{
    size_t i;

    for (i = 0; i < v->ntargets; i++) {
        free(v->targets[i].name);
        snapshot_unref(v->targets[i].snap);
    }
    free(v->targets);
    for (i = 0; i < v->ngroups; i++) {
        free(v->groups[i].name);
        redlock_report_unref(v->groups[i].report);
    }
    free(v->groups);
    if (v->wait != NULL) {
        waitstats_view_release(v->wait);
        free(v->wait);
    }
    memset(v, 0, sizeof(*v));
}

struct once_job {
    const struct target_conf *conf;
    struct scan_rules rules;
    struct snapshot *snap;
    pthread_t thread;
    bool started;
};

static void *
once_main(void *arg)
{
    struct once_job *j = arg;
    struct scanner *sc = scanner_new(j->conf->name);

    if (sc == NULL)
        return NULL;
    j->snap = scanner_run(sc, j->conf, &j->rules, NULL);
    scanner_free(sc);
    return NULL;
}

/* --once: compare each group once on the snapshots of the view. */
static int
once_groups(const struct config *cfg, struct view *v)
{
    struct redlock_input *in;
    struct redlock_state *st;
    size_t g, j, k;

    v->groups = calloc(cfg->nredlocks ? cfg->nredlocks : 1, sizeof(*v->groups));
    if (v->groups == NULL)
        return -1;
    for (g = 0; g < cfg->nredlocks; g++) {
        const struct redlock_conf *rc = &cfg->redlocks[g];

        if ((v->groups[g].name = strdup(rc->name)) == NULL)
            return -1;
        v->ngroups = g + 1;
        in = calloc(rc->ntargets, sizeof(*in));
        st = redlock_state_new();
        if (in != NULL && st != NULL) {
            for (j = 0; j < rc->ntargets; j++) {
                in[j].target = rc->targets[j];
                for (k = 0; k < v->ntargets; k++)
                    if (strcmp(v->targets[k].name, rc->targets[j]) == 0 &&
                        v->targets[k].snap != NULL && v->targets[k].snap->ok)
                        in[j].map = v->targets[k].snap->redlock;
            }
            v->groups[g].report = redlock_compare(rc->name, in, rc->ntargets, st,
                                                  v->now_ms, cfg->leak_grace_ms);
            if (v->groups[g].report != NULL) {
                struct scan_rules rules;

                rules_from(&rules, cfg, rc->name);
                issue_classes(v->groups[g].report, &rules);
            }
        }
        free(in);
        redlock_state_free(st);
        if (v->groups[g].report == NULL)
            return -1;
    }
    return 0;
}

int
targets_scan_once(const struct config *cfg, struct view *v)
{
    struct once_job *jobs;
    size_t i;
    int failed = 0;

    memset(v, 0, sizeof(*v));
    jobs = calloc(cfg->ntargets ? cfg->ntargets : 1, sizeof(*jobs));
    v->targets = calloc(cfg->ntargets ? cfg->ntargets : 1, sizeof(*v->targets));
    if (jobs == NULL || v->targets == NULL) {
        free(jobs);
        free(v->targets);
        v->targets = NULL;
        return -1;
    }
    for (i = 0; i < cfg->ntargets; i++) {
        jobs[i].conf = &cfg->targets[i];
        rules_from(&jobs[i].rules, cfg, cfg->targets[i].name);
        jobs[i].started = pthread_create(&jobs[i].thread, NULL, once_main, &jobs[i]) == 0;
        if (!jobs[i].started)
            once_main(&jobs[i]);
    }
    for (i = 0; i < cfg->ntargets; i++) {
        if (jobs[i].started)
            pthread_join(jobs[i].thread, NULL);
        v->targets[i].name = strdup(cfg->targets[i].name);
        v->targets[i].snap = jobs[i].snap;
        v->ntargets = i + 1;
        if (jobs[i].snap == NULL || !jobs[i].snap->ok)
            failed++;
    }
    free(jobs);
    v->top_offenders = cfg->top_offenders;
    v->now_ms = clock_now_ms();
    if (once_groups(cfg, v) == -1)
        return -1;
    return failed;
}
