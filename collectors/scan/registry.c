/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c - the client registry: when and where a Redisson-format
 * lock's holder took it.
 *
 * Redisson-format fields carry only a client uuid and a thread id;
 * liblockwatch also writes, per client handle, a hash
 * lockwatch:client:{<uuid>} with the holder's host and pid and, per held
 * lock, at:<thread>:<key> = acquisition Unix ms.  After a pass (scan.c
 * calls registry_lookup() once the streams are done) the scanner looks up
 * the uuids of the locks the snapshot kept: one pipelined EXISTS per
 * distinct uuid (at most REGISTRY_UUIDS_MAX a scan; the locks of the
 * uuids past it go without the registry's times), then one HMGET per lock
 * whose uuid has a registry.  Two round trips a scan, whatever the number
 * of locks.  A registry time older than the tracker's first sighting
 * back-dates the holder, and the lock is judged again
 * (record_states()).  In a cluster the registry key of a uuid lives in
 * the slot of its hash tag, so each lookup goes to the stream of the
 * shard that serves that slot (when that shard's scan failed, its
 * clients' locks simply go without the registry's times).
 */
#include "collectors/scan/scan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/formats/formats.h"
#include "common/keyhash.h"

#define REGISTRY_UUIDS_MAX  4096
#define REGISTRY_CHUNK      1000
#define UUID_LEN            FORMATS_UUID_LEN

struct reg_lock {
    uint32_t lock;              /* index into snap->locks */
    size_t stream;              /* where its registry key lives */
    char uuid[UUID_LEN + 1];
    const char *tid;
    size_t tidlen;
    int exists;
    int64_t born_ms;            /* the lock's node's empty start (reborn.c) */
};

static int
reg_cmp(const void *a, const void *b)
{
    return strcmp(((const struct reg_lock *)a)->uuid, ((const struct reg_lock *)b)->uuid);
}

/* "<uuid>:<tid>" or "<uuid>:<tid>:write" */
static bool
parse_holder(const char *id, size_t len, struct reg_lock *rl)
{
    return formats_registry_holder(id, len, rl->uuid, &rl->tid, &rl->tidlen);
}

static bool
parse_decimal(const redisReply *rep, int64_t max, int64_t *out)
{
    int64_t v = 0;
    size_t i;

    if (rep->type != REDIS_REPLY_STRING || rep->len == 0 || rep->len > 19)
        return false;
    for (i = 0; i < rep->len; i++) {
        if (rep->str[i] < '0' || rep->str[i] > '9')
            return false;
        v = v * 10 + (rep->str[i] - '0');
    }
    if (v <= 0 || v > max)
        return false;
    *out = v;
    return true;
}

static void
append_registry_key(redisContext *c, const char *cmd, const char *uuid,
                    const char **extra, const size_t *extralen, int nextra)
{
    char key[sizeof("lockwatch:client:{}") + UUID_LEN];
    const char *argv[6];
    size_t lens[6];
    int i, argc = 0;

    snprintf(key, sizeof(key), "lockwatch:client:{%s}", uuid);
    argv[argc] = cmd;
    lens[argc++] = strlen(cmd);
    argv[argc] = key;
    lens[argc++] = strlen(key);
    for (i = 0; i < nextra && argc < 6; i++) {
        argv[argc] = extra[i];
        lens[argc++] = extralen[i];
    }
    redisAppendCommandArgv(c, argc, argv, lens);
}

static void
apply_registry(struct run *r, struct reg_lock *rl, redisReply *rep)
{
    struct snapshot *s = r->snap;
    struct snap_lock *l = s->locks[rl->lock];
    struct track_result tr;
    int64_t pid, at;

    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3)
        return;
    /* a retained lock has a HOST_MAX area for this */
    if (l->host_len == 0 && rep->element[0]->type == REDIS_REPLY_STRING &&
        rep->element[0]->len > 0) {
        size_t hl = rep->element[0]->len > HOST_MAX - 1 ? HOST_MAX - 1 : rep->element[0]->len;

        memcpy(l->host, rep->element[0]->str, hl);
        l->host[hl] = '\0';
        l->host_len = (uint8_t)hl;
    }
    if (l->pid == 0 && parse_decimal(rep->element[1], INT32_MAX, &pid))
        l->pid = (int32_t)pid;
    if (parse_decimal(rep->element[2], FORMATS_TIME_MAX_MS - 1, &at) &&
        at >= FORMATS_TIME_MIN_MS) {
        l->acquired_ms = at;
        /* a holding first seen after the last pass that saw every node
         * began after that pass's start, whatever the registry says */
        int64_t bound = l->first_seen_ms >= r->sc->looked_ms && r->sc->looked_ms > rl->born_ms
            ? r->sc->looked_ms : rl->born_ms;

        /* with no such pass yet (the agent just started), no bound: a claim;
         * and only at the holding's first sight, when the bound is the pass
         * before it (later, looked_ms is past it: a red-team saw a claim an
         * hour old believed whole at the next pass) */
        if (r->sc->looked_ms > 0 && l->first_sight &&
            tracker_backdate(r->sc->tracker, keyhash(l->key, l->key_len), at, bound,
                             &tr) == 0) {
            snapshot_restate(s, l, record_states(r, l, tr.first_seen_ms, tr.nottl_since_ms),
                             tr.first_seen_ms, r->now_ms);
            l->nottl_since_ms = tr.nottl_since_ms;
            l->settled_ms = tr.settled_ms;
        }
    }
}

