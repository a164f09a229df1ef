/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_render.c - /metrics and JSON rendering from hand-built snapshots:
 * escaping of hostile keys, bounded offender labels, series that do not
 * grow with the number of locks, worst-first ordering and filters, and
 * the lock list's pages (offset, next_offset, the byte cap).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "agent/http/guard.h"
#include "agent/http/metrics.h"
#include "agent/http/throttle.h"
#include "agent/http/render.h"
#include "alerts/alerts.h"
#include "collectors/events/events.h"
#include "common/keytext.h"

#define NOW 1800000000000LL

/* Add one lock with a single holder to s. */
static void
add_lock(struct snapshot *s, const char *key, size_t keylen, const char *holder,
         size_t hlen, uint8_t states, int64_t age_ms, int64_t count)
{
    struct snap_holder h;
    struct snap_lock l;

    memset(&l, 0, sizeof(l));
    memset(&h, 0, sizeof(h));
    l.key = key;
    l.key_len = (uint32_t)keylen;
    l.class_idx = 0;
    l.format = 0;
    l.states = LOCK_HELD | states;
    l.pttl_ms = (states & LOCK_LEAKED) ? -1 : 30000;
    l.first_seen_ms = NOW - age_ms;
    l.max_count = count;
    l.holders_total = 1;
    l.thread = -1;
    h.id = holder;
    h.id_len = (uint16_t)hlen;
    h.count = count;
    l.holders = &h;
    l.nholders = 1;
    assert_int_equal(snapshot_add(s, &l, NOW), 0);
}

static struct snapshot *
new_snap(const char *target, const char *cls)
{
    struct snapshot *s = snapshot_new(target);

    assert_non_null(s);
    s->ok = true;
    s->classes = calloc(1, sizeof(char *));
    s->classes[0] = strdup(cls);
    s->nclasses = 1;
    s->counters.scans_ok = 1;
    return s;
}

static void
view_of(struct view *v, struct snapshot **snaps, size_t n, int top)
{
    size_t i;

    memset(v, 0, sizeof(*v));
    v->targets = calloc(n, sizeof(*v->targets));
    for (i = 0; i < n; i++) {
        snapshot_finish(snaps[i]);
        v->targets[i].name = strdup(snaps[i]->target);
        v->targets[i].snap = snaps[i];
    }
    v->ntargets = n;
    v->top_offenders = top;
    v->now_ms = NOW;
}

static char *
metrics_of(const struct view *v)
{
    struct strbuf sb;

    sb_init(&sb, RENDER_MAX_BYTES);
    assert_int_equal(render_metrics(v, &sb), 0);
    return sb_detach(&sb, NULL);
}

static size_t
count_samples(const char *text)
{
    size_t n = 0;
    const char *p = text;

    while (*p) {
        if (*p != '#')
            n++;
        p = strchr(p, '\n');
        if (p == NULL)
            break;
        p++;
    }
    return n;
}

/* Every line is a comment, name value, or name{labels} value, and label
 * values only contain escaped quotes, backslashes and newlines. */
static void
assert_exposition_lines_well_formed(const char *text)
{
    const char *p = text, *nl;

    assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
    while (*p) {
        nl = strchr(p, '\n');
        assert_non_null(nl);
        if (*p != '#') {
            const char *q = strchr(p, '{'), *sp = strchr(p, ' ');
            bool in_str = false;

            /* a family without labels: "name value" */
            if (sp != NULL && sp < nl && (q == NULL || sp < q)) {
                assert_null(memchr(p, '"', (size_t)(nl - p)));
                p = nl + 1;
                continue;
            }
            assert_non_null(q);
            assert_true(q < nl);
            for (q++; q < nl; q++) {
                if (in_str && *q == '\\') {
                    assert_true(q[1] == '\\' || q[1] == '"' || q[1] == 'n');
                    q++;
                } else if (*q == '"') {
                    in_str = !in_str;
                } else if (!in_str && *q == '}') {
                    break;
                }
            }
            assert_true(q < nl);
            assert_false(in_str);
        }
        p = nl + 1;
    }
}

/* Seconds in /metrics: no zeros past the value's resolution. */
static void
decimals_drop_trailing_zeros(void **state)
{
    static const struct { double d; const char *want; } cases[] = {
        { 0.001, "0.001" }, { 0, "0" }, { 12, "12" }, { 0.000125, "0.000125" },
        { 1.5, "1.5" }, { 0.0000004, "0" }, { 100, "100" }, { -2.25, "-2.25" },
    };
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct strbuf sb;

        sb_init(&sb, 64);
        sb_add_decimal(&sb, cases[i].d, 6);
        sb_add(&sb, "", 1);
        assert_string_equal(sb.buf, cases[i].want);
        sb_release(&sb);
    }
}

