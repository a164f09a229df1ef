/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * serverinfo.h - which server answers on a connection, and what it ran
 * that changes a keyspace without a per-key write: read from INFO.
 *
 * Two users: follow mode's proof of freshness (collectors/follow/
 * freshness.c, every scan_interval) and the scanner, which reads it on
 * each node at the start of every full pass so that a snapshot says
 * which server it saw (snapshot.h, its server fields): a run_id that
 * changed is a restart or, on another address, a failover; a flush
 * count that changed is a FLUSHDB, FLUSHALL or SWAPDB.  Both are what
 * tells "locks lost at a failover" (collectors/scan/lost.c) from locks
 * released.
 *
 * A third: whether the node's data is current at all.  A replica whose
 * link to its primary is down keeps answering reads with the data it had
 * when the link broke (replica-serve-stale-data, on by default): locks
 * taken since never appear, and those it has leave only as their TTLs
 * run out.  So a read of such a node proves nothing, and the scanner and
 * follow mode say so (serverinfo_link_down()).
 *
 * A fourth: when the server started (INFO server's uptime_in_seconds, at
 * every pass) and, asked only once a restart is seen (the scanner's
 * collectors/scan/reborn.c), whether it loaded any data at its start
 * (INFO persistence, serverinfo_loaded_nothing()): a lock on a server
 * that loaded nothing cannot be older than its start.
 *
 * An ACL that denies INFO leaves the identity unknown (have = false):
 * nothing is compared then, and nothing is claimed.
 */
#ifndef LOCKWATCH_SERVERINFO_H
#define LOCKWATCH_SERVERINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hiredis.h>

#include "conf/config.h"

#define SERVERINFO_RUN_ID_MAX   48      /* a run_id is 40 hex digits */

/* One INFO section on c (to node): 1 with its reply (a string; the caller
 * frees it), 0 when the server refuses it (ACL: err says so), -1 when the
 * connection failed (err). */
int serverinfo_section(redisContext *c, const struct target_conf *node, const char *section,
                       redisReply **out, char *err, size_t errlen);

/* The number after prefix at the start of a line of INFO text (len
 * bytes); def when no line starts with it.  Pure. */
long long serverinfo_number(const char *text, size_t len, const char *prefix, long long def);

/* The text after prefix ("run_id:") at the start of a line of INFO text
 * (len bytes) into out (NUL-terminated, cut to size); "" when no line
 * starts with it.  Pure. */
void serverinfo_string(const char *text, size_t len, const char *prefix, char *out,
                       size_t size);

/* The run_id of INFO server text; serverinfo_string()'s contract. */
void serverinfo_run_id(const char *text, size_t len, char *out, size_t size);

/* Does INFO replication text say role:slave?  Pure. */
bool serverinfo_replica(const char *text, size_t len);

/*
 * Is this INFO replication text a replica's whose link to its primary is
 * not up (master_link_status down, or any other word a later Redis may
 * use)?  *down_s gets master_link_down_since_seconds, -1 when the text
 * has none or says -1 (the link was never up since the replica started).
 * A link "up" that has carried nothing for over limit_s seconds (the
 * target's replica_silence, 30 s by default: three of the primary's pings
 * at repl-ping-replica-period 10 s; master_last_io_seconds_ago: a link cut
 * without a FIN, which Redis calls down only at repl-timeout, 60 s by
 * default) is down too, *silent_s its seconds (else -1).  A primary, or a
 * text without master_link_status, is current: false.  Pure.
 */
bool serverinfo_link_down(const char *text, size_t len, long long limit_s, long long *down_s,
                          long long *silent_s);
/* The target's replica_silence in whole seconds (at least 1). */
long long serverinfo_silence_s(const struct target_conf *t);

/* The sentence that says node ("host:port")'s data is not current, its
 * link down_s seconds down (-1: not up since the replica started), or
 * silent over limit_s (silent_s > 0), into out (cut to size).  timed
 * false leaves the seconds out: a failed scan's reason is logged again
 * whenever its text changes, so it must read the same at every pass
 * while the link stays down.  Pure. */
void serverinfo_link_why(const char *node, long long down_s, long long silent_s,
                         long long limit_s, bool timed, char *out, size_t size);

/*
 * Did the data under the same run_id change hands?  A replica's
 * replication ID becomes its primary's when it loads that primary's data
 * (a full sync), and a new one on its promotion, the one before kept as
 * replid2; a primary's changes too when its first replica attaches or its
 * backlog is freed, its data untouched and replid2 cleared (all zeros).
 * So a change counts where either reading was a replica's, or where the
 * node was promoted from a replication ID that was not its own before (a
 * REPLICAOF and a REPLICAOF NO ONE between the readings).  Pure.
 */
bool serverinfo_resynced(const char *was_replid, bool was_replica, const char *now_replid,
                         const char *now_replid2, bool now_replica);

/*
 * Does this INFO persistence text say the server holds only what was
 * written to it since it started: nothing loaded from an RDB (at its
 * start, or at its last full sync as a replica: rdb_last_load_keys_loaded
 * is 0), no AOF (aof_enabled 0: an AOF without an RDB preamble loads keys
 * that rdb_last_load_keys_loaded does not count), and not loading now?
 * A text without those fields (a Redis before 7.0 has no
 * rdb_last_load_keys_loaded) says nothing: false.  Pure.
 */
bool serverinfo_loaded_nothing(const char *text, size_t len);

/* The commandstats prefix of INFO's own calls: they only grow between two
 * readings (each reading is one), unless the statistics were reset. */
#define SERVERINFO_INFO_CALLS   "cmdstat_info:calls="

/* Who answers, what data it has (its replication ID changes when it loads
 * another's data in a full sync, or is promoted), its flush counts
 * (commandstats calls of flushdb + flushall, from scripts and MULTI too)
 * and swapdb count, with INFO's own calls (fewer: the statistics were
 * reset, so the other counts say nothing). */
struct server_id {
    bool have;
    char run_id[SERVERINFO_RUN_ID_MAX];
    char replid[SERVERINFO_RUN_ID_MAX];     /* master_replid; "" unknown */
    char replid2[SERVERINFO_RUN_ID_MAX];    /* master_replid2 */
    bool replica;                           /* role:slave */
    bool link_down;                         /* a replica, its link not up */
    long long link_down_s;                  /* for so long; -1 unknown */
    long long link_silent_s;                /* "up", silent so long; -1 not */
    long long flushes;
    long long flushalls;                    /* of them FLUSHALL's: every database's */
    long long swaps;
    long long info_calls;
    int64_t started_ms;                     /* Unix ms the server started, by
                                             * this agent's clock: the read's
                                             * time less uptime_in_seconds (the
                                             * latest it can be); 0 unknown */
};

/* INFO server, INFO replication and INFO commandstats on c (to node): 1
 * with *id filled (started_ms from the time INFO server answered), 0 when the server refuses them (id->have false), -1
 * when the connection failed (err). */
int serverinfo_read(redisContext *c, const struct target_conf *node, struct server_id *id,
                    char *err, size_t errlen);

/* The commandstats prefixes of the commands counted in flushes, and in
 * swaps. */
extern const char *const serverinfo_flush_prefixes[2];
#define SERVERINFO_SWAPDB_CALLS "cmdstat_swapdb:calls="

#endif
