/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * audittail.c - the audit stream's releases as force_release events
 * (audittail.h): XREAD of what came after the last entry read, each
 * release that ran mapped to an event.
 *
 * The audit entry is written before the change (guard.lua), so it cannot
 * say whether the key went; it says the lock's TYPE and its holders before
 * ("old": a hash lock's "field=count ..."): a hash that had another holder
 * than the one released is left, and no event; every other release that
 * ran deleted its key, or may have (a cut "old"), and is one.
 */
#include "collectors/release/audittail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/redis/conn.h"
#include "collectors/redis/target.h"
#include "collectors/release/release.h"
#include "common/keytext.h"

const redisReply *
audit_field(const redisReply *kv, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i + 1 < kv->elements; i += 2)
        if (kv->element[i]->type == REDIS_REPLY_STRING && kv->element[i]->len == n &&
            memcmp(kv->element[i]->str, name, n) == 0 &&
            kv->element[i + 1]->type == REDIS_REPLY_STRING)
            return kv->element[i + 1];
    return NULL;
}

static bool
field_is(const redisReply *kv, const char *name, const char *want)
{
    const redisReply *f = audit_field(kv, name);

    return f != NULL && f->len == strlen(want) && memcmp(f->str, want, f->len) == 0;
}

/* A hash lock that had more holders than the one released: "old" is
 * whole (under RELEASE_OLD_MAX) and names two fields or more besides
 * "mode". */
static bool
holders_left(const redisReply *kv)
{
    const redisReply *old = audit_field(kv, "old");
    size_t i = 0, holders = 0;

    if (!field_is(kv, "type", "hash") || old == NULL || old->len >= RELEASE_OLD_MAX - 1)
        return false;
    while (i < old->len) {
        size_t start = i;

        while (i < old->len && old->str[i] != ' ')
            i++;
        if (i > start && !(i - start > 5 && memcmp(old->str + start, "mode=", 5) == 0))
            holders++;
        i++;
    }
    return holders > 1;
}

/* The printable text of field name (sanitised, NUL-free) into buf. */
static void
field_text(const redisReply *kv, const char *name, char *buf, size_t len)
{
    const redisReply *f = audit_field(kv, name);
    size_t n = f != NULL ? keytext_sanitize(buf, len, f->str, f->len) : 0;

    buf[n < len ? n : len - 1] = '\0';
    for (size_t i = 0; buf[i] != '\0'; i++)
        if (buf[i] == '\n' || buf[i] == '\r')
            buf[i] = ' ';
}

bool
audit_entry_event(const redisReply *fields, const char *id, const char *target,
                  struct event_in *in, char *detail)
{
    const redisReply *key = audit_field(fields, "key"), *h = audit_field(fields, "holder");
    char op[128], reason[512], format[64], age[24];
    long long ms;

    if (fields->type != REDIS_REPLY_ARRAY || !field_is(fields, "action", "release") ||
        !field_is(fields, "outcome", "released") || key == NULL || holders_left(fields) ||
        release_audit_pushed(id))
        return false;
    field_text(fields, "operator", op, sizeof(op));
    field_text(fields, "reason", reason, sizeof(reason));
    field_text(fields, "format", format, sizeof(format));
    field_text(fields, "age", age, sizeof(age));
    snprintf(detail, EVENT_TEXT_MAX, "released by %s (%s lock)%s%s; audit entry %s",
             op[0] ? op : "?", format[0] ? format : "unknown", reason[0] ? ": " : "", reason,
             id);
    memset(in, 0, sizeof(*in));
    in->kind = EVENT_FORCE_RELEASE;
    in->target = target;
    in->key = key->str;
    in->keylen = key->len;
    in->holder = h != NULL ? h->str : NULL;
    in->holderlen = h != NULL ? h->len : 0;
    in->detail = detail;
    /* the holder's age as the releaser knew it (0: unknown; entries of
     * older versions have none), and when it ran: the entry id's
     * milliseconds, the server's clock, as XADD stamped it */
    in->seconds = sscanf(age, "%lld", &ms) == 1 && ms > 0 ? (double)ms / 1000.0 : -1;
    if (sscanf(id, "%lld-", &ms) == 1 && ms > 0)
        in->at_ms = (int64_t)ms;
    return true;
}

