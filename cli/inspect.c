/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inspect.c - read locks from Redis and judge them, as the agent would.
 *
 * lockctl must work when the agent is down, so it reads keys itself, with
 * the scanner's bounded reads (GETRANGE of RAW_VALUE_MAX+1 bytes; HLEN and
 * one HSCAN of RAW_FIELDS_MAX fields) and the scanner's decoders and
 * classes.  What it lacks is the agent's tracker (first-seen times across
 * scans), so a holder's age here is the larger of OBJECT IDLETIME and the
 * acquisition time the format encodes - the same starting age the agent
 * gives a lock it sees for the first time.  OBJECT IDLETIME is read in the
 * first round trip, before the value reads touch the key.  A lock renewed
 * by a watchdog (PEXPIRE touches it) therefore looks young unless its
 * format says when it was taken; docs/lockctl.md says so.
 *
 * States use the config's [rules] and the agent's judge, through
 * verdict.c: judged here from what was read, and again there when the
 * agent answers with its first-seen and no-TTL-since times.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "collectors/redis/cluster.h"
#include "collectors/formats/rawread.h"
#include "collectors/redis/conn.h"
#include "collectors/locks/lockclass.h"
#include "collectors/locks/lockfacts.h"
#include "collectors/locks/lockstate.h"
#include "collectors/locks/snapshot.h"
#include "common/prefixname.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static void
append_cmd(const struct lockctl *lc, const char *cmd, const char *sub, const char *key,
           size_t keylen, const char *a1, const char *a2, const char *a3)
{
    redisContext *c = lc->c;
    const char *argv[6];
    size_t len[6];
    int n = 0;

    /* A slot in migration: the importing node serves a moved key only to
     * a command right after ASKING. */
    if (lc->asking)
        redisAppendCommand(c, "ASKING");

    argv[n] = cmd, len[n++] = strlen(cmd);
    if (sub != NULL)
        argv[n] = sub, len[n++] = strlen(sub);
    argv[n] = key, len[n++] = keylen;
    if (a1 != NULL)
        argv[n] = a1, len[n++] = strlen(a1);
    if (a2 != NULL)
        argv[n] = a2, len[n++] = strlen(a2);
    if (a3 != NULL)
        argv[n] = a3, len[n++] = strlen(a3);
    redisAppendCommandArgv(c, n, argv, len);
}

static int
get_reply(struct lockctl *lc, const char *what, redisReply **rep, char *err, size_t errlen)
{
    redisReply *p = NULL;

    *rep = NULL;                /* a caller's last reply, freed: never freed twice */
    if (lc->asking) {           /* the +OK of the ASKING sent before it */
        if (redisconn_get_reply(lc->c, &p) == -1 || p == NULL) {
            redisconn_error(lc->c, lc->t, "ASKING", err, errlen);
            return -1;
        }
        freeReplyObject(p);
        p = NULL;
    }

    if (redisconn_get_reply(lc->c, &p) == -1 || p == NULL) {
        redisconn_error(lc->c, lc->t, what, err, errlen);
        return -1;
    }
    *rep = p;
    return 0;
}

/*
 * A reply whose type the command never gives (TYPE answers a status, PTTL
 * an integer, OBJECT IDLETIME an integer, nil or an error): the replies
 * are out of step with the commands (an unsolicited reply from a proxy or
 * a misbehaving server), and every reply after it answers another
 * command.  Reading on would turn it into "no such key"; it is a protocol
 * error, and the connection is dropped.  allowed is a bit set of
 * (1u << REDIS_REPLY_*); errors are judged by failed().
 */
static bool
out_of_step(const struct lockctl *lc, const char *what, const redisReply *rep,
            unsigned allowed, char *err, size_t errlen)
{
    static const char *const names[] = {
        [REDIS_REPLY_STRING] = "a bulk string", [REDIS_REPLY_ARRAY] = "an array",
        [REDIS_REPLY_INTEGER] = "an integer", [REDIS_REPLY_NIL] = "nil",
        [REDIS_REPLY_STATUS] = "a status", [REDIS_REPLY_ERROR] = "an error",
    };
    const char *got = rep->type >= 0 && (size_t)rep->type < sizeof(names) / sizeof(names[0]) &&
        names[rep->type] != NULL ? names[rep->type] : "an unknown reply type";

    if (rep->type == REDIS_REPLY_ERROR || (allowed & (1u << rep->type)) != 0)
        return false;
    snprintf(err, errlen, "%s on %s:%d: protocol error: %s reply, which %s never gives: the "
             "replies are out of step with the commands (an unsolicited reply from a proxy "
             "or the server?); nothing was judged", what, lc->t->host, lc->t->port, got, what);
    return true;
}

