/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * follow.c - follow mode: keyspace notifications keep a target's lock view
 * current between full scans, so the cost to Redis follows lock churn,
 * not keyspace size.
 *
 * A full scan in follow mode (incremental = on, or auto when the server's
 * notify-keyspace-events covers ksub.h's KSUB_FLAGS_NEEDED) subscribes
 * first (follow_attach(), before the pass reads a key, so nothing the
 * pass misses goes unannounced) and keeps a copy of every lock it read
 * (follow_keep(): type, PTTL, IDLETIME, the bounded value or fields, when
 * it was read) in a key map.  From then on, scanner_follow():
 *
 *   - a reader thread takes the subscriber's messages and puts the keys
 *     in the pending set, coalescing a burst for one key into one entry
 *     (keymap.h), capped at FOLLOW_PENDING_MAX: a flood past the cap is
 *     counted (overflows_total) and ends in a full scan, never in memory
 *     growing with the flood;
 *   - the target's thread re-reads the pending keys that match the
 *     target's patterns, FOLLOW_READ_BATCH at a time, with the scanner's
 *     own pipelined reads (stream_read_batch(): OBJECT IDLETIME, TYPE,
 *     PTTL, then GETRANGE or HLEN + HSCAN), and replaces or drops their
 *     records; an event on a client registry key only asks for a new
 *     look-up.  The event's name is not trusted to say what happened: a
 *     re-read tells (a "del" may already be followed by a new SET);
 *   - when anything changed, at most every FOLLOW_PUBLISH_MS, and
 *     whenever a lock's state is due to change by time alone (leak_grace
 *     after it lost its TTL, max_hold after its holder came), a new
 *     snapshot is made from the map exactly as a scan makes one
 *     (record_key() per lock with the time it was read, the registry
 *     look-up, record_finish()), so the states, first-seen times,
 *     metrics, alerts and API downstream are the same.  A key's first
 *     sighting and its loss of TTL are timed at its re-read, which follows
 *     the event within the lag (lockwatch_follow_lag_seconds), not a scan
 *     later.
 *
 * Pub/sub is at-most-once, so scanner_follow() returns for a full scan
 * (a reconcile) every reconcile_interval, and at once when events may
 * have been lost: the subscriber connection broke (a restart, a Sentinel
 * failover, the server's pubsub output-buffer limit), the data
 * connection failed, the pending set overflowed, or the sentinels name
 * another primary.  A reconcile compares what it found with the map and
 * counts the keys it had to fix (a key with an event during the pass is
 * not drift: it is re-read afterwards).  Two scheduled reconciles in a
 * row that fix keys mean notifications are being lost: the snapshot says
 * so (drift, note: /readyz and the log).  With auto and a CONFIG GET the
 * ACL denies, the setting cannot be checked: the target follows on trust,
 * reconciling every scan_interval until the first notification arrives,
 * and goes back to scanning when such a reconcile finds drift while no
 * notification ever came.
 *
 * A cluster target subscribes on every shard's primary (each publishes
 * its own keyspace events) and re-reads each key on the primary serving
 * its slot; a topology that changes (checked every scan_interval), like
 * a lost subscription, means a reconcile.  With scan_replicas a cluster
 * scans (a replica may not yet have what its primary's event
 * announced).  lockwatchd --once never follows.
 *
 * followread.c holds the records, the re-reads and the snapshots made
 * from them; this file the subscriptions, the attaching to a full scan,
 * the reconcile's count and the loop.
 */
#include "collectors/scan/follow_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/redis/conn.h"
#include "collectors/redis/target.h"
#include "common/clock.h"
#include "common/keytext.h"

/* ---- the reader threads ------------------------------------------------------- */

static void
on_event(void *arg, const char *key, size_t keylen, const char *event, size_t evlen)
{
    struct follow *fw = arg;

    (void)event;
    (void)evlen;
    pthread_mutex_lock(&fw->mu);
    fw->events_total++;
    if (!fw->overflow &&
        keymap_put(fw->pending, key, keylen, NULL, clock_mono_ms(), NULL) == -1)
        fw->overflow = true;    /* the cap (or memory): a full scan repairs it */
    pthread_cond_signal(&fw->cv);
    pthread_mutex_unlock(&fw->mu);
}