static void
hostile_keys_are_escaped(void **state)
{
    static const char bad[] = "lock:\"q\\b\nn\xff\xfe\0z";
    struct snapshot *s = new_snap("main", "lock:*");
    struct view v;
    char *text, *big;

    (void)state;
    add_lock(s, bad, sizeof(bad) - 1, "tok\"\n\xff", 6, LOCK_LEAKED, 60000, 1);
    big = malloc(65536 + 5);
    memcpy(big, "lock:", 5);
    memset(big + 5, 'x', 65536);
    add_lock(s, big, 65536 + 5, "t", 1, LOCK_LEAKED, 50000, 1);
    view_of(&v, &s, 1, 20);
    text = metrics_of(&v);
    assert_exposition_lines_well_formed(text);
    /* sanitised, and marked with the hash of the real bytes it stands for */
    assert_non_null(strstr(text, "key=\"lock:\\\"q\\\\b\\nn\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz\xe2\x80\xa6#"));
    assert_non_null(strstr(text, "holder=\"tok\\\"\\n\xef\xbf\xbd\xe2\x80\xa6#"));
    /* the 64 KiB key is cut to the label cap and marked with a hash */
    assert_null(strstr(text, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
    assert_non_null(strstr(text, "\xe2\x80\xa6#"));
    assert_true(strlen(text) < 16384);
    free(text);
    free(big);
    view_release(&v);
}

static void
series_do_not_grow_with_locks(void **state)
{
    struct snapshot *a = new_snap("main", "lock:*"), *b = new_snap("main", "lock:*");
    struct view va, vb;
    char key[32], *ta, *tb;
    int i, n;

    (void)state;
    for (i = 0; i < 1000; i++) {
        n = snprintf(key, sizeof(key), "lock:%d", i);
        add_lock(a, key, (size_t)n, "t", 1, i < 30 ? LOCK_LEAKED : 0, i, 1);
    }
    for (i = 0; i < 100000; i++) {
        n = snprintf(key, sizeof(key), "lock:%d", i);
        add_lock(b, key, (size_t)n, "t", 1, i < 3000 ? LOCK_LEAKED : 0, i, 1);
    }
    view_of(&va, &a, 1, 20);
    view_of(&vb, &b, 1, 20);
    ta = metrics_of(&va);
    tb = metrics_of(&vb);
    assert_int_equal(count_samples(ta), count_samples(tb));
    assert_non_null(strstr(tb, "lockwatch_locks_leaked{target=\"main\",class=\"lock:*\"} 3000\n"));
    assert_non_null(strstr(tb, "lockwatch_locks{target=\"main\",class=\"lock:*\",format=\""));
    free(ta);
    free(tb);
    view_release(&va);
    view_release(&vb);
}

/* The timeline's counters: every kind always, the ring's drops, and no
 * series per event however many (the ring keeps EVENTS_MAX). */
static void
events_counted_by_kind(void **state)
{
    struct snapshot *s = new_snap("main", "lock:*");
    struct event_in in = { .kind = EVENT_FORCE_RELEASE, .key = "lock:a\n\"", .keylen = 8,
                           .seconds = -1 };
    struct view v;
    char *text;

    (void)state;
    events_reset();
    view_of(&v, &s, 1, 20);
    for (int i = 0; i < EVENTS_MAX + 3; i++)
        events_push(&in);
    in.kind = EVENT_DEADLOCK;
    events_push(&in);
    text = metrics_of(&v);
    assert_exposition_lines_well_formed(text);
    assert_non_null(strstr(text, "lockwatch_events_total{kind=\"force_release\"} 1027\n"));
    assert_non_null(strstr(text, "lockwatch_events_total{kind=\"deadlock\"} 1\n"));
    assert_non_null(strstr(text, "lockwatch_events_total{kind=\"lease_lost\"} 0\n"));
    assert_non_null(strstr(text, "\nlockwatch_events_dropped_total 4\n"));
    free(text);
    view_release(&v);
    events_reset();
}

/* Found by fuzz/fuzz_render.c: "lock:a\xff" and "lock:a\xfe" both sanitise
 * to "lock:a\uFFFD"; without the hash they were one series, twice. */
static void
keys_that_sanitise_alike_stay_two_series(void **state)
{
    struct snapshot *s = new_snap("main", "lock:*");
    struct view v;
    char *text, *a, *b;

    (void)state;
    add_lock(s, "lock:a\xff", 7, "t", 1, LOCK_LEAKED, 60000, 1);
    add_lock(s, "lock:a\xfe", 7, "t", 1, LOCK_LEAKED, 50000, 1);
    view_of(&v, &s, 1, 20);
    text = metrics_of(&v);
    assert_exposition_lines_well_formed(text);
    a = strstr(text, "key=\"lock:a\xef\xbf\xbd\xe2\x80\xa6#");
    assert_non_null(a);
    b = strstr(a + 1, "key=\"lock:a\xef\xbf\xbd\xe2\x80\xa6#");
    assert_non_null(b);
    /* the hashes differ, so the two label sets do */
    assert_memory_not_equal(a, b, strlen("key=\"lock:a\xef\xbf\xbd\xe2\x80\xa6#") + 16);
    free(text);
    view_release(&v);
}

static void
offenders_are_worst_first_across_targets(void **state)
{
    struct snapshot *s[2] = { new_snap("a", "lock:*"), new_snap("b", "lock:*") };
    struct view v;
    char *text, *p1, *p2, *p3;

    (void)state;
    add_lock(s[0], "lock:long", 9, "h1", 2, LOCK_LONG, 900000, 1);
    add_lock(s[0], "lock:ok", 7, "h2", 2, 0, 1000, 1);
    add_lock(s[1], "lock:leak-young", 15, "h3", 2, LOCK_LEAKED, 40000, 1);
    add_lock(s[1], "lock:leak-old", 13, "h4", 2, LOCK_LEAKED, 80000, 1);
    view_of(&v, s, 2, 2);
    text = metrics_of(&v);
    p1 = strstr(text, "key=\"lock:leak-old\"");
    p2 = strstr(text, "key=\"lock:leak-young\"");
    p3 = strstr(text, "key=\"lock:long\"");
    assert_non_null(p1);
    assert_non_null(p2);
    assert_null(p3);            /* top_offenders = 2 */
    assert_true(p1 < p2);
    assert_null(strstr(text, "key=\"lock:ok\""));
    free(text);
    view_release(&v);
}

/* The page of q as parsed JSON (status 200 asserted); *blen its bytes. */
static json_t *
page_of(const struct view *v, const struct api_query *q, size_t *blen)
{
    json_error_t jerr;
    json_t *root;
    char *body;
    size_t len;

    assert_int_equal(render_api_locks(v, q, &body, &len), 200);
    root = json_loadb(body, len, 0, &jerr);
    assert_non_null(root);
    free(body);
    if (blen != NULL)
        *blen = len;
    return root;
}

static void
api_pages_hold_every_lock_once(void **state)
{
    struct snapshot *s = new_snap("main", "lock:*");
    struct api_query q = { NULL, NULL, NULL, "3", NULL };
    char keys[10][16], off[16];
    int seen[10] = { 0 }, pages = 0, i;
    json_int_t next = 0;
    struct view v;
    json_t *root;
    char *body;
    size_t len;

    (void)state;
    for (i = 0; i < 10; i++) {
        snprintf(keys[i], sizeof(keys[i]), "lock:%d", i);
        add_lock(s, keys[i], strlen(keys[i]), "t", 1, 0, 1000 * (i + 1), 1);
    }
    view_of(&v, &s, 1, 20);
    for (;;) {
        json_t *locks, *no;
        size_t k;

        snprintf(off, sizeof(off), "%lld", (long long)next);
        q.offset = off;
        root = page_of(&v, &q, NULL);
        locks = json_object_get(root, "locks");
        assert_int_equal(json_integer_value(json_object_get(root, "offset")), next);
        assert_int_equal(json_integer_value(json_object_get(root, "count")),
                         json_array_size(locks));
        assert_int_equal(json_integer_value(json_object_get(root, "total")), 10);
        for (k = 0; k < json_array_size(locks); k++) {
            const char *key = json_string_value(json_object_get(json_array_get(locks, k), "key"));

            assert_non_null(key);
            seen[atoi(key + 5)]++;
        }
        pages++;
        no = json_object_get(root, "next_offset");
        assert_non_null(no);
        if (json_is_null(no)) {
            json_decref(root);
            break;
        }
        assert_int_equal(json_integer_value(no), next + 3);
        next = json_integer_value(no);
        json_decref(root);
        assert_true(pages < 10);
    }
    assert_int_equal(pages, 4);
    for (i = 0; i < 10; i++)
        assert_int_equal(seen[i], 1);

    q.offset = "-1";
    assert_int_equal(render_api_locks(&v, &q, &body, &len), 400);
    assert_non_null(strstr(body, "next_offset"));
    free(body);
    q.offset = "20";
    root = page_of(&v, &q, NULL);
    assert_int_equal(json_array_size(json_object_get(root, "locks")), 0);
    assert_true(json_is_null(json_object_get(root, "next_offset")));
    json_decref(root);
    view_release(&v);
}

/* Keys of SNAP_KEY_MAX control bytes (each 6 bytes of JSON text, 3 more
 * escaped): a page of all of them would be far over the cap. */
static void
api_page_is_cut_at_the_byte_cap(void **state)
{
    struct snapshot *s = new_snap("main", "lock:*");
    struct api_query q = { NULL, NULL, NULL, NULL, NULL };
    char *keys[12], off[16];
    size_t blen, seen = 0;
    json_int_t next = 0;
    struct view v;
    int i, pages = 0;

    (void)state;
    for (i = 0; i < 12; i++) {
        keys[i] = malloc(SNAP_KEY_MAX);
        assert_non_null(keys[i]);
        memset(keys[i], '\x01', SNAP_KEY_MAX);
        memcpy(keys[i], "lock:", 5);
        keys[i][5] = (char)('a' + i);
        add_lock(s, keys[i], SNAP_KEY_MAX, "t", 1, 0, 1000 * (i + 1), 1);
    }
    view_of(&v, &s, 1, 20);
    for (;;) {
        json_t *root, *no;

        snprintf(off, sizeof(off), "%lld", (long long)next);
        q.offset = off;
        root = page_of(&v, &q, &blen);
        assert_true(blen <= API_PAGE_MAX_BYTES);
        assert_true(json_array_size(json_object_get(root, "locks")) > 0);
        seen += json_array_size(json_object_get(root, "locks"));
        pages++;
        no = json_object_get(root, "next_offset");
        if (json_is_null(no)) {
            json_decref(root);
            break;
        }
        assert_int_equal(json_integer_value(no), next +
                         (json_int_t)json_array_size(json_object_get(root, "locks")));
        next = json_integer_value(no);
        json_decref(root);
        assert_true(pages < 12);
    }
    assert_true(pages >= 2);
    assert_int_equal(seen, 12);
    view_release(&v);
    for (i = 0; i < 12; i++)
        free(keys[i]);
}

static void
api_lists_filters_and_stays_valid_json(void **state)
{
    static const char bad[] = "lock:\xff\"\n";
    struct snapshot *s = new_snap("main", "lock:*");
    struct api_query q = { "leaked", NULL, NULL, NULL, NULL };
    struct view v;
    json_t *root, *locks;
    json_error_t jerr;
    char *body, dec[64];
    size_t len, n;
    const char *esc;

    (void)state;
    add_lock(s, bad, sizeof(bad) - 1, "t\xff", 2, LOCK_LEAKED, 70000, 1);
    add_lock(s, "lock:x", 6, "t", 1, 0, 10, 1);
    add_lock(s, "lock:y", 6, "t", 1, LOCK_LEAKED, 90000, 1);
    view_of(&v, &s, 1, 20);

    assert_int_equal(render_api_locks(&v, &q, &body, &len), 200);
    root = json_loadb(body, len, 0, &jerr);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(root, "total")), 2);
    locks = json_object_get(root, "locks");
    assert_int_equal(json_array_size(locks), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(locks, 0), "key")),
                        "lock:y");
    esc = json_string_value(json_object_get(json_array_get(locks, 1), "key_escaped"));
    n = keytext_unpercent(dec, esc, strlen(esc), 0);
    assert_int_equal(n, sizeof(bad) - 1);
    assert_memory_equal(dec, bad, n);
    json_decref(root);
    free(body);

    q.state = "bogus";
    assert_int_equal(render_api_locks(&v, &q, &body, &len), 400);
    free(body);
    q.state = NULL;
    q.limit = "0";
    assert_int_equal(render_api_locks(&v, &q, &body, &len), 400);
    free(body);

    assert_int_equal(render_api_lock(&v, bad, sizeof(bad) - 1, NULL, &body, &len), 200);
    root = json_loadb(body, len, 0, &jerr);
    assert_non_null(root);
    json_decref(root);
    free(body);
    assert_int_equal(render_api_lock(&v, "lock:none", 9, NULL, &body, &len), 404);
    free(body);
    assert_int_equal(render_api_lock(&v, "lock:x", 6, "other", &body, &len), 400);
    assert_non_null(strstr(body, "known targets: main"));
    free(body);
    q.limit = NULL;
    q.target = "typo";
    assert_int_equal(render_api_locks(&v, &q, &body, &len), 400);
    assert_non_null(strstr(body, "no target \\\"typo\\\" (known targets: main)"));
    free(body);
    q.target = "main";
    assert_int_equal(render_api_locks(&v, &q, &body, &len), 200);
    free(body);
    view_release(&v);
}

