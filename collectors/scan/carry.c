/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * carry.c - what a cluster shard that a pass could not read gave last:
 * its locks, carried from the view before into the new snapshot, marked
 * last known.
 *
 * A cluster snapshot is ok while at least one shard was read (scan.c),
 * and the shards that failed say so in snapshot->shards.  Without more,
 * a failed shard's locks would vanish from the view: the per-class gauges
 * would drop and the locks' alerts (LockLeaked, ...) resolve as if the
 * locks were gone, when all that is known is that nobody can see them.  A
 * target whose every node fails keeps its last good view, marked stale
 * (agent/agent.c); a failed shard gets the same for its slots.  Every
 * lock that the view before (the scanner's last ok snapshot, lost.c's
 * last_view) kept in detail and whose slot a failed shard serves is
 * counted and kept in the new snapshot as it was last known - its states
 * as judged then, not again - with the time its shard went stale
 * (snap_lock.stale_since_ms); the shard's entry says since when its part
 * of the view is stale and when it was last proven fresh.  The rules
 * judge the snapshot as any other, so those locks' alerts keep firing;
 * the first pass that reads the shard again judges them afresh.
 *
 * Bounds: only what the view before kept in detail (the worst
 * SNAP_RETAIN_MAX locks of the target) can be carried, each offered to
 * the new snapshot like a lock read, within its caps, so carrying costs
 * at most the copies one snapshot may keep.  A key this pass read on
 * another shard (its slot moved during the pass) is not carried: the read
 * wins.  Slots no node serves are one more failed shard (scan.c's
 * record_shards()), after the topology's.
 */
#include "collectors/scan/scan_impl.h"

#include <string.h>

#include "common/keyhash.h"

/* The shard of view b serving the same slots as sh, else the one read
 * on the same node (its slot ranges changed: a resharding, a gap opened
 * beside them), or NULL. */
static const struct snap_shard *
shard_before(const struct snapshot *b, const struct snap_shard *sh)
{
    size_t j;

    for (j = 0; b != NULL && j < b->nshards; j++)
        if (strcmp(b->shards[j].shard, sh->shard) == 0)
            return &b->shards[j];
    for (j = 0; b != NULL && strcmp(sh->node, "none") != 0 && j < b->nshards; j++)
        if (strcmp(b->shards[j].node, sh->node) == 0)
            return &b->shards[j];
    return NULL;
}

/* The failed shards of s: since when each is stale (the first pass that
 * failed to read it since a view read it) and its last proof of
 * freshness (that view's), from the view before b (NULL: none). */
static void
stamp_shards(struct snapshot *s, const struct snapshot *b, int64_t now_ms)
{
    size_t i;

    for (i = 0; i < s->nshards; i++) {
        struct snap_shard *sh = &s->shards[i];
        const struct snap_shard *was = shard_before(b, sh);

        if (sh->ok)
            continue;
        if (was != NULL && !was->ok) {
            sh->stale_since_ms = was->stale_since_ms;
            sh->last_success_ms = was->last_success_ms;
        } else {
            /* read by b: a shard of it that was ok, or any slot of a b
             * that read every one (a trial: a shard whose ranges changed
             * had no last success at all) */
            sh->stale_since_ms = now_ms;
            sh->last_success_ms = was == NULL && (b == NULL || !snapshot_whole(b)) ? 0 :
                b->proven_ms > b->finished_ms ? b->proven_ms : b->finished_ms;
        }
    }
}

int
carry_failed_shards(struct run *r, const struct cluster_topo *topo)
{
    struct scanner *sc = r->sc;
    struct snapshot *s = r->snap;
    const struct snapshot *b = sc->last_view;
    size_t k, i;

    stamp_shards(s, b, r->now_ms);
    for (k = 0; b != NULL && k < b->nlocks; k++) {
        const struct snap_lock *l = b->locks[k];
        struct snap_lock c;
        int idx;

        i = topo->slot_shard[cluster_keyslot(l->key, l->key_len)];
        if (i == CLUSTER_NO_SHARD)
            i = topo->nshards;          /* no node serves it: record_shards()'s gap */
        if (i >= s->nshards || s->shards[i].ok ||
            tracker_seen(sc->tracker, keyhash(l->key, l->key_len), sc->pass))
            continue;
        idx = class_set_intern(r->classes, l->class_idx < b->nclasses ?
                               b->classes[l->class_idx] : NULL);
        if (idx < 0)
            return -1;
        c = *l;
        c.class_idx = (uint16_t)idx;
        c.first_sight = false;          /* counted as created when it was */
        if (c.stale_since_ms == 0)
            c.stale_since_ms = s->shards[i].stale_since_ms;
        if (snapshot_add(s, &c, r->now_ms) == -1)
            return -1;
        /* waiters_lookup() summed those of the locks read; these were
         * looked up when they were */
        if ((c.flags & SNAP_WAITERS_KNOWN) && (size_t)idx < s->class_cap)
            s->class_stats[idx].waiters += c.waiters;
        s->shards[i].carried++;
    }
    return 0;
}
