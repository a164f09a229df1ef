/*
 * scan.c - a full scan of one target, fast and gentle.
 *
 * Per SCAN batch the scanner needs, for each key: OBJECT IDLETIME (read
 * before anything touches the key, since a GET would reset it), TYPE and
 * PTTL; then, by type, a bounded read of the value (GETRANGE of at most
 * RAW_VALUE_MAX+1 bytes, or one HSCAN of at most ~RAW_FIELDS_MAX fields).
 * Done naively that is three round trips per batch.  Instead every round
 * trip carries three things at once:
 *
 *     meta(batch r)  +  values(batch r-1)  +  SCAN(cursor after batch r)
 *
 * so a full pass costs one round trip per SCAN call, the same as the
 * floor program in bench/ that only sends SCAN + TYPE + PTTL.
 *
 * Pacing: the time spent in round trips is "busy"; after each round the
 * scanner sleeps busy * (1 - duty) / duty so that at most scan_duty of
 * wall time goes to the target, and max_keys_per_second adds an absolute
 * cap.  Sleeps are sliced so a stop request is seen within 50 ms.
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
};

/* Everything one run needs, on the stack of scanner_run. */
struct run {
    struct scanner *sc;
    const struct target_conf *t;
    const struct scan_rules *rules;
    const atomic_int *stop;
    struct snapshot *snap;
    struct class_set *classes;
    int64_t now_ms;
    int64_t busy_ms;            /* in round trips, this run */
    int64_t start_mono;
    uint64_t keys;              /* examined this run */
    char err[256];
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

static struct timeval
ms_tv(int64_t ms)
{
    struct timeval tv;

    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    return tv;
}

/* Run one command synchronously; 0 when the reply is not an error. */
static int
simple_cmd(struct run *r, int argc, const char **argv, const char *what)
{
    redisReply *rep;
    int rc = 0;

    rep = redisCommandArgv(r->sc->c, argc, argv, NULL);
    if (rep == NULL) {
        run_err(r, "%s on %s:%d: %s", what, r->t->host,
                 r->t->port, r->sc->c->errstr);
        return -1;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        run_err(r, "%s on %s:%d refused: %.*s", what,
                 r->t->host, r->t->port, (int)(rep->len > 160 ? 160 : rep->len),
                 rep->str);
        rc = -1;
    }
    freeReplyObject(rep);
    return rc;
}

static int
connect_target(struct run *r)
{
    struct scanner *sc = r->sc;
    const struct target_conf *t = r->t;
    char db[16];

    if (sc->c != NULL)
        return 0;
    if (t->mode != TARGET_STANDALONE) {
        snprintf(r->err, sizeof(r->err),
                 "mode %s is not supported by this build (use mode = standalone)",
                 t->mode == TARGET_CLUSTER ? "cluster" : "sentinel");
        return -1;
    }
    sc->c = redisConnectWithTimeout(t->host, t->port, ms_tv(t->connect_timeout_ms));
    if (sc->c == NULL || sc->c->err) {
        run_err(r, "connect to %s:%d: %s", t->host, t->port,
                 sc->c ? sc->c->errstr : "out of memory");
        goto fail;
    }
    if (redisSetTimeout(sc->c, ms_tv(t->command_timeout_ms)) != REDIS_OK) {
        run_err(r, "set timeout on %s:%d: %s", t->host,
                 t->port, sc->c->errstr);
        goto fail;
    }
    if (t->password != NULL) {
        const char *argv[3] = { "AUTH", t->user ? t->user : t->password, t->password };

        /* The password never appears in an error: simple_cmd prints only
         * the server's reply. */
        if (simple_cmd(r, t->user ? 3 : 2, argv, "AUTH") == -1)
            goto fail;
    }
    if (t->db != 0) {
        const char *argv[2] = { "SELECT", db };

        snprintf(db, sizeof(db), "%d", t->db);
        if (simple_cmd(r, 2, argv, "SELECT") == -1)
            goto fail;
    }
    return 0;
fail:
    scanner_disconnect(sc);
    return -1;
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

static void
pace(struct run *r, int64_t round_ms)
{
    double duty = r->t->scan_duty;
    int64_t wait = 0, elapsed;

    if (duty > 0 && duty < 1)
        wait = (int64_t)((double)round_ms * (1.0 - duty) / duty);
    if (r->t->max_keys_per_second > 0) {
        /* the earliest time by which this many keys are allowed */
        int64_t due = (int64_t)(r->keys * 1000 / (uint64_t)r->t->max_keys_per_second);

        elapsed = scan_mono_ms() - r->start_mono;
        if (due - elapsed > wait)
            wait = due - elapsed;
    }
    if (wait > 0)
        pause_ms(r, wait);
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
        else if (m->type == RAW_HASH)
            append_key_cmd(r->sc->c, "HSCAN", NULL, m->key, "0", "COUNT",
                           STR(RAW_FIELDS_MAX));
    }
}

/* Bounded holder-set hash: order-independent, so a reader joining a read
 * lock changes it but the order fields come back in does not. */
static uint64_t
holder_hash(const struct lock_view *v)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    size_t i;

