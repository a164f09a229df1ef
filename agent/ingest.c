/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ingest.c - read sample datagrams with recvmmsg() and count them.
 *
 * The thread sleeps in poll() on the socket and a wake-up pipe (the pipe
 * is how ingest_stop() interrupts it without signals or timeouts).  When
 * the socket is readable it drains it in batches of INGEST_BATCH datagrams
 * per system call, parses each datagram in place (no copy, no allocation
 * on this path) and hands its samples to waitstats_record(), one datagram
 * per lock hold, so a scrape never waits long behind a burst.
 *
 * UDP drops silently when the receive queue is full, so the socket gets a
 * large buffer (4 MiB asked; Linux caps SO_RCVBUF at net.core.rmem_max
 * unless we may use SO_RCVBUFFORCE) to ride out bursts and scrapes, and
 * SO_RXQ_OVFL, which makes the kernel tell us on each datagram how many it
 * has dropped so far: that count is exported, so loss is visible instead
 * of looking like a quiet service.  A count that rides on datagrams stays
 * stale after the last one, though, and the datagrams of a burst that
 * filled the queue were queued before the drops they would report: so
 * every DROPS_TICK_MS, and after each drain, the thread also reads the
 * kernel's counter itself (SO_MEMINFO's SK_MEMINFO_DROPS, the same
 * sk_drops SO_RXQ_OVFL reports), and a burst's loss shows within that
 * tick even if no datagram follows it.
 *
 * After a drain the thread waits up to [samples] batch_wait before it
 * polls the socket again, so that what arrives meanwhile is read in one
 * wake-up (each datagram is still timed when it came: the kernel stamps it,
 * SO_TIMESTAMPNS): a reporter sends a datagram every few dozen lock calls, and
 * when lockwatchd shares a CPU with the applications it serves, a wake-up
 * per datagram costs them far more than the reading does.  The wait
 * adapts to the traffic: when the queue held more than a quarter of the
 * receive buffer at a wake-up, the next wait is halved (down to none);
 * below a sixteenth it doubles back up to batch_wait.  Without SO_MEMINFO
 * to see the queue, it does not wait.
 *
 * With a [samples] key, each datagram's mac line is checked
 * (sampleauth.c) before any of its lines is parsed, and a datagram that
 * fails is counted as rejected and nothing else (but a log line: at once,
 * then at most every REJECTS_SAY_MS).  So is a copy of a signed datagram
 * with a line that names an owner, taken in the last REPLAY_PERIOD_S or
 * more (replay.h).  The key is copied from
 * waitstats once per batch (it changes only on reload).  Each datagram's
 * sender address is its source for the per-source class budget.
 */
#include "agent/ingest.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/sock_diag.h>

#include "collectors/waits/replay.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/lw1.h"

/* Room for a datagram's two control messages: SO_RXQ_OVFL's drop count
 * and SO_TIMESTAMPNS's arrival time. */
#define CTRL_SPACE (CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(struct timespec)))

/* How often the idle thread reads the kernel's drop counter (poll's
 * timeout): four times a second, so a loss shows within a second. */
#define DROPS_TICK_MS 250

/* Rejected datagrams are said in the log at once, then at most once per
 * this, in one line for all since the last: a misconfigured reporter (no
 * LOCKWATCH_KEY_FILE, another key) or a forger shows where the operator
 * looks, and a flood of them is one line a minute. */
#define REJECTS_SAY_MS 60000
#define INVALID_TEXT_MAX 120    /* bytes of a malformed line the log shows */

struct ingest {
    int fd;
    int wake[2];                /* [0] polled by the thread, [1] written to stop */
    pthread_t thread;
    bool running;
    struct waitstats *ws;

    struct mmsghdr msgs[INGEST_BATCH];
    struct iovec iov[INGEST_BATCH];
    char (*buf)[SAMPLES_DATAGRAM_MAX];
    union {                     /* aligned for struct cmsghdr */
        struct cmsghdr align;
        char bytes[CTRL_SPACE];
    } ctrl[INGEST_BATCH];
    struct sample *samples;     /* SAMPLES_MAX_PER(SAMPLES_DATAGRAM_MAX) */
    struct sockaddr_storage from[INGEST_BATCH];

    unsigned char key[LW1_KEY_MAX];     /* waitstats' copy, wiped at stop */
    size_t keylen;              /* 0: no key, datagrams are not checked */
    uint64_t keygen;

