/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * classes.c - lockctl classes: the agent's per-class view (GET
 * /api/v1/classes, agent/http/classes_api.c) as a table that fits the
 * terminal (80 columns included: the class name gives way first), or
 * the API's JSON as it came with --json.  The figures are the agent's
 * (lockctl has no history of its own): counts and leases from its scans,
 * waits and holds from the samples clients send it.  The classes that call
 * for a look come first, in the agent's order (then the others, in it):
 * a wait P99 over wait_p99 (the agent's wait_p99_high, LockWaitP99High's
 * condition; WAIT99 marked "!"), a lease too short or too long, a surge.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/lockctl.h"

static const struct table_col cols[] = {
    { "CLASS", 0, TABLE_FLEX | TABLE_MIDDLE, 0 },
    { "LOCKS", 9, TABLE_RIGHT, 5 },
    { "BASE", 9, TABLE_RIGHT, 4 },
    { "NEW/S", 7, TABLE_RIGHT, 5 },
    { "DEL/S", 7, TABLE_RIGHT, 5 },
    { "WAIT99", 7, TABLE_RIGHT, 6 },
    { "HOLD99.9", 8, TABLE_RIGHT, 8 },
    { "LEASE", 7, TABLE_RIGHT, 5 },
    { "ADVICE", 20, TABLE_WRAP, 9 },        /* wraps at 80 columns, not cut */
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

/* Seconds as list and show write durations (out_duration(): 5m03s,
 * 2h01m), with tenths under 10 s, where a hold's P99.9 lives: 850ms, 9.2s. */
static void
dur(const json_t *v, char *buf, size_t len)
{
    double s = json_number_value(v);
    long long ms = (long long)(s * 1000.0 + 0.5);
    long long tenths = (ms + 50) / 100;     /* rounded first: 9,960 ms is 10s,
                                             * as beside it, not "10.0s" */

    if (!json_is_number(v))
        snprintf(buf, len, "-");
    else if (ms < 1000)
        snprintf(buf, len, "%lldms", ms);
    else if (tenths < 100)
        snprintf(buf, len, "%lld.%llds", tenths / 10, tenths % 10);
    else
        out_duration((ms + 500) / 1000 * 1000, buf, len);  /* whole seconds, rounded */
}

static void
num(const json_t *v, int decimals, char *buf, size_t len)
{
    if (json_is_number(v))
        snprintf(buf, len, "%.*f", decimals, json_number_value(v));
    else
        snprintf(buf, len, "-");
}

/* "fits", "too short: 20s", "no new lease", "few holds" (+ " SURGE"). */
static void
advice(const json_t *c, char *buf, size_t len)
{
    const char *a = json_string_value(json_object_get(c, "advice"));
    char sug[32];
    bool surge = json_is_true(json_object_get(c, "surging"));

    dur(json_object_get(c, "suggested_lease_s"), sug, sizeof(sug));
    if (a == NULL)
        a = "?";
    if (strcmp(a, "too_short") == 0 || strcmp(a, "too_long") == 0)
        snprintf(buf, len, "%s: %s%s", strcmp(a, "too_short") == 0 ? "too short" : "too long",
                 sug, surge ? " SURGE" : "");
    else
        /* no_lease: no lock of it taken in wait_window (not "no TTL") */
        snprintf(buf, len, "%s%s", strcmp(a, "no_lease") == 0 ? "no new lease" :
                 strcmp(a, "few_holds") == 0 ? "few holds" : a, surge ? " SURGE" : "");
    /* a watchdog class is judged on its renewal period, not its holds
     * (docs/alerts.md "Watchdog locks"): say so, or "fits" beside no
     * holds reads as a guess */
    if (json_is_true(json_object_get(c, "watchdog"))) {
        size_t n = strlen(buf);
        char per[32];

        if (json_is_null(json_object_get(c, "renewal_s"))) {
            snprintf(buf + n, n < len ? len - n : 0, " (renewed; period not seen)");
        } else {
            dur(json_object_get(c, "renewal_s"), per, sizeof(per));
            snprintf(buf + n, n < len ? len - n : 0, " (renewed every %s)", per);
        }
    }
}

/* A class that calls for a look: its wait P99 over wait_p99, its lease
 * too short or too long, or a surge. */
static bool
needs_look(const json_t *c)
{
    const char *a = json_string_value(json_object_get(c, "advice"));

    return json_is_true(json_object_get(c, "wait_p99_high")) ||
        json_is_true(json_object_get(c, "surging")) ||
        (a != NULL && (strcmp(a, "too_short") == 0 || strcmp(a, "too_long") == 0));
}

/* One class's row; *marked set when its WAIT99 is marked. */
static int
add_row(struct table *t, const json_t *c, bool *marked)
{
    char cnt[24], base[24], cr[16], dl[16], wait[24], hold[24], lease[24], adv[64];
    const char *name = json_string_value(json_object_get(c, "class"));
    const char *cells[NCOLS] = { name ? name : "?", cnt, base, cr, dl, wait, hold, lease, adv };
    size_t lens[NCOLS];

    num(json_object_get(c, "count"), 0, cnt, sizeof(cnt));
    num(json_object_get(c, "baseline"), 0, base, sizeof(base));
    num(json_object_get(c, "created_per_s"), 1, cr, sizeof(cr));
    num(json_object_get(c, "deleted_per_s"), 1, dl, sizeof(dl));
    dur(json_object_get(c, "wait_p99_s"), wait, sizeof(wait));
    if (json_is_true(json_object_get(c, "wait_p99_high"))) {
        strcat(wait, "!");              /* at most "5m03s": room left */
        *marked = true;
    }
    dur(json_object_get(c, "hold_p999_s"), hold, sizeof(hold));
    dur(json_object_get(c, "lease_s"), lease, sizeof(lease));
    advice(c, adv, sizeof(adv));
    for (size_t k = 0; k < NCOLS; k++)
        lens[k] = strlen(cells[k]);
    return table_add(t, cells, lens);
}

static int
print_table(const struct lockctl *lc, const json_t *list)
{
    struct table t;
    size_t i, n = json_array_size(list);
    bool marked = false;
    int rc = LOCKCTL_DONE, pass;

    table_init(&t, cols, NCOLS);
    /* those that call for a look first, each pass in the agent's order */
    for (pass = 0; pass < 2 && rc == LOCKCTL_DONE; pass++) {
        for (i = 0; i < n; i++) {
            const json_t *c = json_array_get(list, i);

            if (needs_look(c) != (pass == 0))
                continue;
            if (add_row(&t, c, &marked) == -1) {
                lockctl_warnx("classes: out of memory");
                rc = LOCKCTL_REDIS;
                break;
            }
        }
    }
    if (rc == LOCKCTL_DONE) {
        table_print(&t, stdout, lockctl_width(lc));
        table_line(stdout, lockctl_width(lc), "%zu class%s (from the agent: counts and leases "
                   "from its scans, waits and holds from its samples)%s", n,
                   n == 1 ? "" : "es", marked ? "; WAIT99 ! is above wait_p99 "
                   "(LockWaitP99High)" : "");
    }
    table_release(&t);
    return rc;
}

static int
parse(struct lockctl *lc, int argc, char **argv)
{
    static const struct option opts[] = {
        { "help", no_argument, NULL, 'h' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    int opt;

    optind = 0;
    while ((opt = getopt_long(argc, argv, SESSION_SHORT_OPTIONS "h", opts, NULL)) != -1) {
        int common = session_common_option(lc, opt, optarg);

        if (common < 0)
            return LOCKCTL_USAGE;
        if (common > 0)
            continue;
        lockctl_command_help("classes", opt == 'h' ? stdout : stderr);
        return opt == 'h' ? -1 : LOCKCTL_USAGE;
    }
    if (optind != argc) {
        lockctl_warnx("classes: unexpected argument \"%s\"", argv[optind]);
        return LOCKCTL_USAGE;
    }
    return LOCKCTL_DONE;
}

int
cmd_classes(struct lockctl *lc, int argc, char **argv)
{
    struct agent_view av;
    json_t *doc = NULL, *list;
    int rc = parse(lc, argc, argv);

    if (rc != LOCKCTL_DONE)
        return rc == -1 ? LOCKCTL_DONE : rc;
    lc->agent_only = true;
    if ((rc = session_load(lc)) != LOCKCTL_DONE)
        return rc;
    if ((rc = agent_command_doc(lc, &av, "classes", "/api/v1/classes", "the per-class view "
                                "lives in the agent: start lockwatchd, or point --agent at it",
                                &doc)) != LOCKCTL_DONE)
        return rc;
    list = json_object_get(doc, "classes");
    if (!json_is_array(list)) {
        lockctl_warnx("classes: the agent's answer has no \"classes\" list");
        json_decref(doc);
        return LOCKCTL_REDIS;
    }
    if (lc->json)
        return out_json_print(doc) == 0 ? LOCKCTL_DONE : LOCKCTL_REDIS;
    rc = print_table(lc, list);
    json_decref(doc);
    return rc;
}
