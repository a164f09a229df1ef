/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keyhash.c - SipHash-2-4 (Aumasson and Bernstein, 2012) under a random
 * per-process key (see keyhash.h).
 *
 * The key comes from getrandom(2), drawn once under pthread_once.  Should
 * the kernel refuse it (no entropy syscall: a kernel older than 3.17),
 * /dev/urandom is read instead; failing both, the key mixes the clock,
 * the pid and an address, which still differs per run and is not known
 * to whoever writes keys, though it is weaker.
 */
#include "common/keyhash.h"

#include <endian.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                        \
    do {                                                                \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);       \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                          \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                          \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);       \
    } while (0)

/* One load: with a byte loop here keyhash() was the largest cost of the
 * agent's sample lines (perf: 16% of its time, 11% with the load; the
 * wait-for table hashes two pairs a lock). */
static uint64_t
load_le64(const unsigned char *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

uint64_t
keyhash_siphash(const uint8_t key[16], const void *p, size_t len)
{
    const unsigned char *s = p;
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8), m, b;
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
    size_t i, left = len & 7;

    for (i = 0; i + 8 <= len; i += 8) {
        m = load_le64(s + i);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    b = 0;
    memcpy(&b, s + i, left);
    b = le64toh(b) | (uint64_t)len << 56;
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static uint8_t process_key[16];

static int
read_urandom(uint8_t *buf, size_t len)
{
    size_t got = 0;
    ssize_t n;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

    if (fd == -1)
        return -1;
    while (got < len && (n = read(fd, buf + got, len - got)) > 0)
        got += (size_t)n;
    close(fd);
    return got == len ? 0 : -1;
}

static void
draw_key(void)
{
    struct timespec ts;
    uint64_t mix[2];
    ssize_t n = getrandom(process_key, sizeof(process_key), 0);

    if (n == (ssize_t)sizeof(process_key) || read_urandom(process_key, sizeof(process_key)) == 0)
        return;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    mix[0] = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)&ts;
    mix[1] = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
    memcpy(process_key, mix, sizeof(process_key));
}

uint64_t
keyhash(const void *p, size_t len)
{
    uint64_t h;

    pthread_once(&key_once, draw_key);
    h = keyhash_siphash(process_key, p, len);
    return h ? h : 1;
}
