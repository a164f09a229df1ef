/*
 * scan.c - a full scan of one target, fast and gentle.
 *
 * Per SCAN batch the scanner needs, for each key: OBJECT IDLETIME (read
 * before anything touches the key, since a GET would reset it), TYPE and
 * PTTL; then, by type, a bounded read of the value (GETRANGE of at most
 * RAW_VALUE_MAX+1 bytes, or one HSCAN of at most ~RAW_FIELDS_MAX fields).
 *
 * The commands are streamed, not sent in lock-step rounds.  Three kinds of
 * segment go down one connection in a FIFO: SCAN (next cursor), META
 * (IDLETIME, TYPE, PTTL of a batch) and VALS (the value reads of a batch
 * whose types are known).  Reading a SCAN reply sends the batch's META and
 * the next SCAN at once; reading a META sends its VALS; reading VALS
 * records the locks.  Up to INFLIGHT_MAX batches are between their SCAN
 * and their VALS, so Redis always has queued work while the scanner
 * decodes and Redis and the scanner run in parallel instead of taking
 * turns.  That is how the scan, which sends twice the commands of the
 * SCAN + TYPE + PTTL floor in bench/, stays close to it.
 *
 * One such stream runs per Redis node scanned.  A standalone target is
 * one stream; a Sentinel target is one stream to the primary the
 * sentinels name (resolved again on every reconnect, and the pass is
 * retried once on the new primary when a failover cuts the connection);
 * a cluster target is one stream per shard, each on its own thread,
 * against the shard's primary (or a replica, READONLY, with
 * scan_replicas), all recording into the one snapshot of the target.
 * What the streams share (tracker, class set, snapshot, Redlock map) is
 * guarded by one mutex taken once per lock recorded; everything else
 * (connection, pipeline, pacing, counters) is the stream's own.
 *
 * Pacing: work is measured in busy wall time since the last pause; once
 * a slice of PACE_SLICE_MS is used, the stream stops sending SCANs, lets
 * the pipeline drain and sleeps busy * (1 - duty) / duty, so at most
 * scan_duty of each node's wall time goes to the scan.
 * max_keys_per_second is an absolute cap for the whole target, shared
 * equally by its streams.  Sleeps are sliced so a stop request is seen
 * within 50 ms.
 *
 * SCAN may return a key twice in one pass and keys may vanish between
 * SCAN and the reads: duplicates are counted once (the tracker remembers
 * the pass that last saw a key; during a cluster resharding that holds
 * across shards too) and vanished keys are counted and skipped.
 */
#include "collectors/scan/scan.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/redis/cluster.h"
#include "collectors/formats/formats.h"
#include "common/keytext.h"
#include "collectors/locks/lockclass.h"
#include "collectors/redis/rawread.h"
#include "collectors/redis/conn.h"
#include "collectors/locks/redlock.h"
#include "collectors/redis/sentinel.h"
#include "collectors/scan/tracker.h"

/* A connection kept between scans, by the address it goes to. */
struct node_conn {
    char host[256];
    int port;
    redisContext *c;
};

struct scanner {
    char *name;
    struct tracker *tracker;
    struct scan_counters counters;
    uint32_t pass;
    /* standalone and sentinel: the one connection, and where it goes */
    redisContext *c;
    char host[256];
    int port;
    size_t sentinel_first;      /* sentinel to ask first */
    /* cluster: connections by node, and the nodes of the last topology
     * (asked when the configured address does not answer) */
    struct node_conn *conns;
    size_t nconns;
    struct cluster_node *known;
    size_t nknown;
    uint64_t conn_key;          /* how the connections were made (conn_key()) */
};

struct key_meta {
    const redisReply *key;      /* element of the batch's SCAN reply */
    enum raw_type type;
    long long pttl;
    long long idle_s;
    bool skip;                  /* vanished or unreadable */
};

struct batch {
    redisReply *scan;           /* owns the key strings */
    struct key_meta *meta;
    size_t n, cap;
    bool busy;
};

#define INFLIGHT_MAX    4       /* batches between SCAN and VALS */
#define PACE_SLICE_MS   20      /* busy time between pacing decisions */

enum seg_kind { SEG_SCAN, SEG_META, SEG_VALS };

struct segment {
    enum seg_kind kind;
    struct batch *b;
};

#define SEG_RING (3 * INFLIGHT_MAX + 4)

/* What the streams of one run share, on the stack of scanner_run. */
struct run {
    struct scanner *sc;
    const struct target_conf *t;
    const struct scan_rules *rules;
    const atomic_int *stop;
    struct snapshot *snap;
    struct class_set *classes;
    struct redlock_map *rmap;   /* NULL unless the target is in a Redlock group */
    int64_t now_ms;
    int64_t start_mono;
    pthread_mutex_t mu;         /* guards sc->tracker, classes, snap, rmap */
    char err[256];
};

/* One connection's scan: one node, its pipeline, its pacing. */
struct stream {
    struct run *r;
    redisContext *c;
    char host[256];             /* for messages */
    int port;
    bool readonly;              /* a cluster replica: send READONLY first */
    long max_kps;               /* this stream's share of max_keys_per_second */
    int64_t start_mono;
    int64_t resume_mono;        /* end of the last pacing pause */
    uint64_t keys;              /* examined this run */
    struct scan_counters cnt;   /* vanished, truncated, duplicates */
    bool failed;
    bool conn_lost;             /* failed on the connection (not a refusal) */
    char err[256];
    double duration_s;

    /* the pipeline */
    struct batch pool[INFLIGHT_MAX];
    size_t inflight;
    struct segment ring[SEG_RING];
    size_t head, count;
    size_t pat;                 /* pattern being scanned */
    char cursor[32];
    bool scan_outstanding;
    bool scan_done;
};



