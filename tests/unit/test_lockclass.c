/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lockclass.c - lock classes: derivation from keys, [classes] rules
 * and their order, the glob dialect (checked case by case against what
 * Redis' SCAN MATCH does), hostile keys and globs, and the class_set cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/keytext.h"
#include "collectors/locks/lockclass.h"

#define BIG (64 * 1024)

static void
assert_class(const char *key, const char *want)
{
    char out[CLASS_NAME_MAX];
    size_t n = class_of(key, strlen(key), NULL, 0, out, sizeof(out));

    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

/* --- derivation ------------------------------------------------------------ */

static void
test_derive_examples(void **state)
{
    (void)state;

    assert_class("lock:order:1001", "lock:order:*");
    assert_class("lock:order:1001:items:7", "lock:order:*:items:*");
    assert_class("lock:user:8743c9c0-0795-4907-87fd-6c719a6b4586",
                 "lock:user:*");
    assert_class("lock:user:8743C9C0-0795-4907-87FD-6C719A6B4586:profile",
                 "lock:user:*:profile");
    assert_class("lock:job:deadbeef", "lock:job:*");            /* 8 hex */
    assert_class("lock:job:DEADBEEF01", "lock:job:*");
    assert_class("lock:job:deadbee", "lock:job:deadbee");       /* 7 hex */
    assert_class("lock:cafe:x", "lock:cafe:x");
    assert_class("lock:v2:report", "lock:v2:report");
    assert_class("lock:-42", "lock:-42");                       /* not all digits */
    assert_class("lock:0", "lock:*");
    /* 40 bytes: an id whatever it looks like; 32 bytes is still a name */
    assert_class("lock:session:abcdefghijklmnopqrstuvwxyz-0123456789ABC",
                 "lock:session:*");
    assert_class("lock:abcdefghijklmnopqrstuvwxyz-01234:x",
                 "lock:abcdefghijklmnopqrstuvwxyz-01234:x");
    assert_class("lock:abcdefghijklmnopqrstuvwxyz-012345:x", "lock:*:x");
    /* Redisson-style hash tags are just bytes of a segment */
    assert_class("{lock}:order:77", "{lock}:order:*");
    /* the whole key may be an id */
    assert_class("12345", "*");
    assert_class("mylock", "mylock");
}

static void
test_derive_empty_segments(void **state)
{
    (void)state;

    assert_class("", "");
    assert_class(":", ":");
    assert_class("::", "::");
    assert_class("lock::1", "lock::*");
    assert_class(":lock:", ":lock:");
    assert_class("lock:1:", "lock:*:");
}

static void
test_derive_binary(void **state)
{
    char out[CLASS_NAME_MAX];
    size_t n;
    (void)state;

    /* A NUL cannot live in a C string: it becomes U+FFFD, as in every
     * other label and event text. */
    n = class_of("lock:a\0b:1", 10, NULL, 0, out, sizeof(out));
    assert_string_equal(out, "lock:a\xef\xbf\xbd" "b:*");
    assert_int_equal(n, 12);

    /* Invalid UTF-8 becomes U+FFFD; quotes, backslashes and newlines are
     * kept for the renderer to escape. */
    n = class_of("lock:\xff\n\"x\\:9", 12, NULL, 0, out, sizeof(out));
    assert_string_equal(out, "lock:\xef\xbf\xbd\n\"x\\:*");
    assert_int_equal(n, 14);

    /* Terminal controls (ESC, CR, TAB, DEL) become U+FFFD: a class name is
     * a label, printed raw by `curl /metrics`. */
    n = class_of("lock:\x1b[2J\r\t\x7f:9", 14, NULL, 0, out, sizeof(out));
    assert_string_equal(out, "lock:\xef\xbf\xbd[2J\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd:*");
    assert_int_equal(n, 22);

    /* A NULL key with no length is the empty key. */
    n = class_of(NULL, 0, NULL, 0, out, sizeof(out));
    assert_int_equal(n, 0);
    assert_string_equal(out, "");
}

static void
test_derive_truncation(void **state)
{
    char out[16];
    size_t n;
    (void)state;

    /* Fits exactly: 15 bytes, no marker. */
    n = class_of("lock:abc:defghi", 15, NULL, 0, out, sizeof(out));
    assert_string_equal(out, "lock:abc:defghi");
    assert_int_equal(n, 15);

    /* One byte more: cut, and the cut says so. */
    n = class_of("lock:abc:defghij", 16, NULL, 0, out, sizeof(out));
    assert_string_equal(out, "lock:abc:def...");
    assert_int_equal(n, 15);

    /* Ids are replaced before the length is judged. */
    n = class_of("lock:order:12345678901234567890", 31, NULL, 0, out, sizeof(out));
    assert_string_equal(out, "lock:order:*");

    /* Tiny buffers. */
    n = class_of("lock:order", 10, NULL, 0, out, 3);
    assert_string_equal(out, "..");
    assert_int_equal(n, 2);
    n = class_of("lock:order", 10, NULL, 0, out, 1);
    assert_string_equal(out, "");
    assert_int_equal(n, 0);
    out[0] = 'z';
    assert_int_equal(class_of("lock", 4, NULL, 0, out, 0), 0);
    assert_int_equal(out[0], 'z');
}

static void
test_derive_huge_key(void **state)
{
    char *key = malloc(BIG);
    char out[CLASS_NAME_MAX];
    size_t n;
    (void)state;

    assert_non_null(key);

    /* One 64 KiB segment: an id. */
    memset(key, 'a', BIG);
    memcpy(key, "lock:", 5);
    n = class_of(key, BIG, NULL, 0, out, sizeof(out));
    assert_string_equal(out, "lock:*");
    assert_int_equal(n, 6);

    /* 64 KiB of short named segments: cut at the buffer with "...". */
    for (size_t i = 0; i < BIG; i++)
        key[i] = i % 3 == 2 ? ':' : 'x';
    n = class_of(key, BIG, NULL, 0, out, sizeof(out));
    assert_int_equal(n, CLASS_NAME_MAX - 1);
    assert_int_equal(strlen(out), CLASS_NAME_MAX - 1);
    assert_memory_equal(out + CLASS_NAME_MAX - 4, "...", 3);
    assert_memory_equal(out, "xx:xx:xx:", 9);

    /* 64 KiB of colons. */
    memset(key, ':', BIG);
    n = class_of(key, BIG, NULL, 0, out, sizeof(out));
    assert_int_equal(n, CLASS_NAME_MAX - 1);

    free(key);
}

/* --- rules ------------------------------------------------------------------- */

static void
test_rules(void **state)
{
    struct class_rule rules[] = {
        { "lock:order:*", "order" },
        { "lock:*", "locks" },
        { "job-lock:default:*", "shedlock" },
        { NULL, "skipped" },
    };
    char out[CLASS_NAME_MAX];
    size_t n;
    (void)state;

    /* First match wins, in file order. */
    n = class_of("lock:order:1001", 15, rules, 4, out, sizeof(out));
    assert_string_equal(out, "order");
    assert_int_equal(n, 5);
    class_of("lock:user:7", 11, rules, 4, out, sizeof(out));
    assert_string_equal(out, "locks");
    class_of("job-lock:default:nightly", 24, rules, 4, out, sizeof(out));
    assert_string_equal(out, "shedlock");

    /* No rule matches: derived. */
    class_of("mutex:cart:42", 13, rules, 4, out, sizeof(out));
    assert_string_equal(out, "mutex:cart:*");

    /* Reversed order, reversed outcome. */
    struct class_rule rev[] = { { "lock:*", "locks" }, { "lock:order:*", "order" } };
    class_of("lock:order:1001", 15, rev, 2, out, sizeof(out));
    assert_string_equal(out, "locks");

    /* Rules see the key's bytes, all of them. */
    struct class_rule bin[] = { { "lock:?:x", "bin" } };
    class_of("lock:\0:x", 8, bin, 1, out, sizeof(out));
    assert_string_equal(out, "bin");
    class_of("lock:\0:x", 7, bin, 1, out, sizeof(out));
    assert_string_equal(out, "lock:\xef\xbf\xbd:");

    /* A long rule name is cut like a derived one. */
    struct class_rule longname[] = { { "*", "a-very-long-class-name" } };
    class_of("k", 1, longname, 1, out, 10);
    assert_string_equal(out, "a-very...");
}

/* --- glob ---------------------------------------------------------------------- */

/* Each case was checked against redis-server 7.0 (KEYS), except the one
 * marked: an all-star glob on the empty string. */
static const struct {
    const char *glob;
    const char *s;
    bool want;
} glob_cases[] = {
    { "", "", true },
    { "", "a", false },
    { "*", "", true },
    { "**", "", true },                      /* Redis: no (see lockclass.h) */
    { "*", "anything:at:all", true },
    { "?", "", false },
    { "?", "a", true },
    { "?", "ab", false },
    { "a*", "a", true },
    { "*a", "a", true },
    { "a*b", "ab", true },
    { "a*b", "axxb", true },
    { "a*b", "axxbc", false },
    { "a*b*c", "abbbc", true },
    { "a*b*c", "acb", false },
    { "*?*", "", false },
    { "*?", "x", true },
    { "h?llo", "hello", true },
    { "h*llo", "heeeello", true },
    { "h[ae]llo", "hallo", true },
    { "h[ae]llo", "hillo", false },
    { "h[^e]llo", "hello", false },
    { "h[^e]llo", "hallo", true },
    { "h[a-b]llo", "hbllo", true },
    { "h[b-a]llo", "hallo", true },          /* reversed range */
    { "h[a-b]llo", "hcllo", false },
    { "[abc]", "b", true },
    { "[^abc]", "b", false },
    { "[^abc]", "d", true },
    { "[]", "]", false },                    /* ']' first closes: empty */
    { "[]a]", "a", false },
    { "[]a]", "]", false },
    { "[\\]]", "]", true },
    { "[\\]", "\\", false },                 /* unclosed, holds an escaped ']' */
    { "[\\]", "]", true },
    { "[", "[", false },
    { "[", "", false },
    { "[^", "x", true },
    { "[ab", "b", true },
    { "[a-", "-", true },
    { "\\*", "*", true },
    { "\\*", "a", false },
    { "\\?", "?", true },
    { "\\[a]", "[a]", true },
    { "a\\", "a\\", true },                  /* trailing backslash is literal */
    { "\\a", "a", true },
    { "*:*", "lock:1", true },
    { "lock:*", "lock:", true },
    { "lock:*", "lock", false },
    { "lock:order:*", "lock:order:1001", true },
    { "lock:order:*", "lock:orders:1", false },
    { "*order*", "lock:order:1", true },
    { "*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
    { "*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", true },
    { "a*?*c", "abc", true },
    { "a*?*c", "ac", false },
    { "a*[bc]?*d", "axbyd", true },
    { "*ab*ab*", "abab", true },
    { "*ab*ab*", "abxab", true },
    { "*ab*ab*", "aba", false },
};

static void
test_glob_cases(void **state)
{
    (void)state;

    for (size_t i = 0; i < sizeof(glob_cases) / sizeof(glob_cases[0]); i++) {
        bool got = class_glob_match(glob_cases[i].glob, glob_cases[i].s,
                                    strlen(glob_cases[i].s));

        if (got != glob_cases[i].want)
            fail_msg("glob \"%s\" on \"%s\": got %d, want %d", glob_cases[i].glob,
                     glob_cases[i].s, got, glob_cases[i].want);
    }
}

static void
test_glob_binary(void **state)
{
    (void)state;

    assert_true(class_glob_match("a?c", "a\0c", 3));
    assert_true(class_glob_match("a*", "a\0\n\xff", 4));
    assert_false(class_glob_match("a", "a\0", 2));
    assert_true(class_glob_match("*\xff", "x\xff", 2));
    assert_true(class_glob_match("[\x80-\xff]", "\x90", 1));   /* unsigned */
    assert_false(class_glob_match("[\x80-\xff]", "a", 1));
    assert_true(class_glob_match("", NULL, 0));
    assert_true(class_glob_match("*", NULL, 0));
    assert_false(class_glob_match(NULL, "a", 1));
    assert_false(class_glob_match("*", NULL, 1));
}

static void
test_glob_hostile(void **state)
{
    char *key = malloc(BIG);
    char *glob = malloc(BIG + 1);
    size_t n;
    (void)state;

    assert_non_null(key);
    assert_non_null(glob);
    memset(key, 'a', BIG);

    /* The classic exponential case for a backtracking matcher. */
    n = 0;
    for (; n + 2 < BIG; n += 2)
        memcpy(glob + n, "*a", 2);
    glob[n++] = 'b';
    glob[n] = '\0';
    assert_false(class_glob_match(glob, key, BIG));
    glob[n - 1] = '*';
    assert_true(class_glob_match(glob, key, BIG));

    /* A long literal tail after one star. */
    glob[0] = '*';
    memset(glob + 1, 'a', BIG - 2);
    glob[BIG - 1] = 'b';
    glob[BIG] = '\0';
    assert_false(class_glob_match(glob, key, BIG));
    glob[BIG - 1] = 'a';
    assert_true(class_glob_match(glob, key, BIG));

    /* A long literal middle segment: memmem, not glob x key steps. */
    glob[BIG - 1] = '*';
    glob[BIG - 2] = 'b';
    assert_false(class_glob_match(glob, key, BIG));

    /* A middle segment of '?': the quadratic path, kept small by the
     * glob's length (a [classes] glob is written by an operator). */
    memset(glob, '?', 1024);
    glob[0] = '*';
    glob[1023] = 'b';
    glob[1024] = '*';
    glob[1025] = '\0';
    assert_false(class_glob_match(glob, key, BIG));

    /* 64 KiB of stars, of '[', of backslashes, of '?'. */
    memset(glob, '*', BIG);
    glob[BIG] = '\0';
    assert_true(class_glob_match(glob, key, BIG));
    memset(glob, '[', BIG);
    assert_false(class_glob_match(glob, key, BIG));
    memset(glob, '\\', BIG);
    assert_false(class_glob_match(glob, key, BIG));
    memset(glob, '?', BIG);
    assert_true(class_glob_match(glob, key, BIG));
    assert_false(class_glob_match(glob, key, BIG - 1));

    /* And the same key through class_of with a rule. */
    struct class_rule rules[] = { { "*a*a*a*a*a*a*a*a*a*a*b", "never" } };
    char out[CLASS_NAME_MAX];

    class_of(key, BIG, rules, 1, out, sizeof(out));
    assert_string_equal(out, "*");

    free(glob);
    free(key);
}

/* --- class_set -------------------------------------------------------------- */

static void
test_set_basics(void **state)
{
    struct class_set *set = class_set_new();
    (void)state;

    assert_non_null(set);
    assert_int_equal(class_set_count(set), 1);
    assert_string_equal(class_set_name(set, CLASS_OTHER_INDEX), CLASS_OTHER);
    assert_null(class_set_name(set, 1));
    assert_int_equal(class_set_intern(set, CLASS_OTHER), CLASS_OTHER_INDEX);
    assert_int_equal(class_set_intern(set, "lock:order:*"), 1);
    assert_int_equal(class_set_intern(set, "lock:user:*"), 2);
    assert_int_equal(class_set_intern(set, "lock:order:*"), 1);
    assert_int_equal(class_set_intern(set, NULL), CLASS_OTHER_INDEX);
    assert_int_equal(class_set_intern(set, ""), 3);
    assert_int_equal(class_set_count(set), 4);
    assert_string_equal(class_set_name(set, 2), "lock:user:*");
    assert_int_equal(class_set_overflowed(set), 0);
    assert_int_equal(class_set_intern(NULL, "x"), -1);
    assert_int_equal(class_set_count(NULL), 0);

    /* The set keeps its own copy. */
    char name[] = "mutable";
    assert_int_equal(class_set_intern(set, name), 4);
    name[0] = 'M';
    assert_string_equal(class_set_name(set, 4), "mutable");
    assert_int_equal(class_set_intern(set, "mutable"), 4);

    class_set_free(set);
    class_set_free(NULL);
}

static void
test_set_cap(void **state)
{
    struct class_set *set = class_set_new();
    char name[32];
    (void)state;

    assert_non_null(set);
    for (int i = 0; i < CLASS_MAX; i++) {
        int len = 0;

        /* "class-<i>" without sprintf */
        memcpy(name, "class-", 6);
        len = 6;
        for (int d = 100; d > 0; d /= 10)
            name[len++] = (char)('0' + (i / d) % 10);
        name[len] = '\0';
        assert_int_equal(class_set_intern(set, name), i + 1);
    }
    assert_int_equal(class_set_count(set), CLASS_MAX + 1);

    /* The 201st distinct class is "other", counted each time. */
    assert_int_equal(class_set_intern(set, "class-new"), CLASS_OTHER_INDEX);
    assert_int_equal(class_set_overflowed(set), 1);
    assert_int_equal(class_set_intern(set, "class-new"), CLASS_OTHER_INDEX);
    assert_int_equal(class_set_intern(set, "class-newer"), CLASS_OTHER_INDEX);
    assert_int_equal(class_set_overflowed(set), 3);
    assert_int_equal(class_set_count(set), CLASS_MAX + 1);

    /* Known names keep their index; "other" is not an overflow. */
    assert_int_equal(class_set_intern(set, "class-000"), 1);
    assert_int_equal(class_set_intern(set, "class-199"), CLASS_MAX);
    assert_int_equal(class_set_intern(set, CLASS_OTHER), CLASS_OTHER_INDEX);
    assert_int_equal(class_set_overflowed(set), 3);
    /* a key kept in "other" (its holding was there) is one more folded in */
    assert_int_equal(class_set_keep_other(set), CLASS_OTHER_INDEX);
    assert_int_equal(class_set_overflowed(set), 4);
    assert_int_equal(class_set_count(set), CLASS_MAX + 1);
    assert_int_equal(class_set_keep_other(NULL), -1);
    assert_string_equal(class_set_name(set, CLASS_MAX), "class-199");
    assert_null(class_set_name(set, CLASS_MAX + 1));

    class_set_free(set);
}

/* The trial's flapping leak: 250 classes, 200 places; which got one was
 * decided per pass in scan order, so a key's class (an alert label) went
 * "lock:x" / "other" / "lock:x".  The view before's classes keep theirs. */
static void
test_set_prefer_keeps_places(void **state)
{
    static char names[CLASS_MAX + 50][16];
    char *before[CLASS_MAX + 1];
    struct class_set *set;
    size_t i, n = 0;

    (void)state;
    for (i = 0; i < CLASS_MAX + 50; i++)
        snprintf(names[i], sizeof(names[i]), "lock:c%zu", i);
    before[n++] = (char *)CLASS_OTHER;
    for (i = 50; i < CLASS_MAX + 50; i++)      /* the last 200 had the places */
        before[n++] = names[i];
    set = class_set_new();
    assert_int_equal(class_set_prefer(set, before, n), 0);
    /* this pass meets the 50 others first: they stay in "other" */
    for (i = 0; i < 50; i++)
        assert_int_equal(class_set_intern(set, names[i]), CLASS_OTHER_INDEX);
    for (i = 50; i < CLASS_MAX + 50; i++)
        assert_true(class_set_intern(set, names[i]) > CLASS_OTHER_INDEX);
    assert_int_equal(class_set_overflowed(set), 50);
    class_set_free(set);

    /* a preferred class no key has any more frees its place at the next
     * pass (not preferred then); meanwhile a free place is anyone's */
    set = class_set_new();
    assert_int_equal(class_set_prefer(set, before, 11), 0);     /* 10 preferred */
    for (i = 60; i < CLASS_MAX + 50; i++)      /* 190 others */
        assert_true(class_set_intern(set, names[i]) > CLASS_OTHER_INDEX);
    assert_int_equal(class_set_intern(set, "lock:new"), CLASS_OTHER_INDEX);
    assert_true(class_set_intern(set, names[55]) > CLASS_OTHER_INDEX);    /* preferred */
    assert_int_equal(class_set_count(set), CLASS_MAX - 10 + 2);
    class_set_free(set);
}

static void
test_set_many_interns(void **state)
{
    static const char *const names[] = {
        "lock:order:*", "lock:user:*", "lock:cart:*", "job-lock:default:*",
        "other", "lock:inventory:*:sku:*",
    };
    struct class_set *set = class_set_new();
    size_t sum = 0;
    (void)state;

    assert_non_null(set);
    /* What one scan of a million keys does; no timing assertion, but a
     * linear search or an allocation per call would show in the suite's
     * run time. */
    for (size_t i = 0; i < 1000000; i++) {
        int idx = class_set_intern(set, names[i % 6]);

        assert_true(idx >= 0);
        sum += (size_t)idx;
    }
    assert_int_equal(class_set_count(set), 6);
    assert_int_equal(class_set_intern(set, "other"), CLASS_OTHER_INDEX);
    assert_true(sum > 0);
    class_set_free(set);
}

/* Invalid bytes become U+FFFD, so two such keys share one class. */
static void
test_class_is_valid_utf8(void **state)
{
    char a[CLASS_NAME_MAX], b[CLASS_NAME_MAX], big[4096];
    size_t n;

    (void)state;
    class_of("lock:\xff:x", 8, NULL, 0, a, sizeof(a));
    class_of("lock:\xfe:x", 8, NULL, 0, b, sizeof(b));
    assert_string_equal(a, "lock:\xef\xbf\xbd:x");
    assert_string_equal(a, b);
    /* a long run of invalid bytes grows threefold: still cut to the cap,
     * on a character boundary, with the marker */
    memset(big, '\xff', sizeof(big));
    big[20] = ':';
    big[41] = ':';
    n = class_of(big, 62, NULL, 0, a, sizeof(a));
    assert_true(n <= sizeof(a) - 1);
    assert_int_equal(keytext_sanitize(NULL, 0, a, n), n);
    assert_string_equal(a + n - 3, "...");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_derive_examples),
        cmocka_unit_test(test_derive_empty_segments),
        cmocka_unit_test(test_derive_binary),
        cmocka_unit_test(test_derive_truncation),
        cmocka_unit_test(test_derive_huge_key),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_glob_cases),
        cmocka_unit_test(test_glob_binary),
        cmocka_unit_test(test_glob_hostile),
        cmocka_unit_test(test_class_is_valid_utf8),
        cmocka_unit_test(test_set_basics),
        cmocka_unit_test(test_set_cap),
        cmocka_unit_test(test_set_prefer_keeps_places),
        cmocka_unit_test(test_set_many_interns),
    };

    return cmocka_run_group_tests_name("lockclass", tests, NULL, NULL);
}
