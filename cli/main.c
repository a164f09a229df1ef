/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - lockctl, the on-call CLI: global options and the command table.
 *
 *   lockctl [-c FILE] [-t TARGET] [--url redis://...] [--agent URL|off] [--json]
 *           [-o wide|json] [-q] COMMAND [ARGS]
 *
 * Commands are rows of a table (name, function, synopsis, help); each
 * command parses its own options in its own file and also takes the
 * global ones, so "lockctl release K --holder H --json" works as well as
 * "lockctl --json release K --holder H".  Exit codes: 0 done, 1 refused
 * by a guard or nothing to do, 2 usage or config error, 3 Redis
 * unreachable or error.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"

static const struct command {
    const char *name;
    int (*run)(struct lockctl *lc, int argc, char **argv);
    const char *synopsis;
    const char *help;
} commands[] = {
    { "list", cmd_list,
      "list [--state leaked|long|reentrant_high|held|all] [--pattern GLOB] [--limit N]",
      "List the target's locks, worst first (leaked, long, reentrant_high, held; older\n"
      "first), read from Redis now with a bounded SCAN of the target's patterns.\n"
      "  --state S       only locks in state S (default all; held is all); leaked\n"
      "                  also lists, as leaked?, the locks without a TTL for an\n"
      "                  unknown time\n"
      "  --pattern GLOB  scan GLOB instead of the target's patterns (keys must still\n"
      "                  match one of them)\n"
      "  --limit N       show at most N locks (1..10000, default 100)\n"
      "Ages and no-TTL times come from the agent when it answers (age_source: agent);\n"
      "else from OBJECT IDLETIME (a lower bound, shown \">= 12s\") or the acquisition\n"
      "time the format encodes or the client registry gives (liblockwatch's reentrant\n"
      "locks: lockwatch:client:{uuid}, as show reads it); one under a second says\n"
      "nothing and reads \"unknown\".\n"
      "States follow the config's [rules]; STATE shows every state of a lock.\n"
      "A cluster: each primary's keys where its SCAN found them; the footer counts\n"
      "keys a node did not serve when read, names slots no node serves, and says\n"
      "when the slots moved while listed (a resharding: run list again).\n" },
    { "show", cmd_show, "show KEY [--escaped]",
      "Show one lock: format, holders (the exact --holder a release needs), TTL, age\n"
      "(the agent's when it answers), states, whether the key is inside the\n"
      "target's patterns, and who waits where Redis shows it (a fair lock's queue,\n"
      "the clients subscribed to its wake channel).\n"
      "  --escaped       KEY is percent-encoded (as key_escaped in --json output)\n"
      "KEY may be an alert's label of a key too long or unprintable to show whole\n"
      "(a cut key, \xe2\x80\xa6#, 16 hex digits): the lock the agent keeps under that hash.\n"
      "It ends with the release command for the holder, to paste as it stands: lockctl\n"
      "as run, with -c, -t, --url and --tls-* as given (paths made absolute),\n"
      "shell-quoted, a binary holder as --holder-hex, continued with \\ when wider\n"
      "than the terminal.\n"
      "Exit 1 when there is no such key, or when the Redis user may not read a key\n"
      "outside the target's patterns (no lock of this target).\n" },
    { "release", cmd_release,
      "release KEY --holder H|--holder-hex HEX [--if-leaked] [--if-older-than DUR]\n"
      "          [--reason TEXT] [--yes] [--dry-run] [--escaped]",
      "Release one holder of a stuck lock through the guarded script: only if KEY\n"
      "matches the target's patterns (else refused before Redis is asked, exit 1)\n"
      "and H holds it, atomically; then wake the\n"
      "waiters its format has and append an audit entry.  Only H's hold goes (one\n"
      "reader of a read/write lock, one permit of a semaphore); the key is deleted\n"
      "when no holder is left.  Fencing counters are never touched.\n"
      "  --holder H          exactly as lockctl show prints it: the token (string\n"
      "                      lock), the field (hash lock: <uuid>:<thread>, a RW\n"
      "                      writer's <uuid>:<thread>:write), the permit id; one\n"
      "                      that does not hold the lock is refused before the prompt,\n"
      "                      naming the holder it has now\n"
      "  --holder-hex HEX    the holder's bytes in hex (binary tokens, which list and\n"
      "                      show print as hex:HEX)\n"
      "  --if-leaked         only if the lock is leaked as list --state leaked judges\n"
      "                      it: no TTL for at least leak_grace (when that is not\n"
      "                      known, the refusal names the next step: the agent, or\n"
      "                      lockctl expire)\n"
      "  --if-older-than DUR only if the holder is at least DUR old (OBJECT IDLETIME,\n"
      "                      the acquisition time the format encodes, or the agent's\n"
      "                      age of that holding, since its lease was last set)\n"
      "  --reason TEXT       why, for the audit entry\n"
      "  --yes               do not ask (required when stdin is not a terminal)\n"
      "  --dry-run           run every guard, change nothing, write no audit entry\n"
      "  --escaped           KEY and H are percent-encoded (for binary keys)\n"
      "Exit 0 released (or a dry run whose guards hold), 1 refused by a guard (the\n"
      "reason is printed) or not confirmed, 2 usage error or no terminal without --yes,\n"
      "3 Redis error.\n" },
    { "expire", cmd_expire,
      "expire KEY --ttl DUR --holder H|--holder-hex HEX [--reason TEXT] [--yes]\n"
      "          [--dry-run] [--escaped]",
      "Give a leaked lock (one without a TTL) a TTL of DUR, under the same guards as\n"
      "release, and audit it.  A lock that already has a TTL is refused (has_ttl):\n"
      "its holder's lease is in charge.\n"
      "  --ttl DUR       the TTL to set, e.g. 30s\n"
      "  --holder H      as for release (or --holder-hex HEX)\n"
      "  --reason TEXT   why, for the audit entry\n"
      "  --yes           do not ask (required when stdin is not a terminal)\n"
      "  --dry-run       run every guard, change nothing, write no audit entry\n"
      "  --escaped       KEY and H are percent-encoded\n" },
    { "audit", cmd_audit, "audit [--limit N]",
      "Show the newest entries of the audit stream ([unlock] audit_stream), newest\n"
      "first: every release and expire, refused or done (dry runs leave none).\n"
      "  --limit N       at most N entries (1..10000, default 20)\n" },
    { "deadlocks", cmd_deadlocks, "deadlocks [--waits N]",
      "Show the agent's wait-for graph (GET /api/v1/deadlocks): every deadlock now, a\n"
      "table of its holders (who waits for which key, held by whom, for how long) and\n"
      "the lock whose release breaks it (the youngest hold), with its Redis holder id\n"
      "and the release command to paste (--holder is that id, not the owner), then\n"
      "the lock-order inversions known (two lock classes taken in both orders, with\n"
      "both sites), then who waits for whom now, deadlocked or not: \"waiting now\",\n"
      "the oldest holdings first (a waiter stuck behind a slow holder shows there\n"
      "before any cycle forms), with the holder id where the terminal has room.\n"
      "  --waits N       show the first N waits (0..256, default 20; 0: none); when\n"
      "                  some are left out, a line says how many (--json has all\n"
      "                  the agent lists, at most 256)\n"
      "Only the agent knows this: it is asked (--agent, else [agent] listen), and an\n"
      "agent that does not answer is exit 3.  --json prints the agent's document.\n" },
    { "events", cmd_events,
      "events [--since DURATION] [--kind KIND] [--limit N] [--follow]",
      "Show the agent's timeline of lock events, newest last (docs/events.md): leases\n"
      "lost while held (lease_lost), renewed locks that expired (expired_renewed),\n"
      "holders working past their lease (lease_overrun), locks lost at a failover\n"
      "(lost_at_failover), deadlock, inversion, force_release.  Read from the agent\n"
      "(--agent, else [agent] listen): it keeps the newest 1024; no Redis is asked.\n"
      "  --since DURATION  only the events of the last DURATION (e.g. 15m)\n"
      "  --kind KIND       only events of KIND\n"
      "  --limit N         the newest N (1..1024; default 50, all kept with --since)\n"
      "  --follow          then print new events as they come (asking every second)\n"
      "                    until interrupted; with --json one JSON object per line\n"
      "  -t TARGET         only TARGET's events\n"
      "Exit 3 when the agent does not answer.\n" },
    { "classes", cmd_classes, "classes",
      "Per lock class, from the agent (GET /api/v1/classes): locks now over every\n"
      "target and their baseline (median over count_baseline_window), creations and\n"
      "deletions per second, the acquire-wait P99 of wait_window (WAIT99; \"!\" when\n"
      "above wait_p99 with at least wait_min_samples waits: LockWaitP99High), hold\n"
      "P99.9, the lease (longest TTL at first sight in wait_window) and the advice:\n"
      "fits, too short or too long with the lease that would fit (2x hold P99.9,\n"
      "rounded up), or why it cannot judge; a class renewed while held (a watchdog)\n"
      "is judged on its renewal period, shown as \"(renewed every 10s)\", or as\n"
      "\"(renewed; period not seen)\" when the scans never read its TTL below the\n"
      "lease.  SURGE marks a class above count_surge_factor x its baseline.  The\n"
      "classes that call for a look (WAIT99 !, too short, too long, SURGE) come\n"
      "first.\n"
      "--json prints the API's answer.\n" },
    { "alerts", cmd_alerts, "alerts [--severity critical|warning|info] [--describe]",
      "The alerts firing now, from the agent (GET /api/v1/alerts; docs/alerts.md),\n"
      "worst first: critical, warning, info, then the oldest first.  A row is the\n"
      "severity, the alertname, its subject as the labels have it (KEY on TARGET,\n"
      "target T, shard S of T at NODE, class C) and how long it has fired (SINCE),\n"
      "with its summary under it.  When nothing fires, one line says so.\n"
      "  --severity S    only the alerts of severity S\n"
      "  -t TARGET       only the alerts of TARGET (its target label)\n"
      "  -d, --describe  each alert's description too: what it means, what to do\n"
      "                  (a Redlock split's holder on each node)\n"
      "Only the agent knows this: it is asked (--agent, else [agent] listen), and an\n"
      "agent that does not answer is exit 3; an answer is exit 0, whatever fires.\n"
      "--json prints the agent's document (with -t or --severity, only those alerts).\n" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char global_help[] =
    "Global options (before or after the command):\n"
    "  -c, --config FILE   config (default " CONFIG_DEFAULT_PATH ";\n"
    "                      when it does not exist, the agent's built-in defaults,\n"
    "                      noted on stderr)\n"
    "  -t, --target NAME   the [target NAME] to use (default: the first)\n"
    "  --url redis://[user@]host[:port][/db]\n"
    "                      talk to this address instead of the target's url (its\n"
    "                      patterns, password_file, timeouts and tls_* still apply);\n"
    "                      rediss:// for TLS.  release, expire and audit log in as\n"
    "                      the target's release_user when it has one\n"
    "  --tls-ca-file FILE, --tls-ca-dir DIR, --tls-cert-file FILE,\n"
    "  --tls-key-file FILE, --tls-server-name NAME, --tls-verify on|off\n"
    "                      replace the target's tls_* setting of the same name\n"
    "                      (lockwatch.ini(5)); only with a rediss:// url\n"
    "  --agent http://host:port|off\n"
    "                      the agent list, show and release ask for first-seen and\n"
    "                      no-TTL times, and deadlocks, events, classes and alerts\n"
    "                      read (default: [agent] listen; off: do not ask)\n"
    "  --timeout DURATION  the whole command's deadline (default 15s): every Redis\n"
    "                      read and the agent's answers keep to it (the time you\n"
    "                      take to answer a prompt is not counted)\n"
    "  --json              machine-readable output (see docs/lockctl.md); a failure\n"
    "                      prints {\"error\", \"hint\", \"exit\"} with the same exit code\n"
    "  -o, --output wide|json\n"
    "                      wide: every cell and sentence whole, whatever the width\n"
    "                      (else: fit $COLUMNS, else the terminal; a pipe or file\n"
    "                      without $COLUMNS gets every cell whole too); json: --json\n"
    "  -q, --quiet         no notes on stderr (errors and warnings stay)\n"
    "  -h, --help          help; lockctl COMMAND --help for a command\n"
    "  -V, --version       the version\n";

/* A synopsis at indent, wrapped at 80 columns between its words or
 * bracketed groups (never inside "[--pattern GLOB]"), continued 4 further
 * in. */
static void
print_synopsis(FILE *fp, int indent, const char *s)
{
    int col = fprintf(fp, "%*s", indent, "");

    for (;;) {
        const char *e;
        int depth = 0, n;

        s += strspn(s, " \n");         /* the table's own line breaks too */
        if (*s == '\0')
            break;
        for (e = s; *e != '\0' && ((*e != ' ' && *e != '\n') || depth > 0); e++)
            depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
        n = (int)(e - s);
        if (col > indent && col + 1 + n > 80)
            col = fprintf(fp, "\n%*s", indent + 4, "") - 1;
        else if (col > indent)
            col += fprintf(fp, " ");
        col += fprintf(fp, "%.*s", n, s);
        s = e;
    }
    fputc('\n', fp);
}

static void
usage(FILE *fp)
{
    fprintf(fp, "usage: lockctl [-c FILE] [-t TARGET] [--url redis://...] [--tls-* ...]\n"
            "               [--agent URL|off] [--timeout DUR] [--json] [-o wide|json]\n"
            "               [-q] COMMAND\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        print_synopsis(fp, 2, commands[i].synopsis);
    fprintf(fp, "%s", global_help);
    fprintf(fp, "Exit codes: 0 done, 1 refused by a guard or nothing to do, 2 usage or\n"
            "config error, 3 Redis unreachable or error, or the agent did not answer\n"
            "(deadlocks, events, classes, alerts).\n");
}

void
lockctl_command_help(const char *name, FILE *fp)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) {
            fprintf(fp, "usage: lockctl [global options]\n");
            print_synopsis(fp, 9, commands[i].synopsis);
            if (fp == stderr)
                fprintf(fp, "(lockctl %s --help says more)\n", name);
            else
                fprintf(fp, "\n%s\n%s", commands[i].help, global_help);
            return;
        }
}

/* The tables' last footer: how many cells were cut to fit the width, and
 * how to see them whole (a pipe without $COLUMNS cuts none). */
static void
cut_footer(const struct lockctl *lc)
{
    size_t n = table_cut_count(), width = lockctl_width(lc);

    if (n > 0 && !lc->json)
        table_line(stdout, width, "%zu cell%s cut in the middle to fit %zu columns: "
                   "-o wide shows %s whole", n, n == 1 ? "" : "s", width, n == 1 ? "it" : "them");
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    struct lockctl lc;
    int opt, rc;

    memset(&lc, 0, sizeof(lc));
    /* --json anywhere asks for a JSON error too, even when an option
     * before it is what fails (each command stops at its first bad one) */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-ojson") == 0 ||
            (strcmp(argv[i], "-o") == 0 && i + 1 < argc && strcmp(argv[i + 1], "json") == 0))
            lc.json = true;
    /* the whole command's deadline: every Redis read keeps to it */
    session_deadline(&lc, LOCKCTL_TIMEOUT_MS);
    redisconn_scope_enter(&lc.scope);
    /* Over TLS, OpenSSL writes with write(2): a server that closed the
     * connection must give an error, not kill lockctl. */
    signal(SIGPIPE, SIG_IGN);
    /* "+": stop at the command; its options are its own */
    while ((opt = getopt_long(argc, argv, "+" SESSION_SHORT_OPTIONS "hV", opts, NULL)) != -1) {
        {
            int common = session_common_option(&lc, opt, optarg);

            if (common < 0)
                return LOCKCTL_USAGE;   /* a bad value: said */
            if (common > 0)
                continue;
        }
        switch (opt) {
        case 'h':
            usage(stdout);
            return LOCKCTL_DONE;
        case 'V':
            printf("lockctl %s\n", LOCKWATCH_VERSION);
            return LOCKCTL_DONE;
        default:
            usage(stderr);
            if (lc.json)
                out_json_error(LOCKCTL_USAGE);
            return LOCKCTL_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        if (lc.json) {
            out_error_remember("no command given");
            out_json_error(LOCKCTL_USAGE);
        }
        return LOCKCTL_USAGE;
    }
    lc.argv0 = argv[0];
    for (size_t i = 0; i < NCOMMANDS; i++) {
        char prog[64];

        if (strcmp(commands[i].name, argv[optind]) != 0)
            continue;
        /* getopt names argv[0] in its messages: "lockctl: list: ..." */
        snprintf(prog, sizeof(prog), "lockctl: %s", commands[i].name);
        argv[optind] = prog;
        rc = commands[i].run(&lc, argc - optind, argv + optind);
        session_close(&lc);
        cut_footer(&lc);
        if (lc.json)
            out_json_error(rc);
        else
            out_text_hint(rc);
        fflush(stdout);
        return rc;
    }
    {
        char names[256];
        size_t n = 0;

        /* from the table, so a new command is never missing here */
        names[0] = '\0';
        for (size_t i = 0; i < NCOMMANDS && n < sizeof(names); i++)
            n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i > 0 ? ", " : "",
                                  commands[i].name);
        lockctl_warnx("unknown command \"%s\" (commands: %s; see lockctl --help)",
                      argv[optind], names);
    }
    if (lc.json)
        out_json_error(LOCKCTL_USAGE);
    return LOCKCTL_USAGE;
}
