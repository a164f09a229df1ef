/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client_shell.c - a line-driven liblockwatch driver for the Python
 * integration tests (test_client_*.py).
 *
 *     client_shell HOST:PORT
 *
 * reads one command per line on stdin and answers one line on stdout
 * (flushed), so a test can hold locks, wait, pause the process (SIGSTOP)
 * and look at Redis between steps.  Names are the test's own labels.
 *
 *   connect C [lease=MS] [agent=ADDR|off] [cmd_timeout=MS] [password_file=F]
 *             [tls] [tls_ca_file=F] [tls_cert_file=F] [tls_key_file=F] [tls_server_name=N]
 *                                  -> OK <client uuid> [WARN <warning>]
 *                                     | ERR <message>
 *   lock C L KEY LEASE TIMEOUT FLAGS   FLAGS: - | reentrant | fencing |
 *                                         reentrant,fencing
 *                                  -> OK waited_us=N fence=F token=T
 *                                     | TIMEOUT elapsed_us=N | ERR <message>
 *   trylock C L KEY LEASE FLAGS    -> OK ... | BUSY elapsed_us=N | ERR ...
 *   trythread C KEY LEASE FLAGS    -> lw_trylock on a new thread (then
 *                                     unlocked): OK | BUSY | ERR ...
 *   unlock L                       -> OK | LOST <message> | ERR <message>
 *   extend L MS                    -> OK | LOST ... | ERR ...
 *   lost L                         -> 0 | 1
 *   stats C                        -> sent=.. dropped=.. datagrams=..
 *                                     wakeups=.. rechecks=.. renewals=..
 *                                     lost=.. reconnects=.. lost_replies=..
 *                                     orphans_undone=.. orphans_dropped=..
 *   tid                            -> the OS thread id of this shell
 *   free C                         -> OK
 *   quit
 *
 * The on_lost callback prints "LOST-CALLBACK <key>" (from the watchdog
 * thread) whenever it runs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lockwatch.h>

#define MAX_NAMED 64

struct named_client {
    char name[32];
    lw_client *c;
};

struct named_lock {
    char name[32];
    lw_lock_t *lk;
};

static struct named_client clients[MAX_NAMED];
static struct named_lock locks[MAX_NAMED];
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static char redis_host[256] = "127.0.0.1";
static int redis_port = 6379;

static void
say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
say(const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&out_mu);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
}

static int64_t
mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long
num(const char *s)
{
    char *end = NULL;
    long long v;

    errno = 0;
    v = strtoll(s != NULL ? s : "", &end, 10);
    if (s == NULL || end == s || *end != '\0' || errno != 0)
        return -999999;
    return v;
}

static int
flags_of(const char *s)
{
    int f = 0;

    if (s == NULL || strcmp(s, "-") == 0)
        return 0;
    if (strstr(s, "reentrant") != NULL)
        f |= LW_REENTRANT;
    if (strstr(s, "fencing") != NULL)
        f |= LW_FENCING;
    return f;
}

static struct named_client *
find_client(const char *name, int create)
{
    for (int i = 0; i < MAX_NAMED; i++)
        if (clients[i].c != NULL && strcmp(clients[i].name, name) == 0)
            return &clients[i];
    if (!create)
        return NULL;
    for (int i = 0; i < MAX_NAMED; i++)
        if (clients[i].c == NULL) {
            snprintf(clients[i].name, sizeof(clients[i].name), "%s", name);
            return &clients[i];
        }
    return NULL;
}

static struct named_lock *
find_lock(const char *name, int create)
{
    for (int i = 0; i < MAX_NAMED; i++)
        if (locks[i].lk != NULL && strcmp(locks[i].name, name) == 0)
            return &locks[i];
    if (!create)
        return NULL;
    for (int i = 0; i < MAX_NAMED; i++)
        if (locks[i].lk == NULL) {
            snprintf(locks[i].name, sizeof(locks[i].name), "%s", name);
            return &locks[i];
        }
    return NULL;
}

static void
on_lost(lw_lock_t *lock, const char *key, void *data)
{
    (void)lock;
    (void)data;
    say("LOST-CALLBACK %s", key);
}

