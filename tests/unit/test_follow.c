/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_follow.c - follow mode's pure pieces: the notify-keyspace-events
 * check and the keyspace channel parser (collectors/redis/ksub.h), the
 * coalescing, capped key map of the pending set (collectors/follow/keymap.h),
 * and the freshness check's reading of INFO, Redis 6's and 7's, and of a
 * replica's link to its primary (collectors/follow/freshness.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/redis/ksub.h"
#include "collectors/follow/freshness.h"
#include "collectors/follow/keymap.h"

static void
flags_cover(void **state)
{
    static const struct {
        const char *flags;
        int ok;
        const char *missing;
    } cases[] = {
        { "Kg$lshzxet", 1, "" },
        { "Kg$lhzxe", 0, "st" },        /* sets and streams under a pattern unseen */
        { "Kg$hxest", 0, "lz" },        /* zset locks and list helpers unseen */
        { "KA", 1, "" },
        { "AK", 1, "" },
        { "KEA", 1, "" },
        { "Kgxe$hzlts", 1, "" },
        { "KA$", 1, "" },
        { "", 0, "Kg$lshzxet" },
        { "A", 0, "K" },                /* keyevent-only would need E; K is a must */
        { "EA", 0, "K" },
        { "Kg$lshzt", 0, "xe" },
        { "Kgx", 0, "$lshzet" },
        { "K$lshzxet", 0, "g" },        /* no del, expire, persist, rename */
        { "gKlshzxet", 0, "$" },
        { "Klszt", 0, "g$hxe" },
    };
    char missing[16];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int ok = ksub_flags_cover(cases[i].flags, strlen(cases[i].flags), missing,
                                  sizeof(missing));

        if (ok != cases[i].ok || strcmp(missing, cases[i].missing) != 0)
            fail_msg("flags \"%s\": %d missing \"%s\", want %d \"%s\"", cases[i].flags, ok,
                     missing, cases[i].ok, cases[i].missing);
    }
    /* a short buffer is cut, still NUL-terminated */
    assert_false(ksub_flags_cover("", 0, missing, 3));
    assert_string_equal(missing, "Kg");
}

/* An event's class: what a setting lacking a class still sends ("Kgx":
 * the "expire" of a SET PX, never the "set"), so the proof of a
 * setting the agent cannot read is made class by class. */
static void
event_classes(void **state)
{
    char names[128];

    (void)state;
    assert_int_equal(ksub_event_class("set", 3), KSUB_CLASS('$'));
    assert_int_equal(ksub_event_class("setrange", 8), KSUB_CLASS('$'));
    assert_int_equal(ksub_event_class("expire", 6), KSUB_CLASS('g'));
    assert_int_equal(ksub_event_class("del", 3), KSUB_CLASS('g'));
    assert_int_equal(ksub_event_class("hincrby", 7), KSUB_CLASS('h'));
    assert_int_equal(ksub_event_class("hset", 4), KSUB_CLASS('h'));
    assert_int_equal(ksub_event_class("zadd", 4), KSUB_CLASS('z'));
    assert_int_equal(ksub_event_class("lpush", 5), KSUB_CLASS('l'));
    assert_int_equal(ksub_event_class("expired", 7), KSUB_CLASS('x'));
    assert_int_equal(ksub_event_class("evicted", 7), KSUB_CLASS('e'));
    assert_int_equal(ksub_event_class("xgroup-create", 13), KSUB_CLASS('t'));
    /* a word inside another is no match; nor a part of a list, nor junk */
    assert_int_equal(ksub_event_class("se", 2), 0);
    assert_int_equal(ksub_event_class("set del", 7), 0);
    assert_int_equal(ksub_event_class("", 0), 0);
    assert_int_equal(ksub_event_class("sett", 4), 0);
    assert_int_equal(ksub_event_class("hset", 3), 0);     /* "hse" */
    ksub_class_names(KSUB_CLASS('$') | KSUB_CLASS('h'), names, sizeof(names));
    assert_string_equal(names, "'$' (string), 'h' (hash)");
    ksub_class_names(0, names, sizeof(names));
    assert_string_equal(names, "");
    ksub_class_names(KSUB_CLASS('g'), names, 6);
    assert_string_equal(names, "'g' (");
}