/* A cluster shard the last scan could not read: its locks carried from
 * the view before are "stale" (with their shard's stale_since), the
 * page is not complete, and "stale" names the shard, its node, last
 * success and reason, while the target is up. */
static void
api_marks_a_failed_shards_locks_stale(void **state)
{
    struct snapshot *s = new_snap("c", "lock:*");
    struct api_query q = { NULL, NULL, NULL, NULL, NULL };
    struct view v;
    json_t *root, *locks, *st, *l;
    json_error_t jerr;
    char *body;
    size_t len, i;

    (void)state;
    s->nshards = 2;
    s->shards = calloc(2, sizeof(*s->shards));
    assert_non_null(s->shards);
    snprintf(s->shards[0].shard, sizeof(s->shards[0].shard), "0-8191");
    snprintf(s->shards[0].node, sizeof(s->shards[0].node), "127.0.0.1:7000");
    s->shards[0].ok = true;
    snprintf(s->shards[1].shard, sizeof(s->shards[1].shard), "8192-16383");
    snprintf(s->shards[1].node, sizeof(s->shards[1].node), "127.0.0.1:7001");
    snprintf(s->shards[1].err, sizeof(s->shards[1].err), "connect refused");
    s->shards[1].stale_since_ms = NOW - 5000;
    s->shards[1].last_success_ms = NOW - 6000;
    s->shards[1].carried = 1;
    add_lock(s, "lock:fresh", 10, "t", 1, 0, 1000, 1);
    add_lock(s, "lock:gone", 9, "t", 1, LOCK_LEAKED, 90000, 1);
    for (i = 0; i < s->nlocks; i++)
        if (s->locks[i]->key_len == 9)
            s->locks[i]->stale_since_ms = NOW - 5000;
    view_of(&v, &s, 1, 20);

    assert_int_equal(render_api_locks(&v, &q, &body, &len), 200);
    root = json_loadb(body, len, 0, &jerr);
    assert_non_null(root);
    assert_false(json_is_true(json_object_get(root, "complete")));
    assert_int_equal(json_integer_value(json_object_get(root, "total")), 2);
    st = json_object_get(root, "stale");
    assert_int_equal(json_array_size(st), 1);
    st = json_array_get(st, 0);
    assert_string_equal(json_string_value(json_object_get(st, "target")), "c");
    assert_string_equal(json_string_value(json_object_get(st, "shard")), "8192-16383");
    assert_string_equal(json_string_value(json_object_get(st, "node")), "127.0.0.1:7001");
    assert_string_equal(json_string_value(json_object_get(st, "reason")),
                        "shard 8192-16383 (127.0.0.1:7001): connect refused");
    assert_int_equal(json_integer_value(json_object_get(st, "last_success_ms")), NOW - 6000);
    locks = json_object_get(root, "locks");
    assert_int_equal(json_array_size(locks), 2);
    l = json_array_get(locks, 0);               /* worst first: the leak */
    assert_string_equal(json_string_value(json_object_get(l, "key")), "lock:gone");
    assert_true(json_is_true(json_object_get(l, "stale")));
    assert_true(json_equal(json_object_get(l, "stale_since"), json_object_get(st, "stale_since")));
    assert_null(json_object_get(json_array_get(locks, 1), "stale"));
    json_decref(root);
    free(body);

    assert_int_equal(render_api_lock(&v, "lock:gone", 9, NULL, &body, &len), 200);
    assert_non_null(strstr(body, "\"stale\":true"));
    free(body);
    assert_int_equal(render_api_lock(&v, "lock:fresh", 10, NULL, &body, &len), 200);
    assert_null(strstr(body, "\"stale\""));
    free(body);

    /* read again: fresh, complete */
    v.targets[0].snap->shards[1].ok = true;
    v.targets[0].snap->locks[0]->stale_since_ms = 0;
    assert_int_equal(render_api_locks(&v, &q, &body, &len), 200);
    assert_non_null(strstr(body, "\"complete\":true,\"stale\":[]"));
    free(body);
    view_release(&v);
}

