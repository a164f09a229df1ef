/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client.c - the client handle: options and their validation, connecting,
 * freeing, errors, counters.
 *
 * A client owns: a copy of its settings, its identity (a random UUID v4 like
 * a Redisson instance's id, the sanitised host name, the pid), the shared
 * command connection, a small pool of idle pub/sub connections for
 * waiters, the reporting socket and the background thread (watchdog.c).
 *
 * Lifetime: the caller holds one reference and every live lock object one
 * more, so lw_client_free() may come before the last lw_unlock(): it stops
 * the thread and closes the connections at once, and the memory goes when
 * the last lock object does.  Nothing here is global; two clients share
 * nothing.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client_impl.h"

#define STR_(x) #x
#define STR(x) STR_(x)

lw_status
lwc_seterr(lw_error *err, lw_status status, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return status;
    err->code = status;
    va_start(ap, fmt);
    (void)vsnprintf(err->str, sizeof(err->str), fmt, ap);
    va_end(ap);
    return status;
}

void
lwc_clearerr(lw_error *err)
{
    if (err != NULL) {
        err->code = LW_OK;
        err->str[0] = '\0';
    }
}

void
lwc_addwarn(lw_error *w, const char *fmt, ...)
{
    size_t n = strnlen(w->str, sizeof(w->str) - 1);
    va_list ap;

    if (n > 0 && n + 2 < sizeof(w->str)) {
        memcpy(w->str + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    (void)vsnprintf(w->str + n, sizeof(w->str) - n, fmt, ap);
    va_end(ap);
}

/* Bytes of a key an error message names before cutting it with "...". */
#define ERR_KEY_MAX 96

void
lwc_err_prefix(lw_error *err, const char *call, const char *key, size_t keylen)
{
    char rest[LW_ERRSTR_SIZE];
    bool cut = keylen > ERR_KEY_MAX;
    size_t restlen;
    int n;

    if (err == NULL)
        return;
    restlen = strnlen(err->str, sizeof(err->str) - 1);
    memcpy(rest, err->str, restlen);
    n = snprintf(err->str, sizeof(err->str), "%s %.*s%s: ", call,
                 (int)(cut ? ERR_KEY_MAX : keylen), key, cut ? "..." : "");
    if (n < 0 || (size_t)n >= sizeof(err->str) - 1)
        return;
    if (restlen > sizeof(err->str) - 1 - (size_t)n)
        restlen = sizeof(err->str) - 1 - (size_t)n;
    memcpy(err->str + n, rest, restlen);
    err->str[(size_t)n + restlen] = '\0';
}

/*
 * hiredis writes with write(2), so a write on a connection the server
 * closed (a restart) raises SIGPIPE, whose default action ends the program
 * (the torture's workers died of it).  lw_connect() therefore sets SIGPIPE
 * to SIG_IGN when it is at that default, as network libraries commonly do,
 * and the write fails with EPIPE instead, like any broken connection.  A
 * program's own handler is left alone.  (Blocking SIGPIPE on the calling
 * thread around every call instead costs system calls on every lock and
 * unlock: 6 % of bench/client's acquire+release rate.)
 */
void
lwc_sigpipe_ignore_default(void)
{
    struct sigaction sa;

    if (sigaction(SIGPIPE, NULL, &sa) != 0 || (sa.sa_flags & SA_SIGINFO) ||
        sa.sa_handler != SIG_DFL)
        return;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGPIPE, &sa, NULL);
}

LW_API void
lw_options_init(lw_options *o)
{
    if (o == NULL)
        return;
    memset(o, 0, sizeof(*o));
    o->host = "127.0.0.1";
    o->port = 6379;
    o->connect_timeout_ms = 2000;
    o->command_timeout_ms = 5000;
    o->report = 1;
    o->default_lease_ms = 30000;
    o->tls_verify = 1;
}

/* Each destination of the agent option that lw_connect() takes (the
 * first LWC_DEST_MAX, as lwc_report_open() counts them) parses; it is
 * resolved later, by lwc_report_open(). */
static lw_status
agent_check(const char *list, lw_error *err)
{
    char host[256];
    const char *s;
    size_t len, n = 0;
    int port;

    while (n < LWC_DEST_MAX && lwc_list_next(&list, &s, &len)) {
        if (len == 0)
            continue;
        if (lwc_dest_parse(s, len, "the agent option", host, sizeof(host), &port,
                           err) != LW_OK)
            return LW_ERR;
        n++;
    }
    return LW_OK;
}

lw_status
lwc_options_check(const lw_options *o, lw_error *err)
{
    if (o->host == NULL || o->host[0] == '\0')
        return lwc_seterr(err, LW_ERR, "options: host is empty (set it to "
                          "the Redis server's name or address)");
    if (strlen(o->host) > 255)
        return lwc_seterr(err, LW_ERR, "options: host is longer than 255 bytes");
    if (o->port < 1 || o->port > 65535)
        return lwc_seterr(err, LW_ERR, "options: port %d is not in 1..65535",
                          o->port);
    if (o->db < 0)
        return lwc_seterr(err, LW_ERR, "options: db %d is negative", o->db);
    if (o->connect_timeout_ms < 1 || o->connect_timeout_ms > LWC_TIMEOUT_MAX_MS)
        return lwc_seterr(err, LW_ERR, "options: connect_timeout_ms %d is not in "
                          "1..%d", o->connect_timeout_ms, LWC_TIMEOUT_MAX_MS);
    if (o->command_timeout_ms < 1 || o->command_timeout_ms > LWC_TIMEOUT_MAX_MS)
        return lwc_seterr(err, LW_ERR, "options: command_timeout_ms %d is not in "
                          "1..%d", o->command_timeout_ms, LWC_TIMEOUT_MAX_MS);
    if (o->password != NULL && o->password_file != NULL)
        return lwc_seterr(err, LW_ERR, "options: set password or password_file, "
                          "not both");
    if (o->password != NULL && strlen(o->password) > LWC_PASSWORD_MAX)
        return lwc_seterr(err, LW_ERR, "options: password is longer than "
                          STR(LWC_PASSWORD_MAX) " bytes");
    if (o->username != NULL && o->password == NULL && o->password_file == NULL)
        return lwc_seterr(err, LW_ERR, "options: username needs a password or "
                          "password_file");
    if (o->default_lease_ms < LWC_LEASE_MIN_MS || o->default_lease_ms > LWC_LEASE_MAX_MS)
        return lwc_seterr(err, LW_ERR, "options: default_lease_ms %lld is not in "
                          STR(LWC_LEASE_MIN_MS) "..%lld", o->default_lease_ms,
                          (long long)LWC_LEASE_MAX_MS);
    if (o->report && o->agent != NULL)
        return agent_check(o->agent, err);
    return LW_OK;
}

/* The first line of path, without its line end. */
static char *
read_password_file(const char *path, lw_error *err)
{
    char buf[LWC_PASSWORD_MAX + 2];
    FILE *f = NULL;
    char *out = NULL;
    size_t n;

    f = fopen(path, "re");
    if (f == NULL) {
        lwc_seterr(err, LW_ERR, "options: cannot read password_file %.128s: %s",
                   path, strerror(errno));
        goto out;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    if (ferror(f)) {
        lwc_seterr(err, LW_ERR, "options: cannot read password_file %.128s",
                   path);
        goto out;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    n = strlen(buf);
    if (n == 0 || n > LWC_PASSWORD_MAX) {
        lwc_seterr(err, LW_ERR, "options: password_file %.128s: the first line "
                   "must hold the password (1.." STR(LWC_PASSWORD_MAX) " bytes)",
                   path);
        goto out;
    }
    out = strdup(buf);
    if (out == NULL)
        lwc_seterr(err, LW_ERR, "options: out of memory");
out:
    explicit_bzero(buf, sizeof(buf));
    if (f != NULL)
        fclose(f);
    return out;
}

static void
client_destroy(lw_client *c)
{
    if (c->cmd != NULL)
        redisFree(c->cmd);
    lwc_orphans_free(c);
    lwc_pool_close(c);
    lwc_report_close(c);
    if (c->sync_ready) {
        pthread_mutex_destroy(&c->cmd_mu);
        pthread_mutex_destroy(&c->pool_mu);
        lwc_bg_destroy(c);
    }
    lwc_tls_free(c);
    free(c->host);
    free(c->username);
    if (c->password != NULL) {
        explicit_bzero(c->password, strlen(c->password));
        free(c->password);
    }
    free(c);
}

void
lwc_client_unref(lw_client *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1)
        client_destroy(c);
}

static struct timeval
ms_to_tv(int ms)
{
    struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

    return tv;
}

static char *
dup_or_null(const char *s, bool *oom)
{
    char *d;

    if (s == NULL)
        return NULL;
    d = strdup(s);
    if (d == NULL)
        *oom = true;
    return d;
}

LW_API lw_client *
lw_connect(const lw_options *opts, lw_error *err)
{
    lw_options defaults;
    lw_error warn;
    lw_client *c = NULL;
    bool oom = false;

    lwc_clearerr(err);
    lwc_clearerr(&warn);
    if (opts == NULL) {
        lw_options_init(&defaults);
        opts = &defaults;
    }
    if (lwc_options_check(opts, err) != LW_OK)
        return NULL;
    lwc_sigpipe_ignore_default();

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        lwc_seterr(err, LW_ERR, "lw_connect: out of memory");
        return NULL;
    }
    c->bg.rep.ndest = 0;
    atomic_init(&c->refs, 1);
    atomic_init(&c->closed, false);
    if (pthread_mutex_init(&c->cmd_mu, NULL) != 0) {
        free(c);
        lwc_seterr(err, LW_ERR, "lw_connect: cannot create a mutex");
        return NULL;
    }
    if (pthread_mutex_init(&c->pool_mu, NULL) != 0) {
        pthread_mutex_destroy(&c->cmd_mu);
        free(c);
        lwc_seterr(err, LW_ERR, "lw_connect: cannot create a mutex");
        return NULL;
    }
    if (lwc_bg_init(c) != 0) {
        pthread_mutex_destroy(&c->pool_mu);
        pthread_mutex_destroy(&c->cmd_mu);
        free(c);
        lwc_seterr(err, LW_ERR, "lw_connect: cannot create a mutex");
        return NULL;
    }
    c->sync_ready = true;

    c->host = dup_or_null(opts->host, &oom);
    c->username = dup_or_null(opts->username, &oom);
    c->password = dup_or_null(opts->password, &oom);
    if (oom) {
        lwc_seterr(err, LW_ERR, "lw_connect: out of memory");
        goto fail;
    }
    if (opts->password_file != NULL) {
        c->password = read_password_file(opts->password_file, err);
        if (c->password == NULL)
            goto fail;
    }
    c->port = opts->port;
    c->db = opts->db;
    c->connect_tv = ms_to_tv(opts->connect_timeout_ms);
    c->command_tv = ms_to_tv(opts->command_timeout_ms);
    c->default_lease_ms = opts->default_lease_ms;
    c->on_lost = opts->on_lost;
    c->on_lost_data = opts->on_lost_data;

    if (lwc_uuid4(c->id) != 0) {
        lwc_seterr(err, LW_ERR, "lw_connect: cannot read random bytes "
                   "(getrandom and /dev/urandom both failed)");
        goto fail;
    }
    lwc_hostname(c->hostname);
    c->pid = (long)getpid();
    (void)prefix_name(c->registry_key, sizeof(c->registry_key),
                            "lockwatch:client", c->id, LWC_UUID_LEN);

    if (lwc_report_open(c, opts->agent, opts->report != 0, err, &warn) != LW_OK)
        goto fail;
    if (lwc_tls_setup(c, opts, err) != LW_OK)
        goto fail;

    c->cmd = lwc_redis_connect(c, "lw_connect", INT64_MAX, err);
    if (c->cmd == NULL)
        goto fail;
    if (lwc_scripts_load(c, c->cmd, err) != 0)
        goto fail;
    if (lwc_bg_start(c, err) != LW_OK)
        goto fail;
    if (warn.str[0] != '\0')
        lwc_seterr(err, LW_OK, "%s", warn.str);
    return c;

fail:
    client_destroy(c);
    return NULL;
}

LW_API void
lw_client_free(lw_client *c)
{
    if (c == NULL)
        return;
    atomic_store(&c->closed, true);
    lwc_bg_stop(c);
    pthread_mutex_lock(&c->cmd_mu);
    if (c->cmd != NULL)
        redisFree(c->cmd);
    c->cmd = NULL;
    pthread_mutex_unlock(&c->cmd_mu);
    lwc_pool_close(c);
    lwc_report_close(c);
    lwc_client_unref(c);
}

LW_API const char *
lw_client_id(const lw_client *c)
{
    return c != NULL ? c->id : "";
}

LW_API void
lw_client_stats(const lw_client *c, lw_stats *out)
{
    lw_client *m = (lw_client *)c;   /* atomic loads want non-const */

    if (out == NULL)
        return;
    memset(out, 0, sizeof(*out));
    if (c == NULL)
        return;
    out->samples_sent = atomic_load(&m->stats.samples_sent);
    out->samples_dropped = atomic_load(&m->stats.samples_dropped);
    out->datagrams_sent = atomic_load(&m->stats.datagrams_sent);
    out->wakeups = atomic_load(&m->stats.wakeups);
    out->rechecks = atomic_load(&m->stats.rechecks);
    out->renewals = atomic_load(&m->stats.renewals);
    out->locks_lost = atomic_load(&m->stats.locks_lost);
    out->reconnects = atomic_load(&m->stats.reconnects);
    out->lost_replies = atomic_load(&m->stats.lost_replies);
    out->orphans_undone = atomic_load(&m->stats.orphans_undone);
    out->orphans_dropped = atomic_load(&m->stats.orphans_dropped);
}

LW_API const char *
lw_strerror(lw_status status)
{
    switch (status) {
    case LW_OK:      return "ok";
    case LW_TIMEOUT: return "timed out waiting for the lock";
    case LW_BUSY:    return "lock held by someone else";
    case LW_LOST:    return "lock lost (expired or taken over)";
    case LW_ERR:     return "error";
    }
    return "unknown status";
}

LW_API const char *
lw_version(void)
{
    return STR(LW_VERSION_MAJOR) "." STR(LW_VERSION_MINOR) "." STR(LW_VERSION_PATCH);
}
