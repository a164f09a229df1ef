/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_redlock.c - Redlock group comparison: consistent, split, under
 * quorum past its validity, unknown members, caps.  Pure: maps are built
 * by hand as a scan would fill them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/keytext.h"
#include "collectors/locks/redlock.h"

#define T0 1790000000000LL      /* a Unix ms "now" */

static const char *const names[5] = { "r1", "r2", "r3", "r4", "r5" };

struct group {
    struct redlock_map *m[5];
    struct redlock_input in[5];
};

static void
group_init(struct group *g)
{
    size_t i;

    for (i = 0; i < 5; i++) {
        g->m[i] = redlock_map_new();
        assert_non_null(g->m[i]);
        g->in[i].target = names[i];
        g->in[i].map = g->m[i];
    }
}

static void
group_finish(struct group *g)
{
    size_t i;

    for (i = 0; i < 5; i++)
        redlock_map_finish(g->m[i]);
}

static void
group_free(struct group *g)
{
    size_t i;

    for (i = 0; i < 5; i++)
        redlock_map_free(g->m[i]);
}

/* node i holds key with holder h, first seen at first, observed at T0. */
static void
hold(struct group *g, size_t i, const char *key, uint32_t h, int64_t first, int64_t pttl)
{
    assert_int_equal(redlock_map_add(g->m[i], key, strlen(key),
                                     keytext_hash(key, strlen(key)), h, first, T0, pttl), 0);
}

static void
same_token_on_three_is_consistent(void **state)
{
    struct redlock_state *st = redlock_state_new();
    struct redlock_report *r;
    struct group g;

    (void)state;
    group_init(&g);
    hold(&g, 0, "lock:order:1", 7, T0 - 1000, 30000);
    hold(&g, 2, "lock:order:1", 7, T0 - 900, 30000);
    hold(&g, 4, "lock:order:1", 7, T0 - 800, 30000);
    /* and one lock on all five */
    for (size_t i = 0; i < 5; i++)
        hold(&g, i, "lock:order:2", 9, T0 - 100, 30000);
    group_finish(&g);
    r = redlock_compare("orders", g.in, 5, st, T0, 30000);
    assert_non_null(r);
    assert_true(r->judged);
    assert_int_equal(r->quorum, 3);
    assert_int_equal(r->scanned, 5);
    assert_int_equal(r->keys, 2);
    assert_int_equal(r->consistent, 2);
    assert_int_equal(redlock_inconsistent(r), 0);
    assert_int_equal(r->pending, 0);
    assert_int_equal(r->nissues, 0);
    assert_string_equal(r->group, "orders");
    redlock_report_unref(r);
    redlock_state_free(st);
    group_free(&g);
}

static void
two_and_two_is_split(void **state)
{
    struct redlock_state *st = redlock_state_new();
    struct redlock_report *r;
    struct group g;

    (void)state;
    group_init(&g);
    hold(&g, 0, "lock:pay:1", 1, T0 - 5000, -1);
    hold(&g, 1, "lock:pay:1", 1, T0 - 5000, -1);
    hold(&g, 2, "lock:pay:1", 2, T0 - 4000, -1);
    hold(&g, 3, "lock:pay:1", 2, T0 - 4000, -1);
    group_finish(&g);
    r = redlock_compare("pay", g.in, 5, st, T0, 30000);
    assert_non_null(r);
    assert_int_equal(r->split, 1);
    assert_int_equal(redlock_inconsistent(r), 1);
    assert_int_equal(r->nissues, 1);
    assert_int_equal(r->issues[0].kind, REDLOCK_SPLIT);
    assert_string_equal(redlock_kind_str(r->issues[0].kind), "split");
    assert_string_equal(r->issues[0].key, "lock:pay:1");
    assert_int_equal(r->issues[0].holders, 2);
    assert_int_equal(r->issues[0].best, 2);
    assert_int_equal(r->issues[0].held, 4);
    assert_string_equal(r->issues[0].nodes, "r1=A r2=A r3=B r4=B r5=-");
    redlock_report_unref(r);
    redlock_state_free(st);
    group_free(&g);
}

