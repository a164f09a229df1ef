/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * released.c - the releases holders reported (released.h): a pair ring
 * (pairring.h) of the (key, holder) pairs of recent acquire, `hold` and
 * `lost` lines, with the arrival of the last hold and loss and the order
 * of the last acquire and hold.
 */
#include "collectors/lease/released.h"

#include <pthread.h>
#include <string.h>

#include "collectors/lease/lease.h"
#include "collectors/lease/pairring.h"

struct seen {
    int64_t hold_ms;            /* the last `hold` line; 0: none */
    int64_t lost_ms;            /* the last `lost` line; 0: none */
    uint64_t hold_seq;          /* the order of the last hold and acquire */
    uint64_t acquire_seq;       /* (0: none): lines of one datagram arrive
                                 * in the same millisecond */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seq;
static struct seen seen[RELEASED_MAX];  /* by pairs' position */
PAIRRING_DECLARE(pairs, RELEASED_MAX);

void
released_note(uint64_t key_hash, uint32_t holder_hash, enum released_what what,
               int64_t at_ms)
{
    int fresh;
    size_t k;

    if (holder_hash == 0)
        return;
    pthread_mutex_lock(&mu);
    k = pairring_add(&pairs, lease_pair_hash(key_hash, holder_hash), &fresh);
    if (fresh)
        memset(&seen[k], 0, sizeof(seen[k]));
    seq++;
    if (what == RELEASED_LOST) {
        seen[k].lost_ms = at_ms;
    } else if (what == RELEASED_HOLD) {
        seen[k].hold_ms = at_ms;
        seen[k].hold_seq = seq;
    } else {
        seen[k].acquire_seq = seq;
    }
    pthread_mutex_unlock(&mu);
}

bool
released_since(uint64_t key_hash, uint32_t holder_hash, int64_t since_ms)
{
    bool yes = false;
    long k;

    if (holder_hash == 0)
        return false;
    pthread_mutex_lock(&mu);
    k = pairring_find(&pairs, lease_pair_hash(key_hash, holder_hash));
    if (k >= 0)
        yes = seen[k].hold_ms != 0 && seen[k].hold_ms >= since_ms &&
              seen[k].acquire_seq < seen[k].hold_seq &&
              (seen[k].lost_ms == 0 || seen[k].lost_ms < since_ms);
    pthread_mutex_unlock(&mu);
    return yes;
}

void
released_reset(void)
{
    pthread_mutex_lock(&mu);
    pairring_clear(&pairs);
    memset(seen, 0, sizeof(seen));
    seq = 0;
    pthread_mutex_unlock(&mu);
}
