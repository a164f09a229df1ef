/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verdict.c - lockctl's verdict on a lock (cli/verdict.c) and the
 * agent data it merges (cli/agent.c's pure half): the agent's times used
 * only for the holder they were measured for, leaked from the agent's
 * no-TTL-since time where IDLETIME says "young", the fallback's lower
 * bounds and leak_unknown locks, --state leaked listing those, the
 * worst-first order, the API's JSON taken into the lookup table (binary
 * keys through key_escaped, cut keys and old agents skipped), the agent's
 * age for release --if-older-than (that holder alone, from a fresh scan),
 * and the agent URL from [agent] listen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/lockctl.h"
#include "collectors/locks/snapshot.h"
#include "collectors/release/release.h"

#define NOW     1800000000000LL
#define GRACE   30000
#define HOLD    300000

static const struct lockstate_rules rules = {
    .leak_grace_ms = GRACE,
    .max_hold_ms = HOLD,
    .max_reentrancy = 16,
};

/* A plain lock lockctl read: holder tok, PTTL pttl, IDLETIME idle_s. */
static struct cli_lock
read_lock(const char *tok, long long pttl, long long idle_s)
{
    struct cli_lock l;

    memset(&l, 0, sizeof(l));
    l.type = RAW_STRING;
    l.pttl_ms = pttl;
    l.idle_s = idle_s;
    l.view.nholders = 1;
    l.view.holders_total = 1;
    l.view.max_count = 1;
    l.view.thread = -1;
    l.view.holders[0].idlen = strlen(tok);
    memcpy(l.view.holders[0].id, tok, strlen(tok));
    l.view.holders[0].count = 1;
    return l;
}

static struct agent_lock
agent_says(const char *tok, int64_t first_seen, int64_t nottl_since)
{
    struct agent_lock a;

    memset(&a, 0, sizeof(a));
    a.holder = (char *)tok;
    a.holderlen = tok ? strlen(tok) : 0;
    a.nholders = tok ? 1 : 0;
    a.first_seen_ms = first_seen;
    a.age_ms = first_seen > 0 && first_seen < NOW ? NOW - first_seen : -1;
    a.nottl_since_ms = nottl_since;
    a.unbroken_ms = a.age_ms;   /* never saw its lease set again */
    a.left_ms = -1;             /* no TTL */
    return a;
}

/* The case: the agent's scans reset IDLETIME, the agent knows. */
static void
test_agent_times_make_the_leak(void **state)
{
    struct cli_lock l = read_lock("tok", -1, 0);
    struct agent_lock a = agent_says("tok", NOW - 600000, NOW - 600000);

    (void)state;
    assert_false(verdict_judge(&rules, &l, NULL, NOW));
    assert_false(l.states & LOCK_LEAKED);
    assert_true(l.leak_unknown);
    assert_true(l.age_lower_bound);
    assert_string_equal(l.age_source, "idletime");

    assert_true(verdict_judge(&rules, &l, &a, NOW));
    assert_true(l.states & LOCK_LEAKED);
    assert_true(l.states & LOCK_LONG);          /* ten minutes > max_hold */
    assert_false(l.leak_unknown);
    assert_false(l.age_lower_bound);
    assert_string_equal(l.age_source, "agent");
    assert_int_equal(l.age_ms, 600000);
    assert_int_equal(l.nottl_ms, 600000);
    assert_int_equal(l.first_seen_ms, NOW - 600000);
}

/* No-TTL-since is its own time: held long, without a TTL only lately. */
static void
test_nottl_since_not_first_seen(void **state)
{
    struct cli_lock l = read_lock("tok", -1, 0);
    struct agent_lock a = agent_says("tok", NOW - 600000, NOW - GRACE + 1);

    (void)state;
    verdict_judge(&rules, &l, &a, NOW);
    assert_false(l.states & LOCK_LEAKED);
    assert_false(l.leak_unknown);               /* known: not leaked yet */
    a.nottl_since_ms = NOW - GRACE;
    verdict_judge(&rules, &l, &a, NOW);
    assert_true(l.states & LOCK_LEAKED);        /* at the threshold, as the agent */
}

/* The agent saw a TTL; now there is none: since when, nobody knows. */
static void
test_lost_ttl_since_the_scan(void **state)
{
    struct cli_lock l = read_lock("tok", -1, 100);
    struct agent_lock a = agent_says("tok", NOW - 5000, 0);

    (void)state;
    verdict_judge(&rules, &l, &a, NOW);
    assert_string_equal(l.age_source, "agent");
    assert_false(l.states & LOCK_LEAKED);
    assert_true(l.leak_unknown);
    assert_int_equal(l.nottl_ms, -1);
}