static void
cmd_connect(char **arg, int n)
{
    struct named_client *nc;
    lw_options o;
    lw_error err;

    if (n < 2) {
        say("ERR usage: connect C [lease=MS] [agent=ADDR|off] [tls tls_ca_file=F ...]");
        return;
    }
    lw_options_init(&o);
    o.host = redis_host;
    o.port = redis_port;
    o.on_lost = on_lost;
    for (int i = 2; i < n; i++) {
        if (strncmp(arg[i], "lease=", 6) == 0)
            o.default_lease_ms = num(arg[i] + 6);
        else if (strcmp(arg[i], "agent=off") == 0)
            o.report = 0;
        else if (strncmp(arg[i], "agent=", 6) == 0)
            o.agent = arg[i] + 6;
        else if (strncmp(arg[i], "cmd_timeout=", 12) == 0)
            o.command_timeout_ms = (int)num(arg[i] + 12);
        else if (strncmp(arg[i], "password_file=", 14) == 0)
            o.password_file = arg[i] + 14;
        else if (strcmp(arg[i], "tls") == 0)
            o.tls = 1;
        else if (strncmp(arg[i], "tls_ca_file=", 12) == 0)
            o.tls_ca_file = arg[i] + 12;
        else if (strncmp(arg[i], "tls_cert_file=", 14) == 0)
            o.tls_cert_file = arg[i] + 14;
        else if (strncmp(arg[i], "tls_key_file=", 13) == 0)
            o.tls_key_file = arg[i] + 13;
        else if (strncmp(arg[i], "tls_server_name=", 16) == 0)
            o.tls_server_name = arg[i] + 16;
    }
    if (find_client(arg[1], 0) != NULL) {
        say("ERR client %s exists", arg[1]);
        return;
    }
    nc = find_client(arg[1], 1);
    if (nc == NULL) {
        say("ERR too many clients");
        return;
    }
    nc->c = lw_connect(&o, &err);
    if (nc->c == NULL)
        say("ERR %s", err.str);
    else if (err.str[0] != '\0')
        say("OK %s WARN %s", lw_client_id(nc->c), err.str);
    else
        say("OK %s", lw_client_id(nc->c));
}

static void
say_lock_result(lw_status st, lw_lock_t *lk, int64_t elapsed, const lw_error *err)
{
    if (st == LW_OK)
        say("OK waited_us=%lld fence=%lld token=%s", lw_lock_waited_us(lk),
            lw_lock_fence(lk), lw_lock_token(lk));
    else if (st == LW_TIMEOUT)
        say("TIMEOUT elapsed_us=%lld", (long long)elapsed);
    else if (st == LW_BUSY)
        say("BUSY elapsed_us=%lld", (long long)elapsed);
    else
        say("ERR %s", err->str);
}

static void
cmd_lock(char **arg, int n, int try)
{
    struct named_client *nc;
    struct named_lock *nl;
    lw_lock_t *lk = NULL;
    lw_error err;
    lw_status st;
    int64_t t0;

    if (n < (try ? 6 : 7)) {
        say("ERR usage: lock C L KEY LEASE TIMEOUT FLAGS | trylock C L KEY LEASE FLAGS");
        return;
    }
    nc = find_client(arg[1], 0);
    if (nc == NULL) {
        say("ERR no client %s", arg[1]);
        return;
    }
    if (find_lock(arg[2], 0) != NULL) {
        say("ERR lock %s is held", arg[2]);
        return;
    }
    t0 = mono_us();
    if (try)
        st = lw_trylock(nc->c, arg[3], num(arg[4]), flags_of(arg[5]), &lk, &err);
    else
        st = lw_lock(nc->c, arg[3], num(arg[4]), num(arg[5]), flags_of(arg[6]),
                     &lk, &err);
    if (st == LW_OK) {
        nl = find_lock(arg[2], 1);
        if (nl == NULL) {
            lw_unlock(lk, NULL);
            say("ERR too many locks");
            return;
        }
        nl->lk = lk;
    }
    say_lock_result(st, lk, mono_us() - t0, &err);
}

struct trythread_arg {
    lw_client *c;
    const char *key;
    long long lease;
    int flags;
    lw_status st;
    lw_error err;
};

static void *
trythread_main(void *p)
{
    struct trythread_arg *a = p;
    lw_lock_t *lk = NULL;

    a->st = lw_trylock(a->c, a->key, a->lease, a->flags, &lk, &a->err);
    if (a->st == LW_OK)
        lw_unlock(lk, NULL);
    return NULL;
}

static void
cmd_trythread(char **arg, int n)
{
    struct trythread_arg a;
    struct named_client *nc;
    pthread_t t;

    if (n < 5) {
        say("ERR usage: trythread C KEY LEASE FLAGS");
        return;
    }
    nc = find_client(arg[1], 0);
    if (nc == NULL) {
        say("ERR no client %s", arg[1]);
        return;
    }
    memset(&a, 0, sizeof(a));
    a.c = nc->c;
    a.key = arg[2];
    a.lease = num(arg[3]);
    a.flags = flags_of(arg[4]);
    if (pthread_create(&t, NULL, trythread_main, &a) != 0) {
        say("ERR pthread_create");
        return;
    }
    pthread_join(t, NULL);
    if (a.st == LW_OK)
        say("OK");
    else if (a.st == LW_BUSY)
        say("BUSY");
    else
        say("ERR %s", a.err.str);
}

