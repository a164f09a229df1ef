/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_eventjson.c - the timeline's renderings with synthetic events of
 * every kind: the JSON of /api/v1/events (fields, hostile keys escaped
 * and cut, the page's after / limit / kind / gap / next_after) and
 * lockctl events' output (within the width, every kind, one first line
 * per event whatever its key holds, details wrapped at spaces with ids,
 * addresses and owners whole, keys cut in the middle).
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
#include "collectors/events/eventjson.h"
#include "common/keytext.h"

static char hostile[64 * 1024];

static int
reset(void **state)
{
    static const char head[] = "lock:\"q'<b>\n\r\t\x1b[31m\xff\xfe\xc3\xe2\x80\xae";

    (void)state;
    events_reset();
    memset(hostile, 'x', sizeof(hostile));
    memcpy(hostile, head, sizeof(head) - 1);
    return 0;
}

static uint64_t
push(enum event_kind k, const char *key, size_t keylen, const char *target, double seconds)
{
    struct event_in in = { .kind = k, .target = target, .key = key, .keylen = keylen,
                           .holder = "6f1c2a:1\n\"evil\"", .holderlen = 15,
                           .klass = "lock:order",
                           .detail = "held 3s; \"quoted\"\nsecond line", .seconds = seconds };

    return events_push(&in);
}

static json_t *
page(bool has_after, uint64_t after, int kind, const char *target, size_t limit)
{
    struct events_query q = { .has_after = has_after, .after = after, .kind = kind,
                              .target = target, .limit = limit };
    json_t *p = events_page_json(&q);

    assert_non_null(p);
    return p;
}

static uint64_t
seq_at(const json_t *p, size_t i)
{
    return (uint64_t)json_integer_value(json_object_get(
        json_array_get(json_object_get(p, "events"), i), "seq"));
}

static void
every_kind_as_json(void **state)
{
    json_t *p, *e;
    char *text, *want;
    size_t i, n;

    (void)state;
    for (int k = 0; k < EVENT_KIND_COUNT; k++)
        assert_int_equal(push((enum event_kind)k, hostile, sizeof(hostile), "main", 1.5),
                         (uint64_t)k + 1);
    p = page(false, 0, -1, NULL, EVENTS_MAX);
    assert_int_equal(json_integer_value(json_object_get(p, "count")), EVENT_KIND_COUNT);
    assert_int_equal(json_integer_value(json_object_get(p, "last_seq")), EVENT_KIND_COUNT);
    want = malloc(KEYTEXT_PERCENT_MAX(EVENT_KEY_MAX));
    assert_non_null(want);
    keytext_percent(want, KEYTEXT_PERCENT_MAX(EVENT_KEY_MAX), hostile, EVENT_KEY_MAX);
    json_array_foreach(json_object_get(p, "events"), i, e) {
        assert_string_equal(json_string_value(json_object_get(e, "kind")),
                            event_kind_name((enum event_kind)i));
        assert_string_equal(json_string_value(json_object_get(e, "severity")),
                            event_kind_severity((enum event_kind)i));
        assert_string_equal(json_string_value(json_object_get(e, "key_escaped")), want);
        assert_true(json_is_true(json_object_get(e, "key_cut")));
        assert_string_equal(json_string_value(json_object_get(e, "target")), "main");
        assert_string_equal(json_string_value(json_object_get(e, "class")), "lock:order");
        assert_true(json_real_value(json_object_get(e, "seconds")) == 1.5);
        assert_non_null(strstr(json_string_value(json_object_get(e, "time")), "Z"));
        assert_true(json_integer_value(json_object_get(e, "time_ms")) > 0);
        /* sanitised: the invalid bytes are U+FFFD, the rest kept */
        assert_non_null(strstr(json_string_value(json_object_get(e, "key")), "\xef\xbf\xbd"));
    }
    free(want);
    text = json_dumps(p, JSON_COMPACT);
    assert_non_null(text);
    n = strlen(text);
    assert_null(memchr(text, '\n', n));                 /* escaped in the JSON */
    assert_true(n < (size_t)EVENT_KIND_COUNT * 16 * 1024);
    free(text);
    json_decref(p);
}

static void
absent_fields_are_null(void **state)
{
    struct event_in in = { .kind = EVENT_DEADLOCK, .detail = "a cycle", .seconds = -1 };
    json_t *p, *e;

    (void)state;
    events_push(&in);
    p = page(false, 0, -1, NULL, 10);
    e = json_array_get(json_object_get(p, "events"), 0);
    assert_true(json_is_null(json_object_get(e, "key")));
    assert_true(json_is_null(json_object_get(e, "key_escaped")));
    assert_true(json_is_false(json_object_get(e, "key_cut")));
    assert_true(json_is_null(json_object_get(e, "holder")));
    assert_true(json_is_null(json_object_get(e, "holder_escaped")));
    assert_true(json_is_false(json_object_get(e, "holder_cut")));
    assert_true(json_is_null(json_object_get(e, "target")));
    assert_true(json_is_null(json_object_get(e, "seconds")));
    assert_string_equal(json_string_value(json_object_get(e, "detail")), "a cycle");
    json_decref(p);
}

