/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * freshness.h - the pure half of follow mode's proof of freshness
 * (freshness.c): what a node's INFO says about changes no keyspace
 * notification announces, and whether two readings differ by one.
 *
 * Kept apart from follow_impl.h so the unit tests can feed it the INFO
 * texts of servers this machine does not run (Redis 6 counts every
 * CONFIG subcommand as one command; 7 counts config|set on its own).
 */
#ifndef LOCKWATCH_FRESHNESS_H
#define LOCKWATCH_FRESHNESS_H

#include <stdbool.h>
#include <stddef.h>

/* What a node's INFO says about changes no notification announces. */
struct fresh_state {
    bool have;                  /* read (else nothing to compare) */
    char run_id[48];
    char replid[48];            /* master_replid: another one, of a node
                                 * that is or was a replica, and the same
                                 * process holds other data (a full sync
                                 * from a primary, a promotion) */
    char replid2[48];           /* master_replid2 (the one before a promotion) */
    bool replica;               /* role:slave */
    bool link_down;             /* a replica whose link to its primary is
                                 * not up: its data is not current */
    long long link_down_s;      /* for so long; -1 unknown */
    long long link_silent_s;    /* "up" but silent so long; -1 not */
    long long link_limit_s;     /* silent longer is cut off: the target's
                                 * replica_silence (fresh_read() sets it
                                 * before the parse; 0: 30 s) */
    long long flushdb, flushall, swapdb;        /* commandstats calls */
    long long debug;            /* every DEBUG subcommand: RELOAD and
                                 * LOADAOF load keys, POPULATE writes some */
    long long resetstat;        /* config|resetstat (Redis 7+): 0, or 1 once
                                 * any ran (each zeroes the counts, then is
                                 * counted itself) */
    long long info_calls;       /* INFO's own: fewer, the stats were reset */
    long long config_set;       /* config|set (Redis 7+) */
    long long config_any;       /* config, every subcommand (Redis 6) */
    long long keys;             /* the target's database's key count */
    long long conn_gap;         /* fresh_conn_gap() of a connection of its
                                 * own; -1 unknown */
};

/* The INFO sections read, in fresh_parse()'s numbering. */
enum fresh_section {
    FRESH_SERVER, FRESH_COMMANDSTATS, FRESH_KEYSPACE, FRESH_REPLICATION, FRESH_SECTIONS
};

/* What section's text (len bytes) says, into st (database db's key
 * count from keyspace).  Pure. */
void fresh_parse(enum fresh_section section, const char *text, size_t len, int db,
                 struct fresh_state *st);

/*
 * The client ID a new connection got (HELLO's id) less INFO stats'
 * total_connections_received read on it: -1 when either is unknown.
 * Redis gives every client an ID from one counter that nothing resets,
 * and counts each connection it accepts after giving it one; CONFIG
 * RESETSTAT zeroes the count only.  So the gap never shrinks, and each
 * reset widens it by every connection counted since the one before (one
 * at least, the check's own, when a check ran between them): no client
 * can narrow it again, however many commands or connections it makes.
 * It also widens where an ID goes to no accepted connection (a failed TLS
 * handshake, a client Redis creates for itself: a replica's link).  A
 * connection accepted between the reading's connect and its INFO makes
 * one reading smaller, never larger.  Pure.
 */
long long fresh_conn_gap(long long id, const char *stats, size_t len);

/*
 * Did something change under the view between base and now that no
 * notification announced?  live: the lock records on the node whose TTL
 * has not run out (fewer keys than that twice in a row counts, tracked
 * in *short_streak).  flags_read: the caller reads notify-keyspace-events
 * itself every check (CONFIG GET), so Redis 6's count of every CONFIG
 * subcommand, which counts those reads, is not compared.  A conn_gap
 * wider than base's (both known) is a statistics reset.  true with why
 * set; *resub true when the setting may have changed too (a restart, a
 * CONFIG SET, statistics reset).  A replica whose link is down (now
 * alone) counts too: the full scan it calls for fails saying so.  Pure.
 */
bool fresh_changed(const struct fresh_state *base, const struct fresh_state *now, size_t live,
                   bool flags_read, unsigned *short_streak, bool *resub, char *why,
                   size_t whylen);

#endif
