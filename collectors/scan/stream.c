/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stream.c - one node's pass: the pipelined SCAN / META / VALS stream and
 * its pacing.
 *
 * Per SCAN batch the scanner needs, for each key: OBJECT IDLETIME (read
 * before anything touches the key, since a GET would reset it), TYPE and
 * PTTL; then, by type, a bounded read of the value (GETRANGE of at most
 * RAW_VALUE_MAX+1 bytes, or one HSCAN of at most ~RAW_FIELDS_MAX fields).
 *
 * The commands are streamed, not sent in lock-step rounds.  Three kinds of
 * segment go down one connection in a FIFO: SCAN (next cursor), META
 * (IDLETIME, TYPE, PTTL of a batch) and VALS (the value reads of a batch
 * whose types are known).  Reading a SCAN reply sends the batch's META and
 * the next SCAN at once; reading a META sends its VALS; reading VALS
 * records the locks (record.c).  Up to INFLIGHT_MAX batches are between
 * their SCAN and their VALS, so Redis always has queued work while the
 * scanner decodes and Redis and the scanner run in parallel instead of
 * taking turns.  That is how the scan, which sends twice the commands of
 * the SCAN + TYPE + PTTL floor in bench/, stays close to it.  The batches
 * are a fixed pool of INFLIGHT_MAX per stream whose key arrays grow to the
 * largest batch and are then reused: no allocation per key.
 *
 * Pacing: work is measured in busy wall time since the last pause; once
 * a slice of PACE_SLICE_MS is used, the stream stops sending SCANs, lets
 * the pipeline drain and sleeps busy * (1 - duty) / duty, so at most
 * scan_duty of each node's wall time goes to the scan.
 * max_keys_per_second is an absolute cap for the whole target, shared
 * equally by its streams (scan.c gives each its share).  Sleeps are
 * sliced so a stop request is seen within 50 ms.
 *
 * Keys may vanish between SCAN and the reads (or change type, or a
 * cluster slot may move away): they are counted as vanished and skipped.
 * A cluster node whose SCAN returned a key but whose read of it answers
 * MOVED imports the key's slot (a migration to it is under way, and
 * MIGRATE already moved the key here): it serves the key only to a
 * command right after ASKING.  Such a key's META is sent again, each
 * command after ASKING (an ASKING segment between its batch's META and
 * VALS), and so are its value reads, so it is read where it is like any
 * other (lockwatch_scan_asking_keys_total).  A key is on one node at a
 * time (MIGRATE is atomic), so that is its current value.  What still
 * cannot be read there (MOVED again: the slot moved away since SCAN;
 * ASK: the key left a slot migrating away; TRYAGAIN) is counted moved
 * as well as vanished: the view may lack it (/readyz says so).  A key of
 * a slot no node serves, as the pass's topology has it too (CLUSTERDOWN
 * Hash slot not served: gap_key()), is skipped: the gap is a shard down
 * of its own, its locks last known (scan.c).
 * Any other error reply to a read (NOPERM from an ACL without +getrange,
 * LOADING, BUSY, MASTERDOWN, ...) is not a key that went away but a key
 * the scanner cannot judge, which may be a leak: it is counted by kind
 * (lockwatch_scan_read_errors_total), and the pass, read to its end so
 * every refusal is counted, fails with the first one as its error, so the
 * target is down (target_up 0, /readyz, LockTargetDown) rather than
 * reported clean.  A refused TYPE fails the pass at once.
 */
#include "collectors/scan/scan_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/redis/conn.h"
#include "common/clock.h"

bool
scan_stopped(const struct run *r)
{
    return r->stop != NULL && atomic_load(r->stop);
}

/* Sleep ms in slices, returning early when asked to stop. */
static void
pause_ms(const struct run *r, int64_t ms)
{
    struct timespec ts;
    int64_t slice;

    while (ms > 0 && !scan_stopped(r)) {
        slice = ms > 50 ? 50 : ms;
        ts.tv_sec = 0;
        ts.tv_nsec = (long)slice * 1000000L;
        nanosleep(&ts, NULL);
        ms -= slice;
    }
}