/* age_seconds is whole ms as seconds, the same digits in the list and in
 * one lock's answer: 72.556, never jansson's 17-digit 72.555999999999997 */
static void
api_ages_print_in_ms(void **state)
{
    struct snapshot *s = new_snap("main", "lock:*");
    struct api_query q = { NULL, NULL, NULL, NULL, NULL };
    struct view v;
    char *body;
    size_t len;

    (void)state;
    add_lock(s, "lock:x", 6, "t", 1, 0, 72556, 1);
    view_of(&v, &s, 1, 20);
    assert_int_equal(render_api_locks(&v, &q, &body, &len), 200);
    assert_non_null(strstr(body, "\"age_seconds\":72.556,"));
    free(body);
    assert_int_equal(render_api_lock(&v, "lock:x", 6, NULL, &body, &len), 200);
    assert_non_null(strstr(body, "\"age_seconds\":72.556,"));
    free(body);
    view_release(&v);
}

static void
ready_names_targets_that_are_not(void **state)
{
    struct snapshot *s = new_snap("main", "lock:*");
    struct view v;
    struct strbuf sb;

    (void)state;
    view_of(&v, &s, 1, 20);
    sb_init(&sb, 4096);
    assert_int_equal(render_ready(&v, &sb), 1);
    s->ok = false;
    snprintf(s->err, sizeof(s->err), "connect to 127.0.0.1:1: Connection refused");
    assert_int_equal(render_ready(&v, &sb), 0);
    assert_non_null(strstr(sb.buf, "target main: connect to 127.0.0.1:1: Connection refused"));
    sb_release(&sb);
    view_release(&v);
}

/* Another shard whose peer counts as down: a line above "ready" (this
 * agent's targets are fine), and lockwatch_shard_peer_up 0 for it, 1 for
 * the one that answers. */
static void
a_peer_down_is_said_not_unready(void **state)
{
    struct snapshot *s = new_snap("main", "lock:*");
    struct view v;
    struct strbuf sb;
    char *text;

    (void)state;
    view_of(&v, &s, 1, 20);
    text = metrics_of(&v);
    assert_null(strstr(text, "lockwatch_shard_peer_up{"));     /* no shard_peers */
    free(text);
    v.shard_index = 0;
    v.shard_total = 3;
    v.shard_peers = calloc(3, sizeof(char *));
    assert_non_null(v.shard_peers);
    v.shard_peers[0] = strdup("http://lw-0:9717");
    v.shard_peers[1] = strdup("http://lw-1:9717");
    v.shard_peers[2] = strdup("http://lw-2:9717");
    v.peers = calloc(2, sizeof(*v.peers));
    assert_non_null(v.peers);
    v.npeers = 2;
    v.peers[0].shard = 1;
    v.peers[0].down = true;
    v.peers[0].failing_ms = 31500;
    snprintf(v.peers[0].err, sizeof(v.peers[0].err), "Couldn't connect to server");
    v.peers[1].shard = 2;
    sb_init(&sb, 4096);
    assert_int_equal(render_ready(&v, &sb), 1);
    assert_non_null(strstr(sb.buf, "shard 1/3 (http://lw-1:9717): does not answer as that shard "
                           "for 31 s (Couldn't connect to server): its targets are watched "
                           "by no agent unless a replica of it is up\n"));
    assert_null(strstr(sb.buf, "shard 2/3"));
    sb_release(&sb);
    text = metrics_of(&v);
    assert_non_null(strstr(text, "\nlockwatch_shard_peer_up{shard=\"1\"} 0\n"));
    assert_non_null(strstr(text, "\nlockwatch_shard_peer_up{shard=\"2\"} 1\n"));
    assert_null(strstr(text, "lockwatch_shard_peer_up{shard=\"0\"}"));
    free(text);
    view_release(&v);
}

/* The replica is a label of lockwatch_ha_info alone, never of a target's
 * series (replicas' series must match for max without(instance)). */