/* A holder is bytes: one that starts with a NUL and is not UTF-8 keeps
 * every byte (holder_escaped), shown sanitised (holder); a long one is
 * cut at EVENT_HOLDER_MAX and said to be. */
static void
binary_holder_survives(void **state)
{
    static const char bin[] = { 0x00, 0x01, 0x02, (char)0xff };
    static char long_holder[EVENT_HOLDER_MAX + 10];
    struct event_in in = { .kind = EVENT_LOST_AT_FAILOVER, .target = "main", .key = "lock:b",
                           .keylen = 6, .holder = bin, .holderlen = sizeof(bin),
                           .detail = "lost at a restart", .seconds = -1 };
    json_t *p, *e;

    (void)state;
    events_push(&in);
    memset(long_holder, 'h', sizeof(long_holder));
    in.holder = long_holder;
    in.holderlen = sizeof(long_holder);
    events_push(&in);
    p = page(false, 0, -1, NULL, 10);
    e = json_array_get(json_object_get(p, "events"), 0);
    assert_string_equal(json_string_value(json_object_get(e, "holder_escaped")), "%00%01%02%FF");
    /* sanitised: the NUL and 0xff are U+FFFD */
    assert_int_equal(json_string_length(json_object_get(e, "holder")), 8);
    assert_memory_equal(json_string_value(json_object_get(e, "holder")),
                        "\xef\xbf\xbd\x01\x02\xef\xbf\xbd", 8);
    assert_true(json_is_false(json_object_get(e, "holder_cut")));
    e = json_array_get(json_object_get(p, "events"), 1);
    assert_int_equal(json_string_length(json_object_get(e, "holder_escaped")), EVENT_HOLDER_MAX);
    assert_true(json_is_true(json_object_get(e, "holder_cut")));
    json_decref(p);
}

static void
page_after_limit_kind_gap(void **state)
{
    json_t *p;

    (void)state;
    for (int i = 0; i < 5; i++)
        push(i % 2 ? EVENT_DEADLOCK : EVENT_LEASE_LOST, "lock:a", 6, i < 4 ? "main" : "b", -1);
    p = page(true, 2, -1, NULL, 2);                     /* forward from 2 */
    assert_int_equal(seq_at(p, 0), 3);
    assert_int_equal(seq_at(p, 1), 4);
    assert_true(json_is_true(json_object_get(p, "more")));
    assert_int_equal(json_integer_value(json_object_get(p, "next_after")), 4);
    assert_true(json_is_false(json_object_get(p, "gap")));
    json_decref(p);
    p = page(false, 0, -1, NULL, 2);                    /* the newest */
    assert_int_equal(seq_at(p, 0), 4);
    assert_int_equal(seq_at(p, 1), 5);
    assert_int_equal(json_integer_value(json_object_get(p, "next_after")), 5);
    json_decref(p);
    p = page(true, 0, EVENT_DEADLOCK, NULL, 10);        /* one kind: 2 and 4 */
    assert_int_equal(json_integer_value(json_object_get(p, "count")), 2);
    assert_int_equal(seq_at(p, 1), 4);
    assert_int_equal(json_integer_value(json_object_get(p, "next_after")), 5);
    json_decref(p);
    p = page(true, 0, -1, "b", 10);                     /* one target */
    assert_int_equal(json_integer_value(json_object_get(p, "count")), 1);
    assert_int_equal(seq_at(p, 0), 5);
    json_decref(p);
    p = page(true, 9, -1, NULL, 10);                    /* beyond: a restart */
    assert_true(json_is_true(json_object_get(p, "gap")));
    assert_int_equal(json_integer_value(json_object_get(p, "count")), 5);
    json_decref(p);
    for (int i = 0; i < EVENTS_MAX; i++)                /* 1..5 pushed out */
        push(EVENT_INVERSION, "lock:b", 6, "main", -1);
    p = page(true, 3, -1, NULL, 1);
    assert_true(json_is_true(json_object_get(p, "gap")));
    assert_int_equal(seq_at(p, 0), 6);
    assert_int_equal(json_integer_value(json_object_get(p, "dropped")), 5);
    json_decref(p);
    p = page(true, 5, -1, NULL, 1);                     /* nothing missed */
    assert_true(json_is_false(json_object_get(p, "gap")));
    json_decref(p);
}

