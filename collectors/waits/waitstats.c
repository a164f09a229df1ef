/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waitstats.c - per-class wait and hold statistics behind one mutex.
 *
 * The writer is the ingest thread, one datagram (at most a few hundred
 * samples) per lock hold, so a scrape waits a fraction of a millisecond at
 * worst.  Classification (class_of + interning) runs under the same lock:
 * the rules it reads change on reload, and the class table is what the
 * renderers read, so a second lock would only add an ordering to get
 * wrong.  What a reader needs is copied out in waitstats_view(); the heavy
 * part of that, merging each class's window slices, is done under the lock
 * because copying the slices out would cost more than merging them.
 *
 * Classes live for the life of the process (their histograms are
 * cumulative counters), so the class set only ever grows, up to its cap.
 * Which places a class may take is decided here (waitstats.h says the
 * rules): class_set only knows its own cap, so a new derived name is
 * looked up first and interned only when its source and the derived
 * places have room.
 */
#include "collectors/waits/waitstats.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/lease/lease.h"
#include "collectors/lease/released.h"
#include "common/keyhash.h"
#include "common/clock.h"
#include "common/keytext.h"
#include "common/log.h"
#include "common/lw1.h"

const uint64_t waitstats_bounds_us[WAITSTATS_NBOUNDS] = {
    500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
    1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
};

const char *const waitstats_bounds_le[WAITSTATS_NBOUNDS] = {
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25", "0.5", "1", "2.5", "5", "10", "30", "60",
};

struct ws_class {
    bool has_wait, has_hold, has_overrun;
    struct wait_hist wait[SAMPLE_OUTCOMES];
    struct wait_hist hold;
    struct wait_hist overrun;
    struct sketch_window win;
    struct sketch_window hold_win;      /* holds over the same window */
};

const char *const waitstats_event_names[WS_EVENTS] = {
    [WS_EVENT_WAITING_START] = "waiting_start",
    [WS_EVENT_WAITING_END] = "waiting_end",
    [WS_EVENT_LOST_RENEWAL] = "lost_renewal",
    [WS_EVENT_LOST_EXPIRED] = "lost_expired",
};

/* A source's budget of derived classes; [WAITSTATS_SOURCES] is shared by
 * every source past the table. */
struct ws_source {
    struct sample_source addr;
    uint16_t created;           /* derived classes it added */
    bool over;                  /* it had one refused */
};

#define SOURCE_SLOTS 512        /* power of two, twice WAITSTATS_SOURCES */

#define WS_LAST_KEY_MAX 256

struct waitstats {
    pthread_mutex_t mu;
    struct class_set *set;
    struct ws_class *cls[CLASS_MAX + 1];    /* by class_set index */
    struct class_rule *rules;               /* our own copy */
    size_t nrules;
    int64_t window_ms;
    size_t nused;                           /* classes that had a sample */
    uint64_t received, invalid, kernel_drops, window_lost, replay_unchecked;
    struct sketch merged;                   /* view's scratch, under mu */

    size_t nderived;                        /* places taken by derived classes */
    uint64_t refused;                       /* samples folded into "other" */
    bool derived_full_said;                 /* the log said WAITSTATS_DERIVED_MAX */
    struct ws_source sources[WAITSTATS_SOURCES + 1];
    uint16_t source_slot[SOURCE_SLOTS];     /* index + 1; 0 = empty */
    size_t nsources, nover;
    uint64_t events[WS_EVENTS];
    uint64_t rejected[SAMPLEAUTH_REJECTS];
    bool keyed;
    char *key;                              /* the [samples] key; NULL: none */
    size_t keylen;
    uint64_t keygen;                        /* bumped when key changes */
    struct waiting_table *waiting;
    /* The class of the last key class_for() placed (a reporter sends a
     * lock's lines back to back): the glob rules, the name's sanitizing
     * and the set's lookup skipped while the key repeats.  Emptied when
     * the rules change; never holds "other" (a refusal counts each line). */
    char last_key[WS_LAST_KEY_MAX];
    size_t last_keylen;                     /* 0: none */
    int last_idx;
};

size_t
waitstats_class_bytes_max(void)
{
    return sizeof(struct ws_class) + 2 * WAITSTATS_SLICES * sizeof(struct sketch);
}

