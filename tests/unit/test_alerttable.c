/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_alerttable.c - lockctl alerts' table (cli/alerttable.c) from a
 * GET /api/v1/alerts answer as alerts/alerts.c writes it: the worst first
 * (critical, warning, info, any other severity; then the oldest start, one
 * that cannot be read last; then the agent's order), the subject from the
 * labels each kind has, SINCE from startsAt, -t and --severity, and the
 * summary printed under its row (table.c's TABLE_DETAIL) within the width.
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

#define T0 "2026-12-05T10:00:00.000Z"

static int64_t
ms_of(const char *iso)
{
    int64_t ms = 0;

    assert_int_equal(formats_parse_iso_utc(iso, strlen(iso), &ms), strlen(iso));
    return ms;
}

/* One alert as alert_json() writes it: labels (NULL values left out),
 * the summary, startsAt. */
static json_t *
alert(const char *name, const char *severity, const char *target, const char *key,
      const char *cls, const char *starts)
{
    json_t *labels = json_pack("{s:s, s:s}", "alertname", name, "severity", severity);

    if (target != NULL)
        json_object_set_new(labels, "target", json_string(target));
    if (key != NULL)
        json_object_set_new(labels, "key", json_string(key));
    if (cls != NULL)
        json_object_set_new(labels, "class", json_string(cls));
    return json_pack("{s:o, s:{s:s, s:s}, s:s, s:s, s:s, s:n}", "labels", labels,
                     "annotations", "summary", name, "description", "what to do", "state",
                     "firing", "startsAt", starts, "fingerprint", "3e272086d6797205",
                     "lastSentAt");
}

static json_t *
answer(json_t *list)
{
    return json_pack("{s:o, s:I, s:i}", "alerts", list, "total",
                     (json_int_t)json_array_size(list), "suppressed", 0);
}

static const char *
cell(const struct table *t, size_t row, size_t col)
{
    return t->cells[row * t->ncols + col];
}

static void
test_worst_first_then_oldest(void **state)
{
    json_t *list = json_array(), *doc;
    struct table t;

    (void)state;
    /* in the agent's order, which is none of these */
    json_array_append_new(list, alert("LockLeaked", "warning", "main", "lock:w", "c",
                                      "2026-12-05T09:00:00.000Z"));
    json_array_append_new(list, alert("LockLeaseTooLong", "info", NULL, NULL, "lock:i:*",
                                      "2026-12-05T08:00:00.000Z"));
    json_array_append_new(list, alert("LockTargetDown", "critical", "second", NULL, NULL,
                                      "2026-12-05T09:59:00.000Z"));
    json_array_append_new(list, alert("LockOdd", "page", "main", NULL, NULL,
                                      "2026-12-05T07:00:00.000Z"));
    json_array_append_new(list, alert("LockDeadlock", "critical", "main", "lock:a -> lock:b",
                                      NULL, "not a time"));
    json_array_append_new(list, alert("LockLostAtFailover", "critical", "main", NULL, NULL,
                                      "2026-12-05T09:30:00.000Z"));
    json_array_append_new(list, alert("LockHeldTooLong", "warning", "main", "lock:w", "c",
                                      "2026-12-05T09:00:00.000Z"));
    doc = answer(list);
    table_init(&t, alerts_table_cols, ALERTS_NCOLS);
    assert_int_equal(alerts_table_add(&t, doc, NULL, NULL, false, ms_of(T0)), 7);
    assert_string_equal(cell(&t, 0, ALERTS_NAME), "LockLostAtFailover");   /* 30m */
    assert_string_equal(cell(&t, 1, ALERTS_NAME), "LockTargetDown");       /* 1m */
    assert_string_equal(cell(&t, 2, ALERTS_NAME), "LockDeadlock");         /* unknown */
    assert_string_equal(cell(&t, 3, ALERTS_NAME), "LockLeaked");       /* same start: */
    assert_string_equal(cell(&t, 4, ALERTS_NAME), "LockHeldTooLong");  /* the agent's order */
    assert_string_equal(cell(&t, 5, ALERTS_NAME), "LockLeaseTooLong");
    assert_string_equal(cell(&t, 6, ALERTS_NAME), "LockOdd");
    assert_string_equal(cell(&t, 0, ALERTS_SEVERITY), "critical");
    assert_string_equal(cell(&t, 0, ALERTS_SINCE), "30m00s");
    assert_string_equal(cell(&t, 1, ALERTS_SINCE), "1m00s");
    assert_string_equal(cell(&t, 2, ALERTS_SINCE), "unknown");
    assert_string_equal(cell(&t, 0, ALERTS_SUMMARY), "LockLostAtFailover");
    table_release(&t);
    /* --describe: what to do follows the summary (an on-call trial: a
     * Redlock split's holder per node was only in --json) */
    table_init(&t, alerts_table_cols, ALERTS_NCOLS);
    assert_int_equal(alerts_table_add(&t, doc, NULL, NULL, true, ms_of(T0)), 7);
    assert_string_equal(cell(&t, 0, ALERTS_SUMMARY), "LockLostAtFailover. what to do");
    table_release(&t);
    json_decref(doc);
}

static void
test_subject_from_the_labels(void **state)
{
    json_t *list = json_array(), *doc, *shard;
    struct table t;

    (void)state;
    json_array_append_new(list, alert("LockLeaked", "warning", "main", "lock:x", "c", T0));
    json_array_append_new(list, alert("LockTargetDown", "warning", "second", NULL, NULL, T0));
    json_array_append_new(list, alert("LockWaitP99High", "warning", NULL, NULL, "lock:j:*",
                                      T0));
    json_array_append_new(list, alert("LockLeaseOverrun", "warning", NULL, "lock:y", "c", T0));
    shard = alert("LockShardDown", "warning", "cl", NULL, NULL, T0);
    json_object_set_new(json_object_get(shard, "labels"), "shard", json_string("0-5460"));
    json_object_set_new(json_object_get(shard, "labels"), "node",
                        json_string("127.0.0.1:7001"));
    json_array_append_new(list, shard);
    doc = answer(list);
    table_init(&t, alerts_table_cols, ALERTS_NCOLS);
    assert_int_equal(alerts_table_add(&t, doc, NULL, NULL, false, ms_of(T0) - 5000), 5);
    assert_string_equal(cell(&t, 0, ALERTS_SUBJECT), "lock:x on main");
    assert_string_equal(cell(&t, 1, ALERTS_SUBJECT), "target second");
    assert_string_equal(cell(&t, 2, ALERTS_SUBJECT), "class lock:j:*");
    assert_string_equal(cell(&t, 3, ALERTS_SUBJECT), "lock:y");
    assert_string_equal(cell(&t, 4, ALERTS_SUBJECT), "shard 0-5460 of cl at 127.0.0.1:7001");
    /* the agent's clock a little ahead of lockctl's: just started */
    assert_string_equal(cell(&t, 0, ALERTS_SINCE), "0ms");
    table_release(&t);
    json_decref(doc);
}

static void
test_target_and_severity_select(void **state)
{
    json_t *list = json_array(), *doc;
    struct table t;

    (void)state;
    json_array_append_new(list, alert("LockLeaked", "warning", "main", "lock:x", "c", T0));
    json_array_append_new(list, alert("LockTargetDown", "critical", "second", NULL, NULL, T0));
    json_array_append_new(list, alert("LockWaitP99High", "warning", NULL, NULL, "c", T0));
    json_array_append_new(list, alert("LockLeaseTooLong", "info", "main", NULL, "c", T0));
    doc = answer(list);
    table_init(&t, alerts_table_cols, ALERTS_NCOLS);
    assert_int_equal(alerts_table_add(&t, doc, "main", NULL, false, ms_of(T0)), 2);
    assert_string_equal(cell(&t, 0, ALERTS_NAME), "LockLeaked");
    assert_string_equal(cell(&t, 1, ALERTS_NAME), "LockLeaseTooLong");
    table_release(&t);
    table_init(&t, alerts_table_cols, ALERTS_NCOLS);
    assert_int_equal(alerts_table_add(&t, doc, NULL, "warning", false, ms_of(T0)), 2);
    assert_string_equal(cell(&t, 1, ALERTS_NAME), "LockWaitP99High");
    table_release(&t);
    table_init(&t, alerts_table_cols, ALERTS_NCOLS);
    assert_int_equal(alerts_table_add(&t, doc, "second", "warning", false, ms_of(T0)), 0);
    table_release(&t);
    assert_int_equal(alerts_severity_rank("critical"), 0);
    assert_int_equal(alerts_severity_rank("info"), 2);
    assert_int_equal(alerts_severity_rank("urgent"), 3);
    assert_int_equal(alerts_severity_rank(NULL), 3);
    json_decref(doc);
}

/* Every line of text at most width columns, and none but the summaries
 * indented by TABLE_DETAIL_INDENT. */
static void
test_summary_under_its_row_within_the_width(void **state)
{
    json_t *list = json_array(), *doc, *a;
    struct table t;
    char *out = NULL, *line, *save = NULL;
    size_t len = 0, lines = 0;
    FILE *fp;

    (void)state;
    a = alert("LockLeaked", "warning", "main", "lock:order:\n\x1b[31m1001", "c", T0);
    json_object_set_new(json_object_get(a, "annotations"), "summary",
                        json_string("Lock lock:order:1001 on main has no TTL and will never "
                                    "expire"));
    json_array_append_new(list, a);
    doc = answer(list);
    table_init(&t, alerts_table_cols, ALERTS_NCOLS);
    assert_int_equal(alerts_table_add(&t, doc, NULL, NULL, false, ms_of(T0) + 65000), 1);
    /* the key's newline and escape shown as U+FFFD, never as themselves */
    assert_string_equal(cell(&t, 0, ALERTS_SUBJECT),
                        "lock:order:\xef\xbf\xbd\xef\xbf\xbd[31m1001 on main");
    assert_string_equal(cell(&t, 0, ALERTS_SINCE), "1m05s");
    fp = open_memstream(&out, &len);
    assert_non_null(fp);
    table_print(&t, fp, 40);
    fclose(fp);
    assert_null(strstr(out, "SUMMARY"));            /* no column of its own */
    assert_non_null(strstr(out, "SEVERITY"));
    for (line = strtok_r(out, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        assert_true(table_text_width(line) <= 40);
        if (lines++ >= 2)
            assert_memory_equal(line, "    ", 4);   /* the summary, wrapped */
    }
    assert_true(lines >= 4);                        /* titles, row, two summary lines */
    free(out);
    table_release(&t);
    json_decref(doc);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worst_first_then_oldest),
        cmocka_unit_test(test_subject_from_the_labels),
        cmocka_unit_test(test_target_and_severity_select),
        cmocka_unit_test(test_summary_under_its_row_within_the_width),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