/* Set an error; messages are cut to fit, on purpose. */
static void set_err(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_err(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

#define run_err(r, ...) set_err((r)->err, sizeof((r)->err), __VA_ARGS__)
#define stream_err(s, ...) set_err((s)->err, sizeof((s)->err), __VA_ARGS__)

struct scanner *
scanner_new(const char *target_name)
{
    struct scanner *sc = calloc(1, sizeof(*sc));

    if (sc == NULL)
        return NULL;
    sc->name = strdup(target_name);
    sc->tracker = tracker_new();
    if (sc->name == NULL || sc->tracker == NULL) {
        scanner_free(sc);
        return NULL;
    }
    return sc;
}

void
scanner_free(struct scanner *sc)
{
    if (sc == NULL)
        return;
    scanner_disconnect(sc);
    free(sc->conns);
    free(sc->known);
    tracker_free(sc->tracker);
    free(sc->name);
    free(sc);
}

const char *
scanner_name(const struct scanner *sc)
{
    return sc->name;
}

void
scanner_disconnect(struct scanner *sc)
{
    size_t i;

    if (sc->c != NULL) {
        redisFree(sc->c);
        sc->c = NULL;
    }
    for (i = 0; i < sc->nconns; i++)
        if (sc->conns[i].c != NULL)
            redisFree(sc->conns[i].c);
    sc->nconns = 0;
}

static int
stopped(const struct run *r)
{
    return r->stop != NULL && atomic_load(r->stop);
}

/* Sleep ms in slices, returning early when asked to stop. */
static void
pause_ms(const struct run *r, int64_t ms)
{
    struct timespec ts;
    int64_t slice;

    while (ms > 0 && !stopped(r)) {
        slice = ms > 50 ? 50 : ms;
        ts.tv_sec = 0;
        ts.tv_nsec = (long)slice * 1000000L;
        nanosleep(&ts, NULL);
        ms -= slice;
    }
}

/* How long to pause now to keep to scan_duty and max_keys_per_second;
 * 0 while the current slice of work is not used up. */
static int64_t
pace_due(struct stream *s)
{
    double duty = s->r->t->scan_duty;
    int64_t now = clock_mono_ms(), busy = now - s->resume_mono, wait = 0;

    if (duty > 0 && duty < 1 && busy >= PACE_SLICE_MS)
        wait = (int64_t)((double)busy * (1.0 - duty) / duty);
    if (s->max_kps > 0) {
        /* the earliest time by which this many keys are allowed */
        int64_t due = (int64_t)(s->keys * 1000 / (uint64_t)s->max_kps);
        int64_t ahead = due - (now - s->start_mono);

        if (ahead > wait)
            wait = ahead;
    }
    return wait;
}
static int
batch_take(struct batch *b, redisReply *scan)
{
    redisReply *keys = scan->element[1];
    size_t i;

    b->scan = scan;
    b->n = 0;
    if (keys->elements > b->cap) {
        struct key_meta *m = realloc(b->meta, keys->elements * sizeof(*m));

        if (m == NULL)
            return -1;
        b->meta = m;
        b->cap = keys->elements;
    }
    for (i = 0; i < keys->elements; i++) {
        if (keys->element[i]->type != REDIS_REPLY_STRING)
            continue;
        memset(&b->meta[b->n], 0, sizeof(b->meta[b->n]));
        b->meta[b->n].key = keys->element[i];
        b->n++;
    }
    return 0;
}

static void
batch_clear(struct batch *b)
{
    if (b->scan != NULL)
        freeReplyObject(b->scan);
    b->scan = NULL;
    b->n = 0;
}

static void
append_key_cmd(redisContext *c, const char *cmd, const char *sub,
               const redisReply *key, const char *a1, const char *a2,
               const char *a3)
{
    const char *argv[6];
    size_t lens[6];
    int argc = 0;

    argv[argc] = cmd;
    lens[argc++] = strlen(cmd);
    if (sub != NULL) {
        argv[argc] = sub;
        lens[argc++] = strlen(sub);
    }
    argv[argc] = key->str;
    lens[argc++] = key->len;
    if (a1 != NULL) {
        argv[argc] = a1;
        lens[argc++] = strlen(a1);
    }
    if (a2 != NULL) {
        argv[argc] = a2;
        lens[argc++] = strlen(a2);
    }
    if (a3 != NULL) {
        argv[argc] = a3;
        lens[argc++] = strlen(a3);
    }
    redisAppendCommandArgv(c, argc, argv, lens);
}

/* Read one reply; -1 with s->err set on a connection error.  hiredis
 * reports a command timeout as EAGAIN; say what it means. */
static int
get_reply(struct stream *s, redisReply **rep)
{
    redisContext *c = s->c;
    void *p = NULL;

    if (redisGetReply(c, &p) != REDIS_OK || p == NULL) {
        if (c->err == REDIS_ERR_IO && (strcmp(c->errstr, strerror(EAGAIN)) == 0 ||
                                       strcmp(c->errstr, strerror(EWOULDBLOCK)) == 0))
            stream_err(s, "read from %s:%d: timed out after %lld ms (command_timeout)",
                    s->host, s->port, (long long)s->r->t->command_timeout_ms);
        else
            stream_err(s, "read from %s:%d: %s", s->host, s->port,
                    c->errstr[0] ? c->errstr : "connection lost");
        s->conn_lost = true;
        return -1;
    }
    *rep = p;
    return 0;
}

/* A cluster redirection or a slot in migration: the key is elsewhere. */
static bool
moved(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_ERROR &&
        ((rep->len >= 6 && memcmp(rep->str, "MOVED ", 6) == 0) ||
         (rep->len >= 4 && memcmp(rep->str, "ASK ", 4) == 0) ||
         (rep->len >= 8 && memcmp(rep->str, "TRYAGAIN", 8) == 0));
}

static int
read_meta(struct stream *s, struct batch *b)
{
    redisReply *rep;
    size_t i;

    for (i = 0; i < b->n; i++) {
        struct key_meta *m = &b->meta[i];

        if (get_reply(s, &rep) == -1)
            return -1;
        /* OBJECT IDLETIME fails under an LFU maxmemory-policy: age 0 */
        m->idle_s = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
        freeReplyObject(rep);
        if (get_reply(s, &rep) == -1)
            return -1;
        if (rep->type == REDIS_REPLY_ERROR && !moved(rep)) {
            /* NOPERM, CLUSTERDOWN, LOADING...: this node cannot be read,
             * and skipping its keys as vanished would hide that */
            stream_err(s, "TYPE on %s:%d refused: %.*s", s->host, s->port,
                       (int)(rep->len > 160 ? 160 : rep->len), rep->str);
            freeReplyObject(rep);
            return -1;
        }
        /* MOVED/ASK: the slot moved away since SCAN (resharding); the
         * key is counted where it lives now, or vanished here */
        m->type = rawread_type(rep);
        freeReplyObject(rep);
        if (get_reply(s, &rep) == -1)
            return -1;
        m->pttl = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -2;
        freeReplyObject(rep);
        if (m->type == RAW_NONE || m->pttl == -2)
            m->skip = true;
    }
    return 0;
}

static void
append_meta(struct stream *s, const struct batch *b)
{
    size_t i;

    for (i = 0; i < b->n; i++) {
        append_key_cmd(s->c, "OBJECT", "IDLETIME", b->meta[i].key, NULL, NULL, NULL);
        append_key_cmd(s->c, "TYPE", NULL, b->meta[i].key, NULL, NULL, NULL);
        append_key_cmd(s->c, "PTTL", NULL, b->meta[i].key, NULL, NULL, NULL);
    }
}

#define STR_(x) #x
#define STR(x) STR_(x)

static void
append_values(struct stream *s, const struct batch *b)
{
    size_t i;

    for (i = 0; i < b->n; i++) {
        const struct key_meta *m = &b->meta[i];

        if (m->skip)
            continue;
        if (m->type == RAW_STRING)
            append_key_cmd(s->c, "GETRANGE", NULL, m->key, "0",
                           STR(RAW_VALUE_MAX), NULL);
        else if (m->type == RAW_HASH) {
            /* HLEN: the true holder count when there are more fields
             * than one bounded HSCAN returns */
            append_key_cmd(s->c, "HLEN", NULL, m->key, NULL, NULL, NULL);
            append_key_cmd(s->c, "HSCAN", NULL, m->key, "0", "COUNT",
                           STR(RAW_FIELDS_MAX));
        }
    }
}

/* 32-bit hashes of the holders, for the tracker. */
static size_t
holder_hashes(const struct lock_view *v, uint32_t *out)
{
    size_t i;

    for (i = 0; i < v->nholders && i < HOLDERS_MAX; i++)
        out[i] = (uint32_t)keytext_hash(v->holders[i].id, v->holders[i].idlen);
    return i;
}

/* The states of a lock at the scan's time. */
static uint8_t
judge(const struct run *r, const struct snap_lock *l, int64_t nottl_since_ms)
{
    const struct scan_rules *rules = r->rules;
    uint8_t states = LOCK_HELD;

    if (l->pttl_ms == -1 && nottl_since_ms > 0 &&
        r->now_ms - nottl_since_ms >= rules->leak_grace_ms)
        states |= LOCK_LEAKED;
    if (l->nholders > 0 && r->now_ms - l->first_seen_ms > rules->max_hold_ms)
        states |= LOCK_LONG;
    if (rules->max_reentrancy > 0 && l->max_count >= rules->max_reentrancy)
        states |= LOCK_REENTRANT_HIGH;
    return states;
}

/* Record one key: decode it (no lock needed), then, under the run's
 * mutex, dedupe it, time its holder, intern its class, count and maybe
 * keep it, and add it to the Redlock map. */
static int
record(struct stream *s, const struct key_meta *m, const struct raw_lock *raw,
       long long hlen)
{
    struct run *r = s->r;
    const struct scan_rules *rules = r->rules;
    struct snap_holder holders[HOLDERS_MAX];
    uint32_t hh[HOLDERS_MAX];
    size_t nh;
    const struct lock_format *fmt;
    struct lock_view view;
    struct track_result tr;
    struct snap_lock l;
    char cls[CLASS_NAME_MAX];
    int64_t start_age;
    uint64_t kh;
    size_t i;
    int ci, rc = -1;

    kh = keytext_hash(raw->key, raw->keylen);
    fmt = formats_decode(raw, &view);
    /* fields past the read cap are holders too (the decoders saw only
     * the first RAW_FIELDS_MAX) */
    rawread_count_cut_holders(&view, raw, hlen);

    start_age = m->idle_s > 0 ? m->idle_s * 1000 : 0;
    if (view.acquired_ms > 0 && r->now_ms - view.acquired_ms > start_age)
        start_age = r->now_ms - view.acquired_ms;
    nh = holder_hashes(&view, hh);
    class_of(raw->key, raw->keylen, rules->classes, rules->nclasses, cls, sizeof(cls));

    memset(&l, 0, sizeof(l));
    l.key = raw->key;
    l.key_len = (uint32_t)(raw->keylen > SNAP_KEY_MAX ? SNAP_KEY_MAX : raw->keylen);
    if (l.key_len < raw->keylen)
        l.flags |= SNAP_KEY_TRUNCATED;
    l.format = (uint8_t)formats_index(fmt);
    l.pttl_ms = raw->pttl;
    l.acquired_ms = view.acquired_ms;
    l.pid = (int32_t)(view.pid > 0 && view.pid <= INT32_MAX ? view.pid : 0);
    l.thread = view.thread;
    l.max_count = view.max_count;
    l.holders_total = (uint32_t)(view.holders_total > UINT32_MAX ? UINT32_MAX
                                 : view.holders_total);
    if (raw->value_truncated || raw->fields_truncated)
        l.flags |= SNAP_VALUE_TRUNCATED;
    if (strcmp(view.mode, "read") == 0)
        l.flags |= SNAP_MODE_READ;
    else if (strcmp(view.mode, "write") == 0)
        l.flags |= SNAP_MODE_WRITE;
    if (view.host[0] != '\0') {
        l.host = view.host;
        l.host_len = (uint8_t)strnlen(view.host, sizeof(view.host));
    }
    for (i = 0; i < view.nholders && i < HOLDERS_MAX; i++) {
        holders[i].id = view.holders[i].id;
        holders[i].id_len = (uint16_t)view.holders[i].idlen;
        holders[i].truncated = view.holders[i].id_truncated;
        holders[i].count = view.holders[i].count;
    }
    l.holders = holders;
    l.nholders = (uint16_t)i;

    pthread_mutex_lock(&r->mu);
    if (tracker_seen(r->sc->tracker, kh, r->sc->pass)) {
        s->cnt.duplicates_total++;
        rc = 0;
        goto out;
    }
    if (tracker_visit(r->sc->tracker, kh, hh, nh, r->sc->pass,
                      r->now_ms, start_age, raw->pttl >= 0, &tr) == -1)
        goto out;
    if ((ci = class_set_intern(r->classes, cls)) < 0)
        goto out;
    if (l.flags & SNAP_VALUE_TRUNCATED)
        s->cnt.truncated_total++;
    l.class_idx = (uint16_t)ci;
    l.first_seen_ms = tr.first_seen_ms;
    l.states = judge(r, &l, tr.nottl_since_ms);
    if (snapshot_add(r->snap, &l, r->now_ms) == -1)
        goto out;
    /* a lock without a holder (a format that names none) still counts
     * as held, by "nobody in particular", on each node */
    if (r->rmap != NULL &&
        redlock_map_add(r->rmap, raw->key, raw->keylen, kh, nh > 0 ? hh[0] : 1,
                        tr.first_seen_ms, clock_now_ms(), raw->pttl) == -1)
        goto out;
    rc = 0;
out:
    pthread_mutex_unlock(&r->mu);
    return rc;
}

/* Read the value replies of batch b (sent by append_values) and record
 * each key. */
static int
read_values(struct stream *s, struct batch *b)
{
    struct raw_field fields[RAW_FIELDS_MAX];
    struct raw_lock raw;
    redisReply *rep;
    long long hlen;
    size_t i;
    int rc;

    for (i = 0; i < b->n; i++) {
        struct key_meta *m = &b->meta[i];

        if (m->skip) {
            s->cnt.vanished_total++;
            continue;
        }
        memset(&raw, 0, sizeof(raw));
        raw.key = m->key->str;
        raw.keylen = m->key->len;
        raw.type = m->type;
        raw.pttl = m->pttl;
        rep = NULL;
        hlen = -1;
        if (m->type == RAW_HASH) {
            if (get_reply(s, &rep) == -1)
                return -1;
            if (rep->type == REDIS_REPLY_INTEGER)
                hlen = rep->integer;
            freeReplyObject(rep);
            rep = NULL;
        }
        if (m->type == RAW_STRING || m->type == RAW_HASH) {
            if (get_reply(s, &rep) == -1)
                return -1;
            if (rep->type == REDIS_REPLY_ERROR) {
                /* WRONGTYPE: replaced by another type since TYPE */
                s->cnt.vanished_total++;
                freeReplyObject(rep);
                continue;
            }
        }
        if (m->type == RAW_STRING) {
            rawread_string(rep, &raw);
        } else if (m->type == RAW_HASH &&
                   (!rawread_hash(rep, fields, &raw) || raw.nfields == 0)) {
            freeReplyObject(rep);       /* gone between TYPE and HSCAN */
            s->cnt.vanished_total++;
            continue;
        }
        rc = record(s, m, &raw, hlen);
        if (rep != NULL)
            freeReplyObject(rep);
        if (rc == -1) {
            stream_err(s, "out of memory recording locks");
            return -1;
        }
    }
    return 0;
}

static int
valid_scan_reply(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[0]->type == REDIS_REPLY_STRING &&
        rep->element[1]->type == REDIS_REPLY_ARRAY;
}

static void
push(struct stream *s, enum seg_kind kind, struct batch *b)
{
    /* cannot overflow: at most one SCAN plus two segments per batch */
    s->ring[(s->head + s->count) % SEG_RING].kind = kind;
    s->ring[(s->head + s->count) % SEG_RING].b = b;
    s->count++;
}

static int
flush(struct stream *s)
{
    int done = 0;

    while (!done)
        if (redisBufferWrite(s->c, &done) == REDIS_ERR) {
            stream_err(s, "write to %s:%d: %s", s->host, s->port, s->c->errstr);
            return -1;
        }
    return 0;
}

/* Send the next SCAN if one is due and allowed now.  A pacing pause waits
 * until the pipeline has drained, so Redis is idle (for us) while the
 * scanner sleeps. */
static void
maybe_scan(struct stream *s)
{
    char count[16];
    int64_t wait;

    if (s->scan_done || s->scan_outstanding || s->inflight >= INFLIGHT_MAX)
        return;
    wait = pace_due(s);
    if (wait > 0) {
        if (s->count > 0)
            return;             /* drain first; called again after VALS */
        pause_ms(s->r, wait);
        s->resume_mono = clock_mono_ms();
    }
    snprintf(count, sizeof(count), "%d", s->r->t->scan_count);
    {
        const char *argv[6] = { "SCAN", s->cursor, "MATCH", s->r->t->patterns[s->pat],
                                "COUNT", count };

        redisAppendCommandArgv(s->c, 6, argv, NULL);
    }
    push(s, SEG_SCAN, NULL);
    s->scan_outstanding = true;
}

static struct batch *
free_batch(struct stream *s)
{
    size_t i;

    for (i = 0; i < INFLIGHT_MAX; i++)
        if (!s->pool[i].busy)
            return &s->pool[i];
    return NULL;
}

static int
on_scan(struct stream *s)
{
    const struct target_conf *t = s->r->t;
    struct batch *b;
    redisReply *rep;

    if (get_reply(s, &rep) == -1)
        return -1;
    s->scan_outstanding = false;
    if (!valid_scan_reply(rep)) {
        if (rep->type == REDIS_REPLY_ERROR)
            stream_err(s, "SCAN on %s:%d refused: %.*s", s->host, s->port,
                    (int)(rep->len > 160 ? 160 : rep->len), rep->str);
        else
            stream_err(s, "SCAN on %s:%d: unexpected reply type %d", s->host, s->port, rep->type);
        freeReplyObject(rep);
        return -1;
    }
    snprintf(s->cursor, sizeof(s->cursor), "%.*s", (int)rep->element[0]->len,
             rep->element[0]->str);
    if (strcmp(s->cursor, "0") == 0) {
        if (++s->pat < t->npatterns)
            snprintf(s->cursor, sizeof(s->cursor), "0");
        else
            s->scan_done = true;
    }
    if (rep->element[1]->elements == 0) {
        freeReplyObject(rep);
    } else {
        b = free_batch(s);      /* a SCAN is only sent with a batch free */
        if (b == NULL || batch_take(b, rep) == -1) {
            freeReplyObject(rep);
            stream_err(s, "out of memory");
            return -1;
        }
        b->busy = true;
        s->inflight++;
        s->keys += b->n;
        append_meta(s, b);
        push(s, SEG_META, b);
    }
    maybe_scan(s);
    return 0;
}

static int
on_vals(struct stream *s, struct batch *b)
{
    if (read_values(s, b) == -1)
        return -1;
    batch_clear(b);
    b->busy = false;
    s->inflight--;
    maybe_scan(s);
    return 0;
}

static int
scan_all(struct stream *s)
{
    struct segment seg;
    size_t i;
    int rc = -1;

    snprintf(s->cursor, sizeof(s->cursor), "0");
    s->resume_mono = clock_mono_ms();
    maybe_scan(s);
    while (s->count > 0) {
        if (stopped(s->r))
            goto out;
        if (flush(s) == -1)
            goto out;
        seg = s->ring[s->head];
        s->head = (s->head + 1) % SEG_RING;
        s->count--;
        switch (seg.kind) {
        case SEG_SCAN:
            if (on_scan(s) == -1)
                goto out;
            break;
        case SEG_META:
            if (read_meta(s, seg.b) == -1)
                goto out;
            append_values(s, seg.b);
            push(s, SEG_VALS, seg.b);
            break;
        case SEG_VALS:
            if (on_vals(s, seg.b) == -1)
                goto out;
            break;
        }
    }
    rc = 0;
out:
    for (i = 0; i < INFLIGHT_MAX; i++) {
        batch_clear(&s->pool[i]);
        free(s->pool[i].meta);
        s->pool[i].meta = NULL;
    }
    return rc;
}

/*
 * The client registry.  Redisson-format fields carry only a client uuid
 * and a thread id; liblockwatch also writes, per client handle, a hash
 * lockwatch:client:{<uuid>} with the holder's host and pid and, per held
 * lock, at:<thread>:<key> = acquisition Unix ms.  After a pass the scanner
 * looks up the uuids it saw: one pipelined EXISTS per distinct uuid (at
 * most REGISTRY_UUIDS_MAX a scan, the rest are counted and skipped), then
 * one HMGET per lock whose uuid has a registry.  Two round trips a scan,
 * whatever the number of locks.  In a cluster the registry key of a
 * uuid lives in the slot of its hash tag, so each lookup goes to the
 * stream of the shard that serves that slot (when that shard's scan
 * failed, its clients' locks simply go without the registry's times).
 */
#define REGISTRY_UUIDS_MAX  4096
#define REGISTRY_CHUNK      1000
#define UUID_LEN            36

struct reg_lock {
    uint32_t lock;              /* index into snap->locks */
    size_t stream;              /* where its registry key lives */
    char uuid[UUID_LEN + 1];
    const char *tid;
    size_t tidlen;
    int exists;
};

static int
reg_cmp(const void *a, const void *b)
{
    return strcmp(((const struct reg_lock *)a)->uuid, ((const struct reg_lock *)b)->uuid);
}

/* "<uuid>:<tid>" or "<uuid>:<tid>:write" */
static bool
parse_holder(const char *id, size_t len, struct reg_lock *rl)
{
    const char *end = id + len, *p;

    if (len < UUID_LEN + 2 || id[UUID_LEN] != ':')
        return false;
    if (len > 6 && memcmp(end - 6, ":write", 6) == 0)
        end -= 6;
    for (p = id + UUID_LEN + 1; p < end; p++)
        if (!((*p >= '0' && *p <= '9') || (*p == '-' && p == id + UUID_LEN + 1)))
            return false;
    if (end == id + UUID_LEN + 1)
        return false;
    memcpy(rl->uuid, id, UUID_LEN);
    rl->uuid[UUID_LEN] = '\0';
    rl->tid = id + UUID_LEN + 1;
    rl->tidlen = (size_t)(end - rl->tid);
    return true;
}

static bool
parse_decimal(const redisReply *rep, int64_t max, int64_t *out)
{
    int64_t v = 0;
    size_t i;

    if (rep->type != REDIS_REPLY_STRING || rep->len == 0 || rep->len > 19)
        return false;
    for (i = 0; i < rep->len; i++) {
        if (rep->str[i] < '0' || rep->str[i] > '9')
            return false;
        v = v * 10 + (rep->str[i] - '0');
    }
    if (v <= 0 || v > max)
        return false;
    *out = v;
    return true;
}

static void
append_registry_key(redisContext *c, const char *cmd, const char *uuid,
                    const char **extra, const size_t *extralen, int nextra)
{
    char key[sizeof("lockwatch:client:{}") + UUID_LEN];
    const char *argv[6];
    size_t lens[6];
    int i, argc = 0;

    snprintf(key, sizeof(key), "lockwatch:client:{%s}", uuid);
    argv[argc] = cmd;
    lens[argc++] = strlen(cmd);
    argv[argc] = key;
    lens[argc++] = strlen(key);
    for (i = 0; i < nextra && argc < 6; i++) {
        argv[argc] = extra[i];
        lens[argc++] = extralen[i];
    }
    redisAppendCommandArgv(c, argc, argv, lens);
}

static void
apply_registry(struct run *r, struct reg_lock *rl, redisReply *rep)
{
    struct snapshot *s = r->snap;
    struct snap_lock *l = s->locks[rl->lock];
    struct track_result tr;
    int64_t pid, at;

    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3)
        return;
    /* a retained lock has a HOST_MAX area for this */
    if (l->host_len == 0 && rep->element[0]->type == REDIS_REPLY_STRING &&
        rep->element[0]->len > 0) {
        size_t hl = rep->element[0]->len > HOST_MAX - 1 ? HOST_MAX - 1 : rep->element[0]->len;

        memcpy(l->host, rep->element[0]->str, hl);
        l->host[hl] = '\0';
        l->host_len = (uint8_t)hl;
    }
    if (l->pid == 0 && parse_decimal(rep->element[1], INT32_MAX, &pid))
        l->pid = (int32_t)pid;
    if (parse_decimal(rep->element[2], FORMATS_TIME_MAX_MS - 1, &at) &&
        at >= FORMATS_TIME_MIN_MS) {
        l->acquired_ms = at;
        if (tracker_backdate(r->sc->tracker, keytext_hash(l->key, l->key_len), at, &tr) == 0) {
            struct snap_lock tmp = *l;

            tmp.first_seen_ms = tr.first_seen_ms;
            snapshot_restate(s, l, judge(r, &tmp, tr.nottl_since_ms), tr.first_seen_ms,
                             r->now_ms);
        }
    }
}

/* The lookups of the locks in rl[0..n) whose registry lives on stream
 * `want`, down that stream's connection. */
static int
registry_stream(struct run *r, struct stream *st, size_t want, struct reg_lock *rl,
                size_t n)
{
    struct snapshot *s = r->snap;
    size_t i, j, start, nuuid = 0, first;
    redisReply *rep;

    /* EXISTS per distinct uuid; the answer is copied to its run of locks
     * (a uuid's locks are adjacent and share one stream) */
    for (start = 0; start < n; ) {
        size_t sent = 0, firsts[REGISTRY_CHUNK];

        for (i = start; i < n && sent < REGISTRY_CHUNK && nuuid < REGISTRY_UUIDS_MAX; ) {
            for (j = i + 1; j < n && strcmp(rl[j].uuid, rl[i].uuid) == 0; j++)
                ;
            if (rl[i].stream == want) {
                firsts[sent++] = i;
                append_registry_key(st->c, "EXISTS", rl[i].uuid, NULL, NULL, 0);
                nuuid++;
            }
            i = j;
        }
        for (j = 0; j < sent; j++) {
            size_t k;

            if (get_reply(st, &rep) == -1)
                return -1;
            first = firsts[j];
            for (k = first; k < n && strcmp(rl[k].uuid, rl[first].uuid) == 0; k++)
                rl[k].exists = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
            freeReplyObject(rep);
        }
        if (i >= n || nuuid >= REGISTRY_UUIDS_MAX)
            break;
        start = i;
    }

    /* HMGET host pid at:<tid>:<key> for the locks of registered clients */
    for (start = 0; start < n; ) {
        size_t idx[REGISTRY_CHUNK], sent = 0;
        char *fields[REGISTRY_CHUNK];

        for (i = start; i < n && sent < REGISTRY_CHUNK; i++) {
            const struct snap_lock *l = s->locks[rl[i].lock];
            const char *extra[3];
            size_t extralen[3], flen;
            char *f;

            if (!rl[i].exists || rl[i].stream != want)
                continue;
            flen = 3 + rl[i].tidlen + 1 + l->key_len;
            f = malloc(flen);
            if (f == NULL) {
                while (sent > 0)
                    free(fields[--sent]);
                return -1;
            }
            memcpy(f, "at:", 3);
            memcpy(f + 3, rl[i].tid, rl[i].tidlen);
            f[3 + rl[i].tidlen] = ':';
            memcpy(f + 4 + rl[i].tidlen, l->key, l->key_len);
            extra[0] = "host";
            extralen[0] = 4;
            extra[1] = "pid";
            extralen[1] = 3;
            extra[2] = f;
            extralen[2] = flen;
            append_registry_key(st->c, "HMGET", rl[i].uuid, extra, extralen, 3);
            fields[sent] = f;
            idx[sent++] = i;
        }
        start = i;
        for (j = 0; j < sent; j++) {
            if (get_reply(st, &rep) == -1) {
                for (; j < sent; j++)
                    free(fields[j]);
                return -1;
            }
            apply_registry(r, &rl[idx[j]], rep);
            freeReplyObject(rep);
            free(fields[j]);
        }
    }
    return 0;
}

/* Look up the registry of every retained Redisson-format lock.  streams
 * are the run's (one per shard in a cluster, in topology order); topo is
 * NULL outside a cluster.  A stream whose lookup fails is marked failed. */
static int
registry_lookup(struct run *r, struct stream *streams, size_t nstreams,
                const struct cluster_topo *topo)
{
    struct snapshot *s = r->snap;
    const struct lock_format *rs = formats_by_name("redisson");
    const struct lock_format *rw = formats_by_name("redisson-rw");
    struct reg_lock *rl = NULL;
    size_t n = 0, i;

    if (s->nlocks > 0 && (rl = calloc(s->nlocks, sizeof(*rl))) == NULL)
        return -1;
    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = s->locks[i];
        bool redisson = (rs != NULL && l->format == formats_index(rs)) ||
            (rw != NULL && l->format == formats_index(rw));

        if (l->nholders == 0 || !redisson)
            continue;
        if (!parse_holder(l->holders[0].id, l->holders[0].id_len, &rl[n]))
            continue;
        rl[n].lock = (uint32_t)i;
        rl[n].stream = 0;
        if (topo != NULL) {
            char key[sizeof("lockwatch:client:{}") + UUID_LEN];
            unsigned slot;

            snprintf(key, sizeof(key), "lockwatch:client:{%s}", rl[n].uuid);
            slot = cluster_keyslot(key, strlen(key));
            rl[n].stream = topo->slot_shard[slot];
            if (rl[n].stream >= nstreams)
                continue;       /* no shard serves it now */
        }
        n++;
    }
    if (n > 0)
        qsort(rl, n, sizeof(*rl), reg_cmp);
    for (i = 0; i < nstreams && n > 0; i++) {
        if (streams[i].failed || streams[i].c == NULL)
            continue;
        if (registry_stream(r, &streams[i], i, rl, n) == -1) {
            streams[i].failed = true;
            if (streams[i].err[0] == '\0')
                stream_err(&streams[i], "out of memory in the registry look-up");
        }
    }
    free(rl);
    return 0;
}
static int
finish_snapshot(struct run *r)
{
    struct snapshot *s = r->snap;
    size_t i, n = class_set_count(r->classes);

    s->classes = calloc(n ? n : 1, sizeof(*s->classes));
    if (s->classes == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        s->classes[i] = strdup(class_set_name(r->classes, i));
        if (s->classes[i] == NULL)
            return -1;
        s->nclasses = i + 1;
    }
    /* class_stats grow with the highest index used; make it cover them all */
    if (s->class_cap < n) {
        struct snap_class *nc = realloc(s->class_stats, n * sizeof(*nc));

        if (nc == NULL)
            return -1;
        memset(nc + s->class_cap, 0, (n - s->class_cap) * sizeof(*nc));
        s->class_stats = nc;
        s->class_cap = n;
    }
    s->classes_overflowed = class_set_overflowed(r->classes);
    snapshot_finish(s);
    return 0;
}

