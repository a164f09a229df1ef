/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_record.c - the scanner's per-key step (collectors/scan/record.c,
 * scan_record() of scanrun.h), without Redis: keys in parsed values go in
 * through the step, and the snapshot the run finishes says what a scan
 * would have published (format, class, holders, states, duplicates,
 * first-seen times kept across passes, the keep hook), and what a change
 * of server between two passes loses (collectors/scan/lost.c: the count by
 * cause, the list carried on, the one event).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/events/events.h"
#include "collectors/formats/formats.h"
#include "collectors/scan/scan_impl.h"

#define RS_UUID "8743c9c0-0795-4907-87fd-6c719a6b4586"
#define MIN_MS  60000

/* One scanner and one target across the passes of a test. */
struct fixture {
    struct scanner *sc;
    struct target_conf t;
    struct scan_rules rules;
    char *sem_patterns[1];
    struct run r;
    struct scan_counters cnt;
    struct snapshot *snap;      /* the last pass's, finished */
};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || (f->sc = scanner_new("t")) == NULL)
        return -1;
    f->sem_patterns[0] = "sem:*";
    f->t.semaphore_patterns = f->sem_patterns;
    f->t.nsemaphore_patterns = 1;
    f->rules.judge.leak_grace_ms = MIN_MS;
    f->rules.judge.max_hold_ms = 10 * MIN_MS;
    f->rules.judge.max_reentrancy = 5;
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;

    snapshot_unref(f->snap);
    scanner_free(f->sc);
    free(f);
    return 0;
}

/* A pass begins: a run as scanner_run() and scanner_replay() make one. */
static void
pass_begin(struct fixture *f)
{
    snapshot_unref(f->snap);
    f->snap = NULL;
    assert_non_null(run_begin(&f->r, f->sc, &f->t, &f->rules, NULL));
    if (++f->sc->pass == 0)
        f->sc->pass = 1;
    memset(&f->cnt, 0, sizeof(f->cnt));
}

/* The pass ends: its snapshot finished and sorted, worst first. */
static void
pass_end(struct fixture *f)
{
    helperkeys_finish(&f->r, true);
    assert_int_equal(record_finish(&f->r), 0);
    tracker_sweep(f->sc->tracker, f->sc->pass, 0, 0);
    class_set_free(f->r.classes);
    redlock_map_free(f->r.rmap);
    pthread_mutex_destroy(&f->r.mu);
    f->snap = f->r.snap;
    f->snap->ok = true;
}

/* Key `key` read at age_ms before the run's start, idle for idle_s,
 * with TTL pttl: a string value. */
static void
put_string(struct fixture *f, const char *key, const char *value, long long pttl,
           int64_t age_ms, long long idle_s)
{
    struct scan_key k;
    struct raw_lock raw;

    memset(&k, 0, sizeof(k));
    k.key = key;
    k.keylen = strlen(key);
    k.type = RAW_STRING;
    k.pttl = pttl;
    k.idle_s = idle_s;
    k.read_ms = f->r.now_ms - age_ms;
    memset(&raw, 0, sizeof(raw));
    raw.key = k.key;
    raw.keylen = k.keylen;
    raw.type = RAW_STRING;
    raw.pttl = pttl;
    raw.value = value;
    raw.valuelen = strlen(value);
    assert_int_equal(scan_record(&f->r, &k, &raw, -1, &f->cnt), 0);
}

/* A Redisson lock: one hash field "<uuid>:<thread>" = hold count. */
static void
put_redisson(struct fixture *f, const char *key, const char *count, long long pttl)
{
    struct raw_field field;
    struct scan_key k;
    struct raw_lock raw;

    memset(&k, 0, sizeof(k));
    k.key = key;
    k.keylen = strlen(key);
    k.type = RAW_HASH;
    k.pttl = pttl;
    field.name = RS_UUID ":57";
    field.namelen = strlen(field.name);
    field.value = count;
    field.valuelen = strlen(count);
    memset(&raw, 0, sizeof(raw));
    raw.key = k.key;
    raw.keylen = k.keylen;
    raw.type = RAW_HASH;
    raw.pttl = pttl;
    raw.fields = &field;
    raw.nfields = 1;
    assert_int_equal(scan_record(&f->r, &k, &raw, 1, &f->cnt), 0);
}

