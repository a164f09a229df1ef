/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client_bench.c - liblockwatch's cost next to a bare hiredis lock loop,
 * and how fast a released lock reaches its next waiter (SPEC "Performance
 * and behaviour targets"; bench/client runs it against a throwaway Redis).
 *
 *     client_bench HOST:PORT LIBLOCKWATCH_SO [CYCLES] [ROUNDS] [HANDOFFS]
 *
 * Cycles: one uncontended acquire + release on one key, back to back, on
 * one connection, in four variants.  ROUNDS short rounds (CYCLES cycles per
 * variant, default 25 x 2000) each run all four in a rotating order; a
 * variant's ratio to the floor is taken within each round, and the median
 * (with p25/p75) over the rounds is printed, so load that drifts on a
 * shared machine hits both sides of a ratio alike:
 *
 *   floor      bare hiredis: SET key <token> NX PX 10000, then EVALSHA of a
 *              compare-and-delete script (GET == token -> DEL), with a fresh
 *              random token each cycle;
 *   off        lw_lock(lease 10000) + lw_unlock, reporting off;
 *   on         the same, reporting on, to a UDP socket this program drains
 *              (the agent's stand-in), so its samples really are received;
 *   watchdog   lw_lock(lease 0) + lw_unlock, reporting on: the lock goes
 *              through the watchdog's list.
 *
 * Hand-off: a holder (one client) takes the lock, a waiter (another client)
 * calls lw_lock() and sleeps on the wake-up; 2 ms later the holder notes
 * the time and calls lw_unlock(); the waiter notes the time lw_lock()
 * returned.  The difference (release call to waiter holding it) over
 * HANDOFFS hand-offs gives the median and p99.
 *
 * liblockwatch is loaded with dlopen() from LIBLOCKWATCH_SO because the
 * Makefile links bench programs with the agent's core only; calling through
 * the shared library is what a dynamically linked service does anyway.
 *
 * Output: "key value" lines (cycles/s, ratios, microseconds, counters),
 * parsed by bench/client.  Exit 0 when the figures were produced.
 */
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hiredis.h>

#include "client/lockwatch.h"

#define MAX_ROUNDS 200

/* The lw_ calls used here, resolved from the shared library. */
static struct {
    __typeof__(lw_options_init) *options_init;
    __typeof__(lw_connect) *connect;
    __typeof__(lw_client_free) *client_free;
    __typeof__(lw_lock) *lock;
    __typeof__(lw_unlock) *unlock;
    __typeof__(lw_client_stats) *stats;
} api;

static const char cad_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('del', KEYS[1]) end return 0";

static char redis_host[256];
static int redis_port;
static atomic_ullong udp_received;      /* lines the drain thread got */
static atomic_bool udp_stop;

static int64_t
mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
sleep_us(long us)
{
    struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

    while (nanosleep(&ts, &ts) != 0)
        ;
}

static long
num(const char *s, long dflt)
{
    char *end = NULL;
    long v;

    if (s == NULL)
        return dflt;
    v = strtol(s, &end, 10);
    return end == s || *end != '\0' || v <= 0 ? -1 : v;
}

static int
load_api(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

    if (h == NULL) {
        fprintf(stderr, "client_bench: %s\n", dlerror());
        return -1;
    }
#define RESOLVE(field, name)                                              \
    do {                                                                  \
        *(void **)&api.field = dlsym(h, name);                            \
        if (api.field == NULL) {                                          \
            fprintf(stderr, "client_bench: %s lacks %s\n", path, name);   \
            return -1;                                                    \
        }                                                                 \
    } while (0)
    RESOLVE(options_init, "lw_options_init");
    RESOLVE(connect, "lw_connect");
    RESOLVE(client_free, "lw_client_free");
    RESOLVE(lock, "lw_lock");
    RESOLVE(unlock, "lw_unlock");
    RESOLVE(stats, "lw_client_stats");
#undef RESOLVE
    return 0;
}

/* --- the UDP sink standing in for the agent ------------------------------- */

static void *
udp_drain(void *arg)
{
    int fd = *(int *)arg;
    char buf[2048];

    while (!atomic_load(&udp_stop)) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);

        if (n <= 0)
            continue;               /* the 100 ms receive timeout */
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] == '\n')
                atomic_fetch_add(&udp_received, 1);
    }
    return NULL;
}

