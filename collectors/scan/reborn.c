/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reborn.c - a node that restarted with no data: no lock on it is older
 * than its start.
 *
 * The tracker (tracker.h) times a holder from its first sight, across
 * scans, by the key and a hash of its holder.  A server without
 * persistence that restarts comes back empty; when a client at once sets
 * the same key to the same value (a constant holder, a retry of the same
 * job), the tracker would see the holder it timed still there and keep
 * its first sight: an age the new lock cannot have, judged leaked or
 * long, and a guarded release (--if-leaked, --if-older-than) let take a
 * lock just taken.
 *
 * So each stream, once its node's identity is read (serverinfo_read():
 * run_id, and the start, from uptime_in_seconds, at no extra cost),
 * looks the node's address up in the scanner's last whole view, else its
 * last ok view (lost.c keeps both): another run_id at the same address is
 * a restart since.  Only then is INFO persistence asked (one section, at
 * the passes that see the restart): when the node loaded nothing at its
 * start (serverinfo_loaded_nothing(): no RDB keys, no AOF), its start is
 * the stream's born_ms, every key it reads carries it (scan_key.born_ms),
 * and the tracker restarts the clock of a holder first seen before it
 * (tracker_visit_born()); a back-dating claim older than it (the client
 * registry, a time the value encodes) is not believed.  The last whole
 * view moves on only with a pass that read every node, which is also the
 * one that sweeps the tracker: until then, every pass still sees the
 * restart, and entries of keys a failed pass did not reach are reset when
 * a later one does; entries first seen after the start (by a pass that
 * failed after reading the new server) keep their time.
 *
 * What it does not reset, and why:
 *   - a server that loaded keys (an RDB at its start, an AOF, a replica's
 *     full sync: rdb_last_load_keys_loaded > 0, or aof_enabled): the locks
 *     it loaded are the holdings they were, and which keys it loaded is
 *     not known; the tracker keeps their ages (a lock written after the
 *     last save, lost and set again with the same value, keeps its age
 *     too: lost.c's log of the restart is the sign);
 *   - a node that did not restart: keys that arrive there by MIGRATE or
 *     RESTORE (a cluster's resharding, a copy from another server) keep
 *     the holding they had on their source, and the tracker, which goes
 *     by key across a target's nodes, keeps their age.  A node that did
 *     restart empty and then imports keys resets theirs: an age too low
 *     only delays an alert;
 *   - a failover to another address: a promoted replica has what it
 *     synced, and what it lacked lost.c reports.
 * An INFO the ACL refuses says nothing, and nothing is reset.
 */
#include "collectors/scan/scan_impl.h"

#include <stdio.h>
#include <string.h>

#include "collectors/redis/serverinfo.h"
#include "common/clock.h"
#include "common/log.h"

/* The identity node ("host:port") had in view v, NULL when v did not read
 * it (a failed shard's is not its). */
static const struct server_id *
identity_in(const struct snapshot *v, const char *node)
{
    size_t i;

    if (v == NULL)
        return NULL;
    if (v->nshards == 0)
        return strcmp(v->node, node) == 0 ? &v->server : NULL;
    for (i = 0; i < v->nshards; i++)
        if (v->shards[i].ok && strcmp(v->shards[i].node, node) == 0)
            return &v->shards[i].server;
    return NULL;
}

int
reborn_check(struct stream *s)
{
    const struct scanner *sc = s->r->sc;
    const struct server_id *was;
    struct target_conf node;
    char addr[sizeof(s->host) + 8];
    redisReply *rep;
    bool empty;
    int rc;

    s->born_ms = 0;
    if (!s->server.have || s->server.started_ms <= 0)
        return 0;
    snprintf(addr, sizeof(addr), "%s:%d", s->host, s->port);
    if ((was = identity_in(sc->last_whole, addr)) == NULL &&
        (was = identity_in(sc->last_view, addr)) == NULL)
        return 0;
    if (!was->have || strcmp(was->run_id, s->server.run_id) == 0)
        return 0;
    redisconn_node(s->r->t, s->host, s->port, &node);
    if ((rc = serverinfo_section(s->c, &node, "persistence", &rep, s->err,
                                 sizeof(s->err))) != 1) {
        if (rc == 0)
            s->err[0] = '\0';   /* refused: nothing is known, nothing reset */
        return rc == -1 ? -1 : 0;
    }
    empty = serverinfo_loaded_nothing(rep->str, rep->len);
    freeReplyObject(rep);
    if (!empty)
        return 0;
    s->born_ms = s->server.started_ms;
    log_info("target %s: %s restarted %lld s ago and loaded no data (no RDB keys, no AOF): "
             "no lock on it is older than that, and a holder first seen before is timed "
             "from now", sc->name, addr,
             (long long)((clock_now_ms() - s->born_ms) / 1000));
    return 0;
}

int64_t
reborn_of(const struct stream *streams, size_t nstreams, const struct cluster_topo *topo,
          const char *key, size_t keylen)
{
    size_t i = topo != NULL ? topo->slot_shard[cluster_keyslot(key, keylen)] : 0;

    return i < nstreams ? streams[i].born_ms : 0;
}
