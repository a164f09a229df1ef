// SPDX-License-Identifier: BSD-3-Clause
/*
 * test_formats_clients.c - the rows for the real clients of issue 17 and
 * the helper keys (collectors/formats/helpers.c), with values as those
 * libraries write them (docs/formats.md names the sources), and the
 * refusals release_precheck() makes without Redis.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/formats/formats.h"
#include "collectors/release/release.h"
#include "common/keyhash.h"

#define RS_UUID "8743c9c0-0795-4907-87fd-6c719a6b4586"
#define NOW_MS  INT64_C(1796011920123)     /* 2026-11-30T04:12:00.123Z */

static struct raw_lock
str_raw(const char *key, const char *value)
{
    struct raw_lock raw;

    memset(&raw, 0, sizeof(raw));
    raw.key = key;
    raw.keylen = strlen(key);
    raw.type = RAW_STRING;
    raw.pttl = 10000;
    raw.value = value;
    raw.valuelen = strlen(value);
    raw.now_ms = NOW_MS;
    return raw;
}

static const char *
format_of(const char *key, const char *value, struct lock_view *v)
{
    struct raw_lock raw = str_raw(key, value);

    return formats_decode(&raw, v)->name;
}

/* The row NAME decodes the value as, declared (formats_decode_as()), or
 * "-" when the value contradicts it. */
static const char *
declared_as(const char *name, const char *key, const char *value, struct lock_view *v)
{
    struct raw_lock raw = str_raw(key, value);
    const struct lock_format *f = formats_by_name(name);

    return formats_decode_as(f, &raw, v) == 0 ? f->name : "-";
}

static void
assert_token(const char *key, const char *value, const char *want)
{
    struct lock_view v;

    assert_string_equal(format_of(key, value, &v), want);
    assert_int_equal(v.holders_total, 1);
    assert_int_equal(v.holders[0].idlen, strlen(value));
    assert_memory_equal(v.holders[0].id, value, strlen(value));
    assert_int_equal(v.holders[0].count, 1);
    assert_int_equal(v.acquired_ms, 0);          /* random tokens: no time */
    assert_string_equal(v.host, "");
}

