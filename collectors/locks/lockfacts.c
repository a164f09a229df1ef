/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockfacts.c - from a key's bytes to the facts the judge takes, once for
 * every reader (lockfacts.h).
 *
 * The order of decode's steps is what the agent and lockctl have always
 * done: the format table first, then the operator's semaphore_patterns
 * (they outrank only a row that proves nothing but "some string", and only
 * for a count), then the holders the read cap left out.  The semaphore
 * flag and "no TTL by design" come from the row's semaphore column.
 */
#include "collectors/locks/lockfacts.h"

#include "collectors/locks/lockclass.h"
#include "collectors/formats/rawread.h"

const struct lock_format *
lockfacts_decode(const struct target_conf *t, const struct raw_lock *raw, long long hlen,
                 struct lock_view *view)
{
    const struct lock_format *fmt = formats_decode(raw, view);

    /* the operator says which counts are Redisson semaphores */
    if (fmt->proves == FMT_PROVES_FALLBACK && lock_key_semaphore(t, raw->key, raw->keylen)) {
        const struct lock_format *sem = formats_semaphore(raw, view);

        if (sem != NULL)
            fmt = sem;
    }
    /* fields past the read cap are holders too (the decoders saw only
     * the first RAW_FIELDS_MAX) */
    rawread_count_cut_holders(view, raw, hlen);
    return fmt;
}

void
lockfacts_fill(struct lockstate_facts *f, const struct lock_format *fmt, int64_t pttl_ms,
               size_t nholders, int64_t max_count, int64_t held_ms, int64_t nottl_ms)
{
    f->pttl_ms = pttl_ms;
    f->nholders = nholders;
    f->max_count = max_count;
    f->held_ms = held_ms;
    f->nottl_ms = nottl_ms;
    f->semaphore = fmt != NULL && fmt->semaphore == FMT_SEM_COUNT;
}

const struct lock_format *
lockfacts_kin(const struct lock_format *fmt, unsigned helper_kinds, bool *ttl_optional)
{
    const struct lock_format *to = formats_kin(fmt, helper_kinds);

    if (ttl_optional != NULL)
        *ttl_optional = to != NULL && to != fmt &&
            (to->semaphore == FMT_SEM_COUNT || to->semaphore == FMT_SEM_PERMITS);
    return to;
}
