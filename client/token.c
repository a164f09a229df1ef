/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * token.c - who holds a lock: the lw1 token, the client UUID, the host
 * name, the thread id, and the random bits behind them.
 *
 * A plain lock's value is the lw1 token
 *
 *     lw1:<host>:<pid>.<nonce>:<thread>:<acquired_unix_ms>:<16 lowercase hex>
 *
 * whose grammar is a contract with lockwatchd (collectors/formats/formats.h,
 * collectors/formats/liblockwatch.c), which shows the holder's host, pid,
 * thread and acquisition time from it, and ties a lock taken at once to
 * the thread's waits by its party, "lw1:<host>:<pid>.<nonce>:<thread>"
 * (collectors/graph/pairs.c).  The nonce, 16 lowercase hex, is drawn once
 * per process start (lwc_process_nonce()): host, pid and thread alone
 * recur (a restarted container runs as pid 1 again, two containers on the
 * host's network share its name), and a dead process's wait must not be
 * taken for the new one's.  Its rules are common/lw1.h, which
 * both sides compile: lwc_token_format() writes exactly that grammar and
 * refuses fields outside it, and lwc_token_parse() reads it back with the
 * agent's own parser, lw1_token_parse() (the unit tests round-trip both).
 *
 * The 64 random bits make every acquisition's token unique, which is what
 * compare-and-delete relies on; they come from getrandom(), or
 * /dev/urandom when the kernel pool is not ready or the call is missing,
 * as does the nonce.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "client_impl.h"

static const char hexdigits[] = "0123456789abcdef";

_Static_assert(LWC_TOKEN_MAX > LW1_TOKEN_LEN_MAX, "a token and its NUL fit LWC_TOKEN_MAX");

int
lwc_random(void *buf, size_t n)
{
    unsigned char *p = buf;
    size_t got = 0;
    int fd = -1, rc = -1;

    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, GRND_NONBLOCK);

        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno == EINTR)
            continue;
        else
            break;
    }
    if (got == n)
        return 0;

    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        goto out;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);

        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno == EINTR)
            continue;
        else
            goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/*
 * The process nonce: drawn on first use, and again whenever getpid() is
 * not the pid it was drawn in, since a forked child has the parent's
 * memory, nonce and all, but is another process.  nonce_mu is held across
 * fork() (the pthread_atfork() handlers), so no child starts with it
 * locked by a thread it does not have.
 */
static pthread_once_t nonce_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t nonce_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t nonce_pid;             /* the process nonce_value is of; 0: none */
static uint64_t nonce_value;

static void
nonce_lock(void)
{
    pthread_mutex_lock(&nonce_mu);
}

static void
nonce_unlock(void)
{
    pthread_mutex_unlock(&nonce_mu);
}

static void
nonce_atfork(void)
{
    (void)pthread_atfork(nonce_lock, nonce_unlock, nonce_unlock);
}

int
lwc_process_nonce(uint64_t *out)
{
    pid_t pid = getpid();
    uint64_t v;
    int rc = 0;

    (void)pthread_once(&nonce_once, nonce_atfork);
    nonce_lock();
    if (nonce_pid != pid) {
        if (lwc_random(&v, sizeof(v)) == 0) {
            nonce_value = v;
            nonce_pid = pid;
        } else {
            rc = -1;
        }
    }
    *out = nonce_value;
    nonce_unlock();
    return rc;
}

void
lwc_uuid4_format(char out[LWC_UUID_LEN + 1], const unsigned char raw[16])
{
    unsigned char b[16];
    size_t o = 0;

    memcpy(b, raw, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);   /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);   /* RFC 4122 variant */
    for (size_t i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hexdigits[b[i] >> 4];
        out[o++] = hexdigits[b[i] & 0x0f];
    }
    out[o] = '\0';
}

int
lwc_uuid4(char out[LWC_UUID_LEN + 1])
{
    unsigned char raw[16];

    if (lwc_random(raw, sizeof(raw)) != 0)
        return -1;
    lwc_uuid4_format(out, raw);
    return 0;
}

size_t
lwc_host_sanitize(char out[LWC_HOST_MAX + 1], const char *in)
{
    size_t n = 0;

    for (; in != NULL && in[n] != '\0' && n < LWC_HOST_MAX; n++)
        out[n] = lw1_host_byte_ok((unsigned char)in[n]) ? in[n] : '-';
    if (n == 0) {
        memcpy(out, "localhost", sizeof("localhost"));
        return sizeof("localhost") - 1;
    }
    out[n] = '\0';
    return n;
}

void
lwc_hostname(char out[LWC_HOST_MAX + 1])
{
    char buf[256];

    if (gethostname(buf, sizeof(buf)) != 0)
        buf[0] = '\0';
    buf[sizeof(buf) - 1] = '\0';
    lwc_host_sanitize(out, buf);
}

long long
lwc_gettid(void)
{
    return (long long)gettid();
}

size_t
lwc_fmt_u64(char *out, uint64_t v)
{
    char tmp[20];
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* v as 16 lowercase hex digits into out (no NUL). */
static size_t
fmt_hex64(char *out, uint64_t v)
{
    for (int shift = 60, i = 0; shift >= 0; shift -= 4, i++)
        out[i] = hexdigits[(v >> shift) & 0x0f];
    return 16;
}

int
lwc_token_format(char *out, size_t cap, const struct lwc_token *t)
{
    char buf[LWC_TOKEN_MAX];
    size_t n = 0, hostlen = strlen(t->host);

    if (hostlen == 0 || hostlen > LWC_HOST_MAX)
        return -1;
    for (size_t i = 0; i < hostlen; i++)
        if (!lw1_host_byte_ok((unsigned char)t->host[i]))
            return -1;
    if (t->pid < 1 || t->pid > INT32_MAX || t->thread < 0 ||
        t->acquired_ms < LW1_TIME_MIN_MS || t->acquired_ms >= LW1_TIME_MAX_MS)
        return -1;

    memcpy(buf, LW1_PREFIX, sizeof(LW1_PREFIX) - 1);
    n = sizeof(LW1_PREFIX) - 1;
    memcpy(buf + n, t->host, hostlen);
    n += hostlen;
    buf[n++] = ':';
    n += lwc_fmt_u64(buf + n, (uint64_t)t->pid);
    if (t->has_nonce) {
        buf[n++] = '.';
        n += fmt_hex64(buf + n, t->nonce);
    }
    buf[n++] = ':';
    n += lwc_fmt_u64(buf + n, (uint64_t)t->thread);
    buf[n++] = ':';
    n += lwc_fmt_u64(buf + n, (uint64_t)t->acquired_ms);
    buf[n++] = ':';
    n += fmt_hex64(buf + n, t->random);
    if (n + 1 > cap)
        return -1;
    memcpy(out, buf, n);
    out[n] = '\0';
    return (int)n;
}

int
lwc_token_parse(const char *s, size_t len, struct lwc_token *t)
{
    struct lw1_token tok;

    if (lw1_token_parse(s, len, &tok) != 0)
        return -1;
    memcpy(t->host, tok.host, tok.hostlen);
    t->host[tok.hostlen] = '\0';
    t->pid = (long)tok.pid;
    t->has_nonce = tok.has_nonce;
    t->nonce = tok.nonce;
    t->thread = (long long)tok.thread;
    t->acquired_ms = (int64_t)tok.acquired_ms;
    t->random = tok.random;
    return 0;
}
