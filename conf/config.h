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

#define CONFIG_DEFAULT_PATH "/etc/lockwatch/lockwatch.ini"
#define CONFIG_MAX_TARGETS  64
#define CONFIG_ERR_LEN      512

enum target_mode { TARGET_STANDALONE, TARGET_CLUSTER, TARGET_SENTINEL };

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
    enum target_mode mode;
    struct hostport *sentinels; /* mode = sentinel */
    size_t nsentinels;
    char *master_name;
    char **patterns;            /* at least one */
    size_t npatterns;
    int64_t scan_interval_ms;
    int scan_count;
    double scan_duty;           /* 0 < duty <= 1 */
    long max_keys_per_second;   /* 0 = unlimited */
    bool scan_replicas;
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
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

enum sink_format { SINK_GENERIC, SINK_SLACK, SINK_ALERTMANAGER };

struct webhook_conf {
    char *name;
    char *url;
    enum sink_format format;
    char *secret_file;
    char *secret;               /* read from secret_file; never printed */
    int64_t timeout_ms;
};

struct config {
    char *path;                 /* file it came from; "(built-in defaults)" */

    /* [agent] */
    char listen_host[256];
    int listen_port;
    bool samples_off;
    char samples_host[256];
    int samples_port;
    int top_offenders;

    struct target_conf *targets;
    size_t ntargets;

    struct redlock_conf *redlocks;
    size_t nredlocks;

    /* [rules] */
    int64_t leak_grace_ms;
    int64_t max_hold_ms;
    long max_reentrancy;
    int64_t wait_p99_ms;
    int64_t wait_window_ms;
    long wait_min_samples;
    int64_t repeat_interval_ms;

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
};

/*
 * Load and validate PATH.  On success returns 0 and *out owns a new config.
 * On failure returns -1 and writes one line to err naming file, line, key
 * and what is allowed, e.g.
 *   /etc/lockwatch/lockwatch.ini:12: [rules] max_hold: "5x" is not a
 *   duration (use a number with ms, s, m, h or d)
 * PATH NULL means the built-in defaults (one target redis://127.0.0.1:6379,
 * pattern lock:*).
 */
int config_load(const char *path, struct config **out, char *err, size_t errlen);

/* Free a config from config_load(); NULL is fine. */
void config_free(struct config *cfg);

/* Print the effective configuration as INI, secrets redacted. */
void config_print(const struct config *cfg, FILE *fp);

/* Parse "250ms", "15s", "5m", "1h", "2d" into milliseconds.  0 / -1. */
int config_parse_duration(const char *s, int64_t *ms);

/* Find a target by name; NULL when absent. */
const struct target_conf *config_target(const struct config *cfg, const char *name);

#endif
