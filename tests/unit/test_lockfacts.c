/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lockfacts.c - what every reader makes of a key before the judge:
 * the format the table gives, the semaphore_patterns override (only over
 * a fallback row, only for a count), the holders past the read cap, the
 * semaphore flag from the row's column, and the row helper keys give;
 * and issue 23's rule that only what the data proves is shown as known:
 * declared, proven and guessed formats, no idle age of a shared integer,
 * a guessed time only when corroborated, a million random tokens none of
 * which is redis-py or aged, a million-field hash without "mode".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/locks/lockfacts.h"
#include "collectors/locks/lockstate.h"
#include "collectors/locks/snapshot.h"

static char *sem_patterns[] = { "sem:*" };

static void
target(struct target_conf *t)
{
    memset(t, 0, sizeof(*t));
    t->semaphore_patterns = sem_patterns;
    t->nsemaphore_patterns = 1;
}

static void
string_raw(struct raw_lock *raw, const char *key, const char *value)
{
    memset(raw, 0, sizeof(*raw));
    raw->key = key;
    raw->keylen = strlen(key);
    raw->type = RAW_STRING;
    raw->pttl = -1;
    raw->value = value;
    raw->valuelen = strlen(value);
}

static void
semaphore_patterns_override_a_fallback_count(void **state)
{
    struct target_conf t;
    struct raw_lock raw;
    struct lock_view v;
    const struct lock_format *f;

    (void)state;
    target(&t);
    string_raw(&raw, "sem:a", "5");
    f = lockfacts_decode(&t, &raw, -1, &v, NULL);
    assert_int_equal(f->semaphore, FMT_SEM_COUNT);
    assert_string_equal(f->name, "redisson-semaphore");
    /* not a count: the row its value gives */
    string_raw(&raw, "sem:a", "token");
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, NULL)->name, "plain");
    /* outside the patterns: plain */
    string_raw(&raw, "lock:a", "5");
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, NULL)->name, "plain");
    /* a row that proves more than a fallback keeps it (a lw1 token) */
    string_raw(&raw, "sem:b", "lw1:h:1:2:1795666320123:9f86d081884c7d65");
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, NULL)->name, "liblockwatch");
}

static void
cut_hash_counts_every_holder(void **state)
{
    struct target_conf t;
    struct raw_field fields[2] = {
        { "0b6b8f3e-6c1a-4f0e-9a43-0d9d0e5f6a7b:1", 38, "1", 1 },
        { "0b6b8f3e-6c1a-4f0e-9a43-0d9d0e5f6a7b:2", 38, "1", 1 },
    };
    struct raw_lock raw;
    struct lock_view v;
    struct lockfacts_src src;

    (void)state;
    target(&t);
    memset(&raw, 0, sizeof(raw));
    raw.key = "lock:h";
    raw.keylen = 6;
    raw.type = RAW_HASH;
    raw.pttl = 1000;
    raw.fields = fields;
    raw.nfields = 2;
    raw.fields_truncated = true;
    /* a cut hash whose "mode", read on its own, says read: a read lock,
     * its "mode" field in HLEN without being a holder */
    raw.mode_read = true;
    raw.mode = "read";
    raw.modelen = 4;
    assert_string_equal(lockfacts_decode(&t, &raw, 70, &v, &src)->name, "redisson-rw");
    assert_int_equal(v.nholders, 2);
    assert_int_equal(v.holders_total, 69);
    assert_int_equal(src.source, FMT_SOURCE_PROVEN);
    /* without "mode" (issue 23): not a read lock, whatever its size; every
     * field is a holder, and "redisson" is only a guess */
    raw.mode = NULL;
    raw.modelen = 0;
    assert_string_equal(lockfacts_decode(&t, &raw, 70, &v, &src)->name, "redisson");
    assert_string_equal(v.mode, "");
    assert_int_equal(v.holders_total, 70);
    assert_int_equal(src.source, FMT_SOURCE_GUESSED);
}

