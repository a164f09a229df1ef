/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c - wait and hold samples to lockwatchd over UDP (SPEC "Wait and
 * hold samples"):
 *
 *     lw1 wait <key> <microseconds> <ok|timeout|error>\n
 *     lw1 wait <key> <microseconds> <ok|timeout|error> <owner> <holder>\n
 *     lw1 hold <key> <microseconds> <owner> <holder>\n
 *     lw1 waiting <key> <owner> <holder> <start|ok|timeout|error>\n
 *     lw1 lost <key> <owner> <holder> <held-us> <overrun-us|-> <renewal|expired>\n
 *
 * (docs/line-protocol.md; docs/reporters.md is the contract this follows).
 * The owner is <process>/<thread>: LOCKWATCH_OWNER or <host>:<pid>, and
 * the thread that acquired; the holder is the lock's token (plain) or
 * "<uuid>:<tid>" field (reentrant), what Redis shows while we hold it.
 *
 * <key> is percent-encoded (bytes below 0x21, above 0x7e, and '%' as %XX,
 * uppercase hex: lw1_key_byte_escaped() of common/lw1.h, the rule the
 * agent's parser holds lines to), so a line is always one line of
 * printable ASCII.
 *
 * Lines are batched into datagrams of at most LWC_DGRAM_MAX (1432) bytes,
 * which fits one Ethernet frame over IPv4 or IPv6 without fragmenting, or
 * LWC_DGRAM_LOOPBACK_MAX (8192, what the agent reads of one) when every
 * destination is on loopback, which has no 1500-byte MTU: fewer sends,
 * each of which wakes the agent (lwc_batch_room()).  A
 * batch is sent when the next line would not fit (by the thread that
 * reported that line), by the background thread at most LWC_FLUSH_US
 * (100 ms) after its first line, at once by the thread that reports a
 * lost line (the agent times a lease overrun by that line's arrival), and
 * when the client is freed.  One
 * datagram per sample costs a sendto() per lock operation: measured with
 * bench/client on loopback, that took liblockwatch to 0.71-0.89 x the bare
 * hiredis loop, against 0.98-1.0 x with batches (one send per ~40 samples),
 * so batches it is.
 *
 * Sending never blocks and never fails a lock call: the socket is
 * non-blocking and unconnected (so an ICMP "port unreachable" from a
 * missing agent is never reported back to a later send), and a datagram the
 * kernel will not take (EAGAIN, ENOBUFS, any error) is dropped and its lines
 * counted in samples_dropped.  With a destination off loopback, a line
 * longer than a batch (a long key: over about 1.2 KB) goes alone in a
 * datagram of up to LWC_DGRAM_LOOPBACK_MAX (8192) bytes, mac line
 * included, to the destinations on a loopback address, which
 * line-protocol.md allows that size; a line longer still, or with no
 * loopback destination, is dropped and counted.
 *
 * Destinations: LOCKWATCH_SAMPLES (host:port[,host:port...], up to
 * LWC_DEST_MAX, one socket each so IPv4 and IPv6 mix; split as the
 * reporters split it, the rest ignored with a warning), else the agent
 * option / LOCKWATCH_AGENT as before; every datagram goes to each.  With
 * LOCKWATCH_KEY_FILE each datagram is signed (common/lw1mac.h): the batch
 * keeps LWC_MAC_LINE_MAX bytes free and the flush writes the mac line in
 * front, one HMAC per datagram (about one per 15 samples, or 90 to
 * loopback), not per lock call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

/* A bounded line being written: over once anything did not fit. */
struct out {
    char *p;
    size_t cap, n;
    bool over;
};

static void
put(struct out *o, const char *s, size_t len)
{
    if (o->over || len > o->cap - o->n) {
        o->over = true;
        return;
    }
    memcpy(o->p + o->n, s, len);
    o->n += len;
}

static void
put_word(struct out *o, const char *w)
{
    put(o, " ", 1);
    put(o, w, strlen(w));
}

static void
put_enc(struct out *o, const char *s, size_t len)
{
    size_t k;

    put(o, " ", 1);
    if (o->over)
        return;
    k = lwc_key_encode(o->p + o->n, o->cap - o->n, s, len);
    if (k > o->cap - o->n)
        o->over = true;
    else
        o->n += k;
}

static void
put_u64(struct out *o, uint64_t v)
{
    char num[20];

    put(o, " ", 1);
    put(o, num, lwc_fmt_u64(num, v));
}

/* " <owner> <holder>" (owner already encoded; no holder: "-"). */
static void
put_owner_holder(struct out *o, const char *owner, size_t ownerlen, const char *holder,
                 size_t holderlen)
{
    put(o, " ", 1);
    put(o, owner, ownerlen);
    if (holderlen == 0)
        put_word(o, LW1_UNKNOWN);
    else
        put_enc(o, holder, holderlen);
}

/* "lw1 <verb> <key> <owner> <holder>" (owner already encoded). */
static void
put_head(struct out *o, const char *verb, const char *key, size_t keylen,
         const char *owner, size_t ownerlen, const char *holder, size_t holderlen)
{
    put(o, LW1_VERSION, sizeof(LW1_VERSION) - 1);
    put_word(o, verb);
    put_enc(o, key, keylen);
    put_owner_holder(o, owner, ownerlen, holder, holderlen);
}

static size_t
finish(struct out *o)
{
    put(o, "\n", 1);
    return o->over ? 0 : o->n;
}

static const char *
outcome_word(lw_status st)
{
    return st == LW_OK ? LW1_OUTCOME_OK :
           (st == LW_TIMEOUT || st == LW_BUSY) ? LW1_OUTCOME_TIMEOUT : LW1_OUTCOME_ERROR;
}

/* "lw1 <verb> <key> <us>[ <word>] <owner> <holder>\n": a hold, or a wait
 * with its outcome word. */
static size_t
line_us_owned(char *out, size_t cap, const char *verb, const char *key, size_t keylen,
              uint64_t us, const char *word, const char *owner, size_t ownerlen,
              const char *holder, size_t holderlen)
{
    struct out o = { out, cap, 0, false };

    put(&o, LW1_VERSION, sizeof(LW1_VERSION) - 1);
    put_word(&o, verb);
    put_enc(&o, key, keylen);
    put_u64(&o, us);
    if (word != NULL)
        put_word(&o, word);
    put_owner_holder(&o, owner, ownerlen, holder, holderlen);
    return finish(&o);
}

size_t
lwc_line_hold_owned(char *out, size_t cap, const char *key, size_t keylen, uint64_t us,
                    const char *owner, size_t ownerlen, const char *holder, size_t holderlen)
{
    return line_us_owned(out, cap, LW1_VERB_HOLD, key, keylen, us, NULL, owner, ownerlen,
                         holder, holderlen);
}

size_t
lwc_line_wait_owned(char *out, size_t cap, const char *key, size_t keylen, uint64_t us,
                    lw_status outcome, const char *owner, size_t ownerlen,
                    const char *holder, size_t holderlen)
{
    return line_us_owned(out, cap, LW1_VERB_WAIT, key, keylen, us, outcome_word(outcome),
                         owner, ownerlen, holder, holderlen);
}

size_t
lwc_line_waiting(char *out, size_t cap, const char *key, size_t keylen,
                 const char *owner, size_t ownerlen, const char *holder, size_t holderlen,
                 bool start, lw_status outcome)
{
    struct out o = { out, cap, 0, false };

    put_head(&o, LW1_VERB_WAITING, key, keylen, owner, ownerlen, holder, holderlen);
    put_word(&o, start ? LW1_PHASE_START : outcome_word(outcome));
    return finish(&o);
}

size_t
lwc_line_lost(char *out, size_t cap, const char *key, size_t keylen,
              const char *owner, size_t ownerlen, const char *holder, size_t holderlen,
              uint64_t held_us, int64_t overrun_us, bool renewal)
{
    struct out o = { out, cap, 0, false };

    put_head(&o, LW1_VERB_LOST, key, keylen, owner, ownerlen, holder, holderlen);
    put_u64(&o, held_us > LW1_US_MAX ? LW1_US_MAX : held_us);
    if (overrun_us < 0)
        put_word(&o, LW1_UNKNOWN);
    else
        put_u64(&o, (uint64_t)overrun_us > LW1_US_MAX ? LW1_US_MAX : (uint64_t)overrun_us);
    put_word(&o, renewal ? LW1_LOST_RENEWAL : LW1_LOST_EXPIRED);
    return finish(&o);
}

size_t
lwc_sign(const unsigned char *key, size_t keylen, const char *body, size_t len,
         int64_t now_s, char *out, size_t cap)
{
    unsigned char mac[LW1_MAC_BYTES];
    char num[20];
    size_t tn = lwc_fmt_u64(num, (uint64_t)(now_s < 0 ? 0 : now_s)), head;

    head = LW1_MAC_COVER_OFF + tn + 1;
    if (head + len > cap)
        return 0;
    memcpy(out, LW1_MAC_PREFIX, LW1_MAC_PREFIX_LEN);
    out[LW1_MAC_COVER_OFF - 1] = ' ';
    memcpy(out + LW1_MAC_COVER_OFF, num, tn);
    out[head - 1] = '\n';
    memcpy(out + head, body, len);
    if (lw1_mac(key, keylen, out + LW1_MAC_COVER_OFF, tn + 1 + len, mac) != 0)
        return 0;
    lw1_mac_hex(mac, out + LW1_MAC_PREFIX_LEN);
    return head + len;
}

size_t
lwc_batch_room(const struct lwc_report *rep)
{
    size_t max = LWC_DGRAM_LOOPBACK_MAX;

    for (size_t i = 0; i < rep->ndest; i++)
        if (!rep->dest[i].loopback)
            max = LWC_DGRAM_MAX;
    return max - (rep->keylen > 0 ? LWC_MAC_LINE_MAX : 0);
}

int
lwc_batch_append(struct lwc_batch *b, const char *line, size_t len)
{
    size_t cap = b->limit == 0 ? LWC_DGRAM_MAX :
                 b->limit < sizeof(b->buf) ? b->limit : sizeof(b->buf);

    if (len == 0 || len > cap)
        return -1;
    if (b->len + len > cap)
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

/* Read LOCKWATCH_KEY_FILE into rep->key: its first line, as the reporters
 * read it (docs/line-protocol.md "Signed datagrams"; the agent, not they,
 * refuses a second line), '\r's at its end dropped, LW1_KEY_MIN..
 * LW1_KEY_MAX bytes, no NUL. */
static lw_status
read_key(struct lwc_report *rep, const char *path, lw_error *err)
{
    char buf[LW1_KEY_MAX + 2];
    const char *nl;
    size_t n = 0;
    ssize_t r;
    int fd;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return lwc_seterr(err, LW_ERR, "reporting: cannot read LOCKWATCH_KEY_FILE "
                          "\"%.200s\": %s", path, strerror(errno));
    while (n < sizeof(buf) && ((r = read(fd, buf + n, sizeof(buf) - n)) > 0 ||
                               (r < 0 && errno == EINTR)))
        if (r > 0)
            n += (size_t)r;
    close(fd);
    if ((nl = memchr(buf, '\n', n)) != NULL)
        n = (size_t)(nl - buf);
    while (n > 0 && buf[n - 1] == '\r')
        n--;
    if (n < LW1_KEY_MIN || n > LW1_KEY_MAX || memchr(buf, '\0', n) != NULL) {
        explicit_bzero(buf, sizeof(buf));
        return lwc_seterr(err, LW_ERR, "reporting: LOCKWATCH_KEY_FILE \"%.200s\": its first "
                          "line must be a key of %d to %d bytes (e.g. openssl rand -hex 32)",
                          path, LW1_KEY_MIN, LW1_KEY_MAX);
    }
    memcpy(rep->key, buf, n);
    rep->keylen = n;
    explicit_bzero(buf, sizeof(buf));
    return LW_OK;
}

/* The <process> part of owner ids: <name>:<pid>, name LOCKWATCH_OWNER, else
 * the host (several processes may share a name, a pod's prefork workers:
 * each is an owner of its own).  A longer one than LWC_OWNER_MAX is a
 * warning and the default, as in every reporter (docs/reporters.md):
 * reporting still works, under a name that is the process's own. */
static void
set_owner(lw_client *c, lw_error *warn)
{
    struct lwc_report *rep = &c->bg.rep;
    const char *o = getenv("LOCKWATCH_OWNER");
    size_t n = o != NULL ? strlen(o) : 0;

    if (n > 0 && n <= LWC_OWNER_MAX) {
        n = lwc_key_encode(rep->owner, 3 * LWC_OWNER_MAX, o, n);
        rep->owner[n++] = ':';
        rep->ownerlen = n + lwc_fmt_u64(rep->owner + n, (uint64_t)c->pid);
        return;
    }
    n = strlen(c->hostname);        /* [A-Za-z0-9._-]: nothing to escape */
    memcpy(rep->owner, c->hostname, n);
    rep->owner[n++] = ':';
    rep->ownerlen = n + lwc_fmt_u64(rep->owner + n, (uint64_t)c->pid);
    if (o != NULL && o[0] != '\0')
        lwc_addwarn(warn, "reporting: LOCKWATCH_OWNER is %zu bytes (at most %d); using "
                    "%.*s", strlen(o), LWC_OWNER_MAX, (int)rep->ownerlen, rep->owner);
}

/* 127.0.0.0/8 or ::1 (also as ::ffff:127.x.y.z): no 1500-byte MTU. */
static bool
is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr)
                >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

        return IN6_IS_ADDR_LOOPBACK(a) ||
               (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}

/* Blanks the reporters trim from LOCKWATCH_SAMPLES and its entries (their
 * strip()/trim() on ASCII); not isspace(), which follows the locale. */
static bool
blank(char ch)
{
    return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

static bool
blank_only(const char *s)
{
    while (blank(*s))
        s++;
    return *s == '\0';
}

bool
lwc_list_next(const char **p, const char **s, size_t *len)
{
    const char *b = *p, *e;

    if (b == NULL)
        return false;
    e = strchr(b, ',');
    *p = e != NULL ? e + 1 : NULL;
    if (e == NULL)
        e = b + strlen(b);
    while (b < e && blank(*b))
        b++;
    while (e > b && blank(e[-1]))
        e--;
    *s = b;
    *len = (size_t)(e - b);
    return true;
}

/* LOCKWATCH_SAMPLES turns reporting off: empty or "off" in any case, blanks
 * aside. */
static bool
samples_off(const char *list)
{
    const char *s;
    size_t len;

    (void)lwc_list_next(&list, &s, &len);
    return list == NULL && (len == 0 || (len == 3 && strncasecmp(s, "off", 3) == 0));
}

lw_status
lwc_dest_parse(const char *s, size_t len, const char *from, char *host, size_t hostcap,
               int *port, lw_error *err)
{
    char one[300];

    if (len >= sizeof(one))
        return lwc_seterr(err, LW_ERR, "reporting: bad agent address \"%.64s...\" (from "
                          "%s): too long", s, from);
    memcpy(one, s, len);
    one[len] = '\0';
    if (lwc_parse_hostport(one, host, hostcap, port) != 0)
        return lwc_seterr(err, LW_ERR, "reporting: bad agent address \"%.64s\" (from "
                          "%s): expected host:port or [ipv6]:port", one, from);
    return LW_OK;
}

/* Is this address a destination already? */
static bool
dest_known(const struct lwc_report *rep, const struct addrinfo *ai)
{
    for (size_t i = 0; i < rep->ndest; i++)
        if (rep->dest[i].addrlen == ai->ai_addrlen &&
            memcmp(&rep->dest[i].addr, ai->ai_addr, ai->ai_addrlen) == 0)
            return true;
    return false;
}

/* Resolve one "host:port" into a new destination (one that resolves to a
 * destination already known is a warning: two names of one agent would
 * count every sample twice). */
static lw_status
add_dest(struct lwc_report *rep, const char *addr, size_t len, const char *from,
         lw_error *err, lw_error *warn)
{
    struct addrinfo hints, *res = NULL;
    char host[256], portstr[8];
    struct lwc_dest *d;
    lw_status st = LW_ERR;
    int port, rc;

    if (lwc_dest_parse(addr, len, from, host, sizeof(host), &port, err) != LW_OK)
        return LW_ERR;
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
    if (dest_known(rep, res)) {
        lwc_addwarn(warn, "reporting: %s: %.64s:%d is a destination already; sending there "
                    "once", from, host, port);
        st = LW_OK;
        goto out;
    }
    d = &rep->dest[rep->ndest];
    if (res->ai_addrlen > sizeof(d->addr)) {
        lwc_seterr(err, LW_ERR, "reporting: agent address too long");
        goto out;
    }
    d->fd = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->fd < 0) {
        lwc_seterr(err, LW_ERR, "reporting: cannot open a UDP socket: %s",
                   strerror(errno));
        goto out;
    }
    memcpy(&d->addr, res->ai_addr, res->ai_addrlen);
    d->addrlen = res->ai_addrlen;
    d->loopback = is_loopback(res->ai_addr);
    rep->loopback |= d->loopback;
    rep->ndest++;
    st = LW_OK;
out:
    if (res != NULL)
        freeaddrinfo(res);
    return st;
}

/* Every destination of list, as the reporters take them: blanks around an
 * entry trimmed, empty entries skipped, those past LWC_DEST_MAX ignored
 * with a warning.  One that does not parse or resolve fails lw_connect(),
 * the C way of the reporters' warning (docs/reporters.md). */
static lw_status
add_dests(struct lwc_report *rep, const char *list, const char *from, lw_error *err,
          lw_error *warn)
{
    const char *s;
    size_t len;

    while (lwc_list_next(&list, &s, &len)) {
        if (len == 0)
            continue;
        if (rep->ndest == LWC_DEST_MAX) {
            lwc_addwarn(warn, "reporting: %s: more than %d destinations; the rest are "
                        "ignored", from, LWC_DEST_MAX);
            break;
        }
        if (add_dest(rep, s, len, from, err, warn) != LW_OK)
            return LW_ERR;
    }
    return LW_OK;
}

lw_status
lwc_report_open(lw_client *c, const char *agent, bool on, lw_error *err, lw_error *warn)
{
    struct lwc_report *rep = &c->bg.rep;
    const char *list = agent, *from = "the agent option", *keyfile;

    rep->ndest = 0;
    rep->loopback = false;
    rep->keylen = 0;
    lwc_batch_reset(&rep->batch);
    rep->batch.limit = 0;
    rep->flush_us = 0;
    if (!on)
        return LW_OK;
    if (list == NULL && (list = getenv("LOCKWATCH_SAMPLES")) != NULL) {
        from = "LOCKWATCH_SAMPLES";
        if (samples_off(list))
            return LW_OK;       /* docs/reporters.md: empty or off turns it off */
    }
    if (list == NULL) {
        list = getenv("LOCKWATCH_AGENT");
        from = "LOCKWATCH_AGENT";
    }
    if (list == NULL || list[0] == '\0') {
        list = DEFAULT_AGENT;
        from = "the default";
    }
    if (add_dests(rep, list, from, err, warn) != LW_OK)
        goto fail;
    if (rep->ndest == 0)
        return LW_OK;           /* only empty entries (","): off, as in the reporters */
    set_owner(c, warn);
    keyfile = getenv("LOCKWATCH_KEY_FILE");
    if (keyfile != NULL && blank_only(keyfile))
        /* a template's unset value: unsigned, which an agent with a key rejects */
        lwc_addwarn(warn, "reporting: LOCKWATCH_KEY_FILE is set but empty; datagrams go "
                    "unsigned");
    else if (keyfile != NULL && read_key(rep, keyfile, err) != LW_OK)
        goto fail;
    rep->batch.limit = lwc_batch_room(rep);
    return LW_OK;
fail:
    lwc_report_close(c);
    return LW_ERR;
}

void
lwc_report_close(lw_client *c)
{
    struct lwc_report *rep = &c->bg.rep;

    for (size_t i = 0; i < rep->ndest; i++)
        close(rep->dest[i].fd);
    rep->ndest = 0;
    explicit_bzero(rep->key, sizeof(rep->key));
    rep->keylen = 0;
}

/* Send body (lines lines; signed first when a key is set, into sbuf of
 * room cap) to every destination, or only the loopback ones, and count its
 * lines sent (some destination took it) or dropped. */
static void
send_lines(lw_client *c, const char *body, size_t len, unsigned lines,
           bool loopback_only, char *sbuf, size_t cap)
{
    struct lwc_report *rep = &c->bg.rep;
    const char *p = body;
    size_t took = 0;

    if (rep->keylen > 0) {
        len = lwc_sign(rep->key, rep->keylen, body, len, clock_now_ms() / 1000, sbuf, cap);
        p = sbuf;
    }
    for (size_t i = 0; i < rep->ndest && len > 0; i++) {
        const struct lwc_dest *d = &rep->dest[i];

        if (loopback_only && !d->loopback)
            continue;
        if (sendto(d->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL,
                   (const struct sockaddr *)&d->addr, d->addrlen) == (ssize_t)len) {
            took++;
            atomic_fetch_add_explicit(&c->stats.datagrams_sent, 1, memory_order_relaxed);
        }
    }
    /* lines count as sent when any destination took them */
    atomic_fetch_add_explicit(took > 0 ? &c->stats.samples_sent : &c->stats.samples_dropped,
                              lines, memory_order_relaxed);
}

void
lwc_report_flush_locked(lw_client *c)
{
    struct lwc_report *rep = &c->bg.rep;

    if (rep->batch.len == 0)
        return;
    send_lines(c, rep->batch.buf, rep->batch.len, rep->batch.lines, false, rep->sbuf,
               sizeof(rep->sbuf));
    lwc_batch_reset(&rep->batch);
    rep->flush_us = 0;
}

/* A line too long for a batch, with bg.mu held: alone, after the batch (the
 * order kept), to the loopback destinations, which take datagrams up to
 * LWC_DGRAM_LOOPBACK_MAX; the mac line counts in that.  false when it
 * cannot go (no loopback destination, too long even so).  Only when some
 * destination is not on loopback: else the batch is that long already. */
static bool
send_alone_locked(lw_client *c, const char *line, size_t len)
{
    struct lwc_report *rep = &c->bg.rep;
    size_t room = LWC_DGRAM_LOOPBACK_MAX - (rep->keylen > 0 ? LWC_MAC_LINE_MAX : 0);

    if (!rep->loopback || len > room)
        return false;
    lwc_report_flush_locked(c);
    send_lines(c, line, len, 1, true, rep->sbuf, sizeof(rep->sbuf));
    return true;
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
    if (rc == 0) {
        if (rep->flush_us == 0) {
            rep->flush_us = clock_deadline_us(LWC_FLUSH_US);
            lwc_bg_arm_locked(c, rep->flush_us);
        }
    } else if (!send_alone_locked(c, line, len)) {     /* it counts, if sent */
        atomic_fetch_add_explicit(&c->stats.samples_dropped, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&c->bg.mu);
}

/* What a line is made of: the lock call's facts, for a line writer. */
struct line_arg {
    const char *key;
    size_t keylen;
    uint64_t us;                /* wait, hold; lost: held */
    lw_status outcome;          /* wait, waiting end */
    const char *verb, *word;    /* report_owned */
    bool flag;                  /* waiting: start; lost: renewal */
    int64_t overrun_us;         /* lost */
    const char *owner, *holder;
    size_t ownerlen, holderlen;
};

/* A line's writer: into out (cap bytes); 0 when it does not fit. */
typedef size_t (*line_fn)(char *out, size_t cap, const struct line_arg *a);

static size_t
write_wait(char *out, size_t cap, const struct line_arg *a)
{
    return lwc_line_wait(out, cap, a->key, a->keylen, a->us, a->outcome);
}

static size_t
write_owned(char *out, size_t cap, const struct line_arg *a)
{
    return line_us_owned(out, cap, a->verb, a->key, a->keylen, a->us, a->word, a->owner,
                         a->ownerlen, a->holder, a->holderlen);
}

static size_t
write_waiting(char *out, size_t cap, const struct line_arg *a)
{
    return lwc_line_waiting(out, cap, a->key, a->keylen, a->owner, a->ownerlen, a->holder,
                            a->holderlen, a->flag, a->outcome);
}

static size_t
write_lost(char *out, size_t cap, const struct line_arg *a)
{
    return lwc_line_lost(out, cap, a->key, a->keylen, a->owner, a->ownerlen, a->holder,
                         a->holderlen, a->us, a->overrun_us, a->flag);
}

/* Write a line into a stack buffer the size of a batch's datagram and
 * queue it; one too long for that (a key of kilobytes) is written again
 * into a heap buffer of a loopback datagram, so the thread of a lock call
 * spends LWC_DGRAM_MAX of its stack here, not LWC_DGRAM_LOOPBACK_MAX. */
static void
enqueue_line(lw_client *c, line_fn fn, const struct line_arg *a)
{
    char line[LWC_DGRAM_MAX], *big;
    size_t n = fn(line, sizeof(line), a);

    if (n > 0) {
        enqueue(c, line, n);
    } else if ((big = malloc(LWC_DGRAM_LOOPBACK_MAX)) == NULL) {
        enqueue(c, line, 0);    /* dropped, counted */
    } else {
        enqueue(c, big, fn(big, LWC_DGRAM_LOOPBACK_MAX, a));
        free(big);
    }
}

void
lwc_report_wait(lw_client *c, const char *key, size_t keylen, int64_t us,
                lw_status outcome)
{
    struct line_arg a = { .key = key, .keylen = keylen, .outcome = outcome,
                          .us = (uint64_t)(us < 0 ? 0 : us > US_MAX ? US_MAX : us) };

    if (c->bg.rep.ndest == 0)
        return;
    enqueue_line(c, write_wait, &a);
}

#define OWNER_FIELD_MAX (3 * LWC_OWNER_MAX + 1 + 24)

/* lk's owner field, "<process>/<tid>", into out (OWNER_FIELD_MAX). */
static size_t
owner_of(const lw_client *c, const struct lw_lock *lk, char *out)
{
    size_t n = c->bg.rep.ownerlen;

    memcpy(out, c->bg.rep.owner, n);
    out[n++] = '/';
    return n + lwc_fmt_u64(out + n, (uint64_t)(lk->tid < 0 ? 0 : lk->tid));
}

/* The line_arg of lk's lines: its key, holder and owner (into owner). */
static struct line_arg
arg_of(const lw_client *c, const struct lw_lock *lk, char *owner)
{
    struct line_arg a = { .key = lk->key, .keylen = lk->keylen, .owner = owner,
                          .holder = lk->holder, .holderlen = lk->holderlen };

    a.ownerlen = owner_of(c, lk, owner);
    return a;
}

/* lk's hold (word NULL) or the wait that ended its waiting (word its
 * outcome): the line with lk's owner and holder. */
static void
report_owned(lw_client *c, const struct lw_lock *lk, const char *verb, int64_t us,
             const char *word)
{
    char owner[OWNER_FIELD_MAX];
    struct line_arg a;

    if (c->bg.rep.ndest == 0)
        return;
    a = arg_of(c, lk, owner);
    a.verb = verb;
    a.word = word;
    a.us = (uint64_t)(us < 0 ? 0 : us > US_MAX ? US_MAX : us);
    enqueue_line(c, write_owned, &a);
}

void
lwc_report_hold(lw_client *c, const struct lw_lock *lk, int64_t us)
{
    report_owned(c, lk, LW1_VERB_HOLD, us, NULL);
}

void
lwc_report_waiting(lw_client *c, const struct lw_lock *lk, bool start, lw_status outcome)
{
    char owner[OWNER_FIELD_MAX];
    struct line_arg a;

    if (c->bg.rep.ndest == 0)
        return;
    a = arg_of(c, lk, owner);
    a.flag = start;
    a.outcome = outcome;
    enqueue_line(c, write_waiting, &a);
}

void
lwc_report_wait_end(lw_client *c, const struct lw_lock *lk, int64_t us, lw_status outcome)
{
    report_owned(c, lk, LW1_VERB_WAIT, us, outcome_word(outcome));
}

void
lwc_report_lost(lw_client *c, const struct lw_lock *lk, bool renewal, int64_t held_us,
                int64_t overrun_us)
{
    char owner[OWNER_FIELD_MAX];
    struct line_arg a;

    if (c->bg.rep.ndest == 0)
        return;
    a = arg_of(c, lk, owner);
    a.flag = renewal;
    a.us = (uint64_t)(held_us < 0 ? 0 : held_us);
    a.overrun_us = overrun_us;
    enqueue_line(c, write_lost, &a);
    /* rare, and the agent measures how long the holder worked past its
     * lease by when this line arrives: no batching delay */
    pthread_mutex_lock(&c->bg.mu);
    lwc_report_flush_locked(c);
    pthread_mutex_unlock(&c->bg.mu);
}
