/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api.c - the JSON lock API (/api/v1/locks and /api/v1/locks/{key}).
 *
 * JSON is built with jansson, never by hand.  Keys and holder ids are raw
 * bytes, so every lock carries two forms: "key", sanitised to valid UTF-8
 * for people, and "key_escaped", percent-encoded and lossless, for
 * scripts (and for lockctl, which must address the exact key).
 *
 * Listing is worst first across targets: each snapshot is already sorted,
 * so the targets' orders are merged without copying, and "total" is
 * counted in one more pass.
 *
 * A list is a page, bounded in bytes as well as in locks: ?offset= skips
 * that many matching locks of the order, and a page ends at ?limit= locks
 * or before the lock that would take it over API_PAGE_MAX_BYTES, always at
 * a lock boundary; "next_offset" is where the next page starts (null when
 * this one holds the last lock).  Each lock is dumped on its own and its
 * tree freed at once, so making a page costs the page's bytes (in one
 * buffer) and one lock's tree, never a tree of the whole list.  The object around the
 * locks is dumped by jansson too ("locks" last, an empty array) and the
 * locks are put inside its brackets.
 *
 * A target whose last scan failed shows its last good scan's locks
 * (snapshot_shown()), each marked "stale": true; the page is then
 * "complete": false and its "stale" array names each such target, since
 * when, its last success and the reason, so nobody reads "no leak" from a
 * target the agent cannot see.  A cluster shard that the last scan could
 * not read is the same for its slots: its last-known locks (carried by
 * the scanner, snap_lock.stale_since_ms) are marked "stale", and the
 * array has an entry for the shard (with "shard" and "node").
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "common/keytext.h"
#include "common/strbuf.h"
#include "collectors/formats/formats.h"
#include "collectors/locks/lockjson.h"
#include "collectors/locks/lockstate.h"

#define API_LIMIT_DEFAULT 100
#define API_LIMIT_MAX     10000
#define API_OFFSET_MAX    1000000000L
#define API_ENVELOPE_MAX  (512 + 2 * CONFIG_ADDRESS_MAX)
                                        /* bytes of the object around the locks,
                                         * besides its "stale" array (measured),
                                         * with a target_address */
#define API_STALE_SHARDS_MAX 32         /* failed shards named per target in
                                         * "stale" (all: /readyz, shard_up) */

/*
 * One lock's JSON is at most: its key twice, as text (6 bytes a byte at
 * worst, a control byte as \u00XX) and percent-encoded (3), the same for
 * each kept holder id and the host, plus fixed fields well under 64 KiB.
 * A page therefore always has room for its first lock.
 */
#define API_LOCK_MAX_BYTES ((size_t)9 * (SNAP_KEY_MAX + HOLDERS_MAX * HOLDER_ID_MAX + HOST_MAX) + \
                            64 * 1024)
_Static_assert(API_LOCK_MAX_BYTES + API_ENVELOPE_MAX < API_PAGE_MAX_BYTES,
               "a page must have room for the largest lock");

