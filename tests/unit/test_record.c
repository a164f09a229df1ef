/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_record.c - the scanner's per-key step (collectors/scan/record.c,
 * scan_record() of scanrun.h), without Redis: keys in parsed values go in
 * through the step, and the snapshot the run finishes says what a scan
 * would have published (format, class, holders, states, duplicates,
 * first-seen times kept across passes, the keep hook).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

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
    tracker_sweep(f->sc->tracker, f->sc->pass, 0);
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(format_class_holders, setup, teardown),
        cmocka_unit_test_setup_teardown(semaphore_pattern, setup, teardown),
        cmocka_unit_test_setup_teardown(states, setup, teardown),
        cmocka_unit_test_setup_teardown(duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(first_seen_across_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(keep_hook, setup, teardown),
    };

    return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
