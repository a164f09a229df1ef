/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * freshness.c - follow mode's proof of freshness: a cheap check, every
 * scan_interval, that what keyspace notifications cannot say has not
 * happened under the view.
 *
 * Notifications announce per-key writes only.  A restart (which may also
 * lose a runtime CONFIG SET notify-keyspace-events), FLUSHDB, FLUSHALL
 * (sync or ASYNC), SWAPDB and a CONFIG SET that turns the setting off
 * change the keyspace, or stop the announcements, without one message on
 * a lock's channel; and any client may PUBLISH on a keyspace channel, so
 * a message proves nothing by itself.  So each node the target follows is
 * asked, every scan_interval, three INFO sections (a few hundred
 * microseconds of Redis time a minute at scan_interval 1s):
 *
 *   server        run_id: another run_id is a restart;
 *   commandstats  the calls of flushdb, flushall, swapdb and config|set
 *                 (commands run from scripts and MULTI count too): any
 *                 change means a full scan, and a CONFIG SET means the
 *                 setting is checked again (CONFIG GET where the ACL
 *                 allows it, else the target is back on trust);
 *   keyspace      the database's key count: fewer keys than live lock
 *                 records twice in a row (a pending delete may explain
 *                 one) means keys went without a notification.
 *
 * The counts are compared with those read when the subscription was
 * made (standalone and Sentinel: before the full scan read a key;
 * cluster: after the pass, each shard's primary).  An ACL that denies
 * INFO leaves the check undone: the snapshot says so (/readyz), and the
 * target follows as before.  None of this can be faked by a client that
 * only publishes.
 */
#include "collectors/follow/follow_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/redis/conn.h"
#include "collectors/redis/serverinfo.h"
#include "common/clock.h"

/* The counters of commandstats that change the keyspace (or the
 * notifications) with no per-key message; a row per command. */
static const struct {
    const char *prefix;         /* the line's start, up to the calls */
    const char *name;           /* as a message names it */
    size_t off;                 /* its field in struct fresh_state */
    bool resub;                 /* the setting may have changed: check it */
} counters[] = {
    { "cmdstat_flushdb:calls=", "FLUSHDB", offsetof(struct fresh_state, flushdb), false },
    { "cmdstat_flushall:calls=", "FLUSHALL", offsetof(struct fresh_state, flushall), false },
    { "cmdstat_swapdb:calls=", "SWAPDB", offsetof(struct fresh_state, swapdb), false },
    { "cmdstat_config|set:calls=", "CONFIG SET (notify-keyspace-events may have changed)",
      offsetof(struct fresh_state, config_set), true },
};

#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static long long *
counter_of(struct fresh_state *st, size_t i)
{
    return (long long *)(void *)((char *)st + counters[i].off);
}

static long long
counter_get(const struct fresh_state *st, size_t i)
{
    return *(const long long *)(const void *)((const char *)st + counters[i].off);
}

int
fresh_read(redisContext *c, const struct target_conf *node, struct fresh_state *st, char *err,
           size_t errlen)
{
    static const char *const sections[] = { "server", "commandstats", "keyspace" };
    redisReply *r = NULL;
    char prefix[32];
    size_t i, k;
    int rc;

    memset(st, 0, sizeof(*st));
    for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
        if ((rc = serverinfo_section(c, node, sections[i], &r, err, errlen)) != 1)
            return rc;
        if (i == 0)
            serverinfo_run_id(r->str, st->run_id, sizeof(st->run_id));
        for (k = 0; i == 1 && k < NCOUNTERS; k++)
            *counter_of(st, k) = serverinfo_number(r->str, r->len, counters[k].prefix, 0);
        if (i == 2) {
            snprintf(prefix, sizeof(prefix), "db%d:keys=", node->db);
            st->keys = serverinfo_number(r->str, r->len, prefix, 0);
        }
        freeReplyObject(r);
    }
    st->have = true;
    return 1;
}

