/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.h - Redis Cluster topology: hash slots, shard discovery and
 * redirections, for the scanner (one scan per shard), lockctl and the
 * guarded release (the node that serves a key).
 *
 * Discovery asks one reachable node for CLUSTER SHARDS (Redis 7.0+) and
 * falls back to CLUSTER SLOTS (3.0 - 6.2) when the server does not know
 * the subcommand.  Both replies are parsed into the same cluster_topo:
 * one entry per shard that owns slots, with its primary, its replicas and
 * its slot ranges, plus a slot -> shard table.  The parsers are pure
 * (tests/unit/test_cluster.c feeds them hand-built reply trees); only
 * cluster_discover() touches the network.  Which node serves a key is
 * target_open()'s to answer (target.h), with the topology found here.
 *
 * A node's address is its preferred endpoint, else its ip; an unknown or
 * empty one means "the address you asked", as the cluster spec says for
 * clients behind NAT or with hostnames off.
 */
#ifndef LOCKWATCH_CLUSTER_H
#define LOCKWATCH_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hiredis.h>

#include "conf/config.h"

#define CLUSTER_SLOTS         16384
#define CLUSTER_SHARDS_MAX    1024    /* shards kept; more are an error */
#define CLUSTER_REPLICAS_MAX  8       /* replicas kept per shard */
#define CLUSTER_NO_SHARD      0xffffu /* slot_shard[] of an unserved slot */
#define CLUSTER_RANGES_TEXT   64      /* bytes of cluster_shard.ranges */

struct cluster_node {
    char id[48];                      /* node id (40 hex), "" when unknown */
    char host[256];
    int port;                         /* "port"; a TLS-only node: "tls-port" */
    int tls_port;                     /* SHARDS "tls-port", 0 when none */
    bool healthy;                     /* SHARDS health "online"; SLOTS: true */
};

struct cluster_shard {
    struct cluster_node primary;
    struct cluster_node replicas[CLUSTER_REPLICAS_MAX];
    size_t nreplicas;
    uint32_t nslots;
    /* The slot ranges as text, "0-5460" or "0-99,200-5460"; cut with
     * "..." past CLUSTER_RANGES_TEXT.  Stable across a failover, so it is
     * the shard's label in metrics. */
    char ranges[CLUSTER_RANGES_TEXT];
};

struct cluster_topo {
    struct cluster_shard *shards;     /* nshards, in reply order */
    size_t nshards;
    uint16_t *slot_shard;             /* CLUSTER_SLOTS entries */
    char via[280];                    /* "host:port" that answered */
    char note[400];                   /* why not the URL's node (it serves
                                       * no slot, or answers as another
                                       * cluster); "" when it answered */
};

/* CRC16-CCITT (XModem), the cluster's key hash. */
uint16_t cluster_crc16(const void *buf, size_t len);

/* The hash slot of a key: CRC16 of its hash tag (the bytes between the
 * first '{' and the next '}', when not empty) or of the whole key,
 * modulo 16384. */
unsigned cluster_keyslot(const void *key, size_t len);

/*
 * Parse a CLUSTER SHARDS / CLUSTER SLOTS reply into *out (cleared first;
 * release with cluster_topo_clear()).  via_host is the host the command
 * went to, used for nodes whose endpoint is unknown.  Shards without
 * slots are left out.  0, or -1 with err saying what was wrong with the
 * reply (or ENOMEM).
 */
int cluster_parse_shards(const redisReply *rep, const char *via_host,
                         struct cluster_topo *out, char *err, size_t errlen);
int cluster_parse_slots(const redisReply *rep, const char *via_host,
                        struct cluster_topo *out, char *err, size_t errlen);

void cluster_topo_clear(struct cluster_topo *topo);

/* How many slots no shard of topo serves, and their ranges as text into
 * ranges (size >= 4 bytes: "0-99,200", cut with "..." as a shard's). */
size_t cluster_uncovered(const struct cluster_topo *topo, char *ranges, size_t size);

/* The shard that serves slot, or NULL. */
const struct cluster_shard *cluster_shard_of_slot(const struct cluster_topo *topo,
                                                  unsigned slot);

/*
 * Discover the topology of t's cluster: ask t's own address first, then
 * each of hints[0..nhints) (nodes known from an earlier discovery, so a
 * dead seed does not blind the scanner), with t's timeouts and
 * credentials.  An answer that serves no slot, or shares no node (by id)
 * with the hints, is taken only when no hint answers as the cluster they
 * were (the URL's node left the cluster, or is in another one now; out->note
 * says so).  0, or -1 with err naming every address tried.
 */
int cluster_discover(const struct target_conf *t, const struct cluster_node *hints,
                     size_t nhints, struct cluster_topo *out, char *err, size_t errlen);

/*
 * Is topo the cluster of the nodes known (an earlier discovery's)?  It
 * serves a slot and shares two node ids with them (one when only one is
 * known: a node moved to another cluster keeps its own id); a node without
 * an id, on either side, cannot tell, so it is.  Pure.
 */
bool cluster_kin(const struct cluster_topo *topo, const struct cluster_node *known,
                 size_t nknown);
/* The error of a discovery (topo) that is not cluster_kin() with the nodes
 * the agent knows: which node answered, as what, and one the agent knows. */
void cluster_not_kin(const struct cluster_topo *topo, const struct cluster_node *known,
                     size_t nknown, char *err, size_t errlen);

/*
 * A redirection error reply: "MOVED <slot> <host>:<port>" or
 * "ASK <slot> <host>:<port>".  Returns true and fills the out-parameters
 * when rep is one (an empty host means the node that replied), false
 * otherwise.
 */
bool cluster_parse_redirect(const redisReply *rep, bool *ask, unsigned *slot,
                            char *host, size_t hostlen, int *port);

/* rep is the error a node gives for a key of a slot no node serves
 * ("CLUSTERDOWN Hash slot not served"). */
bool cluster_err_unserved(const redisReply *rep);


#endif
