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
 * Pacing: work is measured in busy wall time since the last pause; once
 * a slice of PACE_SLICE_MS is used, the scanner stops sending SCANs, lets
 * the pipeline drain and sleeps busy * (1 - duty) / duty, so at most
 * scan_duty of wall time goes to the target.  max_keys_per_second is an
 * absolute cap applied the same way.  Sleeps are sliced so a stop request
 * is seen within 50 ms.
 *
 * SCAN may return a key twice in one pass and keys may vanish between
 * SCAN and the reads: duplicates are counted once (the tracker remembers
 * the pass that last saw a key) and vanished keys are counted and skipped.
 */
#include "collectors/scan.h"

#include <errno.h>
#include <stdarg.h>
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/formats.h"
#include "collectors/keytext.h"
#include "collectors/lockclass.h"
#include "collectors/redisconn.h"
#include "collectors/tracker.h"

struct scanner {
    char *name;
    redisContext *c;
    struct tracker *tracker;
    struct scan_counters counters;
    uint32_t pass;
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

/* Everything one run needs, on the stack of scanner_run. */
struct run {
    struct scanner *sc;
    const struct target_conf *t;
    const struct scan_rules *rules;
    const atomic_int *stop;
    struct snapshot *snap;
    struct class_set *classes;
    int64_t now_ms;
    int64_t start_mono;
    int64_t resume_mono;        /* end of the last pacing pause */
    uint64_t keys;              /* examined this run */
    char err[256];

    /* the stream */
    struct batch pool[INFLIGHT_MAX];
    size_t inflight;
    struct segment ring[SEG_RING];
    size_t head, count;
    size_t pat;                 /* pattern being scanned */
    char cursor[32];
    bool scan_outstanding;
    bool scan_done;
};

int64_t
scan_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
scan_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Set the run's error; messages are cut to fit, on purpose. */
static void run_err(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
run_err(struct run *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->err, sizeof(r->err), fmt, ap);
    va_end(ap);
}

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
    if (sc->c != NULL) {
        redisFree(sc->c);
        sc->c = NULL;
    }
}

