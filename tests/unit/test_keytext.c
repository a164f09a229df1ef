/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_keytext.c - sanitising, percent-encoding and hashing of raw bytes.
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

static void
sanitize_keeps_valid_utf8(void **state)
{
    char out[64];
    const char *in = "lock:caf\xc3\xa9:\xe2\x82\xac:\xf0\x9f\x94\x92";

    (void)state;
    assert_int_equal(keytext_sanitize(out, sizeof(out), in, strlen(in)), strlen(in));
    assert_string_equal(out, in);
}

static void
sanitize_replaces_invalid_bytes(void **state)
{
    char out[64];
    /* lone continuation, truncated 2-byte, overlong '/', surrogate, NUL */
    const char in[] = "a\x80" "b\xc3" "c\xc0\xaf" "d\xed\xa0\x80" "e\0f";
    size_t n = keytext_sanitize(out, sizeof(out), in, sizeof(in) - 1);

    (void)state;
    assert_string_equal(out, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd"
                        "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "e\xef\xbf\xbd" "f");
    assert_int_equal(n, strlen(out));
}

/* Labels: control bytes but '\n' (ESC, CR, TAB, DEL) become U+FFFD too;
 * plain sanitising keeps them (JSON and the table escape them). */
static void
sanitize_label_replaces_control_bytes(void **state)
{
    char out[64];
    const char in[] = "k\x1b[31m\rx\ty\x7f" "z\n\x01";
    size_t n;

    (void)state;
    n = keytext_sanitize_label(out, sizeof(out), in, sizeof(in) - 1);
    assert_string_equal(out, "k\xef\xbf\xbd[31m\xef\xbf\xbdx\xef\xbf\xbdy\xef\xbf\xbd" "z\n\xef\xbf\xbd");
    assert_int_equal(n, strlen(out));
    assert_int_equal(keytext_sanitize(out, sizeof(out), in, sizeof(in) - 1), sizeof(in) - 1);
    assert_memory_equal(out, in, sizeof(in) - 1);
    /* printable ASCII and valid UTF-8 are unchanged */
    assert_int_equal(keytext_sanitize_label(NULL, 0, "lock:caf\xc3\xa9 ~", 12), 12);
}

/* Texts (alert labels and annotations): also bidi controls, C1 and the
 * other characters lockctl's tables replace, each one U+FFFD; '\n' and
 * ordinary UTF-8 kept (an on-call trial: a holder "\u202eevil" reversed a
 * Slack message).  keytext_sanitize_label() keeps bidi controls (metric
 * labels are written with the text rule; a label is what an alert
 * compares). */
static void
sanitize_text_replaces_bidi_controls(void **state)
{
    static const char *const unsafe[] = {
        "\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad", "\xe2\x80\xae", /* 202A-E */
        "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9",                 /* 2066-9 */
        "\xe2\x80\x8e", "\xe2\x80\x8f",                                                  /* LRM, RLM */
        "\xc2\x85", "\xe2\x80\x8b", "\xe2\x80\xa8", "\xef\xbb\xbf", "\x1b",         /* NEL, ZWSP, LS, BOM, ESC */
    };
    char in[32], out[64];
    size_t i, n;

    (void)state;
    for (i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++) {
        snprintf(in, sizeof(in), "a%sb", unsafe[i]);
        n = keytext_sanitize_text(out, sizeof(out), in, strlen(in));
        assert_string_equal(out, "a\xef\xbf\xbd" "b");
        assert_int_equal(n, 5);
        /* a change the length cannot show is still seen */
        assert_false(keytext_text_clean(in, strlen(in)));
    }
    assert_true(keytext_text_clean("caf\xc3\xa9\n\xe6\x97\xa5", 9));
    assert_false(keytext_text_clean("a\xff", 2));
    assert_false(keytext_text_clean("a\0b", 3));
    /* the label keeps them: same length, same bytes */
    assert_int_equal(keytext_sanitize_label(out, sizeof(out), "holder \xe2\x80\xae" "evil", 14), 14);
    assert_string_equal(out, "holder \xe2\x80\xae" "evil");
    /* a newline, accents, CJK, the ellipsis and U+FFFD itself are kept */
    n = keytext_sanitize_text(out, sizeof(out), "caf\xc3\xa9\n\xe6\x97\xa5\xe2\x80\xa6\xef\xbf\xbd", 15);
    assert_int_equal(n, 15);
    assert_string_equal(out, "caf\xc3\xa9\n\xe6\x97\xa5\xe2\x80\xa6\xef\xbf\xbd");
    /* invalid bytes still one U+FFFD each; the size is still bounded */
    n = keytext_sanitize_text(out, sizeof(out), "\xff\xc2\x85", 3);
    assert_int_equal(n, 6);
    assert_true(n <= KEYTEXT_SANITIZED_MAX(3) - 1);
    assert_int_equal(keytext_sanitize_text(NULL, 0, "\xe2\x80\xae", 3), 3);
}

static void
sanitize_reports_needed_size_when_short(void **state)
{
    char out[4];
    size_t n = keytext_sanitize(out, sizeof(out), "\xff\xff", 2);

    (void)state;
    assert_int_equal(n, 6);
    assert_int_equal(strlen(out), 3);
}

/* What a client sent, echoed: printable ASCII kept, every other byte '?',
 * cut at the buffer's size. */
static void
ascii_echo_is_printable_and_cut(void **state)
{
    char out[8];

    (void)state;
    assert_int_equal(keytext_ascii(out, sizeof(out), "st\x1b[1m"), 6);
    assert_string_equal(out, "st?[1m");
    assert_int_equal(keytext_ascii(out, sizeof(out), "caf\xc3\xa9\x7f"), 6);
    assert_string_equal(out, "caf???");
    assert_int_equal(keytext_ascii(out, sizeof(out), "0123456789"), 10);
    assert_string_equal(out, "0123456");
}

static void
percent_round_trips_every_byte(void **state)
{
    char in[256], enc[KEYTEXT_PERCENT_MAX(256)], dec[256 * 3];
    size_t n, m;
    int i;

    (void)state;
    for (i = 0; i < 256; i++)
        in[i] = (char)i;
    n = keytext_percent(enc, sizeof(enc), in, sizeof(in));
    assert_int_equal(n, strlen(enc));
    for (i = 0; enc[i]; i++)
        assert_true(enc[i] > 0x20 && enc[i] < 0x7f);
    m = keytext_unpercent(dec, enc, n, 0);
    assert_int_equal(m, 256);
    assert_memory_equal(dec, in, 256);
}

static void
percent_encodes_the_protocol_set(void **state)
{
    char out[64];

    (void)state;
    keytext_percent(out, sizeof(out), "lock:a b%c\n~", 12);
    assert_string_equal(out, "lock:a%20b%25c%0A~");
}

static void
unpercent_refuses_bad_escapes(void **state)
{
    char out[16];

    (void)state;
    assert_int_equal(keytext_unpercent(out, "a%2", 3, 0), (size_t)-1);
    assert_int_equal(keytext_unpercent(out, "a%zz", 4, 0), (size_t)-1);
    assert_int_equal(keytext_unpercent(out, "%", 1, 0), (size_t)-1);
    assert_int_equal(keytext_unpercent(out, "a+b", 3, 1), 3);
    assert_memory_equal(out, "a b", 3);
    assert_int_equal(keytext_unpercent(out, "a+b", 3, 0), 3);
    assert_memory_equal(out, "a+b", 3);
}

/* The undecoded prefix (found with memchr) is copied into a separate out,
 * left alone in place, and the decoding after it is unchanged. */
static void
unpercent_copies_the_plain_prefix(void **state)
{
    char out[32], in[32];

    (void)state;
    memset(out, '#', sizeof(out));
    assert_int_equal(keytext_unpercent(out, "lock:plain", 10, 0), 10);
    assert_memory_equal(out, "lock:plain", 10);
    assert_int_equal(out[10], '#');
    assert_int_equal(keytext_unpercent(out, "lock:a%20b+c", 12, 0), 10);
    assert_memory_equal(out, "lock:a b+c", 10);
    assert_int_equal(keytext_unpercent(out, "lock:a+b%41", 11, 1), 9);
    assert_memory_equal(out, "lock:a bA", 9);
    strcpy(in, "lock:x%2Fy%25");
    assert_int_equal(keytext_unpercent(in, in, strlen(in), 0), 9);
    assert_memory_equal(in, "lock:x/y%", 9);
    strcpy(in, "lock:x");
    assert_int_equal(keytext_unpercent(in, in, 6, 1), 6);
    assert_memory_equal(in, "lock:x", 6);
    assert_int_equal(keytext_unpercent(out, "", 0, 0), 0);
    assert_int_equal(keytext_unpercent(out, "lock:x%4", 8, 0), (size_t)-1);
}

static void
utf8_prefix_never_splits_a_sequence(void **state)
{
    const char *s = "ab\xe2\x82\xac" "cd";

    (void)state;
    assert_int_equal(keytext_utf8_prefix(s, strlen(s), 3), 2);
    assert_int_equal(keytext_utf8_prefix(s, strlen(s), 5), 5);
    assert_int_equal(keytext_utf8_prefix(s, strlen(s), 100), strlen(s));
}

static void
hash_is_never_zero_and_spreads(void **state)
{
    char buf[16];
    uint64_t a, b;
    int i, same_low = 0;

    (void)state;
    assert_true(keytext_hash("", 0) != 0);
    a = keytext_hash("lock:1", 6);
    b = keytext_hash("lock:2", 6);
    assert_true(a != b);
    /* neighbouring keys must not share low bits (the tracker's index) */
    for (i = 0; i < 1000; i++) {
        int n = snprintf(buf, sizeof(buf), "lock:%d", i);

        if ((keytext_hash(buf, (size_t)n) & 0x3ff) == (a & 0x3ff))
            same_low++;
    }
    assert_true(same_low < 10);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sanitize_keeps_valid_utf8),
        cmocka_unit_test(sanitize_replaces_invalid_bytes),
        cmocka_unit_test(sanitize_label_replaces_control_bytes),
        cmocka_unit_test(sanitize_text_replaces_bidi_controls),
        cmocka_unit_test(sanitize_reports_needed_size_when_short),
        cmocka_unit_test(ascii_echo_is_printable_and_cut),
        cmocka_unit_test(percent_round_trips_every_byte),
        cmocka_unit_test(percent_encodes_the_protocol_set),
        cmocka_unit_test(unpercent_refuses_bad_escapes),
        cmocka_unit_test(unpercent_copies_the_plain_prefix),
        cmocka_unit_test(utf8_prefix_never_splits_a_sequence),
        cmocka_unit_test(hash_is_never_zero_and_spreads),
    };

    return cmocka_run_group_tests_name("keytext", tests, NULL, NULL);
}
