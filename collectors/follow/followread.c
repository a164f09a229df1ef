/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * followread.c - follow mode's records: a copy of each lock key as last
 * read (type, PTTL, IDLETIME, the bounded value or fields, when), the
 * re-reads of the keys named in events, and the snapshots made from the
 * records exactly as a scan makes one.
 *
 * Re-reads use the scanner's own pipelined reads (stream_read_batch():
 * OBJECT IDLETIME, TYPE, PTTL, then GETRANGE or HLEN + HSCAN), up to
 * FOLLOW_READ_BATCH keys a pipeline, on the connections the last full
 * scan kept; in a cluster each key goes to the primary of the shard that
 * serves its slot in the last full scan's topology.  A key that is no
 * longer there (or no longer a string or hash) loses its record; a
 * refused read fails the re-reads, so the full scan that follows reports
 * it as a scan does.  Only keys matching the target's patterns are read;
 * an event on a client registry key asks for a new registry look-up.
 */
#include "collectors/scan/follow_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/locks/lockclass.h"
#include "common/clock.h"
#include "common/keytext.h"

/* ---- records ------------------------------------------------------------------ */

void
frec_free(void *p)
{
    free(p);
}

static uint64_t
frec_content(const struct frec *f)
{
    uint64_t h = keytext_hash(f->value, f->valuelen) ^ ((uint64_t)f->type << 56) ^
        (f->pttl >= 0 ? 0x9e3779b97f4a7c15ULL : 0);
    size_t i;

    for (i = 0; i < f->nfields; i++) {
        h = h * 0x100000001b3ULL ^ keytext_hash(f->fields[i].name, f->fields[i].namelen);
        h = h * 0x100000001b3ULL ^ keytext_hash(f->fields[i].value, f->fields[i].valuelen);
    }
    return h;
}

/* One allocation: the record, its fields, then the bytes they point to. */
static struct frec *
frec_new(const struct key_meta *m, const struct raw_lock *raw, long long hlen, int64_t read_ms)
{
    size_t bytes = sizeof(struct frec) + raw->nfields * sizeof(struct raw_field) +
        raw->valuelen + 1, i;
    struct frec *f;
    char *p;

    for (i = 0; i < raw->nfields; i++)
        bytes += raw->fields[i].namelen + raw->fields[i].valuelen + 2;
    if ((f = calloc(1, bytes)) == NULL)
        return NULL;
    f->type = raw->type;
    f->helper = m->helper;
    f->pttl = raw->pttl;
    f->read_mono = clock_mono_ms();
    f->read_ms = read_ms;
    f->idle_s = m->idle_s;
    f->hlen = hlen;
    f->value_truncated = raw->value_truncated;
    f->fields_truncated = raw->fields_truncated;
    f->fields = (struct raw_field *)(f + 1);
    f->nfields = raw->nfields;
    p = (char *)(f->fields + raw->nfields);
    for (i = 0; i < raw->nfields; i++) {
        f->fields[i].name = p;
        f->fields[i].namelen = raw->fields[i].namelen;
        memcpy(p, raw->fields[i].name, raw->fields[i].namelen);
        p += raw->fields[i].namelen + 1;
        f->fields[i].value = p;
        f->fields[i].valuelen = raw->fields[i].valuelen;
        memcpy(p, raw->fields[i].value, raw->fields[i].valuelen);
        p += raw->fields[i].valuelen + 1;
    }
    f->value = p;
    f->valuelen = raw->valuelen;
    if (raw->valuelen > 0)
        memcpy(p, raw->value, raw->valuelen);
    f->content = frec_content(f);
    return f;
}

int
follow_keep(struct keymap *fill, const struct key_meta *m, const struct raw_lock *raw,
            long long hlen, int64_t read_ms)
{
    struct frec *f = frec_new(m, raw, hlen, read_ms);
    void *old = NULL;

    if (f == NULL || keymap_put(fill, raw->key, raw->keylen, f, 0, &old) == -1) {
        free(f);
        return -1;
    }
    free(old);
    return 0;
}

/* ---- re-reading the keys of events ---------------------------------------------- */

struct reread {
    struct follow *fw;
    bool *found;
    const struct key_meta *base;
};