/* Another holder now: the agent's times are for the old one. */
static void
test_other_holder_falls_back(void **state)
{
    struct cli_lock l = read_lock("tok-new", 10000, 3);
    struct agent_lock a = agent_says("tok-old", NOW - 900000, 0), none = agent_says(NULL, 1, 0);

    (void)state;
    assert_false(verdict_same_holder(&l, &a));
    assert_false(verdict_judge(&rules, &l, &a, NOW));
    assert_string_equal(l.age_source, "idletime");
    assert_int_equal(l.age_ms, 2000);           /* IDLETIME 3 s: a second less is sure */
    assert_false(l.states & LOCK_LONG);
    assert_false(verdict_same_holder(&l, &none));
    l.view.nholders = 0;                        /* a format that names nobody */
    assert_true(verdict_same_holder(&l, &none));
    assert_false(verdict_same_holder(&l, &a));
}

/* A holder longer than lockctl and the agent keep: both cut it alike, and
 * the agent's tracker knows it by the kept bytes, so those equal are the
 * holder it saw (its leak is lockctl's too); cut on one side only is not. */
static void
test_cut_holder_is_the_agents(void **state)
{
    char kept[HOLDER_ID_MAX];
    struct cli_lock l;
    struct agent_lock a;

    (void)state;
    memset(kept, 'h', HOLDER_ID_MAX - 1);
    kept[HOLDER_ID_MAX - 1] = '\0';
    l = read_lock(kept, -1, 0);
    l.view.holders[0].id_truncated = true;
    a = agent_says(kept, NOW - 600000, NOW - 600000);
    assert_false(verdict_same_holder(&l, &a));  /* the agent's id whole: another */
    a.holder_cut = true;
    assert_true(verdict_same_holder(&l, &a));
    assert_true(verdict_judge(&rules, &l, &a, NOW));
    assert_true(l.states & LOCK_LEAKED);
    assert_false(l.leak_unknown);
    assert_string_equal(l.age_source, "agent");
    l.view.holders[0].id_truncated = false;     /* lockctl's whole, the agent's cut */
    assert_false(verdict_same_holder(&l, &a));
    l.view.holders[0].id_truncated = true;
    l.view.holders[0].id[5] = 'x';              /* cut alike, other bytes */
    assert_false(verdict_same_holder(&l, &a));
    /* the guard's age stays whole ids only, as the agent's own release */
    assert_int_equal(verdict_agent_age(&a, kept, HOLDER_ID_MAX - 1), 0);
}

/* release --if-older-than: the agent's age counts for the holder it was
 * measured for, as that lock's only holder, from a fresh scan. */
static void
test_agent_age_for_the_guard(void **state)
{
    struct agent_lock a = agent_says("tok", NOW - 35000, 0);

    (void)state;
    assert_int_equal(verdict_agent_age(&a, "tok", 3), 35000);
    assert_int_equal(verdict_agent_age(NULL, "tok", 3), 0);
    assert_int_equal(verdict_agent_age(&a, "tok-B", 5), 0);    /* another holder */
    assert_int_equal(verdict_agent_age(&a, "to", 2), 0);
    a.nholders = 2;             /* shared: its time is the oldest holder's */
    assert_int_equal(verdict_agent_age(&a, "tok", 3), 0);
    a.nholders = 1;
    a.holder_cut = true;        /* the agent kept only the first bytes */
    assert_int_equal(verdict_agent_age(&a, "tok", 3), 0);
    a.holder_cut = false;
    a.stale = true;             /* its last good scan, of a target it cannot scan now */
    assert_int_equal(verdict_agent_age(&a, "tok", 3), 0);
    a.stale = false;
    a.age_ms = -1;              /* an agent that gives no age_seconds */
    a.unbroken_ms = -1;
    assert_int_equal(verdict_agent_age(&a, "tok", 3), 0);
    a = agent_says("tok", NOW - 35000, 0);
    a.unbroken_ms = 4000;       /* its lease set again 4 s ago: only that counts */
    assert_int_equal(verdict_agent_age(&a, "tok", 3), 4000);
    a.unbroken_ms = -1;         /* an agent that proves nothing of it */
    assert_int_equal(verdict_agent_age(&a, "tok", 3), 0);
    a.unbroken_ms = 35000;
    a.left_ms = -2;             /* nor says its lease */
    assert_int_equal(verdict_agent_age(&a, "tok", 3), 0);
    /* the lease read later is the agent's, run down, within a second either
     * way; longer (renewed, or taken again) or shorter (taken again with a
     * shorter lease: a red-team) is another */
    a.left_ms = 20000;
    a.got_mono = 1000;
    assert_true(verdict_agent_lease_is(&a, 17000, 4000));
    assert_true(verdict_agent_lease_is(&a, 17000 + RELEASE_LEASE_SLACK_MS, 4000));
    assert_false(verdict_agent_lease_is(&a, 17000 + RELEASE_LEASE_SLACK_MS + 1, 4000));
    assert_false(verdict_agent_lease_is(&a, 12000, 4000));
    assert_false(verdict_agent_lease_is(&a, -1, 4000));
    a.left_ms = -1;             /* no TTL: it must still have none */
    assert_true(verdict_agent_lease_is(&a, -1, 4000));
    assert_false(verdict_agent_lease_is(&a, 30000, 4000));
    a = agent_says(NULL, NOW - 35000, 0);   /* a format that names nobody */
    assert_int_equal(verdict_agent_age(&a, "tok", 3), 0);
}