static void
rules_free(struct class_rule *r, size_t n)
{
    size_t i;

    if (r == NULL)
        return;
    for (i = 0; i < n; i++) {
        free(r[i].glob);
        free(r[i].name);
    }
    free(r);
}

static struct class_rule *
rules_copy(const struct class_rule *src, size_t n)
{
    struct class_rule *r;
    size_t i;

    r = calloc(n ? n : 1, sizeof(*r));
    if (r == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        r[i].glob = strdup(src[i].glob);
        r[i].name = strdup(src[i].name);
        if (r[i].glob == NULL || r[i].name == NULL) {
            rules_free(r, i + 1);
            return NULL;
        }
    }
    return r;
}

static struct ws_class *
class_new(int64_t window_ms)
{
    struct ws_class *c = calloc(1, sizeof(*c));

    if (c != NULL && (sketch_window_init(&c->win, window_ms, WAITSTATS_SLICES) == -1 ||
                      sketch_window_init(&c->hold_win, window_ms, WAITSTATS_SLICES) == -1)) {
        free(c);
        c = NULL;
    }
    return c;
}

static void
class_free(struct ws_class *c)
{
    if (c == NULL)
        return;
    sketch_window_release(&c->win);
    sketch_window_release(&c->hold_win);
    free(c);
}

/* Take cfg's samples key (a copy; the old one is wiped).  Under mu or
 * before ws is shared.  -1 on ENOMEM, nothing changed. */
static int
set_key(struct waitstats *ws, const struct config *cfg)
{
    const char *k = cfg->samples_key;
    size_t n = k != NULL ? strlen(k) : 0;
    char *copy = NULL;

    if (n > LW1_KEY_MAX)
        n = LW1_KEY_MAX;        /* the loader caps it at 4 KiB already */
    if (n == ws->keylen && (n == 0 || memcmp(k, ws->key, n) == 0))
        return 0;
    if (n > 0 && (copy = malloc(n)) == NULL)
        return -1;
    if (n > 0)
        memcpy(copy, k, n);
    if (ws->key != NULL) {
        explicit_bzero(ws->key, ws->keylen);
        free(ws->key);
    }
    ws->key = copy;
    ws->keylen = n;
    ws->keyed = n > 0;
    ws->keygen++;
    return 0;
}

/* Intern the class names of the rules, so they have places before any
 * derived class can take them.  Under mu (or before ws is shared). */
static void
reserve_rule_classes(struct waitstats *ws)
{
    for (size_t i = 0; i < ws->nrules; i++)
        if (ws->rules[i].name != NULL)
            (void)class_set_intern(ws->set, ws->rules[i].name);
}

struct waitstats *
waitstats_new(const struct config *cfg)
{
    struct waitstats *ws = calloc(1, sizeof(*ws));

    if (ws == NULL)
        return NULL;
    ws->window_ms = cfg->rules.wait_window_ms > 0 ? cfg->rules.wait_window_ms : 60000;
    ws->set = class_set_new();
    ws->rules = rules_copy(cfg->classes, cfg->nclasses);
    ws->nrules = cfg->nclasses;
    /* "other" exists from the start: it is where a sample goes when its
     * own class cannot be allocated, so recording never fails. */
    ws->cls[CLASS_OTHER_INDEX] = class_new(ws->window_ms);
    ws->waiting = waiting_new();
    if (ws->set == NULL || ws->rules == NULL || ws->cls[CLASS_OTHER_INDEX] == NULL ||
        ws->waiting == NULL) {
        class_set_free(ws->set);
        rules_free(ws->rules, ws->nrules);
        class_free(ws->cls[CLASS_OTHER_INDEX]);
        waiting_free(ws->waiting);
        free(ws);
        return NULL;
    }
    sketch_init(&ws->merged);
    pthread_mutex_init(&ws->mu, NULL);
    if (set_key(ws, cfg) == -1) {
        waitstats_free(ws);
        return NULL;
    }
    reserve_rule_classes(ws);
    return ws;
}

void
waitstats_free(struct waitstats *ws)
{
    size_t i;

    if (ws == NULL)
        return;
    for (i = 0; i <= CLASS_MAX; i++)
        class_free(ws->cls[i]);
    class_set_free(ws->set);
    rules_free(ws->rules, ws->nrules);
    waiting_free(ws->waiting);
    if (ws->key != NULL) {
        explicit_bzero(ws->key, ws->keylen);
        free(ws->key);
    }
    pthread_mutex_destroy(&ws->mu);
    free(ws);
}

