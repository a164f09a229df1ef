/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * follow.c - follow mode: keyspace notifications keep a target's lock view
 * current between full scans, so the cost to Redis follows lock churn,
 * not keyspace size.
 *
 * Follow mode sits above the scanner and hooks into its full scans
 * (collectors/scan/scanrun.h; the scanner knows nothing of follow mode).
 * A full scan in follow mode (incremental = on, or auto when the server's
 * notify-keyspace-events covers ksub.h's KSUB_FLAGS_NEEDED) subscribes
 * first (the attach hook, before the pass reads a key, so nothing the
 * pass misses goes unannounced) and keeps a copy of every lock it read
 * (the keep hook, follow_keep(): type, PTTL, IDLETIME, the bounded value
 * or fields, when it was read) in a key map.  From then on, follow_run():
 *
 *   - a reader thread takes the subscriber's messages and puts the keys
 *     in the pending set, coalescing a burst for one key into one entry
 *     (keymap.h), capped at FOLLOW_PENDING_MAX keys and
 *     FOLLOW_PENDING_BYTES: a flood past a cap, a key over FOLLOW_KEY_MAX
 *     (never kept) and a message over the subscriber's reply limits
 *     (ksub.h: the subscription ends) are counted (overflows_total) and
 *     end in a full scan, never in memory growing with what anyone who
 *     may PUBLISH sends;
 *   - the target's thread re-reads the pending keys that match the
 *     target's patterns, FOLLOW_READ_BATCH at a time, with the scanner's
 *     own pipelined reads (scanner_reread(): OBJECT IDLETIME, TYPE,
 *     PTTL, then GETRANGE or HLEN + HSCAN), and replaces or drops their
 *     records; an event on a client registry key only asks for a new
 *     look-up.  The event's name is not trusted to say what happened: a
 *     re-read tells (a "del" may already be followed by a new SET);
 *   - when anything changed, at most every FOLLOW_PUBLISH_MS, and
 *     whenever a lock's state is due to change by time alone (leak_grace
 *     after it lost its TTL, max_hold after its holder came), a new
 *     snapshot is made from the map exactly as a scan makes one
 *     (scanner_replay(): the scanner's per-key step per lock with the
 *     time it was read, the registry look-up, the finish), so the states,
 *     first-seen times,
 *     metrics, alerts and API downstream are the same.  A key's first
 *     sighting and its loss of TTL are timed at its re-read, which follows
 *     the event within the lag (lockwatch_follow_lag_seconds), not a scan
 *     later.
 *
 * Pub/sub is at-most-once, so follow_run() returns for a full scan
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
 * reconciling every scan_interval until notifications prove they flow
 * (follow_unproven(): a key changed, and an event of every class the keys
 * followed are written with), goes back to scanning when such a
 * reconcile finds drift while unproven, and takes the proof back when a
 * later one finds drift.  A target that scans because CONFIG GET showed
 * the setting lacking a class reads it again at a full scan, at most every
 * FOLLOW_RECHECK_MS and at the first after a reload (follow_reload()),
 * and follows, as at a start, once it has them.
 *
 * A cluster target subscribes on every shard's primary (each publishes
 * its own keyspace events) and re-reads each key on the primary serving
 * its slot; a topology that changes (checked every scan_interval), like
 * a lost subscription, means a reconcile.  With scan_replicas a cluster
 * scans (a replica may not yet have what its primary's event
 * announced).  lockwatchd --once never follows.
 *
 * followsub.c holds the subscriptions and their reader threads;
 * followread.c the records, the re-reads and the snapshots made from
 * them; this file the attaching to a full scan, the reconcile's count and
 * the loop.
 */
#include "collectors/follow/follow_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/redis/conn.h"
#include "collectors/redis/target.h"
#include "common/clock.h"
#include "common/keytext.h"

