/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstate.c - the one judge of a lock's state and the one pattern check.
 *
 * Every place that calls a lock leaked, long or reentrant_high, or a key
 * a lock of the target, comes here: the scanner per key it records (and
 * again when the client registry back-dates a holder), lockctl per key it
 * reads, and the API and lockctl when they turn a state name into the
 * states it selects.  The comparisons are what docs/alerts.md and
 * docs/lockctl.md promise: leaked and reentrant_high are reached at the
 * threshold (>=), long only past it ("longer than max_hold"), so
 * max_hold = 5m lets a holder keep a lock for exactly five minutes.
 */
#include "collectors/locks/lockstate.h"

#include <string.h>

#include "collectors/locks/lockclass.h"
#include "collectors/locks/snapshot.h"

uint8_t
lockstate_judge(const struct lockstate_rules *rules, const struct lockstate_facts *f)
{
    uint8_t states = LOCK_HELD;

    if (!f->semaphore && f->pttl_ms == -1 && f->nottl_ms >= 0 &&
        f->nottl_ms >= rules->leak_grace_ms)
        states |= LOCK_LEAKED;
    if (!f->semaphore && f->nholders > 0 && f->held_ms > rules->max_hold_ms)
        states |= LOCK_LONG;
    if (rules->max_reentrancy > 0 && f->max_count >= rules->max_reentrancy)
        states |= LOCK_REENTRANT_HIGH;
    return states;
}

int64_t
lockstate_start_age(long long idle_s, int64_t acquired_ms, int64_t now_ms, bool *acquired)
{
    /* Redis keeps an object's last access in whole seconds of a clock its
     * cron advances (LRU_CLOCK_RESOLUTION 1000 ms), so IDLETIME may be up
     * to a second more than the time since the write: a second less is a
     * lower bound. */
    int64_t age = idle_s > 1 ? ((int64_t)idle_s - 1) * 1000 : 0;
    bool from_acquired = false;

    if (acquired_ms > 0) {
        int64_t since = now_ms - acquired_ms;

        if (since < 0)
            since = 0;
        if (since >= age) {
            age = since;
            from_acquired = true;
        }
    }
    if (acquired != NULL)
        *acquired = from_acquired;
    return age;
}

bool
lockstate_in_patterns(const struct target_conf *t, const char *key, size_t keylen)
{
    for (size_t i = 0; i < t->npatterns; i++)
        if (class_glob_match(t->patterns[i], key, keylen))
            return true;
    return false;
}

int
lockstate_mask(const char *name, uint8_t *mask)
{
    static const struct { const char *name; uint8_t mask; } names[] = {
        { "all", LOCK_HELD }, { "held", LOCK_HELD }, { "leaked", LOCK_LEAKED },
        { "long", LOCK_LONG }, { "reentrant_high", LOCK_REENTRANT_HIGH },
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i].name) == 0) {
            *mask = names[i].mask;
            return 0;
        }
    return -1;
}
