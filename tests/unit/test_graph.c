/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_graph.c - the wait-for graph's passes (collectors/graph/graph.h)
 * over hand-made snapshots: a fair-queue cycle is a deadlock on the
 * second pass of a following target, only after a newer scan of a
 * scanning one; its steps, target and breaker (the youngest hold); one
 * deadlock event, however many passes see it; a cycle gone is gone; and
 * a chain is none.  A cycle of reporters' lines (a waiting table) over
 * SET locks: a lock gone from a whole snapshot newer than its acquire is
 * no one's, whatever the stale `waiting ... ok` says (released by
 * on-call, which sends no `hold`); the lines stand in for its holder only
 * where no snapshot can vouch (a capped or failed snapshot, a key of no
 * target's patterns, a scan begun before the acquire), and on a key a
 * scanning target's patterns take only once a scan begun after the cycle
 * was first seen could not vouch it gone either; the holder a
 * snapshot shows wins over the lines'; a holder id ("1", as hand-written
 * locks write it for everyone) is its owner's on the key it named it for,
 * not on every key; a liblockwatch token's party (host, pid with the
 * process's nonce, thread) ties a lock taken at once to that process
 * start's thread, not to a dead process of the same pid and thread.  An order is learnt from a hold and
 * a wait of one millisecond, whichever the waiting table lists first, and
 * none from a hold the snapshots vouch released;
 * orders and inversions are tested end to end in
 * tests/integration/test_deadlock.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/events/events.h"
#include "collectors/graph/graph.h"
#include "collectors/graph/graph_impl.h"
#include "collectors/waits/samples.h"

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
    struct graph_target gt = { "main", s, NULL };
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
    assert_string_equal(d->steps[0].holder_id.p, TB);     /* no owner: the field itself */
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

/* ---- a cycle of reporters' lines --------------------------------------------- */

/* Owner svc-c:1/1 holds lock:acct:c (tokC) and waits for lock:acct:d; svc-d:2/1
 * holds d (tokD) and waits for c: the lines of the user trial. */
static void
lines(struct waitstats *ws, int64_t mono)
{
    static const char *const l[] = {
        "lw1 waiting lock:acct:c svc-c%3A1%2F1 tokC ok",
        "lw1 waiting lock:acct:d svc-d%3A2%2F1 tokD ok",
        "lw1 waiting lock:acct:d svc-c%3A1%2F1 - start",
        "lw1 waiting lock:acct:c svc-d%3A2%2F1 - start",
    };
    char buf[256];
    struct sample smp;
    size_t i;

    for (i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
        snprintf(buf, sizeof(buf), "%s", l[i]);
        assert_int_equal(samples_parse_line(buf, strlen(buf), &smp), 0);
        waitstats_record(ws, &smp, 1, 1, 0, mono);
    }
}

static char *pats[] = { "lock:*" };
static const struct target_conf conf_main = { .name = "main", .patterns = pats, .npatterns = 1 };

/* A scan of target main begun at started (ms from NOW), number scans, with
 * lock:acct:c held by hc and lock:acct:d by hd (NULL: absent). */
static struct snapshot *
scan_of(uint64_t scans, int64_t started, const char *hc, const char *hd)
{
    struct snapshot *s = snapshot_new("main");

    assert_non_null(s);
    s->ok = true;
    s->counters.scans_ok = scans;
    s->started_ms = NOW + started;
    if (hc != NULL)
        add(s, "lock:acct:c", hc, 5000, NULL, 0);
    if (hd != NULL)
        add(s, "lock:acct:d", hd, 4000, NULL, 0);
    snapshot_finish(s);
    return s;
}

static struct graph_report *
pass_ws(struct graph *g, const struct graph_target *gt, size_t n, struct waitstats *ws,
        int64_t t)
{
    struct graph_report *r = graph_pass(g, gt, n, ws, NULL, 0, NOW + t, MONO + t);

    assert_non_null(r);
    return r;
}

