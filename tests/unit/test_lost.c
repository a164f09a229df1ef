/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lost.c - locks lost at a change of server (collectors/scan/lost.c):
 * the last view before against what the first pass after saw, with the
 * scanner's real per-key step and tracker; the count by cause, the list
 * carried on later snapshots, and the one event pushed.
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
#include "collectors/scan/scan_impl.h"

struct fixture {
    struct scanner *sc;
    struct target_conf t;
    struct scan_rules rules;
    struct run r;
    struct scan_counters cnt;
};

static int
setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || (f->sc = scanner_new("main")) == NULL)
        return -1;
    f->rules.judge.leak_grace_ms = 60000;
    f->rules.judge.max_hold_ms = 600000;
    f->rules.judge.max_reentrancy = 5;
    events_reset();
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;

    scanner_free(f->sc);
    free(f);
    return 0;
}

static void
begin(struct fixture *f)
{
    assert_non_null(run_begin(&f->r, f->sc, &f->t, &f->rules, NULL));
    if (++f->sc->pass == 0)
        f->sc->pass = 1;
}

/* A string lock key = holder with TTL pttl, read age_ms before the run. */
static void
put(struct fixture *f, const char *key, const char *holder, long long pttl, int64_t age_ms)
{
    struct scan_key k;
    struct raw_lock raw;

    memset(&k, 0, sizeof(k));
    k.key = key;
    k.keylen = strlen(key);
    k.type = RAW_STRING;
    k.pttl = pttl;
    k.idle_s = -1;
    k.read_ms = f->r.now_ms - age_ms;
    memset(&raw, 0, sizeof(raw));
    raw.key = k.key;
    raw.keylen = k.keylen;
    raw.type = RAW_STRING;
    raw.pttl = pttl;
    raw.value = holder;
    raw.valuelen = strlen(holder);
    assert_int_equal(scan_record(&f->r, &k, &raw, -1, &f->cnt), 0);
}

/* The pass ends on node with run_id, finished after_ms after its start;
 * compared, stamped, and returned (the caller unrefs it). */
static struct snapshot *
end(struct fixture *f, const char *node, const char *run_id, long long flushes,
    int64_t after_ms)
{
    struct snapshot *s = f->r.snap;

    helperkeys_finish(&f->r, true);
    assert_int_equal(record_finish(&f->r), 0);
    tracker_sweep(f->sc->tracker, f->sc->pass);
    class_set_free(f->r.classes);
    redlock_map_free(f->r.rmap);
    pthread_mutex_destroy(&f->r.mu);
    s->ok = true;
    s->finished_ms = s->started_ms + after_ms;
    snprintf(s->node, sizeof(s->node), "%s", node);
    s->server.have = run_id != NULL;
    snprintf(s->server.run_id, sizeof(s->server.run_id), "%s", run_id ? run_id : "");
    s->server.flushes = flushes;
    lost_compare(f->sc, s, NULL);
    s->counters = f->sc->counters;
    lost_stamp(f->sc, s);
    return s;
}

static void
first_view(struct fixture *f)
{
    begin(f);
    put(f, "lock:a", "tok-a", 60000, 0);
    put(f, "lock:b", "tok-b", 60000, 0);
    put(f, "lock:c", "tok-c", 100, 0);          /* runs out before the next view */
    put(f, "lock:d", "tok-d", -1, 0);           /* no TTL */
    put(f, "lock:e", "tok-e", 60000, 0);
    snapshot_unref(end(f, "10.0.0.1:6379", "run-A", 0, 10));
}

static void
collect(const struct event *e, void *arg)
{
    char *out = arg;

    assert_int_equal(e->kind, EVENT_LOST_AT_FAILOVER);
    assert_string_equal(e->target, "main");
    snprintf(out, 1024, "%s", e->detail);
}

