/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * release_driver.c - drives collectors/release/release.c (the guarded release that
 * lockctl and the agent run) for tests/integration/test_release*.py.
 *
 *   release_driver race HOST PORT ROUNDS
 *       The race the guard exists for: each round the lock holds token A;
 *       one thread releases it as an operator would (holder A) while a
 *       second client, at a random moment around that release, takes the
 *       lock over with a new token B (SET, i.e. A's lease ran out and B
 *       acquired).  Whatever the order, B's lock must still be there
 *       afterwards.  Prints the counts; exit 0 when B's lock survived
 *       every round and both orders happened, 1 otherwise.
 *
 *   release_driver race-naive HOST PORT ROUNDS
 *       The same race against a client-side GET, compare, DEL: the bug
 *       the guard prevents.  Exit 0 when it did delete a new holder's
 *       lock at least once (the race test can see the bug), 1 otherwise.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/redis/conn.h"
#include "collectors/release/release.h"

static char *patterns[] = { "lock:*" };

static void
target_init(struct target_conf *t, const char *host, int port, enum target_mode mode)
{
    memset(t, 0, sizeof(*t));
    t->name = "main";
    snprintf(t->host, sizeof(t->host), "%s", host);
    t->port = port;
    t->mode = mode;
    t->patterns = patterns;
    t->npatterns = 1;
    t->connect_timeout_ms = 2000;
    t->command_timeout_ms = 5000;
}

static redisContext *
connect_or_die(const struct target_conf *t)
{
    char err[256];
    redisContext *c = redisconn_open(t, err, sizeof(err));

    if (c == NULL) {
        fprintf(stderr, "release_driver: %s\n", err);
        exit(3);
    }
    return c;
}

static int
cmd_ok(redisContext *c, const char *fmt, const char *a, const char *b)
{
    redisReply *r = redisCommand(c, fmt, a, b);
    int ok = r != NULL && r->type != REDIS_REPLY_ERROR;

    if (r != NULL)
        freeReplyObject(r);
    return ok;
}

/* ---- race ---------------------------------------------------------------- */

/* The two sides start each round together on a spun-on generation
 * counter (a barrier's futex wake-up takes longer than a release), then
 * each waits its own random delay. */
struct race {
    const struct target_conf *t;
    atomic_long gen, done;
    long delay_ns;              /* this round's delay before the takeover */
    char key[64], tok_b[64];
    atomic_int stop;
};

static void
sleep_ns(long ns)
{
    struct timespec ts = { 0, ns }, t0, t1;

    if (ns <= 0)
        return;
    if (ns >= 200000) {
        nanosleep(&ts, NULL);
        return;
    }
    /* short delays: spin, a nanosleep would round them up to ~60 us */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t1);
    while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < ns);
}

static void *
taker(void *arg)
{
    struct race *rc = arg;
    redisContext *c = connect_or_die(rc->t);

    long seen = 0;

    for (;;) {
        while (atomic_load(&rc->gen) == seen && !atomic_load(&rc->stop))
            ;
        if (atomic_load(&rc->stop))
            break;
        seen = atomic_load(&rc->gen);
        sleep_ns(rc->delay_ns);
        if (!cmd_ok(c, "SET %s %s", rc->key, rc->tok_b)) {
            fprintf(stderr, "release_driver: takeover SET failed\n");
            exit(3);
        }
        atomic_store(&rc->done, seen);
    }
    redisFree(c);
    return NULL;
}

static long
mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* What the guard replaces: read, compare in the client, then DEL.  The
 * race test runs it too, to show that it catches the bug it is about. */
static void
naive_release(redisContext *c, const char *key, const char *tok, struct release_result *res)
{
    redisReply *r = redisCommand(c, "GET %s", key);

    res->outcome = RELEASE_REFUSED_HOLDER;
    if (r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, tok) == 0) {
        freeReplyObject(r);
        r = redisCommand(c, "DEL %s", key);
        res->outcome = RELEASE_RELEASED;
    }
    if (r != NULL)
        freeReplyObject(r);
}

