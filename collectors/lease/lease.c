/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lease.c - the process's memory of leases that ended (lease.h).
 *
 * Rows: a fixed array of LEASE_ROWS_MAX (target, class) counters, looked
 * up by a linear search (a run asks once per class it meets, not per
 * key).  Recent expiries: a ring of LEASE_RECENT_MAX entries in the order
 * they were noted, indexed by an open-addressing table (twice the ring,
 * linear probing, backward-shift deletion) on the hash of (key, holder),
 * so matching a sample line costs a probe or two however many expiries
 * are remembered.  A pair noted again replaces its entry in place.
 * Everything is static: about 0.6 MiB for the rows, 160 KiB for the ring
 * and its index.
 */
#include "collectors/lease/lease.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/events/events.h"
#include "common/clock.h"
#include "common/keyhash.h"

struct row {
    char target[LEASE_TARGET_MAX];
    char klass[LEASE_CLASS_MAX];
    uint64_t expired[2];
};

struct recent {
    uint64_t pair;              /* lease_pair_hash(key_hash, holder_hash); 0: free */
    uint64_t key_hash;
    uint32_t holder_hash;
    int row;
    int64_t expires_ms;
    int64_t noted_ms;
};

#define INDEX_SLOTS (2 * LEASE_RECENT_MAX)     /* a power of two */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct row rows[LEASE_ROWS_MAX];
static size_t nrows;
static uint64_t rows_overflow;
static struct recent ring[LEASE_RECENT_MAX];
static size_t ring_head;                        /* next slot to write */
static uint16_t index_slot[INDEX_SLOTS];        /* ring index + 1; 0 empty */
static size_t nrecent;
static uint64_t overruns;

static void
copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src != NULL ? strnlen(src, cap - 1) : 0;

    memcpy(dst, src != NULL ? src : "", n);
    dst[n] = '\0';
}

static int
row_find(const char *target, const char *klass)
{
    size_t i;

    for (i = 0; i < nrows; i++)
        if (strncmp(rows[i].target, target, LEASE_TARGET_MAX - 1) == 0 &&
            strncmp(rows[i].klass, klass, LEASE_CLASS_MAX - 1) == 0)
            return (int)i;
    return -1;
}

static int
row_add(const char *target, const char *klass)
{
    copy_str(rows[nrows].target, sizeof(rows[nrows].target), target);
    copy_str(rows[nrows].klass, sizeof(rows[nrows].klass), klass);
    rows[nrows].expired[0] = rows[nrows].expired[1] = 0;
    return (int)nrows++;
}

int
lease_row(const char *target, const char *klass)
{
    int r;

    if (target == NULL)
        target = "";
    if (klass == NULL || klass[0] == '\0')
        klass = "other";
    pthread_mutex_lock(&mu);
    if ((r = row_find(target, klass)) < 0) {
        if (nrows < LEASE_ROWS_MAX - LEASE_ROWS_OTHER)
            r = row_add(target, klass);
        else if ((r = row_find(target, "other")) < 0 && nrows < LEASE_ROWS_MAX)
            r = row_add(target, "other");
    }
    pthread_mutex_unlock(&mu);
    return r;
}

uint64_t
lease_pair_hash(uint64_t key_hash, uint32_t holder_hash)
{
    uint64_t h = key_hash ^ ((uint64_t)holder_hash * 0x9e3779b97f4a7c15ULL);

    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h ? h : 1;
}

/* The index slot of pair, or of the empty slot where it would go. */
static size_t
index_find(uint64_t pair)
{
    size_t i = (size_t)pair & (INDEX_SLOTS - 1);

    while (index_slot[i] != 0 && ring[index_slot[i] - 1].pair != pair)
        i = (i + 1) & (INDEX_SLOTS - 1);
    return i;
}

/* Take the entry at index slot i out of the index (backward shift). */
static void
index_delete(size_t i)
{
    size_t j = i, home;

    for (;;) {
        j = (j + 1) & (INDEX_SLOTS - 1);
        if (index_slot[j] == 0)
            break;
        home = (size_t)ring[index_slot[j] - 1].pair & (INDEX_SLOTS - 1);
        /* may the entry at j move back to i?  Only when its home is not
         * in the cyclic interval (i, j] */
        if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
            index_slot[i] = index_slot[j];
            i = j;
        }
    }
    index_slot[i] = 0;
}

