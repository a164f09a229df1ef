/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - lockwatchd: the lock-watching agent.
 *
 *   lockwatchd [-c FILE] [-d] [-n] [-v] [--once]
 *
 * The main thread owns signals: SIGHUP, SIGTERM and SIGINT are blocked in
 * every thread and collected here with sigtimedwait(), so no code runs in
 * signal context at all.  Reload builds and validates a new config whole
 * before the running one is touched; a bad file leaves the old one in
 * charge.
 *
 * Start order: scanner threads, HTTP, then the sample listener (when
 * [agent] samples is not off), each refusing to start the agent when its
 * address cannot be had; stop order is the reverse, so nothing renders or
 * records into statistics that are being freed.  --once neither listens
 * for samples nor reports wait metrics: one scan has no time to collect
 * any.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/http/alerts_http.h"
#include "agent/http/http.h"
#include "agent/ingest.h"
#include "common/clock.h"
#include "common/log.h"
#include "agent/http/render.h"
#include "agent/agent.h"
#include "agent/state.h"
#include "collectors/waits/waitstate.h"
#include "alerts/alerts.h"
#include "collectors/redis/tls.h"
#include "conf/config.h"
#include "conf/secretfile.h"
#include "conf/shard.h"

static void
usage(FILE *fp)
{
    fprintf(fp,
            "usage: lockwatchd [-c FILE] [-d] [-n [--service-user USER]] [-v] [--once]\n"
            "  -c FILE   config file (default %s;\n"
            "            when it does not exist, built-in defaults: target\n"
            "            redis://127.0.0.1:6379/0, pattern lock:*)\n"
            "  -d        stay in the foreground and log to stderr\n"
            "  -n        check the config, print the effective config (secrets\n"
            "            redacted) and exit 0, or 2 when it is invalid\n"
            "  --service-user USER  with -n run as root: also warn about secret\n"
            "            files USER cannot read (default lockwatch, the unit's User=)\n"
            "  -v        more logging (repeat for more)\n"
            "  --once    scan every target once, print the metrics exposition on\n"
            "            stdout and exit: 0 all targets scanned, 1 a target failed\n"
            "  -h, --help     this help\n"
            "  -V, --version  print the version\n"
            "HTTP (default 127.0.0.1:9717): / (the status page) /metrics /healthz\n"
            "  /readyz /api/v1/{locks,classes,events,deadlocks,alerts,shard}: README\n"
            "UDP samples (default 127.0.0.1:9717): see docs/line-protocol.md\n",
            CONFIG_DEFAULT_PATH);
}

/*
 * Load the config.  The error quotes bytes of the file, which may be
 * control bytes (an ESC sequence aimed at the operator's terminal): at a
 * reload it goes through the log, at start (before the log is set up,
 * and for -n) to stderr, escaped by the log's own rule either way.
 */
/* A config warning (config_warnings): a log line, on stderr before the
 * log is set up (-n), escaped like every other. */
static void
warn_line(void *arg, const char *msg)
{
    (void)arg;
    log_warnx("warning: %s", msg);
}

/* A reload's config: what only a restart changes keeps its running value
 * (run's), said in the log, so that alert links, the warnings and the next
 * reload's comparison speak of what runs (a trial: links to a port nothing
 * listened on, and going back to the running address warned again; a
 * red-team: [unlock] http turned on with no word of the network listener
 * that serves it). */
