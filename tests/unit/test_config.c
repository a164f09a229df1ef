/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_config.c - unit tests of the config module (conf/config.c,
 * conf/options.c): defaults, every value type good and bad, the exact
 * shape of error lines (FILE:LINE: [section] key: what (allowed)), the
 * checks across keys, [classes] order, and that -n output loads back to
 * the same values without ever containing a secret.
 *
 * Each test writes its config to a mkstemp file in /tmp and removes it;
 * error messages have that random path replaced by "x.ini" so whole lines
 * can be compared.  Run from the repository root (the shipped
 * conf/lockwatch.ini is loaded by relative path).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/config.h"
#include "conf/options.h"
#include "collectors/locks/lockclass.h"

struct tmp {
    char path[32];
};

static void
tmp_write(struct tmp *t, const char *text)
{
    size_t len = strlen(text);
    int fd;

    snprintf(t->path, sizeof(t->path), "/tmp/lw-test-XXXXXX");
    fd = mkstemp(t->path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

static void
tmp_remove(struct tmp *t)
{
    unlink(t->path);
}

/* Load TEXT from a temp file.  On failure err holds the message with the
 * temp file's path replaced by "x.ini". */
static int
load_text(const char *text, struct config **cfg, char *err, size_t errlen)
{
    struct tmp t;
    size_t plen;
    int rc;

    tmp_write(&t, text);
    rc = config_load(t.path, cfg, err, errlen);
    tmp_remove(&t);
    plen = strlen(t.path);
    if (rc == -1 && strncmp(err, t.path, plen) == 0) {
        memmove(err + 5, err + plen, strlen(err + plen) + 1);
        memcpy(err, "x.ini", 5);
    }
    return rc;
}

static void
expect_error(const char *text, const char *expected)
{
    char err[CONFIG_ERR_LEN];
    struct config *cfg = (struct config *)1;

    assert_int_equal(load_text(text, &cfg, err, sizeof(err)), -1);
    assert_null(cfg);
    assert_string_equal(err, expected);
}

/* Loading must fail, and the message must start with prefix. */
static void
expect_error_prefix(const char *text, const char *prefix)
{
    char err[CONFIG_ERR_LEN];
    struct config *cfg = NULL;

    assert_int_equal(load_text(text, &cfg, err, sizeof(err)), -1);
    assert_null(cfg);
    if (strncmp(err, prefix, strlen(prefix)) != 0)
        fail_msg("error \"%s\" does not start with \"%s\"", err, prefix);
}

static char *print_to_string(const struct config *cfg);

static struct config *
expect_load(const char *text)
{
    char err[CONFIG_ERR_LEN];
    struct config *cfg = NULL;

    if (load_text(text, &cfg, err, sizeof(err)) != 0)
        fail_msg("load failed: %s", err);
    assert_non_null(cfg);
    return cfg;
}

static void
check_default_target(const struct target_conf *t)
{
    assert_string_equal(t->url, "redis://127.0.0.1:6379/0");
    assert_null(t->user);
    assert_string_equal(t->host, "127.0.0.1");
    assert_int_equal(t->port, 6379);
    assert_int_equal(t->db, 0);
    assert_null(t->password_file);
    assert_null(t->password);
    assert_int_equal(t->mode, TARGET_STANDALONE);
    assert_int_equal(t->nsentinels, 0);
    assert_null(t->master_name);
    assert_int_equal(t->npatterns, 1);
    assert_string_equal(t->patterns[0], "lock:*");
    assert_int_equal(t->scan_interval_ms, 15000);
    assert_int_equal(t->scan_count, 1000);
    assert_true(t->scan_duty == 0.25);
    assert_int_equal(t->max_keys_per_second, 0);
    assert_false(t->scan_replicas);
    assert_int_equal(t->connect_timeout_ms, 2000);
    assert_int_equal(t->command_timeout_ms, 5000);
}

static void
check_defaults(const struct config *cfg)
{
    assert_string_equal(cfg->listen_host, "127.0.0.1");
    assert_int_equal(cfg->listen_port, 9717);
    assert_false(cfg->samples_off);
    assert_string_equal(cfg->samples_host, "127.0.0.1");
    assert_int_equal(cfg->samples_port, 9717);
    assert_int_equal(cfg->top_offenders, 20);
    assert_int_equal(cfg->ntargets, 1);
    assert_string_equal(cfg->targets[0].name, "default");
    check_default_target(&cfg->targets[0]);
    assert_ptr_equal(config_target(cfg, "default"), &cfg->targets[0]);
    assert_null(config_target(cfg, "main"));
    assert_int_equal(cfg->nredlocks, 0);
    assert_int_equal(cfg->rules.judge.leak_grace_ms, 30000);
    assert_int_equal(cfg->rules.judge.max_hold_ms, 300000);
    assert_int_equal(cfg->rules.judge.max_reentrancy, 16);
    assert_int_equal(cfg->rules.wait_p99_ms, 1000);
    assert_int_equal(cfg->rules.wait_window_ms, 60000);
    assert_int_equal(cfg->rules.wait_min_samples, 20);
    assert_int_equal(cfg->rules.repeat_interval_ms, 3600000);
    assert_int_equal(cfg->nclasses, 0);
    assert_int_equal(cfg->nwebhooks, 0);
    assert_false(cfg->unlock_http);
    assert_null(cfg->unlock_token_file);
    assert_null(cfg->unlock_token);
    assert_string_equal(cfg->audit_stream, "lockwatch:audit");
}

/* ---- defaults ------------------------------------------------------------- */

static void
test_builtin_defaults(void **state)
{
    char err[CONFIG_ERR_LEN];
    struct config *cfg = NULL;

    (void)state;
    assert_int_equal(config_load(NULL, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->path, "(built-in defaults)");
    check_defaults(cfg);
    config_free(cfg);
    config_free(NULL);
}

static void
test_empty_file_defaults(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("");
    check_defaults(cfg);
    config_free(cfg);
    cfg = expect_load("; only comments\n# and blank lines\n\n   \n[agent]\n[rules]\n");
    check_defaults(cfg);
    assert_true(cfg->default_target);
    config_free(cfg);
    /* a file with a [target] is not the built-in default, whatever its name */
    cfg = expect_load("[target default]\n");
    assert_false(cfg->default_target);
    config_free(cfg);
}

static void
test_target_defaults(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[target main]\n");
    assert_int_equal(cfg->ntargets, 1);
    assert_string_equal(cfg->targets[0].name, "main");
    check_default_target(&cfg->targets[0]);
    config_free(cfg);
}

/* Every row is well formed: the sizes the generic store handles, bounds
 * that fit the field, help for the man page, defaults that fit a line. */
static void
test_option_table(void **state)
{
    size_t i, j;

    (void)state;
    for (i = 0; i < OPT_TYPE_COUNT; i++)
        assert_string_not_equal(option_type_name((enum option_type)i), "?");
    assert_string_equal(option_type_name(OPT_TYPE_COUNT), "?");
    assert_true(config_noptions > 20);
    for (i = 0; i < config_noptions; i++) {
        const struct config_option *o = &config_options[i];
        char desc[256];

        assert_non_null(o->key);
        assert_non_null(o->help);
        assert_true(strlen(o->help) < 100);
        assert_true(o->def != NULL || o->example != NULL);
        assert_true(o->section < SECTION_COUNT && o->section != SECTION_CLASSES);
        if (o->type == OPT_INT || o->type == OPT_ENUM || o->type == OPT_DURATION)
            assert_true(o->size == 4 || o->size == 8);
        if (o->type == OPT_INT || o->type == OPT_DURATION) {
            assert_true(o->min <= o->max);
            if (o->size == 4)
                assert_true(o->max <= INT32_MAX && o->min >= INT32_MIN);
        }
        if (o->type == OPT_FILE)
            assert_non_null(o->holds);
        if (o->type == OPT_ENUM || o->type == OPT_BOOL)
            assert_non_null(o->names);
        option_describe(o, desc, sizeof(desc));
        assert_true(strlen(desc) > 0);
        assert_true(strlen(option_type_name(o->type)) > 0);
        for (j = 0; j < i; j++)
            assert_false(config_options[j].section == o->section &&
                         strcmp(config_options[j].key, o->key) == 0);
    }
    assert_string_equal(config_section_name(SECTION_TARGET), "target");
    assert_true(config_section_named(SECTION_WEBHOOK));
    assert_false(config_section_named(SECTION_RULES));
    assert_string_equal(config_sink_format_str(SINK_ALERTMANAGER), "alertmanager");
}

/* ---- value types ---------------------------------------------------------- */

static void
test_duration_parse(void **state)
{
    static const struct {
        const char *s;
        int64_t ms;
    } good[] = {
        { "0", 0 }, { "0s", 0 }, { "0.0", 0 }, { "250ms", 250 }, { "15s", 15000 },
        { "1.5s", 1500 }, { "0.1s", 100 }, { "1.50s", 1500 }, { "5m", 300000 },
        { "1h", 3600000 }, { "2d", 172800000 }, { "0.5d", 43200000 },
        { "0.0000003125d", 27 }, { "106751991167d", 106751991167LL * 86400000 },
    };
    static const char *const bad[] = {
        "", "5", "-1s", "-0s", "5x", "s", "1.s", ".5s", "1.5ms", "1e3s", " 5s",
        "5 s", "5S", "5sec", "1..5s", "0.00000000001d", "99999999999999999999s",
        "106751991168d", "0x10s", "+5s", "1.5",
    };
    size_t i;
    int64_t ms;

    (void)state;
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ms = -1;
        if (config_parse_duration(good[i].s, &ms) != 0)
            fail_msg("\"%s\" refused", good[i].s);
        assert_int_equal(ms, good[i].ms);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ms = 42;
        if (config_parse_duration(bad[i], &ms) != -1)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_int_equal(ms, 42);
    }
    assert_int_equal(config_parse_duration(NULL, &ms), -1);
}

static void
test_duration_values(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[rules]\nmax_hold = 1.5m\nleak_grace = 0\nwait_p99 = 250ms\n"
                      "repeat_interval = 2d\n");
    assert_int_equal(cfg->rules.judge.max_hold_ms, 90000);
    assert_int_equal(cfg->rules.judge.leak_grace_ms, 0);
    assert_int_equal(cfg->rules.wait_p99_ms, 250);
    assert_int_equal(cfg->rules.repeat_interval_ms, 172800000);
    config_free(cfg);

    expect_error("[rules]\n\nmax_hold = 5x\n",
                 "x.ini:3: [rules] max_hold: \"5x\" is not a duration (use a number followed "
                 "by ms, s, m, h or d, e.g. 30s)");
    expect_error("[rules]\nleak_grace = 15\n",
                 "x.ini:2: [rules] leak_grace: \"15\" has no unit (add ms, s, m, h or d, "
                 "e.g. 15s)");
    expect_error("[rules]\nleak_grace = -5s\n",
                 "x.ini:2: [rules] leak_grace: \"-5s\" is negative (allowed: 0s to 30d)");
    expect_error("[target t]\nscan_interval = 50ms\n",
                 "x.ini:2: [target t] scan_interval: \"50ms\" is out of range (allowed: "
                 "100ms to 1d)");
    expect_error("[rules]\nwait_p99 = 1.5ms\n",
                 "x.ini:2: [rules] wait_p99: \"1.5ms\" is not a whole number of milliseconds "
                 "(use a smaller unit, e.g. 1500ms for 1.5s)");
    expect_error("[rules]\nmax_hold =\n",
                 "x.ini:2: [rules] max_hold: \"\" is not a duration (use a number followed "
                 "by ms, s, m, h or d, e.g. 30s)");
    expect_error("[rules]\nmax_hold = 99999999999999999999d\n",
                 "x.ini:2: [rules] max_hold: \"99999999999999999999d\" is too large "
                 "(allowed: 1s to 30d)");

    /* a missing '=' in a line with a ':' (a trial: "unknown key patterns lock") */
    expect_error("[target t]\npatterns lock:*\n",
                 "x.ini:2: [target t]: \"patterns lock:*\" has no '=' (write key = value; a "
                 "line without '=' is split at its first ':')");
    /* with '=', a key with a blank is an unknown key, as before (a red-team) */
    expect_error_prefix("[target t]\nscan interval = 1s\n",
                        "x.ini:2: [target t] scan interval: unknown key (allowed: url, ");

    /* runbook_url: an http(s) URL; {alertname} its one placeholder */
    cfg = expect_load("[rules]\nrunbook_url = https://wiki.example/lw#{alertname}\n");
    assert_string_equal(cfg->runbook_url, "https://wiki.example/lw#{alertname}");
    config_free(cfg);
    expect_error("[rules]\nrunbook_url = wiki/lw\n",
                 "x.ini:2: [rules] runbook_url: \"wiki/lw\" is not an http:// or https:// URL "
                 "with a host");
    expect_error("[rules]\nrunbook_url = https:///lw\n",
                 "x.ini:2: [rules] runbook_url: \"https:///lw\" is not an http:// or https:// "
                 "URL with a host");
    expect_error("[rules]\nrunbook_url = https://w/%zz\n",
                 "x.ini:2: [rules] runbook_url: byte 11 of \"https://w/%zz\" is not allowed in "
                 "the URL (percent-encode it; {alertname} is the one placeholder)");
    cfg = expect_load("[rules]\nrunbook_url = HTTPS://Wiki.example/a%2Fb\n");
    config_free(cfg);
    expect_error("[rules]\nrunbook_url = https://w/{name}\n",
                 "x.ini:2: [rules] runbook_url: byte 11 of \"https://w/{name}\" is not allowed "
                 "in the URL (percent-encode it; {alertname} is the one placeholder)");
    expect_error("[rules]\nrunbook_url = https://w/a\"b\n",
                 "x.ini:2: [rules] runbook_url: byte 12 of \"https://w/a\"b\" is not allowed "
                 "in the URL (percent-encode it; {alertname} is the one placeholder)");
}

static void
test_int_values(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[agent]\ntop_offenders = 1000\n[target a]\nscan_count = 1\n"
                      "max_keys_per_second = 5000\n[rules]\nmax_reentrancy = 3\n");
    assert_int_equal(cfg->top_offenders, 1000);
    assert_int_equal(cfg->targets[0].scan_count, 1);
    assert_int_equal(cfg->targets[0].max_keys_per_second, 5000);
    assert_int_equal(cfg->rules.judge.max_reentrancy, 3);
    config_free(cfg);

    expect_error("[agent]\ntop_offenders = 0\n",
                 "x.ini:2: [agent] top_offenders: \"0\" is out of range (allowed: 1 to 1000)");
    expect_error("[agent]\ntop_offenders = 1001\n",
                 "x.ini:2: [agent] top_offenders: \"1001\" is out of range (allowed: 1 to "
                 "1000)");
    expect_error("[agent]\ntop_offenders = twenty\n",
                 "x.ini:2: [agent] top_offenders: \"twenty\" is not a whole number (allowed: "
                 "1 to 1000)");
    expect_error("[agent]\ntop_offenders = 12abc\n",
                 "x.ini:2: [agent] top_offenders: \"12abc\" is not a whole number (allowed: "
                 "1 to 1000)");
    expect_error("[agent]\ntop_offenders = 99999999999999999999\n",
                 "x.ini:2: [agent] top_offenders: \"99999999999999999999\" is out of range "
                 "(allowed: 1 to 1000)");
    expect_error("[target a]\nscan_count = -1\n",
                 "x.ini:2: [target a] scan_count: \"-1\" is out of range (allowed: 1 to "
                 "100000)");
    expect_error("[target a]\nscan_count = +5\n",
                 "x.ini:2: [target a] scan_count: \"+5\" is not a whole number (allowed: 1 "
                 "to 100000)");
}

