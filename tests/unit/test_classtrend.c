/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_classtrend.c - the per-class trends of issue 28 (classtrend.h):
 * the count baseline and when it is known, creations and deletions from
 * consecutive snapshots, the lease window, watchdog detection, the class
 * cap.  Time is driven by hand (monotonic ms).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/waits/classtrend.h"
#include "collectors/waits/leaseadvice.h"

#define T0 1000000LL

static struct config cfg;

static void
setup_cfg(int64_t baseline_ms, int64_t wait_ms)
{
    memset(&cfg, 0, sizeof(cfg));
    cfg.rules.count_baseline_window_ms = baseline_ms;
    cfg.rules.wait_window_ms = wait_ms;
    cfg.rules.count_surge_factor = 3;
    cfg.rules.count_surge_floor = 50;
}

/* An ok snapshot of one class with total locks, created of them new. */
static struct snapshot *
snap1(const char *name, uint64_t total, uint64_t created)
{
    struct snapshot *s = snapshot_new("main");

    assert_non_null(s);
    s->ok = true;
    s->classes = calloc(1, sizeof(char *));
    s->classes[0] = strdup(name);
    s->nclasses = 1;
    s->class_stats = calloc(1, sizeof(*s->class_stats));
    s->class_cap = 1;
    s->class_stats[0].total = total;
    s->class_stats[0].created = created;
    return s;
}

static const struct classtrend_class *
one(struct classtrend *ct, int64_t now, struct classtrend_view *v, const char *name)
{
    assert_int_equal(classtrend_view(ct, now, v), 0);
    return classtrend_find(v, name);
}

static void
baseline_known_after_half_the_window(void **state)
{
    struct classtrend *ct;
    struct classtrend_view v;
    const struct classtrend_class *c;
    struct snapshot *s = snap1("lock:a:*", 100, 0), *big = snap1("lock:a:*", 1000, 0);
    const struct snapshot *list[1];
    int64_t t;

    (void)state;
    setup_cfg(60000, 60000);            /* 60 slots of 1 s */
    assert_non_null(ct = classtrend_new(&cfg));
    list[0] = s;
    for (t = 0; t < 30000; t += 500)    /* 30 slots, the current one included */
        classtrend_sample(ct, list, 1, T0 + t);
    c = one(ct, T0 + 29999, &v, "lock:a:*");
    assert_non_null(c);
    assert_int_equal(c->count, 100);
    assert_false(c->baseline_known);    /* 29 slots before the current one */
    assert_false(count_surges(&cfg.rules, c));
    classtrend_view_release(&v);
    classtrend_sample(ct, list, 1, T0 + 30000);
    c = one(ct, T0 + 30000, &v, "lock:a:*");
    assert_true(c->baseline_known);
    assert_true(c->baseline == 100.0);
    classtrend_view_release(&v);
    /* the surge: 1,000 against a median of 100 */
    list[0] = big;
    classtrend_sample(ct, list, 1, T0 + 31000);
    c = one(ct, T0 + 31000, &v, "lock:a:*");
    assert_int_equal(c->count, 1000);
    assert_true(c->baseline == 100.0);
    assert_true(count_surge_threshold(&cfg.rules, c) == 300.0);
    assert_true(count_surges(&cfg.rules, c));
    classtrend_view_release(&v);
    /* a whole window later the new level is the baseline */
    for (t = 31000; t < 95000; t += 1000)
        classtrend_sample(ct, list, 1, T0 + t);
    c = one(ct, T0 + 95000, &v, "lock:a:*");
    assert_true(c->baseline == 1000.0);
    assert_false(count_surges(&cfg.rules, c));
    classtrend_view_release(&v);
    /* no snapshot names the class any more: it counts 0 */
    list[0] = NULL;
    classtrend_sample(ct, list, 1, T0 + 96000);
    c = one(ct, T0 + 96000, &v, "lock:a:*");
    assert_int_equal(c->count, 0);
    classtrend_view_release(&v);
    classtrend_free(ct);
    snapshot_unref(s);
    snapshot_unref(big);
}

