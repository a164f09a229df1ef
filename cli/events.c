/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * events.c - lockctl events: the agent's timeline of lock events (lease
 * lost, expired after renewal, overrun, lost at a failover, deadlock,
 * inversion, forced release; docs/events.md), newest last.
 *
 * The timeline is the agent's (its ring, GET /api/v1/events), so this is
 * the one command that needs the agent and no Redis: --agent, else the
 * config's [agent] listen (agent.c).  --since keeps the events of the
 * last DURATION, --kind one kind, -t one target (only when given);
 * --follow then asks again every EVENTS_FOLLOW_MS with ?after= the last
 * answer's next_after and prints only what is new, saying so when events
 * were missed (the ring overflowed, or the agent restarted).  --json
 * prints the agent's page (events filtered by --since); with --follow,
 * one compact JSON object per event per line.
 *
 * Keys, holders and details are bytes a client chose: the table
 * (eventtable.c) takes the key's lossless key_escaped form and table.c
 * makes every cell safe for a terminal; the JSON is the agent's, escaped
 * there.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/lockctl.h"
#include "collectors/events/events.h"
#include "common/strbuf.h"

#define EVENTS_LIMIT_DEFAULT 50
#define EVENTS_FOLLOW_MS     1000   /* --follow asks this often */

/* What the command was asked. */
struct events_opts {
    int64_t since_ms;           /* --since; 0: none */
    const char *since_text;
    const char *kind;           /* --kind, NULL: any */
    long limit;                 /* --limit, 0: the default */
    bool follow;
};

/* The page's URL: base + the filters (+ after when given). */
static int
page_url(const struct lockctl *lc, const struct events_opts *o, const char *base,
         bool after, uint64_t seq, struct strbuf *url)
{
    url->len = 0;
    sb_addf(url, "%s/api/v1/events?limit=%ld", base,
            after ? (long)EVENTS_MAX : o->limit > 0 ? o->limit :
            o->since_ms > 0 ? (long)EVENTS_MAX : (long)EVENTS_LIMIT_DEFAULT);
    if (after)
        sb_addf(url, "&after=%llu", (unsigned long long)seq);
    if (o->kind != NULL)
        sb_addf(url, "&kind=%s", o->kind);      /* a name of the table: no escaping */
    if (lc->target_name != NULL) {
        char *tg = curl_easy_escape(NULL, lc->target_name, 0);

        if (tg == NULL)
            return -1;
        sb_addf(url, "&target=%s", tg);
        curl_free(tg);
    }
    sb_add(url, "", 1);
    return sb_failed(url) ? -1 : 0;
}

/* GET one page into *doc: 0, or -1 with av->err. */
static int
fetch(struct agent_view *av, const char *url, json_t **doc)
{
    long status = agent_get_json(av, url, doc);

    if (status == 200 && json_is_array(json_object_get(*doc, "events")))
        return 0;
    if (status == 200)
        snprintf(av->err, sizeof(av->err), "its answer has no \"events\" list (an agent "
                 "older than lockctl?)");
    else if (status != -1)
        agent_status_error(av, status, *doc);
    json_decref(*doc);
    *doc = NULL;
    return -1;
}

/* The events of doc as JSON lines (--follow --json); 0 / -1. */
static int
print_lines(const json_t *doc, int64_t since_ms)
{
    const json_t *e;
    size_t i;

    json_array_foreach(json_object_get(doc, "events"), i, e) {
        char *s;

        if (json_integer_value(json_object_get(e, "time_ms")) < since_ms)
            continue;
        if ((s = json_dumps(e, JSON_COMPACT | LOCKJSON_REALS)) == NULL)
            return -1;
        printf("%s\n", s);
        free(s);
    }
    return 0;
}

