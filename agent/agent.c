/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * agent.c - the running agent: its scanner threads, snapshot publication,
 * start, reload and stop, the view HTTP renders, and --once.
 *
 * Each target thread loops: scan, publish, wait.  The wait is the rest of
 * scan_interval after a good scan, or a capped exponential backoff after
 * a failed one (0.5 s doubling up to max(scan_interval, 1 s)), so a dead
 * target is retried soon after it comes back and never more often than
 * that.  A target that is down never stops the others: each has its own
 * thread, connection and timeouts.
 *
 * A target in follow mode (incremental =, collectors/follow/) stays in
 * follow_run() after a good scan, publishing snapshots made from
 * keyspace events, and scans again when it returns (a reconcile).
 *
 * Publication is one pointer swap under the target's mutex; readers take
 * a reference and render without holding any lock.  What was known stays
 * visible: a failed scan's snapshot keeps a reference to the target's last
 * good one, stamped with when the view went stale, and every renderer shows
 * its locks marked stale (view_target.shown) while the target is reported
 * down with the reason.  Right after publishing, a target compares the
 * [redlock] groups it is a member of (agent/groups.c) on its own thread.
 * A reload keeps a target's view, unless it names another server.
 */
#include "agent/agent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/groups.h"
#include "agent/http/throttle.h"
#include "alerts/alerts.h"
#include "collectors/follow/follow.h"
#include "collectors/redis/conn.h"
#include "collectors/release/audittail.h"
#include "collectors/scan/scan.h"
#include "common/clock.h"
#include "common/log.h"

struct target_rt {
    char *name;
    struct scanner *scanner;
    struct follow *follow;              /* the scanner's (it frees it) */
    const struct target_conf *conf;     /* into agent->cfg */
    const char *audit_stream;           /* into agent->cfg: [unlock] audit_stream */
    struct audit_tail audit;            /* its releases on the timeline */
    int64_t audit_mono;                 /* mono ms the audit stream was last read */
    struct scan_rules rules;
    pthread_t thread;
    bool running;
    atomic_int stop;
    pthread_mutex_t mu;                 /* guards snap, and the cv */
    pthread_cond_t cv;
    struct snapshot *snap;
    struct snapshot *last_good;         /* the last ok snapshot published */
    int64_t stale_since_ms;             /* first failure since it; 0: fresh */
    bool was_down;
    char down_err[SNAP_ERR_MAX];        /* the reason last logged */
    char node[280];                     /* last node scanned, for the log */
    char follow_note[400];              /* follow mode's last note, logged once */
    bool following;                     /* for the log: follow mode on */
    struct group_rt **groups;           /* the groups it is a member of */
    size_t ngroups;
    struct classtrend *trend;           /* the agent's (start_all sets it) */
};

static void
rules_from(struct scan_rules *r, const struct config *cfg, const char *target)
{
    r->redlock_map = groups_has_member(cfg, target);
    r->judge = cfg->rules.judge;
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
    if (t->scanner != NULL)
        t->follow = follow_new(t->scanner);
    if (t->name == NULL || t->scanner == NULL || t->follow == NULL ||
        clock_cond_init(&t->cv) != 0) {
        free(t->name);
        scanner_free(t->scanner);
        free(t);
        return NULL;
    }
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

static void
target_free(struct target_rt *t)
{
    if (t == NULL)
        return;
    snapshot_unref(t->snap);
    snapshot_unref(t->last_good);
    free(t->groups);
    scanner_free(t->scanner);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->name);
    free(t);
}

/* Stamp s with its freshness before anyone else sees it: an ok snapshot
 * becomes the last good one; a failed one keeps it, and when the view
 * went stale.  One made after follow mode lost notifications proves
 * nothing new: its last success is the one before. */
