/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_release.c - the pure parts of the guarded release and of lockctl's
 * output: the script's arguments (KEYS, roles, ARGV), cluster slots, the
 * outcome codes, the script text and SHA, the outcome JSON, and the
 * 100-column tables with hostile keys.
 *
 * The guards themselves run in Redis and are tested against a real
 * redis-server by tests/integration/test_release_script.py.  The tables
 * are cli/table.c's public API (cli/lockctl.h), linked from
 * $(BUILD)/liblockctl.a.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/formats/formats.h"
#include "collectors/release/release.h"
#include "cli/lockctl.h"

static char *pats[] = { "lock:*", "job-lock:*" };

static void
target(struct target_conf *t, enum target_mode mode)
{
    memset(t, 0, sizeof(*t));
    t->name = "main";
    snprintf(t->host, sizeof(t->host), "127.0.0.1");
    t->port = 6379;
    t->mode = mode;
    t->patterns = pats;
    t->npatterns = 2;
}

static void
request(struct release_request *rq, const char *key, size_t keylen)
{
    memset(rq, 0, sizeof(*rq));
    rq->action = RELEASE_ACTION_RELEASE;
    rq->key = key;
    rq->keylen = keylen;
    rq->holder = "tok";
    rq->holderlen = 3;
    rq->operator_name = "alice";
    rq->reason = "stuck";
    rq->now_ms = 1700000000123;
}

/* argv[i] as a C string (test helper; args here hold no NUL unless said) */
static int
arg_is(const struct release_args *a, int i, const char *s)
{
    return a->argvlen[i] == strlen(s) && memcmp(a->argv[i], s, a->argvlen[i]) == 0;
}

/* ARGV[n] (1-based, as the script numbers them) */
static int
argv_index(const struct release_args *a, int n)
{
    return 3 + a->nkeys + n - 1;
}

/* ---- outcomes ----------------------------------------------------------------- */

static void
outcome_codes_round_trip(void **state)
{
    (void)state;
    for (int o = 0; o < RELEASE_OUTCOME_COUNT; o++) {
        const char *s = release_outcome_str((enum release_outcome)o);

        assert_int_equal(release_outcome_parse(s, strlen(s)), o);
        assert_non_null(release_outcome_message((enum release_outcome)o));
    }
    assert_string_equal(release_outcome_str(RELEASE_REFUSED_HOLDER), "holder_changed");
    assert_string_equal(release_outcome_str(RELEASE_REFUSED_PATTERN), "pattern");
    assert_string_equal(release_outcome_str(RELEASE_REFUSED_GONE), "gone");
    assert_string_equal(release_outcome_str(RELEASE_REFUSED_NOT_LEAKED), "not_leaked");
    assert_string_equal(release_outcome_str(RELEASE_REFUSED_TOO_YOUNG), "too_young");
    assert_string_equal(release_outcome_str(RELEASE_REFUSED_WRONGTYPE), "wrongtype");
    assert_string_equal(release_outcome_str(RELEASE_REFUSED_HAS_TTL), "has_ttl");
    assert_string_equal(release_outcome_str(RELEASE_RELEASED), "released");
    assert_string_equal(release_outcome_str(RELEASE_EXPIRED), "expired");
    assert_string_equal(release_outcome_str((enum release_outcome)99), "error");
    assert_int_equal(release_outcome_parse("releasedX", 9), -1);
    assert_int_equal(release_outcome_parse("release", 7), -1);
    assert_int_equal(release_outcome_parse("", 0), -1);
    assert_true(strstr(release_outcome_message(RELEASE_REFUSED_HOLDER), "holder changed"));
}

static void
outcome_classes(void **state)
{
    (void)state;
    assert_true(release_outcome_done(RELEASE_RELEASED));
    assert_true(release_outcome_done(RELEASE_EXPIRED));
    assert_false(release_outcome_done(RELEASE_WOULD_RELEASE));
    assert_false(release_outcome_done(RELEASE_ERROR));
    for (int o = RELEASE_REFUSED_PATTERN; o <= RELEASE_REFUSED_HAS_TTL; o++) {
        assert_true(release_outcome_refused((enum release_outcome)o));
        assert_false(release_outcome_done((enum release_outcome)o));
    }
    assert_false(release_outcome_refused(RELEASE_RELEASED));
    assert_false(release_outcome_refused(RELEASE_WOULD_EXPIRE));
    assert_false(release_outcome_refused(RELEASE_ERROR));
}

