/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.c - hash slots, CLUSTER SHARDS / CLUSTER SLOTS parsing,
 * discovery and redirections (see cluster.h).
 *
 * The parsers are strict about shape (a reply that is not what the
 * command documents is an error naming what was wrong, never a guess) and
 * lenient about detail: unknown fields are skipped, integers may come as
 * integers or as decimal strings (RESP2 replies of different versions
 * differ there), and a shard whose primary cannot be told is left out and
 * its slots stay unserved, so the scanner reports them instead of
 * scanning the wrong node.
 */
#include "collectors/redis/cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/redis/conn.h"

uint16_t
cluster_crc16(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint16_t crc = 0;
    size_t i;
    int b;

    /* CRC16-CCITT, XModem flavour (poly 0x1021, init 0), bit by bit: it
     * runs for a handful of registry keys per scan, not per key scanned */
    for (i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned
cluster_keyslot(const void *key, size_t len)
{
    const char *k = key;
    size_t open, close;

    for (open = 0; open < len && k[open] != '{'; open++)
        ;
    if (open < len) {
        for (close = open + 1; close < len && k[close] != '}'; close++)
            ;
        /* "{}" or no closing brace: the whole key is hashed */
        if (close < len && close > open + 1)
            return cluster_crc16(k + open + 1, close - open - 1) & (CLUSTER_SLOTS - 1);
    }
    return cluster_crc16(k, len) & (CLUSTER_SLOTS - 1);
}

static void
set_err(char *err, size_t errlen, const char *msg)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", msg);
}

void
cluster_topo_clear(struct cluster_topo *topo)
{
    free(topo->shards);
    free(topo->slot_shard);
    memset(topo, 0, sizeof(*topo));
}

static int
topo_init(struct cluster_topo *topo)
{
    size_t i;

    memset(topo, 0, sizeof(*topo));
    topo->slot_shard = malloc(CLUSTER_SLOTS * sizeof(*topo->slot_shard));
    if (topo->slot_shard == NULL)
        return -1;
    for (i = 0; i < CLUSTER_SLOTS; i++)
        topo->slot_shard[i] = CLUSTER_NO_SHARD;
    return 0;
}

static struct cluster_shard *
topo_add(struct cluster_topo *topo)
{
    struct cluster_shard *ns;

    if (topo->nshards >= CLUSTER_SHARDS_MAX)
        return NULL;
    ns = realloc(topo->shards, (topo->nshards + 1) * sizeof(*ns));
    if (ns == NULL)
        return NULL;
    topo->shards = ns;
    memset(&ns[topo->nshards], 0, sizeof(*ns));
    return &ns[topo->nshards++];
}

static bool
reply_is(const redisReply *r, const char *s)
{
    size_t n = strlen(s);

    return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
        r->len == n && memcmp(r->str, s, n) == 0;
}

/* An integer reply, or a decimal string (RESP2 replies differ). */
static bool
reply_int(const redisReply *r, long long min, long long max, long long *out)
{
    long long v = 0;
    size_t i;

    if (r == NULL)
        return false;
    if (r->type == REDIS_REPLY_INTEGER) {
        v = r->integer;
    } else if (r->type == REDIS_REPLY_STRING && r->len > 0 && r->len <= 18) {
        for (i = 0; i < r->len; i++) {
            if (r->str[i] < '0' || r->str[i] > '9')
                return false;
            v = v * 10 + (r->str[i] - '0');
        }
    } else {
        return false;
    }
    if (v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* Copy a string reply into buf; false when it is not one or too long. */
static bool
reply_str(const redisReply *r, char *buf, size_t size)
{
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len >= size)
        return false;
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    return true;
}

/* An endpoint that tells the client nothing: use the address asked. */
static bool
unknown_host(const char *h)
{
    return h[0] == '\0' || strcmp(h, "?") == 0;
}

/* Add "lo-hi" (or "lo") to the ranges text buf of size bytes (>= 4),
 * cut with "..." after a whole range when it is full. */
static void
ranges_append(char *buf, size_t size, long long lo, long long hi)
{
    char piece[48];
    size_t have = strlen(buf), n;

    if (lo == hi)
        snprintf(piece, sizeof(piece), "%s%lld", have ? "," : "", lo);
    else
        snprintf(piece, sizeof(piece), "%s%lld-%lld", have ? "," : "", lo, hi);
    n = strlen(piece);
    if (have + n < size) {
        memcpy(buf + have, piece, n + 1);
    } else if (have < 3 || strcmp(buf + have - 3, "...") != 0) {
        /* cut after a whole range so the text never shows a wrong one */
        while (have > 0 && (have + 4 > size || buf[have - 1] != ','))
            have--;
        memcpy(buf + have, "...", 4);
    }
}

/* Record slots [lo, hi] as served by shard index idx, and in its text. */
static int
add_range(struct cluster_topo *topo, size_t idx, long long lo, long long hi)
{
    struct cluster_shard *sh = &topo->shards[idx];
    long long s;

    if (lo < 0 || hi >= CLUSTER_SLOTS || lo > hi)
        return -1;
    for (s = lo; s <= hi; s++)
        topo->slot_shard[s] = (uint16_t)idx;
    sh->nslots += (uint32_t)(hi - lo + 1);
    ranges_append(sh->ranges, sizeof(sh->ranges), lo, hi);
    return 0;
}

size_t
cluster_uncovered(const struct cluster_topo *topo, char *ranges, size_t size)
{
    size_t n = 0, s, lo;

    ranges[0] = '\0';
    for (s = 0; topo->slot_shard != NULL && s < CLUSTER_SLOTS; s++) {
        if (topo->slot_shard[s] != CLUSTER_NO_SHARD)
            continue;
        for (lo = s; s + 1 < CLUSTER_SLOTS && topo->slot_shard[s + 1] == CLUSTER_NO_SHARD; s++)
            ;
        ranges_append(ranges, size, (long long)lo, (long long)s);
        n += s - lo + 1;
    }
    return n;
}

/* ---- CLUSTER SHARDS -------------------------------------------------------- */

/* One node map (flat name/value array) of a CLUSTER SHARDS shard.
 * *is_primary says its role. */
static bool
parse_shard_node(const redisReply *m, const char *via_host, struct cluster_node *n,
                 bool *is_primary)
{
    char ip[256] = "", endpoint[256] = "";
    long long port = -1, tls_port = -1;
    size_t i;

    memset(n, 0, sizeof(*n));
    *is_primary = false;
    if (m->type != REDIS_REPLY_ARRAY || m->elements % 2 != 0)
        return false;
    n->healthy = true;
    for (i = 0; i + 1 < m->elements; i += 2) {
        const redisReply *k = m->element[i], *v = m->element[i + 1];

        if (reply_is(k, "id"))
            reply_str(v, n->id, sizeof(n->id));
        else if (reply_is(k, "port"))
            reply_int(v, 0, 65535, &port);
        else if (reply_is(k, "tls-port"))
            reply_int(v, 0, 65535, &tls_port);
        else if (reply_is(k, "ip"))
            reply_str(v, ip, sizeof(ip));
        else if (reply_is(k, "endpoint"))
            reply_str(v, endpoint, sizeof(endpoint));
        else if (reply_is(k, "role"))
            *is_primary = reply_is(v, "master") || reply_is(v, "primary");
        else if (reply_is(k, "health"))
            n->healthy = reply_is(v, "online");
    }
    n->tls_port = tls_port > 0 ? (int)tls_port : 0;
    if (port <= 0)
        port = tls_port;        /* a TLS-only node (port 0) */
    if (port <= 0)
        return false;
    n->port = (int)port;
    snprintf(n->host, sizeof(n->host), "%s",
             !unknown_host(endpoint) ? endpoint : !unknown_host(ip) ? ip : via_host);
    return true;
}

int
cluster_parse_shards(const redisReply *rep, const char *via_host,
                     struct cluster_topo *out, char *err, size_t errlen)
{
    size_t i, j, k;

    if (topo_init(out) == -1) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (rep == NULL || rep->type != REDIS_REPLY_ARRAY) {
        set_err(err, errlen, "CLUSTER SHARDS: the reply is not an array");
        goto fail;
    }
    for (i = 0; i < rep->elements; i++) {
        const redisReply *sh = rep->element[i], *slots = NULL, *nodes = NULL;
        struct cluster_shard *s;
        bool have_primary = false;

        if (sh->type != REDIS_REPLY_ARRAY || sh->elements % 2 != 0) {
            set_err(err, errlen, "CLUSTER SHARDS: a shard is not a name/value list");
            goto fail;
        }
        for (j = 0; j + 1 < sh->elements; j += 2) {
            if (reply_is(sh->element[j], "slots"))
                slots = sh->element[j + 1];
            else if (reply_is(sh->element[j], "nodes"))
                nodes = sh->element[j + 1];
        }
        if (slots == NULL || nodes == NULL || slots->type != REDIS_REPLY_ARRAY ||
            nodes->type != REDIS_REPLY_ARRAY || slots->elements % 2 != 0) {
            set_err(err, errlen, "CLUSTER SHARDS: a shard lacks its slots or nodes");
            goto fail;
        }
        if (slots->elements == 0)
            continue;           /* owns no slot: holds no key to scan */
        if ((s = topo_add(out)) == NULL) {
            set_err(err, errlen, out->nshards >= CLUSTER_SHARDS_MAX ?
                    "CLUSTER SHARDS: more shards than lockwatch handles (1024)" :
                    "out of memory");
            goto fail;
        }
        for (k = 0; k < nodes->elements; k++) {
            struct cluster_node n;
            bool primary;

            if (!parse_shard_node(nodes->element[k], via_host, &n, &primary))
                continue;
            /* Of several nodes calling themselves primary (a failed one
             * not yet demoted), prefer the healthy one. */
            if (primary && (!have_primary || (!s->primary.healthy && n.healthy))) {
                if (have_primary && s->nreplicas < CLUSTER_REPLICAS_MAX)
                    s->replicas[s->nreplicas++] = s->primary;
                s->primary = n;
                have_primary = true;
            } else if (s->nreplicas < CLUSTER_REPLICAS_MAX) {
                s->replicas[s->nreplicas++] = n;
            }
        }
        if (!have_primary) {
            /* no node to own these slots: leave them unserved */
            out->nshards--;
            continue;
        }
        for (j = 0; j + 1 < slots->elements; j += 2) {
            long long lo, hi;

            if (!reply_int(slots->element[j], 0, CLUSTER_SLOTS - 1, &lo) ||
                !reply_int(slots->element[j + 1], 0, CLUSTER_SLOTS - 1, &hi) ||
                add_range(out, out->nshards - 1, lo, hi) == -1) {
                set_err(err, errlen, "CLUSTER SHARDS: a slot range is not two slot numbers");
                goto fail;
            }
        }
    }
    return 0;
fail:
    cluster_topo_clear(out);
    return -1;
}

/* ---- CLUSTER SLOTS --------------------------------------------------------- */

/* One node of a CLUSTER SLOTS entry: [host, port, id, ...]. */
static bool
parse_slots_node(const redisReply *a, const char *via_host, struct cluster_node *n)
{
    long long port;

    memset(n, 0, sizeof(*n));
    if (a->type != REDIS_REPLY_ARRAY || a->elements < 2 ||
        !reply_int(a->element[1], 1, 65535, &port))
        return false;
    if (a->element[0]->type == REDIS_REPLY_STRING) {
        if (!reply_str(a->element[0], n->host, sizeof(n->host)))
            return false;
    } else if (a->element[0]->type != REDIS_REPLY_NIL) {
        return false;
    }
    if (unknown_host(n->host))
        snprintf(n->host, sizeof(n->host), "%s", via_host);
    if (a->elements >= 3)
        reply_str(a->element[2], n->id, sizeof(n->id));
    n->port = (int)port;
    n->healthy = true;
    return true;
}

static bool
same_node(const struct cluster_node *a, const struct cluster_node *b)
{
    if (a->id[0] != '\0' && b->id[0] != '\0')
        return strcmp(a->id, b->id) == 0;
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

int
cluster_parse_slots(const redisReply *rep, const char *via_host,
                    struct cluster_topo *out, char *err, size_t errlen)
{
    size_t i, j, idx;

    if (topo_init(out) == -1) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (rep == NULL || rep->type != REDIS_REPLY_ARRAY) {
        set_err(err, errlen, "CLUSTER SLOTS: the reply is not an array");
        goto fail;
    }
    for (i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        struct cluster_node primary;
        long long lo, hi;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            !reply_int(e->element[0], 0, CLUSTER_SLOTS - 1, &lo) ||
            !reply_int(e->element[1], 0, CLUSTER_SLOTS - 1, &hi) ||
            !parse_slots_node(e->element[2], via_host, &primary)) {
            set_err(err, errlen, "CLUSTER SLOTS: an entry is not [start, end, primary, ...]");
            goto fail;
        }
        /* SLOTS lists ranges, not shards: ranges of one primary are one shard */
        for (idx = 0; idx < out->nshards; idx++)
            if (same_node(&out->shards[idx].primary, &primary))
                break;
        if (idx == out->nshards) {
            struct cluster_shard *s = topo_add(out);

            if (s == NULL) {
                set_err(err, errlen, out->nshards >= CLUSTER_SHARDS_MAX ?
                        "CLUSTER SLOTS: more shards than lockwatch handles (1024)" :
                        "out of memory");
                goto fail;
            }
            s->primary = primary;
            for (j = 3; j < e->elements && s->nreplicas < CLUSTER_REPLICAS_MAX; j++)
                if (parse_slots_node(e->element[j], via_host, &s->replicas[s->nreplicas]))
                    s->nreplicas++;
        }
        if (add_range(out, idx, lo, hi) == -1) {
            set_err(err, errlen, "CLUSTER SLOTS: a slot range is reversed");
            goto fail;
        }
    }
    return 0;
fail:
    cluster_topo_clear(out);
    return -1;
}

const struct cluster_shard *
cluster_shard_of_slot(const struct cluster_topo *topo, unsigned slot)
{
    uint16_t i;

    if (topo->slot_shard == NULL || slot >= CLUSTER_SLOTS)
        return NULL;
    i = topo->slot_shard[slot];
    return i == CLUSTER_NO_SHARD || i >= topo->nshards ? NULL : &topo->shards[i];
}

/* ---- the network ----------------------------------------------------------- */

/* rediss://: talk to each node on its TLS port where SHARDS gave one (a
 * node with both ports announces both; SLOTS asked over TLS already gives
 * the TLS port). */
static void
use_tls_ports(struct cluster_topo *topo)
{
    for (size_t i = 0; i < topo->nshards; i++) {
        struct cluster_shard *sh = &topo->shards[i];

        if (sh->primary.tls_port > 0)
            sh->primary.port = sh->primary.tls_port;
        for (size_t j = 0; j < sh->nreplicas; j++)
            if (sh->replicas[j].tls_port > 0)
                sh->replicas[j].port = sh->replicas[j].tls_port;
    }
}

/* Ask one node.  0, or -1 with why in err. */
static int
discover_at(const struct target_conf *t, const char *host, int port,
            struct cluster_topo *out, char *err, size_t errlen)
{
    struct target_conf node;
    redisContext *c = NULL;
    redisReply *rep = NULL;
    const char *shards[2] = { "CLUSTER", "SHARDS" }, *slots[2] = { "CLUSTER", "SLOTS" };
    int rc = -1;

    redisconn_node(t, host, port, &node);
    if ((c = redisconn_open(&node, err, errlen)) == NULL)
        goto out;
    rep = redisconn_command(c, &node, "CLUSTER SHARDS", 2, shards, NULL, err, errlen);
    if (rep == NULL)
        goto out;
    if (rep->type != REDIS_REPLY_ERROR) {
        rc = cluster_parse_shards(rep, host, out, err, errlen);
        goto out;
    }
    /* Before 7.0 SHARDS is an unknown subcommand; an ACL without
     * +cluster|shards also gets an error: both try SLOTS. */
    freeReplyObject(rep);
    rep = redisconn_command(c, &node, "CLUSTER SLOTS", 2, slots, NULL, err, errlen);
    if (rep == NULL)
        goto out;
    if (rep->type == REDIS_REPLY_ERROR) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "CLUSTER SHARDS and CLUSTER SLOTS on %s:%d refused: %.*s",
                     host, port, (int)(rep->len > 160 ? 160 : rep->len), rep->str);
        goto out;
    }
    rc = cluster_parse_slots(rep, host, out, err, errlen);
out:
    if (rc == 0 && t->tls)
        use_tls_ports(out);
    if (rep != NULL)
        freeReplyObject(rep);
    if (c != NULL)
        redisFree(c);
    if (rc == 0)
        snprintf(out->via, sizeof(out->via), "%s:%d", host, port);
    return rc;
}