/* The retained lock named key in the last snapshot (the test fails
 * without it). */
static const struct snap_lock *
lock_of(const struct fixture *f, const char *key)
{
    size_t i;

    for (i = 0; i < f->snap->nlocks; i++)
        if (f->snap->locks[i]->key_len == strlen(key) &&
            memcmp(f->snap->locks[i]->key, key, strlen(key)) == 0)
            return f->snap->locks[i];
    fail_msg("lock %s not in the snapshot", key);
    return NULL;
}

static const char *
format_of(const struct snap_lock *l)
{
    return formats_table[l->format].name;
}

static const char *
class_name(const struct fixture *f, const struct snap_lock *l)
{
    assert_true(l->class_idx < f->snap->nclasses);
    return f->snap->classes[l->class_idx];
}

static void
format_class_holders(void **state)
{
    struct fixture *f = *state;
    const struct snap_lock *l;

    pass_begin(f);
    put_string(f, "lock:orders:42", "tok-1", 30000, 0, 0);
    put_redisson(f, "lock:users:7", "2", 30000);
    pass_end(f);
    assert_int_equal(f->snap->locks_total, 2);
    assert_int_equal(f->snap->nlocks, 2);

    l = lock_of(f, "lock:orders:42");
    assert_string_equal(format_of(l), "plain");
    assert_string_equal(class_name(f, l), "lock:orders:*");
    assert_int_equal(l->nholders, 1);
    assert_int_equal(l->holders[0].id_len, 5);
    assert_memory_equal(l->holders[0].id, "tok-1", 5);
    assert_int_equal(l->pttl_ms, 30000);
    assert_int_equal(l->states, LOCK_HELD);

    l = lock_of(f, "lock:users:7");
    assert_string_equal(format_of(l), "redisson");
    assert_string_equal(class_name(f, l), "lock:users:*");
    assert_int_equal(l->nholders, 1);
    assert_int_equal(l->holders[0].count, 2);
    assert_int_equal(l->max_count, 2);
    assert_int_equal(l->thread, 57);
    assert_int_equal(l->states, LOCK_HELD);
}

/* semaphore_patterns: a plain count there is a Redisson semaphore, which
 * is never leaked or long. */
static void
semaphore_pattern(void **state)
{
    struct fixture *f = *state;
    const struct snap_lock *l;

    pass_begin(f);
    put_string(f, "sem:pool", "3", -1, 30 * MIN_MS, 3600);
    put_string(f, "other:pool", "3", -1, 30 * MIN_MS, 3600);
    pass_end(f);
    l = lock_of(f, "sem:pool");
    assert_string_equal(format_of(l), "redisson-semaphore");
    assert_int_equal(l->states, LOCK_HELD);
    l = lock_of(f, "other:pool");
    assert_string_equal(format_of(l), "plain");
    assert_int_equal(l->states, LOCK_HELD | LOCK_LEAKED | LOCK_LONG);
}

static void
states(void **state)
{
    struct fixture *f = *state;
    size_t ci;

    pass_begin(f);
    /* no TTL since its read two minutes ago: past leak_grace */
    put_string(f, "lock:1", "x", -1, 2 * MIN_MS, 0);
    /* no TTL, read just now: within leak_grace */
    put_string(f, "lock:2", "x", -1, 0, 0);
    /* idle an hour: its holder took it long ago (max_hold 10 min) */
    put_string(f, "lock:3", "x", 30000, 0, 3600);
    /* a hold count of 5 reaches max_reentrancy */
    put_redisson(f, "lock:4", "5", 30000);
    put_redisson(f, "lock:5", "4", 30000);
    pass_end(f);
    assert_int_equal(lock_of(f, "lock:1")->states, LOCK_HELD | LOCK_LEAKED);
    assert_int_equal(lock_of(f, "lock:2")->states, LOCK_HELD);
    assert_int_equal(lock_of(f, "lock:3")->states, LOCK_HELD | LOCK_LONG);
    assert_int_equal(lock_of(f, "lock:4")->states, LOCK_HELD | LOCK_REENTRANT_HIGH);
    assert_int_equal(lock_of(f, "lock:5")->states, LOCK_HELD);
    /* one class (beside "other", always there), which counts them too */
    ci = lock_of(f, "lock:1")->class_idx;
    assert_int_equal(f->snap->nclasses, 2);
    assert_string_equal(f->snap->classes[ci], "lock:*");
    assert_int_equal(f->snap->class_stats[ci].total, 5);
    assert_int_equal(f->snap->class_stats[ci].leaked, 1);
    assert_int_equal(f->snap->class_stats[ci].long_held, 1);
    assert_int_equal(f->snap->class_stats[ci].reentrant_high, 1);
}

