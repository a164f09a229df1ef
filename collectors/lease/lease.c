/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lease.c - the process's memory of leases that ended (lease.h).
 *
 * Rows: a fixed array of LEASE_ROWS_MAX (target, class) counters, looked
 * up by a linear search (a run asks once per class it meets, not per
 * key).  Recent expiries: a pair ring (pairring.h) of LEASE_RECENT_MAX
 * (key, holder) pairs in the order they were noted, so matching a sample
 * line costs a probe or two however many expiries are remembered.  A pair
 * noted again replaces its entry in place.
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
#include "collectors/lease/pairring.h"
#include "collectors/lease/released.h"
#include "common/clock.h"
#include "common/keyhash.h"

struct row {
    char target[LEASE_TARGET_MAX];
    char klass[LEASE_CLASS_MAX];
    uint64_t expired[2];
};

struct recent {
    uint64_t key_hash;
    uint32_t holder_hash;
    int row;
    int64_t expires_ms;
    int64_t noted_ms;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct row rows[LEASE_ROWS_MAX];
static size_t nrows;
static uint64_t rows_overflow;
static struct recent ring[LEASE_RECENT_MAX];  /* by recent_pairs' position */
PAIRRING_DECLARE(recent_pairs, LEASE_RECENT_MAX);
/* the last acquire (a waiting ok) seen of a pair, Unix ms: an expiry the
 * scanner records after it, but that ended before it, was an older
 * holding's (lease_forget()) */
static int64_t acquired_ms[LEASE_RECENT_MAX];   /* by acquired_pairs' position */
/* a hold line of the pair came after that acquire: its holding ended, and
 * a later hold line is another holding's (one that sent no acquire line:
 * a holder id taken again at once) */
static bool acquired_ended[LEASE_RECENT_MAX];
PAIRRING_DECLARE(acquired_pairs, LEASE_RECENT_MAX);
static uint64_t overruns;
static uint64_t released_early;     /* gone at the lease's end, but released */

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

static void
recent_note(const struct lease_end *e, int64_t now_ms)
{
    int fresh;
    size_t k = pairring_add(&recent_pairs, lease_pair_hash(e->key_hash, e->holder_hash),
                            &fresh);

    /* noted before: now its newest expiry */
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

    /* Its holder said it released the key (a `hold` line) after the last
     * read that found it held, and took it no more since: the key went by
     * a release the scans could not tell from the lease's end (a DEL just
     * before it), not by the lease running out.  A trial: a release 0.2 s
     * before the end, its line in before the scan, was a LockLeaseLost
     * "without an unlock".  Since the first sight was not enough (a
     * red-team): an earlier holding's release hid a crashed one's loss. */
    if (e->holder_hash != 0 &&
        released_since(e->key_hash, e->holder_hash,
                       e->last_seen_ms > 0 ? e->last_seen_ms : e->first_seen_ms)) {
        pthread_mutex_lock(&mu);
        released_early++;
        pthread_mutex_unlock(&mu);
        return;
    }
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
push_overrun(const struct lease_line *l, const struct row *r, double overrun_s, bool reckoned)
{
    char detail[384];
    int ownerlen = (int)(l->owner != NULL ? (l->ownerlen > 128 ? 128 : l->ownerlen) : 1);

    if (reckoned)       /* its acquire's arrival plus its hold */
        snprintf(detail, sizeof(detail), "owner %.*s released it %.3f s after its lease ran "
                 "out (its acquire's arrival plus the hold its hold line reports): it kept "
                 "working while another client could take the lock", ownerlen,
                 l->owner != NULL ? l->owner : "-", overrun_s);
    else
        snprintf(detail, sizeof(detail), "a %s line of owner %.*s arrived %.3f s after its "
                 "lease ran out: it kept working while another client could take the lock",
                 l->verb != NULL ? l->verb : "sample", ownerlen,
                 l->owner != NULL ? l->owner : "-", overrun_s);
    push(EVENT_LEASE_OVERRUN, r != NULL ? r->target : NULL, r != NULL ? r->klass : NULL,
         l->key, l->keylen, l->holder, l->holderlen, detail, overrun_s);
}

bool
lease_overrun(const struct lease_line *l, double *overrun_s, char *target, char *klass)
{
    const struct row *r = NULL;
    struct recent *e;
    uint64_t pair;
    int64_t end_ms = l->at_ms;
    long k, ka;
    bool found = false, hold = l->verb != NULL && strcmp(l->verb, "hold") == 0;

    if (l->holder == NULL || l->holderlen == 0)
        return false;
    pair = lease_pair_hash(keyhash(l->key, l->keylen), (uint32_t)keyhash(l->holder, l->holderlen));
    pthread_mutex_lock(&mu);
    ka = pairring_find(&acquired_pairs, pair);
    k = pairring_find(&recent_pairs, pair);
    if (k < 0)
        goto out;
    e = &ring[k];
    if (l->at_ms - e->noted_ms > LEASE_RECENT_MS)
        goto out;               /* too long ago to be this holding's */
    if (ka >= 0 && acquired_ms[ka] >= e->expires_ms) {
        /* taken again after that lease ended (the scan saw the expiry
         * later): the line is the new holding's */
        pairring_drop(&recent_pairs, (size_t)k);
        goto out;
    }
    /* a hold sent late (its sender stalled after the release): the
     * holding ended by its acquire's arrival plus the hold it reports */
    if (hold && l->held_us > 0 && ka >= 0 && acquired_ms[ka] > 0 && !acquired_ended[ka] &&
        acquired_ms[ka] + (l->held_us + 999) / 1000 < end_ms)
        end_ms = acquired_ms[ka] + (l->held_us + 999) / 1000;
    if (hold && end_ms < e->expires_ms + LEASE_HOLD_SLACK_MS) {
        /* a release at the lease's end, perhaps before it */
        pairring_drop(&recent_pairs, (size_t)k);
        goto out;
    }
    *overrun_s = e->expires_ms < end_ms ? (double)(end_ms - e->expires_ms) / 1000.0 : 0.0;
    if (e->row >= 0 && (size_t)e->row < nrows)
        r = &rows[e->row];
    if (target != NULL)
        copy_str(target, LEASE_TARGET_MAX, r != NULL ? r->target : "");
    if (klass != NULL)
        copy_str(klass, LEASE_CLASS_MAX, r != NULL ? r->klass : "");
    push_overrun(l, r, *overrun_s, end_ms < l->at_ms);
    pairring_drop(&recent_pairs, (size_t)k);
    overruns++;
    found = true;
out:
    if (hold && ka >= 0)
        acquired_ended[ka] = true;
    pthread_mutex_unlock(&mu);
    return found;
}

void
lease_forget(const struct lease_line *l)
{
    uint64_t pair;
    long k;
    int fresh;

    if (l->holder == NULL || l->holderlen == 0)
        return;
    pair = lease_pair_hash(keyhash(l->key, l->keylen), (uint32_t)keyhash(l->holder, l->holderlen));
    pthread_mutex_lock(&mu);
    k = pairring_find(&recent_pairs, pair);
    if (k >= 0)
        pairring_drop(&recent_pairs, (size_t)k);
    /* and for an expiry the scanner has yet to see (a pass under way) */
    size_t ia = pairring_add(&acquired_pairs, pair, &fresh);

    acquired_ms[ia] = l->at_ms;
    acquired_ended[ia] = false;
    pthread_mutex_unlock(&mu);
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
    v->recent = recent_pairs.n;
    v->overruns = overruns;
    v->released_early = released_early;
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
    pairring_clear(&recent_pairs);
    pairring_clear(&acquired_pairs);
    memset(acquired_ended, 0, sizeof(acquired_ended));
    overruns = 0;
    released_early = 0;
    pthread_mutex_unlock(&mu);
}