    for (i = 0; i < v->nholders; i++)
        h ^= keytext_hash(v->holders[i].id, v->holders[i].idlen);
    return h;
}

/* The states of a lock at the scan's time. */
static uint8_t
judge(const struct run *r, const struct snap_lock *l, int64_t nottl_since_ms,
      long long pttl)
{
    const struct scan_rules *rules = r->rules;
    uint8_t states = LOCK_HELD;

    if (pttl == -1 && nottl_since_ms > 0 &&
        r->now_ms - nottl_since_ms >= rules->leak_grace_ms)
        states |= LOCK_LEAKED;
    if (l->nholders > 0 && r->now_ms - l->first_seen_ms > rules->max_hold_ms)
        states |= LOCK_LONG;
    if (rules->max_reentrancy > 0 && l->max_count >= rules->max_reentrancy)
        states |= LOCK_REENTRANT_HIGH;
    return states;
}

static int
record(struct run *r, const struct key_meta *m, const struct raw_lock *raw)
{
    struct snapshot *s = r->snap;
    const struct scan_rules *rules = r->rules;
    const struct lock_format *fmt;
    struct lock_view view;
    struct track_result tr;
    struct snap_lock *l;
    char cls[CLASS_NAME_MAX];
    int64_t start_age;
    uint64_t kh;
    int ci;
    size_t i, keylen;

    kh = keytext_hash(raw->key, raw->keylen);
    if (tracker_seen(r->sc->tracker, kh, r->sc->pass)) {
        r->sc->counters.duplicates_total++;
        return 0;
    }
    memset(&view, 0, sizeof(view));
    view.thread = -1;
    fmt = formats_decode(raw, &view);

    start_age = m->idle_s > 0 ? m->idle_s * 1000 : 0;
    if (view.acquired_ms > 0 && r->now_ms - view.acquired_ms > start_age)
        start_age = r->now_ms - view.acquired_ms;
    if (tracker_visit(r->sc->tracker, kh, holder_hash(&view), r->sc->pass,
                      r->now_ms, start_age, raw->pttl >= 0, &tr) == -1)
        return -1;

    class_of(raw->key, raw->keylen, rules->classes, rules->nclasses, cls, sizeof(cls));
    ci = class_set_intern(r->classes, cls);
    if (ci < 0)
        return -1;

    l = snapshot_add_lock(s);
    if (l == NULL)
        return -1;
    keylen = raw->keylen > SNAP_KEY_MAX ? SNAP_KEY_MAX : raw->keylen;
    if (keylen < raw->keylen)
        l->flags |= SNAP_KEY_TRUNCATED;
    if (snapshot_add_bytes(s, raw->key, keylen, &l->key_off) == -1)
        return -1;
    l->key_len = (uint32_t)keylen;
    l->class_idx = (uint16_t)ci;
    l->format = (uint8_t)formats_index(fmt);
    l->pttl_ms = raw->pttl;
    l->first_seen_ms = tr.first_seen_ms;
    l->acquired_ms = view.acquired_ms;
    l->pid = (int32_t)(view.pid > 0 && view.pid <= INT32_MAX ? view.pid : 0);
    l->thread = view.thread;
    l->max_count = view.max_count;
    l->holders_total = (uint32_t)(view.holders_total > UINT32_MAX ? UINT32_MAX
                                  : view.holders_total);
    if (raw->value_truncated || raw->fields_truncated) {
        l->flags |= SNAP_VALUE_TRUNCATED;
        r->sc->counters.truncated_total++;
    }
    if (strcmp(view.mode, "read") == 0)
        l->flags |= SNAP_MODE_READ;
    else if (strcmp(view.mode, "write") == 0)
        l->flags |= SNAP_MODE_WRITE;
    if (view.host[0] != '\0') {
        size_t hl = strnlen(view.host, sizeof(view.host));

        if (snapshot_add_bytes(s, view.host, hl, &l->host_off) == -1)
            return -1;
        l->host_len = (uint8_t)(hl > 255 ? 255 : hl);
    }
    for (i = 0; i < view.nholders && i < HOLDERS_MAX; i++)
        if (snapshot_add_holder(s, &view.holders[i]) == -1)
            return -1;
    /* l stays valid: only the holders array and the arena grew */
    l->nholders = (uint16_t)i;

    l->states = judge(r, l, tr.nottl_since_ms, raw->pttl);
    return 0;
}

/* Read the value replies of batch b (sent by append_values) and record
 * each key. */
