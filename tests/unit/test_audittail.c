/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_audittail.c - audit entries as force_release events: a release
 * that ran is one (who, why and the entry id in its detail, the holder's
 * bytes as the entry has them); an expire, a refusal, a hash lock that kept another
 * holder, and a release this process pushed itself are none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/release/audittail.h"

/* A flat name/value array reply of up to 16 pairs, by hand. */
struct fake {
    redisReply arr, items[32];
    redisReply *ptrs[32];
};

static const redisReply *
entry(struct fake *f, const char *const *kv)
{
    size_t n = 0;

    memset(f, 0, sizeof(*f));
    for (; kv[n] != NULL && n < 32; n++) {
        f->items[n].type = REDIS_REPLY_STRING;
        f->items[n].str = (char *)kv[n];
        f->items[n].len = strlen(kv[n]);
        f->ptrs[n] = &f->items[n];
    }
    f->arr.type = REDIS_REPLY_ARRAY;
    f->arr.elements = n;
    f->arr.element = f->ptrs;
    return &f->arr;
}

static void
a_release_that_ran_is_an_event(void **state)
{
    static const char *const kv[] = { "time", "1", "operator", "alice", "reason", "INC-7\nx",
                                      "action", "release", "target", "main", "key", "lock:a",
                                      "holder", "tok 1", "type", "string", "old", "tok 1",
                                      "outcome", "released", "format", "plain", "age", "239000",
                                      NULL };
    static struct fake f;
    char detail[EVENT_TEXT_MAX];
    struct event_in in;

    (void)state;
    assert_true(audit_entry_event(entry(&f, kv), "1767225600123-0", "main", &in, detail));
    assert_int_equal(in.kind, EVENT_FORCE_RELEASE);
    assert_string_equal(in.target, "main");
    assert_int_equal(in.keylen, 6);
    assert_memory_equal(in.key, "lock:a", 6);
    assert_int_equal(in.holderlen, 5);              /* the bytes, as the entry has them */
    assert_memory_equal(in.holder, "tok 1", 5);
    assert_string_equal(in.detail, "released by alice (plain lock): INC-7 x; audit entry "
                        "1767225600123-0");
    /* the holder's age as the releaser knew it; when: the entry id's ms */
    assert_true(in.seconds == 239.0);
    assert_int_equal(in.at_ms, 1767225600123LL);
}

static void
others_are_none(void **state)
{
    static const char *const expire[] = { "action", "expire", "outcome", "expired",
                                          "key", "lock:a", NULL };
    static const char *const refused[] = { "action", "release", "outcome", "holder_changed",
                                           "key", "lock:a", NULL };
    static const char *const kept[] = { "action", "release", "outcome", "released",
                                        "key", "lock:rw", "type", "hash",
                                        "old", "mode=read u1:1=1 u2:1=1", NULL };
    static const char *const last[] = { "action", "release", "outcome", "released",
                                        "key", "lock:rw", "type", "hash",
                                        "old", "mode=write u1:1=2", NULL };
    static struct fake f;
    char detail[EVENT_TEXT_MAX];
    struct event_in in;

    (void)state;
    assert_false(audit_entry_event(entry(&f, expire), "1-0", "main", &in, detail));
    assert_false(audit_entry_event(entry(&f, refused), "1-0", "main", &in, detail));
    assert_false(audit_entry_event(entry(&f, kept), "1-0", "main", &in, detail));
    assert_true(audit_entry_event(entry(&f, last), "1-0", "main", &in, detail));
    assert_true(in.seconds < 0);                    /* no age: not known */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_release_that_ran_is_an_event),
        cmocka_unit_test(others_are_none),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
