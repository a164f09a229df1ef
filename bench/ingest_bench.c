/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ingest_bench.c - a load generator for the agent's sample ingest: the
 * sending half of `bench/ingest`, which starts the agent, runs this at
 * rising rates and compares what was sent with what the agent counted.
 *
 *   ingest_bench [-h HOST] -p PORT [-n LINES] [-r LINES_PER_S] [-t THREADS]
 *                [-s DATAGRAM_BYTES] [-c CLASSES]
 *
 * Each thread has its own UDP socket and sends its share of LINES sample
 * lines (waits of every outcome and holds, values spread over 100 us ..
 * 10 s, keys over CLASSES lock classes) packed into datagrams of at most
 * DATAGRAM_BYTES (default 1400, under the SPEC's 1432), paced to its share
 * of the rate (0 = as fast as the sockets take them).  Pacing is by
 * absolute deadlines, so a late wake-up is caught up rather than lost.
 * Sockets are blocking on purpose: a full socket buffer slows the sender
 * instead of losing lines before the agent ever sees them, so every line
 * that is not counted was lost on the agent's side.
 *
 * Prints one line:  lines=N datagrams=N seconds=S rate=R
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH       16          /* datagrams per sendmmsg() */
#define MAX_DGRAM   8192

struct opts {
    const char *host;
    const char *port;
    uint64_t lines;
    double rate;
    int threads;
    size_t dgram;
    int classes;
};

struct worker {
    const struct opts *o;
    int id;
    uint64_t lines;             /* to send */
    uint64_t sent_lines, sent_dgrams;
    int err;
    pthread_t thread;
    struct addrinfo *ai;
};

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
sleep_until(double t)
{
    struct timespec ts;

    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* One sample line into p (room >= 96); its length. */
static size_t
make_line(char *p, size_t room, uint64_t *seed, int id, uint64_t n, int classes)
{
    static const char *const outcome[] = { "ok", "ok", "ok", "ok", "timeout", "error" };
    uint64_t r = rnd(seed);
    /* 100 us .. ~10 s, roughly log-uniform: a power of two times 1..2 */
    unsigned e = 7 + (unsigned)(r % 17);
    uint64_t us = ((uint64_t)1 << e) + (rnd(seed) % ((uint64_t)1 << e));
    int c = (int)((r >> 8) % (uint64_t)classes);
    int len;

    if ((r >> 20) % 4 == 0)
        len = snprintf(p, room, "lw1 hold lock:bench%d:%d:%llu %llu\n", c, id,
                       (unsigned long long)n, (unsigned long long)us);
    else
        len = snprintf(p, room, "lw1 wait lock:bench%d:%d:%llu %llu %s\n", c, id,
                       (unsigned long long)n, (unsigned long long)us,
                       outcome[(r >> 24) % 6]);
    return len > 0 && (size_t)len < room ? (size_t)len : 0;
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    const struct opts *o = w->o;
    static _Thread_local char buf[BATCH][MAX_DGRAM];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    uint64_t seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)(w->id + 1) * 0x100000001b3ULL;
    uint64_t lines_in[BATCH];
    double start, per_line = o->rate > 0 ? (double)o->threads / o->rate : 0;
    char line[128];
    int fd, i, nb;

    fd = socket(w->ai->ai_family, SOCK_DGRAM, 0);
    if (fd == -1) {
        w->err = errno;
        return NULL;
    }
    start = now_s();
    while (w->sent_lines < w->lines) {
        /* fill up to BATCH datagrams */
        for (nb = 0; nb < BATCH && w->sent_lines < w->lines; nb++) {
            size_t len = 0, l;
            uint64_t k = 0, queued = 0;

            for (i = 0; i < nb; i++)
                queued += lines_in[i];
            while (w->sent_lines + queued + k < w->lines) {
                l = make_line(line, sizeof(line), &seed, w->id, w->sent_lines + queued + k,
                              o->classes);
                if (l == 0 || len + l > o->dgram)
                    break;
                memcpy(buf[nb] + len, line, l);
                len += l;
                k++;
            }
            /* the line that did not fit is simply made again next time:
             * values are random anyway */
            iov[nb].iov_base = buf[nb];
            iov[nb].iov_len = len;
            memset(&msgs[nb], 0, sizeof(msgs[nb]));
            msgs[nb].msg_hdr.msg_iov = &iov[nb];
            msgs[nb].msg_hdr.msg_iovlen = 1;
            msgs[nb].msg_hdr.msg_name = w->ai->ai_addr;
            msgs[nb].msg_hdr.msg_namelen = w->ai->ai_addrlen;
            lines_in[nb] = k;
            if (k == 0)
                break;
        }
        if (nb == 0)
            break;
        if (per_line > 0)
            sleep_until(start + (double)w->sent_lines * per_line);
        for (i = 0; i < nb;) {
            int n = sendmmsg(fd, msgs + i, (unsigned)(nb - i), 0);

            if (n == -1) {
                if (errno == EINTR)
                    continue;
                if (errno == ENOBUFS || errno == EAGAIN)
                    continue;       /* blocking socket: back-pressure, retry */
                w->err = errno;
                goto out;
            }
            for (int j = i; j < i + n; j++) {
                w->sent_lines += lines_in[j];
                w->sent_dgrams++;
            }
            i += n;
        }
    }
out:
    close(fd);
    return NULL;
}

static void
usage(void)
{
    fprintf(stderr, "usage: ingest_bench [-h HOST] -p PORT [-n LINES] [-r LINES_PER_S] "
                    "[-t THREADS] [-s DATAGRAM_BYTES] [-c CLASSES]\n");
}

static int
parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int
main(int argc, char **argv)
{
    struct opts o = { "127.0.0.1", NULL, 1000000, 0, 2, 1400, 20 };
    struct addrinfo hints, *res = NULL;
    struct worker *w = NULL;
    uint64_t v, lines = 0, dgrams = 0;
    double t0, t;
    int ch, i, rc = 1;

    while ((ch = getopt(argc, argv, "h:p:n:r:t:s:c:")) != -1) {
        if (ch == 'h') {
            o.host = optarg;
            continue;
        }
        if (ch == 'p') {
            o.port = optarg;
            continue;
        }
        if (ch == '?' || parse_u64(optarg, &v) == -1) {
            usage();
            return 2;
        }
        switch (ch) {
        case 'n': o.lines = v; break;
        case 'r': o.rate = (double)v; break;
        case 't': o.threads = (int)v; break;
        case 's': o.dgram = (size_t)v; break;
        case 'c': o.classes = (int)v; break;
        }
    }
    if (o.port == NULL || o.threads < 1 || o.threads > 64 || o.dgram < 100 ||
        o.dgram > MAX_DGRAM || o.classes < 1) {
        usage();
        return 2;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(o.host, o.port, &hints, &res) != 0) {
        fprintf(stderr, "ingest_bench: cannot resolve %s:%s\n", o.host, o.port);
        return 2;
    }
    w = calloc((size_t)o.threads, sizeof(*w));
    if (w == NULL)
        goto out;
    t0 = now_s();
    for (i = 0; i < o.threads; i++) {
        w[i].o = &o;
        w[i].id = i;
        w[i].ai = res;
        w[i].lines = o.lines / (uint64_t)o.threads + ((uint64_t)i < o.lines % (uint64_t)o.threads);
        if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0) {
            fprintf(stderr, "ingest_bench: cannot start a thread\n");
            o.threads = i;
            goto join;
        }
    }
    rc = 0;
join:
    for (i = 0; i < o.threads; i++) {
        pthread_join(w[i].thread, NULL);
        if (w[i].err != 0) {
            fprintf(stderr, "ingest_bench: sender %d: %s\n", i, strerror(w[i].err));
            rc = 1;
        }
        lines += w[i].sent_lines;
        dgrams += w[i].sent_dgrams;
    }
    t = now_s() - t0;
    printf("lines=%llu datagrams=%llu seconds=%.3f rate=%.0f\n", (unsigned long long)lines,
           (unsigned long long)dgrams, t, t > 0 ? (double)lines / t : 0.0);
out:
    free(w);
    freeaddrinfo(res);
    return rc;
}
