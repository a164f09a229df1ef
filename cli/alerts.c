/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerts.c - lockctl alerts: what fires now, from the agent (GET
 * /api/v1/alerts, agent/http/alerts_http.c; docs/alerts.md), so that
 * on-call need not curl the API to learn it.
 *
 * Only the agent evaluates the rules, so this command asks it and nothing
 * else (--agent, else the config's [agent] listen; agent.c): an agent that
 * does not answer is exit 3, with where it was asked and a hint, as for
 * deadlocks and classes.  Whatever fires, an answer is exit 0; nothing
 * firing is one line that says so.  The table (alerttable.c) lists the
 * worst first and fits the terminal; -t keeps one target's alerts (its
 * target label: an alert of a class has none), --severity one severity.
 * --json prints the agent's document as it came; with -t or --severity
 * its "alerts" hold only those selected (in the agent's order), the rest
 * as it came ("total" is still every firing alert).
 */
#include <getopt.h>
#include <string.h>

#include "cli/lockctl.h"

/* The command's own options into *severity; LOCKCTL_DONE, -1 after
 * --help, or the exit code. */
static int
parse(struct lockctl *lc, int argc, char **argv, const char **severity, bool *describe)
{
    static const struct option opts[] = {
        { "severity", required_argument, NULL, 's' },
        { "describe", no_argument, NULL, 'd' },
        { "help", no_argument, NULL, 'h' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    int opt;

    optind = 0;
    while ((opt = getopt_long(argc, argv, SESSION_SHORT_OPTIONS "hd", opts, NULL)) != -1) {
        int common = session_common_option(lc, opt, optarg);

        if (common < 0)
            return LOCKCTL_USAGE;       /* a bad value: said */
        if (common > 0)
            continue;
        if (opt == 'd') {
            *describe = true;
            continue;
        }
        if (opt == 's') {
            if (alerts_severity_rank(optarg) > 2) {
                lockctl_warnx("alerts: --severity must be critical, warning or info");
                return LOCKCTL_USAGE;
            }
            *severity = optarg;
            continue;
        }
        lockctl_command_help("alerts", opt == 'h' ? stdout : stderr);
        return opt == 'h' ? -1 : LOCKCTL_USAGE;
    }
    if (optind != argc) {
        lockctl_warnx("alerts: unexpected argument \"%s\"", argv[optind]);
        return LOCKCTL_USAGE;
    }
    return LOCKCTL_DONE;
}

/* --json with -t or --severity: only the selected alerts.  0 / -1. */
static int
select_json(json_t *doc, const char *target, const char *severity)
{
    json_t *kept = json_array(), *a;
    size_t i;

    if (kept == NULL)
        return -1;
    json_array_foreach(json_object_get(doc, "alerts"), i, a)
        if (alerts_selected(a, target, severity) && json_array_append(kept, a) == -1) {
            json_decref(kept);
            return -1;
        }
    return json_object_set_new(doc, "alerts", kept);
}

/* The table and the line under it, or the one line saying none fires. */
static int
print_human(const struct lockctl *lc, const struct agent_view *av, const json_t *doc,
            const char *severity, bool describe)
{
    size_t width = lockctl_width(lc), all = json_array_size(json_object_get(doc, "alerts"));
    json_int_t suppressed = json_integer_value(json_object_get(doc, "suppressed"));
    const char *sev = severity ? severity : "", *sp = severity ? " " : "";
    char on[160] = "", more[96] = "", sup[96] = "";
    struct table t;
    long n;

    table_init(&t, alerts_table_cols, ALERTS_NCOLS);
    if ((n = alerts_table_add(&t, doc, lc->target_name, severity, describe,
                              clock_now_ms())) < 0) {
        table_release(&t);
        lockctl_warnx("alerts: out of memory");
        return LOCKCTL_REDIS;
    }
    if (lc->target_name != NULL)
        snprintf(on, sizeof(on), " on target %s", lc->target_name);
    if ((size_t)n < all)
        snprintf(more, sizeof(more), "; %zu other%s firing", all - (size_t)n,
                 all - (size_t)n == 1 ? "" : "s");
    if (suppressed > 0)
        snprintf(sup, sizeof(sup), "; %lld more not raised (lockwatch_alerts_suppressed)",
                 (long long)suppressed);
    if (n == 0) {
        table_line(stdout, width, "no %s%salerts firing%s (agent at %s)%s%s", sev, sp, on,
                   av->url, more, sup);
    } else {
        table_print(&t, stdout, width);
        table_line(stdout, width, "%ld %s%salert%s firing%s, worst first (agent at %s)%s%s%s",
                   n, sev, sp, n == 1 ? "" : "s", on, av->url, more, sup, describe ? "" :
                   "; --describe adds what each means and what to do (a Redlock split's "
                   "holder on each node)");
    }
    table_release(&t);
    return LOCKCTL_DONE;
}

int
cmd_alerts(struct lockctl *lc, int argc, char **argv)
{
    struct agent_view av;
    const char *severity = NULL;
    json_t *doc = NULL;
    bool describe = false;
    int rc = parse(lc, argc, argv, &severity, &describe);

    if (rc != LOCKCTL_DONE)
        return rc == -1 ? LOCKCTL_DONE : rc;
    lc->agent_only = true;
    if ((rc = session_load(lc)) != LOCKCTL_DONE)
        return rc;
    if ((rc = agent_command_doc(lc, &av, "alerts", "/api/v1/alerts", "only the agent "
                                "evaluates the alert rules: start lockwatchd, or name it with "
                                "--agent URL", &doc)) != LOCKCTL_DONE)
        return rc;
    if (!json_is_array(json_object_get(doc, "alerts"))) {
        lockctl_warnx("alerts: the agent's answer has no \"alerts\" list");
        json_decref(doc);
        return LOCKCTL_REDIS;
    }
    if (lc->json) {
        if ((lc->target_name != NULL || severity != NULL) &&
            select_json(doc, lc->target_name, severity) == -1) {
            json_decref(doc);
            lockctl_warnx("alerts: out of memory");
            return LOCKCTL_REDIS;
        }
        return out_json_print(doc) == 0 ? LOCKCTL_DONE : LOCKCTL_REDIS;
    }
    rc = print_human(lc, &av, doc, severity, describe);
    json_decref(doc);
    return rc;
}