/* The page as a table and its footer line; count of rows, -1 ENOMEM. */
static long
print_table(const struct lockctl *lc, const json_t *doc, int64_t since_ms, bool titles)
{
    struct table t;
    long n;

    table_init(&t, events_table_cols, events_table_ncols);
    if ((n = events_table_add(&t, doc, since_ms)) > 0 &&
        events_table_print(&t, stdout, lockctl_width(lc), titles) == -1)
        n = -1;
    table_release(&t);
    return n;
}

/* The first page: the table (or JSON) and its footer. */
static int
print_first(const struct lockctl *lc, const struct events_opts *o, const struct agent_view *av,
            json_t *doc)
{
    json_int_t dropped = json_integer_value(json_object_get(doc, "dropped"));
    long n;

    if (lc->json && o->follow)
        return print_lines(doc, o->since_ms) == 0 ? LOCKCTL_DONE : LOCKCTL_REDIS;
    if (lc->json) {
        json_t *kept = json_array(), *e;
        size_t i;

        json_array_foreach(json_object_get(doc, "events"), i, e)
            if (json_integer_value(json_object_get(e, "time_ms")) >= o->since_ms)
                json_array_append(kept, e);
        json_object_set_new(doc, "events", kept);
        json_object_set_new(doc, "count", json_integer((json_int_t)json_array_size(kept)));
        json_object_set_new(doc, "agent", json_string(av->url));
        return out_json_print(json_incref(doc)) == 0 ? LOCKCTL_DONE : LOCKCTL_REDIS;
    }
    if ((n = print_table(lc, doc, o->since_ms, true)) < 0)
        return LOCKCTL_REDIS;
    table_line(stdout, lockctl_width(lc), "%ld lock event%s%s%s (newest last) from the agent "
               "at %s%s", n, n == 1 ? "" : "s", o->since_ms > 0 ? " in the last " : "",
               o->since_ms > 0 ? o->since_text : "", av->url,
               json_is_true(json_object_get(doc, "more")) ? "; older ones not shown (--limit)"
               : "");
    if (dropped > 0)
        table_line(stdout, lockctl_width(lc), "%lld older event%s no longer kept (the agent "
                   "keeps the newest %d)", (long long)dropped, dropped == 1 ? " is" : "s are",
                   EVENTS_MAX);
    return LOCKCTL_DONE;
}

/* --follow: ask for what is new every EVENTS_FOLLOW_MS, until killed. */
static int
follow(const struct lockctl *lc, const struct events_opts *o, struct agent_view *av,
       uint64_t after)
{
    struct timespec pause = { EVENTS_FOLLOW_MS / 1000, (EVENTS_FOLLOW_MS % 1000) * 1000000L };
    struct strbuf url;
    bool failing = false;
    json_t *doc;

    sb_init(&url, 16 * 1024);
    for (;;) {
        fflush(stdout);
        clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, NULL);
        av->deadline_ms = 0;    /* each request its own AGENT_TIMEOUT_MS */
        if (page_url(lc, o, av->url, true, after, &url) == -1)
            break;
        if (fetch(av, url.buf, &doc) == -1) {
            if (!failing)
                lockctl_warnx("warning: events: the agent at %s did not answer (%s); still "
                              "asking", av->url, av->err);
            failing = true;
            continue;
        }
        if (failing)
            lockctl_note(lc, "events: the agent at %s answers again", av->url);
        failing = false;
        if (json_is_true(json_object_get(doc, "gap")))
            lockctl_warnx("warning: events: some events were missed (the agent restarted, "
                          "or more than %d came between two reads)", EVENTS_MAX);
        /* the titles were printed once, above the first page */
        if (lc->json ? print_lines(doc, 0) == -1 : print_table(lc, doc, 0, false) < 0) {
            json_decref(doc);
            break;
        }
        after = (uint64_t)json_integer_value(json_object_get(doc, "next_after"));
        json_decref(doc);
    }
    sb_release(&url);
    lockctl_warnx("out of memory");
    return LOCKCTL_REDIS;
}

