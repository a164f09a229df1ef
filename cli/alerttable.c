/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerttable.c - lockctl alerts' output: the alerts of a GET /api/v1/alerts
 * answer (alerts/alerts.c alert_json(): each {labels, annotations, state,
 * startsAt, fingerprint, lastSentAt}; the labels of alerts/sinks/sinks.c:
 * alertname, severity and, as its kind's scope has them, target, class,
 * key, shard, node) as rows of a table, worst first: critical, warning,
 * info (any other severity last), then the oldest start first, then in
 * the agent's order.
 *
 * A row is the severity, the alertname, what it is about (SUBJECT: "KEY on
 * TARGET" for a lock, "target T", "shard S of T at NODE", "class C"), how
 * long it has fired (SINCE: now less startsAt, in lockctl's duration
 * format) and its summary, a sentence, printed under the row, indented
 * and wrapped at spaces (TABLE_DETAIL), not squeezed into a column.
 * The agent sanitised every label (valid UTF-8; a key's newline kept);
 * table.c makes each cell safe for a terminal as any other key.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "common/strbuf.h"

#define SUBJECT_MAX (64 * 1024)     /* a key label is at most ~200 bytes */

const struct table_col alerts_table_cols[ALERTS_NCOLS] = {
    [ALERTS_SEVERITY] = { "SEVERITY", 8, 0, 0 },
    [ALERTS_NAME] = { "ALERT", 20, 0, 10 },
    [ALERTS_SUBJECT] = { "SUBJECT", 0, TABLE_FLEX | TABLE_MIDDLE, 0 },
    [ALERTS_SINCE] = { "SINCE", 8, TABLE_RIGHT, 0 },
    [ALERTS_SUMMARY] = { "SUMMARY", 0, TABLE_DETAIL, 0 },
};

/* A label's value, or NULL. */
static const char *
label(const json_t *a, const char *name)
{
    return json_string_value(json_object_get(json_object_get(a, "labels"), name));
}

int
alerts_severity_rank(const char *severity)
{
    static const char *const order[] = { "critical", "warning", "info" };

    for (int i = 0; severity != NULL && i < 3; i++)
        if (strcmp(severity, order[i]) == 0)
            return i;
    return 3;
}

/* What alert a is about, from its labels, into sb. */
static void
subject(const json_t *a, struct strbuf *sb)
{
    const char *target = label(a, "target"), *key = label(a, "key"), *cls = label(a, "class");
    const char *shard = label(a, "shard"), *node = label(a, "node");

    if (shard != NULL) {
        sb_addf(sb, "shard %s", shard);
        if (target != NULL)
            sb_addf(sb, " of %s", target);
        if (node != NULL)
            sb_addf(sb, " at %s", node);
    } else if (key != NULL) {
        sb_adds(sb, key);
        if (target != NULL)
            sb_addf(sb, " on %s", target);
    } else if (target != NULL) {
        sb_addf(sb, "target %s", target);
    } else if (cls != NULL) {
        sb_addf(sb, "class %s", cls);
    }
    sb_add(sb, "", 1);
}

/* One alert's row; 0, -1 on ENOMEM. */
static int
add_row(struct table *t, const json_t *a, int64_t start_ms, bool describe, int64_t now_ms)
{
    const char *cells[ALERTS_NCOLS];
    const char *sev = label(a, "severity"), *name = label(a, "alertname");
    const json_t *ann = json_object_get(a, "annotations");
    const char *sum = json_string_value(json_object_get(ann, "summary"));
    const char *desc = describe ? json_string_value(json_object_get(ann, "description")) : NULL;
    char since[32];
    struct strbuf sb, detail;
    int rc = -1;

    if (start_ms == INT64_MAX)
        snprintf(since, sizeof(since), "unknown");
    else        /* a clock a little ahead of lockctl's: just started */
        out_duration(now_ms > start_ms ? now_ms - start_ms : 0, since, sizeof(since));
    sb_init(&sb, SUBJECT_MAX);
    subject(a, &sb);
    cells[ALERTS_SEVERITY] = sev != NULL ? sev : "?";
    cells[ALERTS_NAME] = name != NULL ? name : "?";
    cells[ALERTS_SUBJECT] = sb.buf;
    cells[ALERTS_SINCE] = since;
    /* --describe: the summary, then the description (what to do) */
    sb_init(&detail, SUBJECT_MAX);
    sb_addf(&detail, "%s%s%s", sum != NULL ? sum : "", desc != NULL ? ". " : "",
            desc != NULL ? desc : "");
    sb_add(&detail, "", 1);
    cells[ALERTS_SUMMARY] = detail.buf;
    if (!sb_failed(&sb) && !sb_failed(&detail))
        rc = table_add(t, cells, NULL);
    sb_release(&sb);
    sb_release(&detail);
    return rc;
}

/* An alert of the answer, and where it came: the order of the table. */
struct alert_order {
    const json_t *a;
    int rank;                   /* alerts_severity_rank() */
    int64_t start_ms;           /* INT64_MAX: unknown */
    size_t i;
};

static int
worst_first(const void *x, const void *y)
{
    const struct alert_order *a = x, *b = y;

    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->start_ms != b->start_ms)
        return a->start_ms < b->start_ms ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

bool
alerts_selected(const json_t *a, const char *target, const char *severity)
{
    const char *t = label(a, "target"), *s = label(a, "severity");

    return json_is_object(a) && (target == NULL || (t != NULL && strcmp(t, target) == 0)) &&
        (severity == NULL || (s != NULL && strcmp(s, severity) == 0));
}

long
alerts_table_add(struct table *t, const json_t *doc, const char *target,
                 const char *severity, bool describe, int64_t now_ms)
{
    const json_t *list = json_object_get(doc, "alerts"), *a;
    struct alert_order *rows;
    size_t i, n = 0;
    long rc = 0;

    if ((rows = calloc(json_array_size(list) + 1, sizeof(*rows))) == NULL)
        return -1;
    json_array_foreach(list, i, a) {
        const char *at = json_string_value(json_object_get(a, "startsAt"));

        if (!alerts_selected(a, target, severity))
            continue;
        rows[n].a = a;
        rows[n].rank = alerts_severity_rank(label(a, "severity"));
        if (at == NULL || formats_parse_iso_utc(at, strlen(at), &rows[n].start_ms) == 0)
            rows[n].start_ms = INT64_MAX;
        rows[n].i = i;
        n++;
    }
    qsort(rows, n, sizeof(*rows), worst_first);
    for (i = 0; i < n && rc == 0; i++)
        if (add_row(t, rows[i].a, rows[i].start_ms, describe, now_ms) == -1)
            rc = -1;
    free(rows);
    return rc == 0 ? (long)n : -1;
}