/* ---- arguments ---------------------------------------------------------------- */

static void
args_standalone_release(void **state)
{
    struct target_conf t;
    struct release_request rq;
    struct release_args a;
    int i;

    (void)state;
    target(&t, TARGET_STANDALONE);
    request(&rq, "lock:order:1", 12);
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
    assert_true(arg_is(&a, 0, "EVALSHA"));
    assert_true(arg_is(&a, 1, "abc"));
    assert_int_equal(a.nkeys, 12);
    assert_true(arg_is(&a, 2, "12"));
    assert_true(arg_is(&a, 3, "lock:order:1"));
    assert_true(arg_is(&a, 4, "lockwatch:audit"));
    assert_true(arg_is(&a, 5, "redisson_lock__channel:{lock:order:1}"));
    assert_true(arg_is(&a, 6, "redisson_lock__channel__{lock:order:1}"));
    assert_true(arg_is(&a, 7, "redisson_rwlock:{lock:order:1}"));
    assert_true(arg_is(&a, 8, "redisson_rwlock__{lock:order:1}"));
    assert_true(arg_is(&a, 9, "lockwatch_lock__channel:{lock:order:1}"));
    assert_true(arg_is(&a, 10, "redisson_lock_queue:{lock:order:1}"));
    assert_true(arg_is(&a, 11, "redisson_lock_timeout:{lock:order:1}"));
    assert_true(arg_is(&a, 12, "redisson_sc:{lock:order:1}"));
    assert_true(arg_is(&a, 13, "{lock:order:1}:timeout"));
    assert_true(arg_is(&a, 14, "lock-signal:order:1"));
    i = argv_index(&a, 1);
    assert_true(arg_is(&a, i, "tok"));
    assert_true(arg_is(&a, i + 1, "0"));            /* if_leaked */
    assert_true(arg_is(&a, i + 2, "0"));            /* if_older_than */
    assert_true(arg_is(&a, i + 3, "0"));            /* known age */
    assert_true(arg_is(&a, i + 4, "0"));            /* dry run */
    assert_true(arg_is(&a, i + 5, "0"));            /* cluster */
    assert_true(arg_is(&a, i + 6, "1700000000123"));
    assert_true(arg_is(&a, i + 7, "alice"));
    assert_true(arg_is(&a, i + 8, "stuck"));
    assert_true(arg_is(&a, i + 9, "main"));
    assert_true(arg_is(&a, i + 10, "0"));           /* ttl */
    assert_true(arg_is(&a, i + 11,
                       "audit redisson redisson-v2 redisson-rw redisson-rw-v2 liblockwatch "
                       "redisson-queue redisson-timeout redisson-sc permits signal"));
    assert_true(arg_is(&a, i + 12, "2"));
    assert_true(arg_is(&a, i + 13, "lock:*"));
    assert_true(arg_is(&a, i + 14, "job-lock:*"));
    assert_int_equal(a.argc, i + 15);      /* no format: the script picks the row */
    release_args_free(&a);
}