    _Atomic int64_t wait_max_ms;        /* [samples] batch_wait */
    int64_t wait_ms;            /* the next wait after a drain, 0..wait_max_ms */

    uint32_t drops_seen;        /* the kernel's counter, last value */
    uint64_t drops;             /* its running total (it wraps at 2^32) */
    uint64_t drops_published;   /* what waitstats has */
    bool meminfo_off;           /* SO_MEMINFO refused: datagrams only */
    bool warned_errno;
    int64_t last_at_ms;         /* the last datagram's arrival (arrived_ms()) */

    struct replay *replay;      /* signed datagrams seen lately (replay.h);
                                 * NULL: out of memory, none checked */
    uint64_t replay_unchecked;  /* taken unchecked: the cache full */
    uint64_t rejects[SAMPLEAUTH_REJECTS];       /* since the last line said */
    struct sockaddr_storage reject_from[SAMPLEAUTH_REJECTS];   /* the last
                                         * sender of each reason: a forger's
                                         * unsigned flood hides no reporter
                                         * with another key */
    int64_t rejects_said_ms;    /* mono ms of that line; 0 never */

    uint64_t invalid;           /* malformed lines since the last line said */
    const char *invalid_why;    /* the first one's reason; NULL: none yet */
    char invalid_text[4 * INVALID_TEXT_MAX + 1];   /* its start, shown */
    bool invalid_cut;           /* ... and it is longer */
    struct sockaddr_storage invalid_from;
    int64_t invalid_said_ms;    /* mono ms of that line; 0 never */
};

/* A reading v of the kernel's drop counter.  Datagrams carry the value of
 * when they were queued, older than SO_MEMINFO's and than other datagrams
 * of their batch: only a forward step (mod 2^32) is news. */
static void
add_drops(struct ingest *in, uint32_t v)
{
    if ((uint32_t)(v - in->drops_seen) < UINT32_C(0x80000000)) {
        in->drops += (uint32_t)(v - in->drops_seen);
        in->drops_seen = v;
    }
}

/* The kernel's drop count, from a datagram's SO_RXQ_OVFL message. */
static void
note_drops(struct ingest *in, struct msghdr *h)
{
    struct cmsghdr *c;
    uint32_t v;

    for (c = CMSG_FIRSTHDR(h); c != NULL; c = CMSG_NXTHDR(h, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_RXQ_OVFL)
            continue;
        memcpy(&v, CMSG_DATA(c), sizeof(v));
        add_drops(in, v);
    }
}

/*
 * When a datagram arrived, on the monotonic clock (what waitstats times
 * by): the kernel's SO_TIMESTAMPNS stamp (CLOCK_REALTIME) taken back from
 * now_real_ms onto now_mono_ms, so that a datagram read after a batch wait
 * is timed as it came; now_mono_ms when it has no stamp, or one that a
 * clock step made nonsense.  Each drain reads the two clocks anew, each
 * truncated to the ms, so a datagram may come out a millisecond before
 * the one read ahead of it: drain() keeps the times in the order the
 * datagrams came (a hold line and the wait line after it must not trade
 * places: graph.h "Lock orders").
 */
static int64_t
arrived_ms(struct msghdr *h, int64_t now_mono_ms, int64_t now_real_ms)
{
    struct cmsghdr *c;
    struct timespec ts;
    int64_t age;

    for (c = CMSG_FIRSTHDR(h); c != NULL; c = CMSG_NXTHDR(h, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS)
            continue;
        memcpy(&ts, CMSG_DATA(c), sizeof(ts));
        age = now_real_ms - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        return age >= 0 && age <= 60000 ? now_mono_ms - age : now_mono_ms;
    }
    return now_mono_ms;
}

/* The kernel's drop count now, whether or not a datagram came. */
static void
poll_drops(struct ingest *in)
{
    uint32_t mem[SK_MEMINFO_VARS];
    socklen_t len = sizeof(mem);

    if (in->meminfo_off)
        return;
    if (getsockopt(in->fd, SOL_SOCKET, SO_MEMINFO, mem, &len) == -1 ||
        len <= SK_MEMINFO_DROPS * sizeof(mem[0])) {
        log_warn("samples: SO_MEMINFO (drops show only when a later datagram comes)");
        in->meminfo_off = true;
        return;
    }
    add_drops(in, mem[SK_MEMINFO_DROPS]);
}

