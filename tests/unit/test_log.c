/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_log.c - the escaping every log message and every config error gets
 * (log_defang): control bytes as \xNN, backslashes doubled, output cut
 * whole at its size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/log.h"

static void
defang_escapes_control_bytes(void **state)
{
    char out[LOG_DEFANG_MAX(64)];

    (void)state;
    log_defang(out, sizeof(out), "x.ini:3: \x1b[2J\x1b]0;owned\x07 key\r\nforged\x7f");
    assert_string_equal(out, "x.ini:3: \\x1b[2J\\x1b]0;owned\\x07 key\\x0d\\x0aforged\\x7f");
    assert_null(strchr(out, '\x1b'));
}

static void
defang_doubles_backslashes_and_keeps_utf8(void **state)
{
    char out[LOG_DEFANG_MAX(64)];

    (void)state;
    /* a literal "\x1b" in the input cannot pass for an escaped ESC */
    log_defang(out, sizeof(out), "a\\x1b caf\xc3\xa9");
    assert_string_equal(out, "a\\\\x1b caf\xc3\xa9");
}

/* What reorders or hides text is escaped too: a key with a right-to-left
 * override cannot show a log line backwards, a C1 CSI is no escape. */
static void
defang_escapes_bidi_and_c1(void **state)
{
    char out[LOG_DEFANG_MAX(64)];

    (void)state;
    log_defang(out, sizeof(out), "lock:\xe2\x80\xaeRTL \xc2\x9b" "31m \xe2\x81\xa6x\xe2\x80\x8b caf\xc3\xa9");
    assert_string_equal(out, "lock:\\u202eRTL \\u009b31m \\u2066x\\u200b caf\xc3\xa9");
    assert_null(strstr(out, "\xe2\x80\xae"));
}

static void
defang_cuts_whole_escapes(void **state)
{
    char out[8];

    (void)state;
    /* room for 7 bytes: "ab" and one \xNN fit, the next escape does not */
    log_defang(out, sizeof(out), "ab\x01\x02");
    assert_string_equal(out, "ab\\x01");
    log_defang(out, 1, "abc");
    assert_string_equal(out, "");
}

static void
defang_worst_case_fits(void **state)
{
    char in[33], out[LOG_DEFANG_MAX(32)];

    (void)state;
    memset(in, '\x1b', 32);
    in[32] = '\0';
    log_defang(out, sizeof(out), in);
    assert_int_equal(strlen(out), 4 * 32);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defang_escapes_control_bytes),
        cmocka_unit_test(defang_doubles_backslashes_and_keeps_utf8),
        cmocka_unit_test(defang_escapes_bidi_and_c1),
        cmocka_unit_test(defang_cuts_whole_escapes),
        cmocka_unit_test(defang_worst_case_fits),
    };

    return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
