/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_client_token.c - liblockwatch's holder identity: the lw1 token
 * (format, strict parse, round trip, and agreement with the agent's
 * decoder), the process nonce in its pid field (one per process, another
 * in a forked child; the older form without it still read), host name
 * sanitising, UUID v4, the Redisson field, the brace rule for companion
 * names, decimal formatting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "client/client_impl.h"
#include "collectors/formats/formats.h"

static struct lwc_token
sample_token(void)
{
    struct lwc_token t;

    memset(&t, 0, sizeof(t));
    memcpy(t.host, "web-3.example.com", sizeof("web-3.example.com"));
    t.pid = 4211;
    t.has_nonce = true;
    t.nonce = UINT64_C(0x5b2e9c0d71a4f836);
    t.thread = 4230;
    t.acquired_ms = INT64_C(1795666320123);
    t.random = UINT64_C(0x9f86d081884c7d65);
    return t;
}

static void
format_matches_the_documented_example(void **state)
{
    struct lwc_token t = sample_token();
    char out[LWC_TOKEN_MAX];
    int n;

    (void)state;
    n = lwc_token_format(out, sizeof(out), &t);
    assert_string_equal(out, "lw1:web-3.example.com:4211.5b2e9c0d71a4f836:4230:1795666320123:"
                        "9f86d081884c7d65");
    assert_int_equal(n, (int)strlen(out));
    /* the older form, as a token read back from an older library */
    t.has_nonce = false;
    n = lwc_token_format(out, sizeof(out), &t);
    assert_string_equal(out, "lw1:web-3.example.com:4211:4230:1795666320123:9f86d081884c7d65");
    assert_int_equal(n, (int)strlen(out));
}

static void
round_trip(const struct lwc_token *t)
{
    char out[LWC_TOKEN_MAX];
    struct lwc_token back;
    int n = lwc_token_format(out, sizeof(out), t);

    assert_true(n > 0);
    assert_true(n <= LW1_TOKEN_LEN_MAX);
    assert_int_equal(lwc_token_parse(out, (size_t)n, &back), 0);
    assert_string_equal(back.host, t->host);
    assert_int_equal(back.pid, t->pid);
    assert_int_equal(back.has_nonce, t->has_nonce);
    assert_int_equal(back.nonce, t->has_nonce ? t->nonce : 0);
    assert_int_equal(back.thread, t->thread);
    assert_int_equal(back.acquired_ms, t->acquired_ms);
    assert_int_equal(back.random, t->random);
}

static void
round_trips_at_the_edges(void **state)
{
    struct lwc_token t = sample_token();

    (void)state;
    round_trip(&t);
    t.pid = 1;
    t.nonce = 0;
    t.thread = 0;
    t.random = 0;
    t.acquired_ms = INT64_C(946684800000);
    round_trip(&t);
    t.pid = INT32_MAX;
    t.nonce = UINT64_MAX;
    t.thread = INT64_MAX;
    t.random = UINT64_MAX;
    t.acquired_ms = INT64_C(4102444799999);
    memset(t.host, 'h', LWC_HOST_MAX);
    t.host[LWC_HOST_MAX] = '\0';
    round_trip(&t);
    {   /* the longest token there is */
        char out[LWC_TOKEN_MAX];

        assert_int_equal(lwc_token_format(out, sizeof(out), &t), LW1_TOKEN_LEN_MAX);
    }
    t.has_nonce = false;
    round_trip(&t);
    memcpy(t.host, "a", 2);
    round_trip(&t);
    t.has_nonce = true;
    round_trip(&t);
}