static int
read_values(struct run *r, struct batch *b)
{
    struct raw_field fields[RAW_FIELDS_MAX];
    struct raw_lock raw;
    redisReply *rep;
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
        rc = record(r, m, &raw);
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

static int
scan_all(struct run *r)
{
    const struct target_conf *t = r->t;
    struct batch cur = { 0 }, prev = { 0 }, tmp;
    redisReply *rep;
    char count[16];
    size_t pat = 0;
    bool more = true;           /* a SCAN is to be sent this round */
    char cursor[32] = "0";
    int64_t t0;
    int rc = -1;

    snprintf(count, sizeof(count), "%d", t->scan_count);
    while (more || cur.n > 0 || prev.n > 0) {
        if (stopped(r))
            goto out;
        t0 = scan_mono_ms();
        append_meta(r, &cur);
        append_values(r, &prev);
        if (more) {
            const char *argv[6] = { "SCAN", cursor, "MATCH", t->patterns[pat],
                                    "COUNT", count };

            redisAppendCommandArgv(r->sc->c, 6, argv, NULL);
        }
        if (read_meta(r, &cur) == -1 || read_values(r, &prev) == -1)
            goto out;
        batch_clear(&prev);
        tmp = prev;
        prev = cur;
        cur = tmp;
        if (more) {
            if (get_reply(r, &rep) == -1)
                goto out;
            if (!valid_scan_reply(rep)) {
                run_err(r, "SCAN on %s:%d: %.*s", t->host,
                         t->port, rep->type == REDIS_REPLY_ERROR ? (int)(rep->len > 160 ? 160 : rep->len) : 21,
                         rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply type");
                freeReplyObject(rep);
                goto out;
            }
            snprintf(cursor, sizeof(cursor), "%.*s", (int)rep->element[0]->len,
                     rep->element[0]->str);
            if (batch_take(&cur, rep) == -1) {
                freeReplyObject(rep);
                run_err(r, "out of memory");
                goto out;
            }
            r->keys += cur.n;
            if (strcmp(cursor, "0") == 0) {
                if (++pat < t->npatterns) {
                    snprintf(cursor, sizeof(cursor), "0");
                } else {
                    more = false;
                }
            }
        }
        {
            int64_t round = scan_mono_ms() - t0;

            r->busy_ms += round;
            pace(r, round);
        }
    }
    rc = 0;
out:
    batch_clear(&cur);
    batch_clear(&prev);
    free(cur.meta);
    free(prev.meta);
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
    struct snap_lock *l = &s->locks[rl->lock];
    struct track_result tr;
    int64_t pid, at;
    const char *key = snapshot_str(s, l->key_off);

    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3)
        return;
    if (rep->element[0]->type == REDIS_REPLY_STRING && rep->element[0]->len > 0 &&
        l->host_len == 0) {
        size_t hl = rep->element[0]->len > HOST_MAX - 1 ? HOST_MAX - 1 : rep->element[0]->len;

        if (snapshot_add_bytes(s, rep->element[0]->str, hl, &l->host_off) == 0)
            l->host_len = (uint8_t)hl;
    }
    if (l->pid == 0 && parse_decimal(rep->element[1], INT32_MAX, &pid))
        l->pid = (int32_t)pid;
    if (parse_decimal(rep->element[2], FORMATS_TIME_MAX_MS - 1, &at) &&
        at >= FORMATS_TIME_MIN_MS) {
        l->acquired_ms = at;
        if (tracker_backdate(r->sc->tracker, keytext_hash(key, l->key_len), at, &tr) == 0) {
            l->first_seen_ms = tr.first_seen_ms;
            l->states = judge(r, l, tr.nottl_since_ms, l->pttl_ms);
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

    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = &s->locks[i];
        const struct snap_holder *h;
        bool redisson = (rs != NULL && l->format == formats_index(rs)) ||
            (rw != NULL && l->format == formats_index(rw));

        if (l->nholders == 0 || !redisson)
            continue;
        if (n % 1024 == 0) {
            struct reg_lock *nrl = realloc(rl, (n + 1024) * sizeof(*rl));

            if (nrl == NULL)
                goto out;
            rl = nrl;
        }
        h = &s->holders[l->holder_first];
        memset(&rl[n], 0, sizeof(rl[n]));
        if (!parse_holder(snapshot_str(s, h->id_off), h->id_len, &rl[n]))
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
            const struct snap_lock *l = &s->locks[rl[i].lock];
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
            memcpy(f + 4 + rl[i].tidlen, snapshot_str(s, l->key_off), l->key_len);
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
    s->classes_overflowed = class_set_overflowed(r->classes);
    return snapshot_finish(s, r->now_ms);
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

    ok = connect_target(&r) == 0 && scan_all(&r) == 0 && registry_lookup(&r) == 0;
    if (stopped(&r)) {
        class_set_free(r.classes);
        snapshot_unref(s);
        return NULL;
    }
    sc->counters.keys_total += r.keys;
    s->keys_examined = r.keys;
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
        s->nlocks = 0;
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