static void
stamp_freshness(struct target_rt *t, struct snapshot *s)
{
    if (s->ok) {
        s->last_success_ms = s->proven_ms > s->finished_ms ? s->proven_ms : s->finished_ms;
        if (s->follow.behind_since_ms != 0)
            s->last_success_ms = t->last_good != NULL ? t->last_good->last_success_ms : 0;
        snapshot_ref(s);
        snapshot_unref(t->last_good);
        t->last_good = s;
        t->stale_since_ms = 0;
        return;
    }
    if (t->stale_since_ms == 0)
        t->stale_since_ms = s->finished_ms;
    s->stale_since_ms = t->stale_since_ms;
    if (t->last_good != NULL && s->last_good == NULL) {
        snapshot_ref(t->last_good);
        s->last_good = t->last_good;
        s->last_success_ms = t->last_good->last_success_ms;
    }
}

static void
publish(struct target_rt *t, struct snapshot *s)
{
    struct snapshot *old;

    /* before stamping: last_good is still the snapshot s replaces */
    if (s->ok && t->trend != NULL)
        classtrend_note(t->trend, t->last_good, s, clock_mono_ms());
    stamp_freshness(t, s);
    pthread_mutex_lock(&t->mu);
    old = t->snap;
    t->snap = s;
    pthread_mutex_unlock(&t->mu);
    snapshot_unref(old);
}

/* Follow mode's news, each said once: a note (why it does not follow, or
 * drift) when it changes, and the start and end of following. */
static void
log_follow(struct target_rt *t, const struct snapshot *s)
{
    if (strcmp(s->follow.note, t->follow_note) != 0) {
        if (s->follow.note[0] != '\0') {
            if (s->follow.drift || s->follow.behind_since_ms != 0 || s->follow.lacking ||
                t->conf->incremental == INCR_ON)
                log_warnx("target %s: %s", t->name, s->follow.note);
            else
                log_info("target %s: %s", t->name, s->follow.note);
        }
        snprintf(t->follow_note, sizeof(t->follow_note), "%s", s->follow.note);
    }
    if (s->follow.active != t->following && s->ok) {
        if (s->follow.active)
            log_info("target %s: following keyspace notifications on %s; a full scan every "
                     "reconcile_interval", t->name, s->node[0] != '\0' ? s->node :
                     s->nshards > 0 ? "every primary" : "its node");
        else
            log_info("target %s: no longer following keyspace notifications; scanning",
                     t->name);
        t->following = s->follow.active;
    }
}

static void tail_audit(struct target_rt *t);

/* Follow mode's snapshots.  The audit stream is read here too, at most
 * every scan_interval (follow mode publishes after each freshness check,
 * so at least that often): between full scans, an hour apart, lockctl's
 * releases would reach the timeline only at the next one. */
static void
publish_cb(void *arg, struct snapshot *s)
{
    struct target_rt *t = arg;
    size_t i;

    /* before the snapshot replaces the view that still has the lock */
    if (s->ok && clock_mono_ms() - t->audit_mono >= t->conf->scan_interval_ms)
        tail_audit(t);
    log_follow(t, s);
    publish(t, s);
    for (i = 0; i < t->ngroups; i++)
        group_compare(t->groups[i]);
}

/* Wait ms or until asked to stop.  The deadline is monotonic: a wall
 * clock stepped back must not hold a scanner back for as long. */
static void
target_wait(struct target_rt *t, int64_t ms)
{
    int64_t deadline;

    if (ms <= 0)
        return;
    deadline = clock_deadline(ms);
    pthread_mutex_lock(&t->mu);
    while (!atomic_load(&t->stop))
        if (clock_cond_wait_until(&t->cv, &t->mu, deadline) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&t->mu);
}

/* The holder's age when a release by lockctl (or another agent) ran at
 * at_ms, as this agent knew it: from its last good view's first sight of
 * that one holder on the key.  0 when it did not know the lock or holder. */
static int64_t
audit_age(void *arg, const char *key, size_t keylen, const char *holder, size_t holderlen,
          int64_t at_ms)
{
    const struct target_rt *t = arg;
    const struct snapshot *s = t->last_good;

    if (s == NULL || holder == NULL)
        return 0;
    for (size_t i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = s->locks[i];

        if (l->key_len != keylen || memcmp(l->key, key, keylen) != 0)
            continue;
        if (l->nholders != 1 || l->holders[0].truncated || l->holders[0].id_len != holderlen ||
            memcmp(l->holders[0].id, holder, holderlen) != 0 || l->first_seen_ms <= 0 ||
            at_ms <= l->first_seen_ms)
            return 0;
        return at_ms - l->first_seen_ms;
    }
    return 0;
}