static void
ha_info_names_replica_and_shard(void **state)
{
    struct snapshot *s = new_snap("main", "lock:*");
    struct view v;
    char *text;

    (void)state;
    view_of(&v, &s, 1, 20);
    text = metrics_of(&v);
    assert_non_null(strstr(text, "\nlockwatch_ha_info{replica=\"\",shard=\"0\",shards=\"1\"} 1\n"));
    free(text);
    v.replica = strdup("b-1");
    v.shard_index = 1;
    v.shard_total = 2;
    text = metrics_of(&v);
    assert_non_null(strstr(text, "\nlockwatch_ha_info{replica=\"b-1\",shard=\"1\",shards=\"2\"} 1\n"));
    assert_null(strstr(strstr(text, "b-1") + 3, "b-1"));
    assert_null(strstr(text, "\nlockwatch_ha_leader "));   /* no election */
    assert_null(strstr(text, "\nlockwatch_ha_unfenced "));
    free(text);
    v.has_leader = true;
    text = metrics_of(&v);
    assert_non_null(strstr(text, "\nlockwatch_ha_leader 0\n"));
    assert_non_null(strstr(text, "\nlockwatch_ha_unfenced 0\n"));
    free(text);
    v.leader.leading = true;
    text = metrics_of(&v);
    assert_non_null(strstr(text, "\nlockwatch_ha_leader 1\n"));
    assert_non_null(strstr(text, "\nlockwatch_ha_unfenced 0\n"));
    free(text);
    v.leader.leading = false;
    v.leader.unelected = true;      /* the lock unreachable: speaking unfenced */
    text = metrics_of(&v);
    assert_non_null(strstr(text, "\nlockwatch_ha_leader 0\n"));
    assert_non_null(strstr(text, "\nlockwatch_ha_unfenced 1\n"));
    free(text);
    view_release(&v);
}

/* --- the family table ------------------------------------------------------- */

/* One lock with a single holder, in class cls and format row format. */
static void
add_lock_as(struct snapshot *s, const char *key, const char *holder, uint32_t cls,
            uint8_t format, uint8_t states, int64_t age_ms, int64_t count)
{
    struct snap_holder h;
    struct snap_lock l;

    memset(&l, 0, sizeof(l));
    memset(&h, 0, sizeof(h));
    l.key = key;
    l.key_len = (uint32_t)strlen(key);
    l.class_idx = cls;
    l.format = format;
    l.states = LOCK_HELD | states;
    l.pttl_ms = (states & LOCK_LEAKED) ? -1 : 30000;
    l.first_seen_ms = NOW - age_ms;
    l.max_count = count;
    l.holders_total = 1;
    l.thread = -1;
    h.id = holder;
    h.id_len = (uint16_t)strlen(holder);
    h.count = count;
    l.holders = &h;
    l.nholders = 1;
    assert_int_equal(snapshot_add(s, &l, NOW), 0);
}

static struct redlock_report *
judged_report(const char *group, bool judged)
{
    struct redlock_report *r = calloc(1, sizeof(*r));

    assert_non_null(r);
    atomic_init(&r->refs, 1);
    r->group = strdup(group);
    r->judged = judged;
    r->members = 3;
    r->scanned = 3;
    r->quorum = 2;
    r->consistent = 9;
    r->split = 2;
    r->under_quorum = 1;
    r->pending = 3;
    return r;
}

/* Wait statistics of two classes, one with waits, one with holds. */
static struct waitstats_view *
some_waits(void)
{
    static const char names[] = "order\0lock:job:*";
    struct waitstats_view *w = calloc(1, sizeof(*w));
    int o;

    assert_non_null(w);
    w->names = malloc(sizeof(names));
    memcpy(w->names, names, sizeof(names));
    w->nclasses = 2;
    w->classes = calloc(2, sizeof(*w->classes));
    w->classes[0].name = w->names;
    w->classes[1].name = w->names + 6;
    w->received = 65;
    w->invalid = 1;
    w->keyed = true;            /* so the key check's family renders too */
    w->classes[0].has_wait = true;
    for (o = 0; o < SAMPLE_OUTCOMES; o++) {
        w->classes[0].wait[o].bucket[3] = 2;
        w->classes[0].wait[o].count = 2;
        w->classes[0].wait[o].sum_us = 2468.0;
    }
    w->classes[0].window_count = 6;
    w->classes[0].window_p99_us = 1234.0;
    w->classes[1].has_hold = true;
    w->classes[1].hold.bucket[5] = 1;
    w->classes[1].hold.count = 1;
    w->classes[1].hold.sum_us = 99.0;
    w->classes[1].has_overrun = true;
    w->classes[1].overrun.bucket[10] = 1;
    w->classes[1].overrun.count = 1;
    w->classes[1].overrun.sum_us = 1500000.0;
    return w;
}

/* Two rows of expirations, one class name hostile. */
static struct lease_view *
some_leases(void)
{
    struct lease_view *l = calloc(1, sizeof(*l));

    assert_non_null(l);
    l->rows = calloc(3, sizeof(*l->rows));
    assert_non_null(l->rows);
    l->nrows = 3;                       /* the third never expired: no series */
    snprintf(l->rows[2].target, sizeof(l->rows[2].target), "main");
    snprintf(l->rows[2].klass, sizeof(l->rows[2].klass), "lock:quiet:*");
    snprintf(l->rows[0].target, sizeof(l->rows[0].target), "main");
    snprintf(l->rows[0].klass, sizeof(l->rows[0].klass), "lock:order:*");
    l->rows[0].expired[0] = 3;
    l->rows[0].expired[1] = 1;
    snprintf(l->rows[1].target, sizeof(l->rows[1].target), "main");
    snprintf(l->rows[1].klass, sizeof(l->rows[1].klass), "q\"\\\n\xff");
    l->rows[1].expired[1] = 2;
    return l;
}

/* A view with a sample of every family: a target up with classes in two
 * formats, a read error, follow figures and offenders; a target down; a
 * cluster target with shards; one not scanned yet; a judged Redlock
 * group; wait statistics; alerts; release counters. */
/* A class trend view (issue 28) over the first class of w, whose holds
 * get a window so that the headroom gauge has a value, and a class renewed
 * by a watchdog (lockwatch_class_renewal_seconds). */