static void
keep_running(struct config *ncfg, const struct config *run)
{
    if (strcmp(ncfg->listen_host, run->listen_host) != 0 ||
        ncfg->listen_port != run->listen_port) {
        log_warnx("reload: listen = %s:%d takes effect only after a restart; the agent "
                  "listens on %s:%d until then", ncfg->listen_host, ncfg->listen_port,
                  run->listen_host, run->listen_port);
        memcpy(ncfg->listen_host, run->listen_host, sizeof(ncfg->listen_host));
        ncfg->listen_port = run->listen_port;
    }
    if (ncfg->http_max_connections != run->http_max_connections ||
        ncfg->http_max_connections_per_client !=
        run->http_max_connections_per_client ||
        ncfg->http_request_timeout_ms != run->http_request_timeout_ms ||
        ncfg->http_max_api_requests != run->http_max_api_requests) {
        log_warnx("reload: new http_* limits take effect only after a restart");
        ncfg->http_max_connections = run->http_max_connections;
        ncfg->http_max_connections_per_client = run->http_max_connections_per_client;
        ncfg->http_request_timeout_ms = run->http_request_timeout_ms;
        ncfg->http_max_api_requests = run->http_max_api_requests;
    }
    if (ncfg->samples_off != run->samples_off ||
        strcmp(ncfg->samples_host, run->samples_host) != 0 ||
        ncfg->samples_port != run->samples_port) {
        log_warnx("reload: a new samples address takes effect only after a restart");
        ncfg->samples_off = run->samples_off;
        memcpy(ncfg->samples_host, run->samples_host, sizeof(ncfg->samples_host));
        ncfg->samples_port = run->samples_port;
    }
}

/* Load the config at path; running: the config in effect at a reload
 * (NULL at start), whose restart-only values it keeps. */
static int
load(const char *path, bool explicit, const struct config *running, struct config **cfg,
     char *err, size_t errlen)
{
    char safe[LOG_DEFANG_MAX(CONFIG_ERR_LEN)];

    if (!explicit && access(path, F_OK) == -1 && errno == ENOENT)
        path = NULL;            /* no system config: built-in defaults */
    if (config_load(path, cfg, err, errlen) == -1) {
        if (running != NULL) {
            log_warnx("reload: %s", err);
        } else {
            log_defang(safe, sizeof(safe), err);
            fprintf(stderr, "lockwatchd: %s\n", safe);
        }
        return -1;
    }
    if (running != NULL)
        keep_running(*cfg, running);
    /* -n and the daemon alike: stderr before the log is set up */
    config_warnings(*cfg, warn_line, NULL);
    return 0;
}

/* shard = I/N: keep the targets this shard watches (conf/shard.h); the
 * others are listed as elsewhere.  -n prints the file's whole config. */
static int
split_shard(struct config *cfg)
{
    if (config_shard_split(cfg) == -1) {
        log_warnx("out of memory splitting the targets by shard");
        return -1;
    }
    if (cfg->shard_total > 1)
        log_info("shard %d/%d: watching %zu target(s); %zu watched by other shards",
                 cfg->shard_index, cfg->shard_total, cfg->ntargets, cfg->naway);
    return 0;
}

static int
run_once(const struct config *cfg)
{
    struct view v;
    struct strbuf sb;
    char safe[LOG_DEFANG_MAX(sizeof(((struct snapshot *)0)->err))];
    size_t i, k;
    int failed, rc = 0;

    failed = agent_scan_once(cfg, &v);
    if (failed < 0) {
        fprintf(stderr, "lockwatchd: out of memory\n");
        return 1;
    }
    for (i = 0; i < v.ntargets; i++) {
        const struct snapshot *s = v.targets[i].snap;

        if (s == NULL)
            fprintf(stderr, "lockwatchd: target %s: scan failed: out of memory\n",
                    v.targets[i].name);
        else if (!s->ok) {
            /* the error quotes Redis's reply: escaped as the log is */
            log_defang(safe, sizeof(safe), s->err);
            fprintf(stderr, "lockwatchd: target %s: scan failed: %s\n", s->target, safe);
        }
        /* a cluster target with a shard down was not wholly scanned */
        for (k = 0; s != NULL && s->ok && k < s->nshards; k++)
            if (!s->shards[k].ok) {
                log_defang(safe, sizeof(safe), s->shards[k].err);
                fprintf(stderr, "lockwatchd: target %s: shard %s (%s) failed: %s\n",
                        s->target, s->shards[k].shard, s->shards[k].node, safe);
                failed++;
            }
    }
    sb_init(&sb, RENDER_MAX_BYTES);
    if (render_metrics(&v, &sb) == -1) {
        fprintf(stderr, "lockwatchd: cannot render the exposition (too large or out of memory)\n");
        rc = 1;
    } else if (fwrite(sb.buf, 1, sb.len, stdout) != sb.len || fflush(stdout) != 0) {
        fprintf(stderr, "lockwatchd: writing to stdout: %s\n", strerror(errno));
        rc = 1;
    }
    sb_release(&sb);
    view_release(&v);
    return rc != 0 || failed > 0 ? 1 : 0;
}