/* An error reply that is not about the key (NOAUTH, NOPERM, LOADING...):
 * the read failed, as a lost connection would.  WRONGTYPE is about the
 * key (it changed type meanwhile) and is not one. */
static bool
failed(const struct lockctl *lc, const char *what, const redisReply *rep, char *err,
       size_t errlen)
{
    if (rep->type != REDIS_REPLY_ERROR || strncmp(rep->str, "WRONGTYPE", 9) == 0)
        return false;
    snprintf(err, errlen, "%s on %s:%d: %.*s", what, lc->t->host, lc->t->port,
             (int)(rep->len > 200 ? 200 : rep->len), rep->str);
    return true;
}

/* Decode the value replies of lock l (string: one; hash: HLEN, HSCAN). */
static void
decode(struct lockctl *lc, struct cli_lock *l, redisReply *hlen, redisReply *val,
       const redisReply *mode, int64_t now_ms)
{
    struct raw_field fields[RAW_FIELDS_MAX];
    struct raw_lock raw;

    memset(&raw, 0, sizeof(raw));
    raw.key = l->key;
    raw.keylen = l->keylen;
    raw.type = l->type;
    raw.pttl = l->pttl_ms;
    raw.now_ms = now_ms;
    if (val != NULL && val->type == REDIS_REPLY_ERROR)
        raw.type = l->type = RAW_NONE;      /* replaced by another type meanwhile */
    else if (l->type == RAW_STRING)
        rawread_string(val, &raw);
    else if (l->type == RAW_HASH && rawread_hash(val, fields, &raw) && raw.nfields == 0)
        raw.type = l->type = RAW_NONE;      /* emptied meanwhile */
    if (raw.type == RAW_HASH)
        rawread_mode(mode, &raw);
    else if (l->type == RAW_ZSET && val != NULL &&
             (!rawread_zset(val, fields, &raw, hlen != NULL &&
                            hlen->type == REDIS_REPLY_INTEGER ? hlen->integer : -1) ||
              raw.nfields == 0))
        raw.type = l->type = RAW_NONE;      /* emptied or changed meanwhile */
    else if (l->type == RAW_ZSET && val == NULL)
        raw.type = RAW_OTHER;               /* a zset no format reads */
    l->fmt = lockfacts_decode(lc->t, &raw, hlen != NULL && hlen->type == REDIS_REPLY_INTEGER ?
                              hlen->integer : -1, &l->view, &l->src);
    lockfacts_drop_future(&l->view, &l->src, now_ms);
    /* the idle time of a value Redis may share is not this key's */
    l->idle_shared = l->idle_s >= 0 && lockfacts_value_shared(&raw);
    l->idle_s = lockfacts_idle_s(&raw, l->idle_s);
    l->value_truncated = raw.value_truncated || raw.fields_truncated;
    class_of(l->key, l->keylen, lc->cfg->classes, lc->cfg->nclasses, l->cls, sizeof(l->cls));
    verdict_judge(&lc->cfg->rules.judge, l, NULL, now_ms);
}

/* Is l a zset whose members a format reads (formats_reads_zset())? */
static bool
read_zset(const struct cli_lock *l)
{
    return l->type == RAW_ZSET && formats_reads_zset(l->key, l->keylen);
}

/*
 * The formats helper keys give (formats_kin(), as the agent's scan does
 * in collectors/scan/helperkeys.c): one more pipelined round trip for the
 * locks that may be one, asking for the helpers formats_kin_probes()
 * names - EXISTS of a "redisson" lock's fencing counter and fair-lock
 * queue, ZCARD and the first HOLDERS_MAX members of a count's permits
 * zset (its permits in use are its holders).  An error reply (an ACL
 * without those keys) leaves the lock as it was.
 */
#define KIN_NAME_MAX 1024

/* Is the lock's one holder a count (the kin rows that need one)? */
static bool
count_holder(const struct lock_view *v)
{
    return v->nholders == 1 && v->holders[0].idlen > 0 && v->holders[0].idlen <= 19 &&
        strspn(v->holders[0].id, "0123456789") == v->holders[0].idlen;
}