/* Passes at t and t + 1000 over the same snapshot: deadlocks of the second. */
static size_t
twice(struct graph *g, const struct graph_target *gt, size_t n, struct waitstats *ws, int64_t t)
{
    struct graph_report *r;
    size_t found;

    graph_report_unref(pass_ws(g, gt, n, ws, t));
    r = pass_ws(g, gt, n, ws, t + 1000);
    found = r->ndeadlocks;
    graph_report_unref(r);
    return found;
}

/* A pass at t, then, after every scanning snapshot of gt began anew (at
 * t + 500, after the cycle was first seen), one at t + 1000: deadlocks of
 * the second.  The snapshots' started_ms stay moved. */
static size_t
rescanned(struct graph *g, const struct graph_target *gt, size_t n, struct waitstats *ws,
          int64_t t)
{
    struct graph_report *r;
    size_t found, i;

    graph_report_unref(pass_ws(g, gt, n, ws, t));
    for (i = 0; i < n; i++)
        if (gt[i].snap != NULL && !gt[i].snap->follow.active)
            ((struct snapshot *)gt[i].snap)->started_ms = NOW + t + 500;
    r = pass_ws(g, gt, n, ws, t + 1000);
    found = r->ndeadlocks;
    graph_report_unref(r);
    return found;
}

static struct waitstats *
ws_with_lines(void)
{
    struct config cfg;
    struct waitstats *ws;

    memset(&cfg, 0, sizeof(cfg));
    cfg.rules.wait_window_ms = 60000;
    assert_non_null(ws = waitstats_new(&cfg));
    lines(ws, MONO);            /* at NOW */
    return ws;
}

static void
released_lock_is_no_ones(void **state)
{
    struct graph *g = graph_new();
    struct waitstats *ws = ws_with_lines();
    struct snapshot *s = scan_of(1, 500, "tokC", "tokD");
    struct graph_target gt = { "main", s, &conf_main };
    const struct graph_deadlock *d;
    struct graph_report *r;

    (void)state;
    graph_report_unref(pass_ws(g, &gt, 1, ws, 1000));
    snapshot_unref(s);
    gt.snap = s = scan_of(2, 2500, "tokC", "tokD");
    r = pass_ws(g, &gt, 1, ws, 3000);
    assert_int_equal(r->ndeadlocks, 1);     /* the trial's cycle, from the snapshots */
    d = &r->deadlocks[0];
    assert_int_equal(d->nsteps, 2);
    /* the least node first: svc-c waits for d, held by svc-d as tokD */
    assert_string_equal(d->steps[0].waiter.p, "svc-c:1/1");
    assert_string_equal(d->steps[0].holder.p, "svc-d:2/1");
    assert_string_equal(d->steps[0].holder_id.p, "tokD");
    assert_string_equal(d->steps[1].holder.p, "svc-c:1/1");
    assert_string_equal(d->steps[1].holder_id.p, "tokC");
    assert_false(d->steps[1].holder_id.cut);
    graph_report_unref(r);
    snapshot_unref(s);
    /* on-call released d (no `hold` line): the next scan has no d */
    gt.snap = s = scan_of(3, 4500, "tokC", NULL);
    r = pass_ws(g, &gt, 1, ws, 5000);
    assert_int_equal(r->ndeadlocks, 0);
    assert_int_equal(r->stats.candidates, 0);
    assert_int_equal(r->stats.edges, 1);    /* svc-d still waits for c */
    graph_report_unref(r);
    snapshot_unref(s);
    /* both gone */
    gt.snap = s = scan_of(4, 6500, NULL, NULL);
    r = pass_ws(g, &gt, 1, ws, 7000);
    assert_int_equal(r->ndeadlocks, 0);
    assert_int_equal(r->stats.edges, 0);
    graph_report_unref(r);
    snapshot_unref(s);
    waitstats_free(ws);
    graph_free(g);
}

