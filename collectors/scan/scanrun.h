/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scanrun.h - the scanner as a layer above it drives it: the per-key step
 * in parsed values, the hooks a full scan calls, re-reads of named keys
 * and snapshots replayed from kept records.
 *
 * Follow mode (collectors/follow/) sits above the scanner and is its one
 * user: the scanner knows nothing of it.  A full scan calls the hooks it
 * was given (scanner_set_hooks()); follow mode re-reads the keys named
 * in events with the scanner's own pipelined reads (scanner_reread()) and
 * makes a snapshot from its records by handing each to the same per-key
 * step a scan uses (scan_record() inside scanner_replay()), so the states,
 * first-seen times and counts downstream are the same whichever path
 * made them.
 *
 * The per-key step takes values, never a Redis reply: a key's bytes and
 * length, its type, PTTL and OBJECT IDLETIME, when it was read, and its
 * value (struct raw_lock, collectors/formats/formats.h).
 */
#ifndef LOCKWATCH_SCANRUN_H
#define LOCKWATCH_SCANRUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hiredis.h>

#include "collectors/formats/formats.h"
#include "collectors/redis/cluster.h"
#include "collectors/scan/scan.h"

/* One key as read: what the per-key step takes. */
struct scan_key {
    const char *key;            /* not NUL-terminated; the caller's */
    size_t keylen;
    enum raw_type type;
    long long pttl;             /* ms; -1 no TTL */
    long long idle_s;           /* OBJECT IDLETIME (-1 when unknown) */
    int64_t idle_at_ms;         /* Unix ms its reply was read (0: unknown):
                                 * IDLETIME is the age then, not at the
                                 * run's start */
    int64_t read_ms;            /* Unix ms it was read; 0: the run's start */
    bool helper;                /* a helper key (formats_helper()): counted
                                 * to its lock, its value not read */
    int64_t born_ms;            /* Unix ms its node started, having loaded
                                 * no data, when it restarted since the
                                 * view before (collectors/scan/reborn.c):
                                 * no holding there is older; 0 not known */
};

/* A run of the scanner: a full scan's, or a replay's (opaque here). */
struct run;

/*
 * The per-key step: record key k of run r.  A helper key (k->helper) is
 * counted to its lock (raw unused); a lock key is decoded from raw (hlen:
 * HLEN of a hash, else -1), classed, deduped (a key seen before in the
 * pass counts in cnt->duplicates_total and nothing else), timed from its
 * holder's first sighting (k->read_ms, or the run's start), judged,
 * counted in the run's snapshot and maybe kept, and added to its Redlock
 * map.  Takes the run's mutex.  0, or -1 on ENOMEM.
 */
int scan_record(struct run *r, const struct scan_key *k, const struct raw_lock *raw,
                long long hlen, struct scan_counters *cnt);

/* ---- hooks of a full scan ------------------------------------------------------ */

/* Where a full scan's pass reads. */
struct scan_pass {
    const struct target_conf *t;
    const atomic_int *stop;     /* NULL: a single pass (lockwatchd --once) */
    uint64_t conn_key;          /* how the scanner's connections were made */
    /* standalone and sentinel: the connection and where it goes */
    redisContext *c;
    const char *host;
    int port;
    /* cluster (c NULL): the topology being scanned */
    const struct cluster_topo *topo;
    int64_t start_mono;         /* the pass's start */
};

struct scan_hooks {
    /* Once the pass knows its nodes and before it reads a key: true to
     * have keep() called for every key the pass records. */
    bool (*attach)(void *arg, const struct scan_pass *p);
    /* A key the pass recorded (not a duplicate), read at read_ms; called
     * under the run's mutex.  0, or -1 on ENOMEM (the pass fails). */
    int (*keep)(void *arg, const struct scan_key *k, const struct raw_lock *raw,
                long long hlen, int64_t read_ms);
    /* After a pass attach() said to keep: s is its snapshot (NULL when
     * the pass was stopped), p->topo a cluster's topology (NULL when the
     * pass was stopped or is not a cluster's). */
    void (*scanned)(void *arg, const struct scan_pass *p, struct snapshot *s);
    /* A snapshot scanner_run() is about to return. */
    void (*stamp)(void *arg, struct snapshot *s);
    /* scanner_free(): the hooks' state goes with the scanner. */
    void (*release)(void *arg);
};

/* Give sc's full scans hooks (copied) with arg; sc owns arg from then on
 * (release() frees it). */
void scanner_set_hooks(struct scanner *sc, const struct scan_hooks *h, void *arg);

/* ---- reading from above ----------------------------------------------------------- */

/* The standalone or Sentinel connection the last pass kept, and where it
 * goes; NULL when there is none. */
redisContext *scanner_conn(const struct scanner *sc, const char **host, int *port);

