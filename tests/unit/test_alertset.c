/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_alertset.c - alert instances: fingerprints, the firing / repeat /
 * resolved lifecycle, keeping a target's alerts, the cap, the
 * Alertmanager refresh, a new episode on another occurrence, and what an
 * agent that starts to speak says again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "alerts/alertset.h"

#define NOW   1800000000000LL
#define MONO  1000000LL
#define HOUR  (3600 * 1000LL)

static struct alert_labels
leak(const char *key)
{
    struct alert_labels l = { ALERT_LOCK_LEAKED, "main", "lock:x:*", key, NULL, NULL };

    return l;
}

/* One tick observing keys[0..n); returns the events. */
static size_t
tick(struct alertset *set, int64_t t, const char *const *keys, size_t n, bool refresh,
     const struct alert_event **ev)
{
    size_t i, nev;

    alertset_begin(set, NOW + t, MONO + t);
    for (i = 0; i < n; i++) {
        struct alert_labels l = leak(keys[i]);

        assert_non_null(alertset_observe(set, &l));
    }
    assert_int_equal(alertset_end(set, HOUR, refresh, ev, &nev), 0);
    return nev;
}

static void
fingerprint_is_alertmanagers(void **state)
{
    struct alert_labels l = leak("lock:x:1");
    struct alert_labels down = { ALERT_LOCK_TARGET_DOWN, "main", NULL, NULL, NULL, NULL };

    (void)state;
    /* prometheus/common model.LabelSet.Fingerprint of the same labels, the
     * severity label of the kind's row included */
    assert_int_equal(alert_fingerprint(&l), 0x9328b55698210c22ULL);
    assert_int_equal(alert_fingerprint(&down), 0x68a9e93cd5a4ca30ULL);
    l.key = "lock:x:2";
    assert_int_not_equal(alert_fingerprint(&l), 0x9328b55698210c22ULL);
    assert_string_equal(alert_severity_str(alert_severity_of(ALERT_LOCK_LEAKED)), "warning");
    assert_string_equal(alert_severity_str(alert_severity_of(ALERT_LOCK_TARGET_DOWN)), "critical");
}