static void
test_percent_values(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[target a]\nscan_duty = 12.5%\n[target b]\nscan_duty = 100%\n"
                      "[target c]\nscan_duty = 0.5%\n[target d]\nscan_duty = 0.001%\n");
    assert_true(cfg->targets[0].scan_duty == 0.125);
    assert_true(cfg->targets[1].scan_duty == 1.0);
    assert_true(cfg->targets[2].scan_duty == 0.005);
    assert_true(cfg->targets[3].scan_duty == 0.001 / 100.0);
    config_free(cfg);

    expect_error("[target a]\nscan_duty = 0%\n",
                 "x.ini:2: [target a] scan_duty: \"0%\" is out of range (allowed: from 0.001% "
                 "to 100%)");
    /* Below the floor: -n would print it with an exponent, which reads back
     * as no percentage at all. */
    expect_error("[target a]\nscan_duty = 0.000090002%\n",
                 "x.ini:2: [target a] scan_duty: \"0.000090002%\" is out of range (allowed: "
                 "from 0.001% to 100%)");
    expect_error("[target a]\nscan_duty = 100.5%\n",
                 "x.ini:2: [target a] scan_duty: \"100.5%\" is out of range (allowed: from "
                 "0.001% to 100%)");
    expect_error("[target a]\nscan_duty = 25\n",
                 "x.ini:2: [target a] scan_duty: \"25\" is not a percentage (use a number "
                 "followed by %, e.g. 25%)");
    expect_error_prefix("[target a]\nscan_duty = -5%\n",
                        "x.ini:2: [target a] scan_duty: \"-5%\" is out of range");
    expect_error_prefix("[target a]\nscan_duty = %\n",
                        "x.ini:2: [target a] scan_duty: \"%\" is not a percentage");
    expect_error_prefix("[target a]\nscan_duty = 0.25\n",
                        "x.ini:2: [target a] scan_duty: \"0.25\" is not a percentage");
}