static json_t *
lock_json(const struct snapshot *s, const struct snap_lock *l, int64_t now_ms)
{
    const char *key = l->key;
    json_t *o, *holders, *h;
    size_t i;
    int bad = 0;

    o = json_object();
    holders = json_array();
    if (o == NULL || holders == NULL)
        goto fail;
    bad |= json_object_set_new(o, "target", json_string(s->target));
    bad |= json_object_set_new(o, "key", lockjson_text(key, l->key_len));
    bad |= json_object_set_new(o, "key_escaped", lockjson_escaped(key, l->key_len));
    bad |= json_object_set_new(o, "class", lockjson_text(s->classes[l->class_idx],
                                                        strlen(s->classes[l->class_idx])));
    bad |= json_object_set_new(o, "format", json_string(formats_table[l->format].name));
    bad |= json_object_set_new(o, "format_source",
                               json_string(formats_source_name(l->format_source)));
    if (l->format_contradicts)
        bad |= json_object_set_new(o, "format_contradicts", json_true());
    bad |= json_object_set_new(o, "states", lockjson_states(l->states));
    bad |= json_object_set_new(o, "pttl_ms", json_integer(l->pttl_ms));
    bad |= json_object_set_new(o, "renewed", json_boolean(l->flags & SNAP_RENEWED));
    for (i = 0; i < l->nholders; i++) {
        const struct snap_holder *sh = &l->holders[i];

        h = json_object();
        if (h == NULL)
            goto fail;
        bad |= json_object_set_new(h, "id", lockjson_text(sh->id, sh->id_len));
        bad |= json_object_set_new(h, "id_escaped", lockjson_escaped(sh->id, sh->id_len));
        bad |= json_object_set_new(h, "count", json_integer(sh->count));
        if (sh->truncated)
            bad |= json_object_set_new(h, "id_truncated", json_true());
        bad |= json_array_append_new(holders, h);
    }
    bad |= json_object_set_new(o, "holders", holders);     /* taken even on failure */
    holders = NULL;
    bad |= json_object_set_new(o, "holders_total", json_integer(l->holders_total));
    bad |= json_object_set_new(o, "max_count", json_integer(l->max_count));
    {
        /* a Redisson semaphore (semaphore_patterns): its count */
        long long permits;

        if (l->nholders == 1 &&
            formats_permits_available(&formats_table[l->format], l->holders[0].id,
                                      l->holders[0].id_len, &permits))
            bad |= json_object_set_new(o, "permits_available", json_integer(permits));
    }
    /* helper keys of this lock seen by the scan (queue, token counter,
     * reader timeout keys...): part of the lock, never locks themselves */
    bad |= json_object_set_new(o, "helper_keys", json_integer(l->helper_keys));
    /* clients waiting, where Redis shows it: a fair lock's queue, or the
     * subscribers of its wake channel (collectors/scan/waiters.c); null
     * when the format shows none (its clients poll) or it was not asked */
    bad |= json_object_set_new(o, "waiters", (l->flags & SNAP_WAITERS_KNOWN) ?
                               json_integer(l->waiters) : json_null());
    bad |= json_object_set_new(o, "waiters_source", !(l->flags & SNAP_WAITERS_KNOWN)
                               ? json_null() : json_string((l->flags & SNAP_WAITERS_QUEUE)
                                                           ? "queue" : "pubsub"));
    if (l->flags & SNAP_MODE_READ)
        bad |= json_object_set_new(o, "mode", json_string("read"));
    else if (l->flags & SNAP_MODE_WRITE)
        bad |= json_object_set_new(o, "mode", json_string("write"));
    bad |= json_object_set_new(o, "first_seen", lockjson_time(l->first_seen_ms));
    bad |= json_object_set_new(o, "age_seconds",
                               json_real((double)(now_ms - l->first_seen_ms) / 1000.0));
    bad |= json_object_set_new(o, "first_seen_ms", json_integer(l->first_seen_ms));
    /* first seen by the agent's first look: held at least that long */
    bad |= json_object_set_new(o, "age_lower_bound",
                               json_boolean((l->flags & SNAP_AGE_AT_LEAST) != 0));
    /* since when this holding is proven unbroken: a renewal seen between
     * two reads may be the same holder id taking the lock again */
    bad |= json_object_set_new(o, "unbroken_since", lockjson_time(snap_unbroken_ms(l)));
    bad |= json_object_set_new(o, "unbroken_since_ms", json_integer(snap_unbroken_ms(l)));
    bad |= json_object_set_new(o, "expires_at_ms", l->expires_ms > 0 ?
                               json_integer(l->expires_ms) : json_null());
    bad |= json_object_set_new(o, "nottl_since", lockjson_time(l->nottl_since_ms));
    bad |= json_object_set_new(o, "nottl_since_ms", l->nottl_since_ms > 0 ?
                               json_integer(l->nottl_since_ms) : json_null());
    bad |= json_object_set_new(o, "host", l->host_len ?
                               lockjson_text(l->host, l->host_len) : json_null());
    bad |= json_object_set_new(o, "pid", l->pid ? json_integer(l->pid) : json_null());
    bad |= json_object_set_new(o, "thread",
                               l->thread >= 0 ? json_integer(l->thread) : json_null());
    bad |= json_object_set_new(o, "acquired_at",
                               l->acquired_ms ? lockjson_time(l->acquired_ms) : json_null());
    if (l->flags & SNAP_KEY_TRUNCATED)
        bad |= json_object_set_new(o, "key_truncated", json_true());
    if (l->flags & SNAP_VALUE_TRUNCATED)
        bad |= json_object_set_new(o, "value_truncated", json_true());
    if (bad)
        goto fail;
    return o;
fail:
    json_decref(o);
    json_decref(holders);
    return NULL;
}