/* Print the events of page p as lockctl does at width into a new string. */
static char *
printed(const json_t *p, size_t width)
{
    struct table t;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);

    assert_non_null(fp);
    table_init(&t, events_table_cols, events_table_ncols);
    assert_true(events_table_add(&t, p, 0) > 0);
    assert_int_equal(events_table_print(&t, fp, width, true), 0);
    fclose(fp);
    table_release(&t);
    return buf;
}

/* Every line of s at most width columns and terminal-safe; returns how
 * many lines. */
static size_t
assert_lines_fit(char *s, size_t width)
{
    char *line, *save = NULL;
    size_t lines = 0;

    for (line = strtok_r(s, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        assert_true(table_text_width(line) <= width);
        assert_null(strchr(line, '\r'));
        assert_null(strchr(line, '\x1b'));
        assert_null(strstr(line, "\xe2\x80\xae"));          /* no bidi override */
        lines++;
    }
    return lines;
}

/* lockctl events: newest last by time, as the footer says, though the
 * agent learnt a forced release (stamped with its own time) after a newer
 * event; equal times stay in the agent's order. */
static void
table_rows_by_time(void **state)
{
    struct table t;
    json_t *p;

    (void)state;
    p = json_pack("{s:[{s:i,s:i,s:s,s:s},{s:i,s:i,s:s,s:s},{s:i,s:i,s:s,s:s}]}", "events",
                  "seq", 1, "time_ms", 2000, "kind", "lease_lost", "detail", "second",
                  "seq", 2, "time_ms", 1000, "kind", "force_release", "detail", "first",
                  "seq", 3, "time_ms", 2000, "kind", "lease_lost", "detail", "third");
    assert_non_null(p);
    table_init(&t, events_table_cols, events_table_ncols);
    assert_int_equal(events_table_add(&t, p, 0), 3);
    assert_int_equal(t.nrows, 3);
    assert_string_equal(t.cells[0 * t.ncols + 5], "first");
    assert_string_equal(t.cells[1 * t.ncols + 5], "second");
    assert_string_equal(t.cells[2 * t.ncols + 5], "third");
    table_release(&t);
    json_decref(p);
}

static void
table_fits_80_columns_one_line_each(void **state)
{
    struct table t;
    json_t *p;
    char *buf, *line, *save = NULL;
    int seen[EVENT_KIND_COUNT] = { 0 };

    (void)state;
    for (int k = 0; k < EVENT_KIND_COUNT; k++)
        push((enum event_kind)k, hostile, sizeof(hostile), "main", -1);
    p = page(false, 0, -1, NULL, EVENTS_MAX);
    table_init(&t, events_table_cols, events_table_ncols);
    assert_int_equal(events_table_add(&t, p, INT64_MAX), 0);   /* --since: none that new */
    table_release(&t);
    buf = printed(p, 80);
    for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        assert_true(table_text_width(line) <= 80);
        assert_null(strchr(line, '\r'));
        assert_null(strchr(line, '\x1b'));
        assert_null(strstr(line, "\xe2\x80\xae"));          /* no bidi override */
        for (int k = 0; k < EVENT_KIND_COUNT; k++)
            if (strstr(line, event_kind_name((enum event_kind)k)) != NULL)
                seen[k]++;
    }
    /* one first line per event: a key's newline forges none */
    for (int k = 0; k < EVENT_KIND_COUNT; k++)
        assert_int_equal(seen[k], 1);
    free(buf);
    json_decref(p);
}

/* What the first tryout at 80 columns broke: an audit entry id, an
 * address and an owner in a detail each whole on one line, no line
 * starting with ", and", two keys that differ at their end told apart;
 * at any width every line fits, and -o wide prints every field whole. */
