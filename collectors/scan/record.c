/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * record.c - per key of a scan: decode, class, track, judge, snapshot.
 *
 * The stream (stream.c) hands over each key whose value it has read, a
 * replay (scanner_replay()) each key a layer above kept, in the same
 * parsed values (struct scan_key of scanrun.h).
 * Decoding it (the format table), deriving its class name and hashing
 * its holders need nothing shared, so they happen outside the run's
 * mutex; then, under it and once per key, the key is deduped (SCAN may
 * return a key twice in one pass: the tracker remembers the pass that
 * last saw a key, and during a cluster resharding that holds across
 * shards too; keys and holders go by common/keyhash.h's keyed hash, so
 * a key crafted to collide with another cannot make it a "duplicate"), its holder timed by the tracker, its class interned, its
 * states judged by collectors/locks/lockstate.c, and it is counted (and
 * maybe kept) in the snapshot and added to the Redlock map.  At the end
 * of the run the class names go to the snapshot.
 *
 * Recording allocates nothing per key of its own: the candidate lock, its
 * holders and its class name live on the stack and point into the
 * stream's reply buffers; the snapshot copies only the locks it keeps,
 * and the tracker and the class set grow by their own rules.
 */
#include "collectors/scan/scan_impl.h"

#include <stdlib.h>
#include <string.h>

#include "collectors/formats/formats.h"
#include "collectors/locks/lockfacts.h"
#include "common/clock.h"
#include "common/keyhash.h"

/* 32-bit hashes of the holders, for the tracker. */
static size_t
holder_hashes(const struct lock_view *v, uint32_t *out)
{
    size_t i;

    for (i = 0; i < v->nholders && i < HOLDERS_MAX; i++)
        out[i] = (uint32_t)keyhash(v->holders[i].id, v->holders[i].idlen);
    return i;
}

uint8_t
record_states(const struct run *r, const struct snap_lock *l, int64_t first_seen_ms,
              int64_t nottl_since_ms)
{
    struct lockstate_facts f;

    lockfacts_fill(&f, l->format < formats_count ? &formats_table[l->format] : NULL,
                   l->pttl_ms, l->nholders, l->max_count, r->now_ms - first_seen_ms,
                   nottl_since_ms > 0 ? r->now_ms - nottl_since_ms : -1);
    return lockstate_judge(&r->rules->judge, &f);
}

/* Follow mode publishes again when a lock is due to turn leaked or long
 * by time alone, so keep the earliest such time of the run (every lock,
 * not only those the snapshot keeps).  Under run.mu. */
static void
note_due(struct run *r, const struct snap_lock *l)
{
    int64_t due;

    if (!(l->states & LOCK_LEAKED) && l->nottl_since_ms > 0) {
        due = l->nottl_since_ms + r->rules->judge.leak_grace_ms + 1;
        if (r->next_due_ms == 0 || due < r->next_due_ms)
            r->next_due_ms = due;
    }
    if (!(l->states & LOCK_LONG) && l->nholders > 0) {
        due = l->first_seen_ms + r->rules->judge.max_hold_ms + 1;
        if (r->next_due_ms == 0 || due < r->next_due_ms)
            r->next_due_ms = due;
    }
}

/* The lease row of class index ci, asked once per run.  Under run.mu. */
static int
lease_row_of(struct run *r, int ci, const char *cls)
{
    if (ci < 0 || (size_t)ci >= sizeof(r->lease_rows) / sizeof(r->lease_rows[0]))
        return -1;
    if (r->lease_rows[ci] == -2)
        r->lease_rows[ci] = (int16_t)lease_row(r->sc->name, cls);
    return r->lease_rows[ci];
}

/* What the tracker needs of the lease: when the TTL runs out (a replay's
 * PTTL is as of the run's start, a pass's as of its read, just now). */
static void
lease_of(const struct run *r, const struct scan_key *k, const struct raw_lock *raw,
         const struct lock_view *view, struct track_lease *ls)
{
    int64_t now = clock_now_ms();

    memset(ls, 0, sizeof(*ls));
    ls->at_ms = now;
    ls->expires_ms = raw->pttl >= 0 ? (k->read_ms > 0 ? r->now_ms : now) + raw->pttl : 0;
    ls->key = raw->key;
    ls->keylen = raw->keylen;
    if (view->nholders > 0) {
        ls->holder = view->holders[0].id;
        ls->holderlen = view->holders[0].idlen;
    }
}

/* The holder's age at seen_ms from what proves it (lockfacts.h).  A
 * full scan times every key from the run's start, but reads a key's
 * IDLETIME later (a million keys: tens of seconds later): the age
 * IDLETIME gives is the age then, so the time since seen_ms comes off. */