int64_t
scan_duty_pause(double duty, int64_t busy_ms)
{
    if (duty > 0 && duty < 1 && busy_ms >= PACE_SLICE_MS)
        return (int64_t)((double)busy_ms * (1.0 - duty) / duty);
    return 0;
}

/* How long to pause now to keep to scan_duty and max_keys_per_second;
 * 0 while the current slice of work is not used up. */
static int64_t
pace_due(struct stream *s)
{
    int64_t now = clock_mono_ms();
    int64_t wait = scan_duty_pause(s->r->t->scan_duty, now - s->resume_mono);

    if (s->max_kps > 0) {
        /* the earliest time by which this many keys are allowed */
        int64_t due = (int64_t)(s->keys * 1000 / (uint64_t)s->max_kps);
        int64_t ahead = due - (now - s->start_mono);

        if (ahead > wait)
            wait = ahead;
    }
    return wait;
}

static int
batch_take(struct batch *b, redisReply *scan, const struct target_conf *t)
{
    redisReply *keys = scan->element[1];
    size_t i;

    b->scan = scan;
    b->n = 0;
    if (keys->elements > b->cap) {
        struct key_meta *m = realloc(b->meta, keys->elements * sizeof(*m));

        if (m == NULL)
            return -1;
        b->meta = m;
        b->cap = keys->elements;
    }
    for (i = 0; i < keys->elements; i++) {
        /* exclude_patterns: never read, listed or counted */
        if (keys->element[i]->type != REDIS_REPLY_STRING ||
            lock_key_excluded(t, keys->element[i]->str, keys->element[i]->len))
            continue;
        memset(&b->meta[b->n], 0, sizeof(b->meta[b->n]));
        b->meta[b->n].k.key = keys->element[i]->str;
        b->meta[b->n].k.keylen = keys->element[i]->len;
        b->n++;
    }
    return 0;
}

static void
batch_clear(struct batch *b)
{
    if (b->scan != NULL)
        freeReplyObject(b->scan);
    b->scan = NULL;
    b->n = 0;
}

/* Append a read of m's key: cmd [sub] key [a1 [a2 [a3]]], after ASKING
 * when m->asking (ASKING holds for the next command only). */
static void
append_key_cmd(struct stream *s, const struct key_meta *m, const char *cmd, const char *sub,
               const char *a1, const char *a2, const char *a3)
{
    const struct scan_key *key = &m->k;
    const char *argv[6];
    size_t lens[6];
    int argc = 0;

    if (m->asking)
        redisAppendCommand(s->c, "ASKING");
    argv[argc] = cmd;
    lens[argc++] = strlen(cmd);
    if (sub != NULL) {
        argv[argc] = sub;
        lens[argc++] = strlen(sub);
    }
    argv[argc] = key->key;
    lens[argc++] = key->keylen;
    if (a1 != NULL) {
        argv[argc] = a1;
        lens[argc++] = strlen(a1);
    }
    if (a2 != NULL) {
        argv[argc] = a2;
        lens[argc++] = strlen(a2);
    }
    if (a3 != NULL) {
        argv[argc] = a3;
        lens[argc++] = strlen(a3);
    }
    redisAppendCommandArgv(s->c, argc, argv, lens);
}

static int flush(struct stream *s);

/* hiredis reports a command timeout as EAGAIN; say what it means.  The
 * read keeps to the thread's scope (a full scan's scan_timeout) and the
 * reply limits (collectors/redis/conn.h). */
int
stream_reply(struct stream *s, redisReply **rep)
{
    redisContext *c = s->c;
    redisReply *p = NULL;

    if (redisconn_get_reply(c, &p) == -1 || p == NULL) {
        if (redisconn_timed_out(c))
            stream_err(s, "read from %s:%d: timed out after %lld ms (command_timeout)",
                    s->host, s->port, (long long)s->r->t->command_timeout_ms);
        else
            stream_err(s, "read from %s:%d: %s", s->host, s->port,
                    c->errstr[0] ? c->errstr : "connection lost");
        s->conn_lost = true;
        return -1;
    }
    *rep = p;
    return 0;
}

/* Read the reply to a read of m's key, past the reply to the ASKING sent
 * before it when m->asking (an ASKING refused, NOPERM from an ACL without
 * +asking, shows in the read's own reply: MOVED). */