static void
channel_key(void **state)
{
    const char *key;
    size_t len;
    static const char bin[] = "__keyspace@0__:lock:\0x\n";

    (void)state;
    assert_int_equal(ksub_channel_key("__keyspace@0__:lock:a", 21, 0, &key, &len), 0);
    assert_int_equal(len, 6);
    assert_memory_equal(key, "lock:a", 6);
    assert_int_equal(ksub_channel_key("__keyspace@12__:x", 17, 12, &key, &len), 0);
    assert_int_equal(len, 1);
    assert_int_equal(key[0], 'x');
    /* a binary key is kept whole */
    assert_int_equal(ksub_channel_key(bin, sizeof(bin) - 1, 0, &key, &len), 0);
    assert_int_equal(len, 8);
    assert_memory_equal(key, "lock:\0x\n", 8);
    /* an empty key is still a key */
    assert_int_equal(ksub_channel_key("__keyspace@0__:", 15, 0, &key, &len), 0);
    assert_int_equal(len, 0);
    /* another database, the keyevent channel, garbage */
    assert_int_equal(ksub_channel_key("__keyspace@1__:lock:a", 21, 0, &key, &len), -1);
    assert_int_equal(ksub_channel_key("__keyevent@0__:set", 18, 0, &key, &len), -1);
    assert_int_equal(ksub_channel_key("__keyspace@__:a", 15, 0, &key, &len), -1);
    assert_int_equal(ksub_channel_key("__keyspace@0_:a", 15, 0, &key, &len), -1);
    assert_int_equal(ksub_channel_key("__keyspace@0", 12, 0, &key, &len), -1);
    assert_int_equal(ksub_channel_key("__keyspace@99999999__:a", 23, 0, &key, &len), -1);
}

static void
keymap_coalesces(void **state)
{
    struct keymap *m = keymap_new(0, 0);
    int64_t stamp;
    void *v, *old;

    (void)state;
    assert_non_null(m);
    assert_int_equal(keymap_put(m, "lock:a", 6, NULL, 10, NULL), 1);
    /* a burst for one key is one entry with the first stamp */
    assert_int_equal(keymap_put(m, "lock:a", 6, NULL, 20, NULL), 0);
    assert_int_equal(keymap_put(m, "lock:a", 6, (void *)m, 30, &old), 0);
    assert_null(old);
    assert_int_equal(keymap_count(m), 1);
    assert_true(keymap_get(m, "lock:a", 6, &v, &stamp));
    assert_int_equal(stamp, 10);
    assert_ptr_equal(v, m);
    /* keys differ by every byte, length included */
    assert_int_equal(keymap_put(m, "lock:a\0", 7, NULL, 1, NULL), 1);
    assert_int_equal(keymap_put(m, "lock:", 5, NULL, 1, NULL), 1);
    assert_int_equal(keymap_count(m), 3);
    assert_true(keymap_del(m, "lock:a", 6, &v));
    assert_ptr_equal(v, m);
    assert_false(keymap_get(m, "lock:a", 6, NULL, NULL));
    assert_false(keymap_del(m, "lock:a", 6, NULL));
    assert_true(keymap_get(m, "lock:a\0", 7, NULL, NULL));
    assert_int_equal(keymap_count(m), 2);
    keymap_free(m, NULL);
}

static void
keymap_cap(void **state)
{
    struct keymap *m = keymap_new(100, 0);
    char key[32];
    int i;

    (void)state;
    for (i = 0; i < 100; i++) {
        int n = snprintf(key, sizeof(key), "lock:%d", i);

        assert_int_equal(keymap_put(m, key, (size_t)n, NULL, i, NULL), 1);
    }
    errno = 0;
    assert_int_equal(keymap_put(m, "lock:new", 8, NULL, 0, NULL), -1);
    assert_int_equal(errno, ENOSPC);
    assert_int_equal(keymap_count(m), 100);
    /* a key already there is still coalesced at the cap */
    assert_int_equal(keymap_put(m, "lock:7", 6, NULL, 0, NULL), 0);
    assert_true(keymap_del(m, "lock:7", 6, NULL));
    assert_int_equal(keymap_put(m, "lock:new", 8, NULL, 0, NULL), 1);
    keymap_free(m, NULL);
}

