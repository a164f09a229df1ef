/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * release.h - the guarded release and expire of one lock (SPEC "Guarded
 * release"), shared by lockctl and the agent's POST /api/v1/locks/release.
 *
 * Both run one Lua script each (collectors/release/lua/guard.lua, then
 * formats.lua - the release table, per format what releasing one holder
 * means - then release.lua or expire.lua) with EVALSHA, falling back to EVAL when the
 * server does not have it cached (NOSCRIPT).  Every guard runs inside the
 * script, atomically with the change: the key matches one of the target's
 * patterns, the holder is the one the operator saw, and the optional
 * conditions (--if-leaked, --if-older-than) hold.  The script answers with
 * an outcome code; every refusal has its own (release_outcome_str()).
 *
 * The script contract (KEYS, ARGV, reply) is written at the top of
 * guard.lua and in docs/lockctl.md.  This module builds the arguments
 * (release_build_args(), pure, unit-tested), runs the script, and in
 * cluster mode writes the audit entry with a second command, since the
 * audit stream lives in another hash slot than the lock.
 */
#ifndef LOCKWATCH_RELEASE_H
#define LOCKWATCH_RELEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hiredis.h>
#include <jansson.h>

#include "conf/config.h"

enum release_action { RELEASE_ACTION_RELEASE, RELEASE_ACTION_EXPIRE };

/* Outcomes, as the script spells them (release_outcome_str()). */
enum release_outcome {
    RELEASE_RELEASED,           /* "released": deleted, waiters woken, audited */
    RELEASE_EXPIRED,            /* "expired": TTL set, audited */
    RELEASE_WOULD_RELEASE,      /* dry run: every guard held */
    RELEASE_WOULD_EXPIRE,
    RELEASE_REFUSED_PATTERN,    /* "pattern": the key matches none of the target's patterns */
    RELEASE_REFUSED_GONE,       /* "gone": no such key (any more) */
    RELEASE_REFUSED_HOLDER,     /* "holder_changed": not held by that holder */
    RELEASE_REFUSED_WRONGTYPE,  /* "wrongtype": neither a string nor a hash lock */
    RELEASE_REFUSED_NOT_LEAKED, /* "not_leaked": --if-leaked, but it has a TTL */
    RELEASE_REFUSED_TOO_YOUNG,  /* "too_young": --if-older-than not reached */
    RELEASE_REFUSED_HAS_TTL,    /* "has_ttl": expire of a lock that has a TTL */
    RELEASE_REFUSED_EXCLUDED,   /* "excluded": the key matches the target's exclude_patterns */
    RELEASE_REFUSED_HELPER,     /* "helper_key": a helper key of a lock (formats_helper()),
                                 * never released or expired on its own; err names its lock */
    RELEASE_ERROR,              /* "error": Redis unreachable, script error... */
    RELEASE_OUTCOME_COUNT
};

/* What to do.  Bytes are binary-safe (key and holder may hold any byte). */
struct release_request {
    enum release_action action;
    const char *key;
    size_t keylen;
    const char *holder;         /* token (string lock), field (hash lock),
                                 * member (zset semaphore), permit id */
    size_t holderlen;
    const char *format;         /* the decoder's format name for the lock
                                 * ("redisson-rw", ...), or NULL: the
                                 * script then picks by what it sees */
    bool format_guessed;        /* format is only a guess (format_source
                                 * "guessed"): a row that does more than
                                 * compare-and-delete falls back to plain's */
    bool if_leaked;
    int64_t if_older_than_ms;   /* 0: no age condition */
    int64_t known_age_ms;       /* holder age the caller knows (the format's
                                 * acquisition time, an IDLETIME read
                                 * before); 0: unknown.  The script takes the
                                 * larger of it and OBJECT IDLETIME. */
    int64_t lease_age_ms;       /* an age that counts only while the key's
                                 * lease is as it was read (the agent's:
                                 * verdict_agent_age()); 0: none */
    long long lease_pttl;       /* ... that is, while its PTTL is this, give
                                 * or take lease_slack_ms (a lease set since,
                                 * longer or shorter, moves it); -1: it had
                                 * no TTL, and has none */
    int64_t lease_slack_ms;
#define RELEASE_LEASE_SLACK_MS 1000     /* the agent's: it counts a TTL from
                                         * its handling of the reply, a
                                         * little after Redis */
    int64_t ttl_ms;             /* expire: the TTL to set (> 0) */
    bool dry_run;               /* every guard, no write, no audit entry */
    const char *operator_name;  /* who: a login name, "http:<peer>" */
    const char *reason;         /* why (may be "") */
    int64_t now_ms;             /* audit time, Unix ms; 0 = now */
    bool http;                  /* asked over the agent's HTTP API: the JSON's
                                 * message names its fields (if_older_than),
                                 * not lockctl's options */
};

#define RELEASE_OLD_MAX 512     /* bytes of the old value reported/audited */
#define RELEASE_ERR_MAX 1024

struct release_result {
    enum release_outcome outcome;
    char type[16];              /* TYPE the script saw: "string", "hash",
                                 * "none", ... ("" for a pattern refusal) */
    long long pttl_ms;          /* -1 no TTL, -2 gone or not read; after an
                                 * expire, the TTL set */
    long long idle_s;           /* OBJECT IDLETIME, -1 unknown */
    char old[RELEASE_OLD_MAX];  /* value, or "field=count ..." of a hash */
    size_t oldlen;
    char audit_id[64];          /* stream entry id; "" when none written */
    long long wake_errors;      /* wake-ups that failed (ACL...); the
                                 * release itself stands */
    char err[RELEASE_ERR_MAX];  /* RELEASE_ERROR: what failed; also set
                                 * when the release stands but its cluster
                                 * audit entry failed (audit_failed) */
    bool audit_failed;
    char format[32];            /* the release-table row the script used */
    long long holders_left;     /* after a release: holders still holding
                                 * (0: the key was deleted); -1 unknown */
    long long purged;           /* dead waiters dropped from a fair queue */
};

/*
 * The refusals that need no Redis: a key in the target's exclude_patterns,
 * or a helper key (formats_helper(): a fair lock's queue, a fenced lock's
 * token counter, a reader's rwlock_timeout key, ...), whose release or
 * expire would break its lock.  Returns the refusal and writes a sentence
 * naming the owning lock into why, or -1 when the key may be tried (a key
 * outside the target's patterns too: the script refuses it, audited).
 * release_run() checks this first.  Pure.
 */
int release_precheck(const struct target_conf *t, const char *key, size_t keylen,
                     char *why, size_t whylen);

/* "released", "holder_changed", ... ("error" for RELEASE_ERROR). */
const char *release_outcome_str(enum release_outcome o);
/* The outcome spelled s (n bytes), or -1. */
int release_outcome_parse(const char *s, size_t n);
/* A sentence for people: what the outcome means and what to do, in
 * lockctl's words (release_result_json() gives the HTTP API's its own). */
const char *release_outcome_message(enum release_outcome o);
/* The format-table row whose release-table row a release of a lock read
 * as format (guessed: format_source "guessed") runs: a guessed format
 * with companions releases as the fallback row ("plain"); NULL when the
 * script picks by what it sees.  lockctl's prompt words itself by it. */
const struct lock_format *release_row_for(const char *format, bool guessed);
/* Whether format has a row of the release table (its release column in
 * the format table, formats.h, is not FMT_RELEASE_DETECT). */
bool release_format_known(const char *format);

/* The first format whose release column names a companion role release.c
 * does not know, or whose wake column's role no companion passes; NULL
 * when there is none (tests/unit/test_release.c). */
const char *release_companion_unknown(void);
/* A guard refused (exit 1 / HTTP 409), as opposed to done or error. */
bool release_outcome_refused(enum release_outcome o);
/* The lock was changed (released or expired, not a dry run). */
bool release_outcome_done(enum release_outcome o);

/*
 * The script for action: guard.lua, formats.lua, then release.lua or
 * expire.lua, joined by newlines.
 * *text is malloc'd (NUL-terminated, *len bytes); sha gets the 40 hex
 * digits of its SHA-1, what EVALSHA names it by.  0, or -1 on ENOMEM.
 */
int release_script(enum release_action action, char **text, size_t *len, char sha[41]);

/*
 * The arguments of one EVALSHA: argv[0] "EVALSHA", argv[1] the SHA, then
 * numkeys, KEYS and ARGV as guard.lua documents.  Companions (audit
 * stream, wake channels, the fair-lock queue, the signal list) are given
 * by role; in cluster mode (t->mode) the audit stream and every companion
 * outside the lock's hash slot are left out.  Pure: no I/O.  The struct
 * owns what it points to; free it with release_args_free().
 */
struct release_args {
    int argc;
    const char **argv;
    size_t *argvlen;
    char **owned;               /* strings built here */
    size_t nowned;
    int nkeys;
};
int release_build_args(const struct target_conf *t, const char *audit_stream,
                       const struct release_request *req, const char *sha,
                       struct release_args *a);
void release_args_free(struct release_args *a);

/* Redis Cluster hash slot of a key (CRC16 of the hash tag, mod 16384). */
unsigned release_key_slot(const char *key, size_t keylen);

/*
 * Run the guarded release or expire on connection c (connected to t by
 * target_open() of collectors/redis/target.h: in a cluster, to the key's
 * node).  Fills *res and
 * returns res->outcome.  A connection error leaves c in an unknown state:
 * drop it.  audit_stream is the config's [unlock] audit_stream; in a
 * cluster its entry is written on the stream's own node afterwards.
 */
enum release_outcome release_run(redisContext *c, const struct target_conf *t,
                                 const char *audit_stream,
                                 const struct release_request *req,
                                 struct release_result *res);

/* Was the audit entry id pushed to the timeline by this process's
 * release_run() (the newest RELEASE_PUSHED_KEPT of them)? */
#define RELEASE_PUSHED_KEPT 64
bool release_audit_pushed(const char *id);

/*
 * The outcome as JSON, the same object for lockctl --json and the HTTP
 * API (docs/lockctl.md "JSON"): target, action, key/key_escaped,
 * holder/holder_escaped, outcome, done, refused, dry_run, message (in the
 * asker's words: lockctl's options, or the HTTP API's fields), type,
 * pttl_ms, idle_seconds, old/old_escaped, audit_id, wake_errors, format,
 * holders_left, deleted and purged_waiters (outcome "released"), ttl_ms
 * (expire), error (outcome "error").  NULL on ENOMEM.
 */
json_t *release_result_json(const char *target, const struct release_request *req,
                            const struct release_result *res);

#endif
