/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_graph.c - the wait-for graph's passes (collectors/graph/graph.h)
 * over hand-made snapshots: a fair-queue cycle is a deadlock on the
 * second pass of a following target, only after a newer scan of a
 * scanning one; its steps, target and breaker (the youngest hold); one
 * deadlock event, however many passes see it; a cycle gone is gone; and
 * a chain is none.  Orders and inversions need the waiting table: they
 * are tested end to end in tests/integration/test_deadlock.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/events/events.h"
#include "collectors/graph/graph.h"

#define NOW  1790000000000LL
#define MONO 5000000LL

static const char TA[] = "2d4b7c1e-9f0a-4c3b-8e21-5a6f7b8c9d0e:61";
static const char TB[] = "7e8f9a0b-1c2d-4e3f-a465-768798a9bacb:88";
static const char TC[] = "7e8f9a0b-1c2d-4e3f-a465-768798a9bacb:99";

/* A lock held by holder since age_ms, with queue (NUL-separated ids). */
static void
add(struct snapshot *s, const char *key, const char *holder, int64_t age_ms,
    const char *const *queue, size_t nqueue)
{
    struct snap_holder h = { holder, (uint16_t)strlen(holder), 0, 1 };
    struct snap_lock l, *kept;
    size_t i, len = 0;

    memset(&l, 0, sizeof(l));
    l.key = key;
    l.key_len = (uint32_t)strlen(key);
    l.states = LOCK_HELD;
    l.pttl_ms = 30000;
    l.first_seen_ms = NOW - age_ms;
    l.holders = &h;
    l.nholders = 1;
    l.holders_total = 1;
    l.thread = -1;
    assert_int_equal(snapshot_add(s, &l, NOW), 0);
    /* the kept copy (a heap: not necessarily the last) */
    for (i = 0, kept = NULL; i < s->nlocks; i++)
        if (strcmp(s->locks[i]->key, key) == 0)
            kept = s->locks[i];
    assert_non_null(kept);
    for (i = 0; i < nqueue; i++)
        len += strlen(queue[i]) + 1;
    if (nqueue == 0)
        return;
    assert_non_null(kept->queue = malloc(len));
    for (i = 0, len = 0; i < nqueue; i++) {
        memcpy(kept->queue + len, queue[i], strlen(queue[i]) + 1);
        len += strlen(queue[i]) + 1;
    }
    kept->nqueue = (uint16_t)nqueue;
}

/* x held by TA (old), y by TB (young); each queued on the other's. */
static struct snapshot *
cycle_snap(bool following, uint64_t scans)
{
    struct snapshot *s = snapshot_new("main");
    const char *qa[] = { TA }, *qb[] = { TB };

    assert_non_null(s);
    s->ok = true;
    s->follow.active = following;
    s->counters.scans_ok = scans;
    add(s, "lock:fair:x", TA, 60000, qb, 1);
    add(s, "lock:fair:y", TB, 2000, qa, 1);
    snapshot_finish(s);
    return s;
}

static struct graph_report *
pass(struct graph *g, struct snapshot *s, int64_t t)
{
    struct graph_target gt = { "main", s };
    struct graph_report *r = graph_pass(g, &gt, 1, NULL, NULL, 0, NOW + t, MONO + t);

    assert_non_null(r);
    return r;
}