static void
lines_stand_in_where_no_snapshot_vouches(void **state)
{
    static char *other[] = { "mutex:*" };
    static char *excl[] = { "lock:acct:*" };
    const struct target_conf conf_other = { .name = "other", .patterns = other, .npatterns = 1 };
    const struct target_conf conf_excl = { .name = "main", .patterns = pats, .npatterns = 1,
                                           .exclude_patterns = excl, .nexclude_patterns = 1 };
    struct waitstats *ws = ws_with_lines();
    struct snapshot *s, *f;
    struct graph_target gt[2];
    struct graph_report *r;
    struct graph *g;

    (void)state;
    /* no target's patterns take the keys: the lines alone, a deadlock, its
     * holder ids the lines' */
    s = scan_of(1, 500, NULL, NULL);
    gt[0] = (struct graph_target){ "other", s, &conf_other };
    assert_non_null(g = graph_new());
    assert_int_equal(twice(g, gt, 1, ws, 1000), 1);
    r = graph_latest(g);
    assert_int_equal(r->ndeadlocks, 1);
    assert_string_equal(r->deadlocks[0].target, GRAPH_CROSS_TARGET);
    assert_string_equal(r->deadlocks[0].steps[0].holder_id.p, "tokD");
    assert_string_equal(r->deadlocks[0].steps[0].target, "");
    assert_string_equal(r->deadlocks[0].steps[0].unconfirmed, "");   /* no target could */
    assert_string_equal(r->deadlocks[0].steps[1].holder_id.p, "tokC");
    graph_report_unref(r);
    graph_free(g);
    /* ... nor when main's exclude_patterns leave them out */
    gt[0] = (struct graph_target){ "main", s, &conf_excl };
    assert_non_null(g = graph_new());
    assert_int_equal(twice(g, gt, 1, ws, 1000), 1);
    graph_free(g);
    /* a target whose patterns are not known vouches for nothing */
    gt[0] = (struct graph_target){ "main", s, NULL };
    assert_non_null(g = graph_new());
    assert_int_equal(twice(g, gt, 1, ws, 1000), 1);
    graph_free(g);
    /* a scan begun before the acquire may have passed the keys before: the
     * lines stand in, but a key main's patterns take waits for main's next
     * scan (which vouches it gone) */
    snapshot_unref(s);
    s = scan_of(1, -500, NULL, NULL);
    gt[0] = (struct graph_target){ "main", s, &conf_main };
    assert_non_null(g = graph_new());
    assert_int_equal(twice(g, gt, 1, ws, 1000), 0);
    r = graph_latest(g);
    assert_int_equal(r->stats.candidates, 1);
    graph_report_unref(r);
    assert_int_equal(rescanned(g, gt, 1, ws, 2000), 0);    /* whole, begun since: gone */
    r = graph_latest(g);
    assert_int_equal(r->stats.candidates, 0);
    assert_int_equal(r->stats.deadlocks_total, 0);         /* never paged */
    graph_report_unref(r);
    graph_free(g);
    /* ... which follow mode's current view has not */
    s->follow.active = true;
    assert_non_null(g = graph_new());
    assert_int_equal(twice(g, gt, 1, ws, 1000), 0);
    graph_free(g);
    s->follow.active = false;
    /* a snapshot capped (fewer kept than counted) may have left them out */
    snapshot_unref(s);
    gt[0].snap = s = scan_of(1, 500, NULL, NULL);
    s->locks_total = 20000;
    assert_non_null(g = graph_new());
    assert_int_equal(twice(g, gt, 1, ws, 1000), 0);         /* the same scan twice */
    graph_free(g);
    assert_non_null(g = graph_new());
    assert_int_equal(rescanned(g, gt, 1, ws, 1000), 1);
    graph_free(g);
    /* ... and so may a failed one, or a cluster's shard not read */
    s->locks_total = s->nlocks;
    s->ok = false;
    assert_non_null(g = graph_new());
    assert_int_equal(rescanned(g, gt, 1, ws, 1000), 1);
    r = graph_latest(g);                /* the steps say main cannot confirm them */
    assert_string_equal(r->deadlocks[0].steps[0].unconfirmed, "main");
    assert_string_equal(r->deadlocks[0].steps[1].unconfirmed, "main");
    graph_report_unref(r);
    graph_free(g);
    s->ok = true;
    assert_non_null(s->shards = calloc(2, sizeof(*s->shards)));
    s->nshards = 2;
    s->shards[0].ok = true;
    assert_non_null(g = graph_new());
    assert_int_equal(rescanned(g, gt, 1, ws, 1000), 1);
    graph_free(g);
    s->shards[1].ok = true;
    assert_non_null(g = graph_new());
    assert_int_equal(rescanned(g, gt, 1, ws, 1000), 0);     /* whole: gone */
    graph_free(g);
    /* two targets take the keys: one that cannot vouch keeps the lines */
    f = scan_of(1, 500, NULL, NULL);
    f->ok = false;
    gt[1] = (struct graph_target){ "second", f, &conf_main };
    assert_non_null(g = graph_new());
    assert_int_equal(rescanned(g, gt, 2, ws, 1000), 1);
    r = graph_latest(g);
    assert_string_equal(r->deadlocks[0].steps[0].unconfirmed, "second");
    graph_report_unref(r);
    graph_free(g);
    /* ... as does one watched by another shard (no snapshot here) */
    gt[1].snap = NULL;
    assert_non_null(g = graph_new());
    assert_int_equal(rescanned(g, gt, 2, ws, 1000), 1);
    graph_free(g);
    f->ok = true;
    gt[1].snap = f;
    assert_non_null(g = graph_new());
    assert_int_equal(rescanned(g, gt, 2, ws, 1000), 0);
    graph_free(g);
    snapshot_unref(f);
    snapshot_unref(s);
    waitstats_free(ws);
}