static void
format_refuses_what_the_agent_would_not_read(void **state)
{
    struct lwc_token t;
    char out[LWC_TOKEN_MAX];

    (void)state;
    t = sample_token();
    t.host[0] = '\0';
    assert_int_equal(lwc_token_format(out, sizeof(out), &t), -1);
    t = sample_token();
    t.host[3] = ':';
    assert_int_equal(lwc_token_format(out, sizeof(out), &t), -1);
    t = sample_token();
    t.pid = 0;
    assert_int_equal(lwc_token_format(out, sizeof(out), &t), -1);
    t.pid = (long)INT32_MAX + 1;
    assert_int_equal(lwc_token_format(out, sizeof(out), &t), -1);
    t = sample_token();
    t.thread = -1;
    assert_int_equal(lwc_token_format(out, sizeof(out), &t), -1);
    t = sample_token();
    t.acquired_ms = INT64_C(946684799999);
    assert_int_equal(lwc_token_format(out, sizeof(out), &t), -1);
    t.acquired_ms = INT64_C(4102444800000);
    assert_int_equal(lwc_token_format(out, sizeof(out), &t), -1);
    t = sample_token();
    assert_int_equal(lwc_token_format(out, 20, &t), -1);
    assert_int_equal(lwc_token_format(out, 79, &t), -1);     /* 79 + NUL fits */
    assert_int_equal(lwc_token_format(out, 80, &t), 79);
}

static void
parse_is_strict(void **state)
{
    static const char *bad[] = {
        "",
        "lw1:",
        "lw2:h:1:1:1795666320123:9f86d081884c7d65",
        "LW1:h:1:1:1795666320123:9f86d081884c7d65",
        "lw1::1:1:1795666320123:9f86d081884c7d65",            /* empty host */
        "lw1:h h:1:1:1795666320123:9f86d081884c7d65",         /* space */
        "lw1:h:0:1:1795666320123:9f86d081884c7d65",           /* pid 0 */
        "lw1:h:01:1:1795666320123:9f86d081884c7d65",          /* leading 0 */
        "lw1:h:2147483648:1:1795666320123:9f86d081884c7d65",  /* pid > 2^31-1 */
        "lw1:h:1:-1:1795666320123:9f86d081884c7d65",
        "lw1:h:1:01:1795666320123:9f86d081884c7d65",
        "lw1:h:1:1:946684799999:9f86d081884c7d65",            /* before 2000 */
        "lw1:h:1:1:1795666320123:9F86D081884C7D65",           /* uppercase */
        "lw1:h:1:1:1795666320123:9f86d081884c7d6",            /* 15 hex */
        "lw1:h:1:1:1795666320123:9f86d081884c7d655",          /* 17 hex */
        "lw1:h:1:1:1795666320123:9f86d081884c7d65:",          /* 7 fields */
        "lw1:h:1:1795666320123:9f86d081884c7d65",             /* 5 fields */
        "lw1:hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
        ":1:1:1795666320123:9f86d081884c7d65",                /* host 64 */
        "lw1:h:1.:1:1795666320123:9f86d081884c7d65",          /* empty nonce */
        "lw1:h:.5b2e9c0d71a4f836:1:1795666320123:9f86d081884c7d65",     /* no pid */
        "lw1:h:1.5B2E9C0D71A4F836:1:1795666320123:9f86d081884c7d65",    /* uppercase */
        "lw1:h:1.5b2e9c0d71a4f83:1:1795666320123:9f86d081884c7d65",     /* 15 hex */
        "lw1:h:1.5b2e9c0d71a4f8366:1:1795666320123:9f86d081884c7d65",   /* 17 hex */
        "lw1:h:1.5b2e9c0d71a4f836.1:1:1795666320123:9f86d081884c7d65",  /* two dots */
        "lw1:h:01.5b2e9c0d71a4f836:1:1795666320123:9f86d081884c7d65",   /* leading 0 */
        "lw1:h:0.5b2e9c0d71a4f836:1:1795666320123:9f86d081884c7d65",    /* pid 0 */
        "lw1:h:1:1.5b2e9c0d71a4f836:1795666320123:9f86d081884c7d65",    /* on the thread */
    };
    struct lwc_token t;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (lwc_token_parse(bad[i], strlen(bad[i]), &t) != -1)
            fail_msg("parsed: %s", bad[i]);
    }
    assert_int_equal(lwc_token_parse(NULL, 0, &t), -1);
    /* a NUL inside is not a hex digit */
    assert_int_equal(lwc_token_parse("lw1:h:1:1:1795666320123:9f86d081884c7d6\0", 40, &t), -1);
}

