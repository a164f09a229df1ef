/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * freshness.c - follow mode's proof of freshness: a cheap check, every
 * scan_interval, that what keyspace notifications cannot say has not
 * happened under the view.
 *
 * Notifications announce per-key writes only.  A restart (which may also
 * lose a runtime CONFIG SET notify-keyspace-events), FLUSHDB, FLUSHALL
 * (sync or ASYNC), SWAPDB, DEBUG RELOAD or LOADAOF (the data loaded
 * again: NOSAVE, an older RDB) and a CONFIG SET that turns the setting
 * off change the keyspace, or stop the announcements, without one
 * message on a lock's channel; and any client may PUBLISH on a keyspace
 * channel, so a message proves nothing by itself.  So each node the
 * target follows is asked, every scan_interval, four INFO sections (a
 * few hundred microseconds of Redis time a minute at scan_interval 1s),
 * and, after a reset, INFO stats on a connection of its own:
 *
 *   server        run_id: another run_id is a restart;
 *   replication   master_replid: another one under the same run_id, on a
 *                 node that is or was a replica, is the process holding
 *                 other data, loaded in a full sync from a primary
 *                 (REPLICAOF), or promoted (a primary's changes when its
 *                 first replica attaches, its data untouched); and a
 *                 replica's master_link_status: not up, its data is what
 *                 it had when the link broke, and the full scan that
 *                 calls for fails saying so (collectors/scan/scan.c);
 *   commandstats  the calls of flushdb, flushall, swapdb, debug (one
 *                 line for every subcommand: a DEBUG SLEEP costs a full
 *                 scan too), config|set and config|resetstat (commands
 *                 run from scripts and MULTI count too): any change
 *                 means a full scan, and a CONFIG SET or RESETSTAT means
 *                 the setting is checked again (CONFIG GET where the ACL
 *                 allows it, else the target is back on trust).  Redis
 *                 6 has no config|set line: its one config line counts
 *                 every subcommand (CONFIG GET too), so there it is
 *                 compared only where the agent may not CONFIG GET.
 *                 CONFIG RESETSTAT zeroes every count, and what ran
 *                 before it is unknown: fewer calls of anything (INFO's
 *                 own, which each check adds to) say so, and so does
 *                 config|resetstat's, which reads 1 after any reset (0
 *                 before the first); but a client can call INFO past
 *                 the baseline again, and config|resetstat stays 1, so
 *   stats         on a new connection, after HELLO 2 (allowed to every
 *                 user) gave it a client ID: total_connections_received.
 *                 The IDs come from a counter nothing resets, and Redis
 *                 counts a connection it accepted after giving it an ID:
 *                 the ID less the count never shrinks, and a reset
 *                 widens it by the connections counted before (one at
 *                 least since the last check, that check's own).  Wider
 *                 than the baseline's is a reset (or an ID that went to
 *                 no accepted connection: a failed TLS handshake, a
 *                 replica's link: a full scan too many).  Read only on a
 *                 server where config|resetstat reads 1 (a reset ran
 *                 since it started): before, no reset can hide;
 *   keyspace      the database's key count: fewer keys than live lock
 *                 records twice in a row on the same node (a pending
 *                 delete may explain one) means keys went without a
 *                 notification.
 *
 * Where the ACL allows CONFIG GET (the setting was verified when
 * subscribing), each check asks notify-keyspace-events itself too, first:
 * the setting turned off is seen at the next check on any version, even
 * where the counters cannot tell a CONFIG SET (Redis 6).  One command,
 * a few microseconds.
 *
 * The counts are compared with those read before the last full scan
 * read a key, on every node (a cluster's every primary, on connections
 * of their own), so a FLUSHDB on one shard while another is still being
 * scanned is seen at the first check after the pass.  An ACL that denies
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
    bool unless_read;           /* not compared when the caller reads the
                                 * setting itself (its reads count here) */
} counters[] = {
    { "cmdstat_flushdb:calls=", "FLUSHDB", offsetof(struct fresh_state, flushdb), false,
      false },
    { "cmdstat_flushall:calls=", "FLUSHALL", offsetof(struct fresh_state, flushall), false,
      false },
    { "cmdstat_swapdb:calls=", "SWAPDB", offsetof(struct fresh_state, swapdb), false, false },
    /* one line for every subcommand: RELOAD (NOSAVE: an older RDB) and
     * LOADAOF replace the data, POPULATE writes keys, none announced */
    { "cmdstat_debug:calls=", "DEBUG (RELOAD and LOADAOF load the data again, POPULATE "
      "writes keys)", offsetof(struct fresh_state, debug), false, false },
    /* 0 until the first reset, 1 ever after: the first is seen here, any
     * later one by conn_gap */
    { "cmdstat_config|resetstat:calls=", "CONFIG RESETSTAT (the command statistics were "
      "reset: what ran before it is unknown)", offsetof(struct fresh_state, resetstat), true,
      false },
    { "cmdstat_config|set:calls=", "CONFIG SET (notify-keyspace-events may have changed)",
      offsetof(struct fresh_state, config_set), true, false },
    /* Redis 6: one line for every CONFIG subcommand (7 has none such) */
    { "cmdstat_config:calls=", "CONFIG (Redis 6 counts every subcommand: "
      "notify-keyspace-events may have changed)", offsetof(struct fresh_state, config_any),
      true, true },
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

void
fresh_parse(enum fresh_section section, const char *text, size_t len, int db,
            struct fresh_state *st)
{
    char prefix[32];
    size_t k;

    if (section == FRESH_SERVER)
        serverinfo_run_id(text, len, st->run_id, sizeof(st->run_id));
    if (section == FRESH_REPLICATION) {
        serverinfo_string(text, len, "master_replid:", st->replid, sizeof(st->replid));
        serverinfo_string(text, len, "master_replid2:", st->replid2, sizeof(st->replid2));
        st->replica = serverinfo_replica(text, len);
        st->link_down = serverinfo_link_down(text, len, st->link_limit_s > 0 ?
                                             st->link_limit_s : 30, &st->link_down_s,
                                             &st->link_silent_s);
    }
    for (k = 0; section == FRESH_COMMANDSTATS && k < NCOUNTERS; k++)
        *counter_of(st, k) = serverinfo_number(text, len, counters[k].prefix, 0);
    if (section == FRESH_COMMANDSTATS)
        st->info_calls = serverinfo_number(text, len, SERVERINFO_INFO_CALLS, 0);
    if (section == FRESH_KEYSPACE) {
        snprintf(prefix, sizeof(prefix), "db%d:keys=", db);
        st->keys = serverinfo_number(text, len, prefix, 0);
    }
}

long long
fresh_conn_gap(long long id, const char *stats, size_t len)
{
    long long counted = serverinfo_number(stats, len, "total_connections_received:", -1);

    return id < 0 || counted < 0 || counted > id ? -1 : id - counted;
}

/* HELLO 2's id (RESP2: a flat array of names and values); -1 none. */
static long long
hello_id(const redisReply *r)
{
    size_t i;

    for (i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, "id") == 0 &&
            r->element[i + 1]->type == REDIS_REPLY_INTEGER)
            return r->element[i + 1]->integer;
    return -1;
}

