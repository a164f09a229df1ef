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
 */
#include "agent/targets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/log.h"
#include "alerts/alerts.h"

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
};

static void
rules_from(struct scan_rules *r, const struct config *cfg)
{
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

    cap = t->conf->scan_interval_ms > 1000 ? t->conf->scan_interval_ms : 1000;
    while (!atomic_load(&t->stop)) {
        start = scan_mono_ms();
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
            wait = t->conf->scan_interval_ms - (scan_mono_ms() - start);
        } else {
            if (!t->was_down)
                log_warnx("target %s: scan failed: %s", t->name, s->err);
            t->was_down = true;
            backoff = backoff == 0 ? 500 : backoff * 2;
            if (backoff > cap)
                backoff = cap;
            wait = backoff;
        }
        publish(t, s);
        target_wait(t, wait);
    }
    return NULL;
}

static int
target_run(struct target_rt *t, const struct target_conf *conf, const struct config *cfg)
{
    int err;

    t->conf = conf;
    rules_from(&t->rules, cfg);
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

static int
start_all(struct agent *a)
{
    size_t i;

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
    a->started_ms = scan_now_ms();
    if (!cfg->samples_off && (a->waits = waitstats_new(cfg)) == NULL)
        return -1;
    if ((a->alerts = alerts_new(cfg)) == NULL)
        return -1;
    if (build_targets(cfg, NULL, 0, &a->targets) == -1)
        return -1;
    a->cfg = cfg;
    a->ntargets = cfg->ntargets;
    return start_all(a);
}

int
agent_reload(struct agent *a, struct config *cfg)
{
    struct target_rt **old, **list = NULL;
    struct config *oldcfg;
    size_t nold, i;

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
    pthread_mutex_unlock(&a->mu);
    v->now_ms = scan_now_ms();
    /* a->waits is set once at start, so it needs no agent lock; the copy
     * takes the statistics' own lock. */
    if (a->waits != NULL) {
        v->wait = malloc(sizeof(*v->wait));
        if (v->wait == NULL)
            goto fail_unlocked;
        if (waitstats_view(a->waits, scan_mono_ms(), v->wait) == -1) {
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
        rules_from(&jobs[i].rules, cfg);
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
    v->now_ms = scan_now_ms();
    return failed;
}