static void *
reader_main(void *arg)
{
    struct fsub *fs = arg;
    struct follow *fw = fs->fw;
    char err[256];

    while (!atomic_load(&fw->th_quit)) {
        if (ksub_read(fs->k, 100, on_event, fw, err, sizeof(err)) == -1) {
            pthread_mutex_lock(&fw->mu);
            if (!fw->sub_lost)
                snprintf(fw->sub_err, sizeof(fw->sub_err), "%s", err);
            fw->sub_lost = true;
            pthread_cond_signal(&fw->cv);
            pthread_mutex_unlock(&fw->mu);
            break;
        }
    }
    return NULL;
}

/* Stop the readers and close the subscriptions.  The records stay (a
 * reconcile compares with them) but are no longer followed. */
static void
unsubscribe(struct follow *fw)
{
    struct keymap *fresh;
    size_t i;

    fw->following = false;
    atomic_store(&fw->th_quit, 1);
    for (i = 0; i < fw->nsubs; i++) {
        if (fw->subs[i].th_running)
            pthread_join(fw->subs[i].th, NULL);
        fw->subs[i].th_running = false;
        ksub_close(fw->subs[i].k);
        fw->subs[i].k = NULL;
    }
    fw->nsubs = 0;
    fw->sub_key = 0;
    fresh = keymap_new(FOLLOW_PENDING_MAX);
    pthread_mutex_lock(&fw->mu);
    if (fresh != NULL) {
        /* on ENOMEM the old set stays: never NULL, and a little stale at
         * worst (its keys are re-read once more) */
        keymap_free(fw->pending, NULL);
        fw->pending = fresh;
    }
    fw->overflow = false;
    fw->sub_lost = false;
    fw->sub_err[0] = '\0';
    pthread_mutex_unlock(&fw->mu);
}

/* Not following any more: the records go too. */
static void
stop_following(struct follow *fw)
{
    unsubscribe(fw);
    keymap_free(fw->locks, frec_free);
    fw->locks = NULL;
}

static void
forget_topology(struct follow *fw)
{
    cluster_topo_clear(&fw->topo);
    memset(&fw->topo, 0, sizeof(fw->topo));
    free(fw->shards);
    fw->shards = NULL;
    fw->nshards = 0;
}

void
follow_free(struct scanner *sc)
{
    struct follow *fw = sc->fw;

    if (fw == NULL)
        return;
    stop_following(fw);
    forget_topology(fw);
    keymap_free(fw->pending, NULL);
    pthread_mutex_destroy(&fw->mu);
    pthread_cond_destroy(&fw->cv);
    free(fw);
    sc->fw = NULL;
}

static struct follow *
follow_get(struct scanner *sc)
{
    struct follow *fw;

    if (sc->fw != NULL)
        return sc->fw;
    if ((fw = calloc(1, sizeof(*fw))) == NULL)
        return NULL;
    if ((fw->pending = keymap_new(FOLLOW_PENDING_MAX)) == NULL) {
        free(fw);
        return NULL;
    }
    pthread_mutex_init(&fw->mu, NULL);
    pthread_cond_init(&fw->cv, NULL);
    sc->fw = fw;
    return fw;
}

/* ---- attaching to a pass ------------------------------------------------------- */

/* What the subscriptions depend on: where, as whom, which patterns. */
static uint64_t
sub_key_of(const struct scanner *sc, const struct target_conf *t,
           const struct target_conf *nodes, size_t n)
{
    char buf[600];
    uint64_t h;
    size_t i;
    int w;

    w = snprintf(buf, sizeof(buf), "%016llx|%d", (unsigned long long)sc->conn_key,
                 (int)t->incremental);
    h = keytext_hash(buf, w > 0 && (size_t)w < sizeof(buf) ? (size_t)w : 0);
    for (i = 0; i < n; i++) {
        w = snprintf(buf, sizeof(buf), "%s|%d", nodes[i].host, nodes[i].port);
        h = h * 0x100000001b3ULL ^ keytext_hash(buf, w > 0 && (size_t)w < sizeof(buf) ?
                                                 (size_t)w : 0);
    }
    for (i = 0; i < t->npatterns; i++)
        h = h * 0x100000001b3ULL ^ keytext_hash(t->patterns[i], strlen(t->patterns[i]));
    return h | 1;
}

#define note(fw, ...) scan_errf((fw)->note, sizeof((fw)->note), __VA_ARGS__)