/* A cluster node's connection kept by the last pass; NULL when none. */
redisContext *scanner_node_conn(const struct scanner *sc, const char *host, int port);

/*
 * The connections the last pass kept (scanner_conn(), scanner_node_conn())
 * whose last command failed because their peer had closed them while they
 * waited (conn.h's redisconn_closed(): the server's idle timeout, a
 * proxy's, a CLIENT KILL) are opened again in their place and counted
 * (lockwatch_reconnects_total), so that the caller sends what failed once
 * more rather than dropping everything for a full scan.  A Sentinel
 * target's node is kept only while the sentinels still name it and ROLE
 * says primary (target_verify()).  Returns how many were opened again (0:
 * none had been closed so: the caller fails as before), or -1 with err
 * when one could not be (it is dropped, and the caller fails as before).
 */
int scanner_revive(struct scanner *sc, const struct target_conf *t, char *err, size_t errlen);

/* Each key read by scanner_reread(): i is its index in keys[]. */
typedef int scan_key_fn(void *arg, size_t i, const struct scan_key *k,
                        const struct raw_lock *raw, long long hlen);

/* A key scanner_reread() found elsewhere: keys[i]'s TYPE met the error
 * reply rep ("MOVED <slot> <host>:<port>" even after ASKING, "ASK ...",
 * or "TRYAGAIN ..."; cluster_parse_redirect() reads the first two); it
 * is not handed to each(). */
typedef void scan_moved_fn(void *arg, size_t i, const redisReply *rep);

/*
 * Read keys[0..n) (n at most SCAN_REREAD_MAX) on c (to host:port) as a
 * scan reads them (OBJECT IDLETIME, TYPE, PTTL, then the bounded value),
 * handing each that is there to each (a helper key with its name only),
 * and each a cluster node redirected to moved (may be NULL: then such a
 * key is simply not there), both with arg.  asking: an ASK led to c, so
 * every read is preceded by ASKING; else a key c answers MOVED for is
 * read again there after ASKING first (c may import its slot), as a
 * scan does.  Refused reads, and keys read after ASKING, count in sc's
 * counters.  0, or -1 with err set when the connection failed, a read
 * was refused or each() failed.
 */
#define SCAN_REREAD_MAX 256
int scanner_reread(struct scanner *sc, const struct target_conf *t, redisContext *c,
                   const char *host, int port, bool asking, const char *const *keys,
                   const size_t *lens, size_t n, scan_key_fn *each, scan_moved_fn *moved,
                   void *arg, char *err, size_t errlen);

/* Feed a replay's keys to scan_record(r, ..., cnt).  0, or -1 on ENOMEM. */
typedef int scan_replay_fn(void *arg, struct run *r, struct scan_counters *cnt);

/*
 * A snapshot made as a full scan makes one, from keys each() hands to the
 * per-key step instead of from a pass: then the client-registry look-up,
 * the helper keys, the waiters and the finish, on the connections the
 * last pass kept (topo: a cluster's, by shard; NULL: the one connection).
 * The snapshot is ok, with sc's counters; *next_due_ms gets the earliest
 * Unix ms a lock recorded changes state by time alone (0: none) and
 * *now_ms the time its states were judged at.  A look-up that failed on
 * a kept connection its peer closed while idle is made once more, on it
 * opened again (scanner_revive()).  NULL on ENOMEM, when a connection is
 * missing or one failed.
 */
struct snapshot *scanner_replay(struct scanner *sc, const struct target_conf *t,
                                const struct scan_rules *rules, const atomic_int *stop,
                                const struct cluster_topo *topo, scan_replay_fn *each,
                                void *arg, int64_t *now_ms, int64_t *next_due_ms);

/*
 * Do the nodes of the last pass still serve the target?  Sentinel: the
 * primary the sentinels name, ROLE-checked (target_verify() of target.h);
 * no sentinel answering is true too (the full scan it calls for fails,
 * naming them, and the target is down); a ROLE that failed because the
 * peer closed the kept connection while idle is asked again on it opened
 * again (scanner_revive()).  Cluster: the same
 * primaries as topo serving the same slots (a discovery, CLUSTER SHARDS).
 * A discovery that fails says nothing (false).  Standalone: false.
 */
bool scanner_moved(struct scanner *sc, const struct target_conf *t,
                   const struct cluster_topo *topo);

/* Follow mode's freshness check passed: the views are proven current as
 * of at_ms (Unix), so a lock first seen before then was there before a
 * flush or SWAPDB found later (collectors/scan/lost.c). */
void scanner_view_proven(struct scanner *sc, int64_t at_ms);

/* Standalone, Sentinel: the next pass fails at once with why, reading
 * nothing (follow mode's check found the node silent past
 * command_timeout: the target is down now, not after a second wait). */
void scanner_fail_next(struct scanner *sc, const char *why);

#endif