/* After a good scan (and while following, publish_cb): the releases
 * appended to the audit stream since the last (lockctl's, another
 * agent's) onto the timeline, within the target's command_timeout. */
static void
tail_audit(struct target_rt *t)
{
    struct redisconn_scope sc = { .deadline_ms = clock_deadline(t->conf->command_timeout_ms),
                                  .idle_ms = t->conf->command_timeout_ms, .stop = &t->stop,
                                  .what = "the audit stream's read (command_timeout)",
                                  /* not waited for: a node the pass found silent */
                                  .silent = scanner_silent(t->scanner) };
    const struct redisconn_scope *prev = redisconn_scope_enter(&sc);
    char err[320] = "";

    sc.known = scanner_known(t->scanner, &sc.nknown);  /* the cluster as the scan reads it */
    t->audit_mono = clock_mono_ms();
    if (audit_tail_poll(&t->audit, t->conf, t->audit_stream, audit_age, t, err,
                        sizeof(err)) == 1 &&
        err[0] != '\0')
        log_info("target %s: %s; releases by lockctl are not on the agent's timeline "
                 "(docs/events.md)", t->name, err);
    redisconn_scope_leave(prev);
}

static void *
target_main(void *arg)
{
    struct target_rt *t = arg;
    int64_t backoff = 0, cap, start, wait;
    struct snapshot *s;
    size_t i;
    bool ok;

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
        if (!s->ok && atomic_load(&t->stop)) {
            /* cut short by a reload or the shutdown, not a failure: no
             * "scan failed" in the log, no stale view published for the
             * moment before the next thread's first scan */
            snapshot_unref(s);
            break;
        }
        if (s->ok) {
            if (t->was_down)
                log_info("target %s: read again: its view is current", t->name);
            t->was_down = false;
            backoff = 0;
            log_debug("target %s: scanned %llu keys, %zu locks in %.3fs", t->name,
                      (unsigned long long)s->keys_examined, s->nlocks, s->duration_s);
            wait = t->conf->scan_interval_ms - (clock_mono_ms() - start);
        } else {
            /* said again whenever the reason changes */
            if (!t->was_down || strcmp(s->err, t->down_err) != 0) {
                if (t->last_good != NULL)
                    log_warnx("target %s: scan failed: %s (showing the last good view, "
                              "proven %lld s ago, marked stale)", t->name, s->err,
                              (long long)((clock_now_ms() - (t->last_good->proven_ms >
                                           t->last_good->finished_ms ? t->last_good->proven_ms :
                                           t->last_good->finished_ms)) / 1000));
                else
                    log_warnx("target %s: scan failed: %s", t->name, s->err);
                snprintf(t->down_err, sizeof(t->down_err), "%s", s->err);
            }
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
        ok = s->ok;
        /* the releases since the last look, with the view that still has
         * their locks (audit_age), then the scan's */
        if (ok)
            tail_audit(t);
        log_follow(t, s);
        publish(t, s);
        for (i = 0; i < t->ngroups; i++)
            group_compare(t->groups[i]);
        /* follow mode: current from events until a full scan is due; its
         * reads see a stop request as a scan's do (no deadline: it runs
         * until the next full scan) */
        if (ok) {
            /* a node its checks find silent is not waited for again by
             * the full scan they call for (scanner_silent()) */
            struct redisconn_scope fs = { .deadline_ms = INT64_MAX,
                                          .idle_ms = t->conf->command_timeout_ms,
                                          .stop = &t->stop, .what = "follow mode",
                                          .silent = scanner_silent(t->scanner) };
            const struct redisconn_scope *prev = redisconn_scope_enter(&fs);
            int followed = follow_run(t->follow, t->conf, &t->rules, &t->stop, publish_cb, t);

            redisconn_scope_leave(prev);
            if (followed == 0)
                continue;
        }
        target_wait(t, wait);
    }
    return NULL;
}