static int
key_reply(struct stream *s, const struct key_meta *m, redisReply **rep)
{
    if (m->asking) {
        if (stream_reply(s, rep) == -1)
            return -1;
        freeReplyObject(*rep);
    }
    return stream_reply(s, rep);
}

/* A cluster redirection or a slot in migration: the key is elsewhere,
 * or here only after ASKING (redirected()). */
static bool
moved(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_ERROR &&
        ((rep->len >= 6 && memcmp(rep->str, "MOVED ", 6) == 0) ||
         (rep->len >= 4 && memcmp(rep->str, "ASK ", 4) == 0) ||
         (rep->len >= 8 && memcmp(rep->str, "TRYAGAIN", 8) == 0));
}

/*
 * A key of a slot no node serves (cluster-require-full-coverage no), as
 * the pass's topology has it too: the key is still in this node's memory,
 * but it is the slots-no-node-serves shard's, down and carried last known
 * (scan.c), not this node's, whose other keys are read as ever.  A node
 * that answers so for a slot the topology gives a shard (a DELSLOTS on the
 * owner only, or one since the discovery) is refused, and its shard fails
 * with its locks last known: skipped, the lock would drop out as released
 * (a red-team).
 */
static bool
gap_key(const struct stream *s, const struct key_meta *m, const redisReply *rep)
{
    return cluster_err_unserved(rep) && s->slot_shard != NULL &&
        s->slot_shard[cluster_keyslot(m->k.key, m->k.keylen)] == CLUSTER_NO_SHARD;
}

/* WRONGTYPE: the key was replaced by another type since TYPE. */
static bool
wrongtype(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_ERROR && rep->len >= 9 &&
        memcmp(rep->str, "WRONGTYPE", 9) == 0;
}

/* Count the error reply rep to cmd as a refused read. */
static void
count_refusal(struct stream *s, const char *cmd, const redisReply *rep)
{
    s->cnt.read_errors[scan_read_error_of(rep->str, rep->len)]++;
    if (s->refused++ == 0)
        scan_errf(s->refused_err, sizeof(s->refused_err), "%s on %s:%d refused: %.*s", cmd,
                  s->host, s->port, (int)(rep->len > 120 ? 120 : rep->len), rep->str);
}

/* A value read's error reply: false when it only says the key changed
 * type or moved (vanished here); true, counted, when it refused the
 * read. */
static bool
read_refused(struct stream *s, const char *cmd, const redisReply *rep)
{
    if (wrongtype(rep) || moved(rep))
        return false;
    count_refusal(s, cmd, rep);
    return true;
}

/*
 * The TYPE of key m (index i of batch b) met redirection rep.  MOVED from
 * the node whose SCAN returned it, unasked: that node imports the key's
 * slot, so the key's META is sent again, asking.  Anything else says the
 * key is elsewhere: a re-read's caller is told where; a pass counts it
 * (it is read where it lives now if that node's SCAN is still to come to
 * it, else the view lacks it).
 */
static void
redirected(struct stream *s, struct batch *b, struct key_meta *m, size_t i,
           const redisReply *rep)
{
    if (!m->asking && rep->len >= 6 && memcmp(rep->str, "MOVED ", 6) == 0) {
        m->reread = true;       /* asking from its META sent again on (its
                                 * PTTL went out unasked) */
        b->nreread++;
    } else if (s->on_moved != NULL) {
        s->on_moved(s->on_key_arg, i, rep);
    } else {
        s->cnt.moved_total++;
    }
}

/* Read the META replies of batch b's keys (again: of those marked to be
 * read again, asking). */