/* ---- connections and streams ------------------------------------------------ */

/* A hash of everything in t that decides where and how the scanner
 * connects: a reload that changes any of it must not reuse a connection
 * made the old way (another server, user, password or database). */
static uint64_t
conn_key(const struct target_conf *t)
{
    char buf[1024];
    uint64_t h;
    size_t i;
    int n;

    n = snprintf(buf, sizeof(buf), "%d|%s|%d|%d|%s|%s|%d|%lld|%lld|%s", (int)t->mode,
                 t->host, t->port, t->db, t->user ? t->user : "", t->master_name ?
                 t->master_name : "", t->scan_replicas, (long long)t->connect_timeout_ms,
                 (long long)t->command_timeout_ms, t->password ? t->password : "");
    h = keytext_hash(buf, n > 0 ? ((size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf)) : 0);
    for (i = 0; i < t->nsentinels; i++) {
        n = snprintf(buf, sizeof(buf), "%016llx|%s|%d", (unsigned long long)h,
                     t->sentinels[i].host, t->sentinels[i].port);
        h = keytext_hash(buf, n > 0 ? ((size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf)) : 0);
    }
    explicit_bzero(buf, sizeof(buf));
    return h;
}

/* Open the stream's connection unless it has one (kept from the last
 * scan); a cluster replica is told READONLY so it answers for its keys. */
