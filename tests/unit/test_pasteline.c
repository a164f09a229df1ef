/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_pasteline.c - the commands lockctl prints to paste (cli/pasteline.c):
 * a key up to PASTE_WORD_MAX gets its line whatever its length, and a
 * longer one none, for the reason that is true (a user trial: a 16 KiB
 * ASCII key was said to hold a control character).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/lockctl.h"

/* A pasteline of "release KEY --holder tok" for a plain key of n bytes. */
static void
release_line(struct pasteline *pl, size_t n, char fill)
{
    char *key = malloc(n);

    assert_non_null(key);
    memcpy(key, "lock:", 5);
    memset(key + 5, fill, n - 5);
    memset(pl, 0, sizeof(*pl));
    paste_word(pl, "release");
    paste_key_holder(pl, key, n, "tok", 3);
    free(key);
}

static void
test_long_key_has_a_line(void **state)
{
    struct pasteline pl;

    (void)state;
    release_line(&pl, 16370, 'x');
    assert_false(pl.failed);
    assert_int_equal(pl.n, 4);
    assert_int_equal(strlen(pl.words[1]), 16370);
    paste_release(&pl);
    release_line(&pl, PASTE_WORD_MAX, 'x');
    assert_false(pl.failed);
    paste_release(&pl);
}

static void
test_too_long_key_says_so(void **state)
{
    static const size_t lens[] = { 16390, PASTE_WORD_MAX + 1, 65536 + 5 };
    struct pasteline pl;

    (void)state;
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        release_line(&pl, lens[i], 'x');
        assert_true(pl.failed);
        assert_non_null(strstr(pl.why, "key too long for a command line"));
        assert_null(strstr(pl.why, "control character"));
        paste_release(&pl);
    }
    /* quoted (a space) or percent-encoded (a control byte): the word's
     * length counts, not the key's */
    release_line(&pl, PASTE_WORD_MAX - 1, ' ');
    assert_true(pl.failed);
    assert_non_null(strstr(pl.why, "key too long"));
    paste_release(&pl);
    release_line(&pl, PASTE_WORD_MAX / 2, '\x01');
    assert_true(pl.failed);
    assert_non_null(strstr(pl.why, "key too long"));
    paste_release(&pl);
}

static void
test_control_character_in_an_option(void **state)
{
    struct pasteline pl;

    (void)state;
    memset(&pl, 0, sizeof(pl));
    paste_word(&pl, "-c");
    paste_word(&pl, "/etc/lock\x1bwatch.ini");
    assert_true(pl.failed);
    assert_string_equal(pl.why, "an option holds a control character");
    paste_release(&pl);
}

static void
test_show_prints_the_reason(void **state)
{
    struct pasteline pl;
    char buf[4096] = "";
    FILE *fp = fmemopen(buf, sizeof(buf), "w");

    (void)state;
    assert_non_null(fp);
    release_line(&pl, 20000, 'x');
    paste_show(fp, &pl, 80, "release with:");
    paste_release(&pl);
    release_line(&pl, 40, 'x');
    paste_show(fp, &pl, 80, "release with:");
    paste_release(&pl);
    fclose(fp);
    assert_non_null(strstr(buf, "no release command: key too long for a command line "
                           "(20000 bytes"));
    assert_non_null(strstr(buf, "release with:\nrelease lock:xxx"));
    assert_null(strstr(buf, "not printable"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_key_has_a_line),
        cmocka_unit_test(test_too_long_key_says_so),
        cmocka_unit_test(test_control_character_in_an_option),
        cmocka_unit_test(test_show_prints_the_reason),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
