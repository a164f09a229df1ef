/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * try_lock.c - liblockwatch example: do a job only if nobody else is
 * doing it right now.
 *
 *     try_lock [HOST:PORT]        (default 127.0.0.1:6379)
 *
 * lw_trylock() makes one attempt and never waits: LW_OK means the lock is
 * ours, LW_BUSY that another process (or thread) holds it.  The lock here
 * has an explicit 10 s lease: if this process died while holding it, Redis
 * would free it after 10 s.  Every acquisition and release is reported to
 * lockwatchd (LOCKWATCH_AGENT, default 127.0.0.1:9717); nothing listening
 * there is fine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lockwatch.h>

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

int
main(int argc, char **argv)
{
    const char *key = "lock:example:report";
    char host[256];
    lw_options opts;
    lw_client *c = NULL;
    lw_lock_t *lock = NULL, *again = NULL;
    lw_error err;
    lw_status st;
    int rc = 1;

    lw_options_init(&opts);
    if (argc > 1 && parse_address(argv[1], host, sizeof(host), &opts) != 0) {
        fprintf(stderr, "usage: try_lock [HOST:PORT]\n");
        return 2;
    }
    c = lw_connect(&opts, &err);
    if (c == NULL) {
        fprintf(stderr, "try_lock: %s\n", err.str);
        return 1;
    }
    printf("connected to Redis at %s:%d as client %s\n", opts.host, opts.port,
           lw_client_id(c));

    st = lw_trylock(c, key, 10000, 0, &lock, &err);
    if (st == LW_BUSY) {
        printf("%s is held by someone else: skipping the job\n", key);
        rc = 0;
        goto out;
    }
    if (st != LW_OK) {
        fprintf(stderr, "try_lock: %s\n", err.str);
        goto out;
    }
    printf("took %s (token %s)\n", key, lw_lock_token(lock));

    /* A second try while we hold it answers BUSY: plain locks are not
     * reentrant, not even for their holder. */
    st = lw_trylock(c, key, 10000, 0, &again, &err);
    printf("a second lw_trylock while held: %s\n", lw_strerror(st));
    if (st == LW_OK)
        goto out;

    printf("doing the job...\n");

    st = lw_unlock(lock, &err);
    lock = NULL;
    if (st != LW_OK) {
        /* LW_LOST: the lease ran out and someone else may have run the
         * job too; the new holder's lock was left alone. */
        fprintf(stderr, "try_lock: %s\n", err.str);
        goto out;
    }
    printf("released %s\n", key);
    rc = 0;
out:
    lw_unlock(again, NULL);
    lw_unlock(lock, NULL);
    lw_client_free(c);
    return rc;
}
