/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client_torture.c - liblockwatch under random faults (`make torture`).
 *
 *     client_torture [--seconds N] [--procs P] [--threads T] [--seed S]
 *
 * Starts its own redis-server (Debian's /usr/bin/redis-server, free
 * loopback port, temp dir, no persistence), forks P worker processes of T
 * threads each, every thread contending on a few plain, reentrant and
 * fenced locks with explicit leases, short command timeouts, nested
 * reentrant holds and, now and then, a lock left to expire instead of
 * released.  Meanwhile the parent injects faults at random: a paused holder
 * process (SIGSTOP past the lease), a paused Redis (SIGSTOP of redis-server,
 * or DEBUG SLEEP), and Redis restarts.  The seed is printed first; the same
 * seed gives the same fault schedule and the same choices in each thread.
 *
 * What it counts (shared memory between the processes):
 *
 *   overlaps        a thread entered a critical section while another
 *                   holder's lease had not expired (less Redlock's clock
 *                   drift allowance, 1% + 2 ms), in the same Redis
 *                   lifetime (a restart without persistence forgets every
 *                   lock, which is not the library's doing), unless the
 *                   entering thread's process was paused during its lw_lock
 *                   (its lease may have run out between its SET and its
 *                   entry: a stale holder, counted apart as a late entry,
 *                   which only a fencing token can expose).  Must be 0.
 *   stale_unexposed an acquisition got a fencing token not greater than one
 *                   issued before: a stale holder with the larger token
 *                   would not be exposed by it.  Must be 0.
 *   orphans         a lock held in Redis by one holder id that no live lock
 *                   object has, at every look for longer than ORPHAN_US
 *                   while Redis is up and no worker paused (a lost acquire
 *                   would hold it for its whole lease); or any lock left
 *                   after every worker released everything and exited.
 *                   Must be 0.
 *   slow_waiters    a lock free in Redis for more than 1 s while a thread of
 *                   a running worker waited for it, Redis up.  Must be 0.
 *   nested_cut      an inner reentrant hold left the TTL below what the
 *                   outer hold has left.  Must be 0.
 *
 * plus figures: acquisitions, expired-lease take-overs, stale writes the
 * fence rejected, faults of each kind.  Exit 0 when every must-be-0 figure
 * is 0, 1 when one is not, 2 when the set-up failed.  The pass/fail is on
 * counts, never on timing; the 1 s and ORPHAN_US bounds are the issue's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <hiredis.h>
#include <lockwatch.h>

#include "common/clock.h"

#define REDIS_SERVER "/usr/bin/redis-server"
#define NKEYS        6          /* kinds by index % 3: plain, reentrant, fenced */
#define MAX_SLOTS    64         /* procs x threads */
#define LEASE_MS     1000
#define LONG_LEASE_MS 4000
#define HOLDER_MAX   160
#define ORPHAN_US    600000     /* an acquired lock's holder registers in
                                 * microseconds; an orphan lives a lease */
#define SLOW_US      1000000
#define LOOK_GAP_US  200000     /* looks further apart start a spell again */

struct slot {
    _Atomic int64_t deadline_us;    /* 0: not inside */
    atomic_int gen;
    atomic_int key;
    atomic_int holding;             /* holder[] is a live lock object's id */
    char holder[HOLDER_MAX];
};

struct keystat {
    _Atomic long long max_fence;
    atomic_int waiting[MAX_SLOTS / 2];  /* per worker process */
};

struct shared {
    atomic_int stop;
    atomic_int gen;                     /* Redis lifetime, bumped at restart */
    atomic_int redis_down;              /* paused or restarting */
    atomic_int pause_epoch[MAX_SLOTS / 2];  /* per worker: bumped at SIGSTOP */
    atomic_uint_fast64_t acquired, overlaps, expired_takeovers;
    atomic_uint_fast64_t stale_unexposed, stale_rejected, nested_cut;
    atomic_uint_fast64_t lock_errors, timeouts, expired_on_purpose, late_entries;
    atomic_uint_fast64_t lost_replies, orphans_undone, orphans_dropped;
    struct keystat keys[NKEYS];
    struct slot slots[MAX_SLOTS];
};

static struct shared *sh;
static int redis_port;
static int nprocs = 4, nthreads = 3;
static unsigned long long seed;
static pid_t redis_pid = -1;
static char tmpdir[64];

static void
sleep_us(int64_t us)
{
    struct timespec ts = { .tv_sec = (time_t)(us / 1000000),
                           .tv_nsec = (long)(us % 1000000) * 1000 };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* xorshift64*: a per-thread generator seeded from the run's seed. */
static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static int64_t
between(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd(s) % (uint64_t)(hi - lo + 1));
}

static void
key_name(char *out, size_t cap, int k)
{
    static const char *kind[3] = { "plain", "reentrant", "fenced" };

    snprintf(out, cap, "torture:%s:%d", kind[k % 3], k);
}

/* --- redis-server ------------------------------------------------------- */

static int
free_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static redisContext *
redis_open(int timeout_ms)
{
    struct timeval tv = { .tv_sec = timeout_ms / 1000,
                          .tv_usec = (timeout_ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", redis_port, tv);

    if (c != NULL && !c->err && redisSetTimeout(c, tv) == REDIS_OK)
        return c;
    if (c != NULL)
        redisFree(c);
    return NULL;
}

static int
redis_start(void)
{
    char port[16];
    int64_t deadline = clock_mono_us() + 10000000;

    snprintf(port, sizeof(port), "%d", redis_port);
    redis_pid = fork();
    if (redis_pid < 0)
        return -1;
    if (redis_pid == 0) {
        int null = open("/dev/null", O_RDWR);

        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        execl(REDIS_SERVER, REDIS_SERVER, "--port", port, "--bind", "127.0.0.1",
              "--dir", tmpdir, "--save", "", "--appendonly", "no", (char *)NULL);
        _exit(127);
    }
    while (clock_mono_us() < deadline) {
        redisContext *c = redis_open(500);
        redisReply *r = c != NULL ? redisCommand(c, "PING") : NULL;
        int up = r != NULL && r->type == REDIS_REPLY_STATUS;

        if (r != NULL)
            freeReplyObject(r);
        if (c != NULL)
            redisFree(c);
        if (up)
            return 0;
        sleep_us(50000);
    }
    return -1;
}

static void
redis_stop(void)
{
    if (redis_pid <= 0)
        return;
    kill(redis_pid, SIGCONT);
    kill(redis_pid, SIGKILL);
    waitpid(redis_pid, NULL, 0);
    redis_pid = -1;
}

/* --- workers ------------------------------------------------------------ */

struct worker {
    int proc, thread;
    lw_client *c;
    uint64_t rng;
};

static void
slot_enter(struct worker *w, int k, int gen, int epoch, int64_t deadline,
           const char *holder)
{
    struct slot *s = &sh->slots[w->proc * nthreads + w->thread];
    int64_t now = clock_mono_us();
    int found = 0;

    /* Another holder inside with its lease still running, in the same Redis
     * lifetime, is a broken mutual exclusion. */
    for (int i = 0; i < nprocs * nthreads && gen >= 0; i++) {
        struct slot *o = &sh->slots[i];
        int64_t d = atomic_load(&o->deadline_us);

        if (o == s || d == 0 || atomic_load(&o->key) != k)
            continue;
        if (d > now && atomic_load(&o->gen) == gen) {
            found++;
            fprintf(stderr, "torture: %s on key %d: %s entered while %s "
                    "had %lld ms of lease left\n",
                    atomic_load(&sh->pause_epoch[w->proc]) != epoch ?
                    "late entry" : "OVERLAP", k, holder, o->holder,
                    (long long)(d - now) / 1000);
        }
        else
            atomic_fetch_add(&sh->expired_takeovers, 1);
    }
    snprintf(s->holder, sizeof(s->holder), "%s", holder);
    atomic_store(&s->key, k);
    atomic_store(&s->gen, gen);
    atomic_store(&s->deadline_us, deadline);
    atomic_store(&s->holding, 1);
    /* Unless this process was paused (SIGSTOP) since the lw_lock call began:
     * then the lease may have run out between the SET and here, and this
     * thread is a stale holder, which no lease can stop and a fencing token
     * exposes (stale_rejected); counted apart. */
    if (atomic_load(&sh->pause_epoch[w->proc]) != epoch)
        atomic_fetch_add(&sh->late_entries, (uint64_t)found);
    else
        atomic_fetch_add(&sh->overlaps, (uint64_t)found);
}

static void
slot_leave(struct worker *w)
{
    struct slot *s = &sh->slots[w->proc * nthreads + w->thread];

    atomic_store(&s->deadline_us, 0);
}

static void
slot_released(struct worker *w)
{
    atomic_store(&sh->slots[w->proc * nthreads + w->thread].holding, 0);
}

/* An inner hold on a reentrant lock must not cut the outer one's TTL. */
static void
nested(struct worker *w, redisContext *probe, const char *key, int gen,
       int64_t deadline)
{
    lw_lock_t *inner = NULL;
    redisReply *r;

    if (lw_lock(w->c, key, between(&w->rng, 50, 300), 0, LW_REENTRANT, &inner,
                NULL) != LW_OK)
        return;
    lw_unlock(inner, NULL);
    if (probe == NULL || atomic_load(&sh->redis_down) || gen < 0 ||
        atomic_load(&sh->gen) != gen)
        return;
    r = redisCommand(probe, "PTTL %s", key);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
        int64_t left_ms = (deadline - clock_mono_us()) / 1000;

        /* 100 ms of slack for the round trip and a busy machine. */
        if (left_ms > 200 && r->integer < left_ms - 100 &&
            !atomic_load(&sh->redis_down)) {
            atomic_fetch_add(&sh->nested_cut, 1);
            fprintf(stderr, "torture: NESTED CUT on %s: TTL %lld ms, outer hold "
                    "has %lld ms left\n", key, r->integer, (long long)left_ms);
        }
    }
    if (r != NULL)
        freeReplyObject(r);
}

static void *
worker_thread(void *arg)
{
    struct worker *w = arg;
    redisContext *probe = redis_open(1000);
    char key[64];

    while (!atomic_load(&sh->stop)) {
        int k = (int)between(&w->rng, 0, NKEYS - 1);
        int kind = k % 3;
        int flags = kind == 1 ? LW_REENTRANT : kind == 2 ? LW_FENCING : 0;
        long long lease = between(&w->rng, 0, 9) == 0 ? LONG_LEASE_MS : LEASE_MS;
        int gen = atomic_load(&sh->gen);
        int epoch = atomic_load(&sh->pause_epoch[w->proc]);
        /* Tokens issued before this call began; a token registered later
         * by a thread paused meanwhile does not count against ours. */
        long long before = atomic_load(&sh->keys[k].max_fence);
        int64_t t0 = clock_mono_us(), deadline, owned_until;
        lw_lock_t *lk = NULL;
        lw_error err;
        lw_status st;

        key_name(key, sizeof(key), k);
        atomic_fetch_add(&sh->keys[k].waiting[w->proc], 1);
        st = lw_lock(w->c, key, lease, 3000, flags, &lk, &err);
        atomic_fetch_sub(&sh->keys[k].waiting[w->proc], 1);
        if (st == LW_TIMEOUT) {
            atomic_fetch_add(&sh->timeouts, 1);
            continue;
        }
        if (st != LW_OK) {
            atomic_fetch_add(&sh->lock_errors, 1);
            sleep_us(between(&w->rng, 1000, 20000));
            continue;
        }
        atomic_fetch_add(&sh->acquired, 1);
        if (atomic_load(&sh->gen) != gen)
            gen = -1;               /* a restart during the call: unknown */
        /* The lease ran from the SET, between t0 and now: it has surely
         * not ended before deadline, and surely ended by owned_until.
         * Redis times leases by its own clock, which it reads once per
         * command or event loop turn; like Redlock, allow for that drift
         * (1% of the lease + 2 ms; runs under ASan saw up to 4 ms). */
        deadline = t0 + lease * 1000 - (lease * 10 + 2000);
        owned_until = clock_mono_us() + lease * 1000 + 100000;
        if (kind == 2) {
            long long f = lw_lock_fence(lk);
            long long prev = atomic_load(&sh->keys[k].max_fence);

            while (f > prev &&
                   !atomic_compare_exchange_weak(&sh->keys[k].max_fence, &prev, f))
                ;
            if (f <= before) {
                atomic_fetch_add(&sh->stale_unexposed, 1);
                fprintf(stderr, "torture: STALE UNEXPOSED on key %d: token %lld "
                        "after %lld was issued\n", k, f, before);
            }
        }
        slot_enter(w, k, gen, epoch, deadline, lw_lock_token(lk));
        /* Mostly short holds; some long enough to be caught by a pause. */
        sleep_us(between(&w->rng, 0, 9) == 0 ? between(&w->rng, 50000, 300000)
                                              : between(&w->rng, 0, 20000));
        if (kind == 1 && between(&w->rng, 0, 2) == 0)
            nested(w, probe, key, gen, deadline);
        if (kind == 2 && lw_lock_fence(lk) < atomic_load(&sh->keys[k].max_fence))
            atomic_fetch_add(&sh->stale_rejected, 1);   /* the fence caught it */
        slot_leave(w);
        if (between(&w->rng, 0, 29) == 0) {
            /* Leave it to expire instead of releasing it. */
            sleep_us(lease * 1000 + 100000);
            atomic_fetch_add(&sh->expired_on_purpose, 1);
        }
        if (lw_unlock(lk, NULL) == LW_ERR && clock_mono_us() < owned_until)
            /* Redis did not answer the release: the lock is still ours
             * until its lease ends, not an orphan. */
            sleep_us(owned_until - clock_mono_us());
        slot_released(w);
        sleep_us(between(&w->rng, 0, 5000));
    }
    if (probe != NULL)
        redisFree(probe);
    return NULL;
}

static int
worker_main(int proc)
{
    struct worker ws[MAX_SLOTS];
    pthread_t th[MAX_SLOTS];
    uint64_t r = seed * 1000003 + (uint64_t)proc + 1;
    lw_options o;
    lw_error err;
    lw_client *c;
    lw_stats s;

    lw_options_init(&o);
    o.port = redis_port;
    o.report = 0;
    o.command_timeout_ms = (int)between(&r, 150, 400);
    o.connect_timeout_ms = 500;
    o.default_lease_ms = LEASE_MS;
    c = lw_connect(&o, &err);
    if (c == NULL) {
        fprintf(stderr, "torture: worker %d: %s\n", proc, err.str);
        return 2;
    }
    for (int t = 0; t < nthreads; t++) {
        ws[t] = (struct worker){ .proc = proc, .thread = t, .c = c,
                                 .rng = seed * 7919 + (uint64_t)(proc * 64 + t) + 1 };
        pthread_create(&th[t], NULL, worker_thread, &ws[t]);
    }
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    lw_client_stats(c, &s);
    atomic_fetch_add(&sh->lost_replies, s.lost_replies);
    atomic_fetch_add(&sh->orphans_undone, s.orphans_undone);
    atomic_fetch_add(&sh->orphans_dropped, s.orphans_dropped);
    lw_client_free(c);
    return 0;
}

/* --- the parent: faults and watching ----------------------------------- */

struct watch {
    int64_t free_since[NKEYS];          /* 0: held (or unknown) */
    /* A holder id no slot has, seen on the key at every look since
     * foreign_since (0: none; -1: counted already) */
    int64_t foreign_since[NKEYS];
    char foreign_id[NKEYS][HOLDER_MAX];
    int64_t last_look;                  /* when every key was last looked at */
    int64_t quiet_since;                /* Redis up and no worker paused */
    uint64_t looks, sightings, gaps;
    uint64_t slow_waiters, orphans;
};

static bool
holder_live(const char *id, size_t len, int k)
{
    for (int i = 0; i < nprocs * nthreads; i++) {
        struct slot *s = &sh->slots[i];

        if (atomic_load(&s->holding) && atomic_load(&s->key) == k &&
            strlen(s->holder) == len && memcmp(s->holder, id, len) == 0)
            return true;
    }
    return false;
}

/* The first holder id in r (a GET or HKEYS reply) that no slot has, into
 * out; false when every holder is live or the key is free. */
static bool
foreign_holder(const redisReply *r, int k, char *out, size_t cap)
{
    if (r->type == REDIS_REPLY_STRING && !holder_live(r->str, r->len, k)) {
        snprintf(out, cap, "%.*s", (int)r->len, r->str);
        return true;
    }
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            !holder_live(r->element[i]->str, r->element[i]->len, k)) {
            snprintf(out, cap, "%.*s", (int)r->element[i]->len, r->element[i]->str);
            return true;
        }
    return false;
}

/*
 * An orphan is one holder id, the same at every look, that no slot has for
 * more than ORPHAN_US of looks no more than LOOK_GAP_US apart.  A look
 * often finds a holder between its SET and its registration in a slot
 * (microseconds, but right after Redis resumes many replies wait to be
 * read); only an id that stays unregistered is an orphan.  While the
 * parent does not look (it pauses Redis, sleeps in DEBUG SLEEP, restarts
 * Redis), holders come and go unseen, so a spell begins again after such a
 * gap: the id a look finds after it is timed from then.
 */
static void
watch_foreign(struct watch *wt, int k, int64_t now, bool foreign, const char *id)
{
    if (!foreign) {
        wt->foreign_since[k] = 0;
        return;
    }
    if (wt->foreign_since[k] == 0 || strcmp(wt->foreign_id[k], id) != 0) {
        wt->sightings++;
        wt->foreign_since[k] = now;
        snprintf(wt->foreign_id[k], sizeof(wt->foreign_id[k]), "%s", id);
        return;
    }
    if (wt->foreign_since[k] > 0 && now - wt->foreign_since[k] > ORPHAN_US) {
        wt->orphans++;
        fprintf(stderr, "torture: ORPHAN on key %d: held for more than %d ms by "
                "%s, which no live lock object has\n", k, ORPHAN_US / 1000, id);
        wt->foreign_since[k] = -1;      /* once per holder */
    }
}

/* One look at every key, with a connection that may be NULL (reopened). */
static void
watch_once(redisContext **pc, struct watch *wt, const bool *paused)
{
    int64_t now = clock_mono_us();
    char key[64], id[HOLDER_MAX];

    bool any_paused = false, settled = now - wt->quiet_since >= SLOW_US;

    for (int p = 0; p < nprocs; p++)
        any_paused |= paused[p];
    if (*pc == NULL)
        *pc = redis_open(300);
    if (!settled)
        memset(wt->free_since, 0, sizeof(wt->free_since));
    if (wt->last_look != 0 && now - wt->last_look > LOOK_GAP_US) {
        wt->gaps++;
        memset(wt->foreign_since, 0, sizeof(wt->foreign_since));
    }
    if (any_paused || *pc == NULL)
        memset(wt->foreign_since, 0, sizeof(wt->foreign_since));
    if (*pc == NULL)
        return;
    for (int k = 0; k < NKEYS; k++) {
        redisReply *r;
        bool waiting = false, foreign, held;

        key_name(key, sizeof(key), k);
        r = redisCommand(*pc, k % 3 == 1 ? "HKEYS %s" : "GET %s", key);
        if (r == NULL) {
            redisFree(*pc);
            *pc = NULL;
            return;
        }
        held = (r->type == REDIS_REPLY_ARRAY && r->elements > 0) ||
               r->type == REDIS_REPLY_STRING;
        foreign = foreign_holder(r, k, id, sizeof(id));
        freeReplyObject(r);
        for (int p = 0; p < nprocs; p++)
            if (!paused[p] && atomic_load(&sh->keys[k].waiting[p]) > 0)
                waiting = true;
        if (held || !waiting || !settled)
            wt->free_since[k] = 0;
        else if (wt->free_since[k] == 0)
            wt->free_since[k] = now;
        else if (wt->free_since[k] > 0 && now - wt->free_since[k] > SLOW_US) {
            wt->slow_waiters++;
            wt->free_since[k] = -1;     /* once per free spell */
            fprintf(stderr, "torture: SLOW WAITER on key %d: free for more than "
                    "1 s while a running worker waits\n", k);
        }
        watch_foreign(wt, k, now, foreign && !any_paused, id);
    }
    wt->looks++;
    wt->last_look = clock_mono_us();
}

/* A worker process with a thread inside a critical section now, if one
 * turns up within 200 ms; else any. */
static int
pick_holder(uint64_t *rng)
{
    int64_t until = clock_mono_us() + 200000;

    do {
        for (int i = 0; i < nprocs * nthreads; i++)
            if (atomic_load(&sh->slots[i].deadline_us) != 0)
                return i / nthreads;
        sleep_us(1000);
    } while (clock_mono_us() < until);
    return (int)between(rng, 0, nprocs - 1);
}

/* Sleep us while watching every 20 ms. */
static void
watch_for(redisContext **pc, struct watch *wt, const bool *paused, int64_t us)
{
    int64_t end = clock_mono_us() + us;

    while (clock_mono_us() < end) {
        watch_once(pc, wt, paused);
        sleep_us(20000);
    }
}

/* A decimal argument in lo..hi, or -1. */
static long long
arg_num(const char *s, long long lo, long long hi)
{
    char *end = NULL;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi)
        return -1;
    return v;
}

