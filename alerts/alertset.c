/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alertset.c - alert instances, their state machine and their events (see
 * alertset.h for the lifecycle).
 *
 * Instances live in an array of pointers with an open-addressing index on
 * the fingerprint beside it.  The index never deletes: instances that end
 * their life are only marked dead during a tick, and the next
 * alertset_begin() frees them, compacts the array and rebuilds the index.
 * That keeps every pointer handed out during a tick (instances, events)
 * valid until the caller has rendered and queued its notices, and costs
 * one pass over at most 2 x ALERTSET_FIRING_MAX pointers a tick.
 *
 * Events are generated in alertset_end() only, from flags set while
 * observing, so the order of observations never matters.
 */
#include "alerts/alertset.h"

#include <stdlib.h>
#include <string.h>

/* Firing plus kept resolved instances, at most. */
#define ITEMS_MAX   (2 * ALERTSET_FIRING_MAX)
/* Index slots: a power of two, load factor <= 1/3. */
#define INDEX_SLOTS 65536u

struct alertset {
    struct alert **items;
    size_t nitems, cap;
    uint32_t *index;            /* item position + 1; 0 = empty */
    uint64_t gen;
    int64_t now_ms, mono_ms;
    int64_t last_refresh_mono;
    bool refreshed_once;
    bool refreshed;                 /* the last alertset_end refreshed */
    size_t nfiring, nresolved;
    size_t suppressed;
    const char **keep;          /* alertset_keep_target() names */
    size_t nkeep, keepcap;
    struct alert_event *ev;
    size_t nev, evcap;
};

#define ALERT_KIND_NAME(e, name, severity, scope, holds, texts) [ALERT_##e] = name,
static const char *const names[ALERT_NAMES] = { ALERT_KINDS(ALERT_KIND_NAME) };
#undef ALERT_KIND_NAME