/* The byte cap: long keys fill the map before its key cap, a key longer
 * than the whole cap never goes in, and a delete gives its bytes back. */
static void
keymap_byte_cap(void **state)
{
    enum { LONG = 1000, CAP = 4 * (LONG + KEYMAP_ENTRY_COST) };
    struct keymap *m = keymap_new(100, CAP);
    char key[CAP + 1];
    int i;

    (void)state;
    memset(key, 'k', sizeof(key));
    for (i = 0; i < 4; i++) {
        key[0] = (char)('a' + i);
        assert_int_equal(keymap_put(m, key, LONG, NULL, i, NULL), 1);
    }
    assert_int_equal(keymap_bytes(m), (size_t)CAP);
    errno = 0;
    assert_int_equal(keymap_put(m, "lock:x", 6, NULL, 0, NULL), -1);
    assert_int_equal(errno, ENOSPC);
    /* a key already there is still coalesced at the cap */
    key[0] = 'a';
    assert_int_equal(keymap_put(m, key, LONG, NULL, 9, NULL), 0);
    assert_true(keymap_del(m, key, LONG, NULL));
    assert_int_equal(keymap_bytes(m), (size_t)(CAP - LONG - KEYMAP_ENTRY_COST));
    assert_int_equal(keymap_put(m, "lock:x", 6, NULL, 0, NULL), 1);
    /* one key over the whole cap: refused, nothing changed */
    errno = 0;
    assert_int_equal(keymap_put(m, key, sizeof(key), NULL, 0, NULL), -1);
    assert_int_equal(errno, ENOSPC);
    assert_int_equal(keymap_count(m), 4);
    keymap_free(m, NULL);
}

/* The number after "k" in a key of keymap_churn (len bytes). */
static int
key_number(const char *k, size_t len)
{
    int v = 0;
    size_t i;

    for (i = 1; i < len; i++)
        v = v * 10 + (k[i] - '0');
    return v;
}

/* Churn: many puts and deletes keep every survivor findable (the
 * backward-shift deletion), nothing deleted comes back, and an iteration
 * sees each key once. */
static void
keymap_churn(void **state)
{
    enum { N = 20000 };
    struct keymap *m = keymap_new(0, 0);
    char key[32], *expect, *seen;
    const char *k;
    size_t len, pos = 0, count = 0;
    int i, n;

    (void)state;
    expect = calloc(N, 1);
    seen = calloc(N, 1);
    assert_true(m != NULL && expect != NULL && seen != NULL);
    for (i = 0; i < N; i++) {
        n = snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(keymap_put(m, key, (size_t)n, NULL, 0, NULL), 1);
        expect[i] = 1;
        if (i % 3 == 0) {
            n = snprintf(key, sizeof(key), "k%d", i / 2);
            assert_int_equal(keymap_del(m, key, (size_t)n, NULL), expect[i / 2] == 1);
            expect[i / 2] = 0;
        }
    }
    while (keymap_next(m, &pos, &k, &len, NULL, NULL)) {
        int v = key_number(k, len);

        assert_true(v >= 0 && v < N);
        assert_int_equal(seen[v], 0);
        seen[v] = 1;
        count++;
    }
    assert_int_equal(count, keymap_count(m));
    for (i = 0; i < N; i++) {
        n = snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(seen[i], expect[i]);
        assert_int_equal(keymap_get(m, key, (size_t)n, NULL, NULL), expect[i] == 1);
    }
    free(expect);
    free(seen);
    keymap_free(m, NULL);
}

/* INFO as Redis 6.2 and 7.0 write it (trimmed). */
static const char info_server[] =
    "# Server\r\nredis_version:6.2.14\r\nrun_id:4f7c0c7e2d1b9a0e5f3c\r\ntcp_port:6379\r\n";
static const char stats6[] =
    "# Commandstats\r\ncmdstat_get:calls=9,usec=1,usec_per_call=0.11\r\n"
    "cmdstat_flushdb:calls=2,usec=5,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n"
    "cmdstat_config:calls=7,usec=70,usec_per_call=10.00,rejected_calls=1,failed_calls=0\r\n";