static int
dump(json_t *root, int status, char **body, size_t *len)
{
    char *s = json_dumps(root, JSON_COMPACT | LOCKJSON_REALS);

    json_decref(root);
    if (s == NULL)
        return 500;
    *body = s;
    *len = strlen(s);
    return status;
}

int
render_api_error(int status, const char *msg, char **body, size_t *len)
{
    json_t *o = json_pack("{s:s}", "error", msg);

    if (o == NULL)
        return 500;
    return dump(o, status, body, len);
}

/*
 * ?target= naming no configured target: 400 naming the ones there are,
 * not an empty page that reads as "no locks" ("complete": true would
 * then be a lie about a target that does not exist).  A target still
 * before its first scan is known; one another shard watches is a 404
 * naming that shard (and its shard_peers URL).  0 when target is NULL or
 * known here.
 */
static int
unknown_target(const struct view *v, const char *target, char **body, size_t *len)
{
    struct strbuf sb;
    char *msg, echo[129];
    size_t n;
    int status;

    if (target == NULL)
        return 0;
    for (size_t i = 0; i < v->ntargets; i++)
        if (strcmp(v->targets[i].name, target) == 0)
            return 0;
    sb_init(&sb, 2048);
    for (size_t i = 0; i < v->naway; i++)
        if (strcmp(v->away[i].name, target) == 0) {
            /* another shard's: say which, and where it answers */
            sb_addf(&sb, "target \"%s\" is watched by shard %d/%d, not this one (%d/%d)",
                    target, v->away[i].shard, v->shard_total, v->shard_index,
                    v->shard_total);
            if (view_peer(v, v->away[i].shard) != NULL)
                sb_addf(&sb, ": ask %s", view_peer(v, v->away[i].shard));
            status = 404;
            goto said;
        }
    status = 400;
    keytext_ascii(echo, sizeof(echo), target);
    sb_addf(&sb, "no target \"%s\" (known targets: ", echo);
    for (size_t i = 0; i < v->ntargets; i++) {
        if (i > 0)
            sb_adds(&sb, ", ");
        sb_adds(&sb, v->targets[i].name);
    }
    sb_adds(&sb, ")");
said:
    if (sb_failed(&sb) || (msg = sb_detach(&sb, &n)) == NULL) {
        sb_release(&sb);
        return 500;
    }
    status = render_api_error(status, msg, body, len);
    free(msg);
    sb_release(&sb);
    return status;
}

struct filter {
    uint8_t mask;
    const char *target;
    const char *class_;
};

/* t is one f asks for, whether or not it has a view to show. */
static bool
target_named(const struct view_target *t, const struct filter *f)
{
    return f->target == NULL || strcmp(t->name, f->target) == 0;
}

/* t is one f asks for, and has locks to show (fresh or last known). */
static bool
target_matches(const struct view_target *t, const struct filter *f)
{
    return snapshot_shown(t->snap) != NULL && target_named(t, f);
}

static bool
lock_matches(const struct snapshot *s, const struct snap_lock *l, const struct filter *f)
{
    if (!(l->states & f->mask))
        return false;
    return f->class_ == NULL || strcmp(s->classes[l->class_idx], f->class_) == 0;
}