static void
details_wrap_at_spaces_keys_stay_apart(void **state)
{
    static const char *const whole[] = { "1796310017310-0", "127.0.0.1:51363",
                                         "worker-2:99/3", "lock:order:1001", "lock:order:1002",
                                         "8743c9c0-0795-4907-87fd-6c719a6b4586:57" };
    static const size_t widths[] = { 20, 40, 80, 120, 200 };
    struct event_in in = { .kind = EVENT_FORCE_RELEASE, .target = "main",
                           .key = "lock:order:1001", .keylen = 15, .holder = "tok-1",
                           .holderlen = 5, .seconds = -1,
                           .detail = "released by http:127.0.0.1:51363 (plain lock): stuck since "
                                     "the deploy; audit entry 1796310017310-0" };
    char longkey[161], *buf;
    json_t *p;

    (void)state;
    events_push(&in);
    in.key = "lock:order:1002";
    in.kind = EVENT_INVERSION;
    in.holder = "8743c9c0-0795-4907-87fd-6c719a6b4586:57";
    in.holderlen = strlen(in.holder);
    in.detail = "class lock:acct:* held while acquiring lock:ship:* (owner api-1:41/7: "
                "lock:acct:a then lock:ship:b), and class lock:ship:* held while acquiring "
                "lock:acct:* (owner worker-2:99/3: lock:ship:b then lock:acct:a); the two "
                "orders can deadlock";
    events_push(&in);
    memset(longkey, 'k', sizeof(longkey) - 1);
    memcpy(longkey, "lock:", 5);
    longkey[sizeof(longkey) - 1] = '\0';
    in.key = longkey;
    in.keylen = strlen(longkey);
    events_push(&in);
    p = page(false, 0, -1, NULL, 10);
    for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
        buf = printed(p, widths[i]);
        assert_null(strstr(buf, "\n, and"));
        if (widths[i] >= 80)
            for (size_t w = 0; w < sizeof(whole) / sizeof(whole[0]); w++)
                assert_non_null(strstr(buf, whole[w]));
        assert_true(assert_lines_fit(buf, widths[i]) >= 4);
        free(buf);
    }
    buf = printed(p, 80);
    assert_non_null(strstr(buf, "  lock:order:1001  tok-1\n"));
    assert_non_null(strstr(buf, "\n    holder 8743c9c0-0795-4907-87fd-6c719a6b4586:57\n"));
    assert_non_null(strstr(buf, "  lock:kkkk"));                    /* cut in the middle, */
    assert_non_null(strstr(buf, "kkkk\xe2\x80\xa6kkkk"));            /* marked */
    free(buf);
    buf = printed(p, TABLE_WIDE);           /* -o wide: each field whole, one line */
    assert_non_null(strstr(buf, longkey));
    assert_non_null(strstr(buf, "\n    class lock:acct:* held while acquiring lock:ship:* "
                            "(owner api-1:41/7: lock:acct:a then lock:ship:b), and class"));
    assert_null(strstr(buf, "\xe2\x80\xa6"));
    assert_int_equal(assert_lines_fit(buf, TABLE_WIDE), 1 + 3 * 2);
    free(buf);
    json_decref(p);
}

/* A paragraph breaks at spaces; only a word wider than the whole line is
 * broken, starting where there is room, "…" at the end of each piece and
 * the start of the next line. */
static void
paragraph_breaks_only_words_wider_than_a_line(void **state)
{
    char *buf = NULL, word[101];
    size_t len = 0;
    FILE *fp;

    (void)state;
    memset(word, 'y', sizeof(word) - 1);
    word[sizeof(word) - 1] = '\0';
    fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    table_paragraph(fp, 32, 4, "audit entry 1796310017310-0 and 127.0.0.1:51363 then");
    table_paragraph(fp, 30, 4, "");
    fprintf(fp, "--\n");
    table_paragraph(fp, 30, 4, word);
    fprintf(fp, "--\n");
    table_paragraph(fp, 30, 4, "a key of yyyyyyyyyyyyyyyyyyyyyyyyyyyyyy end");
    fclose(fp);
    assert_string_equal(buf,
                        "    audit entry 1796310017310-0\n"
                        "    and 127.0.0.1:51363 then\n"
                        "--\n"
                        "    yyyyyyyyyyyyyyyyyyyyyyyyy\xe2\x80\xa6\n"
                        "    \xe2\x80\xa6yyyyyyyyyyyyyyyyyyyyyyyy\xe2\x80\xa6\n"
                        "    \xe2\x80\xa6yyyyyyyyyyyyyyyyyyyyyyyy\xe2\x80\xa6\n"
                        "    \xe2\x80\xa6yyyyyyyyyyyyyyyyyyyyyyyy\xe2\x80\xa6\n"
                        "    \xe2\x80\xa6yyy\n"
                        "--\n"
                        "    a key of yyyyyyyyyyyyyyyy\xe2\x80\xa6\n"
                        "    \xe2\x80\xa6yyyyyyyyyyyyyy end\n");
    free(buf);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(every_kind_as_json, reset),
        cmocka_unit_test_setup(absent_fields_are_null, reset),
        cmocka_unit_test_setup(binary_holder_survives, reset),
        cmocka_unit_test_setup(page_after_limit_kind_gap, reset),
        cmocka_unit_test_setup(table_rows_by_time, reset),
        cmocka_unit_test_setup(table_fits_80_columns_one_line_each, reset),
        cmocka_unit_test_setup(details_wrap_at_spaces_keys_stay_apart, reset),
        cmocka_unit_test_setup(paragraph_breaks_only_words_wider_than_a_line, reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