/* fresh_conn_gap() on a connection of its own to node, closed after: a
 * new client ID (HELLO is allowed to every user), then INFO stats; -1
 * when the connection or either reply fails (the other signs stand). */
static long long
conn_gap(const struct target_conf *node)
{
    static const char *const argv[2] = { "HELLO", "2" };
    static const size_t lens[2] = { 5, 1 };
    redisContext *c;
    redisReply *r = NULL;
    char err[256];
    long long id = -1, gap = -1;

    if ((c = redisconn_open(node, err, sizeof(err))) == NULL)
        return -1;
    if ((r = redisconn_command(c, node, "HELLO", 2, (const char **)argv, lens, err,
                               sizeof(err))) == NULL)
        goto out;
    id = hello_id(r);
    freeReplyObject(r);
    r = NULL;
    if (id >= 0 && serverinfo_section(c, node, "stats", &r, err, sizeof(err)) == 1)
        gap = fresh_conn_gap(id, r->str, r->len);
out:
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
    return gap;
}

int
fresh_read(redisContext *c, const struct target_conf *node, struct fresh_state *st, char *err,
           size_t errlen)
{
    static const char *const names[FRESH_SECTIONS] = {
        "server", "commandstats", "keyspace", "replication"
    };
    redisReply *r = NULL;
    int i, rc;

    memset(st, 0, sizeof(*st));
    st->link_limit_s = serverinfo_silence_s(node);
    for (i = 0; i < FRESH_SECTIONS; i++) {
        if ((rc = serverinfo_section(c, node, names[i], &r, err, errlen)) != 1)
            return rc;
        fresh_parse((enum fresh_section)i, r->str, r->len, node->db, st);
        freeReplyObject(r);
    }
    /* only where a reset has run since the server started: before the
     * first, config|resetstat reads 0 and its row sees that one; the
     * connection is then not made (an ID that goes to no counted
     * connection, a TLS port's TCP probe, widens the gap too: a full
     * scan for nothing) */
    st->conn_gap = st->resetstat > 0 ? conn_gap(node) : -1;
    st->have = true;
    return 1;
}