/* A format with a row: only its companions, and its name after the patterns. */
static void
args_per_format_row(void **state)
{
    static const struct {
        const char *format, *roles, *key1;
    } rows[] = {
        { "redisson-rw", "audit redisson-rw redisson-rw-v2", "redisson_rwlock:{lock:q}" },
        { "redisson-fair", "audit redisson redisson-v2 redisson-queue redisson-timeout",
          "redisson_lock__channel:{lock:q}" },
        { "redisson-permit-semaphore", "audit redisson-sc permits", "redisson_sc:{lock:q}" },
        { "redisson-semaphore", "audit redisson-sc", "redisson_sc:{lock:q}" },
        { "python-redis-lock", "audit signal", "lock-signal:q" },
        { "shedlock", "audit", NULL },
    };
    struct target_conf t;
    struct release_request rq;
    struct release_args a;
    int i;

    (void)state;
    target(&t, TARGET_STANDALONE);
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        request(&rq, "lock:q", 6);
        rq.format = rows[r].format;
        assert_true(release_format_known(rows[r].format));
        assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
        i = argv_index(&a, 1);
        assert_true(arg_is(&a, i + 11, rows[r].roles));
        if (rows[r].key1 != NULL)
            assert_true(arg_is(&a, 5, rows[r].key1));
        assert_int_equal(a.argc, i + 16);
        assert_true(arg_is(&a, i + 15, rows[r].format));
        release_args_free(&a);
    }
    /* suffixName: {K}:timeout, or K:timeout for a key with its own tag */
    request(&rq, "lock:{g}", 8);
    rq.format = "redisson-permit-semaphore";
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
    assert_true(arg_is(&a, 6, "lock:{g}:timeout"));
    release_args_free(&a);
    /* a format without a row: as if none was given */
    request(&rq, "lock:q", 6);
    rq.format = "unknown";
    assert_false(release_format_known("unknown"));
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
    assert_int_equal(a.argc, argv_index(&a, 1) + 15);
    release_args_free(&a);
    /* a key outside the patterns: refused before anything else is touched */
    request(&rq, "user:1", 6);
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
    assert_int_equal(a.nkeys, 2);
    release_args_free(&a);
}

/* Issue 23: a guessed format (format_source "guessed") never picks a
 * release that does more than compare-and-delete: a guessed row with
 * companions of its own is released as plain's row, the one detection
 * gives any string; a row that releases by DEL alone keeps its name. */
static void
guessed_format_releases_as_plain(void **state)
{
    static const char *const guessed[] = { "redisson", "redisson-rw", "python-redis-lock",
                                           "redisson-semaphore" };
    struct target_conf t;
    struct release_request rq;
    struct release_args a, plain;
    int i, ip;

    (void)state;
    target(&t, TARGET_STANDALONE);
    request(&rq, "lock:q", 6);
    rq.format = "plain";
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &plain), 0);
    ip = argv_index(&plain, 1);
    for (size_t g = 0; g < sizeof(guessed) / sizeof(guessed[0]); g++) {
        request(&rq, "lock:q", 6);
        rq.format = guessed[g];
        rq.format_guessed = true;
        assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
        i = argv_index(&a, 1);
        assert_int_equal(a.argc, plain.argc);
        assert_int_equal(a.nkeys, plain.nkeys);
        assert_int_equal(a.argvlen[i + 11], plain.argvlen[ip + 11]);
        assert_memory_equal(a.argv[i + 11], plain.argv[ip + 11], plain.argvlen[ip + 11]);
        assert_true(arg_is(&a, i + 15, "plain"));
        release_args_free(&a);
        /* proven or declared, the same format keeps its own row */
        rq.format_guessed = false;
        assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
        assert_true(arg_is(&a, argv_index(&a, 1) + 15, guessed[g]));
        release_args_free(&a);
    }
    release_args_free(&plain);
    /* a guessed row that releases by DEL alone is released as itself */
    request(&rq, "lock:q", 6);
    rq.format = "node-redlock";
    rq.format_guessed = true;
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
    i = argv_index(&a, 1);
    assert_true(arg_is(&a, i + 11, "audit"));
    assert_true(arg_is(&a, i + 15, "node-redlock"));
    release_args_free(&a);
    /* a hash no decoder knew ("unknown", guessed) is no Redisson lock */
    request(&rq, "lock:q", 6);
    rq.format = "unknown";
    rq.format_guessed = true;
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
    assert_true(arg_is(&a, argv_index(&a, 1) + 15, "plain"));
    release_args_free(&a);
}

extern const char collectors_release_lua_formats_lua[];

/* The C release table and formats.lua's lw_rows name the same formats. */
static void
release_tables_agree(void **state)
{
    static const char *names[] = {
        "redisson-rw", "redisson", "redisson-fair", "redisson-fenced", "redisson-semaphore",
        "redisson-permit-semaphore", "redis-semaphore", "liblockwatch", "python-redis-lock",
        "spring", "plain", "shedlock", "redis-py", "node-redlock", "redsync", "pottery",
    };
    const char *lua = collectors_release_lua_formats_lua, *p;
    char quoted[64];
    size_t rows = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        assert_true(release_format_known(names[i]));
        snprintf(quoted, sizeof(quoted), "'%s'", names[i]);
        assert_non_null(strstr(lua, quoted));
    }
    for (p = lua; (p = strstr(p, "lw_rows['")) != NULL; p++) {
        const char *e = strchr(p + 9, '\'');

        assert_non_null(e);
        snprintf(quoted, sizeof(quoted), "%.*s", (int)(e - p - 9), p + 9);
        assert_true(release_format_known(quoted));
        rows++;
    }
    assert_true(rows >= 7);
}

