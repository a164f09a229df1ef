/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_snapshot.c - counting every lock, keeping the worst in detail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/locks/snapshot.h"

#define NOW 1800000000000LL

static void
add(struct snapshot *s, const char *key, uint16_t cls, uint8_t states, int64_t age)
{
    struct snap_holder h = { "tok", 3, 0, 1 };
    struct snap_lock l;

    memset(&l, 0, sizeof(l));
    l.key = key;
    l.key_len = (uint32_t)strlen(key);
    l.class_idx = cls;
    l.states = LOCK_HELD | states;
    l.pttl_ms = 1000;
    l.first_seen_ms = NOW - age;
    l.holders = &h;
    l.nholders = 1;
    l.max_count = 1;
    assert_int_equal(snapshot_add(s, &l, NOW), 0);
}

static void
counts_all_keeps_the_worst(void **state)
{
    struct snapshot *s = snapshot_new("t");
    char key[32];
    size_t i;

    (void)state;
    /* many healthy locks, then a few bad ones that must displace them */
    for (i = 0; i < SNAP_RETAIN_MAX + 5000; i++) {
        snprintf(key, sizeof(key), "lock:%zu", i);
        add(s, key, 0, 0, (int64_t)i);
    }
    add(s, "lock:leak", 1, LOCK_LEAKED, 5);
    add(s, "lock:long", 1, LOCK_LONG, 10);
    assert_int_equal(s->locks_total, SNAP_RETAIN_MAX + 5002);
    assert_int_equal(s->nlocks, SNAP_RETAIN_MAX);
    assert_false(snapshot_complete(s));
    assert_int_equal(s->class_stats[0].total, SNAP_RETAIN_MAX + 5000);
    assert_int_equal(s->class_stats[1].leaked, 1);
    assert_int_equal(s->class_stats[1].long_held, 1);
    snapshot_finish(s);
    assert_string_equal(s->locks[0]->key, "lock:leak");
    assert_string_equal(s->locks[1]->key, "lock:long");
    /* then the oldest healthy ones: ages SNAP_RETAIN_MAX+4999 downwards */
    snprintf(key, sizeof(key), "lock:%d", SNAP_RETAIN_MAX + 4999);
    assert_string_equal(s->locks[2]->key, key);
    for (i = 3; i < s->nlocks; i++)
        assert_false(snapshot_worse(s->locks[i], s->locks[i - 1]));
    snapshot_unref(s);
}

static void
retained_copy_owns_its_bytes(void **state)
{
    struct snapshot *s = snapshot_new("t");
    char key[16] = "lock:x";

    (void)state;
    add(s, key, 0, LOCK_LEAKED, 1);
    memset(key, 'z', sizeof(key) - 1);
    assert_string_equal(s->locks[0]->key, "lock:x");
    assert_string_equal(s->locks[0]->holders[0].id, "tok");
    assert_non_null(s->locks[0]->host);
    assert_int_equal(s->locks[0]->host_len, 0);
    snapshot_unref(s);
}

static void
restate_fixes_the_class_counts(void **state)
{
    struct snapshot *s = snapshot_new("t");

    (void)state;
    add(s, "lock:a", 0, 0, 1000);
    snapshot_restate(s, s->locks[0], LOCK_HELD | LOCK_LONG, NOW - 600000, NOW);
    assert_int_equal(s->class_stats[0].long_held, 1);
    assert_int_equal(s->class_stats[0].oldest_ms, 600000);
    assert_true(s->locks[0]->states & LOCK_LONG);
    snapshot_unref(s);
}

static void
byte_budget_is_kept(void **state)
{
    struct snapshot *s = snapshot_new("t");
    char *big = malloc(100000);
    size_t i;

    (void)state;
    memset(big, 'k', 99999);
    big[99999] = '\0';
    for (i = 0; i < 1000; i++) {
        big[0] = (char)('a' + i % 26);
        add(s, big, 0, LOCK_LEAKED, (int64_t)i);
    }
    assert_true(s->retained_bytes <= SNAP_RETAIN_BYTES + 200000);
    assert_true(s->nlocks < 1000);
    assert_int_equal(s->locks_total, 1000);
    free(big);
    snapshot_unref(s);
}

/* An error reply's code picks its kind; anything else is "other", so the
 * kind label of lockwatch_scan_read_errors_total stays bounded. */
static void
read_error_kinds(void **state)
{
    static const struct {
        const char *reply, *kind;
    } cases[] = {
        { "NOPERM User lockwatch has no permissions to run the 'getrange' command", "NOPERM" },
        { "NOPERM", "NOPERM" },
        { "LOADING Redis is loading the dataset in memory", "LOADING" },
        { "BUSY Redis is busy running a script.", "BUSY" },
        { "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
          "MASTERDOWN" },
        { "CLUSTERDOWN The cluster is down", "CLUSTERDOWN" },
        { "NOAUTH Authentication required.", "NOAUTH" },
        { "ERR unknown command", "ERR" },
        { "ERRX not a code we know", "other" },
        { "NOPERMS", "other" },
        { "OOM command not allowed", "other" },
        { "", "other" },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(scan_read_error_name(scan_read_error_of(cases[i].reply,
                                                                    strlen(cases[i].reply))),
                            cases[i].kind);
    /* the length bounds the match, not a NUL */
    assert_string_equal(scan_read_error_name(scan_read_error_of("BUSYGROUP x", 4)), "BUSY");
    assert_string_equal(scan_read_error_name(SCAN_READ_KINDS), "other");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_all_keeps_the_worst),
        cmocka_unit_test(retained_copy_owns_its_bytes),
        cmocka_unit_test(restate_fixes_the_class_counts),
        cmocka_unit_test(read_error_kinds),
        cmocka_unit_test(byte_budget_is_kept),
    };

    return cmocka_run_group_tests_name("snapshot", tests, NULL, NULL);
}
