/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_alerts.c - the alerts handle when memory runs out: alerts_new,
 * alerts_configure and alerts_tick with the first, the second, ... the
 * last of their allocations failing, until a run makes them all.  Each
 * run must return NULL / -1 (or, for a tick, carry on) without crashing,
 * and free what it made: the sanitizer pass (LSan) fails the binary on a
 * leak.
 *
 * The failures are injected by the linker (tests/unit/failalloc.h): the
 * production code is tested as built; libraries' own allocations (libcurl,
 * jansson) are not wrapped, which is right: their failure paths are
 * theirs.  Only the test's thread counts, so the notifier thread's
 * allocations never shift the count.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "alerts/alerts.h"
#include "common/log.h"
#include "tests/unit/failalloc.h"

#define NOW 1800000000000LL

static struct webhook_conf hooks[] = {
    { "oncall", "http://127.0.0.1:9/hook", SINK_GENERIC, NULL, "s3cret", { 1000, 100 }, false },
    { "chat", "http://127.0.0.1:9/slack", SINK_SLACK, NULL, NULL, { 1000, 100 }, false },
    { "am", "http://127.0.0.1:9", SINK_ALERTMANAGER, NULL, NULL, { 1000, 100 }, true },
};

static void
conf(struct config *cfg, size_t nhooks)
{
    memset(cfg, 0, sizeof(*cfg));
    strcpy(cfg->listen_host, "127.0.0.1");
    cfg->listen_port = 9717;
    cfg->rules.judge.leak_grace_ms = 30000;
    cfg->rules.judge.max_hold_ms = 300000;
    cfg->rules.judge.max_reentrancy = 16;
    cfg->rules.wait_p99_ms = 1000;
    cfg->rules.wait_window_ms = 60000;
    cfg->rules.wait_min_samples = 20;
    cfg->rules.repeat_interval_ms = 3600000;
    cfg->webhooks = hooks;
    cfg->nwebhooks = nhooks;
}

static size_t
nsinks(struct alerts *a)
{
    struct alerts_stats st;
    size_t n;

    assert_int_equal(alerts_stats(a, &st), 0);
    n = st.nsinks;
    alerts_stats_release(&st);
    return n;
}

static void
new_fails_cleanly_at_each_allocation(void **state)
{
    struct config cfg;
    struct alerts *a;
    unsigned long k;

    (void)state;
    conf(&cfg, 3);
    for (k = 1;; k++) {
        failalloc_arm(k, NULL);
        a = alerts_new(&cfg);
        if (!failalloc_disarm())
            break;
        assert_null(a);
    }
    /* the handle, set, notifier and its sinks, and per sink a name, url
     * and key: a dozen allocations at least, each failed once above */
    assert_true(k > 12);
    assert_non_null(a);
    assert_int_equal(nsinks(a), 3);
    alerts_free(a);
}

static void
configure_fails_cleanly_and_keeps_the_sinks(void **state)
{
    struct config one, three;
    struct alerts *a;
    unsigned long k;
    int rc;

    (void)state;
    conf(&one, 1);
    conf(&three, 3);
    assert_non_null(a = alerts_new(&one));
    for (k = 1;; k++) {
        failalloc_arm(k, NULL);
        rc = alerts_configure(a, &three);
        if (!failalloc_disarm())
            break;
        assert_int_equal(rc, -1);
        assert_int_equal(nsinks(a), 1);
    }
    assert_true(k > 8);
    assert_int_equal(rc, 0);
    assert_int_equal(nsinks(a), 3);
    alerts_free(a);
}

static void
tick_survives_each_allocation_failure(void **state)
{
    struct config cfg;
    struct alerts *a;
    struct snapshot *s = snapshot_new("main"), *down = snapshot_new("down");
    struct rules_target t[3];
    unsigned long k;

    (void)state;
    conf(&cfg, 0);
    assert_non_null(a = alerts_new(&cfg));
    s->ok = true;
    down->ok = false;
    strcpy(down->err, "connect 127.0.0.1:1: Connection refused");
    for (k = 1;; k++) {
        /* a new scan each time, so the targets are judged every tick */
        s->finished_ms = (int64_t)k;
        down->finished_ms = (int64_t)k;
        t[0] = (struct rules_target){ "main", s, false };
        t[1] = (struct rules_target){ "down", down, false };
        t[2] = (struct rules_target){ "new", NULL, false };
        failalloc_arm(k, NULL);
        alerts_tick(a, t, 3, NULL, 0, NULL, NULL, NULL, NOW + (int64_t)k * 1000);
        if (!failalloc_disarm())
            break;
    }
    assert_true(k > 3);
    alerts_free(a);
    snapshot_unref(s);
    snapshot_unref(down);
}