static int
stream_connect(struct stream *s)
{
    const char *argv[1] = { "READONLY" };
    struct target_conf node;
    redisReply *rep;
    int rc = 0;

    if (s->c != NULL)
        return 0;
    cluster_node_target(s->r->t, s->host, s->port, &node);
    s->c = redisconn_open(&node, s->err, sizeof(s->err));
    if (s->c == NULL) {
        s->conn_lost = true;
        return -1;
    }
    if (!s->readonly)
        return 0;
    rep = redisconn_command(s->c, &node, "READONLY", 1, argv, NULL, s->err, sizeof(s->err));
    if (rep == NULL) {
        s->conn_lost = true;
        return -1;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        stream_err(s, "READONLY on %s:%d refused: %.*s (the ACL user needs +readonly)",
                   s->host, s->port, (int)(rep->len > 120 ? 120 : rep->len), rep->str);
        rc = -1;
    }
    freeReplyObject(rep);
    return rc;
}

/* One node's whole pass: connect if needed, then the streamed scan. */
static void
stream_run(struct stream *s)
{
    s->start_mono = clock_mono_ms();
    if (stream_connect(s) == -1 || scan_all(s) == -1)
        s->failed = true;
    s->duration_s = (double)(clock_mono_ms() - s->start_mono) / 1000.0;
}

