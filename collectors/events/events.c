/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * events.c - the process's ring of recent lock events (events.h).
 *
 * A fixed array of EVENTS_MAX slots used as a circle: slot (seq - 1) %
 * EVENTS_MAX holds event seq.  Each slot owns one allocation of its key
 * and detail bytes, freed when the slot is reused, so the ring holds at
 * most EVENTS_MAX * (EVENT_KEY_MAX + EVENT_TEXT_MAX + sizeof(struct
 * event)) bytes: about 2.7 MiB.
 */
#include "collectors/events/events.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/keyhash.h"

static const char *const kind_names[EVENT_KIND_COUNT] = {
#define EVENT_NAME(id, name, sev) [id] = name,
    EVENT_KINDS(EVENT_NAME)
#undef EVENT_NAME
};

static const char *const kind_severities[EVENT_KIND_COUNT] = {
#define EVENT_SEV(id, name, sev) [id] = sev,
    EVENT_KINDS(EVENT_SEV)
#undef EVENT_SEV
};

static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static struct event ring[EVENTS_MAX];
static char *ring_bytes[EVENTS_MAX];    /* key then detail, per slot */
static uint64_t last_seq;               /* newest pushed, 0 none */
static uint64_t first_seq = 1;          /* oldest still kept */
static uint64_t totals[EVENT_KIND_COUNT];
static uint64_t dropped;

static void
copy_field(char *dst, size_t cap, const char *src)
{
    size_t n = src != NULL ? strlen(src) : 0;

    if (n >= cap)
        n = cap - 1;
    if (n > 0)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* One allocation: the key (cut to EVENT_KEY_MAX) then the detail with
 * its NUL (cut to EVENT_TEXT_MAX - 1). */
static char *
copy_bytes(const struct event_in *in, size_t *keylen, size_t *detlen)
{
    char *b;

    *keylen = in->key != NULL ? in->keylen : 0;
    if (*keylen > EVENT_KEY_MAX)
        *keylen = EVENT_KEY_MAX;
    *detlen = in->detail != NULL ? strlen(in->detail) : 0;
    if (*detlen > EVENT_TEXT_MAX - 1)
        *detlen = EVENT_TEXT_MAX - 1;
    if ((b = malloc(*keylen + *detlen + 1)) == NULL)
        return NULL;
    if (*keylen > 0)
        memcpy(b, in->key, *keylen);
    if (*detlen > 0)
        memcpy(b + *keylen, in->detail, *detlen);
    b[*keylen + *detlen] = '\0';
    return b;
}

uint64_t
events_push(const struct event_in *in)
{
    size_t keylen, detlen, slot;
    struct event *e;
    char *b;
    uint64_t seq;

    if ((unsigned)in->kind >= EVENT_KIND_COUNT)
        return 0;
    b = copy_bytes(in, &keylen, &detlen);
    pthread_mutex_lock(&ring_mu);
    totals[in->kind]++;
    if (b == NULL) {
        dropped++;
        pthread_mutex_unlock(&ring_mu);
        return 0;
    }
    seq = ++last_seq;
    slot = (size_t)((seq - 1) % EVENTS_MAX);
    if (seq - first_seq >= EVENTS_MAX) {        /* the oldest goes */
        first_seq++;
        dropped++;
    }
    free(ring_bytes[slot]);
    ring_bytes[slot] = b;
    e = &ring[slot];
    e->seq = seq;
    e->at_ms = in->at_ms > 0 ? in->at_ms : clock_now_ms();
    e->kind = in->kind;
    copy_field(e->target, sizeof(e->target), in->target);
    e->holderlen = in->holder != NULL ? in->holderlen : 0;
    if (e->holderlen > sizeof(e->holder))
        e->holderlen = sizeof(e->holder);
    if (e->holderlen > 0)
        memcpy(e->holder, in->holder, e->holderlen);
    e->holder_cut = in->holder != NULL && in->holderlen > e->holderlen;
    copy_field(e->klass, sizeof(e->klass), in->klass);
    e->key = b;
    e->keylen = keylen;
    e->key_cut = in->key != NULL && in->keylen > keylen;
    e->key_hash = in->key != NULL ? keyhash(in->key, in->keylen) : 0;
    e->holder_hash = in->holder != NULL && in->holderlen > 0 ?
        (uint32_t)keyhash(in->holder, in->holderlen) : 0;
    e->detail = b + keylen;
    e->seconds = in->seconds;
    pthread_mutex_unlock(&ring_mu);
    return seq;
}

size_t
events_each(uint64_t after, size_t max,
            void (*fn)(const struct event *e, void *arg), void *arg)
{
    size_t seen = 0;
    uint64_t seq;

    pthread_mutex_lock(&ring_mu);
    seq = after + 1 > first_seq ? after + 1 : first_seq;
    for (; seq <= last_seq && (max == 0 || seen < max); seq++, seen++)
        fn(&ring[(seq - 1) % EVENTS_MAX], arg);
    pthread_mutex_unlock(&ring_mu);
    return seen;
}

/* Read one counter under the mutex (they are 64-bit: no torn reads). */
static uint64_t
read_u64(const uint64_t *v)
{
    uint64_t r;

    pthread_mutex_lock(&ring_mu);
    r = *v;
    pthread_mutex_unlock(&ring_mu);
    return r;
}

uint64_t
events_last_seq(void)
{
    return read_u64(&last_seq);
}

uint64_t
events_total(enum event_kind k)
{
    return (unsigned)k < EVENT_KIND_COUNT ? read_u64(&totals[k]) : 0;
}

uint64_t
events_dropped(void)
{
    return read_u64(&dropped);
}

size_t
events_kept(void)
{
    size_t n;

    pthread_mutex_lock(&ring_mu);
    n = (size_t)(last_seq + 1 - first_seq);
    pthread_mutex_unlock(&ring_mu);
    return n;
}

const char *
event_kind_name(enum event_kind k)
{
    return (unsigned)k < EVENT_KIND_COUNT ? kind_names[k] : "?";
}

const char *
event_kind_severity(enum event_kind k)
{
    return (unsigned)k < EVENT_KIND_COUNT ? kind_severities[k] : "?";
}

int
event_kind_of(const char *name, size_t namelen)
{
    for (int k = 0; k < EVENT_KIND_COUNT; k++)
        if (strlen(kind_names[k]) == namelen && memcmp(kind_names[k], name, namelen) == 0)
            return k;
    return -1;
}

void
events_reset(void)
{
    pthread_mutex_lock(&ring_mu);
    for (size_t i = 0; i < EVENTS_MAX; i++) {
        free(ring_bytes[i]);
        ring_bytes[i] = NULL;
    }
    memset(ring, 0, sizeof(ring));
    memset(totals, 0, sizeof(totals));
    last_seq = 0;
    first_seq = 1;
    dropped = 0;
    pthread_mutex_unlock(&ring_mu);
}