static void
usage(void)
{
    fprintf(stderr, "usage: client_torture [--seconds N] [--procs P] "
            "[--threads T] [--seed S]\n");
    exit(2);
}

int
main(int argc, char **argv)
{
    int seconds = 60;
    pid_t workers[MAX_SLOTS / 2];
    bool paused[MAX_SLOTS / 2] = { false };
    uint64_t faults[4] = { 0 }, left = 0, rng;
    redisContext *wc = NULL;
    struct watch wt = { .quiet_since = 0 };
    int64_t end;
    int rc = 0;

    seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 16);
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--seconds") == 0)
            seconds = (int)arg_num(argv[++i], 1, 86400);
        else if (strcmp(argv[i], "--procs") == 0)
            nprocs = (int)arg_num(argv[++i], 1, MAX_SLOTS / 2);
        else if (strcmp(argv[i], "--threads") == 0)
            nthreads = (int)arg_num(argv[++i], 1, MAX_SLOTS);
        else if (strcmp(argv[i], "--seed") == 0 &&
                 arg_num(argv[i + 1], 0, INT64_MAX) >= 0)
            seed = (unsigned long long)arg_num(argv[++i], 0, INT64_MAX);
        else
            usage();
    }
    if (seconds < 1 || nprocs < 1 || nthreads < 1 || nprocs * nthreads > MAX_SLOTS ||
        nprocs > MAX_SLOTS / 2)
        usage();
    printf("torture: seed %llu (rerun with --seed %llu), %d s, %d processes x %d "
           "threads, %d keys\n", seed, seed, seconds, nprocs, nthreads, NKEYS);
    fflush(stdout);
    rng = seed | 1;

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/lw-torture-XXXXXX");
    redis_port = free_port();
    if (sh == MAP_FAILED || mkdtemp(tmpdir) == NULL || redis_port < 0 ||
        redis_start() != 0) {
        fprintf(stderr, "torture: cannot start %s\n", REDIS_SERVER);
        redis_stop();
        return 2;
    }
    memset(sh, 0, sizeof(*sh));
    for (int p = 0; p < nprocs; p++) {
        workers[p] = fork();
        if (workers[p] == 0)
            _exit(worker_main(p));
    }
    wt.quiet_since = clock_mono_us();
    end = clock_mono_us() + (int64_t)seconds * 1000000;
    while (clock_mono_us() < end) {
        int kind = (int)between(&rng, 0, 3);

        watch_for(&wc, &wt, paused, between(&rng, 300000, 1200000));
        if (kind == 0) {                        /* a holder paused past its lease */
            int p = pick_holder(&rng);

            paused[p] = true;
            atomic_fetch_add(&sh->pause_epoch[p], 1);
            kill(workers[p], SIGSTOP);
            watch_for(&wc, &wt, paused, LEASE_MS * 1000 + between(&rng, 200000, 800000));
            kill(workers[p], SIGCONT);
            paused[p] = false;
        } else if (kind == 1) {                 /* Redis paused */
            atomic_store(&sh->redis_down, 1);
            kill(redis_pid, SIGSTOP);
            sleep_us(between(&rng, 200000, 1500000));
            kill(redis_pid, SIGCONT);
            atomic_store(&sh->redis_down, 0);
        } else if (kind == 2) {                 /* DEBUG SLEEP */
            redisContext *d = redis_open(5000);
            redisReply *r;

            atomic_store(&sh->redis_down, 1);
            r = d != NULL ? redisCommand(d, "DEBUG SLEEP %.3f",
                                         (double)between(&rng, 200, 1000) / 1000) : NULL;
            if (r != NULL)
                freeReplyObject(r);
            if (d != NULL)
                redisFree(d);
            atomic_store(&sh->redis_down, 0);
        } else {                                /* restart, no persistence */
            atomic_store(&sh->redis_down, 1);
            atomic_fetch_add(&sh->gen, 1);
            redis_stop();
            if (wc != NULL)
                redisFree(wc);
            wc = NULL;
            if (redis_start() != 0) {
                fprintf(stderr, "torture: redis-server did not come back\n");
                rc = 2;
                break;
            }
            /* Again once the new server is up: a call that began between
             * the first bump and the kill may have taken the old server. */
            atomic_fetch_add(&sh->gen, 1);
            atomic_store(&sh->redis_down, 0);
        }
        faults[kind]++;
        wt.quiet_since = clock_mono_us();
    }

    /* Quiet for a while (still watching), then stop and let every worker
     * release what it holds. */
    watch_for(&wc, &wt, paused, 2000000);
    atomic_store(&sh->stop, 1);
    for (int p = 0; p < nprocs; p++) {
        int status = 0;

        kill(workers[p], SIGCONT);
        if (waitpid(workers[p], &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            fprintf(stderr, "torture: worker %d failed (status %d)\n", p, status);
            rc = 2;
        }
    }
    if (wc == NULL)
        wc = redis_open(1000);
    for (int k = 0; k < NKEYS && wc != NULL; k++) {
        char key[64];
        redisReply *r;

        key_name(key, sizeof(key), k);
        r = redisCommand(wc, "EXISTS %s", key);
        if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
            left += (uint64_t)r->integer;
            fprintf(stderr, "torture: ORPHAN: %s still exists after every worker "
                    "released everything\n", key);
        }
        if (r != NULL)
            freeReplyObject(r);
    }
    if (wc != NULL)
        redisFree(wc);
    redis_stop();
    rmdir(tmpdir);

    printf("torture: faults: %llu paused holders, %llu Redis pauses (SIGSTOP), "
           "%llu DEBUG SLEEP, %llu restarts\n",
           (unsigned long long)faults[0], (unsigned long long)faults[1],
           (unsigned long long)faults[2], (unsigned long long)faults[3]);
    printf("torture: %llu acquisitions, %llu timeouts, %llu errors, %llu take-overs "
           "of expired leases, %llu locks left to expire, %llu stale writes the "
           "fence rejected\n",
           (unsigned long long)sh->acquired, (unsigned long long)sh->timeouts,
           (unsigned long long)sh->lock_errors,
           (unsigned long long)sh->expired_takeovers,
           (unsigned long long)sh->expired_on_purpose,
           (unsigned long long)sh->stale_rejected);
    printf("torture: %llu lost replies, %llu undone, %llu given up; %llu entries "
           "while another lease ran, by a thread paused during its lw_lock (stale "
           "holders)\n",
           (unsigned long long)sh->lost_replies, (unsigned long long)sh->orphans_undone,
           (unsigned long long)sh->orphans_dropped,
           (unsigned long long)sh->late_entries);
    printf("torture: watcher: %llu looks, %llu sightings of an unregistered "
           "holder, %llu gaps of more than %d ms between looks\n",
           (unsigned long long)wt.looks, (unsigned long long)wt.sightings,
           (unsigned long long)wt.gaps, LOOK_GAP_US / 1000);
    printf("torture: overlaps %llu, stale_unexposed %llu, orphans %llu, "
           "slow_waiters %llu, nested_cut %llu  (all must be 0)\n",
           (unsigned long long)sh->overlaps, (unsigned long long)sh->stale_unexposed,
           (unsigned long long)(wt.orphans + left), (unsigned long long)wt.slow_waiters,
           (unsigned long long)sh->nested_cut);
    if (rc == 0 && (sh->overlaps || sh->stale_unexposed || wt.orphans || left ||
                    wt.slow_waiters || sh->nested_cut))
        rc = 1;
    printf("torture: %s (seed %llu)\n", rc == 0 ? "PASS" : rc == 1 ? "FAIL" : "SET-UP FAILED",
           seed);
    return rc;
}