/* A bounded whole number from a query value; -1 when it is not one. */
static long
query_long(const char *text, long lo, long hi)
{
    char *end;
    long n;

    errno = 0;
    n = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || n < lo || n > hi)
        return -1;
    return n;
}

/* The next lock of the worst-first merge of the matching targets' locks
 * (pos[i] is where target i's list stands), or NULL when none is left;
 * *which says whose it is. */
static const struct snap_lock *
merge_next(const struct view *v, const struct filter *f, size_t *pos, size_t *which)
{
    const struct snap_lock *best = NULL;
    size_t i;

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = snapshot_shown(v->targets[i].snap);

        if (!target_matches(&v->targets[i], f))
            continue;
        while (pos[i] < s->nlocks && !lock_matches(s, s->locks[pos[i]], f))
            pos[i]++;
        if (pos[i] >= s->nlocks)
            continue;
        if (best == NULL || snapshot_worse(s->locks[pos[i]], best)) {
            best = s->locks[pos[i]];
            *which = i;
        }
    }
    return best;
}

/* Matching locks counted in the class counters (kept in detail or not);
 * *complete false when a matching target counted more matching locks
 * than it keeps (the worst are kept: all 5,000 leaked of 50,000 locks
 * are a complete answer to state=leaked). */
static uint64_t
matching_total(const struct view *v, const struct filter *f, bool *complete)
{
    uint64_t total = 0, mine, kept;
    size_t i, c;

    *complete = true;
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = snapshot_shown(v->targets[i].snap);

        /* never scanned, or every scan failed: nothing is known of it,
         * which is not "no locks" */
        if (s == NULL && target_named(&v->targets[i], f))
            *complete = false;
        if (!target_matches(&v->targets[i], f))
            continue;
        if (!v->targets[i].snap->ok || !snapshot_whole(s) || s->keys_moved > 0 ||
            s->follow.behind_since_ms != 0)
            *complete = false;          /* stale: not known to be all */
        for (c = 0, mine = 0; c < s->nclasses && c < s->class_cap; c++) {
            const struct snap_class *st = &s->class_stats[c];

            if (f->class_ != NULL && strcmp(s->classes[c], f->class_) != 0)
                continue;
            mine += f->mask == LOCK_LEAKED ? st->leaked :
                f->mask == LOCK_LONG ? st->long_held :
                f->mask == LOCK_REENTRANT_HIGH ? st->reentrant_high : st->total;
        }
        if (!snapshot_complete(s)) {
            for (c = 0, kept = 0; c < s->nlocks; c++)
                kept += lock_matches(s, s->locks[c], f);
            if (kept < mine)
                *complete = false;      /* some matching ones only counted */
        }
        total += mine;
    }
    return total;
}

/* Lock l of target t's view is last known, not read by the target's last
 * scan: the scan failed, l is a cluster shard's that it could not read, or
 * follow mode lost notifications since (a full scan is repairing it).
 * *since: when that part of the view went stale. */
static bool
lock_stale(const struct view_target *t, const struct snap_lock *l, int64_t *since)
{
    *since = l->stale_since_ms != 0 ? l->stale_since_ms : t->snap->ok ?
        t->snap->follow.behind_since_ms : t->snap->stale_since_ms;
    return !t->snap->ok || l->stale_since_ms != 0 || t->snap->follow.behind_since_ms != 0;
}

/* The last good read of lock l, last known: its cluster shard's (the one
 * that went stale when the lock did) or the view's; 0: none known. */
static int64_t
stale_last_success(const struct view_target *t, const struct snap_lock *l)
{
    const struct snapshot *s = t->snap;

    for (size_t k = 0; s->ok && l->stale_since_ms != 0 && k < s->nshards; k++)
        if (!s->shards[k].ok && s->shards[k].stale_since_ms == l->stale_since_ms)
            return s->shards[k].last_success_ms;
    return s->last_success_ms;
}

/* o (lock l's JSON) with "stale", "stale_since" and its view's or shard's
 * "last_success_ms" when l is last known.  -1 on ENOMEM. */
