/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_timeout.c - liblockwatch example: wait for a lock, but not forever.
 *
 *     lock_timeout [HOST:PORT]    (default 127.0.0.1:6379)
 *
 * Two clients stand for two services.  "holder" takes the lock with
 * lease 0, so its watchdog renews it (every 10 s by default) for as long as
 * it is held, and a thread releases it after 300 ms.  "waiter" calls
 * lw_lock() with a 2 s timeout: it sleeps on the release's pub/sub wake-up
 * and gets the lock about 300 ms later.  Then, with the lock held again, a
 * wait of 200 ms ends in LW_TIMEOUT.  Each wait is reported to lockwatchd
 * (outcome ok or timeout), which exports the P99 wait per lock class.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lockwatch.h>

static const char *key = "lock:example:invoice:42";

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

/* Called on the watchdog's thread if a renewal finds the lock gone. */
static void
on_lost(lw_lock_t *lock, const char *lost_key, void *data)
{
    (void)lock;
    (void)data;
    fprintf(stderr, "lost %s: stop writing what it protects\n", lost_key);
}

static void *
release_later(void *arg)
{
    struct timespec ts = { .tv_sec = 0, .tv_nsec = 300 * 1000000L };
    lw_error err;

    nanosleep(&ts, NULL);
    printf("holder: releasing %s\n", key);
    if (lw_unlock(arg, &err) != LW_OK)
        fprintf(stderr, "holder: %s\n", err.str);
    return NULL;
}

int
main(int argc, char **argv)
{
    char host[256];
    lw_options opts;
    lw_client *holder = NULL, *waiter = NULL;
    lw_lock_t *held = NULL, *mine = NULL, *none = NULL;
    lw_error err;
    lw_status st;
    pthread_t t;
    int rc = 1;

    lw_options_init(&opts);
    if (argc > 1 && parse_address(argv[1], host, sizeof(host), &opts) != 0) {
        fprintf(stderr, "usage: lock_timeout [HOST:PORT]\n");
        return 2;
    }
    opts.on_lost = on_lost;
    holder = lw_connect(&opts, &err);
    if (holder == NULL) {
        fprintf(stderr, "lock_timeout: %s\n", err.str);
        goto out;
    }
    waiter = lw_connect(&opts, &err);
    if (waiter == NULL) {
        fprintf(stderr, "lock_timeout: %s\n", err.str);
        goto out;
    }

    /* lease 0: renewed by the watchdog until released */
    if (lw_lock(holder, key, 0, 1000, 0, &held, &err) != LW_OK) {
        fprintf(stderr, "holder: %s\n", err.str);
        goto out;
    }
    printf("holder: took %s\n", key);
    if (pthread_create(&t, NULL, release_later, held) != 0) {
        fprintf(stderr, "lock_timeout: cannot start a thread\n");
        goto out;
    }
    held = NULL;                    /* the thread releases it */

    printf("waiter: waiting up to 2000 ms for %s\n", key);
    st = lw_lock(waiter, key, 0, 2000, 0, &mine, &err);
    pthread_join(t, NULL);
    if (st != LW_OK) {
        fprintf(stderr, "waiter: %s\n", err.str);
        goto out;
    }
    printf("waiter: got it after %lld ms\n", lw_lock_waited_us(mine) / 1000);

    printf("holder: waiting up to 200 ms while the waiter holds it\n");
    st = lw_lock(holder, key, 0, 200, 0, &none, &err);
    if (st != LW_TIMEOUT) {
        fprintf(stderr, "holder: expected a timeout, got %s\n", lw_strerror(st));
        goto out;
    }
    printf("holder: %s\n", err.str);

    if (lw_unlock(mine, &err) != LW_OK) {
        mine = NULL;
        fprintf(stderr, "waiter: %s\n", err.str);
        goto out;
    }
    mine = NULL;
    printf("waiter: released %s\n", key);
    rc = 0;
out:
    lw_unlock(none, NULL);
    lw_unlock(mine, NULL);
    lw_unlock(held, NULL);
    lw_client_free(waiter);
    lw_client_free(holder);
    return rc;
}
