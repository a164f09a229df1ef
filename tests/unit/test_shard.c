/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard.c - `shard = I/N` (conf/shard.h): the rendezvous hash keeps
 * its values, spreads names, and growing N moves names only to the new
 * shard (12 targets from 2 to 3 shards: at most ceil(12/3)+1 move); the
 * split of a loaded config keeps [redlock] members together; the option
 * and its companions refuse what they must.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf/config.h"
#include "conf/shard.h"

static int
shard_of_str(const char *s, int n)
{
    return shard_of(s, strlen(s), n);
}

static struct config *
load_text(const char *text, char *err, size_t errlen)
{
    char path[] = "/tmp/lw-shard-XXXXXX";
    struct config *cfg = NULL;
    int fd = mkstemp(path);
    size_t len = strlen(text);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
    if (config_load(path, &cfg, err, errlen) == -1)
        cfg = NULL;
    unlink(path);
    return cfg;
}

/* The values are part of the contract: agents of two versions in one
 * rollout must agree on every target (docs/deploying.md). */
static void
hash_values_are_pinned(void **state)
{
    (void)state;
    assert_int_equal(shard_of_str("anything", 1), 0);
    assert_int_equal(shard_of_str("anything", 0), 0);
    assert_int_equal(shard_of_str("t0", 2), 0);
    assert_int_equal(shard_of_str("t2", 2), 1);
    assert_int_equal(shard_of_str("t2", 3), 1);
    assert_int_equal(shard_of_str("t4", 3), 2);
    assert_int_equal(shard_of_str("t11", 3), 0);
}

/* Twelve targets (the integration test's names) from 2 to 3 shards. */
static void
twelve_targets_two_to_three(void **state)
{
    char name[16];
    int moved = 0, per[3] = { 0 };

    (void)state;
    for (int i = 0; i < 12; i++) {
        int a, b;

        snprintf(name, sizeof(name), "t%d", i);
        a = shard_of_str(name, 2);
        b = shard_of_str(name, 3);
        per[a]++;
        if (a != b) {
            assert_int_equal(b, 2);     /* only ever to the new shard */
            moved++;
        }
    }
    assert_true(per[0] > 0 && per[1] > 0);
    assert_in_range(moved, 1, (12 + 2) / 3 + 1);
}

/* Over many names: every growth n -> n+1 moves names to shard n only,
 * about 1/(n+1) of them; every shard gets a fair part. */
static void
growth_moves_to_the_new_shard_only(void **state)
{
    char name[32];
    enum { NAMES = 3000 };

    (void)state;
    for (int n = 1; n < 8; n++) {
        int moved = 0, per[8] = { 0 };

        for (int i = 0; i < NAMES; i++) {
            int a, b;

            snprintf(name, sizeof(name), "redis-%d.example", i);
            a = shard_of_str(name, n);
            b = shard_of_str(name, n + 1);
            assert_in_range(b, 0, n);
            per[b]++;
            if (a != b) {
                assert_int_equal(b, n);
                moved++;
            }
        }
        /* expected NAMES/(n+1); a binomial's spread is far inside 20% */
        assert_in_range(moved, NAMES / (n + 1) * 8 / 10, NAMES / (n + 1) * 12 / 10);
        for (int k = 0; k <= n; k++)
            assert_in_range(per[k], NAMES / (n + 1) * 8 / 10, NAMES / (n + 1) * 12 / 10);
    }
}

#define TARGETS12 \
    "[target t0]\n[target t1]\n[target t2]\n[target t3]\n[target t4]\n[target t5]\n" \
    "[target t6]\n[target t7]\n[target t8]\n[target t9]\n[target t10]\n[target t11]\n" \
    "[redlock rl]\ntargets = t3, t7, t10\n"

/* Each shard of two keeps exactly its targets; together every target
 * once; a [redlock] group's members on one shard, the group with them. */
