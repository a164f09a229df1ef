/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * node_redis_semaphore.c - redis-semaphore (npm, swarthy): Mutex and Semaphore.
 *
 *   Mutex      key "mutex:<key>", a string: the identifier,
 *              crypto.randomUUID() or "<uuid>-<identifierSuffix>" (or one
 *              the program chose, which then decodes as "plain"); PX
 *              lockTimeout (10 s), refreshed every 8 s.
 *   Semaphore  key "semaphore:<key>", a zset: member = identifier (a
 *              MultiSemaphore writes "<id>_<i>" per permit), score = the
 *              client's Date.now() at the last acquire or refresh.  Each
 *              member is one holder (one permit); holders_total is ZCARD.
 *              The score is refreshed, so it is not an acquisition time
 *              and is not reported as one.
 *
 * The key prefixes are required: a UUID string alone is Spring's shape.
 */
#include <string.h>

#include "collectors/formats/formats_impl.h"

static size_t
members_to_read(const struct raw_lock *raw)
{
    if (raw->fields == NULL)
        return 0;
    return raw->nfields < RAW_FIELDS_MAX ? raw->nfields : RAW_FIELDS_MAX;
}

/* A score as ZRANGE WITHSCORES prints a Date.now(): a plausible Unix ms. */
static bool
ms_score(const char *s, size_t len)
{
    uint64_t v;

    return s != NULL && lw1_parse_udec(s, len, 15, false, &v) == 0 &&
           fmt_time_plausible((int64_t)v);
}

static bool
mutex_value(const struct raw_lock *raw)
{
    return fmt_key_has_prefix(raw, "mutex:") && fmt_whole_string(raw) &&
           raw->valuelen >= FMT_UUID_LEN && fmt_is_uuid4(raw->value, FMT_UUID_LEN) &&
           (raw->valuelen == FMT_UUID_LEN ||
            (raw->valuelen > FMT_UUID_LEN + 1 && raw->value[FMT_UUID_LEN] == '-'));
}

static int
walk_semaphore(const struct raw_lock *raw, struct lock_view *view)
{
    size_t n = members_to_read(raw);

    if (raw->type != RAW_ZSET || n == 0 || !fmt_key_has_prefix(raw, "semaphore:"))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct raw_field *f = &raw->fields[i];

        if (f->name == NULL || f->namelen == 0 || !ms_score(f->value, f->valuelen))
            return -1;
        if (view != NULL)
            fmt_add_holder(view, f->name, f->namelen, false, 1);
    }
    return 0;
}

bool
fmt_node_redis_semaphore_claims(const struct raw_lock *raw)
{
    if (raw->type == RAW_STRING)
        return mutex_value(raw);
    return walk_semaphore(raw, NULL) == 0;
}

int
fmt_node_redis_semaphore_decode(const struct raw_lock *raw, struct lock_view *view)
{
    fmt_view_reset(view);
    if (raw->type == RAW_STRING) {
        if (!mutex_value(raw))
            return -1;
        fmt_add_holder(view, raw->value, raw->valuelen, false, 1);
        return 0;
    }
    return walk_semaphore(raw, view);
}

bool
formats_reads_zset(const char *key, size_t keylen)
{
    return key != NULL && keylen > 10 && memcmp(key, "semaphore:", 10) == 0;
}
