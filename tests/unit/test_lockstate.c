/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lockstate.c - the one judge of lock states and the one pattern
 * check: each state at, just under and just past its threshold, states
 * together, the facts the scanner and lockctl bring (unknown times, a
 * format without holders), the starting age from IDLETIME and the
 * format's acquisition time, the pattern check on binary keys, and the
 * state names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/locks/lockstate.h"
#include "collectors/locks/snapshot.h"

#define GRACE   30000
#define HOLD    300000
#define REENTER 16

static const struct lockstate_rules rules = {
    .leak_grace_ms = GRACE,
    .max_hold_ms = HOLD,
    .max_reentrancy = REENTER,
};

/* A healthy lock: a TTL, one holder held briefly, one hold. */
static struct lockstate_facts
healthy(void)
{
    struct lockstate_facts f;

    memset(&f, 0, sizeof(f));
    f.pttl_ms = 10000;
    f.nholders = 1;
    f.max_count = 1;
    f.held_ms = 1000;
    f.nottl_ms = -1;
    return f;
}

static void
test_held(void **state)
{
    struct lockstate_facts f = healthy();

    (void)state;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
    /* a format that names no holder is still held */
    f.nholders = 0;
    f.max_count = 0;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
}

/* A Redisson semaphore has no TTL by design and its "holder" is a
 * count: never leaked or long; reentrant_high still applies as to any. */
static void
test_semaphore(void **state)
{
    struct lockstate_facts f = healthy();

    (void)state;
    f.pttl_ms = -1;
    f.nottl_ms = 10 * GRACE;
    f.held_ms = rules.max_hold_ms + 1;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD | LOCK_LEAKED | LOCK_LONG);
    f.semaphore = true;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
}

static void
test_leaked(void **state)
{
    struct lockstate_facts f = healthy();

    (void)state;
    f.pttl_ms = -1;
    f.nottl_ms = GRACE - 1;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
    f.nottl_ms = GRACE;                         /* at leak_grace: leaked */
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD | LOCK_LEAKED);
    f.nottl_ms = 10 * GRACE;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD | LOCK_LEAKED);
    /* a key with a TTL is never leaked, whatever the clock says */
    f.pttl_ms = 1;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
    /* gone (-2) is not "no TTL" */
    f.pttl_ms = -2;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
    /* no TTL, but since when is not known: not leaked, even with no grace */
    f.pttl_ms = -1;
    f.nottl_ms = -1;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
    {
        struct lockstate_rules none = rules;

        none.leak_grace_ms = 0;
        assert_int_equal(lockstate_judge(&none, &f), LOCK_HELD);
        f.nottl_ms = 0;                         /* just lost it, grace 0 */
        assert_int_equal(lockstate_judge(&none, &f), LOCK_HELD | LOCK_LEAKED);
        /* unknown stays unknown even under rules no config allows */
        none.leak_grace_ms = -1000;
        f.nottl_ms = -1;
        assert_int_equal(lockstate_judge(&none, &f), LOCK_HELD);
    }
    /* leaked does not need a holder: the key itself never goes away */
    f.nottl_ms = GRACE;
    f.nholders = 0;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD | LOCK_LEAKED);
}

static void
test_long(void **state)
{
    struct lockstate_facts f = healthy();

    (void)state;
    f.held_ms = HOLD;                           /* exactly max_hold: not yet */
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
    f.held_ms = HOLD + 1;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD | LOCK_LONG);
    /* no named holder: nobody holds it long */
    f.nholders = 0;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
    /* the hold time, not the time without a TTL, decides */
    f.nholders = 2;
    f.held_ms = 10;
    f.pttl_ms = -1;
    f.nottl_ms = GRACE - 1;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
}

static void
test_reentrant_high(void **state)
{
    struct lockstate_facts f = healthy();
    struct lockstate_rules off = rules;

    (void)state;
    f.max_count = REENTER - 1;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
    f.max_count = REENTER;                      /* at max_reentrancy */
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD | LOCK_REENTRANT_HIGH);
    f.max_count = 1000000;
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD | LOCK_REENTRANT_HIGH);
    off.max_reentrancy = 0;                     /* 0: the check is off */
    assert_int_equal(lockstate_judge(&off, &f), LOCK_HELD);
}

static void
test_states_together(void **state)
{
    struct lockstate_facts f = healthy();

    (void)state;
    f.pttl_ms = -1;
    f.nottl_ms = HOLD + 1;
    f.held_ms = HOLD + 1;
    f.max_count = REENTER;
    assert_int_equal(lockstate_judge(&rules, &f),
                     LOCK_HELD | LOCK_LEAKED | LOCK_LONG | LOCK_REENTRANT_HIGH);
    assert_string_equal(snapshot_worst_state(lockstate_judge(&rules, &f)), "leaked");
    f.pttl_ms = 5000;
    assert_int_equal(lockstate_judge(&rules, &f),
                     LOCK_HELD | LOCK_LONG | LOCK_REENTRANT_HIGH);
    assert_string_equal(snapshot_worst_state(lockstate_judge(&rules, &f)), "long");
}