/* The release table is the format table's release column: every format has
 * one; every one but FMT_RELEASE_DETECT has exactly one formats.lua row
 * (a statement starting a line: lw_rows['<name>'] = ...), and formats.lua
 * has no row for anything else.  Each failure names the format. */
static void
release_column_and_lua_rows(void **state)
{
    const char *lua = collectors_release_lua_formats_lua, *p, *unknown;
    char quoted[160];
    size_t rows = 0, want = 0;

    (void)state;
    for (size_t i = 0; i < formats_count; i++) {
        const struct lock_format *f = &formats_table[i];
        const char *at;

        if (f->release == NULL)
            fail_msg("format '%s': no release column", f->name);
        if (f->release == FMT_RELEASE_DETECT)
            continue;
        want++;
        snprintf(quoted, sizeof(quoted), "\nlw_rows['%s'] =", f->name);
        if ((at = strstr(lua, quoted)) == NULL)
            fail_msg("format '%s': a release column but no row in formats.lua", f->name);
        if (strstr(at + 1, quoted) != NULL)
            fail_msg("format '%s': two rows in formats.lua", f->name);
        assert_true(release_format_known(f->name));
    }
    for (p = lua; (p = strstr(p, "\nlw_rows['")) != NULL; p++) {
        const char *e = strchr(p + 10, '\'');
        const struct lock_format *f;

        assert_non_null(e);
        snprintf(quoted, sizeof(quoted), "%.*s", (int)(e - p - 10), p + 10);
        f = formats_by_name(quoted);
        if (f == NULL || f->release == NULL || f->release == FMT_RELEASE_DETECT)
            fail_msg("formats.lua: row '%s' is no format with a release column", quoted);
        rows++;
    }
    assert_int_equal(rows, want);
    if ((unknown = release_companion_unknown()) != NULL)
        fail_msg("format '%s': its release or wake column names a companion release.c "
                 "does not have", unknown);
}

static void
args_options_and_binary_key(void **state)
{
    struct target_conf t;
    struct release_request rq;
    struct release_args a;
    const char key[] = "lock:{a\0b}\n";
    int i;

    (void)state;
    target(&t, TARGET_STANDALONE);
    request(&rq, key, sizeof(key) - 1);
    rq.holder = "h\0x";
    rq.holderlen = 3;
    rq.if_leaked = true;
    rq.if_older_than_ms = 600000;
    rq.known_age_ms = 42;
    assert_int_equal(release_build_args(&t, "audit", &rq, "abc", &a), 0);
    /* binary-safe: the lengths carry the NUL */
    assert_int_equal(a.argvlen[3], sizeof(key) - 1);
    assert_memory_equal(a.argv[3], key, sizeof(key) - 1);
    /* a key with '{' keeps its own hash tag: no braces added */
    assert_int_equal(a.argvlen[5], strlen("redisson_lock__channel:") + sizeof(key) - 1);
    assert_memory_equal(a.argv[5], "redisson_lock__channel:lock:{a\0b}\n",
                        strlen("redisson_lock__channel:") + sizeof(key) - 1);
    i = argv_index(&a, 1);
    assert_int_equal(a.argvlen[i], 3);
    assert_memory_equal(a.argv[i], "h\0x", 3);
    assert_true(arg_is(&a, i + 1, "1"));
    assert_true(arg_is(&a, i + 2, "600000"));
    assert_true(arg_is(&a, i + 3, "42"));
    release_args_free(&a);
}

