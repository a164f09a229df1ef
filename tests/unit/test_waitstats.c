/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_waitstats.c - per-class wait and hold statistics: histogram
 * buckets and cumulativeness, outcomes kept apart, the class cap folding
 * into "other", [classes] rules and their reload, the window P99 with an
 * explicit clock, and counters that stay consistent while a writer and
 * readers race.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "common/keytext.h"
#include "common/lw1.h"
#include "collectors/events/events.h"
#include "collectors/lease/lease.h"
#include "collectors/waits/waitstats.h"
#include "common/clock.h"
#include "common/keyhash.h"

#define T0 5000000              /* a monotonic clock reading, ms */

static void
config_with(struct config *cfg, struct class_rule *rules, size_t n, int64_t window_ms)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->classes = rules;
    cfg->nclasses = n;
    cfg->rules.wait_window_ms = window_ms;
}

static struct sample
wait_sample(const char *key, uint64_t us, enum sample_outcome o)
{
    struct sample s = { .kind = SAMPLE_WAIT, .outcome = o, .us = us, .key = key,
                        .keylen = strlen(key) };

    return s;
}

static struct sample
hold_sample(const char *key, uint64_t us)
{
    struct sample s = { .kind = SAMPLE_HOLD, .outcome = SAMPLE_OK, .us = us, .key = key,
                        .keylen = strlen(key) };

    return s;
}

static void
record1(struct waitstats *ws, struct sample s, int64_t now)
{
    waitstats_record(ws, &s, 1, 1, 0, now);
}

static const struct waitstats_class *
find(const struct waitstats_view *v, const char *name)
{
    size_t i;

    for (i = 0; i < v->nclasses; i++)
        if (strcmp(v->classes[i].name, name) == 0)
            return &v->classes[i];
    return NULL;
}

static void
histogram_buckets_and_sums(void **state)
{
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    const struct waitstats_class *c;
    uint64_t cum = 0;
    size_t i;
    /* on a bound (le is inclusive), just past it, zero, and past 60 s */
    static const uint64_t vals[] = { 0, 500, 501, 1000, 999999, 1000000, 60000000,
                                     60000001, 90000000 };

    (void)state;
    config_with(&cfg, NULL, 0, 60000);
    ws = waitstats_new(&cfg);
    assert_non_null(ws);
    for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
        record1(ws, wait_sample("lock:order:1", vals[i], SAMPLE_OK), T0);
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_int_equal(v.nclasses, 1);
    c = find(&v, "lock:order:*");
    assert_non_null(c);
    assert_true(c->has_wait);
    assert_false(c->has_hold);
    assert_int_equal(c->wait[SAMPLE_OK].count, 9);
    assert_int_equal(c->wait[SAMPLE_OK].bucket[0], 2);        /* 0, 500 */
    assert_int_equal(c->wait[SAMPLE_OK].bucket[1], 2);        /* 501, 1000 */
    assert_int_equal(c->wait[SAMPLE_OK].bucket[10], 2);       /* <= 1 s */
    assert_int_equal(c->wait[SAMPLE_OK].bucket[15], 1);       /* <= 60 s */
    assert_int_equal(c->wait[SAMPLE_OK].bucket[16], 2);       /* +Inf only */
    for (i = 0; i <= WAITSTATS_NBOUNDS; i++) {
        cum += c->wait[SAMPLE_OK].bucket[i];
        if (i < WAITSTATS_NBOUNDS)
            assert_true(cum <= c->wait[SAMPLE_OK].count);
    }
    assert_int_equal(cum, c->wait[SAMPLE_OK].count);         /* +Inf == count */
    assert_true(c->wait[SAMPLE_OK].sum_us == 0 + 500 + 501 + 1000 + 999999 + 1000000 +
                60000000.0 + 60000001 + 90000000);
    assert_int_equal(v.received, 9);
    assert_int_equal(v.invalid, 0);
    waitstats_view_release(&v);
    waitstats_free(ws);

    /* the bounds table and its labels agree */
    for (i = 0; i < WAITSTATS_NBOUNDS; i++) {
        double le = strtod(waitstats_bounds_le[i], NULL);

        assert_true(le * 1e6 > (double)waitstats_bounds_us[i] - 0.5 &&
                    le * 1e6 < (double)waitstats_bounds_us[i] + 0.5);
        if (i > 0)
            assert_true(waitstats_bounds_us[i] > waitstats_bounds_us[i - 1]);
    }
}