/* A snapshot of target main, new (finished at fin), with n leaked locks
 * and, when long_held, one held too long. */
static struct snapshot *
main_snap(size_t n, bool long_held, int64_t fin)
{
    static struct snap_holder h = { "tok", 3, 0, 1 };
    struct snapshot *s = snapshot_new("main");
    char key[32];
    size_t i;

    assert_non_null(s);
    s->ok = true;
    s->finished_ms = fin;
    s->classes = calloc(1, sizeof(*s->classes));
    s->classes[0] = strdup("other");
    s->nclasses = 1;
    for (i = 0; i < n + long_held; i++) {
        struct snap_lock l;

        memset(&l, 0, sizeof(l));
        snprintf(key, sizeof(key), "lock:%zu", i);
        l.key = key;
        l.key_len = (uint32_t)strlen(key);
        l.states = LOCK_HELD | (i < n ? LOCK_LEAKED : LOCK_LONG);
        l.pttl_ms = i < n ? -1 : 60000;
        l.first_seen_ms = NOW - 3600000;
        l.holders = &h;
        l.nholders = 1;
        l.holders_total = 1;
        l.max_count = 1;
        l.thread = -1;
        assert_int_equal(snapshot_add(s, &l, NOW), 0);
    }
    snapshot_finish(s);
    return s;
}

/* An on-call trial: one evaluation resolved 10 LockLeaked and started a
 * critical alert, and the log told the resolutions one by one and the
 * critical start only as one of "13 more".  Now firing comes before
 * resolved, critical before warning, and the count says which are left. */
static void
log_tells_critical_starts_first(void **state)
{
    struct config cfg;
    struct alerts *a;
    struct snapshot *s = main_snap(12, false, 1), *down = snapshot_new("down");
    struct rules_target t[2];
    char *buf, *first, *second, *resolved, *more;
    FILE *cap = tmpfile();
    int saved = dup(STDERR_FILENO);
    long len;

    (void)state;
    assert_non_null(cap);
    conf(&cfg, 0);
    assert_non_null(a = alerts_new(&cfg));
    down->ok = true;
    down->finished_ms = 1;
    t[0] = (struct rules_target){ "main", s, false };
    t[1] = (struct rules_target){ "down", down, false };
    alerts_tick(a, t, 2, NULL, 0, NULL, NULL, NULL, NOW);
    snapshot_unref(s);
    /* the leaks end, a lock is held too long, target down cannot be scanned */
    s = main_snap(0, true, 2);
    down->ok = false;
    down->finished_ms = 2;
    strcpy(down->err, "connect 127.0.0.1:1: Connection refused");
    t[0] = (struct rules_target){ "main", s, false };
    log_init(1, 0);
    fflush(stderr);
    assert_true(dup2(fileno(cap), STDERR_FILENO) >= 0);
    alerts_tick(a, t, 2, NULL, 0, NULL, NULL, NULL, NOW + 1000);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    len = ftell(cap);
    assert_true(len > 0);
    assert_non_null(buf = calloc(1, (size_t)len + 1));
    rewind(cap);
    assert_int_equal(fread(buf, 1, (size_t)len, cap), (size_t)len);
    fclose(cap);
    first = strstr(buf, "alert firing: LockTargetDown");
    second = strstr(buf, "alert firing: LockHeldTooLong");
    resolved = strstr(buf, "alert resolved: LockLeaked");
    /* the target's alert names no key: logged whatever the count, not one
     * of the ten (a soak: LockTargetDown's end hidden among lease alerts) */
    more = strstr(buf, "alerts: 3 more of single locks started or ended in this evaluation "
                  "(0 firing, 3 resolved)");
    assert_non_null(first);
    assert_non_null(second);
    assert_non_null(resolved);
    assert_non_null(more);
    assert_true(first < second && second < resolved && resolved < more);
    free(buf);
    alerts_free(a);
    snapshot_unref(s);
    snapshot_unref(down);
}

static int
setup(void **state)
{
    (void)state;
    return alerts_global_init();
}

static int
teardown(void **state)
{
    (void)state;
    alerts_global_cleanup();
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_fails_cleanly_at_each_allocation),
        cmocka_unit_test(configure_fails_cleanly_and_keeps_the_sinks),
        cmocka_unit_test(tick_survives_each_allocation_failure),
        cmocka_unit_test(log_tells_critical_starts_first),
    };

    return cmocka_run_group_tests_name("alerts", tests, setup, teardown);
}