static void *
stream_main(void *arg)
{
    stream_run(arg);
    return NULL;
}

/* Is the scanner's connection still to a primary?  (ROLE) */
static bool
still_primary(struct scanner *sc)
{
    redisReply *rep = redisCommand(sc->c, "ROLE");
    bool yes;

    yes = rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
        rep->element[0]->type == REDIS_REPLY_STRING && rep->element[0]->len == 6 &&
        memcmp(rep->element[0]->str, "master", 6) == 0;
    if (rep != NULL)
        freeReplyObject(rep);
    return yes;
}

/* Standalone and sentinel: one stream on the scanner's connection,
 * opened (and, for sentinel, the primary resolved) when there is none.
 * *had_conn says whether the connection predates this pass. */
static int
run_single(struct run *r, struct stream *st, bool *had_conn)
{
    struct scanner *sc = r->sc;
    const struct target_conf *t = r->t;

    /* A failover promotes a replica while the old primary may still call
     * itself one (until the sentinels reconfigure it) and keeps answering
     * reads: so each pass asks the sentinels where the primary is now and
     * checks ROLE, two round trips a scan, and moves when either says so.
     * Sentinels that do not answer leave the connection as it is. */
    if (sc->c != NULL && t->mode == TARGET_SENTINEL) {
        char host[256], why[512];
        int port;

        if ((sentinel_primary_addr(t, &sc->sentinel_first, host, sizeof(host), &port, why,
                                   sizeof(why)) == 0 &&
             (port != sc->port || strcmp(host, sc->host) != 0)) || !still_primary(sc))
            scanner_disconnect(sc);
    }
    *had_conn = sc->c != NULL;
    if (sc->c == NULL) {
        if (t->mode == TARGET_SENTINEL) {
            sc->c = sentinel_open_primary(t, &sc->sentinel_first, sc->host,
                                          sizeof(sc->host), &sc->port, r->err,
                                          sizeof(r->err));
        } else {
            /* timeouts, AUTH and SELECT as lockctl and the release endpoint do */
            sc->c = redisconn_open(t, r->err, sizeof(r->err));
            snprintf(sc->host, sizeof(sc->host), "%s", t->host);
            sc->port = t->port;
        }
        if (sc->c == NULL)
            return -1;
    }
    st->r = r;
    st->c = sc->c;
    snprintf(st->host, sizeof(st->host), "%s", sc->host);
    st->port = sc->port;
    st->max_kps = t->max_keys_per_second;
    stream_run(st);
    return 0;
}

