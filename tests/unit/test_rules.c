/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_rules.c - which alerts the rules raise from snapshots and wait
 * statistics, with which labels and texts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "alerts/rules.h"
#include "alerts/text.h"
#include "common/duration.h"
#include "collectors/waits/leaseadvice.h"

#define NOW  1800000000000LL
#define MONO 1000000LL

static const struct rules_conf params = {
    .judge = { .leak_grace_ms = 30000, .max_hold_ms = 300000, .max_reentrancy = 16 },
    .wait_p99_ms = 1000, .wait_window_ms = 60000, .wait_min_samples = 20,
};

static struct snapshot *
snap(const char *const *classes, size_t n)
{
    struct snapshot *s = snapshot_new("main");
    size_t i;

    assert_non_null(s);
    s->ok = true;
    s->classes = calloc(n, sizeof(*s->classes));
    for (i = 0; i < n; i++)
        s->classes[i] = strdup(classes[i]);
    s->nclasses = n;
    return s;
}

static void
add(struct snapshot *s, const char *key, size_t keylen, uint16_t cls, uint8_t states,
    int64_t age_ms, int64_t count)
{
    struct snap_holder h = { "tok-1", 5, 0, count };
    struct snap_lock l;

    memset(&l, 0, sizeof(l));
    l.key = key;
    l.key_len = (uint32_t)keylen;
    l.class_idx = cls;
    l.states = LOCK_HELD | states;
    l.pttl_ms = (states & LOCK_LEAKED) ? -1 : 60000;
    l.first_seen_ms = NOW - age_ms;
    l.holders = &h;
    l.nholders = 1;
    l.holders_total = 1;
    l.max_count = count;
    l.thread = -1;
    assert_int_equal(snapshot_add(s, &l, NOW), 0);
}

/* Run one evaluation; returns the events. */
static size_t
eval(struct alertset *set, struct snapshot *s, bool fresh, const struct waitstats_view *w,
     int64_t t, const struct alert_event **ev)
{
    struct rules_target rt = { "main", s, fresh };
    size_t nev;

    alertset_begin(set, NOW + t, MONO + t);
    rules_eval(set, &params, &rt, 1, w, NULL, NOW + t);
    assert_int_equal(alertset_end(set, 3600000, false, ev, &nev), 0);
    return nev;
}

static const struct alert *
find(const struct alert_event *ev, size_t n, enum alert_name name)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (ev[i].alert->name == name)
            return ev[i].alert;
    return NULL;
}

static void
per_lock_alerts(void **state)
{
    const char *classes[] = { "other", "lock:order:*" };
    struct snapshot *s = snap(classes, 2);
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    const struct alert *a;
    size_t n;

    (void)state;
    add(s, "lock:order:1", 12, 1, LOCK_LEAKED, 125000, 1);
    add(s, "lock:order:2", 12, 1, LOCK_LONG | LOCK_REENTRANT_HIGH, 400000, 20);
    add(s, "lock:order:3", 12, 1, 0, 1000, 1);       /* healthy */
    snapshot_finish(s);
    n = eval(set, s, true, NULL, 0, &ev);
    assert_int_equal(n, 3);
    a = find(ev, n, ALERT_LOCK_LEAKED);
    assert_non_null(a);
    assert_string_equal(a->target, "main");
    assert_string_equal(a->class_, "lock:order:*");
    assert_string_equal(a->key, "lock:order:1");
    assert_non_null(strstr(a->summary, "lock:order:1"));
    assert_non_null(strstr(a->description, "tok-1"));
    assert_non_null(strstr(a->description, "2m05s"));
    assert_non_null(strstr(a->description, "lock:order:*"));
    a = find(ev, n, ALERT_LOCK_HELD_TOO_LONG);
    assert_string_equal(a->key, "lock:order:2");
    assert_non_null(strstr(a->summary, "6m40s"));
    assert_non_null(strstr(a->description, "TTL 1m00s"));
    a = find(ev, n, ALERT_LOCK_REENTRANCY_HIGH);
    assert_non_null(strstr(a->summary, "20 times"));
    /* the same snapshot again, not fresh: nothing changes */
    assert_int_equal(eval(set, s, false, NULL, 1000, &ev), 0);
    snapshot_unref(s);

    /* a new snapshot without the leak: it resolves, the others stay */
    s = snap(classes, 2);
    add(s, "lock:order:2", 12, 1, LOCK_LONG | LOCK_REENTRANT_HIGH, 401000, 20);
    snapshot_finish(s);
    n = eval(set, s, true, NULL, 2000, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_LEAKED);
    snapshot_unref(s);
    alertset_free(set);
}

static void
failed_scan_keeps_lock_alerts(void **state)
{
    const char *classes[] = { "other", "lock:a:*" };
    struct snapshot *s = snap(classes, 2), *bad = snapshot_new("main");
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    size_t n;

    (void)state;
    add(s, "lock:a:1", 8, 1, LOCK_LEAKED, 60000, 1);
    snapshot_finish(s);
    assert_int_equal(eval(set, s, true, NULL, 0, &ev), 1);
    bad->ok = false;
    snprintf(bad->err, sizeof(bad->err), "connect 127.0.0.1:1: Connection refused");
    snapshot_ref(s);            /* as the agent stamps a failure after a view */
    bad->last_good = s;
    n = eval(set, bad, true, NULL, 1000, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_FIRING);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_TARGET_DOWN);
    assert_null(ev[0].alert->class_);
    assert_null(ev[0].alert->key);
    assert_non_null(strstr(ev[0].alert->description, "Connection refused"));
    /* back: the target alert resolves, the leak was never resolved */
    n = eval(set, s, true, NULL, 2000, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_TARGET_DOWN);
    snapshot_unref(s);
    snapshot_unref(bad);
    alertset_free(set);
}

/* A target with no view at all (a reload pointed it at another server,
 * not scanned yet or not answering) names none of the locks its alerts
 * were about: they resolve, where a failure after a view keeps them. */