static void
test_bool_values(void **state)
{
    static const struct {
        const char *s;
        bool v;
    } cases[] = {
        { "yes", true }, { "no", false }, { "on", true }, { "off", false },
        { "true", true }, { "false", false }, { "1", true }, { "0", false },
        { "YES", true }, { "Off", false },
    };
    char text[128];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct config *cfg;

        snprintf(text, sizeof(text), "[target a]\nmode = cluster\nscan_replicas = %s\n",
                 cases[i].s);
        cfg = expect_load(text);
        assert_int_equal(cfg->targets[0].scan_replicas, cases[i].v);
        config_free(cfg);
    }
    expect_error("[unlock]\nhttp = maybe\n",
                 "x.ini:2: [unlock] http: \"maybe\" is not a yes/no value (use yes, no, on, "
                 "off, true, false, 1 or 0)");
}

static void
test_enum_values(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[target a]\nmode = cluster\n[webhook w]\nurl = http://h/x\n"
                      "format = slack\n[webhook am]\nurl = http://am:9093\n"
                      "format = Alertmanager\n");
    assert_int_equal(cfg->targets[0].mode, TARGET_CLUSTER);
    assert_int_equal(cfg->webhooks[0].format, SINK_SLACK);
    assert_int_equal(cfg->webhooks[1].format, SINK_ALERTMANAGER);
    assert_int_equal(cfg->webhooks[0].delivery.timeout_ms, 10000);
    config_free(cfg);

    expect_error("[target a]\nmode = master\n",
                 "x.ini:2: [target a] mode: \"master\" is not a valid mode (use standalone, "
                 "cluster or sentinel)");
    expect_error("[webhook w]\nurl = http://h/\nformat = teams\n",
                 "x.ini:3: [webhook w] format: \"teams\" is not a valid format (use generic, "
                 "slack or alertmanager)");
}

static void
test_hostport_values(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[agent]\nlisten = [::1]:9000\nsamples = off\n");
    assert_string_equal(cfg->listen_host, "::1");
    assert_int_equal(cfg->listen_port, 9000);
    assert_true(cfg->samples_off);
    config_free(cfg);
    cfg = expect_load("[agent]\nlisten = 0.0.0.0:80\nsamples = lw.example:65535\n");
    assert_string_equal(cfg->listen_host, "0.0.0.0");
    assert_int_equal(cfg->listen_port, 80);
    assert_false(cfg->samples_off);
    assert_string_equal(cfg->samples_host, "lw.example");
    assert_int_equal(cfg->samples_port, 65535);
    config_free(cfg);

    expect_error("[agent]\nlisten = localhost\n",
                 "x.ini:2: [agent] listen: \"localhost\" is not host:port (use an address "
                 "and a port from 1 to 65535, e.g. 127.0.0.1:9717 or [::1]:9717)");
    expect_error("[agent]\nsamples = h:0\n",
                 "x.ini:2: [agent] samples: \"h:0\" is not host:port (use an address and a "
                 "port from 1 to 65535, e.g. 127.0.0.1:9717 or [::1]:9717, or off)");
    expect_error_prefix("[agent]\nlisten = off\n", "x.ini:2: [agent] listen: \"off\" is not");
    expect_error_prefix("[agent]\nlisten = h:70000\n", "x.ini:2: [agent] listen:");
    expect_error_prefix("[agent]\nlisten = ::1:9717\n", "x.ini:2: [agent] listen:");
    expect_error_prefix("[agent]\nlisten = :9717\n", "x.ini:2: [agent] listen:");
    expect_error_prefix("[agent]\nlisten = h:\n", "x.ini:2: [agent] listen:");
}

static void
test_redis_url(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[target a]\nurl = redis://watcher@10.0.0.1:6380/3\n"
                      "[target b]\nurl = redis://cache.example\n"
                      "[target c]\nurl = redis://[::1]:7000/\n");
    assert_string_equal(cfg->targets[0].url, "redis://watcher@10.0.0.1:6380/3");
    assert_string_equal(cfg->targets[0].user, "watcher");
    assert_string_equal(cfg->targets[0].host, "10.0.0.1");
    assert_int_equal(cfg->targets[0].port, 6380);
    assert_int_equal(cfg->targets[0].db, 3);
    assert_null(cfg->targets[1].user);
    assert_string_equal(cfg->targets[1].host, "cache.example");
    assert_int_equal(cfg->targets[1].port, 6379);
    assert_int_equal(cfg->targets[1].db, 0);
    assert_string_equal(cfg->targets[2].host, "::1");
    assert_int_equal(cfg->targets[2].port, 7000);
    config_free(cfg);

    expect_error("[target a]\nurl = http://h:6379\n",
                 "x.ini:2: [target a] url: \"http://h:6379\" is not a Redis URL (use "
                 "redis://[user@]host[:port][/db], e.g. redis://127.0.0.1:6379/0)");
#ifndef LOCKWATCH_TLS
    /* built without hiredis_ssl: the refusal names the reason and the fix */
    expect_error("[target a]\nurl = rediss://h:6379\n",
                 "x.ini:2: [target a] url: \"rediss://h:6379\": TLS (rediss://) is not "
                 "supported by this build (it was built without hiredis_ssl: build lockwatch "
                 "against hiredis 1.x with hiredis_ssl, e.g. make deps-hiredis-tls, or use "
                 "redis:// through a local TLS tunnel)");
#endif
    expect_error_prefix("[target a]\nurl = redis://h:abc\n", "x.ini:2: [target a] url: "
                        "\"redis://h:abc\" is not a Redis URL");
    expect_error_prefix("[target a]\nurl = redis://h/x\n", "x.ini:2: [target a] url: "
                        "\"redis://h/x\" is not a Redis URL");
    expect_error_prefix("[target a]\nurl = redis://\n", "x.ini:2: [target a] url: ");
    expect_error_prefix("[target a]\nurl = 127.0.0.1:6379\n", "x.ini:2: [target a] url: ");
    expect_error_prefix("[target a]\nurl = redis://@h\n", "x.ini:2: [target a] url: ");
    expect_error("[target a]\nurl = redis://h/0?password=x\n",
                 "x.ini:2: [target a] url: URL parameters are not supported (use "
                 "redis://[user@]host[:port][/db]; the password goes in password_file)");
}

static void
test_password_in_url_refused(void **state)
{
    static const char *const texts[] = {
        "[target main]\nurl = redis://:s3cr3t@127.0.0.1:6379/0\n",
        "[target main]\nurl = redis://app:s3cr3t@127.0.0.1:6379/0\n",
        "[target main]\nurl = rediss://app:s3cr3t@127.0.0.1\n",
    };
    char err[CONFIG_ERR_LEN];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct config *cfg = NULL;

        assert_int_equal(load_text(texts[i], &cfg, err, sizeof(err)), -1);
        assert_null(cfg);
        assert_string_equal(err, "x.ini:2: [target main] url: a password in the URL is not "
                            "allowed (put the password alone on one line in a file only "
                            "lockwatchd can read, and set password_file to its path)");
        assert_null(strstr(err, "s3cr3t"));
    }
    expect_error("[webhook w]\nurl = https://u:s3cr3t@hooks.example/x\n",
                 "x.ini:2: [webhook w] url: a user:password in the URL is not allowed (it "
                 "would show in -n output and logs; generic sinks sign with secret_file "
                 "instead)");
}

static void
test_http_url(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[webhook w]\nurl = https://hooks.example/lockwatch?x=1\n");
    assert_string_equal(cfg->webhooks[0].url, "https://hooks.example/lockwatch?x=1");
    config_free(cfg);
    expect_error("[webhook w]\nurl = ftp://h/x\n",
                 "x.ini:2: [webhook w] url: \"ftp://h/x\" is not an http:// or https:// URL "
                 "(e.g. https://hooks.example/lockwatch)");
    /* a baseline of less than a minute never knew a baseline (a count a
     * second into 60 slices): refused, not silently no LockCountSurge */
    expect_error_prefix("[rules]\ncount_baseline_window = 30s\n",
                        "x.ini:2: [rules] count_baseline_window: ");
    expect_error_prefix("[webhook w]\nurl = https:///x\n", "x.ini:2: [webhook w] url: ");
    expect_error_prefix("[webhook w]\nurl = hooks.example\n", "x.ini:2: [webhook w] url: ");
    /* said for what it is (a sinks trial: "not an http(s) URL" for both) */
    expect_error("[webhook w]\nurl = https://hooks.example/services/T1/TOK SECRET\n",
                 "x.ini:2: [webhook w] url: \"https://hooks.example/services/***\" has a blank or a "
                 "control byte: percent-encode it (a blank is %20) "
                 "(e.g. https://hooks.example/lockwatch)");
    expect_error("[webhook w]\nurl = https://hooks.example:99999/x\n",
                 "x.ini:2: [webhook w] url: \"https://hooks.example:99999/x\" has a port that "
                 "is not 1 to 65535 (e.g. https://hooks.example/lockwatch)");
    expect_error_prefix("[webhook w]\nurl = https://hooks.example:/x\n",
                        "x.ini:2: [webhook w] url: \"https://hooks.example:/x\" has a port");
    /* the port after the last '@', where the user info ends for -n's mask
     * too (a fuzzer: "@[@h:" passed as an unclosed [, its mask "**@h:" not) */
    expect_error_prefix("[webhook w]\nurl = https://@[@hooks.example:/x\n",
                        "x.ini:2: [webhook w] url: \"https://**@hooks.example:/x\" has a port");
    cfg = expect_load("[webhook w]\nurl = http://[::1]:9093/x\n");
    config_free(cfg);
    cfg = expect_load("[webhook w]\nurl = http://u@hooks.example:443/x\n");
    config_free(cfg);
}