static void
churn_from_consecutive_snapshots(void **state)
{
    struct classtrend *ct;
    struct classtrend_view v;
    const struct classtrend_class *c;
    struct snapshot *s1 = snap1("lock:b:*", 100, 100), *s2 = snap1("lock:b:*", 100, 50),
        *s3 = snap1("lock:other:*", 5, 5);

    (void)state;
    setup_cfg(3600000, 60000);
    assert_non_null(ct = classtrend_new(&cfg));
    classtrend_note(ct, NULL, s1, T0);          /* a target's first: no churn */
    c = one(ct, T0, &v, "lock:b:*");
    assert_int_equal(c->created_total, 0);
    assert_int_equal(c->deleted_total, 0);
    classtrend_view_release(&v);
    classtrend_note(ct, s1, s2, T0 + 1000);     /* 50 new, so 50 went */
    c = one(ct, T0 + 1000, &v, "lock:b:*");
    assert_int_equal(c->created_total, 50);
    assert_int_equal(c->deleted_total, 50);
    assert_true(c->created_rate > 0.83 && c->created_rate < 0.84);     /* 50 / 60 s */
    classtrend_view_release(&v);
    classtrend_note(ct, s2, s3, T0 + 2000);     /* the class is gone: all 100 went */
    c = one(ct, T0 + 2000, &v, "lock:b:*");
    assert_int_equal(c->deleted_total, 150);
    classtrend_view_release(&v);
    /* a minute on, the rates are back to 0; the counters stay */
    c = one(ct, T0 + 2000 + CLASSTREND_RATE_MS, &v, "lock:b:*");
    assert_true(c->created_rate == 0.0 && c->deleted_rate == 0.0);
    assert_int_equal(c->created_total, 50);
    classtrend_view_release(&v);
    classtrend_free(ct);
    snapshot_unref(s1);
    snapshot_unref(s2);
    snapshot_unref(s3);
}

/* sc as a class of one renewed lock: a lease of lease_ms at first sight,
 * a lock that lived span_ms (age + TTL), lows (0 or 1) of its TTLs taken
 * for renewal lows, the lowest low_ms. */
static void
renewed_class(struct snap_class *sc, int64_t lease_ms, int64_t span_ms, uint64_t lows,
              int64_t low_ms)
{
    sc->lease_n = 1;
    sc->lease_max_ms = lease_ms;
    sc->held_ttl_n = 1;
    sc->span_max_ms = span_ms;
    sc->held_low_n = lows;
    sc->held_min_pttl_ms = low_ms;
}

static void
lease_window_and_watchdog(void **state)
{
    struct classtrend *ct;
    struct classtrend_view v;
    const struct classtrend_class *c;
    struct snapshot *s = snap1("lock:l:*", 2, 2), *w = snap1("lock:w:*", 1, 0);
    struct snap_class *sc = &s->class_stats[0];

    (void)state;
    setup_cfg(3600000, 12000);          /* lease ring: 12 x 1 s */
    assert_non_null(ct = classtrend_new(&cfg));
    sc->lease_n = 2;
    sc->lease_max_ms = 9700;
    sc->lease_sum_ms = 9700 + 9200;
    sc->lease_bucket[6] = 2;
    classtrend_note(ct, NULL, s, T0);
    c = one(ct, T0 + 1000, &v, "lock:l:*");
    assert_true(c->lease_known);
    assert_int_equal(c->lease_ms, 9700);
    assert_int_equal(c->lease_count, 2);
    assert_int_equal(c->lease_bucket[6], 2);
    assert_false(c->watchdog);
    classtrend_view_release(&v);
    c = one(ct, T0 + 13000, &v, "lock:l:*");   /* out of wait_window */
    assert_false(c->lease_known);
    assert_int_equal(c->lease_count, 2);        /* the histogram is since start */
    classtrend_view_release(&v);

    /* a 6 s lease whose lock lived 15 s (age + TTL) with TTLs down to 4 s */
    sc = &w->class_stats[0];
    renewed_class(sc, 6000, 15000, 1, 4000);
    classtrend_note(ct, NULL, w, T0 + 20000);
    c = one(ct, T0 + 20000, &v, "lock:w:*");
    assert_true(c->watchdog);
    assert_int_equal(c->renewal_ms, 2000);
    classtrend_view_release(&v);
    /* within 1.5 x the lease: not renewed */
    sc->span_max_ms = 8000;
    classtrend_note(ct, NULL, w, T0 + 40000);
    c = one(ct, T0 + 40000, &v, "lock:w:*");
    assert_false(c->watchdog);
    classtrend_view_release(&v);
    classtrend_free(ct);
    snapshot_unref(s);
    snapshot_unref(w);
}

