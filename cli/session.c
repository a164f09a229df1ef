/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * session.c - what every lockctl command starts from: the config the agent
 * reads, one target out of it, a connection, and the operator's name.
 *
 * The config is found as the agent finds it (-c, else
 * /etc/lockwatch/lockwatch.ini, else the built-in defaults), so lockctl
 * and lockwatchd always agree on what a target's patterns and password
 * are.  --url replaces only the target's address (and user, database):
 * its patterns, password_file and timeouts stay, so the guards are the
 * same whichever node on-call points lockctl at.  A rediss:// target uses
 * its tls_* settings; --tls-ca-file and the other --tls-* options replace
 * them one by one, parsed as the file's keys are.  Sentinel and cluster
 * targets are resolved as the agent resolves them: the primary the
 * sentinels name, the primary that serves the key's slot.  Reads go as
 * the target's user; the writes (release, expire, and audit's read of the
 * stream they write) as its release_user when it has one
 * (config_target_writer()), on a connection of their own.
 */
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/lockctl.h"
#include "collectors/redis/target.h"
#include "collectors/release/aclhint.h"
#include "common/log.h"
#include "conf/options.h"

void
lockctl_warnx(const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (rc < 0)
        return;
    /* wrapped at spaces, as every sentence of lockctl is (a refusal runs
     * to 300 columns), and whole (a refusal names the key): at $COLUMNS,
     * else stderr's terminal, else stdout's width */
    table_line(stderr, table_stderr_width(), "lockctl: %s", msg);
    /* the error a --json run turns into {"error": ...} on stdout */
    if (strncmp(msg, "warning:", 8) != 0 && strncmp(msg, "note:", 5) != 0)
        out_error_remember(msg);
    free(msg);
}

void
lockctl_note(const struct lockctl *lc, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    int rc;

    if (lc->quiet)
        return;
    va_start(ap, fmt);
    rc = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (rc < 0)
        return;
    /* wrapped as lockctl_warnx()'s sentences are */
    table_line(stderr, table_stderr_width(), "lockctl: note: %s", msg);
    free(msg);
}

size_t
lockctl_width(const struct lockctl *lc)
{
    return lc->wide ? TABLE_WIDE : table_terminal_width();
}

void
session_deadline(struct lockctl *lc, int64_t ms)
{
    lc->scope.deadline_ms = clock_deadline(ms);
    snprintf(lc->scope.what, sizeof(lc->scope.what), "lockctl's --timeout (%lld ms)",
             (long long)ms);
}

int
session_common_option(struct lockctl *lc, int opt, const char *arg)
{
    switch (opt) {
    case 'c':
        lc->config_path = arg;
        return 1;
    case 't':
        lc->target_name = arg;
        return 1;
    case SESSION_OPT_URL:
        lc->url = arg;
        return 1;
    case SESSION_OPT_JSON:
        lc->json = true;
        return 1;
    case SESSION_OPT_QUIET:
        lc->quiet = true;
        return 1;
    case SESSION_OPT_OUTPUT:
        if (strcmp(arg, "wide") == 0) {
            lc->wide = true;
        } else if (strcmp(arg, "json") == 0) {
            lc->json = true;
        } else {
            /* reported now, refused by session_load(): every command's
             * option loop then treats it as its own */
            lockctl_warnx("-o \"%s\": the output is wide (full text, no width limit) or "
                          "json (as --json)", arg);
            lc->bad_option = true;
        }
        return 1;
    case SESSION_OPT_AGENT:
        lc->agent = arg;
        return 1;
    case SESSION_OPT_TIMEOUT: {
        int64_t ms;

        if (config_parse_duration(arg, &ms) == -1 || ms < 100) {
            lockctl_warnx("--timeout must be a duration of 100ms or more (e.g. 15s), not "
                          "\"%.60s\"", arg);
            lc->bad_option = true;      /* refused by session_load() */
            return 1;
        }
        session_deadline(lc, ms);
        return 1;
    }
    default:
        if (opt >= SESSION_OPT_TLS && opt < SESSION_OPT_TLS + SESSION_TLS_OPTIONS) {
            lc->tls[opt - SESSION_OPT_TLS] = arg;
            return 1;
        }
        return 0;
    }
}

/* The option row of [target] KEY, so --url is parsed (and checked: no
 * password in it) exactly as the config file's url is, and --tls-* as the
 * tls_* keys. */
