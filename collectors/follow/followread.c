/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * followread.c - follow mode's records: a copy of each lock key as last
 * read (type, PTTL, IDLETIME, the bounded value or fields, when), the
 * re-reads of the keys named in events, and the snapshots made from the
 * records exactly as a scan makes one.
 *
 * Re-reads use the scanner's own pipelined reads (scanner_reread():
 * OBJECT IDLETIME, TYPE, PTTL, then GETRANGE or HLEN + HSCAN), up to
 * FOLLOW_READ_BATCH keys a pipeline, on the connections the last full
 * scan kept; in a cluster each key goes to the primary of the shard that
 * serves its slot in the last full scan's topology, and a redirection
 * there (a resharding) is followed.  A key that is no longer there (or
 * no longer a string or hash) loses its record; a
 * refused read fails the re-reads, so the full scan that follows reports
 * it as a scan does.  Only keys matching the target's patterns are read;
 * an event on a client registry key asks for a new registry look-up.
 * A snapshot hands each record to the scanner's per-key step as the
 * values it was read as (scanner_replay()).
 */
#include "collectors/follow/follow_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The class of the events that announce a write of a key of type t
 * (ksub.h); 0 for other types (a list helper: no lock's state). */
static unsigned
type_class(enum raw_type t)
{
    return t == RAW_STRING ? KSUB_CLASS('$') : t == RAW_HASH ? KSUB_CLASS('h') :
           t == RAW_ZSET ? KSUB_CLASS('z') : 0;
}

/* One allocation: the record, its fields, then the bytes they point to. */
static struct frec *
frec_new(const struct scan_key *k, const struct raw_lock *raw, long long hlen, int64_t read_ms)
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
    f->helper = k->helper;
    f->pttl = raw->pttl;
    f->read_mono = clock_mono_ms();
    f->read_ms = read_ms;
    f->idle_s = k->idle_s;
    f->idle_at_ms = k->idle_at_ms;
    f->hlen = hlen;
    f->value_truncated = raw->value_truncated;
    f->fields_truncated = raw->fields_truncated;
    f->mode_read = raw->mode_read;
    f->modelen = raw->mode == NULL ? 0 : raw->modelen < sizeof(f->mode) ? raw->modelen
        : sizeof(f->mode);
    if (f->modelen > 0)
        memcpy(f->mode, raw->mode, f->modelen);
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
    f->size = bytes + raw->keylen + KEYMAP_ENTRY_COST;
    return f;
}

int
follow_keep(struct follow *fw, const struct scan_key *k, const struct raw_lock *raw,
            long long hlen, int64_t read_ms)
{
    struct frec *f;
    void *old = NULL;

    if (fw->fill_over)
        return 0;               /* too many to keep: this pass scans */
    if ((f = frec_new(k, raw, hlen, read_ms)) == NULL)
        return -1;
    fw->key_classes |= type_class(raw->type);
    if (fw->fill_bytes + f->size > FOLLOW_RECORDS_BYTES ||
        keymap_count(fw->fill) >= fw->max_locks) {
        free(f);
        keymap_free(fw->fill, frec_free);
        fw->fill = keymap_new(0, 0);
        fw->fill_bytes = 0;
        fw->fill_over = true;
        return 0;
    }
    if (keymap_put(fw->fill, raw->key, raw->keylen, f, 0, &old) == -1) {
        free(f);
        return -1;
    }
    fw->fill_bytes += f->size;
    if (old != NULL)
        fw->fill_bytes -= ((struct frec *)old)->size;
    free(old);
    return 0;
}

/* ---- re-reading the keys of events ---------------------------------------------- */

/*
 * Where a cluster node sent a key (a slot moved or moving, resharding).
 * MOVED (the node answers so even after ASKING: it does not import the
 * slot) names the node that serves the slot now, and the key is re-read
 * there at once.  ASK names the node importing the slot, where the key
 * already is (the node asked, which still serves the slot, no longer has
 * it): the key is re-read there at once, each read after ASKING, so a
 * lock written or released on that node during the migration is seen
 * then, not when the slot has settled.  TRYAGAIN, a redirection past
 * the hops allowed or to a node the last pass kept no connection to
 * leave the record as it was, and the key is re-read on a later tick.
 * Either way the key is not dropped as gone: it is still there.
 */