static const char stats7[] =
    "# Commandstats\r\ncmdstat_config|get:calls=40,usec=9,usec_per_call=0.2\r\n"
    "cmdstat_config|set:calls=3,usec=9,usec_per_call=3.0,rejected_calls=0\r\n"
    "cmdstat_swapdb:calls=1,usec=9,usec_per_call=9.0\r\n";
static const char keyspace[] =
    "# Keyspace\r\ndb0:keys=120,expires=3,avg_ttl=0\r\ndb1:keys=5,expires=0,avg_ttl=0\r\n";

static void
fresh_reads_info(void **state)
{
    struct fresh_state st;

    (void)state;
    memset(&st, 0, sizeof(st));
    fresh_parse(FRESH_SERVER, info_server, sizeof(info_server) - 1, 0, &st);
    assert_string_equal(st.run_id, "4f7c0c7e2d1b9a0e5f3c");
    fresh_parse(FRESH_COMMANDSTATS, stats6, sizeof(stats6) - 1, 0, &st);
    assert_int_equal(st.flushdb, 2);
    assert_int_equal(st.flushall, 0);
    assert_int_equal(st.config_any, 7);         /* Redis 6: every subcommand */
    assert_int_equal(st.config_set, 0);
    fresh_parse(FRESH_COMMANDSTATS, stats7, sizeof(stats7) - 1, 0, &st);
    assert_int_equal(st.config_set, 3);         /* Redis 7: config|set apart */
    assert_int_equal(st.config_any, 0);         /* and config|get is not it */
    assert_int_equal(st.swapdb, 1);
    fresh_parse(FRESH_KEYSPACE, keyspace, sizeof(keyspace) - 1, 1, &st);
    assert_int_equal(st.keys, 5);
    fresh_parse(FRESH_KEYSPACE, keyspace, sizeof(keyspace) - 1, 0, &st);
    assert_int_equal(st.keys, 120);
    fresh_parse(FRESH_KEYSPACE, keyspace, sizeof(keyspace) - 1, 2, &st);
    assert_int_equal(st.keys, 0);               /* an empty database has no line */
}

/* A reading of info_server, the commandstats and replication texts given
 * (repl NULL: none), 100 keys. */
static struct fresh_state
reading(const char *stats, size_t stats_len, const char *repl, size_t repl_len)
{
    struct fresh_state st;

    memset(&st, 0, sizeof(st));
    fresh_parse(FRESH_SERVER, info_server, sizeof(info_server) - 1, 0, &st);
    fresh_parse(FRESH_COMMANDSTATS, stats, stats_len, 0, &st);
    if (repl != NULL)
        fresh_parse(FRESH_REPLICATION, repl, repl_len, 0, &st);
    st.keys = 100;
    st.have = true;
    return st;
}

/* Redis 6: a CONFIG SET shows only as a call of config; it counts where
 * the agent cannot CONFIG GET, and not where it reads the setting itself
 * each check (its own reads count there). */
