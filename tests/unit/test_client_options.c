/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_client_options.c - liblockwatch's options: defaults, validation
 * (every refusal names the option), and the argument checks of the public
 * calls, none of which needs a Redis.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "client/client_impl.h"

static void
defaults(void **state)
{
    lw_options o;
    lw_error err;

    (void)state;
    memset(&o, 0x5a, sizeof(o));
    lw_options_init(&o);
    assert_string_equal(o.host, "127.0.0.1");
    assert_int_equal(o.port, 6379);
    assert_null(o.username);
    assert_null(o.password);
    assert_null(o.password_file);
    assert_int_equal(o.db, 0);
    assert_int_equal(o.connect_timeout_ms, 2000);
    assert_int_equal(o.command_timeout_ms, 5000);
    assert_null(o.agent);
    assert_int_equal(o.report, 1);
    assert_int_equal(o.default_lease_ms, 30000);
    assert_null(o.on_lost);
    assert_null(o.on_lost_data);
    assert_int_equal(lwc_options_check(&o, &err), LW_OK);
    lw_options_init(NULL);      /* no crash */
}

/* One change from the defaults; the check refuses it and says why. */
static void
refused(void (*change)(lw_options *), const char *word)
{
    lw_options o;
    lw_error err;

    lw_options_init(&o);
    change(&o);
    memset(&err, 0, sizeof(err));
    assert_int_equal(lwc_options_check(&o, &err), LW_ERR);
    assert_int_equal(err.code, LW_ERR);
    if (strstr(err.str, word) == NULL)
        fail_msg("message \"%s\" does not name \"%s\"", err.str, word);
    /* lw_connect refuses them before touching the network */
    memset(&err, 0, sizeof(err));
    assert_null(lw_connect(&o, &err));
    assert_int_equal(err.code, LW_ERR);
    assert_non_null(strstr(err.str, word));
}

static void no_host(lw_options *o) { o->host = NULL; }
static void empty_host(lw_options *o) { o->host = ""; }
static void port_zero(lw_options *o) { o->port = 0; }
static void port_big(lw_options *o) { o->port = 65536; }
static void db_negative(lw_options *o) { o->db = -1; }
static void connect_zero(lw_options *o) { o->connect_timeout_ms = 0; }
static void command_big(lw_options *o) { o->command_timeout_ms = LWC_TIMEOUT_MAX_MS + 1; }
static void both_passwords(lw_options *o) { o->password = "a"; o->password_file = "/x"; }
static void user_alone(lw_options *o) { o->username = "u"; }
static void lease_short(lw_options *o) { o->default_lease_ms = LWC_LEASE_MIN_MS - 1; }
static void lease_long(lw_options *o) { o->default_lease_ms = LWC_LEASE_MAX_MS + 1; }
static void agent_bad(lw_options *o) { o->agent = "localhost"; }
static void agent_bad_second(lw_options *o) { o->agent = "127.0.0.1:1, localhost"; }

static void
validation_names_the_option(void **state)
{
    (void)state;
    refused(no_host, "host");
    refused(empty_host, "host");
    refused(port_zero, "port");
    refused(port_big, "port");
    refused(db_negative, "db");
    refused(connect_zero, "connect_timeout_ms");
    refused(command_big, "command_timeout_ms");
    refused(both_passwords, "password");
    refused(user_alone, "username");
    refused(lease_short, "default_lease_ms");
    refused(lease_long, "default_lease_ms");
    refused(agent_bad, "agent");
    refused(agent_bad_second, "\"localhost\" (from the agent option)");
}

static void
edges_that_are_fine(void **state)
{
    lw_options o;
    lw_error err;

    (void)state;
    lw_options_init(&o);
    o.port = 65535;
    o.default_lease_ms = LWC_LEASE_MIN_MS;
    o.agent = "[::1]:9717";
    o.username = "u";
    o.password = "p";
    assert_int_equal(lwc_options_check(&o, &err), LW_OK);
    /* several, split as LOCKWATCH_SAMPLES (lw_options.agent) */
    o.agent = " 127.0.0.1:1, [::1]:2 ,,";
    assert_int_equal(lwc_options_check(&o, &err), LW_OK);
    /* a bad agent does not matter when reporting is off */
    o.agent = "nonsense";
    o.report = 0;
    assert_int_equal(lwc_options_check(&o, &err), LW_OK);
    assert_int_equal(lwc_options_check(&o, NULL), LW_OK);
}

