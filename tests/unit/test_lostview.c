/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lostview.c - the pure half of "locks lost at a failover": which
 * change of server is which cause, the holder comparison, and the
 * bounded oldest-first list of lost locks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/locks/lostview.h"
#include "common/keyhash.h"

static struct server_id
id(const char *run_id, long long flushes)
{
    struct server_id s;

    memset(&s, 0, sizeof(s));
    s.have = true;
    snprintf(s.run_id, sizeof(s.run_id), "%s", run_id);
    s.flushes = flushes;
    return s;
}

static void
causes(void **state)
{
    struct server_id a = id("aaaa", 0), b = id("bbbb", 0), af = id("aaaa", 1), none;
    enum lost_cause c = LOST_FLUSH;

    (void)state;
    memset(&none, 0, sizeof(none));
    assert_false(lost_server_changed(&a, "h:1", &a, "h:1", &c));
    assert_true(lost_server_changed(&a, "h:1", &b, "h:1", &c));
    assert_int_equal(c, LOST_RESTART);
    assert_true(lost_server_changed(&a, "h:1", &b, "h:2", &c));
    assert_int_equal(c, LOST_FAILOVER);
    assert_true(lost_server_changed(&a, "h:1", &af, "h:1", &c));
    assert_int_equal(c, LOST_FLUSH);
    /* the same process with another's data (REPLICAOF's full sync), or
     * promoted: a failover; a replication ID unknown on either side is none */
    {
        struct server_id r1 = a, r2 = a;

        snprintf(r1.replid, sizeof(r1.replid), "1111");
        snprintf(r2.replid, sizeof(r2.replid), "2222");
        /* a primary whose first replica attached: a new ID, no data change */
        snprintf(r2.replid2, sizeof(r2.replid2), "0000");
        assert_false(lost_server_changed(&r1, "h:1", &r2, "h:1", &c));
        r2.replica = true;                  /* a full sync from a primary */
        assert_true(lost_server_changed(&r1, "h:1", &r2, "h:1", &c));
        assert_int_equal(c, LOST_FAILOVER);
        r2.replica = false;                 /* and promoted since */
        snprintf(r2.replid2, sizeof(r2.replid2), "9999");
        assert_true(lost_server_changed(&r1, "h:1", &r2, "h:1", &c));
        snprintf(r2.replid2, sizeof(r2.replid2), "1111");  /* from its own */
        assert_false(lost_server_changed(&r1, "h:1", &r2, "h:1", &c));
        snprintf(r2.replid2, sizeof(r2.replid2), "%s", "");
        assert_false(lost_server_changed(&a, "h:1", &r2, "h:1", &c));
        assert_false(lost_server_changed(&r1, "h:1", &r1, "h:1", &c));
        /* CONFIG RESETSTAT: INFO's own calls went down, the flush counts
         * (0 before, 0 after) say nothing: counted as a flush */
        r1.info_calls = 40;
        r2 = r1;
        r2.info_calls = 3;
        assert_true(lost_server_changed(&r1, "h:1", &r2, "h:1", &c));
        assert_int_equal(c, LOST_FLUSH);
        r2.info_calls = 41;
        assert_false(lost_server_changed(&r1, "h:1", &r2, "h:1", &c));
        /* SWAPDB: its own cause; with a flush too, the flush */
        r2.swaps = r1.swaps + 1;
        assert_true(lost_server_changed(&r1, "h:1", &r2, "h:1", &c));
        assert_int_equal(c, LOST_SWAPDB);
        r2.flushes = r1.flushes + 1;
        assert_true(lost_server_changed(&r1, "h:1", &r2, "h:1", &c));
        assert_int_equal(c, LOST_FLUSH);
    }
    /* the same server reached at another address is no change */
    assert_false(lost_server_changed(&a, "h:1", &a, "h:2", &c));
    /* INFO refused on either side: nothing is claimed */
    assert_false(lost_server_changed(&none, "h:1", &b, "h:2", &c));
    assert_false(lost_server_changed(&a, "h:1", &none, "h:2", &c));
    assert_int_equal(lost_cause_worse(LOST_FLUSH, LOST_RESTART), LOST_RESTART);
    assert_int_equal(lost_cause_worse(LOST_FAILOVER, LOST_RESTART), LOST_FAILOVER);
    assert_string_equal(lost_cause_name(LOST_RESTART), "restart");
    assert_string_equal(lost_cause_name(LOST_FAILOVER), "failover");
    assert_string_equal(lost_cause_name(LOST_FLUSH), "flush");
    assert_string_equal(lost_cause_name(LOST_SWAPDB), "swapdb");
    assert_int_equal(lost_cause_worse(LOST_SWAPDB, LOST_FLUSH), LOST_FLUSH);
    {
        const char *prep;

        assert_string_equal(lost_cause_words(LOST_SWAPDB, &prep), "a SWAPDB");
        assert_string_equal(prep, "on");
        assert_string_equal(lost_cause_words(LOST_FAILOVER, &prep), "a failover");
        assert_string_equal(prep, "to");
        assert_string_equal(lost_cause_words(LOST_FLUSH, &prep), "a flush");
        assert_string_equal(prep, "of");
    }
}