static void
args_dry_run_and_expire(void **state)
{
    struct target_conf t;
    struct release_request rq;
    struct release_args a;
    int i;

    (void)state;
    target(&t, TARGET_STANDALONE);
    request(&rq, "job-lock:default:x", 18);
    rq.dry_run = true;
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
    /* no audit stream in a dry run; no signal list: not a lock:<name> key */
    assert_int_equal(a.nkeys, 10);
    i = argv_index(&a, 1);
    assert_true(arg_is(&a, i + 4, "1"));
    assert_true(arg_is(&a, i + 11, "redisson redisson-v2 redisson-rw redisson-rw-v2 "
                       "liblockwatch redisson-queue redisson-timeout redisson-sc permits"));
    release_args_free(&a);

    request(&rq, "lock:a", 6);
    rq.action = RELEASE_ACTION_EXPIRE;
    rq.ttl_ms = 30000;
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
    assert_int_equal(a.nkeys, 2);   /* the lock and the audit stream: no wake-ups */
    i = argv_index(&a, 1);
    assert_true(arg_is(&a, i + 10, "30000"));
    assert_true(arg_is(&a, i + 11, "audit"));
    release_args_free(&a);
}

static void
args_cluster_keeps_one_slot(void **state)
{
    struct target_conf t;
    struct release_request rq;
    struct release_args a;
    unsigned slot;
    int i, k;

    (void)state;
    target(&t, TARGET_CLUSTER);
    request(&rq, "lock:order:1", 12);
    assert_int_equal(release_build_args(&t, "lockwatch:audit", &rq, "abc", &a), 0);
    /* the audit stream and lock-signal:order:1 hash elsewhere: left out */
    assert_int_equal(a.nkeys, 10);
    slot = release_key_slot("lock:order:1", 12);
    for (k = 0; k < a.nkeys; k++)
        assert_int_equal(release_key_slot(a.argv[3 + k], a.argvlen[3 + k]), slot);
    i = argv_index(&a, 1);
    assert_true(arg_is(&a, i + 5, "1"));
    assert_true(arg_is(&a, i + 11, "redisson redisson-v2 redisson-rw redisson-rw-v2 "
                       "liblockwatch redisson-queue redisson-timeout redisson-sc permits"));
    release_args_free(&a);

    /* "a{" has a '{' but no tag: the prefixed channels hash differently;
     * the 2.x names "<prefix>{lock:a{}" have the tag "lock:a{", which
     * hashes as the key does */
    request(&rq, "lock:a{", 7);
    assert_int_equal(release_build_args(&t, "audit", &rq, "abc", &a), 0);
    assert_int_equal(a.nkeys, 3);
    i = argv_index(&a, 1);
    assert_true(arg_is(&a, i + 11, "redisson-v2 redisson-rw-v2"));
    release_args_free(&a);
}

static void
key_slots(void **state)
{
    (void)state;
    /* values from CLUSTER KEYSLOT */
    assert_int_equal(release_key_slot("foo", 3), 12182);
    assert_int_equal(release_key_slot("bar", 3), 5061);
    assert_int_equal(release_key_slot("{user1000}.following", 20),
                     release_key_slot("{user1000}.followers", 20));
    assert_int_equal(release_key_slot("{user1000}.following", 20),
                     release_key_slot("user1000", 8));
    /* an empty tag hashes the whole key */
    assert_int_equal(release_key_slot("foo{}{bar}", 10) ==
                     release_key_slot("bar", 3), 0);
    assert_int_equal(release_key_slot("foo{{bar}}zap", 13), release_key_slot("{bar", 4));
    assert_int_equal(release_key_slot("", 0), 0);
}

/* ---- script ------------------------------------------------------------------- */

static void
script_text_and_sha(void **state)
{
    char *r = NULL, *e = NULL, sha_r[41], sha_e[41], sha_r2[41];
    size_t rl, el;

    (void)state;
    assert_int_equal(release_script(RELEASE_ACTION_RELEASE, &r, &rl, sha_r), 0);
    assert_int_equal(release_script(RELEASE_ACTION_EXPIRE, &e, &el, sha_e), 0);
    assert_int_equal(strlen(r), rl);
    assert_int_equal(strlen(sha_r), 40);
    assert_string_not_equal(sha_r, sha_e);
    /* guard.lua, formats.lua, then the action's body */
    assert_non_null(strstr(r, "lw_glob_match"));
    assert_non_null(strstr(r, "lw_rows['redisson-semaphore']"));
    assert_true(strstr(r, "lw_rows['redisson-semaphore']") > strstr(r, "lw_glob_match"));
    assert_non_null(strstr(r, "lw_row.release()"));
    assert_null(strstr(r, "lw_audit('expire'"));
    assert_non_null(strstr(e, "redis.call('pexpire', lw_key, lw_ttl_ms)"));
    assert_null(strstr(e, "lw_row.release()"));
    free(r);
    assert_int_equal(release_script(RELEASE_ACTION_RELEASE, &r, &rl, sha_r2), 0);
    assert_string_equal(sha_r, sha_r2);
    for (int i = 0; i < 40; i++)
        assert_true((sha_r[i] >= '0' && sha_r[i] <= '9') || (sha_r[i] >= 'a' && sha_r[i] <= 'f'));
    free(r);
    free(e);
}