static int
target_run(struct target_rt *t, const struct target_conf *conf, const struct config *cfg)
{
    int err;

    t->conf = conf;
    t->audit_stream = cfg->audit_stream;
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
        char was[CONFIG_ADDRESS_MAX], now[CONFIG_ADDRESS_MAX];
        config_target_address(&cfg->targets[i], now, sizeof(now));
        for (j = 0; j < nold && list[i] == NULL; j++)
            if (strcmp(old[j]->name, cfg->targets[i].name) == 0 && old[j]->conf != NULL) {
                config_target_address(old[j]->conf, was, sizeof(was));
                if (config_same_server(old[j]->conf, &cfg->targets[i]))
                    list[i] = old[j];
                else            /* the old server's locks are no view of the new one */
                    log_info("reload: target %s watches %s now (was %s): its view starts anew",
                             old[j]->name, now, was);
            }
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

/*
 * Build a->groups for a->cfg over a->targets, keeping the state and
 * report of groups whose name stays (the old list is consumed).  On
 * ENOMEM a has no groups until the next reload.  Threads must be stopped.
 */
static int
build_groups(struct agent *a, struct group_rt **old, size_t nold)
{
    struct group_member *cand;
    size_t i;
    int rc = -1;

    a->groups = NULL;
    a->ngroups = 0;
    cand = calloc(a->ntargets ? a->ntargets : 1, sizeof(*cand));
    if (cand == NULL) {
        groups_free(old, nold);
        return -1;
    }
    for (i = 0; i < a->ntargets; i++) {
        cand[i].name = a->targets[i]->name;
        cand[i].mu = &a->targets[i]->mu;
        cand[i].snap = &a->targets[i]->snap;
    }
    if (groups_build(a->cfg, cand, a->ntargets, old, nold, &a->groups) == 0) {
        a->ngroups = a->cfg->nredlocks;
        rc = 0;
    }
    free(cand);
    return rc;
}

/* Tell each target the groups it is a member of.  On ENOMEM no target
 * is told any (none keeps a list that may name freed groups). */
static int
link_groups(struct agent *a)
{
    size_t i, g;

    for (i = 0; i < a->ntargets; i++) {
        struct target_rt *t = a->targets[i];

        free(t->groups);
        t->groups = NULL;
        t->ngroups = 0;
    }
    for (i = 0; i < a->ntargets; i++) {
        struct target_rt *t = a->targets[i];

        for (g = 0; g < a->ngroups; g++) {
            struct group_rt **ng;

            if (!group_has_member(a->groups[g], t->name))
                continue;
            if ((ng = realloc(t->groups, (t->ngroups + 1) * sizeof(*ng))) == NULL)
                goto fail;
            t->groups = ng;
            t->groups[t->ngroups++] = a->groups[g];
        }
    }
    return 0;
fail:
    for (i = 0; i < a->ntargets; i++) {
        free(a->targets[i]->groups);
        a->targets[i]->groups = NULL;
        a->targets[i]->ngroups = 0;
    }
    return -1;
}

/* Start every target's thread; one that cannot start (EAGAIN: a thread
 * limit) is named and the others start all the same: its view is a failed
 * scan's (the target down, what was known shown stale) until a reload or
 * restart that can. */
static int
start_all(struct agent *a)
{
    size_t i;
    int rc = 0;

    if (link_groups(a) == -1)
        log_warnx("out of memory: Redlock groups are not compared until the next reload");

    for (i = 0; i < a->ntargets; i++)
        a->targets[i]->trend = a->trend;
    for (i = 0; i < a->ntargets; i++)
        if (target_run(a->targets[i], &a->cfg->targets[i], a->cfg) == -1) {
            struct snapshot *s = snapshot_new(a->targets[i]->name);

            log_warn("target %s: cannot start its thread; it is not scanned until a reload "
                     "or restart that can", a->targets[i]->name);
            if (s != NULL) {
                s->started_ms = s->finished_ms = clock_now_ms();
                snprintf(s->err, sizeof(s->err), "its thread could not start (%s): not "
                         "scanned until a reload or restart that can", strerror(errno));
                publish(a->targets[i], s);
            }
            rc = -1;
        }
    return rc;
}

static long long
fence_of(void *arg)
{
    return leader_fence(arg);
}

static int64_t
quiet_of(void *arg)
{
    return leader_quiet_since(arg);
}

/* An election that could not start: this agent leads nothing. */
static long long
no_fence(void *arg)
{
    (void)arg;
    return 0;
}

/* The election for cfg: kept across a reload with the same leader
 * settings (the term goes on), else stopped (the lock released) and
 * started anew.  Before the old config is freed. */
static int
elect(struct agent *a, const struct config *old, const struct config *cfg)
{
    struct leader *prev = a->leader, *next;

    if (prev != NULL && old != NULL && leader_same(old, cfg)) {
        leader_rebind(prev, cfg);
        return 0;
    }
    next = cfg->leader_target != NULL ? leader_start(cfg, prev) : NULL;
    /* views read a->leader under a->mu: swapped there, freed after */
    pthread_mutex_lock(&a->mu);
    a->leader = next;
    pthread_mutex_unlock(&a->mu);
    /* the gate moves before the old leader goes: never a moment ungated */
    if (cfg->leader_target != NULL && next == NULL)
        alerts_set_leader(a->alerts, no_fence, NULL, NULL, 0);
    else
        alerts_set_leader(a->alerts, next != NULL ? fence_of : NULL,
                          next != NULL ? quiet_of : NULL, next, cfg->leader_lease_ms);
    leader_stop(prev, cfg->leader_target != NULL ? "the leader settings changed: electing "
                "again with the new ones" : "the reload removed leader_target: this agent "
                "sends to the direct sinks itself, without an election");
    leader_kick(next);          /* the lock prev held is free: take it first */
    return cfg->leader_target != NULL && next == NULL ? -1 : 0;
}

/* The checks of the other shards for cfg: kept across a reload that
 * names the same peers (their down counts go on), else started anew. */
static void
check_peers(struct agent *a, const struct config *old, const struct config *cfg)
{
    struct peers *prev = a->peers, *next;

    if (old != NULL && peers_same(old, cfg))
        return;
    next = peers_start(cfg);
    /* views read a->peers under a->mu: swapped there, freed after */
    pthread_mutex_lock(&a->mu);
    a->peers = next;
    pthread_mutex_unlock(&a->mu);
    peers_stop(prev);
}

int
agent_start(struct agent *a, struct config *cfg)
{
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->mu, NULL);
    a->started_ms = a->reload.ok_ms = clock_now_ms();
    if (!cfg->samples_off && (a->waits = waitstats_new(cfg)) == NULL)
        return -1;
    if ((a->alerts = alerts_new(cfg)) == NULL)
        return -1;
    if ((a->trend = classtrend_new(cfg)) == NULL)
        return -1;
    if ((a->throttle = throttle_new()) == NULL)
        return -1;
    if ((a->graph = graph_new()) == NULL)
        return -1;
    if (elect(a, NULL, cfg) == -1)
        return -1;
    check_peers(a, NULL, cfg);
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
    /* a target scanning for want of a class in notify-keyspace-events
     * reads the setting again at its first scan, config changed or not */
    for (i = 0; i < cfg->ntargets; i++)
        follow_reload(list[i]->follow);
    free(old);
    if (elect(a, oldcfg, cfg) == -1)
        log_warnx("reload: cannot start the leader election; direct sinks are silent "
                  "until a reload or restart that can");
    check_peers(a, oldcfg, cfg);
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
    classtrend_configure(a->trend, cfg);
    /* the alert set stays (firing alerts keep firing); sinks are rebuilt */
    if (alerts_configure(a->alerts, cfg) == -1)
        log_warnx("reload: out of memory; alerting keeps the previous [rules] and "
                  "[webhook] settings");
    (void)start_all(a);     /* a target that cannot start is said, and down */
    return 0;

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
    groups_free(a->groups, a->ngroups);
    waitstats_free(a->waits);
    classtrend_free(a->trend);
    alerts_free(a->alerts);     /* a bounded last chance for queued notices */
    /* after: the notices above were the leader's */
    leader_stop(a->leader, "the agent stops; direct sinks stop");
    peers_stop(a->peers);
    config_free(a->cfg);        /* after: the leader's thread reads it */
    throttle_free(a->throttle);
    graph_free(a->graph);
    pthread_mutex_destroy(&a->mu);
    memset(a, 0, sizeof(*a));
}