static void
snapshot_holder_wins(void **state)
{
    struct waitstats *ws = ws_with_lines();
    struct snapshot *s = scan_of(1, 500, "tokC", "tokX");   /* d taken by another */
    struct graph_target gt = { "main", s, &conf_main };
    struct graph *g = graph_new();
    struct graph_report *r;

    (void)state;
    assert_int_equal(twice(g, &gt, 1, ws, 1000), 0);
    r = pass_ws(g, &gt, 1, ws, 3000);
    assert_int_equal(r->stats.edges, 2);    /* svc-c -> tokX, svc-d -> svc-c */
    assert_int_equal(r->stats.candidates, 0);
    graph_report_unref(r);
    snapshot_unref(s);
    waitstats_free(ws);
    graph_free(g);
}

/* An event's detail quotes keys and owners, which are bytes: a NUL in one
 * is written U+FFFD and the text goes on; the cap holds. */
static void
detail_text_goes_past_a_nul(void **state)
{
    char buf[16];
    size_t len = 0;

    (void)state;
    buf[0] = '\0';
    graph_detail_add(buf, sizeof(buf), &len, "a\0b", 3);
    graph_detail_add(buf, sizeof(buf), &len, " then", 5);
    assert_string_equal(buf, "a\xef\xbf\xbd" "b then");
    assert_int_equal(len, strlen(buf));
    graph_detail_add(buf, sizeof(buf), &len, "0123456789", 10);
    assert_int_equal(len, sizeof(buf) - 1);
    assert_int_equal(strlen(buf), sizeof(buf) - 1);
    /* no room left for the three bytes of a U+FFFD: nothing half-written */
    len = 13;
    buf[13] = '\0';
    graph_detail_add(buf, sizeof(buf), &len, "\0", 1);
    assert_int_equal(len, 13);
}

static struct gpair
gp(const char *owner, const char *key, bool waiting, int64_t at_ms)
{
    struct gpair p;

    memset(&p, 0, sizeof(p));
    p.owner = (char *)owner;
    p.ownerlen = strlen(owner);
    p.key = (char *)key;
    p.keylen = strlen(key);
    p.holder = (char *)"-";
    p.holderlen = 1;
    p.waiting = waiting;
    p.outcome = SAMPLE_OK;
    p.at_ms = at_ms;
    return p;
}

/* An owner that holds one key and waits for another learns the order,
 * also when both lines came in the same millisecond and the waiting
 * table lists the wait first (it has no order). */