int
waitstats_configure(struct waitstats *ws, const struct config *cfg)
{
    struct class_rule *nr, *old;
    size_t nold, i;
    int64_t window = cfg->rules.wait_window_ms > 0 ? cfg->rules.wait_window_ms : 60000;

    nr = rules_copy(cfg->classes, cfg->nclasses);
    if (nr == NULL)
        return -1;
    pthread_mutex_lock(&ws->mu);
    if (set_key(ws, cfg) == -1) {
        pthread_mutex_unlock(&ws->mu);
        rules_free(nr, cfg->nclasses);
        return -1;
    }
    old = ws->rules;
    nold = ws->nrules;
    ws->rules = nr;
    ws->nrules = cfg->nclasses;
    ws->last_keylen = 0;
    reserve_rule_classes(ws);
    if (window != ws->window_ms) {
        /* Slices of the old width cannot be re-cut into the new one. */
        ws->window_ms = window;
        for (i = 0; i <= CLASS_MAX; i++) {
            if (ws->cls[i] == NULL)
                continue;
            sketch_window_release(&ws->cls[i]->win);
            sketch_window_init(&ws->cls[i]->win, window, WAITSTATS_SLICES);
            sketch_window_release(&ws->cls[i]->hold_win);
            sketch_window_init(&ws->cls[i]->hold_win, window, WAITSTATS_SLICES);
        }
    }
    pthread_mutex_unlock(&ws->mu);
    rules_free(old, nold);
    return 0;
}

static void
hist_add(struct wait_hist *h, uint64_t us)
{
    size_t i;

    for (i = 0; i < WAITSTATS_NBOUNDS && us > waitstats_bounds_us[i]; i++)
        ;
    h->bucket[i]++;
    h->count++;
    h->sum_us += (double)us;
}

/* The budget of src: its own entry (added while the table has room), the
 * shared one past the table; NULL for a sender with no budget. */
static struct ws_source *
source_of(struct waitstats *ws, const struct sample_source *src)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    size_t i, slot;

    if (src == NULL)
        return NULL;
    h = (h ^ (unsigned)src->family) * UINT64_C(0x100000001b3);
    for (i = 0; i < sizeof(src->addr); i++)
        h = (h ^ src->addr[i]) * UINT64_C(0x100000001b3);
    for (slot = (size_t)h & (SOURCE_SLOTS - 1);; slot = (slot + 1) & (SOURCE_SLOTS - 1)) {
        uint16_t v = ws->source_slot[slot];

        if (v == 0)
            break;
        if (ws->sources[v - 1].addr.family == src->family &&
            memcmp(ws->sources[v - 1].addr.addr, src->addr, sizeof(src->addr)) == 0)
            return &ws->sources[v - 1];
    }
    if (ws->nsources == WAITSTATS_SOURCES)
        return &ws->sources[WAITSTATS_SOURCES];
    ws->sources[ws->nsources].addr = *src;
    ws->source_slot[slot] = (uint16_t)(ws->nsources + 1);
    return &ws->sources[ws->nsources++];
}

/* A cap refused its first class: said once per source (and once for the
 * cap of every source), since the class's lines then go on in "other"
 * with only a counter to show it. */
static void
say_refused(const struct waitstats *ws, const struct ws_source *src, const char *name)
{
    char addr[INET6_ADDRSTRLEN] = "?", safe[LOG_DEFANG_MAX(CLASS_NAME_MAX)];

    log_defang(safe, sizeof(safe), name);
    if (ws->nderived >= WAITSTATS_DERIVED_MAX) {
        log_warnx("samples: %d classes no [classes] rule names already (the cap): the lines of "
                  "new class %s, and of every new one, count in class \"other\" "
                  "(lockwatch_samples_class_overflow_total); name your classes with [classes] "
                  "patterns, which no cap limits", WAITSTATS_DERIVED_MAX, safe);
        return;
    }
    if (src->addr.family != 0)
        inet_ntop(src->addr.family, src->addr.addr, addr, sizeof(addr));
    log_warnx("samples from %s: %d classes of its own already (the cap of one sender; every "
              "application on a host that sends from it shares it): the lines of its new "
              "class %s count in class \"other\" (lockwatch_samples_class_overflow_total); "
              "name your classes with [classes] patterns, which no cap limits",
              addr, WAITSTATS_SOURCE_CLASSES, safe);
}

