/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lostat.c - the locks a change of server lost (lostat.h): a pair ring
 * (pairring.h) of their (key, holder) pairs, with the target, the view
 * that last saw them held and the change.
 */
#include "collectors/lease/lostat.h"

#include <pthread.h>
#include <string.h>

#include "collectors/lease/lease.h"
#include "collectors/lease/pairring.h"

struct loss {
    uint64_t target_hash;
    int64_t started_ms;         /* the view before the change started */
    int64_t finished_ms;        /* ... and finished */
    int64_t lost_ms;            /* the change was found */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct loss losses[LOSTAT_MAX];  /* by pairs' position */
PAIRRING_DECLARE(pairs, LOSTAT_MAX);

void
lostat_note(uint64_t key_hash, uint32_t holder_hash, uint64_t target_hash,
            int64_t started_ms, int64_t finished_ms, int64_t lost_ms)
{
    int fresh;
    size_t k;

    if (holder_hash == 0)
        return;
    pthread_mutex_lock(&mu);
    k = pairring_add(&pairs, lease_pair_hash(key_hash, holder_hash), &fresh);
    losses[k].target_hash = target_hash;
    losses[k].started_ms = started_ms;
    losses[k].finished_ms = finished_ms;
    losses[k].lost_ms = lost_ms;
    pthread_mutex_unlock(&mu);
}

static bool
explains(long k, uint64_t target_hash, int64_t acquired_ms, int64_t reported_ms)
{
    const struct loss *l;

    if (k < 0)
        return false;
    l = &losses[k];
    return (target_hash == 0 || target_hash == l->target_hash) &&
           acquired_ms <= l->finished_ms + LOSTAT_SLACK_MS &&
           reported_ms >= l->started_ms && reported_ms <= l->lost_ms + LOSTAT_KEEP_MS;
}

bool
lostat_explains(uint64_t key_hash, uint32_t holder_hash, uint64_t target_hash,
                int64_t acquired_ms, int64_t reported_ms)
{
    bool yes;

    if (holder_hash == 0)
        return false;
    pthread_mutex_lock(&mu);
    yes = explains(pairring_find(&pairs, lease_pair_hash(key_hash, holder_hash)), target_hash,
                   acquired_ms, reported_ms) ||
          explains(pairring_find(&pairs, lease_pair_hash(key_hash, LOSTAT_ANY_HOLDER)),
                   target_hash, acquired_ms, reported_ms);
    pthread_mutex_unlock(&mu);
    return yes;
}

void
lostat_reset(void)
{
    pthread_mutex_lock(&mu);
    pairring_clear(&pairs);
    memset(losses, 0, sizeof(losses));
    pthread_mutex_unlock(&mu);
}
