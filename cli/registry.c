/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c - lockctl show and list: what liblockwatch's client registry
 * says of a lock's holder, read as the agent's scanner reads it
 * (collectors/scan/registry.c).
 *
 * A lock of a registry row (liblockwatch's reentrant locks: a Redisson-
 * format hash whose field is "<uuid>:<tid>") carries no host, pid or
 * acquisition time in its value; the client's registry hash
 * lockwatch:client:{<uuid>} does: host, pid and at:<tid>:<key>.  One HMGET
 * on the registry's node (in a cluster its own slot's, on a connection of
 * its own) fills what the value left unknown, so show gives what the
 * agent gives, with or without the agent.  A registry that is missing or
 * cannot be read (an ACL without ~lockwatch:client:*) leaves them unknown:
 * it is never an error of the command.  list reads the registries of a
 * SCAN batch's locks the same way, one pipelined HMGET each on the
 * connection it scans with (the agent's scanner: one HMGET per lock); in
 * a cluster, a registry another primary serves answers MOVED and its
 * times stay unknown there (show reads it on its own shard).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "collectors/redis/target.h"
#include "common/lw1.h"
#include "common/strbuf.h"

/* A decimal reply within max; 0 when it is none. */
static uint64_t
reply_udec(const redisReply *r, uint64_t max)
{
    uint64_t v;

    if (r->type != REDIS_REPLY_STRING ||
        lw1_parse_udec(r->str, r->len, 19, true, &v) != 0 || v > max)
        return 0;
    return v;
}

/* The registry key and field of l's holder ("lockwatch:client:{<uuid>}",
 * "at:<tid>:<key>" into field): false when l is no registry row. */
static bool
registry_of(const struct cli_lock *l, char *key, size_t keylen, struct strbuf *field)
{
    char uuid[FORMATS_UUID_LEN + 1];
    const char *tid;
    size_t tidlen;

    if (l->type == RAW_NONE || l->fmt == NULL || !l->fmt->registry || l->view.nholders == 0 ||
        l->view.holders[0].id_truncated ||
        !formats_registry_holder(l->view.holders[0].id, l->view.holders[0].idlen, uuid, &tid,
                                 &tidlen))
        return false;
    snprintf(key, keylen, "lockwatch:client:{%s}", uuid);
    sb_init(field, 3 + tidlen + 1 + l->keylen + 1);
    sb_addf(field, "at:%.*s:", (int)tidlen, tid);
    sb_add(field, l->key, l->keylen);
    if (sb_failed(field)) {
        sb_release(field);
        return false;
    }
    return true;
}

/* What HMGET <registry> host pid at:<tid>:<key> answered, into what l's
 * value left unknown.  True when it filled any. */
static bool
apply_registry(struct cli_lock *l, const redisReply *r)
{
    uint64_t v;
    bool got = false;

    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return false;
    if (l->view.host[0] == '\0' && r->element[0]->type == REDIS_REPLY_STRING &&
        r->element[0]->len > 0) {
        size_t n = r->element[0]->len < HOST_MAX - 1 ? r->element[0]->len : HOST_MAX - 1;

        memcpy(l->view.host, r->element[0]->str, n);
        l->view.host[n] = '\0';
        got = true;
    }
    if (l->view.pid == 0 && (v = reply_udec(r->element[1], INT32_MAX)) > 0) {
        l->view.pid = (long)v;
        got = true;
    }
    if (l->view.acquired_ms == 0 && (v = reply_udec(r->element[2], FORMATS_TIME_MAX_MS - 1)) >=
        FORMATS_TIME_MIN_MS) {
        l->view.acquired_ms = (int64_t)v;
        l->acquired_registry = true;
        got = true;
    }
    return got;
}

bool
inspect_registry(struct lockctl *lc, struct cli_lock *l)
{
    char key[sizeof("lockwatch:client:{}") + FORMATS_UUID_LEN], err[512];
    const char *argv[5];
    size_t lens[5];
    struct target_conf node;
    struct strbuf field;
    redisContext *c = lc->c, *own = NULL;
    redisReply *r = NULL;
    bool got = false;

    if (!registry_of(l, key, sizeof(key), &field))
        return false;
    /* in a cluster the registry hashes to its uuid's slot, another node */
    if (lc->t->mode == TARGET_CLUSTER &&
        (c = own = target_open(lc->t, key, strlen(key), NULL, &node, err, sizeof(err))) == NULL)
        goto out;
    argv[0] = "HMGET"; argv[1] = key; argv[2] = "host"; argv[3] = "pid"; argv[4] = field.buf;
    for (int i = 0; i < 4; i++)
        lens[i] = strlen(argv[i]);
    lens[4] = field.len;
    r = redisconn_command(c, own ? &node : lc->t, "HMGET", 5, argv, lens, err, sizeof(err));
    got = apply_registry(l, r);
out:
    if (r != NULL)
        freeReplyObject(r);
    if (own != NULL)
        redisFree(own);
    sb_release(&field);
    return got;
}

int
inspect_registries(struct lockctl *lc, struct cli_lock *locks, size_t n, bool *filled,
                   char *err, size_t errlen)
{
    char key[sizeof("lockwatch:client:{}") + FORMATS_UUID_LEN];
    bool *asked = calloc(n ? n : 1, sizeof(*asked));
    size_t i;
    int rc = 0;

    if (asked == NULL)
        return 0;               /* the times stay unknown: no error of list */
    for (i = 0; i < n; i++) {
        struct strbuf field;
        const char *argv[5] = { "HMGET", key, "host", "pid", NULL };
        size_t lens[5] = { 5, 0, 4, 3, 0 };

        filled[i] = false;
        if (!registry_of(&locks[i], key, sizeof(key), &field))
            continue;
        argv[4] = field.buf;
        lens[1] = strlen(key);
        lens[4] = field.len;
        /* a slot in migration: the same ASKING as the lock's reads */
        if (lc->asking)
            redisAppendCommand(lc->c, "ASKING");
        redisAppendCommandArgv(lc->c, 5, argv, lens);
        asked[i] = true;
        sb_release(&field);
    }
    for (i = 0; i < n; i++) {
        redisReply *r = NULL;

        if (!asked[i])
            continue;
        for (int k = lc->asking ? 2 : 1; k > 0; k--) {
            if (r != NULL)
                freeReplyObject(r);
            r = NULL;
            if (redisconn_get_reply(lc->c, &r) == -1 || r == NULL) {
                redisconn_error(lc->c, lc->t, "HMGET", err, errlen);
                rc = -1;
                goto out;
            }
        }
        /* an error reply (no ~lockwatch:client:* in the ACL; in a cluster
         * a registry another primary serves: MOVED) leaves them unknown */
        filled[i] = apply_registry(&locks[i], r);
        freeReplyObject(r);
    }
out:
    free(asked);
    return rc;
}
