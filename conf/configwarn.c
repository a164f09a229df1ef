/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * configwarn.c - what a valid config may still get dangerously wrong, said
 * at -n, --once and when the agent starts or reloads (config_warnings): a
 * release endpoint reachable from the network, a release token short
 * enough to guess, secret or key files others may read, and a TLS target
 * whose server is not verified (tls_verify = off).  None of these stops
 * the load: each is a deployment's choice (a firewall, a proxy, a group
 * the operator trusts) that must not be made by accident.  Also a pattern
 * or stream name with a blank in it, the mark of a list written with spaces
 * or of a '#' comment.
 *
 * The file checks ask secretfile.c, the one place that reads those files.
 */
#include "conf/config.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "conf/secretfile.h"

#define WARN_MAX 512

/* listen = 127.0.0.0/8, ::1 or localhost: only this machine reaches it. */
static bool
loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (strcmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;       /* a name or a wildcard: assume the network */
}

static int
file_warning(const char *path, const char *what, config_warn_fn emit, void *arg)
{
    char why[WARN_MAX], msg[WARN_MAX + 400];

    if (path == NULL || secretfile_exposure(path, why, sizeof(why)) != 1)
        return 0;
    snprintf(msg, sizeof(msg), "%s: %s", what, why);
    emit(arg, msg);
    return 1;
}

/*
 * A glob with a blank in it: "lock:* job:*" (two patterns written with a
 * space) or "lock:* # main locks" (a comment begun with '#', which inih
 * does not take) is one glob that matches only keys with that blank, and
 * the target silently watches nothing of what was meant.  Keys may have
 * blanks, so it is said, not refused.
 */
static int
glob_warnings(const char *what, char *const *globs, size_t n, config_warn_fn emit, void *arg)
{
    char msg[WARN_MAX + 400];
    int said = 0;

    for (size_t i = 0; i < n; i++) {
        if (strpbrk(globs[i], " \t") == NULL)
            continue;
        snprintf(msg, sizeof(msg), "%s: \"%.120s\" has a blank, so it is one pattern that "
                 "matches only keys with that blank; patterns are comma separated (lock:*, "
                 "job:*), and a comment after a value starts with \" ;\", not \"#\"",
                 what, globs[i]);
        emit(arg, msg);
        said++;
    }
    return said;
}

int
config_warnings(const struct config *cfg, config_warn_fn emit, void *arg)
{
    char msg[WARN_MAX], what[320];
    int n = 0;
    size_t i;

    if (cfg->unlock_http && !loopback(cfg->listen_host)) {
        snprintf(msg, sizeof(msg), "[unlock] http = on with [agent] listen = %s:%d: the "
                 "release endpoint (POST /api/v1/locks/release) is reachable from the "
                 "network, over plain HTTP; listen on 127.0.0.1, or firewall the port and "
                 "put a TLS proxy in front", cfg->listen_host[0] ? cfg->listen_host : "*",
                 cfg->listen_port);
        emit(arg, msg);
        n++;
    }
    if (cfg->unlock_http && cfg->unlock_token != NULL &&
        strlen(cfg->unlock_token) < CONFIG_TOKEN_MIN) {
        snprintf(msg, sizeof(msg), "[unlock] token_file: the token is %zu bytes, short enough "
                 "to guess; use at least %d random bytes (e.g. openssl rand -hex 32 > FILE)",
                 strlen(cfg->unlock_token), CONFIG_TOKEN_MIN);
        emit(arg, msg);
        n++;
    }
    if (cfg->unlock_http)
        n += file_warning(cfg->unlock_token_file, "[unlock] token_file", emit, arg);
    n += file_warning(cfg->samples_key_file, "[samples] key_file", emit, arg);
    for (i = 0; i < cfg->ntargets; i++) {
        const struct target_conf *t = &cfg->targets[i];

        snprintf(what, sizeof(what), "[target %s] patterns", t->name);
        n += glob_warnings(what, t->patterns, t->npatterns, emit, arg);
        snprintf(what, sizeof(what), "[target %s] exclude_patterns", t->name);
        n += glob_warnings(what, t->exclude_patterns, t->nexclude_patterns, emit, arg);
        snprintf(what, sizeof(what), "[target %s] semaphore_patterns", t->name);
        n += glob_warnings(what, t->semaphore_patterns, t->nsemaphore_patterns, emit, arg);
        snprintf(what, sizeof(what), "[target %s] password_file", t->name);
        n += file_warning(t->password_file, what, emit, arg);
        snprintf(what, sizeof(what), "[target %s] tls_key_file", t->name);
        n += file_warning(t->tls_key_file, what, emit, arg);
        if (t->tls && !t->tls_verify) {
            snprintf(msg, sizeof(msg), "[target %s] tls_verify = off: the server's "
                     "certificate and name are not checked (anyone on the network path can "
                     "pose as it)", t->name);
            emit(arg, msg);
            n++;
        }
    }
    for (i = 0; i < cfg->nclasses; i++) {
        snprintf(what, sizeof(what), "[classes] %.200s", cfg->classes[i].glob);
        n += glob_warnings(what, &cfg->classes[i].glob, 1, emit, arg);
        if (strstr(cfg->classes[i].name, " #") != NULL || strstr(cfg->classes[i].name, "\t#")) {
            snprintf(msg, sizeof(msg), "[classes] %.120s = \"%.120s\": a comment after a value "
                     "starts with \" ;\", not \"#\"; this is the class's name as written",
                     cfg->classes[i].glob, cfg->classes[i].name);
            emit(arg, msg);
            n++;
        }
    }
    if (cfg->audit_stream != NULL && strpbrk(cfg->audit_stream, " \t") != NULL) {
        snprintf(msg, sizeof(msg), "[unlock] audit_stream = \"%.120s\" has a blank (a comment "
                 "after a value starts with \" ;\", not \"#\"): the audit goes to a key of that "
                 "name", cfg->audit_stream);
        emit(arg, msg);
        n++;
    }
    for (i = 0; i < cfg->nwebhooks; i++) {
        snprintf(what, sizeof(what), "[webhook %s] secret_file", cfg->webhooks[i].name);
        n += file_warning(cfg->webhooks[i].secret_file, what, emit, arg);
    }
    return n;
}
