/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * throttle.c - per-address limits on release-token guessing, and their
 * log lines (see throttle.h).  A flat table searched linearly: 1,024
 * slots of 48 bytes, looked up once per release request, which is rare
 * and never on the scrape path.
 */
#include "agent/http/throttle.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"

struct slot {
    unsigned char addr[16];     /* IPv4 mapped into IPv6; IPv6 cut to /64 */
    bool used;
    uint32_t fails;             /* wrong tokens in the window */
    int64_t window_start;       /* mono ms of the window's first failure */
    int64_t blocked_until;      /* mono ms; 0 not blocked */
    uint64_t refused;           /* 429s of the current block */
};

struct throttle {
    pthread_mutex_t mu;
    struct slot slots[THROTTLE_SLOTS];
    struct throttle_stats st;
    int64_t log_minute;         /* mono ms the log budget's minute began */
    unsigned int log_lines;     /* lines in it */
    uint64_t log_dropped;       /* lines over the budget in it */
};

struct throttle *
throttle_new(void)
{
    struct throttle *t = calloc(1, sizeof(*t));

    if (t != NULL)
        pthread_mutex_init(&t->mu, NULL);
    return t;
}

void
throttle_free(struct throttle *t)
{
    if (t == NULL)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* The key of an address; false when it has none. */
static bool
key_of(const struct sockaddr *sa, unsigned char key[16])
{
    memset(key, 0, 16);
    if (sa == NULL)
        return false;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

        key[10] = key[11] = 0xff;
        memcpy(key + 12, &in->sin_addr, 4);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;

        memcpy(key, &in6->sin6_addr, 16);
        if (!IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
            memset(key + 8, 0, 8);      /* per /64 */
        return true;
    }
    return false;
}

static void
key_text(const unsigned char key[16], char *buf, size_t len)
{
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

    if (memcmp(key, mapped, sizeof(mapped)) == 0) {
        if (inet_ntop(AF_INET, key + 12, buf, (socklen_t)len) == NULL)
            snprintf(buf, len, "?");
    } else if (inet_ntop(AF_INET6, key, buf, (socklen_t)len) != NULL) {
        size_t n = strlen(buf);

        snprintf(buf + n, len - n, "/64");
    } else {
        snprintf(buf, len, "?");
    }
}

/* One line of the budget, or false (counted) when this minute's is spent. */
static bool
may_log(struct throttle *t, int64_t now)
{
    if (t->log_minute == 0 || now - t->log_minute >= 60000) {
        if (t->log_dropped > 0)
            log_warnx("release: %llu more lines about wrong release tokens in the last "
                      "minute were not logged (lockwatch_release_auth_failures_total "
                      "counts every attempt)", (unsigned long long)t->log_dropped);
        t->log_minute = now;
        t->log_lines = 0;
        t->log_dropped = 0;
    }
    if (t->log_lines >= THROTTLE_LOG_PER_MIN) {
        t->log_dropped++;
        return false;
    }
    t->log_lines++;
    return true;
}

/* The slot of key, or a new one (the oldest unblocked one evicted when the
 * table is full; the oldest of all when every one is blocked). */
static struct slot *
slot_of(struct throttle *t, const unsigned char key[16], bool create, int64_t now)
{
    struct slot *free_slot = NULL, *oldest = NULL, *oldest_blocked = NULL;
    size_t i;

    for (i = 0; i < THROTTLE_SLOTS; i++) {
        struct slot *s = &t->slots[i];

        if (!s->used) {
            if (free_slot == NULL)
                free_slot = s;
            continue;
        }
        if (memcmp(s->addr, key, 16) == 0)
            return s;
        if (s->blocked_until > now) {
            if (oldest_blocked == NULL || s->blocked_until < oldest_blocked->blocked_until)
                oldest_blocked = s;
        } else if (oldest == NULL || s->window_start < oldest->window_start) {
            oldest = s;
        }
    }
    if (!create)
        return NULL;
    if (free_slot == NULL) {
        free_slot = oldest != NULL ? oldest : oldest_blocked;
        t->st.evicted++;
    }
    memset(free_slot, 0, sizeof(*free_slot));
    memcpy(free_slot->addr, key, 16);
    free_slot->used = true;
    return free_slot;
}

int64_t
throttle_check(struct throttle *t, const struct sockaddr *addr, int64_t now)
{
    unsigned char key[16];
    char who[INET6_ADDRSTRLEN + 4];
    struct slot *s;
    int64_t wait_s = 0;

    if (!key_of(addr, key))
        return 0;
    pthread_mutex_lock(&t->mu);
    s = slot_of(t, key, false, now);
    if (s != NULL && s->blocked_until > now) {
        wait_s = (s->blocked_until - now + 999) / 1000;
        s->refused++;
        t->st.rate_limited++;
    } else if (s != NULL && s->blocked_until != 0) {
        /* the block is over: say what it held back, start afresh */
        key_text(key, who, sizeof(who));
        if (may_log(t, now))
            log_warnx("release: the block of %s is over; it refused %llu requests with 429",
                      who, (unsigned long long)s->refused);
        s->blocked_until = 0;
        s->refused = 0;
        s->fails = 0;
        s->window_start = 0;
    }
    pthread_mutex_unlock(&t->mu);
    return wait_s;
}

void
throttle_fail(struct throttle *t, const struct sockaddr *addr, int64_t now)
{
    unsigned char key[16];
    char who[INET6_ADDRSTRLEN + 4];
    struct slot *s;

    pthread_mutex_lock(&t->mu);
    t->st.wrong_token++;
    if (!key_of(addr, key) || (s = slot_of(t, key, true, now)) == NULL) {
        pthread_mutex_unlock(&t->mu);
        return;
    }
    key_text(key, who, sizeof(who));
    if (s->window_start == 0 || now - s->window_start >= THROTTLE_WINDOW_MS) {
        s->window_start = now;
        s->fails = 0;
    }
    s->fails++;
    if (s->fails == 1 && may_log(t, now))
        log_warnx("release: a wrong or missing token from %s (after %d in %ds it gets 429 "
                  "for %ds)", who, THROTTLE_FAILS, THROTTLE_WINDOW_MS / 1000,
                  THROTTLE_BLOCK_MS / 1000);
    if (s->fails >= THROTTLE_FAILS && s->blocked_until <= now) {
        s->blocked_until = now + THROTTLE_BLOCK_MS;
        s->refused = 0;
        if (may_log(t, now))
            log_warnx("release: %s sent %u wrong tokens in %llds: release requests from it "
                      "get 429 for %ds", who, s->fails,
                      (long long)((now - s->window_start) / 1000), THROTTLE_BLOCK_MS / 1000);
    }
    pthread_mutex_unlock(&t->mu);
}

void
throttle_stats(struct throttle *t, struct throttle_stats *out)
{
    pthread_mutex_lock(&t->mu);
    *out = t->st;
    pthread_mutex_unlock(&t->mu);
}