/*
 * The class of a key, allocated on first use; "other" when that fails or
 * a cap refuses a new derived class.  class_of() returns valid UTF-8, so
 * two raw names that differ only in invalid bytes ("a\xff", "a\xfe") are
 * one class, not two classes rendered as the same series twice.
 */
static struct ws_class *
class_for(struct waitstats *ws, const struct sample *s, struct ws_source *src)
{
    char name[CLASS_NAME_MAX];
    int idx;

    if (s->keylen > 0 && s->keylen == ws->last_keylen &&
        memcmp(s->key, ws->last_key, s->keylen) == 0)
        return ws->cls[ws->last_idx];
    class_of(s->key, s->keylen, ws->rules, ws->nrules, name, sizeof(name));
    idx = class_set_find(ws->set, name);
    if (idx < 0) {
        /* A name not interned is derived: configured names were interned
         * at configure time (unless the whole set was full then). */
        if (ws->nderived >= WAITSTATS_DERIVED_MAX ||
            (src != NULL && src->created >= WAITSTATS_SOURCE_CLASSES)) {
            if (src != NULL && !src->over && ws->nderived < WAITSTATS_DERIVED_MAX) {
                src->over = true;
                ws->nover++;
                say_refused(ws, src, name);
            } else if (ws->nderived >= WAITSTATS_DERIVED_MAX && !ws->derived_full_said) {
                ws->derived_full_said = true;
                say_refused(ws, src, name);
            }
            idx = CLASS_OTHER_INDEX;
        } else {
            idx = class_set_intern(ws->set, name);
            if (idx > CLASS_OTHER_INDEX && idx <= CLASS_MAX) {
                ws->nderived++;
                if (src != NULL)
                    src->created++;
            }
        }
        if (idx == CLASS_OTHER_INDEX)
            ws->refused++;
    }
    if (idx < 0 || idx > CLASS_MAX)
        idx = CLASS_OTHER_INDEX;
    if (ws->cls[idx] == NULL && (ws->cls[idx] = class_new(ws->window_ms)) == NULL)
        idx = CLASS_OTHER_INDEX;
    if (idx != CLASS_OTHER_INDEX && s->keylen > 0 && s->keylen <= sizeof(ws->last_key)) {
        memcpy(ws->last_key, s->key, s->keylen);
        ws->last_keylen = s->keylen;
        ws->last_idx = idx;
    }
    return ws->cls[idx];
}

/* A waiting or lost line: counted per kind, waiting ones kept per pair. */
static void
record_event(struct waitstats *ws, unsigned wsrc, const struct sample *s, int64_t now_ms)
{
    enum waitstats_event ev;

    if (s->kind == SAMPLE_WAITING) {
        ev = s->start ? WS_EVENT_WAITING_START : WS_EVENT_WAITING_END;
        /* ENOMEM: not kept */
        (void)waiting_note(ws->waiting, s, wsrc, now_ms);
    } else {
        ev = s->reason == SAMPLE_LOST_RENEWAL ? WS_EVENT_LOST_RENEWAL : WS_EVENT_LOST_EXPIRED;
    }
    ws->events[ev]++;
}

/*
 * A line of a holder (a 6-field hold, a lost) after the agent saw its
 * lease on that key run out: how long after, into its class's overrun
 * histogram (a lost line's own overrun when none matches); a lost line
 * pushes its event (collectors/lease/lease.h).  at_ms: Unix ms.  A
 * `waiting` line is an acquire, not a holding: a holder id that stays the
 * same from one acquire to the next (Redisson's <id>:<thread>), taking
 * the key again after its lease ran out by design, overran nothing, and
 * the release of that new holding is none either (lease_forget()).
 */