static void
order_in_one_millisecond(void **state)
{
    struct graph *g = graph_new();
    struct gpair p[2];

    (void)state;
    assert_non_null(g);
    p[0] = gp("svc-a:1/1", "lock:ship:2002", true, 5000);
    p[1] = gp("svc-a:1/1", "lock:acct:1001", false, 5000);
    assert_int_equal(orders_pass(g, p, 2, NULL, 0, NOW, MONO), 0);
    assert_int_equal(g->norders, 1);
    assert_string_equal(g->orders[0].site.held_key.p, "lock:acct:1001");
    assert_string_equal(g->orders[0].site.wanted_key.p, "lock:ship:2002");
    /* a wait older than the hold teaches nothing: it began before */
    graph_free(g);
    assert_non_null(g = graph_new());
    p[0].at_ms = 4000;
    assert_int_equal(orders_pass(g, p, 2, NULL, 0, NOW, MONO), 0);
    assert_int_equal(g->norders, 0);
    graph_free(g);
}

/* Owner svc-c:1/1 acquired lock:acct:c at NOW (its line), then waits for
 * lock:ship:e: an order, while the snapshots show c held (or cannot
 * vouch); none once a whole scan begun after the acquire lacks c (on-call
 * released it: no `hold` line came). */
static void
released_lock_teaches_no_order(void **state)
{
    static const char *const l[] = {
        "lw1 waiting lock:acct:c svc-c%3A1%2F1 tokC ok",
        "lw1 waiting lock:ship:e svc-c%3A1%2F1 - start",
    };
    const char *held[] = { "tokC", NULL };
    struct config cfg;
    char buf[128];
    struct sample smp;

    (void)state;
    memset(&cfg, 0, sizeof(cfg));
    cfg.rules.wait_window_ms = 60000;
    for (size_t k = 0; k < 2; k++) {
        struct graph *g = graph_new();
        struct waitstats *ws = waitstats_new(&cfg);
        struct snapshot *s = scan_of(1, 500, held[k], NULL);
        struct graph_target gt = { "main", s, &conf_main };
        struct graph_report *r;

        assert_non_null(g);
        assert_non_null(ws);
        for (size_t i = 0; i < 2; i++) {
            snprintf(buf, sizeof(buf), "%s", l[i]);
            assert_int_equal(samples_parse_line(buf, strlen(buf), &smp), 0);
            waitstats_record(ws, &smp, 1, 1, 0, MONO + 1000 * (int64_t)i);
        }
        r = pass_ws(g, &gt, 1, ws, 2000);
        assert_int_equal(r->stats.orders, held[k] != NULL ? 1 : 0);
        graph_report_unref(r);
        snapshot_unref(s);
        waitstats_free(ws);
        graph_free(g);
    }
}


/* Record lines at mono (one a call). */
static void
feed(struct waitstats *ws, const char *const *l, size_t n, int64_t mono)
{
    char buf[256];
    struct sample smp;
    size_t i;

    for (i = 0; i < n; i++) {
        snprintf(buf, sizeof(buf), "%s", l[i]);
        assert_int_equal(samples_parse_line(buf, strlen(buf), &smp), 0);
        waitstats_record(ws, &smp, 1, 1, 0, mono + (int64_t)i * 100);
    }
}

/* The statistics of lines l (n of them, fed at MONO) and an ok snapshot
 * of follow mode (its current view) for the caller's locks. */
struct lines_fx {
    struct waitstats *ws;
    struct snapshot *s;
    struct graph_target gt;
    struct graph *g;
};

static void
lines_fx_init(struct lines_fx *f, const char *const *l, size_t n)
{
    struct config cfg;

    memset(&cfg, 0, sizeof(cfg));
    cfg.rules.wait_window_ms = 60000;
    assert_non_null(f->ws = waitstats_new(&cfg));
    feed(f->ws, l, n, MONO);
    assert_non_null(f->s = snapshot_new("main"));
    f->s->ok = true;
    f->s->follow.active = true;
    f->gt = (struct graph_target){ "main", f->s, &conf_main };
    assert_non_null(f->g = graph_new());
}