/* The helpers looked up for lock l, in order; how many. */
static size_t
kin_kinds(const struct cli_lock *l, enum helper_kind kinds[HELPER_KINDS])
{
    if (l->type == RAW_NONE || l->keylen > KIN_NAME_MAX)
        return 0;
    return formats_kin_probes(l->fmt, count_holder(&l->view), kinds);
}

static void
kin_permits(struct cli_lock *l, long long zcard, const redisReply *members)
{
    struct lock_view *v = &l->view;

    v->nholders = 0;
    v->holders_total = zcard > 0 ? (size_t)zcard : 0;
    v->max_count = 1;
    for (size_t j = 0; members != NULL && members->type == REDIS_REPLY_ARRAY &&
         j < members->elements && v->nholders < HOLDERS_MAX; j++) {
        const redisReply *e = members->element[j];
        struct lock_holder *h = &v->holders[v->nholders];
        size_t keep;

        if (e->type != REDIS_REPLY_STRING)
            continue;
        keep = e->len < HOLDER_ID_MAX - 1 ? e->len : HOLDER_ID_MAX - 1;
        memcpy(h->id, e->str, keep);
        h->id[keep] = '\0';
        h->idlen = keep;
        h->id_truncated = keep < e->len;
        h->count = 1;
        v->nholders++;
    }
    /* a semaphore lives without a TTL by design */
    l->states &= (uint8_t)~LOCK_LEAKED;
    l->leak_unknown = false;
}

static void
kin_send(struct lockctl *lc, const struct cli_lock *l)
{
    enum helper_kind kinds[HELPER_KINDS];
    char name[KIN_NAME_MAX + 64];
    size_t k, nk = kin_kinds(l, kinds), len;

    for (k = 0; k < nk; k++) {
        if ((len = formats_helper_lock_name(kinds[k], l->key, l->keylen, name,
                                            sizeof(name))) == 0 || len >= sizeof(name))
            continue;
        if (!formats_helper_holds_holders(kinds[k])) {
            append_cmd(lc, "EXISTS", NULL, name, len, NULL, NULL, NULL);
        } else {
            append_cmd(lc, "ZCARD", NULL, name, len, NULL, NULL, NULL);
            append_cmd(lc, "ZRANGE", NULL, name, len, "0", STR(HOLDERS_LAST), NULL);
        }
    }
}

/* Read what kin_send() asked for l; its row becomes what they prove. */
static int
kin_read(struct lockctl *lc, struct cli_lock *l, char *err, size_t errlen)
{
    enum helper_kind kinds[HELPER_KINDS];
    char name[KIN_NAME_MAX + 64];
    size_t k, nk = kin_kinds(l, kinds), len;
    unsigned found = 0;

    for (k = 0; k < nk; k++) {
        redisReply *rep, *members = NULL;
        bool holders = formats_helper_holds_holders(kinds[k]);
        long long got;

        if ((len = formats_helper_lock_name(kinds[k], l->key, l->keylen, name,
                                            sizeof(name))) == 0 || len >= sizeof(name))
            continue;
        if (get_reply(lc, "EXISTS", &rep, err, errlen) == -1)
            return -1;
        got = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
        freeReplyObject(rep);
        if (holders && get_reply(lc, "ZRANGE", &members, err, errlen) == -1)
            return -1;
        if (got > 0) {
            found |= 1u << kinds[k];
            if (holders)
                kin_permits(l, got, members);
        }
        if (members != NULL)
            freeReplyObject(members);
    }
    l->fmt = lockfacts_kin(l->fmt, found, NULL);
    return 0;
}

static int
kin_probe(struct lockctl *lc, struct cli_lock *out, size_t n, char *err, size_t errlen)
{
    size_t i;

    for (i = 0; i < n; i++)
        kin_send(lc, &out[i]);
    for (i = 0; i < n; i++)
        if (kin_read(lc, &out[i], err, errlen) == -1)
            return -1;
    return 0;
}

/* The key is not this node's to read now: MOVED, ASK, TRYAGAIN (its slot
 * moving), or its slot served by no node. */
static bool
not_here(const redisReply *rep)
{
    static const char *const words[] = { "MOVED ", "ASK ", "TRYAGAIN" };

    for (size_t i = 0; rep->type == REDIS_REPLY_ERROR && i < 3; i++)
        if (rep->len >= strlen(words[i]) && memcmp(rep->str, words[i], strlen(words[i])) == 0)
            return true;
    return cluster_err_unserved(rep);
}

struct redirect {
    bool seen, ask;
    char host[256];
    int port;
};