static int
read_meta(struct stream *s, struct batch *b, bool again)
{
    redisReply *rep;
    size_t i;

    if (!again)
        b->nreread = 0;
    for (i = 0; i < b->n; i++) {
        struct key_meta *m = &b->meta[i];

        if (again && !m->reread)
            continue;
        m->reread = m->skip = m->unread = m->k.helper = false;
        m->k.idle_s = -1;
        m->k.idle_at_ms = 0;
        if (b->idle) {
            if (key_reply(s, m, &rep) == -1)
                return -1;
            /* an LFU maxmemory-policy (set since the pass began): stop
             * asking; any error is an unknown age */
            if (rep->type == REDIS_REPLY_ERROR && redisconn_lfu_error(rep->str, rep->len))
                s->no_idle = true;
            m->k.idle_s = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
            m->k.idle_at_ms = clock_now_ms();
            freeReplyObject(rep);
        }
        if (key_reply(s, m, &rep) == -1)
            return -1;
        if (rep->type == REDIS_REPLY_ERROR && !moved(rep) && !gap_key(s, m, rep)) {
            /* NOPERM, CLUSTERDOWN, LOADING...: this node cannot be read,
             * and skipping its keys as vanished would hide that */
            count_refusal(s, "TYPE", rep);
            stream_err(s, "%s", s->refused_err);
            freeReplyObject(rep);
            return -1;
        }
        /* MOVED, ASK, TRYAGAIN: a slot moving between shards */
        if (moved(rep))
            redirected(s, b, m, i, rep);
        m->k.type = rawread_type(rep);
        freeReplyObject(rep);
        if (key_reply(s, m, &rep) == -1)
            return -1;
        /* Only the integer -2 says the key is gone.  A refused PTTL
         * (NOPERM: an ACL without +pttl) or a reply of another type
         * says nothing about the key, which may be a leak: it is a
         * refusal, counted, and the pass fails naming it, never a key
         * that vanished. */
        if (rep->type == REDIS_REPLY_INTEGER) {
            m->k.pttl = rep->integer;
        } else if (!moved(rep) && !gap_key(s, m, rep)) {
            if (rep->type == REDIS_REPLY_ERROR) {
                count_refusal(s, "PTTL", rep);
            } else {
                s->cnt.read_errors[SCAN_READ_OTHER]++;
                if (s->refused++ == 0)
                    scan_errf(s->refused_err, sizeof(s->refused_err), "PTTL on %s:%d: a "
                              "reply of type %d, not an integer", s->host, s->port, rep->type);
            }
            m->unread = true;
            m->k.pttl = -2;
        } else {
            m->k.pttl = -2;
        }
        freeReplyObject(rep);
        if (m->k.type == RAW_NONE || m->k.pttl == -2)
            m->skip = true;
        else if (formats_helper(m->k.key, m->k.keylen, m->k.type, NULL) != HELPER_NONE)
            m->k.helper = true;
    }
    return 0;
}

/* Append the META of batch b's keys (again: of those to read again,
 * asking, and from then on). */
static void
append_meta(struct stream *s, struct batch *b, bool again)
{
    size_t i;

    b->idle = !s->no_idle;
    for (i = 0; i < b->n; i++) {
        if (again && !b->meta[i].reread)
            continue;
        if (again)
            b->meta[i].asking = true;
        if (b->idle)
            append_key_cmd(s, &b->meta[i], "OBJECT", "IDLETIME", NULL, NULL, NULL);
        append_key_cmd(s, &b->meta[i], "TYPE", NULL, NULL, NULL, NULL);
        append_key_cmd(s, &b->meta[i], "PTTL", NULL, NULL, NULL, NULL);
    }
}

_Static_assert(RAW_FIELDS_LAST + 1 == RAW_FIELDS_MAX, "ZRANGE stop");
#define STR_(x) #x
#define STR(x) STR_(x)

static void
append_values(struct stream *s, const struct batch *b)
{
    size_t i;

    for (i = 0; i < b->n; i++) {
        const struct key_meta *m = &b->meta[i];

        if (m->skip || m->k.helper)
            continue;
        if (m->k.type == RAW_STRING)
            append_key_cmd(s, m, "GETRANGE", NULL, "0", STR(RAW_VALUE_MAX), NULL);
        else if (m->k.type == RAW_HASH) {
            /* HLEN: the true holder count when there are more fields
             * than one bounded HSCAN returns */
            append_key_cmd(s, m, "HLEN", NULL, NULL, NULL, NULL);
            append_key_cmd(s, m, "HSCAN", NULL, "0", "COUNT", STR(RAW_FIELDS_MAX));
            /* "mode" on its own: a cut hash may not show it (formats.h) */
            append_key_cmd(s, m, "HMGET", NULL, "mode", NULL, NULL);
        } else if (m->k.type == RAW_ZSET && formats_reads_zset(m->k.key, m->k.keylen)) {
            /* only a zset format's keys: any other zset is unknown, unread */
            append_key_cmd(s, m, "ZCARD", NULL, NULL, NULL, NULL);
            append_key_cmd(s, m, "ZRANGE", NULL, "0", STR(RAW_FIELDS_LAST), "WITHSCORES");
        }
    }
}