static void
unreadable_password_file_is_named(void **state)
{
    lw_options o;
    lw_error err;

    (void)state;
    lw_options_init(&o);
    o.password_file = "/nonexistent/lockwatch-test.pass";
    o.report = 0;
    assert_null(lw_connect(&o, &err));
    assert_non_null(strstr(err.str, "/nonexistent/lockwatch-test.pass"));
}

static void
calls_check_their_arguments(void **state)
{
    lw_lock_t *lk = (lw_lock_t *)&lk;     /* must be reset to NULL */
    lw_error err;

    (void)state;
    assert_int_equal(lw_lock(NULL, "k", 0, 0, 0, &lk, &err), LW_ERR);
    assert_null(lk);
    assert_int_equal(err.code, LW_ERR);
    assert_true(err.str[0] != '\0');
    assert_int_equal(lw_trylock(NULL, "k", 0, 0, NULL, NULL), LW_ERR);
    assert_int_equal(lw_unlock(NULL, &err), LW_OK);
    assert_int_equal(err.code, LW_OK);
    assert_string_equal(err.str, "");
    assert_int_equal(lw_extend(NULL, 10, &err), LW_ERR);
    assert_int_equal(lw_lock_fence(NULL), 0);
    assert_int_equal(lw_lock_is_lost(NULL), 0);
    assert_string_equal(lw_lock_token(NULL), "");
    assert_string_equal(lw_lock_key(NULL), "");
    assert_int_equal(lw_lock_waited_us(NULL), 0);
    assert_string_equal(lw_client_id(NULL), "");
    lw_client_free(NULL);
}

static void
strerror_and_version(void **state)
{
    lw_stats s;

    (void)state;
    assert_string_equal(lw_strerror(LW_OK), "ok");
    assert_non_null(strstr(lw_strerror(LW_TIMEOUT), "timed out"));
    assert_non_null(strstr(lw_strerror(LW_BUSY), "held"));
    assert_non_null(strstr(lw_strerror(LW_LOST), "lost"));
    assert_string_equal(lw_strerror(LW_ERR), "error");
    assert_string_equal(lw_strerror((lw_status)42), "unknown status");
    assert_string_equal(lw_version(), "0.1.0");
    memset(&s, 0xff, sizeof(s));
    lw_client_stats(NULL, &s);
    assert_int_equal(s.samples_sent, 0);
    assert_int_equal(s.locks_lost, 0);
    lw_client_stats(NULL, NULL);
}

/* lw_connect()'s warnings: each after the last, "; " between, code
 * LW_OK, cut (never overrun) at LW_ERRSTR_SIZE. */
static void
warnings_add_up_within_the_buffer(void **state)
{
    lw_error w;
    char big[2 * LW_ERRSTR_SIZE];

    (void)state;
    lwc_clearerr(&w);
    lwc_addwarn(&w, "first %d", 1);
    lwc_addwarn(&w, "second");
    assert_int_equal(w.code, LW_OK);
    assert_string_equal(w.str, "first 1; second");
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    lwc_addwarn(&w, "%s", big);
    assert_int_equal(strlen(w.str), LW_ERRSTR_SIZE - 1);
    assert_memory_equal(w.str, "first 1; second; xxx", 20);
    lwc_addwarn(&w, "more");            /* full: stays as it was */
    assert_int_equal(strlen(w.str), LW_ERRSTR_SIZE - 1);
    assert_int_equal(w.str[LW_ERRSTR_SIZE - 2], 'x');
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults),
        cmocka_unit_test(validation_names_the_option),
        cmocka_unit_test(edges_that_are_fine),
        cmocka_unit_test(unreadable_password_file_is_named),
        cmocka_unit_test(calls_check_their_arguments),
        cmocka_unit_test(strerror_and_version),
        cmocka_unit_test(warnings_add_up_within_the_buffer),
    };

    return cmocka_run_group_tests_name("client_options", tests, NULL, NULL);
}
