/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * classtrend.c - per-class leases, counts against their baseline, and
 * creation and deletion rates, from the published snapshots (classtrend.h
 * says what each figure is and when it is fed).
 *
 * Every ring here is the same shape: slots indexed by epoch = now / width
 * modulo their number, each remembering its epoch, so a slot left over
 * from a lap ago is recognised and ignored (or reset when it is reused).
 * Nothing allocates after a class's first note, and a class never goes
 * away (its counters are counters), within the class_set's cap.
 */
#include "collectors/waits/classtrend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/locks/lockclass.h"

struct ct_class {
    uint64_t count;
    int64_t slot_epoch[CLASSTREND_SLOTS];
    uint64_t slot_count[CLASSTREND_SLOTS];
    int64_t rate_epoch[CLASSTREND_RATE_SLICES];
    uint64_t rate_created[CLASSTREND_RATE_SLICES];
    uint64_t rate_deleted[CLASSTREND_RATE_SLICES];
    uint64_t created_total, deleted_total;
    uint32_t lease_bucket[SNAP_LEASE_NBOUNDS + 1];
    uint64_t lease_count;
    double lease_sum_ms;
    int64_t lease_epoch[CLASSTREND_LEASE_SLICES];
    int64_t lease_max[CLASSTREND_LEASE_SLICES];     /* -1: no first sight */
    int64_t span_max[CLASSTREND_LEASE_SLICES];
    int64_t pttl_min[CLASSTREND_LEASE_SLICES];      /* -1: none */
};

struct classtrend {
    pthread_mutex_t mu;
    struct class_set *set;
    struct ct_class *cls[CLASS_MAX + 1];
    size_t nused;
    int64_t slot_ms;            /* count_baseline_window / CLASSTREND_SLOTS */
    int64_t lease_slice_ms;     /* wait_window / CLASSTREND_LEASE_SLICES */
    int64_t baseline_window_ms;
};

static int64_t
width(int64_t window_ms, int n)
{
    int64_t w = (window_ms + n - 1) / n;

    return w > 0 ? w : 1;
}

static void
ring_clear(int64_t *epochs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        epochs[i] = -1;
}

static struct ct_class *
class_new(void)
{
    struct ct_class *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    ring_clear(c->slot_epoch, CLASSTREND_SLOTS);
    ring_clear(c->rate_epoch, CLASSTREND_RATE_SLICES);
    ring_clear(c->lease_epoch, CLASSTREND_LEASE_SLICES);
    return c;
}

static void
set_windows(struct classtrend *ct, const struct config *cfg)
{
    int64_t base = cfg->rules.count_baseline_window_ms > 0 ?
        cfg->rules.count_baseline_window_ms : 3600000;
    int64_t wait = cfg->rules.wait_window_ms > 0 ? cfg->rules.wait_window_ms : 60000;

    ct->baseline_window_ms = base;
    ct->slot_ms = width(base, CLASSTREND_SLOTS);
    ct->lease_slice_ms = width(wait, CLASSTREND_LEASE_SLICES);
}

struct classtrend *
classtrend_new(const struct config *cfg)
{
    struct classtrend *ct = calloc(1, sizeof(*ct));

    if (ct == NULL)
        return NULL;
    if ((ct->set = class_set_new()) == NULL) {
        free(ct);
        return NULL;
    }
    set_windows(ct, cfg);
    pthread_mutex_init(&ct->mu, NULL);
    return ct;
}

void
classtrend_free(struct classtrend *ct)
{
    if (ct == NULL)
        return;
    for (size_t i = 0; i <= CLASS_MAX; i++)
        free(ct->cls[i]);
    class_set_free(ct->set);
    pthread_mutex_destroy(&ct->mu);
    free(ct);
}