static void
facts_and_kin(void **state)
{
    struct lockstate_facts f;
    const struct lock_format *plain = formats_by_name("plain");
    const struct lock_format *sem = formats_by_name("redisson-semaphore");
    bool ttl_optional = true;

    (void)state;
    lockfacts_fill(&f, sem, -1, 1, 1, 10, 10);
    assert_true(f.semaphore);
    assert_int_equal(f.pttl_ms, -1);
    assert_int_equal(f.held_ms, 10);
    lockfacts_fill(&f, plain, 5, 1, 3, 7, -1);
    assert_false(f.semaphore);
    assert_int_equal(f.max_count, 3);
    lockfacts_fill(&f, NULL, 5, 0, 0, 0, -1);
    assert_false(f.semaphore);

    assert_ptr_equal(lockfacts_kin(plain, 1u << HELPER_FENCE_TOKEN, &ttl_optional), plain);
    assert_false(ttl_optional);
    assert_string_equal(lockfacts_kin(plain, 1u << HELPER_PERMIT_TIMEOUT, &ttl_optional)->name,
                        "redisson-permit-semaphore");
    assert_true(ttl_optional);
    assert_string_equal(lockfacts_kin(formats_by_name("redisson"),
                                      (1u << HELPER_FENCE_TOKEN) | (1u << HELPER_FAIR_QUEUE),
                                      &ttl_optional)->name, "redisson-fenced");
    assert_false(ttl_optional);
}

/* Redis 7.0 object.c: a value string2l() reads as 0..9999 is one shared
 * object (OBJ_SHARED_INTEGERS): its idle time is not the key's. */
static void
shared_integers_have_no_idle_age(void **state)
{
    static const char *const shared[] = { "0", "1", "7", "42", "100", "9999" };
    static const char *const own[] = { "10000", "01", "00", "-1", "+1", " 1", "1 ", "1a",
                                       "99999", "", "token" };
    struct raw_lock raw;

    (void)state;
    for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
        string_raw(&raw, "lock:n", shared[i]);
        assert_true(lockfacts_value_shared(&raw));
        assert_int_equal(lockfacts_idle_s(&raw, 22), -1);
    }
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        string_raw(&raw, "lock:n", own[i]);
        assert_false(lockfacts_value_shared(&raw));
        assert_int_equal(lockfacts_idle_s(&raw, 22), 22);
        assert_int_equal(lockfacts_idle_s(&raw, -1), -1);
    }
    /* a value cut by the read cap is longer than any shared one */
    string_raw(&raw, "lock:n", "1");
    raw.value_truncated = true;
    assert_false(lockfacts_value_shared(&raw));
    /* a hash is never shared */
    memset(&raw, 0, sizeof(raw));
    raw.type = RAW_HASH;
    assert_int_equal(lockfacts_idle_s(&raw, 5), 5);
}

/* The pair, as the agent and lockctl time them: "1" and a token
 * taken together; IDLETIME of "1" is the shared object's (22 s). */
static void
value_one_and_a_token_same_age(void **state)
{
    struct target_conf t;
    struct raw_lock one, tok;
    struct lock_view v;
    struct lockstate_rules rules = { .leak_grace_ms = 60000, .max_hold_ms = 10000 };
    struct lockstate_facts f;
    int64_t now = INT64_C(1796011920123), a1, a2;

    (void)state;
    target(&t);
    string_raw(&one, "lock:a", "1");
    string_raw(&tok, "lock:b", "9f86d081884c7d659a2feaa0c55ad015");
    one.now_ms = tok.now_ms = now;
    lockfacts_decode(&t, &one, -1, &v, NULL);
    a1 = lockstate_start_age(lockfacts_idle_s(&one, 22), v.acquired_ms, now, NULL);
    lockfacts_decode(&t, &tok, -1, &v, NULL);
    a2 = lockstate_start_age(lockfacts_idle_s(&tok, 0), v.acquired_ms, now, NULL);
    assert_true(a1 - a2 < 1000 && a2 - a1 < 1000);
    lockfacts_fill(&f, NULL, 30000, 1, 1, a1, -1);
    assert_false(lockstate_judge(&rules, &f) & LOCK_LONG);
}

static char *fmt_globs[] = { "lock:orders:*", "lock:jobs:*", "lock:spring:*" };
static char *fmt_names[] = { "node-redlock", "redis-py", "spring" };