static struct classtrend_view *
some_trend(struct waitstats_view *w)
{
    struct classtrend_view *tv = calloc(1, sizeof(*tv));
    struct classtrend_class *c;
    size_t n0;

    assert_non_null(tv);
    assert_true(w->nclasses > 0);
    n0 = strlen(w->classes[0].name) + 1;
    tv->classes = calloc(2, sizeof(*tv->classes));
    tv->names = malloc(n0 + sizeof("renewed:*"));
    assert_non_null(tv->classes);
    assert_non_null(tv->names);
    memcpy(tv->names, w->classes[0].name, n0);
    memcpy(tv->names + n0, "renewed:*", sizeof("renewed:*"));
    tv->nclasses = 2;
    c = &tv->classes[1];
    c->name = tv->names + n0;
    c->lease_known = true;
    c->lease_ms = 30000;
    c->watchdog = true;
    c->renewal_ms = 10000;
    c = &tv->classes[0];
    c->name = tv->names;
    c->count = 300;
    c->baseline_known = true;
    c->baseline = 100;
    c->created_total = 7;
    c->deleted_total = 5;
    c->lease_bucket[6] = 2;     /* two leases of 5 s < l <= 10 s */
    c->lease_count = 2;
    c->lease_sum_s = 19.5;
    c->lease_known = true;
    c->lease_ms = 10000;
    w->classes[0].hold_window_count = 1000;
    w->classes[0].hold_p999_us = 9e6;
    return tv;
}

/* A wait-for graph report over the view's targets (no deadlock: the
 * families' shapes, not the graph, are under test here). */
static struct graph_report *
full_graph(const struct view *v)
{
    struct graph *g = graph_new();
    struct graph_target t[8];
    struct graph_report *r;
    size_t i;

    assert_non_null(g);
    for (i = 0; i < v->ntargets; i++) {
        t[i].name = v->targets[i].name;
        t[i].snap = v->targets[i].snap;
        t[i].conf = NULL;
    }
    r = graph_pass(g, t, v->ntargets, NULL, NULL, 0, NOW, 1000);
    assert_non_null(r);
    graph_free(g);
    return r;
}

static void
full_view(struct view *v, struct alerts **al, atomic_uint_fast64_t *releases)
{
    static const char *const classes[] = { "lock:order:*", "lock:job:*" };
    static struct webhook_conf hook = { .name = "oncall", .url = "http://127.0.0.1:9/hook",
                                        .format = SINK_GENERIC,
                                        .delivery = { .timeout_ms = 1000,
                                                      .retry_base_ms = 100 } };
    struct snapshot *m = snapshot_new("main"), *d = snapshot_new("down"),
                    *c = snapshot_new("cl");
    struct config cfg;
    size_t i;

    assert_non_null(m);
    assert_non_null(d);
    assert_non_null(c);
    m->ok = c->ok = true;
    /* the agent stamps these when it publishes (agent.c) */
    m->last_success_ms = c->last_success_ms = 1790000000000;
    m->classes = calloc(2, sizeof(char *));
    for (i = 0; i < 2; i++)
        m->classes[i] = strdup(classes[i]);
    m->nclasses = 2;
    add_lock_as(m, "lock:order:1", "tok-a", 0, 0, LOCK_LEAKED, 60000, 1);
    add_lock_as(m, "lock:order:2", "tok-b", 0, 1, LOCK_LONG, 900000, 1);
    add_lock_as(m, "lock:job:1", "tok-c", 1, 1, LOCK_REENTRANT_HIGH, 5000, 20);
    m->counters.read_errors[0] = 2;
    m->follow.active = true;
    m->follow.events_total = 11;
    snapshot_finish(m);
    snapshot_finish(d);
    c->classes = calloc(1, sizeof(char *));
    c->classes[0] = strdup("lock:cl:*");
    c->nclasses = 1;
    add_lock_as(c, "lock:cl:1", "v1", 0, 0, 0, 1000, 1);
    c->nshards = 2;
    c->shards = calloc(2, sizeof(*c->shards));
    snprintf(c->shards[0].shard, sizeof(c->shards[0].shard), "0-8191");
    snprintf(c->shards[0].node, sizeof(c->shards[0].node), "127.0.0.1:7000");
    c->shards[0].ok = true;
    snprintf(c->shards[1].shard, sizeof(c->shards[1].shard), "8192-16383");
    snprintf(c->shards[1].node, sizeof(c->shards[1].node), "127.0.0.1:7001");
    snapshot_finish(c);

    memset(v, 0, sizeof(*v));
    v->ntargets = 4;
    v->targets = calloc(4, sizeof(*v->targets));
    v->targets[0].name = strdup("main");
    v->targets[0].snap = m;
    v->targets[1].name = strdup("down");
    v->targets[1].snap = d;
    v->targets[2].name = strdup("cl");
    v->targets[2].snap = c;
    v->targets[3].name = strdup("new");
    v->ngroups = 2;
    v->groups = calloc(2, sizeof(*v->groups));
    v->groups[0].name = strdup("g");
    v->groups[0].report = judged_report("g", true);
    v->groups[1].name = strdup("young");
    v->groups[1].report = judged_report("young", false);
    v->top_offenders = 20;
    v->now_ms = NOW;
    v->wait = some_waits();
    v->lease = some_leases();
    v->trend = some_trend(v->wait);
    memset(&cfg, 0, sizeof(cfg));
    cfg.webhooks = &hook;
    cfg.nwebhooks = 1;
    assert_non_null(*al = alerts_new(&cfg));
    v->alerts = *al;
    for (i = 0; i < 3; i++)
        atomic_init(&releases[i], i);
    v->releases = releases;
    v->graph = full_graph(v);
}

static const struct metric_family *
row_named(const char *name, size_t len)
{
    size_t i;

    for (i = 0; i < metric_nfamilies; i++)
        if (strlen(metric_families[i].name) == len &&
            memcmp(metric_families[i].name, name, len) == 0)
            return &metric_families[i];
    return NULL;
}

/* The metric name a sample line begins with belongs to family mf. */
static bool
sample_of(const struct metric_family *mf, const char *line, size_t len)
{
    static const char *const suffixes[] = { "_bucket", "_sum", "_count" };
    size_t n = strlen(mf->name), i;

    if (len < n || memcmp(line, mf->name, n) != 0)
        return false;
    if (len == n)
        return true;
    if (strcmp(mf->type, "histogram") != 0)
        return false;
    for (i = 0; i < 3; i++)
        if (len - n == strlen(suffixes[i]) && memcmp(line + n, suffixes[i], len - n) == 0)
            return true;
    return false;
}

/* The election said for people (/readyz, the status page): who leads, and
 * never a leader that is not one. */