/* SCAN may return a key twice in a pass: counted once, the second time a
 * duplicate. */
static void
duplicates(void **state)
{
    struct fixture *f = *state;

    pass_begin(f);
    put_string(f, "lock:a", "x", 30000, 0, 0);
    put_string(f, "lock:a", "x", 30000, 0, 0);
    put_string(f, "lock:b", "y", 30000, 0, 0);
    pass_end(f);
    assert_int_equal(f->cnt.duplicates_total, 1);
    assert_int_equal(f->snap->locks_total, 2);
    assert_int_equal(f->snap->nlocks, 2);
}

/* The holder's first sighting survives the next pass; a new holder
 * restarts it. */
static void
first_seen_across_passes(void **state)
{
    struct fixture *f = *state;
    int64_t first;

    pass_begin(f);
    put_string(f, "lock:a", "tok-1", 30000, 0, 0);
    pass_end(f);
    first = lock_of(f, "lock:a")->first_seen_ms;
    assert_int_equal(first, f->snap->started_ms);

    pass_begin(f);
    /* read 20 minutes after (as a later pass would): still the first */
    put_string(f, "lock:a", "tok-1", 30000, -20 * MIN_MS, 0);
    pass_end(f);
    assert_int_equal(f->cnt.duplicates_total, 0);
    assert_int_equal(lock_of(f, "lock:a")->first_seen_ms, first);

    pass_begin(f);
    put_string(f, "lock:a", "tok-2", 30000, 0, 0);
    pass_end(f);
    assert_int_equal(lock_of(f, "lock:a")->first_seen_ms, f->snap->started_ms);
}

/* The keep hook sees every key recorded once, at its read time. */
struct kept {
    size_t n;
    int64_t read_ms[4];
};

static int
keep(void *arg, const struct scan_key *k, const struct raw_lock *raw, long long hlen,
     int64_t read_ms)
{
    struct kept *kp = arg;

    (void)k;
    (void)raw;
    (void)hlen;
    if (kp->n < 4)
        kp->read_ms[kp->n] = read_ms;
    kp->n++;
    return 0;
}

static void
keep_hook(void **state)
{
    struct fixture *f = *state;
    struct scan_hooks h;
    struct kept kp;

    memset(&h, 0, sizeof(h));
    memset(&kp, 0, sizeof(kp));
    h.keep = keep;
    scanner_set_hooks(f->sc, &h, &kp);
    pass_begin(f);
    f->r.keeping = true;
    put_string(f, "lock:a", "x", 30000, 1000, 0);
    put_string(f, "lock:a", "x", 30000, 1000, 0);       /* a duplicate: not kept */
    put_string(f, "lock:b", "x", 30000, 0, 0);
    pass_end(f);
    assert_int_equal(kp.n, 2);
    assert_int_equal(kp.read_ms[0], f->snap->started_ms - 1000);
    assert_int_equal(kp.read_ms[1], f->snap->started_ms);
}

/* ---- locks lost at a change of server (collectors/scan/lost.c) ---------- */

/* The pass ends, finished after_ms after its start, on node whose INFO said
 * run_id (NULL: refused) and flushes; compared with the view before and
 * stamped, as scanner_run() does. */
