/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * deadlocks.c - lockctl deadlocks: the agent's wait-for graph
 * (GET /api/v1/deadlocks, docs/deadlocks.md): every deadlock now, one
 * table of its steps (who waits for which key, held by whom, for how
 * long) and the lock to release, with the release command to paste as
 * show prints it (pasteline.c): its --holder is the Redis holder id the
 * agent drew the edge to (`holder_id`), not the owner the table shows,
 * and its -t the lock's target; then the lock-order inversions known;
 * then who waits for whom now, deadlocked or not (the agent's `waits`,
 * the oldest holdings first): a waiter stuck behind a slow holder shows
 * there before any cycle forms.  --waits N shows the first N (20 by
 * default, 0 none, at most the GRAPH_WAITS_MAX the agent lists) and says
 * how many were left out.
 *
 * Only the agent knows this (it joins the fair queues of every target with
 * the reporters' waiting lines), so this command asks it and nothing else:
 * an agent that does not answer is an error (exit 3), with where it was
 * asked.  --json prints the agent's document as it came.  Keys, waiters
 * and holders are bytes: the table shows them terminal-safe, cut in the
 * middle, from their percent-encoded forms.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "collectors/graph/graph.h"

#define WAITS_DEFAULT 20        /* waits shown without --waits */

static const struct table_col step_cols[] = {
    { "WAITER", 22, 0, 10 },
    { "WAITS FOR KEY", 0, TABLE_FLEX | TABLE_MIDDLE, 0 },
    { "HELD BY", 22, 0, 10 },
    { "HELD", 8, 0, 0 },
};

/* The same columns, and the holder id the edge was drawn to where the
 * terminal has room for it beside the key (a release takes that id). */
static const struct table_col wait_cols[] = {
    { "WAITER", 22, 0, 10 },
    { "WAITS FOR KEY", 0, TABLE_FLEX | TABLE_MIDDLE, 0 },
    { "HELD BY", 22, 0, 10 },
    { "HELD", 8, 0, 0 },
    { "HOLDER ID", 22, TABLE_MIDDLE | TABLE_OPTIONAL, 10 },
};

/* A member's bytes from its "<name>_escaped" form (malloc'd), else "". */
static char *
member_bytes(const json_t *o, const char *name, size_t *len)
{
    char esc[64];
    const char *s;
    char *raw;

    snprintf(esc, sizeof(esc), "%s_escaped", name);
    s = json_string_value(json_object_get(o, esc));
    if (s == NULL || (raw = out_unescape(s, len)) == NULL) {
        *len = 0;
        return strdup("");
    }
    return raw;
}

/* A step's holder id as show and list write it ("hex:..." when not
 * text), malloc'd; NULL when no one named it (or on ENOMEM). */
static char *
holder_id_text(const json_t *step)
{
    size_t n = 0;
    char *hid = member_bytes(step, "holder_id", &n), *text = NULL;

    if (hid != NULL && n > 0 && (text = malloc(OUT_HOLDER_MAX(n))) != NULL)
        out_holder(hid, n, text, OUT_HOLDER_MAX(n));
    free(hid);
    return text;
}

/* One step as a row of step_cols, or of wait_cols when with_id. */
static int
step_row(struct table *t, const json_t *step, bool with_id)
{
    const json_t *held = json_object_get(step, "held_seconds");
    char *cells[4], dur[32];
    const char *c[5];
    size_t lens[5], i;
    int rc;

    cells[0] = member_bytes(step, "waiter", &lens[0]);
    cells[1] = member_bytes(step, "key", &lens[1]);
    cells[2] = member_bytes(step, "holder", &lens[2]);
    cells[3] = with_id ? holder_id_text(step) : NULL;
    /* no held_since: the holding's age is not known (list says the same) */
    if (json_is_number(held))
        out_duration((int64_t)(json_number_value(held) * 1000.0), dur, sizeof(dur));
    else
        snprintf(dur, sizeof(dur), "unknown");
    for (i = 0; i < 3; i++)
        c[i] = cells[i] != NULL ? cells[i] : "";
    if (cells[0] == NULL || cells[1] == NULL || cells[2] == NULL)
        lens[0] = lens[1] = lens[2] = 0;
    c[3] = dur;
    lens[3] = strlen(dur);
    c[4] = cells[3] != NULL ? cells[3] : "-";
    lens[4] = strlen(c[4]);
    rc = table_add(t, c, lens);
    for (i = 0; i < 4; i++)
        free(cells[i]);
    return rc;
}

/* For a step whose holding no scan could confirm (the agent's
 * unconfirmed_target), a line that says so under the table. */
static void
unconfirmed_line(const json_t *step, size_t width)
{
    const char *target = json_string_value(json_object_get(step, "unconfirmed_target"));
    size_t klen = 0, n;
    char *key, *skey;

    if (target == NULL)
        return;
    key = member_bytes(step, "key", &klen);
    skey = table_safe_text(key ? key : "", key ? klen : 0, &n);
    table_line(stdout, width, "the holding of %s is its holder's own word: target %s cannot "
               "confirm it (its last scan failed or was partial)", skey ? skey : "?", target);
    free(key);
    free(skey);
}

/*
 * The command that releases the lock of step rel (the one to release), to
 * paste as it stands, or why there is none: the key or the holder id was
 * cut in the agent's report, or no line named the holder id.
 */
static void
release_command(const struct lockctl *lc, const json_t *rel, size_t width)
{
    const char *target = json_string_value(json_object_get(rel, "target"));
    size_t klen = 0, hlen = 0;
    char *key = member_bytes(rel, "key", &klen), *hid = member_bytes(rel, "holder_id", &hlen);
    struct pasteline pl;

    if (key == NULL || hid == NULL) {
        table_line(stdout, width, "no release command: out of memory");
    } else if (json_is_true(json_object_get(rel, "key_cut"))) {
        table_line(stdout, width, "no release command: the key is longer than the agent's "
                   "report keeps (lockctl list shows it whole)");
    } else if (hlen == 0) {
        table_line(stdout, width, "no release command: no one named the holder id (the "
                   "owner's waiting line said \"-\"); lockctl show KEY prints the command");
    } else if (json_is_true(json_object_get(rel, "holder_id_cut"))) {
        table_line(stdout, width, "no release command: the holder id is longer than the agent "
                   "keeps; lockctl show KEY prints the command");
    } else {
        paste_init_target(&pl, lc, target, "release");
        paste_key_holder(&pl, key, klen, hid, hlen);
        if (target == NULL)
            table_line(stdout, width, "no scan shows this lock (only the reporters' lines "
                       "know it): -t is lockctl's target; name the one that holds it. If "
                       "its owners died or restarted, nothing says they let go: the deadlock "
                       "stays until the agent restarts (a target whose patterns cover the "
                       "key vouches for it)");
        paste_show(stdout, &pl, width, "release with:");
        paste_release(&pl);
    }
    free(key);
    free(hid);
}

static void
print_deadlock(const struct lockctl *lc, const json_t *d, size_t n)
{
    const json_t *steps = json_object_get(d, "steps");
    const json_t *rel = json_array_get(steps, (size_t)json_integer_value(
                                           json_object_get(d, "release")));
    const char *target = json_string_value(json_object_get(d, "target"));
    const char *since = json_string_value(json_object_get(d, "since"));
    size_t width = lockctl_width(lc), i, klen = 0, hlen = 0;
    char *key, *holder, *skey, *sholder, *shid = NULL, *idtext;
    struct table t;

    /* "*": the label LockDeadlock keeps, said in words here */
    if (target != NULL && strcmp(target, "*") == 0)
        table_line(stdout, width, "deadlock %zu: %zu holders, target * (on several targets, "
                   "or first known from reporters' lines), since %s", n,
                   json_array_size(steps), since ? since : "?");
    else
        table_line(stdout, width, "deadlock %zu: %zu holders on target %s, since %s", n,
                   json_array_size(steps), target ? target : "?", since ? since : "?");
    table_init(&t, step_cols, sizeof(step_cols) / sizeof(step_cols[0]));
    for (i = 0; i < json_array_size(steps); i++)
        if (step_row(&t, json_array_get(steps, i), false) == -1)
            break;
    table_print(&t, stdout, width);
    table_release(&t);
    for (i = 0; i < json_array_size(steps); i++)
        unconfirmed_line(json_array_get(steps, i), width);
    key = member_bytes(rel, "key", &klen);
    holder = member_bytes(rel, "holder", &hlen);
    skey = table_safe_text(key ? key : "", key ? klen : 0, &i);
    sholder = table_safe_text(holder ? holder : "", holder ? hlen : 0, &i);
    if ((idtext = holder_id_text(rel)) != NULL) {
        shid = table_safe_text(idtext, strlen(idtext), &i);
        free(idtext);
    }
    table_line(stdout, width, "to break it, release %s (held by %s%s%s: the youngest hold) or "
               "restart its holder", skey ? skey : "?", sholder ? sholder : "?",
               shid ? " as holder id " : "", shid ? shid : "");
    release_command(lc, rel, width);
    free(key);
    free(holder);
    free(skey);
    free(sholder);
    free(shid);
}

static void
print_inversion(const struct lockctl *lc, const json_t *v)
{
    const json_t *sites = json_object_get(v, "sites");
    size_t k, width = lockctl_width(lc);

    table_line(stdout, width, "lock-order inversion: %s and %s are taken in both orders",
               json_string_value(json_array_get(json_object_get(v, "classes"), 0)),
               json_string_value(json_array_get(json_object_get(v, "classes"), 1)));
    for (k = 0; k < json_array_size(sites); k++) {
        const json_t *s = json_array_get(sites, k);
        size_t n[3], w;
        char *b[3] = { member_bytes(s, "owner", &n[0]), member_bytes(s, "held_key", &n[1]),
                       member_bytes(s, "wanted_key", &n[2]) };
        char *safe[3];

        for (w = 0; w < 3; w++)
            safe[w] = table_safe_text(b[w] ? b[w] : "", b[w] ? n[w] : 0, &n[w]);
        table_line(stdout, width, "  %s held %s (%s) while acquiring %s (%s)",
                   safe[0] ? safe[0] : "?",
                   json_string_value(json_object_get(s, "held_class")), safe[1] ? safe[1] : "?",
                   json_string_value(json_object_get(s, "wanted_class")),
                   safe[2] ? safe[2] : "?");
        for (w = 0; w < 3; w++) {
            free(b[w]);
            free(safe[w]);
        }
    }
}

/*
 * Who waits for whom now, deadlocked or not: the first max of the agent's
 * waits (every edge of its last pass, the oldest holdings first, those of
 * unknown age last), and how many were left out: by max, or by the agent,
 * which lists at most GRAPH_WAITS_MAX of its waits_total.
 */
static void
print_waits(const json_t *doc, size_t max, size_t width)
{
    const json_t *waits = json_object_get(doc, "waits");
    size_t listed = json_array_size(waits), i;
    long long total = (long long)json_integer_value(json_object_get(doc, "waits_total"));
    struct table t;

    if (listed == 0 || max == 0)
        return;
    if (total < (long long)listed)
        total = (long long)listed;
    table_line(stdout, width, "waiting now (who waits for whom, deadlocked or not):");
    table_init(&t, wait_cols, sizeof(wait_cols) / sizeof(wait_cols[0]));
    for (i = 0; i < listed && i < max; i++)
        if (step_row(&t, json_array_get(waits, i), true) == -1)
            break;
    table_print(&t, stdout, width);
    if (t.nrows < listed)
        table_line(stdout, width, "%zu of %lld waits shown (oldest holdings first; --json for "
                   "all the agent lists)", t.nrows, total);
    else if (listed < (size_t)total)
        table_line(stdout, width, "%zu of %lld waits shown (oldest holdings first; the agent "
                   "lists at most %d)", t.nrows, total, GRAPH_WAITS_MAX);
    table_release(&t);
}

static int
print_human(const struct lockctl *lc, const json_t *doc, size_t waits)
{
    const json_t *dl = json_object_get(doc, "deadlocks"), *inv = json_object_get(doc, "inversions");
    size_t i, width = lockctl_width(lc);

    for (i = 0; i < json_array_size(dl); i++)
        print_deadlock(lc, json_array_get(dl, i), i + 1);
    for (i = 0; i < json_array_size(inv); i++)
        print_inversion(lc, json_array_get(inv, i));
    print_waits(doc, waits, width);
    table_line(stdout, width, "%zu deadlock%s, %zu lock-order inversion%s (the agent's wait-for "
               "graph: %lld edges in its last pass)", json_array_size(dl),
               json_array_size(dl) == 1 ? "" : "s", json_array_size(inv),
               json_array_size(inv) == 1 ? "" : "s",
               (long long)json_integer_value(json_object_get(json_object_get(doc, "graph"),
                                                             "edges")));
    return LOCKCTL_DONE;
}

int
cmd_deadlocks(struct lockctl *lc, int argc, char **argv)
{
    static const struct option opts[] = {
        { "help", no_argument, NULL, 'h' },
        { "waits", required_argument, NULL, 'w' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    struct agent_view av;
    json_t *doc = NULL;
    long waits = WAITS_DEFAULT;
    char *end;
    int opt, rc;

    optind = 0;
    while ((opt = getopt_long(argc, argv, SESSION_SHORT_OPTIONS "w:h", opts, NULL)) != -1) {
        int common = session_common_option(lc, opt, optarg);

        if (common < 0)
            return LOCKCTL_USAGE;       /* a bad value: said */
        if (common > 0)
            continue;
        if (opt == 'w') {
            waits = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || waits < 0 || waits > GRAPH_WAITS_MAX) {
                lockctl_warnx("deadlocks: --waits must be an integer from 0 (none) to %d "
                              "(the most the agent lists)", GRAPH_WAITS_MAX);
                return LOCKCTL_USAGE;
            }
            continue;
        }
        lockctl_command_help("deadlocks", opt == 'h' ? stdout : stderr);
        return opt == 'h' ? LOCKCTL_DONE : LOCKCTL_USAGE;
    }
    if (optind != argc) {
        lockctl_warnx("deadlocks: unexpected argument \"%s\"", argv[optind]);
        return LOCKCTL_USAGE;
    }
    lc->agent_only = true;
    if ((rc = session_load(lc)) != LOCKCTL_DONE)
        return rc;
    if ((rc = agent_command_doc(lc, &av, "deadlocks", "/api/v1/deadlocks", "only the agent "
                                "knows who waits for whom: start lockwatchd, or name it with "
                                "--agent URL", &doc)) != LOCKCTL_DONE)
        return rc;
    rc = lc->json ? (out_json_print(doc) == 0 ? LOCKCTL_DONE : LOCKCTL_REDIS)
                  : print_human(lc, doc, (size_t)waits);
    if (!lc->json)
        json_decref(doc);
    return rc;
}
