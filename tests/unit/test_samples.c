/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_samples.c - the sample line protocol parser: good lines, every
 * kind of malformed line, mixed datagrams (the valid lines still count),
 * percent-decoding of hostile bytes, line endings and the size limits.
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
#include "collectors/waits/samples.h"

/* Parse a copy of a C-string line (the parser decodes in place). */
static int
parse(const char *text, struct sample *out, char *buf, size_t bufsz)
{
    size_t n = strlen(text);

    assert_true(n < bufsz);
    memcpy(buf, text, n + 1);
    return samples_parse_line(buf, n, out);
}

static void
good_lines(void **state)
{
    struct sample s;
    char buf[256];

    (void)state;
    assert_int_equal(parse("lw1 wait lock:order:1 1500 ok", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.kind, SAMPLE_WAIT);
    assert_int_equal(s.outcome, SAMPLE_OK);
    assert_int_equal(s.us, 1500);
    assert_int_equal(s.keylen, 12);
    assert_memory_equal(s.key, "lock:order:1", 12);

    assert_int_equal(parse("lw1 wait k 0 timeout", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.outcome, SAMPLE_TIMEOUT);
    assert_int_equal(s.us, 0);
    assert_int_equal(parse("lw1 wait k 7 error", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.outcome, SAMPLE_ERROR);

    assert_int_equal(parse("lw1 hold lock:x 20000", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.kind, SAMPLE_HOLD);
    assert_int_equal(s.us, 20000);
    assert_memory_equal(s.key, "lock:x", 6);

    /* the largest value, and leading zeros (still digits only) */
    assert_int_equal(parse("lw1 hold k 9007199254740992", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.us, (uint64_t)1 << 53);
    assert_int_equal(parse("lw1 hold k 0000000000000042", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.us, 42);

    assert_string_equal(sample_outcome_str(SAMPLE_OK), "ok");
    assert_string_equal(sample_outcome_str(SAMPLE_TIMEOUT), "timeout");
    assert_string_equal(sample_outcome_str(SAMPLE_ERROR), "error");
}

static void
malformed_lines(void **state)
{
    static const char *const bad[] = {
        /* version */
        "lw2 wait k 1 ok", "LW1 wait k 1 ok", "lw wait k 1 ok", "lw10 wait k 1 ok",
        "wait k 1 ok",
        /* verb */
        "lw1 Wait k 1 ok", "lw1 waits k 1 ok", "lw1 release k 1", "lw1  k 1 ok",
        /* fields missing or extra */
        "lw1", "lw1 wait", "lw1 wait k", "lw1 wait k 1", "lw1 hold k",
        "lw1 hold k 1 ok", "lw1 wait k 1 ok extra", "lw1 hold k 1 2 3 4",
        /* outcome */
        "lw1 wait k 1 OK", "lw1 wait k 1 fail", "lw1 wait k 1 okay", "lw1 wait k 1 o",
        /* microseconds */
        "lw1 hold k -1", "lw1 hold k +1", "lw1 hold k 1.5", "lw1 hold k 1e3",
        "lw1 hold k 0x10", "lw1 hold k 12a", "lw1 hold k a12", "lw1 hold k 9007199254740993",
        "lw1 hold k 99999999999999999999", "lw1 hold k 18446744073709551616",
        "lw1 hold k 00000000000000042",    /* 17 digits */
        /* separators and stray bytes */
        "lw1  hold k 1", "lw1 hold  k 1", "lw1 hold k  1", " lw1 hold k 1", "lw1 hold k 1 ",
        "lw1\thold k 1", "lw1 hold k\t1", "lw1 hold k 1\t", "lw1 hold k\x7f 1",
        "lw1 hold k\x80 1", "lw1 hold caf\xc3\xa9 1", "lw1 hold k 1\r",
        /* key: bad escapes, empty */
        "lw1 hold % 1", "lw1 hold %4 1", "lw1 hold k%4 1", "lw1 hold %zz 1", "lw1 hold %g1 1",
        "lw1 hold %%41 1", "lw1 hold k% 1",
        /* nothing at all */
        "",
    };
    struct sample s;
    char buf[256];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i], &s, buf, sizeof(buf)) != -1) {
            print_error("accepted a malformed line: \"%s\"\n", bad[i]);
            fail();
        }
    }
    /* a NUL inside the line (not representable as a C string above) */
    memcpy(buf, "lw1 hold k\0x 1", 14);
    assert_int_equal(samples_parse_line(buf, 14, &s), -1);
}

static void
percent_decoding(void **state)
{
    struct sample s;
    char buf[256];

    (void)state;
    assert_int_equal(parse("lw1 hold lock%3Aa%20b%25c 1", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.keylen, 10);
    assert_memory_equal(s.key, "lock:a b%c", 10);
    /* either hex case; escaping a byte that need not be is fine */
    assert_int_equal(parse("lw1 hold %6c%6F%63%6B 1", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.keylen, 4);
    assert_memory_equal(s.key, "lock", 4);
    /* hostile bytes: NUL, newline, quote, backslash, invalid UTF-8 */
    assert_int_equal(parse("lw1 wait a%00b%0A%22%5C%FF%C3%28 5 ok", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.keylen, 9);
    assert_memory_equal(s.key, "a\0b\n\"\\\xff\xc3\x28", 9);
    /* a key that decodes to a single NUL byte is a key, not an empty one */
    assert_int_equal(parse("lw1 hold %00 1", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.keylen, 1);
}

static void
every_byte_round_trips(void **state)
{
    char key[256], enc[KEYTEXT_PERCENT_MAX(256)], line[1024];
    struct sample s;
    size_t n;
    int i, len;

    (void)state;
    for (i = 0; i < 256; i++)
        key[i] = (char)i;
    n = keytext_percent(enc, sizeof(enc), key, sizeof(key));
    assert_true(n < sizeof(enc));
    len = snprintf(line, sizeof(line), "lw1 wait %s 123 timeout", enc);
    assert_true(len > 0 && (size_t)len < sizeof(line));
    assert_int_equal(samples_parse_line(line, (size_t)len, &s), 0);
    assert_int_equal(s.keylen, 256);
    assert_memory_equal(s.key, key, 256);
    assert_int_equal(s.us, 123);
    assert_int_equal(s.outcome, SAMPLE_TIMEOUT);
}

/* Parse a datagram given as bytes; returns the valid count. */
static size_t
dgram(const char *text, size_t len, bool trunc, struct sample *out, size_t cap,
      uint64_t *lines, uint64_t *invalid)
{
    static char buf[SAMPLES_DATAGRAM_MAX + 1];

    assert_true(len <= sizeof(buf));
    memcpy(buf, text, len);
    return samples_parse_datagram(buf, len, trunc, out, cap, lines, invalid);
}

#define DG(s) (s), sizeof(s) - 1

static void
mixed_datagrams(void **state)
{
    struct sample out[16];
    uint64_t lines, invalid;
    size_t n;

    (void)state;
    n = dgram(DG("lw1 wait a 1 ok\n"
                 "lw1 wait b 2 nope\n"
                 "lw1 hold c 3\n"
                 "garbage\n"
                 "lw1 hold %zz 4\n"
                 "lw1 wait d 5 error\n"), false, out, 16, &lines, &invalid);
    assert_int_equal(n, 3);
    assert_int_equal(lines, 6);
    assert_int_equal(invalid, 3);
    assert_memory_equal(out[0].key, "a", 1);
    assert_int_equal(out[1].kind, SAMPLE_HOLD);
    assert_memory_equal(out[1].key, "c", 1);
    assert_int_equal(out[2].us, 5);
    assert_int_equal(out[2].outcome, SAMPLE_ERROR);
}

static void
line_endings(void **state)
{
    struct sample out[16];
    uint64_t lines, invalid;
    size_t n;

    (void)state;
    /* \r\n, and a last line without a terminator */
    n = dgram(DG("lw1 hold a 1\r\nlw1 hold b 2\nlw1 hold c 3"), false, out, 16, &lines, &invalid);
    assert_int_equal(n, 3);
    assert_int_equal(lines, 3);
    assert_int_equal(invalid, 0);
    assert_int_equal(out[0].us, 1);
    assert_int_equal(out[2].us, 3);
    assert_memory_equal(out[2].key, "c", 1);
    /* empty lines are not samples; a lone \r is an empty line */
    n = dgram(DG("\n\nlw1 hold a 1\n\r\n\n"), false, out, 16, &lines, &invalid);
    assert_int_equal(n, 1);
    assert_int_equal(lines, 1);
    assert_int_equal(invalid, 0);
    n = dgram(DG(""), false, out, 16, &lines, &invalid);
    assert_int_equal(n + lines + invalid, 0);
    /* \r elsewhere is a stray byte */
    n = dgram(DG("lw1 hold a 1\r\r\nlw1 hold\r b 1\n"), false, out, 16, &lines, &invalid);
    assert_int_equal(n, 0);
    assert_int_equal(invalid, 2);
    /* a NUL byte spoils only its own line */
    n = dgram("lw1 hold a 1\nlw1 hold \0 1\nlw1 hold c 3\n", 39, false, out, 16, &lines, &invalid);
    assert_int_equal(n, 2);
    assert_int_equal(lines, 3);
    assert_int_equal(invalid, 1);
}

static void
truncated_datagram(void **state)
{
    struct sample out[16];
    uint64_t lines, invalid;
    size_t n;

    (void)state;
    /* the kernel cut "lw1 hold c 3456": the "345" that arrived must not count */
    n = dgram(DG("lw1 hold a 1\nlw1 hold b 2\nlw1 hold c 345"), true, out, 16, &lines, &invalid);
    assert_int_equal(n, 2);
    assert_int_equal(lines, 3);
    assert_int_equal(invalid, 1);
    /* cut right after a terminator: the lost part is still one invalid line */
    n = dgram(DG("lw1 hold a 1\n"), true, out, 16, &lines, &invalid);
    assert_int_equal(n, 1);
    assert_int_equal(lines, 2);
    assert_int_equal(invalid, 1);
}

static void
limits(void **state)
{
    static char buf[SAMPLES_DATAGRAM_MAX + 64];
    static struct sample out[SAMPLES_MAX_PER(SAMPLES_DATAGRAM_MAX)];
    uint64_t lines, invalid;
    struct sample s;
    size_t n, len, keylen;

    (void)state;
    /* a line of exactly SAMPLES_LINE_MAX bytes is fine, one more is not */
    keylen = SAMPLES_LINE_MAX - strlen("lw1 hold  1");
    memcpy(buf, "lw1 hold ", 9);
    memset(buf + 9, 'k', keylen);
    memcpy(buf + 9 + keylen, " 1", 2);
    assert_int_equal(samples_parse_line(buf, SAMPLES_LINE_MAX, &s), 0);
    assert_int_equal(s.keylen, keylen);
    memcpy(buf, "lw1 hold ", 9);
    memset(buf + 9, 'k', keylen + 1);
    memcpy(buf + 10 + keylen, " 1", 2);
    assert_int_equal(samples_parse_line(buf, SAMPLES_LINE_MAX + 1, &s), -1);

    /* a datagram of nothing but the shortest valid lines fits the bound */
    for (len = 0; len + SAMPLES_LINE_MIN <= SAMPLES_DATAGRAM_MAX; len += SAMPLES_LINE_MIN)
        memcpy(buf + len, "lw1 hold k 0\n", SAMPLES_LINE_MIN);
    n = samples_parse_datagram(buf, len, false, out, SAMPLES_MAX_PER(len), &lines, &invalid);
    assert_int_equal(n, len / SAMPLES_LINE_MIN);
    assert_int_equal(invalid, 0);
    /* and without room for them, the rest count as invalid, never lost */
    for (len = 0; len + SAMPLES_LINE_MIN <= SAMPLES_DATAGRAM_MAX; len += SAMPLES_LINE_MIN)
        memcpy(buf + len, "lw1 hold k 0\n", SAMPLES_LINE_MIN);
    n = samples_parse_datagram(buf, len, false, out, 10, &lines, &invalid);
    assert_int_equal(n, 10);
    assert_int_equal(lines, len / SAMPLES_LINE_MIN);
    assert_int_equal(invalid, lines - 10);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_lines),
        cmocka_unit_test(malformed_lines),
        cmocka_unit_test(percent_decoding),
        cmocka_unit_test(every_byte_round_trips),
        cmocka_unit_test(mixed_datagrams),
        cmocka_unit_test(line_endings),
        cmocka_unit_test(truncated_datagram),
        cmocka_unit_test(limits),
    };

    return cmocka_run_group_tests_name("samples", tests, NULL, NULL);
}