static void
pass_end_flushes(struct fixture *f, const char *node, const char *run_id, long long flushes,
                 long long flushalls, int64_t after_ms)
{
    struct snapshot *s;

    pass_end(f);
    s = f->snap;
    s->finished_ms = s->started_ms + after_ms;
    snprintf(s->node, sizeof(s->node), "%s", node);
    s->server.have = run_id != NULL;
    snprintf(s->server.run_id, sizeof(s->server.run_id), "%s", run_id != NULL ? run_id : "");
    s->server.flushes = flushes;
    s->server.flushalls = flushalls;
    lost_compare(f->sc, s, NULL);
    s->counters = f->sc->counters;
    lost_stamp(f->sc, s, true);
}

static void
pass_end_on(struct fixture *f, const char *node, const char *run_id, long long flushes,
            int64_t after_ms)
{
    pass_end_flushes(f, node, run_id, flushes, 0, after_ms);
}

static void
first_view(struct fixture *f)
{
    pass_begin(f);
    put_string(f, "lock:a", "tok-a", 60000, 0, -1);
    put_string(f, "lock:b", "tok-b", 60000, 0, -1);
    put_string(f, "lock:c", "tok-c", 100, 0, -1);          /* runs out before the next view */
    put_string(f, "lock:d", "tok-d", -1, 0, -1);           /* no TTL */
    put_string(f, "lock:e", "tok-e", 60000, 0, -1);
    pass_end_on(f, "10.0.0.1:6379", "run-A", 0, 10);
}

/* The events of a loss, one line each: "key|holder|class|detail". */
static void
collect(const struct event *e, void *arg)
{
    char *out = arg;
    size_t used = strlen(out);

    assert_int_equal(e->kind, EVENT_LOST_AT_FAILOVER);
    assert_string_equal(e->target, "t");
    snprintf(out + used, 4096 - used, "%.*s|%.*s|%s|%s\n", (int)e->keylen, e->key,
             (int)e->holderlen, e->holder, e->klass, e->detail);
}

/* A restart: gone, taken by another holder, and expired are told apart. */
static void
restart_loses_the_unexpired(void **state)
{
    struct fixture *f = *state;
    struct snapshot *s;
    char detail[4096] = "";
    int64_t at;
    size_t i;

    events_reset();
    first_view(f);
    pass_begin(f);
    put_string(f, "lock:b", "tok-other", 60000, 0, -1);    /* taken anew by another */
    put_string(f, "lock:e", "tok-e", 60000, 0, -1);        /* the same holder: survived */
    pass_end_on(f, "10.0.0.1:6379", "run-B", 0, 1000);
    s = f->snap;
    assert_int_equal(s->lost.count, 3);         /* a, b, d; c expired */
    assert_int_equal(s->lost.compared, 5);
    assert_int_equal(s->lost.cause, LOST_RESTART);
    assert_int_equal(s->counters.lost_total[LOST_RESTART], 3);
    assert_int_equal(s->lost.nlisted, 3);
    for (i = 0; i < s->lost.nlisted; i++) {
        const struct snap_lost_lock *e = &s->lost.listed[i];

        assert_true(e->key_len == 6);
        assert_true(memcmp(e->key, "lock:c", 6) != 0 && memcmp(e->key, "lock:e", 6) != 0);
        assert_int_equal(e->taken, memcmp(e->key, "lock:b", 6) == 0);
    }
    /* an event a lost lock, oldest hold first (here: as the view kept them) */
    assert_int_equal(events_total(EVENT_LOST_AT_FAILOVER), 3);
    assert_int_equal(events_each(0, 0, collect, detail), 3);
    assert_non_null(strstr(detail, "lock:b|tok-b|lock:b|lost at a restart of 10.0.0.1:6379: "
                           "another holder has it now ("));
    assert_non_null(strstr(detail, "lock:a|tok-a|lock:a|lost at a restart of 10.0.0.1:6379: "
                           "gone with no release seen ("));
    assert_non_null(strstr(detail, "lock:d|tok-d|"));
    assert_non_null(strstr(detail, " of 3 lost, oldest hold first)\n"));
    assert_null(strstr(detail, "lock:c|"));
    assert_null(strstr(detail, "lock:e|"));
    at = s->lost.at_ms;

    /* the next view, same server: nothing new, the loss carried on */
    pass_begin(f);
    put_string(f, "lock:e", "tok-e", 60000, 0, -1);
    pass_end_on(f, "10.0.0.1:6379", "run-B", 0, 1000);
    s = f->snap;
    assert_int_equal(s->lost.count, 3);
    assert_int_equal(s->lost.at_ms, at);
    assert_int_equal(s->counters.lost_total[LOST_RESTART], 3);
    assert_int_equal(events_total(EVENT_LOST_AT_FAILOVER), 3);
}