/* Not following any more: the records go too. */
static void
stop_following(struct follow *fw)
{
    follow_unsubscribe(fw);
    keymap_free(fw->locks, frec_free);
    fw->locks = NULL;
    fw->locks_bytes = 0;
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

/* The scanner goes (its release hook): so does its follow mode. */
static void
follow_free(void *arg)
{
    struct follow *fw = arg;

    stop_following(fw);
    forget_topology(fw);
    keymap_free(fw->fill, frec_free);
    keymap_free(fw->pending, NULL);
    keymap_free(fw->retry, NULL);
    pthread_mutex_destroy(&fw->mu);
    pthread_cond_destroy(&fw->cv);
    free(fw);
}

void
follow_note(struct follow *fw, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(fw->note, sizeof(fw->note), fmt, ap);
    va_end(ap);
}

/* ---- attaching to a pass ------------------------------------------------------- */

/* What the subscriptions depend on: where, as whom, which patterns. */
static uint64_t
sub_key_of(uint64_t conn_key, const struct target_conf *t, const struct target_conf *nodes,
           size_t n)
{
    char buf[600];
    uint64_t h;
    size_t i;
    int w;

    w = snprintf(buf, sizeof(buf), "%016llx|%d", (unsigned long long)conn_key,
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
            fw->lacking_meant = flags[0] != '\0';
            follow_note(fw, "not following keyspace notifications: %s:%d has "
                 "notify-keyspace-events \"%s\", which lacks \"%s\" (set it to include "
                 KSUB_FLAGS_NEEDED ", e.g. notify-keyspace-events KA; README \"Follow "
                 "mode\"); scanning every scan_interval", nodes[i].host, nodes[i].port, flags,
                 missing);
            return 0;
        }
        if (rc == -1)
            all = -1;
    }
    return all;
}

/* Forget the proof that notifications flow (a new subscription, or drift
 * found while following on trust). */
static void
unprove(struct follow *fw)
{
    fw->proven = 0;
    pthread_mutex_lock(&fw->mu);
    fw->ev_classes = 0;
    pthread_mutex_unlock(&fw->mu);
}

/* Following on trust (CONFIG GET could not check the setting) and not
 * yet proven: no re-read found a key changed, or no event came yet of a
 * class the keys followed are written with ('g' for a DEL; '$', 'h', 'z'
 * for their types), which *missing gets (NULL: not asked).  A setting
 * that lacks a class still announces the others' writes: "Kgx" sends the
 * "expire" of a SET PX, never the SET of a lock without a TTL, so one
 * changed key is no proof of the rest. */
static bool
follow_unproven(struct follow *fw, unsigned *missing)
{
    unsigned have, need = KSUB_CLASS('g') | fw->key_classes;

    if (missing != NULL)
        *missing = 0;
    if (fw->verified)
        return false;
    pthread_mutex_lock(&fw->mu);
    have = fw->ev_classes;
    pthread_mutex_unlock(&fw->mu);
    if (missing != NULL)
        *missing = need & ~have;
    return fw->proven == 0 || (need & ~have) != 0;
}

/*
 * Decide whether pass p's target follows, on nodes (the one node c is
 * connected to, or a cluster's primaries with c NULL), subscribe before
 * the pass reads a key, and make the map the pass fills.  true when it
 * follows (the pass keeps its keys).
 */
