/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * options.c - the config option table: one row per key lockwatch reads.
 *
 * A row says where the key lives, its value type, its default, bounds,
 * where the value is stored and a line of help (struct config_option in
 * options.h).  A row's default is a string in file syntax and goes
 * through the same parser as a value from the file, so a default can
 * never be something a user could not write, and -n prints defaults
 * exactly as a file would say them.  Values are stored at offsets into the
 * section's struct (config.h), so the loader needs no per-key code; the
 * only per-key knowledge outside this table is the cross-key validation in
 * configcheck.c (sentinel mode needs sentinels, and so on).  How each value
 * type parses, frees, prints and describes its value is in optvalue.c.
 *
 * Also here, because the table is written in them: the sections, and the
 * names of the choices (modes, sink formats) in the order of their enums.
 */
#include "conf/options.h"

#include "common/lw1.h"
#include "conf/config.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *const bool_yesno[] = { "no", "yes", NULL };
static const char *const bool_onoff[] = { "off", "on", NULL };
static const char *const mode_names[] = { "standalone", "cluster", "sentinel", NULL };
static const char *const incremental_names[] = { "off", "on", "auto", NULL };
#define SINK_FORMAT_NAME(e, name, sym) name,
static const char *const format_names[] = { SINK_FORMATS(SINK_FORMAT_NAME) NULL };
#undef SINK_FORMAT_NAME

#define AT(S, m)  .off = offsetof(S, m), .size = sizeof(((S *)0)->m)
#define AT2(S, m) .off2 = offsetof(S, m)
#define AT3(S, m) .off3 = offsetof(S, m)

/*
 * The table.  Within a section, rows are in the order of the SPEC's example
 * config, which is the order -n prints them.  Bounds are there to catch
 * typos (5m for 5s) and values that would hurt the watched Redis, not to
 * second-guess operators: each is far from any sensible setting.
 */
/* The rows of the lock-format table (collectors/formats/formats.h) that
 * claim values, so a key may be declared one (format_patterns): conf/
 * may not include the table, so the names are here and test_formats
 * checks they are the table's formats_declarable() rows, in its order. */
static const char *const declarable_formats[] = {
    "redisson-rw", "redisson", "liblockwatch", "shedlock", "redis-py", "node-redlock",
    "redsync", "python-redis-lock", "redis-semaphore", "pottery", "spring", "plain", NULL
};