/* More lost than named: LOST_LIST_MAX events, oldest hold first, each
 * with its own key and holder; every one counted. */
static void
many_lost_named_oldest_first(void **state)
{
    struct fixture *f = *state;
    char key[32], holder[32], want[64], *got = calloc(1, 4096), *p;
    size_t i, n = LOST_LIST_MAX + 15;

    events_reset();
    pass_begin(f);
    for (i = 0; i < n; i++) {
        size_t age = (i * 7) % n;               /* shuffled */

        snprintf(key, sizeof(key), "lock:n:%02zu", age);
        snprintf(holder, sizeof(holder), "tok-%02zu", age);
        put_string(f, key, holder, 600000, (int64_t)age * 1000, -1);
    }
    pass_end_on(f, "10.0.0.1:6379", "run-A", 0, 10);
    pass_begin(f);
    pass_end_on(f, "10.0.0.1:6379", "run-B", 0, 10);
    assert_int_equal(f->snap->lost.count, n);
    assert_int_equal(events_each(0, 0, collect, got), LOST_LIST_MAX);
    for (i = 0, p = got; i < LOST_LIST_MAX; i++) {
        /* the oldest (age n - 1) first */
        snprintf(want, sizeof(want), "lock:n:%02zu|tok-%02zu|", n - 1 - i, n - 1 - i);
        assert_true(strncmp(p, want, strlen(want)) == 0);
        assert_true(memcmp(f->snap->lost.listed[i].key, want, 9) == 0);
        p = strchr(p, '\n') + 1;
    }
    free(got);
}

/* Another address and run_id is a failover; other flush counts a flush. */
static void
failover_and_flush(void **state)
{
    struct fixture *f = *state;
    struct snapshot *s;

    events_reset();
    first_view(f);
    pass_begin(f);
    pass_end_on(f, "10.0.0.2:6379", "run-R", 0, 10);
    s = f->snap;
    assert_int_equal(s->lost.cause, LOST_FAILOVER);
    /* c (100 ms left) runs out within the tracker's slack: it expired, as
     * the tracker's sweep counts it (a trial: one lease both expired and
     * lost at a failover) */
    assert_int_equal(s->lost.count, 4);
    assert_string_equal(s->lost.was, "10.0.0.1:6379");
    assert_string_equal(s->lost.now, "10.0.0.2:6379");

    pass_begin(f);
    put_string(f, "lock:x", "tok-x", 60000, 0, -1);
    pass_end_on(f, "10.0.0.2:6379", "run-R", 0, 10);
    pass_begin(f);
    pass_end_on(f, "10.0.0.2:6379", "run-R", 1, 10);
    s = f->snap;
    assert_int_equal(s->lost.cause, LOST_FLUSH);
    assert_int_equal(s->lost.count, 1);
    assert_int_equal(s->counters.lost_total[LOST_FAILOVER], 4);
    assert_int_equal(s->counters.lost_total[LOST_FLUSH], 1);
    assert_int_equal(events_total(EVENT_LOST_AT_FAILOVER), 4 + 1);
}

/* A flush after which a lock of the view before is there, its holder's:
 * another database's for a FLUSHDB (the counts are the server's), never
 * for a FLUSHALL, which empties every database (a trial: a lock its
 * holder id took again at once hid every loss of a FLUSHALL). */