static const struct config_option *
target_option(const char *key)
{
    for (size_t i = 0; i < config_noptions; i++)
        if (config_options[i].section == SECTION_TARGET &&
            strcmp(config_options[i].key, key) == 0)
            return &config_options[i];
    return NULL;
}

/* The --tls-* options in the order of lc->tls, as [target] keys. */
static const char *const tls_keys[SESSION_TLS_OPTIONS] = {
    "tls_ca_file", "tls_ca_dir", "tls_cert_file", "tls_key_file", "tls_server_name",
    "tls_verify"
};

/* Apply --tls-*: 0, or -1 with the message printed. */
static int
apply_tls(struct lockctl *lc)
{
    const struct config_option *o;
    char why[512], opt[32];
    bool any = false;

    for (size_t i = 0; i < SESSION_TLS_OPTIONS; i++) {
        if (lc->tls[i] == NULL)
            continue;
        any = true;
        snprintf(opt, sizeof(opt), "--%s", tls_keys[i]);
        for (char *p = opt; *p != '\0'; p++)
            if (*p == '_')
                *p = '-';
        o = target_option(tls_keys[i]);
        if (o == NULL || option_set(o, lc->t, lc->tls[i], why, sizeof(why)) == -1) {
            lockctl_warnx("%s: %s", opt, o ? why : "not supported");
            return -1;
        }
    }
    if (any && !lc->t->tls) {
        lockctl_warnx("--tls-*: only used with TLS (give --url rediss://..., or a target "
                      "whose url is rediss://)");
        return -1;
    }
    if ((lc->t->tls_cert_file == NULL) != (lc->t->tls_key_file == NULL)) {
        lockctl_warnx("a client certificate needs both --tls-cert-file and --tls-key-file "
                      "(or tls_cert_file and tls_key_file)");
        return -1;
    }
    return 0;
}

/* -t naming a [redlock] group (LockRedlockSplit's target label): each
 * node of it is a target of its own; say which. */
static void
redlock_hint(const struct config *cfg, const char *name)
{
    char members[512];
    size_t n = 0;

    for (size_t g = 0; g < cfg->nredlocks; g++) {
        const struct redlock_conf *r = &cfg->redlocks[g];

        if (strcmp(r->name, name) != 0)
            continue;
        members[0] = '\0';
        for (size_t i = 0; i < r->ntargets && n < sizeof(members); i++)
            n += (size_t)snprintf(members + n, sizeof(members) - n, "%s%s", i ? ", " : "",
                                  r->targets[i]);
        out_error_hint("\"%s\" is a [redlock] group of targets %s: a lock of it is one key on "
                       "each; give one node with -t (lockctl -t %s show KEY), as the alert's "
                       "text names them", name, members, r->ntargets > 0 ? r->targets[0] : "?");
        return;
    }
}