/* Read one reply of a value read of m's key into *rep (NULL after an
 * error reply it counted or that says the key changed); *refused is set
 * when Redis refused the read.  -1 when the connection failed. */
static int
value_reply(struct stream *s, const struct key_meta *m, const char *cmd, redisReply **rep,
            bool *refused)
{
    if (key_reply(s, m, rep) == -1)
        return -1;
    if ((*rep)->type == REDIS_REPLY_ERROR) {
        if (read_refused(s, cmd, *rep))
            *refused = true;
        freeReplyObject(*rep);
        *rep = NULL;
    }
    return 0;
}

static long long
reply_int(const redisReply *rep)
{
    return rep != NULL && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
}

/* Key m (index i of its batch) was read: handed to a re-read's caller,
 * or recorded.  0, or -1 on ENOMEM. */
static int
key_read(struct stream *s, size_t i, const struct key_meta *m, const struct raw_lock *raw,
         long long hlen)
{
    struct scan_key k;

    if (m->asking)
        s->cnt.asking_total++;
    if (s->on_key != NULL)
        return s->on_key(s->on_key_arg, i, &m->k, raw, hlen);
    k = m->k;
    k.born_ms = s->born_ms;
    return scan_record(s->r, &k, raw, hlen, &s->cnt);
}

/* Read the value replies of batch b (sent by append_values) and record
 * each key. */
static int
read_values(struct stream *s, struct batch *b)
{
    struct raw_field fields[RAW_FIELDS_MAX];
    struct raw_lock raw;
    redisReply *len, *rep, *mode;
    long long n;
    size_t i;
    bool refused, ok;
    int rc;

    for (i = 0; i < b->n; i++) {
        struct key_meta *m = &b->meta[i];

        if (m->skip) {
            if (!m->unread)
                s->cnt.vanished_total++;
            continue;
        }
        if (m->k.helper) {
            /* counted to its lock, its name only (no value) */
            memset(&raw, 0, sizeof(raw));
            raw.key = m->k.key;
            raw.keylen = m->k.keylen;
            raw.type = m->k.type;
            raw.pttl = m->k.pttl;
            if (key_read(s, i, m, &raw, -1) == -1) {
                stream_err(s, "out of memory recording locks");
                return -1;
            }
            continue;
        }
        memset(&raw, 0, sizeof(raw));
        raw.key = m->k.key;
        raw.keylen = m->k.keylen;
        raw.type = m->k.type;
        raw.pttl = m->k.pttl;
        raw.now_ms = s->r->now_ms;
        if (raw.type == RAW_ZSET && !formats_reads_zset(raw.key, raw.keylen))
            raw.type = RAW_OTHER;       /* not read (append_values) */
        len = rep = mode = NULL;
        refused = false;
        /* every reply in the pipeline is read, even after a refusal: each
         * refusal counts */
        if (raw.type == RAW_HASH && value_reply(s, m, "HLEN", &len, &refused) == -1)
            goto lost;
        if (raw.type == RAW_ZSET && value_reply(s, m, "ZCARD", &len, &refused) == -1)
            goto lost;
        if ((raw.type == RAW_STRING || raw.type == RAW_HASH || raw.type == RAW_ZSET) &&
            value_reply(s, m, raw.type == RAW_HASH ? "HSCAN" : raw.type == RAW_ZSET ? "ZRANGE"
                           : "GETRANGE", &rep, &refused) == -1)
            goto lost;
        /* an HMGET refused leaves the mode unread: not a refusal of the key */
        if (raw.type == RAW_HASH && key_reply(s, m, &mode) == -1)
            goto lost;
        n = reply_int(len);
        ok = true;
        if (refused) {
            ok = false;         /* counted; the pass will fail */
        } else if (raw.type == RAW_STRING) {
            ok = rawread_string(rep, &raw);
        } else if (raw.type == RAW_HASH) {
            /* empty: gone between TYPE and HSCAN */
            ok = rawread_hash(rep, fields, &raw) && raw.nfields > 0;
            rawread_mode(mode, &raw);
        } else if (raw.type == RAW_ZSET) {
            ok = rawread_zset(rep, fields, &raw, n) && raw.nfields > 0;
        }
        if (!ok && !refused)
            s->cnt.vanished_total++;    /* changed type, moved or emptied */
        rc = ok ? key_read(s, i, m, &raw, n) : 0;
        if (len != NULL)
            freeReplyObject(len);
        if (rep != NULL)
            freeReplyObject(rep);
        if (mode != NULL)
            freeReplyObject(mode);
        if (rc == -1) {
            stream_err(s, "out of memory recording locks");
            return -1;
        }
    }
    return 0;
lost:
    if (len != NULL)
        freeReplyObject(len);
    if (rep != NULL)
        freeReplyObject(rep);
    return -1;
}

