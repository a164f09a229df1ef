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
 * Cluster targets scan (follow mode covers standalone and Sentinel
 * targets).  lockwatchd --once never follows.
 */
#include "collectors/scan/scan_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/locks/lockclass.h"
#include "collectors/redis/conn.h"
#include "collectors/redis/ksub.h"
#include "collectors/redis/target.h"
#include "collectors/scan/keymap.h"
#include "common/clock.h"
#include "common/keytext.h"

#define FOLLOW_PENDING_MAX  65536   /* keys awaiting a re-read */
#define FOLLOW_READ_BATCH   256     /* keys re-read per pipeline */
#define FOLLOW_PUBLISH_MS   250     /* at most one snapshot from events per this */
#define FOLLOW_TICK_MS      50      /* the loop wakes at least this often */
#define REGISTRY_PREFIX     "lockwatch:client:"
#define DRIFT_STREAK        2       /* scheduled reconciles with fixes in a row */

/* One lock key as last read: enough to decode and judge it again. */
struct frec {
    enum raw_type type;
    long long pttl;
    int64_t read_mono, read_ms;
    long long idle_s, hlen;
    bool value_truncated, fields_truncated;
    char *value;
    size_t valuelen;
    struct raw_field *fields;
    size_t nfields;
    uint64_t content;           /* type, value and TTL-or-not, hashed */
};

enum reconcile_why { WHY_NONE, WHY_SCHEDULED, WHY_LOSS };

struct follow {
    /* the subscription */
    struct ksub *sub;
    uint64_t sub_key;           /* node, credentials and patterns subscribed */
    bool verified;              /* CONFIG GET said the setting covers it */
    bool gave_up;               /* auto: not again until the config changes */
    uint64_t gave_up_key;
    pthread_t th;
    bool th_running;
    atomic_int th_quit;

    /* shared with the reader thread, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct keymap *pending;
    bool overflow;
    bool sub_lost;
    char sub_err[256];
    uint64_t events_total;

    /* the target's thread's own */
    bool following;             /* subscribed, and a full scan filled locks */
    struct keymap *locks;       /* the records; kept across a lost
                                 * subscription, so the reconcile after it
                                 * counts what it fixed */
    int64_t reconcile_mono;     /* last full scan */
    enum reconcile_why why;
    unsigned drift_streak;
    uint64_t fixed_total, overflows_total, reconciles_total;
    double lag_s;
    bool registry_dirty;
    /* the last full scan's figures, for the snapshots made from events */
    int64_t scan_started_ms, scan_finished_ms;
    double scan_duration_s;
    uint64_t scan_keys;
    char note[400];
};

/* ---- records ------------------------------------------------------------------ */

static void
frec_free(void *p)
{
    free(p);
}

static uint64_t
frec_content(const struct frec *f)
{
    uint64_t h = keytext_hash(f->value, f->valuelen) ^ ((uint64_t)f->type << 56) ^
        (f->pttl >= 0 ? 0x9e3779b97f4a7c15ULL : 0);
    size_t i;

    for (i = 0; i < f->nfields; i++) {
        h = h * 0x100000001b3ULL ^ keytext_hash(f->fields[i].name, f->fields[i].namelen);
        h = h * 0x100000001b3ULL ^ keytext_hash(f->fields[i].value, f->fields[i].valuelen);
    }
    return h;
}

/* One allocation: the record, its fields, then the bytes they point to. */
static struct frec *
frec_new(const struct key_meta *m, const struct raw_lock *raw, long long hlen, int64_t read_ms)
{
    size_t bytes = sizeof(struct frec) + raw->nfields * sizeof(struct raw_field) +
        raw->valuelen + 1, i;
    struct frec *f;
    char *p;

    for (i = 0; i < raw->nfields; i++)
        bytes += raw->fields[i].namelen + raw->fields[i].valuelen + 2;
    if ((f = calloc(1, bytes)) == NULL)
        return NULL;
    f->type = raw->type;
    f->pttl = raw->pttl;
    f->read_mono = clock_mono_ms();
    f->read_ms = read_ms;
    f->idle_s = m->idle_s;
    f->hlen = hlen;
    f->value_truncated = raw->value_truncated;
    f->fields_truncated = raw->fields_truncated;
    f->fields = (struct raw_field *)(f + 1);
    f->nfields = raw->nfields;
    p = (char *)(f->fields + raw->nfields);
    for (i = 0; i < raw->nfields; i++) {
        f->fields[i].name = p;
        f->fields[i].namelen = raw->fields[i].namelen;
        memcpy(p, raw->fields[i].name, raw->fields[i].namelen);
        p += raw->fields[i].namelen + 1;
        f->fields[i].value = p;
        f->fields[i].valuelen = raw->fields[i].valuelen;
        memcpy(p, raw->fields[i].value, raw->fields[i].valuelen);
        p += raw->fields[i].valuelen + 1;
    }
    f->value = p;
    f->valuelen = raw->valuelen;
    if (raw->valuelen > 0)
        memcpy(p, raw->value, raw->valuelen);
    f->content = frec_content(f);
    return f;
}