void
classtrend_configure(struct classtrend *ct, const struct config *cfg)
{
    int64_t slot, lease;

    pthread_mutex_lock(&ct->mu);
    slot = ct->slot_ms;
    lease = ct->lease_slice_ms;
    set_windows(ct, cfg);
    for (size_t i = 0; i <= CLASS_MAX; i++) {
        if (ct->cls[i] == NULL)
            continue;
        if (slot != ct->slot_ms)
            ring_clear(ct->cls[i]->slot_epoch, CLASSTREND_SLOTS);
        if (lease != ct->lease_slice_ms)
            ring_clear(ct->cls[i]->lease_epoch, CLASSTREND_LEASE_SLICES);
    }
    pthread_mutex_unlock(&ct->mu);
}

/* The class named name, allocated on first use; "other" past the cap or
 * when it cannot be allocated; NULL only when not even that exists. */
static struct ct_class *
class_for(struct classtrend *ct, const char *name)
{
    int idx = class_set_intern(ct->set, name);

    if (idx < 0 || idx > CLASS_MAX)
        idx = CLASS_OTHER_INDEX;
    if (ct->cls[idx] == NULL && (ct->cls[idx] = class_new()) != NULL)
        ct->nused++;
    if (ct->cls[idx] == NULL && idx != CLASS_OTHER_INDEX)
        return class_for(ct, NULL);
    return ct->cls[idx];
}

/* The slot of epoch e in a ring of n, reset when it held an older epoch. */
static size_t
slot_at(int64_t *epochs, size_t n, int64_t e, bool *reset)
{
    size_t i = (size_t)(e % (int64_t)n);

    *reset = epochs[i] != e;
    epochs[i] = e;
    return i;
}

static uint64_t
prev_total(const struct snapshot *prev, const char *name)
{
    for (size_t i = 0; prev != NULL && i < prev->nclasses && i < prev->class_cap; i++)
        if (strcmp(prev->classes[i], name) == 0)
            return prev->class_stats[i].total;
    return 0;
}

static bool
in_snapshot(const struct snapshot *s, const char *name)
{
    for (size_t i = 0; i < s->nclasses && i < s->class_cap; i++)
        if (strcmp(s->classes[i], name) == 0)
            return true;
    return false;
}

/* Created and deleted locks of one class into its counters and rate ring. */
static void
note_churn(struct ct_class *c, uint64_t created, uint64_t deleted, int64_t now_ms)
{
    bool reset;
    size_t i = slot_at(c->rate_epoch, CLASSTREND_RATE_SLICES,
                       now_ms / (CLASSTREND_RATE_MS / CLASSTREND_RATE_SLICES), &reset);

    if (reset)
        c->rate_created[i] = c->rate_deleted[i] = 0;
    c->rate_created[i] += created;
    c->rate_deleted[i] += deleted;
    c->created_total += created;
    c->deleted_total += deleted;
}

static void
note_lease(struct classtrend *ct, struct ct_class *c, const struct snap_class *sc,
           int64_t now_ms)
{
    bool reset;
    size_t i;

    if (sc->lease_n == 0 && sc->held_ttl_n == 0)
        return;
    for (i = 0; i <= SNAP_LEASE_NBOUNDS; i++)
        c->lease_bucket[i] += sc->lease_bucket[i];
    c->lease_count += sc->lease_n;
    c->lease_sum_ms += sc->lease_sum_ms;
    i = slot_at(c->lease_epoch, CLASSTREND_LEASE_SLICES, now_ms / ct->lease_slice_ms, &reset);
    if (reset) {
        c->lease_max[i] = c->pttl_min[i] = -1;
        c->span_max[i] = 0;
    }
    if (sc->lease_n > 0 && sc->lease_max_ms > c->lease_max[i])
        c->lease_max[i] = sc->lease_max_ms;
    if (sc->held_ttl_n > 0) {
        if (sc->span_max_ms > c->span_max[i])
            c->span_max[i] = sc->span_max_ms;
        if (sc->held_low_n > 0 && (c->pttl_min[i] < 0 || sc->held_min_pttl_ms < c->pttl_min[i]))
            c->pttl_min[i] = sc->held_min_pttl_ms;
    }
}

