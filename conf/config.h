/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.h - the lockwatch configuration: one table of options drives
 * parsing, validation, defaults and the effective-config dump (-n).
 *
 * The agent and lockctl read the same INI file (SPEC "Config").  A loaded
 * configuration is immutable: a reload builds a new one, validates it whole
 * and only then replaces the old one.
 */
#ifndef LOCKWATCH_CONFIG_H
#define LOCKWATCH_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#include "conf/sink_formats.h"

#define CONFIG_DEFAULT_PATH "/etc/lockwatch/lockwatch.ini"
#define CONFIG_MAX_TARGETS  64
#define CONFIG_ERR_LEN      512
#define CONFIG_MAX_REDLOCKS 32
#define CONFIG_MAX_WEBHOOKS 16
#define CONFIG_MAX_CLASSES  1000    /* [classes] entries */
#define CONFIG_NAME_MAX     64      /* NAME in [target NAME] etc.: [a-zA-Z0-9_.-]+ */
#define CONFIG_CLASS_NAME_MAX 128   /* bytes of a [classes] class name */

enum target_mode { TARGET_STANDALONE, TARGET_CLUSTER, TARGET_SENTINEL };

/* incremental =: follow keyspace notifications between full scans */
enum target_incremental { INCR_OFF, INCR_ON, INCR_AUTO };

struct hostport {
    char host[256];
    int port;
};

struct target_conf {
    char *name;                 /* from [target NAME] */
    /* url = redis://[user@]host:port/db */
    char *url;                  /* as written, for -n */
    char *user;                 /* NULL when the URL names none */
    char host[256];
    int port;
    int db;
    char *password_file;        /* NULL when none */
    char *password;             /* read from password_file; never printed */
    /* The writes (the guarded release and expire with their wake-ups and
     * audit entry, lockctl audit's read of that stream) as another ACL
     * user than the scans' read-only one: both or neither
     * (config_target_writer()). */
    char *release_user;         /* NULL: the writes go as user/password */
    char *release_password_file;
    char *release_password;     /* read from release_password_file; never printed */
    enum target_mode mode;
    struct hostport *sentinels; /* mode = sentinel */
    size_t nsentinels;
    char *master_name;
    char **patterns;            /* at least one */
    size_t npatterns;
    char **exclude_patterns;    /* may be none */
    size_t nexclude_patterns;
    char **semaphore_patterns;  /* may be none: Redisson RSemaphore keys */
    size_t nsemaphore_patterns;
    /* format_patterns: keys whose format the operator declares (glob i ->
     * the format table's row named format_names[i]); may be none */
    char **format_globs;
    char **format_names;
    size_t nformat_patterns;
    int64_t scan_interval_ms;
    int scan_count;
    double scan_duty;           /* 0 < duty <= 1 */
    long max_keys_per_second;   /* 0 = unlimited */
    bool scan_replicas;
    int64_t replica_silence_ms; /* a replica whose primary sent nothing for
                                 * longer is cut off (serverinfo.h) */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int64_t scan_timeout_ms;    /* a whole scan pass gives up after this */
    /* TLS: url = rediss://.  The PEM files are read at load time (a reload
     * reads renewed ones); tls_key is a secret, never printed. */
    bool tls;
    char tls_name[256];         /* the name the certificate must carry when
                                 * tls_server_name is unset: the URL's host
                                 * (a sentinel's primary: its address) */
    char *tls_ca_file;          /* NULL: the system's CAs (and tls_ca_dir) */
    char *tls_ca;               /* its PEM text */
    char *tls_ca_dir;           /* hashed CA directory (c_rehash), or NULL */
    char *tls_cert_file;        /* client certificate (chain), or NULL */
    char *tls_cert;
    char *tls_key_file;         /* its private key, or NULL */
    char *tls_key;              /* never printed */
    char *tls_server_name;      /* SNI and the name verified, or NULL */
    bool tls_verify;            /* off: no verification (config_warnings) */
    enum target_incremental incremental;
    int64_t reconcile_interval_ms;  /* full scan this often while following */
    long follow_max_locks;          /* follow only with at most this many locks */
};

struct class_rule {
    char *glob;
    char *name;
};

struct redlock_conf {
    char *name;
    char **targets;
    size_t ntargets;
};

#define SINK_FORMAT_ENUM(e, name, sym) SINK_##e,
enum sink_format { SINK_FORMATS(SINK_FORMAT_ENUM) SINK_FORMAT_COUNT };
#undef SINK_FORMAT_ENUM

/*
 * The [rules] that decide a lock's states, for the one judge
 * (collectors/locks/lockstate.h lockstate_judge()).  Defined here, where
 * the config holds it, so that every user of these rules (the scanner,
 * the Redlock groups, the alert texts, lockctl) takes this one struct
 * from the config, whole, and a new state rule is one field here.
 */