/* -n shows where a webhook goes, never a token in its user info or query. */
static void
test_http_url_masked(void **state)
{
    static const struct {
        const char *url, *shown;
    } cases[] = {
        { "https://hooks.example/lockwatch", "https://hooks.example/lockwatch" },
        { "https://hooks.example:8443/a/b?token=s3cret", "https://hooks.example:8443/a/*?***" },
        /* a token in the path (a red-team trial: -n printed Slack's) */
        { "https://hooks.slack.com/services/T0AAAA/B0BBBB/xoxbSECRET123abc",
          "https://hooks.slack.com/services/***" },
        { "https://discord.com/api/webhooks/123/s3cret", "https://discord.com/api/***" },
        { "http://am:9093/api/v2/alerts", "http://am:9093/api/***" },
        { "https://hooks.example/", "https://hooks.example/" },
        { "https://s3cret@hooks.example/x", "https://***@hooks.example/x" },
        { "http://s3cret@hooks.example?k=s3cret#s3cret", "http://***@hooks.example?***#***" },
        { "https://hooks.example/x#s3cret", "https://hooks.example/x#***" },
        { "https://a@b@hooks.example/p?q", "https://***@hooks.example/p?*" },
        /* a part shorter than *** keeps its length: -n's line never grows */
        { "https://t@hooks.example/p?ab#c", "https://*@hooks.example/p?**#*" },
        { "https://hooks.example/p/a@b", "https://hooks.example/p/***" },
        /* a ;parameter of the first segment (a sinks trial: its token showed) */
        { "https://hooks.example/services;s3cret10/x", "https://hooks.example/services;***" },
    };
    char text[256], val[256];
    const struct config_option *o = NULL;
    struct config *cfg;
    char *out;
    size_t i;

    (void)state;
    for (i = 0; i < config_noptions; i++)
        if (config_options[i].section == SECTION_WEBHOOK &&
            strcmp(config_options[i].key, "url") == 0)
            o = &config_options[i];
    assert_non_null(o);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(text, sizeof(text), "[webhook w]\nurl = %s\n", cases[i].url);
        cfg = expect_load(text);
        /* the sinks get the URL as written */
        assert_string_equal(cfg->webhooks[0].url, cases[i].url);
        assert_int_equal(option_format(o, &cfg->webhooks[0], false, val, sizeof(val)), 1);
        assert_string_equal(val, cases[i].shown);
        out = print_to_string(cfg);
        assert_null(strstr(out, "s3cret"));
        snprintf(text, sizeof(text), "%-19s = %s\n", "url", cases[i].shown);
        assert_non_null(strstr(out, text));
        free(out);
        config_free(cfg);
    }
    /* nor does a refusal quote a token back */
    expect_error("[webhook w]\nurl = ftp://hooks.example/x?token=s3cret\n",
                 "x.ini:2: [webhook w] url: \"ftp://hooks.example/x?***\" is not an http:// "
                 "or https:// URL (e.g. https://hooks.example/lockwatch)");
}

static void
test_list_values(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[target a]\npatterns = lock:* , mutex:*,  redisson_lock:{*}  \n");
    assert_int_equal(cfg->targets[0].npatterns, 3);
    assert_string_equal(cfg->targets[0].patterns[0], "lock:*");
    assert_string_equal(cfg->targets[0].patterns[1], "mutex:*");
    assert_string_equal(cfg->targets[0].patterns[2], "redisson_lock:{*}");
    config_free(cfg);

    expect_error("[target a]\npatterns = lock:*,,x\n",
                 "x.ini:2: [target a] patterns: \"lock:*,,x\" has an empty item (use comma "
                 "separated values, e.g. lock:*)");
    /* -n joins items with ", ": ";x" would come back as a comment */
    expect_error("[target a]\npatterns = lock:*,;x\n",
                 "x.ini:2: [target a] patterns: \"lock:*,;x\": an item may not begin with ';' "
                 "(it would read back as a comment)");
    expect_error("[target a]\npatterns =\n",
                 "x.ini:2: [target a] patterns: no pattern given (list at least one glob of "
                 "lock keys, e.g. lock:*)");

    /* semaphore_patterns: none by default, a list like patterns */
    cfg = expect_load("[target a]\npatterns = lock:*\n");
    assert_int_equal(cfg->targets[0].nsemaphore_patterns, 0);
    config_free(cfg);
    cfg = expect_load("[target a]\nsemaphore_patterns = lock:sem* , lock:permits:*\n");
    assert_int_equal(cfg->targets[0].nsemaphore_patterns, 2);
    assert_string_equal(cfg->targets[0].semaphore_patterns[0], "lock:sem*");
    assert_string_equal(cfg->targets[0].semaphore_patterns[1], "lock:permits:*");
    assert_true(lock_key_semaphore(&cfg->targets[0], "lock:sem", 8));
    assert_true(lock_key_semaphore(&cfg->targets[0], "lock:permits:a", 14));
    assert_false(lock_key_semaphore(&cfg->targets[0], "lock:se", 7));
    config_free(cfg);
    expect_error("[target a]\nsemaphore_patterns = lock:sem*,,x\n",
                 "x.ini:2: [target a] semaphore_patterns: \"lock:sem*,,x\" has an empty item "
                 "(use comma separated values, e.g. lock:sem:*)");

    /* format_patterns: glob=format pairs, blank or comma separated, each
     * format a row that claims values (issue 23) */
    cfg = expect_load("[target a]\npatterns = lock:*\n");
    assert_int_equal(cfg->targets[0].nformat_patterns, 0);
    config_free(cfg);
    cfg = expect_load("[target a]\nformat_patterns = lock:orders:*=node-redlock "
                      "lock:jobs:*=redis-py,lock:a=b:*=spring\n");
    assert_int_equal(cfg->targets[0].nformat_patterns, 3);
    assert_string_equal(cfg->targets[0].format_globs[0], "lock:orders:*");
    assert_string_equal(cfg->targets[0].format_names[0], "node-redlock");
    assert_string_equal(cfg->targets[0].format_globs[1], "lock:jobs:*");
    assert_string_equal(cfg->targets[0].format_names[1], "redis-py");
    /* the glob is what comes before the last '=' */
    assert_string_equal(cfg->targets[0].format_globs[2], "lock:a=b:*");
    assert_string_equal(cfg->targets[0].format_names[2], "spring");
    {
        char *out = print_to_string(cfg);

        assert_non_null(strstr(out, "format_patterns     = lock:orders:*=node-redlock "
                                    "lock:jobs:*=redis-py lock:a=b:*=spring\n"));
        free(out);
    }
    config_free(cfg);
    expect_error("[target a]\nformat_patterns = lock:x:*=redispy\n",
                 "x.ini:2: [target a] format_patterns: \"lock:x:*=redispy\": \"redispy\" is "
                 "not a format a key may be declared (use redisson-rw, redisson, liblockwatch, "
                 "shedlock, redis-py, node-redlock, redsync, python-redis-lock, "
                 "redis-semaphore, pottery, spring or plain)");
    expect_error("[target a]\nformat_patterns = lock:x:*\n",
                 "x.ini:2: [target a] format_patterns: \"lock:x:*\" is not glob=format "
                 "(e.g. lock:orders:*=node-redlock lock:jobs:*=redis-py)");
    expect_error("[target a]\nformat_patterns = =spring\n",
                 "x.ini:2: [target a] format_patterns: \"=spring\" is not glob=format "
                 "(e.g. lock:orders:*=node-redlock lock:jobs:*=redis-py)");
}

static void
test_string_values(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[unlock]\naudit_stream = ops:lock-audit\n");
    assert_string_equal(cfg->audit_stream, "ops:lock-audit");
    config_free(cfg);
    expect_error("[unlock]\naudit_stream =\n",
                 "x.ini:2: [unlock] audit_stream: empty value (give one, e.g. "
                 "lockwatch:audit)");
}

