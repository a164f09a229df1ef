/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerts.c - the tick that runs the rules, turns the alert set's events
 * into notices per sink, and queues them (see alerts.h).
 *
 * Per target the handle remembers which snapshot it judged last (the
 * target's scan count and finish time), so per-lock alerts are re-judged
 * once per scan, not once per tick: a scan every 15 s with 10,000 bad
 * locks would otherwise cost the main thread a full pass every second.
 *
 * Notices are rendered here, on the main thread, when they are queued:
 * the body is then fixed bytes (what is signed and what a retry resends),
 * and the queue's byte bound is exact.  Events of one kind are grouped
 * into batches of SINK_BATCH_MAX alerts, one request each.
 */
#include "alerts/alerts.h"
#include "collectors/locks/lockjson.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alerts/text.h"
#include "collectors/lease/lostat.h"
#include "common/clock.h"
#include "common/keyhash.h"
#include "common/log.h"

#define ALERTS_LOG_MAX 10     /* alert lines logged per tick */
#define ALERTS_REMOVED_MAX 64 /* targets a reload removed, remembered */

struct seen_target {
    char *name;
    uint64_t scans;
    int64_t finished_ms;
};

struct alerts_sink {
    char *name;
    const struct sink_type *type;
    bool fresh;                     /* new at a reload (or on again after a
                                     * 410): hears the firing alerts at the
                                     * next tick it speaks (tell_fresh) */
    bool fresh_wait;                /* tell_fresh's scratch */
    bool watchdog;                  /* watchdog = on (alertmanager) */
    bool watchdog_posted;           /* since this configure */
};

/* Which sinks a dispatch() is for. */
#define TO_ALL          0
#define TO_LEADER_ONLY  1           /* the direct (leader_only) sinks */
#define TO_FRESH        2           /* the sinks new at a reload */

struct alerts {
    pthread_mutex_t mu;
    struct alertset *set;
    struct notifier *notifier;
    struct rules_conf rules;        /* the config's [rules], copied whole: a
                                     * reload frees the config it came from */
    char *generator_url;
    char *replica;                  /* [agent] replica, copied (a reload frees
                                     * the config); NULL: none */
    char *runbook;                  /* [rules] runbook_url, copied; NULL: none */
    int64_t born_ms;                /* Unix ms: LockwatchWatchdog's startsAt */
    notifier_fence_fn fence;        /* leader election (alerts_set_leader);
                                     * NULL: none */
    alerts_quiet_fn quiet;
    void *fence_arg;
    long long last_fence;           /* fence(arg) at the last tick */
    struct alerts_sink *sinks;      /* the notifier's, in the same order */
    size_t nsinks;
    bool has_refresh;               /* a sink takes EV_REFRESH */
    bool has_leader_only;           /* a sink is leader_only (generic, slack) */
    bool configured;                /* once: later configures are reloads */
    struct seen_target *seen;
    size_t nseen;
    uint64_t judged_seq;            /* the newest timeline event the rules judged */
    uint64_t unjudged;              /* events that left the ring before a tick saw
                                     * them (alerts_stats) */
    uint64_t unjudged_said;         /* of which the log has told */
    int64_t unjudged_said_ms;       /* monotonic: when it last told */
    uint64_t explained[EVENTS_MAX]; /* seqs of the lease_lost events a change
                                     * of server explained (lost_at_change()),
                                     * ascending: the answer sticks though the
                                     * loss is forgotten or noted again */
    size_t nexplained;
    struct removed_target {     /* a reload removed it when the timeline's
                                 * newest event was `seq`: its events up to
                                 * then raise nothing, should it come back */
        char *name;
        uint64_t seq;
    } removed[ALERTS_REMOVED_MAX];
    size_t nremoved_next;       /* the next slot (a ring) */
};

int
alerts_global_init(void)
{
    return notifier_global_init();
}

void
alerts_global_cleanup(void)
{
    notifier_global_cleanup();
}


/* http://HOST:PORT/api/v1/alerts, the agent's own alert list.  A wildcard
 * listen address is no address to link to: the host name stands in. */
static char *
generator_url(const struct config *cfg)
{
    char host[300], buf[400];
    const char *h = cfg->listen_host;

    if (h[0] == '\0' || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0 ||
        strcmp(h, "*") == 0) {
        if (gethostname(host, sizeof(host) - 1) == -1)
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        h = host;
    }
    snprintf(buf, sizeof(buf), strchr(h, ':') != NULL ? "http://[%s]:%d/api/v1/alerts" :
             "http://%s:%d/api/v1/alerts", h, cfg->listen_port);
    return strdup(buf);
}

static void
sinks_free(struct alerts_sink *s, size_t n)
{
    size_t i;

    if (s == NULL)
        return;
    for (i = 0; i < n; i++)
        free(s[i].name);
    free(s);
}

int
alerts_configure(struct alerts *a, const struct config *cfg)
{
    struct notifier_sink_conf *nc = NULL;
    struct alerts_sink *sinks = NULL;
    struct sink_key *keys = NULL;
    char **urls = NULL, *gen = NULL, *replica = NULL, *runbook = NULL;
    struct notifier_stats *were = NULL;     /* the sinks before, for the 410s */
    size_t i, n = 0, cap = cfg->nwebhooks ? cfg->nwebhooks : 1, nwere = 0;
    int rc = -1;

    nc = calloc(cap, sizeof(*nc));
    sinks = calloc(cap, sizeof(*sinks));
    keys = calloc(cap, sizeof(*keys));
    urls = calloc(cap, sizeof(*urls));
    gen = generator_url(cfg);
    replica = cfg->replica != NULL ? strdup(cfg->replica) : NULL;
    runbook = cfg->runbook_url != NULL ? strdup(cfg->runbook_url) : NULL;
    if (nc == NULL || sinks == NULL || keys == NULL || urls == NULL || gen == NULL ||
        (cfg->replica != NULL && replica == NULL) ||
        (cfg->runbook_url != NULL && runbook == NULL))
        goto out;
    for (i = 0; i < cfg->nwebhooks; i++) {
        const struct webhook_conf *w = &cfg->webhooks[i];
        const struct sink_type *t = sink_type_of(w->format);

        if (t == NULL)
            continue;
        if (w->secret != NULL && sink_signing_key(w->secret, &keys[n]) == -1) {
            if (errno != EINVAL)
                goto out;
            log_warnx("webhook %s: the secret in secret_file starts with whsec_ but the rest "
                      "is not base64; this sink is off (fix the file and reload)", w->name);
            continue;
        }
        if ((urls[n] = t->endpoint(w->url)) == NULL || (sinks[n].name = strdup(w->name)) == NULL)
            goto out;
        sinks[n].type = t;
        sinks[n].watchdog = w->watchdog;
        nc[n].name = w->name;
        nc[n].type = t;
        nc[n].url = urls[n];
        nc[n].key = &keys[n];
        nc[n].delivery = w->delivery;
        n++;
    }
    if (a->notifier != NULL && notifier_stats(a->notifier, &were, &nwere) == -1)
        goto out;
    pthread_mutex_lock(&a->mu);
    if (notifier_configure(a->notifier, nc, n) == -1) {
        pthread_mutex_unlock(&a->mu);
        goto out;
    }
    a->rules = cfg->rules;
    free(a->generator_url);
    a->generator_url = gen;
    gen = NULL;
    free(a->replica);
    a->replica = replica;
    replica = NULL;
    free(a->runbook);
    a->runbook = runbook;
    runbook = NULL;
    /* a sink new at a reload (or of another format) has heard none of the
     * alerts firing: it hears them at the next tick, not at repeat_interval */
    for (i = 0; a->configured && i < n; i++) {
        size_t k;

        sinks[i].fresh = true;
        for (k = 0; k < a->nsinks; k++)
            if (strcmp(a->sinks[k].name, sinks[i].name) == 0 &&
                a->sinks[k].type == sinks[i].type)
                sinks[i].fresh = a->sinks[k].fresh;
    }
    sinks_free(a->sinks, a->nsinks);
    a->sinks = sinks;
    a->nsinks = n;
    sinks = NULL;
    a->has_refresh = false;
    a->has_leader_only = false;
    for (i = 0; i < n; i++) {
        /* a sink a 410 turned off, which the reload turns on again, missed
         * what fired meanwhile */
        for (size_t k = 0; k < nwere; k++)
            if (were[k].disabled && strcmp(were[k].name, a->sinks[i].name) == 0)
                a->sinks[i].fresh = true;
        if (a->sinks[i].type->kinds & SINK_KIND(EV_REFRESH))
            a->has_refresh = true;
        if (a->sinks[i].type->leader_only)
            a->has_leader_only = true;
    }
    a->configured = true;
    pthread_mutex_unlock(&a->mu);
    rc = 0;
out:
    /* any of the arrays may be missing here, and a row may be half made:
     * the arrays are calloc'd, so every row past the made ones is empty */
    sinks_free(sinks, cap);
    for (i = 0; keys != NULL && i < cap; i++)
        sink_key_clear(&keys[i]);
    for (i = 0; urls != NULL && i < cap; i++)
        free(urls[i]);
    free(keys);
    free(urls);
    free(nc);
    free(gen);
    free(replica);
    free(runbook);
    notifier_stats_free(were, nwere);
    return rc;
}

struct alerts *
alerts_new(const struct config *cfg)
{
    struct alerts *a = calloc(1, sizeof(*a));

    if (a == NULL)
        return NULL;
    pthread_mutex_init(&a->mu, NULL);
    a->born_ms = clock_now_ms();
    if ((a->set = alertset_new()) == NULL || (a->notifier = notifier_new()) == NULL ||
        alerts_configure(a, cfg) == -1) {
        alerts_free(a);
        return NULL;
    }
    return a;
}

static void
seen_free(struct seen_target *s, size_t n)
{
    size_t i;

    if (s == NULL)
        return;
    for (i = 0; i < n; i++)
        free(s[i].name);
    free(s);
}

/* Mark each target fresh when its snapshot was not judged before, and
 * remember the current ones.  On ENOMEM nothing is remembered, so every
 * target counts as fresh at the next tick. */
static void
mark_fresh(struct alerts *a, struct rules_target *t, size_t n)
{
    struct seen_target *now = calloc(n ? n : 1, sizeof(*now));
    size_t i, j;
    bool failed = now == NULL;

    for (i = 0; i < n; i++) {
        const struct snapshot *s = t[i].snap;
        /* a snapshot follow mode made from events is new too */
        uint64_t scans = s ? s->counters.scans_ok + s->counters.scans_error +
            s->follow.published_total : 0;
        int64_t fin = s ? s->finished_ms : 0;

        t[i].fresh = true;
        for (j = 0; j < a->nseen; j++)
            if (strcmp(a->seen[j].name, t[i].name) == 0)
                t[i].fresh = a->seen[j].scans != scans || a->seen[j].finished_ms != fin;
        if (!failed) {
            now[i].name = strdup(t[i].name);
            now[i].scans = scans;
            now[i].finished_ms = fin;
            failed = now[i].name == NULL;
        }
    }
    /* a target gone at a reload: its alerts resolve, event ones too
     * (their 15-minute hold ends; eval_events judges none of its events) */
    for (j = 0; j < a->nseen; j++) {
        for (i = 0; i < n && strcmp(a->seen[j].name, t[i].name) != 0; i++)
            ;
        if (i == n) {
            struct removed_target *r = &a->removed[a->nremoved_next++ % ALERTS_REMOVED_MAX];

            alertset_release_target(a->set, a->seen[j].name);
            free(r->name);
            r->name = strdup(a->seen[j].name);
            r->seq = events_last_seq();
        }
    }
    seen_free(a->seen, a->nseen);
    a->seen = NULL;
    a->nseen = 0;
    if (failed) {
        /* a row without a name would be handed to strcmp next tick */
        seen_free(now, n);
        return;
    }
    a->seen = now;
    a->nseen = n;
}

/* Render and queue one kind's alerts for every sink that takes it, of
 * those `to` names (TO_*).  fence: this tick's fence(arg), 0 without an
 * election. */
static void
dispatch(struct alerts *a, enum alert_event_kind kind, struct alert **list, size_t n,
         int64_t now_ms, long long tick_fence, int to)
{
    struct sink_batch b = { .kind = kind };
    size_t i, off;

    for (i = 0; i < a->nsinks; i++) {
        const struct sink_type *t = a->sinks[i].type;
        long long fence = 0;

        if (!(t->kinds & SINK_KIND(kind)) || (to == TO_LEADER_ONLY && !t->leader_only) ||
            (to == TO_FRESH && !a->sinks[i].fresh))
            continue;
        /* with a leader election, a follower says nothing to a direct sink;
         * an agent that cannot reach the election (< 0) speaks unfenced */
        if (t->leader_only && a->fence != NULL) {
            if (tick_fence == 0)
                continue;
            fence = tick_fence;
        }
        for (off = 0; off < n; off += SINK_BATCH_MAX) {
            char *body = NULL;
            size_t len = 0, k;

            b.kind = kind;
            b.alerts = (const struct alert *const *)(list + off);
            b.n = n - off < SINK_BATCH_MAX ? n - off : SINK_BATCH_MAX;
            b.now_ms = now_ms;
            b.generator_url = a->generator_url;
            b.replica = a->replica;
            b.runbook = a->runbook;
            b.fence = fence > 0 ? fence : 0;       /* unelected: none */
            if (t->render(&b, &body, &len) == -1) {
                log_warnx("webhook %s: cannot render a notice (out of memory)",
                          a->sinks[i].name);
                continue;
            }
            /* a sink that takes the refresh hears the firing ones again in
             * every refresh: a later one replaces them, still queued */
            notifier_enqueue_fenced(a->notifier, i, body, len, fence, kind == EV_RESOLVED,
                                    kind == EV_REFRESH || (kind == EV_FIRING &&
                                    (t->kinds & SINK_KIND(EV_REFRESH))) ? now_ms : 0,
                                    kind == EV_REFRESH);
            for (k = 0; k < b.n; k++)
                alert_mark_sent(list[off + k], now_ms);
        }
    }
}

/* One log line per alert that started or ended; a resolved one says what
 * it was about and since when, not its firing text again. */
static void
log_event(const struct alert_event *e)
{
    struct strbuf t;

    if (e->kind == EV_FIRING) {
        log_info("alert firing: %s: %s", alert_name_str(e->alert->name), e->alert->summary);
        return;
    }
    sb_init(&t, 1024);
    text_resolved(&t, e->alert);
    log_info("alert resolved: %s: %s", alert_name_str(e->alert->name),
             sb_failed(&t) || t.buf == NULL ? "(out of memory)" : t.buf);
    sb_release(&t);
}

/* Where the log tells an event among an evaluation's: firing before
 * resolved, then the worst severity first (enum alert_severity is worst
 * first), so that a critical start is never among those only counted. */
static int
log_rank(const struct alert_event *e)
{
    return (e->kind == EV_FIRING ? 0 : ALERT_SEVERITIES) + (int)alert_severity_of(e->alert->name);
}

/* Every start and end of an alert that names no key (a target down or
 * back, a shard, locks lost at a failover, a class: as many as there are
 * targets, shards and classes), then at most ALERTS_LOG_MAX lines of the
 * per-key ones, the most important first (log_rank; in the order of ev
 * within a rank), then how many more: ten thousand leaks at once are one
 * story, and never hide a target going down among them. */
static void
log_events(const struct alert_event *ev, size_t nev)
{
    size_t i, n = 0, firing = 0;
    int r, keyed;

    for (keyed = 0; keyed < 2; keyed++)
        for (r = 0; r < 2 * ALERT_SEVERITIES; r++)
            for (i = 0; i < nev; i++) {
                if ((ev[i].kind != EV_FIRING && ev[i].kind != EV_RESOLVED) ||
                    log_rank(&ev[i]) != r || (ev[i].alert->key != NULL) != keyed)
                    continue;
                if (!keyed || n++ < ALERTS_LOG_MAX)
                    log_event(&ev[i]);
                else if (ev[i].kind == EV_FIRING)
                    firing++;
            }
    if (n > ALERTS_LOG_MAX)
        log_info("alerts: %zu more of single locks started or ended in this evaluation (%zu "
                 "firing, %zu resolved)", n - ALERTS_LOG_MAX, firing,
                 n - ALERTS_LOG_MAX - firing);
}

/*
 * An agent that starts speaking to the direct sinks (a new leader term
 * after following, or unelected) says again what started firing since
 * quiet(): the leader before it may have died before it delivered, or
 * never have seen an alert start (the alert of the Redis that elects going
 * down).  So do the notices of a term that ended under this agent's queue
 * (the notifier drops them).  It says again the resolutions since quiet()
 * too: an alert that ended while no replica led, or that the leader
 * before saw end after its term did, is otherwise never said to have
 * ended, and a receiver keeps it open for good; one said twice is
 * harmless.  From unelected to leading it spoke all along: nothing.
 */
static void
catch_up(struct alerts *a, long long fence, int64_t now_ms)
{
    long long last = a->last_fence;
    struct alert **list, **done;
    int64_t since;
    size_t n, m;

    a->last_fence = fence;
    if (fence == 0 || fence == last || last < 0 || !a->has_leader_only)
        return;
    since = a->quiet != NULL ? a->quiet(a->fence_arg) : 0;
    list = alertset_unnotified(a->set, since, &n);
    done = alertset_resolved_since(a->set, since, &m);
    if ((list == NULL && n > 0) || (done == NULL && m > 0))
        log_warnx("alerts: out of memory; some alerts not said again to the direct sinks");
    n = list != NULL ? n : 0;
    m = done != NULL ? m : 0;
    if (n + m > 0)
        log_info("alerts: %s: %zu firing alert(s) and %zu resolved since %s sent again to "
                 "the direct sinks", fence > 0 ? "leading" : "the leader lock unreachable",
                 n, m, since > 0 ? "the last term before" : "start");
    if (n > 0)
        dispatch(a, EV_REPEAT, list, n, now_ms, fence, TO_LEADER_ONLY);
    if (m > 0)
        dispatch(a, EV_RESOLVED, done, m, now_ms, fence, TO_LEADER_ONLY);
    free(list);
    free(done);
}

/* The sinks new at a reload hear the alerts firing now (what the others
 * heard before; Alertmanager's hear them at the next refresh anyway), as
 * repeats; the alerts of this tick's own notices they had with the rest. */
static void
tell_fresh(struct alerts *a, long long fence, int64_t now_ms)
{
    struct alert **list;
    size_t i, n = 0;
    bool any = false;

    /* a direct sink of a replica that does not speak now stays fresh: it
     * hears them when this replica leads */
    for (i = 0; i < a->nsinks; i++) {
        a->sinks[i].fresh_wait = a->sinks[i].fresh && a->sinks[i].type->leader_only &&
                                 a->fence != NULL && fence == 0;
        any |= a->sinks[i].fresh && !a->sinks[i].fresh_wait;
    }
    if (!any)
        return;
    list = alertset_unnotified(a->set, 0, &n);
    if (list == NULL && n > 0) {
        log_warnx("alerts: out of memory; the sinks new at the reload hear the alerts firing "
                  "at their repeat_interval");
        n = 0;
    }
    if (n > 0) {
        for (i = 0; i < a->nsinks; i++)
            if (a->sinks[i].fresh && !a->sinks[i].fresh_wait &&
                (a->sinks[i].type->kinds & SINK_KIND(EV_REPEAT)))
                log_info("webhook %s: new at the reload (or on again): told of the %zu "
                         "alert(s) firing", a->sinks[i].name, n);
        dispatch(a, EV_REPEAT, list, n, now_ms, fence, TO_FRESH);
    }
    free(list);
    for (i = 0; i < a->nsinks; i++)
        a->sinks[i].fresh = a->sinks[i].fresh_wait;
}

/* LockwatchWatchdog to the sinks with watchdog = on (alertmanager.c):
 * with every refresh, which replaces what older ticks queued, as the
 * refresh of the alerts this tick does; and at a sink's first tick (a
 * start, a reload), which replaces nothing. */
static void
watchdog(struct alerts *a, int64_t now_ms)
{
    bool refresh = alertset_refreshed(a->set);
    size_t i;

    for (i = 0; i < a->nsinks; i++) {
        struct sink_batch b = { .kind = EV_REFRESH, .now_ms = now_ms,
                                .generator_url = a->generator_url, .replica = a->replica,
                                .watchdog_since_ms = a->born_ms };
        char *body = NULL;
        size_t len = 0;

        if (!a->sinks[i].watchdog || (a->sinks[i].watchdog_posted && !refresh))
            continue;
        if (a->sinks[i].type->render(&b, &body, &len) == -1) {
            log_warnx("webhook %s: cannot render LockwatchWatchdog (out of memory)",
                      a->sinks[i].name);
            continue;
        }
        notifier_enqueue_fenced(a->notifier, i, body, len, 0, false, now_ms,
                                a->sinks[i].watchdog_posted);
        a->sinks[i].watchdog_posted = true;
    }
}

struct event_eval {
    struct alerts *a;
    int64_t now_ms;
    uint64_t first, last;       /* the walk's oldest and newest seq */
    const struct rules_target *targets;     /* this tick's: an event of a
                                             * target not among them (one a
                                             * reload removed) raises nothing */
    size_t ntargets;
};

static bool
current_target(const struct event_eval *ee, const char *name, uint64_t seq)
{
    size_t i;

    for (i = 0; i < ALERTS_REMOVED_MAX; i++)
        if (ee->a->removed[i].name != NULL && seq <= ee->a->removed[i].seq &&
            strcmp(ee->a->removed[i].name, name) == 0)
            return false;       /* of it before a reload removed it */
    for (i = 0; i < ee->ntargets; i++)
        if (strcmp(ee->targets[i].name, name) == 0)
            return true;
    return false;
}

/* A holder's own lost line for a lock a change of server lost, the
 * holding the view before it saw (lostat.h), in either order: one loss,
 * LockLostAtFailover's (rules_eval_event).  Once explained, an event stays
 * explained (a.explained, kept while it is in the ring): a second change
 * that loses the same lock and holder, or the loss forgotten, does not
 * make its line page afterwards. */
static bool
lost_at_change(struct alerts *a, const struct event *e)
{
    size_t lo = 0, hi = a->nexplained;

    if (e->kind != EVENT_LEASE_LOST || e->holder_hash == 0 || e->seconds < 0)
        return false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (a->explained[mid] < e->seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < a->nexplained && a->explained[lo] == e->seq)
        return true;
    if (!lostat_explains(e->key_hash, e->holder_hash,
                         e->target[0] != '\0' ? keyhash(e->target, strlen(e->target)) : 0,
                         e->at_ms - (int64_t)(e->seconds * 1000.0), e->at_ms))
        return false;
    if (a->nexplained < EVENTS_MAX) {
        memmove(&a->explained[lo + 1], &a->explained[lo],
                (a->nexplained - lo) * sizeof(a->explained[0]));
        a->explained[lo] = e->seq;
        a->nexplained++;
    }
    return true;
}

/* Forget the explained events that left the ring (older than first). */
static void
explained_prune(struct alerts *a, uint64_t first)
{
    size_t k = 0;

    while (k < a->nexplained && a->explained[k] < first)
        k++;
    memmove(a->explained, a->explained + k, (a->nexplained - k) * sizeof(a->explained[0]));
    a->nexplained -= k;
}

static void
eval_one_event(const struct event *e, void *arg)
{
    struct event_eval *ee = arg;

    if (ee->first == 0)
        ee->first = e->seq;
    ee->last = e->seq;
    if (e->target[0] != '\0' && !current_target(ee, e->target, e->seq))
        return;
    rules_eval_event(ee->a->set, &ee->a->rules, e, lost_at_change(ee->a, e), ee->now_ms);
}

/* The EVENT kinds, from the ring's events (oldest first); an alert stays
 * firing 15 minutes after its newest event once that has left the ring
 * (alertset_hold).  Events pushed out of the ring before any tick saw
 * them (over EVENTS_MAX in a second) raised nothing: counted, and said at
 * most once a minute.  The ring's mutex is taken under a->mu: nothing
 * pushes an event holding a->mu. */
static void
eval_events(struct alerts *a, const struct rules_target *targets, size_t ntargets,
            int64_t now_ms)
{
    struct event_eval ee = { a, now_ms, 0, 0, targets, ntargets };
    int64_t mono = clock_mono_ms();

    events_each(0, 0, eval_one_event, &ee);
    if (ee.first > 0)
        explained_prune(a, ee.first);
    if (ee.first > a->judged_seq + 1)
        a->unjudged += ee.first - a->judged_seq - 1;
    if (ee.last > a->judged_seq)
        a->judged_seq = ee.last;
    if (a->unjudged > a->unjudged_said &&
        (a->unjudged_said_ms == 0 || mono - a->unjudged_said_ms >= 60000)) {
        log_warnx("alerts: %" PRIu64 " timeline event(s) left the ring of %d before the rules "
                  "judged them (a burst of more in a second); a LockLeaseLost or "
                  "LockLeaseOverrun among them was not raised (lockwatch_events_dropped_total, "
                  "GET /api/v1/events)", a->unjudged - a->unjudged_said, EVENTS_MAX);
        a->unjudged_said = a->unjudged;
        a->unjudged_said_ms = mono;
    }
}

void
alerts_tick(struct alerts *a, struct rules_target *targets, size_t ntargets,
            const struct rules_group *groups, size_t ngroups,
            const struct waitstats_view *w, const struct classtrend_view *tv,
            const struct graph_report *graph, int64_t now_ms)
{
    const struct alert_event *ev;
    struct alert **list = NULL;
    size_t nev = 0, i, n;
    long long fence;
    int k;

    pthread_mutex_lock(&a->mu);
    fence = a->fence != NULL ? a->fence(a->fence_arg) : 0;
    mark_fresh(a, targets, ntargets);
    alertset_begin(a->set, now_ms, clock_mono_ms());
    rules_eval(a->set, &a->rules, targets, ntargets, w, tv, now_ms);
    rules_eval_redlock(a->set, groups, ngroups, now_ms);
    eval_events(a, targets, ntargets, now_ms);
    rules_eval_graph(a->set, graph, now_ms);
    if (alertset_end(a->set, a->rules.repeat_interval_ms, a->has_refresh, &ev, &nev) == -1)
        log_warnx("alerts: out of memory; some notices of this tick are missing");
    if (nev > 0 && a->nsinks > 0 && (list = malloc(nev * sizeof(*list))) == NULL)
        log_warnx("alerts: out of memory; the notices of this tick are missing");
    for (k = 0; list != NULL && k < EV_KINDS; k++) {
        for (i = 0, n = 0; i < nev; i++)
            if (ev[i].kind == (enum alert_event_kind)k)
                list[n++] = ev[i].alert;
        if (n > 0)
            dispatch(a, (enum alert_event_kind)k, list, n, now_ms, fence, TO_ALL);
    }
    if (a->fence != NULL)
        catch_up(a, fence, now_ms);
    tell_fresh(a, fence, now_ms);
    watchdog(a, now_ms);
    log_events(ev, nev);
    pthread_mutex_unlock(&a->mu);
    free(list);
}

static json_t *
alert_json(const struct alerts *al, const struct alert *a)
{
    struct sink_batch b = { .replica = al->replica, .runbook = al->runbook };
    char fp[17];
    json_t *o = json_object();

    if (o == NULL)
        return NULL;
    snprintf(fp, sizeof(fp), "%016" PRIx64, a->fp);
    json_object_set_new(o, "labels", sink_json_labels(a));
    json_object_set_new(o, "annotations", sink_json_annotations(&b, a));
    json_object_set_new(o, "state", json_string("firing"));
    json_object_set_new(o, "startsAt", lockjson_time(a->starts_ms));
    json_object_set_new(o, "fingerprint", json_string(fp));
    json_object_set_new(o, "lastSentAt", a->last_sent_ms ? lockjson_time(a->last_sent_ms) :
                        json_null());
    return o;
}

int
alerts_render_json(struct alerts *a, char **body, size_t *len)
{
    json_t *root = json_object(), *list = json_array(), *o;
    const struct alert *al;
    size_t i, total = 0, firing[ALERT_NAMES], suppressed;

    if (root == NULL || list == NULL)
        goto fail;
    pthread_mutex_lock(&a->mu);
    for (i = 0; (al = alertset_at(a->set, i)) != NULL; i++) {
        if (al->dead || al->state != ALERT_FIRING)
            continue;
        if ((o = alert_json(a, al)) == NULL || json_array_append_new(list, o) == -1) {
            pthread_mutex_unlock(&a->mu);
            goto fail;
        }
        total++;
    }
    alertset_counts(a->set, firing, &suppressed);
    pthread_mutex_unlock(&a->mu);
    json_object_set_new(root, "alerts", list);
    json_object_set_new(root, "total", json_integer((json_int_t)total));
    json_object_set_new(root, "suppressed", json_integer((json_int_t)suppressed));
    return sink_dump(root, body, len);
fail:
    json_decref(list);
    json_decref(root);
    return -1;
}

int
alerts_stats(struct alerts *a, struct alerts_stats *st)
{
    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&a->mu);
    alertset_counts(a->set, st->firing, &st->suppressed);
    st->events_unjudged = a->unjudged;
    pthread_mutex_unlock(&a->mu);
    return notifier_stats(a->notifier, &st->sinks, &st->nsinks);
}

void
alerts_set_leader(struct alerts *a, notifier_fence_fn fence, alerts_quiet_fn quiet,
                  void *arg, int64_t grace_ms)
{
    pthread_mutex_lock(&a->mu);
    a->fence = fence;
    a->quiet = quiet;
    a->fence_arg = arg;
    notifier_set_gate(a->notifier, fence, arg, grace_ms);
    pthread_mutex_unlock(&a->mu);
}

void
alerts_stats_release(struct alerts_stats *st)
{
    notifier_stats_free(st->sinks, st->nsinks);
    memset(st, 0, sizeof(*st));
}

void
alerts_free(struct alerts *a)
{
    if (a == NULL)
        return;
    notifier_free(a->notifier, ALERTS_FLUSH_MS);
    alertset_free(a->set);
    sinks_free(a->sinks, a->nsinks);
    seen_free(a->seen, a->nseen);
    for (size_t i = 0; i < ALERTS_REMOVED_MAX; i++)
        free(a->removed[i].name);
    free(a->generator_url);
    free(a->replica);
    free(a->runbook);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