/* The next wait after a drain, from how full the queue was when the
 * thread woke (SO_MEMINFO, read before the drain; it also carries the
 * drop counter). */
static void
adapt_wait(struct ingest *in)
{
    uint32_t mem[SK_MEMINFO_VARS];
    socklen_t len = sizeof(mem);
    int64_t max = atomic_load(&in->wait_max_ms);
    uint64_t queued, rcvbuf;

    if (in->meminfo_off || max <= 0 ||
        getsockopt(in->fd, SOL_SOCKET, SO_MEMINFO, mem, &len) == -1 ||
        len <= SK_MEMINFO_DROPS * sizeof(mem[0])) {
        in->wait_ms = 0;
        return;
    }
    add_drops(in, mem[SK_MEMINFO_DROPS]);
    queued = mem[SK_MEMINFO_RMEM_ALLOC];
    rcvbuf = mem[SK_MEMINFO_RCVBUF];
    if (queued * 4 > rcvbuf)
        in->wait_ms /= 2;
    else if (queued * 16 < rcvbuf)
        in->wait_ms = in->wait_ms == 0 ? 1 : in->wait_ms * 2;
    if (in->wait_ms > max)
        in->wait_ms = max;
}

/* Hand a new drop total to waitstats; warn at the first loss. */
static void
publish_drops(struct ingest *in)
{
    if (in->drops == in->drops_published)
        return;
    waitstats_set_kernel_drops(in->ws, in->drops);
    if (in->drops_published == 0)
        log_warnx("samples: the kernel dropped datagrams (receive buffer full); "
                  "see lockwatch_samples_dropped_datagrams_total");
    in->drops_published = in->drops;
}

static void
prepare(struct ingest *in)
{
    size_t i;

    for (i = 0; i < INGEST_BATCH; i++) {
        struct msghdr *h = &in->msgs[i].msg_hdr;

        in->iov[i].iov_base = in->buf[i];
        in->iov[i].iov_len = SAMPLES_DATAGRAM_MAX;
        memset(h, 0, sizeof(*h));
        h->msg_iov = &in->iov[i];
        h->msg_iovlen = 1;
        h->msg_name = &in->from[i];
        h->msg_namelen = sizeof(in->from[i]);
        h->msg_control = in->ctrl[i].bytes;
        h->msg_controllen = sizeof(in->ctrl[i].bytes);
        in->msgs[i].msg_len = 0;
    }
}

/* The sender of a datagram, without its port. */
static void
source_of(const struct msghdr *h, struct sample_source *src)
{
    const struct sockaddr *sa = h->msg_name;

    memset(src, 0, sizeof(*src));
    if (h->msg_namelen >= sizeof(struct sockaddr_in) && sa->sa_family == AF_INET) {
        src->family = AF_INET;
        memcpy(src->addr, &((const struct sockaddr_in *)h->msg_name)->sin_addr, 4);
    } else if (h->msg_namelen >= sizeof(struct sockaddr_in6) && sa->sa_family == AF_INET6) {
        src->family = AF_INET6;
        memcpy(src->addr, &((const struct sockaddr_in6 *)h->msg_name)->sin6_addr, 16);
    }
}

/* invalid malformed lines in the datagram just parsed (at buf): counted
 * for the next line said; the first since that line is kept to show, its
 * start with each byte outside printable ASCII as \xHH (the log shows
 * every byte, and runs none). */
static void
note_invalid(struct ingest *in, const struct msghdr *h, const char *buf, uint64_t invalid)
{
    size_t off, len;
    const char *why = samples_first_invalid(&off, &len);

    in->invalid += invalid;
    if (in->invalid_why != NULL || why == NULL)
        return;
    in->invalid_why = why;
    in->invalid_text[0] = '\0';
    for (size_t i = 0, o = 0; i < len && i < INVALID_TEXT_MAX; i++) {
        unsigned char c = (unsigned char)buf[off + i];

        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
            in->invalid_text[o++] = (char)c;
        else
            o += (size_t)snprintf(in->invalid_text + o, 5, "\\x%02x", c);
        in->invalid_text[o] = '\0';
    }
    in->invalid_cut = len > INVALID_TEXT_MAX;
    if (h->msg_namelen <= sizeof(in->invalid_from))
        memcpy(&in->invalid_from, h->msg_name, h->msg_namelen);
}