static void
test_secret_files(void **state)
{
    char text[256], expected[CONFIG_ERR_LEN];
    static const struct {
        const char *section, *key, *holds, *text;
    } two_lines[] = {
        { "samples", "key_file", "the samples key", "0123456789abcdef0123\nsecond line\n" },
        { "target main", "password_file", "the password", "hunter2\rmore\n" },
    };
    struct tmp pw, empty, two;
    struct config *cfg;

    (void)state;
    tmp_write(&pw, "hunter2\r\n\n");
    tmp_write(&empty, "\n");

    snprintf(text, sizeof(text), "[target main]\npassword_file = %s\n", pw.path);
    cfg = expect_load(text);
    assert_string_equal(cfg->targets[0].password_file, pw.path);
    assert_string_equal(cfg->targets[0].password, "hunter2");
    config_free(cfg);

    expect_error("[agent]\n[target main]\nurl = redis://127.0.0.1:6379/0\n"
                 "password_file = /nope\n",
                 "x.ini:4: [target main] password_file: cannot read \"/nope\": No such file "
                 "or directory (create it with the password alone on one line, readable by "
                 "lockwatchd only)");
    expect_error("[unlock]\ntoken_file = /nope/token\n",
                 "x.ini:2: [unlock] token_file: cannot read \"/nope/token\": No such file or "
                 "directory (create it with the bearer token alone on one line, readable by "
                 "lockwatchd only)");
    expect_error("[target main]\npassword_file = main.pass\n",
                 "x.ini:2: [target main] password_file: \"main.pass\" is not an absolute "
                 "path (give the full path of the file holding the password, e.g. "
                 "/etc/lockwatch/main.pass)");
    expect_error("[target main]\npassword_file = /tmp\n",
                 "x.ini:2: [target main] password_file: \"/tmp\" is not a regular file (it "
                 "should hold the password alone on one line)");

    snprintf(text, sizeof(text), "[target main]\npassword_file = %s\n", empty.path);
    snprintf(expected, sizeof(expected), "x.ini:2: [target main] password_file: \"%s\" is "
             "empty (put the password in it, alone on one line)", empty.path);
    expect_error(text, expected);

    /* a second line: refused, not taken as part of the secret (a reporter
     * signs with a samples key file's first line only) */
    for (size_t i = 0; i < sizeof(two_lines) / sizeof(two_lines[0]); i++) {
        tmp_write(&two, two_lines[i].text);
        snprintf(text, sizeof(text), "[%s]\n%s = %s\n", two_lines[i].section,
                 two_lines[i].key, two.path);
        snprintf(expected, sizeof(expected), "x.ini:2: [%s] %s: \"%s\" holds more than one "
                 "line (it should hold %s alone on one line)", two_lines[i].section,
                 two_lines[i].key, two.path, two_lines[i].holds);
        expect_error(text, expected);
        tmp_remove(&two);
    }

    tmp_remove(&pw);
    tmp_remove(&empty);
}

/* The tls_ keys: PEM files read at load time, refused without rediss://,
 * a certificate needs its key.  In a build without TLS the url itself is
 * refused (test_redis_url), so only the rules that do not need one run. */