static int
udp_sink(int *port)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);
    struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };
    int fd = socket(AF_INET, SOCK_DGRAM, 0), rcvbuf = 4 << 20;

    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* --- the floor: bare hiredis ---------------------------------------------- */

static double
floor_round(redisContext *ctx, const char *sha, long cycles)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t x = (uint64_t)mono_us() | 1;
    char token[17];
    const char *set[6] = { "SET", "lock:bench", token, "NX", "PX", "10000" };
    size_t setlen[6] = { 3, 10, 16, 2, 2, 5 };
    const char *cad[5] = { "EVALSHA", sha, "1", "lock:bench", token };
    size_t cadlen[5] = { 7, strlen(sha), 1, 10, 16 };
    int64_t t0 = mono_us();

    token[16] = '\0';
    for (long i = 0; i < cycles; i++) {
        redisReply *r;

        /* xorshift: a fresh token per cycle, as a real client makes one */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for (int k = 0; k < 16; k++)
            token[k] = hex[(x >> (4 * k)) & 0xf];
        r = redisCommandArgv(ctx, 6, set, setlen);
        if (r == NULL || r->type != REDIS_REPLY_STATUS)
            return -1;
        freeReplyObject(r);
        r = redisCommandArgv(ctx, 5, cad, cadlen);
        if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer != 1)
            return -1;
        freeReplyObject(r);
    }
    return (double)cycles * 1e6 / (double)(mono_us() - t0);
}

/* --- liblockwatch ----------------------------------------------------------- */

static lw_client *
client(const char *agent, int report)
{
    lw_options o;
    lw_error err;
    lw_client *c;

    api.options_init(&o);
    o.host = redis_host;
    o.port = redis_port;
    o.agent = agent;
    o.report = report;
    c = api.connect(&o, &err);
    if (c == NULL)
        fprintf(stderr, "client_bench: %s\n", err.str);
    return c;
}

static double
lw_round(lw_client *c, long long lease, long cycles)
{
    int64_t t0 = mono_us();

    for (long i = 0; i < cycles; i++) {
        lw_lock_t *lk = NULL;
        lw_error err;

        if (api.lock(c, "lock:bench", lease, 1000, 0, &lk, &err) != LW_OK ||
            api.unlock(lk, &err) != LW_OK) {
            fprintf(stderr, "client_bench: %s\n", err.str);
            return -1;
        }
    }
    return (double)cycles * 1e6 / (double)(mono_us() - t0);
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --- hand-off ----------------------------------------------------------------- */

struct handoff {
    lw_client *holder, *waiter;
    long n;
    int64_t *lat;                   /* n hand-off latencies, us */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int phase;                      /* 1: waiter may start, 2: waiter done */
    atomic_llong released_at;
    int failed;
};

static void *
waiter_main(void *arg)
{
    struct handoff *h = arg;

    for (long i = 0; i < h->n; i++) {
        lw_lock_t *lk = NULL;
        lw_error err;

        pthread_mutex_lock(&h->mu);
        while (h->phase != 1)
            pthread_cond_wait(&h->cond, &h->mu);
        pthread_mutex_unlock(&h->mu);
        if (api.lock(h->waiter, "lock:handoff", 10000, 5000, 0, &lk, &err) != LW_OK) {
            fprintf(stderr, "client_bench: waiter: %s\n", err.str);
            h->failed = 1;
        } else {
            h->lat[i] = mono_us() - atomic_load(&h->released_at);
            api.unlock(lk, NULL);
        }
        pthread_mutex_lock(&h->mu);
        h->phase = 2;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->mu);
        if (h->failed)
            break;
    }
    return NULL;
}