static int
mark_stale(json_t *o, const struct view_target *t, const struct snap_lock *l)
{
    int64_t since, last;

    if (!lock_stale(t, l, &since))
        return 0;
    last = stale_last_success(t, l);
    return json_object_set_new(o, "stale", json_true()) ||
        json_object_set_new(o, "stale_since", lockjson_time(since)) ||
        json_object_set_new(o, "last_success_ms", last > 0 ? json_integer(last) :
                            json_null()) ? -1 : 0;
}

/* One lock asked for by its key, last known: why, and since when the
 * view was last good, as the list's "stale" entry says of its target
 * (lockctl show prints them).  -1 on ENOMEM. */
static int
mark_stale_why(json_t *o, const struct view_target *t, const struct snap_lock *l)
{
    const struct snapshot *s = t->snap;
    const char *why = !s->ok ? s->err : s->follow.note;
    const char *shard = NULL;
    char reason[640];
    int64_t since, last = s->last_success_ms;
    size_t k;

    if (!lock_stale(t, l, &since))
        return 0;
    /* a lock carried from a shard that failed: that shard's (the one that
     * went stale when the lock did; the first such, when several did) */
    for (k = 0; s->ok && l->stale_since_ms != 0 && k < s->nshards; k++) {
        const struct snap_shard *sh = &s->shards[k];

        if (sh->ok || sh->stale_since_ms != l->stale_since_ms)
            continue;
        snprintf(reason, sizeof(reason), "shard %s (%s): %s", sh->shard, sh->node, sh->err);
        why = reason;
        last = sh->last_success_ms;
        shard = sh->shard;
        break;
    }
    if (why[0] == '\0')
        why = "its view is stale (GET /readyz says why)";
    return json_object_set_new(o, "stale_reason", lockjson_text(why, strlen(why))) ||
        json_object_set_new(o, "stale_shard", shard != NULL ?
                            lockjson_text(shard, strlen(shard)) : json_null()) ||
        json_object_set_new(o, "last_success", lockjson_time(last)) ||
        json_object_set_new(o, "last_success_ms", last > 0 ? json_integer(last) :
                            json_null()) ? -1 : 0;
}

/* Append {target[, shard, node], stale_since, last_success,
 * last_success_ms, reason} to a: nonzero on ENOMEM. */
static int
stale_entry(json_t *a, const char *target, const struct snap_shard *sh, int64_t since,
            int64_t last, const char *reason)
{
    json_t *o = json_object();
    int bad;

    if (o == NULL)
        return 1;
    bad = json_object_set_new(o, "target", lockjson_text(target, strlen(target)));
    if (sh != NULL) {
        bad |= json_object_set_new(o, "shard", lockjson_text(sh->shard,
                                                             strnlen(sh->shard, sizeof(sh->shard))));
        bad |= json_object_set_new(o, "node", lockjson_text(sh->node,
                                                            strnlen(sh->node, sizeof(sh->node))));
    }
    bad |= json_object_set_new(o, "stale_since", lockjson_time(since));
    bad |= json_object_set_new(o, "last_success", lockjson_time(last));
    bad |= json_object_set_new(o, "last_success_ms", last > 0 ? json_integer(last) : json_null());
    bad |= json_object_set_new(o, "reason", lockjson_text(reason, strlen(reason)));
    return bad | json_array_append_new(a, o);
}

/* The stale parts of the targets f matches: each target whose scans fail,
 * and each cluster shard (at most API_STALE_SHARDS_MAX a target) that the
 * last scan of an up target could not read, its reason naming it as
 * /readyz does.  Empty when every view is fresh. */