static void
test_tls_keys(void **state)
{
    char text[512], expected[CONFIG_ERR_LEN];
    struct tmp ca, notpem;
    struct config *cfg;

    (void)state;
    (void)expected;             /* used with TLS only */
    tmp_write(&ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    tmp_write(&notpem, "just a line\n");

    /* tls_verify = on (the default, which -n prints) is fine on redis:// */
    cfg = expect_load("[target a]\nurl = redis://h:6379\ntls_verify = on\n");
    assert_false(cfg->targets[0].tls);
    assert_true(cfg->targets[0].tls_verify);
    config_free(cfg);
    expect_error("[target a]\nurl = redis://h:6379\ntls_verify = off\n",
                 "x.ini:3: [target a] tls_verify: only used with TLS (write the url as "
                 "rediss://..., or remove it)");
    snprintf(text, sizeof(text), "[target a]\nurl = redis://h\ntls_ca_file = %s\n", ca.path);
    expect_error(text, "x.ini:3: [target a] tls_ca_file: only used with TLS (write the url "
                 "as rediss://..., or remove it)");
#ifdef LOCKWATCH_TLS
    snprintf(text, sizeof(text), "[target a]\nurl = rediss://u@redis.example:6380/2\n"
             "tls_ca_file = %s\ntls_server_name = r.example\n", ca.path);
    cfg = expect_load(text);
    assert_true(cfg->targets[0].tls);
    assert_string_equal(cfg->targets[0].host, "redis.example");
    assert_string_equal(cfg->targets[0].tls_name, "redis.example");
    assert_int_equal(cfg->targets[0].port, 6380);
    assert_string_equal(cfg->targets[0].tls_ca_file, ca.path);
    assert_non_null(strstr(cfg->targets[0].tls_ca, "BEGIN CERTIFICATE"));
    assert_string_equal(cfg->targets[0].tls_server_name, "r.example");
    assert_true(cfg->targets[0].tls_verify);
    config_free(cfg);

    snprintf(text, sizeof(text), "[target a]\nurl = rediss://h\ntls_ca_file = %s\n",
             notpem.path);
    snprintf(expected, sizeof(expected), "x.ini:3: [target a] tls_ca_file: \"%s\" is not a "
             "PEM file (it should hold the CA certificates in PEM form (-----BEGIN ...))",
             notpem.path);
    expect_error(text, expected);
    snprintf(text, sizeof(text), "[target a]\nurl = rediss://h\ntls_cert_file = %s\n",
             ca.path);
    expect_error(text, "x.ini:3: [target a] tls_key_file: missing (a client certificate "
                 "needs both tls_cert_file and tls_key_file)");
    expect_error("[target a]\nurl = rediss://h\ntls_ca_dir = /nonexistent/certs\n",
                 "x.ini:3: [target a] tls_ca_dir: \"/nonexistent/certs\" is not a directory "
                 "(give a directory of hashed CA certificates, e.g. /etc/ssl/certs)");
#endif
    tmp_remove(&ca);
    tmp_remove(&notpem);
}

/* ---- error lines ---------------------------------------------------------- */

static void
test_unknown_key(void **state)
{
    (void)state;
    expect_error("; lockwatch\n\n[agent]\nlisten = 127.0.0.1:9717\n\n\nlisen = 1\n",
                 "x.ini:7: [agent] lisen: unknown key (allowed: listen, samples, "
                 "top_offenders, http_max_connections, http_max_connections_per_client, "
                 "http_request_timeout, http_max_api_requests, replica, shard, shard_peers, "
                 "leader_target, leader_group, leader_lease)");
    expect_error("[unlock]\nhttp_token = x\n",
                 "x.ini:2: [unlock] http_token: unknown key (allowed: http, token_file, "
                 "audit_stream)");
    expect_error("[redlock g]\nmembers = a, b\n",
                 "x.ini:2: [redlock g] members: unknown key (allowed: targets)");
}

static void
test_unknown_section(void **state)
{
    (void)state;
    expect_error("[agent]\n[tagret main]\nurl = redis://h\n",
                 "x.ini:2: [tagret main]: unknown section (allowed: [agent], [target NAME], "
                 "[redlock NAME], [rules], [classes], [webhook NAME], [unlock], [samples])");
    /* inih never calls the handler for a section without keys: still found */
    expect_error("[agent]\n\n[alerts]\n",
                 "x.ini:3: [alerts]: unknown section (allowed: [agent], [target NAME], "
                 "[redlock NAME], [rules], [classes], [webhook NAME], [unlock], [samples])");
}

static void
test_section_errors(void **state)
{
    (void)state;
    expect_error("[target main]\nurl = redis://h\n[target main]\n",
                 "x.ini:3: [target main]: defined twice (first at line 1; give each "
                 "[target] its own name)");
    expect_error("[agent]\ntop_offenders = 5\n[rules]\n[agent]\n",
                 "x.ini:4: [agent]: given twice (first at line 1; merge the two into one "
                 "section)");
    expect_error("[target]\n",
                 "x.ini:1: [target]: needs a name (write [target NAME], NAME of letters, "
                 "digits, '_', '.' and '-')");
    expect_error("[rules strict]\n", "x.ini:1: [rules strict]: takes no name (write [rules])");
    expect_error("[target my main]\n",
                 "x.ini:1: [target my main]: \"my main\" is not a valid name (use letters, "
                 "digits, '_', '.' and '-', at most 64 of them)");
    expect_error("[target m/1]\n",
                 "x.ini:1: [target m/1]: \"m/1\" is not a valid name (use letters, digits, "
                 "'_', '.' and '-', at most 64 of them)");
    expect_error("\n[agent\nlisten = 127.0.0.1:1\n",
                 "x.ini:2: section header without a closing \"]\" (write e.g. [agent] or "
                 "[target main])");
    expect_error("[agent] listen = 1\n",
                 "x.ini:1: text after the section header (put a key on its own line, and "
                 "start a comment with ;)");
    expect_error("[ ]\n", "x.ini:1: []: empty section header (write e.g. [agent] or "
                 "[target main])");
    expect_error("listen = 127.0.0.1:1\n[agent]\n",
                 "x.ini:1: listen: set before any [section] (move it under the section it "
                 "belongs to, e.g. [agent])");
    expect_error("[agent]\nlisten\n",
                 "x.ini:2: [agent]: not a key = value line, a [section] header or a comment "
                 "(comments start with ; or #)");
    /* a header with a comment is fine; so is a named one with extra blanks */
    config_free(expect_load("[agent] ; the agent\n[ target   main ]\n"));
}

static void
test_duplicate_key(void **state)
{
    (void)state;
    expect_error("[target a]\nscan_count = 10\nurl = redis://h\nscan_count = 20\n",
                 "x.ini:4: [target a] scan_count: given twice (first at line 2; keep one)");
    /* the same key in two different targets is not a duplicate */
    config_free(expect_load("[target a]\nscan_count = 10\n[target b]\nscan_count = 20\n"));
}

static void
test_continuation_refused(void **state)
{
    (void)state;
    /* inih would append this line to listen's value */
    expect_error("[agent]\nlisten = 127.0.0.1:9717\n  samples = off\n",
                 "x.ini:3: [agent] listen: this indented line would be read as more of the "
                 "value of listen above (values are one line; remove the indentation)");
    expect_error("[target a]\npatterns = lock:*\n\n    mutex:*\n",
                 "x.ini:4: [target a] patterns: this indented line would be read as more of "
                 "the value of patterns above (values are one line; remove the "
                 "indentation)");
    /* indented comments are fine, and so is an indented first key */
    config_free(expect_load("[agent]\n  listen = 127.0.0.1:1   ; x\n      ; more\n[rules]\n"));
}

static void
test_long_line(void **state)
{
    char text[512];
    size_t n;

    (void)state;
    n = (size_t)snprintf(text, sizeof(text), "[agent]\nlisten = 127.0.0.1:1 ;");
    memset(text + n, 'x', 300);
    snprintf(text + n + 300, sizeof(text) - n - 300, "\n[rules]\n");
    expect_error(text, "x.ini:2: line is longer than 198 characters (shorten it, or move a "
                 "trailing comment to a line of its own)");

    /* exactly at the limit, with LF or CRLF, is fine */
    n = (size_t)snprintf(text, sizeof(text), "[agent]\n;");
    memset(text + n, 'x', 197);
    snprintf(text + n + 197, sizeof(text) - n - 197, "\r\n[rules]\n");
    config_free(expect_load(text));
    text[n + 197] = 'x';
    expect_error_prefix(text, "x.ini:2: line is longer than 198 characters");
}

/* Control characters (an ESC that -n would print to a terminal, a CR in
 * mid-line) are refused; a tab and a CRLF line end are text. */
static void
test_control_characters(void **state)
{
    (void)state;
    expect_error("[agent]\n[target a]\npatterns = lock:*\x1b[31m\n",
                 "x.ini:3: [target a] patterns: contains a control character (byte 0x1b) at "
                 "column 18 (the config must be plain text; a pattern matches any one byte of a "
                 "key with ?)");
    expect_error_prefix("[agent]\nlisten = 127.0.0.1:1\rforged\n",
                        "x.ini:2: [agent] listen: contains a control character (byte 0x0d) at "
                        "column 21");
    expect_error_prefix("[rules]\nmax_hold: 5m\x1b\n",
                        "x.ini:2: [rules] max_hold: contains a control character (byte 0x1b) at "
                        "column 13");
    expect_error_prefix("[agent]\n; a comment \x7f\n", "x.ini:2: contains a control character "
                        "(byte 0x7f)");
    config_free(expect_load("[agent]\r\nlisten =\t127.0.0.1:1\t; tab\r\n"));
}

static void
test_only_first_error(void **state)
{
    (void)state;
    expect_error("[agent]\ntop_offenders = 0\nlisen = 1\n[bogus]\n",
                 "x.ini:2: [agent] top_offenders: \"0\" is out of range (allowed: 1 to 1000)");
}

static void
test_missing_file(void **state)
{
    char err[CONFIG_ERR_LEN];
    struct config *cfg = (struct config *)1;

    (void)state;
    assert_int_equal(config_load("/nonexistent/lockwatch.ini", &cfg, err, sizeof(err)), -1);
    assert_null(cfg);
    assert_string_equal(err, "cannot open config \"/nonexistent/lockwatch.ini\": No such "
                        "file or directory");
    /* a directory opens but does not read */
    assert_int_equal(config_load("/tmp", &cfg, err, sizeof(err)), -1);
    assert_string_equal(err, "cannot read config \"/tmp\": Is a directory");
    /* no error buffer is fine */
    assert_int_equal(config_load("/nonexistent", &cfg, NULL, 0), -1);
}

static void
test_crlf_and_bom(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("\xEF\xBB\xBF[agent]\r\ntop_offenders = 7\r\n[classes]\r\n"
                      "lock:a:* = a\r\n");
    assert_int_equal(cfg->top_offenders, 7);
    assert_string_equal(cfg->classes[0].name, "a");
    config_free(cfg);
}

/* ---- checks across keys --------------------------------------------------- */

/* The same sentinels listed in another order are the same address (the
 * agent's API target_address, compared by lockctl with its own); another
 * set, master or database is not. */
static void
test_target_address_sentinel_order(void **state)
{
    static const char *const configs[] = {
        "sentinels = 10.0.0.2:26379, 10.0.0.1:26380, 10.0.0.1:26379\nmaster_name = m\n",
        "sentinels = 10.0.0.1:26379, 10.0.0.1:26380, 10.0.0.2:26379\nmaster_name = m\n",
        "sentinels = 10.0.0.1:26380,10.0.0.2:26379, 10.0.0.1:26379\nmaster_name = m\n",
        "sentinels = 10.0.0.1:26379, 10.0.0.2:26379\nmaster_name = m\n",
        "sentinels = 10.0.0.2:26379, 10.0.0.1:26380, 10.0.0.1:26379\nmaster_name = n\n",
    };
    char addr[5][CONFIG_ADDRESS_MAX], text[256];
    struct config *cfg;
    size_t i;

    (void)state;
    for (i = 0; i < 5; i++) {
        snprintf(text, sizeof(text), "[target s]\nmode = sentinel\n%s", configs[i]);
        cfg = expect_load(text);
        config_target_address(&cfg->targets[0], addr[i], sizeof(addr[i]));
        config_free(cfg);
    }
    assert_string_equal(addr[0], "sentinel m via 10.0.0.1:26379,10.0.0.1:26380,10.0.0.2:26379/0");
    assert_string_equal(addr[1], addr[0]);
    assert_string_equal(addr[2], addr[0]);
    assert_string_not_equal(addr[3], addr[0]);
    assert_string_not_equal(addr[4], addr[0]);
}

static void
test_sentinel_validation(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[target s]\nmode = sentinel\nsentinels = 10.0.0.1:26379, "
                      "[::1]:26380\nmaster_name = mymaster\n");
    assert_int_equal(cfg->targets[0].mode, TARGET_SENTINEL);
    assert_int_equal(cfg->targets[0].nsentinels, 2);
    assert_string_equal(cfg->targets[0].sentinels[0].host, "10.0.0.1");
    assert_int_equal(cfg->targets[0].sentinels[0].port, 26379);
    assert_string_equal(cfg->targets[0].sentinels[1].host, "::1");
    assert_int_equal(cfg->targets[0].sentinels[1].port, 26380);
    assert_string_equal(cfg->targets[0].master_name, "mymaster");
    config_free(cfg);

    expect_error("[target s]\nurl = redis://h\nmode = sentinel\nmaster_name = m\n",
                 "x.ini:3: [target s] sentinels: missing (mode = sentinel needs the "
                 "sentinels as host:port, comma separated, e.g. 127.0.0.1:26379)");
    expect_error("[target s]\nmode = sentinel\nsentinels = 10.0.0.1:26379\n",
                 "x.ini:2: [target s] master_name: missing (mode = sentinel needs the name "
                 "the sentinels monitor, e.g. mymaster)");
    expect_error("[target s]\nsentinels = 10.0.0.1:26379\n",
                 "x.ini:2: [target s] sentinels: only used with mode = sentinel (set mode = "
                 "sentinel, or remove it)");
    expect_error("[target s]\nmode = sentinel\nsentinels = 10.0.0.1\nmaster_name = m\n",
                 "x.ini:3: [target s] sentinels: \"10.0.0.1\" is not host:port (use "
                 "host:port with a port from 1 to 65535, comma separated, e.g. "
                 "127.0.0.1:26379)");
    expect_error("[target s]\nmaster_name =\n",
                 "x.ini:2: [target s] master_name: empty value (give one, e.g. mymaster)");
}

static void
test_mode_checks(void **state)
{
    (void)state;
    expect_error("[target a]\nscan_replicas = yes\n",
                 "x.ini:2: [target a] scan_replicas: only used with mode = cluster (set "
                 "mode = cluster, or scan_replicas = no)");
    expect_error("[target c]\nurl = redis://h:7000/2\nmode = cluster\n",
                 "x.ini:2: [target c] url: Redis Cluster has only database 0 (remove \"/2\" "
                 "from the URL)");
}

