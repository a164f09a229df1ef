/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cluster.c - hash slots, CLUSTER SHARDS / CLUSTER SLOTS parsing and
 * redirections, from hand-built reply trees (the shapes Redis 7.0 and
 * 6.2 send over RESP2).  Pure: no server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/redis/cluster.h"

/* ---- building replies ------------------------------------------------------ */

static redisReply *
rstr(const char *s)
{
    redisReply *r = calloc(1, sizeof(*r));

    r->type = REDIS_REPLY_STRING;
    r->len = strlen(s);
    r->str = malloc(r->len + 1);
    memcpy(r->str, s, r->len + 1);
    return r;
}

static redisReply *
rerr(const char *s)
{
    redisReply *r = rstr(s);

    r->type = REDIS_REPLY_ERROR;
    return r;
}

static redisReply *
rinteger(long long v)
{
    redisReply *r = calloc(1, sizeof(*r));

    r->type = REDIS_REPLY_INTEGER;
    r->integer = v;
    return r;
}

static redisReply *
rnil(void)
{
    redisReply *r = calloc(1, sizeof(*r));

    r->type = REDIS_REPLY_NIL;
    return r;
}

/* An array of n elements, given as arguments (NULL-free). */
static redisReply *
rarr(size_t n, ...)
{
    redisReply *r = calloc(1, sizeof(*r));
    va_list ap;
    size_t i;

    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = calloc(n ? n : 1, sizeof(*r->element));
    va_start(ap, n);
    for (i = 0; i < n; i++)
        r->element[i] = va_arg(ap, redisReply *);
    va_end(ap);
    return r;
}

/* A CLUSTER SHARDS node map as Redis 7.0 sends it. */
static redisReply *
shard_node(const char *id, int port, const char *ip, const char *endpoint,
           const char *role, const char *health)
{
    return rarr(14, rstr("id"), rstr(id), rstr("port"), rinteger(port), rstr("ip"), rstr(ip),
                rstr("endpoint"), rstr(endpoint), rstr("role"), rstr(role),
                rstr("replication-offset"), rinteger(1234), rstr("health"), rstr(health));
}

/* ---- tests ------------------------------------------------------------------ */

static void
crc16_and_slots(void **state)
{
    (void)state;
    /* the reference value of CRC16-CCITT/XModem and the cluster spec's */
    assert_int_equal(cluster_crc16("123456789", 9), 0x31c3);
    assert_int_equal(cluster_keyslot("123456789", 9), 12739);
    assert_int_equal(cluster_keyslot("foo", 3), 12182);
    /* hash tags: the first {...} with something in it */
    assert_int_equal(cluster_keyslot("{user1000}.following", 20),
                     cluster_keyslot("{user1000}.followers", 20));
    assert_int_equal(cluster_keyslot("{user1000}.following", 20),
                     cluster_keyslot("user1000", 8));
    assert_int_equal(cluster_keyslot("foo{}{bar}", 10), cluster_crc16("foo{}{bar}", 10) & 16383);
    assert_int_equal(cluster_keyslot("foo{{bar}}zap", 13), cluster_keyslot("{bar", 4));
    assert_int_equal(cluster_keyslot("foo{bar}{zap}", 13), cluster_keyslot("bar", 3));
    assert_int_equal(cluster_keyslot("no{close", 8), cluster_crc16("no{close", 8) & 16383);
    /* a Redisson lock, its channel and a liblockwatch registry key */
    assert_int_equal(cluster_keyslot("lock:{order}:1", 14), cluster_keyslot("order", 5));
    assert_int_equal(cluster_keyslot("redisson_lock__channel:{lock:{order}:1}", 39),
                     cluster_keyslot("lock:{order", 11));
    /* binary bytes are hashed as bytes */
    assert_true(cluster_keyslot("\xff\x00\x01", 3) < CLUSTER_SLOTS);
}

