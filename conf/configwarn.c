/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * configwarn.c - what a valid config may still get dangerously wrong, said
 * at -n, --once and when the agent starts or reloads (config_warnings): a
 * release endpoint reachable from the network, a release token short
 * enough to guess, secret or key files others may read, and a TLS target
 * whose server is not verified (tls_verify = off).  None of these stops
 * the load: each is a deployment's choice (a firewall, a proxy, a group
 * the operator trusts) that must not be made by accident.
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
    for (i = 0; i < cfg->nwebhooks; i++) {
        snprintf(what, sizeof(what), "[webhook %s] secret_file", cfg->webhooks[i].name);
        n += file_warning(cfg->webhooks[i].secret_file, what, emit, arg);
    }
    return n;
}