/* A signed datagram accepted lately, again?  mono_s: the monotonic clock's
 * seconds.  A full cache takes it unchecked, counted. */
static enum sampleauth_verdict
replayed(struct ingest *in, const char *buf, int64_t mono_s)
{
    unsigned char mac[LW1_MAC_BYTES];

    if (in->keylen == 0 || in->replay == NULL)
        return SAMPLEAUTH_OK;
    sampleauth_mac_of(buf, mac);
    switch (replay_note(in->replay, mac, mono_s)) {
    case REPLAY_SEEN:
        return SAMPLEAUTH_REPLAY;
    case REPLAY_FULL:
        waitstats_set_replay_unchecked(in->ws, ++in->replay_unchecked);
        return SAMPLEAUTH_OK;
    default:
        return SAMPLEAUTH_OK;
    }
}

/* Check, parse and count one datagram of len bytes in buf, which arrived
 * at at_ms (Unix ms; now_s its seconds, mono_s the monotonic clock's). */
static void
take(struct ingest *in, struct msghdr *h, char *buf, size_t len, int64_t now_s,
     int64_t mono_s, int64_t at_ms)
{
    struct sample_source src;
    enum sampleauth_verdict v;
    uint64_t lines, invalid;
    bool truncated = (h->msg_flags & MSG_TRUNC) != 0;
    size_t skip, nvalid;

    v = sampleauth_check(in->key, in->keylen, buf, len, truncated, now_s, &skip);
    if (v == SAMPLEAUTH_OK) {
        nvalid = samples_parse_datagram(buf + skip, len - skip, truncated, in->samples,
                                        SAMPLES_MAX_PER(SAMPLES_DATAGRAM_MAX), &lines, &invalid);
        /* Only a line that names its owner (a holding, a wait, a loss)
         * makes a copy harmful beyond a count; owner-less lines alone (a
         * try-lock's 5-field timeouts) are what a sender may send twice,
         * bytes and all, in one second (a red-team). */
        for (size_t k = 0; k < nvalid; k++)
            if (in->samples[k].ownerlen > 0) {
                v = replayed(in, buf, mono_s);
                break;
            }
    }
    if (v != SAMPLEAUTH_OK) {
        waitstats_reject(in->ws, v);
        in->rejects[v]++;
        if (h->msg_namelen <= sizeof(in->reject_from[v]))
            memcpy(&in->reject_from[v], h->msg_name, h->msg_namelen);
        return;
    }
    if (lines == 0)
        return;
    if (invalid > 0)
        note_invalid(in, h, buf + skip, invalid);
    source_of(h, &src);
    waitstats_record_from(in->ws, &src, in->samples, nvalid, lines, invalid, at_ms);
}

/* Read and count until the socket is empty (or a few batches, so that a
 * stop request is seen even under a flood).  -1 on a socket error. */
static int
drain(struct ingest *in)
{
    int rounds, n, i;
    int64_t now_real, now_mono, at_ms;

    for (rounds = 0; rounds < 64; rounds++) {
        (void)waitstats_samples_key(in->ws, &in->keygen, in->key, &in->keylen);
        prepare(in);
        n = recvmmsg(in->fd, in->msgs, INGEST_BATCH, MSG_DONTWAIT, NULL);
        now_real = clock_now_ms();
        now_mono = clock_mono_ms();
        if (n == -1) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            if (errno == EINTR)
                continue;
            return -1;
        }
        for (i = 0; i < n; i++) {
            struct msghdr *h = &in->msgs[i].msg_hdr;
            size_t len = in->msgs[i].msg_len;

            note_drops(in, h);
            if (len > SAMPLES_DATAGRAM_MAX)
                len = SAMPLES_DATAGRAM_MAX;
            at_ms = arrived_ms(h, now_mono, now_real);
            if (at_ms < in->last_at_ms)
                at_ms = in->last_at_ms;
            in->last_at_ms = at_ms;
            take(in, h, in->buf[i], len, now_real / 1000, now_mono / 1000, at_ms);
        }
        if (n < INGEST_BATCH)
            break;
    }
    return 0;
}