struct lockstate_rules {
    int64_t leak_grace_ms;      /* no TTL for this long: leaked */
    int64_t max_hold_ms;        /* one holder for longer: long */
    long max_reentrancy;        /* a hold count at or above it (0: off): reentrant_high */
};

/*
 * [rules], the one home of every rule setting.  Its users keep either a
 * pointer into the running config or a whole-struct copy made in one
 * assignment (the alert rules, which outlive a reload's old config), so
 * a reload swaps all of it at once and a new setting is added once: a
 * field here and a row in conf/options.c.
 */
struct rules_conf {
    struct lockstate_rules judge;   /* leak_grace, max_hold, max_reentrancy */
    int64_t wait_p99_ms;
    int64_t wait_window_ms;
    long wait_min_samples;
    int64_t repeat_interval_ms;
    /* leases against holds, per class (LockLeaseTooShort / TooLong) */
    double lease_short_at;          /* hold P99.9 above this share of the lease */
    bool lease_too_long;            /* LockLeaseTooLong judged at all */
    long lease_long_factor;         /* lease above this x hold P99.9 */
    long lease_min_holds;           /* holds in wait_window before judging */
    /* count of locks per class against its baseline (LockCountSurge) */
    long count_surge_factor;        /* k: count above k x baseline */
    long count_surge_floor;         /* the baseline is at least this */
    int64_t count_baseline_window_ms;   /* the median over this long */
};

/* How a [webhook]'s notices are delivered: the notifier (alerts/notifier.h)
 * keeps a whole copy per sink, swapped on reload; a new delivery setting
 * is one field here. */
struct webhook_delivery {
    int64_t timeout_ms;         /* one attempt */
    int64_t retry_base_ms;      /* first retry waits up to this (full jitter) */
};

struct webhook_conf {
    char *name;
    char *url;
    enum sink_format format;
    char *secret_file;
    char *secret;               /* read from secret_file; never printed */
    struct webhook_delivery delivery;
    bool watchdog;              /* format = alertmanager: post LockwatchWatchdog */
};

/* Where a key was set: config_load notes every key it reads (built-in
 * defaults have none), so that a warning can name the line. */
struct config_keyline {
    char *label;                /* "[target main]", "[classes]" */
    char *key;                  /* the option, or a [classes] glob */
    int line;
};

struct config {
    char *path;                 /* file it came from; "(built-in defaults)" */
    struct config_keyline *keylines;
    size_t nkeylines;

    /* [agent] */
    char listen_host[256];
    int listen_port;
    bool samples_off;           /* samples = off: host "" and port 0 */
    char samples_host[256];
    int samples_port;
    int top_offenders;
    int http_max_connections;
    int http_max_connections_per_client;
    int64_t http_request_timeout_ms;
    int http_max_api_requests;
    /* HA and sharding (docs/deploying.md) */
    char *replica;              /* replica = NAME; NULL: none */
    int shard_index;            /* shard = I/N (0/1 when unset: every target) */
    int shard_total;
    char **shard_peers;         /* shard_peers: N base URLs, [I] is shard I's; */
    size_t nshard_peers;        /* 0 when unset */
    char *leader_target;        /* a [target] holding the leader lock; NULL:
                                 * no election (direct sinks send from every
                                 * replica) */
    char *leader_group;         /* lockwatch:leader:<group> */
    int64_t leader_lease_ms;

    struct target_conf *targets;    /* at least one: "default" when the file has none */
    size_t ntargets;
    bool default_target;        /* the file has no [target]: targets is the built-in one */
    /* The targets another shard watches, moved out of targets[] (and the
     * [redlock] groups with no member left here, out of redlocks[]) by
     * config_shard_split() (conf/shard.h); none before it. */
    struct target_conf *away;
    size_t naway;
    int *away_shard;            /* away[i] is watched by shard away_shard[i] */
    struct redlock_conf *away_redlocks;
    size_t naway_redlocks;

    struct redlock_conf *redlocks;
    size_t nredlocks;

    struct rules_conf rules;    /* [rules] */
    char *runbook_url;          /* [rules] runbook_url: each alert's link,
                                 * {alertname} its name; NULL: none */

    /* [classes], in file order: first match wins */
    struct class_rule *classes;
    size_t nclasses;

    struct webhook_conf *webhooks;
    size_t nwebhooks;

    /* [unlock] */
    bool unlock_http;
    char *unlock_token_file;
    char *unlock_token;         /* never printed */
    char *audit_stream;