static void
test_redlock_validation(void **state)
{
    struct config *cfg;

    (void)state;
    cfg = expect_load("[redlock orders]\ntargets = r1, r2, r3\n[target r1]\n[target r2]\n"
                      "[target r3]\n");
    assert_int_equal(cfg->nredlocks, 1);
    assert_string_equal(cfg->redlocks[0].name, "orders");
    assert_int_equal(cfg->redlocks[0].ntargets, 3);
    assert_string_equal(cfg->redlocks[0].targets[2], "r3");
    assert_int_equal(cfg->ntargets, 3);     /* no "default" added */
    config_free(cfg);

    expect_error("[target r1]\n[target r2]\n[redlock g]\ntargets = r1, r2, r9\n",
                 "x.ini:4: [redlock g] targets: \"r9\" is not a defined target (add a "
                 "[target r9] section, or remove it from the list)");
    expect_error("[target r1]\n[redlock g]\ntargets = r1\n",
                 "x.ini:3: [redlock g] targets: names 1 target (a Redlock group needs at "
                 "least 2, e.g. r1, r2, r3)");
    expect_error("[target r1]\n[target r2]\n[redlock g]\ntargets = r1, r2, r1\n",
                 "x.ini:4: [redlock g] targets: names \"r1\" twice (list each target once)");
    expect_error("[target r1]\n[redlock g]\n",
                 "x.ini:2: [redlock g] targets: missing (every [redlock NAME] needs "
                 "targets, e.g. targets = r1, r2, r3)");
}

static void
test_webhook_and_unlock_validation(void **state)
{
    char text[256];
    struct tmp secret;
    struct config *cfg;

    (void)state;
    expect_error("[webhook oncall]\nformat = slack\n",
                 "x.ini:1: [webhook oncall] url: missing (every [webhook NAME] needs url, "
                 "e.g. url = https://hooks.example/lockwatch)");
    expect_error("[webhook w]\nurl = https://h/x\nwatchdog = on\n",
                 "x.ini:3: [webhook w] watchdog: only with format = alertmanager (a dead "
                 "man's switch hangs off an Alertmanager route; remove it here)");
    cfg = expect_load("[webhook am]\nurl = http://am:9093\nformat = alertmanager\n"
                      "watchdog = on\n");
    assert_true(cfg->webhooks[0].watchdog);
    config_free(cfg);
    expect_error("[rules]\n[unlock]\nhttp = on\n",
                 "x.ini:3: [unlock] http: on needs token_file (set token_file to a file "
                 "holding the bearer token, readable only by lockwatchd)");

    tmp_write(&secret, "whsec_abc\n");
    snprintf(text, sizeof(text), "[webhook w]\nurl = https://h/x\nformat = slack\n"
             "secret_file = %s\n", secret.path);
    expect_error(text, "x.ini:4: [webhook w] secret_file: only used with format = generic "
                 "(remove it; slack messages are not signed)");
    snprintf(text, sizeof(text), "[unlock]\nhttp = on\ntoken_file = %s\n", secret.path);
    cfg = expect_load(text);
    assert_true(cfg->unlock_http);
    assert_string_equal(cfg->unlock_token, "whsec_abc");
    config_free(cfg);
    tmp_remove(&secret);
}

static void
test_classes_order(void **state)
{
    struct config *cfg;
    char text[512];
    size_t n;

    (void)state;
    cfg = expect_load("[classes]\nlock:order:* = order\nlock:* = generic  ; catch-all\n"
                      "lock:a=b:* = ab\nredisson_lock__channel:{*}=channel\n");
    assert_int_equal(cfg->nclasses, 4);
    assert_string_equal(cfg->classes[0].glob, "lock:order:*");
    assert_string_equal(cfg->classes[0].name, "order");
    assert_string_equal(cfg->classes[1].glob, "lock:*");
    assert_string_equal(cfg->classes[1].name, "generic");
    assert_string_equal(cfg->classes[2].glob, "lock:a=b:*");
    assert_string_equal(cfg->classes[2].name, "ab");
    assert_string_equal(cfg->classes[3].glob, "redisson_lock__channel:{*}");
    assert_string_equal(cfg->classes[3].name, "channel");
    config_free(cfg);

    expect_error("[classes]\nlock:order:* = order\nlock:x:* = x\nlock:order:* = other\n",
                 "x.ini:4: [classes] lock:order:*: given twice (first at line 2; the first "
                 "match wins, so this one would never apply)");
    expect_error("[classes]\nlock:order:* =\n",
                 "x.ini:2: [classes] lock:order:*: empty class name (write GLOB = CLASS, "
                 "CLASS of 1 to 128 bytes, e.g. lock:order:* = order)");
    expect_error("[classes]\nlock:order:*\n",
                 "x.ini:2: [classes] lock:order:*: no class name (write GLOB = CLASS, e.g. "
                 "lock:order:* = order)");
    expect_error("[classes]\n= order\n",
                 "x.ini:2: [classes]: empty glob (write GLOB = CLASS, e.g. lock:order:* = "
                 "order)");
    n = (size_t)snprintf(text, sizeof(text), "[classes]\nlock:* = ");
    memset(text + n, 'c', 129);
    snprintf(text + n + 129, sizeof(text) - n - 129, "\n");
    expect_error(text, "x.ini:2: [classes] lock:*: too long a class name (write GLOB = "
                 "CLASS, CLASS of 1 to 128 bytes, e.g. lock:order:* = order)");
}

/* ---- print and round trip ------------------------------------------------- */

static char *
print_to_string(const struct config *cfg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);

    assert_non_null(fp);
    config_print(cfg, fp);
    assert_int_equal(fclose(fp), 0);
    return buf;
}

/* Every option of every section formats the same, plus the fields the
 * format does not show (parsed URL parts, secrets). */
static void
assert_same_config(const struct config *a, const struct config *b)
{
    char va[1024], vb[1024];
    size_t i, k;

    for (k = 0; k < config_noptions; k++) {
        const struct config_option *o = &config_options[k];
        int ra, rb;

        switch (o->section) {
        case SECTION_AGENT:
        case SECTION_RULES:
        case SECTION_UNLOCK:
        case SECTION_SAMPLES:
            ra = option_format(o, a, false, va, sizeof(va));
            rb = option_format(o, b, false, vb, sizeof(vb));
            assert_int_equal(ra, rb);
            assert_string_equal(va, vb);
            break;
        case SECTION_TARGET:
            assert_int_equal(a->ntargets, b->ntargets);
            for (i = 0; i < a->ntargets; i++) {
                ra = option_format(o, &a->targets[i], false, va, sizeof(va));
                rb = option_format(o, &b->targets[i], false, vb, sizeof(vb));
                assert_int_equal(ra, rb);
                assert_string_equal(va, vb);
            }
            break;
        case SECTION_REDLOCK:
            assert_int_equal(a->nredlocks, b->nredlocks);
            for (i = 0; i < a->nredlocks; i++) {
                ra = option_format(o, &a->redlocks[i], false, va, sizeof(va));
                rb = option_format(o, &b->redlocks[i], false, vb, sizeof(vb));
                assert_int_equal(ra, rb);
                assert_string_equal(va, vb);
            }
            break;
        case SECTION_WEBHOOK:
            assert_int_equal(a->nwebhooks, b->nwebhooks);
            for (i = 0; i < a->nwebhooks; i++) {
                ra = option_format(o, &a->webhooks[i], false, va, sizeof(va));
                rb = option_format(o, &b->webhooks[i], false, vb, sizeof(vb));
                assert_int_equal(ra, rb);
                assert_string_equal(va, vb);
            }
            break;
        default:
            break;
        }
    }
    for (i = 0; i < a->ntargets; i++) {
        const struct target_conf *ta = &a->targets[i], *tb = &b->targets[i];

        assert_string_equal(ta->name, tb->name);
        assert_string_equal(ta->host, tb->host);
        assert_int_equal(ta->port, tb->port);
        assert_int_equal(ta->db, tb->db);
        assert_true((ta->user == NULL) == (tb->user == NULL));
        if (ta->user != NULL)
            assert_string_equal(ta->user, tb->user);
        assert_true((ta->password == NULL) == (tb->password == NULL));
        if (ta->password != NULL)
            assert_string_equal(ta->password, tb->password);
        assert_true(ta->scan_duty == tb->scan_duty);
        assert_int_equal(ta->scan_interval_ms, tb->scan_interval_ms);
    }
    for (i = 0; i < a->nredlocks; i++)
        assert_string_equal(a->redlocks[i].name, b->redlocks[i].name);
    for (i = 0; i < a->nwebhooks; i++) {
        assert_string_equal(a->webhooks[i].name, b->webhooks[i].name);
        assert_true((a->webhooks[i].secret == NULL) == (b->webhooks[i].secret == NULL));
        if (a->webhooks[i].secret != NULL)
            assert_string_equal(a->webhooks[i].secret, b->webhooks[i].secret);
    }
    assert_int_equal(a->nclasses, b->nclasses);
    for (i = 0; i < a->nclasses; i++) {
        assert_string_equal(a->classes[i].glob, b->classes[i].glob);
        assert_string_equal(a->classes[i].name, b->classes[i].name);
    }
    assert_true(a->samples_off == b->samples_off);
    assert_true((a->unlock_token == NULL) == (b->unlock_token == NULL));
    if (a->unlock_token != NULL)
        assert_string_equal(a->unlock_token, b->unlock_token);
}

/* Print, load the print, and print again: same values, same text (but
 * for the first line, which names the file). */