/* Forget ring entry k (live), from the index too. */
static void
recent_drop(size_t k)
{
    size_t i = index_find(ring[k].pair);

    if (index_slot[i] != 0)
        index_delete(i);
    ring[k].pair = 0;
    nrecent--;
}

static void
recent_note(const struct lease_end *e, int64_t now_ms)
{
    uint64_t pair = lease_pair_hash(e->key_hash, e->holder_hash);
    size_t i = index_find(pair), k;

    if (index_slot[i] != 0) {
        k = index_slot[i] - 1u;         /* noted before: now its newest expiry */
    } else {
        k = ring_head;
        ring_head = (ring_head + 1) % LEASE_RECENT_MAX;
        if (ring[k].pair != 0) {
            recent_drop(k);             /* the oldest goes */
            i = index_find(pair);
        }
        index_slot[i] = (uint16_t)(k + 1);
        nrecent++;
    }
    ring[k].pair = pair;
    ring[k].key_hash = e->key_hash;
    ring[k].holder_hash = e->holder_hash;
    ring[k].row = e->row;
    ring[k].expires_ms = e->expires_ms;
    ring[k].noted_ms = now_ms;
}

/* Push one event of a lock (the ring copies the key and holder bytes). */
static void
push(enum event_kind kind, const char *target, const char *klass, const char *key,
     size_t keylen, const char *holder, size_t holderlen, const char *detail, double seconds)
{
    struct event_in in;

    memset(&in, 0, sizeof(in));
    in.kind = kind;
    in.target = target;
    in.klass = klass;
    in.key = key;
    in.keylen = key != NULL ? keylen : 0;
    in.holder = holder;
    in.holderlen = holder != NULL ? holderlen : 0;
    in.detail = detail;
    in.seconds = seconds;
    events_push(&in);
}

static void
push_renewed(const struct lease_end *e, const struct row *r)
{
    char detail[256];
    double held = (double)(e->expires_ms - e->first_seen_ms) / 1000.0;

    if (held < 0)
        held = 0;
    snprintf(detail, sizeof(detail), "renewed while held, then its lease ran out after "
             "%.1f s held: the renewals stopped without an unlock (the holder crashed, "
             "hung or lost its connection)", held);
    push(EVENT_EXPIRED_RENEWED, r != NULL ? r->target : NULL, r != NULL ? r->klass : NULL,
         e->key, e->keylen, e->holder, e->holderlen, detail, held);
}

void
lease_expired(const struct lease_end *e)
{
    const struct row *r = NULL;

    pthread_mutex_lock(&mu);
    if (e->row >= 0 && (size_t)e->row < nrows) {
        rows[e->row].expired[e->renewed ? 1 : 0]++;
        r = &rows[e->row];
    } else {
        rows_overflow++;
    }
    if (e->holder_hash != 0)
        recent_note(e, clock_now_ms());
    if (e->renewed)
        push_renewed(e, r);
    pthread_mutex_unlock(&mu);
}

static void
push_overrun(const struct lease_line *l, const struct row *r, double overrun_s)
{
    char detail[384];

    snprintf(detail, sizeof(detail), "a %s line of owner %.*s arrived %.3f s after its lease "
             "ran out: it kept working while another client could take the lock",
             l->verb != NULL ? l->verb : "sample",
             (int)(l->owner != NULL ? (l->ownerlen > 128 ? 128 : l->ownerlen) : 1),
             l->owner != NULL ? l->owner : "-", overrun_s);
    push(EVENT_LEASE_OVERRUN, r != NULL ? r->target : NULL, r != NULL ? r->klass : NULL,
         l->key, l->keylen, l->holder, l->holderlen, detail, overrun_s);
}

