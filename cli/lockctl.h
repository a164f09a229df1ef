/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockctl.h - what the files of lockctl, the on-call CLI, share.
 *
 * lockctl is one small file per concern, in the manner of curl's
 * src/tool_*.c: main.c (options and the command table), session.c
 * (config, target, connection, who the operator is), inspect.c (reading
 * and judging locks), list.c, show.c, release.c (release and expire),
 * audit.c, table.c (tables the width of the terminal, safe for hostile
 * keys), pasteline.c (the commands it prints to paste), output.c
 * (JSON and human formatting), confirm.c (the terminal prompt), registry.c
 * (a liblockwatch holder's host, pid and time, for show), agent.c
 * (what the agent's API knows of the locks) and verdict.c (ages, states
 * and order from what lockctl read and what the agent knows).
 *
 * It talks to Redis directly, so it works when the agent is down, and
 * reads the agent's config; when the agent answers, it also asks it for
 * what only the agent knows (first-seen and no-TTL-since times).  Exit codes (SPEC "On-call CLI") are the
 * LOCKCTL_* values below; every command returns one.
 */
#ifndef LOCKWATCH_LOCKCTL_H
#define LOCKWATCH_LOCKCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <hiredis.h>
#include <jansson.h>

#include "collectors/locks/lockjson.h"
#include "common/clock.h"

#include "collectors/formats/formats.h"
#include "collectors/locks/lockclass.h"
#include "collectors/locks/lockfacts.h"
#include "collectors/locks/lockstate.h"
#include "collectors/redis/cluster.h"
#include "collectors/redis/conn.h"
#include "conf/config.h"

enum {
    LOCKCTL_DONE = 0,           /* done */
    LOCKCTL_REFUSED = 1,        /* refused by a guard, or nothing to do */
    LOCKCTL_USAGE = 2,          /* usage or config error */
    LOCKCTL_REDIS = 3           /* Redis unreachable or error */
};

/* ---- session.c --------------------------------------------------------------- */

/* --tls-ca-file, --tls-ca-dir, --tls-cert-file, --tls-key-file,
 * --tls-server-name, --tls-verify: the [target] key of the same name with
 * '_' for '-' (session.c), parsed as the config file's value is. */
#define SESSION_TLS_OPTIONS 6

struct lockctl {
    /* global options */
    const char *config_path;    /* -c; NULL: the default, or built-in defaults */
    const char *target_name;    /* -t; NULL: the first target */
    const char *url;            /* --url: overrides the target's url */
    const char *agent;          /* --agent URL, or "off"; NULL: [agent] listen */
    bool agent_only;            /* the command asks the agent, never Redis */
    bool json;                  /* --json, -o json */
    bool wide;                  /* -o wide: nothing cut or wrapped */
    bool quiet;                 /* -q: no notes on stderr (errors stay) */
    bool bad_option;            /* a common option's value was refused */
    const char *argv0;          /* how lockctl was run, for the commands it
                                 * prints to paste (pasteline.c) */
    struct redisconn_scope scope;   /* the whole command's deadline (--timeout,
                                     * else LOCKCTL_TIMEOUT_MS), which every
                                     * Redis read keeps to (main.c enters it) */
    const char *tls[SESSION_TLS_OPTIONS]; /* --tls-ca-file ...: override the
                                 * target's tls_ca_file ... (NULL: keep) */
    char conf_address[CONFIG_ADDRESS_MAX]; /* the target's address as the
                                 * config gives it, before --url
                                 * (config_target_address()) */
    /* from session_load() */
    struct config *cfg;
    struct target_conf *t;
    /* from session_connect() */
    redisContext *c;
    struct target_conf node;    /* t aimed at the node connected to */
    struct target_conf *conf_t; /* t before it named node (the config's
                                 * target, with --url) */
    bool asking;                /* an ASK led to c: ASKING before each read */
    bool stay;                  /* list: a key another node serves (its slot
                                 * moving, or served by none) is left
                                 * unread (cli_lock.elsewhere), the node's
                                 * scan going on, not followed there */
    const uint16_t *slot_shard; /* list of a cluster: its discovery's slot ->
                                 * shard table (cli_lock.denied); else NULL */
    struct cluster_node *known; /* the cluster's nodes as the agent knows
                                 * them (agent_known_nodes()); scope.known,
                                 * checked against, never connected to */
    bool policy_known;          /* INFO memory asked on this session */
    bool lfu;                   /* an LFU policy: OBJECT IDLETIME not asked */
};

/* Load the config, pick the target, apply --url.  Prints what is wrong
 * and returns LOCKCTL_USAGE, or LOCKCTL_DONE. */
int session_load(struct lockctl *lc);
/* Connect to the target (a sentinel target: its primary; a cluster: the
 * primary of slot 0); lc->t then names that node.  Prints "lockctl:
 * target NAME: <what failed on host:port>" and returns LOCKCTL_REDIS, or
 * LOCKCTL_DONE. */
int session_connect(struct lockctl *lc);
/* Connect to the node that serves key (target_open() of
 * collectors/redis/target.h); lc->t then names that node. */
int session_connect_key(struct lockctl *lc, const char *key, size_t keylen);
/* Report a Redis failure (detail names the command and the address) and
 * return LOCKCTL_REDIS. */
int session_redis_error(const struct lockctl *lc, const char *detail);
/* From here on lc->t connects as the writes do (config_target_writer():
 * its release_user, when it has one): lockctl audit, before it connects. */
void session_as_writer(struct lockctl *lc);
/* The connection of the writes to the node lc->t names (after
 * session_connect_key()) into *wc, *w its target: lc->c itself when the
 * target has no release_user, else a new one as that user (the caller
 * frees it when it is not lc->c).  LOCKCTL_DONE, or LOCKCTL_REDIS said. */
int session_writer(struct lockctl *lc, struct target_conf *w, redisContext **wc);
/* After the operator answered a prompt: the command's deadline is again
 * left_ms from now (the time spent reading is not Redis's), and the
 * connection, idle meanwhile, is opened again to the same node when its
 * peer closed it (the server's timeout, a proxy's, CLIENT KILL).
 * LOCKCTL_DONE, or LOCKCTL_REDIS said. */
int session_resume(struct lockctl *lc, int64_t left_ms);
/* After a prompt, before a write: does the node that serves key now (a
 * Sentinel target's primary as the sentinels name it, a cluster slot's
 * owner) differ from the one lc->t names, a failover while the prompt
 * waited?  0 no; 1 yes, with "host:port" of both in was and now; -1 when
 * asking failed (said, LOCKCTL_REDIS's). */
int session_node_moved(struct lockctl *lc, const char *key, size_t keylen, char *was,
                       char *now, size_t len);
/* Drop the connection and the config. */
void session_close(struct lockctl *lc);
/* Who is asking, for the audit: $SUDO_USER, else the login name of the
 * real uid, else "uid:<n>". */
void session_operator(char *buf, size_t len);
/* "host:port" of the target. */
void session_address(const struct lockctl *lc, char *buf, size_t len);
/* "redis-cli -h HOST -p PORT [--user U] [--askpass] [--tls]": the node
 * read, as its user, for a next step to paste (no secret in it). */
void session_redis_cli(const struct lockctl *lc, char *buf, size_t len);
/* The target's patterns for people, "lock:*, job:*" ("..." when cut). */
void session_patterns(const struct lockctl *lc, char *buf, size_t len);

/* Common options every command also takes (so --json may follow the
 * command): returns 1 when opt was one of them, 0 when not.  A bad value
 * is printed and sets bad_option, which session_load() refuses (exit 2). */
int session_common_option(struct lockctl *lc, int opt, const char *arg);
/* Set the whole command's deadline to ms from now (lc->scope). */
void session_deadline(struct lockctl *lc, int64_t ms);
#define SESSION_OPT_JSON  0x100
#define SESSION_OPT_URL   0x101
#define SESSION_OPT_AGENT 0x102
#define SESSION_OPT_TIMEOUT 0x103
/* The whole command's default deadline: every Redis read and the agent's
 * answers keep to it (a drip-feeding server cannot hold lockctl). */
#define LOCKCTL_TIMEOUT_MS 15000
#define SESSION_OPT_TLS   0x110     /* + 0 .. SESSION_TLS_OPTIONS - 1 */
#define SESSION_OPT_OUTPUT 'o'
#define SESSION_OPT_QUIET 'q' 
#define SESSION_LONG_OPTIONS \
    { "json", no_argument, NULL, SESSION_OPT_JSON }, \
    { "url", required_argument, NULL, SESSION_OPT_URL }, \
    { "agent", required_argument, NULL, SESSION_OPT_AGENT }, \
    { "timeout", required_argument, NULL, SESSION_OPT_TIMEOUT }, \
    { "tls-ca-file", required_argument, NULL, SESSION_OPT_TLS + 0 }, \
    { "tls-ca-dir", required_argument, NULL, SESSION_OPT_TLS + 1 }, \
    { "tls-cert-file", required_argument, NULL, SESSION_OPT_TLS + 2 }, \
    { "tls-key-file", required_argument, NULL, SESSION_OPT_TLS + 3 }, \
    { "tls-server-name", required_argument, NULL, SESSION_OPT_TLS + 4 }, \
    { "tls-verify", required_argument, NULL, SESSION_OPT_TLS + 5 }, \
    { "config", required_argument, NULL, 'c' }, \
    { "target", required_argument, NULL, 't' }, \
    { "output", required_argument, NULL, 'o' }, \
    { "quiet", no_argument, NULL, 'q' }
#define SESSION_SHORT_OPTIONS "c:t:o:q"

/* Print "lockctl: " + message to stderr.  The last one that is not a
 * "warning:" or "note:" is the error a --json run reports (jsonerr.c). */
void lockctl_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A note for people (-q silences it): "lockctl: note: " + message,
 * wrapped at stderr's width as lockctl_warnx() is. */
void lockctl_note(const struct lockctl *lc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The width human output fits (table_terminal_width(), TABLE_WIDE with
 * -o wide). */
size_t lockctl_width(const struct lockctl *lc);

/* ---- inspect.c --------------------------------------------------------------- */

/* One lock as lockctl reads it.  Without the agent (no tracker) the
 * holder's age is the larger of OBJECT IDLETIME and the acquisition time
 * the format encodes; with it, the agent's first-seen time (verdict.c). */
struct cli_lock {
    char *key;                  /* keylen bytes + NUL, owned */
    size_t keylen;
    enum raw_type type;         /* RAW_NONE: gone */
    long long pttl_ms;
    long long idle_s;           /* -1 unknown */
    bool idle_shared;           /* IDLETIME dropped: the value may be one of
                                 * Redis's shared integers (lockfacts.h) */
    const struct lock_format *fmt;
    struct lockfacts_src src;   /* where fmt came from (lockfacts_decode()) */
    struct lock_view view;
    bool value_truncated;
    char cls[CLASS_NAME_MAX];
    bool acquired_registry;     /* view.acquired_ms is the client registry's
                                 * (registry.c), not the value's */
    int64_t age_ms;
    const char *age_source;     /* "agent", "idletime", "acquired" or "unknown" */
    bool age_lower_bound;       /* age_ms is only "at least" (from IDLETIME,
                                 * which any read of the key resets) */
    int64_t first_seen_ms;      /* the agent's, Unix ms; 0 without it */
    int64_t nottl_ms;           /* without a TTL this long; -1 it has one,
                                 * or nobody knows */
    bool renewed;               /* the agent saw this holder renew it */
    bool leak_unknown;          /* no TTL, not judged leaked, and how long
                                 * it has gone without one is unknown */
    uint8_t states;             /* LOCK_* of collectors/locks/snapshot.h */
    bool elsewhere;             /* lockctl.stay: not read, its node answered
                                 * MOVED, ASK, TRYAGAIN or that no node
                                 * serves its slot (type RAW_NONE) */
    bool denied;                /* ... the latter, though the cluster names
                                 * a node for it (lockctl.slot_shard) */
};

/*
 * Read n keys with two pipelined round trips (OBJECT IDLETIME, TYPE, PTTL
 * first, before anything touches them; then the bounded value reads the
 * scanner does) and decode and judge each one.  out[i] gets key i.  0, or
 * -1 with err set (connection failure: drop the connection).
 */
int inspect_keys(struct lockctl *lc, const char *const *keys, const size_t *lens,
                 size_t n, int64_t now_ms, struct cli_lock *out, char *err, size_t errlen);
void cli_lock_release(struct cli_lock *l);
/* The lock as JSON (docs/lockctl.md): the agent API's lock fields plus
 * idle_seconds and age_source. */
json_t *cli_lock_json(const struct lockctl *lc, const struct cli_lock *l);
/* Worst state of l: "leaked", "long", "reentrant_high", "held". */
const char *cli_lock_state(const struct cli_lock *l);

/* ---- agent.c ----------------------------------------------------------------- */

/* What the agent's API says of one lock (only what lockctl cannot read
 * from Redis, and what ties it to the holder it was measured for). */
struct agent_lock {
    char *key;                  /* keylen bytes + NUL, owned */
    size_t keylen;
    char *holder;               /* first holder's id bytes + NUL, owned;
                                 * NULL when the format names none */
    size_t holderlen;
    bool holder_cut;            /* the agent kept only the first bytes of its id */
    size_t nholders;            /* holders the agent saw (its holders_total) */
    int64_t first_seen_ms;      /* Unix ms the agent first saw this holder */
    int64_t age_ms;             /* now - first_seen_ms by the agent's clock at
                                 * its answer (age_seconds); -1 not given */
    int64_t nottl_since_ms;     /* Unix ms since it has had no TTL; 0: it had one */
    char states[64];            /* the agent's states, comma separated */
    int64_t stale_last_ms;      /* stale: its view's or shard's last good read
                                 * (the agent's "last_success_ms"); 0 none */
    bool stale;                 /* from the agent's last good scan of a target
                                 * it cannot scan now */
    long long pttl_ms;          /* its TTL as that scan read it: -1 none; -2
                                 * not given */
    bool renewed;               /* its holder renewed it (the agent saw its TTL
                                 * go back up) */
    int64_t unbroken_ms;        /* of age_ms, the part the agent proves the
                                 * holding unbroken (since unbroken_since:
                                 * a lease set again between two reads may
                                 * be the same holder id taking the lock
                                 * again); -1 not given */
    int64_t left_ms;            /* its TTL left at the agent's answer
                                 * (expires_at_ms): -1 no TTL, -2 not given */
    int64_t got_mono;           /* lockctl's monotonic ms at the answer */
    bool age_lower_bound;       /* first seen at the agent's first look: the
                                 * holder is at least that old, its time
                                 * without a TTL too */
};

#define AGENT_LOCKS_MAX     100000  /* locks taken from the agent, all pages */
#define AGENT_BODY_MAX      (64u * 1024 * 1024) /* bytes of one answer */
#define AGENT_CONNECT_MS    300     /* an agent that does not answer by then is down */
#define AGENT_TIMEOUT_MS    10000   /* one whole request */

/* The agent as lockctl saw it in this run. */
struct agent_view {
    char url[320];              /* base URL, "http://host:port"; "" when off */
    bool asked;                 /* a request was made */
    bool answered;              /* ... and the agent answered with JSON */
    char err[320];              /* why not, when asked && !answered */
    bool replied;               /* an HTTP answer came (whatever its status):
                                 * the agent runs */
    bool key_too_long;          /* it answered 414: the key made the URL
                                 * longer than it takes */
    struct agent_lock *locks;
    size_t nlocks, cap;
    size_t *index;              /* open addressing: 1 + position, 0 free */
    size_t index_cap;
    bool truncated;             /* AGENT_LOCKS_MAX reached */
    char target_address[CONFIG_ADDRESS_MAX]; /* where the agent's config points
                                 * the target (its API's target_address;
                                 * "" when it did not say) */
    char stale_reason[256];     /* the agent cannot scan the target now: why
                                 * ("" when its view is fresh) */
    int64_t last_success_ms;    /* then: Unix ms of its last good scan (0: none) */
    char stale_shard[256];      /* the slot ranges of the cluster shards
                                 * stale (", " between), when only shards
                                 * are (their locks are marked stale, the
                                 * others' are current); "" when the whole
                                 * target is, or none */
    int nstale_shards;
    bool nothing_known;         /* the target has had no good scan since the
                                 * agent started: no view, not an empty one */
    bool elsewhere;             /* it answered, but of another server than
                                 * lockctl's (agent_drop_elsewhere()): dropped */
    struct cluster_node *nodes; /* its "cluster_nodes": the nodes it knows as
                                 * the cluster's (nnodes; NULL: none said) */
    size_t nnodes;
    int64_t deadline_ms;        /* lockctl's deadline (monotonic); 0: none */
};

/* The agent's base URL for lc: --agent, else [agent] listen (a wildcard
 * address means 127.0.0.1).  0, 1 when lockctl is told not to ask
 * (--agent off), -1 when --agent is not an http:// URL (message in err). */
int agent_base_url(const struct lockctl *lc, char *buf, size_t len, char *err, size_t errlen);
/* Every lock of lc's target the agent keeps in detail (GET
 * /api/v1/locks?target=&state=all&limit=, following next_offset when the
 * agent pages).  0 answered, -1 not (av->err says why; av->answered false). */
int agent_fetch_list(const struct lockctl *lc, struct agent_view *av);
/* One lock (GET /api/v1/locks/{key}?target=; the target's list when the
 * key is too long for the agent's URL).  0 answered (found or not), -1
 * not. */
int agent_fetch_lock(const struct lockctl *lc, const char *key, size_t keylen,
                     struct agent_view *av);
/* Add the locks of an API answer (its "locks" array, or one lock object)
 * to av.  0, or -1 with err set when it is not the API's JSON. */
int agent_add_json(struct agent_view *av, const json_t *doc, char *err, size_t errlen);
/*
 * GET url of the agent's API and parse the JSON answer into *doc (the
 * caller's).  Returns the HTTP status with *doc set (a JSON answer, even
 * an error one), or -1 with av->err saying what went wrong (no
 * connection, a timeout, not JSON).  Within av->deadline_ms (0: each
 * request AGENT_TIMEOUT_MS).
 */
long agent_get_json(struct agent_view *av, const char *url, json_t **doc);
/* "HTTP 500: <the API's error>" into av->err. */
void agent_status_error(struct agent_view *av, long status, const json_t *doc);
/* The agent's lock named key, or NULL. */
const struct agent_lock *agent_find(const struct agent_view *av, const char *key,
                                    size_t keylen);
void agent_view_release(struct agent_view *av);
/*
 * Ask the agent for a command: its base URL (agent_base_url()), then the
 * target's locks (key NULL) or one lock.  An agent that does not answer
 * is no error (av->answered says); a bad --agent is: message printed,
 * LOCKCTL_USAGE.  Else LOCKCTL_DONE.
 */
int agent_consult(const struct lockctl *lc, struct agent_view *av, const char *key,
                  size_t keylen);
/* GET path (e.g. "/api/v1/deadlocks") of the agent of lc as JSON into
 * *doc (the caller's): 0 on HTTP 200; -1 with av->err saying why (no
 * agent, an error answer, not JSON); -2 when the options name no agent
 * (--agent off, a bad --agent: a usage error), av->err saying so. */
int agent_get_doc(const struct lockctl *lc, struct agent_view *av, const char *path,
                  json_t **doc);
/* The same for a command that reads only the agent (deadlocks, classes,
 * alerts), its failures said as "NAME: ..." with their hint: LOCKCTL_DONE
 * with *doc set (av cleared first, then as agent_get_doc() leaves it);
 * LOCKCTL_USAGE when the options name no agent; LOCKCTL_REDIS when it did
 * not answer, hint (what to do, for --json's error and the text's "hint:"
 * line) said. */
int agent_command_doc(const struct lockctl *lc, struct agent_view *av, const char *name,
                      const char *path, const char *hint, json_t **doc);
/* One line for people after a listing: where ages came from (from_agent
 * locks judged with the agent's times), or why not and what that means. */
void agent_print_note(const struct agent_view *av, uint64_t from_agent, FILE *fp,
                      size_t width);
/* Is the agent's view of another server than the one lockctl asked: the
 * agent's target_address (else, with --url, the config's address before
 * it, lc->conf_address) not lc's (config_target_address(), compared as
 * same_server() does: localhost and 127.0.0.1 alike)?  Then why (a note
 * ending "not shown") is in why, and its last-known view must not stand
 * in for Redis. */
bool agent_view_elsewhere(const struct lockctl *lc, const struct agent_view *av, char *why,
                          size_t len);
/* Right after agent_consult(): when the agent answered of another server
 * (agent_view_elsewhere()), say why on stderr and drop its view for the
 * whole command (av->answered false, av->elsewhere true), so that no age
 * or state of another server's locks is taken, Redis answering or not.
 * true when dropped. */
bool agent_drop_elsewhere(const struct lockctl *lc, struct agent_view *av);
/*
 * A cluster target: from here on, the cluster the URL's node answers for
 * must be the one the agent reads (cluster_kin() with the nodes the agent
 * knows: the scope's known nodes, known_check), else target_open() and
 * list's discovery fail, naming one of the agent's nodes: a URL's node now
 * in another cluster is not read, nor released in, as the cluster.  The
 * agent's nodes are only checked against, never connected to: an answer
 * over unauthenticated HTTP may not choose where lockctl sends its
 * credentials (a red-team).  From av's answer, after
 * agent_drop_elsewhere(); when it had none (not asked, or asked of a key
 * it does not hold), one GET of the target's list for them, of 2 s at
 * most.  Nothing when the agent is off, down, of another server, or its
 * answer names no target_address: the URL's node alone.
 */
void agent_known_nodes(struct lockctl *lc, struct agent_view *av);
/* Is key an alert's or a metric's label of a key too long or unprintable
 * to show whole (a cut key, "…#", the whole key's keytext_hash() in 16
 * hex digits, of either case as pasted)?  *hash gets it (hash may be NULL). */
bool agent_label(const char *key, size_t keylen, uint64_t *hash);
/*
 * When *key is such a label and the agent keeps no lock of that name, the
 * lock it keeps under that hash (its list, one GET): *key (malloc'd, the
 * old one freed) and *keylen become its own key, said on stderr, and av,
 * when it was asked, the agent's answer for it.  An on-call trial pasted
 * an alert's subject into show, and into release, and had no way from it
 * to the key.  Nothing when the agent is off, down, of another server, or
 * keeps no such lock: the key is looked for as given.  LOCKCTL_DONE, or
 * what agent_consult() returned.
 */
int agent_resolve_label(struct lockctl *lc, struct agent_view *av, char **key, size_t *keylen);
/* av->nothing_known: the line that says so, in place of a view. */
/* A stale shard's reason after "shard <slots>", as " (node): error" (the
 * agent's "shard S (N): E"), else ": <reason>". */
const char *agent_shard_reason(const struct agent_view *av);
void agent_print_nothing_known(const struct agent_view *av, const char *target, FILE *fp,
                               size_t width);
/* The same as JSON: {"url", "answered", "error", "locks_known",
 * "judged", "truncated"}; NULL on ENOMEM. */
json_t *agent_json(const struct agent_view *av, uint64_t from_agent);

/* ---- registry.c -------------------------------------------------------------- */

/* A lock of a registry row (liblockwatch's reentrant locks): the host,
 * pid and acquisition time its value left unknown, from its client's
 * registry (lockwatch:client:{<uuid>}), as the agent's scanner reads them.
 * True when it filled any; a registry missing or unreadable is no error. */
bool inspect_registry(struct lockctl *lc, struct cli_lock *l);
/* The same for list, for n locks read on lc's connection: one pipelined
 * HMGET per registry row (as the agent's scanner reads them), filled[i]
 * true when lock i got any.  In a cluster a registry another primary
 * serves stays unknown (MOVED).  0, or -1 with err set when the
 * connection failed. */
int inspect_registries(struct lockctl *lc, struct cli_lock *locks, size_t n, bool *filled,
                       char *err, size_t errlen);

/* ---- verdict.c --------------------------------------------------------------- */

/*
 * Age and states of l at now_ms under rules (the config's cfg->rules.judge),
 * judged by collectors/locks/lockstate.c: from the agent's times when a is
 * not NULL and names l's current holder (age_source "agent"), else from
 * what lockctl read (the starting age; from IDLETIME it is a lower bound).
 * A lock with no TTL that is not judged leaked while its time without a
 * TTL is only a lower bound is leak_unknown.  Returns true when the
 * agent's times were used.
 */
bool verdict_judge(const struct lockstate_rules *rules, struct cli_lock *l,
                   const struct agent_lock *a, int64_t now_ms);
/* Does a name l's current holder (the first one, byte for byte; one longer
 * than HOLDER_ID_MAX - 1 bytes by its kept bytes when both cut it, as the
 * agent's tracker knows it)? */
bool verdict_same_holder(const struct cli_lock *l, const struct agent_lock *a);
/*
 * The age of holder (holderlen bytes) the agent knows, for release
 * --if-older-than: of a's age, the part it proves the holding unbroken
 * (unbroken_ms: since its first sight, or the last read that found its
 * lease set again), when a (may be NULL) is from a fresh scan and names
 * holder, whole and byte for byte, as the lock's only holder (a shared
 * lock's first-seen time is its oldest holder's); else 0.  It holds only
 * while the lease is as the agent read it: verdict_agent_pttl_max().
 */
int64_t verdict_agent_age(const struct agent_lock *a, const char *holder, size_t holderlen);
/*
 * Is pttl (-1: none), read at at_mono, the lease the agent read: its TTL
 * run down since, within RELEASE_LEASE_SLACK_MS (release.h)?  Another one
 * (a renewal, or the same holder id taking the lock again, with a longer or
 * a shorter lease) means the agent's age is not this holding's.
 */
bool verdict_agent_lease_is(const struct agent_lock *a, long long pttl, int64_t at_mono);
#define LOCKCTL_LEASE_SLACK_MS 250      /* lockctl's own read to its script */
/* Worst first: leaked, long, reentrant_high (by snapshot_rank()), then
 * held; within one rank a leak_unknown lock first, then the older. */
bool verdict_worse(const struct cli_lock *a, const struct cli_lock *b);
/* Is l listed under the states of mask (lockstate_mask())?  --state
 * leaked also lists the leak_unknown locks. */
bool verdict_selected(const struct cli_lock *l, uint8_t mask);
/* The state lockctl shows: cli_lock_state(), or "leaked?" for a
 * leak_unknown lock whose worst state is held. */
const char *verdict_state(const struct cli_lock *l);
/* Every state of l for people, worst first: "leaked, long", "leaked?",
 * "held" (list's STATE column; cli_lock_state() is only the worst). */
void verdict_states(const struct cli_lock *l, char *buf, size_t len);
/* The same of the agent's states ("held,leaked,long", its API's): "leaked,
 * long", or "held" alone. */
void verdict_agent_states(const char *in, char *out, size_t len);
/* Is l's age only a lower bound under a second (IDLETIME just reset, no
 * agent): nothing known? */
bool verdict_age_unknown(const struct cli_lock *l);
/* An age for people: out_duration(), with ">= " when a lower bound,
 * "unknown" when verdict_age_unknown(). */
void verdict_age(const struct cli_lock *l, char *buf, size_t len);
/* Where l's age comes from, for people: "the agent", "the acquisition
 * time in the value", "the acquisition time in the client registry",
 * "OBJECT IDLETIME, a lower bound", or "nothing: ..." saying why. */
const char *verdict_age_from(const struct cli_lock *l);

/* ---- commands ---------------------------------------------------------------- */

int cmd_list(struct lockctl *lc, int argc, char **argv);
int cmd_show(struct lockctl *lc, int argc, char **argv);
int cmd_release(struct lockctl *lc, int argc, char **argv);
int cmd_expire(struct lockctl *lc, int argc, char **argv);
int cmd_audit(struct lockctl *lc, int argc, char **argv);
int cmd_deadlocks(struct lockctl *lc, int argc, char **argv);
int cmd_events(struct lockctl *lc, int argc, char **argv);

int cmd_classes(struct lockctl *lc, int argc, char **argv);
int cmd_alerts(struct lockctl *lc, int argc, char **argv);

/* main.c: print the help of the command named name to fp; to stderr (a
 * usage error, said just before) only its synopsis and where the help is. */
void lockctl_command_help(const char *name, FILE *fp);

/* ---- table.c ----------------------------------------------------------------- */

#define TABLE_WIDTH 100         /* columns of a terminal that gives none */
#define TABLE_WIDTH_MIN 20      /* narrower $COLUMNS / terminals are ignored */
#define TABLE_WIDTH_MAX 1000
#define TABLE_WIDE (1u << 20)   /* -o wide: nothing is cut or wrapped */
#define TABLE_COLS_MAX 16       /* columns of one table */
#define TABLE_DETAIL_INDENT 4   /* a TABLE_DETAIL cell under its row */

#define TABLE_RIGHT   0x1u      /* right-aligned (numbers) */
#define TABLE_FLEX    0x2u      /* takes the width the others leave */
#define TABLE_MIDDLE  0x4u      /* cut in the middle (keys: both ends tell) */
#define TABLE_WRAP    0x8u      /* wrapped onto more lines, never cut */
#define TABLE_OPTIONAL 0x10u    /* left out on a terminal too narrow for
                                 * the flex column (table_layout()) */
#define TABLE_DETAIL  0x20u     /* no column: the cell is a sentence
                                 * printed under its row, indented and
                                 * wrapped at spaces (table_paragraph()) */

struct table_col {
    const char *title;
    size_t max;                 /* widest it may get (not TABLE_FLEX) */
    unsigned flags;
    size_t min;                 /* > 0: may shrink to this on a narrow
                                 * terminal so the flex column keeps room */
};

struct table {
    const struct table_col *cols;
    size_t ncols;
    char **cells;               /* nrows * ncols terminal-safe UTF-8 strings */
    size_t nrows, cap;
};

void table_init(struct table *t, const struct table_col *cols, size_t ncols);
/* Add a row of raw byte strings (any bytes); they are made safe for a
 * terminal here.  0, or -1 on ENOMEM. */
int table_add(struct table *t, const char *const *cells, const size_t *lens);
/* Print within width columns: every line, header included, is at most
 * width columns; TABLE_WRAP cells go on over more lines, other cells too
 * wide are cut and marked with "…"; a TABLE_DETAIL cell follows its row
 * as a paragraph indented by TABLE_DETAIL_INDENT. */
void table_print(const struct table *t, FILE *fp, size_t width);
/* The width of each of t's columns in w (t->ncols of them) within width,
 * as table_print() prints them: 0 for a TABLE_OPTIONAL column left out. */
void table_layout(const struct table *t, size_t width, size_t *w);
/* The width human output fits: $COLUMNS (TABLE_WIDTH_MIN..MAX), else the
 * terminal's (TIOCGWINSZ on stdout; TABLE_WIDTH when it gives none), else
 * (a pipe, a file) TABLE_WIDE: nothing cut, as -o wide. */
size_t table_terminal_width(void);
/* A table cut one cell to fit (table_print(), events_table_print()). */
void table_count_cut(void);
/* How many cells the tables printed so far cut. */
size_t table_cut_count(void);
/* The same for stderr: $COLUMNS, else stderr's terminal, else as above. */
size_t table_stderr_width(void);
/* The next line of terminal-safe s wrapped at width columns: its bytes
 * (cut after the last space that fits, else hard at width), *skip the
 * spaces after it. */
size_t table_wrap_next(const char *s, size_t width, size_t *skip);
void table_release(struct table *t);

/*
 * Raw bytes as terminal-safe UTF-8: invalid UTF-8, control characters
 * (C0, DEL, C1), line separators, bidirectional overrides and zero-width
 * characters become U+FFFD, so a key can neither move the cursor nor
 * reorder the line.  Returns a malloc'd string, *width its columns.
 */
char *table_safe_text(const char *p, size_t n, size_t *width);
/* Columns of the widest cell of column i, its title included. */
size_t table_widest(const struct table *t, size_t i);
/* Columns of terminal-safe UTF-8 s: never less than a terminal shows. */
size_t table_text_width(const char *s);
/* s (terminal-safe) cut to at most width columns, "…" marking the cut
 * (at the end, or in the middle when middle); malloc'd. */
char *table_cut(const char *s, size_t width, bool middle);
/* printf one sentence to fp, made terminal-safe and wrapped at spaces to
 * width columns, continuation lines indented (for the lines around
 * tables: footers, outcomes). */
void table_line(FILE *fp, size_t width, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Terminal-safe s as a paragraph: lines of at most width columns, each
 * indented by indent, wrapped at spaces; a word is broken only when it is
 * wider than a line, with "…" at the end of each piece and the start of
 * the next line. */
void table_paragraph(FILE *fp, size_t width, size_t indent, const char *s);

/* eventtable.c: the agent's /api/v1/events answer as lockctl's output.
 * Add the rows of the events of doc (its "events" array) with time_ms at
 * or after since_ms (0: all) to t, made with events_table_cols; returns
 * how many, -1 on ENOMEM. */
/* list's columns (list.c): KEY, FORMAT, HOLDER, HOLDS, TTL, AGE, STATE. */
extern const struct table_col list_table_cols[];
extern const size_t list_table_ncols;
extern const struct table_col events_table_cols[];
extern const size_t events_table_ncols;
long events_table_add(struct table *t, const json_t *doc, int64_t since_ms);
/* Print t's events within width columns: the titles when titles (not
 * for --follow's later batches), then per event a line of time, kind,
 * target, key (and its holder when it fits there), then the holder and
 * the detail indented, wrapped at spaces, never inside a word that fits
 * a line (eventtable.c's opening comment).  0, -1 on ENOMEM. */
int events_table_print(const struct table *t, FILE *fp, size_t width, bool titles);

/* alerttable.c: the agent's /api/v1/alerts answer as lockctl alerts'
 * table: SEVERITY, ALERT, SUBJECT (the key on its target, the target, the
 * shard, the class, as the labels have them), SINCE, and the summary under
 * each row (TABLE_DETAIL). */
enum { ALERTS_SEVERITY, ALERTS_NAME, ALERTS_SUBJECT, ALERTS_SINCE, ALERTS_SUMMARY,
       ALERTS_NCOLS };
extern const struct table_col alerts_table_cols[ALERTS_NCOLS];
/* critical 0, warning 1, info 2, anything else (or NULL) 3. */
int alerts_severity_rank(const char *severity);
/* Is alert a (an element of the answer's "alerts") of target (its target
 * label; NULL: any) and severity (NULL: any)? */
bool alerts_selected(const json_t *a, const char *target, const char *severity);
/* Add the rows of doc's alerts that alerts_selected() takes to t (made
 * with alerts_table_cols), worst first: by severity, then the oldest
 * startsAt first (one it cannot read last), then in the agent's order;
 * SINCE is now_ms less startsAt; describe adds each description to its
 * summary.  Returns how many, -1 on ENOMEM. */
long alerts_table_add(struct table *t, const json_t *doc, const char *target,
                      const char *severity, bool describe, int64_t now_ms);

/* ---- output.c ---------------------------------------------------------------- */

/* (Keys, holders and times as JSON values: collectors/locks/lockjson.h.) */
/* Print root to stdout (indented, one document) and free it.  0 / -1. */
int out_json_print(json_t *root);
/* Remember msg as the error of this run (lockctl_warnx() does). */
void out_error_remember(const char *msg);
/* What to do about the error just remembered (the JSON error's "hint"). */
void out_error_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A --json run that exits rc (1..3) without having printed its JSON:
 * {"error": <the last error>, "hint": ..., "exit": rc} on stdout. */
void out_json_error(int rc);
/* The same hint for people, on stderr ("hint: ..."), after a run without
 * --json that fails: the command's own hint, else for exit 3 of a Redis
 * error the default one (what --json's error says). */
void out_text_hint(int rc);
/* A duration for people (common/duration.h: "850ms", "12s", "4m05s",
 * "3h02m", "2d04h", as alert texts write it); "-" when negative. */
void out_duration(int64_t ms, char *buf, size_t len);
/* A TTL: "none" for -1, "gone" for -2, else out_duration(). */
void out_ttl(long long pttl_ms, char *buf, size_t len);
/* Unix ms as "2026-08-21 12:30:37Z". */
void out_time(int64_t ms, char *buf, size_t len);
/* A holder for people, into buf (cap bytes, NUL-terminated; cut when
 * short): its bytes when they are text, else "hex:" and its bytes in hex
 * (what --holder-hex takes).  Returns the length written. */
#define OUT_HOLDER_MAX(n) (2 * (n) + 5)
size_t out_holder(const char *id, size_t n, char *buf, size_t cap);
/* out_holder() of a holder read, "…" after it when the read kept only its
 * first HOLDER_ID_MAX - 1 bytes (id_truncated); buf: OUT_HOLDER_MAX(n) + 3. */
size_t out_holder_shown(const struct lock_holder *h, char *buf, size_t cap);
/* Decode a --escaped argument (percent-encoding) into a malloc'd buffer.
 * NULL when malformed. */
char *out_unescape(const char *s, size_t *len);

/* ---- pasteline.c ------------------------------------------------------------ */

#define PASTE_WORDS_MAX 40
/* The longest word, quotes included.  A longer key gets no line: at 16 KiB
 * a line is already 200 rows of an 80-column terminal to select and paste
 * (the hostile 64 KiB key would be 800), and a percent-encoded 64 KiB key
 * would be over the 128 KiB the kernel takes for one argument. */
#define PASTE_WORD_MAX  (16 * 1024)

/* A command to paste: shell words, each quoted as it needs. */
struct pasteline {
    char *words[PASTE_WORDS_MAX];
    bool quoted[PASTE_WORDS_MAX];
    size_t n;
    bool failed;                /* do not print: why says why */
    char why[96];               /* ENOMEM, too many words, a key too long
                                 * for a command line, a control character
                                 * in an option */
};

/* lockctl as it was run (lc->argv0 when it holds a '/'), the options that
 * chose this run's Redis (-c, -t, --url, --tls-*), then command. */
void paste_init(struct pasteline *pl, const struct lockctl *lc, const char *command);
/* The same for the lock of target (a config target's name; NULL: lc's):
 * another target than lc's gets -c and -t, not the --url and --tls-* that
 * chose this run's Redis (lockctl deadlocks: each lock's own target). */
void paste_init_target(struct pasteline *pl, const struct lockctl *lc, const char *target,
                       const char *command);
/* One word (printable ASCII, else pl->failed). */
void paste_word(struct pasteline *pl, const char *s);
/* KEY and the holder option: a key that is not printable ASCII
 * percent-encoded with --escaped; a holder that is not, or under
 * --escaped, as --holder-hex. */
void paste_key_holder(struct pasteline *pl, const char *key, size_t keylen,
                      const char *holder, size_t holderlen);
/* Print within width columns, continued with " \" (sh joins the lines). */
void paste_print(FILE *fp, const struct pasteline *pl, size_t width);
/* heading and paste_print(), or "no release command: <why>" when there
 * is no line to paste. */
void paste_show(FILE *fp, const struct pasteline *pl, size_t width, const char *heading);
/* The line as one string (malloc'd; NULL on ENOMEM). */
char *paste_text(const struct pasteline *pl);
void paste_release(struct pasteline *pl);

/* ---- confirm.c --------------------------------------------------------------- */

/* Can we ask?  (stdin is a terminal) */
bool confirm_possible(void);
/* Ask question on stderr and read the answer from stdin: true only for
 * "y" or "yes". */
bool confirm_ask(const char *question);

#endif