/* Three passes a second apart: no deadlock, no candidate, edges edges. */
static void
lines_fx_no_cycle(struct lines_fx *f, size_t edges)
{
    struct graph_report *r;
    int k;

    for (k = 0; k < 3; k++) {
        r = pass_ws(f->g, &f->gt, 1, f->ws, 1000 + k * 1000);
        assert_int_equal(r->ndeadlocks, 0);
        assert_int_equal(r->stats.candidates, 0);
        assert_int_equal(r->stats.edges, edges);
        graph_report_unref(r);
    }
}

static void
lines_fx_free(struct lines_fx *f)
{
    snapshot_unref(f->s);
    waitstats_free(f->ws);
    graph_free(f->g);
}

/* Hand-written locks write one constant ("1") for every owner: a holder id
 * is its owner's on the key that owner named it for, not on every key.
 * P holds x and Q holds y, both as "1"; R holds z as "2"; Q waits for z,
 * R for x: Q -> R -> P, a chain, though Q named "1" last (the trial's
 * false deadlock "R/1 waits for lock:c:x held by Q/1"). */
static void
holder_id_is_its_owners_on_its_key(void **state)
{
    static const char *const l[] = {
        "lw1 waiting lock:c:x P/1 1 ok",
        "lw1 waiting lock:c:z R/1 2 ok",
        "lw1 waiting lock:c:y Q/1 1 ok",
        "lw1 waiting lock:c:z Q/1 1b start",
        "lw1 waiting lock:c:x R/1 2b start",
    };
    struct lines_fx f;
    struct snapshot *s;
    struct graph_report *r;

    (void)state;
    lines_fx_init(&f, l, 5);
    s = f.s;
    add(s, "lock:c:x", "1", 3000, NULL, 0);
    add(s, "lock:c:y", "1", 2000, NULL, 0);
    add(s, "lock:c:z", "2", 1000, NULL, 0);
    snapshot_finish(s);
    lines_fx_no_cycle(&f, 2);   /* Q -> R, R -> P */
    /* P releases x and Q takes it (as "1" too): now R waits for Q, which
     * waits for R, a deadlock, with Q as x's holder */
    {
        static const char *const m[] = {
            "lw1 hold lock:c:x 1000 P/1 1",
            "lw1 waiting lock:c:x Q/1 1 ok",
            "lw1 waiting lock:c:z Q/1 1b start",
        };
        feed(f.ws, m, 3, MONO + 5000);
    }
    r = pass_ws(f.g, &f.gt, 1, f.ws, 6000);
    graph_report_unref(r);
    r = pass_ws(f.g, &f.gt, 1, f.ws, 7000);
    assert_int_equal(r->ndeadlocks, 1);
    assert_string_equal(r->deadlocks[0].steps[0].waiter.p, "Q/1");
    assert_string_equal(r->deadlocks[0].steps[0].holder.p, "R/1");
    assert_string_equal(r->deadlocks[0].steps[1].holder.p, "Q/1");
    assert_string_equal(r->deadlocks[0].steps[1].key.p, "lock:c:x");
    graph_report_unref(r);
    lines_fx_free(&f);
}

/* A holder id no holding pair names on a key is not a pair's whose
 * acquire timed out: X (no reporter) holds k as "1", W2 holds j as "1"
 * and waits for k; W1, waiting for k before W2, times out after W2 began
 * and waits for j.  "1" on k is no one's known (W2's own start names it:
 * W2 draws no edge), not W1's latest line: no W1 -> W2 -> W1 cycle. */
static void
holder_id_not_a_timed_out_waiters(void **state)
{
    static const char *const l[] = {
        "lw1 waiting lock:d:j W2/1 1 ok",
        "lw1 waiting lock:d:k W1/1 1 start",
        "lw1 waiting lock:d:k W2/1 1 start",
        "lw1 waiting lock:d:k W1/1 1 timeout",
        "lw1 waiting lock:d:j W1/1 1 start",
    };
    struct lines_fx f;
    struct snapshot *s;

    (void)state;
    lines_fx_init(&f, l, 5);
    s = f.s;
    add(s, "lock:d:k", "1", 3000, NULL, 0);
    add(s, "lock:d:j", "1", 2000, NULL, 0);
    snapshot_finish(s);
    lines_fx_no_cycle(&f, 1);   /* W1 -> W2 on j */
    lines_fx_free(&f);
}