/* Take the kept connection to host:port, if there is one. */
static redisContext *
take_conn(struct scanner *sc, const char *host, int port)
{
    redisContext *c;
    size_t i;

    for (i = 0; i < sc->nconns; i++)
        if (sc->conns[i].c != NULL && sc->conns[i].port == port &&
            strcmp(sc->conns[i].host, host) == 0) {
            c = sc->conns[i].c;
            sc->conns[i].c = NULL;
            return c;
        }
    return NULL;
}

/* Remember every node of topo as a discovery hint for next time. */
static void
remember_nodes(struct scanner *sc, const struct cluster_topo *topo)
{
    struct cluster_node *k;
    size_t i, j, n = 0;

    for (i = 0; i < topo->nshards; i++)
        n += 1 + topo->shards[i].nreplicas;
    if ((k = calloc(n ? n : 1, sizeof(*k))) == NULL)
        return;                 /* keep the old hints */
    for (i = 0, n = 0; i < topo->nshards; i++) {
        k[n++] = topo->shards[i].primary;
        for (j = 0; j < topo->shards[i].nreplicas; j++)
            k[n++] = topo->shards[i].replicas[j];
    }
    free(sc->known);
    sc->known = k;
    sc->nknown = n;
}

/* The node of a shard to scan: its primary, or with scan_replicas its
 * first healthy replica (the primary when it has none). */