bool
lease_overrun(const struct lease_line *l, double *overrun_s, char *target, char *klass)
{
    uint64_t pair;
    const struct row *r = NULL;
    struct recent *e;
    size_t i;
    bool found = false;

    if (l->holder == NULL || l->holderlen == 0)
        return false;
    pthread_mutex_lock(&mu);
    if (nrecent == 0)
        goto out;
    pair = lease_pair_hash(keyhash(l->key, l->keylen),
                           (uint32_t)keyhash(l->holder, l->holderlen));
    i = index_find(pair);
    if (index_slot[i] == 0)
        goto out;
    e = &ring[index_slot[i] - 1];
    if (l->at_ms - e->noted_ms > LEASE_RECENT_MS)
        goto out;               /* too long ago to be this holding's */
    *overrun_s = e->expires_ms < l->at_ms ? (double)(l->at_ms - e->expires_ms) / 1000.0 : 0.0;
    if (e->row >= 0 && (size_t)e->row < nrows)
        r = &rows[e->row];
    if (target != NULL)
        copy_str(target, LEASE_TARGET_MAX, r != NULL ? r->target : "");
    if (klass != NULL)
        copy_str(klass, LEASE_CLASS_MAX, r != NULL ? r->klass : "");
    push_overrun(l, r, *overrun_s);
    recent_drop((size_t)(e - ring));
    overruns++;
    found = true;
out:
    pthread_mutex_unlock(&mu);
    return found;
}

void
lease_overrun_reported(const struct lease_line *l, double overrun_s, const char *target,
                       const char *klass)
{
    char detail[384];

    snprintf(detail, sizeof(detail), "owner %.*s reported its lease lost %.3f s after it ran "
             "out, by its own clock: it kept working while another client could take the lock",
             (int)(l->owner != NULL ? (l->ownerlen > 128 ? 128 : l->ownerlen) : 1),
             l->owner != NULL ? l->owner : "-", overrun_s);
    push(EVENT_LEASE_OVERRUN, target != NULL && target[0] ? target : NULL,
         klass != NULL && klass[0] ? klass : NULL, l->key, l->keylen, l->holder, l->holderlen,
         detail, overrun_s);
}

void
lease_lost(const struct lease_line *l, double held_s, double overrun_s, bool expired,
           const char *target, const char *klass)
{
    char detail[384], over[64];

    /* the protocol's 0: found before the lease was due to end (a DEL or a
     * takeover), not at its end */
    if (overrun_s > 0)
        snprintf(over, sizeof(over), ", %.3f s after its lease ended", overrun_s);
    else if (overrun_s == 0)
        snprintf(over, sizeof(over), ", before its lease was due to end (deleted or taken "
                 "over)");
    else
        over[0] = '\0';
    snprintf(detail, sizeof(detail), "owner %.*s reported its lease lost (%s) after %.1f s "
             "held%s",
             (int)(l->owner != NULL ? (l->ownerlen > 128 ? 128 : l->ownerlen) : 1),
             l->owner != NULL ? l->owner : "-",
             expired ? "expired: the lease ran out while held" :
             "renewal: a renewal found the lock gone or another's",
             held_s < 0 ? 0.0 : held_s, over);
    push(EVENT_LEASE_LOST, target, klass, l->key, l->keylen, l->holder, l->holderlen, detail,
         held_s);
}

int
lease_view_take(struct lease_view *v)
{
    size_t i;

    memset(v, 0, sizeof(*v));
    pthread_mutex_lock(&mu);
    if (nrows > 0 && (v->rows = malloc(nrows * sizeof(*v->rows))) == NULL) {
        pthread_mutex_unlock(&mu);
        return -1;
    }
    for (i = 0; i < nrows; i++) {
        memcpy(v->rows[i].target, rows[i].target, sizeof(rows[i].target));
        memcpy(v->rows[i].klass, rows[i].klass, sizeof(rows[i].klass));
        v->rows[i].expired[0] = rows[i].expired[0];
        v->rows[i].expired[1] = rows[i].expired[1];
    }
    v->nrows = nrows;
    v->rows_overflow = rows_overflow;
    v->recent = nrecent;
    v->overruns = overruns;
    pthread_mutex_unlock(&mu);
    return 0;
}

void
lease_view_release(struct lease_view *v)
{
    free(v->rows);
    memset(v, 0, sizeof(*v));
}

void
lease_reset(void)
{
    pthread_mutex_lock(&mu);
    memset(rows, 0, sizeof(rows));
    nrows = 0;
    rows_overflow = 0;
    memset(ring, 0, sizeof(ring));
    memset(index_slot, 0, sizeof(index_slot));
    ring_head = 0;
    nrecent = 0;
    overruns = 0;
    pthread_mutex_unlock(&mu);
}