/* The newest entry's id into at->last_id ("0-0" for an empty stream). */
static int
start_at_newest(struct audit_tail *at, redisContext *c, const struct target_conf *node,
                const char *stream, char *err, size_t errlen)
{
    const char *argv[6] = { "XREVRANGE", stream, "+", "-", "COUNT", "1" };
    redisReply *r = redisconn_command(c, node, "XREVRANGE", 6, argv, NULL, err, errlen);
    int rc = -1;

    if (r == NULL)
        return -1;
    if (r->type == REDIS_REPLY_ARRAY) {
        const redisReply *e = r->elements > 0 ? r->element[0] : NULL;

        snprintf(at->last_id, sizeof(at->last_id), "0-0");
        if (e != NULL && e->type == REDIS_REPLY_ARRAY && e->elements == 2 &&
            e->element[0]->type == REDIS_REPLY_STRING && e->element[0]->len < AUDIT_ID_MAX) {
            memcpy(at->last_id, e->element[0]->str, e->element[0]->len);
            at->last_id[e->element[0]->len] = '\0';
        }
        rc = 0;
    } else {
        rc = r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOPERM", 6) == 0 ? 1 : -1;
        snprintf(err, errlen, "XREVRANGE %s: %.200s", stream,
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
    freeReplyObject(r);
    return rc;
}

/* XREAD's reply ([[stream, [[id, fields]...]]], or nil): push each
 * release, move last_id past every entry. */
static void
push_entries(struct audit_tail *at, const redisReply *r, const char *target, audit_age_fn *age,
             void *arg)
{
    const redisReply *entries;
    char *detail;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_ARRAY || r->element[0]->elements != 2 ||
        (entries = r->element[0]->element[1])->type != REDIS_REPLY_ARRAY)
        return;
    detail = malloc(EVENT_TEXT_MAX);
    for (size_t i = 0; i < entries->elements; i++) {
        const redisReply *e = entries->element[i];
        struct event_in in;

        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            e->element[0]->type != REDIS_REPLY_STRING || e->element[0]->len >= AUDIT_ID_MAX)
            continue;
        memcpy(at->last_id, e->element[0]->str, e->element[0]->len);
        at->last_id[e->element[0]->len] = '\0';
        if (detail == NULL || !audit_entry_event(e->element[1], at->last_id, target, &in, detail))
            continue;
        if (in.seconds < 0 && age != NULL && in.at_ms > 0) {
            int64_t ms = age(arg, in.key, in.keylen, in.holder, in.holderlen, in.at_ms);

            if (ms > 0)
                in.seconds = (double)ms / 1000.0;
        }
        events_push(&in);
    }
    free(detail);
}

int
audit_tail_poll(struct audit_tail *at, const struct target_conf *t, const char *stream,
                audit_age_fn *age, void *arg, char *err, size_t errlen)
{
    struct target_conf node;
    redisContext *c;
    redisReply *r = NULL;
    int rc = -1;

    if (at->refused || stream == NULL || stream[0] == '\0')
        return 1;
    if ((c = target_open(t, stream, strlen(stream), NULL, &node, err, errlen)) == NULL)
        return -1;
    if (at->last_id[0] == '\0') {
        rc = start_at_newest(at, c, &node, stream, err, errlen);
    } else {
        char count[16];
        const char *argv[6] = { "XREAD", "COUNT", count, "STREAMS", stream, at->last_id };

        snprintf(count, sizeof(count), "%d", AUDIT_TAIL_BATCH);
        if ((r = redisconn_command(c, &node, "XREAD", 6, argv, NULL, err, errlen)) == NULL)
            goto out;
        if (r->type == REDIS_REPLY_ERROR) {
            rc = strncmp(r->str, "NOPERM", 6) == 0 ? 1 : -1;
            snprintf(err, errlen, "XREAD %s: %.200s", stream, r->str);
            goto out;
        }
        push_entries(at, r, t->name, age, arg);
        rc = 0;
    }
out:
    if (rc == 1)
        at->refused = true;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return rc;
}