int
stream_read_batch(struct stream *s, struct batch *b)
{
    append_meta(s, b, false);
    if (flush(s) == -1 || read_meta(s, b, false) == -1)
        return -1;
    if (b->nreread > 0) {
        append_meta(s, b, true);
        if (flush(s) == -1 || read_meta(s, b, true) == -1)
            return -1;
    }
    append_values(s, b);
    if (flush(s) == -1)
        return -1;
    return read_values(s, b);
}

static int
valid_scan_reply(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[0]->type == REDIS_REPLY_STRING &&
        rep->element[1]->type == REDIS_REPLY_ARRAY;
}

static void
push(struct stream *s, enum seg_kind kind, struct batch *b)
{
    /* cannot overflow: at most one SCAN plus two segments per batch (SEG_RING) */
    s->ring[(s->head + s->count) % SEG_RING].kind = kind;
    s->ring[(s->head + s->count) % SEG_RING].b = b;
    s->count++;
}

static int
flush(struct stream *s)
{
    int done = 0;

    while (!done)
        if (redisBufferWrite(s->c, &done) == REDIS_ERR) {
            if (redisconn_timed_out(s->c))
                stream_err(s, "write to %s:%d timed out after %lld ms (command_timeout; the "
                           "server is not reading)", s->host, s->port,
                           (long long)s->r->t->command_timeout_ms);
            else
                stream_err(s, "write to %s:%d: %s", s->host, s->port, s->c->errstr);
            return -1;
        }
    return 0;
}

/* Send the next SCAN if one is due and allowed now.  A pacing pause waits
 * until the pipeline has drained, so Redis is idle (for us) while the
 * scanner sleeps. */
static void
maybe_scan(struct stream *s)
{
    char count[16];
    int64_t wait;

    if (s->scan_done || s->scan_outstanding || s->inflight >= INFLIGHT_MAX)
        return;
    wait = pace_due(s);
    if (wait > 0) {
        if (s->count > 0)
            return;             /* drain first; called again after VALS */
        pause_ms(s->r, wait);
        s->resume_mono = clock_mono_ms();
    }
    snprintf(count, sizeof(count), "%d", s->r->t->scan_count);
    {
        const char *argv[6] = { "SCAN", s->cursor, "MATCH", s->r->t->patterns[s->pat],
                                "COUNT", count };

        redisAppendCommandArgv(s->c, 6, argv, NULL);
    }
    push(s, SEG_SCAN, NULL);
    s->scan_outstanding = true;
}

static struct batch *
free_batch(struct stream *s)
{
    size_t i;

    for (i = 0; i < INFLIGHT_MAX; i++)
        if (!s->pool[i].busy)
            return &s->pool[i];
    return NULL;
}