static void
outcomes_and_holds_apart(void **state)
{
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    const struct waitstats_class *c;
    struct sample batch[6];

    (void)state;
    config_with(&cfg, NULL, 0, 60000);
    ws = waitstats_new(&cfg);
    batch[0] = wait_sample("lock:a", 10, SAMPLE_OK);
    batch[1] = wait_sample("lock:a", 20, SAMPLE_TIMEOUT);
    batch[2] = wait_sample("lock:a", 30, SAMPLE_TIMEOUT);
    batch[3] = wait_sample("lock:a", 40, SAMPLE_ERROR);
    batch[4] = hold_sample("lock:a", 50);
    batch[5] = hold_sample("lock:b", 60);
    /* one datagram: 6 valid, 2 malformed lines */
    waitstats_record(ws, batch, 6, 8, 2, T0);
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_int_equal(v.received, 8);
    assert_int_equal(v.invalid, 2);
    c = find(&v, "lock:a");
    assert_non_null(c);
    assert_int_equal(c->wait[SAMPLE_OK].count, 1);
    assert_int_equal(c->wait[SAMPLE_TIMEOUT].count, 2);
    assert_int_equal(c->wait[SAMPLE_ERROR].count, 1);
    assert_true(c->wait[SAMPLE_TIMEOUT].sum_us == 50.0);
    assert_int_equal(c->hold.count, 1);
    assert_true(c->hold.sum_us == 50.0);
    /* the window holds waits of every outcome, never holds */
    assert_int_equal(c->window_count, 4);
    c = find(&v, "lock:b");
    assert_non_null(c);
    assert_false(c->has_wait);
    assert_true(c->has_hold);
    assert_int_equal(c->window_count, 0);
    /* "other" had nothing: not reported */
    assert_null(find(&v, CLASS_OTHER));
    waitstats_view_release(&v);
    waitstats_free(ws);
}

static void
class_cap_folds_into_other(void **state)
{
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    const struct waitstats_class *c;
    char key[64];
    uint64_t total = 0;
    size_t i;
    int k;

    (void)state;
    config_with(&cfg, NULL, 0, 60000);
    ws = waitstats_new(&cfg);
    /* 250 classes, 3 samples each */
    for (k = 0; k < 3; k++)
        for (i = 0; i < 250; i++) {
            snprintf(key, sizeof(key), "svc%zu:lock:%d", i, 1000 + k);
            record1(ws, wait_sample(key, 100, SAMPLE_OK), T0);
        }
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    /* derived classes take at most WAITSTATS_DERIVED_MAX places */
    assert_int_equal(v.nclasses, WAITSTATS_DERIVED_MAX + 1);
    assert_non_null(find(&v, "svc0:lock:*"));
    assert_non_null(find(&v, "svc149:lock:*"));
    assert_null(find(&v, "svc150:lock:*"));
    c = find(&v, CLASS_OTHER);
    assert_non_null(c);
    assert_int_equal(c->wait[SAMPLE_OK].count, 100 * 3);
    assert_int_equal(v.class_overflowed, 100 * 3);
    for (i = 0; i < v.nclasses; i++)
        total += v.classes[i].wait[SAMPLE_OK].count;
    assert_int_equal(total, 750);
    assert_int_equal(v.received, 750);
    /* memory stays within the documented bound */
    assert_true(v.bytes <= 4096 + (CLASS_MAX + 1) * waitstats_class_bytes_max());
    waitstats_view_release(&v);
    /* lines of one refused key back to back: each one refused, counted */
    for (k = 0; k < 4; k++)
        record1(ws, wait_sample("svc200:lock:9", 100, SAMPLE_OK), T0);
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_int_equal(v.class_overflowed, 100 * 3 + 4);
    assert_int_equal(find(&v, CLASS_OTHER)->wait[SAMPLE_OK].count, 100 * 3 + 4);
    waitstats_view_release(&v);
    waitstats_free(ws);
}