static void
declared_formats(void **state)
{
    struct target_conf t;
    struct raw_lock raw;
    struct lock_view v;
    struct lockfacts_src src;
    /* CPython's uuid1().hex at 1796012200871 */
    static const char uuid1[] = "d7f4ebdeec7411f1bba602fc00000001";
    static const char hex[] = "9f86d081884c7d659a2feaa0c55ad015";
    static const char uuid4[] = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";

    (void)state;
    target(&t);
    t.format_globs = fmt_globs;
    t.format_names = fmt_names;
    t.nformat_patterns = 3;
    assert_null(lockfacts_declared(&t, "lock:other", 10));
    assert_string_equal(lockfacts_declared(&t, "lock:jobs:1", 11)->name, "redis-py");

    /* declared redis-py: the row, and its time is a fact */
    string_raw(&raw, "lock:jobs:1", uuid1);
    raw.now_ms = INT64_C(1796012260000);
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, &src)->name, "redis-py");
    assert_int_equal(src.source, FMT_SOURCE_DECLARED);
    assert_false(src.contradicts);
    assert_int_equal(v.acquired_ms, INT64_C(1796012200871));
    /* undeclared, the same value is 32 hex: a guess, no time */
    string_raw(&raw, "lock:other", uuid1);
    raw.now_ms = INT64_C(1796012260000);
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, &src)->name, "node-redlock");
    assert_int_equal(src.source, FMT_SOURCE_GUESSED);
    assert_int_equal(v.acquired_ms, 0);
    assert_int_equal(src.claimed_ms, 0);
    /* a value that contradicts its declaration: flagged, not forced */
    string_raw(&raw, "lock:jobs:2", "worker-7");
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, &src)->name, "plain");
    assert_true(src.contradicts);
    assert_int_equal(v.holders_total, 1);
    string_raw(&raw, "lock:orders:1", uuid4);
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, &src)->name, "plain");
    assert_true(src.contradicts);
    string_raw(&raw, "lock:orders:1", hex);
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, &src)->name, "node-redlock");
    assert_int_equal(src.source, FMT_SOURCE_DECLARED);
    /* a uuid4 is spring only where declared */
    string_raw(&raw, "lock:spring:1", uuid4);
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, &src)->name, "spring");
    assert_int_equal(src.source, FMT_SOURCE_DECLARED);
    string_raw(&raw, "lock:x", uuid4);
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, &src)->name, "plain");
    assert_int_equal(src.source, FMT_SOURCE_GUESSED);
    /* a layout only its client writes is proven */
    string_raw(&raw, "lock:x", "lw1:web-3:4211:4230:1795666320123:9f86d081884c7d65");
    assert_string_equal(lockfacts_decode(&t, &raw, -1, &v, &src)->name, "liblockwatch");
    assert_int_equal(src.source, FMT_SOURCE_PROVEN);
    assert_int_equal(v.acquired_ms, INT64_C(1795666320123));
    /* semaphore_patterns are a declaration too */
    string_raw(&raw, "sem:a", "3");
    lockfacts_decode(&t, &raw, -1, &v, &src);
    assert_int_equal(src.source, FMT_SOURCE_DECLARED);
    assert_string_equal(formats_source_name(FMT_SOURCE_GUESSED), "guessed");
    assert_string_equal(formats_source_name(FMT_SOURCE_PROVEN), "proven");
    assert_string_equal(formats_source_name(FMT_SOURCE_DECLARED), "declared");
    assert_string_equal(formats_source_name((enum fmt_source)9), "guessed");
}

/* A guessed value's time is believed only when the holder came after the
 * agent last looked and did not see it. */
static void
corroboration(void **state)
{
    int64_t now = INT64_C(1796012260000);

    (void)state;
    assert_int_equal(lockfacts_corroborate(now - 5000, now - 15000, now), now - 5000);
    assert_int_equal(lockfacts_corroborate(now - 16000, now - 15000, now), 0);
    /* the agent never looked before: nothing corroborates it */
    assert_int_equal(lockfacts_corroborate(now - 5000, 0, now), 0);
    /* ahead of our clock: taken now */
    assert_int_equal(lockfacts_corroborate(now + 5000, now - 15000, now), now);
    assert_int_equal(lockfacts_corroborate(0, now - 15000, now), 0);
}

/* A time in the future (past the skew two clocks may have) proves no age:
 * dropped, fact or claim; one within the skew stays. */
static void
future_times_are_no_facts(void **state)
{
    int64_t now = INT64_C(1796012260000);
    struct lock_view v;
    struct lockfacts_src src = { FMT_SOURCE_PROVEN, false, 0 };

    (void)state;
    memset(&v, 0, sizeof(v));
    v.acquired_ms = now + 86400000;         /* a day ahead (2099 is further) */
    assert_true(lockfacts_drop_future(&v, &src, now));
    assert_int_equal(v.acquired_ms, 0);
    v.acquired_ms = now + 30000;            /* within the skew */
    assert_false(lockfacts_drop_future(&v, &src, now));
    assert_int_equal(v.acquired_ms, now + 30000);
    v.acquired_ms = now - 5000;
    src.claimed_ms = now + 3600000;         /* a guessed value's claim */
    assert_true(lockfacts_drop_future(&v, &src, now));
    assert_int_equal(src.claimed_ms, 0);
    assert_int_equal(v.acquired_ms, now - 5000);
    assert_false(lockfacts_drop_future(&v, NULL, now));
}