static void
record_lease(struct waitstats *ws, const struct sample *s, struct ws_source *src,
             int64_t at_ms)
{
    static const char *const verbs[] = { [SAMPLE_WAIT] = "wait", [SAMPLE_HOLD] = "hold",
                                         [SAMPLE_WAITING] = "waiting", [SAMPLE_LOST] = "lost" };
    struct lease_line l = { s->key, s->keylen, s->holder, s->holderlen, s->owner,
                            s->ownerlen, verbs[s->kind], at_ms,
                            s->kind == SAMPLE_HOLD ? (int64_t)s->us : 0 };
    char target[LEASE_TARGET_MAX] = "", klass[LEASE_CLASS_MAX] = "";
    struct ws_class *c;
    double over = -1;
    bool matched;

    if (s->kind == SAMPLE_WAIT || s->ownerlen == 0)
        return;
    if (s->kind == SAMPLE_WAITING) {
        if (!s->start && s->outcome == SAMPLE_OK)
            lease_forget(&l);
        return;
    }
    matched = lease_overrun(&l, &over, target, klass);
    if (!matched && s->kind == SAMPLE_LOST && s->overrun_known)
        over = (double)s->overrun_us / 1e6;
    if (matched || over > 0) {
        c = class_for(ws, s, src);
        if (!c->has_wait && !c->has_hold && !c->has_overrun)
            ws->nused++;
        c->has_overrun = true;
        hist_add(&c->overrun, (uint64_t)(over * 1e6 + 0.5));
    }
    if (s->kind != SAMPLE_LOST)
        return;
    if (!matched)
        class_of(s->key, s->keylen, ws->rules, ws->nrules, klass, sizeof(klass));
    if (!matched && over > 0)
        lease_overrun_reported(&l, over, target, klass);
    lease_lost(&l, (double)s->us / 1e6, over, s->reason == SAMPLE_LOST_EXPIRED, target,
               klass);
}

/* What a holder's line says of its holding of the key, for a lock gone
 * at a change of server (collectors/lease/released.h): it acquired it (a
 * 7-field wait or a waiting end, ok), released it (a 6-field hold), or
 * lost it. */
static void
note_holding(const struct sample *s, int64_t at_ms)
{
    enum released_what w;

    if (s->ownerlen == 0 || s->holderlen == 0)
        return;
    if (s->kind == SAMPLE_HOLD)
        w = RELEASED_HOLD;
    else if (s->kind == SAMPLE_LOST)
        w = RELEASED_LOST;
    else if (s->outcome == SAMPLE_OK && (s->kind == SAMPLE_WAIT || !s->start))
        w = RELEASED_ACQUIRE;
    else
        return;
    released_note(keyhash(s->key, s->keylen), (uint32_t)keyhash(s->holder, s->holderlen), w,
                  at_ms);
}

/* One sample (under mu).  wsrc: its source's number in the waiting
 * table.  *at_ms: the Unix ms of the datagram, 0 until a sample needs it. */
static void
record_one(struct waitstats *ws, struct ws_source *src, unsigned wsrc, const struct sample *s,
           int64_t now_ms, int64_t *at_ms)
{
    struct ws_class *c;

    if (s->ownerlen > 0) {
        if (*at_ms == 0)        /* once a datagram: now_ms on the Unix clock */
            *at_ms = clock_now_ms() - (clock_mono_ms() - now_ms);
        note_holding(s, *at_ms);
        record_lease(ws, s, src, *at_ms);
    }
    if (s->kind == SAMPLE_WAITING || s->kind == SAMPLE_LOST) {
        record_event(ws, wsrc, s, now_ms);
        return;
    }
    c = class_for(ws, s, src);
    if (!c->has_wait && !c->has_hold && !c->has_overrun)
        ws->nused++;
    if (s->kind == SAMPLE_HOLD) {
        c->has_hold = true;
        hist_add(&c->hold, s->us);
        if (sketch_window_add(&c->hold_win, now_ms, s->us) == -1)
            ws->window_lost++;
        if (s->ownerlen > 0)
            (void)waiting_note(ws->waiting, s, wsrc, now_ms);
        return;
    }
    c->has_wait = true;
    hist_add(&c->wait[(unsigned)s->outcome < SAMPLE_OUTCOMES ? s->outcome : SAMPLE_ERROR], s->us);
    if (sketch_window_add(&c->win, now_ms, s->us) == -1)
        ws->window_lost++;
}