int
session_load(struct lockctl *lc)
{
    char err[CONFIG_ERR_LEN], why[512];
    const char *path = lc->config_path ? lc->config_path : CONFIG_DEFAULT_PATH;
    const struct config_option *uo;

    if (lc->bad_option)
        return LOCKCTL_USAGE;
    if (lc->config_path == NULL && access(path, F_OK) == -1 && errno == ENOENT)
        path = NULL;            /* no system config: the agent's built-in defaults */
    if (config_load(path, &lc->cfg, err, sizeof(err)) == -1) {
        /* the error quotes the file's bytes: escaped as the agent's log is */
        char safe[LOG_DEFANG_MAX(sizeof(err))];

        log_defang(safe, sizeof(safe), err);
        lockctl_warnx("%s", safe);
        out_error_hint("fix the config where the error says (lockwatchd -n -c FILE checks it), "
                       "or give another with -c FILE");
        return LOCKCTL_USAGE;
    }
    if (lc->target_name != NULL) {
        lc->t = (struct target_conf *)config_target(lc->cfg, lc->target_name);
        if (lc->t == NULL) {
            char names[512];
            size_t n = 0;

            names[0] = '\0';
            for (size_t i = 0; i < lc->cfg->ntargets && n < sizeof(names); i++)
                n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
                                      lc->cfg->targets[i].name);
            lockctl_warnx("no target \"%s\" in %s (targets: %s)", lc->target_name,
                          lc->cfg->path, names);
            redlock_hint(lc->cfg, lc->target_name);
            return LOCKCTL_USAGE;
        }
    } else {
        lc->t = &lc->cfg->targets[0];   /* config_load guarantees one */
    }
    /* a silent server still fails after command_timeout, as hiredis' own
     * read timeout would say; the deadline bounds the whole command */
    lc->scope.idle_ms = lc->t->command_timeout_ms;
    /* what the agent watches, when its answer does not say (agent.c) */
    config_target_address(lc->t, lc->conf_address, sizeof(lc->conf_address));
    if (lc->url != NULL) {
        uo = target_option("url");
        if (uo == NULL || option_set(uo, lc->t, lc->url, why, sizeof(why)) == -1) {
            lockctl_warnx("--url: %s", uo ? why : "not supported");
            return LOCKCTL_USAGE;
        }
        /* An explicit address is a node to talk to directly, not a set of
         * sentinels to ask. */
        if (lc->t->mode == TARGET_SENTINEL)
            lc->t->mode = TARGET_STANDALONE;
    }
    if (apply_tls(lc) == -1)
        return LOCKCTL_USAGE;
    /* Said once, on stderr: a newcomer otherwise cannot tell why lockctl
     * looks at 127.0.0.1:6379 (stdout stays what scripts parse; -q) */
    if (path == NULL && !(lc->agent_only && lc->agent != NULL))
        lockctl_note(lc, "no config file (no -c, and %s does not exist): using the built-in "
                     "defaults, target %s at %s:%d; give -c FILE for yours", CONFIG_DEFAULT_PATH,
                     lc->t->name, lc->t->host, lc->t->port);
    if (lc->t->tls && !lc->t->tls_verify)
        lockctl_warnx("warning: target %s: tls_verify = off: the server's certificate is "
                      "not checked", lc->t->name);
    return LOCKCTL_DONE;
}

void
session_patterns(const struct lockctl *lc, char *buf, size_t len)
{
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < lc->t->npatterns && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", lc->t->patterns[i]);
    if (n >= len && len > 4)    /* cut: say so */
        memcpy(buf + len - 4, "...", 4);
}

void
session_address(const struct lockctl *lc, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%d", lc->t->host, lc->t->port);
}

void
session_redis_cli(const struct lockctl *lc, char *buf, size_t len)
{
    snprintf(buf, len, "redis-cli -h %s -p %d%s%s%s%s", lc->t->host, lc->t->port,
             lc->t->user != NULL ? " --user " : "", lc->t->user != NULL ? lc->t->user : "",
             lc->t->password != NULL ? " --askpass" : "", lc->t->tls ? " --tls" : "");
}

int
session_connect_key(struct lockctl *lc, const char *key, size_t keylen)
{
    char err[512];
    struct target_conf node;

    /* standalone: the target; sentinel: the primary now; cluster: the
     * primary of the key's slot (no key: slot 0's).  From here on lc->t
     * names that node (a shallow copy: patterns, password and name are
     * still the config's). */
    lc->c = target_open(lc->t, key, keylen, NULL, &node, err, sizeof(err));
    if (lc->c == NULL)
        return session_redis_error(lc, err);
    if (lc->t != &lc->node)
        lc->conf_t = lc->t;
    lc->node = node;
    lc->t = &lc->node;
    return LOCKCTL_DONE;
}

int
session_node_moved(struct lockctl *lc, const char *key, size_t keylen, char *was, char *now,
                   size_t len)
{
    char err[512];
    struct target_conf node;
    redisContext *c;

    if (lc->conf_t == NULL || lc->conf_t->mode == TARGET_STANDALONE)
        return 0;               /* one address: it cannot move */
    if (lc->asking)
        return 0;               /* a slot migrating: the key is read, and released, on the
                                 * importing node with ASKING, while the owner is the other */
    if ((c = target_open(lc->conf_t, key, keylen, NULL, &node, err, sizeof(err))) == NULL) {
        session_redis_error(lc, err);
        return -1;
    }
    redisFree(c);
    if (node.port == lc->node.port && strcmp(node.host, lc->node.host) == 0)
        return 0;
    snprintf(was, len, "%s:%d", lc->node.host, lc->node.port);
    snprintf(now, len, "%s:%d", node.host, node.port);
    return 1;
}

int
session_connect(struct lockctl *lc)
{
    return session_connect_key(lc, NULL, 0);
}