/* Once a session: under an LFU maxmemory-policy OBJECT IDLETIME is an
 * error, so it is not asked (lc->lfu).  -1 with err set when the
 * connection failed. */
static int
read_policy(struct lockctl *lc, char *err, size_t errlen)
{
    int lfu;

    if (lc->policy_known)
        return 0;
    if ((lfu = redisconn_lfu(lc->c)) == -1) {
        redisconn_error(lc->c, lc->t, "INFO memory", err, errlen);
        return -1;
    }
    lc->lfu = lfu == 1;
    lc->policy_known = true;
    return 0;
}

/* The replies to n keys' OBJECT IDLETIME, TYPE and PTTL into out.  0, or
 * -1 with err set (rd->seen: a redirection, to follow). */
static int
read_metas(struct lockctl *lc, struct cli_lock *out, size_t n, struct redirect *rd, char *err,
           size_t errlen)
{
    redisReply *rep = NULL;
    size_t i;

    for (i = 0; i < n; i++) {
        if (!lc->lfu) {
            if (get_reply(lc, "OBJECT IDLETIME", &rep, err, errlen) == -1 ||
                out_of_step(lc, "OBJECT IDLETIME", rep, 1u << REDIS_REPLY_INTEGER |
                            1u << REDIS_REPLY_NIL, err, errlen))
                goto fail;
            /* an error (an ACL, a policy changed since): unknown */
            out[i].idle_s = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
            freeReplyObject(rep);
        }
        if (get_reply(lc, "TYPE", &rep, err, errlen) == -1)
            goto fail;
        if (lc->stay && not_here(rep)) {
            /* list: another node's (its scan reads it, or read it), or
             * no node's; its PTTL's reply says the same.  A node that
             * says no node serves a slot the cluster names it for (a
             * DELSLOTS on it alone) holds a key nobody can read: said */
            out[i].elsewhere = true;
            out[i].denied = rep->str[0] == 'C' && lc->slot_shard != NULL &&
                lc->slot_shard[cluster_keyslot(out[i].key, out[i].keylen)] != CLUSTER_NO_SHARD;
            out[i].type = RAW_NONE;
            freeReplyObject(rep);
            if (get_reply(lc, "PTTL", &rep, err, errlen) == -1)
                goto fail;
            freeReplyObject(rep);
            rep = NULL;
            continue;
        }
        {
            unsigned slot;

            if (cluster_parse_redirect(rep, &rd->ask, &slot, rd->host, sizeof(rd->host),
                                       &rd->port)) {
                rd->seen = true;    /* the key is served elsewhere */
                snprintf(err, errlen, "TYPE on %s:%d: %.*s", lc->t->host, lc->t->port,
                         (int)(rep->len > 200 ? 200 : rep->len), rep->str);
                goto fail;
            }
        }
        if (failed(lc, "TYPE", rep, err, errlen) ||
            out_of_step(lc, "TYPE", rep, 1u << REDIS_REPLY_STATUS, err, errlen))
            goto fail;
        out[i].type = rawread_type(rep);
        freeReplyObject(rep);
        if (get_reply(lc, "PTTL", &rep, err, errlen) == -1 ||
            failed(lc, "PTTL", rep, err, errlen) ||
            out_of_step(lc, "PTTL", rep, 1u << REDIS_REPLY_INTEGER, err, errlen))
            goto fail;
        out[i].pttl_ms = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -2;
        freeReplyObject(rep);
        rep = NULL;
        if (out[i].pttl_ms == -2)
            out[i].type = RAW_NONE;
    }
    return 0;
fail:
    if (rep != NULL)
        freeReplyObject(rep);
    return -1;
}