void
classtrend_note(struct classtrend *ct, const struct snapshot *prev,
                const struct snapshot *s, int64_t now_ms)
{
    size_t i;

    if (s == NULL || !s->ok)
        return;
    pthread_mutex_lock(&ct->mu);
    for (i = 0; i < s->nclasses && i < s->class_cap; i++) {
        const struct snap_class *sc = &s->class_stats[i];
        struct ct_class *c = class_for(ct, s->classes[i]);
        uint64_t before, gone;

        if (c == NULL)
            continue;
        note_lease(ct, c, sc, now_ms);
        if (prev == NULL)
            continue;
        before = prev_total(prev, s->classes[i]);
        gone = before + sc->created > sc->total ? before + sc->created - sc->total : 0;
        note_churn(c, sc->created, gone, now_ms);
    }
    /* classes the new snapshot no longer has: every lock of theirs went */
    for (i = 0; prev != NULL && i < prev->nclasses && i < prev->class_cap; i++) {
        struct ct_class *c;

        if (prev->class_stats[i].total == 0 || in_snapshot(s, prev->classes[i]))
            continue;
        if ((c = class_for(ct, prev->classes[i])) != NULL)
            note_churn(c, 0, prev->class_stats[i].total, now_ms);
    }
    pthread_mutex_unlock(&ct->mu);
}