static void
split_partitions_and_keeps_groups_whole(void **state)
{
    char err[CONFIG_ERR_LEN], text[1024];
    int seen[12] = { 0 }, group_shard = -1;

    (void)state;
    for (int s = 0; s < 2; s++) {
        struct config *cfg;

        snprintf(text, sizeof(text), "[agent]\nshard = %d/2\n" TARGETS12, s);
        cfg = load_text(text, err, sizeof(err));
        if (cfg == NULL)
            fail_msg("%s", err);
        assert_int_equal(cfg->ntargets, 12);
        assert_int_equal(config_shard_split(cfg), 0);
        assert_int_equal(cfg->ntargets + cfg->naway, 12);
        for (size_t i = 0; i < cfg->ntargets; i++) {
            int k = atoi(cfg->targets[i].name + 1);

            assert_int_equal(shard_of_target(cfg, cfg->targets[i].name), s);
            seen[k]++;
            if (k == 3 || k == 7 || k == 10)
                group_shard = s;
        }
        for (size_t i = 0; i < cfg->naway; i++)
            assert_int_equal(cfg->away_shard[i], 1 - s);
        /* the group is here exactly when its members are */
        assert_int_equal(cfg->nredlocks + cfg->naway_redlocks, 1);
        if (cfg->nredlocks == 1) {
            assert_non_null(config_target(cfg, "t3"));
            assert_non_null(config_target(cfg, "t7"));
            assert_non_null(config_target(cfg, "t10"));
        } else {
            assert_null(config_target(cfg, "t3"));
            assert_null(config_target(cfg, "t10"));
        }
        config_free(cfg);
    }
    for (int k = 0; k < 12; k++)
        assert_int_equal(seen[k], 1);
    assert_true(group_shard >= 0);
}

static void
options_refuse_bad_values(void **state)
{
    static const char *const bad[][2] = {
        { "[agent]\nshard = 2/2\n", "[agent] shard: 2/2: N must be 1 to 1024" },
        { "[agent]\nshard = 1\n", "[agent] shard: \"1\" is not I/N" },
        { "[agent]\nshard = -1/2\n", "[agent] shard: \"-1/2\" is not I/N" },
        { "[agent]\nshard = 0/01\n", "[agent] shard: \"0/01\" is not I/N" },
        { "[agent]\nshard = 0/1025\n", "[agent] shard: 0/1025: N must be 1 to 1024" },
        { "[agent]\nshard = 1/2\nshard_peers = http://a:1\n",
          "[agent] shard_peers: 1 URL(s) for 2 shards" },
        { "[agent]\nshard = 1/2\nshard_peers = http://a:1, ftp://b\n",
          "[agent] shard_peers: \"ftp://b\" is not an http:// or https:// base URL" },
        { "[agent]\nreplica = a b\n", "[agent] replica: \"a b\" is not a name" },
        { "[agent]\nleader_target = nope\n[target main]\n",
          "[agent] leader_target: no [target nope]" },
        { "[agent]\nleader_target = c\n[target c]\nmode = cluster\n",
          "[agent] leader_target: [target c] is mode = cluster; the leader lock needs a "
          "standalone target" },
        { "[agent]\nleader_target = main\n[target main]\n",
          "[agent] leader_target: set [agent] replica = NAME too" },
        { "[agent]\nleader_group = a:b\n", "[agent] leader_group: \"a:b\" is not a name" },
        { "[agent]\nleader_lease = 100ms\n", "[agent] leader_lease:" },
    };
    char err[CONFIG_ERR_LEN];
    struct config *cfg;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cfg = load_text(bad[i][0], err, sizeof(err));
        assert_null(cfg);
        if (strstr(err, bad[i][1]) == NULL)
            fail_msg("\"%s\": error \"%s\" lacks \"%s\"", bad[i][0], err, bad[i][1]);
    }
    cfg = load_text("[agent]\nreplica = b-2\nshard = 1/2\n"
                    "shard_peers = http://a:1, https://b:2\n", err, sizeof(err));
    if (cfg == NULL)
        fail_msg("%s", err);
    assert_string_equal(cfg->replica, "b-2");
    assert_int_equal(cfg->shard_index, 1);
    assert_int_equal(cfg->shard_total, 2);
    assert_int_equal(cfg->nshard_peers, 2);
    config_free(cfg);
    cfg = load_text("[agent]\n", err, sizeof(err));
    assert_non_null(cfg);
    assert_null(cfg->replica);
    assert_int_equal(cfg->shard_total, 1);
    assert_int_equal(config_shard_split(cfg), 0);
    assert_int_equal(cfg->naway, 0);
    config_free(cfg);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hash_values_are_pinned),
        cmocka_unit_test(twelve_targets_two_to_three),
        cmocka_unit_test(growth_moves_to_the_new_shard_only),
        cmocka_unit_test(split_partitions_and_keeps_groups_whole),
        cmocka_unit_test(options_refuse_bad_values),
    };

    return cmocka_run_group_tests_name("shard", tests, NULL, NULL);
}
