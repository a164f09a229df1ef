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
#include <stdarg.h>
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

/* The findings of one config_warnings() call. */
struct warn {
    const struct config *cfg;
    config_warn_fn emit;
    void *arg;
    int n;
};

/* One finding about key of label: the message, after "PATH:LINE: " when
 * the file set that key. */
static void __attribute__((format(printf, 4, 5)))
say(struct warn *w, const char *label, const char *key, const char *fmt, ...)
{
    char msg[WARN_MAX + 400], out[WARN_MAX + 800];
    const struct config_keyline *kl = w->cfg->keylines;
    int line = 0;
    va_list ap;

    for (size_t i = 0; i < w->cfg->nkeylines; i++)
        if (strcmp(kl[i].label, label) == 0 && strcmp(kl[i].key, key) == 0)
            line = kl[i].line;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(out, sizeof(out), "%s:%d: %s", w->cfg->path, line, msg);
    else
        snprintf(out, sizeof(out), "%s", msg);
    w->emit(w->arg, out);
    w->n++;
}

static void
file_warning(struct warn *w, const char *label, const char *key, const char *path)
{
    char why[WARN_MAX];

    if (path != NULL && secretfile_exposure(path, why, sizeof(why)) == 1)
        say(w, label, key, "%s %s: %s", label, key, why);
}

/*
 * A glob with a blank in it: "lock:* job:*" (two patterns written with a
 * space) or "lock:* # main locks" (a comment begun with '#', which inih
 * does not take) is one glob that matches only keys with that blank, and
 * the target silently watches nothing of what was meant.  Keys may have
 * blanks, so it is said, not refused.  key NULL: each glob is a key of
 * its own ([classes]).
 */
static void
glob_warnings(struct warn *w, const char *label, const char *key, char *const *globs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = key != NULL ? key : globs[i];

        if (strpbrk(globs[i], " \t") != NULL)
            say(w, label, k, "%s %.200s: \"%.120s\" has a blank, so it is one pattern that "
                "matches only keys with that blank; patterns are comma separated (lock:*, "
                "job:*), and a comment after a value starts with \" ;\", not \"#\"",
                label, k, globs[i]);
    }
}

int
config_warnings(const struct config *cfg, config_warn_fn emit, void *arg)
{
    struct warn w = { cfg, emit, arg, 0 };
    char label[320];
    size_t i;

    if (cfg->unlock_http && !loopback(cfg->listen_host))
        say(&w, "[unlock]", "http", "[unlock] http = on with [agent] listen = %s:%d: the "
            "release endpoint (POST /api/v1/locks/release) is reachable from the "
            "network, over plain HTTP; listen on 127.0.0.1, or firewall the port and "
            "put a TLS proxy in front", cfg->listen_host[0] ? cfg->listen_host : "*",
            cfg->listen_port);
    if (cfg->unlock_http && cfg->unlock_token != NULL &&
        strlen(cfg->unlock_token) < CONFIG_TOKEN_MIN)
        say(&w, "[unlock]", "token_file", "[unlock] token_file: the token is %zu bytes, "
            "short enough to guess; use at least %d random bytes (e.g. openssl rand -hex 32 "
            "> FILE)", strlen(cfg->unlock_token), CONFIG_TOKEN_MIN);
    if (cfg->unlock_http)
        file_warning(&w, "[unlock]", "token_file", cfg->unlock_token_file);
    file_warning(&w, "[samples]", "key_file", cfg->samples_key_file);
    for (i = 0; i < cfg->ntargets; i++) {
        const struct target_conf *t = &cfg->targets[i];

        snprintf(label, sizeof(label), "[target %s]", t->name);
        glob_warnings(&w, label, "patterns", t->patterns, t->npatterns);
        glob_warnings(&w, label, "exclude_patterns", t->exclude_patterns, t->nexclude_patterns);
        glob_warnings(&w, label, "semaphore_patterns", t->semaphore_patterns,
                      t->nsemaphore_patterns);
        file_warning(&w, label, "password_file", t->password_file);
        file_warning(&w, label, "release_password_file", t->release_password_file);
        file_warning(&w, label, "tls_key_file", t->tls_key_file);
        if (t->tls && !t->tls_verify)
            say(&w, label, "tls_verify", "%s tls_verify = off: the server's certificate and "
                "name are not checked (anyone on the network path can pose as it)", label);
    }
    for (i = 0; i < cfg->nclasses; i++) {
        const struct class_rule *c = &cfg->classes[i];

        glob_warnings(&w, "[classes]", NULL, &c->glob, 1);
        if (strstr(c->name, " #") != NULL || strstr(c->name, "\t#") != NULL)
            say(&w, "[classes]", c->glob, "[classes] %.120s = \"%.120s\": a comment after a "
                "value starts with \" ;\", not \"#\"; this is the class's name as written",
                c->glob, c->name);
    }
    if (cfg->audit_stream != NULL && strpbrk(cfg->audit_stream, " \t") != NULL)
        say(&w, "[unlock]", "audit_stream", "[unlock] audit_stream = \"%.120s\" has a blank "
            "(a comment after a value starts with \" ;\", not \"#\"): the audit goes to a "
            "key of that name", cfg->audit_stream);
    for (i = 0; i < cfg->nwebhooks; i++) {
        snprintf(label, sizeof(label), "[webhook %s]", cfg->webhooks[i].name);
        file_warning(&w, label, "secret_file", cfg->webhooks[i].secret_file);
    }
    return w.n;
}