static void
round_trip(const struct config *cfg)
{
    char err[CONFIG_ERR_LEN];
    struct config *again = NULL;
    char *out1, *out2;
    struct tmp t;

    out1 = print_to_string(cfg);
    tmp_write(&t, out1);
    if (config_load(t.path, &again, err, sizeof(err)) != 0)
        fail_msg("printed config does not load: %s\n%s", err, out1);
    tmp_remove(&t);
    assert_same_config(cfg, again);
    out2 = print_to_string(again);
    assert_string_equal(strchr(out1, '\n'), strchr(out2, '\n'));
    free(out1);
    free(out2);
    config_free(again);
}

static void
test_round_trip(void **state)
{
    struct tmp pw, sec, tok;
    struct config *cfg;
    char text[2048];
    char *out;

    (void)state;
    tmp_write(&pw, "Pw-Only-In-File-1\n");
    tmp_write(&sec, "Sec-Only-In-File-2\n");
    tmp_write(&tok, "Tok-Only-In-File-3");
    snprintf(text, sizeof(text),
             "[agent]\nlisten = [::1]:9000\nsamples = off\ntop_offenders = 50\n"
             "[target main]\nurl = redis://watcher@10.0.0.1:6380/2\npassword_file = %s\n"
             "patterns = lock:*,mutex:*\nscan_interval = 1.5s\nscan_duty = 33.3%%\n"
             "max_keys_per_second = 20000\nconnect_timeout = 250ms\n"
             "[target s]\nmode = sentinel\nsentinels = 10.0.0.1:26379,[::1]:26380\n"
             "master_name = mymaster\n"
             "[target c]\nmode = cluster\nscan_replicas = yes\nscan_duty = 10%%\n"
             "[redlock g]\ntargets = main,s,c\n"
             "[rules]\nleak_grace = 0\nmax_hold = 90s\nwait_p99 = 250ms\n"
             "repeat_interval = 2d\n"
             "[classes]\nlock:order:* = order\nlock:* = any\n"
             "[webhook oncall]\nurl = https://hooks.example/lockwatch\nsecret_file = %s\n"
             "[webhook chat]\nurl = https://chat.example/x\nformat = slack\ntimeout = 3s\n"
             "[unlock]\nhttp = on\ntoken_file = %s\naudit_stream = ops:audit\n",
             pw.path, sec.path, tok.path);
    cfg = expect_load(text);

    out = print_to_string(cfg);
    assert_null(strstr(out, "Pw-Only-In-File"));
    assert_null(strstr(out, "Sec-Only-In-File"));
    assert_null(strstr(out, "Tok-Only-In-File"));
    assert_non_null(strstr(out, pw.path));
    assert_non_null(strstr(out, sec.path));
    assert_non_null(strstr(out, tok.path));
    assert_non_null(strstr(out, "scan_interval       = 1500ms\n"));
    assert_non_null(strstr(out, "scan_duty           = 33.3%\n"));
    assert_non_null(strstr(out, "listen              = [::1]:9000\n"));
    assert_non_null(strstr(out, "samples             = off\n"));
    assert_non_null(strstr(out, "sentinels           = 10.0.0.1:26379, [::1]:26380\n"));
    assert_non_null(strstr(out, "\n[classes]\nlock:order:* = order\nlock:* = any\n"));
    assert_non_null(strstr(out, "; master_name is not set\n"));
    free(out);

    round_trip(cfg);
    config_free(cfg);

    tmp_remove(&pw);
    tmp_remove(&sec);
    tmp_remove(&tok);
}

static void
test_round_trip_defaults(void **state)
{
    char err[CONFIG_ERR_LEN];
    struct config *cfg = NULL;

    (void)state;
    assert_int_equal(config_load(NULL, &cfg, err, sizeof(err)), 0);
    round_trip(cfg);
    config_free(cfg);
}

static void
prints_within_the_limit(const char *text)
{
    struct config *cfg = expect_load(text);
    char *out = print_to_string(cfg), *line;

    for (line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n"))
        assert_true(strlen(line) <= 198);
    free(out);
    round_trip(cfg);
    config_free(cfg);
}

/* A long list prints within the line limit (compact, unpadded) and still
 * round-trips. */
static void
test_round_trip_long_line(void **state)
{
    char text[512];
    size_t n;

    (void)state;
    n = (size_t)snprintf(text, sizeof(text), "[target a]\npatterns=");
    while (n < 180)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "k%zu:*,", n);
    snprintf(text + n, sizeof(text) - n, "z:*\n");
    prints_within_the_limit(text);

    /* a value at the limit written "url=" prints as it came, not one
     * blank longer (the config fuzzer: the -n dump did not load) */
    n = (size_t)snprintf(text, sizeof(text), "[webhook w]\nurl=http://hooks.example/");
    memset(text + n, 'p', 198 - (n - strlen("[webhook w]\n")));
    snprintf(text + n + 198 - (n - strlen("[webhook w]\n")), 8, "\n");
    prints_within_the_limit(text);
}

/* A reload keeps a target's view when it names the same server (a
 * red-team: 127.0.0.1 -> localhost threw it away, every alert resolved). */
static void
test_same_server(void **state)
{
    struct config *a, *b;

    (void)state;
    a = expect_load("[target x]\nurl = redis://127.0.0.1:6380/2\n"
                    "[target s]\nmode = sentinel\nmaster_name = m\n"
                    "sentinels = 127.0.0.1:26379, 127.0.0.1:26380\n");
    b = expect_load("[target x]\nurl = redis://localhost:6380/2\n"
                    "[target s]\nmode = sentinel\nmaster_name = m\n"
                    "sentinels = 127.0.0.1:26380, 127.0.0.1:26381\n");
    assert_true(config_same_server(&a->targets[0], &b->targets[0]));
    assert_true(config_same_server(&a->targets[1], &b->targets[1]));
    assert_false(config_same_server(&a->targets[0], &b->targets[1]));
    config_free(b);
    b = expect_load("[target x]\nurl = redis://127.0.0.1:6381/2\n"
                    "[target s]\nmode = sentinel\nmaster_name = other\n"
                    "sentinels = 127.0.0.1:26379\n");
    assert_false(config_same_server(&a->targets[0], &b->targets[0]));     /* port */
    assert_false(config_same_server(&a->targets[1], &b->targets[1]));     /* master */
    config_free(b);
    b = expect_load("[target x]\nurl = redis://127.0.0.1:6380/3\n");
    assert_false(config_same_server(&a->targets[0], &b->targets[0]));     /* db */
    config_free(b);
    config_free(a);
}

static void
test_shipped_config(void **state)
{
    char err[CONFIG_ERR_LEN];
    struct config *cfg = NULL;

    (void)state;
    if (config_load("conf/lockwatch.ini", &cfg, err, sizeof(err)) != 0)
        fail_msg("conf/lockwatch.ini: %s", err);
    assert_int_equal(cfg->ntargets, 1);
    assert_string_equal(cfg->targets[0].name, "main");
    /* the example keeps to the defaults */
    assert_string_equal(cfg->listen_host, "127.0.0.1");
    assert_int_equal(cfg->listen_port, 9717);
    assert_false(cfg->unlock_http);
    assert_int_equal(cfg->nwebhooks, 0);
    round_trip(cfg);
    config_free(cfg);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_defaults),
        cmocka_unit_test(test_empty_file_defaults),
        cmocka_unit_test(test_target_defaults),
        cmocka_unit_test(test_option_table),
        cmocka_unit_test(test_duration_parse),
        cmocka_unit_test(test_duration_values),
        cmocka_unit_test(test_int_values),
        cmocka_unit_test(test_percent_values),
        cmocka_unit_test(test_bool_values),
        cmocka_unit_test(test_enum_values),
        cmocka_unit_test(test_hostport_values),
        cmocka_unit_test(test_redis_url),
        cmocka_unit_test(test_password_in_url_refused),
        cmocka_unit_test(test_http_url),
        cmocka_unit_test(test_http_url_masked),
        cmocka_unit_test(test_list_values),
        cmocka_unit_test(test_string_values),
        cmocka_unit_test(test_secret_files),
        cmocka_unit_test(test_tls_keys),
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_unknown_section),
        cmocka_unit_test(test_section_errors),
        cmocka_unit_test(test_duplicate_key),
        cmocka_unit_test(test_continuation_refused),
        cmocka_unit_test(test_long_line),
        cmocka_unit_test(test_control_characters),
        cmocka_unit_test(test_only_first_error),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_crlf_and_bom),
        cmocka_unit_test(test_sentinel_validation),
        cmocka_unit_test(test_mode_checks),
        cmocka_unit_test(test_redlock_validation),
        cmocka_unit_test(test_webhook_and_unlock_validation),
        cmocka_unit_test(test_classes_order),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_round_trip_defaults),
        cmocka_unit_test(test_target_address_sentinel_order),
        cmocka_unit_test(test_round_trip_long_line),
        cmocka_unit_test(test_same_server),
        cmocka_unit_test(test_shipped_config),
    };

    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