static void
shards_reply(void **state)
{
    struct cluster_topo t;
    char err[256];
    redisReply *rep;

    (void)state;
    rep = rarr(4,
        rarr(4, rstr("slots"), rarr(2, rinteger(0), rinteger(5460)),
             rstr("nodes"), rarr(2,
                shard_node("aaaa", 7000, "10.0.0.1", "10.0.0.1", "master", "online"),
                shard_node("bbbb", 7003, "10.0.0.4", "10.0.0.4", "replica", "online"))),
        /* slots as decimal strings, an unknown endpoint, two ranges */
        rarr(4, rstr("slots"), rarr(4, rstr("5461"), rstr("10000"), rstr("10002"),
                                    rstr("10922")),
             rstr("nodes"), rarr(1,
                shard_node("cccc", 7001, "10.0.0.2", "?", "master", "online"))),
        /* a failed primary listed before the healthy one */
        rarr(4, rstr("slots"), rarr(2, rinteger(10923), rinteger(16383)),
             rstr("nodes"), rarr(2,
                shard_node("dddd", 7002, "", "", "master", "failed"),
                shard_node("eeee", 7005, "10.0.0.6", "10.0.0.6", "master", "online"))),
        /* a node that owns no slot: no shard to scan */
        rarr(4, rstr("slots"), rarr(0),
             rstr("nodes"), rarr(1,
                shard_node("ffff", 7009, "10.0.0.9", "10.0.0.9", "master", "online"))));
    assert_int_equal(cluster_parse_shards(rep, "seed.example", &t, err, sizeof(err)), 0);
    assert_int_equal(t.nshards, 3);
    assert_string_equal(t.shards[0].primary.host, "10.0.0.1");
    assert_int_equal(t.shards[0].primary.port, 7000);
    assert_string_equal(t.shards[0].primary.id, "aaaa");
    assert_int_equal(t.shards[0].nreplicas, 1);
    assert_int_equal(t.shards[0].replicas[0].port, 7003);
    assert_int_equal(t.shards[0].nslots, 5461);
    assert_string_equal(t.shards[0].ranges, "0-5460");
    /* "?" endpoint: the ip */
    assert_string_equal(t.shards[1].primary.host, "10.0.0.2");
    assert_string_equal(t.shards[1].ranges, "5461-10000,10002-10922");
    assert_int_equal(t.shards[1].nslots, 10922 - 5461 + 1 - 1);
    /* the healthy primary wins; the failed one is kept as a replica */
    assert_string_equal(t.shards[2].primary.id, "eeee");
    assert_true(t.shards[2].primary.healthy);
    assert_int_equal(t.shards[2].nreplicas, 1);
    assert_false(t.shards[2].replicas[0].healthy);
    /* empty endpoint and ip: the address asked */
    assert_string_equal(t.shards[2].replicas[0].host, "seed.example");
    /* slot table */
    assert_ptr_equal(cluster_shard_of_slot(&t, 0), &t.shards[0]);
    assert_ptr_equal(cluster_shard_of_slot(&t, 5460), &t.shards[0]);
    assert_ptr_equal(cluster_shard_of_slot(&t, 5461), &t.shards[1]);
    assert_null(cluster_shard_of_slot(&t, 10001));
    assert_ptr_equal(cluster_shard_of_slot(&t, 16383), &t.shards[2]);
    assert_null(cluster_shard_of_slot(&t, 16384));
    cluster_topo_clear(&t);
    freeReplyObject(rep);
}