void
waitstats_record_from(struct waitstats *ws, const struct sample_source *from,
                      const struct sample *s, size_t n,
                      uint64_t lines, uint64_t invalid, int64_t now_ms)
{
    struct ws_source *src;
    unsigned wsrc;
    struct sample end;
    int64_t at_ms = 0;
    size_t i;

    pthread_mutex_lock(&ws->mu);
    src = source_of(ws, from);
    wsrc = from != NULL ? waiting_source(ws->waiting, from->family, from->addr)
                        : WAITING_SOURCE_NONE;
    ws->received += lines;
    ws->invalid += invalid;
    for (i = 0; i < n; i++) {
        if (s[i].kind == SAMPLE_WAIT && s[i].ownerlen > 0) {
            /* a wait with owner and holder is also its waiting end line */
            end = s[i];
            end.kind = SAMPLE_WAITING;
            end.start = false;
            /* its us stays: how long the acquire waited (waiting.h) */
            record_one(ws, src, wsrc, &end, now_ms, &at_ms);
        }
        record_one(ws, src, wsrc, &s[i], now_ms, &at_ms);
    }
    pthread_mutex_unlock(&ws->mu);
}

void
waitstats_record(struct waitstats *ws, const struct sample *s, size_t n,
                 uint64_t lines, uint64_t invalid, int64_t now_ms)
{
    waitstats_record_from(ws, NULL, s, n, lines, invalid, now_ms);
}

bool
waitstats_samples_key(struct waitstats *ws, uint64_t *gen, void *key, size_t *keylen)
{
    bool changed;

    pthread_mutex_lock(&ws->mu);
    changed = *gen != ws->keygen;
    if (changed) {
        if (ws->keylen > 0)
            memcpy(key, ws->key, ws->keylen);
        *keylen = ws->keylen;
        *gen = ws->keygen;
    }
    pthread_mutex_unlock(&ws->mu);
    return changed;
}

void
waitstats_waiting_render(struct waitstats *ws, struct strbuf *sb, int64_t mono_ms,
                         int64_t wall_ms)
{
    pthread_mutex_lock(&ws->mu);
    waitstate_render(ws->waiting, sb, mono_ms, wall_ms);
    pthread_mutex_unlock(&ws->mu);
}

uint64_t
waitstats_waiting_changes(struct waitstats *ws)
{
    uint64_t n;

    pthread_mutex_lock(&ws->mu);
    n = waiting_changes(ws->waiting);
    pthread_mutex_unlock(&ws->mu);
    return n;
}

int
waitstats_waiting_restore(struct waitstats *ws, char *text, size_t len, int64_t mono_ms,
                          int64_t wall_ms, int64_t touched_ms, waitstate_keep_fn keep,
                          void *arg, struct waitstate_read *r, char *err, size_t errlen)
{
    int rc;

    pthread_mutex_lock(&ws->mu);
    rc = waitstate_restore(ws->waiting, text, len, mono_ms, wall_ms, touched_ms,
                           WAITSTATE_MAX_DOWN_MS, keep, arg, r, err, errlen);
    pthread_mutex_unlock(&ws->mu);
    return rc;
}

void
waitstats_waiting_each(struct waitstats *ws,
                       void (*fn)(const struct waiting_pair *p, void *arg), void *arg)
{
    pthread_mutex_lock(&ws->mu);
    waiting_each(ws->waiting, fn, arg);
    pthread_mutex_unlock(&ws->mu);
}

void
waitstats_reject(struct waitstats *ws, enum sampleauth_verdict why)
{
    if ((unsigned)why >= SAMPLEAUTH_REJECTS)
        return;
    pthread_mutex_lock(&ws->mu);
    ws->rejected[why]++;
    pthread_mutex_unlock(&ws->mu);
}

void
waitstats_set_replay_unchecked(struct waitstats *ws, uint64_t total)
{
    pthread_mutex_lock(&ws->mu);
    ws->replay_unchecked = total;
    pthread_mutex_unlock(&ws->mu);
}

void
waitstats_set_kernel_drops(struct waitstats *ws, uint64_t total)
{
    pthread_mutex_lock(&ws->mu);
    ws->kernel_drops = total;
    pthread_mutex_unlock(&ws->mu);
}

/* The window's hold quantiles of c into out (0 when it has none).
 * Under mu. */