static int
run_handoff(struct handoff *h)
{
    pthread_t t;

    if (pthread_create(&t, NULL, waiter_main, h) != 0)
        return -1;
    for (long i = 0; i < h->n && !h->failed; i++) {
        lw_lock_t *lk = NULL;
        lw_error err;

        if (api.lock(h->holder, "lock:handoff", 10000, 5000, 0, &lk, &err) != LW_OK) {
            fprintf(stderr, "client_bench: holder: %s\n", err.str);
            h->failed = 1;
            pthread_mutex_lock(&h->mu);
            h->phase = 1;           /* let the waiter run and fail out */
            pthread_cond_broadcast(&h->cond);
            pthread_mutex_unlock(&h->mu);
            break;
        }
        pthread_mutex_lock(&h->mu);
        h->phase = 1;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->mu);
        sleep_us(2000);             /* the waiter is subscribed and asleep */
        atomic_store(&h->released_at, mono_us());
        api.unlock(lk, NULL);
        pthread_mutex_lock(&h->mu);
        while (h->phase != 2)
            pthread_cond_wait(&h->cond, &h->mu);
        h->phase = 0;
        pthread_mutex_unlock(&h->mu);
    }
    pthread_join(t, NULL);
    return h->failed ? -1 : 0;
}

enum variant { V_FLOOR, V_OFF, V_ON, V_WATCHDOG, V_COUNT };

static const char *const variant_name[V_COUNT] = {
    "floor", "lw_report_off", "lw_report_on", "lw_watchdog_report_on",
};

struct cycle_ctx {
    redisContext *ctx;
    const char *sha;
    lw_client *off, *on;
};

static double
run_variant(const struct cycle_ctx *cc, enum variant v, long cycles)
{
    switch (v) {
    case V_FLOOR:    return floor_round(cc->ctx, cc->sha, cycles);
    case V_OFF:      return lw_round(cc->off, 10000, cycles);
    case V_ON:       return lw_round(cc->on, 10000, cycles);
    case V_WATCHDOG: return lw_round(cc->on, 0, cycles);
    case V_COUNT:    break;
    }
    return -1;
}

