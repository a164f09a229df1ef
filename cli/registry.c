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
 * a cluster, a registry another primary serves answers MOVED, and is read
 * there, one connection and one pipeline a primary (show reads it on its
 * own shard).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "collectors/redis/cluster.h"
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

/* A cluster's primaries that answered a list's registry reads with MOVED:
 * one connection each, at most REG_NODES_MAX (past that, its registries'
 * facts stay unknown). */
#define REG_NODES_MAX 16

struct reg_node {
    char host[256];
    int port;
};

/* The node index of a MOVED reply r in nodes (added when new); -1 when r
 * is no MOVED or the nodes are full. */
static int
moved_node(const redisReply *r, struct reg_node *nodes, size_t *nnodes)
{
    char host[256];
    unsigned slot;
    bool ask;
    int port;

    if (!cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port) || ask ||
        host[0] == '\0')
        return -1;
    for (size_t k = 0; k < *nnodes; k++)
        if (nodes[k].port == port && strcmp(nodes[k].host, host) == 0)
            return (int)k;
    if (*nnodes == REG_NODES_MAX)
        return -1;
    snprintf(nodes[*nnodes].host, sizeof(nodes[0].host), "%s", host);
    nodes[*nnodes].port = port;
    return (int)(*nnodes)++;
}

/* Append lock l's registry HMGET to c, after an ASKING when asking (a
 * slot in migration: the same ASKING as the lock's reads); false when l
 * has no registry. */
static bool
append_registry(redisContext *c, const struct cli_lock *l, bool asking)
{
    char key[sizeof("lockwatch:client:{}") + FORMATS_UUID_LEN];
    const char *argv[5] = { "HMGET", key, "host", "pid", NULL };
    size_t lens[5] = { 5, 0, 4, 3, 0 };
    struct strbuf field;

    if (!registry_of(l, key, sizeof(key), &field))
        return false;
    argv[4] = field.buf;
    lens[1] = strlen(key);
    lens[4] = field.len;
    if (asking)
        redisAppendCommand(c, "ASKING");
    redisAppendCommandArgv(c, 5, argv, lens);
    sb_release(&field);
    return true;
}

/* The registries that moved[] says another primary serves, read there: one
 * connection and one pipeline a node.  A node that cannot be reached
 * leaves its locks' facts unknown, as a registry that cannot be read. */
static void
read_moved(struct lockctl *lc, struct cli_lock *locks, size_t n, const int *moved,
           const struct reg_node *nodes, size_t nnodes, bool *filled)
{
    for (size_t k = 0; k < nnodes; k++) {
        struct target_conf node;
        redisContext *c;
        size_t i;

        redisconn_node(lc->t, nodes[k].host, nodes[k].port, &node);
        if ((c = redisconn_open(&node, NULL, 0)) == NULL)
            continue;
        for (i = 0; i < n; i++)
            if (moved[i] == (int)k && !append_registry(c, &locks[i], false))
                break;          /* out of memory: its replies are not read */
        for (i = i < n ? n : 0; i < n; i++) {
            redisReply *r = NULL;

            if (moved[i] != (int)k)
                continue;
            if (redisconn_get_reply(c, &r) == -1 || r == NULL)
                break;
            filled[i] = apply_registry(&locks[i], r);
            freeReplyObject(r);
        }
        redisFree(c);
    }
}

int
inspect_registries(struct lockctl *lc, struct cli_lock *locks, size_t n, bool *filled,
                   char *err, size_t errlen)
{
    struct reg_node nodes[REG_NODES_MAX];
    bool *asked = calloc(n ? n : 1, sizeof(*asked));
    int *moved = calloc(n ? n : 1, sizeof(*moved));
    size_t i, nnodes = 0;
    int rc = 0;

    if (asked == NULL || moved == NULL)
        goto out;               /* the times stay unknown: no error of list */
    for (i = 0; i < n; i++) {
        filled[i] = false;
        moved[i] = -1;
        asked[i] = append_registry(lc->c, &locks[i], lc->asking);
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
        /* an error reply (no ~lockwatch:client:* in the ACL) leaves them
         * unknown; in a cluster, MOVED: read on that primary below */
        filled[i] = apply_registry(&locks[i], r);
        if (!filled[i] && lc->t->mode == TARGET_CLUSTER)
            moved[i] = moved_node(r, nodes, &nnodes);
        freeReplyObject(r);
    }
    read_moved(lc, locks, n, moved, nodes, nnodes, filled);
out:
    free(asked);
    free(moved);
    return rc;
}
