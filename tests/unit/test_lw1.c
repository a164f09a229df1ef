/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lw1.c - common/lw1.h, the grammar liblockwatch and the agent
 * share: unsigned decimals at their edges (empty, too long, the largest
 * value, signs, leading zeros), the microseconds field of a sample
 * (2^53 and one more, 16 digits and 17), the strict token parser (the
 * pid's process nonce, and the older form without it), the token's party
 * (one process start's thread: the same host, pid and thread with another
 * nonce is another party) and the bytes a sample key must escape.  The line and token round trips through
 * each side's code are in test_samples.c, test_client_report.c and
 * test_client_token.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/lw1.h"

static int
udec(const char *s, size_t maxdigits, bool canonical, uint64_t *v)
{
    return lw1_parse_udec(s, strlen(s), maxdigits, canonical, v);
}

static void
unsigned_decimals(void **state)
{
    uint64_t v = 7;

    (void)state;
    assert_int_equal(udec("0", 19, true, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(udec("4211", 10, true, &v), 0);
    assert_int_equal(v, 4211);
    /* the largest 19-digit value fits 64 bits; a 20th digit never parses */
    assert_int_equal(udec("9999999999999999999", 19, true, &v), 0);
    assert_int_equal(v, UINT64_C(9999999999999999999));
    assert_int_equal(udec("18446744073709551616", 19, false, &v), -1);
    assert_int_equal(udec("18446744073709551615", 19, false, &v), -1);
    /* maxdigits above 19 could overflow, so it is refused outright */
    assert_int_equal(udec("1", 20, false, &v), -1);
    assert_int_equal(udec("12345", 4, false, &v), -1);
    /* empty, signs, spaces, points, hex: not a decimal */
    v = 7;
    assert_int_equal(lw1_parse_udec("", 0, 19, false, &v), -1);
    assert_int_equal(udec("-1", 19, false, &v), -1);
    assert_int_equal(udec("+1", 19, false, &v), -1);
    assert_int_equal(udec(" 1", 19, false, &v), -1);
    assert_int_equal(udec("1 ", 19, false, &v), -1);
    assert_int_equal(udec("1.0", 19, false, &v), -1);
    assert_int_equal(udec("0x1", 19, false, &v), -1);
    assert_int_equal(v, 7);         /* untouched on failure */
    /* leading zeros: digits unless canonical */
    assert_int_equal(udec("007", 19, false, &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(udec("007", 19, true, &v), -1);
    assert_int_equal(udec("00", 19, true, &v), -1);
    /* len bounds the read: a digit after it is not looked at */
    assert_int_equal(lw1_parse_udec("12x", 2, 19, true, &v), 0);
    assert_int_equal(v, 12);
}

static int
us(const char *s, uint64_t *v)
{
    return lw1_parse_us(s, strlen(s), v);
}

static void
sample_microseconds(void **state)
{
    uint64_t v = 0;

    (void)state;
    assert_int_equal(us("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(us("9007199254740992", &v), 0);
    assert_int_equal(v, LW1_US_MAX);
    assert_int_equal(us("9007199254740993", &v), -1);
    assert_int_equal(us("9999999999999999", &v), -1);
    /* the grammar allows leading zeros, up to 16 digits in all */
    assert_int_equal(us("0000000000000042", &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(us("00000000000000042", &v), -1);
    assert_int_equal(us("", &v), -1);
    assert_int_equal(us("-5", &v), -1);
    assert_int_equal(us("+5", &v), -1);
    assert_int_equal(us("5.0", &v), -1);
    assert_int_equal(us("5e3", &v), -1);
}

static int
token(const char *s, struct lw1_token *t)
{
    return lw1_token_parse(s, strlen(s), t);
}

static void
tokens(void **state)
{
    struct lw1_token t;

    (void)state;
    assert_int_equal(token("lw1:web-3.example.com:4211:4230:1795666320123:9f86d081884c7d65",
                           &t), 0);
    assert_int_equal(t.hostlen, strlen("web-3.example.com"));
    assert_memory_equal(t.host, "web-3.example.com", t.hostlen);
    assert_int_equal(t.pid, 4211);
    assert_int_equal(t.thread, 4230);
    assert_int_equal(t.acquired_ms, UINT64_C(1795666320123));
    assert_int_equal(t.random, UINT64_C(0x9f86d081884c7d65));
    /* thread 0 is canonical; the time range is [2000, 2100) */
    assert_int_equal(token("lw1:h:1:0:946684800000:0000000000000000", &t), 0);
    assert_int_equal(token("lw1:h:1:0:4102444799999:ffffffffffffffff", &t), 0);
    assert_int_equal(t.random, UINT64_MAX);
    assert_int_equal(token("lw1:h:1:0:946684799999:0000000000000000", &t), -1);
    assert_int_equal(token("lw1:h:1:0:4102444800000:0000000000000000", &t), -1);
    /* leading zeros, pid 0, a pid past INT32_MAX, a sign */
    assert_int_equal(token("lw1:h:01:0:1795666320123:9f86d081884c7d65", &t), -1);
    assert_int_equal(token("lw1:h:1:00:1795666320123:9f86d081884c7d65", &t), -1);
    assert_int_equal(token("lw1:h:0:0:1795666320123:9f86d081884c7d65", &t), -1);
    assert_int_equal(token("lw1:h:2147483648:0:1795666320123:9f86d081884c7d65", &t), -1);
    assert_int_equal(token("lw1:h:2147483647:0:1795666320123:9f86d081884c7d65", &t), 0);
    assert_int_equal(token("lw1:h:+1:0:1795666320123:9f86d081884c7d65", &t), -1);
    /* a thread past INT64_MAX */
    assert_int_equal(token("lw1:h:1:9223372036854775808:1795666320123:9f86d081884c7d65",
                           &t), -1);
    /* the random field: 16 lowercase hex digits exactly */
    assert_int_equal(token("lw1:h:1:0:1795666320123:9F86D081884C7D65", &t), -1);
    assert_int_equal(token("lw1:h:1:0:1795666320123:9f86d081884c7d6", &t), -1);
    assert_int_equal(token("lw1:h:1:0:1795666320123:9f86d081884c7d655", &t), -1);
    /* fields: five or seven, an empty host, a host byte outside the set */
    assert_int_equal(token("lw1:h:1:0:1795666320123", &t), -1);
    assert_int_equal(token("lw1:h:1:0:1795666320123:9f86d081884c7d65:", &t), -1);
    assert_int_equal(token("lw1::1:0:1795666320123:9f86d081884c7d65", &t), -1);
    assert_int_equal(token("lw1:h h:1:0:1795666320123:9f86d081884c7d65", &t), -1);
    assert_int_equal(token("LW1:h:1:0:1795666320123:9f86d081884c7d65", &t), -1);
    assert_int_equal(lw1_token_parse(NULL, 0, &t), -1);
    assert_int_equal(lw1_token_parse("lw1", 3, &t), -1);
}

static void
token_host_length(void **state)
{
    char buf[160];
    struct lw1_token t;
    size_t n;

    (void)state;
    for (size_t hostlen = LW1_HOST_MAX; hostlen <= LW1_HOST_MAX + 1; hostlen++) {
        n = (size_t)snprintf(buf, sizeof(buf), "lw1:");
        memset(buf + n, 'h', hostlen);
        n += hostlen;
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, ":1:0:1795666320123:9f86d081884c7d65");
        assert_int_equal(lw1_token_parse(buf, n, &t), hostlen == LW1_HOST_MAX ? 0 : -1);
    }
}

/* "<pid>.<nonce>": the nonce is 16 lowercase hex, nothing else. */
static void
token_nonces(void **state)
{
    struct lw1_token t;

    (void)state;
    assert_int_equal(token("lw1:web-3:4211.5b2e9c0d71a4f836:4230:1795666320123:"
                           "9f86d081884c7d65", &t), 0);
    assert_true(t.has_nonce);
    assert_int_equal(t.nonce, UINT64_C(0x5b2e9c0d71a4f836));
    assert_int_equal(t.pid, 4211);
    assert_int_equal(t.thread, 4230);
    assert_int_equal(t.random, UINT64_C(0x9f86d081884c7d65));
    assert_int_equal(token("lw1:h:1.0000000000000000:0:1795666320123:9f86d081884c7d65", &t), 0);
    assert_int_equal(t.nonce, 0);
    assert_int_equal(token("lw1:h:2147483647.ffffffffffffffff:0:1795666320123:"
                           "9f86d081884c7d65", &t), 0);
    assert_int_equal(t.nonce, UINT64_MAX);
    /* the older form: no nonce */
    assert_int_equal(token("lw1:h:1:0:1795666320123:9f86d081884c7d65", &t), 0);
    assert_false(t.has_nonce);
    assert_int_equal(t.nonce, 0);
    /* empty, short, long, uppercase, not hex, a second dot, no pid, a bad
     * pid, a nonce on another field */
    static const char *const bad[] = {
        "lw1:h:1.:0:1795666320123:9f86d081884c7d65",
        "lw1:h:1.5b2e9c0d71a4f83:0:1795666320123:9f86d081884c7d65",
        "lw1:h:1.5b2e9c0d71a4f8366:0:1795666320123:9f86d081884c7d65",
        "lw1:h:1.5B2E9C0D71A4F836:0:1795666320123:9f86d081884c7d65",
        "lw1:h:1.5b2e9c0d71a4f83g:0:1795666320123:9f86d081884c7d65",
        "lw1:h:1.5b2e9c0d71a4f836.:0:1795666320123:9f86d081884c7d65",
        "lw1:h:1..5b2e9c0d71a4f836:0:1795666320123:9f86d081884c7d65",
        "lw1:h:.5b2e9c0d71a4f836:0:1795666320123:9f86d081884c7d65",
        "lw1:h:0.5b2e9c0d71a4f836:0:1795666320123:9f86d081884c7d65",
        "lw1:h:01.5b2e9c0d71a4f836:0:1795666320123:9f86d081884c7d65",
        "lw1:h:2147483648.5b2e9c0d71a4f836:0:1795666320123:9f86d081884c7d65",
        "lw1:h:1:0.5b2e9c0d71a4f836:1795666320123:9f86d081884c7d65",
        "lw1:h:1:0:1795666320123.5b2e9c0d71a4f836:9f86d081884c7d65",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (token(bad[i], &t) != -1)
            fail_msg("parsed: %s", bad[i]);
}

/* The party of token s as a string (static). */
static const char *
party(const char *s)
{
    static char buf[LW1_TOKEN_LEN_MAX + 1];
    struct lw1_token t;

    assert_int_equal(token(s, &t), 0);
    assert_true(t.partylen < strlen(s) && s[t.partylen] == ':');
    memcpy(buf, s, t.partylen);
    buf[t.partylen] = '\0';
    return buf;
}

/* A restarted container runs as pid 1, thread 1 again: its tokens name
 * the same host, pid and thread as the dead process's, but another nonce,
 * so another party.  One process's tokens (other times, other random
 * bits) are one party; the older form's party is host, pid and thread. */
static void
token_parties(void **state)
{
    char a[LW1_TOKEN_LEN_MAX + 1];

    (void)state;
    snprintf(a, sizeof(a), "%s",
             party("lw1:vm:1.00000000000000aa:1:1795666320123:9f86d081884c7d65"));
    assert_string_equal(a, "lw1:vm:1.00000000000000aa:1");
    assert_string_not_equal(a, party("lw1:vm:1.00000000000000bb:1:1795666320999:"
                                     "0123456789abcdef"));
    assert_string_equal(a, party("lw1:vm:1.00000000000000aa:1:1795666329999:"
                                 "fedcba9876543210"));
    assert_string_not_equal(a, party("lw1:vm:1.00000000000000aa:2:1795666320123:"
                                     "9f86d081884c7d65"));
    snprintf(a, sizeof(a), "%s", party("lw1:vm:1:1:1795666320123:9f86d081884c7d65"));
    assert_string_equal(a, "lw1:vm:1:1");
    assert_string_equal(a, party("lw1:vm:1:1:1795666329999:fedcba9876543210"));
    assert_string_not_equal(a, party("lw1:vm:1.00000000000000aa:1:1795666320123:"
                                     "9f86d081884c7d65"));
}

static void
key_bytes(void **state)
{
    (void)state;
    for (unsigned b = 0; b < 256; b++) {
        bool printable = b >= 0x21 && b <= 0x7e;

        assert_int_equal(lw1_line_byte_ok((unsigned char)b), printable);
        assert_int_equal(lw1_key_byte_escaped((unsigned char)b), !printable || b == '%');
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unsigned_decimals),
        cmocka_unit_test(sample_microseconds),
        cmocka_unit_test(tokens),
        cmocka_unit_test(token_host_length),
        cmocka_unit_test(token_nonces),
        cmocka_unit_test(token_parties),
        cmocka_unit_test(key_bytes),
    };

    return cmocka_run_group_tests_name("lw1", tests, NULL, NULL);
}