    /* [samples] */
    char *samples_key_file;     /* NULL when none: samples are not checked */
    char *samples_key;          /* read from samples_key_file; never printed */
    int64_t samples_batch_wait_ms;      /* ingest.c: wait after a read, at most */
    char *samples_state_file;   /* NULL: the waiting table is not kept across a
                                 * restart (collectors/waits/waitstate.h) */
};

/*
 * Ownership: a struct config and everything it points to belong to it;
 * config_free() releases all of it (secrets are wiped first).  Nothing
 * holds a reference into the file or into inih.  Strings are NUL-terminated
 * and never NULL unless the comment on the field says so.  The option table
 * behind all of this (keys, types, defaults, bounds, help) is in
 * conf/options.h, for the man page and anything else that lists options.
 */

/*
 * Load and validate PATH.  On success returns 0 and *out owns a new config.
 * On failure returns -1 and writes one line to err naming file, line, key
 * and what is allowed, e.g.
 *   /etc/lockwatch/lockwatch.ini:12: [rules] max_hold: "5x" is not a
 *   duration (use a number with ms, s, m, h or d)
 * PATH NULL means the built-in defaults (one target redis://127.0.0.1:6379,
 * pattern lock:*).  A file with no [target] section gets that same target,
 * named "default".  Secret files (*_file keys) are read here, so a missing
 * or unreadable one fails the load.  A missing PATH fails with
 *   cannot open config "PATH": No such file or directory
 * and falling back to the built-in defaults when CONFIG_DEFAULT_PATH does
 * not exist is the caller's decision (check with access() first).
 * Thread-safe: no global state; err may be NULL.
 */
int config_load(const char *path, struct config **out, char *err, size_t errlen);

/* Free a config from config_load(); NULL is fine. */
void config_free(struct config *cfg);

/*
 * Print the effective configuration as INI that config_load() reads back
 * to the same values: every option of every section, defaults included,
 * unset optional keys as "; key is not set" comments.  Secret files are
 * shown by path; their contents are never printed.
 */
void config_print(const struct config *cfg, FILE *fp);

/* Parse "250ms", "15s", "1.5s", "5m", "1h", "2d" (or a bare "0") into
 * milliseconds.  0 / -1 (syntax, negative, missing unit, not a whole
 * number of ms, overflow). */
int config_parse_duration(const char *s, int64_t *ms);

/* Find a target by name; NULL when absent. */
const struct target_conf *config_target(const struct config *cfg, const char *name);

/*
 * Where t points as configured, for telling whether two configs watch the
 * same data: "host:port/db" of its url (a cluster: its seed), or
 * "sentinel MASTER via h1:p1,h2:p2/db", the sentinels sorted (by host
 * text, then port: listed in any order, the same address); cut to
 * CONFIG_ADDRESS_MAX - 1 bytes.  The agent's API reports it
 * (target_address) and lockctl compares it with its own before it shows
 * the agent's view (numeric hosts and localhost are the same when they
 * share an address: cli/agent.c).
 */
#define CONFIG_ADDRESS_MAX 320
void config_target_address(const struct target_conf *t, char *buf, size_t len);

/*
 * Do a and b name the same server?  Mode and db alike, and the same host
 * (names that share an address: "localhost", "127.0.0.1") and port; for
 * Sentinel the same master_name with a sentinel in common.  A cluster's
 * URL node is compared as a host (another node of it is another URL).
 * Resolves names: not for a hot path (a reload keeps a target's view by it).
 */
bool config_same_server(const struct target_conf *a, const struct target_conf *b);

/*
 * t as the writes connect (the guarded release and expire, their wake-ups
 * and audit entry, lockctl audit): a shallow copy of t (nothing to free)
 * whose user and password are release_user's when t has one, else t's
 * own.  Reads (scans, list, show) connect as t.
 */
void config_target_writer(const struct target_conf *t, struct target_conf *out);

/* "generic", "slack", "alertmanager": the spelling the config file uses. */
const char *config_sink_format_str(enum sink_format format);

/*
 * What a valid config may still get dangerously wrong (configwarn.c): the
 * release endpoint on a non-loopback listener, a release token under
 * CONFIG_TOKEN_MIN bytes, secret and key files (password_file,
 * release_password_file, token_file, tls_key_file, key_file, secret_file)
 * that others may read, a rediss://
 * target with tls_verify = off.  emit gets one line per finding, which
 * starts with "PATH:LINE: " when the key was set in the file (no other
 * prefix); returns how many.  lockwatchd calls it at every load: -n,
 * --once, the daemon's start and reloads.
 */
#define CONFIG_TOKEN_MIN 16
typedef void (*config_warn_fn)(void *arg, const char *msg);
int config_warnings(const struct config *cfg, config_warn_fn emit, void *arg);

#endif