static void
holders_at_different_times_are_not_split(void **state)
{
    struct redlock_state *st = redlock_state_new();
    struct redlock_report *r;
    struct group g;

    (void)state;
    group_init(&g);
    /* r1, r2 were scanned while A held it (expired at T0 - 10000, long
     * before B was first seen); r3..r5 after B took it */
    assert_int_equal(redlock_map_add(g.m[0], "k", 1, 5, 1, T0 - 20000, T0 - 15000, 5000), 0);
    assert_int_equal(redlock_map_add(g.m[1], "k", 1, 5, 1, T0 - 20000, T0 - 15000, 5000), 0);
    hold(&g, 2, "k", 2, T0 - 2000, 10000);
    hold(&g, 3, "k", 2, T0 - 2000, 10000);
    hold(&g, 4, "k", 2, T0 - 2000, 10000);
    group_finish(&g);
    r = redlock_compare("g", g.in, 5, st, T0, 30000);
    assert_non_null(r);
    assert_int_equal(r->split, 0);
    assert_int_equal(r->consistent, 1);
    redlock_report_unref(r);
    redlock_state_free(st);
    group_free(&g);
}

static void
under_quorum_after_validity(void **state)
{
    struct redlock_state *st = redlock_state_new();
    struct redlock_report *r;
    struct group g;

    (void)state;
    group_init(&g);
    hold(&g, 0, "lock:minority", 3, T0 - 100, 2000);
    hold(&g, 1, "lock:minority", 3, T0 - 100, 1500);
    group_finish(&g);
    /* a fresh minority is pending: an acquisition looks the same */
    r = redlock_compare("g", g.in, 5, st, T0, 30000);
    assert_int_equal(r->pending, 1);
    assert_int_equal(r->under_quorum, 0);
    redlock_report_unref(r);
    r = redlock_compare("g", g.in, 5, st, T0 + 1999, 30000);
    assert_int_equal(r->pending, 1);
    redlock_report_unref(r);
    /* past the largest TTL seen when it fell under quorum (2000 ms) */
    r = redlock_compare("g", g.in, 5, st, T0 + 2001, 30000);
    assert_int_equal(r->pending, 0);
    assert_int_equal(r->under_quorum, 1);
    assert_int_equal(redlock_inconsistent(r), 1);
    assert_int_equal(r->nissues, 1);
    assert_int_equal(r->issues[0].kind, REDLOCK_UNDER_QUORUM);
    assert_int_equal(r->issues[0].since_ms, T0);
    assert_int_equal(r->issues[0].held, 2);
    assert_string_equal(r->issues[0].nodes, "r1=A r2=A r3=- r4=- r5=-");
    redlock_report_unref(r);
    group_free(&g);

    /* the key reaches quorum: forgotten, so a later minority starts over */
    group_init(&g);
    hold(&g, 0, "lock:minority", 3, T0 - 100, 2000);
    hold(&g, 1, "lock:minority", 3, T0 - 100, 2000);
    hold(&g, 2, "lock:minority", 3, T0 - 100, 2000);
    group_finish(&g);
    r = redlock_compare("g", g.in, 5, st, T0 + 3000, 30000);
    assert_int_equal(r->consistent, 1);
    redlock_report_unref(r);
    group_free(&g);
    group_init(&g);
    hold(&g, 0, "lock:minority", 3, T0 - 100, 2000);
    group_finish(&g);
    r = redlock_compare("g", g.in, 5, st, T0 + 4000, 30000);
    assert_int_equal(r->pending, 1);
    redlock_report_unref(r);
    /* no TTL anywhere: the no-TTL validity (leak_grace) applies */
    group_free(&g);
    group_init(&g);
    hold(&g, 0, "lock:nottl", 3, T0, -1);
    group_finish(&g);
    redlock_state_free(st);
    st = redlock_state_new();
    r = redlock_compare("g", g.in, 5, st, T0, 30000);
    assert_int_equal(r->pending, 1);
    redlock_report_unref(r);
    r = redlock_compare("g", g.in, 5, st, T0 + 30001, 30000);
    assert_int_equal(r->under_quorum, 1);
    redlock_report_unref(r);
    redlock_state_free(st);
    group_free(&g);
}

