/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redisson_semaphore.c - the "redisson-semaphore" row: a Redisson
 * RSemaphore, a string holding the number of permits available (a decimal
 * integer, negative after reducePermits), no TTL by design.
 *
 * Redis cannot tell it from a plain lock whose token is a number, so no
 * value claims this row by itself: a key the operator names in the
 * target's semaphore_patterns is decoded here (formats_semaphore()), and
 * one whose value is not a decimal integer keeps the row its value gives.
 * The one "holder" is the count seen (what the guarded release compares:
 * docs/lockctl.md, "redisson-semaphore"); lockstate never judges this row
 * leaked or long.
 */
#include <limits.h>

#include "collectors/formats/formats_impl.h"

bool
fmt_redisson_sem_claims(const struct raw_lock *raw)
{
    (void)raw;
    return false;
}

/* An optionally negative decimal of 1 to 19 digits, read whole. */
static bool
is_count(const struct raw_lock *raw)
{
    size_t i = 0, digits;

    if (raw->type != RAW_STRING || raw->value == NULL || !fmt_whole_string(raw))
        return false;
    if (raw->valuelen > 0 && raw->value[0] == '-')
        i = 1;
    digits = raw->valuelen - i;
    if (digits == 0 || digits > 19)
        return false;
    for (; i < raw->valuelen; i++)
        if (raw->value[i] < '0' || raw->value[i] > '9')
            return false;
    return true;
}

int
fmt_redisson_sem_decode(const struct raw_lock *raw, struct lock_view *view)
{
    fmt_view_reset(view);
    if (!is_count(raw))
        return -1;
    fmt_add_holder(view, raw->value, raw->valuelen, false, 1);
    return 0;
}

const struct lock_format *
formats_semaphore(const struct raw_lock *raw, struct lock_view *view)
{
    const struct lock_format *f = formats_by_name("redisson-semaphore");
    struct lock_view v;

    if (f == NULL || fmt_redisson_sem_decode(raw, &v) == -1)
        return NULL;
    *view = v;
    return f;
}

bool
formats_permits_available(const struct lock_format *fmt, const char *id, size_t idlen,
                          long long *out)
{
    long long n = 0;
    size_t i = 0;
    bool neg = false;

    if (fmt == NULL || id == NULL || fmt != formats_by_name("redisson-semaphore"))
        return false;
    if (idlen > 0 && id[0] == '-')
        neg = true, i = 1;
    if (idlen == i || idlen - i > 19)
        return false;
    for (; i < idlen; i++) {
        if (id[i] < '0' || id[i] > '9' || n > (LLONG_MAX - (id[i] - '0')) / 10)
            return false;
        n = n * 10 + (id[i] - '0');
    }
    *out = neg ? -n : n;
    return true;
}
