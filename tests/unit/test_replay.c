/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_replay.c - the signed datagrams seen lately (collectors/waits/replay.h):
 * a copy within the window is found, a mac is kept at least a period and
 * dropped after two, and a full table takes new macs unchecked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/waits/replay.h"

/* A mac from a counter: distinct for distinct n, and not all zero. */
static void
mac_of(uint64_t n, unsigned char mac[LW1_MAC_BYTES])
{
    uint64_t x = n * 0x9e3779b97f4a7c15ULL + 1;

    memcpy(mac, &x, sizeof(x));
    x ^= x >> 31;
    memcpy(mac + 8, &x, sizeof(x));
}

static void
a_copy_is_seen_within_the_window(void **state)
{
    struct replay *r = replay_new(REPLAY_SLOTS_MAX);
    unsigned char m[LW1_MAC_BYTES], other[LW1_MAC_BYTES];

    (void)state;
    assert_non_null(r);
    mac_of(1, m);
    mac_of(2, other);
    assert_int_equal(replay_note(r, m, 1000), REPLAY_NEW);
    assert_int_equal(replay_note(r, m, 1000), REPLAY_SEEN);
    assert_int_equal(replay_note(r, other, 1001), REPLAY_NEW);
    /* the longest a copy can be accepted after the first: 2 x the window */
    assert_int_equal(replay_note(r, m, 1000 + 2 * LW1_MAC_WINDOW_S), REPLAY_SEEN);
    assert_int_equal(replay_note(r, m, 1000 + REPLAY_PERIOD_S + 1), REPLAY_SEEN);
    /* two periods of nothing: everything goes */
    assert_int_equal(replay_note(r, other, 1000 + 5 * REPLAY_PERIOD_S), REPLAY_NEW);
    assert_int_equal(replay_note(r, m, 1000 + 5 * REPLAY_PERIOD_S), REPLAY_NEW);
    replay_free(r);
}

/* A steady stream: every mac is found again for a whole period after it
 * came, and the table holds about two periods' worth, not more. */
static void
kept_a_period_and_bounded(void **state)
{
    struct replay *r = replay_new(REPLAY_SLOTS_MAX);
    unsigned char m[LW1_MAC_BYTES];
    uint64_t n = 0;
    int64_t t;

    (void)state;
    for (t = 0; t < 10 * REPLAY_PERIOD_S; t++) {
        for (int k = 0; k < 20; k++) {
            mac_of(n++, m);
            assert_int_equal(replay_note(r, m, t), REPLAY_NEW);
        }
        if (t >= REPLAY_PERIOD_S) {
            /* the first mac of the second a period ago */
            mac_of((uint64_t)(t - REPLAY_PERIOD_S) * 20, m);
            assert_int_equal(replay_note(r, m, t), REPLAY_SEEN);
        }
    }
    assert_true(replay_count(r) <= 2 * 20 * (REPLAY_PERIOD_S + 1));
    replay_free(r);
}

static void
full_takes_new_macs_unchecked(void **state)
{
    struct replay *r = replay_new(REPLAY_SLOTS_MIN);
    unsigned char m[LW1_MAC_BYTES];
    size_t n, full = 0;

    (void)state;
    for (n = 0; n < REPLAY_SLOTS_MIN; n++) {
        mac_of(n, m);
        full += replay_note(r, m, 0) == REPLAY_FULL;
    }
    /* three quarters of the largest table are kept; the rest are not */
    assert_int_equal(full, REPLAY_SLOTS_MIN / 4);
    assert_int_equal(replay_count(r), REPLAY_SLOTS_MIN * 3 / 4);
    mac_of(0, m);
    assert_int_equal(replay_note(r, m, 1), REPLAY_SEEN);
    /* the next period has room again */
    mac_of(n, m);
    assert_int_equal(replay_note(r, m, REPLAY_PERIOD_S), REPLAY_NEW);
    replay_free(r);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_copy_is_seen_within_the_window),
        cmocka_unit_test(kept_a_period_and_bounded),
        cmocka_unit_test(full_takes_new_macs_unchecked),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