static void
view_holds(struct waitstats *ws, const struct ws_class *c, int64_t now_ms,
           struct waitstats_class *out)
{
    sketch_reset(&ws->merged);
    sketch_window_merge(&c->hold_win, now_ms, &ws->merged);
    out->hold_window_count = ws->merged.count;
    if (sketch_quantile(&ws->merged, 0.5, &out->hold_p50_us) == -1 ||
        sketch_quantile(&ws->merged, 0.99, &out->hold_p99_us) == -1 ||
        sketch_quantile(&ws->merged, 0.999, &out->hold_p999_us) == -1)
        out->hold_p50_us = out->hold_p99_us = out->hold_p999_us = 0.0;
}

int
waitstats_view(struct waitstats *ws, int64_t now_ms, struct waitstats_view *v)
{
    const size_t namesz = CLASS_NAME_MAX + 1;
    size_t i, n = 0, room, bytes = sizeof(*ws);

    memset(v, 0, sizeof(*v));
    /* Allocate outside the lock for the classes in use, and go again in
     * the rare case that more came into use meanwhile (at most
     * CLASS_MAX + 1 times, classes never go away). */
    for (;;) {
        pthread_mutex_lock(&ws->mu);
        room = ws->nused;
        pthread_mutex_unlock(&ws->mu);
        v->classes = calloc(room ? room : 1, sizeof(*v->classes));
        v->names = malloc((room ? room : 1) * namesz);
        if (v->classes == NULL || v->names == NULL) {
            waitstats_view_release(v);
            return -1;
        }
        pthread_mutex_lock(&ws->mu);
        if (ws->nused <= room)
            break;              /* holding mu */
        pthread_mutex_unlock(&ws->mu);
        waitstats_view_release(v);
    }
    for (i = 0; i <= CLASS_MAX; i++) {
        const struct ws_class *c = ws->cls[i];
        struct waitstats_class *out = &v->classes[n];
        const char *name = class_set_name(ws->set, i);

        if (c == NULL)
            continue;
        bytes += sizeof(*c) - sizeof(c->win) - sizeof(c->hold_win) +
            sketch_window_bytes(&c->win) + sketch_window_bytes(&c->hold_win);
        if ((!c->has_wait && !c->has_hold && !c->has_overrun) || name == NULL || n == room)
            continue;
        snprintf(v->names + n * namesz, namesz, "%s", name);
        out->name = v->names + n * namesz;
        out->has_wait = c->has_wait;
        out->has_hold = c->has_hold;
        out->has_overrun = c->has_overrun;
        memcpy(out->wait, c->wait, sizeof(out->wait));
        out->hold = c->hold;
        out->overrun = c->overrun;
        sketch_reset(&ws->merged);
        sketch_window_merge(&c->win, now_ms, &ws->merged);
        out->window_count = ws->merged.count;
        if (sketch_quantile(&ws->merged, 0.99, &out->window_p99_us) == -1)
            out->window_p99_us = 0.0;
        view_holds(ws, c, now_ms, out);
        n++;
    }
    v->nclasses = n;
    v->received = ws->received;
    v->invalid = ws->invalid;
    v->class_overflowed = ws->refused;
    memcpy(v->events, ws->events, sizeof(v->events));
    v->keyed = ws->keyed;
    memcpy(v->rejected, ws->rejected, sizeof(v->rejected));
    v->waiting_now = waiting_waiting(ws->waiting);
    v->waiting_evicted = waiting_evicted(ws->waiting);
    v->waiting_superseded = waiting_superseded(ws->waiting);
    v->waiting_late_acquires = waiting_late_acquires(ws->waiting);
    v->waiting_sources_shared = waiting_sources_shared(ws->waiting);
    v->sources = ws->nsources;
    v->sources_over_budget = ws->nover;
    bytes += waiting_bytes(ws->waiting);
    v->kernel_drops = ws->kernel_drops;
    v->replay_unchecked = ws->replay_unchecked;
    v->window_lost = ws->window_lost;
    v->window_ms = ws->window_ms;
    v->bytes = bytes;
    pthread_mutex_unlock(&ws->mu);
    return 0;
}

void
waitstats_view_release(struct waitstats_view *v)
{
    free(v->classes);
    free(v->names);
    memset(v, 0, sizeof(*v));
}

const struct waitstats_class *
waitstats_view_class(const struct waitstats_view *v, const char *name)
{
    for (size_t i = 0; v != NULL && i < v->nclasses; i++)
        if (strcmp(v->classes[i].name, name) == 0)
            return &v->classes[i];
    return NULL;
}