/* Subscribe on every node, each with its reader thread.  false (nothing
 * subscribed, fw->note saying why) when one cannot be. */
static bool
subscribe(struct follow *fw, const struct target_conf *t, const struct target_conf *nodes,
          size_t n)
{
    char *pats[65];
    char err[256];
    size_t i, np = 0;

    for (i = 0; i < t->npatterns && np < 64; i++)
        pats[np++] = t->patterns[i];
    pats[np++] = (char *)REGISTRY_PREFIX "*";
    atomic_store(&fw->th_quit, 0);
    for (i = 0; i < n; i++) {
        struct fsub *fs = &fw->subs[fw->nsubs];

        fs->fw = fw;
        if ((fs->k = ksub_open(&nodes[i], pats, np, err, sizeof(err))) == NULL) {
            note(fw, "not following keyspace notifications: %s; scanning every "
                 "scan_interval", err);
            goto fail;
        }
        fw->nsubs++;
        if (pthread_create(&fs->th, NULL, reader_main, fs) != 0) {
            note(fw, "not following keyspace notifications: no thread for the subscriber; "
                 "scanning every scan_interval");
            goto fail;
        }
        fs->th_running = true;
    }
    return true;
fail:
    unsubscribe(fw);
    return false;
}

/*
 * CONFIG GET on every node (on c for a single node, else on a connection
 * of its own): 1 when all cover what is needed, 0 when one does not
 * (fw->note says which and what to add), -1 when one did not say (err),
 * -2 when c broke.
 */
static int
check_flags(struct follow *fw, redisContext *c, const struct target_conf *nodes, size_t n,
            char *err, size_t errlen)
{
    char flags[64], missing[16];
    size_t i;
    bool lost;
    int rc, all = 1;

    for (i = 0; i < n; i++) {
        redisContext *own = c != NULL ? c : redisconn_open(&nodes[i], err, errlen);

        if (own == NULL)
            return -1;
        rc = ksub_server_flags(own, &nodes[i], flags, sizeof(flags), missing,
                               sizeof(missing), &lost, err, errlen);
        if (own != c)
            redisFree(own);
        if (rc == -1 && lost && c != NULL)
            return -2;
        if (rc == 0) {
            note(fw, "not following keyspace notifications: %s:%d has "
                 "notify-keyspace-events \"%s\", which lacks \"%s\" (set it to include "
                 KSUB_FLAGS_NEEDED ", e.g. notify-keyspace-events " KSUB_FLAGS_NEEDED
                 "; README \"Follow mode\"); scanning every scan_interval", nodes[i].host,
                 nodes[i].port, flags, missing);
            return 0;
        }
        if (rc == -1)
            all = -1;
    }
    return all;
}

/*
 * Decide whether the pass's target follows, on nodes (the one node c is
 * connected to, or a cluster's primaries with c NULL), subscribe before
 * the pass reads a key, and give the run a map to fill.
 */
static void
attach(struct run *r, redisContext *c, const struct target_conf *nodes, size_t n)
{
    const struct target_conf *t = r->t;
    struct scanner *sc = r->sc;
    struct follow *fw;
    char err[256] = "";
    uint64_t key;
    bool lost;
    int rc;

    if (t->incremental == INCR_OFF || r->stop == NULL) {
        if (sc->fw != NULL) {
            stop_following(sc->fw);
            sc->fw->note[0] = '\0';
        }
        return;
    }
    if ((fw = follow_get(sc)) == NULL)
        return;                 /* out of memory: this pass scans */
    key = sub_key_of(sc, t, nodes, n);
    if (fw->gave_up && fw->gave_up_key == key)
        return;
    fw->gave_up = false;
    pthread_mutex_lock(&fw->mu);
    lost = fw->sub_lost;
    pthread_mutex_unlock(&fw->mu);
    if (fw->nsubs > 0 && fw->sub_key == key && !lost)
        goto fill;
    unsubscribe(fw);
    rc = check_flags(fw, c, nodes, n, err, sizeof(err));
    if (rc == -2)
        return;                 /* the pass will fail on the connection */
    if (rc == 0) {
        fw->gave_up = true;
        fw->gave_up_key = key;
        return;
    }
    fw->verified = rc == 1;
    if (!subscribe(fw, t, nodes, n)) {
        if (t->incremental == INCR_AUTO) {
            fw->gave_up = true;
            fw->gave_up_key = key;
        }
        return;
    }
    fw->sub_key = key;
    if (fw->verified)
        fw->note[0] = '\0';
    else if (t->incremental == INCR_AUTO)
        note(fw, "following keyspace notifications on trust: %s; a full scan every "
             "scan_interval until the first notification arrives", err);
    else
        note(fw, "following keyspace notifications on trust (incremental = on): %s", err);
    if (fw->why == WHY_NONE)
        fw->why = WHY_LOSS;     /* a new subscription: whatever came before is lost */
fill:
    r->fill = keymap_new(0);
}