static int
on_scan(struct stream *s)
{
    const struct target_conf *t = s->r->t;
    struct batch *b;
    redisReply *rep;

    if (stream_reply(s, &rep) == -1)
        return -1;
    s->scan_outstanding = false;
    if (!valid_scan_reply(rep)) {
        if (rep->type == REDIS_REPLY_ERROR)
            stream_err(s, "SCAN on %s:%d refused: %.*s", s->host, s->port,
                    (int)(rep->len > 160 ? 160 : rep->len), rep->str);
        else
            stream_err(s, "SCAN on %s:%d: unexpected reply type %d", s->host, s->port, rep->type);
        freeReplyObject(rep);
        return -1;
    }
    snprintf(s->cursor, sizeof(s->cursor), "%.*s", (int)rep->element[0]->len,
             rep->element[0]->str);
    if (strcmp(s->cursor, "0") == 0) {
        if (++s->pat < t->npatterns)
            snprintf(s->cursor, sizeof(s->cursor), "0");
        else
            s->scan_done = true;
    }
    if (rep->element[1]->elements == 0) {
        freeReplyObject(rep);
    } else {
        b = free_batch(s);      /* a SCAN is only sent with a batch free */
        if (b == NULL || batch_take(b, rep, t) == -1) {
            freeReplyObject(rep);
            stream_err(s, "out of memory");
            return -1;
        }
        b->busy = true;
        s->inflight++;
        s->keys += b->n;
        append_meta(s, b, false);
        push(s, SEG_META, b);
    }
    maybe_scan(s);
    return 0;
}

/* The META replies of batch b (again: those of its keys read again,
 * asking) are next: read them, then send what the batch needs next, the
 * META of the keys whose node answered MOVED again, asking, or the value
 * reads. */
static int
on_meta(struct stream *s, struct batch *b, bool again)
{
    if (read_meta(s, b, again) == -1)
        return -1;
    if (!again && b->nreread > 0) {
        append_meta(s, b, true);
        push(s, SEG_ASKING, b);
        return 0;
    }
    append_values(s, b);
    push(s, SEG_VALS, b);
    return 0;
}

static int
on_vals(struct stream *s, struct batch *b)
{
    if (read_values(s, b) == -1)
        return -1;
    batch_clear(b);
    b->busy = false;
    s->inflight--;
    maybe_scan(s);
    return 0;
}

int
stream_scan(struct stream *s)
{
    struct segment seg;
    redisReply *info;
    size_t i;
    int rc = -1;

    snprintf(s->cursor, sizeof(s->cursor), "0");
    /* once a pass: under an LFU policy OBJECT IDLETIME is not asked */
    redisAppendCommand(s->c, "INFO memory");
    if (flush(s) == -1 || stream_reply(s, &info) == -1)
        goto out;
    s->no_idle = redisconn_lfu_reply(info) == 1;
    atomic_store(&s->r->sc->no_idle, s->no_idle);
    freeReplyObject(info);
    s->resume_mono = clock_mono_ms();
    maybe_scan(s);
    while (s->count > 0) {
        if (scan_stopped(s->r))
            goto out;
        if (clock_left(s->r->sc->scope.deadline_ms) == 0) {
            /* a cursor that never returns to 0, or a server too slow
             * for the keyspace: give up rather than freeze the target */
            stream_err(s, "scan of %s:%d not finished within %s after %llu keys (raise "
                       "scan_timeout if a full scan needs longer)", s->host, s->port,
                       s->r->sc->scope.what, (unsigned long long)s->keys);
            goto out;
        }
        if (flush(s) == -1)
            goto out;
        seg = s->ring[s->head];
        s->head = (s->head + 1) % SEG_RING;
        s->count--;
        switch (seg.kind) {
        case SEG_SCAN:
            if (on_scan(s) == -1)
                goto out;
            break;
        case SEG_META:
        case SEG_ASKING:
            if (on_meta(s, seg.b, seg.kind == SEG_ASKING) == -1)
                goto out;
            break;
        case SEG_VALS:
            if (on_vals(s, seg.b) == -1)
                goto out;
            break;
        }
    }
    if (s->refused > 0) {
        /* read to the end, so every refusal is counted; but a pass that
         * could not read every lock cannot say there is no leak */
        stream_err(s, "%s (%llu read%s refused this pass: those keys cannot be judged; "
                   "see lockwatch_scan_read_errors_total)", s->refused_err,
                   (unsigned long long)s->refused, s->refused == 1 ? "" : "s");
        goto out;
    }
    rc = 0;
out:
    for (i = 0; i < INFLIGHT_MAX; i++) {
        batch_clear(&s->pool[i]);
        free(s->pool[i].meta);
        s->pool[i].meta = NULL;
    }
    return rc;
}