static uint64_t
xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Issue 23's acceptance, over the fact builder: a million locks with
 * random 128-bit hex tokens taken just now (idle 0): none redis-py, none
 * with an age, none long; and how many redis-py's row would have taken. */
static void
million_random_tokens(void **state)
{
    static const char hexd[] = "0123456789abcdef";
    struct target_conf t;
    struct raw_lock raw;
    struct lock_view v;
    struct lockfacts_src src;
    struct lockstate_rules rules = { .leak_grace_ms = 60000, .max_hold_ms = 10000 };
    struct lockstate_facts f;
    const struct lock_format *rp = formats_by_name("redis-py");
    char tok[33];
    uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
    int64_t now = INT64_C(1796012260000);
    size_t uuid1_shaped = 0, judged_long = 0, aged = 0, named_redispy = 0;

    (void)state;
    target(&t);
    tok[32] = '\0';
    for (size_t i = 0; i < 1000000; i++) {
        uint64_t a = xorshift(&seed), b = xorshift(&seed);
        int64_t age;

        for (int k = 0; k < 16; k++) {
            tok[k] = hexd[(a >> (4 * k)) & 0xf];
            tok[16 + k] = hexd[(b >> (4 * k)) & 0xf];
        }
        string_raw(&raw, "lock:nr", tok);
        raw.pttl = 30000;
        raw.now_ms = now;
        if (rp->claims(&raw))
            uuid1_shaped++;
        if (lockfacts_decode(&t, &raw, -1, &v, &src) == rp)
            named_redispy++;
        age = lockstate_start_age(lockfacts_idle_s(&raw, 0), v.acquired_ms, now, NULL);
        if (age > 0)
            aged++;
        lockfacts_fill(&f, NULL, raw.pttl, v.nholders, v.max_count, age, -1);
        if (lockstate_judge(&rules, &f) & LOCK_LONG)
            judged_long++;
    }
    print_message("1,000,000 random tokens: %zu have a plausible uuid1 shape and time "
                  "(the old redis-py label), %zu named redis-py, %zu aged, %zu long\n",
                  uuid1_shaped, named_redispy, aged, judged_long);
    assert_int_equal(named_redispy, 0);
    assert_int_equal(aged, 0);
    assert_int_equal(judged_long, 0);
}

/* A hash of 1,000,000 "<uuid>:<n>" fields and no "mode": not an RW lock;
 * every field a holder (HLEN). */
static void
million_field_hash_without_mode(void **state)
{
    static char names[RAW_FIELDS_MAX][64];
    struct raw_field fields[RAW_FIELDS_MAX];
    struct target_conf t;
    struct raw_lock raw;
    struct lock_view v;
    struct lockfacts_src src;

    (void)state;
    target(&t);
    for (size_t i = 0; i < RAW_FIELDS_MAX; i++) {
        snprintf(names[i], sizeof(names[i]), "0b6b8f3e-6c1a-4f0e-9a43-0d9d0e5f6a7b:%zu",
                 (size_t)(i * 15601 % 1000000));
        fields[i].name = names[i];
        fields[i].namelen = strlen(names[i]);
        fields[i].value = "1";
        fields[i].valuelen = 1;
    }
    memset(&raw, 0, sizeof(raw));
    raw.key = "lock:h";
    raw.keylen = 6;
    raw.type = RAW_HASH;
    raw.pttl = 30000;
    raw.fields = fields;
    raw.nfields = RAW_FIELDS_MAX;
    raw.fields_truncated = true;
    raw.mode_read = true;       /* HMGET lock:h mode -> nil */
    assert_string_not_equal(lockfacts_decode(&t, &raw, 1000000, &v, &src)->name,
                            "redisson-rw");
    assert_string_equal(v.mode, "");
    assert_int_equal(v.holders_total, 1000000);
    assert_int_equal(src.source, FMT_SOURCE_GUESSED);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(semaphore_patterns_override_a_fallback_count),
        cmocka_unit_test(cut_hash_counts_every_holder),
        cmocka_unit_test(facts_and_kin),
        cmocka_unit_test(shared_integers_have_no_idle_age),
        cmocka_unit_test(value_one_and_a_token_same_age),
        cmocka_unit_test(declared_formats),
        cmocka_unit_test(corroboration),
        cmocka_unit_test(future_times_are_no_facts),
        cmocka_unit_test(million_random_tokens),
        cmocka_unit_test(million_field_hash_without_mode),
    };

    return cmocka_run_group_tests_name("lockfacts", tests, NULL, NULL);
}
