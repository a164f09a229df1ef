/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawread.c - value replies to raw_lock, shared by the scanner and lockctl
 * (see rawread.h).
 */
#include "collectors/formats/rawread.h"

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
    if (rep->len == 4 && memcmp(rep->str, "zset", 4) == 0)
        return RAW_ZSET;
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

bool
rawread_zset(const redisReply *rep, struct raw_field *fields, struct raw_lock *raw,
             long long zcard)
{
    size_t j, nf = 0;

    if (rep == NULL || rep->type != REDIS_REPLY_ARRAY)
        return false;
    for (j = 0; j + 1 < rep->elements && nf < RAW_FIELDS_MAX; j += 2) {
        /* RESP3 would give doubles; the scanner speaks RESP2 */
        if (rep->element[j]->type != REDIS_REPLY_STRING ||
            rep->element[j + 1]->type != REDIS_REPLY_STRING)
            return false;
        fields[nf].name = rep->element[j]->str;
        fields[nf].namelen = rep->element[j]->len;
        fields[nf].value = rep->element[j + 1]->str;
        fields[nf].valuelen = rep->element[j + 1]->len;
        nf++;
    }
    if (zcard > (long long)nf || j + 1 < rep->elements)
        raw->fields_truncated = true;
    raw->fields = fields;
    raw->nfields = nf;
    return true;
}

void
rawread_mode(const redisReply *rep, struct raw_lock *raw)
{
    const redisReply *e;

    raw->mode_read = false;
    raw->mode = NULL;
    raw->modelen = 0;
    if (rep == NULL || rep->type != REDIS_REPLY_ARRAY || rep->elements != 1)
        return;
    e = rep->element[0];
    if (e->type == REDIS_REPLY_NIL) {
        raw->mode_read = true;
    } else if (e->type == REDIS_REPLY_STRING) {
        raw->mode_read = true;
        raw->mode = e->str;
        raw->modelen = e->len;
    }
}

void
rawread_count_cut_holders(struct lock_view *view, const struct raw_lock *raw, long long hlen)
{
    long long rest = hlen - (long long)raw->nfields;

    if (!raw->fields_truncated || view->holders_total == 0 || rest <= 0)
        return;
    /* a read/write lock's mode field is in HLEN but holds nothing; when it
     * was not among the fields read it is in the rest */
    if (view->mode[0] != '\0') {
        bool seen = false;

        for (size_t i = 0; i < raw->nfields && !seen; i++)
            seen = raw->fields[i].namelen == 4 && memcmp(raw->fields[i].name, "mode", 4) == 0;
        if (!seen)
            rest--;
    }
    if (rest > 0)
        view->holders_total += (size_t)rest;
}
