/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_released.c - the releases holders reported (released.h): a `hold`
 * since a view's start is a release, a `lost` since then outweighs it, an
 * acquire after it (a holder id used again) undoes it,
 * pairs are told apart by key and holder, and the memory is bounded (the
 * oldest pair forgotten first, the rest still found: pairring.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/lease/released.h"
#include "common/keyhash.h"

static uint64_t
kh(const char *key)
{
    return keyhash(key, strlen(key));
}

static uint32_t
hh(const char *holder)
{
    return (uint32_t)keyhash(holder, strlen(holder));
}

static int
reset(void **state)
{
    (void)state;
    released_reset();
    return 0;
}

static void
hold_since_is_a_release(void **state)
{
    (void)state;
    assert_false(released_since(kh("lock:a"), hh("t1"), 1000));
    released_note(kh("lock:a"), hh("t1"), RELEASED_HOLD, 1500);
    assert_true(released_since(kh("lock:a"), hh("t1"), 1000));
    assert_true(released_since(kh("lock:a"), hh("t1"), 1500));
    /* before the view: a release of an earlier holding */
    assert_false(released_since(kh("lock:a"), hh("t1"), 1501));
    /* another holder, another key */
    assert_false(released_since(kh("lock:a"), hh("t2"), 1000));
    assert_false(released_since(kh("lock:b"), hh("t1"), 1000));
    /* no holder known: nothing */
    released_note(kh("lock:c"), 0, RELEASED_HOLD, 1500);
    assert_false(released_since(kh("lock:c"), 0, 1000));
}

static void
lost_since_outweighs(void **state)
{
    (void)state;
    /* a release that found the lock gone: lost, then hold */
    released_note(kh("lock:a"), hh("t1"), RELEASED_LOST, 2000);
    released_note(kh("lock:a"), hh("t1"), RELEASED_HOLD, 2001);
    assert_false(released_since(kh("lock:a"), hh("t1"), 1000));
    /* hold first, then lost: the same */
    released_note(kh("lock:b"), hh("t1"), RELEASED_HOLD, 2000);
    released_note(kh("lock:b"), hh("t1"), RELEASED_LOST, 2001);
    assert_false(released_since(kh("lock:b"), hh("t1"), 1000));
    /* a loss of an earlier holding, the same holder id since released */
    released_note(kh("lock:c"), hh("t1"), RELEASED_LOST, 500);
    released_note(kh("lock:c"), hh("t1"), RELEASED_HOLD, 2000);
    assert_true(released_since(kh("lock:c"), hh("t1"), 1000));
}

/* A holder id used again (Redisson's "<uuid>:<thread>", a constant "1"):
 * acquired again after its release, the holding now is not released. */
static void
acquired_again_is_not_released(void **state)
{
    (void)state;
    released_note(kh("lock:a"), hh("u:17"), RELEASED_ACQUIRE, 900);
    released_note(kh("lock:a"), hh("u:17"), RELEASED_HOLD, 1500);
    assert_true(released_since(kh("lock:a"), hh("u:17"), 1000));
    /* the same millisecond, the same datagram: the order tells */
    released_note(kh("lock:a"), hh("u:17"), RELEASED_ACQUIRE, 1500);
    assert_false(released_since(kh("lock:a"), hh("u:17"), 1000));
    released_note(kh("lock:a"), hh("u:17"), RELEASED_HOLD, 1600);
    assert_true(released_since(kh("lock:a"), hh("u:17"), 1000));
}

static void
bounded_oldest_first(void **state)
{
    char key[32];
    int i;

    (void)state;
    for (i = 0; i < RELEASED_MAX + 10; i++) {
        snprintf(key, sizeof(key), "lock:%d", i);
        released_note(kh(key), hh("t"), RELEASED_HOLD, 1000 + i);
    }
    for (i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "lock:%d", i);
        assert_false(released_since(kh(key), hh("t"), 0));
    }
    for (i = 10; i < RELEASED_MAX + 10; i++) {
        snprintf(key, sizeof(key), "lock:%d", i);
        assert_true(released_since(kh(key), hh("t"), 0));
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(hold_since_is_a_release, reset),
        cmocka_unit_test_setup(lost_since_outweighs, reset),
        cmocka_unit_test_setup(acquired_again_is_not_released, reset),
        cmocka_unit_test_setup(bounded_oldest_first, reset),
    };

    return cmocka_run_group_tests_name("released", tests, NULL, NULL);
}