#define ALERT_KIND_SEVERITY(e, name, severity, scope, holds, texts) \
    [ALERT_##e] = ALERT_SEVERITY_##severity,
static const enum alert_severity severities[ALERT_NAMES] = { ALERT_KINDS(ALERT_KIND_SEVERITY) };
#undef ALERT_KIND_SEVERITY

static const char *const severity_names[ALERT_SEVERITIES] = {
    [ALERT_SEVERITY_CRITICAL] = "critical",
    [ALERT_SEVERITY_WARNING] = "warning",
    [ALERT_SEVERITY_INFO] = "info",
};

const char *
alert_name_str(enum alert_name n)
{
    return (unsigned)n < ALERT_NAMES ? names[n] : "unknown";
}

enum alert_severity
alert_severity_of(enum alert_name n)
{
    /* an unknown kind counts as the worst: never hidden below the others */
    return (unsigned)n < ALERT_NAMES ? severities[n] : ALERT_SEVERITY_CRITICAL;
}

const char *
alert_severity_str(enum alert_severity s)
{
    return (unsigned)s < ALERT_SEVERITIES ? severity_names[s] : "unknown";
}

/* prometheus/common model: FNV-1a 64, labels sorted by name, each as
 * name 0xff value 0xff. */
#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME  1099511628211ULL

static uint64_t
fnv_add(uint64_t h, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    for (; *p != '\0'; p++) {
        h ^= *p;
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t
fnv_label(uint64_t h, const char *name, const char *value)
{
    h = fnv_add(h, name);
    h ^= 0xffu;
    h *= FNV_PRIME;
    h = fnv_add(h, value);
    h ^= 0xffu;
    h *= FNV_PRIME;
    return h;
}

uint64_t
alert_fingerprint(const struct alert_labels *l)
{
    uint64_t h = FNV_OFFSET;

    /* already in name order: alertname < class < key < node < severity <
     * shard < target (every label the sinks send: sink_json_labels) */
    h = fnv_label(h, "alertname", alert_name_str(l->name));
    if (l->class_ != NULL)
        h = fnv_label(h, "class", l->class_);
    if (l->key != NULL)
        h = fnv_label(h, "key", l->key);
    if (l->node != NULL)
        h = fnv_label(h, "node", l->node);
    h = fnv_label(h, "severity", alert_severity_str(alert_severity_of(l->name)));
    if (l->shard != NULL)
        h = fnv_label(h, "shard", l->shard);
    if (l->target != NULL)
        h = fnv_label(h, "target", l->target);
    return h;
}

static bool
str_eq(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool
same_labels(const struct alert *a, const struct alert_labels *l)
{
    return a->name == l->name && str_eq(a->target, l->target) &&
        str_eq(a->class_, l->class_) && str_eq(a->key, l->key) &&
        str_eq(a->shard, l->shard) && str_eq(a->node, l->node);
}

static void
alert_free(struct alert *a)
{
    if (a == NULL)
        return;
    free(a->target);
    free(a->class_);
    free(a->key);
    free(a->shard);
    free(a->node);
    free(a->summary);
    free(a->description);
    free(a);
}

static char *
dup_or_null(const char *s, bool *failed)
{
    char *d;

    if (s == NULL)
        return NULL;
    d = strdup(s);
    if (d == NULL)
        *failed = true;
    return d;
}

static struct alert *
alert_new(const struct alert_labels *l, uint64_t fp)
{
    struct alert *a = calloc(1, sizeof(*a));
    bool failed = false;

    if (a == NULL)
        return NULL;
    a->fp = fp;
    a->name = l->name;
    a->target = dup_or_null(l->target, &failed);
    a->class_ = dup_or_null(l->class_, &failed);
    a->key = dup_or_null(l->key, &failed);
    a->shard = dup_or_null(l->shard, &failed);
    a->node = dup_or_null(l->node, &failed);
    a->summary = dup_or_null("", &failed);
    a->description = dup_or_null("", &failed);
    if (failed) {
        alert_free(a);
        return NULL;
    }
    return a;
}

struct alertset *
alertset_new(void)
{
    struct alertset *set = calloc(1, sizeof(*set));

    if (set == NULL)
        return NULL;
    set->index = calloc(INDEX_SLOTS, sizeof(*set->index));
    if (set->index == NULL) {
        free(set);
        return NULL;
    }
    return set;
}

void
alertset_free(struct alertset *set)
{
    size_t i;

    if (set == NULL)
        return;
    for (i = 0; i < set->nitems; i++)
        alert_free(set->items[i]);
    free(set->items);
    free(set->index);
    free(set->keep);
    free(set->ev);
    free(set);
}

static void
index_put(struct alertset *set, size_t pos)
{
    uint32_t slot = (uint32_t)set->items[pos]->fp & (INDEX_SLOTS - 1);

    while (set->index[slot] != 0)
        slot = (slot + 1) & (INDEX_SLOTS - 1);
    set->index[slot] = (uint32_t)pos + 1;
}

static struct alert *
index_find(const struct alertset *set, uint64_t fp, const struct alert_labels *l)
{
    uint32_t slot = (uint32_t)fp & (INDEX_SLOTS - 1), v;

    while ((v = set->index[slot]) != 0) {
        struct alert *a = set->items[v - 1];

        if (a->fp == fp && !a->dead && same_labels(a, l))
            return a;
        slot = (slot + 1) & (INDEX_SLOTS - 1);
    }
    return NULL;
}

void
alertset_begin(struct alertset *set, int64_t now_ms, int64_t mono_ms)
{
    size_t i, j = 0;
    bool removed = false;

    for (i = 0; i < set->nitems; i++) {
        if (set->items[i]->dead) {
            alert_free(set->items[i]);
            removed = true;
            continue;
        }
        set->items[j++] = set->items[i];
    }
    set->nitems = j;
    if (removed) {
        memset(set->index, 0, INDEX_SLOTS * sizeof(*set->index));
        for (i = 0; i < set->nitems; i++)
            index_put(set, i);
    }
    set->gen++;
    set->now_ms = now_ms;
    set->mono_ms = mono_ms;
    set->suppressed = 0;
    set->nkeep = 0;
    set->nev = 0;
    if (!set->refreshed_once) {
        /* the first refresh comes one period after start: every alert
         * firing by then was just posted as new anyway */
        set->last_refresh_mono = mono_ms;
        set->refreshed_once = true;
    }
}

void
alertset_suppress(struct alertset *set, size_t n)
{
    set->suppressed += n;
}

struct alert *
alertset_observe(struct alertset *set, const struct alert_labels *l)
{
    uint64_t fp = alert_fingerprint(l);
    struct alert *a = index_find(set, fp, l), **ni;

    if (a != NULL) {
        if (a->state == ALERT_RESOLVED) {
            if (set->nfiring >= ALERTSET_FIRING_MAX) {
                set->suppressed++;
                return NULL;
            }
            /* firing again: a new episode with its own start */
            a->state = ALERT_FIRING;
            a->starts_ms = set->now_ms;
            a->ends_ms = 0;
            a->notified_mono = 0;
            set->nresolved--;
            set->nfiring++;
        }
        a->seen = set->gen;
        return a;
    }
    if (set->nfiring >= ALERTSET_FIRING_MAX || set->nitems >= ITEMS_MAX) {
        set->suppressed++;
        return NULL;
    }
    if (set->nitems == set->cap) {
        size_t ncap = set->cap ? set->cap * 2 : 64;

        if ((ni = realloc(set->items, ncap * sizeof(*ni))) == NULL) {
            set->suppressed++;
            return NULL;
        }
        set->items = ni;
        set->cap = ncap;
    }
    if ((a = alert_new(l, fp)) == NULL) {
        set->suppressed++;
        return NULL;
    }
    a->state = ALERT_FIRING;
    a->starts_ms = set->now_ms;
    a->seen = set->gen;
    set->items[set->nitems] = a;
    index_put(set, set->nitems);
    set->nitems++;
    set->nfiring++;
    return a;
}

void
alertset_hold(struct alert *a, int64_t until_ms)
{
    if (until_ms > a->hold_until_ms)
        a->hold_until_ms = until_ms;
}

struct alert *
alertset_find(struct alertset *set, const struct alert_labels *l)
{
    return index_find(set, alert_fingerprint(l), l);
}

void
alertset_release(struct alert *a)
{
    a->hold_until_ms = 0;
}

void
alertset_release_target(struct alertset *set, const char *target)
{
    for (size_t i = 0; i < set->nitems; i++)
        if (set->items[i]->target != NULL && strcmp(set->items[i]->target, target) == 0)
            alertset_release(set->items[i]);
}

void
alertset_occurred(struct alertset *set, struct alert *a, int64_t id)
{
    if (id == 0 || a->occurrence == id)
        return;
    /* another event than the one the sinks were told of: a new episode,
     * notified at alertset_end (as a re-fired alert is, by observe) */
    if (a->occurrence != 0 && a->state == ALERT_FIRING && a->notified_mono != 0) {
        a->starts_ms = set->now_ms;
        a->notified_mono = 0;
    }
    a->occurrence = id;
}

int
alert_annotate(struct alert *a, const char *summary, const char *description)
{
    char *s = NULL, *d = NULL;

    if (strcmp(a->summary, summary) == 0 && strcmp(a->description, description) == 0)
        return 0;
    s = strdup(summary);
    d = strdup(description);
    if (s == NULL || d == NULL) {
        free(s);
        free(d);
        return -1;
    }
    free(a->summary);
    free(a->description);
    a->summary = s;
    a->description = d;
    return 0;
}

void
alertset_keep_target(struct alertset *set, const char *target)
{
    const char **nk;

    if (set->nkeep == set->keepcap) {
        size_t ncap = set->keepcap ? set->keepcap * 2 : 16;

        /* without room the target's alerts are judged as unobserved,
         * which resolves them: better than failing the tick */
        if ((nk = realloc(set->keep, ncap * sizeof(*nk))) == NULL)
            return;
        set->keep = nk;
        set->keepcap = ncap;
    }
    set->keep[set->nkeep++] = target;
}

static bool
kept(const struct alertset *set, const struct alert *a)
{
    size_t i;

    if ((a->key == NULL && a->shard == NULL) || a->target == NULL)
        return false;
    for (i = 0; i < set->nkeep; i++)
        if (strcmp(set->keep[i], a->target) == 0)
            return true;
    return false;
}

static int
push(struct alertset *set, enum alert_event_kind kind, struct alert *a)
{
    if (set->nev == set->evcap) {
        size_t ncap = set->evcap ? set->evcap * 2 : 64;
        struct alert_event *ne = realloc(set->ev, ncap * sizeof(*ne));

        if (ne == NULL)
            return -1;
        set->ev = ne;
        set->evcap = ncap;
    }
    set->ev[set->nev].kind = kind;
    set->ev[set->nev].alert = a;
    set->nev++;
    /* a repeat goes to the sinks that take repeats, not to those that take
     * the refresh (Alertmanager): it posts nothing there */
    if (kind != EV_REPEAT)
        a->event_gen = set->gen;
    return 0;
}

int
alertset_end(struct alertset *set, int64_t repeat_ms, bool refresh,
             const struct alert_event **ev, size_t *nev)
{
    size_t i;
    int rc = 0;
    bool do_refresh;

    for (i = 0; i < set->nitems; i++) {
        struct alert *a = set->items[i];

        if (a->dead)
            continue;
        if (a->state == ALERT_RESOLVED) {
            if (set->mono_ms - a->resolved_mono >= ALERTSET_RESOLVED_KEEP_MS) {
                a->dead = true;
                set->nresolved--;
            }
            continue;
        }
        if (a->seen != set->gen && (kept(set, a) || a->hold_until_ms > set->now_ms))
            a->seen = set->gen;
        if (a->seen == set->gen) {
            if (a->notified_mono == 0) {
                a->notified_mono = set->mono_ms;
                rc |= push(set, EV_FIRING, a);
            } else if (set->mono_ms - a->notified_mono >= repeat_ms) {
                a->notified_mono = set->mono_ms;
                rc |= push(set, EV_REPEAT, a);
            }
            continue;
        }
        a->state = ALERT_RESOLVED;
        a->ends_ms = set->now_ms;
        a->resolved_mono = set->mono_ms;
        set->nfiring--;
        if (set->nresolved >= ALERTSET_FIRING_MAX)
            a->dead = true;     /* resolution sent, then forgotten */
        else
            set->nresolved++;
        rc |= push(set, EV_RESOLVED, a);
    }

    do_refresh = refresh && set->mono_ms - set->last_refresh_mono >= ALERTSET_REFRESH_MS;
    set->refreshed = do_refresh;
    if (do_refresh) {
        set->last_refresh_mono = set->mono_ms;
        for (i = 0; i < set->nitems; i++) {
            struct alert *a = set->items[i];

            /* an alert that fired or resolved this tick was just posted */
            if (!a->dead && a->event_gen != set->gen)
                rc |= push(set, EV_REFRESH, a);
        }
    }
    *ev = set->ev;
    *nev = set->nev;
    return rc == 0 ? 0 : -1;
}

bool
alertset_refreshed(const struct alertset *set)
{
    return set->refreshed;
}

void
alertset_counts(const struct alertset *set, size_t firing[ALERT_NAMES], size_t *suppressed)
{
    size_t i;

    memset(firing, 0, ALERT_NAMES * sizeof(firing[0]));
    for (i = 0; i < set->nitems; i++)
        if (!set->items[i]->dead && set->items[i]->state == ALERT_FIRING)
            firing[set->items[i]->name]++;
    *suppressed = set->suppressed;
}

const struct alert *
alertset_at(const struct alertset *set, size_t i)
{
    return i < set->nitems ? set->items[i] : NULL;
}

static bool
unnotified(const struct alertset *set, const struct alert *a, int64_t since_ms)
{
    return !a->dead && a->state == ALERT_FIRING && a->starts_ms >= since_ms &&
           a->notified_mono != set->mono_ms;
}

static bool
resolved_since(const struct alertset *set, const struct alert *a, int64_t since_ms)
{
    return !a->dead && a->state == ALERT_RESOLVED && a->ends_ms >= since_ms &&
           a->resolved_mono != set->mono_ms;
}

/* The live instances pick() takes, in a malloc'd array of *n. */
static struct alert **
pick_all(struct alertset *set, bool (*pick)(const struct alertset *, const struct alert *,
                                             int64_t), int64_t since_ms, size_t *n)
{
    struct alert **out;
    size_t i, k = 0;

    *n = 0;
    for (i = 0; i < set->nitems; i++)
        k += pick(set, set->items[i], since_ms);
    if (k == 0)
        return NULL;
    *n = k;
    if ((out = malloc(k * sizeof(*out))) == NULL)
        return NULL;
    for (i = 0, k = 0; i < set->nitems; i++)
        if (pick(set, set->items[i], since_ms))
            out[k++] = set->items[i];
    return out;
}

struct alert **
alertset_unnotified(struct alertset *set, int64_t since_ms, size_t *n)
{
    return pick_all(set, unnotified, since_ms, n);
}

struct alert **
alertset_resolved_since(struct alertset *set, int64_t since_ms, size_t *n)
{
    return pick_all(set, resolved_since, since_ms, n);
}

void
alert_mark_sent(struct alert *a, int64_t now_ms)
{
    a->last_sent_ms = now_ms;
}
