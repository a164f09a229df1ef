/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawread.c - value replies to raw_lock, shared by the scanner and lockctl
 * (see rawread.h).
 */
#include "collectors/redis/rawread.h"

#include <string.h>

enum raw_type
rawread_type(const redisReply *rep)
{
    if (rep == NULL || rep->type != REDIS_REPLY_STATUS)
        return RAW_NONE;
    if (rep->len == 6 && memcmp(rep->str, "string", 6) == 0)
        return RAW_STRING;
    if (rep->len == 4 && memcmp(rep->str, "hash", 4) == 0)
        return RAW_HASH;
    if (rep->len == 4 && memcmp(rep->str, "none", 4) == 0)
        return RAW_NONE;
    return RAW_OTHER;
}

bool
rawread_string(const redisReply *rep, struct raw_lock *raw)
{
    if (rep == NULL || rep->type != REDIS_REPLY_STRING)
        return false;
    raw->value = rep->str;
    raw->valuelen = rep->len;
    if (raw->valuelen > RAW_VALUE_MAX) {
        raw->valuelen = RAW_VALUE_MAX;
        raw->value_truncated = true;
    }
    return true;
}

bool
rawread_hash(const redisReply *rep, struct raw_field *fields, struct raw_lock *raw)
{
    const redisReply *arr;
    size_t j, nf = 0;

    if (rep == NULL || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_ARRAY)
        return false;
    arr = rep->element[1];
    for (j = 0; j + 1 < arr->elements; j += 2) {
        if (nf == RAW_FIELDS_MAX) {
            raw->fields_truncated = true;
            break;
        }
        fields[nf].name = arr->element[j]->str;
        fields[nf].namelen = arr->element[j]->len;
        fields[nf].value = arr->element[j + 1]->str;
        fields[nf].valuelen = arr->element[j + 1]->len;
        nf++;
    }
    /* a non-zero cursor means more fields than one HSCAN gave */
    if (!(rep->element[0]->len == 1 && rep->element[0]->str[0] == '0'))
        raw->fields_truncated = true;
    raw->fields = fields;
    raw->nfields = nf;
    return true;
}

void
rawread_count_cut_holders(struct lock_view *view, const struct raw_lock *raw, long long hlen)
{
    if (raw->fields_truncated && view->holders_total > 0 && hlen > (long long)raw->nfields)
        view->holders_total += (size_t)(hlen - (long long)raw->nfields);
}