static json_t *
stale_targets(const struct view *v, const struct filter *f)
{
    char reason[640];           /* "shard S (N): E" of a snap_shard's texts */
    json_t *a = json_array();
    size_t i, k, n;
    int bad = 0;

    for (i = 0; a != NULL && !bad && i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;
        const char *name = v->targets[i].name;

        if (!target_named(&v->targets[i], f))
            continue;
        if (s == NULL) {        /* its first scan is still running */
            bad |= stale_entry(a, name, NULL, 0, 0, "no scan has completed yet");
            continue;
        }
        if (!s->ok) {
            bad |= stale_entry(a, name, NULL, s->stale_since_ms, s->last_success_ms, s->err);
            continue;
        }
        if (s->follow.behind_since_ms != 0) {
            bad |= stale_entry(a, name, NULL, s->follow.behind_since_ms, s->last_success_ms,
                               s->follow.note);
            continue;
        }
        for (k = 0, n = 0; !bad && k < s->nshards && n < API_STALE_SHARDS_MAX; k++) {
            const struct snap_shard *sh = &s->shards[k];

            if (sh->ok)
                continue;
            snprintf(reason, sizeof(reason), "shard %s (%s): %s", sh->shard, sh->node, sh->err);
            bad |= stale_entry(a, name, sh, sh->stale_since_ms, sh->last_success_ms, reason);
            n++;
        }
    }
    if (bad || a == NULL) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* Where the target ?target= names is configured to point (the agent's
 * config: config_target_address()), for lockctl to tell whether the
 * agent's view is of the server it asks; null without ?target=. */
static json_t *
target_address(const struct view *v, const char *target)
{
    for (size_t i = 0; target != NULL && i < v->ntargets; i++)
        if (strcmp(v->targets[i].name, target) == 0 && v->targets[i].address != NULL)
            return json_string(v->targets[i].address);
    return json_null();
}

/* The nodes the agent knows as the cluster ?target= names (the scan's
 * discovery hints, snapshot.nodes: [{"id","host","port"}]), for lockctl
 * to find the cluster through them as the agent does (its URL's node may
 * be in another cluster by now); null without ?target= or for a target
 * that is not a cluster.  A node whose id or host is not UTF-8 is left
 * out; NULL on ENOMEM. */
static json_t *
cluster_nodes(const struct view *v, const char *target)
{
    const struct snapshot *s = NULL;
    json_t *a;

    for (size_t i = 0; target != NULL && i < v->ntargets; i++)
        if (strcmp(v->targets[i].name, target) == 0)
            s = v->targets[i].snap;
    if (s == NULL || s->nnodes == 0)
        return json_null();
    if ((a = json_array()) == NULL)
        return NULL;
    for (size_t i = 0; i < s->nnodes; i++) {
        json_t *id = json_string(s->nodes[i].id), *host = json_string(s->nodes[i].host);

        if (id != NULL && host != NULL &&
            json_array_append_new(a, json_pack("{s:o,s:o,s:i}", "id", id, "host", host,
                                               "port", s->nodes[i].port)) == -1) {
            json_decref(a);
            return NULL;
        }
        if (id == NULL || host == NULL) {
            json_decref(id);
            json_decref(host);
        }
    }
    return a;
}

/* The page's object with an empty "locks" last, dumped; NULL on ENOMEM. */
static char *
page_envelope(const struct view *v, const struct filter *f, size_t count, uint64_t total,
              bool complete, long offset, bool more)
{
    json_t *root = json_object();
    char *s = NULL;
    int bad;

    if (root == NULL)
        return NULL;
    bad = json_object_set_new(root, "count", json_integer((json_int_t)count));
    bad |= json_object_set_new(root, "total", json_integer((json_int_t)total));
    /* false when a target counted more locks than it keeps in detail
     * (SNAP_RETAIN_MAX, the worst ones): the list then holds the worst */
    bad |= json_object_set_new(root, "complete", json_boolean(complete));
    bad |= json_object_set_new(root, "stale", stale_targets(v, f));
    bad |= json_object_set_new(root, "target_address", target_address(v, f->target));
    bad |= json_object_set_new(root, "cluster_nodes", cluster_nodes(v, f->target));
    bad |= json_object_set_new(root, "offset", json_integer(offset));
    bad |= json_object_set_new(root, "next_offset", more ?
                               json_integer((json_int_t)offset + (json_int_t)count) :
                               json_null());
    bad |= json_object_set_new(root, "locks", json_array());
    if (!bad)
        s = json_dumps(root, JSON_COMPACT | LOCKJSON_REALS);
    json_decref(root);
    return s;
}

int
render_api_locks(const struct view *v, const struct api_query *q, char **body, size_t *len)
{
    struct filter f;
    struct strbuf page;
    size_t *pos = NULL, bi = 0, count = 0, skipped = 0, elen, reserve;
    uint64_t total;
    bool complete, more = false;
    long limit = API_LIMIT_DEFAULT, offset = 0;
    const struct snap_lock *l;
    char *env = NULL, *text;
    json_t *o;
    int status;

    if (lockstate_mask(q->state != NULL ? q->state : "all", &f.mask) == -1)
        return render_api_error(400, "state must be one of leaked, long, reentrant_high, held, all",
                                body, len);
    if (q->limit != NULL && (limit = query_long(q->limit, 1, API_LIMIT_MAX)) == -1)
        return render_api_error(400, "limit must be an integer from 1 to 10000", body, len);
    if (q->offset != NULL && (offset = query_long(q->offset, 0, API_OFFSET_MAX)) == -1)
        return render_api_error(400, "offset must be an integer from 0 to 1000000000 "
                                "(the next_offset of the previous page)", body, len);
    if ((status = unknown_target(v, q->target, body, len)) != 0)
        return status;
    f.target = q->target;
    f.class_ = q->class_;

    sb_init(&page, API_PAGE_MAX_BYTES);
    if ((pos = calloc(v->ntargets ? v->ntargets : 1, sizeof(*pos))) == NULL)
        goto oom;
    {
        /* room for the "stale" array too (64 targets: a few dozen KiB) */
        json_t *st = stale_targets(v, &f);

        text = st != NULL ? json_dumps(st, JSON_COMPACT | LOCKJSON_REALS) : NULL;
        json_decref(st);
        if (text == NULL)
            goto oom;
        reserve = API_ENVELOPE_MAX + strlen(text);
        free(text);
    }
    while ((l = merge_next(v, &f, pos, &bi)) != NULL) {
        if (skipped < (size_t)offset) {
            skipped++;
            pos[bi]++;
            continue;
        }
        if (count == (size_t)limit) {
            more = true;
            break;
        }
        if ((o = lock_json(snapshot_shown(v->targets[bi].snap), l, v->now_ms)) == NULL)
            goto oom;
        if (mark_stale(o, &v->targets[bi], l) == -1) {
            json_decref(o);
            goto oom;
        }
        text = json_dumps(o, JSON_COMPACT | LOCKJSON_REALS);
        json_decref(o);
        if (text == NULL)
            goto oom;
        if (page.len + strlen(text) + 1 + reserve > API_PAGE_MAX_BYTES) {
            free(text);
            more = true;
            break;
        }
        if (count > 0)
            sb_add(&page, ",", 1);
        sb_adds(&page, text);
        free(text);
        pos[bi]++;
        count++;
    }
    total = matching_total(v, &f, &complete);
    if ((env = page_envelope(v, &f, count, total, complete, offset, more)) == NULL)
        goto oom;
    elen = strlen(env);
    if (elen < 3 || strcmp(env + elen - 3, "[]}") != 0)
        goto oom;
    /* envelope + locks + "]}" in place: the page's bytes are not copied
     * to a second buffer (append the tail and room for the head, shift) */
    elen -= 2;                                  /* up to and with the '[' */
    sb_add(&page, "]}", 2);
    sb_add(&page, env, elen);
    if (sb_failed(&page))
        goto oom;
    memmove(page.buf + elen, page.buf, page.len - elen);
    memcpy(page.buf, env, elen);
    *body = sb_detach(&page, len);
    free(env);
    free(pos);
    sb_release(&page);
    return 200;
oom:
    free(env);
    free(pos);
    sb_release(&page);
    return 500;
}

int
render_api_lock(const struct view *v, const char *key, size_t keylen,
                const char *target, char **body, size_t *len)
{
    const struct view_target *blind = NULL;
    char msg[700];
    size_t i, k;
    bool partial = false, stale = false;
    int status;

    if ((status = unknown_target(v, target, body, len)) != 0)
        return status;
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = snapshot_shown(v->targets[i].snap);

        if (target != NULL && strcmp(v->targets[i].name, target) != 0)
            continue;
        if (s == NULL) {        /* nothing known of it: the key may be there */
            if (blind == NULL)
                blind = &v->targets[i];
            continue;
        }
        if (!v->targets[i].snap->ok)
            stale = true;
        for (k = 0; k < s->nlocks; k++) {
            const struct snap_lock *l = s->locks[k];

            if (l->key_len == keylen && memcmp(l->key, key, keylen) == 0) {
                json_t *o = lock_json(s, l, v->now_ms);

                if (o == NULL)
                    return 500;
                if (mark_stale(o, &v->targets[i], l) == -1 ||
                    mark_stale_why(o, &v->targets[i], l) == -1 ||
                    json_object_set_new(o, "target_address", target_address(v, target)) ||
                    json_object_set_new(o, "cluster_nodes", cluster_nodes(v, target))) {
                    json_decref(o);
                    return 500;
                }
                return dump(o, 200, body, len);
            }
        }
        if (!snapshot_complete(s))
            partial = true;
    }
    if (blind != NULL) {
        snprintf(msg, sizeof(msg), "target %s has no view to look in (no good scan): "
                 "%.500s; only Redis can say now", blind->name, blind->snap == NULL ?
                 "no scan has completed yet" : blind->snap->err);
        return render_api_error(503, msg, body, len);
    }
    if (partial)
        return render_api_error(404, "not among the locks kept in detail (the worst "
                                "10000 per target; healthy locks are only counted): "
                                "use lockctl show KEY to read it from Redis", body, len);
    if (stale)
        return render_api_error(404, "no such lock in the last good scan, which is stale "
                                "(the target cannot be scanned now: see /readyz); check the "
                                "key and ?target=", body, len);
    return render_api_error(404, "no such lock in the last scan (check the key and ?target=)",
                            body, len);
}

