/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_procstat.c - the text of /proc/<pid>/stat to the figures of the
 * process_* metrics (common/procstat.h): the fields after a command name
 * with spaces and parentheses, and texts refused whole (cut short, a
 * field that is not a decimal, no command name) with the output untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/procstat.h"

/* A real line of Linux 6.1 (cat), fields 14/15 changed to 7 and 3. */
#define TAIL " R 18375 18375 32394 0 -1 4194304 101 0 0 0 7 3 0 0 20 0 1 0 55969 " \
    "3133440 411 18446744073709551615 94719903731712 94719903751593 140724721384864 " \
    "0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94719903767600 94719903769216 94720200798208 " \
    "140724721392115 140724721392135 140724721392135 140724721393643 0\n"

static int
parse(const char *text, struct procstat *ps)
{
    return procstat_parse_stat(text, strlen(text), ps);
}

static void
reads_the_fields(void **state)
{
    struct procstat ps;

    (void)state;
    assert_int_equal(parse("18379 (cat)" TAIL, &ps), 0);
    assert_int_equal(ps.utime_ticks, 7);
    assert_int_equal(ps.stime_ticks, 3);
    assert_int_equal(ps.vsize_bytes, 3133440);
    assert_int_equal(ps.rss_pages, 411);
}

/* comm is the executable's name, which its owner chooses: ") 1 2 (" must
 * not shift the fields */
static void
command_name_with_spaces_and_parens(void **state)
{
    struct procstat ps;

    (void)state;
    assert_int_equal(parse("42 (lock watch) 9 9 9 9 9)" TAIL, &ps), 0);
    assert_int_equal(ps.utime_ticks, 7);
    assert_int_equal(ps.rss_pages, 411);
    assert_int_equal(parse("42 ())" TAIL, &ps), 0);
    assert_int_equal(ps.vsize_bytes, 3133440);
}

/* the last field read is rss (24): a text that ends there will do, one
 * that ends before it will not */
static void
refuses_a_text_cut_short(void **state)
{
    static const char full[] = "1 (x) R 0 1 1 0 -1 4194560 0 0 0 0 12 34 0 0 20 0 1 0 5 "
        "1000 2";
    struct procstat ps = { 1, 1, 1, 1 };

    (void)state;
    assert_int_equal(procstat_parse_stat(full, strlen(full), &ps), 0);
    assert_int_equal(ps.utime_ticks, 12);
    assert_int_equal(ps.rss_pages, 2);
    memset(&ps, 0xab, sizeof(ps));
    /* rss cut to nothing, then to its field's space */
    assert_int_equal(procstat_parse_stat(full, strlen(full) - 1, &ps), -1);
    assert_int_equal(procstat_parse_stat(full, strlen(full) - 2, &ps), -1);
    assert_int_equal(procstat_parse_stat(full, 10, &ps), -1);
    assert_int_equal(procstat_parse_stat(full, 0, &ps), -1);
    assert_int_equal(ps.utime_ticks, 0xababababababababULL);
}

static void
refuses_what_is_not_a_stat_line(void **state)
{
    struct procstat ps;

    (void)state;
    /* no command name at all */
    assert_int_equal(parse("18379 cat" TAIL, &ps), -1);
    assert_int_equal(parse("", &ps), -1);
    /* a field that is not a decimal: a negative rss, a sign, a letter */
    assert_int_equal(parse("1 (x) R 0 1 1 0 -1 4194560 0 0 0 0 12 34 0 0 20 0 1 0 5 1000 -2",
                           &ps), -1);
    assert_int_equal(parse("1 (x) R 0 1 1 0 -1 4194560 0 0 0 0 +12 34 0 0 20 0 1 0 5 1000 2",
                           &ps), -1);
    assert_int_equal(parse("1 (x) R 0 1 1 0 -1 4194560 0 0 0 0 12 3x 0 0 20 0 1 0 5 1000 2",
                           &ps), -1);
    /* two spaces: an empty field, not the next one */
    assert_int_equal(parse("1 (x) R 0 1 1 0 -1 4194560 0 0 0 0  12 34 0 0 20 0 1 0 5 1000 2",
                           &ps), -1);
    /* over 19 digits */
    assert_int_equal(parse("1 (x) R 0 1 1 0 -1 4194560 0 0 0 0 12 34 0 0 20 0 1 0 5 "
                           "99999999999999999999 2", &ps), -1);
}

static void
fd_names(void **state)
{
    (void)state;
    assert_true(procstat_is_fd_name("0"));
    assert_true(procstat_is_fd_name("1023"));
    assert_false(procstat_is_fd_name("."));
    assert_false(procstat_is_fd_name(".."));
    assert_false(procstat_is_fd_name(""));
    assert_false(procstat_is_fd_name("12a"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_the_fields),
        cmocka_unit_test(command_name_with_spaces_and_parens),
        cmocka_unit_test(refuses_a_text_cut_short),
        cmocka_unit_test(refuses_what_is_not_a_stat_line),
        cmocka_unit_test(fd_names),
    };

    return cmocka_run_group_tests_name("procstat", tests, NULL, NULL);
}
