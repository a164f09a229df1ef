/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockfacts.c - from a key's bytes to the facts the judge takes, once for
 * every reader (lockfacts.h).
 *
 * The order of decode's steps: the operator's format_patterns first (a
 * declaration outranks any guess, but not the value: a value that is not
 * the declared format is decoded as detection says and flagged), then the
 * format table, then the operator's semaphore_patterns (they outrank only
 * a row that proves nothing but "some string", and only for a count),
 * then the holders the read cap left out.  Last, where the format came
 * from decides which of the value's facts are facts: a guessed row's time
 * is only a claim.  The semaphore flag and "no TTL by design" come from
 * the row's semaphore column.
 */
#include "collectors/locks/lockfacts.h"

#include "collectors/locks/lockclass.h"
#include "collectors/formats/rawread.h"

const struct lock_format *
lockfacts_declared(const struct target_conf *t, const char *key, size_t keylen)
{
    for (size_t i = 0; t != NULL && i < t->nformat_patterns; i++)
        if (class_glob_match(t->format_globs[i], key, keylen))
            return formats_by_name(t->format_names[i]);
    return NULL;
}

const struct lock_format *
lockfacts_decode(const struct target_conf *t, const struct raw_lock *raw, long long hlen,
                 struct lock_view *view, struct lockfacts_src *src)
{
    const struct lock_format *decl = lockfacts_declared(t, raw->key, raw->keylen);
    const struct lock_format *fmt = NULL;
    struct lockfacts_src out = { FMT_SOURCE_GUESSED, false, 0 };

    if (decl != NULL && formats_decode_as(decl, raw, view) == 0) {
        fmt = decl;
        out.source = FMT_SOURCE_DECLARED;
    } else {
        /* a declaration the value contradicts is flagged, not forced */
        out.contradicts = decl != NULL;
        fmt = formats_decode(raw, view);
        if (fmt->proves == FMT_PROVES_LAYOUT && !view->partial)
            out.source = FMT_SOURCE_PROVEN;
        /* the operator says which counts are Redisson semaphores */
        if (fmt->proves == FMT_PROVES_FALLBACK && lock_key_semaphore(t, raw->key, raw->keylen)) {
            const struct lock_format *sem = formats_semaphore(raw, view);

            if (sem != NULL) {
                fmt = sem;
                out.source = FMT_SOURCE_DECLARED;
            }
        }
    }
    /* a guessed value's time is a claim, not an age */
    if (out.source == FMT_SOURCE_GUESSED && view->acquired_ms != 0) {
        out.claimed_ms = view->acquired_ms;
        view->acquired_ms = 0;
    }
    /* fields past the read cap are holders too (the decoders saw only
     * the first RAW_FIELDS_MAX) */
    rawread_count_cut_holders(view, raw, hlen);
    if (src != NULL)
        *src = out;
    return fmt;
}

bool
lockfacts_value_shared(const struct raw_lock *raw)
{
    const char *v = raw->value;
    size_t n = raw->valuelen;

    if (raw->type != RAW_STRING || raw->value_truncated || v == NULL || n == 0 || n > 4)
        return false;
    if (n == 1)
        return v[0] >= '0' && v[0] <= '9';
    if (v[0] < '1' || v[0] > '9')
        return false;
    for (size_t i = 1; i < n; i++)
        if (v[i] < '0' || v[i] > '9')
            return false;
    return true;
}

long long
lockfacts_idle_s(const struct raw_lock *raw, long long idle_s)
{
    return idle_s < 0 || lockfacts_value_shared(raw) ? -1 : idle_s;
}

bool
lockfacts_drop_future(struct lock_view *view, struct lockfacts_src *src, int64_t now_ms)
{
    bool dropped = false;

    if (view->acquired_ms > now_ms + LOCKFACTS_SKEW_MS) {
        view->acquired_ms = 0;
        dropped = true;
    }
    if (src != NULL && src->claimed_ms > now_ms + LOCKFACTS_SKEW_MS) {
        src->claimed_ms = 0;
        dropped = true;
    }
    return dropped;
}

int64_t
lockfacts_corroborate(int64_t claimed_ms, int64_t blind_since_ms, int64_t now_ms)
{
    if (claimed_ms <= 0 || blind_since_ms <= 0 || claimed_ms < blind_since_ms)
        return 0;
    return claimed_ms > now_ms ? now_ms : claimed_ms;
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