static int64_t
start_age_at(const struct scan_key *k, const struct raw_lock *raw, const struct lock_view *view,
             int64_t seen_ms, int64_t looked_ms)
{
    int64_t at = k->idle_at_ms > seen_ms ? k->idle_at_ms : seen_ms;
    /* with no pass that saw every node yet (the agent just started) a
     * claimed time is no fact: only IDLETIME dates the holding, a lower
     * bound (a red-team: after a restart a 79 s old lock was a 1-hour fact) */
    int64_t age = lockstate_start_age(lockfacts_idle_s(raw, k->idle_s),
                                      looked_ms > 0 ? view->acquired_ms : 0, at, NULL) -
        (at - seen_ms);

    /* it back-dates only a holding new to the tracker, which the last pass
     * that saw every node did not see: it came after that pass's start,
     * whatever time its value claims (a ShedLock host whose clock runs 30
     * minutes behind is no 30-minute hold) */
    if (looked_ms > 0 && age > seen_ms - looked_ms)
        age = seen_ms - looked_ms;
    return age > 0 ? age : 0;
}

/* The last time the agent's view was proven current (Unix ms), which a
 * holding new to it was not in: the last pass that saw every node, or
 * follow mode's last freshness proof since (a trial: with only a full pass
 * an hour old to bound it, a redis-py holder was dated by the uuid1 its
 * acquire made before it waited, 14-27 s early); 0 before the first such
 * pass: no claim dates a holding. */
static int64_t
proof_bound(const struct scanner *sc)
{
    return sc->looked_ms > 0 && sc->proven_ms > sc->looked_ms ? sc->proven_ms : sc->looked_ms;
}

/* The class index of key kh: "other" for a bad holding counted there
 * when last seen, while it lasts (tracker.h), else its class's, "other"
 * past the cap.  Under run.mu. */
static int
class_index(struct run *r, uint64_t kh, const uint32_t *hh, size_t nh, const char *cls)
{
    return tracker_in_other(r->sc->tracker, kh, hh, nh) ? class_set_keep_other(r->classes)
        : class_set_intern(r->classes, cls);
}

/* Record one key: decode it (no lock needed), then, under the run's
 * mutex, dedupe it, time its holder, intern its class, count and maybe
 * keep it, and add it to the Redlock map. */