/* A watchdog class's TTLs of locks not renewed since an outage (held_low_n
 * counts the others: the scanner's tracker_outage()) are the outage's
 * drain, not how low its holders let them run: the period read before
 * stays, and a class with no such low is still renewed, its period not
 * seen (not a class judged on its holds, which outlive the lease by
 * design). */
static void
lows_after_an_outage_are_not_counted(void **state)
{
    struct classtrend *ct;
    struct classtrend_view v;
    const struct classtrend_class *c;
    struct snapshot *w = snap1("lock:w:*", 1, 0), *d = snap1("lock:d:*", 1, 0);
    struct snap_class *sc = &w->class_stats[0];

    (void)state;
    setup_cfg(3600000, 12000);          /* lease ring: 12 x 1 s */
    assert_non_null(ct = classtrend_new(&cfg));
    renewed_class(sc, 6000, 15000, 1, 4000);        /* renewed every 2 s */
    classtrend_note(ct, NULL, w, T0);
    sc->lease_n = 0;
    sc->held_low_n = 0;                 /* drained by 3.5 s of outage, */
    sc->held_min_pttl_ms = 500;         /* not renewed since */
    classtrend_note(ct, NULL, w, T0 + 2000);
    c = one(ct, T0 + 2000, &v, "lock:w:*");
    assert_true(c->watchdog);
    assert_int_equal(c->renewal_ms, 2000);
    classtrend_view_release(&v);
    /* renewed since: a low like it is the period's */
    sc->held_low_n = 1;
    classtrend_note(ct, NULL, w, T0 + 4000);
    c = one(ct, T0 + 4000, &v, "lock:w:*");
    assert_int_equal(c->renewal_ms, 5500);
    classtrend_view_release(&v);

    renewed_class(&d->class_stats[0], 6000, 15000, 0, 500);       /* no low */
    classtrend_note(ct, NULL, d, T0 + 5000);
    c = one(ct, T0 + 5000, &v, "lock:d:*");
    assert_true(c->watchdog);
    assert_int_equal(c->renewal_ms, 0);         /* not seen */
    classtrend_view_release(&v);
    classtrend_free(ct);
    snapshot_unref(w);
    snapshot_unref(d);
}

static void
classes_stay_within_the_cap(void **state)
{
    struct classtrend *ct;
    struct classtrend_view v;
    char name[32];
    int i;

    (void)state;
    setup_cfg(3600000, 60000);
    assert_non_null(ct = classtrend_new(&cfg));
    for (i = 0; i < CLASS_MAX + 100; i++) {
        struct snapshot *s;

        snprintf(name, sizeof(name), "lock:c%d:*", i);
        s = snap1(name, 1, 1);
        classtrend_note(ct, NULL, s, T0 + i);
        snapshot_unref(s);
    }
    assert_int_equal(classtrend_view(ct, T0 + 1000, &v), 0);
    assert_int_equal(v.nclasses, CLASS_MAX + 1);        /* "other" took the rest */
    assert_non_null(classtrend_find(&v, "other"));
    classtrend_view_release(&v);
    classtrend_free(ct);
}

static void
median(void **state)
{
    uint64_t a[] = { 5, 1, 3 }, b[] = { 4, 1, 3, 2 };

    (void)state;
    assert_true(classtrend_median(a, 3) == 3.0);
    assert_true(classtrend_median(b, 4) == 2.5);
    assert_true(classtrend_median(NULL, 0) == 0.0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(baseline_known_after_half_the_window),
        cmocka_unit_test(churn_from_consecutive_snapshots),
        cmocka_unit_test(lease_window_and_watchdog),
        cmocka_unit_test(lows_after_an_outage_are_not_counted),
        cmocka_unit_test(classes_stay_within_the_cap),
        cmocka_unit_test(median),
    };

    return cmocka_run_group_tests_name("classtrend", tests, NULL, NULL);
}