/* A liblockwatch lock taken at once is its thread's through the party of
 * its token, "lw1:<host>:<pid>.<nonce>:<thread>".  A restarted container
 * runs as pid 1, thread 1 again: the dead process (nonce aa) left a
 * `waiting ... start` for b, held by D; the new one (nonce bb) took a at
 * once (no line) and D waits for a.  Not a cycle: the dead wait is not the
 * new process's.  The same process (nonce aa on a too), and the older
 * token form whose party is host, pid and thread, close it. */
static void
party_is_one_process_start(void **state)
{
    static const char *const l[] = {
        "lw1 waiting lock:p:b D/1 tokD ok",
        "lw1 waiting lock:p:b vm%3A1%2F1 lw1:vm:1.00000000000000aa:1:1789999990000:"
        "0123456789abcdef start",
        "lw1 waiting lock:p:a D/1 tokD2 start",
    };
    static const char *const older[] = {
        "lw1 waiting lock:p:b D/1 tokD ok",
        "lw1 waiting lock:p:b vm%3A1%2F1 lw1:vm:1:1:1789999990000:0123456789abcdef start",
        "lw1 waiting lock:p:a D/1 tokD2 start",
    };
    static const struct { const char *const *lines; const char *a; bool cycle; } cases[] = {
        { l, "lw1:vm:1.00000000000000bb:1:1789999995000:fedcba9876543210", false },
        { l, "lw1:vm:1.00000000000000aa:1:1789999995000:fedcba9876543210", true },
        { older, "lw1:vm:1:1:1789999995000:fedcba9876543210", true },
        { older, "lw1:vm:1.00000000000000aa:1:1789999995000:fedcba9876543210", false },
    };
    struct lines_fx f;
    struct graph_report *r;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        lines_fx_init(&f, cases[i].lines, 3);
        add(f.s, "lock:p:a", cases[i].a, 5000, NULL, 0);
        add(f.s, "lock:p:b", "tokD", 20000, NULL, 0);
        snapshot_finish(f.s);
        if (!cases[i].cycle) {
            lines_fx_no_cycle(&f, 2);       /* vm -> D on b, D -> a's token */
            lines_fx_free(&f);
            continue;
        }
        graph_report_unref(pass_ws(f.g, &f.gt, 1, f.ws, 1000));
        r = pass_ws(f.g, &f.gt, 1, f.ws, 2000);
        assert_int_equal(r->ndeadlocks, 1);
        {   /* vm waits for b (D's), D for a: vm's through the party */
            size_t k = strcmp(r->deadlocks[0].steps[0].holder.p, "vm:1/1") == 0 ? 0 : 1;

            assert_string_equal(r->deadlocks[0].steps[k].holder.p, "vm:1/1");
            assert_string_equal(r->deadlocks[0].steps[k].holder_id.p, cases[i].a);
            assert_string_equal(r->deadlocks[0].steps[k].key.p, "lock:p:a");
            assert_string_equal(r->deadlocks[0].steps[1 - k].holder.p, "D/1");
        }
        graph_report_unref(r);
        lines_fx_free(&f);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(following_target_two_passes),
        cmocka_unit_test(scanning_target_needs_a_newer_scan),
        cmocka_unit_test(chain_and_failed_scan_are_none),
        cmocka_unit_test(released_lock_is_no_ones),
        cmocka_unit_test(lines_stand_in_where_no_snapshot_vouches),
        cmocka_unit_test(snapshot_holder_wins),
        cmocka_unit_test(detail_text_goes_past_a_nul),
        cmocka_unit_test(order_in_one_millisecond),
        cmocka_unit_test(released_lock_teaches_no_order),
        cmocka_unit_test(holder_id_is_its_owners_on_its_key),
        cmocka_unit_test(holder_id_not_a_timed_out_waiters),
        cmocka_unit_test(party_is_one_process_start),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