static void
following_target_two_passes(void **state)
{
    struct graph *g = graph_new();
    struct snapshot *s = cycle_snap(true, 1);
    struct graph_report *r;
    const struct graph_deadlock *d;
    uint64_t before = events_total(EVENT_DEADLOCK);

    (void)state;
    r = pass(g, s, 0);
    assert_int_equal(r->ndeadlocks, 0);
    assert_int_equal(r->stats.candidates, 1);
    assert_int_equal(r->stats.edges, 2);
    graph_report_unref(r);
    r = pass(g, s, 1000);
    assert_int_equal(r->ndeadlocks, 1);
    d = &r->deadlocks[0];
    assert_string_equal(d->target, "main");
    assert_int_equal(d->nsteps, 2);
    /* the least node first: TA waits for y, held by TB */
    assert_string_equal(d->steps[0].waiter.p, TA);
    assert_string_equal(d->steps[0].key.p, "lock:fair:y");
    assert_string_equal(d->steps[0].holder.p, TB);
    assert_string_equal(d->steps[0].source, "fair-queue");
    assert_string_equal(d->steps[1].key.p, "lock:fair:x");
    /* y is the youngest hold */
    assert_int_equal(d->breaker, 0);
    assert_int_equal(d->since_ms, NOW);
    assert_int_equal(graph_report_count(r, "main"), 1);
    assert_int_equal(graph_report_count(r, GRAPH_CROSS_TARGET), 0);
    assert_int_equal(events_total(EVENT_DEADLOCK), before + 1);
    graph_report_unref(r);
    /* a third pass: still one deadlock, no second event */
    r = pass(g, s, 2000);
    assert_int_equal(r->ndeadlocks, 1);
    assert_int_equal(r->stats.deadlocks_total, 1);
    assert_int_equal(events_total(EVENT_DEADLOCK), before + 1);
    graph_report_unref(r);
    snapshot_unref(s);
    /* the queue emptied: gone */
    s = snapshot_new("main");
    s->ok = true;
    s->follow.active = true;
    add(s, "lock:fair:x", TA, 60000, NULL, 0);
    snapshot_finish(s);
    r = pass(g, s, 3000);
    assert_int_equal(r->ndeadlocks, 0);
    assert_int_equal(r->stats.candidates, 0);
    graph_report_unref(r);
    snapshot_unref(s);
    graph_free(g);
}

static void
scanning_target_needs_a_newer_scan(void **state)
{
    struct graph *g = graph_new();
    struct snapshot *s = cycle_snap(false, 7);
    struct graph_report *r;

    (void)state;
    graph_report_unref(pass(g, s, 0));
    r = pass(g, s, 1000);
    assert_int_equal(r->ndeadlocks, 0);     /* the same scan twice proves nothing */
    graph_report_unref(r);
    snapshot_unref(s);
    s = cycle_snap(false, 8);
    r = pass(g, s, 2000);
    assert_int_equal(r->ndeadlocks, 1);
    graph_report_unref(r);
    snapshot_unref(s);
    graph_free(g);
}

static void
chain_and_failed_scan_are_none(void **state)
{
    struct graph *g = graph_new();
    struct snapshot *s = snapshot_new("main");
    const char *qa[] = { TA }, *qb[] = { TB };
    struct graph_report *r;
    int k;

    (void)state;
    s->ok = true;
    s->follow.active = true;
    add(s, "lock:fair:x", TB, 1000, qa, 1);     /* TA waits for TB */
    add(s, "lock:fair:y", TC, 1000, qb, 1);     /* TB waits for TC */
    snapshot_finish(s);
    for (k = 0; k < 3; k++) {
        r = pass(g, s, k * 1000);
        assert_int_equal(r->ndeadlocks, 0);
        assert_int_equal(r->stats.candidates, 0);
        assert_int_equal(r->stats.edges, 2);
        graph_report_unref(r);
    }
    snapshot_unref(s);
    /* a failed scan's locks draw no edge */
    s = cycle_snap(true, 1);
    s->ok = false;
    for (k = 0; k < 3; k++) {
        r = pass(g, s, 5000 + k * 1000);
        assert_int_equal(r->ndeadlocks, 0);
        assert_int_equal(r->stats.edges, 0);
        graph_report_unref(r);
    }
    snapshot_unref(s);
    graph_free(g);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(following_target_two_passes),
        cmocka_unit_test(scanning_target_needs_a_newer_scan),
        cmocka_unit_test(chain_and_failed_scan_are_none),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