static void
no_view_resolves_lock_alerts(void **state)
{
    const char *classes[] = { "other", "lock:a:*" };
    struct snapshot *s = snap(classes, 2), *bad = snapshot_new("main");
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    const struct alert *a;
    size_t n, k;

    (void)state;
    add(s, "lock:a:1", 8, 1, LOCK_LEAKED, 60000, 1);
    snapshot_finish(s);
    assert_int_equal(eval(set, s, true, NULL, 0, &ev), 1);
    /* before the new server's first scan */
    n = eval(set, NULL, true, NULL, 1000, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_LEAKED);
    /* the leak again, then the new server fails its first scan: the
     * target is down and the old server's leak resolves */
    assert_int_equal(eval(set, s, true, NULL, 2000, &ev), 1);
    bad->ok = false;
    snprintf(bad->err, sizeof(bad->err), "connect 127.0.0.1:1: Connection refused");
    n = eval(set, bad, true, NULL, 3000, &ev);
    assert_int_equal(n, 2);
    for (k = 0; k < n; k++) {
        a = ev[k].alert;
        if (a->name == ALERT_LOCK_LEAKED) {
            assert_int_equal(ev[k].kind, EV_RESOLVED);
            assert_string_equal(a->key, "lock:a:1");
        } else {
            assert_int_equal(a->name, ALERT_LOCK_TARGET_DOWN);
            assert_int_equal(ev[k].kind, EV_FIRING);
        }
    }
    snapshot_unref(s);
    snapshot_unref(bad);
    alertset_free(set);
}

/* A leaked lock of class cls held by holder (on host, when not NULL). */
static void
add_leaked_by(struct snapshot *s, const char *key, size_t keylen, uint16_t cls,
              const char *holder, char *host)
{
    struct snap_holder h = { holder, (uint16_t)strlen(holder), 0, 1 };
    struct snap_lock l;

    memset(&l, 0, sizeof(l));
    l.key = key;
    l.key_len = (uint32_t)keylen;
    l.class_idx = cls;
    l.states = LOCK_HELD | LOCK_LEAKED;
    l.pttl_ms = -1;
    l.first_seen_ms = NOW - 40000;
    l.holders = &h;
    l.nholders = 1;
    l.holders_total = 1;
    l.max_count = 1;
    l.thread = -1;
    l.host = host;
    l.host_len = host != NULL ? (uint8_t)strlen(host) : 0;
    assert_int_equal(snapshot_add(s, &l, NOW), 0);
}

static void
hostile_keys_make_valid_labels(void **state)
{
    const char *classes[] = { "other", "lock:\xff*" };
    struct snapshot *s = snap(classes, 2);
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    char longkey[3000];
    size_t n, i, seen_long = 0, seen_nul = 0;

    (void)state;
    add(s, "lock:\xff\x00\n\"x", 10, 1, LOCK_LEAKED, 60000, 1);
    memset(longkey, 'k', sizeof(longkey));
    memcpy(longkey, "lock:", 5);
    add(s, longkey, sizeof(longkey), 1, LOCK_LEAKED, 50000, 1);
    /* a terminal's control sequence in a key and its holder id: in no
     * label, no annotation */
    add_leaked_by(s, "lock:\x1b[2J\rz", 12, 1, "t\x1b[2J\rk", NULL);
    snapshot_finish(s);
    n = eval(set, s, true, NULL, 0, &ev);
    assert_int_equal(n, 3);
    for (i = 0; i < n; i++) {
        const struct alert *a = ev[i].alert;

        assert_string_equal(a->class_, "lock:\xef\xbf\xbd*");
        assert_null(strpbrk(a->key, "\x1b\r"));
        assert_null(strpbrk(a->summary, "\x1b\r"));
        assert_null(strpbrk(a->description, "\x1b\r"));
        if (strncmp(a->key, "lock:\xef\xbf\xbd[2J", 10) == 0)
            continue;
        if (strncmp(a->key, "lock:kkk", 8) == 0) {
            seen_long++;
            assert_true(strlen(a->key) <= RULES_KEY_LABEL_MAX + 4);
            assert_non_null(strstr(a->key, "\xe2\x80\xa6#"));
        } else {
            seen_nul++;
            /* sanitising changed the key: the label carries its hash */
            assert_int_equal(strncmp(a->key, "lock:\xef\xbf\xbd\xef\xbf\xbd\n\"x\xe2\x80\xa6#", 18), 0);
            assert_int_equal(strlen(a->key), 18 + 16);
        }
    }
    assert_int_equal(seen_long, 1);
    assert_int_equal(seen_nul, 1);
    snapshot_unref(s);
    alertset_free(set);
}

/* Bidi controls in a key, a holder, a host or a class (an on-call trial:
 * "holder \u202eevil" reversed the Slack message): U+FFFD in every label
 * and annotation, as in lockctl's tables; two keys that differ only in
 * them are two alerts (the key label carries the hash). */
static void
bidi_controls_are_replaced(void **state)
{
    const char *classes[] = { "lock:\xe2\x81\xa6" "x*" };        /* U+2066 */
    struct snapshot *s = snap(classes, 1);
    struct alertset *set = alertset_new();
    char host[] = "web\xe2\x80\x8f" "1";                           /* RLM */
    const struct alert_event *ev;
    size_t n, i;

    (void)state;
    /* holder U+202E; keys with U+202E, U+202D */
    add_leaked_by(s, "lock:\xe2\x80\xae" "1", 9, 0, "\xe2\x80\xae" "evil", host);
    add_leaked_by(s, "lock:\xe2\x80\xad" "1", 9, 0, "\xe2\x80\xae" "evil", host);
    snapshot_finish(s);
    n = eval(set, s, true, NULL, 0, &ev);
    assert_int_equal(n, 2);
    assert_string_not_equal(ev[0].alert->key, ev[1].alert->key);
    for (i = 0; i < n; i++) {
        const struct alert *a = ev[i].alert;

        assert_string_equal(a->class_, "lock:\xef\xbf\xbdx*");
        assert_int_equal(strncmp(a->key, "lock:\xef\xbf\xbd" "1\xe2\x80\xa6#", 12), 0);
        assert_non_null(strstr(a->description, "holder \xef\xbf\xbd" "evil"));
        assert_non_null(strstr(a->description, "host web\xef\xbf\xbd" "1"));
        assert_null(strstr(a->summary, "\xe2\x80\xae"));
        assert_null(strstr(a->description, "\xe2\x80\xae"));
        assert_null(strstr(a->description, "\xe2\x80\xad"));
        assert_null(strstr(a->description, "\xe2\x81\xa6"));
        assert_null(strstr(a->description, "\xe2\x80\x8f"));
    }
    snapshot_unref(s);
    alertset_free(set);
}