static const struct cluster_node *
shard_node(const struct target_conf *t, const struct cluster_shard *sh, bool *replica)
{
    size_t i;

    *replica = false;
    if (t->scan_replicas)
        for (i = 0; i < sh->nreplicas; i++)
            if (sh->replicas[i].healthy) {
                *replica = true;
                return &sh->replicas[i];
            }
    return &sh->primary;
}

/* Cluster: discover the shards, then scan them all at once, one thread
 * per shard.  -1 only when there is nothing to scan (r->err says why). */
static int
run_cluster(struct run *r, struct cluster_topo *topo, struct stream **out, size_t *nout)
{
    struct scanner *sc = r->sc;
    const struct target_conf *t = r->t;
    struct stream *st;
    pthread_t *th = NULL;
    bool *started = NULL;
    size_t i, n;
    long share;

    if (cluster_discover(t, sc->known, sc->nknown, topo, r->err, sizeof(r->err)) == -1)
        return -1;
    remember_nodes(sc, topo);
    n = topo->nshards;
    if (n == 0) {
        run_err(r, "cluster via %s: no shard serves any slot (is the cluster set up?)",
                topo->via);
        return -1;
    }
    st = calloc(n, sizeof(*st));
    th = calloc(n, sizeof(*th));
    started = calloc(n, sizeof(*started));
    if (st == NULL || th == NULL || started == NULL) {
        free(st);
        free(th);
        free(started);
        run_err(r, "out of memory");
        return -1;
    }
    share = t->max_keys_per_second > 0 ? t->max_keys_per_second / (long)n : 0;
    if (t->max_keys_per_second > 0 && share < 1)
        share = 1;
    for (i = 0; i < n; i++) {
        const struct cluster_node *node = shard_node(t, &topo->shards[i], &st[i].readonly);

        st[i].r = r;
        snprintf(st[i].host, sizeof(st[i].host), "%s", node->host);
        st[i].port = node->port;
        st[i].max_kps = share;
        st[i].c = take_conn(sc, node->host, node->port);
    }
    /* connections to nodes no longer scanned */
    scanner_disconnect(sc);
    for (i = 0; i < n; i++)
        started[i] = pthread_create(&th[i], NULL, stream_main, &st[i]) == 0;
    for (i = 0; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            stream_run(&st[i]);         /* no thread to spare: scan it here */
    }
    free(th);
    free(started);
    *out = st;
    *nout = n;
    return 0;
}

/* After a cluster pass: keep the good connections for the next one. */
static void
keep_conns(struct scanner *sc, struct stream *st, size_t n)
{
    struct node_conn *nc;
    size_t i;

    nc = realloc(sc->conns, (n ? n : 1) * sizeof(*nc));
    if (nc != NULL)
        sc->conns = nc;
    sc->nconns = 0;
    for (i = 0; i < n; i++) {
        if (st[i].c == NULL)
            continue;
        if (st[i].failed || nc == NULL) {
            redisFree(st[i].c);
        } else {
            snprintf(nc[sc->nconns].host, sizeof(nc[sc->nconns].host), "%s", st[i].host);
            nc[sc->nconns].port = st[i].port;
            nc[sc->nconns++].c = st[i].c;
        }
        st[i].c = NULL;
    }
}

/* The per-shard results, for lockwatch_shard_up and readyz. */
static int
record_shards(struct snapshot *s, const struct cluster_topo *topo, const struct stream *st,
              size_t n)
{
    size_t i;

    if ((s->shards = calloc(n ? n : 1, sizeof(*s->shards))) == NULL)
        return -1;
    s->nshards = n;
    for (i = 0; i < n; i++) {
        struct snap_shard *sh = &s->shards[i];

        snprintf(sh->shard, sizeof(sh->shard), "%s", topo->shards[i].ranges);
        snprintf(sh->node, sizeof(sh->node), "%s:%d", st[i].host, st[i].port);
        sh->replica = st[i].readonly;
        sh->ok = !st[i].failed;
        sh->keys = st[i].keys;
        sh->duration_s = st[i].duration_s;
        if (st[i].failed)
            snprintf(sh->err, sizeof(sh->err), "%s", st[i].err[0] ? st[i].err : "scan failed");
    }
    return 0;
}

