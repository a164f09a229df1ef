/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redisson.c - Redisson's hash locks: RLock (and everything stored like it:
 * FencedLock, SpinLock, NonReentrantLock, the FairLock hash) and the
 * ReadWriteLock hash.
 *
 * Redisson puts no prefix on a lock key, so these locks are recognised by
 * shape alone: a hash whose fields are "<client uuid>:<thread id>" with the
 * reentrant hold count as value; an RW lock adds a "mode" field and marks
 * its write holder with a ":write" suffix.  The checks are strict (the
 * client uuid is Java's lowercase UUID.toString(), counts are what HINCRBY
 * writes) because a hash that merely looks similar must not be shown with
 * made-up holders: it falls through to "unknown" instead.
 *
 * Only the first RAW_FIELDS_MAX fields are looked at, whatever nfields
 * says, so a scanner that read more cannot make a decode unbounded.
 */
#include <limits.h>
#include <string.h>

#include "collectors/formats/formats_impl.h"


#define WRITE_SUFFIX     ":write"
#define WRITE_SUFFIX_LEN (sizeof(WRITE_SUFFIX) - 1)

static size_t
fields_to_read(const struct raw_lock *raw)
{
    if (raw->fields == NULL)
        return 0;
    return raw->nfields < RAW_FIELDS_MAX ? raw->nfields : RAW_FIELDS_MAX;
}

/*
 * "<lowercase uuid>:<tid>", tid an optionally negative decimal that fits a
 * long long (the reactive APIs accept any long as thread id).
 */
static bool
parse_lock_name(const char *s, size_t len, long long *tid)
{
    const char *t;
    size_t tlen;
    bool neg;
    uint64_t mag;

    if (s == NULL || len < FMT_UUID_LEN + 2 || s[FMT_UUID_LEN] != ':')
        return false;
    if (!fmt_is_uuid(s, FMT_UUID_LEN, true))
        return false;
    t = s + FMT_UUID_LEN + 1;
    tlen = len - FMT_UUID_LEN - 1;
    neg = t[0] == '-';
    if (neg) {
        t++;
        tlen--;
    }
    if (lw1_parse_udec(t, tlen, 19, false, &mag) == -1)
        return false;
    if (neg) {
        if (mag > (uint64_t)INT64_MAX + 1)
            return false;
        *tid = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(long long)mag;
    } else {
        if (mag > (uint64_t)INT64_MAX)
            return false;
        *tid = (long long)mag;
    }
    return true;
}

/* A hold count as HINCRBY leaves it: positive, canonical decimal. */
static bool
parse_count(const char *s, size_t len, long *count)
{
    uint64_t v;

    if (s == NULL || lw1_parse_udec(s, len, 18, true, &v) == -1)
        return false;
    if (v == 0 || v > (uint64_t)LONG_MAX)
        return false;
    *count = (long)v;
    return true;
}

static bool
field_is(const struct raw_field *f, const char *lit)
{
    size_t n = strlen(lit);

    return f->namelen == n && f->name != NULL && memcmp(f->name, lit, n) == 0;
}

/*
 * Walk an RLock hash.  With view NULL this only checks the shape, so
 * claims() and decode() share one definition of what a Redisson lock is.
 * A hash cut by the read cap is an RLock only by a guess (an RLock has
 * one holder): claimed when the mode read on its own says it has none
 * (or it was not asked), marked view->partial.
 */
static int
scan_rlock(const struct raw_lock *raw, struct lock_view *view)
{
    size_t n = fields_to_read(raw);
    long long tid = -1;

    if (raw->type != RAW_HASH || n == 0 ||
        (raw->fields_truncated && raw->mode_read && raw->mode != NULL))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct raw_field *f = &raw->fields[i];
        long count;

        if (!parse_lock_name(f->name, f->namelen, &tid) ||
            !parse_count(f->value, f->valuelen, &count))
            return -1;
        if (view != NULL)
            fmt_add_holder(view, f->name, f->namelen, false, count);
    }
    if (view != NULL && view->holders_total == 1 && !raw->fields_truncated)
        view->thread = tid;
    if (view != NULL)
        view->partial = raw->fields_truncated;
    return 0;
}

/* "read" or "write" as the mode field spells it, else NULL. */
static const char *
mode_of(const char *v, size_t len)
{
    if (v == NULL)
        return NULL;
    if (len == 4 && memcmp(v, "read", 4) == 0)
        return "read";
    if (len == 5 && memcmp(v, "write", 5) == 0)
        return "write";
    return NULL;
}

/* Walk an RW lock hash; see scan_rlock() for the view == NULL rule. */
static int
scan_rwlock(const struct raw_lock *raw, struct lock_view *view)
{
    size_t n = fields_to_read(raw);
    const char *mode = NULL;
    long long tid = -1;

    if (raw->type != RAW_HASH || n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct raw_field *f = &raw->fields[i];
        size_t nlen = f->namelen;
        long count;

        if (field_is(f, "mode")) {
            if (mode != NULL || (mode = mode_of(f->value, f->valuelen)) == NULL)
                return -1;
            continue;
        }
        if (nlen > WRITE_SUFFIX_LEN && f->name != NULL &&
            memcmp(f->name + nlen - WRITE_SUFFIX_LEN, WRITE_SUFFIX,
                   WRITE_SUFFIX_LEN) == 0) {
            nlen -= WRITE_SUFFIX_LEN;
        }
        if (!parse_lock_name(f->name, nlen, &tid) ||
            !parse_count(f->value, f->valuelen, &count))
            return -1;
        if (view != NULL)
            fmt_add_holder(view, f->name, f->namelen, false, count);
    }
    /* Read/write is what "mode" says, never what the size suggests: a
     * hash cut by the read cap may not show "mode" among the fields read,
     * so the reader asked for it on its own (raw->mode_read). */
    if (mode == NULL && raw->mode_read && raw->mode != NULL &&
        (mode = mode_of(raw->mode, raw->modelen)) == NULL)
        return -1;
    if (mode == NULL)
        return -1;
    if (view != NULL) {
        memcpy(view->mode, mode, strlen(mode) + 1);
        if (view->holders_total == 1)
            view->thread = tid;
    }
    return 0;
}

bool
fmt_redisson_claims(const struct raw_lock *raw)
{
    return scan_rlock(raw, NULL) == 0;
}

int
fmt_redisson_decode(const struct raw_lock *raw, struct lock_view *view)
{
    fmt_view_reset(view);
    return scan_rlock(raw, view);
}

bool
fmt_redisson_rw_claims(const struct raw_lock *raw)
{
    return scan_rwlock(raw, NULL) == 0;
}

int
fmt_redisson_rw_decode(const struct raw_lock *raw, struct lock_view *view)
{
    fmt_view_reset(view);
    return scan_rwlock(raw, view);
}