int
session_redis_error(const struct lockctl *lc, const char *detail)
{
    lockctl_warnx("target %s: %s", lc->t->name, detail);
    /* not the default "check that Redis answers": the error says what */
    if (strstr(detail, "no sentinel named the primary") != NULL)
        out_error_hint("check that the target's sentinels answer (redis-cli -p PORT SENTINEL "
                       "get-master-addr-by-name %s) and that sentinels and master_name are "
                       "right in the config", lc->t->master_name != NULL ? lc->t->master_name
                       : "NAME");
    else if (strstr(detail, ": no node serves slot ") != NULL)
        out_error_hint("no node of the cluster serves that key's slot now (CLUSTER SHARDS): it "
                       "cannot be read until one does; the agent keeps its last known lock");
    else if (strstr(detail, "not as the cluster the agent reads") != NULL)
        out_error_hint("the target's url names a node of another cluster than the agent's "
                       "(reset, or moved): point it, or --url, at a node of the agent's "
                       "cluster; or give --agent off to read the URL's cluster anyway");
    else if (strstr(detail, "READONLY") != NULL && lc->url != NULL)
        out_error_hint("--url names a replica (a failover since?): point it at the primary, "
                       "or leave --url out to use the target's config; nothing was changed");
    else if (strstr(detail, "READONLY") != NULL)
        out_error_hint("that node is a replica now, as after a failover: run the same command "
                       "again (it asks for the primary anew); nothing was changed");
    else if (strncmp(detail, "TLS ", 4) == 0 || strstr(detail, ": TLS ") != NULL)
        out_error_hint("the error says what to check: the target's tls_ca_file or tls_ca_dir, "
                       "tls_cert_file and tls_key_file, tls_server_name (README \"TLS\")");
    else if (aclhint_refused(detail, strlen(detail)))
        out_error_hint("give the Redis user the permission the error names (README \"Redis "
                       "permissions\", %s)", ACLHINT_DOC);
    return LOCKCTL_REDIS;
}

void
session_as_writer(struct lockctl *lc)
{
    struct target_conf w;

    config_target_writer(lc->t, &w);
    lc->node = w;
    lc->t = &lc->node;
}

int
session_writer(struct lockctl *lc, struct target_conf *w, redisContext **wc)
{
    char err[512];

    config_target_writer(lc->t, w);
    if (lc->t->release_user == NULL) {
        *wc = lc->c;
        return LOCKCTL_DONE;
    }
    if ((*wc = redisconn_open(w, err, sizeof(err))) == NULL) {
        lockctl_warnx("target %s: as release_user %s: %s", lc->t->name, lc->t->release_user,
                      err);
        /* not the reading user's password_file (an on-call trial) */
        out_error_hint("check release_user and release_password_file of [target %s] and that "
                       "user's ACL (docs/lockctl.md, \"Least-privilege ACL\")", lc->t->name);
        return LOCKCTL_REDIS;
    }
    return LOCKCTL_DONE;
}

int
session_resume(struct lockctl *lc, int64_t left_ms)
{
    struct pollfd pfd;
    char err[512];

    lc->scope.deadline_ms = clock_deadline(left_ms);
    if (lc->c == NULL)
        return LOCKCTL_DONE;
    pfd.fd = lc->c->fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    if (poll(&pfd, 1, 0) == 0)
        return LOCKCTL_DONE;
    /* nothing is owed on it: what there is to read is its close */
    redisFree(lc->c);
    if ((lc->c = redisconn_open(lc->t, err, sizeof(err))) == NULL)
        return session_redis_error(lc, err);
    return LOCKCTL_DONE;
}

void
session_close(struct lockctl *lc)
{
    if (lc->c != NULL)
        redisFree(lc->c);
    lc->c = NULL;
    free(lc->known);
    lc->known = NULL;
    lc->scope.known = NULL;
    lc->scope.nknown = 0;
    lc->scope.known_check = false;
    config_free(lc->cfg);
    lc->cfg = NULL;
    lc->t = NULL;
}

void
session_operator(char *buf, size_t len)
{
    const char *sudo = getenv("SUDO_USER");
    struct passwd pw, *res = NULL;
    char pwbuf[4096];

    /* The person behind sudo, not "root": that is who the audit needs. */
    if (sudo != NULL && sudo[0] != '\0') {
        snprintf(buf, len, "%s", sudo);
        return;
    }
    if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res != NULL) {
        snprintf(buf, len, "%s", res->pw_name);
        return;
    }
    snprintf(buf, len, "uid:%lu", (unsigned long)getuid());
}