static void
leader_said(void **state)
{
    struct leader_state st;
    char buf[1024];

    (void)state;
    memset(&st, 0, sizeof(st));
    snprintf(st.key, sizeof(st.key), "lockwatch:leader:default");
    st.leading = true;
    st.fence = 42;
    snprintf(st.holder, sizeof(st.holder), "a");
    leader_describe(&st, buf, sizeof(buf));
    assert_string_equal(buf, "replica a leads lockwatch:leader:default (this agent, fence 42)");
    st.leading = false;
    st.fence = 0;
    snprintf(st.holder, sizeof(st.holder), "b");
    leader_describe(&st, buf, sizeof(buf));
    assert_string_equal(buf, "replica b leads lockwatch:leader:default (this agent follows)");
    st.holder[0] = '\0';
    leader_describe(&st, buf, sizeof(buf));
    assert_string_equal(buf, "no replica leads lockwatch:leader:default now (this agent "
                        "follows and tries to)");
    /* an error reply (an ACL, a read-only replica): reachable, no voice */
    snprintf(st.err, sizeof(st.err), "lockwatch:leader:default: NOPERM");
    leader_describe(&st, buf, sizeof(buf));
    assert_string_equal(buf, "no replica known to lead lockwatch:leader:default: "
                        "lockwatch:leader:default: NOPERM (this agent follows)");
    snprintf(st.err, sizeof(st.err), "main: connection refused");
    st.unreach_ms = 4500;
    leader_describe(&st, buf, sizeof(buf));
    assert_non_null(strstr(buf, "no replica known to lead lockwatch:leader:default: "
                           "unreachable for 4s (main: connection refused); this agent follows"));
    st.unelected = true;
    st.unreach_ms = 12000;
    leader_describe(&st, buf, sizeof(buf));
    assert_string_equal(buf, "no replica can lead lockwatch:leader:default: unreachable for "
                        "12s (main: connection refused); this agent sends to the direct sinks "
                        "itself, unfenced");
    /* no error text kept: the wait itself is what is known */
    st.err[0] = '\0';
    leader_describe(&st, buf, sizeof(buf));
    assert_non_null(strstr(buf, "unreachable for 12s (no reply); this agent sends"));
}

/* A metric rendered without a row would show up as a sample under the
 * row above it with another name, or as a HELP no row has. */
static void
every_family_is_one_row(void **state)
{
    struct guard_stats http = { 3, 4, 5, 6, 7 };
    atomic_uint_fast64_t releases[3];
    size_t *helps, *types, *samples, i;
    const struct metric_family *cur = NULL;
    struct alerts *al;
    struct strbuf sb;
    struct view v;
    const char *p, *nl;
    char *text;

    (void)state;
    full_view(&v, &al, releases);
    v.has_leader = true;        /* lockwatch_ha_leader: only with an election */
    v.started_ms = 1790000000123;   /* process_start_time_seconds */
    v.reload.ok_ms = v.started_ms;  /* lockwatch_config_*: not in --once */
    /* lockwatch_shard_peer_up: only with shard_peers */
    assert_non_null(v.peers = calloc(1, sizeof(*v.peers)));
    v.npeers = 1;
    v.peers[0].shard = 1;
    assert_non_null(v.throttle = throttle_new());
    sb_init(&sb, RENDER_MAX_BYTES);
    assert_int_equal(render_metrics_http(&v, &http, &sb), 0);
    throttle_free(v.throttle);
    v.throttle = NULL;
    text = sb_detach(&sb, NULL);
    helps = calloc(metric_nfamilies, sizeof(size_t));
    types = calloc(metric_nfamilies, sizeof(size_t));
    samples = calloc(metric_nfamilies, sizeof(size_t));
    for (p = text; *p != '\0'; p = nl + 1) {
        const struct metric_family *mf;
        const char *name, *end;

        nl = strchr(p, '\n');
        assert_non_null(nl);
        if (strncmp(p, "# HELP ", 7) == 0 || strncmp(p, "# TYPE ", 7) == 0) {
            name = p + 7;
            end = memchr(name, ' ', (size_t)(nl - name));
            assert_non_null(end);
            mf = row_named(name, (size_t)(end - name));
            if (mf == NULL)
                fail_msg("a family without a row: %.*s", (int)(nl - p), p);
            if (p[2] == 'H') {
                assert_true(strncmp(end + 1, mf->help, strlen(mf->help)) == 0);
                helps[mf - metric_families]++;
            } else {
                assert_int_equal(nl - end - 1, strlen(mf->type));
                assert_memory_equal(end + 1, mf->type, strlen(mf->type));
                types[mf - metric_families]++;
            }
            cur = mf;
            continue;
        }
        assert_true(*p != '#');
        end = p + strcspn(p, "{ ");
        if (cur == NULL || !sample_of(cur, p, (size_t)(end - p)))
            fail_msg("a sample that is not of the row above it (%s): %.*s",
                     cur != NULL ? cur->name : "none", (int)(nl - p), p);
        samples[cur - metric_families]++;
    }
    for (i = 0; i < metric_nfamilies; i++) {
        if (helps[i] != 1 || types[i] != 1 || samples[i] == 0)
            fail_msg("%s: %zu HELP, %zu TYPE, %zu samples (want 1, 1, some)",
                     metric_families[i].name, helps[i], types[i], samples[i]);
        /* one row a name: the first row of that name is this one */
        assert_ptr_equal(row_named(metric_families[i].name, strlen(metric_families[i].name)),
                         &metric_families[i]);
    }
    free(helps);
    free(types);
    free(samples);
    free(text);
    view_release(&v);
    alerts_free(al);
}

/* Without a source, its families are left out whole: --once renders
 * neither wait, alert, release nor HTTP families. */
static void
families_without_their_source_are_left_out(void **state)
{
    struct snapshot *s = new_snap("main", "lock:*");
    struct view v;
    size_t i;
    char *text;

    (void)state;
    view_of(&v, &s, 1, 20);
    text = metrics_of(&v);
    for (i = 0; i < metric_nfamilies; i++) {
        char help[128];

        snprintf(help, sizeof(help), "# HELP %s ", metric_families[i].name);
        if (metric_families[i].source == SRC_VIEW)
            assert_non_null(strstr(text, help));
        else
            assert_null(strstr(text, help));
    }
    free(text);
    view_release(&v);
}

/* lockwatch_locks_lost_total: every cause for every target, 0 until it
 * happens, then the target's count. */
#define LOST "lockwatch_locks_lost_total{target=\""
static void
locks_lost_by_cause(void **state)
{
    struct snapshot *snaps[2] = { new_snap("main", "lock:*"), new_snap("other", "lock:*") };
    struct view v;
    char *text;

    (void)state;
    snaps[0]->counters.lost_total[LOST_FAILOVER] = 20;
    view_of(&v, snaps, 2, 20);
    text = metrics_of(&v);
    assert_non_null(strstr(text, LOST "main\",cause=\"failover\"} 20\n"));
    assert_non_null(strstr(text, LOST "main\",cause=\"restart\"} 0\n"));
    assert_non_null(strstr(text, LOST "main\",cause=\"flush\"} 0\n"));
    assert_non_null(strstr(text, LOST "other\",cause=\"failover\"} 0\n"));
    free(text);
    view_release(&v);
}