bool
fresh_changed(const struct fresh_state *base, const struct fresh_state *now, size_t live,
              unsigned *short_streak, bool *resub, char *why, size_t whylen)
{
    size_t i;

    *resub = false;
    if (!base->have || !now->have)
        return false;
    if (strcmp(base->run_id, now->run_id) != 0) {
        *resub = true;
        snprintf(why, whylen, "the server restarted (run_id %.12s..., was %.12s...)",
                 now->run_id, base->run_id);
        return true;
    }
    for (i = 0; i < NCOUNTERS; i++) {
        if (counter_get(now, i) == counter_get(base, i))
            continue;
        *resub = counters[i].resub || counter_get(now, i) < counter_get(base, i);
        if (counter_get(now, i) < counter_get(base, i))
            snprintf(why, whylen, "the command statistics were reset (CONFIG RESETSTAT): "
                     "what ran since is unknown");
        else
            snprintf(why, whylen, "%s ran, which notifies no key", counters[i].name);
        return true;
    }
    if (now->keys < 0 || (size_t)now->keys >= live) {
        *short_streak = 0;
        return false;
    }
    if (++*short_streak < 2)
        return false;
    snprintf(why, whylen, "the database holds %lld keys, fewer than the %zu locks followed",
             now->keys, live);
    return true;
}

/* ---- the nodes followed --------------------------------------------------------- */

/* Node i of fw's target: its connection kept by the last pass and its
 * address in *node; NULL when there is none. */
static redisContext *
node_conn(const struct follow *fw, const struct target_conf *t, size_t i,
          struct target_conf *node)
{
    const char *host;
    int port;
    redisContext *c;

    if (!fw->cluster) {
        c = scanner_conn(fw->sc, &host, &port);
    } else {
        host = fw->topo.shards[i].primary.host;
        port = fw->topo.shards[i].primary.port;
        c = scanner_node_conn(fw->sc, host, port);
    }
    if (host == NULL)
        host = "";
    redisconn_node(t, host, port, node);
    return c;
}

static size_t
nodes_of(const struct follow *fw)
{
    return fw->cluster ? fw->topo.nshards : 1;
}

void
fresh_baseline(struct follow *fw, const struct target_conf *t, redisContext *c,
               const char *host, int port)
{
    struct target_conf node;
    char err[256];
    size_t i, n;

    fw->fresh_short = 0;
    if (c != NULL) {
        redisconn_node(t, host, port, &node);
        fw->nfresh = 1;
        if (fresh_read(c, &node, &fw->fresh[0], err, sizeof(err)) == 0)
            fw->fresh_denied = true;
        return;
    }
    n = nodes_of(fw);
    fw->nfresh = n < FOLLOW_NODES_MAX ? n : FOLLOW_NODES_MAX;
    for (i = 0; i < fw->nfresh; i++) {
        memset(&fw->fresh[i], 0, sizeof(fw->fresh[i]));
        if ((c = node_conn(fw, t, i, &node)) != NULL &&
            fresh_read(c, &node, &fw->fresh[i], err, sizeof(err)) == 0)
            fw->fresh_denied = true;
    }
}

/* The lock records whose TTL has not run out, per node. */
static void
count_live(const struct follow *fw, size_t *live, size_t n)
{
    const char *k;
    size_t len, pos = 0, shard = 0;
    void *v;
    int64_t now = clock_mono_ms(), exp;

    memset(live, 0, n * sizeof(*live));
    while (fw->locks != NULL && keymap_next(fw->locks, &pos, &k, &len, &v, NULL)) {
        exp = frec_expires_mono(v);
        if (exp > 0 && exp <= now)
            continue;
        if (fw->cluster)
            shard = fw->topo.slot_shard[cluster_keyslot(k, len)];
        if (shard < n)
            live[shard]++;
    }
}

int
fresh_check(struct follow *fw, const struct target_conf *t, bool *resub, char *why,
            size_t whylen)
{
    struct fresh_state now;
    struct target_conf node;
    size_t live[FOLLOW_NODES_MAX], i;
    redisContext *c;
    char err[256];
    int rc;

    count_live(fw, live, fw->nfresh);
    for (i = 0; i < fw->nfresh; i++) {
        if ((c = node_conn(fw, t, i, &node)) == NULL) {
            snprintf(why, whylen, "no connection to %s:%d to check", node.host, node.port);
            return -1;
        }
        rc = fresh_read(c, &node, &now, err, sizeof(err));
        if (rc == -1) {
            snprintf(why, whylen, "%s", err);
            return -1;
        }
        if (rc == 0) {
            fw->fresh_denied = true;
            continue;
        }
        if (!fw->fresh[i].have) {
            fw->fresh[i] = now;         /* a late baseline: compare from now */
            continue;
        }
        if (fresh_changed(&fw->fresh[i], &now, live[i], &fw->fresh_short, resub, err,
                          sizeof(err))) {
            snprintf(why, whylen, "%s:%d: %s", node.host, node.port, err);
            return 1;
        }
    }
    return 0;
}