static void
unknown_members(void **state)
{
    struct redlock_state *st = redlock_state_new();
    struct redlock_report *r;
    struct group g;
    size_t i;

    (void)state;
    group_init(&g);
    hold(&g, 0, "k", 3, T0, 1000);
    hold(&g, 1, "k", 3, T0, 1000);
    group_finish(&g);
    /* r3, r4 not scanned: they may hold it, so 2 + 2 reaches quorum */
    g.in[2].map = NULL;
    g.in[3].map = NULL;
    r = redlock_compare("g", g.in, 5, st, T0 + 5000, 30000);
    assert_true(r->judged);
    assert_int_equal(r->scanned, 3);
    assert_int_equal(r->consistent, 1);
    redlock_report_unref(r);
    /* fewer than quorum scanned: nothing is judged */
    g.in[4].map = NULL;
    r = redlock_compare("g", g.in, 5, st, T0 + 5000, 30000);
    assert_false(r->judged);
    assert_int_equal(r->keys, 0);
    redlock_report_unref(r);
    /* a cut map (over REDLOCK_MAP_MAX) is unknown for keys it lacks */
    for (i = 0; i < 5; i++)
        g.in[i].map = g.m[i];
    g.m[2]->dropped = 1;
    g.m[3]->dropped = 1;
    r = redlock_compare("g", g.in, 5, st, T0 + 5000, 30000);
    assert_int_equal(r->consistent, 1);
    assert_int_equal(r->under_quorum + r->pending, 0);
    redlock_report_unref(r);
    redlock_state_free(st);
    group_free(&g);
}

static void
map_dedupes_and_caps_issues(void **state)
{
    struct redlock_state *st = redlock_state_new();
    struct redlock_report *r;
    struct group g;
    char key[32];
    size_t i;

    (void)state;
    group_init(&g);
    hold(&g, 0, "dup", 1, T0, -1);
    hold(&g, 0, "dup", 1, T0, -1);
    /* more split keys than the report details: all counted */
    for (i = 0; i < REDLOCK_ISSUES_MAX + 20; i++) {
        snprintf(key, sizeof(key), "lock:s:%zu", i);
        hold(&g, 0, key, 1, T0, -1);
        hold(&g, 1, key, 2, T0, -1);
    }
    group_finish(&g);
    assert_int_equal(g.m[0]->n, REDLOCK_ISSUES_MAX + 20 + 1);
    r = redlock_compare("g", g.in, 5, st, T0, 30000);
    assert_int_equal(r->split, REDLOCK_ISSUES_MAX + 20);
    assert_int_equal(r->nissues, REDLOCK_ISSUES_MAX);
    assert_int_equal(r->keys, REDLOCK_ISSUES_MAX + 21);
    for (i = 0; i < r->nissues; i++)
        assert_int_equal(strncmp(r->issues[i].key, "lock:s:", 7), 0);
    redlock_report_ref(r);
    redlock_report_unref(r);
    redlock_report_unref(r);
    redlock_state_free(st);
    group_free(&g);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_token_on_three_is_consistent),
        cmocka_unit_test(two_and_two_is_split),
        cmocka_unit_test(holders_at_different_times_are_not_split),
        cmocka_unit_test(under_quorum_after_validity),
        cmocka_unit_test(unknown_members),
        cmocka_unit_test(map_dedupes_and_caps_issues),
    };

    return cmocka_run_group_tests_name("redlock", tests, NULL, NULL);
}
