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
#include <string.h>
#include <cmocka.h>

#include "alerts/alerts.h"
#include "tests/unit/failalloc.h"

#define NOW 1800000000000LL

static struct webhook_conf hooks[] = {
    { "oncall", "http://127.0.0.1:9/hook", SINK_GENERIC, NULL, "s3cret", { 1000, 100 } },
    { "chat", "http://127.0.0.1:9/slack", SINK_SLACK, NULL, NULL, { 1000, 100 } },
    { "am", "http://127.0.0.1:9", SINK_ALERTMANAGER, NULL, NULL, { 1000, 100 } },
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
    };

    return cmocka_run_group_tests_name("alerts", tests, setup, teardown);
}