/* Does topo serve a slot and share nodes with the nodes known: by id, two
 * of them (one when one is known: a node moved to another cluster keeps
 * its own id, a red-team found); a node without an id, on either side,
 * cannot tell, so it does? */
bool
cluster_kin(const struct cluster_topo *topo, const struct cluster_node *known, size_t nknown)
{
    size_t i, j, k, ids = 0, same = 0;

    if (topo->nshards == 0)
        return false;
    for (k = 0; k < nknown; k++)
        ids += known[k].id[0] != '\0';
    for (i = 0; i < topo->nshards; i++)
        for (j = 0; j <= topo->shards[i].nreplicas; j++) {
            const struct cluster_node *n = j == 0 ? &topo->shards[i].primary
                                                  : &topo->shards[i].replicas[j - 1];

            if (n->id[0] == '\0' || ids == 0)
                return true;
            for (k = 0; k < nknown; k++)
                if (strcmp(known[k].id, n->id) == 0)
                    same++;
        }
    return same >= (ids < 2 ? ids : 2);
}

int
cluster_discover(const struct target_conf *t, const struct cluster_node *hints,
                 size_t nhints, struct cluster_topo *out, char *err, size_t errlen)
{
    char one[600], all[900] = "";
    size_t i, used = 0, asked = 0;
    struct cluster_topo seed;
    bool have_seed = false, other = false;

    memset(&seed, 0, sizeof(seed));
    for (i = 0; i <= nhints; i++) {
        const char *host = i == 0 ? t->host : hints[i - 1].host;
        int port = i == 0 ? t->port : hints[i - 1].port;

        if (i > 0 && port == t->port && strcmp(host, t->host) == 0)
            continue;
        asked += i > 0;
        if (discover_at(t, host, port, out, one, sizeof(one)) == -1)
            goto failed;
        other |= i > 0;         /* a known node answered, as something else */
        /* The URL's node that serves no slot, or answers as a cluster
         * with none of the nodes known (reset and set up anew, a name now
         * pointing at another cluster), is not taken while a known node
         * still answers as the cluster it knew (its own view stays aside,
         * in case none does: then the cluster was replaced). */
        if (nhints > 0 && !cluster_kin(out, hints, nhints)) {
            snprintf(one, sizeof(one), "%s:%d answers as %s", host, port,
                     out->nshards == 0 ? "a node serving no slot"
                     : "another cluster (none of the nodes known)");
            if (!have_seed) {
                seed = *out;
                have_seed = true;
                memset(out, 0, sizeof(*out));
            } else {
                cluster_topo_clear(out);
            }
            goto failed;
        }
        if (have_seed) {
            /* the same words at every pass (logged when they change) */
            snprintf(out->note, sizeof(out->note), "%.120s %s: the cluster is read through "
                     "the nodes known before", seed.via,
                     seed.nshards == 0 ? "serves no slot (it left the cluster?)"
                     : "answers as another cluster, none of whose nodes were known");
            cluster_topo_clear(&seed);
        }
        return 0;
failed:
        /* keep the first few reasons; they usually say the same */
        if (used + strlen(one) + 3 < sizeof(all)) {
            used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s",
                                     used ? "; " : "", one);
        }
    }
    /* no known node answers as before: replaced, when one of them answers
     * as something else too (or there is none to ask); known nodes that do
     * not answer at all prove nothing (a stall, a partition: a red-team saw
     * a few seconds of one taken as a replacement for good) */
    if (have_seed && (other || asked == 0)) {
        *out = seed;
        return 0;
    }
    if (have_seed) {
        cluster_topo_clear(&seed);
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "cluster discovery: %s, and no node known before answers "
                     "(if the cluster was replaced, restart lockwatchd): %s",
                     "the URL's node answers as another cluster or serves no slot", all);
        return -1;
    }
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "cluster discovery failed: %s", all);
    return -1;
}

