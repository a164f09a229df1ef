/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_render.c - /metrics and JSON rendering from hand-built snapshots:
 * escaping of hostile keys, bounded offender labels, series that do not
 * grow with the number of locks, worst-first ordering and filters, and
 * the lock list's pages (offset, next_offset, the byte cap).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "agent/http/render.h"
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

/* Every line is a comment or name{labels} value, and label values only
 * contain escaped quotes, backslashes and newlines. */
static void
assert_exposition_lines_well_formed(const char *text)
{
    const char *p = text, *nl;

    assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
    while (*p) {
        nl = strchr(p, '\n');
        assert_non_null(nl);
        if (*p != '#') {
            const char *q = strchr(p, '{');
            bool in_str = false;

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
    assert_int_equal(render_api_lock(&v, "lock:x", 6, "other", &body, &len), 404);
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostile_keys_are_escaped),
        cmocka_unit_test(series_do_not_grow_with_locks),
        cmocka_unit_test(keys_that_sanitise_alike_stay_two_series),
        cmocka_unit_test(offenders_are_worst_first_across_targets),
        cmocka_unit_test(api_lists_filters_and_stays_valid_json),
        cmocka_unit_test(api_pages_hold_every_lock_once),
        cmocka_unit_test(api_page_is_cut_at_the_byte_cap),
        cmocka_unit_test(ready_names_targets_that_are_not),
    };

    return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}