/* The lookups of the locks in rl[0..n) whose registry lives on stream
 * `want`, down that stream's connection. */
static int
registry_stream(struct run *r, struct stream *st, size_t want, struct reg_lock *rl,
                size_t n)
{
    struct snapshot *s = r->snap;
    size_t i, j, start, nuuid = 0, first;
    redisReply *rep;

    /* EXISTS per distinct uuid; the answer is copied to its run of locks
     * (a uuid's locks are adjacent and share one stream) */
    for (start = 0; start < n; ) {
        size_t sent = 0, firsts[REGISTRY_CHUNK];

        for (i = start; i < n && sent < REGISTRY_CHUNK && nuuid < REGISTRY_UUIDS_MAX; ) {
            for (j = i + 1; j < n && strcmp(rl[j].uuid, rl[i].uuid) == 0; j++)
                ;
            if (rl[i].stream == want) {
                firsts[sent++] = i;
                append_registry_key(st->c, "EXISTS", rl[i].uuid, NULL, NULL, 0);
                nuuid++;
            }
            i = j;
        }
        for (j = 0; j < sent; j++) {
            size_t k;

            if (stream_reply(st, &rep) == -1)
                return -1;
            first = firsts[j];
            for (k = first; k < n && strcmp(rl[k].uuid, rl[first].uuid) == 0; k++)
                rl[k].exists = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
            freeReplyObject(rep);
        }
        if (i >= n || nuuid >= REGISTRY_UUIDS_MAX)
            break;
        start = i;
    }

    /* HMGET host pid at:<tid>:<key> for the locks of registered clients */
    for (start = 0; start < n; ) {
        size_t idx[REGISTRY_CHUNK], sent = 0;
        char *fields[REGISTRY_CHUNK];

        for (i = start; i < n && sent < REGISTRY_CHUNK; i++) {
            const struct snap_lock *l = s->locks[rl[i].lock];
            const char *extra[3];
            size_t extralen[3], flen;
            char *f;

            if (!rl[i].exists || rl[i].stream != want)
                continue;
            flen = 3 + rl[i].tidlen + 1 + l->key_len;
            f = malloc(flen);
            if (f == NULL) {
                while (sent > 0)
                    free(fields[--sent]);
                return -1;
            }
            memcpy(f, "at:", 3);
            memcpy(f + 3, rl[i].tid, rl[i].tidlen);
            f[3 + rl[i].tidlen] = ':';
            memcpy(f + 4 + rl[i].tidlen, l->key, l->key_len);
            extra[0] = "host";
            extralen[0] = 4;
            extra[1] = "pid";
            extralen[1] = 3;
            extra[2] = f;
            extralen[2] = flen;
            append_registry_key(st->c, "HMGET", rl[i].uuid, extra, extralen, 3);
            fields[sent] = f;
            idx[sent++] = i;
        }
        start = i;
        for (j = 0; j < sent; j++) {
            if (stream_reply(st, &rep) == -1) {
                for (; j < sent; j++)
                    free(fields[j]);
                return -1;
            }
            apply_registry(r, &rl[idx[j]], rep);
            freeReplyObject(rep);
            free(fields[j]);
        }
    }
    return 0;
}

int
registry_lookup(struct run *r, struct stream *streams, size_t nstreams,
                const struct cluster_topo *topo)
{
    struct snapshot *s = r->snap;
    struct reg_lock *rl = NULL;
    size_t n = 0, i;

    if (s->nlocks > 0 && (rl = calloc(s->nlocks, sizeof(*rl))) == NULL)
        return -1;
    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = s->locks[i];
        bool redisson = l->format < formats_count && formats_table[l->format].registry;

        if (l->nholders == 0 || !redisson)
            continue;
        if (!parse_holder(l->holders[0].id, l->holders[0].id_len, &rl[n]))
            continue;
        rl[n].lock = (uint32_t)i;
        rl[n].stream = 0;
        rl[n].born_ms = reborn_of(streams, nstreams, topo, l->key, l->key_len);
        if (topo != NULL) {
            char key[sizeof("lockwatch:client:{}") + UUID_LEN];
            unsigned slot;

            snprintf(key, sizeof(key), "lockwatch:client:{%s}", rl[n].uuid);
            slot = cluster_keyslot(key, strlen(key));
            rl[n].stream = topo->slot_shard[slot];
            if (rl[n].stream >= nstreams)
                continue;       /* no shard serves it now */
        }
        n++;
    }
    if (n > 0)
        qsort(rl, n, sizeof(*rl), reg_cmp);
    for (i = 0; i < nstreams && n > 0; i++) {
        if (streams[i].failed || streams[i].c == NULL)
            continue;
        if (registry_stream(r, &streams[i], i, rl, n) == -1) {
            streams[i].failed = true;
            if (streams[i].err[0] == '\0')
                stream_err(&streams[i], "out of memory in the registry look-up");
        }
    }
    free(rl);
    return 0;
}