static void
wait_p99_needs_samples(void **state)
{
    struct waitstats_class cls[3];
    struct waitstats_view w;
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    size_t n;

    (void)state;
    memset(cls, 0, sizeof(cls));
    memset(&w, 0, sizeof(w));
    cls[0].name = "lock:few:*";         /* over, but 19 samples */
    cls[0].window_count = 19;
    cls[0].window_p99_us = 5e6;
    cls[1].name = "lock:edge:*";        /* exactly at the threshold: not over */
    cls[1].window_count = 100;
    cls[1].window_p99_us = 1e6;
    cls[2].name = "lock:hot:*";         /* over with 20 */
    cls[2].window_count = 20;
    cls[2].window_p99_us = 1.5e6;
    w.classes = cls;
    w.nclasses = 3;
    n = eval(set, NULL, false, &w, 0, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_WAIT_P99_HIGH);
    assert_string_equal(ev[0].alert->class_, "lock:hot:*");
    assert_null(ev[0].alert->target);
    assert_null(ev[0].alert->key);
    assert_non_null(strstr(ev[0].alert->summary, " is 1.5s"));
    assert_non_null(strstr(ev[0].alert->description, "clients waited 1.5s or less"));
    assert_non_null(strstr(ev[0].alert->description, "above wait_p99 (1s)"));
    assert_non_null(strstr(ev[0].alert->description, "20 acquires"));
    /* back under: resolved */
    cls[2].window_p99_us = 0.5e6;
    n = eval(set, NULL, false, &w, 1000, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    alertset_free(set);
}

/* The trial's LockWaitP99High: a P99 of 3,933.151 ms read "is 3s" and
 * "clients waited 3s or less", false; now never below the P99. */
static void
wait_p99_never_understated(void **state)
{
    struct rules_conf p = params;
    struct waitstats_class cls;
    struct waitstats_view w;
    struct rules_target rt = { "main", NULL, false };
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    size_t n;

    (void)state;
    memset(&cls, 0, sizeof(cls));
    memset(&w, 0, sizeof(w));
    cls.name = "lock:pay:*";
    cls.window_count = 60;
    cls.window_p99_us = 3933151.0;
    w.classes = &cls;
    w.nclasses = 1;
    p.wait_p99_ms = 2000;
    alertset_begin(set, NOW, MONO);
    rules_eval(set, &p, &rt, 0, &w, NULL, NOW);
    assert_int_equal(alertset_end(set, 3600000, false, &ev, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(ev[0].alert->summary, "P99 acquire wait of lock class lock:pay:* is 3.94s");
    assert_non_null(strstr(ev[0].alert->description, "clients waited 3.94s or less in 99% of 60 "
                           "acquires of class lock:pay:*, above wait_p99 (2s)"));
    alertset_free(set);
}

/* LockHeldTooLong: an age just past max_hold reads past it (it read
 * "5m00s, longer than max_hold (5m00s)"). */
static void
held_too_long_reads_longer(void **state)
{
    const char *classes[] = { "other" };
    struct snapshot *s = snap(classes, 1);
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    const struct alert *a;
    size_t n;

    (void)state;
    add(s, "lock:x", 6, 0, LOCK_LONG, 300400, 1);
    snapshot_finish(s);
    n = eval(set, s, true, NULL, 0, &ev);
    a = find(ev, n, ALERT_LOCK_HELD_TOO_LONG);
    assert_non_null(a);
    assert_non_null(strstr(a->summary, "held for 5m00s"));      /* descriptive: cut down */
    assert_non_null(strstr(a->description, "has held it for 5m01s, longer than max_hold (5m00s)"));
    snapshot_unref(s);
    alertset_free(set);
}

static void
durations(void **state)
{
    char b[32];

    (void)state;
    duration_format(850, b, sizeof(b));
    assert_string_equal(b, "850ms");
    duration_format(42000, b, sizeof(b));
    assert_string_equal(b, "42s");
    duration_format(303000, b, sizeof(b));
    assert_string_equal(b, "5m03s");
    duration_format(7260000, b, sizeof(b));
    assert_string_equal(b, "2h01m");
    duration_format(3 * 86400000LL + 4 * 3600000LL, b, sizeof(b));
    assert_string_equal(b, "3d04h");
}

/* A value judged above its limit reads above it (issue 24: "1s ... above
 * wait_p99 (1s)") and is never understated, rounded up (an on-call trial:
 * a P99 of 3.933 s against 2 s read "3s", "clients waited 3s or less"). */
static void
duration_above_its_limit(void **state)
{
    static const struct { double v; int64_t lim; const char *want; } cases[] = {
        { 1400.0, 1000, "1.4s" }, { 2500.0, 1000, "2.5s" }, { 1004.0, 1000, "1.01s" },
        { 1000.2, 1000, "1.01s" }, { 850.5, 800, "851ms" }, { 800.5, 800, "801ms" },
        { 61000.0, 1000, "1m01s" }, { 900.0, 1000, "900ms" }, { 3933.151, 2000, "3.94s" },
        { 3933.151, 3000, "3.94s" }, { 3940.0, 3000, "3.94s" }, { 12340.0, 1000, "12.4s" },
        { 999.7, 900, "1s" }, { 59990.0, 1000, "1m00s" }, { 300400.0, 300000, "5m01s" },
        { 3600500.0, 3600000, "1h01m" }, { 5.231, 5, "5.24ms" }, { 0.2, 0, "0.2ms" },
        { 2999.0, 3000, "2s" },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct strbuf t;

        sb_init(&t, 64);
        text_duration_above(&t, cases[i].v, cases[i].lim);
        assert_false(sb_failed(&t));
        assert_string_equal(t.buf, cases[i].want);
        sb_release(&t);
    }
}

/* A cluster snapshot with three shards, of which the one named down (or
 * none: NULL) failed. */
static struct snapshot *
cluster_snap(const char *down)
{
    static const char *const ranges[] = { "0-5460", "5461-10922", "10923-16383" };
    static const char *const nodes[] = { "127.0.0.1:7001", "127.0.0.1:7002",
                                         "127.0.0.1:7003" };
    const char *classes[] = { "other" };
    struct snapshot *s = snap(classes, 1);
    size_t k;

    s->shards = calloc(3, sizeof(*s->shards));
    assert_non_null(s->shards);
    s->nshards = 3;
    for (k = 0; k < 3; k++) {
        struct snap_shard *sh = &s->shards[k];

        snprintf(sh->shard, sizeof(sh->shard), "%s", ranges[k]);
        snprintf(sh->node, sizeof(sh->node), "%s", nodes[k]);
        sh->ok = down == NULL || strcmp(down, ranges[k]) != 0;
        if (!sh->ok)
            snprintf(sh->err, sizeof(sh->err), "connect %s: Connection refused", nodes[k]);
    }
    snapshot_finish(s);
    return s;
}

static void
shard_down_fires_per_shard_and_resolves(void **state)
{
    struct snapshot *down = cluster_snap("5461-10922"), *up = cluster_snap(NULL);
    struct snapshot *bad = snapshot_new("main");
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    const struct alert *a;
    size_t n;

    (void)state;
    assert_int_equal(eval(set, up, true, NULL, 0, &ev), 0);
    n = eval(set, down, true, NULL, 1000, &ev);
    assert_int_equal(n, 1);
    a = ev[0].alert;
    assert_int_equal(ev[0].kind, EV_FIRING);
    assert_int_equal(a->name, ALERT_LOCK_SHARD_DOWN);
    assert_string_equal(alert_name_str(a->name), "LockShardDown");
    assert_string_equal(a->target, "main");
    assert_string_equal(a->shard, "5461-10922");
    assert_string_equal(a->node, "127.0.0.1:7002");
    assert_null(a->class_);
    assert_null(a->key);
    assert_non_null(strstr(a->summary, "5461-10922"));
    assert_non_null(strstr(a->summary, "127.0.0.1:7002"));
    assert_non_null(strstr(a->description, "Connection refused"));
    assert_non_null(strstr(a->description, "other 2 shards"));
    /* its fingerprint is its own: the shard and node are labels */
    {
        struct alert_labels l = { ALERT_LOCK_SHARD_DOWN, "main", NULL, NULL,
                                  "5461-10922", "127.0.0.1:7002" };
        struct alert_labels other = { ALERT_LOCK_SHARD_DOWN, "main", NULL, NULL,
                                      "0-5460", "127.0.0.1:7001" };

        assert_true(a->fp == alert_fingerprint(&l));
        assert_true(a->fp != alert_fingerprint(&other));
    }
    /* the same snapshot again, and a failed whole scan: nothing new known */
    assert_int_equal(eval(set, down, false, NULL, 2000, &ev), 0);
    bad->ok = false;
    snapshot_ref(down);
    bad->last_good = down;
    assert_int_equal(eval(set, bad, true, NULL, 3000, &ev), 1);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_TARGET_DOWN);
    /* the target back, the shard still down: still one firing shard alert */
    n = eval(set, down, true, NULL, 4000, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_TARGET_DOWN);
    /* the shard back: it resolves */
    n = eval(set, up, true, NULL, 5000, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    assert_int_equal(ev[0].alert->name, ALERT_LOCK_SHARD_DOWN);
    assert_string_equal(ev[0].alert->shard, "5461-10922");
    snapshot_unref(down);
    snapshot_unref(up);
    snapshot_unref(bad);
    alertset_free(set);
}

/* --- issue 28: leases and counts per class -------------------------------- */

static const struct rules_conf lparams = {
    .judge = { .leak_grace_ms = 30000, .max_hold_ms = 300000, .max_reentrancy = 16 },
    .wait_p99_ms = 1000, .wait_window_ms = 60000, .wait_min_samples = 20,
    .lease_short_at = 0.8, .lease_too_long = false, .lease_long_factor = 20,
    .lease_min_holds = 100, .count_surge_factor = 3, .count_surge_floor = 50,
    .count_baseline_window_ms = 3600000,
};

static size_t
eval_trend(struct alertset *set, const struct rules_conf *p, const struct waitstats_view *w,
           const struct classtrend_view *tv, int64_t t, const struct alert_event **ev)
{
    size_t nev;

    alertset_begin(set, NOW + t, MONO + t);
    rules_eval(set, p, NULL, 0, w, tv, NOW + t);
    assert_int_equal(alertset_end(set, 3600000, false, ev, &nev), 0);
    return nev;
}

static const struct alert *
firing(const struct alertset *set, enum alert_name name, const char *cls)
{
    const struct alert *a;

    for (size_t i = 0; (a = alertset_at(set, i)) != NULL; i++)
        if (a->state == ALERT_FIRING && a->name == name && strcmp(a->class_, cls) == 0)
            return a;
    return NULL;
}

static size_t
alertset_count(const struct alertset *set)
{
    size_t n[ALERT_NAMES], sup, total = 0;

    alertset_counts(set, n, &sup);
    for (size_t i = 0; i < ALERT_NAMES; i++)
        total += n[i];
    return total;
}

#define NLEASE 6

static void
lease_rules(void **state)
{
    static const char *const names[NLEASE] = { "short", "few", "fits", "long", "dog", "dogshort" };
    static const int64_t lease[NLEASE] = { 10000, 10000, 60000, 200000, 6000, 6000 };
    static const uint64_t holds[NLEASE] = { 1000, 99, 1000, 1000, 1000, 1000 };
    struct waitstats_class wc[NLEASE];
    struct classtrend_class tc[NLEASE];
    struct waitstats_view w;
    struct classtrend_view tv;
    struct rules_conf p = lparams;
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    const struct alert *a;
    size_t i;

    (void)state;
    memset(wc, 0, sizeof(wc));
    memset(tc, 0, sizeof(tc));
    for (i = 0; i < NLEASE; i++) {
        wc[i].name = tc[i].name = names[i];
        wc[i].has_hold = true;
        wc[i].hold_window_count = holds[i];
        wc[i].hold_p999_us = 9e6;
        tc[i].lease_known = true;
        tc[i].lease_ms = lease[i];
    }
    tc[4].watchdog = tc[5].watchdog = true;
    tc[4].renewal_ms = 2000;            /* Redisson's lease / 3: fits */
    tc[5].renewal_ms = 5500;            /* renewed too late for its lease */
    memset(&w, 0, sizeof(w));
    w.classes = wc;
    w.nclasses = NLEASE;
    memset(&tv, 0, sizeof(tv));
    tv.classes = tc;
    tv.nclasses = NLEASE;

    eval_trend(set, &p, &w, &tv, 0, &ev);
    assert_int_equal(alertset_count(set), 2);
    a = firing(set, ALERT_LOCK_LEASE_TOO_SHORT, "short");
    assert_non_null(a);
    assert_null(a->target);
    assert_null(a->key);
    assert_string_equal(a->summary, "Lease of lock class short (10s) is too short: hold P99.9 9s; "
                        "suggested lease 20s");
    assert_non_null(strstr(a->description, "1000 holds in the last wait_window (1m00s) had a "
                           "P99.9 of 9s; its locks carry a lease of 10s"));
    assert_non_null(strstr(a->description, "above lease_short_at (80%)"));
    a = firing(set, ALERT_LOCK_LEASE_TOO_SHORT, "dogshort");
    assert_non_null(a);
    /* 5.5 s against 80% of 6 s: not "5s", under the 4.8 s it is above */
    assert_non_null(strstr(a->summary, "renewed every 5.5s; suggested lease 20s"));
    assert_non_null(strstr(a->description, "the renewal period is above lease_short_at"));
    assert_int_equal(alert_severity_of(ALERT_LOCK_LEASE_TOO_SHORT), ALERT_SEVERITY_WARNING);

    /* LockLeaseTooLong: off by default; on, the 200 s lease over 9 s holds */
    p.lease_too_long = true;
    eval_trend(set, &p, &w, &tv, 1000, &ev);
    a = firing(set, ALERT_LOCK_LEASE_TOO_LONG, "long");
    assert_non_null(a);
    assert_string_equal(alert_severity_str(alert_severity_of(a->name)), "info");
    assert_non_null(strstr(a->summary, "(3m20s) is far longer than its holds"));
    assert_non_null(strstr(a->description, "lease_long_factor (20)"));
    assert_int_equal(alertset_count(set), 3);

    /* more holds make the short one fit */
    p.lease_too_long = false;
    wc[0].hold_p999_us = 7.9e6;
    eval_trend(set, &p, &w, &tv, 2000, &ev);
    assert_null(firing(set, ALERT_LOCK_LEASE_TOO_SHORT, "short"));
    assert_int_equal(alertset_count(set), 1);
    alertset_free(set);
}

static void
count_surge_rule(void **state)
{
    static const char *const names[] = { "tripled", "at", "floor", "floorover", "young",
                                         "half" };
    static const uint64_t count[] = { 301, 300, 150, 151, 100000, 305 };
    static const double base[] = { 100, 100, 10, 10, 10, 101.5 };
    struct classtrend_class tc[6];
    struct classtrend_view tv;
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    const struct alert *a;
    size_t i;

    (void)state;
    memset(tc, 0, sizeof(tc));
    for (i = 0; i < 6; i++) {
        tc[i].name = names[i];
        tc[i].count = count[i];
        tc[i].baseline = base[i];
        tc[i].baseline_known = i != 4;  /* young: half the window not seen yet */
        tc[i].created_rate = 12.5;
        tc[i].deleted_rate = 0.5;
    }
    memset(&tv, 0, sizeof(tv));
    tv.classes = tc;
    tv.nclasses = 6;
    eval_trend(set, &lparams, NULL, &tv, 0, &ev);
    assert_int_equal(alertset_count(set), 3);
    /* a median of x.5 is shown so: "102" (%.0f) made 3 x 102 above the 305 */
    a = firing(set, ALERT_LOCK_COUNT_SURGE, "half");
    assert_non_null(a);
    assert_non_null(strstr(a->summary, "its baseline of 101.5"));
    assert_non_null(strstr(a->description, "x its baseline (101.5, the median"));
    a = firing(set, ALERT_LOCK_COUNT_SURGE, "tripled");
    assert_non_null(a);
    assert_string_equal(a->summary, "Lock class tripled has 301 locks, 3.0x its baseline of 100");
    assert_non_null(strstr(a->description, "above count_surge_factor (3) x its baseline (100"));
    assert_non_null(strstr(a->description, "12.5 locks created and 0.5 deleted per second"));
    assert_non_null(firing(set, ALERT_LOCK_COUNT_SURGE, "floorover"));
    /* no leases judged without holds or leases */
    assert_null(firing(set, ALERT_LOCK_LEASE_TOO_SHORT, "tripled"));
    alertset_free(set);
}

static void
lease_suggestions(void **state)
{
    (void)state;
    assert_int_equal(lease_suggest_ms(9e6), 20000);        /* 18 s -> 20 s */
    assert_int_equal(lease_suggest_ms(1e6), 2000);
    assert_int_equal(lease_suggest_ms(10), 1000);          /* at least 1 s */
    assert_int_equal(lease_suggest_ms(16e6), 45000);       /* 32 s -> 45 s */
    assert_int_equal(lease_suggest_ms(2000e6), 7200000);   /* 4000 s -> 2 h */
    assert_string_equal(lease_verdict_str(LEASE_TOO_SHORT), "too_short");
}

/* A loss at a change of server stamped on the snapshot: one alert for
 * the target naming the locks oldest first (all 20 of 20; the oldest that
 * fit of more, and how many more), for RULES_LOST_FIRING_MS. */
static void
lost_at_failover_names_the_locks(void **state)
{
    const char *classes[] = { "other" };
    struct snapshot *s = snap(classes, 1);
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    const struct alert *a;
    char want[64];
    size_t i, n;

    (void)state;
    snapshot_finish(s);
    s->lost.at_ms = NOW - 1000;
    s->lost.cause = LOST_FAILOVER;
    snprintf(s->lost.was, sizeof(s->lost.was), "127.0.0.1:6379");
    snprintf(s->lost.now, sizeof(s->lost.now), "127.0.0.1:6380");
    s->lost.count = s->lost.compared = 20;
    s->lost.nlisted = 20;
    for (i = 0; i < 20; i++) {
        struct snap_lost_lock *e = &s->lost.listed[i];

        e->key_len = (uint16_t)snprintf(e->key, sizeof(e->key), "lock:job:%02zu", i);
        e->holder_len = (uint16_t)snprintf(e->holder, sizeof(e->holder), "tok-%zu", i);
        e->first_seen_ms = s->lost.at_ms - 600000 + (int64_t)i;
        e->taken = i == 1;
    }
    n = eval(set, s, true, NULL, 0, &ev);
    assert_int_equal(n, 1);
    a = find(ev, n, ALERT_LOCK_LOST_AT_FAILOVER);
    assert_non_null(a);
    assert_string_equal(a->target, "main");
    assert_null(a->key);
    assert_non_null(strstr(a->summary, "20 locks lost on target main at a failover to "
                           "127.0.0.1:6380 (was 127.0.0.1:6379)"));
    for (i = 0; i < 20; i++) {
        snprintf(want, sizeof(want), "lock:job:%02zu (", i);
        assert_non_null(strstr(a->description, want));
    }
    assert_true(strstr(a->description, "lock:job:00") < strstr(a->description, "lock:job:19"));
    assert_non_null(strstr(a->description, "holder tok-0, held 10m00s"));
    assert_non_null(strstr(a->description, "lock:job:01 (another holder has it now"));
    assert_null(strstr(a->description, "more"));
    assert_non_null(strstr(a->description, "both be inside"));
    /* the same node, its data another primary's (REPLICAOF): no "was" of itself */
    alertset_free(set);
    set = alertset_new();
    snprintf(s->lost.now, sizeof(s->lost.now), "127.0.0.1:6379");
    n = eval(set, s, true, NULL, 0, &ev);
    a = find(ev, n, ALERT_LOCK_LOST_AT_FAILOVER);
    assert_non_null(a);
    assert_non_null(strstr(a->summary, "at a failover to 127.0.0.1:6379 (the same node, its "
                           "data replaced by another primary's)"));
    assert_null(strstr(a->summary, "(was "));
    snprintf(s->lost.now, sizeof(s->lost.now), "127.0.0.1:6380");

    /* more than fit: long keys, 500 lost; the text stays within its cap
     * and says how many it did not name */
    s->lost.count = 500;
    s->lost.nlisted = LOST_LIST_MAX;
    for (i = 0; i < LOST_LIST_MAX; i++) {
        struct snap_lost_lock *e = &s->lost.listed[i];

        memset(e->key, 'k', sizeof(e->key));
        e->key_len = sizeof(e->key);
        e->key_cut = true;
    }
    n = eval(set, s, true, NULL, 1000, &ev);
    a = alertset_at(set, 0);
    assert_non_null(a);
    assert_int_equal(a->name, ALERT_LOCK_LOST_AT_FAILOVER);
    assert_true(strlen(a->description) < RULES_DESCRIPTION_MAX);
    assert_non_null(strstr(a->description, " more. "));
    assert_non_null(strstr(a->description, "both be inside"));

    /* RULES_LOST_FIRING_MS after the loss it resolves */
    n = eval(set, s, true, NULL, RULES_LOST_FIRING_MS, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    snapshot_unref(s);
    alertset_free(set);
}

/* A second loss while the alert fires (a user trial: silent until
 * repeat_interval): a new episode of the same alert at once, its texts the
 * second loss's; it resolves RULES_LOST_FIRING_MS after the last loss. */
static void
lost_again_fires_again(void **state)
{
    const char *classes[] = { "other" };
    struct snapshot *s = snap(classes, 1);
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    uint64_t fp;
    size_t n;

    (void)state;
    snapshot_finish(s);
    s->lost.at_ms = NOW - 1000;
    s->lost.cause = LOST_FLUSH;
    snprintf(s->lost.now, sizeof(s->lost.now), "127.0.0.1:26479");
    snprintf(s->lost.was, sizeof(s->lost.was), "127.0.0.1:26479");
    s->lost.count = s->lost.compared = s->lost.nlisted = 1;
    s->lost.listed[0].key_len = (uint16_t)snprintf(s->lost.listed[0].key, LOST_KEY_MAX,
                                                   "lock:fl:1");
    n = eval(set, s, true, NULL, 0, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_FIRING);
    assert_non_null(strstr(ev[0].alert->summary, "1 lock lost on target main at a flush"));
    fp = ev[0].alert->fp;
    assert_int_equal(eval(set, s, true, NULL, 1000, &ev), 0);

    /* 14 s later: a restart loses two more */
    s->lost.at_ms = NOW + 14000;
    s->lost.cause = LOST_RESTART;
    s->lost.count = s->lost.compared = s->lost.nlisted = 2;
    s->lost.listed[0].key_len = (uint16_t)snprintf(s->lost.listed[0].key, LOST_KEY_MAX,
                                                   "lock:rst:1");
    s->lost.listed[1].key_len = (uint16_t)snprintf(s->lost.listed[1].key, LOST_KEY_MAX,
                                                   "lock:rst:2");
    n = eval(set, s, true, NULL, 14500, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_FIRING);
    assert_int_equal(ev[0].alert->fp, fp);
    assert_int_equal(ev[0].alert->starts_ms, NOW + 14500);
    assert_non_null(strstr(ev[0].alert->summary, "2 locks lost on target main at a restart "
                           "of 127.0.0.1:26479"));
    assert_non_null(strstr(ev[0].alert->description, "lock:rst:2 ("));
    assert_null(strstr(ev[0].alert->description, "lock:fl:1"));
    assert_null(alertset_at(set, 1));       /* one alert for the target */
    assert_int_equal(eval(set, s, true, NULL, 15500, &ev), 0);

    /* 15 minutes after the first loss it still fires: they count from the last */
    assert_int_equal(eval(set, s, true, NULL, RULES_LOST_FIRING_MS, &ev), 0);
    n = eval(set, s, true, NULL, 14000 + RULES_LOST_FIRING_MS, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    assert_int_equal(ev[0].alert->starts_ms, NOW + 14500);
    snapshot_unref(s);
    alertset_free(set);
}

static void
gbytes(struct graph_bytes *b, const char *s)
{
    assert_non_null(b->p = strdup(s));
    b->len = strlen(s);
}

/* A report with one deadlock of two steps and one inversion, by hand. */
static struct graph_report *
graph_report_of(void)
{
    struct graph_report *r = calloc(1, sizeof(*r));
    struct graph_deadlock *d;
    struct graph_inversion *v;

    assert_non_null(r);
    pthread_mutex_init(&r->ref_mu, NULL);
    r->refs = 1;
    assert_non_null(r->deadlocks = d = calloc(1, sizeof(*d)));
    r->ndeadlocks = 1;
    snprintf(d->target, sizeof(d->target), "main");
    d->nsteps = 2;
    d->breaker = 1;
    d->since_ms = NOW - 5000;
    gbytes(&d->steps[0].waiter, "api-1:41/7");
    gbytes(&d->steps[0].key, "lock:acct:a");
    gbytes(&d->steps[0].holder, "worker-2:99/3");
    gbytes(&d->steps[1].waiter, "worker-2:99/3");
    gbytes(&d->steps[1].key, "lock:\"ship\"\n\xff");
    gbytes(&d->steps[1].holder, "api-1:41/7");
    gbytes(&d->steps[0].holder_id, "tok-w2");
    gbytes(&d->steps[1].holder_id, "tok-a1");
    snprintf(d->steps[0].target, sizeof(d->steps[0].target), "main");
    /* step 1 only from the holders' lines: main's scan failed */
    snprintf(d->steps[1].unconfirmed, sizeof(d->steps[1].unconfirmed), "main");
    d->steps[1].held_since_ms = NOW - 3000;
    assert_non_null(r->inversions = v = calloc(1, sizeof(*v)));
    r->ninversions = 1;
    snprintf(v->class_a, sizeof(v->class_a), "lock:acct:*");
    snprintf(v->class_b, sizeof(v->class_b), "lock:ship:*");
    gbytes(&v->ab.owner, "svc-a:1/1");
    gbytes(&v->ab.held_key, "lock:acct:1");
    gbytes(&v->ab.wanted_key, "lock:ship:2");
    gbytes(&v->ba.owner, "svc-b:2/9");
    gbytes(&v->ba.held_key, "lock:ship:3");
    gbytes(&v->ba.wanted_key, "lock:acct:4");
    return r;
}

static void
deadlock_and_inversion(void **state)
{
    struct graph_report *r = graph_report_of();
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    const struct alert *a;
    size_t n;

    (void)state;
    alertset_begin(set, NOW, MONO);
    rules_eval_graph(set, r, NOW);
    assert_int_equal(alertset_end(set, 3600000, false, &ev, &n), 0);
    assert_int_equal(n, 2);
    a = find(ev, n, ALERT_LOCK_DEADLOCK);
    assert_non_null(a);
    assert_int_equal(alert_severity_of(a->name), ALERT_SEVERITY_CRITICAL);
    assert_string_equal(a->target, "main");
    /* the keys in cycle order, sanitised, cut with a hash: a valid label */
    assert_non_null(strstr(a->key, "lock:acct:a -> lock:\"ship\"\n"));
    assert_null(a->class_);
    assert_non_null(strstr(a->summary, "2 lock holders"));
    assert_non_null(strstr(a->description, "api-1:41/7 waits for lock:acct:a (target main), "
                                           "held by worker-2:99/3"));
    assert_non_null(strstr(a->description, "for 3s"));
    /* a holding no snapshot could confirm says so; one a snapshot showed does not */
    assert_non_null(strstr(a->description, "held by api-1:41/7 (by its own lines; target main "
                                           "cannot confirm it: its last scan failed or was "
                                           "partial); none can proceed"));
    assert_null(strstr(a->description, "worker-2:99/3 (by its own lines"));
    assert_non_null(strstr(a->description, "Release lock:\"ship\""));
    /* a trial: a changed key or holder was shown as if exact */
    assert_non_null(strstr(a->description, "lock:\"ship\"\n\xef\xbf\xbd (not its exact bytes: "
                                           "lockctl show has them)"));
    assert_null(strstr(a->description, "lock:acct:a (not its exact"));
    /* the holder id lockctl release --holder takes, beside the owner */
    assert_non_null(strstr(a->description, "held by api-1:41/7 as holder id tok-a1 for 3s"));
    assert_non_null(strstr(a->description, "`lockctl deadlocks` prints the release command"));
    a = find(ev, n, ALERT_LOCK_ORDER_INVERSION);
    assert_non_null(a);
    assert_int_equal(alert_severity_of(a->name), ALERT_SEVERITY_WARNING);
    assert_string_equal(a->class_, "lock:acct:*,lock:ship:*");
    assert_null(a->target);
    assert_non_null(strstr(a->description, "owner svc-a:1/1 held lock:acct:* (lock:acct:1) "
                                           "while acquiring lock:ship:* (lock:ship:2)"));
    assert_non_null(strstr(a->description, "owner svc-b:2/9 held lock:ship:*"));
    /* the next report has neither: both resolve */
    alertset_begin(set, NOW + 1000, MONO + 1000);
    rules_eval_graph(set, NULL, NOW + 1000);
    assert_int_equal(alertset_end(set, 3600000, false, &ev, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    assert_int_equal(ev[1].kind, EV_RESOLVED);
    graph_report_unref(r);
    alertset_free(set);
}

/* A trial: {"invA,invB" <-> "invC"} and {"invA" <-> "invB,invC"} were
 * both class="invA,invB,invC": one alert for two inversions.  Keys with
 * " -> " made two cycles share a key label the same way. */
static void
joined_labels_never_collide(void **state)
{
    struct graph_report *r = graph_report_of();
    struct graph_inversion *v;
    struct graph_deadlock *d;
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    size_t n, i, inv = 0, dl = 0;

    (void)state;
    assert_non_null(v = calloc(3, sizeof(*v)));
    v[0] = v[1] = v[2] = r->inversions[0];
    free(r->inversions);
    r->inversions = v;
    snprintf(v[1].class_a, sizeof(v->class_a), "invA,invB");
    snprintf(v[1].class_b, sizeof(v->class_b), "invC");
    snprintf(v[2].class_a, sizeof(v->class_a), "invA");
    snprintf(v[2].class_b, sizeof(v->class_b), "invB,invC");
    r->ninversions = 3;
    assert_non_null(d = calloc(3, sizeof(*d)));
    d[0] = d[1] = d[2] = r->deadlocks[0];
    free(r->deadlocks);
    r->deadlocks = d;
    /* "x ->" then "y", and "x" then "-> y": both "x -> -> y" joined bare */
    d[1].steps[0].key.p = "x ->";
    d[1].steps[0].key.len = 4;
    d[1].steps[1].key.p = "y";
    d[1].steps[1].key.len = 1;
    d[2].steps[0].key.p = "x";
    d[2].steps[0].key.len = 1;
    d[2].steps[1].key.p = "-> y";
    d[2].steps[1].key.len = 4;
    r->ndeadlocks = 3;
    alertset_begin(set, NOW, MONO);
    rules_eval_graph(set, r, NOW);
    assert_int_equal(alertset_end(set, 3600000, false, &ev, &n), 0);
    for (i = 0; i < n; i++) {
        const struct alert *a = ev[i].alert;

        if (a->name == ALERT_LOCK_ORDER_INVERSION)
            inv++;
        if (a->name == ALERT_LOCK_DEADLOCK)
            dl++;
        if (a->class_ != NULL && strcmp(a->class_, "invA\\,invB,invC") == 0)
            inv += 10;
        if (a->class_ != NULL && strcmp(a->class_, "invA,invB\\,invC") == 0)
            inv += 100;
        if (a->key != NULL && strcmp(a->key, "x -\\> -> y") == 0)
            dl += 10;
        if (a->key != NULL && strcmp(a->key, "x -> -\\> y") == 0)
            dl += 100;
    }
    assert_int_equal(inv, 113);         /* three alerts, the two escaped as said */
    assert_int_equal(dl, 113);
    /* the copies share the first's bytes, freed once */
    r->ndeadlocks = 1;
    r->ninversions = 1;
    graph_report_unref(r);
    alertset_free(set);
}

/* One evaluation of the EVENT kinds over events evs[0..n). */
static size_t
eval_events(struct alertset *set, const struct event *evs, size_t n, int64_t t,
            const struct alert_event **ev)
{
    size_t i, nev;

    alertset_begin(set, NOW + t, MONO + t);
    for (i = 0; i < n; i++)
        rules_eval_event(set, &params, &evs[i], false, NOW + t);
    assert_int_equal(alertset_end(set, 3600000, false, ev, &nev), 0);
    return nev;
}

static struct event
event_of(enum event_kind kind, const char *target, const char *key, double seconds)
{
    struct event e;

    memset(&e, 0, sizeof(e));
    e.seq = 1;
    e.at_ms = NOW;
    e.kind = kind;
    snprintf(e.target, sizeof(e.target), "%s", target);
    e.holderlen = (size_t)snprintf(e.holder, sizeof(e.holder), "uuid-1:7");
    snprintf(e.klass, sizeof(e.klass), "lock:order:*");
    e.key = key;
    e.keylen = strlen(key);
    e.detail = "renewed while held, then its lease ran out";
    e.seconds = seconds;
    return e;
}

/* A renewed lock that expired and a holder's own lost line raise
 * LockLeaseLost (warning) naming the holder and how long it held; an
 * overrun raises LockLeaseOverrun (critical); each for
 * RULES_EVENT_FIRING_MS after its event, then resolved. */
static void
lease_events_fire_then_resolve(void **state)
{
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    const struct alert *a;
    struct event evs[3];
    size_t n;

    (void)state;
    evs[0] = event_of(EVENT_EXPIRED_RENEWED, "main", "lock:order:1", 42.0);
    evs[1] = event_of(EVENT_LEASE_OVERRUN, "main", "lock:order:1", 1.25);
    evs[2] = event_of(EVENT_LEASE_LOST, "", "lock:order:2", 3.0);
    n = eval_events(set, evs, 3, 1000, &ev);
    assert_int_equal(n, 3);
    a = find(ev, n, ALERT_LOCK_LEASE_LOST);
    assert_non_null(a);
    assert_int_equal(alert_severity_of(a->name), ALERT_SEVERITY_WARNING);
    assert_string_equal(a->target, "main");
    assert_string_equal(a->key, "lock:order:1");
    assert_string_equal(a->class_, "lock:order:*");
    assert_non_null(strstr(a->summary, "uuid-1:7"));
    assert_non_null(strstr(a->description, "had held it for 42s"));
    /* when, not how long ago: a repeat after the event left the timeline
     * carries the text of its last evaluation (a red-team: "12s ago" for
     * 15 minutes) */
    assert_non_null(strstr(a->description, "; at 20"));
    assert_null(strstr(a->description, " ago)"));
    a = find(ev, n, ALERT_LOCK_LEASE_OVERRUN);
    assert_non_null(a);
    assert_int_equal(alert_severity_of(a->name), ALERT_SEVERITY_CRITICAL);
    assert_non_null(strstr(a->summary, "worked 1.25s past its lease"));
    {
        /* 4 ms past the lease is past it: not "0.00s" (%.2f) */
        struct alertset *s2 = alertset_new();
        struct event e = event_of(EVENT_LEASE_OVERRUN, "main", "lock:order:9", 0.004);
        const struct alert_event *ev2;
        size_t n2 = eval_events(s2, &e, 1, 1000, &ev2);

        assert_int_equal(n2, 1);
        assert_non_null(strstr(ev2[0].alert->summary, "worked 0.01s past its lease"));
        alertset_free(s2);
    }
    /* the lost line's event has no target: no target label */
    for (size_t i = 0; i < n; i++)
        if (ev[i].alert->key != NULL && strcmp(ev[i].alert->key, "lock:order:2") == 0) {
            assert_null(ev[i].alert->target);
            assert_non_null(strstr(ev[i].alert->description, "reported that its lease ended"));
        }
    /* still firing within the window, resolved past it */
    n = eval_events(set, evs, 3, RULES_EVENT_FIRING_MS - 1000, &ev);
    assert_null(find(ev, n, ALERT_LOCK_LEASE_LOST));
    n = eval_events(set, evs, 3, RULES_EVENT_FIRING_MS + 1000, &ev);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ev[i].kind, EV_RESOLVED);
    alertset_free(set);
}

/* A holder's own lost line for a lock a failover lost (at_failover): no
 * LockLeaseLost; one it raised before the loss was seen resolves at the
 * next tick that knows (the alert's 15-minute hold dropped), unless
 * another event of its labels still holds it. */
static void
a_lost_line_at_a_failover_is_no_lease_lost(void **state)
{
    struct alertset *set = alertset_new();
    const struct alert_event *ev;
    struct event e = event_of(EVENT_LEASE_LOST, "", "lock:order:3", 3.0);
    size_t n;

    (void)state;
    alertset_begin(set, NOW + 1000, MONO + 1000);
    rules_eval_event(set, &params, &e, true, NOW + 1000);
    assert_int_equal(alertset_end(set, 3600000, false, &ev, &n), 0);
    assert_int_equal(n, 0);
    /* the line first: fires; then the failover's event: resolved */
    n = eval_events(set, &e, 1, 2000, &ev);
    assert_non_null(find(ev, n, ALERT_LOCK_LEASE_LOST));
    alertset_begin(set, NOW + 3000, MONO + 3000);
    rules_eval_event(set, &params, &e, true, NOW + 3000);
    assert_int_equal(alertset_end(set, 3600000, false, &ev, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, EV_RESOLVED);
    /* another holder's line of the same lock in the same tick holds it */
    n = eval_events(set, &e, 1, 4000, &ev);
    assert_non_null(find(ev, n, ALERT_LOCK_LEASE_LOST));
    {
        struct event other = e;

        other.holderlen = (size_t)snprintf(other.holder, sizeof(other.holder), "uuid-2:9");
        alertset_begin(set, NOW + 5000, MONO + 5000);
        rules_eval_event(set, &params, &e, true, NOW + 5000);
        rules_eval_event(set, &params, &other, false, NOW + 5000);
        assert_int_equal(alertset_end(set, 3600000, false, &ev, &n), 0);
        assert_int_equal(n, 0);                 /* still firing, nothing new */
    }
    alertset_free(set);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(per_lock_alerts),
        cmocka_unit_test(lease_events_fire_then_resolve),
        cmocka_unit_test(a_lost_line_at_a_failover_is_no_lease_lost),
        cmocka_unit_test(failed_scan_keeps_lock_alerts),
        cmocka_unit_test(no_view_resolves_lock_alerts),
        cmocka_unit_test(shard_down_fires_per_shard_and_resolves),
        cmocka_unit_test(hostile_keys_make_valid_labels),
        cmocka_unit_test(bidi_controls_are_replaced),
        cmocka_unit_test(wait_p99_needs_samples),
        cmocka_unit_test(lost_at_failover_names_the_locks),
        cmocka_unit_test(lost_again_fires_again),
        cmocka_unit_test(durations),
        cmocka_unit_test(duration_above_its_limit),
        cmocka_unit_test(wait_p99_never_understated),
        cmocka_unit_test(held_too_long_reads_longer),
        cmocka_unit_test(lease_rules),
        cmocka_unit_test(count_surge_rule),
        cmocka_unit_test(lease_suggestions),
        cmocka_unit_test(deadlock_and_inversion),
        cmocka_unit_test(joined_labels_never_collide),
    };

    return cmocka_run_group_tests_name("rules", tests, NULL, NULL);
}