void
classtrend_sample(struct classtrend *ct, const struct snapshot *const *snaps, size_t n,
                  int64_t now_ms)
{
    uint64_t sum[CLASS_MAX + 1];
    int64_t epoch;
    size_t i, k;

    memset(sum, 0, sizeof(sum));
    pthread_mutex_lock(&ct->mu);
    epoch = now_ms / ct->slot_ms;
    for (k = 0; k < n; k++) {
        const struct snapshot *s = snaps[k];

        for (i = 0; s != NULL && i < s->nclasses && i < s->class_cap; i++) {
            int idx;

            if (class_for(ct, s->classes[i]) == NULL)
                continue;
            idx = class_set_find(ct->set, s->classes[i]);
            sum[idx >= 0 && idx <= CLASS_MAX ? idx : CLASS_OTHER_INDEX] +=
                s->class_stats[i].total;
        }
    }
    for (i = 0; i <= CLASS_MAX; i++) {
        struct ct_class *c = ct->cls[i];
        bool reset;
        size_t slot;

        if (c == NULL)
            continue;
        c->count = sum[i];
        slot = slot_at(c->slot_epoch, CLASSTREND_SLOTS, epoch, &reset);
        c->slot_count[slot] = sum[i];
    }
    pthread_mutex_unlock(&ct->mu);
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

double
classtrend_median(uint64_t *vals, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(vals, n, sizeof(*vals), cmp_u64);
    if (n % 2 == 1)
        return (double)vals[n / 2];
    return ((double)vals[n / 2 - 1] + (double)vals[n / 2]) / 2.0;
}

/* The slots of the ring before the current epoch, still within it. */
static void
view_baseline(const struct classtrend *ct, const struct ct_class *c, int64_t now_ms,
              struct classtrend_class *out)
{
    uint64_t vals[CLASSTREND_SLOTS];
    int64_t epoch = now_ms / ct->slot_ms;
    size_t n = 0;

    for (size_t i = 0; i < CLASSTREND_SLOTS; i++)
        if (c->slot_epoch[i] >= 0 && c->slot_epoch[i] < epoch &&
            c->slot_epoch[i] > epoch - CLASSTREND_SLOTS)
            vals[n++] = c->slot_count[i];
    out->baseline_known = n >= CLASSTREND_SLOTS / 2;
    out->baseline = classtrend_median(vals, n);
}

/* The lease figures of the live slices of the lease ring. */
static void
view_lease(const struct classtrend *ct, const struct ct_class *c, int64_t now_ms,
           struct classtrend_class *out)
{
    int64_t lepoch = now_ms / ct->lease_slice_ms, span = 0, low = -1;

    out->lease_known = false;
    out->lease_ms = 0;
    for (size_t i = 0; i < CLASSTREND_LEASE_SLICES; i++) {
        if (c->lease_epoch[i] <= lepoch - CLASSTREND_LEASE_SLICES || c->lease_epoch[i] > lepoch)
            continue;
        if (c->lease_max[i] >= 0 && (!out->lease_known || c->lease_max[i] > out->lease_ms)) {
            out->lease_ms = c->lease_max[i];
            out->lease_known = true;
        }
        if (c->span_max[i] > span)
            span = c->span_max[i];
        if (c->pttl_min[i] >= 0 && (low < 0 || c->pttl_min[i] < low))
            low = c->pttl_min[i];
    }
    /* renewed locks with no low counted (none renewed since an outage
     * drained them: snap_lock.renewed_since_outage) still make the class
     * a watchdog one, its period not seen */
    out->watchdog = out->lease_known && (double)span > 1.5 * (double)out->lease_ms;
    out->renewal_ms = out->watchdog && low >= 0 && low < out->lease_ms ? out->lease_ms - low : 0;
}

static void
view_class(const struct classtrend *ct, const struct ct_class *c, int64_t now_ms,
           struct classtrend_class *out)
{
    const int64_t rslice = CLASSTREND_RATE_MS / CLASSTREND_RATE_SLICES;
    int64_t repoch = now_ms / rslice;
    uint64_t cr = 0, dl = 0;
    size_t i;

    out->count = c->count;
    view_baseline(ct, c, now_ms, out);
    out->created_total = c->created_total;
    out->deleted_total = c->deleted_total;
    for (i = 0; i < CLASSTREND_RATE_SLICES; i++) {
        if (c->rate_epoch[i] > repoch - CLASSTREND_RATE_SLICES && c->rate_epoch[i] <= repoch) {
            cr += c->rate_created[i];
            dl += c->rate_deleted[i];
        }
    }
    out->created_rate = (double)cr * 1000.0 / CLASSTREND_RATE_MS;
    out->deleted_rate = (double)dl * 1000.0 / CLASSTREND_RATE_MS;
    memcpy(out->lease_bucket, c->lease_bucket, sizeof(out->lease_bucket));
    out->lease_count = c->lease_count;
    out->lease_sum_s = c->lease_sum_ms / 1000.0;
    view_lease(ct, c, now_ms, out);
}

int
classtrend_view(struct classtrend *ct, int64_t now_ms, struct classtrend_view *v)
{
    const size_t namesz = CLASS_NAME_MAX + 1;
    size_t i, n = 0, room;

    memset(v, 0, sizeof(*v));
    pthread_mutex_lock(&ct->mu);
    room = ct->nused;
    v->classes = calloc(room ? room : 1, sizeof(*v->classes));
    v->names = malloc((room ? room : 1) * namesz);
    if (v->classes == NULL || v->names == NULL) {
        pthread_mutex_unlock(&ct->mu);
        classtrend_view_release(v);
        return -1;
    }
    for (i = 0; i <= CLASS_MAX && n < room; i++) {
        const char *name = class_set_name(ct->set, i);

        if (ct->cls[i] == NULL || name == NULL)
            continue;
        snprintf(v->names + n * namesz, namesz, "%s", name);
        v->classes[n].name = v->names + n * namesz;
        view_class(ct, ct->cls[i], now_ms, &v->classes[n]);
        n++;
    }
    v->nclasses = n;
    v->baseline_window_ms = ct->baseline_window_ms;
    pthread_mutex_unlock(&ct->mu);
    return 0;
}

void
classtrend_view_release(struct classtrend_view *v)
{
    free(v->classes);
    free(v->names);
    memset(v, 0, sizeof(*v));
}

const struct classtrend_class *
classtrend_find(const struct classtrend_view *v, const char *name)
{
    for (size_t i = 0; v != NULL && i < v->nclasses; i++)
        if (strcmp(v->classes[i].name, name) == 0)
            return &v->classes[i];
    return NULL;
}