/* ---- JSON ---------------------------------------------------------------------- */

static void
result_json_hostile_bytes(void **state)
{
    struct release_request rq;
    struct release_result res;
    const char key[] = "lock:\"\\\n\x1b[2J\xff\0z";
    json_t *o, *back;
    json_error_t jerr;
    char *s;

    (void)state;
    request(&rq, key, sizeof(key) - 1);
    rq.holder = "\xc3\x28";
    rq.holderlen = 2;
    memset(&res, 0, sizeof(res));
    res.outcome = RELEASE_REFUSED_HOLDER;
    snprintf(res.type, sizeof(res.type), "string");
    res.pttl_ms = -1;
    res.idle_s = 7;
    memcpy(res.old, "\x80\x81", 2);
    res.oldlen = 2;
    o = release_result_json("main", &rq, &res);
    assert_non_null(o);
    s = json_dumps(o, JSON_COMPACT);
    assert_non_null(s);
    back = json_loads(s, 0, &jerr);
    assert_non_null(back);
    assert_string_equal(json_string_value(json_object_get(back, "outcome")), "holder_changed");
    assert_true(json_is_true(json_object_get(back, "refused")));
    assert_true(json_is_false(json_object_get(back, "done")));
    assert_string_equal(json_string_value(json_object_get(back, "key_escaped")),
                        "lock:\"\\%0A%1B[2J%FF%00z");
    assert_string_equal(json_string_value(json_object_get(back, "holder_escaped")), "%C3(");
    assert_string_equal(json_string_value(json_object_get(back, "old_escaped")), "%80%81");
    assert_int_equal(json_integer_value(json_object_get(back, "pttl_ms")), -1);
    assert_null(json_object_get(back, "error"));
    json_decref(back);
    json_decref(o);
    free(s);

    res.outcome = RELEASE_ERROR;
    snprintf(res.err, sizeof(res.err), "EVALSHA on h:1: NOPERM \xff");
    o = release_result_json("main", &rq, &res);
    assert_non_null(o);
    assert_non_null(json_object_get(o, "error"));
    assert_true(json_is_null(json_object_get(o, "type")));
    json_decref(o);
}

/* A too_young refusal names the age condition as its asker spells it:
 * lockctl's option, or the HTTP API's field. */
static void
result_json_words_of_the_asker(void **state)
{
    struct release_request rq;
    struct release_result res;
    const char *msg;
    json_t *o;

    (void)state;
    request(&rq, "lock:a", 6);
    memset(&res, 0, sizeof(res));
    res.outcome = RELEASE_REFUSED_TOO_YOUNG;
    res.idle_s = -1;
    o = release_result_json("main", &rq, &res);
    assert_non_null(o);
    msg = json_string_value(json_object_get(o, "message"));
    assert_non_null(strstr(msg, "refused: --if-older-than, but the holder is younger"));
    json_decref(o);
    rq.http = true;
    o = release_result_json("main", &rq, &res);
    assert_non_null(o);
    msg = json_string_value(json_object_get(o, "message"));
    assert_non_null(strstr(msg, "refused: if_older_than, but the holder is younger"));
    assert_null(strstr(msg, "--"));
    json_decref(o);
    /* the others are the same for both */
    res.outcome = RELEASE_REFUSED_GONE;
    o = release_result_json("main", &rq, &res);
    assert_string_equal(json_string_value(json_object_get(o, "message")),
                        release_outcome_message(RELEASE_REFUSED_GONE));
    json_decref(o);
}

/* ---- tables ------------------------------------------------------------------- */