/* The options of the command line, as parsed. */
struct options {
    const char *path;           /* the config file (absolute when -c was relative) */
    bool explicit;              /* -c given */
    bool foreground, check, once;
    int verbose;
};

static int serve(const struct options *opt);

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "once", no_argument, NULL, 'o' },
        { "service-user", required_argument, NULL, 'u' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    struct options opt = { .path = CONFIG_DEFAULT_PATH };
    const char *service_user = "lockwatch";
    char *abspath = NULL;
    int ch, rc;

    /* Large buffers (a reply being read, up to the reply limits of
     * collectors/redis/conn.h) are mmapped and given back when freed:
     * glibc would otherwise raise its threshold after the first and keep
     * such buffers in each scanner thread's arena, so a hostile target's
     * refused replies would stay in RSS. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);

    while ((ch = getopt_long(argc, argv, "c:dnvhV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            opt.path = optarg;
            opt.explicit = true;
            break;
        case 'd':
            opt.foreground = true;
            break;
        case 'n':
            opt.check = true;
            break;
        case 'u':
            service_user = optarg;
            break;
        case 'v':
            opt.verbose++;
            break;
        case 'o':
            opt.once = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("lockwatchd %s\nhiredis %s, TLS (rediss://): %s\n", LOCKWATCH_VERSION,
                   LOCKWATCH_HIREDIS, redisconn_tls_built() ? "yes" :
                   "no (built without hiredis_ssl)");
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    /* root checking the config for the service, which runs as its User= */
    if (opt.check)
        secretfile_service_user(service_user);
    if (optind != argc) {
        fprintf(stderr, "lockwatchd: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    /* The daemon changes directory to /: remember where a relative -c
     * path pointed, so SIGHUP reloads the same file. */
    if (opt.explicit && opt.path[0] != '/' && (abspath = realpath(opt.path, NULL)) != NULL)
        opt.path = abspath;
    rc = serve(&opt);
    free(abspath);
    return rc;
}

/*
 * The daemon's threads, in the start order: scanners, the sample
 * listener (unless samples = off), then HTTP.  0, or -1 when an address could
 * not be had (logged; what had started is stopped).
 */
static int
start(struct agent *agent, struct config *cfg, struct http_server **http,
      struct ingest **ingest)
{
    struct http_limits limits;
    char err[512];

    /* libcurl's global set-up is not thread-safe: before any thread */
    if (alerts_global_init() == -1)
        fatalx("cannot initialise libcurl");
    if (agent_start(agent, cfg) == -1)
        fatal("starting the scanner threads");
    agent_state_load(agent);    /* before the first sample */
    /* the samples port first: once HTTP answers (the probes, a test's
     * wait), a datagram sent is one the agent receives */
    *ingest = NULL;
    if (agent->waits != NULL) {
        *ingest = ingest_start(agent->waits, agent->cfg->samples_host, agent->cfg->samples_port,
                               agent->cfg->samples_batch_wait_ms, err, sizeof(err));
        if (*ingest == NULL) {
            log_warnx("%s", err);
            agent_stop(agent);
            return -1;
        }
    }
    limits.max_connections = (unsigned int)agent->cfg->http_max_connections;
    limits.max_connections_per_client = (unsigned int)agent->cfg->http_max_connections_per_client;
    limits.request_timeout_ms = agent->cfg->http_request_timeout_ms;
    limits.max_api_requests = (unsigned int)agent->cfg->http_max_api_requests;
    *http = http_start(agent, agent->cfg->listen_host, agent->cfg->listen_port, &limits,
                       err, sizeof(err));
    if (*http == NULL) {
        log_warnx("%s", err);
        if (*ingest != NULL)
            ingest_stop(*ingest);
        *ingest = NULL;
        agent_stop(agent);
        return -1;
    }
    if (agent->waits != NULL) {
        log_info("started (pid %ld): %zu target(s), http on %s:%d, samples on udp %s:%d",
                 (long)getpid(), agent->cfg->ntargets, agent->cfg->listen_host,
                 agent->cfg->listen_port, agent->cfg->samples_host, agent->cfg->samples_port);
    } else {
        log_info("started (pid %ld): %zu target(s), http on %s:%d, samples off",
                 (long)getpid(), agent->cfg->ntargets, agent->cfg->listen_host,
                 agent->cfg->listen_port);
    }
    return 0;
}

/*
 * SIGHUP: load the file again and hand it to the agent.  A file that does
 * not load, or that would swap the configured targets for the built-in
 * default, leaves the running config in charge; what only a restart
 * changes (addresses, HTTP limits) is said in the log.
 */
/* What the last reload came to, for /metrics and /readyz: why it failed,
 * or NULL (it took effect). */
static void
reload_said(struct agent *agent, const char *why)
{
    pthread_mutex_lock(&agent->mu);
    if (why != NULL) {
        agent->reload.failed = true;
        agent->reload.failed_ms = clock_now_ms();
        snprintf(agent->reload.why, sizeof(agent->reload.why), "%s", why);
    } else {
        agent->reload.failed = false;
        agent->reload.ok_ms = clock_now_ms();
    }
    pthread_mutex_unlock(&agent->mu);
}

static void
reload(struct agent *agent, struct ingest *ingest, const char *path, bool explicit)
{
    struct config *ncfg;
    char err[CONFIG_ERR_LEN];

    log_info("SIGHUP: reloading %s", explicit ? path : "the configuration");
    if (load(path, explicit, agent->cfg, &ncfg, err, sizeof(err)) == -1) {
        log_warnx("reload failed; the previous configuration stays in effect");
        reload_said(agent, err);
        return;
    }
    if (split_shard(ncfg) == -1) {
        config_free(ncfg);
        log_warnx("reload failed; the previous configuration stays in effect");
        reload_said(agent, "out of memory");
        return;
    }
    if (ncfg->default_target && !agent->cfg->default_target) {
        /* a file cut short mid-deploy must not swap every
         * configured target for the built-in local Redis */
        log_warnx("reload refused: %s has no [target] section (truncated?), which "
                  "would replace the %zu configured target(s) with the built-in "
                  "default; the previous configuration stays in effect (restart "
                  "to watch the built-in default on purpose)",
                  ncfg->path, agent->cfg->ntargets);
        reload_said(agent, "no [target] section (a truncated file?): it would replace the "
                    "configured targets with the built-in default");
        config_free(ncfg);
        return;
    }
    if (agent_reload(agent, ncfg) == -1) {
        log_warn("reload");
        reload_said(agent, "out of memory applying it");
    } else {
        ingest_set_batch_wait(ingest, agent->cfg->samples_batch_wait_ms);
        log_info("reloaded: %zu target(s)", agent->cfg->ntargets);
        reload_said(agent, NULL);
    }
}

/*
 * Detach as daemon(3) does, but report how the start went: the parent
 * waits until the child has started (every listener open, every thread
 * running: detach_done()) or failed, and exits with its status, so a
 * start-up error (a port in use) reaches the terminal and the exit code,
 * not only syslog.  The child's messages go to stderr too until then.
 * Returns the write end of the pipe the child reports on.
 */
static int
detach_start(void)
{
    int p[2], st;
    pid_t pid;
    ssize_t n;
    char b;

    /* fds 0-2 taken first (a start with stdio closed): a pipe end there
     * would be overwritten by detach_done(), or written log text into */
    while ((st = open("/dev/null", O_RDWR)) != -1 && st <= STDERR_FILENO)
        ;
    if (st > STDERR_FILENO)
        close(st);
    if (pipe2(p, O_CLOEXEC) == -1)
        fatal("pipe");
    if ((pid = fork()) == -1)
        fatal("fork");
    if (pid > 0) {
        close(p[1]);
        while ((n = read(p[0], &b, 1)) == -1 && errno == EINTR)
            ;
        if (n == 1)
            _exit(0);
        /* the child ended before it started: its own status */
        while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
            ;
        if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
            _exit(WEXITSTATUS(st));
        fprintf(stderr, "lockwatchd: the daemon ended during start-up; see syslog\n");
        _exit(1);
    }
    close(p[0]);
    if (setsid() == -1)
        fatal("setsid");
    if (chdir("/") == -1)
        fatal("chdir /");
    log_also_stderr(1);
    return p[1];
}

/* Started: stdio to /dev/null, messages to syslog only, and the parent
 * told to exit 0. */
static void
detach_done(int fd)
{
    int null = open("/dev/null", O_RDWR);

    log_also_stderr(0);
    if (null != -1) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        if (null > STDERR_FILENO)
            close(null);
    }
    if (write(fd, "", 1) != 1)
        log_warn("cannot tell the starting process that the daemon runs");
    close(fd);
}

/* Everything after the command line: -n, --once, or the daemon until
 * SIGTERM; the exit status. */
static int
serve(const struct options *opt)
{
    struct config *cfg = NULL;
    struct http_server *http = NULL;
    struct ingest *ingest = NULL;
    struct agent agent;
    sigset_t set;
    siginfo_t info;
    struct timespec tick = { 0, AGENT_GRAPH_TICK_MS * 1000000L };
    int64_t alerted = 0, saved = 0;
    int sig, ready = -1;
    char err[CONFIG_ERR_LEN];

    if (load(opt->path, opt->explicit, NULL, &cfg, err, sizeof(err)) == -1)
        return 2;
    if (opt->check) {
        config_print(cfg, stdout);
        config_free(cfg);
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    if (split_shard(cfg) == -1) {
        config_free(cfg);
        return 1;
    }
    if (opt->once) {
        int rc = run_once(cfg);

        config_free(cfg);
        return rc;
    }

    log_init(opt->foreground, opt->verbose);
    if (!opt->foreground)
        ready = detach_start();

    /* Block the signals we wait for before any thread exists, so every
     * thread inherits the mask and only sigtimedwait() sees them. */
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (start(&agent, cfg, &http, &ingest) == -1)
        return 1;
    if (ready != -1)
        detach_done(ready);

    for (;;) {
        sig = sigtimedwait(&set, &info, &tick);
        /* the wait-for graph every tick; the alert rules about once a
         * second, and at once when the graph found a deadlock or an
         * inversion (or a signal came); off the scan path, and sinks send
         * on their own thread */
        if (agent_graph_tick(&agent) || sig != -1 || clock_mono_ms() - alerted >= 900) {
            agent_alerts_tick(&agent);
            alerted = clock_mono_ms();
        }
        if (clock_mono_ms() - saved >= WAITSTATE_SAVE_MS) {
            agent_state_save(&agent);   /* the first at start: is it writable? */
            saved = clock_mono_ms();
        }
        if (sig == -1)
            continue;           /* the tick, or EINTR */
        if (sig == SIGHUP) {
            reload(&agent, ingest, opt->path, opt->explicit);
            continue;
        }
        log_info("%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        break;
    }
    ingest_stop(ingest);
    agent_state_save(&agent);   /* after the last sample */
    agent_state_free(&agent);
    http_stop(http);
    agent_stop(&agent);
    alerts_global_cleanup();
    return 0;
}