/* The agent's decoder (collectors/formats/liblockwatch.c) reads our token
 * as ours, with the same identity. */
static void
agent_decodes_our_token(void **state)
{
    struct lwc_token t = sample_token();
    char out[LWC_TOKEN_MAX];
    struct raw_lock raw;
    struct lock_view *view = calloc(1, sizeof(*view));
    const struct lock_format *fmt;
    int n;

    (void)state;
    assert_non_null(view);
    t.thread = 0;
    n = lwc_token_format(out, sizeof(out), &t);
    assert_true(n > 0);
    memset(&raw, 0, sizeof(raw));
    raw.key = "lock:x";
    raw.keylen = 6;
    raw.type = RAW_STRING;
    raw.pttl = 30000;
    raw.value = out;
    raw.valuelen = (size_t)n;
    fmt = formats_decode(&raw, view);
    assert_string_equal(fmt->name, "liblockwatch");
    assert_string_equal(view->host, t.host);
    assert_int_equal(view->pid, t.pid);
    assert_int_equal(view->thread, t.thread);
    assert_int_equal(view->acquired_ms, t.acquired_ms);
    assert_int_equal(view->nholders, 1);
    assert_memory_equal(view->holders[0].id, out, (size_t)n);
    free(view);
}

/* One nonce a process, whichever thread asks and however often; a forked
 * child, another process with the parent's memory, draws its own. */
static void
process_nonce_is_per_process(void **state)
{
    uint64_t a, b, child;
    int fds[2], status;
    pid_t pid;

    (void)state;
    assert_int_equal(lwc_process_nonce(&a), 0);
    assert_int_equal(lwc_process_nonce(&b), 0);
    assert_int_equal(a, b);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint64_t c2;
        int ok = lwc_process_nonce(&child) == 0 && lwc_process_nonce(&c2) == 0 &&
                 c2 == child;

        _exit(ok && write(fds[1], &child, sizeof(child)) == (ssize_t)sizeof(child) ? 0 : 1);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &child, sizeof(child)), (ssize_t)sizeof(child));
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_not_equal(child, a);
    assert_int_equal(lwc_process_nonce(&b), 0);      /* the parent's stays */
    assert_int_equal(a, b);
}