void
follow_attach(struct run *r)
{
    struct target_conf node;

    redisconn_node(r->t, r->sc->host, r->sc->port, &node);
    attach(r, r->sc->c, &node, 1);
}

void
follow_attach_cluster(struct run *r, const struct cluster_topo *topo)
{
    struct target_conf nodes[FOLLOW_NODES_MAX];
    size_t i;

    if (r->t->incremental != INCR_OFF && r->stop != NULL &&
        (r->t->scan_replicas || topo->nshards > FOLLOW_NODES_MAX)) {
        struct follow *fw = follow_get(r->sc);

        if (fw != NULL) {
            stop_following(fw);
            note(fw, "not following keyspace notifications: %s; scanning every "
                 "scan_interval", r->t->scan_replicas ? "scan_replicas = yes (a replica "
                 "may not yet have what its primary's notification announced)" :
                 "more shards than follow mode subscribes to (64)");
        }
        return;
    }
    for (i = 0; i < topo->nshards; i++)
        redisconn_node(r->t, topo->shards[i].primary.host, topo->shards[i].primary.port,
                       &nodes[i]);
    attach(r, NULL, nodes, topo->nshards);
}

/* ---- after a full scan ---------------------------------------------------------- */

/* Keys that differ between the old map and the new, except those with
 * an event since the pass began (they are re-read next). */
static uint64_t
count_fixed(struct follow *fw, struct keymap *old, struct keymap *now)
{
    const char *k;
    size_t len, pos = 0;
    void *v, *o;
    uint64_t fixed = 0;

    pthread_mutex_lock(&fw->mu);
    while (keymap_next(now, &pos, &k, &len, &v, NULL))
        if (!keymap_get(fw->pending, k, len, NULL, NULL) &&
            (!keymap_get(old, k, len, &o, NULL) ||
             ((struct frec *)o)->content != ((struct frec *)v)->content))
            fixed++;
    pos = 0;
    while (keymap_next(old, &pos, &k, &len, NULL, NULL))
        if (!keymap_get(fw->pending, k, len, NULL, NULL) && !keymap_get(now, k, len, NULL, NULL))
            fixed++;
    pthread_mutex_unlock(&fw->mu);
    return fixed;
}

/* A cluster pass that saw every shard: keep its topology and report. */
static int
keep_topology(struct follow *fw, const struct cluster_topo *topo, const struct snapshot *s)
{
    struct cluster_topo copy;

    memset(&copy, 0, sizeof(copy));
    copy.shards = calloc(topo->nshards ? topo->nshards : 1, sizeof(*copy.shards));
    copy.slot_shard = calloc(CLUSTER_SLOTS, sizeof(*copy.slot_shard));
    if (copy.shards == NULL || copy.slot_shard == NULL) {
        cluster_topo_clear(&copy);
        return -1;
    }
    memcpy(copy.shards, topo->shards, topo->nshards * sizeof(*copy.shards));
    memcpy(copy.slot_shard, topo->slot_shard, CLUSTER_SLOTS * sizeof(*copy.slot_shard));
    copy.nshards = topo->nshards;
    forget_topology(fw);
    if ((fw->shards = calloc(s->nshards ? s->nshards : 1, sizeof(*fw->shards))) == NULL) {
        cluster_topo_clear(&copy);
        return -1;
    }
    memcpy(fw->shards, s->shards, s->nshards * sizeof(*fw->shards));
    fw->nshards = s->nshards;
    fw->topo = copy;
    return 0;
}

