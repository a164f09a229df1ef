/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_table.c - lockctl list's columns on a narrow terminal
 * (cli/table.c's table_layout() with list.c's columns).  A user trial:
 * at 50 columns three leaks showed as lock…ace, at 40 the key as "…" and
 * STATE one letter a line, while FORMAT and HOLDER kept 8 and 10.  What
 * docs/lockctl.md promises: FORMAT and HOLDER give way before the key,
 * the key before STATE goes under 15, and STATE wraps between states,
 * never inside one.
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

enum { KEY, FORMAT, HOLDER, HOLDS, TTL, AGE, STATE };

/* Three leaks told apart by their middles and ends, as in the trial. */
static void
leaks(struct table *t, const char *state)
{
    static const char *const keys[] = {
        "lock:tenant:acme:invoice:1001", "lock:tenant:acme:invoice:1002",
        "lock:tenant:acme:payment:1001",
    };

    table_init(t, list_table_cols, list_table_ncols);
    for (size_t i = 0; i < 3; i++) {
        const char *row[] = { keys[i], "redisson", "8743c9c0-0795-4907-87fd-6c719a6b4586:57",
                              "1", "-", "12m3s", state };

        assert_int_equal(table_add(t, row, NULL), 0);
    }
}

static size_t
total(const size_t *w)
{
    size_t n = 0, shown = 0;

    for (size_t i = 0; i < list_table_ncols; i++)
        if (w[i] > 0) {
            n += w[i];
            shown++;
        }
    return n + 2 * (shown - 1);
}

static void
layout(struct table *t, size_t width, size_t *w)
{
    table_layout(t, width, w);
    assert_true(total(w) <= width);
}

static void
test_80_keeps_every_column(void **state)
{
    struct table t;
    size_t w[16];

    (void)state;
    leaks(&t, "leaked");
    layout(&t, 80, w);
    assert_true(w[KEY] >= 24);
    assert_true(w[FORMAT] >= 8);
    assert_true(w[HOLDER] >= 10);
    assert_int_equal(w[STATE], strlen("leaked"));
    table_release(&t);
}

static void
test_66_to_50_format_then_holder_give_way(void **state)
{
    struct table t;
    size_t w[16];

    (void)state;
    leaks(&t, "leaked");
    /* FORMAT first: the holder stays, the key whole */
    layout(&t, 68, w);
    assert_int_equal(w[FORMAT], 0);
    assert_true(w[HOLDER] >= 10);
    assert_int_equal(w[KEY], strlen("lock:tenant:acme:invoice:1001"));
    layout(&t, 66, w);
    assert_int_equal(w[FORMAT], 0);
    assert_true(w[HOLDER] >= 10);
    assert_true(w[KEY] >= 24);
    /* then HOLDER, rather than a key under 24 */
    layout(&t, 60, w);
    assert_int_equal(w[FORMAT], 0);
    assert_int_equal(w[HOLDER], 0);
    assert_int_equal(w[KEY], strlen("lock:tenant:acme:invoice:1001"));
    /* the trial's COLUMNS=50 list --state leaked: the key was 8 */
    layout(&t, 50, w);
    assert_int_equal(w[FORMAT], 0);
    assert_int_equal(w[HOLDER], 0);
    assert_int_equal(total(w), 50);             /* the key has the rest: 23 */
    assert_true(w[KEY] >= 20);
    assert_int_equal(w[STATE], strlen("leaked"));
    table_release(&t);
}

static void
test_40_key_before_state(void **state)
{
    struct table t;
    size_t w[16];

    (void)state;
    /* the trial's COLUMNS=40 list: the key was "…", STATE one letter a line */
    leaks(&t, "leaked");
    layout(&t, 40, w);
    assert_int_equal(w[FORMAT], 0);
    assert_int_equal(w[HOLDER], 0);
    assert_true(w[KEY] >= 8);
    assert_int_equal(w[STATE], strlen("leaked"));
    table_release(&t);
    /* every state: STATE keeps 15 while the key has more than 8, then
     * wraps between states, never inside reentrant_high */
    leaks(&t, "leaked, long, reentrant_high");
    layout(&t, 50, w);
    assert_int_equal(w[STATE], 15);
    assert_true(w[KEY] >= 8);
    layout(&t, 40, w);
    assert_true(w[STATE] >= strlen("reentrant_high"));
    assert_true(w[KEY] >= 1);
    table_release(&t);
}

static void
test_40_prints_no_broken_state(void **state)
{
    struct table t;
    char buf[8192] = "";
    FILE *fp = fmemopen(buf, sizeof(buf), "w");

    (void)state;
    assert_non_null(fp);
    leaks(&t, "leaked, long");
    table_print(&t, fp, 40);
    fclose(fp);
    table_release(&t);
    assert_non_null(strstr(buf, "leaked,"));
    /* no line wider than 40, no FORMAT or HOLDER title, whole states */
    for (char *ln = buf, *nl; *ln != '\0'; ln = nl + 1) {
        nl = strchr(ln, '\n');
        assert_non_null(nl);
        *nl = '\0';
        assert_true(table_text_width(ln) <= 40);
        assert_null(strstr(ln, "FORMAT"));
        assert_null(strstr(ln, "HOLDER"));
        if (strstr(ln, "lock") == NULL && strncmp(ln, "KEY", 3) != 0)
            assert_true(strstr(ln, "long") != NULL);        /* its own line, whole */
    }
}

/* A row whose last cells are empty (audit's reason, a lock with no
 * state to add) ends at its last character: nothing pads it, so a paste
 * into a ticket carries no trailing blanks. */
static void
test_no_trailing_blanks(void **state)
{
    struct table t;
    char buf[8192] = "";
    FILE *fp = fmemopen(buf, sizeof(buf), "w");
    const char *row[] = { "lock:a", "plain", "tok", "1", "-", "3s", "" };

    (void)state;
    assert_non_null(fp);
    table_init(&t, list_table_cols, list_table_ncols);
    assert_int_equal(table_add(&t, row, NULL), 0);
    table_print(&t, fp, 80);
    fclose(fp);
    table_release(&t);
    assert_non_null(strstr(buf, "lock:a"));
    for (char *ln = buf, *nl; *ln != '\0'; ln = nl + 1) {
        nl = strchr(ln, '\n');
        assert_non_null(nl);
        assert_true(nl == ln || nl[-1] != ' ');
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_80_keeps_every_column),
        cmocka_unit_test(test_66_to_50_format_then_holder_give_way),
        cmocka_unit_test(test_40_key_before_state),
        cmocka_unit_test(test_40_prints_no_broken_state),
        cmocka_unit_test(test_no_trailing_blanks),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