static struct snap_lock
lock_of(const char *key, struct snap_holder *h, const char *holder, int64_t first_seen)
{
    struct snap_lock l;

    memset(&l, 0, sizeof(l));
    l.key = key;
    l.key_len = (uint32_t)strlen(key);
    h->id = holder;
    h->id_len = (uint16_t)strlen(holder);
    h->truncated = 0;
    h->count = 1;
    l.holders = h;
    l.nholders = 1;
    l.holders_total = 1;
    l.first_seen_ms = first_seen;
    return l;
}

static void
same_holder(void **state)
{
    struct snap_holder h;
    struct snap_lock l = lock_of("k", &h, "tok-1", 0);

    (void)state;
    assert_true(lost_same_holder(&l, (uint32_t)keyhash("tok-1", 5)));
    assert_false(lost_same_holder(&l, (uint32_t)keyhash("tok-2", 5)));
    h.truncated = 1;            /* cut by the read caps: nothing says otherwise */
    assert_true(lost_same_holder(&l, (uint32_t)keyhash("tok-2", 5)));
    l.nholders = 0;
    assert_true(lost_same_holder(&l, 12345));
}

/* More lost than named: the oldest holds are named, oldest first, and
 * every one is counted. */
static void
oldest_first_bounded(void **state)
{
    struct snap_lost lo;
    struct snap_holder h;
    char key[32], holder[32];
    size_t i, n = LOST_LIST_MAX + 15;

    (void)state;
    memset(&lo, 0, sizeof(lo));
    for (i = 0; i < n; i++) {
        /* ages shuffled: key i held since (i * 7) % n */
        int64_t since = (int64_t)((i * 7) % n);
        struct snap_lock l;

        snprintf(key, sizeof(key), "lock:%lld", (long long)since);
        snprintf(holder, sizeof(holder), "tok-%lld", (long long)since);
        l = lock_of(key, &h, holder, since);
        lost_note(&lo, &l, since == 3);
    }
    assert_int_equal(lo.count, n);
    assert_int_equal(lo.nlisted, LOST_LIST_MAX);
    for (i = 0; i < LOST_LIST_MAX; i++) {
        snprintf(key, sizeof(key), "lock:%zu", i);
        snprintf(holder, sizeof(holder), "tok-%zu", i);
        assert_int_equal(lo.listed[i].first_seen_ms, (int64_t)i);
        assert_int_equal(lo.listed[i].key_len, strlen(key));
        assert_memory_equal(lo.listed[i].key, key, strlen(key));
        assert_memory_equal(lo.listed[i].holder, holder, strlen(holder));
        assert_int_equal(lo.listed[i].taken, i == 3);
    }
}

/* A key longer than the list keeps is cut and says so. */
static void
long_key_cut(void **state)
{
    static char key[LOST_KEY_MAX * 2 + 1];
    struct snap_lost lo;
    struct snap_holder h;
    struct snap_lock l;

    (void)state;
    memset(key, 'k', sizeof(key) - 1);
    memset(&lo, 0, sizeof(lo));
    l = lock_of(key, &h, "tok", 1);
    lost_note(&lo, &l, false);
    assert_int_equal(lo.listed[0].key_len, LOST_KEY_MAX);
    assert_true(lo.listed[0].key_cut);
    assert_false(lo.listed[0].holder_cut);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(causes),
        cmocka_unit_test(same_holder),
        cmocka_unit_test(oldest_first_bounded),
        cmocka_unit_test(long_key_cut),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