/* lockwatch_reconnects_total: every reason for every target, 0 until a
 * kept connection is found closed, then the target's count. */
static void
reconnects_render(void **state)
{
    static const char *const want[] = {
        "lockwatch_reconnects_total{target=\"main\",reason=\"eof\"} 7\n",
        "lockwatch_reconnects_total{target=\"main\",reason=\"reset\"} 0\n",
        "lockwatch_reconnects_total{target=\"main\",reason=\"broken_pipe\"} 1\n",
        "lockwatch_reconnects_total{target=\"other\",reason=\"eof\"} 0\n",
    };
    struct snapshot *snaps[2] = { new_snap("main", "lock:*"), new_snap("other", "lock:*") };
    struct view v;
    char *text;
    size_t i;

    (void)state;
    snaps[0]->counters.reconnects[REDISCONN_CLOSED_EOF] = 7;
    snaps[0]->counters.reconnects[REDISCONN_CLOSED_PIPE] = 1;
    view_of(&v, snaps, 2, 20);
    text = metrics_of(&v);
    for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_non_null(strstr(text, want[i]));
    free(text);
    view_release(&v);
}

/* lockwatch_lock_expirations_total: both renewed values of every row,
 * hostile class names escaped; the overrun histogram by class. */
static void
lease_families_render(void **state)
{
    atomic_uint_fast64_t releases[3];
    struct alerts *al;
    struct strbuf sb;
    struct view v;
    char *text;

    (void)state;
    full_view(&v, &al, releases);
    sb_init(&sb, RENDER_MAX_BYTES);
    assert_int_equal(render_metrics(&v, &sb), 0);
    text = sb_detach(&sb, NULL);
    assert_non_null(strstr(text, "lockwatch_lock_expirations_total{target=\"main\","
                           "class=\"lock:order:*\",renewed=\"no\"} 3\n"));
    assert_non_null(strstr(text, "lockwatch_lock_expirations_total{target=\"main\","
                           "class=\"lock:order:*\",renewed=\"yes\"} 1\n"));
    assert_non_null(strstr(text, "renewed=\"no\"} 0\n"));
    assert_null(strstr(text, "\xff"));
    assert_null(strstr(text, "lock:quiet:*"));
    assert_non_null(strstr(text, "lockwatch_lease_overrun_seconds_count{class=\"lock:job:*\"} 1\n"));
    assert_non_null(strstr(text, "lockwatch_lease_overrun_seconds_sum{class=\"lock:job:*\"} 1.5"));
    free(text);
    view_release(&v);
    alerts_free(al);
}

/* The value of the one series NAME (no labels) in text, or -1 if absent. */
static double
plain_value(const char *text, const char *name)
{
    size_t n = strlen(name);
    const char *p;

    for (p = text; (p = strstr(p, name)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

/* The exposition of v, with the /metrics route's counters when http is
 * not NULL; the caller frees it. */
static char *
exposition(const struct view *v, const struct guard_stats *http)
{
    struct strbuf sb;

    sb_init(&sb, RENDER_MAX_BYTES);
    assert_int_equal(render_metrics_http(v, http, &sb), 0);
    return sb_detach(&sb, NULL);
}

/* The standard process_* families: this process's figures on the
 * /metrics route, none in --once (no HTTP), and no start time unknown. */
static void
process_families_on_the_route_only(void **state)
{
    struct guard_stats http = { 0, 0, 0, 0, 0 };
    atomic_uint_fast64_t releases[3];
    struct alerts *al;
    struct view v;
    char *text;

    (void)state;
    full_view(&v, &al, releases);
    v.started_ms = 1790000000123;
    text = exposition(&v, &http);
    assert_non_null(strstr(text, "# HELP process_cpu_seconds_total Total user and system CPU "
                           "time spent in seconds.\n# TYPE process_cpu_seconds_total counter\n"));
    assert_non_null(strstr(text, "\nprocess_start_time_seconds 1790000000.123\n"));
    assert_true(plain_value(text, "process_cpu_seconds_total") >= 0);
    /* a test binary, linked with jansson and hiredis: over 1 MiB resident */
    assert_true(plain_value(text, "process_resident_memory_bytes") > 1048576);
    assert_true(plain_value(text, "process_virtual_memory_bytes") >=
                plain_value(text, "process_resident_memory_bytes"));
    /* stdin, stdout, stderr at least; not the one the count opened */
    assert_true(plain_value(text, "process_open_fds") >= 3);
    assert_true(plain_value(text, "process_max_fds") >= plain_value(text, "process_open_fds"));
    free(text);

    v.started_ms = 0;
    text = exposition(&v, &http);
    assert_non_null(strstr(text, "# TYPE process_start_time_seconds gauge\n"));
    assert_true(plain_value(text, "process_start_time_seconds") == -1);
    assert_true(plain_value(text, "process_open_fds") >= 3);
    free(text);

    text = exposition(&v, NULL);
    assert_null(strstr(text, "process_"));
    free(text);
    view_release(&v);
    alerts_free(al);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decimals_drop_trailing_zeros),
        cmocka_unit_test(hostile_keys_are_escaped),
        cmocka_unit_test(series_do_not_grow_with_locks),
        cmocka_unit_test(keys_that_sanitise_alike_stay_two_series),
        cmocka_unit_test(offenders_are_worst_first_across_targets),
        cmocka_unit_test(api_lists_filters_and_stays_valid_json),
        cmocka_unit_test(api_pages_hold_every_lock_once),
        cmocka_unit_test(api_page_is_cut_at_the_byte_cap),
        cmocka_unit_test(api_ages_print_in_ms),
        cmocka_unit_test(api_marks_a_failed_shards_locks_stale),
        cmocka_unit_test(ready_names_targets_that_are_not),
        cmocka_unit_test(locks_lost_by_cause),
        cmocka_unit_test(reconnects_render),
        cmocka_unit_test(events_counted_by_kind),
        cmocka_unit_test(ha_info_names_replica_and_shard),
        cmocka_unit_test(a_peer_down_is_said_not_unready),
        cmocka_unit_test(every_family_is_one_row),
        cmocka_unit_test(leader_said),
        cmocka_unit_test(families_without_their_source_are_left_out),
        cmocka_unit_test(lease_families_render),
        cmocka_unit_test(process_families_on_the_route_only),
    };

    return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}