static void
cmd_unlock(char **arg, int n)
{
    struct named_lock *nl = n >= 2 ? find_lock(arg[1], 0) : NULL;
    lw_error err;
    lw_status st;

    if (nl == NULL) {
        say("ERR no lock %s", n >= 2 ? arg[1] : "");
        return;
    }
    st = lw_unlock(nl->lk, &err);
    nl->lk = NULL;
    if (st == LW_OK)
        say("OK");
    else if (st == LW_LOST)
        say("LOST %s", err.str);
    else
        say("ERR %s", err.str);
}

static void
cmd_extend(char **arg, int n)
{
    struct named_lock *nl = n >= 3 ? find_lock(arg[1], 0) : NULL;
    lw_error err;
    lw_status st;

    if (nl == NULL) {
        say("ERR usage: extend L MS");
        return;
    }
    st = lw_extend(nl->lk, num(arg[2]), &err);
    if (st == LW_OK)
        say("OK");
    else if (st == LW_LOST)
        say("LOST %s", err.str);
    else
        say("ERR %s", err.str);
}

static void
cmd_stats(char **arg, int n)
{
    struct named_client *nc = n >= 2 ? find_client(arg[1], 0) : NULL;
    lw_stats s;

    if (nc == NULL) {
        say("ERR no client");
        return;
    }
    lw_client_stats(nc->c, &s);
    say("sent=%llu dropped=%llu datagrams=%llu wakeups=%llu rechecks=%llu "
        "renewals=%llu lost=%llu reconnects=%llu lost_replies=%llu "
        "orphans_undone=%llu orphans_dropped=%llu",
        (unsigned long long)s.samples_sent, (unsigned long long)s.samples_dropped,
        (unsigned long long)s.datagrams_sent, (unsigned long long)s.wakeups,
        (unsigned long long)s.rechecks, (unsigned long long)s.renewals,
        (unsigned long long)s.locks_lost, (unsigned long long)s.reconnects,
        (unsigned long long)s.lost_replies, (unsigned long long)s.orphans_undone,
        (unsigned long long)s.orphans_dropped);
}

int
main(int argc, char **argv)
{
    char line[8192];

    if (argc > 1) {
        const char *colon = strrchr(argv[1], ':');

        if (colon == NULL || (size_t)(colon - argv[1]) >= sizeof(redis_host)) {
            fprintf(stderr, "usage: client_shell HOST:PORT\n");
            return 2;
        }
        memcpy(redis_host, argv[1], (size_t)(colon - argv[1]));
        redis_host[colon - argv[1]] = '\0';
        redis_port = (int)num(colon + 1);
    }
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char *arg[16], *save = NULL, *tok;
        int n = 0;

        line[strcspn(line, "\r\n")] = '\0';
        for (tok = strtok_r(line, " ", &save); tok != NULL && n < 16;
             tok = strtok_r(NULL, " ", &save))
            arg[n++] = tok;
        if (n == 0)
            continue;
        if (strcmp(arg[0], "connect") == 0) {
            cmd_connect(arg, n);
        } else if (strcmp(arg[0], "lock") == 0) {
            cmd_lock(arg, n, 0);
        } else if (strcmp(arg[0], "trylock") == 0) {
            cmd_lock(arg, n, 1);
        } else if (strcmp(arg[0], "trythread") == 0) {
            cmd_trythread(arg, n);
        } else if (strcmp(arg[0], "unlock") == 0) {
            cmd_unlock(arg, n);
        } else if (strcmp(arg[0], "extend") == 0) {
            cmd_extend(arg, n);
        } else if (strcmp(arg[0], "lost") == 0) {
            struct named_lock *nl = n >= 2 ? find_lock(arg[1], 0) : NULL;

            if (nl == NULL)
                say("ERR no lock");
            else
                say("%d", lw_lock_is_lost(nl->lk) ? 1 : 0);
        } else if (strcmp(arg[0], "stats") == 0) {
            cmd_stats(arg, n);
        } else if (strcmp(arg[0], "tid") == 0) {
            say("%ld", (long)gettid());
        } else if (strcmp(arg[0], "free") == 0) {
            struct named_client *nc = n >= 2 ? find_client(arg[1], 0) : NULL;

            if (nc == NULL) {
                say("ERR no client");
            } else {
                lw_client_free(nc->c);
                nc->c = NULL;
                say("OK");
            }
        } else if (strcmp(arg[0], "quit") == 0) {
            break;
        } else {
            say("ERR unknown command %s", arg[0]);
        }
    }
    for (int i = 0; i < MAX_NAMED; i++)
        if (locks[i].lk != NULL)
            lw_unlock(locks[i].lk, NULL);
    for (int i = 0; i < MAX_NAMED; i++)
        if (clients[i].c != NULL)
            lw_client_free(clients[i].c);
    return 0;
}