int
follow_keep(struct keymap *fill, const struct key_meta *m, const struct raw_lock *raw,
            long long hlen, int64_t read_ms)
{
    struct frec *f = frec_new(m, raw, hlen, read_ms);
    void *old = NULL;

    if (f == NULL || keymap_put(fill, raw->key, raw->keylen, f, 0, &old) == -1) {
        free(f);
        return -1;
    }
    free(old);
    return 0;
}

/* ---- the reader thread -------------------------------------------------------- */

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
    struct follow *fw = arg;
    char err[256];

    while (!atomic_load(&fw->th_quit)) {
        if (ksub_read(fw->sub, 100, on_event, fw, err, sizeof(err)) == -1) {
            pthread_mutex_lock(&fw->mu);
            fw->sub_lost = true;
            snprintf(fw->sub_err, sizeof(fw->sub_err), "%s", err);
            pthread_cond_signal(&fw->cv);
            pthread_mutex_unlock(&fw->mu);
            break;
        }
    }
    return NULL;
}

/* Stop the reader and close the subscription.  The lock map stays (a
 * reconcile compares with it) but is no longer followed. */
static void
unsubscribe(struct follow *fw)
{
    fw->following = false;
    if (fw->th_running) {
        atomic_store(&fw->th_quit, 1);
        pthread_join(fw->th, NULL);
        fw->th_running = false;
    }
    ksub_close(fw->sub);
    fw->sub = NULL;
    fw->sub_key = 0;
    pthread_mutex_lock(&fw->mu);
    keymap_free(fw->pending, NULL);
    fw->pending = keymap_new(FOLLOW_PENDING_MAX);
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

void
follow_free(struct scanner *sc)
{
    struct follow *fw = sc->fw;

    if (fw == NULL)
        return;
    stop_following(fw);
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

/* What the subscription depends on: where, as whom, which patterns. */
static uint64_t
sub_key_of(const struct scanner *sc, const struct target_conf *t)
{
    char buf[600];
    uint64_t h;
    size_t i;
    int n;

    n = snprintf(buf, sizeof(buf), "%016llx|%s|%d|%d", (unsigned long long)sc->conn_key,
                 sc->host, sc->port, (int)t->incremental);
    h = keytext_hash(buf, n > 0 && (size_t)n < sizeof(buf) ? (size_t)n : 0);
    for (i = 0; i < t->npatterns; i++)
        h = h * 0x100000001b3ULL ^ keytext_hash(t->patterns[i], strlen(t->patterns[i]));
    return h | 1;
}

#define note(fw, ...) scan_errf((fw)->note, sizeof((fw)->note), __VA_ARGS__)

static bool
subscribe(struct follow *fw, struct run *r, const struct target_conf *node)
{
    const struct target_conf *t = r->t;
    char *pats[65];
    char err[256];
    size_t i, n = 0;

    for (i = 0; i < t->npatterns && n < 64; i++)
        pats[n++] = t->patterns[i];
    pats[n++] = (char *)REGISTRY_PREFIX "*";
    if ((fw->sub = ksub_open(node, pats, n, err, sizeof(err))) == NULL) {
        note(fw, "not following keyspace notifications: %s; scanning every scan_interval",
             err);
        return false;
    }
    atomic_store(&fw->th_quit, 0);
    if (pthread_create(&fw->th, NULL, reader_main, fw) != 0) {
        ksub_close(fw->sub);
        fw->sub = NULL;
        note(fw, "not following keyspace notifications: no thread for the subscriber; "
             "scanning every scan_interval");
        return false;
    }
    fw->th_running = true;
    return true;
}

void
follow_attach(struct run *r)
{
    const struct target_conf *t = r->t;
    struct scanner *sc = r->sc;
    struct target_conf node;
    struct follow *fw;
    char flags[64], missing[16], err[256];
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
    key = sub_key_of(sc, t);
    if (fw->gave_up && fw->gave_up_key == key)
        return;
    fw->gave_up = false;
    pthread_mutex_lock(&fw->mu);
    lost = fw->sub_lost;
    pthread_mutex_unlock(&fw->mu);
    if (fw->sub != NULL && fw->sub_key == key && !lost)
        goto fill;
    unsubscribe(fw);
    redisconn_node(t, sc->host, sc->port, &node);
    rc = ksub_server_flags(sc->c, &node, flags, sizeof(flags), missing, sizeof(missing),
                           &lost, err, sizeof(err));
    if (rc == -1 && lost)
        return;                 /* the pass will fail on the connection */
    if (rc == 0) {
        note(fw, "not following keyspace notifications: %s:%d has notify-keyspace-events "
             "\"%s\", which lacks \"%s\" (set it to include " KSUB_FLAGS_NEEDED ", e.g. "
             "notify-keyspace-events " KSUB_FLAGS_NEEDED "; README \"Follow mode\"); "
             "scanning every scan_interval", sc->host, sc->port, flags, missing);
        fw->gave_up = true;
        fw->gave_up_key = key;
        return;
    }
    fw->verified = rc == 1;
    if (!subscribe(fw, r, &node)) {
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

void
follow_scanned(struct run *r, struct snapshot *s)
{
    struct follow *fw = r->sc->fw;
    uint64_t fixed = 0, events;

    if (r->fill == NULL)
        return;
    if (fw == NULL || s == NULL || !s->ok) {
        keymap_free(r->fill, frec_free);
        r->fill = NULL;
        if (fw != NULL)
            unsubscribe(fw);    /* the pass dropped its connection: start over */
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
            keymap_free(r->fill, frec_free);
            r->fill = NULL;
            stop_following(fw);
            fw->gave_up = true;
            fw->gave_up_key = sub_key_of(r->sc, r->t);
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
    fw->following = fw->sub != NULL;
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
    s->follow.lag_s = fw->lag_s;
    s->follow.drift = fw->drift_streak >= DRIFT_STREAK;
    snprintf(s->follow.note, sizeof(s->follow.note), "%s", fw->note);
}

/* ---- re-reading the keys of events ---------------------------------------------- */

struct reread {
    struct follow *fw;
    bool *found;
    const struct key_meta *base;
};

static int
reread_key(struct stream *s, const struct key_meta *m, const struct raw_lock *raw,
           long long hlen)
{
    struct reread *rr = s->on_key_arg;
    struct frec *f = frec_new(m, raw, hlen, clock_now_ms());
    void *old = NULL;

    if (f == NULL || keymap_put(rr->fw->locks, raw->key, raw->keylen, f, 0, &old) == -1) {
        free(f);
        return -1;
    }
    free(old);
    rr->found[m - rr->base] = true;
    return 0;
}

static bool
matches(const struct target_conf *t, const char *key, size_t len)
{
    size_t i;

    for (i = 0; i < t->npatterns; i++)
        if (class_glob_match(t->patterns[i], key, len))
            return true;
    return false;
}

/* Re-read n keys (keys[i], lens[i]) and replace or drop their records.
 * 0, or -1 when the connection failed or a read was refused. */
static int
reread_chunk(struct run *r, const char **keys, const size_t *lens, size_t n)
{
    struct scanner *sc = r->sc;
    redisReply reps[FOLLOW_READ_BATCH];
    struct key_meta meta[FOLLOW_READ_BATCH];
    bool found[FOLLOW_READ_BATCH];
    struct stream st;
    struct batch b;
    struct reread rr;
    size_t i;
    void *old;
    int rc;

    memset(&st, 0, sizeof(st));
    memset(&b, 0, sizeof(b));
    memset(meta, 0, n * sizeof(meta[0]));
    memset(found, 0, sizeof(found));
    for (i = 0; i < n; i++) {
        memset(&reps[i], 0, sizeof(reps[i]));
        reps[i].type = REDIS_REPLY_STRING;
        reps[i].str = (char *)keys[i];
        reps[i].len = lens[i];
        meta[i].key = &reps[i];
    }
    b.meta = meta;
    b.n = n;
    rr.fw = sc->fw;
    rr.found = found;
    rr.base = meta;
    st.r = r;
    st.c = sc->c;
    snprintf(st.host, sizeof(st.host), "%s", sc->host);
    st.port = sc->port;
    st.on_key = reread_key;
    st.on_key_arg = &rr;
    rc = stream_read_batch(&st, &b);
    for (i = 0; i < SCAN_READ_KINDS; i++)
        sc->counters.read_errors[i] += st.cnt.read_errors[i];
    if (rc == -1 || st.refused > 0) {
        snprintf(r->err, sizeof(r->err), "%s", st.refused > 0 ? st.refused_err : st.err);
        return -1;
    }
    /* what was not handed over is gone (or no longer a string or hash) */
    for (i = 0; i < n; i++)
        if (!found[i] && keymap_del(sc->fw->locks, keys[i], lens[i], &old))
            free(old);
    return 0;
}

/*
 * Take the pending set and re-read its keys.  *oldest gets the mono time
 * of the earliest event applied (unchanged when none).  1 when a record
 * changed or the registry must be asked again, 0 when nothing did, -1
 * when the re-reads failed (r->err), -2 when the pending set overflowed
 * (both: a full scan now).
 */
static int
apply_pending(struct run *r, int64_t *oldest)
{
    struct follow *fw = r->sc->fw;
    struct keymap *batch, *fresh;
    const char *keys[FOLLOW_READ_BATCH], *k;
    size_t lens[FOLLOW_READ_BATCH], n = 0, len, pos = 0;
    int64_t stamp;
    int changed = 0;

    if ((fresh = keymap_new(FOLLOW_PENDING_MAX)) == NULL)
        return 0;               /* try again next tick */
    pthread_mutex_lock(&fw->mu);
    if (fw->overflow) {
        /* what is pending is lost anyway: a full scan reads it all, and
         * the events from now on are kept for after it */
        keymap_free(fw->pending, NULL);
        fw->pending = fresh;
        fw->overflow = false;
        pthread_mutex_unlock(&fw->mu);
        fw->overflows_total++;
        return -2;
    }
    batch = fw->pending;
    fw->pending = fresh;
    pthread_mutex_unlock(&fw->mu);
    while (keymap_next(batch, &pos, &k, &len, NULL, &stamp)) {
        if (!matches(r->t, k, len)) {
            if (len >= sizeof(REGISTRY_PREFIX) - 1 &&
                memcmp(k, REGISTRY_PREFIX, sizeof(REGISTRY_PREFIX) - 1) == 0)
                fw->registry_dirty = true;
            continue;           /* outside the patterns: nothing to re-read */
        }
        if (*oldest == 0 || stamp < *oldest)
            *oldest = stamp;
        keys[n] = k;
        lens[n++] = len;
        changed = 1;
        if (n == FOLLOW_READ_BATCH) {
            if (reread_chunk(r, keys, lens, n) == -1)
                goto fail;
            n = 0;
        }
    }
    if (n > 0 && reread_chunk(r, keys, lens, n) == -1)
        goto fail;
    keymap_free(batch, NULL);
    if (fw->registry_dirty)
        changed = 1;
    return changed;
fail:
    keymap_free(batch, NULL);
    return -1;
}

/* ---- snapshots from the map ------------------------------------------------------ */

/*
 * A snapshot of the map, made as a scan makes one: every record through
 * record_key() (timed at its read), the registry look-up, the finish.
 * *next_due_ms gets the earliest Unix ms at which a kept lock's state
 * changes by time alone.  NULL on ENOMEM, or with r->err set when the
 * registry look-up failed on the connection.
 */
static struct snapshot *
snapshot_from_map(struct scanner *sc, const struct target_conf *t,
                  const struct scan_rules *rules, const atomic_int *stop,
                  int64_t *next_due_ms, char *err, size_t errlen)
{
    struct follow *fw = sc->fw;
    struct run r;
    struct stream st;
    struct snapshot *s;
    struct raw_lock raw;
    struct key_meta m;
    redisReply keyrep;
    const char *k;
    size_t len, pos = 0, i;
    void *v;
    int64_t now_mono = clock_mono_ms();
    int ok = 1;

    memset(&st, 0, sizeof(st));
    if ((s = run_begin(&r, sc, t, rules, stop)) == NULL)
        return NULL;
    sc->pass++;
    if (sc->pass == 0)
        sc->pass = 1;
    st.r = &r;
    st.c = sc->c;
    snprintf(st.host, sizeof(st.host), "%s", sc->host);
    st.port = sc->port;
    while (ok && keymap_next(fw->locks, &pos, &k, &len, &v, NULL)) {
        const struct frec *f = v;

        memset(&keyrep, 0, sizeof(keyrep));
        keyrep.type = REDIS_REPLY_STRING;
        keyrep.str = (char *)k;
        keyrep.len = len;
        memset(&m, 0, sizeof(m));
        m.key = &keyrep;
        m.type = f->type;
        m.idle_s = f->idle_s;
        m.read_ms = f->read_ms;
        memset(&raw, 0, sizeof(raw));
        raw.key = k;
        raw.keylen = len;
        raw.type = f->type;
        /* the TTL as it stands now; the expiry's event removes the key */
        raw.pttl = f->pttl;
        if (f->pttl >= 0) {
            raw.pttl = f->pttl - (now_mono - f->read_mono);
            if (raw.pttl < 1)
                raw.pttl = 1;
        }
        m.pttl = raw.pttl;
        raw.value = f->value;
        raw.valuelen = f->valuelen;
        raw.value_truncated = f->value_truncated;
        raw.fields = f->fields;
        raw.nfields = f->nfields;
        raw.fields_truncated = f->fields_truncated;
        if (record_key(&st, &m, &raw, f->hlen) == -1)
            ok = 0;
    }
    if (ok && registry_lookup(&r, &st, 1, NULL) == -1)
        ok = 0;
    if (ok && st.failed) {
        snprintf(err, errlen, "%s", st.err[0] ? st.err : "registry look-up failed");
        ok = 0;
    }
    if (ok && record_finish(&r) == -1)
        ok = 0;
    class_set_free(r.classes);
    pthread_mutex_destroy(&r.mu);
    if (!ok) {
        redlock_map_free(r.rmap);
        snapshot_unref(s);
        return NULL;
    }
    tracker_sweep(sc->tracker, sc->pass);
    if (r.rmap != NULL) {
        redlock_map_finish(r.rmap);
        s->redlock = r.rmap;
    }
    s->ok = true;
    snprintf(s->node, sizeof(s->node), "%s:%d", sc->host, sc->port);
    /* the scan figures stay those of the last full scan */
    s->started_ms = fw->scan_started_ms;
    s->finished_ms = fw->scan_finished_ms;
    s->duration_s = fw->scan_duration_s;
    s->keys_examined = fw->scan_keys;
    *next_due_ms = r.now_ms + t->scan_interval_ms;
    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = s->locks[i];
        int64_t due;

        if (!(l->states & LOCK_LEAKED) && l->nottl_since_ms > 0) {
            due = l->nottl_since_ms + rules->leak_grace_ms + 1;
            if (due < *next_due_ms)
                *next_due_ms = due;
        }
        if (!(l->states & LOCK_LONG) && l->nholders > 0) {
            due = l->first_seen_ms + rules->max_hold_ms + 1;
            if (due < *next_due_ms)
                *next_due_ms = due;
        }
    }
    s->follow.from_events = true;
    return s;
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

int
scanner_follow(struct scanner *sc, const struct target_conf *t, const struct scan_rules *rules,
               const atomic_int *stop, scan_publish_fn *publish, void *arg)
{
    struct follow *fw = sc->fw;
    struct run r;
    int64_t last_pub = 0, check = clock_mono_ms(), oldest = 0, next_due = 0, interval;
    bool dirty = false, lost;
    int rc;

    if (fw == NULL || !fw->following || sc->c == NULL)
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
        rc = apply_pending(&r, &oldest);
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
            char err[256] = "";

            fw->registry_dirty = false;
            s = snapshot_from_map(sc, t, rules, stop, &next_due, err, sizeof(err));
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
        if (t->mode == TARGET_SENTINEL && now - check >= t->scan_interval_ms) {
            struct target_conf node;

            check = now;
            redisconn_node(t, sc->host, sc->port, &node);
            if (!target_still_current(t, &sc->sentinel_first, sc->c, &node)) {
                unsubscribe(fw);
                scanner_disconnect(sc);
                return 0;
            }
        }
    }
    return 0;
}