static void
host_is_sanitised(void **state)
{
    char out[LWC_HOST_MAX + 1];
    char longname[200];

    (void)state;
    assert_int_equal(lwc_host_sanitize(out, "web-3.example.com"), 17);
    assert_string_equal(out, "web-3.example.com");
    lwc_host_sanitize(out, "my host:1/caf\xc3\xa9_A");
    assert_string_equal(out, "my-host-1-caf--_A");
    lwc_host_sanitize(out, "");
    assert_string_equal(out, "localhost");
    lwc_host_sanitize(out, NULL);
    assert_string_equal(out, "localhost");
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(lwc_host_sanitize(out, longname), LWC_HOST_MAX);
    assert_int_equal(strlen(out), LWC_HOST_MAX);
    lwc_hostname(out);
    assert_true(strlen(out) >= 1 && strlen(out) <= LWC_HOST_MAX);
    assert_int_equal(strspn(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789._-"), strlen(out));
}

static void
uuid4_is_lowercase_v4(void **state)
{
    unsigned char raw[16];
    char a[LWC_UUID_LEN + 1], b[LWC_UUID_LEN + 1];

    (void)state;
    memset(raw, 0xff, sizeof(raw));
    lwc_uuid4_format(a, raw);
    assert_string_equal(a, "ffffffff-ffff-4fff-bfff-ffffffffffff");
    memset(raw, 0, sizeof(raw));
    lwc_uuid4_format(a, raw);
    assert_string_equal(a, "00000000-0000-4000-8000-000000000000");
    assert_int_equal(lwc_uuid4(a), 0);
    assert_int_equal(lwc_uuid4(b), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(strlen(a), LWC_UUID_LEN);
    assert_int_equal(a[14], '4');
    assert_non_null(strchr("89ab", a[19]));
}

/* "<uuid>:<tid>" in a hash is read by the agent as a Redisson holder. */
static void
agent_decodes_our_reentrant_field(void **state)
{
    char id[LWC_UUID_LEN + 1], field[64], count[] = "2";
    struct raw_field f;
    struct raw_lock raw;
    struct lock_view *view = calloc(1, sizeof(*view));
    const struct lock_format *fmt;
    size_t n;

    (void)state;
    assert_non_null(view);
    assert_int_equal(lwc_uuid4(id), 0);
    memcpy(field, id, LWC_UUID_LEN);
    field[LWC_UUID_LEN] = ':';
    n = LWC_UUID_LEN + 1 + lwc_fmt_u64(field + LWC_UUID_LEN + 1, 123456);
    field[n] = '\0';
    f.name = field;
    f.namelen = n;
    f.value = count;
    f.valuelen = 1;
    memset(&raw, 0, sizeof(raw));
    raw.key = "lock:r";
    raw.keylen = 6;
    raw.type = RAW_HASH;
    raw.pttl = 30000;
    raw.fields = &f;
    raw.nfields = 1;
    fmt = formats_decode(&raw, view);
    assert_string_equal(fmt->name, "redisson");
    assert_int_equal(view->thread, 123456);
    assert_int_equal(view->max_count, 2);
    free(view);
}

static void
prefixed_names_follow_redisson(void **state)
{
    char out[64];

    (void)state;
    assert_int_equal(prefix_name(out, sizeof(out), "redisson_lock__channel",
                                       "lock:a", 6), 31);
    assert_string_equal(out, "redisson_lock__channel:{lock:a}");
    prefix_name(out, sizeof(out), "lockwatch_fence", "lock:{t}:a", 10);
    assert_string_equal(out, "lockwatch_fence:lock:{t}:a");
    prefix_name(out, sizeof(out), "p", "a{", 2);
    assert_string_equal(out, "p:a{");
    /* too small: the length it needs, and an empty string */
    assert_int_equal(prefix_name(out, 5, "prefix", "key", 3), 12);
    assert_string_equal(out, "");
    assert_int_equal(prefix_name(NULL, 0, "prefix", "key", 3), 12);
    assert_int_equal(prefix_name(out, 13, "prefix", "key", 3), 12);
    assert_string_equal(out, "prefix:{key}");
    /* binary keys are copied as they are */
    assert_int_equal(prefix_name(out, sizeof(out), "p", "a\0b", 3), 7);
    assert_memory_equal(out, "p:{a\0b}", 8);
}

static void
decimal_formatting(void **state)
{
    char out[24];

    (void)state;
    assert_int_equal(lwc_fmt_u64(out, 0), 1);
    assert_memory_equal(out, "0", 1);
    assert_int_equal(lwc_fmt_u64(out, 10), 2);
    assert_memory_equal(out, "10", 2);
    assert_int_equal(lwc_fmt_u64(out, UINT64_MAX), 20);
    assert_memory_equal(out, "18446744073709551615", 20);
}

static void
random_fills_buffers(void **state)
{
    unsigned char a[32], b[32];

    (void)state;
    assert_int_equal(lwc_random(a, sizeof(a)), 0);
    assert_int_equal(lwc_random(b, sizeof(b)), 0);
    assert_memory_not_equal(a, b, sizeof(a));
    assert_int_equal(lwc_random(a, 0), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_matches_the_documented_example),
        cmocka_unit_test(round_trips_at_the_edges),
        cmocka_unit_test(format_refuses_what_the_agent_would_not_read),
        cmocka_unit_test(parse_is_strict),
        cmocka_unit_test(agent_decodes_our_token),
        cmocka_unit_test(process_nonce_is_per_process),
        cmocka_unit_test(host_is_sanitised),
        cmocka_unit_test(uuid4_is_lowercase_v4),
        cmocka_unit_test(agent_decodes_our_reentrant_field),
        cmocka_unit_test(prefixed_names_follow_redisson),
        cmocka_unit_test(decimal_formatting),
        cmocka_unit_test(random_fills_buffers),
    };

    return cmocka_run_group_tests_name("client_token", tests, NULL, NULL);
}
