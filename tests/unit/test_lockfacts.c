/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lockfacts.c - what every reader makes of a key before the judge:
 * the format the table gives, the semaphore_patterns override (only over
 * a fallback row, only for a count), the holders past the read cap, the
 * semaphore flag from the row's column, and the row helper keys give.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/locks/lockfacts.h"
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(semaphore_patterns_override_a_fallback_count),
        cmocka_unit_test(cut_hash_counts_every_holder),
        cmocka_unit_test(facts_and_kin),
    };

    return cmocka_run_group_tests_name("lockfacts", tests, NULL, NULL);
}
