/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_serverinfo.c - what INFO replication says about a node's data
 * (collectors/redis/serverinfo.h): a primary, a replica in sync, a
 * replica whose link to its primary is down (for a while, or since it
 * started), and the sentence that says so; and what INFO persistence
 * says of the data a server loaded at its start.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/redis/serverinfo.h"

/* INFO replication as Redis 7.0 writes it (trimmed). */
static const char primary[] =
    "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n"
    "slave0:ip=127.0.0.1,port=6390,state=online,offset=42,lag=0\r\n"
    "master_failover_state:no-failover\r\nmaster_replid:aaaa1111\r\n";
static const char in_sync[] =
    "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:6389\r\n"
    "master_link_status:up\r\nmaster_last_io_seconds_ago:1\r\n"
    "master_sync_in_progress:0\r\nslave_read_repl_offset:42\r\n";
static const char cut_off[] =
    "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:6389\r\n"
    "master_link_status:down\r\nmaster_last_io_seconds_ago:-1\r\n"
    "master_sync_in_progress:0\r\nslave_read_repl_offset:42\r\n"
    "master_link_down_since_seconds:12\r\nslave_priority:100\r\n";
/* never synced since it started: Redis writes -1 */
static const char never_up[] =
    "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:6389\r\n"
    "master_link_status:down\r\nmaster_sync_in_progress:1\r\n"
    "master_link_down_since_seconds:-1\r\n";
static const char never_up6[] =
    "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:6389\r\n"
    "master_link_status:down\r\nmaster_sync_in_progress:1\r\n"
    "master_link_down_since_seconds:1796400123\r\n";

static const char silent10[] =
    "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\n"
    "master_last_io_seconds_ago:10\r\n";
static const char silent45[] =
    "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\n"
    "master_last_io_seconds_ago:45\r\n";

static void
link_down_read(void **state)
{
    long long s = 99, q = 99;

    (void)state;
    assert_false(serverinfo_link_down(primary, sizeof(primary) - 1, 30, &s, &q));
    assert_int_equal(s, -1);
    assert_false(serverinfo_link_down(in_sync, sizeof(in_sync) - 1, 30, &s, &q));
    assert_true(serverinfo_link_down(cut_off, sizeof(cut_off) - 1, 30, &s, &q));
    assert_int_equal(s, 12);
    assert_true(serverinfo_link_down(never_up, sizeof(never_up) - 1, 30, &s, &q));
    assert_int_equal(s, -1);
    /* Redis 6 writes the seconds since 1970 for a link never up */
    assert_true(serverinfo_link_down(never_up6, sizeof(never_up6) - 1, 30, &s, &q));
    assert_int_equal(s, -1);
    /* no master_link_status at all (not read, or a text cut short): not
     * claimed down; an empty text neither */
    assert_false(serverinfo_link_down("role:slave\r\n", 12, 30, &s, &q));
    assert_false(serverinfo_link_down("", 0, 30, &s, &q));
    /* "up", but nothing from the primary (not even its pings) for long: a
     * link cut without a FIN, "up" until repl-timeout */
    assert_false(serverinfo_link_down(silent10, sizeof(silent10) - 1, 30, &s, &q));
    assert_int_equal(q, -1);
    assert_true(serverinfo_link_down(silent45, sizeof(silent45) - 1, 30, &s, &q));
    assert_int_equal(q, 45);
    assert_int_equal(s, -1);
    /* replica_silence 60s (a primary that pings every 20 s): 45 s is no
     * silence; one second over the limit is */
    assert_false(serverinfo_link_down(silent45, sizeof(silent45) - 1, 60, &s, &q));
    assert_int_equal(q, -1);
    assert_true(serverinfo_link_down(silent45, sizeof(silent45) - 1, 44, &s, &q));
    assert_false(serverinfo_link_down(silent45, sizeof(silent45) - 1, 45, &s, &q));
}