const struct config_option config_options[] = {
    /* [agent] */
    { .section = SECTION_AGENT, .key = "listen", .type = OPT_HOSTPORT,
      .def = "127.0.0.1:9717",
      AT(struct config, listen_host), AT2(struct config, listen_port),
      .help = "HTTP address: /metrics, API, status page" },
    { .section = SECTION_AGENT, .key = "samples", .type = OPT_HOSTPORT,
      .def = "127.0.0.1:9717", .flags = OPT_OFF,
      AT(struct config, samples_host), AT2(struct config, samples_port),
      AT3(struct config, samples_off),
      .help = "UDP address for wait/hold samples from clients (off disables)" },
    { .section = SECTION_AGENT, .key = "top_offenders", .type = OPT_INT,
      .def = "20", .min = 1, .max = 1000,
      AT(struct config, top_offenders),
      .help = "per-key series exported, worst first" },
    { .section = SECTION_AGENT, .key = "http_max_connections", .type = OPT_INT,
      .def = "1024", .min = 16, .max = 65536,
      AT(struct config, http_max_connections),
      .help = "HTTP connections open at once; more wait in the listen queue" },
    { .section = SECTION_AGENT, .key = "http_max_connections_per_client", .type = OPT_INT,
      .def = "64", .min = 1, .max = 65536,
      AT(struct config, http_max_connections_per_client),
      .help = "from one address; beyond: 1s per request, 503 but for the probes and /metrics" },
    { .section = SECTION_AGENT, .key = "http_request_timeout", .type = OPT_DURATION,
      .def = "10s", .min = 100, .max = 10 * MS_M,
      AT(struct config, http_request_timeout_ms),
      .help = "a whole request (headers and body) must arrive within this" },
    { .section = SECTION_AGENT, .key = "http_max_api_requests", .type = OPT_INT,
      .def = "16", .min = 1, .max = 4096,
      AT(struct config, http_max_api_requests),
      .help = "API and status page answers in flight at once; more get 503" },
    { .section = SECTION_AGENT, .key = "replica", .type = OPT_STRING,
      AT(struct config, replica), .example = "a",
      .help = "this agent's name among replicas watching the same targets (HA); unset: none" },
    { .section = SECTION_AGENT, .key = "shard", .type = OPT_SHARD,
      .def = "0/1", .max = 1024,
      AT(struct config, shard_index), AT2(struct config, shard_total),
      .help = "I/N: watch only the targets that hash to shard I of N (rendezvous, from 0)" },
    { .section = SECTION_AGENT, .key = "shard_peers", .type = OPT_LIST,
      AT(struct config, shard_peers), AT2(struct config, nshard_peers),
      .example = "http://lw-0.lw:9717, http://lw-1.lw:9717",
      .help = "the N shards' base URLs, shard 0's first: linked; the others checked every "
      "10s" },
    { .section = SECTION_AGENT, .key = "leader_target", .type = OPT_STRING,
      AT(struct config, leader_target), .example = "main",
      .help = "replicas elect one leader on this [target]: only it sends to generic and slack sinks" },
    { .section = SECTION_AGENT, .key = "leader_group", .type = OPT_STRING,
      .def = "default", AT(struct config, leader_group),
      .help = "the leader lock is lockwatch:leader:<group> (a shard's gets .<I>of<N> appended)" },
    { .section = SECTION_AGENT, .key = "leader_lease", .type = OPT_DURATION,
      .def = "10s", .min = 1 * MS_S, .max = 10 * MS_M,
      AT(struct config, leader_lease_ms),
      .help = "the leader lock's lease, renewed every third; a dead leader is replaced within it + 1s" },

    /* [target NAME] */
    { .section = SECTION_TARGET, .key = "url", .type = OPT_REDIS_URL,
      .def = "redis://127.0.0.1:6379/0",
      AT(struct target_conf, url),
      .help = "redis://[user@]host[:port][/db] (rediss:// for TLS); the password goes in "
              "password_file" },
    { .section = SECTION_TARGET, .key = "password_file", .type = OPT_FILE,
      AT(struct target_conf, password_file), AT2(struct target_conf, password),
      .example = "/etc/lockwatch/main.pass", .holds = "the password",
      .help = "file with the Redis password alone on one line; only lockwatchd may read it" },
    { .section = SECTION_TARGET, .key = "release_user", .type = OPT_STRING,
      AT(struct target_conf, release_user), .example = "lockctl",
      .help = "ACL user of the writes: release, expire, wake-ups, audit stream (unset: url's "
              "user)" },
    { .section = SECTION_TARGET, .key = "release_password_file", .type = OPT_FILE,
      AT(struct target_conf, release_password_file), AT2(struct target_conf, release_password),
      .example = "/etc/lockwatch/main.release.pass", .holds = "the release user's password",
      .help = "file with release_user's password alone on one line; only lockwatchd may "
              "read it" },
    { .section = SECTION_TARGET, .key = "tls_ca_file", .type = OPT_PEM,
      AT(struct target_conf, tls_ca_file), AT2(struct target_conf, tls_ca),
      .example = "/etc/lockwatch/redis-ca.pem", .holds = "the CA certificates",
      .help = "rediss://: CAs that sign the server's certificate (unset: the system's)" },
    { .section = SECTION_TARGET, .key = "tls_ca_dir", .type = OPT_STRING,
      AT(struct target_conf, tls_ca_dir), .example = "/etc/ssl/certs",
      .help = "rediss://: a directory of hashed CA certificates (c_rehash), as well" },
    { .section = SECTION_TARGET, .key = "tls_cert_file", .type = OPT_PEM,
      AT(struct target_conf, tls_cert_file), AT2(struct target_conf, tls_cert),
      .example = "/etc/lockwatch/client.pem", .holds = "the client certificate",
      .help = "rediss://: client certificate, for servers that require one" },
    { .section = SECTION_TARGET, .key = "tls_key_file", .type = OPT_PEM,
      AT(struct target_conf, tls_key_file), AT2(struct target_conf, tls_key),
      .example = "/etc/lockwatch/client.key", .holds = "the client's private key",
      .help = "rediss://: the client certificate's private key; only lockwatchd may read it" },
    { .section = SECTION_TARGET, .key = "tls_server_name", .type = OPT_STRING,
      AT(struct target_conf, tls_server_name), .example = "redis.example.com",
      .help = "rediss://: SNI and the name the certificate must carry (unset: the URL's host)" },
    { .section = SECTION_TARGET, .key = "tls_verify", .type = OPT_BOOL,
      .def = "on", .names = bool_onoff,
      AT(struct target_conf, tls_verify),
      .help = "rediss://: verify the server's certificate and name (off: warned at every load)" },
    { .section = SECTION_TARGET, .key = "mode", .type = OPT_ENUM,
      .def = "standalone", .names = mode_names,
      AT(struct target_conf, mode),
      .help = "standalone | cluster | sentinel" },
    { .section = SECTION_TARGET, .key = "sentinels", .type = OPT_HOSTPORTS,
      AT(struct target_conf, sentinels), AT2(struct target_conf, nsentinels),
      .example = "127.0.0.1:26379",
      .help = "mode = sentinel: the sentinels, comma separated host:port" },
    { .section = SECTION_TARGET, .key = "master_name", .type = OPT_STRING,
      AT(struct target_conf, master_name), .example = "mymaster",
      .help = "mode = sentinel: the monitored master's name" },
    { .section = SECTION_TARGET, .key = "patterns", .type = OPT_LIST,
      .def = "lock:*",
      AT(struct target_conf, patterns), AT2(struct target_conf, npatterns),
      .help = "comma separated globs of lock keys; release refuses other keys" },
    { .section = SECTION_TARGET, .key = "exclude_patterns", .type = OPT_LIST,
      AT(struct target_conf, exclude_patterns), AT2(struct target_conf, nexclude_patterns),
      .example = "lock:stats:*, lock:*:meta",
      .help = "comma separated globs of keys that are not locks: never read, listed or "
              "released" },
    { .section = SECTION_TARGET, .key = "semaphore_patterns", .type = OPT_LIST,
      AT(struct target_conf, semaphore_patterns), AT2(struct target_conf, nsemaphore_patterns),
      .example = "lock:sem:*",
      .help = "comma separated globs of Redisson RSemaphore keys: never leaked or long" },
    { .section = SECTION_TARGET, .key = "format_patterns", .type = OPT_FORMAT_PATTERNS,
      AT(struct target_conf, format_globs), AT2(struct target_conf, nformat_patterns),
      AT3(struct target_conf, format_names), .names = declarable_formats,
      .example = "lock:orders:*=node-redlock lock:jobs:*=redis-py",
      .help = "glob=format pairs: keys whose format is declared, not guessed from the value" },
    { .section = SECTION_TARGET, .key = "scan_interval", .type = OPT_DURATION,
      .def = "15s", .min = 100, .max = MS_D,
      AT(struct target_conf, scan_interval_ms),
      .help = "start a full scan this often" },
    { .section = SECTION_TARGET, .key = "scan_count", .type = OPT_INT,
      .def = "1000", .min = 1, .max = 100000,
      AT(struct target_conf, scan_count),
      .help = "SCAN COUNT hint" },
    { .section = SECTION_TARGET, .key = "scan_duty", .type = OPT_PERCENT,
      .def = "25%",
      AT(struct target_conf, scan_duty),
      .help = "at most this share of wall time spent in scan round trips" },
    { .section = SECTION_TARGET, .key = "max_keys_per_second", .type = OPT_INT,
      .def = "0", .min = 0, .max = 100000000,
      AT(struct target_conf, max_keys_per_second),
      .help = "0 = unlimited; an absolute cap on top of scan_duty" },
    { .section = SECTION_TARGET, .key = "scan_replicas", .type = OPT_BOOL,
      .def = "no", .names = bool_yesno,
      AT(struct target_conf, scan_replicas),
      .help = "mode = cluster: scan replicas (READONLY) instead of primaries" },
    { .section = SECTION_TARGET, .key = "replica_silence", .type = OPT_DURATION,
      .def = "30s", .min = MS_S, .max = MS_H,
      AT(struct target_conf, replica_silence_ms),
      .help = "a replica silent longer (whole seconds) is cut off: 3 x repl-ping-replica-period" },
    { .section = SECTION_TARGET, .key = "connect_timeout", .type = OPT_DURATION,
      .def = "2s", .min = 10, .max = 5 * MS_M,
      AT(struct target_conf, connect_timeout_ms),
      .help = "give up connecting to Redis after this long" },
    { .section = SECTION_TARGET, .key = "command_timeout", .type = OPT_DURATION,
      .def = "5s", .min = 10, .max = 10 * MS_M,
      AT(struct target_conf, command_timeout_ms),
      .help = "give up waiting for a Redis reply after this long" },
    { .section = SECTION_TARGET, .key = "scan_timeout", .type = OPT_DURATION,
      .def = "1m", .min = MS_S, .max = MS_D,
      AT(struct target_conf, scan_timeout_ms),
      .help = "a whole scan pass gives up after this long: the target is down, the reason "
              "named" },
    { .section = SECTION_TARGET, .key = "incremental", .type = OPT_ENUM,
      .def = "auto", .names = incremental_names,
      AT(struct target_conf, incremental),
      .help = "follow keyspace notifications between scans (auto: if the server sends them)" },
    { .section = SECTION_TARGET, .key = "reconcile_interval", .type = OPT_DURATION,
      .def = "1h", .min = MS_S, .max = MS_D,
      AT(struct target_conf, reconcile_interval_ms),
      .help = "while following: a full scan this often, to repair lost notifications" },
    { .section = SECTION_TARGET, .key = "follow_max_locks", .type = OPT_INT,
      .def = "500000", .min = 1, .max = 100000000,
      AT(struct target_conf, follow_max_locks),
      .help = "follow while at most this many locks (a copy of each is kept); past it, scan" },

    /* [redlock NAME] */
    { .section = SECTION_REDLOCK, .key = "targets", .type = OPT_LIST,
      .flags = OPT_REQUIRED,
      AT(struct redlock_conf, targets), AT2(struct redlock_conf, ntargets),
      .example = "r1, r2, r3",
      .help = "the [target] names that together form one Redlock group (2 or more)" },

    /* [rules] */
    { .section = SECTION_RULES, .key = "leak_grace", .type = OPT_DURATION,
      .def = "30s", .min = 0, .max = 30 * MS_D,
      AT(struct config, rules.judge.leak_grace_ms),
      .help = "a lock with no TTL is a leak once seen that long" },
    { .section = SECTION_RULES, .key = "max_hold", .type = OPT_DURATION,
      .def = "5m", .min = MS_S, .max = 30 * MS_D,
      AT(struct config, rules.judge.max_hold_ms),
      .help = "the same holder for longer is a long holder" },
    { .section = SECTION_RULES, .key = "max_reentrancy", .type = OPT_INT,
      .def = "16", .min = 1, .max = 1000000,
      AT(struct config, rules.judge.max_reentrancy),
      .help = "hold count on a reentrant lock at or above this alerts" },
    { .section = SECTION_RULES, .key = "wait_p99", .type = OPT_DURATION,
      .def = "1s", .min = 1, .max = MS_H,
      AT(struct config, rules.wait_p99_ms),
      .help = "P99 acquire wait per lock class above this alerts" },
    { .section = SECTION_RULES, .key = "wait_window", .type = OPT_DURATION,
      .def = "1m", .min = MS_S, .max = MS_D,
      AT(struct config, rules.wait_window_ms),
      .help = "window of the P99 acquire wait" },
    { .section = SECTION_RULES, .key = "wait_min_samples", .type = OPT_INT,
      .def = "20", .min = 1, .max = 1000000,
      AT(struct config, rules.wait_min_samples),
      .help = "fewer samples in the window never alert" },
    { .section = SECTION_RULES, .key = "repeat_interval", .type = OPT_DURATION,
      .def = "1h", .min = MS_M, .max = 30 * MS_D,
      AT(struct config, rules.repeat_interval_ms),
      .help = "re-send a firing alert this often" },
    { .section = SECTION_RULES, .key = "lease_short_at", .type = OPT_PERCENT,
      .def = "80%",
      AT(struct config, rules.lease_short_at),
      .help = "hold P99.9 of a class above this share of its lease alerts (LockLeaseTooShort)" },
    { .section = SECTION_RULES, .key = "lease_too_long", .type = OPT_BOOL,
      .def = "off", .names = bool_onoff,
      AT(struct config, rules.lease_too_long),
      .help = "judge LockLeaseTooLong (info): lease above lease_long_factor x hold P99.9" },
    { .section = SECTION_RULES, .key = "lease_long_factor", .type = OPT_INT,
      .def = "20", .min = 2, .max = 100000,
      AT(struct config, rules.lease_long_factor),
      .help = "a lease this many times the hold P99.9 is too long (with lease_too_long)" },
    { .section = SECTION_RULES, .key = "lease_min_holds", .type = OPT_INT,
      .def = "100", .min = 1, .max = 1000000,
      AT(struct config, rules.lease_min_holds),
      .help = "fewer holds of a class in wait_window never judge its lease" },
    { .section = SECTION_RULES, .key = "count_surge_factor", .type = OPT_INT,
      .def = "3", .min = 2, .max = 1000,
      AT(struct config, rules.count_surge_factor),
      .help = "locks of a class above this x its baseline alert (LockCountSurge)" },
    { .section = SECTION_RULES, .key = "count_surge_floor", .type = OPT_INT,
      .def = "50", .min = 1, .max = 100000000,
      AT(struct config, rules.count_surge_floor),
      .help = "the baseline LockCountSurge multiplies is at least this (small classes)" },
    { .section = SECTION_RULES, .key = "count_baseline_window", .type = OPT_DURATION,
      .def = "1h", .min = MS_M, .max = 7 * MS_D,
      AT(struct config, rules.count_baseline_window_ms),
      .help = "a class's baseline is its median count over this window (a count a second: 1m "
      "at least)" },
    { .section = SECTION_RULES, .key = "runbook_url", .type = OPT_STRING,
      AT(struct config, runbook_url),
      .example = "https://wiki.example/lockwatch/{alertname}",
      .help = "each alert's runbook_url annotation, {alertname} its name; unset: none" },

    /* [webhook NAME] */
    { .section = SECTION_WEBHOOK, .key = "url", .type = OPT_HTTP_URL,
      .flags = OPT_REQUIRED,
      AT(struct webhook_conf, url), .example = "https://hooks.example/lockwatch",
      .help = "where notifications are POSTed; -n shows scheme, host, port, 1st path segment, the rest as ***" },
    { .section = SECTION_WEBHOOK, .key = "format", .type = OPT_ENUM,
      .def = "generic", .names = format_names,
      AT(struct webhook_conf, format),
      .help = "generic | slack | alertmanager" },
    { .section = SECTION_WEBHOOK, .key = "secret_file", .type = OPT_FILE,
      AT(struct webhook_conf, secret_file), AT2(struct webhook_conf, secret),
      .example = "/etc/lockwatch/oncall.secret", .holds = "the signing secret",
      .help = "format = generic: file holding the HMAC-SHA256 signing secret" },
    { .section = SECTION_WEBHOOK, .key = "watchdog", .type = OPT_BOOL,
      .def = "off", .names = bool_onoff,
      AT(struct webhook_conf, watchdog),
      .help = "format = alertmanager: also post LockwatchWatchdog, always firing while this agent runs" },
    { .section = SECTION_WEBHOOK, .key = "timeout", .type = OPT_DURATION,
      .def = "10s", .min = 100, .max = 5 * MS_M,
      AT(struct webhook_conf, delivery.timeout_ms),
      .help = "give up on one delivery attempt after this long" },
    { .section = SECTION_WEBHOOK, .key = "retry_base", .type = OPT_DURATION,
      .def = "1s", .min = 10, .max = MS_M,
      AT(struct webhook_conf, delivery.retry_base_ms),
      .help = "first retry within this, doubling per try up to 5m (full jitter)" },

    /* [unlock] */
    { .section = SECTION_UNLOCK, .key = "http", .type = OPT_BOOL,
      .def = "off", .names = bool_onoff,
      AT(struct config, unlock_http),
      .help = "POST /api/v1/locks/release; needs token_file when on" },
    { .section = SECTION_UNLOCK, .key = "token_file", .type = OPT_FILE,
      AT(struct config, unlock_token_file), AT2(struct config, unlock_token),
      .example = "/etc/lockwatch/unlock.token", .holds = "the bearer token",
      .help = "the release API's bearer token: 16 bytes or more (less: a warning), "
              "mode 0600/0640" },
    { .section = SECTION_UNLOCK, .key = "audit_stream", .type = OPT_STRING,
      .def = "lockwatch:audit",
      AT(struct config, audit_stream),
      .help = "capped Redis stream of every release and expire (and refusals, "
              "bounded)" },

    /* [samples] */
    { .section = SECTION_SAMPLES, .key = "key_file", .type = OPT_FILE,
      .min = LW1_KEY_MIN,   /* bytes: a shorter MAC key is guessable */
      AT(struct config, samples_key_file), AT2(struct config, samples_key),
      .example = "/etc/lockwatch/samples.key", .holds = "the samples key",
      .help = "shared key, one line of 16+ bytes: accept only sample datagrams signed with it" },
    { .section = SECTION_SAMPLES, .key = "batch_wait", .type = OPT_DURATION,
      .def = "20ms", .min = 0, .max = MS_S,
      AT(struct config, samples_batch_wait_ms),
      .help = "after a read, wait up to this before reading again: fewer wake-ups "
              "(0ms: none)" },
    { .section = SECTION_SAMPLES, .key = "state_file", .type = OPT_STRING,
      AT(struct config, samples_state_file), .example = "/var/lib/lockwatch/waiting",
      .help = "keep who waits for and holds what across a restart in this file "
              "(absolute path)" },
};

const size_t config_noptions = ARRAY_LEN(config_options);

static const struct {
    const char *name;
    bool named;
} sections[SECTION_COUNT] = {
    [SECTION_AGENT]   = { "agent", false },
    [SECTION_TARGET]  = { "target", true },
    [SECTION_REDLOCK] = { "redlock", true },
    [SECTION_RULES]   = { "rules", false },
    [SECTION_CLASSES] = { "classes", false },
    [SECTION_WEBHOOK] = { "webhook", true },
    [SECTION_UNLOCK]  = { "unlock", false },
    [SECTION_SAMPLES] = { "samples", false },
};

const char *
config_section_name(enum config_section s)
{
    return (unsigned)s < SECTION_COUNT ? sections[s].name : "?";
}

bool
config_section_named(enum config_section s)
{
    return (unsigned)s < SECTION_COUNT && sections[s].named;
}

const char *
config_sink_format_str(enum sink_format format)
{
    return (unsigned)format < ARRAY_LEN(format_names) - 1 ? format_names[format] : "?";
}