static int
reread_key(struct stream *s, const struct key_meta *m, const struct raw_lock *raw,
           long long hlen)
{
    struct reread *rr = s->on_key_arg;
    struct frec *f = frec_new(m, raw, hlen, clock_now_ms());
    void *old = NULL;

    if (f == NULL || keymap_put(rr->fw->locks, raw->key, raw->keylen, f, 0, &old) == -1) {
        free(f);
        return -1;
    }
    free(old);
    rr->found[m - rr->base] = true;
    return 0;
}

static bool
matches(const struct target_conf *t, const char *key, size_t len)
{
    size_t i;

    for (i = 0; i < t->npatterns; i++)
        if (class_glob_match(t->patterns[i], key, len))
            return true;
    return false;
}

/* Re-read n keys (keys[i], lens[i]) on c (to host:port) and replace or
 * drop their records.  0, or -1 when the connection failed or a read was
 * refused. */
static int
reread_chunk(struct run *r, redisContext *c, const char *host, int port, const char **keys,
             const size_t *lens, size_t n)
{
    struct scanner *sc = r->sc;
    redisReply reps[FOLLOW_READ_BATCH];
    struct key_meta meta[FOLLOW_READ_BATCH];
    bool found[FOLLOW_READ_BATCH];
    struct stream st;
    struct batch b;
    struct reread rr;
    size_t i;
    void *old;
    int rc;

    memset(&st, 0, sizeof(st));
    memset(&b, 0, sizeof(b));
    memset(meta, 0, n * sizeof(meta[0]));
    memset(found, 0, sizeof(found));
    for (i = 0; i < n; i++) {
        memset(&reps[i], 0, sizeof(reps[i]));
        reps[i].type = REDIS_REPLY_STRING;
        reps[i].str = (char *)keys[i];
        reps[i].len = lens[i];
        meta[i].key = &reps[i];
    }
    b.meta = meta;
    b.n = n;
    rr.fw = sc->fw;
    rr.found = found;
    rr.base = meta;
    st.r = r;
    st.c = c;
    snprintf(st.host, sizeof(st.host), "%s", host);
    st.port = port;
    st.on_key = reread_key;
    st.on_key_arg = &rr;
    rc = stream_read_batch(&st, &b);
    for (i = 0; i < SCAN_READ_KINDS; i++)
        sc->counters.read_errors[i] += st.cnt.read_errors[i];
    if (rc == -1 || st.refused > 0) {
        snprintf(r->err, sizeof(r->err), "%s", st.refused > 0 ? st.refused_err : st.err);
        return -1;
    }
    /* what was not handed over is gone (or no longer a string or hash) */
    for (i = 0; i < n; i++)
        if (!found[i] && keymap_del(sc->fw->locks, keys[i], lens[i], &old))
            free(old);
    return 0;
}

/* The connection the last full scan kept to shard i's primary (cluster),
 * or the one connection; NULL when there is none. */
static redisContext *
conn_of(struct scanner *sc, size_t shard, const char **host, int *port)
{
    const struct follow *fw = sc->fw;
    const struct cluster_node *p;
    size_t i;

    if (!fw->cluster) {
        *host = sc->host;
        *port = sc->port;
        return sc->c;
    }
    p = &fw->topo.shards[shard].primary;
    *host = p->host;
    *port = p->port;
    for (i = 0; i < sc->nconns; i++)
        if (sc->conns[i].c != NULL && sc->conns[i].port == p->port &&
            strcmp(sc->conns[i].host, p->host) == 0)
            return sc->conns[i].c;
    return NULL;
}

/* Keys gathered for one node, re-read FOLLOW_READ_BATCH at a time. */
struct bucket {
    const char *keys[FOLLOW_READ_BATCH];
    size_t lens[FOLLOW_READ_BATCH];
    size_t n;
};

static int
flush_bucket(struct run *r, struct bucket *b, size_t shard)
{
    const char *host;
    int port;
    redisContext *c = conn_of(r->sc, shard, &host, &port);

    if (b->n == 0)
        return 0;
    if (c == NULL) {
        snprintf(r->err, sizeof(r->err), "no connection to %s:%d to re-read keys", host, port);
        return -1;
    }
    if (reread_chunk(r, c, host, port, b->keys, b->lens, b->n) == -1)
        return -1;
    b->n = 0;
    return 0;
}