static void
flushall_is_every_database(void **state)
{
    struct fixture *f = *state;

    events_reset();
    first_view(f);
    pass_begin(f);
    put_string(f, "lock:a", "tok-a", 60000, 0, -1);
    pass_end_flushes(f, "10.0.0.1:6379", "run-A", 1, 0, 10);
    assert_int_equal(f->snap->counters.lost_total[LOST_FLUSH], 0);
    /* the view before the next change: four locks again */
    pass_begin(f);
    put_string(f, "lock:a", "tok-a", 60000, 0, -1);
    put_string(f, "lock:b", "tok-b", 60000, 0, -1);
    put_string(f, "lock:d", "tok-d", -1, 0, -1);
    put_string(f, "lock:e", "tok-e", 60000, 0, -1);
    pass_end_flushes(f, "10.0.0.1:6379", "run-A", 1, 0, 10);
    pass_begin(f);
    put_string(f, "lock:a", "tok-a", 60000, 0, -1);
    pass_end_flushes(f, "10.0.0.1:6379", "run-A", 2, 1, 10);
    assert_int_equal(f->snap->lost.cause, LOST_FLUSH);
    assert_int_equal(f->snap->lost.count, 3);   /* b, d, e; a there again */
    assert_int_equal(f->snap->counters.lost_total[LOST_FLUSH], 3);
}

/* Locks gone with the same server (released), or with INFO refused
 * (nothing known about the server): nothing is lost. */
static void
no_change_no_loss(void **state)
{
    struct fixture *f = *state;
    struct snapshot *s;

    events_reset();
    first_view(f);
    pass_begin(f);
    pass_end_on(f, "10.0.0.1:6379", "run-A", 0, 10);
    s = f->snap;
    assert_int_equal(s->lost.count, 0);
    pass_begin(f);
    put_string(f, "lock:a", "tok-a", 60000, 0, -1);
    pass_end_on(f, "10.0.0.1:6379", "run-A", 0, 10);
    pass_begin(f);
    pass_end_on(f, "10.0.0.1:6379", NULL, 0, 10);
    s = f->snap;
    assert_int_equal(s->lost.count, 0);
    assert_int_equal(s->counters.lost_total[LOST_RESTART] + s->counters.lost_total[LOST_FLUSH] +
                     s->counters.lost_total[LOST_FAILOVER], 0);
    assert_int_equal(events_total(EVENT_LOST_AT_FAILOVER), 0);
}

/* Cluster: two shards, slots 0-8191 and 8192-16383.  The pass ends with
 * shard 1 read (ok1) or failed, each shard's INFO saying run0 / run1. */
static void
pass_end_cluster(struct fixture *f, bool ok1, const char *run0, const char *run1)
{
    static uint16_t slot_shard[CLUSTER_SLOTS];
    struct cluster_topo topo = { .nshards = 2, .slot_shard = slot_shard };
    const char *runs[2] = { run0, run1 };
    struct snapshot *s;
    size_t i;

    for (i = 0; i < CLUSTER_SLOTS; i++)
        slot_shard[i] = i < 8192 ? 0 : 1;
    pass_end(f);
    s = f->snap;
    s->finished_ms = s->started_ms + 10;
    assert_non_null(s->shards = calloc(2, sizeof(*s->shards)));
    s->nshards = 2;
    for (i = 0; i < 2; i++) {
        snprintf(s->shards[i].shard, sizeof(s->shards[i].shard), i == 0 ? "0-8191" :
                 "8192-16383");
        snprintf(s->shards[i].node, sizeof(s->shards[i].node), "10.0.0.%zu:6379", i + 1);
        s->shards[i].ok = i == 0 || ok1;
        s->shards[i].server.have = true;
        snprintf(s->shards[i].server.run_id, sizeof(s->shards[i].server.run_id), "%s",
                 runs[i]);
    }
    lost_compare(f->sc, s, &topo);
    s->counters = f->sc->counters;
    lost_stamp(f->sc, s, true);
}

/* A shard that failed while it restarted: compared, when it is back, with
 * the last view that read it, for its own slots only, and counted once. */
