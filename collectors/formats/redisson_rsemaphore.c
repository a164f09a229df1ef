/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redisson_rsemaphore.c - the "redisson-semaphore" row: a Redisson
 * RSemaphore, a string holding the number of permits available (a decimal
 * integer of up to 18 digits, negative after reducePermits), no TTL by design.
 *
 * Redis cannot tell it from a plain lock whose token is a number, so no
 * value claims this row by itself: a key the operator names in the
 * target's semaphore_patterns is decoded here (formats_semaphore()), and
 * one whose value is not a decimal integer keeps the row its value gives.
 * The one "holder" is the count seen (what the guarded release compares:
 * docs/lockctl.md, "redisson-semaphore"); its semaphore column
 * (FMT_SEM_COUNT) says lockstate never judges it leaked or long.
 */
#include "collectors/formats/formats_impl.h"

bool
fmt_redisson_sem_claims(const struct raw_lock *raw)
{
    (void)raw;
    return false;
}

/* An optionally negative decimal of 1 to 18 digits (lw1_parse_udec). */
static bool
parse_count(const char *s, size_t len, long long *out)
{
    bool neg = len > 0 && s[0] == '-';
    uint64_t u;

    if (s == NULL || lw1_parse_udec(s + neg, len - neg, 18, false, &u) != 0)
        return false;
    *out = neg ? -(long long)u : (long long)u;
    return true;
}

static bool
is_count(const struct raw_lock *raw)
{
    long long n;

    return raw->type == RAW_STRING && raw->value != NULL && fmt_whole_string(raw) &&
           parse_count(raw->value, raw->valuelen, &n);
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

/* The row semaphore_patterns give a count: the one with FMT_SEM_COUNT. */
static const struct lock_format *
count_row(void)
{
    for (size_t i = 0; i < formats_count; i++)
        if (formats_table[i].semaphore == FMT_SEM_COUNT)
            return &formats_table[i];
    return NULL;
}

const struct lock_format *
formats_semaphore(const struct raw_lock *raw, struct lock_view *view)
{
    const struct lock_format *f = count_row();
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
    if (fmt == NULL || id == NULL || fmt->semaphore != FMT_SEM_COUNT)
        return false;
    return parse_count(id, idlen, out);
}