static void
test_token_rows(void **state)
{
    (void)state;
    /* node-redlock: randomBytes(16).toString("hex") */
    assert_token("orders", "9f86d081884c7d659a2feaa0c55ad015", "node-redlock");
    /* redsync: base64.StdEncoding of 16 bytes */
    assert_token("sync", "Yq3Jm5Vb2Xw8Zr4Tk6Ln0A==", "redsync");
    /* python-redis-lock: b64encode(urandom(18)) under lock:<name> */
    assert_token("lock:report", "q1Zx/9Hh3Kf+0aPq7LmW2bYc", "python-redis-lock");
    /* the same value without the lock: prefix is no library's in particular */
    assert_token("report", "q1Zx/9Hh3Kf+0aPq7LmW2bYc", "plain");
    /* redis-semaphore Mutex: crypto.randomUUID(), optional -suffix */
    assert_token("mutex:jobs", "3f9c3a52-7a7e-4b8c-9c1e-2b5f0f4f7d10", "redis-semaphore");
    assert_token("mutex:jobs", "3f9c3a52-7a7e-4b8c-9c1e-2b5f0f4f7d10-worker-2",
                 "redis-semaphore");
    assert_token("mutex:jobs", "3f9c3a52-7a7e-4b8c-9c1e-2b5f0f4f7d10-", "plain");
    /* pottery: str(uuid.uuid4()) under redlock:<key> */
    assert_token("redlock:printer", "1b4e28ba-2fa1-41d2-883f-0016d3cca427", "pottery");
    /* Spring RedisLockRegistry's UUID.randomUUID().toString() is any
     * uuid4: "spring" only where declared (issue 23; test_declared_rows) */
    assert_token("registry:jobs-1", "1b4e28ba-2fa1-41d2-883f-0016d3cca427", "plain");
    /* uppercase or a version-1 uuid is none of them */
    assert_token("registry:jobs-1", "1B4E28BA-2FA1-41D2-883F-0016D3CCA427", "plain");
    assert_token("registry:jobs-1", "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "plain");
    /* base64 with one '=' (17 bytes) is not redsync's */
    assert_token("sync", "Yq3Jm5Vb2Xw8Zr4Tk6Ln0Ab=", "plain");
}

/* A 32-hex value with uuid1's nibbles and the given 60-bit timestamp. */
static void
uuid1_at(int64_t unix_ms, char out[33])
{
    uint64_t ticks = (uint64_t)unix_ms * 10000 + UINT64_C(0x01B21DD213814000);
    char b[33];

    snprintf(b, sizeof(b), "%08x%04x1%03x9aa4001122334455",
             (unsigned)(ticks & 0xffffffffu), (unsigned)((ticks >> 32) & 0xffff),
             (unsigned)((ticks >> 48) & 0xfff));
    memcpy(out, b, 33);
}

static void
test_redispy_time_window(void **state)
{
    char tok[33];
    struct lock_view v;
    (void)state;

    /* Undeclared, a uuid1().hex is 32 hex like any random token (issue
     * 23): node-redlock's row, a guess, and no time */
    uuid1_at(NOW_MS - 60000, tok);
    assert_string_equal(format_of("rp", tok, &v), "node-redlock");
    assert_int_equal(v.acquired_ms, 0);
    /* declared redis-py: a minute before the scan, with its time */
    assert_string_equal(declared_as("redis-py", "rp", tok, &v), "redis-py");
    assert_int_equal(v.acquired_ms, NOW_MS - 60000);
    /* 24 years before (the issue's node-redlock token): not a uuid1 we
     * believe even where declared: the declaration is contradicted */
    uuid1_at(NOW_MS - INT64_C(761119919) * 1000, tok);
    assert_string_equal(declared_as("redis-py", "rp", tok, &v), "-");
    assert_string_equal(format_of("rp", tok, &v), "node-redlock");
    assert_int_equal(v.acquired_ms, 0);
    /* two days ahead of the scan's clock: the same */
    uuid1_at(NOW_MS + INT64_C(2) * 86400 * 1000, tok);
    assert_string_equal(declared_as("redis-py", "rp", tok, &v), "-");
    /* without the scan's time only the fixed range applies */
    {
        struct raw_lock raw;

        uuid1_at(NOW_MS - INT64_C(761119919) * 1000, tok);
        raw = str_raw("rp", tok);
        raw.now_ms = 0;
        assert_int_equal(formats_decode_as(formats_by_name("redis-py"), &raw, &v), 0);
        assert_string_equal(formats_decode(&raw, &v)->name, "node-redlock");
    }
}

/* Rows only a declaration gives (FMT_PROVES_DECLARED): a uuid4 is spring
 * only where declared, and a value that is not one contradicts it. */
static void
test_declared_rows(void **state)
{
    struct lock_view v;
    (void)state;

    assert_string_equal(declared_as("spring", "registry:jobs-1",
                                    "1b4e28ba-2fa1-41d2-883f-0016d3cca427", &v), "spring");
    assert_int_equal(v.holders_total, 1);
    assert_string_equal(declared_as("spring", "registry:jobs-1", "1", &v), "-");
    assert_int_equal(v.holders_total, 0);
    /* a declared row with a structure still checks it */
    assert_string_equal(declared_as("node-redlock", "lock:o",
                                    "9f86d081884c7d659a2feaa0c55ad015", &v), "node-redlock");
    assert_string_equal(declared_as("node-redlock", "lock:o", "token-1", &v), "-");
    /* no row claims a value it proves nothing of */
    assert_int_equal(formats_decode_as(formats_by_name("redisson-fair"), NULL, &v), -1);
    assert_int_equal(formats_decode_as(formats_by_name("unknown"), NULL, &v), -1);
}

static void
test_semaphore_zset(void **state)
{
    struct raw_field f[3] = {
        { "3f9c3a52-7a7e-4b8c-9c1e-2b5f0f4f7d10", 36, "1796011920123", 13 },
        { "1b4e28ba-2fa1-41d2-883f-0016d3cca427_0", 38, "1796011921000", 13 },
        { "x", 1, "not-a-score", 11 },
    };
    struct raw_lock raw;
    struct lock_view v;
    (void)state;

    memset(&raw, 0, sizeof(raw));
    raw.key = "semaphore:pool";
    raw.keylen = strlen(raw.key);
    raw.type = RAW_ZSET;
    raw.pttl = 10000;
    raw.fields = f;
    raw.nfields = 2;
    assert_string_equal(formats_decode(&raw, &v)->name, "redis-semaphore");
    assert_int_equal(v.holders_total, 2);
    assert_string_equal(v.holders[1].id, "1b4e28ba-2fa1-41d2-883f-0016d3cca427_0");
    assert_int_equal(v.acquired_ms, 0);          /* the score is refreshed */
    /* a member with a score that is no time: not redis-semaphore's */
    raw.fields_truncated = false;
    raw.nfields = 3;
    assert_string_equal(formats_decode(&raw, &v)->name, "unknown");
    /* a zset elsewhere (a fair lock's timeout set shape) is unknown */
    raw.nfields = 2;
    raw.key = "pool";
    raw.keylen = 4;
    assert_string_equal(formats_decode(&raw, &v)->name, "unknown");
}

/* A read lock with more readers than one HSCAN returns: "mode" may not
 * be among the 64 fields read, so the reader asks for it on its own. */
static void
test_rw_many_readers(void **state)
{
    static char names[RAW_FIELDS_MAX][64];
    struct raw_field f[RAW_FIELDS_MAX];
    struct raw_lock raw;
    struct lock_view v;
    (void)state;

    for (size_t i = 0; i < RAW_FIELDS_MAX; i++) {
        snprintf(names[i], sizeof(names[i]), RS_UUID ":%zu", 100 + i);
        f[i].name = names[i];
        f[i].namelen = strlen(names[i]);
        f[i].value = "1";
        f[i].valuelen = 1;
    }
    memset(&raw, 0, sizeof(raw));
    raw.key = "rw-lock";
    raw.keylen = 7;
    raw.type = RAW_HASH;
    raw.pttl = 30000;
    raw.fields = f;
    raw.nfields = RAW_FIELDS_MAX;
    raw.fields_truncated = true;
    /* its "mode", read on its own (HMGET), says read */
    raw.mode_read = true;
    raw.mode = "read";
    raw.modelen = 4;
    assert_string_equal(formats_decode(&raw, &v)->name, "redisson-rw");
    assert_string_equal(v.mode, "read");
    assert_int_equal(v.holders_total, RAW_FIELDS_MAX);
    assert_int_equal(v.thread, -1);
    assert_false(v.partial);
    /* no "mode" (issue 23): not a read lock, whatever the size; every
     * field a holder of a hash only guessed to be an RLock */
    raw.mode = NULL;
    raw.modelen = 0;
    assert_string_equal(formats_decode(&raw, &v)->name, "redisson");
    assert_string_equal(v.mode, "");
    assert_true(v.partial);
    assert_int_equal(v.holders_total, RAW_FIELDS_MAX);
    /* mode not asked (a reader that did not send HMGET): the same */
    raw.mode_read = false;
    assert_string_equal(formats_decode(&raw, &v)->name, "redisson");
    /* read whole, so many holder fields and no mode: what it always was */
    raw.fields_truncated = false;
    assert_string_equal(formats_decode(&raw, &v)->name, "redisson");
    assert_false(v.partial);
    /* a mode that is neither read nor write: not Redisson's */
    raw.fields_truncated = true;
    raw.mode_read = true;
    raw.mode = "both";
    raw.modelen = 4;
    assert_string_equal(formats_decode(&raw, &v)->name, "unknown");
    /* a writer among them and "mode" write: the write lock */
    raw.mode = "write";
    raw.modelen = 5;
    snprintf(names[3], sizeof(names[3]), RS_UUID ":7:write");
    f[3].namelen = strlen(names[3]);
    assert_string_equal(formats_decode(&raw, &v)->name, "redisson-rw");
    /* ... and without "mode": a writer field is no RLock holder */
    raw.mode = NULL;
    raw.modelen = 0;
    assert_string_equal(formats_decode(&raw, &v)->name, "unknown");
}

struct helper_case {
    const char *key;
    enum raw_type type;
    enum helper_kind kind;
    const char *owner;          /* what the refusal names */
};

static void
test_helpers(void **state)
{
    static const struct helper_case cases[] = {
        { "redisson_lock_queue:{fair-lock}", RAW_OTHER, HELPER_FAIR_QUEUE, "fair-lock" },
        { "redisson_lock_timeout:{fair-lock}", RAW_ZSET, HELPER_FAIR_TIMEOUT, "fair-lock" },
        { "redisson_lock_token:{fenced-lock}", RAW_STRING, HELPER_FENCE_TOKEN,
          "fenced-lock" },
        /* a name that holds '{' is its own tag */
        { "redisson_lock_token:app{7}:lock", RAW_STRING, HELPER_FENCE_TOKEN, "app{7}:lock" },
        { "redisson_unlock_latch:{orders}:0123456789abcdef0123456789abcdef", RAW_STRING,
          HELPER_UNLOCK_LATCH, "orders" },
        { "{rw-lock}:" RS_UUID ":57:rwlock_timeout:1", RAW_STRING, HELPER_RW_TIMEOUT,
          "rw-lock" },
        { "{rw-lock}:" RS_UUID ":-3:rwlock_timeout:12", RAW_STRING, HELPER_RW_TIMEOUT,
          "rw-lock" },
        { "a:{b}:c:" RS_UUID ":1:rwlock_timeout:2", RAW_STRING, HELPER_RW_TIMEOUT,
          "a:{b}:c" },
        { "{permits}:timeout", RAW_ZSET, HELPER_PERMIT_TIMEOUT, "permits" },
        { "lock-signal:report", RAW_OTHER, HELPER_SIGNAL_LIST, "report" },
        { "lockwatch:client:{" RS_UUID "}", RAW_HASH, HELPER_CLIENT_REGISTRY, RS_UUID },
    };
    static const struct helper_case not_helpers[] = {
        { "redisson_lock_queue:fair-lock", RAW_OTHER, HELPER_NONE, NULL },     /* no tag */
        { "redisson_lock_queue:", RAW_OTHER, HELPER_NONE, NULL },
        { "redisson_unlock_latch:{orders}:0123456789abcdef0123456789abcdeX", RAW_STRING,
          HELPER_NONE, NULL },
        { "{rw-lock}:" RS_UUID ":57:rwlock_timeout:", RAW_STRING, HELPER_NONE, NULL },
        { "{rw-lock}:8743c9c0-0795-4907-87fd-6c719a6b458:57:rwlock_timeout:1", RAW_STRING,
          HELPER_NONE, NULL },
        { "rw-lock:" RS_UUID ":57:rwlock_timeout:1", RAW_STRING, HELPER_NONE, NULL },   /* no tag */
        { "{permits}:timeout", RAW_STRING, HELPER_NONE, NULL },    /* only a zset */
        { "{permits}:timeout", RAW_NONE, HELPER_NONE, NULL },
        { "permits:timeout", RAW_ZSET, HELPER_NONE, NULL },
        { "lockwatch:client:{" RS_UUID, RAW_HASH, HELPER_NONE, NULL },
        { "lock:report", RAW_STRING, HELPER_NONE, NULL },
        { "", RAW_STRING, HELPER_NONE, NULL },
    };
    struct helper_key hk;
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct helper_case *c = &cases[i];

        assert_int_equal(formats_helper(c->key, strlen(c->key), c->type, &hk), c->kind);
        assert_int_equal(hk.kind, c->kind);
        assert_int_equal(hk.ownerlen, strlen(c->owner));
        assert_memory_equal(hk.owner, c->owner, hk.ownerlen);
        assert_true(hk.owner >= c->key && hk.owner + hk.ownerlen <= c->key + strlen(c->key));
        assert_string_not_equal(formats_helper_name(c->kind), "none");
    }
    for (size_t i = 0; i < sizeof(not_helpers) / sizeof(not_helpers[0]); i++)
        assert_int_equal(formats_helper(not_helpers[i].key, strlen(not_helpers[i].key),
                                        not_helpers[i].type, NULL), HELPER_NONE);
}