int
follow_apply_pending(struct run *r, int64_t *oldest)
{
    struct follow *fw = r->sc->fw;
    struct keymap *batch, *fresh;
    struct bucket *buckets;
    const char *k;
    size_t nb = fw->cluster ? fw->topo.nshards : 1, len, pos = 0, i, shard = 0;
    int64_t stamp;
    int changed = 0, rc = -1;

    if ((fresh = keymap_new(FOLLOW_PENDING_MAX)) == NULL)
        return 0;               /* try again next tick */
    if ((buckets = calloc(nb ? nb : 1, sizeof(*buckets))) == NULL) {
        keymap_free(fresh, NULL);
        return 0;
    }
    pthread_mutex_lock(&fw->mu);
    if (fw->overflow) {
        /* what is pending is lost anyway: a full scan reads it all, and
         * the events from now on are kept for after it */
        keymap_free(fw->pending, NULL);
        fw->pending = fresh;
        fw->overflow = false;
        pthread_mutex_unlock(&fw->mu);
        fw->overflows_total++;
        free(buckets);
        return -2;
    }
    batch = fw->pending;
    fw->pending = fresh;
    pthread_mutex_unlock(&fw->mu);
    while (keymap_next(batch, &pos, &k, &len, NULL, &stamp)) {
        if (!matches(r->t, k, len)) {
            if (len >= sizeof(REGISTRY_PREFIX) - 1 &&
                memcmp(k, REGISTRY_PREFIX, sizeof(REGISTRY_PREFIX) - 1) == 0)
                fw->registry_dirty = true;
            continue;           /* outside the patterns: nothing to re-read */
        }
        if (fw->cluster) {
            shard = fw->topo.slot_shard[cluster_keyslot(k, len)];
            if (shard >= nb) {
                snprintf(r->err, sizeof(r->err), "a key's slot is served by no shard known");
                goto out;       /* the topology changed: a full scan */
            }
        }
        if (*oldest == 0 || stamp < *oldest)
            *oldest = stamp;
        changed = 1;
        buckets[shard].keys[buckets[shard].n] = k;
        buckets[shard].lens[buckets[shard].n++] = len;
        if (buckets[shard].n == FOLLOW_READ_BATCH && flush_bucket(r, &buckets[shard], shard) == -1)
            goto out;
    }
    for (i = 0; i < nb; i++)
        if (flush_bucket(r, &buckets[i], i) == -1)
            goto out;
    if (fw->registry_dirty)
        changed = 1;
    rc = changed;
out:
    keymap_free(batch, NULL);
    free(buckets);
    return rc;
}

/* ---- snapshots from the map ------------------------------------------------------ */

/* The streams the registry look-up sends on: one per shard in topology
 * order (cluster), or the one connection's.  NULL when a shard has no
 * connection kept. */
static struct stream *
registry_streams(struct run *r, size_t *n)
{
    struct follow *fw = r->sc->fw;
    struct stream *st;
    const char *host;
    size_t i;

    *n = fw->cluster ? fw->topo.nshards : 1;
    if ((st = calloc(*n ? *n : 1, sizeof(*st))) == NULL)
        return NULL;
    for (i = 0; i < *n; i++) {
        st[i].r = r;
        if ((st[i].c = conn_of(r->sc, i, &host, &st[i].port)) == NULL) {
            free(st);
            return NULL;
        }
        snprintf(st[i].host, sizeof(st[i].host), "%s", host);
    }
    return st;
}

/* Snapshot s has the last full scan's figures (the scan metrics stay
 * those of the last full scan) and, for a cluster, its shards' report. */
static int
scan_figures(const struct follow *fw, const struct scanner *sc, struct snapshot *s)
{
    s->started_ms = fw->scan_started_ms;
    s->finished_ms = fw->scan_finished_ms;
    s->duration_s = fw->scan_duration_s;
    s->keys_examined = fw->scan_keys;
    if (!fw->cluster) {
        snprintf(s->node, sizeof(s->node), "%s:%d", sc->host, sc->port);
        return 0;
    }
    if ((s->shards = calloc(fw->nshards ? fw->nshards : 1, sizeof(*s->shards))) == NULL)
        return -1;
    memcpy(s->shards, fw->shards, fw->nshards * sizeof(*s->shards));
    s->nshards = fw->nshards;
    return 0;
}