void
follow_scanned(struct run *r, struct snapshot *s, const struct cluster_topo *topo)
{
    struct follow *fw = r->sc->fw;
    uint64_t fixed = 0, events;
    size_t i;
    bool whole = s != NULL && s->ok;

    if (r->fill == NULL)
        return;
    for (i = 0; whole && s->shards != NULL && i < s->nshards; i++)
        whole = s->shards[i].ok;        /* a shard not read has no records */
    fw = fw != NULL && whole && topo != NULL && keep_topology(fw, topo, s) == -1 ? NULL : fw;
    if (fw != NULL)
        fw->cluster = topo != NULL;
    if (fw == NULL || !whole) {
        keymap_free(r->fill, frec_free);
        r->fill = NULL;
        if (r->sc->fw != NULL)
            unsubscribe(r->sc->fw);     /* the pass failed: start over */
        return;
    }
    if (fw->locks != NULL) {
        fixed = count_fixed(fw, fw->locks, r->fill);
        fw->fixed_total += fixed;
        fw->reconciles_total++;
    }
    pthread_mutex_lock(&fw->mu);
    events = fw->events_total;
    pthread_mutex_unlock(&fw->mu);
    if (fw->why == WHY_SCHEDULED && fixed > 0) {
        if (!fw->verified && events == 0 && r->t->incremental == INCR_AUTO) {
            note(fw, "not following keyspace notifications: none arrived, and a full scan "
                 "found %llu key%s changed (is notify-keyspace-events set to include "
                 KSUB_FLAGS_NEEDED "?  README \"Follow mode\"); scanning every scan_interval",
                 (unsigned long long)fixed, fixed == 1 ? "" : "s");
            uint64_t key = fw->sub_key;         /* unsubscribing clears it */

            keymap_free(r->fill, frec_free);
            r->fill = NULL;
            stop_following(fw);
            fw->gave_up = true;
            fw->gave_up_key = key;
            fw->why = WHY_NONE;
            return;
        }
        if (++fw->drift_streak >= DRIFT_STREAK)
            note(fw, "follow drift: %u full scans in a row found keys changed without a "
                 "notification (%llu this time; lockwatch_reconcile_fixed_keys_total): "
                 "events are being lost", fw->drift_streak, (unsigned long long)fixed);
    } else if (fw->why == WHY_SCHEDULED) {
        if (fw->drift_streak >= DRIFT_STREAK)
            fw->note[0] = '\0';
        fw->drift_streak = 0;
    }
    keymap_free(fw->locks, frec_free);
    fw->locks = r->fill;
    r->fill = NULL;
    fw->following = fw->nsubs > 0;
    fw->why = WHY_NONE;
    fw->reconcile_mono = clock_mono_ms();
    fw->scan_started_ms = s->started_ms;
    fw->scan_finished_ms = clock_now_ms();
    fw->scan_duration_s = (double)(clock_mono_ms() - r->start_mono) / 1000.0;
    fw->scan_keys = s->keys_examined;
}

void
follow_stamp(struct scanner *sc, struct snapshot *s)
{
    struct follow *fw = sc->fw;

    if (fw == NULL)
        return;
    pthread_mutex_lock(&fw->mu);
    s->follow.events_total = fw->events_total;
    pthread_mutex_unlock(&fw->mu);
    s->follow.active = fw->following;
    s->follow.fixed_total = fw->fixed_total;
    s->follow.overflows_total = fw->overflows_total;
    s->follow.reconciles_total = fw->reconciles_total;
    s->follow.published_total = fw->published_total;
    s->follow.lag_s = fw->lag_s;
    s->follow.drift = fw->drift_streak >= DRIFT_STREAK;
    snprintf(s->follow.note, sizeof(s->follow.note), "%s", fw->note);
}

/* ---- the follow loop --------------------------------------------------------------- */

/* Wait up to ms for an event (or a stop). */
static void
wait_event(struct follow *fw, int64_t ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    while (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&fw->mu);
    if (keymap_count(fw->pending) == 0 && !fw->sub_lost && !fw->overflow)
        pthread_cond_timedwait(&fw->cv, &fw->mu, &ts);
    pthread_mutex_unlock(&fw->mu);
}

/* Do the nodes followed still serve the target?  Sentinel: the primary
 * the sentinels name, ROLE-checked (target.h).  Cluster: the same
 * primaries serving the same slots (a discovery, CLUSTER SHARDS).  A
 * discovery that fails says nothing: the re-reads will tell. */