/* lockctl's case: the starting age stands in for both times. */
static void
test_start_age(void **state)
{
    const int64_t now = 1800000000000LL;
    bool acq = true;

    (void)state;
    /* IDLETIME only */
    /* IDLETIME's clock ticks in whole seconds: a second less is sure */
    assert_int_equal(lockstate_start_age(42, 0, now, &acq), 41000);
    assert_int_equal(lockstate_start_age(1, 0, now, NULL), 0);
    assert_false(acq);
    /* unknown IDLETIME (LFU policy), no acquisition time: 0 */
    acq = true;
    assert_int_equal(lockstate_start_age(-1, 0, now, &acq), 0);
    assert_false(acq);
    assert_int_equal(lockstate_start_age(0, 0, now, NULL), 0);
    /* the older of the two wins */
    assert_int_equal(lockstate_start_age(10, now - 60000, now, &acq), 60000);
    assert_true(acq);
    assert_int_equal(lockstate_start_age(100, now - 60000, now, &acq), 99000);
    assert_false(acq);
    /* a tie goes to the acquisition time */
    assert_int_equal(lockstate_start_age(61, now - 60000, now, &acq), 60000);
    assert_true(acq);
    /* the holder's clock ahead of ours: never a negative age */
    assert_int_equal(lockstate_start_age(-1, now + 5000, now, &acq), 0);
    assert_true(acq);
    assert_int_equal(lockstate_start_age(7, now + 5000, now, &acq), 6000);
    assert_false(acq);
}

static void
test_start_age_judged(void **state)
{
    const int64_t now = 1800000000000LL;
    struct lockstate_facts f = healthy();

    (void)state;
    /* a lock without a TTL, idle for 29 s but taken 31 s ago: leaked */
    f.pttl_ms = -1;
    f.held_ms = f.nottl_ms = lockstate_start_age(29, now - 31000, now, NULL);
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD | LOCK_LEAKED);
    /* the same, idle for 29 s with no acquisition time: not yet */
    f.held_ms = f.nottl_ms = lockstate_start_age(29, 0, now, NULL);
    assert_int_equal(lockstate_judge(&rules, &f), LOCK_HELD);
}

static void
test_in_patterns(void **state)
{
    char *patterns[] = { "lock:*", "mutex:?", "job:[0-9]*" };
    struct target_conf t;

    (void)state;
    memset(&t, 0, sizeof(t));
    t.patterns = patterns;
    t.npatterns = 3;
    assert_true(lockstate_in_patterns(&t, "lock:order:1", 12));
    assert_true(lockstate_in_patterns(&t, "lock:", 5));
    assert_true(lockstate_in_patterns(&t, "mutex:a", 7));
    assert_false(lockstate_in_patterns(&t, "mutex:ab", 8));
    assert_true(lockstate_in_patterns(&t, "job:7x", 6));
    assert_false(lockstate_in_patterns(&t, "job:x7", 6));
    assert_false(lockstate_in_patterns(&t, "Lock:order:1", 12));     /* case-sensitive */
    assert_false(lockstate_in_patterns(&t, "session:1", 9));
    assert_false(lockstate_in_patterns(&t, "", 0));
    /* binary-safe: the length counts, not a NUL */
    assert_true(lockstate_in_patterns(&t, "lock:\0x", 7));
    assert_false(lockstate_in_patterns(&t, "mutex:\0\0", 8));
    assert_false(lockstate_in_patterns(&t, "lock:order:1", 4));      /* "lock" */
    /* a target without patterns holds no locks */
    t.npatterns = 0;
    assert_false(lockstate_in_patterns(&t, "lock:order:1", 12));
}

static void
test_mask(void **state)
{
    uint8_t m = 0;

    (void)state;
    assert_int_equal(lockstate_mask("leaked", &m), 0);
    assert_int_equal(m, LOCK_LEAKED);
    assert_int_equal(lockstate_mask("long", &m), 0);
    assert_int_equal(m, LOCK_LONG);
    assert_int_equal(lockstate_mask("reentrant_high", &m), 0);
    assert_int_equal(m, LOCK_REENTRANT_HIGH);
    assert_int_equal(lockstate_mask("held", &m), 0);
    assert_int_equal(m, LOCK_HELD);
    m = 0;
    assert_int_equal(lockstate_mask("all", &m), 0);
    assert_int_equal(m, LOCK_HELD);
    m = 0x55;
    assert_int_equal(lockstate_mask("Leaked", &m), -1);
    assert_int_equal(lockstate_mask("", &m), -1);
    assert_int_equal(lockstate_mask("leaked ", &m), -1);
    assert_int_equal(m, 0x55);                  /* untouched on -1 */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held),
        cmocka_unit_test(test_leaked),
        cmocka_unit_test(test_semaphore),
        cmocka_unit_test(test_long),
        cmocka_unit_test(test_reentrant_high),
        cmocka_unit_test(test_states_together),
        cmocka_unit_test(test_start_age),
        cmocka_unit_test(test_start_age_judged),
        cmocka_unit_test(test_in_patterns),
        cmocka_unit_test(test_mask),
    };

    return cmocka_run_group_tests_name("lockstate", tests, NULL, NULL);
}