static void
rules_and_reload(void **state)
{
    struct class_rule r1[] = { { "lock:order:*", "order" } };
    struct class_rule r2[] = { { "lock:order:*", "orders-v2" } };
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    const struct waitstats_class *c;

    (void)state;
    config_with(&cfg, r1, 1, 60000);
    ws = waitstats_new(&cfg);
    record1(ws, wait_sample("lock:order:77", 100, SAMPLE_OK), T0);
    record1(ws, wait_sample("lock:stock:12", 100, SAMPLE_OK), T0);
    record1(ws, wait_sample("lock:order:77", 100, SAMPLE_OK), T0);
    /* the copy is ours: the config's rules can go away; the key placed
     * last goes by the new rules too */
    config_with(&cfg, r2, 1, 60000);
    assert_int_equal(waitstats_configure(ws, &cfg), 0);
    record1(ws, wait_sample("lock:order:77", 100, SAMPLE_OK), T0);
    record1(ws, wait_sample("lock:order:78", 100, SAMPLE_OK), T0);
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_int_equal(v.nclasses, 3);
    c = find(&v, "order");
    assert_non_null(c);
    assert_int_equal(c->wait[SAMPLE_OK].count, 2);
    c = find(&v, "orders-v2");
    assert_non_null(c);
    assert_int_equal(c->wait[SAMPLE_OK].count, 2);
    assert_non_null(find(&v, "lock:stock:*"));
    /* same window: the window kept its samples */
    assert_int_equal(find(&v, "order")->window_count, 2);
    waitstats_view_release(&v);

    /* a new wait_window restarts the windows, keeps the histograms */
    config_with(&cfg, r2, 1, 120000);
    assert_int_equal(waitstats_configure(ws, &cfg), 0);
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_int_equal(v.window_ms, 120000);
    c = find(&v, "order");
    assert_int_equal(c->window_count, 0);
    assert_int_equal(c->wait[SAMPLE_OK].count, 2);
    waitstats_view_release(&v);
    waitstats_free(ws);
}