/* The class trends into v (a->trend is set once at start, own lock). */
static int
view_trend(struct agent *a, struct view *v)
{
    if (a->trend == NULL)
        return 0;
    if ((v->trend = malloc(sizeof(*v->trend))) == NULL)
        return -1;
    if (classtrend_view(a->trend, clock_mono_ms(), v->trend) == -1) {
        free(v->trend);
        v->trend = NULL;
        return -1;
    }
    return 0;
}

/* The view's copy of cfg's replica and shard settings; -1 on ENOMEM
 * (what was copied is freed by view_release). */
static int
view_copy_ha(struct view *v, const struct config *cfg)
{
    size_t i;

    v->shard_index = cfg->shard_index;
    v->shard_total = cfg->shard_total;
    if (cfg->replica != NULL && (v->replica = strdup(cfg->replica)) == NULL)
        return -1;
    if (cfg->nshard_peers != 0) {
        if ((v->shard_peers = calloc(cfg->nshard_peers, sizeof(char *))) == NULL)
            return -1;
        for (i = 0; i < cfg->nshard_peers; i++)
            if ((v->shard_peers[i] = strdup(cfg->shard_peers[i])) == NULL)
                return -1;
    }
    if (cfg->naway == 0)
        return 0;
    if ((v->away = calloc(cfg->naway, sizeof(*v->away))) == NULL)
        return -1;
    for (i = 0; i < cfg->naway; i++) {
        if ((v->away[i].name = strdup(cfg->away[i].name)) == NULL)
            return -1;
        v->away[i].shard = cfg->away_shard[i];
        v->naway = i + 1;
    }
    return 0;
}