static uint64_t
hash_of_helper(const char *key, enum raw_type type)
{
    struct helper_key hk;

    assert_int_not_equal(formats_helper(key, strlen(key), type, &hk), HELPER_NONE);
    return formats_owner_hash(hk.style, keyhash, hk.owner, hk.ownerlen);
}

static bool
lock_has(const char *key, const char *holder, uint64_t h)
{
    uint64_t out[FORMATS_OWNER_HASHES_MAX];
    const char *ids[1] = { holder };
    size_t lens[1] = { holder ? strlen(holder) : 0 };
    size_t n = formats_lock_owner_hashes(key, strlen(key), ids, lens, holder ? 1 : 0,
                                         keyhash, out);

    for (size_t i = 0; i < n; i++)
        if (out[i] == h)
            return true;
    return false;
}

/* A helper finds its lock by the owner hash, and no other lock. */
static void
test_owner_hashes(void **state)
{
    (void)state;
    assert_true(lock_has("fair-lock", NULL, hash_of_helper("redisson_lock_queue:{fair-lock}",
                                                           RAW_OTHER)));
    assert_false(lock_has("fair-lock2", NULL,
                          hash_of_helper("redisson_lock_queue:{fair-lock}", RAW_OTHER)));
    /* Redisson gives "x" and "{x}" the same helper names */
    assert_true(lock_has("{x}", NULL, hash_of_helper("redisson_lock_token:{x}", RAW_STRING)));
    assert_true(lock_has("app{7}:lock", NULL,
                         hash_of_helper("redisson_lock_token:app{7}:lock", RAW_STRING)));
    assert_true(lock_has("lock:report", NULL, hash_of_helper("lock-signal:report",
                                                             RAW_OTHER)));
    /* a lock named like the signal's tail is not its lock */
    assert_false(lock_has("report", NULL, hash_of_helper("lock-signal:report", RAW_OTHER)));
    /* the client registry belongs to the locks its client holds */
    assert_true(lock_has("orders", RS_UUID ":57",
                         hash_of_helper("lockwatch:client:{" RS_UUID "}", RAW_HASH)));
    assert_false(lock_has("orders", "1b4e28ba-2fa1-41d2-883f-0016d3cca427:57",
                          hash_of_helper("lockwatch:client:{" RS_UUID "}", RAW_HASH)));
}

