/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fencing.c - liblockwatch example: fencing tokens.
 *
 *     fencing [HOST:PORT]         (default 127.0.0.1:6379)
 *
 * A lock can expire while its holder is paused (GC, swap, a stopped VM);
 * the holder then wakes up and writes, believing it still holds the lock.
 * A fencing token stops that: with LW_FENCING every acquisition also gets
 * a token from the counter lockwatch_fence:{<key>}, taken atomically with
 * the lock, and the storage refuses a write carrying a smaller token than
 * one it has already seen.  Tokens only grow, also across a Redis restart
 * that lost the counter (docs/fencing.md).  Here the "storage" is a
 * variable in this program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lockwatch.h>

static const char *key = "lock:example:ledger";

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

/* The storage's side: accept a write only with the newest token seen. */
static long long newest_fence;

static int
storage_write(long long fence, const char *what)
{
    if (fence < newest_fence) {
        printf("storage: refused \"%s\" with stale token %lld (seen %lld)\n",
               what, fence, newest_fence);
        return -1;
    }
    newest_fence = fence;
    printf("storage: wrote \"%s\" with token %lld\n", what, fence);
    return 0;
}

int
main(int argc, char **argv)
{
    char host[256];
    lw_options opts;
    lw_client *c = NULL;
    lw_lock_t *first = NULL, *second = NULL;
    long long stale;
    lw_error err;
    int rc = 1;

    lw_options_init(&opts);
    if (argc > 1 && parse_address(argv[1], host, sizeof(host), &opts) != 0) {
        fprintf(stderr, "usage: fencing [HOST:PORT]\n");
        return 2;
    }
    c = lw_connect(&opts, &err);
    if (c == NULL) {
        fprintf(stderr, "fencing: %s\n", err.str);
        return 1;
    }

    if (lw_lock(c, key, 5000, 1000, LW_FENCING, &first, &err) != LW_OK) {
        fprintf(stderr, "fencing: %s\n", err.str);
        goto out;
    }
    stale = lw_lock_fence(first);
    printf("first holder: took %s with token %lld\n", key, stale);
    if (storage_write(stale, "first holder's entry") != 0)
        goto out;
    if (lw_unlock(first, &err) != LW_OK) {
        first = NULL;
        fprintf(stderr, "fencing: %s\n", err.str);
        goto out;
    }
    first = NULL;

    if (lw_lock(c, key, 5000, 1000, LW_FENCING, &second, &err) != LW_OK) {
        fprintf(stderr, "fencing: %s\n", err.str);
        goto out;
    }
    printf("second holder: took %s with token %lld\n", key, lw_lock_fence(second));
    if (lw_lock_fence(second) <= stale) {
        fprintf(stderr, "fencing: token did not grow\n");
        goto out;
    }
    if (storage_write(lw_lock_fence(second), "second holder's entry") != 0)
        goto out;

    /* The first holder, back from a pause, tries to write late. */
    if (storage_write(stale, "first holder's late entry") == 0) {
        fprintf(stderr, "fencing: a stale write got through\n");
        goto out;
    }
    rc = 0;
out:
    lw_unlock(second, NULL);
    lw_unlock(first, NULL);
    lw_client_free(c);
    return rc;
}