/* GET /api/v1/locks[?state=&target=&class=&limit=&offset=] */
void
serve_locks(const struct http_request *rq, struct http_response *out)
{
    struct api_query q;
    struct view v;
    char *state, *target, *cls, *limit, *offset, *body = NULL;
    size_t len = 0;
    int bad = 0, status;

    state = http_query(rq, "state", &bad);
    target = http_query(rq, "target", &bad);
    cls = http_query(rq, "class", &bad);
    limit = http_query(rq, "limit", &bad);
    offset = http_query(rq, "offset", &bad);
    if (bad) {
        status = render_api_error(400, "malformed percent-encoding in the query", &body, &len);
    } else if (agent_view(rq->agent, &v) == -1) {
        status = 500;
    } else {
        q.state = state;
        q.target = target;
        q.class_ = cls;
        q.limit = limit;
        q.offset = offset;
        status = render_api_locks(&v, &q, &body, &len);
        view_release(&v);
    }
    free(state);
    free(target);
    free(cls);
    free(limit);
    free(offset);
    http_json(out, status, body, len);
}

/* GET /api/v1/locks/<percent-encoded key>[?target=] */
void
serve_lock(const struct http_request *rq, struct http_response *out)
{
    struct view v;
    char *key, *target, *body = NULL;
    size_t keylen, len = 0;
    int bad = 0, status;

    key = malloc(strlen(rq->rest) + 1);
    if (key == NULL) {
        http_text(out, 500, HTTP_OOM_TEXT);
        return;
    }
    keylen = keytext_unpercent(key, rq->rest, strlen(rq->rest), 0);
    target = http_query(rq, "target", &bad);
    if (keylen == (size_t)-1 || bad) {
        status = render_api_error(400, "malformed percent-encoding in the key or query",
                                  &body, &len);
    } else if (agent_view(rq->agent, &v) == -1) {
        status = 500;
    } else {
        status = render_api_lock(&v, key, keylen, target, &body, &len);
        view_release(&v);
    }
    free(key);
    free(target);
    http_json(out, status, body, len);
}