static bool
moved_on(struct scanner *sc, const struct target_conf *t)
{
    struct follow *fw = sc->fw;
    struct cluster_topo now;
    struct target_conf node;
    char err[256];
    size_t i;
    bool moved = false;

    if (t->mode == TARGET_SENTINEL) {
        redisconn_node(t, sc->host, sc->port, &node);
        return !target_still_current(t, &sc->sentinel_first, sc->c, &node);
    }
    memset(&now, 0, sizeof(now));
    if (cluster_discover(t, sc->known, sc->nknown, &now, err, sizeof(err)) == -1)
        return false;
    if (now.nshards != fw->topo.nshards ||
        memcmp(now.slot_shard, fw->topo.slot_shard, CLUSTER_SLOTS * sizeof(*now.slot_shard)))
        moved = true;
    for (i = 0; !moved && i < now.nshards; i++)
        moved = now.shards[i].primary.port != fw->topo.shards[i].primary.port ||
            strcmp(now.shards[i].primary.host, fw->topo.shards[i].primary.host) != 0;
    cluster_topo_clear(&now);
    return moved;
}

int
scanner_follow(struct scanner *sc, const struct target_conf *t, const struct scan_rules *rules,
               const atomic_int *stop, scan_publish_fn *publish, void *arg)
{
    struct follow *fw = sc->fw;
    struct run r;
    /* next_due 1: a first snapshot from the records at once, which finds
     * when the scan's locks change state by time alone */
    int64_t last_pub = 0, check = clock_mono_ms(), oldest = 0, next_due = 1, interval;
    bool dirty = false, lost;
    int rc;

    if (fw == NULL || !fw->following || (!fw->cluster && sc->c == NULL))
        return -1;
    memset(&r, 0, sizeof(r));
    r.sc = sc;
    r.t = t;
    r.rules = rules;
    r.stop = stop;
    interval = t->reconcile_interval_ms;
    while (!atomic_load(stop)) {
        int64_t now;

        wait_event(fw, FOLLOW_TICK_MS);
        if (atomic_load(stop))
            break;
        pthread_mutex_lock(&fw->mu);
        lost = fw->sub_lost;
        if (lost)
            snprintf(r.err, sizeof(r.err), "%s", fw->sub_err);
        pthread_mutex_unlock(&fw->mu);
        if (lost) {
            unsubscribe(fw);
            return 0;
        }
        rc = follow_apply_pending(&r, &oldest);
        if (rc == -2) {
            fw->why = WHY_LOSS;         /* the subscription stays */
            return 0;
        }
        if (rc == -1) {
            /* a broken connection or a refused read: the full scan
             * reconnects, or fails and says why */
            unsubscribe(fw);
            scanner_disconnect(sc);
            return 0;
        }
        if (rc == 1)
            dirty = true;
        now = clock_mono_ms();
        if ((dirty && now - last_pub >= FOLLOW_PUBLISH_MS) ||
            (next_due > 0 && clock_now_ms() >= next_due)) {
            struct snapshot *s;

            fw->registry_dirty = false;
            s = follow_snapshot(sc, t, rules, stop, &next_due);
            if (s == NULL) {
                unsubscribe(fw);
                scanner_disconnect(sc);
                return 0;
            }
            now = clock_mono_ms();
            if (oldest > 0)
                fw->lag_s = (double)(now - oldest) / 1000.0;
            oldest = 0;
            s->counters = sc->counters;
            fw->published_total++;
            follow_stamp(sc, s);
            publish(arg, s);
            last_pub = now;
            dirty = false;
        }
        /* unverified auto: a reconcile every scan_interval until an event
         * proves the notifications arrive */
        pthread_mutex_lock(&fw->mu);
        if (!fw->verified && fw->events_total == 0 && t->incremental == INCR_AUTO &&
            t->scan_interval_ms < interval)
            interval = t->scan_interval_ms;
        else if (fw->events_total > 0)
            interval = t->reconcile_interval_ms;
        pthread_mutex_unlock(&fw->mu);
        if (now - fw->reconcile_mono >= interval) {
            fw->why = WHY_SCHEDULED;
            return 0;
        }
        if (t->mode != TARGET_STANDALONE && now - check >= t->scan_interval_ms) {
            check = now;
            if (moved_on(sc, t)) {
                fw->why = WHY_LOSS;
                unsubscribe(fw);
                if (t->mode == TARGET_SENTINEL)
                    scanner_disconnect(sc);
                return 0;
            }
        }
    }
    return 0;
}
