/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client_contend.c - N threads contend for one liblockwatch lock (driver
 * for test_client_contention.py).
 *
 *     client_contend HOST:PORT AGENT KEY THREADS ITERS HOLD_MS
 *
 * All threads share one client handle (the library is thread-safe per
 * handle).  Each thread takes the lock ITERS times with lw_lock(), holds
 * it HOLD_MS, and releases it.  Inside the critical section a shared
 * counter must go 0 -> 1: a second holder at the same time is a violation.
 *
 * Output, one line each:
 *     wait <us>          every acquisition's wait, measured here around
 *                        lw_lock() (not the library's own figure)
 *     violations <n>
 *     errors <n>         lw_lock/lw_unlock calls that did not return LW_OK
 *     stats sent=.. dropped=.. wakeups=.. rechecks=..
 * Exit status 0 when there were no violations and no errors.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lockwatch.h>

#define MAX_THREADS 64

struct shared {
    lw_client *c;
    const char *key;
    int iters;
    int hold_ms;
    atomic_int inside;
    atomic_int violations;
    atomic_int errors;
    pthread_mutex_t out_mu;
    long long *waits;           /* THREADS x ITERS */
};

struct worker {
    struct shared *s;
    int index;
};

/* A non-negative decimal argument, or -1. */
static int
num(const char *s)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);

    return end == s || *end != '\0' || v < 0 || v > 1000000 ? -1 : (int)v;
}

static long long
mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
sleep_ms(int ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void *
worker_main(void *p)
{
    struct worker *w = p;
    struct shared *s = w->s;

    for (int i = 0; i < s->iters; i++) {
        lw_lock_t *lk = NULL;
        lw_error err;
        long long t0 = mono_us(), waited;
        lw_status st = lw_lock(s->c, s->key, 0, 60000, 0, &lk, &err);

        waited = mono_us() - t0;
        if (st != LW_OK) {
            atomic_fetch_add(&s->errors, 1);
            pthread_mutex_lock(&s->out_mu);
            fprintf(stderr, "lw_lock: %s\n", err.str);
            pthread_mutex_unlock(&s->out_mu);
            s->waits[w->index * s->iters + i] = -1;
            continue;
        }
        if (atomic_fetch_add(&s->inside, 1) != 0)
            atomic_fetch_add(&s->violations, 1);
        sleep_ms(s->hold_ms);
        atomic_fetch_sub(&s->inside, 1);
        if (lw_unlock(lk, &err) != LW_OK) {
            atomic_fetch_add(&s->errors, 1);
            pthread_mutex_lock(&s->out_mu);
            fprintf(stderr, "lw_unlock: %s\n", err.str);
            pthread_mutex_unlock(&s->out_mu);
        }
        s->waits[w->index * s->iters + i] = waited;
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    static struct worker workers[MAX_THREADS];
    static pthread_t threads[MAX_THREADS];
    struct shared s;
    lw_options o;
    lw_error err;
    lw_stats st;
    char host[256];
    const char *colon;
    int nthreads, rc = 1;

    if (argc != 7) {
        fprintf(stderr, "usage: client_contend HOST:PORT AGENT KEY THREADS ITERS HOLD_MS\n");
        return 2;
    }
    colon = strrchr(argv[1], ':');
    if (colon == NULL || (size_t)(colon - argv[1]) >= sizeof(host))
        return 2;
    memcpy(host, argv[1], (size_t)(colon - argv[1]));
    host[colon - argv[1]] = '\0';
    nthreads = num(argv[4]);
    if (nthreads < 1 || nthreads > MAX_THREADS)
        return 2;

    memset(&s, 0, sizeof(s));
    s.key = argv[3];
    s.iters = num(argv[5]);
    s.hold_ms = num(argv[6]);
    if (s.iters < 1 || s.hold_ms < 0)
        return 2;
    pthread_mutex_init(&s.out_mu, NULL);
    s.waits = calloc((size_t)nthreads * (size_t)s.iters, sizeof(*s.waits));
    if (s.waits == NULL)
        return 1;

    lw_options_init(&o);
    o.host = host;
    o.port = num(colon + 1);
    if (strcmp(argv[2], "off") == 0)
        o.report = 0;
    else
        o.agent = argv[2];
    s.c = lw_connect(&o, &err);
    if (s.c == NULL) {
        fprintf(stderr, "lw_connect: %s\n", err.str);
        goto out;
    }

    for (int i = 0; i < nthreads; i++) {
        workers[i].s = &s;
        workers[i].index = i;
        if (pthread_create(&threads[i], NULL, worker_main, &workers[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            nthreads = i;
            atomic_fetch_add(&s.errors, 1);
            break;
        }
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);

    for (int i = 0; i < nthreads * s.iters; i++)
        if (s.waits[i] >= 0)
            printf("wait %lld\n", s.waits[i]);
    printf("violations %d\n", atomic_load(&s.violations));
    printf("errors %d\n", atomic_load(&s.errors));
    lw_client_stats(s.c, &st);
    printf("stats sent=%llu dropped=%llu wakeups=%llu rechecks=%llu\n",
           (unsigned long long)st.samples_sent, (unsigned long long)st.samples_dropped,
           (unsigned long long)st.wakeups, (unsigned long long)st.rechecks);
    rc = atomic_load(&s.violations) == 0 && atomic_load(&s.errors) == 0 ? 0 : 1;
out:
    /* lw_client_free sends what is still buffered */
    lw_client_free(s.c);
    free(s.waits);
    pthread_mutex_destroy(&s.out_mu);
    return rc;
}