/* What a reason most likely means, for the log line. */
static const char *
reject_hint(enum sampleauth_verdict v)
{
    switch (v) {
    case SAMPLEAUTH_UNSIGNED:
        return "a reporter without LOCKWATCH_KEY_FILE, or an older one";
    case SAMPLEAUTH_BAD_MAC:
        return "signed with another key than [samples] key_file, or forged";
    case SAMPLEAUTH_STALE:
        return "a sender's clock over 60 s off, or a replay";
    case SAMPLEAUTH_REPLAY:
        return "a copy of a datagram taken in the last 2 minutes: a replay, or a "
               "reporter given two addresses of this agent";
    default:
        return "over the agent's datagram size";
    }
}

/* Say the datagrams rejected since the last line, at once for the first
 * and then at most every REJECTS_SAY_MS: their counts, what each reason
 * likely means, and each reason's last sender (an address, not a secret). */
static void
say_rejects(struct ingest *in, int64_t now)
{
    char line[900], host[NI_MAXHOST];
    uint64_t total = 0;
    size_t at = 0, v;
    int w;

    for (v = 0; v < SAMPLEAUTH_REJECTS; v++)
        total += in->rejects[v];
    if (total == 0 || (in->rejects_said_ms != 0 && now - in->rejects_said_ms < REJECTS_SAY_MS))
        return;
    for (v = 0; v < SAMPLEAUTH_REJECTS && at < sizeof(line); v++) {
        if (in->rejects[v] == 0)
            continue;
        if (getnameinfo((const struct sockaddr *)&in->reject_from[v],
                        sizeof(in->reject_from[v]), host, sizeof(host), NULL, 0,
                        NI_NUMERICHOST) != 0)
            snprintf(host, sizeof(host), "an unknown address");
        w = snprintf(line + at, sizeof(line) - at, "%s%s %llu (%s; the last from %s)",
                     at ? ", " : "", sampleauth_reason_str((enum sampleauth_verdict)v),
                     (unsigned long long)in->rejects[v],
                     reject_hint((enum sampleauth_verdict)v), host);
        if (w < 0)
            break;
        at += (size_t)w;
    }
    log_warnx("samples: rejected %llu%s datagram%s that failed the [samples] key_file check: "
              "%s (lockwatch_samples_rejected_total; said at most once a minute)",
              (unsigned long long)total, in->rejects_said_ms != 0 ? " more" : "",
              total == 1 ? "" : "s", line);
    memset(in->rejects, 0, sizeof(in->rejects));
    in->rejects_said_ms = now;
}

/* Say the malformed lines since the last line, as say_rejects() does the
 * rejected datagrams: how many, and the first one, with why and whence. */
static void
say_invalid(struct ingest *in, int64_t now)
{
    char host[NI_MAXHOST];

    if (in->invalid == 0 || in->invalid_why == NULL ||
        (in->invalid_said_ms != 0 && now - in->invalid_said_ms < REJECTS_SAY_MS))
        return;
    if (getnameinfo((const struct sockaddr *)&in->invalid_from, sizeof(in->invalid_from),
                    host, sizeof(host), NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(host, sizeof(host), "an unknown address");
    log_warnx("samples: dropped %llu%s malformed line%s (docs/line-protocol.md); the first "
              "from %s: %s: \"%s%s\" (lockwatch_samples_invalid_total; said at most once a "
              "minute)", (unsigned long long)in->invalid, in->invalid_said_ms != 0 ? " more" : "",
              in->invalid == 1 ? "" : "s", host, in->invalid_why, in->invalid_text,
              in->invalid_cut ? "..." : "");
    in->invalid = 0;
    in->invalid_why = NULL;
    in->invalid_said_ms = now;
}

static void *
ingest_main(void *arg)
{
    struct ingest *in = arg;
    struct pollfd pfd[2];

    pfd[0].fd = in->fd;
    pfd[0].events = POLLIN;
    pfd[1].fd = in->wake[0];
    pfd[1].events = POLLIN;
    for (;;) {
        if (poll(pfd, 2, DROPS_TICK_MS) == -1) {
            if (errno == EINTR)
                continue;
            log_warn("samples: poll");
            break;
        }
        if (pfd[1].revents != 0)
            break;
        if (pfd[0].revents != 0) {
            adapt_wait(in);
            if (drain(in) == -1 && !in->warned_errno) {
                /* ICMP errors and the like: not fatal, say so once */
                log_warn("samples: recvmmsg");
                in->warned_errno = true;
            }
        }
        /* after a drain or a quiet tick alike */
        poll_drops(in);
        publish_drops(in);
        say_rejects(in, clock_mono_ms());
        say_invalid(in, clock_mono_ms());
        if (pfd[0].revents != 0 && in->wait_ms > 0 &&
            poll(&pfd[1], 1, (int)in->wait_ms) > 0)
            break;              /* stopped while waiting */
    }
    return NULL;
}

static void
set_rcvbuf(int fd)
{
    int want = INGEST_RCVBUF, got = 0;
    socklen_t len = sizeof(got);

    /* FORCE passes rmem_max when we have CAP_NET_ADMIN; else the plain
     * option, which the kernel quietly caps. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) == -1)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len) == -1)
        got = 0;
    /* Linux reports twice the size asked for (bookkeeping overhead). */
    if (got >= want)
        log_info("samples: receive buffer %d bytes, as asked (the kernel counts its "
                 "bookkeeping too: twice the %d asked)", got, want);
    else
        log_warnx("samples: receive buffer %d bytes, not the %d asked for; "
                  "raise net.core.rmem_max to absorb bursts without loss", got, want);
}

static int
open_socket(const char *host, int port, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[16];
    int fd = -1, rc, on = 1, saved = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%d", port);
    rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "samples address %s:%d: %s", host, port, gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
        if (fd == -1) {
            saved = errno;
            continue;
        }
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd == -1) {
        snprintf(err, errlen, "cannot bind the samples address udp %s:%d: %s", host, port,
                 strerror(saved));
        return -1;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof(on)) == -1)
        log_warn("samples: SO_RXQ_OVFL (kernel drops will not be counted)");
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) == -1)
        log_warn("samples: SO_TIMESTAMPNS (samples are timed when read, not when they came)");
    set_rcvbuf(fd);
    return fd;
}