static void
free_streams(struct stream *st, size_t n)
{
    size_t i, b;

    for (i = 0; i < n; i++)
        for (b = 0; b < INFLIGHT_MAX; b++) {
            batch_clear(&st[i].pool[b]);
            free(st[i].pool[b].meta);
        }
    free(st);
}

/*
 * One pass over the target.  *retry is set when a Sentinel target lost a
 * connection that predates the pass (a failover cuts the clients of the
 * old primary): the caller may run the pass again at once, resolving the
 * new primary, rather than report the target down.
 */
static struct snapshot *
run_pass(struct scanner *sc, const struct target_conf *t, const struct scan_rules *rules,
         const atomic_int *stop, bool *retry)
{
    struct run r;
    struct snapshot *s;
    struct stream *st = NULL;
    struct cluster_topo topo;
    size_t nst = 0, i, nok = 0;
    bool had_conn = false, cluster = t->mode == TARGET_CLUSTER;
    int ok;

    *retry = false;
    memset(&r, 0, sizeof(r));
    memset(&topo, 0, sizeof(topo));
    r.sc = sc;
    r.t = t;
    r.rules = rules;
    r.stop = stop;
    r.start_mono = clock_mono_ms();
    s = snapshot_new(sc->name);
    if (s == NULL)
        return NULL;
    r.snap = s;
    s->started_ms = clock_now_ms();
    /* States are judged against the time the scan started, so one scan
     * is one consistent picture. */
    r.now_ms = s->started_ms;
    r.classes = class_set_new();
    if (rules->redlock_map)
        r.rmap = redlock_map_new();
    if (r.classes == NULL || (rules->redlock_map && r.rmap == NULL)) {
        class_set_free(r.classes);
        redlock_map_free(r.rmap);
        snapshot_unref(s);
        return NULL;
    }
    pthread_mutex_init(&r.mu, NULL);
    if (conn_key(t) != sc->conn_key) {
        /* first run, or a reload changed the address, mode or credentials */
        scanner_disconnect(sc);
        free(sc->known);
        sc->known = NULL;
        sc->nknown = 0;
        sc->sentinel_first = 0;
        sc->conn_key = conn_key(t);
    }
    sc->pass++;
    if (sc->pass == 0)
        sc->pass = 1;           /* 0 never marks a visited pass */

    if (cluster) {
        ok = run_cluster(&r, &topo, &st, &nst) == 0;
    } else if ((st = calloc(1, sizeof(*st))) == NULL) {
        run_err(&r, "out of memory");
        ok = 0;
    } else {
        nst = 1;
        ok = run_single(&r, st, &had_conn) == 0;
        if (ok)
            snprintf(s->node, sizeof(s->node), "%s:%d", sc->host, sc->port);
    }
    if (stopped(&r)) {
        /* replies may still be in flight: the connections cannot be reused */
        for (i = 0; i < nst && cluster; i++)
            if (st[i].c != NULL)
                redisFree(st[i].c);
        scanner_disconnect(sc);
        free_streams(st, nst);
        cluster_topo_clear(&topo);
        class_set_free(r.classes);
        redlock_map_free(r.rmap);
        pthread_mutex_destroy(&r.mu);
        snapshot_unref(s);
        return NULL;
    }
    for (i = 0; i < nst; i++) {
        sc->counters.keys_total += st[i].keys;
        sc->counters.vanished_total += st[i].cnt.vanished_total;
        sc->counters.truncated_total += st[i].cnt.truncated_total;
        sc->counters.duplicates_total += st[i].cnt.duplicates_total;
        s->keys_examined += st[i].keys;
    }
    if (ok && registry_lookup(&r, st, nst, cluster ? &topo : NULL) == -1) {
        run_err(&r, "out of memory in the registry look-up");
        ok = 0;
    }
    for (i = 0; i < nst; i++)
        if (!st[i].failed)
            nok++;
    if (ok && !cluster && st[0].failed) {
        run_err(&r, "%s", st[0].err[0] ? st[0].err : "scan failed");
        *retry = t->mode == TARGET_SENTINEL && had_conn && st[0].conn_lost;
        ok = 0;
    } else if (ok && cluster) {
        if (record_shards(s, &topo, st, nst) == -1) {
            run_err(&r, "out of memory");
            ok = 0;
        } else if (nok == 0) {
            /* a shard that fails marks only itself; all of them is the target */
            run_err(&r, "every shard failed; %s: %s", s->shards[0].node, s->shards[0].err);
            ok = 0;
        }
    }
    if (cluster)
        keep_conns(sc, st, nst);
    if (ok) {
        if (finish_snapshot(&r) == -1) {
            run_err(&r, "out of memory finishing the snapshot");
            ok = 0;
        } else if (nok == nst) {
            /* entries of a shard that failed must survive until it is
             * scanned again: sweep only after a pass that saw everything */
            tracker_sweep(sc->tracker, sc->pass);
        }
    }
    class_set_free(r.classes);
    if (!ok) {
        /* A failed scan publishes no locks: a half-scanned picture would
         * under-count, and the target is reported down instead. */
        if (!cluster)
            scanner_disconnect(sc);
        while (s->nlocks > 0)
            free(s->locks[--s->nlocks]);
        s->locks_total = 0;
        s->retained_bytes = 0;
        snprintf(s->err, sizeof(s->err), "%s", r.err[0] ? r.err : "scan failed");
        redlock_map_free(r.rmap);
    } else if (r.rmap != NULL) {
        redlock_map_finish(r.rmap);
        s->redlock = r.rmap;
    }
    s->ok = ok;
    free_streams(st, nst);
    cluster_topo_clear(&topo);
    pthread_mutex_destroy(&r.mu);
    s->finished_ms = clock_now_ms();
    s->duration_s = (double)(clock_mono_ms() - r.start_mono) / 1000.0;
    return s;
}

struct snapshot *
scanner_run(struct scanner *sc, const struct target_conf *target,
            const struct scan_rules *rules, const atomic_int *stop)
{
    struct snapshot *s;
    bool retry;

    s = run_pass(sc, target, rules, stop, &retry);
    if (s != NULL && !s->ok && retry) {
        /* a failover cut the old primary's clients: the next primary is
         * one sentinel question away, so scan it now instead of
         * reporting the target down until the next interval */
        snapshot_unref(s);
        s = run_pass(sc, target, rules, stop, &retry);
    }
    if (s == NULL)
        return NULL;
    if (s->ok)
        sc->counters.scans_ok++;
    else
        sc->counters.scans_error++;
    s->counters = sc->counters;
    return s;
}