static void
test_kin(void **state)
{
    const struct lock_format *rs = formats_by_name("redisson"), *pl = formats_by_name("plain");
    (void)state;

    assert_string_equal(formats_kin(rs, 1u << HELPER_FENCE_TOKEN)->name, "redisson-fenced");
    assert_string_equal(formats_kin(rs, 1u << HELPER_FAIR_QUEUE)->name, "redisson-fair");
    assert_string_equal(formats_kin(rs, 1u << HELPER_FAIR_TIMEOUT)->name, "redisson-fair");
    assert_string_equal(formats_kin(rs, 1u << HELPER_UNLOCK_LATCH)->name, "redisson");
    assert_string_equal(formats_kin(pl, 1u << HELPER_PERMIT_TIMEOUT)->name,
                        "redisson-permit-semaphore");
    assert_string_equal(formats_kin(pl, 1u << HELPER_FENCE_TOKEN)->name, "plain");
    assert_string_equal(formats_kin(formats_by_name("redisson-rw"),
                                    1u << HELPER_RW_TIMEOUT)->name, "redisson-rw");
    /* the kin rows claim no value themselves */
    {
        struct raw_lock raw = str_raw("fenced", "6");

        assert_false(formats_by_name("redisson-fenced")->claims(&raw));
        assert_false(formats_by_name("redisson-fair")->claims(&raw));
        assert_false(formats_by_name("redisson-permit-semaphore")->claims(&raw));
    }
}