/* The prompt's "age ... (from ...)": where the age comes from. */
static void
test_age_from(void **state)
{
    struct cli_lock l = read_lock("tok", -1, 5);
    struct agent_lock a = agent_says("tok", NOW - 24000, NOW - 24000);

    (void)state;
    verdict_judge(&rules, &l, NULL, NOW);
    assert_string_equal(verdict_age_from(&l), "OBJECT IDLETIME, a lower bound");
    verdict_judge(&rules, &l, &a, NOW);
    assert_string_equal(verdict_age_from(&l), "the agent");
    l.view.acquired_ms = NOW - 10000;
    verdict_judge(&rules, &l, NULL, NOW);
    assert_string_equal(verdict_age_from(&l), "the acquisition time in the value");
    l.view.acquired_ms = 0;
    l.idle_s = -1;
    verdict_judge(&rules, &l, NULL, NOW);
    assert_string_equal(verdict_age_from(&l), "nothing: unknown");
}

/* Fallback: an acquisition time is an age, IDLETIME only a lower bound. */
static void
test_fallback_bounds(void **state)
{
    struct cli_lock l = read_lock("tok", -1, 5);
    char buf[32];

    (void)state;
    verdict_judge(&rules, &l, NULL, NOW);
    verdict_age(&l, buf, sizeof(buf));
    assert_string_equal(buf, ">= 4s");           /* IDLETIME 5 s, whole seconds */
    assert_string_equal(verdict_state(&l), "leaked?");
    l.idle_s = 40;                              /* a lower bound past grace: leaked */
    verdict_judge(&rules, &l, NULL, NOW);
    assert_true(l.states & LOCK_LEAKED);
    assert_false(l.leak_unknown);
    assert_string_equal(verdict_state(&l), "leaked");
    l.idle_s = 5;
    l.view.acquired_ms = NOW - 10000;           /* the format says when */
    verdict_judge(&rules, &l, NULL, NOW);
    assert_string_equal(l.age_source, "acquired");
    assert_false(l.age_lower_bound);
    assert_false(l.leak_unknown);               /* 10 s, known: not a leak */
    verdict_age(&l, buf, sizeof(buf));
    assert_string_equal(buf, "10s");
    l.pttl_ms = 5000;                           /* a TTL: never leak_unknown */
    l.view.acquired_ms = 0;
    verdict_judge(&rules, &l, NULL, NOW);
    assert_false(l.leak_unknown);
    assert_string_equal(verdict_state(&l), "held");
}

static void
test_selected(void **state)
{
    struct cli_lock l = read_lock("tok", -1, 0);
    uint8_t leaked, all, lng;

    (void)state;
    assert_int_equal(lockstate_mask("leaked", &leaked), 0);
    assert_int_equal(lockstate_mask("all", &all), 0);
    assert_int_equal(lockstate_mask("long", &lng), 0);
    verdict_judge(&rules, &l, NULL, NOW);
    assert_true(verdict_selected(&l, leaked));  /* unknown leaks are listed */
    assert_true(verdict_selected(&l, all));
    assert_false(verdict_selected(&l, lng));
    l.pttl_ms = 1000;
    verdict_judge(&rules, &l, NULL, NOW);
    assert_false(verdict_selected(&l, leaked));
}

