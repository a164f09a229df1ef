/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reentrant.c - liblockwatch example: a reentrant lock shared with Java
 * services that use Redisson.
 *
 *     reentrant [HOST:PORT]       (default 127.0.0.1:6379)
 *
 * With LW_REENTRANT the lock is stored as Redisson's RLock stores it: a
 * hash <key> with the field "<client uuid>:<thread id>" counting the holds.
 * The same thread may take it again (each lw_lock needs its own lw_unlock);
 * any other thread, process, or Redisson client is kept out until the last
 * hold is released, and Redisson waiters are woken by the release.  The
 * holder's host, pid and acquisition time go to lockwatch:client:{<uuid>},
 * where lockwatchd finds them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lockwatch.h>

static const char *key = "lock:example:account:7";

/* "host:port" into opts; 0 or -1. */
static int
parse_address(const char *arg, char *host, size_t hostlen, lw_options *opts)
{
    const char *colon = strrchr(arg, ':');
    char *end = NULL;
    long port;

    if (colon == NULL || colon == arg || (size_t)(colon - arg) >= hostlen)
        return -1;
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535)
        return -1;
    memcpy(host, arg, (size_t)(colon - arg));
    host[colon - arg] = '\0';
    opts->host = host;
    opts->port = (int)port;
    return 0;
}

struct try_result {
    lw_client *c;
    lw_status st;
};

/* Another thread of the same client is another holder. */
static void *
other_thread(void *arg)
{
    struct try_result *r = arg;
    lw_lock_t *lock = NULL;

    r->st = lw_trylock(r->c, key, 0, LW_REENTRANT, &lock, NULL);
    printf("another thread's lw_trylock: %s\n", lw_strerror(r->st));
    lw_unlock(lock, NULL);
    return NULL;
}

/* Called with the lock held once; takes it again, as a nested call would. */
static int
update_balance(lw_client *c)
{
    lw_lock_t *inner = NULL;
    lw_error err;

    if (lw_lock(c, key, 0, 1000, LW_REENTRANT, &inner, &err) != LW_OK) {
        fprintf(stderr, "reentrant: %s\n", err.str);
        return -1;
    }
    printf("took it again in a nested call (the count is now 2)\n");
    if (lw_unlock(inner, &err) != LW_OK) {
        fprintf(stderr, "reentrant: %s\n", err.str);
        return -1;
    }
    printf("released the inner hold; still held once\n");
    return 0;
}

int
main(int argc, char **argv)
{
    char host[256];
    lw_options opts;
    lw_client *c = NULL;
    lw_lock_t *outer = NULL;
    lw_error err;
    struct try_result other = { NULL, LW_ERR };
    pthread_t t;
    int rc = 1;

    lw_options_init(&opts);
    if (argc > 1 && parse_address(argv[1], host, sizeof(host), &opts) != 0) {
        fprintf(stderr, "usage: reentrant [HOST:PORT]\n");
        return 2;
    }
    c = lw_connect(&opts, &err);
    if (c == NULL) {
        fprintf(stderr, "reentrant: %s\n", err.str);
        return 1;
    }
    if (lw_lock(c, key, 0, 1000, LW_REENTRANT, &outer, &err) != LW_OK) {
        fprintf(stderr, "reentrant: %s\n", err.str);
        goto out;
    }
    printf("took %s as field %s (Redisson's format)\n", key, lw_lock_token(outer));
    if (update_balance(c) != 0)
        goto out;
    other.c = c;
    if (pthread_create(&t, NULL, other_thread, &other) != 0)
        goto out;
    pthread_join(t, NULL);
    if (other.st != LW_BUSY)
        goto out;
    if (lw_unlock(outer, &err) != LW_OK) {
        outer = NULL;
        fprintf(stderr, "reentrant: %s\n", err.str);
        goto out;
    }
    outer = NULL;
    printf("released the last hold: %s is free, Redisson waiters woken\n", key);
    rc = 0;
out:
    lw_unlock(outer, NULL);
    lw_client_free(c);
    return rc;
}