static void
fresh_redis6_config(void **state)
{
    struct fresh_state base = reading(stats6, sizeof(stats6) - 1, NULL, 0), now;
    char why[200];
    unsigned streak = 0;
    bool resub;

    (void)state;
    now = base;
    assert_false(fresh_changed(&base, &now, 10, false, &streak, &resub, why, sizeof(why)));
    now.config_any++;
    assert_true(fresh_changed(&base, &now, 10, false, &streak, &resub, why, sizeof(why)));
    assert_true(resub);
    assert_non_null(strstr(why, "CONFIG (Redis 6"));
    assert_false(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    /* the other counters count either way */
    now.flushdb++;
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    assert_false(resub);
    assert_non_null(strstr(why, "FLUSHDB ran"));
    /* Redis 7's config|set always counts */
    now = base;
    now.config_set++;
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    assert_true(resub);
}

/* A full sync from another primary (REPLICAOF), or a promotion, changes
 * master_replid under the same run_id; CONFIG RESETSTAT zeroes every
 * count, which shows as fewer calls of INFO itself (counts that were 0
 * before stay 0: the flush or CONFIG SET behind it is otherwise unseen). */
static void
fresh_replid_and_reset(void **state)
{
    static const char repl_a[] = "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
        "master_replid:aaaa1111\r\nmaster_replid2:0000\r\n";
    /* a primary's first replica attached: a new ID, replid2 cleared, the
     * data untouched; a full sync as a replica; promoted from another's */
    static const char repl_b[] = "# Replication\r\nrole:master\r\nmaster_replid:bbbb2222\r\n"
        "master_replid2:0000000000\r\n";
    static const char repl_c[] = "# Replication\r\nrole:slave\r\nmaster_replid:cccc3333\r\n"
        "master_replid2:0000000000\r\n";
    static const char repl_d[] = "# Replication\r\nrole:master\r\nmaster_replid:dddd4444\r\n"
        "master_replid2:cccc3333\r\n";
    static const char stats_a[] = "# Commandstats\r\ncmdstat_info:calls=57,usec=9\r\n";
    static const char stats_b[] = "# Commandstats\r\ncmdstat_info:calls=2,usec=9\r\n";
    struct fresh_state base = reading(stats_a, sizeof(stats_a) - 1, repl_a, sizeof(repl_a) - 1);
    struct fresh_state now;
    char why[200];
    unsigned streak = 0;
    bool resub;

    (void)state;
    assert_string_equal(base.replid, "aaaa1111");     /* not master_replid2 */
    assert_int_equal(base.info_calls, 57);
    now = base;
    now.info_calls += 3;                                /* the checks' own */
    assert_false(fresh_changed(&base, &now, 10, false, &streak, &resub, why, sizeof(why)));
    fresh_parse(FRESH_REPLICATION, repl_b, sizeof(repl_b) - 1, 0, &now);
    assert_false(fresh_changed(&base, &now, 10, false, &streak, &resub, why, sizeof(why)));
    fresh_parse(FRESH_REPLICATION, repl_c, sizeof(repl_c) - 1, 0, &now);
    assert_true(now.replica);
    assert_true(fresh_changed(&base, &now, 10, false, &streak, &resub, why, sizeof(why)));
    assert_non_null(strstr(why, "replication ID changed"));
    fresh_parse(FRESH_REPLICATION, repl_d, sizeof(repl_d) - 1, 0, &now);
    assert_false(now.replica);
    assert_true(fresh_changed(&base, &now, 10, false, &streak, &resub, why, sizeof(why)));
    now = base;
    fresh_parse(FRESH_COMMANDSTATS, stats_b, sizeof(stats_b) - 1, 0, &now);
    assert_true(fresh_changed(&base, &now, 10, false, &streak, &resub, why, sizeof(why)));
    assert_true(resub);
    assert_non_null(strstr(why, "CONFIG RESETSTAT"));
}

/* What a red-team trial hid (Redis 7.0): DEBUG RELOAD NOSAVE (an older
 * RDB, the key count the same) shows only as a call of debug; CONFIG
 * RESETSTAT followed by more INFO calls than before hides from INFO's
 * count: the first reset shows as config|resetstat's count (0, then 1),
 * every reset as a wider gap between a new connection's client ID and
 * the connections counted, which no number of calls narrows. */
static void
fresh_reload_and_hidden_reset(void **state)
{
    static const char stats_a[] = "# Commandstats\r\ncmdstat_info:calls=57,usec=9\r\n"
        "cmdstat_config|get:calls=40,usec=9,usec_per_call=0.2\r\n";
    static const char stats_b[] = "# Commandstats\r\ncmdstat_info:calls=290,usec=9\r\n"
        "cmdstat_debug:calls=1,usec=62,usec_per_call=62.00,rejected_calls=0\r\n"
        "cmdstat_config|resetstat:calls=1,usec=38,usec_per_call=38.00\r\n";
    static const char info_stats[] = "# Stats\r\ntotal_connections_received:16\r\n"
        "total_commands_processed:80\r\n";
    struct fresh_state base = reading(stats_a, sizeof(stats_a) - 1, NULL, 0), now, b;
    char why[200];
    unsigned streak = 0;
    bool resub;

    (void)state;
    assert_int_equal(fresh_conn_gap(48, info_stats, sizeof(info_stats) - 1), 32);
    assert_int_equal(fresh_conn_gap(-1, info_stats, sizeof(info_stats) - 1), -1);
    assert_int_equal(fresh_conn_gap(48, stats_a, sizeof(stats_a) - 1), -1);
    assert_int_equal(fresh_conn_gap(10, info_stats, sizeof(info_stats) - 1), -1);
    base.conn_gap = 32;
    b = reading(stats_b, sizeof(stats_b) - 1, NULL, 0);
    assert_int_equal(b.debug, 1);
    assert_int_equal(b.resetstat, 1);
    /* DEBUG alone (INFO's count up, as checks make it) */
    now = base;
    now.info_calls += 4;
    now.debug = 1;
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    assert_false(resub);
    assert_non_null(strstr(why, "DEBUG (RELOAD and LOADAOF"));
    /* the first reset, INFO's count pumped above the baseline's */
    now = b;
    now.conn_gap = 32;
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    assert_true(resub);                 /* though DEBUG's row comes first */
    assert_non_null(strstr(why, "DEBUG (RELOAD"));
    now.debug = 0;
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    assert_true(resub);
    assert_non_null(strstr(why, "CONFIG RESETSTAT"));
    /* a FLUSHDB beside a CONFIG SET: the setting is checked again */
    now = base;
    now.flushdb++;
    now.config_set++;
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    assert_true(resub);
    assert_non_null(strstr(why, "FLUSHDB ran"));
    /* a later one: config|resetstat still 1, INFO's count pumped, every
     * other count as it was: the gap alone tells */
    base = b;
    base.conn_gap = 49;
    now = base;
    now.info_calls += 300;
    assert_false(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    now.conn_gap = 50;
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    assert_true(resub);
    assert_non_null(strstr(why, "statistics were reset"));
    /* narrower (a connection accepted while it was read) or unknown: no
     * reset; nor against a baseline that has none */
    now.conn_gap = 47;
    assert_false(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    now.conn_gap = -1;
    assert_false(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    base.conn_gap = -1;
    now.conn_gap = 60;
    assert_false(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
}

/* A replica cut off from its primary: its data is old and its
 * notifications stopped with the writes, so every check says so, though
 * nothing else changed; a replica in sync, or a primary, is current. */
static void
fresh_replica_link(void **state)
{
    static const char up[] = "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\n"
        "master_replid:aaaa1111\r\n";
    static const char down[] = "# Replication\r\nrole:slave\r\nmaster_link_status:down\r\n"
        "master_replid:aaaa1111\r\nmaster_link_down_since_seconds:7\r\n";
    struct fresh_state base = reading(stats7, sizeof(stats7) - 1, up, sizeof(up) - 1), now;
    char why[200];
    unsigned streak = 0;
    bool resub = true;

    (void)state;
    now = base;
    assert_false(now.link_down);
    assert_false(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    fresh_parse(FRESH_REPLICATION, down, sizeof(down) - 1, 0, &now);
    assert_true(now.link_down);
    assert_int_equal(now.link_down_s, 7);
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    assert_false(resub);                        /* the subscription is fine */
    assert_string_equal(why, "the server is a replica whose link to its primary is down "
                        "(for 7 s): its data is not current");
    /* and at the next check too: no baseline makes it current */
    base = now;
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
    base.have = false;                          /* nor the lack of one */
    assert_true(fresh_changed(&base, &now, 10, true, &streak, &resub, why, sizeof(why)));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flags_cover),
        cmocka_unit_test(event_classes),
        cmocka_unit_test(channel_key),
        cmocka_unit_test(keymap_coalesces),
        cmocka_unit_test(keymap_cap),
        cmocka_unit_test(keymap_byte_cap),
        cmocka_unit_test(keymap_churn),
        cmocka_unit_test(fresh_reads_info),
        cmocka_unit_test(fresh_redis6_config),
        cmocka_unit_test(fresh_replid_and_reset),
        cmocka_unit_test(fresh_replica_link),
        cmocka_unit_test(fresh_reload_and_hidden_reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