static void
link_down_said(void **state)
{
    char why[300];

    (void)state;
    serverinfo_link_why("127.0.0.1:6390", 12, -1, 30, true, why, sizeof(why));
    assert_string_equal(why, "127.0.0.1:6390 is a replica whose link to its primary is down "
                        "(for 12 s): its data is not current");
    /* untimed: the same text at every pass while the link stays down */
    serverinfo_link_why("127.0.0.1:6390", 12, -1, 30, false, why, sizeof(why));
    assert_string_equal(why, "127.0.0.1:6390 is a replica whose link to its primary is down: "
                        "its data is not current");
    serverinfo_link_why("127.0.0.1:6390", -1, -1, 30, true, why, sizeof(why));
    assert_non_null(strstr(why, "down (not up since the replica started): its data"));
    serverinfo_link_why("127.0.0.1:6390", -1, -1, 30, false, why, sizeof(why));
    assert_non_null(strstr(why, "down (not up since the replica started): its data"));
    /* silent: the same text at every pass, as untimed */
    serverinfo_link_why("127.0.0.1:6390", -1, 45, 30, true, why, sizeof(why));
    assert_string_equal(why, "127.0.0.1:6390 is a replica that heard nothing from its primary "
                        "for over 30 s (replica_silence): its link says up, but dropped "
                        "silently or the primary stalled; its data is not proven current");
    /* it fits where it goes (snap_shard.err, the stale reason: 256 bytes)
     * with a long node name: a trial saw it cut mid-word */
    serverinfo_link_why("[fd00:1234:5678:9abc:def0:1234:5678:9abc]:65535", -1, 45, 3600, true,
                        why, 256);
    assert_non_null(strstr(why, "its data is not proven current"));
    serverinfo_link_why("127.0.0.1:6390", 12, -1, 30, true, why, 10);      /* cut to size */
    assert_string_equal(why, "127.0.0.1");
}

/* INFO persistence of Redis 7.0.15 (trimmed), as read from the installed
 * redis-server: started empty (save "", appendonly no); started on an RDB
 * of 2 keys (a replica's full sync reads the same); with an AOF (no RDB
 * preamble: the keys it replayed are not counted); loading; and Redis 6.2,
 * which has no rdb_last_load_keys_loaded. */
static const char empty_start[] =
    "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:0\r\n"
    "rdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\naof_enabled:0\r\n"
    "aof_rewrite_in_progress:0\r\n";
static const char rdb_start[] =
    "# Persistence\r\nloading:0\r\nasync_loading:0\r\n"
    "rdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:2\r\naof_enabled:0\r\n";
static const char aof_start[] =
    "# Persistence\r\nloading:0\r\nasync_loading:0\r\n"
    "rdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\naof_enabled:1\r\n";
static const char loading_now[] =
    "# Persistence\r\nloading:1\r\nasync_loading:0\r\n"
    "rdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\naof_enabled:0\r\n";
static const char redis62[] =
    "# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:0\r\n"
    "rdb_bgsave_in_progress:0\r\naof_enabled:0\r\n";

static void
loaded_nothing_read(void **state)
{
    (void)state;
    assert_true(serverinfo_loaded_nothing(empty_start, strlen(empty_start)));
    assert_false(serverinfo_loaded_nothing(rdb_start, strlen(rdb_start)));
    assert_false(serverinfo_loaded_nothing(aof_start, strlen(aof_start)));
    assert_false(serverinfo_loaded_nothing(loading_now, strlen(loading_now)));
    assert_false(serverinfo_loaded_nothing(redis62, strlen(redis62)));
    assert_false(serverinfo_loaded_nothing("", 0));
    /* a server's start: uptime_in_seconds, as INFO server writes it */
    assert_int_equal(serverinfo_number("# Server\r\nrun_id:ab\r\nuptime_in_seconds:7\r\n"
                                       "uptime_in_days:0\r\n", 60, "uptime_in_seconds:", -1), 7);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(link_down_read),
        cmocka_unit_test(link_down_said),
        cmocka_unit_test(loaded_nothing_read),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