/* leaked, long, reentrant_high, then held (leak_unknown first, by age). */
static void
test_worst_first(void **state)
{
    struct cli_lock leaked = read_lock("a", -1, 40), lng = read_lock("b", 1000, 400),
        reent = read_lock("c", 1000, 1), unknown = read_lock("d", -1, 1),
        old = read_lock("e", 1000, 200), young = read_lock("f", 1000, 2);
    struct cli_lock *order[] = { &leaked, &lng, &reent, &unknown, &old, &young };
    size_t n = sizeof(order) / sizeof(order[0]);

    (void)state;
    reent.view.max_count = 20;
    for (size_t i = 0; i < n; i++)
        verdict_judge(&rules, order[i], NULL, NOW);
    assert_true(reent.states & LOCK_REENTRANT_HIGH);
    assert_true(unknown.leak_unknown);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (i < j)
                assert_true(verdict_worse(order[i], order[j]));
            else
                assert_false(verdict_worse(order[i], order[j]));
}

static const char api_list[] =
    "{\"count\":3,\"total\":3,\"complete\":true,\"next_offset\":3,\"locks\":["
    "{\"target\":\"main\",\"key\":\"lock:a\\ufffd\",\"key_escaped\":\"lock:a%00b\","
    " \"holders\":[{\"id\":\"x\",\"id_escaped\":\"tok%20A\",\"count\":1}],"
    " \"holders_total\":1,\"age_seconds\":1000.25,\"unbroken_since_ms\":1799999900000,"
    " \"expires_at_ms\":1800000010250,"
    " \"first_seen_ms\":1799999000000,\"nottl_since_ms\":1799999500000},"
    "{\"key\":\"lock:b\",\"key_escaped\":\"lock:b\",\"holders\":[],"
    " \"first_seen_ms\":1799999900000,\"nottl_since_ms\":null},"
    "{\"key\":\"lock:r\",\"key_escaped\":\"lock:r\",\"holders_total\":3,"
    " \"holders\":[{\"id_escaped\":\"r1\",\"id_truncated\":true},{\"id_escaped\":\"r2\"}],"
    " \"first_seen_ms\":1799999000000,\"age_seconds\":-3},"
    "{\"key\":\"lock:cut\",\"key_escaped\":\"lock:cut\",\"key_truncated\":true,"
    " \"holders\":[],\"first_seen_ms\":1},"
    "{\"key\":\"lock:old\",\"key_escaped\":\"lock:old\",\"holders\":[]}]}";

static void
test_agent_json(void **state)
{
    struct agent_view av;
    const struct agent_lock *a;
    json_error_t je;
    json_t *doc = json_loads(api_list, 0, &je), *bad = json_loads("[1]", 0, &je);
    char err[128];

    (void)state;
    assert_non_null(doc);
    memset(&av, 0, sizeof(av));
    assert_int_equal(agent_add_json(&av, doc, err, sizeof(err)), 0);
    assert_int_equal(av.nlocks, 3);             /* the cut key and the old agent's: skipped */
    a = agent_find(&av, "lock:a\0b", 8);
    assert_non_null(a);
    assert_int_equal(a->holderlen, 5);
    assert_memory_equal(a->holder, "tok A", 5);
    assert_false(a->holder_cut);
    assert_int_equal(a->nholders, 1);
    assert_int_equal(a->age_ms, 1000250);
    assert_int_equal(a->first_seen_ms, 1799999000000LL);
    assert_int_equal(a->nottl_since_ms, 1799999500000LL);
    /* answered at first seen + age: unbroken the last 100.25 s, 10 s left */
    assert_int_equal(a->unbroken_ms, 100250);
    assert_int_equal(a->left_ms, 10000);
    assert_int_equal(verdict_agent_age(a, "tok A", 5), 100250);
    a = agent_find(&av, "lock:b", 6);
    assert_non_null(a);
    assert_null(a->holder);
    assert_int_equal(a->nholders, 0);
    assert_int_equal(a->age_ms, -1);            /* no age_seconds */
    assert_int_equal(a->nottl_since_ms, 0);
    a = agent_find(&av, "lock:r", 6);
    assert_non_null(a);
    assert_true(a->holder_cut);
    assert_int_equal(a->nholders, 3);           /* holders_total, not the array's */
    assert_int_equal(a->age_ms, -1);            /* a negative age is none */
    assert_int_equal(verdict_agent_age(a, "r1", 2), 0);
    assert_null(agent_find(&av, "lock:a", 6));
    assert_null(agent_find(&av, "lock:cut", 8));
    assert_int_equal(agent_add_json(&av, doc, err, sizeof(err)), 0);
    assert_int_equal(av.nlocks, 3);             /* a second page repeating them */
    assert_int_equal(agent_add_json(&av, bad, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not a JSON object"));
    agent_view_release(&av);
    json_decref(doc);
    json_decref(bad);
}

/* Many locks: the index grows and still finds every one. */
static void
test_agent_index_grows(void **state)
{
    struct agent_view av;
    json_t *doc = json_object(), *arr = json_array();
    char key[32], err[128];

    (void)state;
    memset(&av, 0, sizeof(av));
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof(key), "lock:%d", i);
        json_array_append_new(arr, json_pack("{s:s,s:[],s:I}", "key_escaped", key, "holders",
                                             "first_seen_ms", (json_int_t)(i + 1)));
    }
    json_object_set_new(doc, "locks", arr);
    assert_int_equal(agent_add_json(&av, doc, err, sizeof(err)), 0);
    assert_int_equal(av.nlocks, 3000);
    for (int i = 0; i < 3000; i++) {
        const struct agent_lock *a;

        snprintf(key, sizeof(key), "lock:%d", i);
        a = agent_find(&av, key, strlen(key));
        assert_non_null(a);
        assert_int_equal(a->first_seen_ms, i + 1);
    }
    agent_view_release(&av);
    json_decref(doc);
}