static void
cluster_shard_back_from_a_restart(void **state)
{
    struct fixture *f = *state;

    events_reset();
    assert_true(cluster_keyslot("lock:{b}:1", 10) < 8192);
    assert_true(cluster_keyslot("lock:{a}:1", 10) >= 8192);
    pass_begin(f);
    put_string(f, "lock:{b}:1", "tok-b", 60000, 0, -1);
    put_string(f, "lock:{a}:1", "tok-a", 60000, 0, -1);
    put_string(f, "lock:{a}:2", "tok-a2", 60000, 0, -1);
    pass_end_cluster(f, true, "run-0", "run-1");
    /* shard 1 down: its locks are not in this view */
    pass_begin(f);
    put_string(f, "lock:{b}:1", "tok-b", 60000, 0, -1);
    pass_end_cluster(f, false, "run-0", "");
    assert_int_equal(f->snap->lost.count, 0);
    /* back, restarted empty; shard 0's lock released meanwhile is no loss
     * (its server did not change) */
    pass_begin(f);
    pass_end_cluster(f, true, "run-0", "run-1b");
    assert_int_equal(f->snap->lost.count, 2);
    assert_int_equal(f->snap->lost.compared, 2);
    assert_int_equal(f->snap->lost.cause, LOST_RESTART);
    assert_string_equal(f->snap->lost.now, "10.0.0.2:6379");
    /* and the next pass says nothing new */
    pass_begin(f);
    pass_end_cluster(f, true, "run-0", "run-1b");
    assert_int_equal(f->snap->counters.lost_total[LOST_RESTART], 2);
    assert_int_equal(events_total(EVENT_LOST_AT_FAILOVER), 2);
}

/* A full scan times its keys from the run's start but reads each one's
 * IDLETIME later (a million keys: tens of seconds later): the age IDLETIME
 * gives is the age at its reply, so the time since the start comes off
 * (issue 23: no age over the time since the write). */
static void
idletime_read_after_the_start(void **state)
{
    static const struct {
        const char *key, *value;
        long long idle_s;
        int64_t at_after_ms, age_ms;     /* reply after the start; age then */
    } keys[] = {
        { "lock:late", "tok-a", 30, 20000, 9000 },     /* 29 s less 20 s */
        { "lock:later", "tok-b", 30, 40000, 0 },       /* never negative */
        { "lock:untimed", "tok-c", 30, 0, 29000 },     /* no reply time */
        { "lock:one", "1", 30, 20000, 0 },             /* a shared integer */
    };
    struct fixture *f = *state;
    struct scan_key k;
    struct raw_lock raw;

    pass_begin(f);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        memset(&k, 0, sizeof(k));
        k.key = keys[i].key;
        k.keylen = strlen(k.key);
        k.type = RAW_STRING;
        k.pttl = 60000;
        k.idle_s = keys[i].idle_s;
        k.idle_at_ms = keys[i].at_after_ms ? f->r.now_ms + keys[i].at_after_ms : 0;
        memset(&raw, 0, sizeof(raw));
        raw.key = k.key;
        raw.keylen = k.keylen;
        raw.type = RAW_STRING;
        raw.pttl = k.pttl;
        raw.value = keys[i].value;
        raw.valuelen = strlen(raw.value);
        assert_int_equal(scan_record(&f->r, &k, &raw, -1, &f->cnt), 0);
    }
    pass_end(f);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_int_equal(lock_of(f, keys[i].key)->first_seen_ms,
                         f->snap->started_ms - keys[i].age_ms);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(format_class_holders, setup, teardown),
        cmocka_unit_test_setup_teardown(semaphore_pattern, setup, teardown),
        cmocka_unit_test_setup_teardown(states, setup, teardown),
        cmocka_unit_test_setup_teardown(duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(first_seen_across_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(idletime_read_after_the_start, setup, teardown),
        cmocka_unit_test_setup_teardown(keep_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(restart_loses_the_unexpired, setup, teardown),
        cmocka_unit_test_setup_teardown(many_lost_named_oldest_first, setup, teardown),
        cmocka_unit_test_setup_teardown(failover_and_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(flushall_is_every_database, setup, teardown),
        cmocka_unit_test_setup_teardown(no_change_no_loss, setup, teardown),
        cmocka_unit_test_setup_teardown(cluster_shard_back_from_a_restart, setup, teardown),
    };

    return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