static int
connect_target(struct run *r)
{
    struct scanner *sc = r->sc;
    const struct target_conf *t = r->t;

    if (sc->c != NULL)
        return 0;
    if (t->mode != TARGET_STANDALONE) {
        snprintf(r->err, sizeof(r->err),
                 "mode %s is not supported by this build (use mode = standalone)",
                 t->mode == TARGET_CLUSTER ? "cluster" : "sentinel");
        return -1;
    }
    /* timeouts, AUTH and SELECT as lockctl and the release endpoint do */
    sc->c = redisconn_open(t, r->err, sizeof(r->err));
    return sc->c != NULL ? 0 : -1;
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
pace_due(struct run *r)
{
    double duty = r->t->scan_duty;
    int64_t now = scan_mono_ms(), busy = now - r->resume_mono, wait = 0;

    if (duty > 0 && duty < 1 && busy >= PACE_SLICE_MS)
        wait = (int64_t)((double)busy * (1.0 - duty) / duty);
    if (r->t->max_keys_per_second > 0) {
        /* the earliest time by which this many keys are allowed */
        int64_t due = (int64_t)(r->keys * 1000 / (uint64_t)r->t->max_keys_per_second);
        int64_t ahead = due - (now - r->start_mono);

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

static enum raw_type
type_of(const redisReply *rep)
{
    if (rep->type != REDIS_REPLY_STATUS)
        return RAW_NONE;
    if (rep->len == 6 && memcmp(rep->str, "string", 6) == 0)
        return RAW_STRING;
    if (rep->len == 4 && memcmp(rep->str, "hash", 4) == 0)
        return RAW_HASH;
    if (rep->len == 4 && memcmp(rep->str, "none", 4) == 0)
        return RAW_NONE;
    return RAW_OTHER;
}

/* Read one reply; -1 with r->err set on a connection error.  hiredis
 * reports a command timeout as EAGAIN; say what it means. */
static int
get_reply(struct run *r, redisReply **rep)
{
    redisContext *c = r->sc->c;
    void *p = NULL;

    if (redisGetReply(c, &p) != REDIS_OK || p == NULL) {
        if (c->err == REDIS_ERR_IO && (strcmp(c->errstr, strerror(EAGAIN)) == 0 ||
                                       strcmp(c->errstr, strerror(EWOULDBLOCK)) == 0))
            run_err(r, "read from %s:%d: timed out after %lld ms (command_timeout)",
                    r->t->host, r->t->port, (long long)r->t->command_timeout_ms);
        else
            run_err(r, "read from %s:%d: %s", r->t->host, r->t->port,
                    c->errstr[0] ? c->errstr : "connection lost");
        return -1;
    }
    *rep = p;
    return 0;
}

static int
read_meta(struct run *r, struct batch *b)
{
    redisReply *rep;
    size_t i;

    for (i = 0; i < b->n; i++) {
        struct key_meta *m = &b->meta[i];

        if (get_reply(r, &rep) == -1)
            return -1;
        /* OBJECT IDLETIME fails under an LFU maxmemory-policy: age 0 */
        m->idle_s = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
        freeReplyObject(rep);
        if (get_reply(r, &rep) == -1)
            return -1;
        m->type = type_of(rep);
        freeReplyObject(rep);
        if (get_reply(r, &rep) == -1)
            return -1;
        m->pttl = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -2;
        freeReplyObject(rep);
        if (m->type == RAW_NONE || m->pttl == -2)
            m->skip = true;
    }
    return 0;
}

static void
append_meta(struct run *r, const struct batch *b)
{
    size_t i;

    for (i = 0; i < b->n; i++) {
        append_key_cmd(r->sc->c, "OBJECT", "IDLETIME", b->meta[i].key, NULL, NULL, NULL);
        append_key_cmd(r->sc->c, "TYPE", NULL, b->meta[i].key, NULL, NULL, NULL);
        append_key_cmd(r->sc->c, "PTTL", NULL, b->meta[i].key, NULL, NULL, NULL);
    }
}

#define STR_(x) #x
#define STR(x) STR_(x)

static void
append_values(struct run *r, const struct batch *b)
{
    size_t i;

    for (i = 0; i < b->n; i++) {
        const struct key_meta *m = &b->meta[i];

        if (m->skip)
            continue;
        if (m->type == RAW_STRING)
            append_key_cmd(r->sc->c, "GETRANGE", NULL, m->key, "0",
                           STR(RAW_VALUE_MAX), NULL);
        else if (m->type == RAW_HASH) {
            /* HLEN: the true holder count when there are more fields
             * than one bounded HSCAN returns */
            append_key_cmd(r->sc->c, "HLEN", NULL, m->key, NULL, NULL, NULL);
            append_key_cmd(r->sc->c, "HSCAN", NULL, m->key, "0", "COUNT",
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

static int
record(struct run *r, const struct key_meta *m, const struct raw_lock *raw,
       long long hlen)
{
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
    int ci;

    kh = keytext_hash(raw->key, raw->keylen);
    if (tracker_seen(r->sc->tracker, kh, r->sc->pass)) {
        r->sc->counters.duplicates_total++;
        return 0;
    }
    fmt = formats_decode(raw, &view);
    /* fields past the read cap are holders too (the decoders saw only
     * the first RAW_FIELDS_MAX) */
    if (raw->fields_truncated && view.holders_total > 0 && hlen > (long long)raw->nfields)
        view.holders_total += (size_t)(hlen - (long long)raw->nfields);

    start_age = m->idle_s > 0 ? m->idle_s * 1000 : 0;
    if (view.acquired_ms > 0 && r->now_ms - view.acquired_ms > start_age)
        start_age = r->now_ms - view.acquired_ms;
    nh = holder_hashes(&view, hh);
    if (tracker_visit(r->sc->tracker, kh, hh, nh, r->sc->pass,
                      r->now_ms, start_age, raw->pttl >= 0, &tr) == -1)
        return -1;

    class_of(raw->key, raw->keylen, rules->classes, rules->nclasses, cls, sizeof(cls));
    ci = class_set_intern(r->classes, cls);
    if (ci < 0)
        return -1;

    memset(&l, 0, sizeof(l));
    l.key = raw->key;
    l.key_len = (uint32_t)(raw->keylen > SNAP_KEY_MAX ? SNAP_KEY_MAX : raw->keylen);
    if (l.key_len < raw->keylen)
        l.flags |= SNAP_KEY_TRUNCATED;
    l.class_idx = (uint16_t)ci;
    l.format = (uint8_t)formats_index(fmt);
    l.pttl_ms = raw->pttl;
    l.first_seen_ms = tr.first_seen_ms;
    l.acquired_ms = view.acquired_ms;
    l.pid = (int32_t)(view.pid > 0 && view.pid <= INT32_MAX ? view.pid : 0);
    l.thread = view.thread;
    l.max_count = view.max_count;
    l.holders_total = (uint32_t)(view.holders_total > UINT32_MAX ? UINT32_MAX
                                 : view.holders_total);
    if (raw->value_truncated || raw->fields_truncated) {
        l.flags |= SNAP_VALUE_TRUNCATED;
        r->sc->counters.truncated_total++;
    }
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
    l.states = judge(r, &l, tr.nottl_since_ms);
    return snapshot_add(r->snap, &l, r->now_ms);
}

/* Read the value replies of batch b (sent by append_values) and record
 * each key. */
static int
read_values(struct run *r, struct batch *b)
{
    struct raw_field fields[RAW_FIELDS_MAX];
    struct raw_lock raw;
    redisReply *rep;
    long long hlen;
    size_t i, j, nf;
    int rc;

    for (i = 0; i < b->n; i++) {
        struct key_meta *m = &b->meta[i];

        if (m->skip) {
            r->sc->counters.vanished_total++;
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
            if (get_reply(r, &rep) == -1)
                return -1;
            if (rep->type == REDIS_REPLY_INTEGER)
                hlen = rep->integer;
            freeReplyObject(rep);
            rep = NULL;
        }
        if (m->type == RAW_STRING || m->type == RAW_HASH) {
            if (get_reply(r, &rep) == -1)
                return -1;
            if (rep->type == REDIS_REPLY_ERROR) {
                /* WRONGTYPE: replaced by another type since TYPE */
                r->sc->counters.vanished_total++;
                freeReplyObject(rep);
                continue;
            }
        }
        if (m->type == RAW_STRING && rep->type == REDIS_REPLY_STRING) {
            raw.value = rep->str;
            raw.valuelen = rep->len;
            if (raw.valuelen > RAW_VALUE_MAX) {
                raw.valuelen = RAW_VALUE_MAX;
                raw.value_truncated = true;
            }
        } else if (m->type == RAW_HASH) {
            const redisReply *arr;

            if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
                rep->element[1]->type != REDIS_REPLY_ARRAY) {
                freeReplyObject(rep);
                r->sc->counters.vanished_total++;
                continue;
            }
            arr = rep->element[1];
            if (arr->elements == 0) {
                freeReplyObject(rep);   /* vanished between TYPE and HSCAN */
                r->sc->counters.vanished_total++;
                continue;
            }
            nf = 0;
            for (j = 0; j + 1 < arr->elements; j += 2) {
                if (nf == RAW_FIELDS_MAX) {
                    raw.fields_truncated = true;
                    break;
                }
                fields[nf].name = arr->element[j]->str;
                fields[nf].namelen = arr->element[j]->len;
                fields[nf].value = arr->element[j + 1]->str;
                fields[nf].valuelen = arr->element[j + 1]->len;
                nf++;
            }
            /* a non-zero cursor means more fields than one HSCAN gave */
            if (rep->element[0]->type == REDIS_REPLY_STRING &&
                !(rep->element[0]->len == 1 && rep->element[0]->str[0] == '0'))
                raw.fields_truncated = true;
            raw.fields = fields;
            raw.nfields = nf;
        }
        rc = record(r, m, &raw, hlen);
        if (rep != NULL)
            freeReplyObject(rep);
        if (rc == -1) {
            run_err(r, "out of memory recording locks");
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
push(struct run *r, enum seg_kind kind, struct batch *b)
{
    /* cannot overflow: at most one SCAN plus two segments per batch */
    r->ring[(r->head + r->count) % SEG_RING].kind = kind;
    r->ring[(r->head + r->count) % SEG_RING].b = b;
    r->count++;
}

static int
flush(struct run *r)
{
    int done = 0;

    while (!done)
        if (redisBufferWrite(r->sc->c, &done) == REDIS_ERR) {
            run_err(r, "write to %s:%d: %s", r->t->host, r->t->port, r->sc->c->errstr);
            return -1;
        }
    return 0;
}

/* Send the next SCAN if one is due and allowed now.  A pacing pause waits
 * until the pipeline has drained, so Redis is idle (for us) while the
 * scanner sleeps. */
static void
maybe_scan(struct run *r)
{
    char count[16];
    int64_t wait;

    if (r->scan_done || r->scan_outstanding || r->inflight >= INFLIGHT_MAX)
        return;
    wait = pace_due(r);
    if (wait > 0) {
        if (r->count > 0)
            return;             /* drain first; called again after VALS */
        pause_ms(r, wait);
        r->resume_mono = scan_mono_ms();
    }
    snprintf(count, sizeof(count), "%d", r->t->scan_count);
    {
        const char *argv[6] = { "SCAN", r->cursor, "MATCH", r->t->patterns[r->pat],
                                "COUNT", count };

        redisAppendCommandArgv(r->sc->c, 6, argv, NULL);
    }
    push(r, SEG_SCAN, NULL);
    r->scan_outstanding = true;
}

static struct batch *
free_batch(struct run *r)
{
    size_t i;

    for (i = 0; i < INFLIGHT_MAX; i++)
        if (!r->pool[i].busy)
            return &r->pool[i];
    return NULL;
}

static int
on_scan(struct run *r)
{
    const struct target_conf *t = r->t;
    struct batch *b;
    redisReply *rep;

    if (get_reply(r, &rep) == -1)
        return -1;
    r->scan_outstanding = false;
    if (!valid_scan_reply(rep)) {
        if (rep->type == REDIS_REPLY_ERROR)
            run_err(r, "SCAN on %s:%d refused: %.*s", t->host, t->port,
                    (int)(rep->len > 160 ? 160 : rep->len), rep->str);
        else
            run_err(r, "SCAN on %s:%d: unexpected reply type %d", t->host, t->port, rep->type);
        freeReplyObject(rep);
        return -1;
    }
    snprintf(r->cursor, sizeof(r->cursor), "%.*s", (int)rep->element[0]->len,
             rep->element[0]->str);
    if (strcmp(r->cursor, "0") == 0) {
        if (++r->pat < t->npatterns)
            snprintf(r->cursor, sizeof(r->cursor), "0");
        else
            r->scan_done = true;
    }
    if (rep->element[1]->elements == 0) {
        freeReplyObject(rep);
    } else {
        b = free_batch(r);      /* a SCAN is only sent with a batch free */
        if (b == NULL || batch_take(b, rep) == -1) {
            freeReplyObject(rep);
            run_err(r, "out of memory");
            return -1;
        }
        b->busy = true;
        r->inflight++;
        r->keys += b->n;
        append_meta(r, b);
        push(r, SEG_META, b);
    }
    maybe_scan(r);
    return 0;
}

static int
on_vals(struct run *r, struct batch *b)
{
    if (read_values(r, b) == -1)
        return -1;
    batch_clear(b);
    b->busy = false;
    r->inflight--;
    maybe_scan(r);
    return 0;
}

static int
scan_all(struct run *r)
{
    struct segment seg;
    size_t i;
    int rc = -1;

    snprintf(r->cursor, sizeof(r->cursor), "0");
    r->resume_mono = scan_mono_ms();
    maybe_scan(r);
    while (r->count > 0) {
        if (stopped(r))
            goto out;
        if (flush(r) == -1)
            goto out;
        seg = r->ring[r->head];
        r->head = (r->head + 1) % SEG_RING;
        r->count--;
        switch (seg.kind) {
        case SEG_SCAN:
            if (on_scan(r) == -1)
                goto out;
            break;
        case SEG_META:
            if (read_meta(r, seg.b) == -1)
                goto out;
            append_values(r, seg.b);
            push(r, SEG_VALS, seg.b);
            break;
        case SEG_VALS:
            if (on_vals(r, seg.b) == -1)
                goto out;
            break;
        }
    }
    rc = 0;
out:
    for (i = 0; i < INFLIGHT_MAX; i++) {
        batch_clear(&r->pool[i]);
        free(r->pool[i].meta);
        r->pool[i].meta = NULL;
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
 * whatever the number of locks.
 */
#define REGISTRY_UUIDS_MAX  4096
#define REGISTRY_CHUNK      1000
#define UUID_LEN            36

struct reg_lock {
    uint32_t lock;              /* index into snap->locks */
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

static int
registry_lookup(struct run *r)
{
    struct snapshot *s = r->snap;
    const struct lock_format *rs = formats_by_name("redisson");
    const struct lock_format *rw = formats_by_name("redisson-rw");
    struct reg_lock *rl = NULL;
    size_t n = 0, i, j, start, nuuid = 0, first;
    redisReply *rep;
    int rc = -1;

    if (s->nlocks > 0 && (rl = calloc(s->nlocks, sizeof(*rl))) == NULL)
        goto out;
    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = s->locks[i];
        bool redisson = (rs != NULL && l->format == formats_index(rs)) ||
            (rw != NULL && l->format == formats_index(rw));

        if (l->nholders == 0 || !redisson)
            continue;
        if (!parse_holder(l->holders[0].id, l->holders[0].id_len, &rl[n]))
            continue;
        rl[n].lock = (uint32_t)i;
        n++;
    }
    if (n == 0) {
        rc = 0;
        goto out;
    }
    qsort(rl, n, sizeof(*rl), reg_cmp);

    /* EXISTS per distinct uuid; the answer is copied to its run of locks */
    for (start = 0; start < n; ) {
        size_t sent = 0, firsts[REGISTRY_CHUNK];

        for (i = start; i < n && sent < REGISTRY_CHUNK && nuuid < REGISTRY_UUIDS_MAX; ) {
            firsts[sent++] = i;
            append_registry_key(r->sc->c, "EXISTS", rl[i].uuid, NULL, NULL, 0);
            nuuid++;
            for (j = i + 1; j < n && strcmp(rl[j].uuid, rl[i].uuid) == 0; j++)
                ;
            i = j;
        }
        for (j = 0; j < sent; j++) {
            size_t k;

            if (get_reply(r, &rep) == -1)
                goto out;
            first = firsts[j];
            for (k = first; k < n && strcmp(rl[k].uuid, rl[first].uuid) == 0; k++)
                rl[k].exists = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
            freeReplyObject(rep);
        }
        if (sent == 0 || nuuid >= REGISTRY_UUIDS_MAX)
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

            if (!rl[i].exists)
                continue;
            flen = 3 + rl[i].tidlen + 1 + l->key_len;
            f = malloc(flen);
            if (f == NULL) {
                while (sent > 0)
                    free(fields[--sent]);
                goto out;
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
            append_registry_key(r->sc->c, "HMGET", rl[i].uuid, extra, extralen, 3);
            fields[sent] = f;
            idx[sent++] = i;
        }
        start = i;
        for (j = 0; j < sent; j++) {
            if (get_reply(r, &rep) == -1) {
                for (; j < sent; j++)
                    free(fields[j]);
                goto out;
            }
            apply_registry(r, &rl[idx[j]], rep);
            freeReplyObject(rep);
            free(fields[j]);
        }
    }
    rc = 0;
out:
    free(rl);
    return rc;
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

struct snapshot *
scanner_run(struct scanner *sc, const struct target_conf *target,
            const struct scan_rules *rules, const atomic_int *stop)
{
    struct run r;
    struct snapshot *s;
    int ok;

    memset(&r, 0, sizeof(r));
    r.sc = sc;
    r.t = target;
    r.rules = rules;
    r.stop = stop;
    r.start_mono = scan_mono_ms();
    s = snapshot_new(sc->name);
    if (s == NULL)
        return NULL;
    r.snap = s;
    s->started_ms = scan_now_ms();
    /* States are judged against the time the scan started, so one scan
     * is one consistent picture. */
    r.now_ms = s->started_ms;
    r.classes = class_set_new();
    if (r.classes == NULL) {
        snapshot_unref(s);
        return NULL;
    }
    sc->pass++;
    if (sc->pass == 0)
        sc->pass = 1;           /* 0 never marks a visited pass */

    ok = connect_target(&r) == 0 && scan_all(&r) == 0;
    if (stopped(&r)) {
        /* replies may still be in flight: the connection cannot be reused */
        scanner_disconnect(sc);
        class_set_free(r.classes);
        snapshot_unref(s);
        return NULL;
    }
    sc->counters.keys_total += r.keys;
    s->keys_examined = r.keys;
    if (ok && registry_lookup(&r) == -1)
        ok = 0;
    if (ok) {
        if (finish_snapshot(&r) == -1) {
            run_err(&r, "out of memory finishing the snapshot");
            ok = 0;
        } else {
            tracker_sweep(sc->tracker, sc->pass);
        }
    }
    class_set_free(r.classes);
    if (!ok) {
        /* A failed scan publishes no locks: a half-scanned picture would
         * under-count, and the target is reported down instead. */
        scanner_disconnect(sc);
        while (s->nlocks > 0)
            free(s->locks[--s->nlocks]);
        s->locks_total = 0;
        s->retained_bytes = 0;
        snprintf(s->err, sizeof(s->err), "%s", r.err[0] ? r.err : "scan failed");
        sc->counters.scans_error++;
    } else {
        sc->counters.scans_ok++;
    }
    s->ok = ok;
    s->finished_ms = scan_now_ms();
    s->duration_s = (double)(scan_mono_ms() - r.start_mono) / 1000.0;
    s->counters = sc->counters;
    return s;
}