static void
test_release_precheck(void **state)
{
    char *excl[] = { "lock:stats:*", "lock:meta:?" };
    char *pats[] = { "lock:*", "redisson_lock_*", "lock-signal:*" };
    struct target_conf t;
    char why[512];
    (void)state;

    memset(&t, 0, sizeof(t));
    t.patterns = pats;
    t.npatterns = 3;
    t.exclude_patterns = excl;
    t.nexclude_patterns = 2;
    /* outside the patterns: the script's "pattern" refusal, audited */
    {
        static const char outside[] = "{rw}:" RS_UUID ":1:rwlock_timeout:1";

        assert_int_equal(formats_helper(outside, sizeof(outside) - 1, RAW_STRING, NULL),
                         HELPER_RW_TIMEOUT);
        assert_int_equal(release_precheck(&t, outside, sizeof(outside) - 1, why, sizeof(why)),
                         -1);
    }
    assert_int_equal(release_precheck(&t, "lock:stats:hits", 15, why, sizeof(why)),
                     RELEASE_REFUSED_EXCLUDED);
    assert_non_null(strstr(why, "exclude_patterns"));
    assert_int_equal(release_precheck(&t, "lock:meta:x", 11, why, sizeof(why)),
                     RELEASE_REFUSED_EXCLUDED);
    assert_int_equal(release_precheck(&t, "lock:meta:xy", 12, why, sizeof(why)), -1);
    assert_string_equal(why, "");
    assert_int_equal(release_precheck(&t, "redisson_lock_token:{fenced}", 28, why,
                                      sizeof(why)), RELEASE_REFUSED_HELPER);
    assert_non_null(strstr(why, "fencing token counter of Redisson fenced lock fenced,"));
    assert_int_equal(release_precheck(&t, "lock-signal:report", 18, why, sizeof(why)),
                     RELEASE_REFUSED_HELPER);
    assert_non_null(strstr(why, "python-redis-lock lock lock:report,"));
    assert_int_equal(release_precheck(NULL, "lock:a", 6, why, sizeof(why)), -1);
    assert_string_equal(release_outcome_str(RELEASE_REFUSED_HELPER), "helper_key");
    assert_string_equal(release_outcome_str(RELEASE_REFUSED_EXCLUDED), "excluded");
    assert_true(release_outcome_refused(RELEASE_REFUSED_HELPER));
    assert_true(release_outcome_refused(RELEASE_REFUSED_EXCLUDED));
    assert_false(release_outcome_done(RELEASE_REFUSED_HELPER));
    /* a key of any bytes: the sentence stays printable and bounded */
    {
        char key[300];

        memset(key, '\n', sizeof(key));
        memcpy(key, "redisson_lock_token:{", 21);
        key[sizeof(key) - 1] = '}';
        assert_int_equal(release_precheck(&t, key, sizeof(key), why, sizeof(why)),
                         RELEASE_REFUSED_HELPER);
        assert_null(strchr(why, '\n'));
    }
}