static void
class_names_are_valid_utf8(void **state)
{
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    char key[200];
    size_t i;

    (void)state;
    config_with(&cfg, NULL, 0, 60000);
    ws = waitstats_new(&cfg);
    /* two raw names that differ only in invalid bytes are one class */
    record1(ws, wait_sample("a\xff:1", 1, SAMPLE_OK), T0);
    record1(ws, wait_sample("a\xfe:2", 1, SAMPLE_OK), T0);
    /* four 30-byte segments of invalid bytes: a 123-byte class name that
     * grows to 363 bytes when sanitised, and must be cut back */
    memset(key, '\x80', sizeof(key));
    for (i = 30; i < 120; i += 31)
        key[i] = ':';
    {
        struct sample s = { .kind = SAMPLE_HOLD, .us = 1, .key = key, .keylen = 123 };

        record1(ws, s, T0);
    }
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_non_null(find(&v, "a\xef\xbf\xbd:*"));
    assert_int_equal(find(&v, "a\xef\xbf\xbd:*")->wait[SAMPLE_OK].count, 2);
    for (i = 0; i < v.nclasses; i++) {
        char check[KEYTEXT_SANITIZED_MAX(CLASS_NAME_MAX)];
        size_t n = strlen(v.classes[i].name);

        assert_true(n <= CLASS_NAME_MAX);
        /* sanitising again changes nothing: it is valid UTF-8 */
        assert_int_equal(keytext_sanitize(check, sizeof(check), v.classes[i].name, n), n);
        assert_string_equal(check, v.classes[i].name);
    }
    assert_int_equal(v.nclasses, 2);
    for (i = 0; i < v.nclasses; i++)
        if (strncmp(v.classes[i].name, "a", 1) != 0) {
            size_t n = strlen(v.classes[i].name);

            assert_true(n > 100);
            assert_string_equal(v.classes[i].name + n - 3, "...");
        }
    waitstats_view_release(&v);
    waitstats_free(ws);
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void
window_p99(void **state)
{
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    const struct waitstats_class *c;
    uint64_t vals[1000], sorted[1000], seed = 12345;
    double rel;
    size_t i;

    (void)state;
    config_with(&cfg, NULL, 0, 60000);
    ws = waitstats_new(&cfg);
    for (i = 0; i < 1000; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        vals[i] = 1000 + (seed >> 33) % 400000;
        /* spread over 50 s of the window, a sample every 50 ms */
        record1(ws, wait_sample("lock:job:9", vals[i],
                                i % 3 == 0 ? SAMPLE_TIMEOUT : SAMPLE_OK),
                T0 + (int64_t)i * 50);
    }
    memcpy(sorted, vals, sizeof(vals));
    qsort(sorted, 1000, sizeof(sorted[0]), cmp_u64);
    assert_int_equal(waitstats_view(ws, T0 + 50000, &v), 0);
    c = find(&v, "lock:job:*");
    assert_non_null(c);
    assert_int_equal(c->window_count, 1000);
    /* nearest rank: the 990th of 1000 */
    rel = (c->window_p99_us - (double)sorted[989]) / (double)sorted[989];
    assert_true(rel <= 0.01 + 1e-9 && rel >= -0.01 - 1e-9);
    waitstats_view_release(&v);

    /* 70 s later the first slices have left the window */
    assert_int_equal(waitstats_view(ws, T0 + 70000, &v), 0);
    c = find(&v, "lock:job:*");
    assert_true(c->window_count < 1000 && c->window_count > 0);
    waitstats_view_release(&v);
    /* and long after, the window is empty but the class and its
     * histograms stay */
    assert_int_equal(waitstats_view(ws, T0 + 3600000, &v), 0);
    c = find(&v, "lock:job:*");
    assert_non_null(c);
    assert_int_equal(c->window_count, 0);
    assert_int_equal(c->wait[SAMPLE_OK].count + c->wait[SAMPLE_TIMEOUT].count, 1000);
    waitstats_view_release(&v);
    waitstats_free(ws);
}

/* --- a writer and readers racing ------------------------------------------ */

struct race {
    struct waitstats *ws;
    int stop;
    pthread_mutex_t mu;
    int failures;
};

static void *
writer(void *arg)
{
    struct race *r = arg;
    struct sample batch[8];
    char keys[8][32];
    int i, j;

    for (i = 0; i < 20000; i++) {
        for (j = 0; j < 8; j++) {
            snprintf(keys[j], sizeof(keys[j]), "w%d:lock:%d", (i + j) % 300, i);
            batch[j] = j % 4 == 3 ? hold_sample(keys[j], (uint64_t)(i + j))
                                  : wait_sample(keys[j], (uint64_t)(i * j), (enum sample_outcome)(j % 3));
        }
        waitstats_record(r->ws, batch, 8, 11, 3, T0 + i);
    }
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static void *
reader(void *arg)
{
    struct race *r = arg;
    struct waitstats_view v;
    int stop = 0;

    while (!stop) {
        uint64_t valid = 0;
        size_t i, o;

        pthread_mutex_lock(&r->mu);
        stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (waitstats_view(r->ws, T0 + 10000, &v) == -1)
            continue;
        for (i = 0; i < v.nclasses; i++) {
            for (o = 0; o < SAMPLE_OUTCOMES; o++)
                valid += v.classes[i].wait[o].count;
            valid += v.classes[i].hold.count;
        }
        /* every line is a valid sample or an invalid one, at every instant */
        if (v.received != valid + v.invalid) {
            pthread_mutex_lock(&r->mu);
            r->failures++;
            pthread_mutex_unlock(&r->mu);
        }
        waitstats_view_release(&v);
    }
    return NULL;
}

static void
concurrent_views_are_consistent(void **state)
{
    struct config cfg;
    struct race r;
    struct waitstats_view v;
    pthread_t w, rd[2];

    (void)state;
    config_with(&cfg, NULL, 0, 60000);
    memset(&r, 0, sizeof(r));
    pthread_mutex_init(&r.mu, NULL);
    r.ws = waitstats_new(&cfg);
    assert_int_equal(pthread_create(&w, NULL, writer, &r), 0);
    assert_int_equal(pthread_create(&rd[0], NULL, reader, &r), 0);
    assert_int_equal(pthread_create(&rd[1], NULL, reader, &r), 0);
    pthread_join(w, NULL);
    pthread_join(rd[0], NULL);
    pthread_join(rd[1], NULL);
    assert_int_equal(r.failures, 0);
    assert_int_equal(waitstats_view(r.ws, T0 + 20000, &v), 0);
    assert_int_equal(v.received, 20000 * 11);
    assert_int_equal(v.invalid, 20000 * 3);
    assert_int_equal(v.nclasses, WAITSTATS_DERIVED_MAX + 1);
    waitstats_view_release(&v);
    waitstats_free(r.ws);
    pthread_mutex_destroy(&r.mu);
}


static struct sample_source
source(unsigned char last)
{
    struct sample_source src = { .family = 2 /* AF_INET */, .addr = { 10, 0, 0, last } };

    return src;
}

static void
record_from(struct waitstats *ws, unsigned char who, const char *key)
{
    struct sample_source src = source(who);
    struct sample s = wait_sample(key, 100, SAMPLE_OK);

    waitstats_record_from(ws, &src, &s, 1, 1, 0, T0);
}

/* Issue 25: one source cannot fill the table, nor push a configured class
 * into "other"; other sources keep their own budgets. */
static void
class_budget_per_source(void **state)
{
    struct class_rule rules[] = { { .glob = (char *)"pay:*", .name = (char *)"payments" } };
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    char key[64];
    size_t i;

    (void)state;
    config_with(&cfg, rules, 1, 60000);
    ws = waitstats_new(&cfg);
    assert_non_null(ws);
    for (i = 0; i < 10000; i++) {
        snprintf(key, sizeof(key), "spoof%zu:lock", i);
        record_from(ws, 66, key);
    }
    /* the configured class still gets its own series, from anyone */
    record_from(ws, 66, "pay:1001");
    record_from(ws, 7, "pay:1002");
    /* another source still has its budget */
    record_from(ws, 7, "orders:1");
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_non_null(find(&v, "payments"));
    assert_int_equal(find(&v, "payments")->wait[SAMPLE_OK].count, 2);
    assert_non_null(find(&v, "orders:*"));
    assert_non_null(find(&v, "spoof31:lock"));
    assert_null(find(&v, "spoof32:lock"));
    assert_int_equal(find(&v, CLASS_OTHER)->wait[SAMPLE_OK].count, 10000 - 32);
    assert_int_equal(v.class_overflowed, 10000 - 32);
    assert_int_equal(v.sources, 2);
    assert_int_equal(v.sources_over_budget, 1);
    /* 32 + orders + payments + other */
    assert_int_equal(v.nclasses, 32 + 3);
    waitstats_view_release(&v);

    /* many sources: the derived places run out at 150, never the
     * configured ones; a rule added by a reload still finds a place */
    for (i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "many%zu:lock", i);
        record_from(ws, (unsigned char)(100 + i % 50), key);
    }
    {
        struct class_rule more[] = {
            { .glob = (char *)"pay:*", .name = (char *)"payments" },
            { .glob = (char *)"inv:*", .name = (char *)"inventory" },
        };

        config_with(&cfg, more, 2, 60000);
        assert_int_equal(waitstats_configure(ws, &cfg), 0);
    }
    record_from(ws, 66, "inv:9");
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_non_null(find(&v, "inventory"));
    assert_int_equal(v.nclasses, WAITSTATS_DERIVED_MAX + 3);
    waitstats_view_release(&v);
    waitstats_free(ws);
}

/* More than WAITSTATS_SOURCES senders share one more budget. */
static void
sources_table_is_bounded(void **state)
{
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    struct sample_source src;
    struct sample s;
    char key[64];
    size_t i;

    (void)state;
    config_with(&cfg, NULL, 0, 60000);
    ws = waitstats_new(&cfg);
    for (i = 0; i < WAITSTATS_SOURCES + 40; i++) {
        src = source(0);
        src.addr[2] = (unsigned char)(i >> 8);
        src.addr[3] = (unsigned char)i;
        /* sources past the table: the same key each, so one shared class */
        snprintf(key, sizeof(key), i < WAITSTATS_SOURCES ? "x:k" : "late%zu:k", i);
        s = wait_sample(key, 1, SAMPLE_OK);
        waitstats_record_from(ws, &src, &s, 1, 1, 0, T0);
    }
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_int_equal(v.sources, WAITSTATS_SOURCES);
    /* the 40 late sources shared a budget of 32 */
    assert_int_equal(v.class_overflowed, 40 - 32);
    assert_int_equal(v.sources_over_budget, 1);
    waitstats_view_release(&v);
    waitstats_free(ws);
}

static void
count_waiting(const struct waiting_pair *p, void *arg)
{
    size_t *n = arg;

    *n += p->waiting;
}

/* The pair a waiting_each callback saw last, and how many. */
struct seen_pair {
    size_t n;
    struct waiting_pair last;
};

static void
see_pair(const struct waiting_pair *p, void *arg)
{
    struct seen_pair *sp = arg;

    sp->n++;
    sp->last = *p;
}

/* A 7-field wait is the acquire's waiting end and its wait: one line, the
 * same counts as the two lines it stands for. */
static void
wait_with_owner_is_also_its_waiting_end(void **state)
{
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    const struct waitstats_class *c;
    struct seen_pair sp = { 0 };
    struct sample s[3];

    (void)state;
    config_with(&cfg, NULL, 0, 60000);
    ws = waitstats_new(&cfg);
    memset(s, 0, sizeof(s));
    s[0].kind = SAMPLE_WAITING;
    s[0].start = true;
    s[0].key = "lock:a:1";
    s[0].keylen = 8;
    s[0].owner = "o/1";
    s[0].ownerlen = 3;
    s[0].holder = "tok";
    s[0].holderlen = 3;
    s[1] = s[0];
    s[1].kind = SAMPLE_WAIT;
    s[1].start = false;
    s[1].us = 2500;
    s[1].outcome = SAMPLE_OK;
    waitstats_record(ws, s, 2, 2, 0, T0);
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_int_equal(v.events[WS_EVENT_WAITING_START], 1);
    assert_int_equal(v.events[WS_EVENT_WAITING_END], 1);
    assert_int_equal(v.waiting_now, 0);
    c = find(&v, "lock:a:*");
    assert_non_null(c);
    assert_int_equal(c->wait[SAMPLE_OK].count, 1);
    assert_true(c->wait[SAMPLE_OK].sum_us == 2500);
    assert_int_equal(v.received, 2);
    waitstats_view_release(&v);
    /* the pair is kept, holding tok, until its hold line */
    waitstats_waiting_each(ws, see_pair, &sp);
    assert_int_equal(sp.n, 1);
    assert_false(sp.last.waiting);
    assert_int_equal(sp.last.holderlen, 3);
    assert_memory_equal(sp.last.holder, "tok", 3);
    s[2] = s[0];
    s[2].kind = SAMPLE_HOLD;
    s[2].start = false;
    s[2].us = 100;
    waitstats_record(ws, &s[2], 1, 1, 0, T0);
    sp.n = 0;
    waitstats_waiting_each(ws, see_pair, &sp);
    assert_int_equal(sp.n, 0);
    /* without an owner: a wait, no event */
    s[1].ownerlen = 0;
    s[1].holderlen = 0;
    waitstats_record(ws, &s[1], 1, 1, 0, T0);
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_int_equal(v.events[WS_EVENT_WAITING_END], 1);
    assert_int_equal(find(&v, "lock:a:*")->wait[SAMPLE_OK].count, 2);
    waitstats_view_release(&v);
    waitstats_free(ws);
}

static void
events_and_rejects(void **state)
{
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    struct sample s[4];
    unsigned char key[LW1_KEY_MAX];
    size_t keylen = 99;
    uint64_t gen = 0;

    (void)state;
    config_with(&cfg, NULL, 0, 60000);
    ws = waitstats_new(&cfg);
    /* no key: nothing to copy, no rejected family */
    assert_false(waitstats_samples_key(ws, &gen, key, &keylen));
    memset(s, 0, sizeof(s));
    s[0].kind = SAMPLE_WAITING;
    s[0].start = true;
    s[0].key = "lock:a";
    s[0].keylen = 6;
    s[0].owner = "o/1";
    s[0].ownerlen = 3;
    s[1] = s[0];
    s[1].owner = "o/2";
    s[2] = s[0];
    s[2].kind = SAMPLE_LOST;
    s[2].reason = SAMPLE_LOST_RENEWAL;
    s[3] = s[2];
    s[3].reason = SAMPLE_LOST_EXPIRED;
    waitstats_record(ws, s, 4, 5, 1, T0);
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_int_equal(v.events[WS_EVENT_WAITING_START], 2);
    assert_int_equal(v.events[WS_EVENT_WAITING_END], 0);
    assert_int_equal(v.events[WS_EVENT_LOST_RENEWAL], 1);
    assert_int_equal(v.events[WS_EVENT_LOST_EXPIRED], 1);
    assert_int_equal(v.waiting_now, 2);
    {
        size_t nw = 0;

        waitstats_waiting_each(ws, count_waiting, &nw);
        assert_int_equal(nw, 2);
    }
    assert_int_equal(v.nclasses, 0);        /* events make no class */
    assert_int_equal(v.received, 5);        /* = invalid + histograms + events */
    assert_false(v.keyed);
    waitstats_view_release(&v);

    /* a key arrives by reload: copied once per change */
    cfg.samples_key = (char *)"0123456789abcdef0123";
    assert_int_equal(waitstats_configure(ws, &cfg), 0);
    assert_true(waitstats_samples_key(ws, &gen, key, &keylen));
    assert_int_equal(keylen, 20);
    assert_memory_equal(key, "0123456789abcdef0123", 20);
    assert_false(waitstats_samples_key(ws, &gen, key, &keylen));
    assert_int_equal(waitstats_configure(ws, &cfg), 0);     /* same key: no change */
    assert_false(waitstats_samples_key(ws, &gen, key, &keylen));
    waitstats_reject(ws, SAMPLEAUTH_BAD_MAC);
    waitstats_reject(ws, SAMPLEAUTH_BAD_MAC);
    waitstats_reject(ws, SAMPLEAUTH_UNSIGNED);
    waitstats_reject(ws, SAMPLEAUTH_OK);                    /* not a reason: ignored */
    assert_int_equal(waitstats_view(ws, T0, &v), 0);
    assert_true(v.keyed);
    assert_int_equal(v.rejected[SAMPLEAUTH_BAD_MAC], 2);
    assert_int_equal(v.rejected[SAMPLEAUTH_UNSIGNED], 1);
    assert_int_equal(v.received, 5);
    waitstats_view_release(&v);
    /* and goes away again */
    cfg.samples_key = NULL;
    assert_int_equal(waitstats_configure(ws, &cfg), 0);
    assert_true(waitstats_samples_key(ws, &gen, key, &keylen));
    assert_int_equal(keylen, 0);
    waitstats_free(ws);
}

/* A holder's line after the agent saw its lease run out: its class's
 * overrun histogram and a lease_overrun event; a lost line with no expiry
 * seen: its own overrun, and a lease_lost event; a 4-field hold (no
 * holder) and another holder's line: nothing. */
static void
lease_overruns_into_the_class_histogram(void **state)
{
    struct config cfg;
    struct waitstats *ws;
    struct waitstats_view v;
    struct lease_end e;
    struct sample s[4];
    const struct waitstats_class *c;
    int64_t now;

    (void)state;
    lease_reset();
    events_reset();
    config_with(&cfg, NULL, 0, 60000);
    ws = waitstats_new(&cfg);
    memset(&e, 0, sizeof(e));
    e.row = lease_row("main", "lock:a:*");
    e.key_hash = keyhash("lock:a:1", 8);
    e.holder_hash = (uint32_t)keyhash("tok-1", 5);
    e.expires_ms = clock_now_ms() - 2000;
    e.first_seen_ms = e.expires_ms - 10000;
    lease_expired(&e);
    memset(s, 0, sizeof(s));
    s[0] = hold_sample("lock:a:1", 1000);           /* no owner, no holder */
    s[1] = s[0];
    s[1].owner = "web/1";
    s[1].ownerlen = 5;
    s[1].holder = "tok-2";                          /* another holder */
    s[1].holderlen = 5;
    s[2] = s[1];
    s[2].holder = "tok-1";                          /* the one whose lease ran out */
    s[3] = s[2];
    s[3].kind = SAMPLE_LOST;
    s[3].key = "lock:b:1";
    s[3].reason = SAMPLE_LOST_EXPIRED;
    s[3].us = 5000000;
    s[3].overrun_known = true;
    s[3].overrun_us = 750000;
    /* now, as the ingest passes it: the lines are timed on the Unix clock
     * from it, against the lease that ran out 2 s ago */
    now = clock_mono_ms();
    waitstats_record(ws, s, 4, 4, 0, now);
    assert_int_equal(waitstats_view(ws, now, &v), 0);
    c = find(&v, "lock:a:*");
    assert_non_null(c);
    assert_true(c->has_overrun);
    assert_int_equal(c->overrun.count, 1);
    assert_true(c->overrun.sum_us >= 2000000.0 && c->overrun.sum_us < 3000000.0);
    c = find(&v, "lock:b:*");
    assert_non_null(c);
    assert_int_equal(c->overrun.count, 1);
    assert_true(c->overrun.sum_us == 750000.0);
    assert_false(c->has_hold);
    waitstats_view_release(&v);
    /* one for the lease the agent saw run out, one for the lost line's own
     * overrun (an expiry it did not see) */
    assert_int_equal(events_total(EVENT_LEASE_OVERRUN), 2);
    assert_int_equal(events_total(EVENT_LEASE_LOST), 1);
    waitstats_free(ws);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(histogram_buckets_and_sums),
        cmocka_unit_test(outcomes_and_holds_apart),
        cmocka_unit_test(class_cap_folds_into_other),
        cmocka_unit_test(rules_and_reload),
        cmocka_unit_test(class_names_are_valid_utf8),
        cmocka_unit_test(window_p99),
        cmocka_unit_test(concurrent_views_are_consistent),
        cmocka_unit_test(class_budget_per_source),
        cmocka_unit_test(sources_table_is_bounded),
        cmocka_unit_test(events_and_rejects),
        cmocka_unit_test(wait_with_owner_is_also_its_waiting_end),
        cmocka_unit_test(lease_overruns_into_the_class_histogram),
    };

    return cmocka_run_group_tests_name("waitstats", tests, NULL, NULL);
}