static int
inspect_once(struct lockctl *lc, const char *const *keys, const size_t *lens, size_t n,
             int64_t now_ms, struct cli_lock *out, struct redirect *rd, char *err,
             size_t errlen)
{
    redisReply *rep = NULL, *hlen = NULL, *mode = NULL;
    size_t i;
    int rc = -1;

    memset(out, 0, n * sizeof(*out));
    if (read_policy(lc, err, errlen) == -1)
        goto out;
    for (i = 0; i < n; i++) {
        out[i].key = malloc(lens[i] + 1);
        if (out[i].key == NULL) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        memcpy(out[i].key, keys[i], lens[i]);
        out[i].key[lens[i]] = '\0';
        out[i].keylen = lens[i];
        out[i].idle_s = -1;
        out[i].pttl_ms = -2;
        out[i].fmt = &formats_table[formats_count - 1];
        /* OBJECT IDLETIME before anything that touches the key */
        if (!lc->lfu)
            append_cmd(lc, "OBJECT", "IDLETIME", keys[i], lens[i], NULL, NULL, NULL);
        append_cmd(lc, "TYPE", NULL, keys[i], lens[i], NULL, NULL, NULL);
        append_cmd(lc, "PTTL", NULL, keys[i], lens[i], NULL, NULL, NULL);
    }
    if (read_metas(lc, out, n, rd, err, errlen) == -1)
        goto out;
    for (i = 0; i < n; i++) {
        if (out[i].type == RAW_STRING)
            append_cmd(lc, "GETRANGE", NULL, keys[i], lens[i], "0", STR(RAW_VALUE_MAX), NULL);
        else if (out[i].type == RAW_HASH) {
            append_cmd(lc, "HLEN", NULL, keys[i], lens[i], NULL, NULL, NULL);
            append_cmd(lc, "HSCAN", NULL, keys[i], lens[i], "0", "COUNT", STR(RAW_FIELDS_MAX));
            /* "mode" on its own: a cut hash may not show it (formats.h) */
            append_cmd(lc, "HMGET", NULL, keys[i], lens[i], "mode", NULL, NULL);
        } else if (read_zset(&out[i])) {
            /* as the scanner reads it (collectors/scan/stream.c) */
            append_cmd(lc, "ZCARD", NULL, keys[i], lens[i], NULL, NULL, NULL);
            append_cmd(lc, "ZRANGE", NULL, keys[i], lens[i], "0", STR(RAW_FIELDS_LAST),
                       "WITHSCORES");
        }
    }
    for (i = 0; i < n; i++) {
        bool many = out[i].type == RAW_HASH || read_zset(&out[i]);

        hlen = rep = NULL;
        if (many && get_reply(lc, "HLEN", &hlen, err, errlen) == -1)
            goto out;
        if ((out[i].type == RAW_STRING || many) &&
            get_reply(lc, "read", &rep, err, errlen) == -1)
            goto out;
        if (out[i].type == RAW_HASH && get_reply(lc, "HMGET", &mode, err, errlen) == -1)
            goto out;
        if (lc->stay && ((hlen != NULL && not_here(hlen)) || (rep != NULL && not_here(rep)))) {
            /* list: the key left this node between its TYPE and its value
             * (a resharding), as read_metas() counts one gone before */
            out[i].elsewhere = true;
            out[i].type = RAW_NONE;
        } else if (rep != NULL && failed(lc, out[i].type == RAW_HASH ? "HSCAN" :
                                         out[i].type == RAW_ZSET ? "ZRANGE" : "GETRANGE",
                                         rep, err, errlen)) {
            goto out;
        } else {
            decode(lc, &out[i], hlen, rep, mode, now_ms);
        }
        if (hlen != NULL)
            freeReplyObject(hlen);
        if (rep != NULL)
            freeReplyObject(rep);
        if (mode != NULL)
            freeReplyObject(mode);
        mode = NULL;
    }
    hlen = rep = NULL;
    if (kin_probe(lc, out, n, err, errlen) == -1)
        goto out;
    rc = 0;
out:
    if (hlen != NULL)
        freeReplyObject(hlen);
    if (rep != NULL)
        freeReplyObject(rep);
    if (mode != NULL)
        freeReplyObject(mode);
    if (rc == -1)
        for (i = 0; i < n; i++)
            cli_lock_release(&out[i]);
    return rc;
}

#define INSPECT_REDIRECTS_MAX 2

/*
 * In a cluster the key's slot may have moved (MOVED) or be moving (ASK)
 * since lockctl looked up its node: follow at most two redirections, the
 * way the release script does, so show and release work during a
 * resharding.  The connection is replaced by one to the node that serves
 * the key; after an ASK every read is preceded by ASKING.
 */
int
inspect_keys(struct lockctl *lc, const char *const *keys, const size_t *lens, size_t n,
             int64_t now_ms, struct cli_lock *out, char *err, size_t errlen)
{
    struct redirect rd;
    redisContext *nc;
    struct target_conf node;
    int hops, rc;

    for (hops = 0;; hops++) {
        memset(&rd, 0, sizeof(rd));
        rc = inspect_once(lc, keys, lens, n, now_ms, out, &rd, err, errlen);
        if (rc == 0 || !rd.seen || hops == INSPECT_REDIRECTS_MAX)
            return rc;
        redisconn_node(lc->t, rd.host[0] ? rd.host : lc->t->host, rd.port, &node);
        nc = redisconn_open(&node, err, errlen);
        if (nc == NULL)
            return -1;
        redisFree(lc->c);       /* replies of the cut pipeline are pending */
        lc->c = nc;
        lc->node = node;
        lc->t = &lc->node;
        lc->asking = rd.ask;
    }
}

