/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target.c - from a target's mode to a connected node (see target.h).
 *
 * The one switch on [target] mode that decides where to connect: the
 * scanner, lockctl and the release endpoint call target_open() and never
 * look at the mode to find a node themselves.  Each mode's protocol lives
 * below this file (sentinel.c asks the sentinels, cluster.c discovers the
 * shards, conn.c opens the node), so this file holds only the choice, the
 * slot lookup and the messages that name what was not found.
 */
#include "collectors/redis/target.h"

#include <stdio.h>
#include <string.h>

#include "collectors/redis/cluster.h"
#include "collectors/redis/conn.h"
#include "collectors/redis/sentinel.h"

/* The primary of key's slot (key NULL: slot 0), from a fresh discovery. */
static redisContext *
open_cluster_key(const struct target_conf *t, const char *key, size_t keylen,
                 struct target_conf *node, char *err, size_t errlen)
{
    struct cluster_topo topo;
    const struct cluster_shard *sh;
    redisContext *c = NULL;
    unsigned slot = key != NULL ? cluster_keyslot(key, keylen) : 0;
    size_t nknown;
    bool check;
    const struct cluster_node *known = redisconn_scope_known(&nknown, &check);

    /* through the nodes the agent knows, when the scope has them (the
     * URL's node alone may be in another cluster by now), or, told by
     * another process, only checked against them */
    if (cluster_discover(t, check ? NULL : known, check ? 0 : nknown, &topo, err,
                         errlen) == -1)
        return NULL;
    sh = cluster_shard_of_slot(&topo, slot);
    if (check && !cluster_kin(&topo, known, nknown)) {
        cluster_not_kin(&topo, known, nknown, err, errlen);
    } else if (sh == NULL) {
        snprintf(err, errlen, "cluster via %s: no node serves slot %u (check CLUSTER "
                 "SHARDS)", topo.via, slot);
    } else {
        redisconn_node(t, sh->primary.host, sh->primary.port, node);
        c = redisconn_open(node, err, errlen);
    }
    cluster_topo_clear(&topo);
    return c;
}

redisContext *
target_open(const struct target_conf *t, const char *key, size_t keylen,
            size_t *sentinel_first, struct target_conf *node, char *err, size_t errlen)
{
    redisContext *c;
    size_t first = sentinel_first != NULL ? *sentinel_first : 0;
    char host[256];
    int port = 0;

    *node = *t;
    switch (t->mode) {
    case TARGET_SENTINEL:
        c = sentinel_open_primary(t, &first, host, sizeof(host), &port, err, errlen);
        if (sentinel_first != NULL)
            *sentinel_first = first;
        if (c != NULL)
            redisconn_node(t, host, port, node);
        return c;
    case TARGET_CLUSTER:
        return open_cluster_key(t, key, keylen, node, err, errlen);
    case TARGET_STANDALONE:
    default:
        return redisconn_open(t, err, errlen);
    }
}

int
target_verify(const struct target_conf *t, size_t *sentinel_first, redisContext *c,
              const struct target_conf *node, char *err, size_t errlen)
{
    size_t first = sentinel_first != NULL ? *sentinel_first : 0;
    char host[256], why[512];
    int port = 0, named;

    if (t->mode != TARGET_SENTINEL)
        return 1;
    named = sentinel_primary_addr(t, &first, host, sizeof(host), &port, err, errlen);
    if (sentinel_first != NULL)
        *sentinel_first = first;
    if (named == -1)
        return -1;
    if (port != node->port || strcmp(host, node->host) != 0)
        return 0;
    if (sentinel_is_primary(c, node, why, sizeof(why)) == 0)
        return 1;
    /* no answer within command_timeout: the node named is silent, and
     * opening it again would only wait as long once more */
    if (redisconn_timed_out(c)) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}
