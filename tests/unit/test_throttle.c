/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_throttle.c - release-token guessing per client address
 * (agent/http/throttle.h), with the clock passed in: THROTTLE_FAILS wrong
 * tokens in a window block the address for THROTTLE_BLOCK_MS and no other;
 * an IPv6 /64 is one address; the window and the block end; a full table
 * evicts an unblocked address, counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "agent/http/throttle.h"

#define T0 1000000LL

static struct sockaddr_in
v4(const char *addr)
{
    struct sockaddr_in sa;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
    return sa;
}

static struct sockaddr_in6
v6(const char *addr)
{
    struct sockaddr_in6 sa;

    memset(&sa, 0, sizeof(sa));
    sa.sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, addr, &sa.sin6_addr), 1);
    return sa;
}

#define SA(x) ((const struct sockaddr *)(const void *)&(x))

static void
blocks_after_the_limit_and_only_that_address(void **state)
{
    struct throttle *t = throttle_new();
    struct sockaddr_in a = v4("192.0.2.7"), b = v4("192.0.2.8");
    struct throttle_stats st;
    int i;

    (void)state;
    assert_non_null(t);
    for (i = 0; i < THROTTLE_FAILS; i++) {
        assert_int_equal(throttle_check(t, SA(a), T0 + i), 0);
        throttle_fail(t, SA(a), T0 + i);
    }
    assert_int_equal(throttle_check(t, SA(a), T0 + 100), THROTTLE_BLOCK_MS / 1000);
    assert_int_equal(throttle_check(t, SA(b), T0 + 100), 0);
    /* Retry-After counts down, never below 1 */
    assert_int_equal(throttle_check(t, SA(a), T0 + THROTTLE_FAILS - 1 + THROTTLE_BLOCK_MS - 1),
                     1);
    /* the block ends; the count starts afresh */
    assert_int_equal(throttle_check(t, SA(a), T0 + THROTTLE_FAILS + THROTTLE_BLOCK_MS), 0);
    throttle_fail(t, SA(a), T0 + THROTTLE_FAILS + THROTTLE_BLOCK_MS);
    assert_int_equal(throttle_check(t, SA(a), T0 + THROTTLE_FAILS + THROTTLE_BLOCK_MS + 1), 0);
    throttle_stats(t, &st);
    assert_int_equal(st.wrong_token, THROTTLE_FAILS + 1);
    assert_int_equal(st.rate_limited, 2);
    throttle_check(t, NULL, T0);        /* no address: always yes */
    throttle_free(t);
}

static void
failures_spread_over_windows_never_block(void **state)
{
    struct throttle *t = throttle_new();
    struct sockaddr_in a = v4("198.51.100.1");
    int i;

    (void)state;
    for (i = 0; i < 5 * THROTTLE_FAILS; i++) {
        /* THROTTLE_FAILS of them span a little more than one window */
        int64_t now = T0 + (int64_t)i * (THROTTLE_WINDOW_MS / (THROTTLE_FAILS - 1) + 100);

        assert_int_equal(throttle_check(t, SA(a), now), 0);
        throttle_fail(t, SA(a), now);
    }
    throttle_free(t);
}

static void
ipv6_counts_per_64(void **state)
{
    struct throttle *t = throttle_new();
    struct sockaddr_in6 a = v6("2001:db8:1:2::1"), b = v6("2001:db8:1:2:ffff::9"),
        other = v6("2001:db8:1:3::1");
    int i;

    (void)state;
    for (i = 0; i < THROTTLE_FAILS; i++)
        throttle_fail(t, i % 2 ? SA(a) : SA(b), T0 + i);
    assert_true(throttle_check(t, SA(a), T0 + 50) > 0);
    assert_true(throttle_check(t, SA(b), T0 + 50) > 0);
    assert_int_equal(throttle_check(t, SA(other), T0 + 50), 0);
    throttle_free(t);
}

static void
a_full_table_evicts_an_unblocked_address(void **state)
{
    struct throttle *t = throttle_new();
    struct sockaddr_in blocked = v4("203.0.113.1");
    struct throttle_stats st;
    int i;

    (void)state;
    for (i = 0; i < THROTTLE_FAILS; i++)
        throttle_fail(t, SA(blocked), T0);
    for (i = 0; i < THROTTLE_SLOTS + 10; i++) {
        struct sockaddr_in x;

        memset(&x, 0, sizeof(x));
        x.sin_family = AF_INET;
        x.sin_addr.s_addr = htonl(0x0a000000u + (uint32_t)i);
        throttle_fail(t, SA(x), T0 + 1 + i);
    }
    throttle_stats(t, &st);
    assert_int_equal(st.evicted, 11);
    /* the blocked address kept its slot */
    assert_true(throttle_check(t, SA(blocked), T0 + 5000) > 0);
    throttle_free(t);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blocks_after_the_limit_and_only_that_address),
        cmocka_unit_test(failures_spread_over_windows_never_block),
        cmocka_unit_test(ipv6_counts_per_64),
        cmocka_unit_test(a_full_table_evicts_an_unblocked_address),
    };

    return cmocka_run_group_tests_name("throttle", tests, NULL, NULL);
}