/* The command's own options into o; LOCKCTL_DONE, or the exit code. */
static int
parse_options(struct lockctl *lc, int argc, char **argv, struct events_opts *o)
{
    static const struct option opts[] = {
        { "since", required_argument, NULL, 's' },
        { "kind", required_argument, NULL, 'k' },
        { "limit", required_argument, NULL, 'n' },
        { "follow", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    char *end;
    int opt;

    optind = 0;
    while ((opt = getopt_long(argc, argv, SESSION_SHORT_OPTIONS "n:fh", opts, NULL)) != -1) {
        int common = session_common_option(lc, opt, optarg);

        if (common < 0)
            return LOCKCTL_USAGE;       /* a bad value: said */
        if (common > 0)
            continue;
        if (opt == 's') {
            if (config_parse_duration(optarg, &o->since_ms) == -1 || o->since_ms <= 0) {
                lockctl_warnx("events: --since must be a duration such as 90s, 15m or 2h");
                return LOCKCTL_USAGE;
            }
            o->since_text = optarg;
        } else if (opt == 'k') {
            if (event_kind_of(optarg, strlen(optarg)) < 0) {
                lockctl_warnx("events: --kind must be one of lease_lost, expired_renewed, "
                              "lease_overrun, lost_at_failover, deadlock, inversion, "
                              "force_release");
                return LOCKCTL_USAGE;
            }
            o->kind = optarg;
        } else if (opt == 'n') {
            o->limit = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || o->limit < 1 || o->limit > EVENTS_MAX) {
                lockctl_warnx("events: --limit must be an integer from 1 to %d", EVENTS_MAX);
                return LOCKCTL_USAGE;
            }
        } else if (opt == 'f') {
            o->follow = true;
        } else if (opt == 'h') {
            lockctl_command_help("events", stdout);
            return -1;
        } else {
            lockctl_command_help("events", stderr);
            return LOCKCTL_USAGE;
        }
    }
    if (optind != argc) {
        lockctl_warnx("events: unexpected argument \"%s\"", argv[optind]);
        return LOCKCTL_USAGE;
    }
    return LOCKCTL_DONE;
}

int
cmd_events(struct lockctl *lc, int argc, char **argv)
{
    struct events_opts o;
    struct agent_view av;
    struct strbuf url;
    char err[320];
    json_t *doc = NULL;
    int rc, r;

    memset(&o, 0, sizeof(o));
    memset(&av, 0, sizeof(av));
    if ((rc = parse_options(lc, argc, argv, &o)) != LOCKCTL_DONE)
        return rc == -1 ? LOCKCTL_DONE : rc;
    lc->agent_only = true;
    if ((rc = session_load(lc)) != LOCKCTL_DONE)
        return rc;
    if ((r = agent_base_url(lc, av.url, sizeof(av.url), err, sizeof(err))) != 0) {
        lockctl_warnx("events: %s", r == 1 ? "the timeline is the agent's, and --agent off "
                      "asks no agent" : err);
        out_error_hint("give --agent http://host:port of a running lockwatchd");
        return LOCKCTL_USAGE;
    }
    o.since_ms = o.since_ms > 0 ? clock_now_ms() - o.since_ms : 0;
    av.deadline_ms = lc->scope.deadline_ms;
    sb_init(&url, 16 * 1024);
    if (page_url(lc, &o, av.url, false, 0, &url) == -1) {
        sb_release(&url);
        lockctl_warnx("out of memory");
        return LOCKCTL_REDIS;
    }
    r = fetch(&av, url.buf, &doc);
    sb_release(&url);
    if (r == -1) {
        lockctl_warnx("events: the agent at %s did not answer: %s", av.url, av.err);
        out_error_hint("start lockwatchd, or give --agent http://host:port of the agent");
        return LOCKCTL_REDIS;
    }
    rc = print_first(lc, &o, &av, doc);
    if (rc == LOCKCTL_DONE && o.follow) {
        uint64_t after = (uint64_t)json_integer_value(json_object_get(doc, "next_after"));

        json_decref(doc);
        return follow(lc, &o, &av, after);
    }
    json_decref(doc);
    return rc;
}
