/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c - wait and hold samples to lockwatchd over UDP (SPEC "Wait and
 * hold samples"):
 *
 *     lw1 wait <key> <microseconds> <ok|timeout|error>\n
 *     lw1 hold <key> <microseconds>\n
 *
 * <key> is percent-encoded (bytes below 0x21, above 0x7e, and '%' as %XX,
 * uppercase hex: lw1_key_byte_escaped() of common/lw1.h, the rule the
 * agent's parser holds lines to), so a line is always one line of
 * printable ASCII.
 *
 * Lines are batched into datagrams of at most LWC_DGRAM_MAX (1432) bytes,
 * which fits one Ethernet frame over IPv4 or IPv6 without fragmenting.  A
 * batch is sent when the next line would not fit (by the thread that
 * reported that line), by the background thread at most LWC_FLUSH_US
 * (100 ms) after its first line, and when the client is freed.  One
 * datagram per sample costs a sendto() per lock operation: measured with
 * bench/client on loopback, that took liblockwatch to 0.71-0.89 x the bare
 * hiredis loop, against 0.98-1.0 x with batches (one send per ~40 samples),
 * so batches it is.
 *
 * Sending never blocks and never fails a lock call: the socket is
 * non-blocking and unconnected (so an ICMP "port unreachable" from a
 * missing agent is never reported back to a later send), and a datagram the
 * kernel will not take (EAGAIN, ENOBUFS, any error) is dropped and its lines
 * counted in samples_dropped.  A line longer than a datagram (a very long
 * key) is dropped and counted too.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_impl.h"

#define DEFAULT_AGENT "127.0.0.1:9717"
#define US_MAX ((int64_t)LW1_US_MAX)  /* the agent's limit for a duration */

static const char HEX[] = "0123456789ABCDEF";

size_t
lwc_key_encode(char *out, size_t cap, const char *key, size_t keylen)
{
    size_t n = 0;

    for (size_t i = 0; i < keylen; i++) {
        unsigned char b = (unsigned char)key[i];

        if (lw1_key_byte_escaped(b)) {
            if (n + 3 <= cap) {
                out[n] = '%';
                out[n + 1] = HEX[b >> 4];
                out[n + 2] = HEX[b & 0x0f];
            }
            n += 3;
        } else {
            if (n < cap)
                out[n] = (char)b;
            n++;
        }
    }
    return n;
}

/* "lw1 <kind> <key> <us>[ <outcome>]\n" into out; 0 when it exceeds cap. */
static size_t
format_line(char *out, size_t cap, const char *kind, const char *key,
            size_t keylen, uint64_t us, const char *outcome)
{
    char num[20];
    size_t numlen = lwc_fmt_u64(num, us);
    size_t kindlen = strlen(kind);
    size_t oclen = outcome != NULL ? strlen(outcome) : 0;
    size_t n = 0, k;

    if (cap < sizeof(LW1_VERSION) + kindlen + 1)
        return 0;
    memcpy(out, LW1_VERSION " ", sizeof(LW1_VERSION));
    n = sizeof(LW1_VERSION);
    memcpy(out + n, kind, kindlen);
    n += kindlen;
    out[n++] = ' ';
    k = lwc_key_encode(out + n, cap - n, key, keylen);
    if (k > cap - n)
        return 0;
    n += k;
    if (n + 1 + numlen + (oclen ? 1 + oclen : 0) + 1 > cap)
        return 0;
    out[n++] = ' ';
    memcpy(out + n, num, numlen);
    n += numlen;
    if (oclen) {
        out[n++] = ' ';
        memcpy(out + n, outcome, oclen);
        n += oclen;
    }
    out[n++] = '\n';
    return n;
}

size_t
lwc_line_wait(char *out, size_t cap, const char *key, size_t keylen,
              uint64_t us, lw_status outcome)
{
    const char *oc = outcome == LW_OK ? LW1_OUTCOME_OK :
                     (outcome == LW_TIMEOUT || outcome == LW_BUSY) ? LW1_OUTCOME_TIMEOUT :
                     LW1_OUTCOME_ERROR;

    return format_line(out, cap, LW1_VERB_WAIT, key, keylen, us, oc);
}

size_t
lwc_line_hold(char *out, size_t cap, const char *key, size_t keylen, uint64_t us)
{
    return format_line(out, cap, LW1_VERB_HOLD, key, keylen, us, NULL);
}

int
lwc_batch_append(struct lwc_batch *b, const char *line, size_t len)
{
    if (len == 0 || len > sizeof(b->buf))
        return -1;
    if (b->len + len > sizeof(b->buf))
        return 1;
    memcpy(b->buf + b->len, line, len);
    b->len += len;
    b->lines++;
    return 0;
}

void
lwc_batch_reset(struct lwc_batch *b)
{
    b->len = 0;
    b->lines = 0;
}

int
lwc_parse_hostport(const char *s, char *host, size_t hostcap, int *port)
{
    const char *hs, *he, *ps;
    long p = 0;

    if (s == NULL || hostcap == 0)
        return -1;
    if (s[0] == '[') {
        hs = s + 1;
        he = strchr(hs, ']');
        if (he == NULL || he[1] != ':')
            return -1;
        ps = he + 2;
    } else {
        hs = s;
        he = strrchr(s, ':');
        if (he == NULL || memchr(hs, ':', (size_t)(he - hs)) != NULL)
            return -1;              /* a bare IPv6 address needs brackets */
        ps = he + 1;
    }
    if (he == hs || (size_t)(he - hs) >= hostcap)
        return -1;
    if (*ps == '\0' || strlen(ps) > 5)
        return -1;
    for (const char *d = ps; *d != '\0'; d++) {
        if (*d < '0' || *d > '9')
            return -1;
        p = p * 10 + (*d - '0');
    }
    if (p < 1 || p > 65535)
        return -1;
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    *port = (int)p;
    return 0;
}

lw_status
lwc_report_open(lw_client *c, const char *agent, bool on, lw_error *err)
{
    struct lwc_report *rep = &c->bg.rep;
    struct addrinfo hints, *res = NULL;
    const char *addr = agent, *from = "the agent option";
    char host[256], portstr[8];
    lw_status st = LW_ERR;
    int port, rc;

    rep->fd = -1;
    lwc_batch_reset(&rep->batch);
    rep->flush_us = 0;
    if (!on)
        return LW_OK;
    if (addr == NULL) {
        addr = getenv("LOCKWATCH_AGENT");
        from = "LOCKWATCH_AGENT";
    }
    if (addr == NULL || addr[0] == '\0') {
        addr = DEFAULT_AGENT;
        from = "the default";
    }
    if (lwc_parse_hostport(addr, host, sizeof(host), &port) != 0) {
        lwc_seterr(err, LW_ERR, "reporting: bad agent address \"%.64s\" (from "
                   "%s): expected host:port or [ipv6]:port", addr, from);
        goto out;
    }
    portstr[lwc_fmt_u64(portstr, (uint64_t)port)] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 || res == NULL) {
        lwc_seterr(err, LW_ERR, "reporting: cannot resolve agent host \"%.64s\" "
                   "(from %s): %s (set the agent option, or report = 0)", host,
                   from, gai_strerror(rc));
        goto out;
    }
    if (res->ai_addrlen > sizeof(rep->addr)) {
        lwc_seterr(err, LW_ERR, "reporting: agent address too long");
        goto out;
    }
    rep->fd = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (rep->fd < 0) {
        lwc_seterr(err, LW_ERR, "reporting: cannot open a UDP socket: %s",
                   strerror(errno));
        goto out;
    }
    memcpy(&rep->addr, res->ai_addr, res->ai_addrlen);
    rep->addrlen = res->ai_addrlen;
    st = LW_OK;
out:
    if (res != NULL)
        freeaddrinfo(res);
    return st;
}

void
lwc_report_close(lw_client *c)
{
    if (c->bg.rep.fd >= 0)
        close(c->bg.rep.fd);
    c->bg.rep.fd = -1;
}

void
lwc_report_flush_locked(lw_client *c)
{
    struct lwc_report *rep = &c->bg.rep;
    ssize_t r;

    if (rep->batch.len == 0)
        return;
    r = sendto(rep->fd, rep->batch.buf, rep->batch.len, MSG_DONTWAIT | MSG_NOSIGNAL,
               (const struct sockaddr *)&rep->addr, rep->addrlen);
    if (r == (ssize_t)rep->batch.len) {
        atomic_fetch_add_explicit(&c->stats.samples_sent, rep->batch.lines,
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(&c->stats.datagrams_sent, 1, memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&c->stats.samples_dropped, rep->batch.lines,
                                  memory_order_relaxed);
    }
    lwc_batch_reset(&rep->batch);
    rep->flush_us = 0;
}

static void
enqueue(lw_client *c, const char *line, size_t len)
{
    struct lwc_report *rep = &c->bg.rep;
    int rc;

    if (len == 0) {
        atomic_fetch_add_explicit(&c->stats.samples_dropped, 1, memory_order_relaxed);
        return;
    }
    pthread_mutex_lock(&c->bg.mu);
    rc = lwc_batch_append(&rep->batch, line, len);
    if (rc == 1) {
        lwc_report_flush_locked(c);
        rc = lwc_batch_append(&rep->batch, line, len);
    }
    if (rc != 0) {
        atomic_fetch_add_explicit(&c->stats.samples_dropped, 1, memory_order_relaxed);
    } else if (rep->flush_us == 0) {
        rep->flush_us = clock_deadline_us(LWC_FLUSH_US);
        lwc_bg_arm_locked(c, rep->flush_us);
    }
    pthread_mutex_unlock(&c->bg.mu);
}

void
lwc_report_wait(lw_client *c, const char *key, size_t keylen, int64_t us,
                lw_status outcome)
{
    char line[LWC_DGRAM_MAX];

    if (c->bg.rep.fd < 0)
        return;
    enqueue(c, line, lwc_line_wait(line, sizeof(line), key, keylen,
                                   (uint64_t)(us < 0 ? 0 : us > US_MAX ? US_MAX : us),
                                   outcome));
}

void
lwc_report_hold(lw_client *c, const char *key, size_t keylen, int64_t us)
{
    char line[LWC_DGRAM_MAX];

    if (c->bg.rep.fd < 0)
        return;
    enqueue(c, line, lwc_line_hold(line, sizeof(line), key, keylen,
                                   (uint64_t)(us < 0 ? 0 : us > US_MAX ? US_MAX : us)));
}
