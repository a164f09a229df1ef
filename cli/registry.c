/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c - lockctl show: what liblockwatch's client registry says of a
 * lock's holder, read as the agent's scanner reads it
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
 * it is never an error of the command.
 */
#include <stdio.h>
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

bool
inspect_registry(struct lockctl *lc, struct cli_lock *l)
{
    char uuid[FORMATS_UUID_LEN + 1], key[sizeof("lockwatch:client:{}") + FORMATS_UUID_LEN];
    char err[512];
    const char *tid, *argv[5];
    size_t tidlen, lens[5];
    struct target_conf node;
    struct strbuf field;
    redisContext *c = lc->c, *own = NULL;
    redisReply *r = NULL;
    uint64_t v;
    bool got = false;

    if (l->fmt == NULL || !l->fmt->registry || l->view.nholders == 0 ||
        l->view.holders[0].id_truncated ||
        !formats_registry_holder(l->view.holders[0].id, l->view.holders[0].idlen, uuid, &tid,
                                 &tidlen))
        return false;
    snprintf(key, sizeof(key), "lockwatch:client:{%s}", uuid);
    sb_init(&field, 3 + tidlen + 1 + l->keylen + 1);
    sb_addf(&field, "at:%.*s:", (int)tidlen, tid);
    sb_add(&field, l->key, l->keylen);
    if (sb_failed(&field))
        goto out;
    /* in a cluster the registry hashes to its uuid's slot, another node */
    if (lc->t->mode == TARGET_CLUSTER &&
        (c = own = target_open(lc->t, key, strlen(key), NULL, &node, err, sizeof(err))) == NULL)
        goto out;
    argv[0] = "HMGET"; argv[1] = key; argv[2] = "host"; argv[3] = "pid"; argv[4] = field.buf;
    for (int i = 0; i < 4; i++)
        lens[i] = strlen(argv[i]);
    lens[4] = field.len;
    r = redisconn_command(c, own ? &node : lc->t, "HMGET", 5, argv, lens, err, sizeof(err));
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        goto out;
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
        got = true;
    }
out:
    if (r != NULL)
        freeReplyObject(r);
    if (own != NULL)
        redisFree(own);
    sb_release(&field);
    return got;
}