void
ingest_set_batch_wait(struct ingest *in, int64_t ms)
{
    if (in != NULL)
        atomic_store(&in->wait_max_ms, ms > 0 ? ms : 0);
}

struct ingest *
ingest_start(struct waitstats *ws, const char *host, int port, int64_t batch_wait_ms,
             char *err, size_t errlen)
{
    struct ingest *in;
    int rc;

    in = calloc(1, sizeof(*in));
    if (in == NULL) {
        snprintf(err, errlen, "samples: out of memory");
        return NULL;
    }
    in->fd = in->wake[0] = in->wake[1] = -1;
    in->ws = ws;
    atomic_init(&in->wait_max_ms, batch_wait_ms > 0 ? batch_wait_ms : 0);
    in->wait_ms = batch_wait_ms > 0 ? batch_wait_ms : 0;
    in->buf = malloc(INGEST_BATCH * sizeof(*in->buf));
    in->samples = malloc(SAMPLES_MAX_PER(SAMPLES_DATAGRAM_MAX) * sizeof(*in->samples));
    in->replay = replay_new(REPLAY_SLOTS_MAX);
    if (in->buf == NULL || in->samples == NULL || in->replay == NULL) {
        snprintf(err, errlen, "samples: out of memory");
        goto fail;
    }
    if (pipe2(in->wake, O_CLOEXEC | O_NONBLOCK) == -1) {
        snprintf(err, errlen, "samples: pipe: %s", strerror(errno));
        goto fail;
    }
    in->fd = open_socket(host, port, err, errlen);
    if (in->fd == -1)
        goto fail;
    rc = pthread_create(&in->thread, NULL, ingest_main, in);
    if (rc != 0) {
        snprintf(err, errlen, "samples: cannot start the thread: %s", strerror(rc));
        goto fail;
    }
    (void)pthread_setname_np(in->thread, "lw-samples");    /* top -H, /proc/.../comm */
    in->running = true;
    return in;
fail:
    ingest_stop(in);
    return NULL;
}

void
ingest_stop(struct ingest *in)
{
    if (in == NULL)
        return;
    if (in->running) {
        while (write(in->wake[1], "x", 1) == -1 && errno == EINTR)
            ;
        pthread_join(in->thread, NULL);
    }
    if (in->fd != -1)
        close(in->fd);
    if (in->wake[0] != -1)
        close(in->wake[0]);
    if (in->wake[1] != -1)
        close(in->wake[1]);
    free(in->buf);
    free(in->samples);
    replay_free(in->replay);
    explicit_bzero(in->key, sizeof(in->key));
    free(in);
}