static void
lifecycle(void **state)
{
    struct alertset *set = alertset_new();
    const char *keys[] = { "lock:x:1" };
    const struct alert_event *ev;
    const struct alert *a;
    size_t nev, firing[ALERT_NAMES], sup;
    int64_t first_start;

    (void)state;
    assert_non_null(set);
    nev = tick(set, 0, keys, 1, false, &ev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_FIRING);
    assert_string_equal(ev[0].alert->key, "lock:x:1");
    assert_int_equal(ev[0].alert->starts_ms, NOW);
    first_start = ev[0].alert->starts_ms;
    /* still firing: nothing new, however often it is observed */
    assert_int_equal(tick(set, 1000, keys, 1, false, &ev), 0);
    assert_int_equal(tick(set, HOUR - 1, keys, 1, false, &ev), 0);
    alertset_counts(set, firing, &sup);
    assert_int_equal(firing[ALERT_LOCK_LEAKED], 1);
    assert_int_equal(sup, 0);
    /* repeat_interval after the first notice */
    nev = tick(set, HOUR, keys, 1, false, &ev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_REPEAT);
    assert_int_equal(ev[0].alert->starts_ms, first_start);
    assert_int_equal(tick(set, HOUR + 1000, keys, 1, false, &ev), 0);
    /* not observed: resolved once */
    nev = tick(set, HOUR + 2000, keys, 0, false, &ev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    assert_int_equal(ev[0].alert->state, ALERT_RESOLVED);
    assert_int_equal(ev[0].alert->ends_ms, NOW + HOUR + 2000);
    assert_int_equal(tick(set, HOUR + 3000, keys, 0, false, &ev), 0);
    alertset_counts(set, firing, &sup);
    assert_int_equal(firing[ALERT_LOCK_LEAKED], 0);
    /* firing again: a new episode with a new start */
    nev = tick(set, HOUR + 4000, keys, 1, false, &ev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_FIRING);
    assert_int_equal(ev[0].alert->starts_ms, NOW + HOUR + 4000);
    /* resolved ones are forgotten after the keep time */
    tick(set, HOUR + 5000, keys, 0, false, &ev);
    tick(set, HOUR + 5000 + ALERTSET_RESOLVED_KEEP_MS, keys, 0, false, &ev);
    alertset_begin(set, NOW, MONO + 2 * HOUR);
    assert_null(alertset_at(set, 0));
    assert_int_equal(alertset_end(set, HOUR, false, &ev, &nev), 0);
    a = alertset_at(set, 0);
    assert_null(a);
    alertset_free(set);
}

static void
keep_target(void **state)
{
    struct alertset *set = alertset_new();
    struct alert_labels l = leak("lock:x:1");
    struct alert_labels down = { ALERT_LOCK_TARGET_DOWN, "main", NULL, NULL, NULL, NULL };
    const struct alert_event *ev;
    size_t nev;

    (void)state;
    alertset_begin(set, NOW, MONO);
    assert_non_null(alertset_observe(set, &l));
    assert_non_null(alertset_observe(set, &down));
    alertset_end(set, HOUR, false, &ev, &nev);
    assert_int_equal(nev, 2);
    /* target kept: its per-lock alert stays, the target alert is judged */
    alertset_begin(set, NOW + 1000, MONO + 1000);
    alertset_keep_target(set, "main");
    alertset_end(set, HOUR, false, &ev, &nev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_TARGET_DOWN);
    /* another target kept: not this one's */
    alertset_begin(set, NOW + 2000, MONO + 2000);
    alertset_keep_target(set, "other");
    alertset_end(set, HOUR, false, &ev, &nev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_LEAKED);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    alertset_free(set);
}

/* alertset_unnotified: firing, started at or after since, and not just
 * notified this tick. */
static void
unnotified_since(void **state)
{
    struct alertset *set = alertset_new();
    const char *keys[] = { "lock:x:1", "lock:x:2", "lock:x:3" };
    const struct alert_event *ev;
    struct alert **list;
    size_t n;

    (void)state;
    assert_int_equal(tick(set, 0, keys, 1, false, &ev), 1);        /* x:1 at NOW */
    assert_int_equal(tick(set, 5000, keys, 2, false, &ev), 1);     /* x:2 at NOW + 5 s */
    /* x:3 fires this tick: its EV_FIRING is out already */
    assert_int_equal(tick(set, 9000, keys, 3, false, &ev), 1);
    list = alertset_unnotified(set, 0, &n);
    assert_int_equal(n, 2);
    assert_string_equal(list[0]->key, "lock:x:1");
    assert_string_equal(list[1]->key, "lock:x:2");
    free(list);
    list = alertset_unnotified(set, NOW + 1000, &n);
    assert_int_equal(n, 1);
    assert_string_equal(list[0]->key, "lock:x:2");
    free(list);
    /* x:2 resolves: only firing ones */
    assert_int_equal(tick(set, 10000, keys, 1, false, &ev), 2);
    list = alertset_unnotified(set, NOW + 1000, &n);
    assert_null(list);
    assert_int_equal(n, 0);
    alertset_free(set);
}

/* alertset_resolved_since: resolved, ended at or after since, and not
 * this tick (its EV_RESOLVED is out already). */
static void
resolved_since(void **state)
{
    struct alertset *set = alertset_new();
    const char *keys[] = { "lock:x:1", "lock:x:2", "lock:x:3" };
    const struct alert_event *ev;
    struct alert **list;
    size_t n;

    (void)state;
    assert_int_equal(tick(set, 0, keys, 3, false, &ev), 3);
    assert_int_equal(tick(set, 2000, keys, 2, false, &ev), 1);     /* x:3 ends at NOW + 2 s */
    assert_null(alertset_resolved_since(set, 0, &n));               /* this tick's */
    assert_int_equal(n, 0);
    assert_int_equal(tick(set, 5000, keys, 1, false, &ev), 1);     /* x:2 ends at NOW + 5 s */
    list = alertset_resolved_since(set, 0, &n);
    assert_int_equal(n, 1);
    assert_string_equal(list[0]->key, "lock:x:3");
    free(list);
    assert_int_equal(tick(set, 6000, keys, 1, false, &ev), 0);
    list = alertset_resolved_since(set, NOW + 3000, &n);
    assert_int_equal(n, 1);
    assert_string_equal(list[0]->key, "lock:x:2");
    free(list);
    list = alertset_resolved_since(set, NOW, &n);
    assert_int_equal(n, 2);
    free(list);
    /* x:3 fires again: no longer a resolution to say */
    assert_int_equal(tick(set, 7000, (const char *[]){ "lock:x:1", "lock:x:3" }, 2, false,
                          &ev), 1);
    list = alertset_resolved_since(set, 0, &n);
    assert_int_equal(n, 1);
    assert_string_equal(list[0]->key, "lock:x:2");
    free(list);
    alertset_free(set);
}

static void
cap_suppresses_and_counts(void **state)
{
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    size_t i, nev, firing[ALERT_NAMES], sup;
    char key[32];

    (void)state;
    alertset_begin(set, NOW, MONO);
    for (i = 0; i < ALERTSET_FIRING_MAX + 5; i++) {
        struct alert_labels l;

        snprintf(key, sizeof(key), "lock:x:%zu", i);
        l = leak(key);
        if (i < ALERTSET_FIRING_MAX)
            assert_non_null(alertset_observe(set, &l));
        else
            assert_null(alertset_observe(set, &l));
    }
    alertset_end(set, HOUR, false, &ev, &nev);
    assert_int_equal(nev, ALERTSET_FIRING_MAX);
    alertset_counts(set, firing, &sup);
    assert_int_equal(firing[ALERT_LOCK_LEAKED], ALERTSET_FIRING_MAX);
    assert_int_equal(sup, 5);
    /* all resolve; then there is room again */
    alertset_begin(set, NOW + 1000, MONO + 1000);
    alertset_end(set, HOUR, false, &ev, &nev);
    assert_int_equal(nev, ALERTSET_FIRING_MAX);
    alertset_begin(set, NOW + 2000, MONO + 2000);
    {
        struct alert_labels l = leak("lock:new");

        assert_non_null(alertset_observe(set, &l));
    }
    alertset_end(set, HOUR, false, &ev, &nev);
    alertset_counts(set, firing, &sup);
    assert_int_equal(firing[ALERT_LOCK_LEAKED], 1);
    assert_int_equal(sup, 0);
    alertset_free(set);
}

static void
refresh_reposts(void **state)
{
    struct alertset *set = alertset_new();
    const char *both[] = { "lock:x:1", "lock:x:2" };
    const struct alert_event *ev;
    size_t nev, i, refresh = 0, resolved = 0;

    (void)state;
    assert_int_equal(tick(set, 0, both, 2, true, &ev), 2);
    /* x:2 resolves before the minute is up */
    nev = tick(set, 30000, both, 1, true, &ev);
    assert_int_equal(nev, 1);
    /* a minute on: both re-posted, x:1 firing, x:2 as resolved */
    nev = tick(set, ALERTSET_REFRESH_MS, both, 1, true, &ev);
    for (i = 0; i < nev; i++) {
        assert_int_equal(ev[i].kind, EV_REFRESH);
        refresh++;
        resolved += ev[i].alert->state == ALERT_RESOLVED;
    }
    assert_int_equal(refresh, 2);
    assert_int_equal(resolved, 1);
    /* not again before the next minute; never without refresh */
    assert_int_equal(tick(set, ALERTSET_REFRESH_MS + 1000, both, 1, true, &ev), 0);
    assert_int_equal(tick(set, 3 * ALERTSET_REFRESH_MS, both, 1, false, &ev), 0);
    alertset_free(set);
}

/* repeat_interval a minute, as the refresh: both fall on the same ticks for
 * good, and the repeat (which Alertmanager does not get) must not take the
 * refresh's place, or Alertmanager would see the alert expire while it fires */
static void
refresh_beside_a_repeat(void **state)
{
    struct alertset *set = alertset_new();
    const char *one[] = { "lock:x:1" };
    const struct alert_event *ev;
    size_t nev, i, k, repeat, refresh;

    (void)state;
    alertset_begin(set, NOW, MONO);
    {
        struct alert_labels l = leak(one[0]);

        assert_non_null(alertset_observe(set, &l));
    }
    assert_int_equal(alertset_end(set, ALERTSET_REFRESH_MS, true, &ev, &nev), 0);
    assert_int_equal(nev, 1);
    for (k = 1; k <= 3; k++) {
        struct alert_labels l = leak(one[0]);
        int64_t t = (int64_t)k * ALERTSET_REFRESH_MS;

        alertset_begin(set, NOW + t, MONO + t);
        assert_non_null(alertset_observe(set, &l));
        assert_int_equal(alertset_end(set, ALERTSET_REFRESH_MS, true, &ev, &nev), 0);
        repeat = refresh = 0;
        for (i = 0; i < nev; i++) {
            repeat += ev[i].kind == EV_REPEAT;
            refresh += ev[i].kind == EV_REFRESH;
        }
        assert_int_equal(repeat, 1);
        assert_int_equal(refresh, 1);
    }
    alertset_free(set);
}

static void
annotate_copies(void **state)
{
    struct alertset *set = alertset_new();
    struct alert_labels l = leak("lock:x:1");
    struct alert *a;
    char text[64];

    (void)state;
    alertset_begin(set, NOW, MONO);
    a = alertset_observe(set, &l);
    assert_string_equal(a->summary, "");
    snprintf(text, sizeof(text), "summary one");
    assert_int_equal(alert_annotate(a, text, "desc"), 0);
    text[0] = 'X';
    assert_string_equal(a->summary, "summary one");
    assert_string_equal(a->description, "desc");
    /* the same instance when observed twice in a tick */
    assert_ptr_equal(alertset_observe(set, &l), a);
    alertset_free(set);
}

/* One tick observing the target's LockLostAtFailover, told of occurrence id. */
static size_t
tick_lost(struct alertset *set, int64_t t, int64_t id, bool refresh,
          const struct alert_event **ev)
{
    struct alert_labels l = { ALERT_LOCK_LOST_AT_FAILOVER, "main", NULL, NULL, NULL, NULL };
    struct alert *a;
    size_t nev;

    alertset_begin(set, NOW + t, MONO + t);
    if (id != 0) {
        assert_non_null(a = alertset_observe(set, &l));
        alertset_occurred(set, a, id);
    }
    assert_int_equal(alertset_end(set, HOUR, refresh, ev, &nev), 0);
    return nev;
}

/* An alert about discrete events: another event while it fires is a new
 * episode at once (EV_FIRING, a new startsAt, the same fingerprint), not
 * a repeat at repeat_interval; the same event is nothing new. */
static void
another_occurrence_fires_again(void **state)
{
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    size_t nev, firing[ALERT_NAMES], sup;
    uint64_t fp;

    (void)state;
    nev = tick_lost(set, 0, 111, true, &ev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_FIRING);
    assert_int_equal(ev[0].alert->starts_ms, NOW);
    fp = ev[0].alert->fp;
    assert_int_equal(tick_lost(set, 1000, 111, false, &ev), 0);
    /* another event, well within repeat_interval: at once */
    nev = tick_lost(set, 14000, 222, false, &ev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_FIRING);
    assert_int_equal(ev[0].alert->fp, fp);
    assert_int_equal(ev[0].alert->starts_ms, NOW + 14000);
    assert_int_equal(ev[0].alert->occurrence, 222);
    alertset_counts(set, firing, &sup);
    assert_int_equal(firing[ALERT_LOCK_LOST_AT_FAILOVER], 1);    /* one instance */
    assert_non_null(alertset_at(set, 0));
    assert_null(alertset_at(set, 1));
    /* then nothing until repeat_interval after that notice */
    assert_int_equal(tick_lost(set, 15000, 222, false, &ev), 0);
    assert_int_equal(tick_lost(set, 14000 + HOUR - 1, 222, false, &ev), 0);
    nev = tick_lost(set, 14000 + HOUR, 222, false, &ev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_REPEAT);
    assert_int_equal(ev[0].alert->starts_ms, NOW + 14000);
    /* an Alertmanager refresh in the tick of the new event is not doubled */
    nev = tick_lost(set, 14000 + HOUR + ALERTSET_REFRESH_MS, 333, true, &ev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_FIRING);
    /* not observed: resolved */
    nev = tick_lost(set, 14000 + HOUR + ALERTSET_REFRESH_MS + 1000, 0, false, &ev);
    assert_int_equal(nev, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    /* firing again, told of two events before its first notice: one
     * EV_FIRING, about the newer */
    alertset_begin(set, NOW + 2 * HOUR, MONO + 2 * HOUR);
    {
        struct alert_labels l = { ALERT_LOCK_LOST_AT_FAILOVER, "main", NULL, NULL, NULL,
                                  NULL };
        struct alert *a = alertset_observe(set, &l);

        assert_non_null(a);
        alertset_occurred(set, a, 444);
        alertset_occurred(set, a, 555);
        assert_int_equal(alertset_end(set, HOUR, false, &ev, &nev), 0);
        assert_int_equal(nev, 1);
        assert_int_equal(ev[0].kind, EV_FIRING);
        assert_int_equal(ev[0].alert->starts_ms, NOW + 2 * HOUR);
        assert_int_equal(ev[0].alert->occurrence, 555);
    }
    alertset_free(set);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fingerprint_is_alertmanagers),
        cmocka_unit_test(lifecycle),
        cmocka_unit_test(keep_target),
        cmocka_unit_test(unnotified_since),
        cmocka_unit_test(resolved_since),
        cmocka_unit_test(cap_suppresses_and_counts),
        cmocka_unit_test(refresh_reposts),
        cmocka_unit_test(refresh_beside_a_repeat),
        cmocka_unit_test(annotate_copies),
        cmocka_unit_test(another_occurrence_fires_again),
    };

    return cmocka_run_group_tests_name("alertset", tests, NULL, NULL);
}
