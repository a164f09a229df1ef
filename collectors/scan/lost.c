/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lost.c - locks lost at a failover, restart or flush: when the server
 * under a target changes, the last view before the change is compared
 * with the first complete view after it.
 *
 * The scanner keeps a reference to the last ok snapshot it returned (a
 * full scan's, or follow mode's replay, which saw every unlock up to the
 * change), and every full pass reads each node's identity first (run_id
 * and flush counts, serverinfo.h).  When a pass finds another identity -
 * a restart (another run_id, same address), a failover (another address:
 * Sentinel promoted a replica, a cluster shard's primary moved), a flush
 * (FLUSHDB, FLUSHALL) or a SWAPDB - each lock the view before kept is looked
 * up in what the pass saw (the tracker, which holds every lock of the
 * pass, not only those the snapshot keeps in detail): gone, or there by
 * another holder, it is lost, unless its TTL had run out by the end of the
 * pass (it expired, as it would have anyway).  A FLUSHDB or
 * SWAPDB after which a lock of the view before is still there, its
 * holder's, was of another database (the call counts are the server's):
 * nothing is lost; not a FLUSHALL (every database's), nor in a cluster
 * (database 0 only).  Follow mode's replays are made from notifications,
 * and a flush notifies no key: the locks taken after it, before the
 * freshness check that finds it, are in them, and would look kept.  So
 * only a lock first seen before the views were last proven current (a
 * full scan's start, or the last freshness proof: scanner_view_proven())
 * says another database was flushed.
 * A cluster compares only the locks whose slot a changed shard serves,
 * each shard against the last view that read it: a cluster snapshot is ok
 * with a shard that failed (holding only that shard's last-known locks,
 * carried from the view before: carry.c), so the scanner keeps the last
 * whole view too, and a shard that comes back from a restart is compared
 * with it.
 *
 * Only locks the view before kept in detail are compared (the worst
 * SNAP_RETAIN_MAX); a larger view says so (snap_lost.partial).  In scan
 * mode nothing in Redis shows a lock released normally between the last
 * scan before the change and the change: it is not counted lost when its
 * holder reported the release (a `hold` line since the view before was
 * started, and no `lost` line: collectors/lease/released.h; counted in
 * snap_lost.released); without a report it looks lost.
 *
 * Every lost lock is counted (lockwatch_locks_lost_total{cause}); the
 * loss is kept in the scanner (its list bounded, oldest hold first) and
 * stamped on every later snapshot, where the rule LockLostAtFailover
 * reads it; each lock of that list is pushed as an event (the whole key,
 * its holder and class, how long it was held), oldest hold first, and one
 * log line names them.
 */
#include "collectors/scan/scan_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/events/events.h"
#include "collectors/lease/lostat.h"
#include "collectors/lease/released.h"
#include "collectors/locks/lostview.h"
#include "common/keyhash.h"
#include "common/keytext.h"
#include "common/log.h"

/* The views before: [0] the last ok one, [1] the last whole one (a
 * cluster's with every shard read; else the same).  Which slots changed
 * servers, why, and which view before holds their locks. */
#define VIEWS 2

struct changed {
    bool any;
    enum lost_cause cause;
    const char *was, *now;      /* the first changed node, before and after */
    uint8_t *slots;             /* CLUSTER_SLOTS entries: 0 unchanged, else
                                 * 1 + the index of its view before; NULL:
                                 * every lock, of view [0] */
};

/* The named lost locks as the view before has them (whole key, class),
 * in the order of snap_lost.listed: what the events are made of. */
struct named {
    const struct snapshot *view;
    const struct snap_lock *lock;
};

/* Standalone and Sentinel: one node before, one after. */
static bool
single_changed(const struct snapshot *b, const struct snapshot *s, struct changed *ch)
{
    ch->any = lost_server_changed(&b->server, b->node, &s->server, s->node, &ch->cause);
    ch->was = b->node;
    ch->now = s->node;
    return ch->any;
}

/* The shard serving the same slots as after-shard sh as last read: in
 * the last ok view if it was read there, else in the last whole one;
 * *from gets which.  NULL when neither read it. */
static const struct snap_shard *
shard_before(const struct snapshot *const views[VIEWS], const struct snap_shard *sh,
             size_t *from)
{
    size_t v, j;

    for (v = 0; v < VIEWS; v++)
        for (j = 0; views[v] != NULL && j < views[v]->nshards; j++)
            if (views[v]->shards[j].ok && strcmp(views[v]->shards[j].shard, sh->shard) == 0) {
                *from = v;
                return &views[v]->shards[j];
            }
    return NULL;
}

/* Cluster: the slots of each shard read ok whose server changed since it
 * was last read.  false when none did (or on ENOMEM: nothing is claimed). */
static bool
cluster_changed(const struct snapshot *const views[VIEWS], const struct snapshot *s,
                const struct cluster_topo *topo, struct changed *ch)
{
    enum lost_cause cause;
    size_t i, slot, from = 0;

    for (i = 0; i < s->nshards && i < topo->nshards; i++) {
        const struct snap_shard *sh = &s->shards[i], *was = shard_before(views, sh, &from);

        /* with scan_replicas, a shard read on its replica one pass and on
         * its primary the next (a replica cut off or unhealthy), or back:
         * another node, but no failover, and no lock lost by it */
        if (!sh->ok || was == NULL || was->replica != sh->replica ||
            !lost_server_changed(&was->server, was->node, &sh->server, sh->node, &cause))
            continue;
        if (ch->slots == NULL && (ch->slots = calloc(CLUSTER_SLOTS, 1)) == NULL)
            return false;
        if (!ch->any) {
            ch->was = was->node;
            ch->now = sh->node;
            ch->cause = cause;
        }
        ch->cause = lost_cause_worse(ch->cause, cause);
        ch->any = true;
        for (slot = 0; slot < CLUSTER_SLOTS; slot++)
            if (topo->slot_shard[slot] == i)
                ch->slots[slot] = (uint8_t)(1 + from);
    }
    return ch->any;
}

/* Did every holder of l report its release at or after since_ms
 * (collectors/lease/released.h)? */
static bool
holders_released(const struct snap_lock *l, int64_t since_ms)
{
    uint64_t kh;
    size_t i;

    if (l->nholders == 0)
        return false;
    kh = keyhash(l->key, l->key_len);
    for (i = 0; i < l->nholders; i++)
        if (l->holders[i].truncated ||
            !released_since(kh, (uint32_t)keyhash(l->holders[i].id, l->holders[i].id_len),
                            since_ms))
            return false;
    return true;
}

/* Is lock l of the view before (started at before_ms) lost in the pass
 * just made?  *released: it is gone, or another's, but its holder
 * reported the release; *kept: it is still there, its holder's. */
static bool
lock_lost(const struct scanner *sc, const struct snap_lock *l, int64_t before_ms,
          int64_t after_ms, bool *taken, bool *released, bool *kept)
{
    uint32_t hh;

    *taken = false;
    *released = false;
    *kept = false;
    /* its TTL ran out: it expired (as close as the tracker's sweep
     * counts an expiry, so no lock is both: a trial saw one lease ending
     * 80 ms after the pass reported as expired and as lost) */
    if (l->expires_ms > 0 && l->expires_ms <= after_ms + TRACKER_END_SLACK_MS)
        return false;
    if (tracker_holder(sc->tracker, keyhash(l->key, l->key_len), sc->pass, &hh)) {
        if (hh == 0 || lost_same_holder(l, hh)) {
            *kept = true;
            return false;
        }
        *taken = true;
    }
    if (holders_released(l, before_ms)) {
        *released = true;
        return false;
    }
    return true;                /* gone, or another's */
}

/* "a failover to B (was A)", "a restart of A", "a SWAPDB on A": as the
 * alert's text says it (alerts/rules.c). */
static void
change_text(enum lost_cause cause, const char *was, const char *now, char *out, size_t size)
{
    const char *prep, *words = lost_cause_words(cause, &prep);

    if (cause == LOST_FAILOVER && strcmp(was, now) == 0)   /* REPLICAOF, a full sync */
        snprintf(out, size, "%s %s %s (the same node, its data replaced by another "
                 "primary's)", words, prep, now);
    else if (cause == LOST_FAILOVER)
        snprintf(out, size, "%s %s %s (was %s)", words, prep, now, was);
    else
        snprintf(out, size, "%s %s %s", words, prep, now);
}

/* "N locks lost at <change>: k1, k2 (another holder now), ... and N
 * more": the log line (bounded; the log defangs control bytes). */
static void
detail_of(const struct snap_lost *lo, char *out, size_t size)
{
    char key[KEYTEXT_SANITIZED_MAX(LOST_KEY_MAX)], change[600];
    size_t used, i;
    int n;

    change_text(lo->cause, lo->was, lo->now, change, sizeof(change));
    n = snprintf(out, size, "%" PRIu64 " lock%s lost at %s: ", lo->count,
                 lo->count == 1 ? "" : "s", change);
    used = n > 0 && (size_t)n < size ? (size_t)n : size - 1;
    for (i = 0; i < lo->nlisted; i++) {
        const struct snap_lost_lock *e = &lo->listed[i];

        keytext_sanitize(key, sizeof(key), e->key, e->key_len);
        /* room kept for the tail */
        if (used + strlen(key) + 40 >= size)
            break;
        n = snprintf(out + used, size - used, "%s%s%s%s", i > 0 ? ", " : "", key,
                     e->key_cut ? "\xe2\x80\xa6" : "", e->taken ? " (another holder now)" : "");
        if (n > 0)
            used += (size_t)n < size - used ? (size_t)n : size - used - 1;
    }
    if (lo->count > i)
        snprintf(out + used, size - used, " and %" PRIu64 " more", lo->count - i);
}

/* Log the loss and push an event per named lock, oldest hold first. */
static void
announce(const struct scanner *sc, const struct snap_lost *lo,
         const struct named named[LOST_LIST_MAX])
{
    char text[EVENT_TEXT_MAX], change[600], detail[EVENT_TEXT_MAX];
    struct event_in ev;
    size_t i;

    detail_of(lo, text, sizeof(text));
    log_warnx("target %s: %s", sc->name, text);
    change_text(lo->cause, lo->was, lo->now, change, sizeof(change));
    for (i = 0; i < lo->nlisted; i++) {
        const struct snap_lock *l = named[i].lock;
        const struct snapshot *v = named[i].view;

        snprintf(detail, sizeof(detail), "lost at %s: %s (%zu of %" PRIu64 " lost, oldest "
                 "hold first)", change, lo->listed[i].taken ? "another holder has it now" :
                 "gone with no release seen", i + 1, lo->count);
        memset(&ev, 0, sizeof(ev));
        ev.kind = EVENT_LOST_AT_FAILOVER;
        ev.target = sc->name;
        ev.key = l->key;
        ev.keylen = l->key_len;
        ev.holder = l->nholders > 0 ? l->holders[0].id : NULL;
        ev.holderlen = l->nholders > 0 ? l->holders[0].id_len : 0;
        ev.klass = l->class_idx < v->nclasses ? v->classes[l->class_idx] : NULL;
        ev.detail = detail;
        ev.seconds = (double)(lo->at_ms - l->first_seen_ms) / 1000.0;
        events_push(&ev);
    }
}

/* Every (lock, holder) a change lost, noted in lostat.h once the loss
 * counts (not another database's): a holder's own lost line for one is
 * that loss.  Memory short, a pair is left out: its line pages. */
struct lost_pairs {
    struct lost_pair {
        uint64_t key_hash;
        uint32_t holder_hash;
        int64_t started_ms, finished_ms;
    } *p;
    size_t n, cap;
};

static void
lost_pairs_add(struct lost_pairs *lp, const struct snap_lock *l, const struct snapshot *b)
{
    /* more holders than the view kept: any holder's line */
    size_t n = l->nholders + (l->holders_total > l->nholders);

    for (size_t k = 0; k < n; k++) {
        if (lp->n == lp->cap) {
            size_t ncap = lp->cap ? lp->cap * 2 : 64;
            struct lost_pair *np = realloc(lp->p, ncap * sizeof(*np));

            if (np == NULL)
                return;
            lp->p = np;
            lp->cap = ncap;
        }
        lp->p[lp->n].key_hash = keyhash(l->key, l->key_len);
        lp->p[lp->n].holder_hash = k < l->nholders ?
            (uint32_t)keyhash(l->holders[k].id, l->holders[k].id_len) : LOSTAT_ANY_HOLDER;
        lp->p[lp->n].started_ms = b->started_ms;
        lp->p[lp->n].finished_ms = b->finished_ms;
        lp->n++;
    }
}

static void
lost_pairs_note(const struct scanner *sc, const struct lost_pairs *lp, int64_t lost_ms)
{
    uint64_t target_hash = keyhash(sc->name, strlen(sc->name));

    for (size_t i = 0; i < lp->n; i++)
        lostat_note(lp->p[i].key_hash, lp->p[i].holder_hash, target_hash, lp->p[i].started_ms,
                    lp->p[i].finished_ms, lost_ms);
}

/* Compare the locks of view v whose slot changed (every lock without a
 * slot table) with the pass just made, into lo (and lp). */
static void
compare_view(const struct scanner *sc, const struct snapshot *b, size_t v,
             const struct changed *ch, int64_t after_ms, struct snap_lost *lo,
             struct named named[LOST_LIST_MAX], uint64_t *kept_n, struct lost_pairs *lp)
{
    size_t i, n;
    bool taken, released, kept;
    int at;

    for (i = 0; i < b->nlocks; i++) {
        const struct snap_lock *l = b->locks[i];

        if (ch->slots != NULL && ch->slots[cluster_keyslot(l->key, l->key_len)] != 1 + v)
            continue;
        lo->compared++;
        if (!snapshot_complete(b))
            lo->partial = true;
        if (!lock_lost(sc, l, b->started_ms, after_ms, &taken, &released, &kept)) {
            lo->released += released;
            /* one a replay took since the last proof may be the flush's
             * aftermath, no sign of another database */
            *kept_n += kept && l->first_seen_ms <= sc->proven_ms;
            continue;
        }
        lost_pairs_add(lp, l, b);
        n = lo->nlisted;
        if ((at = lost_note(lo, l, taken)) < 0)
            continue;
        /* the same move as the list's */
        memmove(&named[at + 1], &named[at],
                ((n < LOST_LIST_MAX ? n : LOST_LIST_MAX - 1) - (size_t)at) * sizeof(*named));
        named[at].view = b;
        named[at].lock = l;
    }
}

/* Did the server under s change since views[0] (ch)? */
static bool
server_changed(const struct snapshot *const views[VIEWS], const struct snapshot *s,
               const struct cluster_topo *topo, struct changed *ch)
{
    free(ch->slots);
    memset(ch, 0, sizeof(*ch));
    return topo != NULL ? cluster_changed(views, s, topo, ch) : single_changed(views[0], s, ch);
}

/* A lock of the view before still there, its holder's, says the flush or
 * SWAPDB was another database's: only a FLUSHDB or SWAPDB of a server
 * with databases (a standalone or Sentinel target) may be. */
static bool
maybe_another_db(const struct snapshot *b, const struct snapshot *s,
                 const struct cluster_topo *topo, enum lost_cause cause)
{
    if (topo != NULL || (cause != LOST_FLUSH && cause != LOST_SWAPDB))
        return false;
    return cause == LOST_SWAPDB || b->server.flushalls == s->server.flushalls ||
           s->server.info_calls < b->server.info_calls;
}

void
lost_compare(struct scanner *sc, struct snapshot *s, const struct cluster_topo *topo)
{
    const struct snapshot *const views[VIEWS] = { sc->last_view, sc->last_whole };
    struct named named[LOST_LIST_MAX];
    struct changed ch;
    struct snap_lost lo;
    struct lost_pairs lp = { NULL, 0, 0 };
    char change[600];
    uint64_t kept = 0;
    size_t v;

    memset(&ch, 0, sizeof(ch));
    if (views[0] == NULL)
        return;
    if (!server_changed(views, s, topo, &ch))
        goto out;
    /* a failover, a restart: this pass read its TTLs after it (see
     * scanner_outage()) */
    tracker_outage(sc->tracker);
    for (size_t i = 0; i < s->nclasses && i < s->class_cap; i++)
        s->class_stats[i].held_low_n = 0;
    memset(&lo, 0, sizeof(lo));
    lo.at_ms = s->finished_ms;
    lo.before_ms = views[0]->finished_ms;
    lo.cause = (uint8_t)ch.cause;
    snprintf(lo.was, sizeof(lo.was), "%s", ch.was);
    snprintf(lo.now, sizeof(lo.now), "%s", ch.now);
    for (v = 0; v < VIEWS; v++)
        if (v == 0 || (ch.slots != NULL && views[v] != NULL && views[v] != views[0]))
            compare_view(sc, views[v], v, &ch, s->finished_ms, &lo, named, &kept, &lp);
    change_text(ch.cause, ch.was, ch.now, change, sizeof(change));
    if (maybe_another_db(views[0], s, topo, ch.cause) && kept > 0 && lo.count > 0) {
        /* a flush of the target's database leaves none of its locks:
         * the counts (server-wide) moved for another database's, or a
         * statistics reset hid nothing */
        log_info("target %s: %s, but %" PRIu64 " of the %" PRIu64 " locks compared are still "
                 "there, held as before: another database's, not this one's; the %" PRIu64
                 " gone are not counted lost", sc->name, change, kept, lo.compared, lo.count);
        goto out;
    }
    log_info("target %s: the server changed (%s); %" PRIu64 " of %" PRIu64
             " locks compared were lost (%" PRIu64 " gone were released, as their holders "
             "reported)", sc->name, change, lo.count, lo.compared, lo.released);
    if (lo.count == 0)
        goto out;
    sc->counters.lost_total[ch.cause] += lo.count;
    sc->lost = lo;
    lost_pairs_note(sc, &lp, lo.at_ms);
    announce(sc, &sc->lost, named);
out:
    free(lp.p);
    free(ch.slots);
}

/* *slot = s, referenced (NULL: none). */
static void
keep_view(struct snapshot **slot, struct snapshot *s)
{
    if (s != NULL)
        snapshot_ref(s);
    snapshot_unref(*slot);
    *slot = s;
}

/*
 * An outage: a pass that failed (the server down, stalled past
 * command_timeout, or unreachable), a cluster shard unread, a failover or
 * restart.  While it lasts, renewed locks' TTLs drain where no renewal
 * can land, and a read after it would take the outage's length for how
 * low their holders let them run: a false renewal period (classtrend's
 * lows, LockLeaseTooShort).  So each lock's TTL counts as a low again
 * only once it has been renewed since (tracker_outage()).  The outage
 * (not a change of server: that pass read) also hides how the locks
 * whose leases ran out in it ended: their holders may have renewed and
 * released them unseen (tracker_sweep()'s unknown_after_ms, said here);
 * it ends with the first pass that reads every shard.
 */
void
scanner_outage(struct scanner *sc, int64_t at_ms)
{
    /* once, as it begins: a walk of the tracker, and the locks renewed
     * where the scans still read while it lasts count again */
    if (!sc->outage) {
        tracker_outage(sc->tracker);
        sc->outage_since_ms = at_ms;
    }
    sc->outage = true;
}

static void
outage_end(struct scanner *sc, const struct snapshot *s)
{
    size_t unknown = tracker_take_ends_unknown(sc->tracker);

    if (unknown > 0)
        log_info("target %s: %zu lock(s) seen before a time the scans could not read it were "
                 "gone after it, their leases run out by now: released or expired unseen, not "
                 "known which (not counted as expirations, no LockLeaseLost)", sc->name, unknown);
    if (!snapshot_whole(s))
        scanner_outage(sc, s->started_ms);
    else
        sc->outage = false;
}

void
lost_stamp(struct scanner *sc, struct snapshot *s, bool proven)
{
    s->lost = sc->lost;
    if (!s->ok) {
        scanner_outage(sc, s->started_ms);
        return;
    }
    outage_end(sc, s);
    if (proven)
        scanner_view_proven(sc, s->started_ms);
    keep_view(&sc->last_view, s);
    if (snapshot_whole(s))
        keep_view(&sc->last_whole, s);
}

void
scanner_view_proven(struct scanner *sc, int64_t at_ms)
{
    if (at_ms > sc->proven_ms)
        sc->proven_ms = at_ms;
}

void
lost_forget(struct scanner *sc)
{
    keep_view(&sc->last_view, NULL);
    keep_view(&sc->last_whole, NULL);
}