static void
safe_text_neutralises_terminal_tricks(void **state)
{
    const char in[] = "a\x1b[31mb\nc\rd\x7f" "e\xc2\x9b" "f\xe2\x80\xae" "g\xe2\x80\x8b"
                      "h\xff" "i\0j";
    size_t w;
    char *s;

    (void)state;
    s = table_safe_text(in, sizeof(in) - 1, &w);
    assert_non_null(s);
    assert_null(strchr(s, '\x1b'));
    assert_null(strchr(s, '\n'));
    assert_null(strchr(s, '\r'));
    assert_null(strchr(s, '\x7f'));
    assert_null(strstr(s, "\xe2\x80\xae"));     /* RLO */
    assert_null(strstr(s, "\xe2\x80\x8b"));     /* zero width space */
    assert_null(strstr(s, "\xc2\x9b"));         /* CSI (C1) */
    assert_string_equal(s, "a\xef\xbf\xbd[31mb\xef\xbf\xbd" "c\xef\xbf\xbd" "d\xef\xbf\xbd"
                        "e\xef\xbf\xbd" "f\xef\xbf\xbd" "g\xef\xbf\xbd" "h\xef\xbf\xbd"
                        "i\xef\xbf\xbdj");
    assert_int_equal(w, table_text_width(s));
    free(s);
}

static void
widths_are_never_underestimated(void **state)
{
    (void)state;
    assert_int_equal(table_text_width("abc"), 3);
    assert_int_equal(table_text_width("caf\xc3\xa9"), 4);
    assert_int_equal(table_text_width("\xe6\x97\xa5\xe6\x9c\xac"), 4);   /* two CJK */
    assert_int_equal(table_text_width("\xf0\x9f\x94\x92"), 2);           /* emoji */
    assert_int_equal(table_text_width("\xe2\x80\xa6"), 1);               /* … */
}

static void
cut_marks_and_fits(void **state)
{
    char *s;

    (void)state;
    s = table_cut("lock:order:0123456789:1001", 12, false);
    assert_string_equal(s, "lock:order:\xe2\x80\xa6");
    assert_int_equal(table_text_width(s), 12);
    free(s);
    s = table_cut("lock:order:0123456789:1001", 12, true);
    assert_string_equal(s, "lock:o\xe2\x80\xa6:1001");
    assert_int_equal(table_text_width(s), 12);
    free(s);
    s = table_cut("short", 12, true);
    assert_string_equal(s, "short");
    free(s);
    /* wide characters are never split and never overflow */
    s = table_cut("\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5", 6, false);
    assert_true(table_text_width(s) <= 6);
    assert_non_null(strstr(s, "\xe2\x80\xa6"));
    free(s);
    s = table_cut("abcdef", 1, true);
    assert_string_equal(s, "\xe2\x80\xa6");
    free(s);
}

static void
table_fits_100_columns(void **state)
{
    static const struct table_col cols[] = {
        { "KEY", 0, TABLE_FLEX | TABLE_MIDDLE, 0 },
        { "FORMAT", 12, 0, 0 },
        { "HOLDER", 22, TABLE_MIDDLE, 0 },
        { "HOLDS", 5, TABLE_RIGHT, 0 },
        { "STATE", 14, 0, 0 },
    };
    char longkey[3000], *buf = NULL, *line, *save = NULL;
    size_t len = 0, lines = 0;
    struct table t;
    FILE *fp;

    (void)state;
    memset(longkey, 'k', sizeof(longkey));
    memcpy(longkey, "lock:", 5);
    memcpy(longkey + sizeof(longkey) - 5, ":1001", 5);
    table_init(&t, cols, 5);
    {
        const char *row1[5] = { longkey, "plain", "tok", "1", "leaked" };
        size_t l1[5] = { sizeof(longkey), 5, 3, 1, 6 };
        const char *row2[5] = { "lock:\n\x1b[2Jforged row\tx", "redisson",
                                "8743c9c0-0795-4907-87fd-6c719a6b4586:57", "3", "held" };
        const char *row3[5] = { "lock:\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac"
                                "\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5"
                                "\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac"
                                "\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5"
                                "\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac"
                                "\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5"
                                "\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac\xe6\x97\xa5\xe6\x9c\xac",
                                "plain", "\xff\xfe\xfd", "1", "long" };

        assert_int_equal(table_add(&t, row1, l1), 0);
        assert_int_equal(table_add(&t, row2, NULL), 0);
        assert_int_equal(table_add(&t, row3, NULL), 0);
    }
    fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    table_print(&t, fp, TABLE_WIDTH);
    fclose(fp);
    table_release(&t);
    assert_non_null(strstr(buf, ":1001"));  /* the middle cut keeps the key's end */
    assert_non_null(strstr(buf, "\xe2\x80\xa6"));
    for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        assert_true(table_text_width(line) <= TABLE_WIDTH);
        assert_null(strchr(line, '\x1b'));
        lines++;
    }
    assert_int_equal(lines, 4);            /* header + 3 rows: no forged row */
    free(buf);
}