struct redirect {
    bool set;
    bool later;                 /* TRYAGAIN: re-read on a later tick */
    bool ask;                   /* ASK: read there after ASKING */
    char host[256];
    int port;
};

struct reread {
    struct follow *fw;
    const char *host;           /* the node read: a redirection's empty host */
    bool *found;
    struct redirect *red;       /* by index: where a node sent the key */
};

static int
reread_key(void *arg, size_t i, const struct scan_key *k, const struct raw_lock *raw,
           long long hlen)
{
    struct reread *rr = arg;
    struct frec *f = frec_new(k, raw, hlen, clock_now_ms());
    void *old = NULL;

    if (f == NULL || keymap_put(rr->fw->locks, raw->key, raw->keylen, f, 0, &old) == -1) {
        free(f);
        return -1;
    }
    /* a key that changed is the proof notifications flow (a PUBLISH
     * naming a key that did not change proves nothing) */
    if (old == NULL || ((struct frec *)old)->content != f->content)
        rr->fw->proven++;
    rr->fw->key_classes |= type_class(raw->type);
    rr->fw->locks_bytes += f->size;
    if (old != NULL)
        rr->fw->locks_bytes -= ((struct frec *)old)->size;
    free(old);
    rr->found[i] = true;
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

static void
reread_moved(void *arg, size_t i, const redisReply *rep)
{
    struct reread *rr = arg;
    struct redirect *rd = &rr->red[i];
    unsigned slot;

    rd->set = true;
    rd->later = !cluster_parse_redirect(rep, &rd->ask, &slot, rd->host, sizeof(rd->host),
                                        &rd->port);
    if (!rd->later && rd->host[0] == '\0')
        snprintf(rd->host, sizeof(rd->host), "%s", rr->host);
}

/* Re-read key on a later tick (its slot is moving). */
static void
retry_later(struct follow *fw, const char *key, size_t len)
{
    if (keymap_put(fw->retry, key, len, NULL, clock_mono_ms(), NULL) == -1)
        fw->retry_overflow = true;      /* a full scan repairs it */
}

/* The connection the last full scan kept to host:port, if any. */
static redisContext *
conn_at(const struct follow *fw, const char *host, int port)
{
    const char *h;
    int p;
    redisContext *c;

    if (fw->cluster)
        return scanner_node_conn(fw->sc, host, port);
    c = scanner_conn(fw->sc, &h, &p);
    return p == port && strcmp(h, host) == 0 ? c : NULL;
}

static int reread_chunk(struct follow *fw, const struct target_conf *t, redisContext *c,
                        const char *host, int port, bool asking, const char **keys,
                        const size_t *lens, size_t n, int hops, char *err, size_t errlen);

/* The keys of red[] sent to the same node as red[first] the same way
 * (MOVED, or ASK), re-read there (hops left), marked done. */
static int
follow_moved(struct follow *fw, const struct target_conf *t, const char **keys,
             const size_t *lens, size_t n, struct redirect *red, size_t first, int hops,
             char *err, size_t errlen)
{
    const char *k2[FOLLOW_READ_BATCH];
    size_t l2[FOLLOW_READ_BATCH], m = 0, i;
    char host[256];
    int port = red[first].port;
    bool ask = red[first].ask;
    redisContext *c;

    memcpy(host, red[first].host, sizeof(host));
    c = hops > 0 ? scanner_node_conn(fw->sc, host, port) : NULL;
    for (i = first; i < n; i++) {
        if (!red[i].set || red[i].later || red[i].ask != ask || red[i].port != port ||
            strcmp(red[i].host, host))
            continue;
        red[i].set = false;
        if (c == NULL)
            retry_later(fw, keys[i], lens[i]);  /* a node the pass did not keep */
        else {
            k2[m] = keys[i];
            l2[m++] = lens[i];
        }
    }
    return m == 0 ? 0 : reread_chunk(fw, t, c, host, port, ask, k2, l2, m, hops - 1, err,
                                     errlen);
}

/* Re-read n keys (keys[i], lens[i]) of t on c (to host:port; asking: an
 * ASK led there) and replace or drop their records, following a MOVED or
 * an ASK at most hops times.  0, or -1 (err) when the connection failed
 * or a read was refused. */
static int
reread_chunk(struct follow *fw, const struct target_conf *t, redisContext *c, const char *host,
             int port, bool asking, const char **keys, const size_t *lens, size_t n, int hops,
             char *err, size_t errlen)
{
    bool found[FOLLOW_READ_BATCH];
    enum redisconn_closed why;
    struct reread rr;
    size_t i;
    void *old;
    int rc = 0;

    memset(found, 0, sizeof(found));
    rr.fw = fw;
    rr.host = host;
    rr.found = found;
    if ((rr.red = calloc(n ? n : 1, sizeof(*rr.red))) == NULL) {
        snprintf(err, errlen, "out of memory re-reading keys");
        return -1;
    }
    rc = scanner_reread(fw->sc, t, c, host, port, asking, keys, lens, n, reread_key,
                        reread_moved, &rr, err, errlen);
    /* the first use of the kept connection since the last: one its peer
     * closed while idle (the server's timeout, a CLIENT KILL) is opened
     * again and the keys read once more, rather than a full scan */
    if (rc == -1 && redisconn_closed(c, &why) && scanner_revive(fw->sc, t, err, errlen) > 0 &&
        (c = conn_at(fw, host, port)) != NULL) {
        memset(found, 0, sizeof(found));
        memset(rr.red, 0, (n ? n : 1) * sizeof(*rr.red));
        rc = scanner_reread(fw->sc, t, c, host, port, asking, keys, lens, n, reread_key,
                            reread_moved, &rr, err, errlen);
    }
    if (rc == -1)
        goto out;
    /* what was not handed over is gone (or no longer a string or hash),
     * unless a cluster node said it is elsewhere */
    for (i = 0; i < n; i++) {
        if (found[i] || rr.red[i].set)
            continue;
        if (keymap_del(fw->locks, keys[i], lens[i], &old)) {
            fw->locks_bytes -= ((struct frec *)old)->size;
            free(old);
            fw->proven++;
        }
    }
    for (i = 0; i < n && rc == 0; i++) {
        if (!rr.red[i].set)
            continue;
        if (rr.red[i].later) {
            rr.red[i].set = false;
            retry_later(fw, keys[i], lens[i]);
            continue;
        }
        rc = follow_moved(fw, t, keys, lens, n, rr.red, i, hops, err, errlen);
    }
out:
    free(rr.red);
    return rc;
}

/* The connection the last full scan kept to shard i's primary (cluster),
 * or the one connection; NULL when there is none. */
static redisContext *
conn_of(const struct follow *fw, size_t shard, const char **host, int *port)
{
    const struct cluster_node *p;

    if (!fw->cluster)
        return scanner_conn(fw->sc, host, port);
    p = &fw->topo.shards[shard].primary;
    *host = p->host;
    *port = p->port;
    return scanner_node_conn(fw->sc, p->host, p->port);
}

/* Keys gathered for one node, re-read FOLLOW_READ_BATCH or
 * FOLLOW_READ_BYTES at a time (each key goes out in several commands). */
struct bucket {
    const char *keys[FOLLOW_READ_BATCH];
    size_t lens[FOLLOW_READ_BATCH];
    size_t n;
    size_t bytes;
};

struct apply {
    struct follow *fw;
    const struct target_conf *t;
    char *err;
    size_t errlen;
};

static int
flush_bucket(const struct apply *a, struct bucket *b, size_t shard)
{
    const char *host;
    int port;
    redisContext *c = conn_of(a->fw, shard, &host, &port);

    if (b->n == 0)
        return 0;
    if (c == NULL) {
        snprintf(a->err, a->errlen, "no connection to %s:%d to re-read keys", host, port);
        return -1;
    }
    if (reread_chunk(a->fw, a->t, c, host, port, false, b->keys, b->lens, b->n, 1, a->err,
                     a->errlen) == -1)
        return -1;
    b->n = 0;
    b->bytes = 0;
    return 0;
}

/* Move the keys to re-read on a later tick into batch.  -1 when they
 * overflowed (now or when they were put): a full scan. */
static int
merge_retry(struct follow *fw, struct keymap *batch)
{
    const char *k;
    size_t len, pos = 0;
    int64_t stamp;
    struct keymap *fresh;
    int rc = 0;

    if (keymap_count(fw->retry) == 0 && !fw->retry_overflow)
        return 0;
    while (rc == 0 && keymap_next(fw->retry, &pos, &k, &len, NULL, &stamp))
        if (keymap_put(batch, k, len, NULL, stamp, NULL) == -1)
            rc = -1;
    if (fw->retry_overflow)
        rc = -1;
    if ((fresh = keymap_new(FOLLOW_PENDING_MAX, FOLLOW_PENDING_BYTES)) == NULL)
        return rc;              /* kept: merged again next time */
    keymap_free(fw->retry, NULL);
    fw->retry = fresh;
    fw->retry_overflow = false;
    return rc;
}

int
follow_apply_pending(struct follow *fw, const struct target_conf *t, int64_t *oldest,
                     char *err, size_t errlen)
{
    const struct apply a = { fw, t, err, errlen };
    struct keymap *batch, *fresh;
    struct bucket *buckets;
    const char *k;
    size_t nb = fw->cluster ? fw->topo.nshards : 1, len, pos = 0, i, shard = 0;
    int64_t stamp;
    int changed = 0, rc = -1;

    if ((fresh = keymap_new(FOLLOW_PENDING_MAX, FOLLOW_PENDING_BYTES)) == NULL)
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
        snprintf(fw->fresh_note, sizeof(fw->fresh_note), "a full scan: %s", fw->overflow_why);
        pthread_mutex_unlock(&fw->mu);
        fw->overflows_total++;
        free(buckets);
        return -2;
    }
    batch = fw->pending;
    fw->pending = fresh;
    pthread_mutex_unlock(&fw->mu);
    /* the keys whose slot was moving at the last tick, again */
    if (merge_retry(fw, batch) == -1) {
        keymap_free(batch, NULL);
        free(buckets);
        fw->overflows_total++;
        return -2;
    }
    while (keymap_next(batch, &pos, &k, &len, NULL, &stamp)) {
        if (!matches(t, k, len)) {
            if (len >= sizeof(REGISTRY_PREFIX) - 1 &&
                memcmp(k, REGISTRY_PREFIX, sizeof(REGISTRY_PREFIX) - 1) == 0)
                fw->registry_dirty = true;
            continue;           /* outside the patterns: nothing to re-read */
        }
        if (fw->cluster) {
            shard = fw->topo.slot_shard[cluster_keyslot(k, len)];
            if (shard >= nb) {
                snprintf(err, errlen, "a key's slot is served by no shard known");
                goto out;       /* the topology changed: a full scan */
            }
        }
        if (*oldest == 0 || stamp < *oldest)
            *oldest = stamp;
        changed = 1;
        buckets[shard].keys[buckets[shard].n] = k;
        buckets[shard].lens[buckets[shard].n++] = len;
        buckets[shard].bytes += len;
        if ((buckets[shard].n == FOLLOW_READ_BATCH || buckets[shard].bytes >= FOLLOW_READ_BYTES) &&
            flush_bucket(&a, &buckets[shard], shard) == -1)
            goto out;
    }
    for (i = 0; i < nb; i++)
        if (flush_bucket(&a, &buckets[i], i) == -1)
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

/* Snapshot s has the last full scan's figures (the scan metrics stay
 * those of the last full scan) and, for a cluster, its shards' report. */
static int
scan_figures(const struct follow *fw, struct snapshot *s)
{
    const char *host;
    int port;

    s->started_ms = fw->scan_started_ms;
    s->finished_ms = fw->scan_finished_ms;
    s->proven_ms = fw->proven_ms > fw->scan_finished_ms ? fw->proven_ms : 0;
    s->duration_s = fw->scan_duration_s;
    s->keys_examined = fw->scan_keys;
    if (!fw->cluster) {
        (void)scanner_conn(fw->sc, &host, &port);
        snprintf(s->node, sizeof(s->node), "%s:%d", host, port);
        return 0;
    }
    if ((s->shards = calloc(fw->nshards ? fw->nshards : 1, sizeof(*s->shards))) == NULL)
        return -1;
    memcpy(s->shards, fw->shards, fw->nshards * sizeof(*s->shards));
    s->nshards = fw->nshards;
    return scanner_stamp_nodes(fw->sc, s);
}

/* When record f's TTL runs out, on the monotonic clock; 0 when it has none. */
int64_t
frec_expires_mono(const struct frec *f)
{
    return f->pttl >= 0 ? f->read_mono + f->pttl : 0;
}

/* A replay's walk over the records: the earliest local expiry it met. */
struct replay {
    const struct follow *fw;
    int64_t now_mono;
    int64_t next_expiry;        /* mono ms; 0: none */
};

/*
 * Hand every record to the per-key step, in the values it was read as.
 * A record whose TTL ran out is left out: Redis announces "expired" only
 * when it reclaims the key (lazily, or by its sampling cycle, seconds
 * later with many keys with TTLs), but the PTTL read says when the key
 * stopped existing for every client, so the view drops it then, with no
 * read (the expired event re-reads it later and finds it gone, or set
 * again).
 */
static int
replay_records(void *arg, struct run *r, struct scan_counters *cnt)
{
    struct replay *rp = arg;
    struct raw_lock raw;
    struct scan_key key;
    const char *k;
    size_t len, pos = 0;
    void *v;
    int64_t exp;

    while (keymap_next(rp->fw->locks, &pos, &k, &len, &v, NULL)) {
        const struct frec *f = v;

        exp = frec_expires_mono(f);
        if (exp > 0 && exp <= rp->now_mono)
            continue;
        if (exp > 0 && (rp->next_expiry == 0 || exp < rp->next_expiry))
            rp->next_expiry = exp;
        memset(&key, 0, sizeof(key));
        key.key = k;
        key.keylen = len;
        key.type = f->type;
        key.idle_s = f->idle_s;
        key.idle_at_ms = f->idle_at_ms;
        key.read_ms = f->read_ms;
        key.helper = f->helper;
        memset(&raw, 0, sizeof(raw));
        raw.key = k;
        raw.keylen = len;
        raw.type = f->type;
        /* the TTL as it stands now (at least 1: it has not run out) */
        raw.pttl = f->pttl >= 0 ? exp - rp->now_mono : f->pttl;
        key.pttl = raw.pttl;
        raw.value = f->value;
        raw.valuelen = f->valuelen;
        raw.value_truncated = f->value_truncated;
        raw.fields = f->fields;
        raw.nfields = f->nfields;
        raw.fields_truncated = f->fields_truncated;
        raw.mode_read = f->mode_read;
        raw.mode = f->mode_read && f->modelen > 0 ? f->mode : NULL;
        raw.modelen = f->modelen;
        if (scan_record(r, &key, &raw, f->hlen, cnt) == -1)
            return -1;
    }
    return 0;
}

struct snapshot *
follow_snapshot(struct follow *fw, const struct target_conf *t,
                const struct scan_rules *rules, const atomic_int *stop, int64_t *due_mono)
{
    struct snapshot *s;
    int64_t start_mono = clock_mono_ms(), now_ms, next_due_ms, left;
    struct replay rp = { fw, start_mono, 0 };

    s = scanner_replay(fw->sc, t, rules, stop, fw->cluster ? &fw->topo : NULL, replay_records,
                       &rp, &now_ms, &next_due_ms);
    if (s == NULL)
        return NULL;
    if (scan_figures(fw, s) == -1) {
        snapshot_unref(s);
        return NULL;
    }
    /* at the latest a scan_interval from now, as a scan would; the states
     * were judged at now_ms, so the wait is counted from then, on the
     * monotonic clock */
    left = t->scan_interval_ms;
    if (next_due_ms > 0 && next_due_ms - now_ms < left)
        left = next_due_ms - now_ms;
    /* and when the first kept lock's TTL runs out: it leaves the view
     * then, in steps of at least FOLLOW_EXPIRE_MS (a snapshot costs a
     * registry look-up: TTLs spread over time must not make one a tick) */
    if (rp.next_expiry > 0 && rp.next_expiry - start_mono < left)
        left = rp.next_expiry - start_mono < FOLLOW_EXPIRE_MS ? FOLLOW_EXPIRE_MS :
            rp.next_expiry - start_mono;
    if (left <= 0)
        left = FOLLOW_PUBLISH_MS;       /* never a busy loop */
    *due_mono = start_mono + left;
    s->follow.from_events = true;
    return s;
}

/* The held locks s keeps whose waiters are a fair queue. */
size_t
follow_queue_locks(const struct snapshot *s)
{
    size_t i, n = 0;

    for (i = 0; i < s->nlocks; i++) {
        const struct snap_lock *l = s->locks[i];

        if (l->nholders > 0 && l->format < formats_count &&
            formats_table[l->format].waiters == FMT_WAITERS_QUEUE)
            n++;
    }
    return n;
}

/* CPU time this thread has used, in microseconds. */
int64_t
follow_cpu_us(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