void
cluster_not_kin(const struct cluster_topo *topo, const struct cluster_node *known,
                size_t nknown, char *err, size_t errlen)
{
    snprintf(err, errlen, "cluster via %s: it answers as %s, not as the cluster the agent reads "
             "(whose nodes include %.100s:%d); nothing was read there", topo->via,
             topo->nshards == 0 ? "a node serving no slot" : "another cluster",
             nknown > 0 ? known[0].host : "?", nknown > 0 ? known[0].port : 0);
}

bool
cluster_err_unserved(const redisReply *rep)
{
    static const char unserved[] = "CLUSTERDOWN Hash slot not served";

    return rep != NULL && rep->type == REDIS_REPLY_ERROR && rep->len >= sizeof(unserved) - 1 &&
        memcmp(rep->str, unserved, sizeof(unserved) - 1) == 0;
}

bool
cluster_parse_redirect(const redisReply *rep, bool *ask, unsigned *slot,
                       char *host, size_t hostlen, int *port)
{
    const char *p, *end, *colon, *sp;
    long v = 0;
    size_t hl;

    if (rep == NULL || rep->type != REDIS_REPLY_ERROR)
        return false;
    p = rep->str;
    end = rep->str + rep->len;
    if (rep->len > 6 && memcmp(p, "MOVED ", 6) == 0) {
        *ask = false;
        p += 6;
    } else if (rep->len > 4 && memcmp(p, "ASK ", 4) == 0) {
        *ask = true;
        p += 4;
    } else {
        return false;
    }
    /* bounded: a long run of digits stops (and fails) past the last slot */
    for (sp = p; sp < end && *sp >= '0' && *sp <= '9' && v < CLUSTER_SLOTS; sp++)
        v = v * 10 + (*sp - '0');
    if (sp == p || sp >= end || *sp != ' ' || v >= CLUSTER_SLOTS)
        return false;
    *slot = (unsigned)v;
    p = sp + 1;
    /* host:port, the host possibly an IPv6 address: split at the last ':' */
    for (colon = NULL, sp = p; sp < end; sp++)
        if (*sp == ':')
            colon = sp;
    if (colon == NULL || colon + 1 >= end)
        return false;
    for (v = 0, sp = colon + 1; sp < end; sp++) {
        if (*sp < '0' || *sp > '9' || v > 65535)
            return false;
        v = v * 10 + (*sp - '0');
    }
    if (v <= 0 || v > 65535)
        return false;
    hl = (size_t)(colon - p);
    if (hl >= hostlen)
        return false;
    memcpy(host, p, hl);
    host[hl] = '\0';
    *port = (int)v;
    return true;
}