struct snapshot *
follow_snapshot(struct scanner *sc, const struct target_conf *t,
                const struct scan_rules *rules, const atomic_int *stop, int64_t *next_due_ms)
{
    struct follow *fw = sc->fw;
    struct run r;
    struct stream st, *streams = NULL;
    struct snapshot *s;
    struct raw_lock raw;
    struct key_meta m;
    redisReply keyrep;
    const char *k;
    size_t len, pos = 0, i, nstreams = 0;
    void *v;
    int64_t now_mono = clock_mono_ms();
    int ok = 1;

    memset(&st, 0, sizeof(st));
    if ((s = run_begin(&r, sc, t, rules, stop)) == NULL)
        return NULL;
    sc->pass++;
    if (sc->pass == 0)
        sc->pass = 1;
    st.r = &r;
    while (ok && keymap_next(fw->locks, &pos, &k, &len, &v, NULL)) {
        const struct frec *f = v;

        memset(&keyrep, 0, sizeof(keyrep));
        keyrep.type = REDIS_REPLY_STRING;
        keyrep.str = (char *)k;
        keyrep.len = len;
        memset(&m, 0, sizeof(m));
        m.key = &keyrep;
        m.type = f->type;
        m.idle_s = f->idle_s;
        m.read_ms = f->read_ms;
        if (f->helper) {
            m.helper = true;
            if (record_helper(&st, &m) == -1)
                ok = 0;
            continue;
        }
        memset(&raw, 0, sizeof(raw));
        raw.key = k;
        raw.keylen = len;
        raw.type = f->type;
        /* the TTL as it stands now; the expiry's event removes the key */
        raw.pttl = f->pttl;
        if (f->pttl >= 0) {
            raw.pttl = f->pttl - (now_mono - f->read_mono);
            if (raw.pttl < 1)
                raw.pttl = 1;
        }
        m.pttl = raw.pttl;
        raw.value = f->value;
        raw.valuelen = f->valuelen;
        raw.value_truncated = f->value_truncated;
        raw.fields = f->fields;
        raw.nfields = f->nfields;
        raw.fields_truncated = f->fields_truncated;
        if (record_key(&st, &m, &raw, f->hlen) == -1)
            ok = 0;
    }
    if (ok && (streams = registry_streams(&r, &nstreams)) == NULL)
        ok = 0;
    if (ok && registry_lookup(&r, streams, nstreams, fw->cluster ? &fw->topo : NULL) == -1)
        ok = 0;
    /* as a full scan does: the helper keys kept, those outside the
     * patterns, then the waiters (after the formats the helpers give) */
    helperkeys_finish(&r, ok);
    if (ok && helperkeys_probe(&r, streams, nstreams, fw->cluster ? &fw->topo : NULL) == -1)
        ok = 0;
    if (ok && waiters_lookup(&r, streams, nstreams, fw->cluster ? &fw->topo : NULL) == -1)
        ok = 0;
    for (i = 0; ok && i < nstreams; i++)
        if (streams[i].failed)
            ok = 0;             /* a connection failed: a full scan says what */
    free(streams);
    if (ok && (record_finish(&r) == -1 || scan_figures(fw, sc, s) == -1))
        ok = 0;
    class_set_free(r.classes);
    pthread_mutex_destroy(&r.mu);
    if (!ok) {
        redlock_map_free(r.rmap);
        snapshot_unref(s);
        return NULL;
    }
    tracker_sweep(sc->tracker, sc->pass);
    if (r.rmap != NULL) {
        redlock_map_finish(r.rmap);
        s->redlock = r.rmap;
    }
    s->ok = true;
    /* at the latest a scan_interval from now, as a scan would */
    *next_due_ms = r.now_ms + t->scan_interval_ms;
    if (r.next_due_ms > 0 && r.next_due_ms < *next_due_ms)
        *next_due_ms = r.next_due_ms;
    if (*next_due_ms <= r.now_ms)
        *next_due_ms = r.now_ms + FOLLOW_PUBLISH_MS;    /* never a busy loop */
    s->follow.from_events = true;
    return s;
}