void
cli_lock_release(struct cli_lock *l)
{
    free(l->key);
    memset(l, 0, sizeof(*l));
}

const char *
cli_lock_state(const struct cli_lock *l)
{
    return snapshot_worst_state(l->states);
}

json_t *
cli_lock_json(const struct lockctl *lc, const struct cli_lock *l)
{
    json_t *o = json_object(), *holders = json_array(), *h;
    size_t i;
    long long permits;

    if (o == NULL || holders == NULL)
        goto fail;
    json_object_set_new(o, "target", json_string(lc->t->name));
    json_object_set_new(o, "key", lockjson_text(l->key, l->keylen));
    json_object_set_new(o, "key_escaped", lockjson_escaped(l->key, l->keylen));
    json_object_set_new(o, "class", lockjson_text(l->cls, strlen(l->cls)));
    json_object_set_new(o, "format", json_string(l->fmt->name));
    json_object_set_new(o, "format_source", json_string(formats_source_name(l->src.source)));
    if (l->src.contradicts)
        json_object_set_new(o, "format_contradicts", json_true());
    json_object_set_new(o, "states", lockjson_states(l->states));
    json_object_set_new(o, "pttl_ms", json_integer(l->pttl_ms));
    for (i = 0; i < l->view.nholders; i++) {
        const struct lock_holder *lh = &l->view.holders[i];

        if ((h = json_object()) == NULL)
            goto fail;
        json_object_set_new(h, "id", lockjson_text(lh->id, lh->idlen));
        json_object_set_new(h, "id_escaped", lockjson_escaped(lh->id, lh->idlen));
        json_object_set_new(h, "count", json_integer(lh->count));
        if (lh->id_truncated)
            json_object_set_new(h, "id_truncated", json_true());
        json_array_append_new(holders, h);
    }
    json_object_set_new(o, "holders", holders);
    holders = NULL;
    json_object_set_new(o, "holders_total", json_integer((json_int_t)l->view.holders_total));
    json_object_set_new(o, "max_count", json_integer(l->view.max_count));
    if (l->view.nholders == 1 &&
        formats_permits_available(l->fmt, l->view.holders[0].id, l->view.holders[0].idlen,
                                  &permits))
        json_object_set_new(o, "permits_available", json_integer(permits));
    if (l->view.mode[0] != '\0')
        json_object_set_new(o, "mode", json_string(l->view.mode));
    json_object_set_new(o, "age_seconds", json_real((double)l->age_ms / 1000.0));
    json_object_set_new(o, "age_source", json_string(l->age_source));
    json_object_set_new(o, "age_lower_bound", json_boolean(l->age_lower_bound));
    json_object_set_new(o, "first_seen", lockjson_time(l->first_seen_ms));
    json_object_set_new(o, "nottl_seconds", l->nottl_ms >= 0 ?
                        json_real((double)l->nottl_ms / 1000.0) : json_null());
    json_object_set_new(o, "leak_unknown", json_boolean(l->leak_unknown));
    /* the agent's: null when its times were not used */
    json_object_set_new(o, "renewed", l->first_seen_ms > 0 ? json_boolean(l->renewed) :
                        json_null());
    json_object_set_new(o, "idle_seconds", l->idle_s >= 0 ? json_integer(l->idle_s)
                        : json_null());
    json_object_set_new(o, "host", l->view.host[0] ? json_string(l->view.host) : json_null());
    json_object_set_new(o, "pid", l->view.pid ? json_integer(l->view.pid) : json_null());
    json_object_set_new(o, "thread", l->view.thread >= 0 ? json_integer(l->view.thread)
                        : json_null());
    json_object_set_new(o, "acquired_at", lockjson_time(l->view.acquired_ms));
    json_object_set_new(o, "acquired_source", l->view.acquired_ms <= 0 ? json_null() :
                        json_string(l->acquired_registry ? "registry" : "value"));
    if (l->value_truncated)
        json_object_set_new(o, "value_truncated", json_true());
    return o;
fail:
    json_decref(o);
    json_decref(holders);
    return NULL;
}