static bool
attach(struct follow *fw, const struct scan_pass *p, redisContext *c,
       const struct target_conf *nodes, size_t n)
{
    const struct target_conf *t = p->t;
    char err[256] = "";
    uint64_t key;
    bool lost, reload = fw->recheck;
    int rc;

    if (t->incremental == INCR_OFF || p->stop == NULL) {
        if (fw->wanted) {
            stop_following(fw);
            fw->note[0] = '\0';
            fw->lacking = false;
        }
        return false;
    }
    fw->wanted = true;
    fw->recheck = false;
    key = sub_key_of(p->conn_key, t, nodes, n);
    /* the same target gave up: not again, but for a setting that lacked a
     * class, read again at a reload and every FOLLOW_RECHECK_MS */
    if (fw->gave_up && fw->gave_up_key == key &&
        !(fw->lacking && (reload || clock_mono_ms() - fw->lacking_mono >= FOLLOW_RECHECK_MS)))
        return false;
    /* too many locks to keep copies of: scan, and try again later */
    if (fw->too_many_mono != 0 && !reload &&
        clock_mono_ms() - fw->too_many_mono < FOLLOW_RECORDS_RETRY_MS) {
        if (fw->nsubs > 0 || fw->locks != NULL)
            stop_following(fw);
        return false;
    }
    fw->too_many_mono = 0;      /* trying again: a pass past the cap sets it anew */
    fw->gave_up = false;
    pthread_mutex_lock(&fw->mu);
    lost = fw->sub_lost;
    pthread_mutex_unlock(&fw->mu);
    if (fw->nsubs > 0 && fw->sub_key == key && !lost)
        goto fill;
    follow_unsubscribe(fw);
    rc = check_flags(fw, c, nodes, n, err, sizeof(err));
    if (rc == -2)
        return false;           /* the pass will fail on the connection */
    if (rc == 0) {
        fw->gave_up = true;
        fw->gave_up_key = key;
        fw->lacking = true;
        fw->lacking_meant |= t->incremental == INCR_ON;
        fw->lacking_mono = clock_mono_ms();
        fw->announce = false;
        /* scanning: the records go, as at a restart, so the full scan
         * that follows again is no reconcile (what changed meanwhile is
         * not drift) */
        keymap_free(fw->locks, frec_free);
        fw->locks = NULL;
        fw->locks_bytes = 0;
        return false;
    }
    fw->announce |= fw->lacking && rc == 1;
    fw->lacking = false;
    fw->verified = rc == 1;
    if ((rc = follow_subscribe(fw, t, nodes, n)) != 1) {
        /* refused: not again (README); unreachable or slow: next pass */
        if (rc == -1 && t->incremental == INCR_AUTO) {
            fw->gave_up = true;
            fw->gave_up_key = key;
        }
        return false;
    }
    fw->sub_key = key;
    unprove(fw);
    fw->key_classes = 0;
    fw->fresh_denied = false;
    if (fw->verified)
        fw->note[0] = '\0';
    else
        follow_note(fw, "following keyspace notifications on trust%s: %s; a full scan every "
                    "scan_interval until notifications prove they flow (a key they name "
                    "changed, and events of every class the keys followed are written "
                    "with)", t->incremental == INCR_ON ? " (incremental = on)" : "", err);
    if (fw->why == WHY_NONE)
        fw->why = WHY_LOSS;     /* a new subscription: whatever came before is lost */
fill:
    /* before the pass reads a key, on every node: what happens from here
     * (a FLUSHDB on one shard while another is still being scanned too)
     * is compared */
    fresh_baseline(fw, c, nodes, n);
    keymap_free(fw->fill, frec_free);
    fw->fill = keymap_new(0, 0);
    fw->fill_bytes = 0;
    fw->fill_over = false;
    fw->max_locks = (size_t)t->follow_max_locks;
    return fw->fill != NULL;
}

/* The attach hook: standalone and sentinel once the pass's connection is
 * up, a cluster once the topology is known (on every shard's primary). */
static bool
attach_hook(void *arg, const struct scan_pass *p)
{
    struct follow *fw = arg;
    struct target_conf nodes[FOLLOW_NODES_MAX];
    const struct cluster_topo *topo = p->topo;
    size_t i;

    if (topo == NULL) {
        redisconn_node(p->t, p->host, p->port, &nodes[0]);
        return attach(fw, p, p->c, nodes, 1);
    }
    if (p->t->incremental != INCR_OFF && p->stop != NULL &&
        (p->t->scan_replicas || topo->nshards > FOLLOW_NODES_MAX)) {
        fw->wanted = true;
        stop_following(fw);
        follow_note(fw, "not following keyspace notifications: %s; scanning every "
                    "scan_interval", p->t->scan_replicas ? "scan_replicas = yes (a replica "
                    "may not yet have what its primary's notification announced)" :
                    "more shards than follow mode subscribes to (64)");
        return false;
    }
    for (i = 0; i < topo->nshards; i++)
        redisconn_node(p->t, topo->shards[i].primary.host, topo->shards[i].primary.port,
                       &nodes[i]);
    return attach(fw, p, NULL, nodes, topo->nshards);
}

static int
keep_hook(void *arg, const struct scan_key *k, const struct raw_lock *raw, long long hlen,
          int64_t read_ms)
{
    return follow_keep(arg, k, raw, hlen, read_ms);
}

/* ---- after a full scan ---------------------------------------------------------- */

/* Keys that differ between the old map and the new, except those with
 * an event since the pass began (they are re-read next) and those whose
 * TTL ran out (left the view already; Redis reclaims them when it will). */
