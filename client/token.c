/*
 * token.c - who holds a lock: the lw1 token, the client UUID, the host
 * name, the thread id, and the random bits behind them.
 *
 * A plain lock's value is the lw1 token
 *
 *     lw1:<host>:<pid>:<thread>:<acquired_unix_ms>:<16 lowercase hex>
 *
 * whose grammar is a contract with lockwatchd (collectors/formats/formats.h,
 * collectors/formats/liblockwatch.c), which shows the holder's host, pid,
 * thread and acquisition time from it.  lwc_token_format() writes exactly
 * that grammar and refuses fields outside it, and lwc_token_parse() reads
 * it back just as strictly (the unit tests round-trip both and check the
 * agent's decoder agrees).
 *
 * The 64 random bits make every acquisition's token unique, which is what
 * compare-and-delete relies on; they come from getrandom(), or
 * /dev/urandom when the kernel pool is not ready or the call is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "client_impl.h"

/* The agent rejects acquisition times outside [2000, 2100). */
#define TOKEN_TIME_MIN_MS INT64_C(946684800000)
#define TOKEN_TIME_MAX_MS INT64_C(4102444800000)
#define TOKEN_PREFIX "lw1:"

static const char hexdigits[] = "0123456789abcdef";

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

static bool
host_byte_ok(unsigned char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
           (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
}

size_t
lwc_host_sanitize(char out[LWC_HOST_MAX + 1], const char *in)
{
    size_t n = 0;

    for (; in != NULL && in[n] != '\0' && n < LWC_HOST_MAX; n++)
        out[n] = host_byte_ok((unsigned char)in[n]) ? in[n] : '-';
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

int
lwc_token_format(char *out, size_t cap, const struct lwc_token *t)
{
    char buf[LWC_TOKEN_MAX];
    size_t n = 0, hostlen = strlen(t->host);

    if (hostlen == 0 || hostlen > LWC_HOST_MAX)
        return -1;
    for (size_t i = 0; i < hostlen; i++)
        if (!host_byte_ok((unsigned char)t->host[i]))
            return -1;
    if (t->pid < 1 || t->pid > INT32_MAX || t->thread < 0 ||
        t->acquired_ms < TOKEN_TIME_MIN_MS || t->acquired_ms >= TOKEN_TIME_MAX_MS)
        return -1;

    memcpy(buf, TOKEN_PREFIX, sizeof(TOKEN_PREFIX) - 1);
    n = sizeof(TOKEN_PREFIX) - 1;
    memcpy(buf + n, t->host, hostlen);
    n += hostlen;
    buf[n++] = ':';
    n += lwc_fmt_u64(buf + n, (uint64_t)t->pid);
    buf[n++] = ':';
    n += lwc_fmt_u64(buf + n, (uint64_t)t->thread);
    buf[n++] = ':';
    n += lwc_fmt_u64(buf + n, (uint64_t)t->acquired_ms);
    buf[n++] = ':';
    for (int shift = 60; shift >= 0; shift -= 4)
        buf[n++] = hexdigits[(t->random >> shift) & 0x0f];
    if (n + 1 > cap)
        return -1;
    memcpy(out, buf, n);
    out[n] = '\0';
    return (int)n;
}

/* Canonical unsigned decimal: 1..maxdigits digits, no leading zero unless
 * the number is 0. */
static int
parse_udec(const char *s, size_t len, size_t maxdigits, uint64_t *out)
{
    uint64_t v = 0;

    if (len == 0 || len > maxdigits || (len > 1 && s[0] == '0'))
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int
lwc_token_parse(const char *s, size_t len, struct lwc_token *t)
{
    const char *f[6];
    size_t flen[6], nf = 0, pos = 0;
    uint64_t pid, thread, ms, rnd = 0;

    if (s == NULL || len < sizeof(TOKEN_PREFIX) - 1 ||
        memcmp(s, TOKEN_PREFIX, sizeof(TOKEN_PREFIX) - 1) != 0)
        return -1;
    for (;;) {
        const char *colon = memchr(s + pos, ':', len - pos);
        size_t stop = colon != NULL ? (size_t)(colon - s) : len;

        if (nf == 6)
            return -1;
        f[nf] = s + pos;
        flen[nf++] = stop - pos;
        if (colon == NULL)
            break;
        pos = stop + 1;
    }
    if (nf != 6 || flen[1] == 0 || flen[1] > LWC_HOST_MAX)
        return -1;
    for (size_t i = 0; i < flen[1]; i++)
        if (!host_byte_ok((unsigned char)f[1][i]))
            return -1;
    if (parse_udec(f[2], flen[2], 10, &pid) != 0 || pid == 0 || pid > INT32_MAX)
        return -1;
    if (parse_udec(f[3], flen[3], 19, &thread) != 0 || thread > (uint64_t)INT64_MAX)
        return -1;
    if (parse_udec(f[4], flen[4], 13, &ms) != 0 ||
        ms < (uint64_t)TOKEN_TIME_MIN_MS || ms >= (uint64_t)TOKEN_TIME_MAX_MS)
        return -1;
    if (flen[5] != LWC_RANDOM_HEX)
        return -1;
    for (size_t i = 0; i < LWC_RANDOM_HEX; i++) {
        const char *d = memchr(hexdigits, f[5][i], sizeof(hexdigits) - 1);

        if (f[5][i] == '\0' || d == NULL)
            return -1;
        rnd = (rnd << 4) | (uint64_t)(d - hexdigits);
    }
    memcpy(t->host, f[1], flen[1]);
    t->host[flen[1]] = '\0';
    t->pid = (long)pid;
    t->thread = (long long)thread;
    t->acquired_ms = (int64_t)ms;
    t->random = rnd;
    return 0;
}