static int
race(const char *host, int port, long rounds, bool naive)
{
    struct target_conf t;
    struct race rc;
    struct release_request rq;
    struct release_result res;
    pthread_t th;
    redisContext *op, *check;
    long released = 0, changed = 0, other = 0, violations = 0, i, rtt_ns, t0, d;
    char tok_a[64];

    target_init(&t, host, port, TARGET_STANDALONE);
    memset(&rc, 0, sizeof(rc));
    rc.t = &t;
    atomic_init(&rc.gen, 0);
    atomic_init(&rc.done, 0);
    atomic_init(&rc.stop, 0);
    op = connect_or_die(&t);
    check = connect_or_die(&t);
    snprintf(rc.key, sizeof(rc.key), "lock:race");

    memset(&rq, 0, sizeof(rq));
    rq.action = RELEASE_ACTION_RELEASE;
    rq.key = rc.key;
    rq.keylen = strlen(rc.key);
    rq.operator_name = "race-test";
    rq.reason = "race";

    /* How long one release takes here: the takeover is spread over about
     * twice that, so it lands before, during and after the script. */
    cmd_ok(check, "SET %s %s", rc.key, "warmup");
    rq.holder = "nobody";
    rq.holderlen = 6;
    rq.dry_run = true;
    release_run(op, &t, "lockwatch:audit", &rq, &res);
    t0 = mono_ns();
    for (i = 0; i < 50; i++)
        release_run(op, &t, "lockwatch:audit", &rq, &res);
    rtt_ns = (mono_ns() - t0) / 50;
    rq.dry_run = false;

    pthread_create(&th, NULL, taker, &rc);
    srand((unsigned)time(NULL));
    for (i = 0; i < rounds; i++) {
        redisReply *r;

        snprintf(tok_a, sizeof(tok_a), "tok-a-%ld", i);
        snprintf(rc.tok_b, sizeof(rc.tok_b), "tok-b-%ld", i);
        cmd_ok(check, "SET %s %s", rc.key, tok_a);
        /* the takeover lands anywhere from 1.5 releases before the
         * operator's release starts to 1.5 releases after */
        d = (long)(((double)rand() / RAND_MAX * 3.0 - 1.5) * (double)rtt_ns);
        rc.delay_ns = d > 0 ? d : 0;
        rq.holder = tok_a;
        rq.holderlen = strlen(tok_a);
        atomic_store(&rc.gen, i + 1);
        sleep_ns(d < 0 ? -d : 0);
        if (naive)
            naive_release(op, rc.key, tok_a, &res);
        else
            release_run(op, &t, "lockwatch:audit", &rq, &res);
        while (atomic_load(&rc.done) != i + 1)
            ;
        if (res.outcome == RELEASE_RELEASED)
            released++;
        else if (res.outcome == RELEASE_REFUSED_HOLDER)
            changed++;
        else {
            other++;
            fprintf(stderr, "round %ld: outcome %s %s\n", i,
                    release_outcome_str(res.outcome), res.err);
        }
        r = redisCommand(check, "GET %s", rc.key);
        if (r == NULL || r->type != REDIS_REPLY_STRING || strcmp(r->str, rc.tok_b) != 0) {
            violations++;
            fprintf(stderr, "round %ld: the new holder's lock is gone or wrong (%s) after "
                    "outcome %s\n", i, r && r->type == REDIS_REPLY_STRING ? r->str : "nil",
                    release_outcome_str(res.outcome));
        }
        if (r != NULL)
            freeReplyObject(r);
    }
    atomic_store(&rc.stop, 1);
    pthread_join(th, NULL);
    redisFree(op);
    redisFree(check);
    printf("rounds %ld released %ld holder_changed %ld other %ld violations %ld "
           "release_us %.1f\n", rounds, released, changed, other, violations,
           (double)rtt_ns / 1000.0);
    if (naive)
        return violations > 0 ? 0 : 1;
    return violations == 0 && other == 0 && released > 0 && changed > 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
    if (argc == 5 && (strcmp(argv[1], "race") == 0 || strcmp(argv[1], "race-naive") == 0))
        return race(argv[2], (int)strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                    strcmp(argv[1], "race-naive") == 0);
    fprintf(stderr, "usage: release_driver race|race-naive HOST PORT ROUNDS\n");
    return 2;
}