bool
fresh_changed(const struct fresh_state *base, const struct fresh_state *now, size_t live,
              bool flags_read, unsigned *short_streak, bool *resub, char *why, size_t whylen)
{
    size_t i, first = NCOUNTERS;
    bool reset = false;

    *resub = false;
    /* a replica cut off from its primary keeps its old data, and its
     * notifications stop with the writes: silence is no proof there */
    if (now->have && now->link_down) {
        serverinfo_link_why("the server", now->link_down_s, now->link_silent_s,
                            now->link_limit_s, true, why, whylen);
        return true;
    }
    if (!base->have || !now->have)
        return false;
    if (strcmp(base->run_id, now->run_id) != 0) {
        *resub = true;
        snprintf(why, whylen, "the server restarted (run_id %.12s..., was %.12s...)",
                 now->run_id, base->run_id);
        return true;
    }
    if (serverinfo_resynced(base->replid, base->replica, now->replid, now->replid2,
                            now->replica)) {
        snprintf(why, whylen, "the replication ID changed (master_replid %.12s..., was "
                 "%.12s...): the server loaded another's data in a full sync, or was promoted",
                 now->replid, base->replid);
        return true;
    }
    if (now->info_calls < base->info_calls) {
        *resub = true;
        snprintf(why, whylen, "the command statistics were reset (CONFIG RESETSTAT): "
                 "what ran since is unknown");
        return true;
    }
    if (base->conn_gap >= 0 && now->conn_gap > base->conn_gap) {
        *resub = true;
        snprintf(why, whylen, "the command statistics were reset (CONFIG RESETSTAT: %lld "
                 "client IDs more than connections counted since): what ran since is unknown",
                 now->conn_gap - base->conn_gap);
        return true;
    }
    /* every count that changed has its say in *resub (a FLUSHDB beside a
     * CONFIG SET must not leave the setting unchecked); a count that went
     * down is a reset, which names the change */
    for (i = 0; i < NCOUNTERS; i++) {
        if (counter_get(now, i) == counter_get(base, i) ||
            (flags_read && counters[i].unless_read))
            continue;
        if (first == NCOUNTERS)
            first = i;
        reset = reset || counter_get(now, i) < counter_get(base, i);
        *resub = *resub || counters[i].resub || reset;
    }
    if (reset)
        snprintf(why, whylen, "the command statistics were reset (CONFIG RESETSTAT): "
                 "what ran since is unknown");
    else if (first < NCOUNTERS)
        snprintf(why, whylen, "%s ran, which notifies no key", counters[first].name);
    if (first < NCOUNTERS)
        return true;
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

void
fresh_baseline(struct follow *fw, redisContext *c, const struct target_conf *nodes, size_t n)
{
    char err[256];
    redisContext *own;
    size_t i;

    memset(fw->fresh_short, 0, sizeof(fw->fresh_short));
    fw->nfresh = n < FOLLOW_NODES_MAX ? n : FOLLOW_NODES_MAX;
    if (c != NULL)
        fw->nfresh = 1;
    for (i = 0; i < fw->nfresh; i++) {
        /* a node not read now gets its baseline at the first check */
        memset(&fw->fresh[i], 0, sizeof(fw->fresh[i]));
        if ((own = c != NULL ? c : redisconn_open(&nodes[i], err, sizeof(err))) == NULL)
            continue;
        if (fresh_read(own, &nodes[i], &fw->fresh[i], err, sizeof(err)) == 0)
            fw->fresh_denied = true;
        if (own != c)
            redisFree(own);
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

/* Where CONFIG GET is allowed: is notify-keyspace-events still enough
 * on node (c)?  0 yes (or no longer allowed to ask: the counters still
 * say), 1 not (why; *resub), -1 the connection failed (why). */
static int
flags_still(redisContext *c, const struct target_conf *node, bool *resub, char *why,
            size_t whylen)
{
    char flags[64], missing[16], err[256];
    bool lost;
    int rc = ksub_server_flags(c, node, flags, sizeof(flags), missing, sizeof(missing), &lost,
                               err, sizeof(err));

    if (rc == -1 && lost) {
        snprintf(why, whylen, "%s", err);
        return -1;
    }
    if (rc != 0)
        return 0;
    *resub = true;
    snprintf(why, whylen, "%s:%d: notify-keyspace-events is now \"%s\", which lacks \"%s\"",
             node->host, node->port, flags, missing);
    return 1;
}

/* Check node i against its baseline (live: its lock records alive);
 * fresh_check()'s values. */
/*
 * A cluster primary's own word on how many slots are assigned (CLUSTER
 * INFO) against the discovery's, which is the cluster's word through one
 * node: a CLUSTER DELSLOTS on a slot's owner alone changes only the
 * owner's map, and its keys there can no longer be read, while the others
 * still name it.  1 (why): they disagree, and a full scan judges it (the
 * owner's refusal fails its shard, the locks last known; a red-team saw
 * them kept current until the next reconcile).  0: they agree, or the
 * node may not be asked (an ACL without +cluster|info).  -1: the
 * connection failed.
 */
static int
slots_agree(const struct follow *fw, redisContext *c, const struct target_conf *node,
            char *why, size_t whylen)
{
    const char *argv[2] = { "CLUSTER", "INFO" };
    char err[256];
    redisReply *r = redisconn_command(c, node, "CLUSTER INFO", 2, argv, NULL, err, sizeof(err));
    long long own = -1, named = 0;

    if (r == NULL) {
        snprintf(why, whylen, "%s", err);
        return -1;
    }
    if (r->type == REDIS_REPLY_STRING)
        own = serverinfo_number(r->str, r->len, "cluster_slots_assigned:", -1);
    freeReplyObject(r);
    for (size_t s = 0; own >= 0 && fw->topo.slot_shard != NULL && s < CLUSTER_SLOTS; s++)
        named += fw->topo.slot_shard[s] != CLUSTER_NO_SHARD;
    if (own < 0 || own == named)
        return 0;
    snprintf(why, whylen, "%s:%d counts %lld slots assigned, the cluster's map %lld (a CLUSTER "
             "DELSLOTS or ADDSLOTS on that node alone?)", node->host, node->port, own, named);
    return 1;
}

static int
check_node(struct follow *fw, const struct target_conf *t, size_t i, size_t live, bool *resub,
           char *why, size_t whylen)
{
    struct fresh_state now;
    struct target_conf node;
    redisContext *c;
    char err[256];
    int rc;

    if ((c = node_conn(fw, t, i, &node)) == NULL) {
        snprintf(why, whylen, "no connection to %s:%d to check", node.host, node.port);
        return -1;
    }
    if (fw->verified && (rc = flags_still(c, &node, resub, why, whylen)) != 0)
        return rc == -1 && redisconn_timed_out(c) ? -2 : rc;
    rc = fresh_read(c, &node, &now, err, sizeof(err));
    if (rc == -1) {
        snprintf(why, whylen, "%s", err);
        return redisconn_timed_out(c) ? -2 : -1;
    }
    if (rc == 0) {
        fw->fresh_denied = true;
        return 0;
    }
    if (fw->cluster && (rc = slots_agree(fw, c, &node, why, whylen)) != 0)
        return rc == -1 && redisconn_timed_out(c) ? -2 : rc;
    if (!fw->fresh[i].have) {
        fw->fresh[i] = now;             /* a late baseline: compare from now */
        return 0;
    }
    if (fresh_changed(&fw->fresh[i], &now, live, fw->verified, &fw->fresh_short[i], resub,
                      err, sizeof(err))) {
        snprintf(why, whylen, "%s:%d: %s", node.host, node.port, err);
        return 1;
    }
    /* a gap narrower than the baseline's (a connection accepted while it
     * was read) leaves the baseline as it is; one unknown then is taken
     * from the first check that reads it */
    if (fw->fresh[i].conn_gap < 0)
        fw->fresh[i].conn_gap = now.conn_gap;
    return 0;
}

int
fresh_check(struct follow *fw, const struct target_conf *t, bool *resub, char *why,
            size_t whylen)
{
    size_t live[FOLLOW_NODES_MAX], i;
    char err[256];
    int rc;

    count_live(fw, live, fw->nfresh);
    for (i = 0; i < fw->nfresh; i++) {
        rc = check_node(fw, t, i, live[i], resub, why, whylen);
        /* the check is the first use of the kept connection since the
         * last: one its peer closed while idle (the server's timeout, a
         * CLIENT KILL) is opened again and the node checked once more,
         * rather than the subscription dropped for a full scan */
        if (rc == -1 && scanner_revive(fw->sc, t, err, sizeof(err)) > 0)
            rc = check_node(fw, t, i, live[i], resub, why, whylen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* A freshness check passed: the view is proven current as of now, or of
 * the oldest last answer of a subscriber's PING when that is older (what
 * was sent since may still be on its way); never earlier than before. */
void
fresh_proven(struct follow *fw)
{
    int64_t mono = clock_mono_ms(), oldest = mono, p, at;
    size_t i;

    for (i = 0; i < fw->nsubs; i++) {
        p = atomic_load(&fw->subs[i].proven_mono);
        if (p == 0)
            return;             /* not answered yet: the scan's proof stands */
        if (p < oldest)
            oldest = p;
    }
    at = clock_now_ms() - (mono - oldest);
    if (at > fw->proven_ms)
        fw->proven_ms = at;
    scanner_view_proven(fw->sc, at);
}