/* Sentences around tables wrap at spaces (issue 24: nothing is cut);
 * a word wider than the line is broken; every line fits, nothing moves
 * the cursor. */
static void
lines_are_wrapped_and_safe(void **state)
{
    char *buf = NULL, big[400], *line, *save = NULL;
    size_t len = 0, xs = 0, lines = 0;
    FILE *fp;

    (void)state;
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    table_line(fp, 80, "released: %s on target %s", big, "main\x1b[2J\n");
    table_line(fp, 80, "its waiters woke and the audit entry says why the agent did not "
               "answer, all of it");
    table_line(fp, TABLE_WIDTH, "short %d", 7);
    fclose(fp);
    assert_null(strchr(buf, '\x1b'));
    assert_null(strstr(buf, "\xe2\x80\xa6"));
    assert_non_null(strstr(buf, "all of\n  it\n"));
    assert_non_null(strstr(buf, "\n  "));     /* continuation lines indented */
    for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        assert_true(table_text_width(line) <= 80);
        for (const char *p = line; *p != '\0'; p++)
            xs += *p == 'x';
        lines++;
    }
    assert_int_equal(xs, sizeof(big) - 1);
    assert_true(lines >= 7);
    free(buf);
}

/* A TABLE_WRAP column goes on over lines; at 80 columns nothing is wider. */
static void
table_wraps_at_80(void **state)
{
    static const struct table_col cols[] = {
        { "FIELD", 12, 0, 0 },
        { "VALUE", 0, TABLE_FLEX | TABLE_WRAP, 0 },
    };
    const char *cells[2] = { "state", "held, leaked, long, and a sentence long enough to "
                             "need a second line at eighty columns, then a third one too" };
    char *buf = NULL, *line, *save = NULL;
    size_t len = 0, n = 0;
    struct table t;
    FILE *fp;

    (void)state;
    table_init(&t, cols, 2);
    assert_int_equal(table_add(&t, cells, NULL), 0);
    fp = open_memstream(&buf, &len);
    table_print(&t, fp, 80);
    table_print(&t, fp, TABLE_WIDE);
    fclose(fp);
    table_release(&t);
    assert_non_null(strstr(buf, "state  held, leaked"));
    for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
        n += table_text_width(line) > 80;
    assert_int_equal(n, 1);     /* only the -o wide line */
    free(buf);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(outcome_codes_round_trip),
        cmocka_unit_test(outcome_classes),
        cmocka_unit_test(args_standalone_release),
        cmocka_unit_test(args_per_format_row),
        cmocka_unit_test(guessed_format_releases_as_plain),
        cmocka_unit_test(release_tables_agree),
        cmocka_unit_test(release_column_and_lua_rows),
        cmocka_unit_test(args_options_and_binary_key),
        cmocka_unit_test(args_dry_run_and_expire),
        cmocka_unit_test(args_cluster_keeps_one_slot),
        cmocka_unit_test(key_slots),
        cmocka_unit_test(script_text_and_sha),
        cmocka_unit_test(result_json_hostile_bytes),
        cmocka_unit_test(result_json_words_of_the_asker),
        cmocka_unit_test(safe_text_neutralises_terminal_tricks),
        cmocka_unit_test(widths_are_never_underestimated),
        cmocka_unit_test(cut_marks_and_fits),
        cmocka_unit_test(table_fits_100_columns),
        cmocka_unit_test(lines_are_wrapped_and_safe),
        cmocka_unit_test(table_wraps_at_80),
    };

    return cmocka_run_group_tests_name("release", tests, NULL, NULL);
}