/* A restart: gone, taken by another holder, and expired are told apart. */
static void
restart_loses_the_unexpired(void **state)
{
    struct fixture *f = *state;
    struct snapshot *s, *later;
    char detail[1024] = "";
    size_t i;

    first_view(f);
    begin(f);
    put(f, "lock:b", "tok-other", 60000, 0);    /* taken anew by another */
    put(f, "lock:e", "tok-e", 60000, 0);        /* the same holder: survived */
    s = end(f, "10.0.0.1:6379", "run-B", 0, 1000);
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
    assert_int_equal(events_total(EVENT_LOST_AT_FAILOVER), 1);
    assert_int_equal(events_each(0, 0, collect, detail), 1);
    assert_non_null(strstr(detail, "3 locks lost at a restart of 10.0.0.1:6379: "));
    assert_non_null(strstr(detail, "lock:b (another holder now)"));
    assert_non_null(strstr(detail, "lock:a"));
    assert_non_null(strstr(detail, "lock:d"));

    /* the next view, same server: nothing new, the loss carried on */
    begin(f);
    put(f, "lock:e", "tok-e", 60000, 0);
    later = end(f, "10.0.0.1:6379", "run-B", 0, 1000);
    assert_int_equal(later->lost.count, 3);
    assert_int_equal(later->lost.at_ms, s->lost.at_ms);
    assert_int_equal(later->counters.lost_total[LOST_RESTART], 3);
    assert_int_equal(events_total(EVENT_LOST_AT_FAILOVER), 1);
    snapshot_unref(s);
    snapshot_unref(later);
}

/* Another address and run_id is a failover; other flush counts a flush. */
static void
failover_and_flush(void **state)
{
    struct fixture *f = *state;
    struct snapshot *s;

    first_view(f);
    begin(f);
    s = end(f, "10.0.0.2:6379", "run-R", 0, 10);
    assert_int_equal(s->lost.cause, LOST_FAILOVER);
    assert_int_equal(s->lost.count, 5);         /* c has not run out yet */
    assert_string_equal(s->lost.was, "10.0.0.1:6379");
    assert_string_equal(s->lost.now, "10.0.0.2:6379");
    snapshot_unref(s);

    begin(f);
    put(f, "lock:x", "tok-x", 60000, 0);
    snapshot_unref(end(f, "10.0.0.2:6379", "run-R", 0, 10));
    begin(f);
    s = end(f, "10.0.0.2:6379", "run-R", 1, 10);
    assert_int_equal(s->lost.cause, LOST_FLUSH);
    assert_int_equal(s->lost.count, 1);
    assert_int_equal(s->counters.lost_total[LOST_FAILOVER], 5);
    assert_int_equal(s->counters.lost_total[LOST_FLUSH], 1);
    assert_int_equal(events_total(EVENT_LOST_AT_FAILOVER), 2);
    snapshot_unref(s);
}

/* Locks gone with the same server (released), or with INFO refused
 * (nothing known about the server): nothing is lost. */
static void
no_change_no_loss(void **state)
{
    struct fixture *f = *state;
    struct snapshot *s;

    first_view(f);
    begin(f);
    s = end(f, "10.0.0.1:6379", "run-A", 0, 10);
    assert_int_equal(s->lost.count, 0);
    snapshot_unref(s);
    begin(f);
    put(f, "lock:a", "tok-a", 60000, 0);
    snapshot_unref(end(f, "10.0.0.1:6379", "run-A", 0, 10));
    begin(f);
    s = end(f, "10.0.0.1:6379", NULL, 0, 10);
    assert_int_equal(s->lost.count, 0);
    assert_int_equal(s->counters.lost_total[LOST_RESTART] + s->counters.lost_total[LOST_FLUSH] +
                     s->counters.lost_total[LOST_FAILOVER], 0);
    assert_int_equal(events_total(EVENT_LOST_AT_FAILOVER), 0);
    snapshot_unref(s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(restart_loses_the_unexpired, setup, teardown),
        cmocka_unit_test_setup_teardown(failover_and_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(no_change_no_loss, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