int
main(int argc, char **argv)
{
    static double rate[V_COUNT][MAX_ROUNDS], ratio[V_COUNT][MAX_ROUNDS];
    char agent[64], sha[64];
    const char *colon;
    long cycles, rounds, handoffs;
    struct cycle_ctx cc = { NULL, NULL, NULL, NULL };
    redisReply *r = NULL;
    struct handoff h;
    pthread_t drain;
    lw_stats st;
    int fd = -1, port = 0, rc = 1;
    bool drain_started = false;

    memset(&h, 0, sizeof(h));
    if (argc < 3 || argc > 6) {
        fprintf(stderr, "usage: client_bench HOST:PORT LIBLOCKWATCH_SO [CYCLES] [ROUNDS] [HANDOFFS]\n");
        return 2;
    }
    colon = strrchr(argv[1], ':');
    if (colon == NULL || (size_t)(colon - argv[1]) >= sizeof(redis_host))
        return 2;
    memcpy(redis_host, argv[1], (size_t)(colon - argv[1]));
    redis_host[colon - argv[1]] = '\0';
    redis_port = (int)num(colon + 1, -1);
    cycles = num(argc > 3 ? argv[3] : NULL, 2000);
    rounds = num(argc > 4 ? argv[4] : NULL, 25);
    handoffs = num(argc > 5 ? argv[5] : NULL, 500);
    if (redis_port <= 0 || cycles <= 0 || rounds <= 0 || rounds > MAX_ROUNDS ||
        handoffs <= 0)
        return 2;
    if (load_api(argv[2]) != 0)
        return 1;

    fd = udp_sink(&port);
    if (fd < 0) {
        fprintf(stderr, "client_bench: cannot open the UDP sink\n");
        goto out;
    }
    if (pthread_create(&drain, NULL, udp_drain, &fd) != 0)
        goto out;
    drain_started = true;
    snprintf(agent, sizeof(agent), "127.0.0.1:%d", port);

    cc.ctx = redisConnect(redis_host, redis_port);
    if (cc.ctx == NULL || cc.ctx->err) {
        fprintf(stderr, "client_bench: cannot connect to Redis\n");
        goto out;
    }
    r = redisCommand(cc.ctx, "SCRIPT LOAD %s", cad_script);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len >= sizeof(sha))
        goto out;
    memcpy(sha, r->str, r->len + 1);
    cc.sha = sha;
    cc.off = client(NULL, 0);
    cc.on = client(agent, 1);
    if (cc.off == NULL || cc.on == NULL)
        goto out;

    /* warm-up: connections, script caches, page faults */
    for (int v = 0; v < V_COUNT; v++)
        if (run_variant(&cc, (enum variant)v, cycles) < 0)
            goto out;
    /*
     * Short rounds, each running every variant back to back in a rotating
     * order: the machine's load drifts (other processes, CPU frequency),
     * and a ratio taken within one round compares like with like.
     */
    for (long i = 0; i < rounds; i++) {
        for (int k = 0; k < V_COUNT; k++) {
            int v = (int)((i + k) % V_COUNT);

            rate[v][i] = run_variant(&cc, (enum variant)v, cycles);
            if (rate[v][i] < 0) {
                fprintf(stderr, "client_bench: a %s round failed\n", variant_name[v]);
                goto out;
            }
        }
        for (int v = 0; v < V_COUNT; v++)
            ratio[v][i] = rate[v][i] / rate[V_FLOOR][i];
    }

    h.holder = cc.off;
    h.waiter = cc.on;
    h.n = handoffs;
    h.lat = calloc((size_t)handoffs, sizeof(*h.lat));
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cond, NULL);
    if (h.lat == NULL || run_handoff(&h) != 0)
        goto out;
    qsort(h.lat, (size_t)handoffs, sizeof(*h.lat), cmp_i64);

    api.stats(cc.on, &st);
    api.client_free(cc.on);         /* flushes what is still buffered */
    cc.on = NULL;
    sleep_us(200000);

    printf("cycles_per_round %ld\n", cycles);
    printf("rounds %ld\n", rounds);
    for (int v = 0; v < V_COUNT; v++)
        printf("%s_cycles_per_s %.0f\n", variant_name[v], median(rate[v], (int)rounds));
    for (int v = V_OFF; v < V_COUNT; v++) {
        double q[MAX_ROUNDS];

        memcpy(q, ratio[v], sizeof(q));
        qsort(q, (size_t)rounds, sizeof(q[0]), cmp_double);
        printf("ratio_%s %.3f\n", variant_name[v] + 3, median(ratio[v], (int)rounds));
        printf("ratio_%s_p25 %.3f\n", variant_name[v] + 3, q[rounds / 4]);
        printf("ratio_%s_p75 %.3f\n", variant_name[v] + 3, q[(rounds * 3) / 4]);
    }
    {
        long p99 = (handoffs * 99 + 99) / 100 - 1;

        printf("handoffs %ld\n", handoffs);
        printf("handoff_median_us %lld\n", (long long)h.lat[handoffs / 2]);
        printf("handoff_p99_us %lld\n", (long long)h.lat[p99]);
        printf("handoff_max_us %lld\n", (long long)h.lat[handoffs - 1]);
    }
    printf("samples_sent %llu\n", (unsigned long long)st.samples_sent);
    printf("samples_dropped %llu\n", (unsigned long long)st.samples_dropped);
    printf("samples_received %llu\n", (unsigned long long)atomic_load(&udp_received));
    printf("waiter_wakeups %llu\n", (unsigned long long)st.wakeups);
    printf("waiter_rechecks %llu\n", (unsigned long long)st.rechecks);
    rc = 0;
out:
    if (r != NULL)
        freeReplyObject(r);
    if (cc.ctx != NULL)
        redisFree(cc.ctx);
    if (cc.on != NULL)
        api.client_free(cc.on);
    if (cc.off != NULL)
        api.client_free(cc.off);
    if (drain_started) {
        atomic_store(&udp_stop, true);
        pthread_join(drain, NULL);
    }
    if (fd >= 0)
        close(fd);
    free(h.lat);
    return rc;
}