static void
shards_reply_malformed(void **state)
{
    struct cluster_topo t;
    char err[256];
    redisReply *rep;

    (void)state;
    rep = rerr("ERR unknown subcommand 'SHARDS'");
    assert_int_equal(cluster_parse_shards(rep, "h", &t, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not an array"));
    assert_null(t.shards);
    freeReplyObject(rep);

    rep = rarr(1, rarr(3, rstr("slots"), rarr(0), rstr("nodes")));
    assert_int_equal(cluster_parse_shards(rep, "h", &t, err, sizeof(err)), -1);
    freeReplyObject(rep);

    rep = rarr(1, rarr(4, rstr("slots"), rarr(2, rinteger(100), rinteger(20000)), rstr("nodes"),
                       rarr(1, shard_node("a", 1, "1.1.1.1", "1.1.1.1", "master", "online"))));
    assert_int_equal(cluster_parse_shards(rep, "h", &t, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "slot range"));
    freeReplyObject(rep);

    /* no primary: the slots stay unserved, not an error */
    rep = rarr(1, rarr(4, rstr("slots"), rarr(2, rinteger(0), rinteger(99)), rstr("nodes"),
                       rarr(1, shard_node("a", 1, "1.1.1.1", "1.1.1.1", "replica", "online"))));
    assert_int_equal(cluster_parse_shards(rep, "h", &t, err, sizeof(err)), 0);
    assert_int_equal(t.nshards, 0);
    assert_null(cluster_shard_of_slot(&t, 5));
    cluster_topo_clear(&t);
    freeReplyObject(rep);
}

static void
slots_reply(void **state)
{
    struct cluster_topo t;
    char err[256];
    redisReply *rep;

    (void)state;
    /* Redis 6.2 shape; one primary with two ranges; a NULL host (unknown
     * endpoint) means the address asked */
    rep = rarr(3,
        rarr(4, rinteger(0), rinteger(5460), rarr(3, rstr("127.0.0.1"), rinteger(7000), rstr("id0")),
             rarr(3, rstr("127.0.0.1"), rinteger(7003), rstr("id3"))),
        rarr(3, rinteger(5461), rinteger(10922), rarr(3, rnil(), rinteger(7001), rstr("id1"))),
        rarr(3, rinteger(10923), rinteger(16383),
             rarr(4, rstr("127.0.0.1"), rinteger(7000), rstr("id0"), rarr(0))));
    assert_int_equal(cluster_parse_slots(rep, "seed", &t, err, sizeof(err)), 0);
    assert_int_equal(t.nshards, 2);
    assert_int_equal(t.shards[0].primary.port, 7000);
    assert_int_equal(t.shards[0].nreplicas, 1);
    assert_string_equal(t.shards[0].ranges, "0-5460,10923-16383");
    assert_int_equal(t.shards[0].nslots, 5461 + 5461);
    assert_string_equal(t.shards[1].primary.host, "seed");
    assert_ptr_equal(cluster_shard_of_slot(&t, 16000), &t.shards[0]);
    assert_ptr_equal(cluster_shard_of_slot(&t, 6000), &t.shards[1]);
    {
        char gap[64];

        assert_int_equal(cluster_uncovered(&t, gap, sizeof(gap)), 0);   /* all served */
        assert_string_equal(gap, "");
    }
    cluster_topo_clear(&t);
    freeReplyObject(rep);

    /* slots no node serves (cluster-require-full-coverage no): counted,
     * and named as a shard's ranges are, cut after a whole range */
    rep = rarr(2,
        rarr(3, rinteger(100), rinteger(5460), rarr(3, rstr("h"), rinteger(7000), rstr("id0"))),
        rarr(3, rinteger(5470), rinteger(16000), rarr(3, rstr("h"), rinteger(7001), rstr("id1"))));
    assert_int_equal(cluster_parse_slots(rep, "seed", &t, err, sizeof(err)), 0);
    {
        char gap[64], small[20];

        assert_int_equal(cluster_uncovered(&t, gap, sizeof(gap)), 100 + 9 + 383);
        assert_string_equal(gap, "0-99,5461-5469,16001-16383");
        cluster_uncovered(&t, small, sizeof(small));
        assert_string_equal(small, "0-99,...");
    }
    cluster_topo_clear(&t);
    freeReplyObject(rep);

    rep = rarr(1, rarr(2, rinteger(0), rinteger(5)));
    assert_int_equal(cluster_parse_slots(rep, "seed", &t, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "CLUSTER SLOTS"));
    freeReplyObject(rep);
}

static void
many_ranges_text_is_cut(void **state)
{
    struct cluster_topo t;
    char err[256];
    redisReply *rep, *slots;
    size_t i;

    (void)state;
    /* every other slot of the first 200: 100 ranges, far past the text cap */
    slots = rarr(0);
    free(slots->element);
    slots->elements = 200;
    slots->element = calloc(200, sizeof(*slots->element));
    for (i = 0; i < 100; i++) {
        slots->element[2 * i] = rinteger((long long)(2 * i));
        slots->element[2 * i + 1] = rinteger((long long)(2 * i));
    }
    rep = rarr(1, rarr(4, rstr("slots"), slots, rstr("nodes"),
                       rarr(1, shard_node("a", 7000, "h", "h", "master", "online"))));
    assert_int_equal(cluster_parse_shards(rep, "seed", &t, err, sizeof(err)), 0);
    assert_int_equal(t.shards[0].nslots, 100);
    assert_true(strlen(t.shards[0].ranges) < CLUSTER_RANGES_TEXT);
    assert_non_null(strstr(t.shards[0].ranges, "..."));
    assert_int_equal(strncmp(t.shards[0].ranges, "0,2,4,", 6), 0);
    cluster_topo_clear(&t);
    freeReplyObject(rep);
}

static void
redirects(void **state)
{
    char host[64];
    unsigned slot;
    int port;
    bool ask;
    redisReply *r;

    (void)state;
    r = rerr("MOVED 3999 127.0.0.1:6381");
    assert_true(cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port));
    assert_false(ask);
    assert_int_equal(slot, 3999);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 6381);
    freeReplyObject(r);

    r = rerr("ASK 12182 ::1:7002");
    assert_true(cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port));
    assert_true(ask);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 7002);
    freeReplyObject(r);

    r = rerr("MOVED 5 :7002");          /* empty host: the node that replied */
    assert_true(cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port));
    assert_string_equal(host, "");
    freeReplyObject(r);

    r = rerr("ERR wrong number of arguments");
    assert_false(cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port));
    freeReplyObject(r);
    r = rerr("MOVED 99999999999999999999999999 h:1");    /* no overflow: refused */
    assert_false(cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port));
    freeReplyObject(r);
    r = rerr("MOVED 99999 h:1");
    assert_false(cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port));
    freeReplyObject(r);
    r = rerr("MOVED 1 h:99999");
    assert_false(cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port));
    freeReplyObject(r);
    r = rerr("MOVED 1 hostnoport");
    assert_false(cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port));
    freeReplyObject(r);
    r = rstr("MOVED 1 h:1");            /* not an error reply */
    assert_false(cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port));
    freeReplyObject(r);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc16_and_slots),
        cmocka_unit_test(shards_reply),
        cmocka_unit_test(shards_reply_malformed),
        cmocka_unit_test(slots_reply),
        cmocka_unit_test(many_ranges_text_is_cut),
        cmocka_unit_test(redirects),
    };

    return cmocka_run_group_tests_name("cluster", tests, NULL, NULL);
}