static void
test_base_url(void **state)
{
    struct config cfg;
    struct lockctl lc;
    char url[320], err[256];

    (void)state;
    memset(&cfg, 0, sizeof(cfg));
    memset(&lc, 0, sizeof(lc));
    lc.cfg = &cfg;
    cfg.listen_port = 9717;
    snprintf(cfg.listen_host, sizeof(cfg.listen_host), "%s", "0.0.0.0");
    assert_int_equal(agent_base_url(&lc, url, sizeof(url), err, sizeof(err)), 0);
    assert_string_equal(url, "http://127.0.0.1:9717");
    snprintf(cfg.listen_host, sizeof(cfg.listen_host), "%s", "::");
    agent_base_url(&lc, url, sizeof(url), err, sizeof(err));
    assert_string_equal(url, "http://127.0.0.1:9717");
    snprintf(cfg.listen_host, sizeof(cfg.listen_host), "%s", "::1");
    agent_base_url(&lc, url, sizeof(url), err, sizeof(err));
    assert_string_equal(url, "http://[::1]:9717");
    snprintf(cfg.listen_host, sizeof(cfg.listen_host), "%s", "10.0.0.7");
    agent_base_url(&lc, url, sizeof(url), err, sizeof(err));
    assert_string_equal(url, "http://10.0.0.7:9717");
    lc.agent = "http://agent.example:9000/";
    assert_int_equal(agent_base_url(&lc, url, sizeof(url), err, sizeof(err)), 0);
    assert_string_equal(url, "http://agent.example:9000");
    lc.agent = "off";
    assert_int_equal(agent_base_url(&lc, url, sizeof(url), err, sizeof(err)), 1);
    lc.agent = "https://x:1";
    assert_int_equal(agent_base_url(&lc, url, sizeof(url), err, sizeof(err)), -1);
    lc.agent = "http://user@x:1";               /* no credentials to the agent */
    assert_int_equal(agent_base_url(&lc, url, sizeof(url), err, sizeof(err)), -1);
    lc.agent = "http://x:1/api";
    assert_int_equal(agent_base_url(&lc, url, sizeof(url), err, sizeof(err)), -1);
    assert_non_null(strstr(err, "--agent must be"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_times_make_the_leak),
        cmocka_unit_test(test_nottl_since_not_first_seen),
        cmocka_unit_test(test_lost_ttl_since_the_scan),
        cmocka_unit_test(test_other_holder_falls_back),
        cmocka_unit_test(test_cut_holder_is_the_agents),
        cmocka_unit_test(test_agent_age_for_the_guard),
        cmocka_unit_test(test_age_from),
        cmocka_unit_test(test_fallback_bounds),
        cmocka_unit_test(test_selected),
        cmocka_unit_test(test_worst_first),
        cmocka_unit_test(test_agent_json),
        cmocka_unit_test(test_agent_index_grows),
        cmocka_unit_test(test_base_url),
    };

    return cmocka_run_group_tests_name("verdict", tests, NULL, NULL);
}