void
agent_trend_sample(struct agent *a, const struct view *v)
{
    const struct snapshot *snaps[64], **p = snaps;
    size_t i;

    if (a->trend == NULL)
        return;
    if (v->ntargets > 64 && (p = calloc(v->ntargets, sizeof(*p))) == NULL)
        return;
    for (i = 0; i < v->ntargets; i++)
        p[i] = snapshot_shown(v->targets[i].snap);
    classtrend_sample(a->trend, p, v->ntargets, clock_mono_ms());
    if (p != snaps)
        free(p);
}

int
agent_view(struct agent *a, struct view *v)
{
    const struct target_conf *tc;
    size_t i;

    memset(v, 0, sizeof(*v));
    pthread_mutex_lock(&a->mu);
    v->targets = calloc(a->ntargets ? a->ntargets : 1, sizeof(*v->targets));
    if (v->targets == NULL)
        goto fail;
    v->top_offenders = a->cfg->top_offenders;
    v->started_ms = a->started_ms;
    v->reload = a->reload;
    if (view_copy_ha(v, a->cfg) == -1)
        goto fail;
    if (a->leader != NULL) {
        v->has_leader = true;
        leader_state(a->leader, &v->leader);
    }
    if (peers_view(a->peers, &v->peers, &v->npeers) == -1)
        goto fail;
    v->alerts = a->alerts;
    v->releases = a->releases;
    v->throttle = a->throttle;
    v->graph = a->graph != NULL ? graph_latest(a->graph) : NULL;
    for (i = 0; i < a->ntargets; i++) {
        struct target_rt *t = a->targets[i];

        v->targets[i].name = strdup(t->name);
        if (v->targets[i].name == NULL)
            goto fail;
        /* from a->cfg, which a reload swaps under a->mu: t->conf still
         * points into the config a reload frees, until the target runs
         * again */
        if ((tc = config_target(a->cfg, t->name)) != NULL) {
            char addr[CONFIG_ADDRESS_MAX];

            config_target_address(tc, addr, sizeof(addr));
            if ((v->targets[i].address = strdup(addr)) == NULL) {
                v->ntargets = i + 1;
                goto fail;
            }
        }
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
        if (group_view(a->groups[i], &v->groups[i]) == -1)
            goto fail;
        v->ngroups = i + 1;
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
    if (view_trend(a, v) == -1)
        goto fail_unlocked;
    /* the leases that ran out: process-wide, their own lock */
    if ((v->lease = malloc(sizeof(*v->lease))) == NULL)
        goto fail_unlocked;
    if (lease_view_take(v->lease) == -1) {
        free(v->lease);
        v->lease = NULL;
        goto fail_unlocked;
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
        free(v->targets[i].address);
        snapshot_unref(v->targets[i].snap);
    }
    free(v->targets);
    for (i = 0; i < v->ngroups; i++) {
        free(v->groups[i].name);
        redlock_report_unref(v->groups[i].report);
    }
    free(v->groups);
    graph_report_unref(v->graph);
    for (i = 0; i < v->naway; i++)
        free(v->away[i].name);
    free(v->away);
    for (i = 0; v->shard_peers != NULL && i < (size_t)v->shard_total; i++)
        free(v->shard_peers[i]);
    free(v->shard_peers);
    free(v->peers);
    free(v->replica);
    if (v->wait != NULL) {
        waitstats_view_release(v->wait);
        free(v->wait);
    }
    if (v->trend != NULL) {
        classtrend_view_release(v->trend);
        free(v->trend);
    }
    if (v->lease != NULL) {
        lease_view_release(v->lease);
        free(v->lease);
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

/*
 * The targets are scanned on threads of their own and all joined before
 * anything else is allocated, so a failure past that point has only
 * snapshots and names to drop.
 */
int
agent_scan_once(const struct config *cfg, struct view *v)
{
    size_t n = cfg->ntargets ? cfg->ntargets : 1, i;
    struct once_job *jobs;
    int failed = 0;

    memset(v, 0, sizeof(*v));
    jobs = calloc(n, sizeof(*jobs));
    if (jobs == NULL)
        goto nomem;
    for (i = 0; i < cfg->ntargets; i++) {
        jobs[i].conf = &cfg->targets[i];
        rules_from(&jobs[i].rules, cfg, cfg->targets[i].name);
        jobs[i].started = pthread_create(&jobs[i].thread, NULL, once_main, &jobs[i]) == 0;
        if (!jobs[i].started)
            once_main(&jobs[i]);
    }
    for (i = 0; i < cfg->ntargets; i++)
        if (jobs[i].started)
            pthread_join(jobs[i].thread, NULL);
    if ((v->targets = calloc(n, sizeof(*v->targets))) == NULL)
        goto nomem;
    for (i = 0; i < cfg->ntargets; i++) {
        if ((v->targets[i].name = strdup(cfg->targets[i].name)) == NULL)
            goto nomem;
        v->targets[i].snap = jobs[i].snap;
        jobs[i].snap = NULL;
        v->ntargets = i + 1;
        if (v->targets[i].snap == NULL || !v->targets[i].snap->ok)
            failed++;
    }
    v->top_offenders = cfg->top_offenders;
    v->now_ms = clock_now_ms();
    if (view_copy_ha(v, cfg) == -1)
        goto nomem;
    if (groups_compare_once(cfg, v) == -1)
        goto nomem;
    free(jobs);
    return failed;
nomem:
    for (i = 0; jobs != NULL && i < cfg->ntargets; i++)
        snapshot_unref(jobs[i].snap);
    free(jobs);
    view_release(v);
    errno = ENOMEM;
    return -1;
}