static uint64_t
count_fixed(struct follow *fw, struct keymap *old, struct keymap *now)
{
    const char *k;
    size_t len, pos = 0;
    void *v, *o;
    uint64_t fixed = 0;
    int64_t now_mono = clock_mono_ms();

    pthread_mutex_lock(&fw->mu);
    while (keymap_next(now, &pos, &k, &len, &v, NULL))
        if (!keymap_get(fw->pending, k, len, NULL, NULL) &&
            (!keymap_get(old, k, len, &o, NULL) ||
             ((struct frec *)o)->content != ((struct frec *)v)->content))
            fixed++;
    pos = 0;
    while (keymap_next(old, &pos, &k, &len, &o, NULL)) {
        int64_t exp = frec_expires_mono(o);

        if ((exp == 0 || exp > now_mono) && !keymap_get(fw->pending, k, len, NULL, NULL) &&
            !keymap_get(now, k, len, NULL, NULL))
            fixed++;
    }
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

/* The pass failed (or could not be kept): start over. */
static void
drop_fill(struct follow *fw)
{
    keymap_free(fw->fill, frec_free);
    fw->fill = NULL;
    follow_unsubscribe(fw);
}

/* Auto, unverified, and a scheduled reconcile fixed keys while no
 * notification ever came: the setting does not cover it; scan. */
static void
give_up(struct follow *fw, uint64_t fixed)
{
    uint64_t key = fw->sub_key;         /* unsubscribing clears it */

    follow_note(fw, "not following keyspace notifications: none arrived that showed a changed key "
                "(a PUBLISH proves nothing), and a full scan "
                "found %llu key%s changed (is notify-keyspace-events set to include "
                KSUB_FLAGS_NEEDED "?  README \"Follow mode\"); scanning every scan_interval",
                (unsigned long long)fixed, fixed == 1 ? "" : "s");
    keymap_free(fw->fill, frec_free);
    fw->fill = NULL;
    stop_following(fw);
    fw->gave_up = true;
    fw->gave_up_key = key;
    fw->why = WHY_NONE;
}

/* The pass found more locks than follow mode keeps copies of
 * (FOLLOW_RECORDS_BYTES): scan, and try again in FOLLOW_RECORDS_RETRY_MS
 * (or at a reload). */
static void
too_many(struct follow *fw)
{
    follow_note(fw, "not following keyspace notifications: more than follow_max_locks (%zu) "
                "locks, or over %u MiB of the copies of them follow mode keeps; scanning every "
                "scan_interval, and trying again in %d minutes or at a reload", fw->max_locks,
                (unsigned)(FOLLOW_RECORDS_BYTES >> 20), FOLLOW_RECORDS_RETRY_MS / 60000);
    keymap_free(fw->fill, frec_free);
    fw->fill = NULL;
    fw->fill_over = false;
    stop_following(fw);
    fw->too_many_mono = clock_mono_ms();
    fw->why = WHY_NONE;
}

/* The scanned hook: after a pass attach_hook() said to keep. */
static void
scanned_hook(void *arg, const struct scan_pass *p, struct snapshot *s)
{
    struct follow *fw = arg;
    const struct cluster_topo *topo = p->topo;
    uint64_t fixed = 0;
    /* a shard not read has no records (only its last-known locks, carried
     * by the scanner): no following until a pass reads them all */
    bool whole = s != NULL && s->ok && snapshot_whole(s);

    if (fw->fill_over) {
        too_many(fw);
        return;
    }
    if (fw->fill == NULL)
        return;
    if (whole && topo != NULL && keep_topology(fw, topo, s) == -1) {
        drop_fill(fw);
        return;
    }
    fw->cluster = topo != NULL;
    if (!whole) {
        drop_fill(fw);
        return;
    }
    if (fw->locks != NULL) {
        fixed = count_fixed(fw, fw->locks, fw->fill);
        fw->fixed_total += fixed;
        fw->reconciles_total++;
    }
    if (fw->why == WHY_SCHEDULED && fixed > 0) {
        if (follow_unproven(fw, NULL) && p->t->incremental == INCR_AUTO) {
            give_up(fw, fixed);
            return;
        }
        /* on trust, proven, and still keys changed unannounced: the proof
         * was wrong (a class missing that no write showed yet, a forged
         * message): a full scan every scan_interval until it is made
         * again, and scanning if the next one finds drift too (without
         * INFO a full scan every scan_interval is the proof already) */
        if (!fw->verified && !fw->fresh_denied) {
            unprove(fw);
            follow_note(fw, "following keyspace notifications on trust: a full scan found "
                        "%llu key%s changed without a notification, so notifications do not "
                        "prove the view: a full scan every scan_interval until they prove "
                        "it again (README \"Follow mode\")", (unsigned long long)fixed,
                        fixed == 1 ? "" : "s");
        }
        if (++fw->drift_streak >= DRIFT_STREAK)
            follow_note(fw, "follow drift: %u full scans in a row found keys changed without "
                        "a notification (%llu this time; lockwatch_reconcile_fixed_keys_total)"
                        ": events are being lost; a full scan every scan_interval until one "
                        "finds none", fw->drift_streak, (unsigned long long)fixed);
    } else if (fw->why == WHY_SCHEDULED) {
        if (fw->drift_streak >= DRIFT_STREAK)
            fw->note[0] = '\0';
        fw->drift_streak = 0;
    }
    keymap_free(fw->locks, frec_free);
    fw->locks = fw->fill;
    fw->locks_bytes = fw->fill_bytes;
    fw->fill = NULL;
    fw->following = fw->nsubs > 0;
    if (fw->following && fw->announce) {
        size_t used = strnlen(fw->fresh_note, sizeof(fw->fresh_note));

        snprintf(fw->fresh_note + used, sizeof(fw->fresh_note) - used, "%snotify-keyspace-events "
                 "now has the classes follow mode needs; following", used > 0 ? "; " : "");
        fw->announce = false;
    }
    fw->why = WHY_NONE;
    fw->reconcile_mono = clock_mono_ms();
    fw->scan_started_ms = s->started_ms;
    fw->scan_finished_ms = clock_now_ms();
    fw->scan_duration_s = (double)(clock_mono_ms() - p->start_mono) / 1000.0;
    fw->scan_keys = s->keys_examined;
}

/* Why the full scan that made s ran, before its note, in its snapshot
 * (said once; also when the scan ended following). */
static void
say_why(struct follow *fw, struct snapshot *s)
{
    char *note = s->follow.note;
    size_t cap = sizeof(s->follow.note), n, m;

    if (fw->fresh_note[0] == '\0' || s->follow.from_events)
        return;
    n = strnlen(fw->fresh_note, cap - 1);
    memcpy(note, fw->fresh_note, n);
    if (fw->note[0] != '\0' && n + 2 < cap - 1) {
        memcpy(note + n, "; ", 2);
        n += 2;
        m = strnlen(fw->note, cap - 1 - n);
        memcpy(note + n, fw->note, m);
        n += m;
    }
    note[n] = '\0';
    fw->fresh_note[0] = '\0';
}

/* The stamp hook: follow mode's figures into a snapshot about to be
 * returned. */
static void
follow_stamp(void *arg, struct snapshot *s)
{
    struct follow *fw = arg;
    unsigned missing;

    if (!fw->wanted)
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
    if (!fw->following) {
        s->follow.lacking = fw->lacking && fw->lacking_meant;
        say_why(fw, s);
        return;
    }
    /* no proof of freshness: /readyz and the log name it (the view is
     * kept whole by full scans meanwhile, so the agent stays ready) */
    if (s->follow.drift) {
        /* the drift says it */
    } else if (follow_unproven(fw, &missing)) {
        s->follow.drift = true;         /* the note: "on trust", until a proof */
        if (missing != 0 && fw->proven > 0) {
            char names[160];

            size_t n = strlen(s->follow.note);      /* fw->note, copied above */

            ksub_class_names(missing, names, sizeof(names));
            snprintf(s->follow.note + n, sizeof(s->follow.note) - n, "; no event yet of %s "
                     "(does notify-keyspace-events lack %s?)", names,
                     (missing & (missing - 1)) == 0 ? "it" : "them");
        }
    } else if (fw->fresh_denied) {
        s->follow.drift = true;
        snprintf(s->follow.note, sizeof(s->follow.note), "follow mode unchecked: INFO is "
                 "denied, so a restart, a flush or notifications turned off cannot be seen "
                 "between scans: a full scan every scan_interval proves the view, as without "
                 "follow mode (add +info to the ACL user to scan every reconcile_interval; "
                 "README \"Follow mode\")");
    }
    say_why(fw, s);
}

struct follow *
follow_new(struct scanner *sc)
{
    static const struct scan_hooks hooks = {
        .attach = attach_hook,
        .keep = keep_hook,
        .scanned = scanned_hook,
        .stamp = follow_stamp,
        .release = follow_free,
    };
    struct follow *fw;

    if ((fw = calloc(1, sizeof(*fw))) == NULL)
        return NULL;
    if ((fw->pending = keymap_new(FOLLOW_PENDING_MAX, FOLLOW_PENDING_BYTES)) == NULL ||
        (fw->retry = keymap_new(FOLLOW_PENDING_MAX, FOLLOW_PENDING_BYTES)) == NULL) {
        keymap_free(fw->pending, NULL);
        free(fw);
        return NULL;
    }
    /* the loop's timed wait counts on the monotonic clock */
    if (clock_cond_init(&fw->cv) != 0) {
        keymap_free(fw->pending, NULL);
        keymap_free(fw->retry, NULL);
        free(fw);
        return NULL;
    }
    pthread_mutex_init(&fw->mu, NULL);
    fw->sc = sc;
    scanner_set_hooks(sc, &hooks, fw);
    return fw;
}

void
follow_reload(struct follow *fw)
{
    fw->recheck = true;
}

/* ---- the follow loop --------------------------------------------------------------- */

/* Did a subscriber's connection end?  One that its reply limits ended
 * (a message too large: anyone may PUBLISH), or that ended while events
 * had overflowed, counts as an overflow, and the full scan's note names
 * the limit. */
static bool
sub_ended(struct follow *fw)
{
    bool lost, over;

    pthread_mutex_lock(&fw->mu);
    lost = fw->sub_lost;
    over = lost && (fw->sub_over || fw->overflow);
    if (over)   /* unsubscribing forgets an overflow: count it here */
        snprintf(fw->fresh_note, sizeof(fw->fresh_note), "a full scan: %s",
                 fw->sub_over ? fw->sub_err : fw->overflow_why);
    pthread_mutex_unlock(&fw->mu);
    if (over)
        fw->overflows_total++;
    return lost;
}

/* Wait until the monotonic deadline for an event (or a stop). */
static void
wait_event(struct follow *fw, int64_t deadline)
{
    pthread_mutex_lock(&fw->mu);
    if (keymap_count(fw->pending) == 0 && !fw->sub_lost && !fw->overflow)
        (void)clock_cond_wait_until(&fw->cv, &fw->mu, deadline);
    pthread_mutex_unlock(&fw->mu);
}

/* What the loop keeps between its ticks. */
struct loop {
    int64_t last_pub;           /* mono ms of the last snapshot published */
    int64_t check;              /* mono ms the nodes were last checked */
    int64_t oldest;             /* mono ms of the oldest event applied since */
    int64_t due;                /* mono deadline: a lock changes state by time */
    int64_t interval;           /* the reconcile interval in force */
    int64_t fresh;              /* mono ms of the last freshness check */
    bool dirty;                 /* a record changed since the last snapshot */
};

/* One tick's snapshot, when a record changed (at most every
 * FOLLOW_PUBLISH_MS), a lock's state is due to change, or a lock with a
 * fair queue is held (every FOLLOW_QUEUES_MS, longer with many of them:
 * a waiter joining the queue changes no lock key, and the wait-for graph
 * needs the queue; under churn the other publications read it anyway);
 * never sooner than FOLLOW_PUBLISH_COST times the CPU time the last
 * snapshot took after it (with very many locks, a view a little later
 * rather than a core spent on snapshots).  0
 * (published or not due), -1 when the snapshot could not be made (a full
 * scan). */
static int
maybe_publish(struct follow *fw, struct loop *lp, const struct target_conf *t,
              const struct scan_rules *rules, const atomic_int *stop, scan_publish_fn *publish,
              void *arg)
{
    struct snapshot *s;
    int64_t now = clock_mono_ms(), cpu;

    if (now - lp->last_pub < fw->pub_gap_ms)
        return 0;               /* the last one's cost says: not yet */
    if (!(lp->dirty && now - lp->last_pub >= FOLLOW_PUBLISH_MS) && clock_left(lp->due) > 0 &&
        !(fw->queues_held > 0 && now - lp->last_pub >=
          FOLLOW_QUEUES_MS * (int64_t)(1 + fw->queues_held / FOLLOW_QUEUES_PER)))
        return 0;
    fw->registry_dirty = false;
    cpu = follow_cpu_us();
    if ((s = follow_snapshot(fw, t, rules, stop, &lp->due)) == NULL)
        return -1;
    fw->pub_gap_ms = (follow_cpu_us() - cpu) * FOLLOW_PUBLISH_COST / 1000;
    now = clock_mono_ms();
    if (lp->oldest > 0)
        fw->lag_s = (double)(now - lp->oldest) / 1000.0;
    lp->oldest = 0;
    fw->published_total++;
    fw->queues_held = follow_queue_locks(s);
    follow_stamp(fw, s);
    if (fw->behind_since_ms != 0) {
        /* a view from events while a subscriber is behind: not passed off
         * as current until it catches up (a full scan's proves itself) */
        s->follow.behind_since_ms = fw->behind_since_ms;
        snprintf(s->follow.note, sizeof(s->follow.note), "notifications are behind (%s): the "
                 "view may miss changes until the subscriber catches up", fw->behind_why);
    }
    publish(arg, s);
    lp->last_pub = now;
    lp->dirty = false;
    return 0;
}

/* A subscriber fell behind, or caught up: the snapshots say so from now
 * (follow_stamp()).  true when that changed. */
static bool
behind_changed(struct follow *fw)
{
    char why[256];
    bool behind = follow_subs_behind(fw, why, sizeof(why));

    if (behind == (fw->behind_since_ms != 0))
        return false;
    fw->behind_since_ms = behind ? clock_now_ms() : 0;
    snprintf(fw->behind_why, sizeof(fw->behind_why), "%s", behind ? why : "");
    return true;
}

/* The freshness check (freshness.c): true when a full scan is due (a
 * connection that failed is dropped: the scan reconnects or says why). */
static bool
fresh_due(struct follow *fw, const struct target_conf *t)
{
    char why[270];
    bool resub = false;
    int rc = fresh_check(fw, t, &resub, why, sizeof(why));

    if (rc == 0)
        return false;
    fw->why = WHY_LOSS;
    if (rc < 0) {
        follow_unsubscribe(fw);
        scanner_disconnect(fw->sc);
        /* a silent node: the check is this mode's scan, and it failed
         * (a cluster's shards are judged each by the full scan) */
        if (rc == -2 && t->mode != TARGET_CLUSTER)
            scanner_fail_next(fw->sc, why);
        return true;
    }
    snprintf(fw->fresh_note, sizeof(fw->fresh_note), "a full scan: %s", why);
    if (resub)
        follow_unsubscribe(fw);        /* the setting is checked (or trusted) again */
    return true;
}

/* Is a full scan due at now: a scheduled reconcile, or (Sentinel,
 * cluster; every scan_interval) nodes that no longer serve the target? */
static bool
reconcile_due(struct follow *fw, struct loop *lp, const struct target_conf *t, int64_t now)
{
    /* unverified: a reconcile every scan_interval until events prove the
     * notifications arrive (follow_unproven(): a key changed, and events
     * of each class the keys followed need);
     * without INFO (no freshness check) one every scan_interval always:
     * a full scan is the only proof left that the view is current; and
     * after a reconcile that found drift, until one finds none (the
     * view missed changes for a reconcile_interval: not for another) */
    if (follow_unproven(fw, NULL) || fw->fresh_denied || fw->drift_streak > 0) {
        if (t->scan_interval_ms < lp->interval)
            lp->interval = t->scan_interval_ms;
    } else {
        lp->interval = t->reconcile_interval_ms;
    }
    if (now - fw->reconcile_mono >= lp->interval) {
        fw->why = WHY_SCHEDULED;
        return true;
    }
    if (now - lp->fresh >= t->scan_interval_ms) {
        lp->fresh = now;
        if (fresh_due(fw, t))
            return true;
        if (!fw->fresh_denied) {
            /* a proof that the view is current: a snapshot says so now
             * (lockwatch_target_last_success_timestamp_seconds, the API's
             * last_success), though no lock changed */
            fresh_proven(fw);
            lp->due = clock_deadline(0);
        }
    }
    if (t->mode != TARGET_STANDALONE && now - lp->check >= t->scan_interval_ms) {
        lp->check = now;
        if (scanner_moved(fw->sc, t, &fw->topo)) {
            fw->why = WHY_LOSS;
            follow_unsubscribe(fw);
            if (t->mode == TARGET_SENTINEL)
                scanner_disconnect(fw->sc);
            return true;
        }
    }
    return false;
}

/*
 * Notifications were lost (why): before the full scan that repairs the
 * view (seconds, or minutes for millions of keys), a snapshot from the
 * records says so at once: behind_since_ms, the note (/readyz, the log),
 * the overflow counted; the agent keeps its proof of freshness where it
 * was (agent/agent.c) and the API marks its locks last known.  Best
 * effort: when the snapshot cannot be made, the scan says what it finds.
 */
static void
publish_behind(struct follow *fw, const struct target_conf *t, const struct scan_rules *rules,
               const atomic_int *stop, scan_publish_fn *publish, void *arg, const char *ended)
{
    struct snapshot *s;
    const char *why = fw->fresh_note;
    int64_t due;

    if (strncmp(why, "a full scan: ", 13) == 0)
        why += 13;
    if (why[0] == '\0')
        why = ended;
    if ((s = follow_snapshot(fw, t, rules, stop, &due)) == NULL)
        return;
    fw->published_total++;
    follow_stamp(fw, s);
    s->follow.behind_since_ms = clock_now_ms();
    snprintf(s->follow.note, sizeof(s->follow.note), "notifications were lost (%s): the "
             "view may miss changes until the full scan under way ends", why);
    publish(arg, s);
}

int
follow_run(struct follow *fw, const struct target_conf *t, const struct scan_rules *rules,
           const atomic_int *stop, scan_publish_fn *publish, void *arg)
{
    struct loop lp;
    char err[256];
    const char *host;
    int port, rc;

    if (!fw->following || (!fw->cluster && scanner_conn(fw->sc, &host, &port) == NULL))
        return -1;
    memset(&lp, 0, sizeof(lp));
    lp.check = clock_mono_ms();
    lp.fresh = lp.check;
    /* due now: a first snapshot from the records at once, which finds
     * when the scan's locks change state by time alone */
    lp.due = clock_deadline(0);
    lp.interval = t->reconcile_interval_ms;
    while (!atomic_load(stop)) {
        wait_event(fw, clock_deadline(FOLLOW_TICK_MS));
        if (atomic_load(stop))
            break;
        if (sub_ended(fw)) {
            pthread_mutex_lock(&fw->mu);
            snprintf(err, sizeof(err), "%s", fw->sub_err);
            pthread_mutex_unlock(&fw->mu);
            /* still following as far as the view goes: the full scan
             * subscribes again */
            publish_behind(fw, t, rules, stop, publish, arg, err[0] != '\0' ? err :
                           "the subscription ended");
            follow_unsubscribe(fw);
            return 0;
        }
        rc = follow_apply_pending(fw, t, &lp.oldest, err, sizeof(err));
        if (rc == -2) {
            fw->why = WHY_LOSS;         /* the subscription stays */
            publish_behind(fw, t, rules, stop, publish, arg, "a cap of the pending set");
            return 0;
        }
        if (rc == 1)
            lp.dirty = true;
        if (behind_changed(fw))
            lp.due = clock_deadline(0);     /* said at once, either way */
        if (fw->locks_bytes > FOLLOW_RECORDS_BYTES || keymap_count(fw->locks) > fw->max_locks) {
            too_many(fw);               /* a full scan, which keeps none */
            return 0;
        }
        if (rc == -1 || maybe_publish(fw, &lp, t, rules, stop, publish, arg) == -1) {
            /* a broken connection, a refused read or a snapshot that
             * failed: the full scan reconnects, or fails and says why */
            follow_unsubscribe(fw);
            scanner_disconnect(fw->sc);
            return 0;
        }
        if (reconcile_due(fw, &lp, t, clock_mono_ms()))
            return 0;
    }
    return 0;
}