int
record_key(struct run *r, const struct scan_key *k, const struct raw_lock *raw,
           long long hlen, struct scan_counters *cnt)
{
    const struct scan_rules *rules = r->rules;
    struct snap_holder holders[HOLDERS_MAX];
    uint32_t hh[HOLDERS_MAX];
    size_t nh;
    const struct lock_format *fmt;
    struct lock_view view;
    struct lockfacts_src src;
    struct track_result tr;
    struct track_lease ls;
    struct snap_lock l;
    char cls[CLASS_NAME_MAX];
    int64_t start_age, seen_ms, believed, looked;
    uint64_t kh;
    size_t i;
    int ci, rc = -1;

    kh = keyhash(raw->key, raw->keylen);
    /* the format (and the target's semaphore_patterns), the holders */
    fmt = lockfacts_decode(r->t, raw, hlen, &view, &src);

    /* a key follow mode re-read is timed from its read, not the publish;
     * only the ages the data proves back-date it (lockfacts.h) */
    seen_ms = k->read_ms > 0 ? k->read_ms : r->now_ms;
    looked = proof_bound(r->sc);
    lockfacts_drop_future(&view, &src, seen_ms);
    start_age = start_age_at(k, raw, &view, seen_ms, looked);
    nh = holder_hashes(&view, hh);
    class_of(raw->key, raw->keylen, rules->classes, rules->nclasses, cls, sizeof(cls));

    memset(&l, 0, sizeof(l));
    l.key = raw->key;
    l.key_len = (uint32_t)(raw->keylen > SNAP_KEY_MAX ? SNAP_KEY_MAX : raw->keylen);
    if (l.key_len < raw->keylen)
        l.flags |= SNAP_KEY_TRUNCATED;
    l.format = (uint8_t)formats_index(fmt);
    l.format_source = (uint8_t)src.source;
    l.format_contradicts = src.contradicts;
    l.pttl_ms = raw->pttl;
    l.acquired_ms = view.acquired_ms;
    l.pid = (int32_t)(view.pid > 0 && view.pid <= INT32_MAX ? view.pid : 0);
    l.thread = view.thread;
    l.max_count = view.max_count;
    l.holders_total = (uint32_t)(view.holders_total > UINT32_MAX ? UINT32_MAX
                                 : view.holders_total);
    if (raw->value_truncated || raw->fields_truncated)
        l.flags |= SNAP_VALUE_TRUNCATED;
    if (strcmp(view.mode, "read") == 0)
        l.flags |= SNAP_MODE_READ;
    else if (strcmp(view.mode, "write") == 0)
        l.flags |= SNAP_MODE_WRITE;
    if (view.host[0] != '\0') {
        l.host = view.host;
        l.host_len = (uint8_t)strnlen(view.host, sizeof(view.host));
    }
    for (i = 0; i < view.nholders && i < HOLDERS_MAX; i++) {
        holders[i].id = view.holders[i].id;
        holders[i].id_len = (uint16_t)view.holders[i].idlen;
        holders[i].truncated = view.holders[i].id_truncated;
        holders[i].count = view.holders[i].count;
    }
    l.holders = holders;
    l.nholders = (uint16_t)i;

    pthread_mutex_lock(&r->mu);
    if (tracker_seen(r->sc->tracker, kh, r->sc->pass)) {
        cnt->duplicates_total++;
        rc = 0;
        goto out;
    }
    if ((ci = class_index(r, kh, hh, nh, cls)) < 0)
        goto out;
    lease_of(r, k, raw, &view, &ls);
    ls.blind_before = r->sc->looked_ms == 0;
    /* a replay's PTTL is as of the run's start, not of its read */
    l.expires_ms = ls.expires_ms;
    ls.row = lease_row_of(r, ci, class_set_name(r->classes, (size_t)ci));
    if (tracker_visit_born(r->sc->tracker, kh, hh, nh, r->sc->pass, seen_ms, start_age,
                           k->born_ms, raw->pttl >= 0, &ls, &tr) == -1)
        goto out;
    /* a guessed value's time, believed when the holder came after the
     * last pass that saw the key without it */
    if (src.claimed_ms > 0 && tr.first_seen_ms >= looked &&
        (believed = lockfacts_corroborate(src.claimed_ms, looked, seen_ms)) > 0 &&
        tracker_backdate(r->sc->tracker, kh, believed, k->born_ms, &tr) == 0)
        l.acquired_ms = believed;
    if (r->keeping && r->sc->hooks.keep(r->sc->hooks_arg, k, raw, hlen, seen_ms) == -1)
        goto out;
    if (l.flags & SNAP_VALUE_TRUNCATED)
        cnt->truncated_total++;
    l.class_idx = (uint16_t)ci;
    l.first_seen_ms = tr.first_seen_ms;
    l.settled_ms = tr.settled_ms;
    l.first_sight = tr.acquired != 0;
    if (tr.renewed)
        l.flags |= SNAP_RENEWED;
    l.renewed_since_outage = tr.renewed_since_outage;
    /* held since before the agent looked: its age is a lower bound */
    if (tr.seen_at_start)
        l.flags |= SNAP_AGE_AT_LEAST;
    l.nottl_since_ms = tr.nottl_since_ms;
    l.states = record_states(r, &l, tr.first_seen_ms, tr.nottl_since_ms);
    /* a bad lock's alert has its class: it keeps "other" while it lasts;
     * the others take a place when one is free (a flush's new classes) */
    tracker_note_other(r->sc->tracker, kh, ci == CLASS_OTHER_INDEX &&
                       strcmp(cls, CLASS_OTHER) != 0 && (l.states & LOCK_BAD));
    note_due(r, &l);
    if (snapshot_add(r->snap, &l, r->now_ms) == -1)
        goto out;
    /* a lock without a holder (a format that names none) still counts
     * as held, by "nobody in particular", on each node */
    if (r->rmap != NULL &&
        redlock_map_add(r->rmap, raw->key, raw->keylen, kh, nh > 0 ? hh[0] : 1,
                        tr.first_seen_ms, clock_now_ms(), raw->pttl) == -1)
        goto out;
    rc = 0;
out:
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int
scan_record(struct run *r, const struct scan_key *k, const struct raw_lock *raw,
            long long hlen, struct scan_counters *cnt)
{
    int rc;

    if (!k->helper)
        return record_key(r, k, raw, hlen, cnt);
    if ((rc = record_helper(r, k, cnt)) == 0 && r->keeping) {
        /* the helper's name only: a replay counts it to its lock again */
        pthread_mutex_lock(&r->mu);
        rc = r->sc->hooks.keep(r->sc->hooks_arg, k, raw, -1, r->now_ms);
        pthread_mutex_unlock(&r->mu);
    }
    return rc;
}

int
record_finish(struct run *r)
{
    struct snapshot *s = r->snap;
    size_t i, n = class_set_count(r->classes);

    s->classes = calloc(n ? n : 1, sizeof(*s->classes));
    if (s->classes == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        s->classes[i] = strdup(class_set_name(r->classes, i));
        if (s->classes[i] == NULL)
            return -1;
        s->nclasses = i + 1;
    }
    /* class_stats grow with the highest index used; make it cover them all */
    if (s->class_cap < n) {
        struct snap_class *nc = realloc(s->class_stats, n * sizeof(*nc));

        if (nc == NULL)
            return -1;
        memset(nc + s->class_cap, 0, (n - s->class_cap) * sizeof(*nc));
        s->class_stats = nc;
        s->class_cap = n;
    }
    s->classes_overflowed = class_set_overflowed(r->classes);
    snapshot_finish(s);
    return 0;
}