static enum helper_kind
helper_of(const char *key, enum raw_type type)
{
    return formats_helper(key, strlen(key), type, NULL);
}

/* Values the real clients wrote (h-interop's recorded layouts: redsync
 * 4.18.1, node-redlock 4.2.0, redis-semaphore 5.8.0, redis-py 5.2.1,
 * python-redis-lock 4.0.0, pottery 3.0.1, ShedLock 6.10.0, Spring
 * Integration 6.5.5, Redisson 3.16.8 and 3.52.0). */
static void
test_recorded_values(void **state)
{
    struct raw_lock raw;
    struct lock_view v;
    (void)state;

    assert_token("lock:gs", "Yz0ty/0lXWYA9oDFojMxuw==", "redsync");
    assert_token("lock:nr", "85fe3d66c169c15af92a9c44702deb5c", "node-redlock");
    assert_token("lock:nr", "448d536210d99ede02805c23540e5275", "node-redlock");
    assert_token("lock:job1", "FmeUcxmG0V4KljrWhCgS/O+R", "python-redis-lock");
    assert_token("lock:job2", "wEltSNN9FsCGJKXQVKnjwP1g", "python-redis-lock");
    assert_token("redlock:job3", "78783941-1923-4e68-b920-95af3452b70b", "pottery");
    assert_token("mutex:lock:m", "a66683d1-6fe7-4439-ad5e-bad81766d748", "redis-semaphore");
    /* Spring's and redis-py's values prove nothing alone: declared */
    assert_token("lock:spring:orders", "b8435da5-b1ec-4a6a-b4bd-53845383abe9", "plain");
    assert_string_equal(declared_as("spring", "lock:spring:orders",
                                    "b8435da5-b1ec-4a6a-b4bd-53845383abe9", &v), "spring");
    /* redis-py 5.2.1's uuid1, taken at 1796173821.419 (scan a minute on) */
    raw = str_raw("lock:rp", "254e6f9eeded11f1b3bb02fc00000001");
    raw.now_ms = INT64_C(1796173881000);
    assert_string_equal(formats_decode(&raw, &v)->name, "node-redlock");
    assert_int_equal(formats_decode_as(formats_by_name("redis-py"), &raw, &v), 0);
    assert_true(v.acquired_ms > INT64_C(1796173821000) &&
                v.acquired_ms < INT64_C(1796173822000));
    /* ShedLock 6.10.0 */
    raw = str_raw("job-lock:prod:job1",
                  "ADDED:2026-12-02T01:10:32.003Z@vm:0dbcd51a-da1d-477a-9226-8f7aa903c2fc");
    assert_string_equal(formats_decode(&raw, &v)->name, "shedlock");
    assert_string_equal(v.host, "vm");
    {
        /* redis-semaphore 5.8.0 Semaphore */
        struct raw_field f[2] = {
            { "93394e11-05ed-4d9a-8e59-fe2a049a9370", 36, "1796173827500", 13 },
            { "d8bec271-707e-4c58-8f7b-6089bc915d47", 36, "1796173827501", 13 },
        };

        memset(&raw, 0, sizeof(raw));
        raw.key = "semaphore:lock:s";
        raw.keylen = strlen(raw.key);
        raw.type = RAW_ZSET;
        raw.pttl = 29799;
        raw.fields = f;
        raw.nfields = 2;
        assert_string_equal(formats_decode(&raw, &v)->name, "redis-semaphore");
        assert_int_equal(v.holders_total, 2);
    }
    {
        /* Redisson 3.52.0: a write lock re-entered as a reader */
        struct raw_field f[3] = {
            { "4787535f-82b7-4f16-b08d-f3aa031f7208:24", 39, "1", 1 },
            { "4787535f-82b7-4f16-b08d-f3aa031f7208:24:write", 45, "1", 1 },
            { "mode", 4, "write", 5 },
        };

        memset(&raw, 0, sizeof(raw));
        raw.key = "lock:rw";
        raw.keylen = 7;
        raw.type = RAW_HASH;
        raw.pttl = 29796;
        raw.fields = f;
        raw.nfields = 3;
        assert_string_equal(formats_decode(&raw, &v)->name, "redisson-rw");
        assert_string_equal(v.mode, "write");
        assert_int_equal(v.holders_total, 2);
    }
    /* the helper keys both Redisson versions left beside their locks */
    assert_int_equal(helper_of("redisson_lock_queue:{lock:fair}", RAW_OTHER), HELPER_FAIR_QUEUE);
    assert_int_equal(helper_of("redisson_lock_timeout:{lock:fair}", RAW_ZSET),
                     HELPER_FAIR_TIMEOUT);
    assert_int_equal(helper_of("redisson_lock_token:{lock:fenced}", RAW_STRING),
                     HELPER_FENCE_TOKEN);
    assert_int_equal(helper_of("redisson_unlock_latch:{lock:rw}:46b65a1f074f9217e7a21239fe500ea8",
                               RAW_STRING), HELPER_UNLOCK_LATCH);
    assert_int_equal(helper_of("{lock:rw}:4787535f-82b7-4f16-b08d-f3aa031f7208:23:rwlock_timeout:1",
                               RAW_STRING), HELPER_RW_TIMEOUT);
    assert_int_equal(helper_of("{lock:pexp}:timeout", RAW_ZSET), HELPER_PERMIT_TIMEOUT);
    assert_int_equal(helper_of("lock-signal:job1", RAW_OTHER), HELPER_SIGNAL_LIST);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_rows),
        cmocka_unit_test(test_redispy_time_window),
        cmocka_unit_test(test_declared_rows),
        cmocka_unit_test(test_semaphore_zset),
        cmocka_unit_test(test_rw_many_readers),
        cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_owner_hashes),
        cmocka_unit_test(test_kin),
        cmocka_unit_test(test_release_precheck),
        cmocka_unit_test(test_recorded_values),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
