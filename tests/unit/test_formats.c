/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_formats.c - the lock-format table: every row's positive and negative
 * cases with values shaped like what the real clients write, the order
 * that settles ambiguity, and the bounds (holders, id bytes, fields read).
 *
 * Every value handed to a decoder is copied into a heap buffer of exactly
 * its length, so running these tests under AddressSanitizer proves the
 * decoders never read past what the scanner gave them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collectors/formats/formats.h"
#include "conf/options.h"

#define RS_UUID "8743c9c0-0795-4907-87fd-6c719a6b4586"
#define RS_UUID2 "1b4e28ba-2fa1-41d2-883f-0016d3cca427"

/* --- fixtures: raw locks in exact-size heap buffers ---------------------- */

static char *
dup_bytes(const char *s, size_t len)
{
    /* malloc(0) may return NULL; keep one byte so the pointer is valid,
     * but never a byte a decoder may legitimately read. */
    char *p = malloc(len > 0 ? len : 1);

    assert_non_null(p);
    if (len > 0)
        memcpy(p, s, len);
    return p;
}

static struct raw_lock
string_raw(const char *v, size_t len, bool truncated)
{
    struct raw_lock raw;

    memset(&raw, 0, sizeof(raw));
    raw.key = "lock:test";
    raw.keylen = strlen(raw.key);
    raw.type = RAW_STRING;
    raw.pttl = 30000;
    raw.value = dup_bytes(v, len);
    raw.valuelen = len;
    raw.value_truncated = truncated;
    return raw;
}

static void
free_string_raw(struct raw_lock *raw)
{
    free((void *)raw->value);
}

/* A hash from name/value C-string pairs, NULL-terminated. */
struct hash_fixture {
    struct raw_lock raw;
    struct raw_field *fields;
    size_t n;
};

static void
hash_init(struct hash_fixture *h, size_t cap)
{
    memset(h, 0, sizeof(*h));
    h->fields = calloc(cap > 0 ? cap : 1, sizeof(*h->fields));
    assert_non_null(h->fields);
    h->raw.key = "lock:hash";
    h->raw.keylen = strlen(h->raw.key);
    h->raw.type = RAW_HASH;
    h->raw.pttl = 30000;
    h->raw.fields = h->fields;
}

static void
hash_add(struct hash_fixture *h, const char *name, const char *value)
{
    struct raw_field *f = &h->fields[h->n++];

    f->name = dup_bytes(name, strlen(name));
    f->namelen = strlen(name);
    f->value = dup_bytes(value, strlen(value));
    f->valuelen = strlen(value);
    h->raw.nfields = h->n;
}

static void
hash_free(struct hash_fixture *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free((void *)h->fields[i].name);
        free((void *)h->fields[i].value);
    }
    free(h->fields);
}

static const struct lock_format *
decode(const struct raw_lock *raw, struct lock_view *view)
{
    memset(view, 0xa5, sizeof(*view));     /* decoders must not rely on it */
    return formats_decode(raw, view);
}

static void
assert_no_identity(const struct lock_view *v)
{
    assert_string_equal(v->host, "");
    assert_int_equal(v->pid, 0);
    assert_int_equal(v->thread, -1);
    assert_int_equal(v->acquired_ms, 0);
}

static void
assert_format_of_string(const char *value, const char *want)
{
    struct raw_lock raw = string_raw(value, strlen(value), false);
    struct lock_view v;

    assert_string_equal(decode(&raw, &v)->name, want);
    free_string_raw(&raw);
}

/* A row only a declaration gives (FMT_PROVES_DECLARED): the value as the
 * declared row decodes it; the name, or "-" when the value contradicts it. */
static const char *
declared(const char *name, const struct raw_lock *raw, struct lock_view *view)
{
    const struct lock_format *f = formats_by_name(name);

    memset(view, 0xa5, sizeof(*view));
    return formats_decode_as(f, raw, view) == 0 ? f->name : "-";
}

static void
assert_declared_string(const char *value, const char *name, const char *want)
{
    struct raw_lock raw = string_raw(value, strlen(value), false);
    struct lock_view v;

    assert_string_equal(declared(name, &raw, &v), want);
    free_string_raw(&raw);
}

static void
assert_format_of_hash(struct hash_fixture *h, const char *want)
{
    struct lock_view v;

    assert_string_equal(decode(&h->raw, &v)->name, want);
}

/* --- the table ------------------------------------------------------------ */

/* format_patterns may name exactly the rows that claim values, in table
 * order (conf/options.c lists them: conf/ may not include the table). */
static void
test_declarable_names(void **state)
{
    const struct config_option *o = NULL;
    size_t i, k = 0;
    (void)state;

    for (i = 0; i < config_noptions; i++)
        if (config_options[i].section == SECTION_TARGET &&
            strcmp(config_options[i].key, "format_patterns") == 0)
            o = &config_options[i];
    assert_non_null(o);
    for (i = 0; i < formats_count; i++) {
        if (!formats_declarable(&formats_table[i]))
            continue;
        assert_non_null(o->names[k]);
        assert_string_equal(o->names[k], formats_table[i].name);
        k++;
    }
    assert_null(o->names[k]);
}

static void
test_table_order(void **state)
{
    static const char *const order[] = {
        "redisson-rw", "redisson", "redisson-fair", "redisson-fenced",
        "redisson-permit-semaphore", "redisson-semaphore", "liblockwatch", "shedlock",
        "redis-py",
        "node-redlock", "redsync", "python-redis-lock", "redis-semaphore", "pottery",
        "spring", "plain", "unknown",
    };
    (void)state;

    assert_int_equal(formats_count, sizeof(order) / sizeof(order[0]));
    for (size_t i = 0; i < formats_count; i++) {
        assert_string_equal(formats_table[i].name, order[i]);
        assert_non_null(formats_table[i].claims);
        assert_non_null(formats_table[i].decode);
        assert_int_equal(formats_index(&formats_table[i]), i);
        assert_ptr_equal(formats_by_name(order[i]), &formats_table[i]);
    }
    assert_null(formats_by_name("nope"));
    assert_null(formats_by_name(NULL));
}

/* Every row has every column, and they agree (formats_row_check()): a
 * format added without one fails here, naming it. */
static void
test_rows_have_every_column(void **state)
{
    size_t counts = 0;

    (void)state;
    for (size_t i = 0; i < formats_count; i++) {
        const char *missing = formats_row_check(&formats_table[i]);

        if (missing != NULL)
            fail_msg("format '%s': no %s column", formats_table[i].name, missing);
        counts += formats_table[i].semaphore == FMT_SEM_COUNT;
    }
    /* formats_semaphore() gives the one row semaphore_patterns make */
    assert_int_equal(counts, 1);
}

/* A row made without a column is caught, and the column named. */
static void
test_row_check_names_the_column(void **state)
{
    struct lock_format f = formats_table[formats_count - 1];

    (void)state;
    assert_null(formats_row_check(&f));
    f.release = NULL;
    assert_string_equal(formats_row_check(&f), "release");
    f = formats_table[formats_count - 1];
    f.waiters = FMT_WAITERS_UNSET;
    assert_string_equal(formats_row_check(&f), "waiters");
    f = formats_table[formats_count - 1];
    f.wake_role = NULL;
    assert_string_equal(formats_row_check(&f), "wake");
    f = formats_table[formats_count - 1];
    f.kin.set = false;
    assert_string_equal(formats_row_check(&f), "kin");
    f = formats_table[formats_count - 1];
    f.proves = FMT_PROVES_UNSET;
    assert_string_equal(formats_row_check(&f), "proves");
    f = formats_table[formats_count - 1];
    f.release_wakes = FMT_RWAKES_UNSET;
    assert_string_equal(formats_row_check(&f), "release_wakes");
    /* a row with a wake channel whose release would not wake disagrees */
    f = *formats_by_name("liblockwatch");
    assert_null(formats_row_check(&f));
    f.release_wakes = FMT_RWAKES_NONE;
    assert_non_null(formats_row_check(&f));
    /* a waiters source without a channel disagrees */
    f = formats_table[formats_count - 1];
    f.waiters = FMT_WAITERS_CHANNEL;
    assert_non_null(formats_row_check(&f));
}

/* What readers look up beside a lock, from the kin columns, in the order
 * the scanner always did: the fencing counter before the fair queue. */
static void
test_kin_probes(void **state)
{
    enum helper_kind k[HELPER_KINDS];
    char name[64];

    (void)state;
    assert_int_equal(formats_kin_probes(formats_by_name("redisson"), false, k), 2);
    assert_int_equal(k[0], HELPER_FENCE_TOKEN);
    assert_int_equal(k[1], HELPER_FAIR_QUEUE);
    assert_int_equal(formats_kin_probes(formats_by_name("plain"), false, k), 0);
    assert_int_equal(formats_kin_probes(formats_by_name("plain"), true, k), 1);
    assert_int_equal(k[0], HELPER_PERMIT_TIMEOUT);
    assert_int_equal(formats_kin_probes(formats_by_name("redisson-permit-semaphore"), false,
                                        k), 1);
    assert_int_equal(k[0], HELPER_PERMIT_TIMEOUT);
    assert_int_equal(formats_kin_probes(formats_by_name("redisson-fenced"), false, k), 0);
    assert_int_equal(formats_kin_probes(formats_by_name("redisson-rw"), true, k), 0);
    assert_int_equal(formats_helper_lock_name(HELPER_FENCE_TOKEN, "a", 1, name, sizeof(name)),
                     strlen("redisson_lock_token:{a}"));
    assert_string_equal(name, "redisson_lock_token:{a}");
    assert_int_equal(formats_helper_lock_name(HELPER_PERMIT_TIMEOUT, "s{x}", 4, name,
                                              sizeof(name)), 12);
    assert_string_equal(name, "s{x}:timeout");
    assert_int_equal(formats_helper_lock_name(HELPER_PERMIT_TIMEOUT, "s", 1, name,
                                              sizeof(name)), 11);
    assert_string_equal(name, "{s}:timeout");
    assert_int_equal(formats_helper_lock_name(HELPER_FAIR_TIMEOUT, "a", 1, name, sizeof(name)),
                     0);
    assert_true(formats_helper_holds_holders(HELPER_PERMIT_TIMEOUT));
    assert_false(formats_helper_holds_holders(HELPER_FAIR_QUEUE));
    assert_ptr_equal(formats_wake_row("redisson"), formats_by_name("redisson"));
    assert_ptr_equal(formats_wake_row("redisson-sc"),
                     formats_by_name("redisson-permit-semaphore"));
    assert_null(formats_wake_row(""));
    assert_null(formats_wake_row("nope"));
}

/* --- Redisson RLock --------------------------------------------------------- */

static void
test_redisson_basic(void **state)
{
    struct hash_fixture h;
    struct lock_view v;
    const struct lock_format *f;
    (void)state;

    hash_init(&h, 1);
    hash_add(&h, RS_UUID ":57", "3");
    f = decode(&h.raw, &v);
    assert_string_equal(f->name, "redisson");
    assert_int_equal(v.nholders, 1);
    assert_int_equal(v.holders_total, 1);
    assert_int_equal(v.holders[0].idlen, strlen(RS_UUID ":57"));
    assert_string_equal(v.holders[0].id, RS_UUID ":57");
    assert_false(v.holders[0].id_truncated);
    assert_int_equal(v.holders[0].count, 3);
    assert_int_equal(v.max_count, 3);
    assert_int_equal(v.thread, 57);
    assert_string_equal(v.mode, "");
    assert_string_equal(v.host, "");
    assert_int_equal(v.pid, 0);
    assert_int_equal(v.acquired_ms, 0);
    assert_true(f->claims(&h.raw));
    assert_false(formats_table[0].claims(&h.raw));     /* not an RW lock */
    hash_free(&h);
}

static void
test_redisson_thread_ids(void **state)
{
    struct hash_fixture h;
    struct lock_view v;
    (void)state;

    /* Reactive APIs pass any long, negative ones included. */
    hash_init(&h, 1);
    hash_add(&h, RS_UUID ":-9223372036854775808", "1");
    assert_string_equal(decode(&h.raw, &v)->name, "redisson");
    assert_true(v.thread == INT64_MIN);
    hash_free(&h);

    hash_init(&h, 1);
    hash_add(&h, RS_UUID ":9223372036854775807", "1");
    assert_string_equal(decode(&h.raw, &v)->name, "redisson");
    assert_true(v.thread == INT64_MAX);
    hash_free(&h);

    hash_init(&h, 1);
    hash_add(&h, RS_UUID ":9223372036854775808", "1");   /* overflows */
    assert_format_of_hash(&h, "unknown");
    hash_free(&h);
}

static void
test_redisson_two_holders(void **state)
{
    struct hash_fixture h;
    struct lock_view v;
    (void)state;

    /* Not something RLock writes, but the shape holds: both are shown and
     * no single thread is claimed. */
    hash_init(&h, 2);
    hash_add(&h, RS_UUID ":1", "2");
    hash_add(&h, RS_UUID2 ":7", "5");
    assert_string_equal(decode(&h.raw, &v)->name, "redisson");
    assert_int_equal(v.nholders, 2);
    assert_int_equal(v.max_count, 5);
    assert_int_equal(v.thread, -1);
    hash_free(&h);
}

static void
test_redisson_rejects(void **state)
{
    static const char *const bad[][2] = {
        { RS_UUID ":57", "abc" },               /* non-numeric count */
        { RS_UUID ":57", "0" },                 /* released, not held */
        { RS_UUID ":57", "-1" },
        { RS_UUID ":57", "01" },                /* HINCRBY never writes that */
        { RS_UUID ":57", "" },
        { RS_UUID ":57", "3 " },
        { RS_UUID ":57", "99999999999999999999" },
        { "8743C9C0-0795-4907-87FD-6C719A6B4586:57", "1" },  /* uppercase */
        { RS_UUID ":", "1" },
        { RS_UUID, "1" },
        { RS_UUID ":5x", "1" },
        { RS_UUID ":-", "1" },
        { RS_UUID "::57", "1" },
        { "8743c9c0-0795-4907-87fd-6c719a6b458:57", "1" },  /* short uuid */
        { "8743c9c0_0795-4907-87fd-6c719a6b4586:57", "1" },
        { "jid-1234", "1700000000" },           /* sidekiq-unique-jobs */
    };
    struct hash_fixture h;
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        hash_init(&h, 1);
        hash_add(&h, bad[i][0], bad[i][1]);
        assert_format_of_hash(&h, "unknown");
        hash_free(&h);
    }

    /* One good field does not make a lock of a hash with a bad one. */
    hash_init(&h, 2);
    hash_add(&h, RS_UUID ":57", "1");
    hash_add(&h, "name", "value");
    assert_format_of_hash(&h, "unknown");
    hash_free(&h);

    /* An empty hash (nothing read) is not a lock we can describe. */
    hash_init(&h, 0);
    assert_format_of_hash(&h, "unknown");
    hash_free(&h);
}

static void
test_redisson_many_fields(void **state)
{
    struct hash_fixture h;
    struct lock_view v;
    char name[64], count[16];
    (void)state;

    /* A hash of 100 holders; the scanner read RAW_FIELDS_MAX of them.
     * Read/write is what "mode" says (issue 23), never the size: the
     * scanner read it on its own (HMGET) and it says "read" (issue 17's
     * read lock whose "mode" was not among the fields read). */
    hash_init(&h, 100);
    for (int i = 0; i < 100; i++) {
        size_t n = sizeof(RS_UUID ":") - 1;

        /* thread ids 00 .. 99, counts cycling 1 .. 9 */
        memcpy(name, RS_UUID ":", n);
        name[n] = (char)('0' + i / 10);
        name[n + 1] = (char)('0' + i % 10);
        name[n + 2] = '\0';
        count[0] = (char)('1' + i % 9);
        count[1] = '\0';
        hash_add(&h, name, count);
    }
    h.raw.nfields = RAW_FIELDS_MAX;
    h.raw.fields_truncated = true;
    h.raw.mode_read = true;
    h.raw.mode = "read";
    h.raw.modelen = 4;
    assert_string_equal(decode(&h.raw, &v)->name, "redisson-rw");
    assert_string_equal(v.mode, "read");
    assert_false(v.partial);
    assert_int_equal(v.holders_total, RAW_FIELDS_MAX);
    assert_int_equal(v.nholders, HOLDERS_MAX);
    assert_int_equal(v.max_count, 9);
    assert_string_equal(v.holders[0].id, RS_UUID ":00");
    assert_string_equal(v.holders[HOLDERS_MAX - 1].id, RS_UUID ":07");
    assert_int_equal(v.thread, -1);

    /* A scanner that hands over more than RAW_FIELDS_MAX fields does not
     * make the decoder read them: field 70 is not a holder, yet this still
     * decodes from the first RAW_FIELDS_MAX. */
    free((void *)h.fields[70].name);
    h.fields[70].name = dup_bytes("not-a-holder", 12);
    h.fields[70].namelen = 12;
    h.raw.nfields = 100;
    assert_string_equal(decode(&h.raw, &v)->name, "redisson-rw");
    assert_int_equal(v.holders_total, RAW_FIELDS_MAX);

    /* A bad field among those read does spoil it. */
    free((void *)h.fields[63].value);
    h.fields[63].value = dup_bytes("x", 1);
    h.fields[63].valuelen = 1;
    assert_string_equal(decode(&h.raw, &v)->name, "unknown");
    assert_int_equal(v.nholders, 0);
    assert_int_equal(v.holders_total, 0);
    hash_free(&h);
}

static void
test_redisson_wake(void **state)
{
    const struct lock_format *f = formats_by_name("redisson");
    char ch[64];
    long n;
    (void)state;

    assert_string_equal(f->wake_channel, "redisson_lock__channel");
    assert_string_equal(formats_by_name("liblockwatch")->wake_channel, "lockwatch_lock__channel");
    n = formats_wake_channel(f, "mylock", 6, ch, sizeof(ch));
    assert_int_equal(n, strlen("redisson_lock__channel:{mylock}"));
    assert_string_equal(ch, "redisson_lock__channel:{mylock}");

    /* A name with a hash tag is used as is (RedissonObject.prefixName). */
    n = formats_wake_channel(f, "{order}:42", 10, ch, sizeof(ch));
    assert_string_equal(ch, "redisson_lock__channel:{order}:42");
    assert_int_equal(n, strlen(ch));

    /* Binary keys stay binary. */
    n = formats_wake_channel(f, "a\0b", 3, ch, sizeof(ch));
    assert_int_equal(n, strlen("redisson_lock__channel:{") + 4);
    assert_memory_equal(ch, "redisson_lock__channel:{a\0b}", (size_t)n + 1);

    /* Too small: refused, never cut. */
    assert_int_equal(formats_wake_channel(f, "mylock", 6, ch, 31), -1);
    assert_int_equal(formats_wake_channel(f, "mylock", 6, ch, 32), 31);
    assert_int_equal(formats_wake_channel(formats_by_name("plain"), "k", 1,
                                          ch, sizeof(ch)), -1);
    assert_int_equal(formats_wake_channel(NULL, "k", 1, ch, sizeof(ch)), -1);
}

/* --- Redisson ReadWriteLock ---------------------------------------------- */

static void
test_rw_two_readers(void **state)
{
    struct hash_fixture h;
    struct lock_view v;
    (void)state;

    hash_init(&h, 3);
    hash_add(&h, "mode", "read");
    hash_add(&h, RS_UUID ":57", "2");
    hash_add(&h, RS_UUID2 ":12", "1");
    assert_string_equal(decode(&h.raw, &v)->name, "redisson-rw");
    assert_string_equal(v.mode, "read");
    assert_int_equal(v.nholders, 2);
    assert_int_equal(v.holders_total, 2);
    assert_string_equal(v.holders[0].id, RS_UUID ":57");
    assert_int_equal(v.holders[0].count, 2);
    assert_string_equal(v.holders[1].id, RS_UUID2 ":12");
    assert_int_equal(v.holders[1].count, 1);
    assert_int_equal(v.max_count, 2);
    assert_int_equal(v.thread, -1);
    assert_false(formats_by_name("redisson")->claims(&h.raw));
    hash_free(&h);
}

static void
test_rw_write(void **state)
{
    struct hash_fixture h;
    struct lock_view v;
    (void)state;

    hash_init(&h, 2);
    hash_add(&h, RS_UUID ":9:write", "1");
    hash_add(&h, "mode", "write");
    assert_string_equal(decode(&h.raw, &v)->name, "redisson-rw");
    assert_string_equal(v.mode, "write");
    assert_int_equal(v.nholders, 1);
    assert_string_equal(v.holders[0].id, RS_UUID ":9:write");
    assert_int_equal(v.holders[0].count, 1);
    assert_int_equal(v.thread, 9);
    hash_free(&h);

    /* The writer may also hold reads. */
    hash_init(&h, 3);
    hash_add(&h, "mode", "write");
    hash_add(&h, RS_UUID ":9:write", "2");
    hash_add(&h, RS_UUID ":9", "3");
    assert_string_equal(decode(&h.raw, &v)->name, "redisson-rw");
    assert_int_equal(v.nholders, 2);
    assert_int_equal(v.max_count, 3);
    hash_free(&h);
}

static void
test_rw_rejects(void **state)
{
    struct hash_fixture h;
    struct lock_view v;
    (void)state;

    hash_init(&h, 2);
    hash_add(&h, "mode", "exclusive");
    hash_add(&h, RS_UUID ":9", "1");
    assert_format_of_hash(&h, "unknown");
    hash_free(&h);

    hash_init(&h, 3);
    hash_add(&h, "mode", "read");
    hash_add(&h, "mode", "read");
    hash_add(&h, RS_UUID ":9", "1");
    assert_format_of_hash(&h, "unknown");
    hash_free(&h);

    hash_init(&h, 2);
    hash_add(&h, "mode", "read");
    hash_add(&h, RS_UUID ":9:read", "1");
    assert_format_of_hash(&h, "unknown");
    hash_free(&h);

    hash_init(&h, 2);
    hash_add(&h, "mode", "write");
    hash_add(&h, RS_UUID ":9:write", "zero");
    assert_format_of_hash(&h, "unknown");
    hash_free(&h);

    /* ":write" outside an RW hash is no RLock field. */
    hash_init(&h, 1);
    hash_add(&h, RS_UUID ":9:write", "1");
    assert_format_of_hash(&h, "unknown");
    hash_free(&h);

    /* "mode" alone: the remains of an RW lock, recognised, nobody holds it. */
    hash_init(&h, 1);
    hash_add(&h, "mode", "read");
    assert_string_equal(decode(&h.raw, &v)->name, "redisson-rw");
    assert_int_equal(v.holders_total, 0);
    assert_string_equal(v.mode, "read");
    hash_free(&h);
}

static void
test_rw_wake(void **state)
{
    const struct lock_format *f = formats_by_name("redisson-rw");
    char ch[64];
    (void)state;

    assert_int_equal(formats_wake_channel(f, "inventory", 9, ch, sizeof(ch)),
                     strlen("redisson_rwlock:{inventory}"));
    assert_string_equal(ch, "redisson_rwlock:{inventory}");
}

/* --- lw1 ------------------------------------------------------------------ */

#define LW1_GOOD "lw1:web-3.example.com:4211.5b2e9c0d71a4f836:4230:1795666320123:9f86d081884c7d65"
#define LW1_OLDER "lw1:web-3.example.com:4211:4230:1795666320123:9f86d081884c7d65"

static void
test_lw1(void **state)
{
    struct raw_lock raw = string_raw(LW1_GOOD, strlen(LW1_GOOD), false);
    struct lock_view v;
    (void)state;

    assert_string_equal(decode(&raw, &v)->name, "liblockwatch");
    assert_string_equal(v.host, "web-3.example.com");
    assert_int_equal(v.pid, 4211);
    assert_int_equal(v.thread, 4230);
    assert_true(v.acquired_ms == INT64_C(1795666320123));
    assert_int_equal(v.nholders, 1);
    assert_int_equal(v.holders[0].idlen, strlen(LW1_GOOD));
    assert_string_equal(v.holders[0].id, LW1_GOOD);
    assert_int_equal(v.holders[0].count, 1);
    /* "plain" would take it too: the order is what gives it to us. */
    assert_true(formats_by_name("plain")->claims(&raw));
    free_string_raw(&raw);
    /* the older form, without the process nonce, the same identity */
    raw = string_raw(LW1_OLDER, strlen(LW1_OLDER), false);
    assert_string_equal(decode(&raw, &v)->name, "liblockwatch");
    assert_string_equal(v.host, "web-3.example.com");
    assert_int_equal(v.pid, 4211);
    assert_int_equal(v.thread, 4230);
    assert_string_equal(v.holders[0].id, LW1_OLDER);
    free_string_raw(&raw);

    /* The longest token the contract allows still fits a holder id. */
    char host[LW1_HOST_MAX + 1];
    char tok[256];
    size_t n = 0;

    memset(host, 'h', LW1_HOST_MAX);
    host[LW1_HOST_MAX] = '\0';
    memcpy(tok, "lw1:", 4);
    n = 4;
    memcpy(tok + n, host, LW1_HOST_MAX);
    n += LW1_HOST_MAX;
    memcpy(tok + n, ":2147483647.ffffffffffffffff:9223372036854775807:4102444799999:"
           "0123456789abcdef", 79);
    n += 79;
    assert_int_equal(n, LW1_TOKEN_LEN_MAX);
    raw = string_raw(tok, n, false);
    assert_string_equal(decode(&raw, &v)->name, "liblockwatch");
    assert_true(n < HOLDER_ID_MAX);
    assert_false(v.holders[0].id_truncated);
    assert_int_equal(strlen(v.host), LW1_HOST_MAX);
    assert_true(v.thread == INT64_MAX);
    free_string_raw(&raw);
}

static void
test_lw1_rejects(void **state)
{
    static const char *const bad[] = {
        "lw1:web-3:4211:4230:1795666320123",                        /* 5 fields */
        "lw1:web-3:4211:4230:1795666320123:9f86d081884c7d65:x",     /* 7 fields */
        "lw1::4211:4230:1795666320123:9f86d081884c7d65",            /* no host */
        "lw1:web 3:4211:4230:1795666320123:9f86d081884c7d65",
        "lw1:web@3:4211:4230:1795666320123:9f86d081884c7d65",
        "lw1:web-3:0:4230:1795666320123:9f86d081884c7d65",          /* pid 0 */
        "lw1:web-3:04211:4230:1795666320123:9f86d081884c7d65",
        "lw1:web-3:-4211:4230:1795666320123:9f86d081884c7d65",
        "lw1:web-3:4294967296:4230:1795666320123:9f86d081884c7d65",
        "lw1:web-3:4211:04230:1795666320123:9f86d081884c7d65",
        "lw1:web-3:4211::1795666320123:9f86d081884c7d65",
        "lw1:web-3:4211:4230:915148800000:9f86d081884c7d65",        /* 1999 */
        "lw1:web-3:4211:4230:4102444800000:9f86d081884c7d65",       /* 2100 */
        "lw1:web-3:4211:4230:1795666320123:9f86d081884c7d6",
        "lw1:web-3:4211:4230:1795666320123:9f86d081884c7d655",
        "lw1:web-3:4211:4230:1795666320123:9F86D081884C7D65",
        "lw1:web-3:4211:4230:1795666320123:9f86d081884c7d6g",
        "lw1:web-3:4211.:4230:1795666320123:9f86d081884c7d65",     /* empty nonce */
        "lw1:web-3:4211.5b2e9c0d71a4f83:4230:1795666320123:9f86d081884c7d65",
        "lw1:web-3:4211.5B2E9C0D71A4F836:4230:1795666320123:9f86d081884c7d65",
        "lw1:web-3:.5b2e9c0d71a4f836:4230:1795666320123:9f86d081884c7d65",
        "lw2:web-3:4211:4230:1795666320123:9f86d081884c7d65",
        "LW1:web-3:4211:4230:1795666320123:9f86d081884c7d65",
        "lw1:",
        "lw1",
    };
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_format_of_string(bad[i], "plain");

    /* A host one byte over LW1_HOST_MAX. */
    char tok[200];
    size_t n = 4;

    memcpy(tok, "lw1:", 4);
    memset(tok + n, 'h', LW1_HOST_MAX + 1);
    n += LW1_HOST_MAX + 1;
    memcpy(tok + n, ":1:1:1795666320123:9f86d081884c7d65", 36);
    assert_int_equal(strlen(tok), n + 35);
    assert_format_of_string(tok, "plain");

    /* A token cut by the scanner is not a whole token. */
    struct raw_lock raw = string_raw(LW1_GOOD, strlen(LW1_GOOD), true);
    struct lock_view v;

    assert_string_equal(decode(&raw, &v)->name, "plain");
    assert_true(v.holders[0].id_truncated);
    free_string_raw(&raw);
}

/* --- ShedLock --------------------------------------------------------------- */

static void
test_shedlock(void **state)
{
    static const char val[] =
        "ADDED:2026-11-30T04:12:00.123Z@worker-1.prod:1b4e28ba-2fa1-41d2-883f-0016d3cca427";
    struct raw_lock raw = string_raw(val, sizeof(val) - 1, false);
    struct lock_view v;
    (void)state;

    assert_string_equal(decode(&raw, &v)->name, "shedlock");
    assert_string_equal(v.host, "worker-1.prod");
    assert_true(v.acquired_ms == INT64_C(1796011920123));
    assert_int_equal(v.pid, 0);
    assert_int_equal(v.thread, -1);
    assert_int_equal(v.nholders, 1);
    assert_int_equal(v.holders[0].idlen, sizeof(val) - 1);
    assert_memory_equal(v.holders[0].id, val, sizeof(val));
    free_string_raw(&raw);
}

static void
test_shedlock_variants(void **state)
{
    static const struct {
        const char *value;
        const char *host;
        int64_t ms;
    } good[] = {
        /* before 6.7.0: no uuid */
        { "ADDED:2018-12-07T12:30:37.810Z@unknown", "unknown", INT64_C(1544185837810) },
        /* leap day, last ms of it */
        { "ADDED:2024-02-29T23:59:59.999Z@db1", "db1", INT64_C(1709251199999) },
        /* fraction omitted, or longer than ms */
        { "ADDED:2024-02-29T23:59:59Z@db1", "db1", INT64_C(1709251199000) },
        { "ADDED:2024-02-29T23:59:59.5Z@db1", "db1", INT64_C(1709251199500) },
        { "ADDED:2024-02-29T23:59:59.999999999Z@db1", "db1", INT64_C(1709251199999) },
        /* a host with ':' and no uuid keeps its ':' */
        { "ADDED:2024-02-29T23:59:59.999Z@fe80::1", "fe80::1", INT64_C(1709251199999) },
        /* an uppercase uuid is still stripped */
        { "ADDED:2024-02-29T23:59:59.999Z@db1:1B4E28BA-2FA1-41D2-883F-0016D3CCA427",
          "db1", INT64_C(1709251199999) },
    };
    struct lock_view v;
    (void)state;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct raw_lock raw = string_raw(good[i].value, strlen(good[i].value), false);

        assert_string_equal(decode(&raw, &v)->name, "shedlock");
        assert_string_equal(v.host, good[i].host);
        assert_true(v.acquired_ms == good[i].ms);
        free_string_raw(&raw);
    }

    /* A 200-byte host name is real ShedLock but cut to HOST_MAX - 1. */
    char val[300];
    size_t n = 0;

    memcpy(val, "ADDED:2026-11-30T04:12:00.123Z@", 31);
    n = 31;
    memset(val + n, 'x', 200);
    n += 200;
    struct raw_lock raw = string_raw(val, n, false);

    assert_string_equal(decode(&raw, &v)->name, "shedlock");
    assert_int_equal(strlen(v.host), HOST_MAX - 1);
    assert_int_equal(v.holders[0].idlen, HOLDER_ID_MAX - 1);
    assert_true(v.holders[0].id_truncated);
    free_string_raw(&raw);
}

static void
test_shedlock_rejects(void **state)
{
    static const char *const bad[] = {
        "ADDED:2026-02-30T04:12:00.123Z@db1",       /* no such day */
        "ADDED:2025-02-29T04:12:00.123Z@db1",       /* not a leap year */
        "ADDED:2026-13-01T04:12:00.123Z@db1",
        "ADDED:2026-11-30T24:12:00.123Z@db1",
        "ADDED:2026-11-30T04:60:00.123Z@db1",
        "ADDED:2026-11-30T04:12:60.123Z@db1",
        "ADDED:2026-11-30T04:12:00.123@db1",        /* no Z */
        "ADDED:2026-11-30T04:12:00.123+01:00@db1",
        "ADDED:2026-11-30T04:12:00.Z@db1",
        "ADDED:2026-11-30 04:12:00.123Z@db1",
        "ADDED:2026-11-30T04:12:00.123Z",           /* no host */
        "ADDED:2026-11-30T04:12:00.123Z@",
        "ADDED:2026-11-30T04:12:00.123Z@:1b4e28ba-2fa1-41d2-883f-0016d3cca427",
        "ADDED:2026-11-30T04:12:00.123Z@db 1",
        "ADDED:2026-11-30T04:12:00.123Zdb1",
        "ADDED:1999-12-31T23:59:59.999Z@db1",       /* before 2000 */
        "ADDED:2100-01-01T00:00:00.000Z@db1",
        "ADDED:+2026-11-30T04:12:00.123Z@db1",
        "added:2026-11-30T04:12:00.123Z@db1",
        "ADDED:",
        "ADDED",
    };
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_format_of_string(bad[i], "plain");

    static const char nul_host[] = "ADDED:2026-11-30T04:12:00.123Z@db\0x";
    struct raw_lock raw = string_raw(nul_host, sizeof(nul_host) - 1, false);
    struct lock_view v;

    assert_string_equal(decode(&raw, &v)->name, "plain");
    free_string_raw(&raw);
}

/* --- redis-py (uuid1) --------------------------------------------------------- */

/* Build uuid1().hex for a given Unix ms, the way CPython lays it out. */
static void
make_uuid1_hex(int64_t unix_ms, uint16_t clock_seq, uint64_t node, char out[33])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t t = (uint64_t)unix_ms * 10000 + UINT64_C(0x01B21DD213814000);
    uint32_t time_low = (uint32_t)t;
    uint16_t time_mid = (uint16_t)(t >> 32);
    uint16_t time_hi = (uint16_t)((t >> 48) & 0x0fff) | 0x1000;
    uint16_t seq = (uint16_t)((clock_seq & 0x3fff) | 0x8000);
    uint64_t parts[4] = { time_low, time_mid, time_hi, seq };
    int widths[4] = { 8, 4, 4, 4 };
    size_t n = 0;

    for (int p = 0; p < 4; p++)
        for (int i = widths[p] - 1; i >= 0; i--)
            out[n++] = hex[(parts[p] >> (4 * i)) & 0xf];
    for (int i = 11; i >= 0; i--)
        out[n++] = hex[(node >> (4 * i)) & 0xf];
    out[n] = '\0';
}

static void
test_redispy_known_time(void **state)
{
    char tok[33];
    struct lock_view v;
    struct raw_lock raw;
    (void)state;

    /* 2026-11-30T04:12:00.123Z, a MAC of 00:1a:2b:3c:4d:5e */
    make_uuid1_hex(INT64_C(1796011920123), 0x1234, UINT64_C(0x001a2b3c4d5e), tok);
    raw = string_raw(tok, 32, false);
    assert_string_equal(declared("redis-py", &raw, &v), "redis-py");
    assert_true(v.acquired_ms == INT64_C(1796011920123));
    assert_string_equal(v.host, "mac:00:1a:2b:3c:4d:5e");
    assert_int_equal(v.pid, 0);
    assert_int_equal(v.thread, -1);
    assert_int_equal(v.nholders, 1);
    assert_string_equal(v.holders[0].id, tok);
    free_string_raw(&raw);

    /* Python's random node (multicast bit set) says nothing about a host. */
    make_uuid1_hex(INT64_C(1796011920123), 0x1234, UINT64_C(0x011a2b3c4d5e), tok);
    raw = string_raw(tok, 32, false);
    assert_string_equal(declared("redis-py", &raw, &v), "redis-py");
    assert_string_equal(v.host, "");
    free_string_raw(&raw);

    /* One from CPython's uuid.uuid1().hex. */
    assert_declared_string("d7f4ebdeec7411f1bba602fc00000001", "redis-py", "redis-py");
    /* undeclared it is 32 hex like a random token: a guess, no time */
    assert_format_of_string("d7f4ebdeec7411f1bba602fc00000001", "node-redlock");
    raw = string_raw("d7f4ebdeec7411f1bba602fc00000001", 32, false);
    declared("redis-py", &raw, &v);
    assert_true(v.acquired_ms == INT64_C(1796012200871));
    assert_string_equal(v.host, "mac:02:fc:00:00:00:01");
    free_string_raw(&raw);
}

static void
test_redispy_rejects(void **state)
{
    char tok[33];
    (void)state;

    /* node-redlock's randomBytes(16).toString("hex"): version nibble 7. */
    assert_format_of_string("9f86d081884c7d659a2feaa0c55ad015", "node-redlock");
    /* right version, wrong variant: 32 random hex digits */
    assert_format_of_string("d7f4ebdeec7411f1cba602fc00000001", "node-redlock");
    /* uppercase, short, long */
    assert_format_of_string("D7F4EBDEEC7411F1BBA602FC00000001", "plain");
    assert_format_of_string("d7f4ebdeec7411f1bba602fc0000000", "plain");
    assert_format_of_string("d7f4ebdeec7411f1bba602fc000000011", "plain");
    /* the dashed form is not what redis-py writes */
    assert_format_of_string("d7f4ebde-ec74-11f1-bba6-02fc00000001", "plain");

    /* a uuid1 from 1999 or 2100 is not a plausible acquisition: 32 hex
     * digits that are not redis-py's are node-redlock's shape */
    make_uuid1_hex(INT64_C(946684799999), 1, 2, tok);
    assert_format_of_string(tok, "node-redlock");
    make_uuid1_hex(INT64_C(4102444800000), 1, 2, tok);
    assert_format_of_string(tok, "node-redlock");
    make_uuid1_hex(INT64_C(946684799999), 1, 2, tok);
    assert_declared_string(tok, "redis-py", "-");
    make_uuid1_hex(INT64_C(946684800000), 1, 2, tok);
    assert_declared_string(tok, "redis-py", "redis-py");
    /* undeclared, even a plausible uuid1 is only 32 hex (issue 23) */
    assert_format_of_string(tok, "node-redlock");
    /* ticks before 1970 */
    assert_format_of_string("00000000000010008000000000000000", "node-redlock");

    struct raw_lock raw = string_raw("d7f4ebdeec7411f1bba602fc00000001", 32, true);
    struct lock_view v;

    assert_string_equal(decode(&raw, &v)->name, "plain");
    assert_string_equal(declared("redis-py", &raw, &v), "-");
    free_string_raw(&raw);
}

/* --- plain and unknown ------------------------------------------------------ */

static void
test_plain(void **state)
{
    static const char *const tokens[] = {
        "Yq3Jm5Vb2Xw8Zr4Tk6Ln0A=",                  /* base64, one '=' */
        "8b5fXdKpQ2mZ7rTn1vWc0g",                   /* redislock */
        "3f9c3a52-7a7e-1b8c-9c1e-2b5f0f4f7d10",     /* a uuid, not v4 */
        "aB3dE5fG7hJ9kL1m",                         /* Laravel */
        "1",
    };
    struct lock_view v;
    (void)state;

    for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
        struct raw_lock raw = string_raw(tokens[i], strlen(tokens[i]), false);

        assert_string_equal(decode(&raw, &v)->name, "plain");
        assert_int_equal(v.nholders, 1);
        assert_int_equal(v.holders_total, 1);
        assert_int_equal(v.holders[0].idlen, strlen(tokens[i]));
        assert_string_equal(v.holders[0].id, tokens[i]);
        assert_false(v.holders[0].id_truncated);
        assert_int_equal(v.holders[0].count, 1);
        assert_int_equal(v.max_count, 1);
        assert_no_identity(&v);
        free_string_raw(&raw);
    }
}

static void
test_plain_truncated(void **state)
{
    char big[RAW_VALUE_MAX];
    struct raw_lock raw;
    struct lock_view v;
    (void)state;

    /* 512 bytes read of a longer value. */
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)('a' + i % 26);
    raw = string_raw(big, sizeof(big), true);
    assert_string_equal(decode(&raw, &v)->name, "plain");
    assert_int_equal(v.holders[0].idlen, HOLDER_ID_MAX - 1);
    assert_true(v.holders[0].id_truncated);
    assert_memory_equal(v.holders[0].id, big, HOLDER_ID_MAX - 1);
    assert_int_equal(v.holders[0].id[HOLDER_ID_MAX - 1], '\0');
    free_string_raw(&raw);

    /* Exactly HOLDER_ID_MAX - 1 bytes fit whole. */
    raw = string_raw(big, HOLDER_ID_MAX - 1, false);
    decode(&raw, &v);
    assert_false(v.holders[0].id_truncated);
    free_string_raw(&raw);
    raw = string_raw(big, HOLDER_ID_MAX, false);
    decode(&raw, &v);
    assert_true(v.holders[0].id_truncated);
    assert_int_equal(v.holders[0].idlen, HOLDER_ID_MAX - 1);
    free_string_raw(&raw);

    /* Short, but the scanner says there was more. */
    raw = string_raw("abc", 3, true);
    decode(&raw, &v);
    assert_int_equal(v.holders[0].idlen, 3);
    assert_true(v.holders[0].id_truncated);
    free_string_raw(&raw);
}

static void
test_plain_binary(void **state)
{
    static const char val[] = "tok\0en\nwith\xff\xfe bytes\r";
    struct raw_lock raw = string_raw(val, sizeof(val) - 1, false);
    struct lock_view v;
    (void)state;

    assert_string_equal(decode(&raw, &v)->name, "plain");
    assert_int_equal(v.holders[0].idlen, sizeof(val) - 1);
    assert_memory_equal(v.holders[0].id, val, sizeof(val));   /* + NUL */
    assert_false(v.holders[0].id_truncated);
    free_string_raw(&raw);

    /* An empty value is still someone's (odd) token. */
    raw = string_raw("", 0, false);
    assert_string_equal(decode(&raw, &v)->name, "plain");
    assert_int_equal(v.holders[0].idlen, 0);
    assert_string_equal(v.holders[0].id, "");
    free_string_raw(&raw);

    /* Binary bytes glued to a known prefix do not fool the parsers. */
    static const char lw[] = "lw1:web\0:1:1:1795666320123:9f86d081884c7d65";
    raw = string_raw(lw, sizeof(lw) - 1, false);
    assert_string_equal(decode(&raw, &v)->name, "plain");
    free_string_raw(&raw);
}

static void
test_unknown(void **state)
{
    struct raw_lock raw;
    struct lock_view v;
    (void)state;

    memset(&raw, 0, sizeof(raw));
    raw.key = "lock:zset";
    raw.keylen = 9;
    raw.type = RAW_OTHER;
    raw.pttl = -1;
    assert_string_equal(decode(&raw, &v)->name, "unknown");
    assert_int_equal(v.nholders, 0);
    assert_int_equal(v.holders_total, 0);
    assert_int_equal(v.max_count, 0);
    assert_string_equal(v.mode, "");
    assert_no_identity(&v);

    raw.type = RAW_NONE;        /* gone between SCAN and TYPE */
    assert_string_equal(decode(&raw, &v)->name, "unknown");
    assert_int_equal(v.holders_total, 0);

    /* Claims that look at a type never accept another one. */
    raw.type = RAW_HASH;
    for (size_t i = 0; i + 1 < formats_count; i++)
        assert_false(formats_table[i].claims(&raw));
    assert_true(formats_table[formats_count - 1].claims(&raw));
}

/* A Redisson RSemaphore: no value claims it; under semaphore_patterns
 * formats_semaphore() takes a whole decimal and nothing else. */
static void
test_redisson_semaphore(void **state)
{
    static const char *const counts[] = { "0", "7", "-3", "123456789012345678",
                                          "-123456789012345678" };
    static const char *const not_counts[] = { "", "-", "7a", " 7", "+7", "1.5", "--1",
                                              "1234567890123456789", "lw1:x" };
    const struct lock_format *sem = formats_by_name("redisson-semaphore");
    struct raw_lock raw;
    struct lock_view v;
    long long permits;
    (void)state;

    assert_non_null(sem);
    assert_string_equal(sem->wake_channel, "redisson_sc");
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        raw = string_raw(counts[i], strlen(counts[i]), false);
        raw.pttl = -1;
        /* the value alone: still plain */
        assert_false(sem->claims(&raw));
        assert_string_equal(decode(&raw, &v)->name, "plain");
        assert_ptr_equal(formats_semaphore(&raw, &v), sem);
        assert_int_equal(v.nholders, 1);
        assert_int_equal(v.holders_total, 1);
        assert_int_equal(v.holders[0].idlen, strlen(counts[i]));
        assert_memory_equal(v.holders[0].id, counts[i], strlen(counts[i]));
        assert_int_equal(v.acquired_ms, 0);
        assert_true(formats_permits_available(sem, v.holders[0].id, v.holders[0].idlen,
                                              &permits));
        assert_int_equal(permits, strtoll(counts[i], NULL, 10));
        /* the same id under another row is no count */
        assert_false(formats_permits_available(formats_by_name("plain"), v.holders[0].id,
                                               v.holders[0].idlen, &permits));
        free_string_raw(&raw);
    }
    for (size_t i = 0; i < sizeof(not_counts) / sizeof(not_counts[0]); i++) {
        raw = string_raw(not_counts[i], strlen(not_counts[i]), false);
        v.nholders = 99;
        assert_null(formats_semaphore(&raw, &v));
        assert_int_equal(v.nholders, 99);      /* untouched */
        free_string_raw(&raw);
    }
    /* a value cut by the read cap is not known to be a count */
    raw = string_raw("12", 2, true);
    assert_null(formats_semaphore(&raw, &v));
    free_string_raw(&raw);
    /* not a string */
    memset(&raw, 0, sizeof(raw));
    raw.key = "lock:sem";
    raw.keylen = 8;
    raw.type = RAW_HASH;
    assert_null(formats_semaphore(&raw, &v));
    /* its permits zset still makes it a permit-expirable semaphore */
    assert_string_equal(formats_kin(sem, 1u << HELPER_PERMIT_TIMEOUT)->name,
                        "redisson-permit-semaphore");
    assert_ptr_equal(formats_kin(sem, 1u << HELPER_FENCE_TOKEN), sem);
}

static void
test_ambiguity(void **state)
{
    char tok[33];
    struct raw_lock raw;
    struct lock_view v;
    (void)state;

    /* A uuid1 is also a 32-hex random token: redis-py's row claims it,
     * but only a declaration gives that row (issue 23): detection says
     * node-redlock, a guess. */
    make_uuid1_hex(INT64_C(1796011920123), 7, 0x001122334455, tok);
    raw = string_raw(tok, 32, false);
    assert_true(formats_by_name("redis-py")->claims(&raw));
    assert_true(formats_by_name("plain")->claims(&raw));
    assert_false(formats_by_name("liblockwatch")->claims(&raw));
    assert_false(formats_by_name("shedlock")->claims(&raw));
    assert_string_equal(decode(&raw, &v)->name, "node-redlock");
    assert_int_equal(v.acquired_ms, 0);
    assert_string_equal(declared("redis-py", &raw, &v), "redis-py");
    free_string_raw(&raw);

    /* A ShedLock value: only shedlock and plain claim it. */
    static const char shed[] = "ADDED:2026-11-30T04:12:00.123Z@db1";
    raw = string_raw(shed, sizeof(shed) - 1, false);
    for (size_t i = 0; i < formats_count; i++) {
        const char *n = formats_table[i].name;
        bool want = strcmp(n, "shedlock") == 0 || strcmp(n, "plain") == 0 ||
                    strcmp(n, "unknown") == 0;

        assert_int_equal(formats_table[i].claims(&raw), want);
    }
    free_string_raw(&raw);
}

/*
 * Random values and hashes of every length up to past the bounds: nothing
 * may crash or read out of bounds (ASan), every result keeps its promises.
 */
static void
test_random_inputs(void **state)
{
    static const char alphabet[] = "0123456789abcdef-:lwADE@TZ.\0\n\xff";
    uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
    (void)state;

    for (int iter = 0; iter < 20000; iter++) {
        char buf[RAW_VALUE_MAX + 8];
        size_t len;
        struct lock_view v;
        struct raw_lock raw;
        const struct lock_format *f;

        seed = seed * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        len = (size_t)(seed >> 33) % sizeof(buf);
        for (size_t i = 0; i < len; i++) {
            seed = seed * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
            buf[i] = alphabet[(seed >> 40) % (sizeof(alphabet) - 1)];
        }
        /* Now and then start with a known prefix to reach deeper code. */
        if (len > 40 && iter % 4 == 0)
            memcpy(buf, iter % 8 == 0 ? "lw1:" : "ADDED:2026-11-30T04:12:00", iter % 8 == 0 ? 4 : 25);
        raw = string_raw(buf, len, iter % 3 == 0);
        f = decode(&raw, &v);
        assert_true(formats_index(f) < formats_count);
        assert_true(v.nholders <= HOLDERS_MAX);
        assert_true(v.nholders <= v.holders_total);
        for (size_t i = 0; i < v.nholders; i++) {
            assert_true(v.holders[i].idlen < HOLDER_ID_MAX);
            assert_int_equal(v.holders[i].id[v.holders[i].idlen], '\0');
        }
        assert_true(strlen(v.host) < HOST_MAX);
        assert_true(v.acquired_ms == 0 ||
                    (v.acquired_ms >= FORMATS_TIME_MIN_MS &&
                     v.acquired_ms < FORMATS_TIME_MAX_MS));
        free_string_raw(&raw);

        /* The same bytes as hash fields: name from the front, value the
         * last few bytes. */
        struct hash_fixture h;

        hash_init(&h, 2);
        h.fields[0].name = dup_bytes(buf, len / 2);
        h.fields[0].namelen = len / 2;
        h.fields[0].value = dup_bytes(buf + len / 2, len - len / 2);
        h.fields[0].valuelen = len - len / 2;
        h.n = 1;
        h.raw.nfields = 1;
        f = decode(&h.raw, &v);
        assert_true(formats_index(f) < formats_count);
        hash_free(&h);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_order),
        cmocka_unit_test(test_declarable_names),
        cmocka_unit_test(test_rows_have_every_column),
        cmocka_unit_test(test_row_check_names_the_column),
        cmocka_unit_test(test_kin_probes),
        cmocka_unit_test(test_redisson_basic),
        cmocka_unit_test(test_redisson_thread_ids),
        cmocka_unit_test(test_redisson_two_holders),
        cmocka_unit_test(test_redisson_rejects),
        cmocka_unit_test(test_redisson_many_fields),
        cmocka_unit_test(test_redisson_wake),
        cmocka_unit_test(test_rw_two_readers),
        cmocka_unit_test(test_rw_write),
        cmocka_unit_test(test_rw_rejects),
        cmocka_unit_test(test_rw_wake),
        cmocka_unit_test(test_lw1),
        cmocka_unit_test(test_lw1_rejects),
        cmocka_unit_test(test_shedlock),
        cmocka_unit_test(test_shedlock_variants),
        cmocka_unit_test(test_shedlock_rejects),
        cmocka_unit_test(test_redispy_known_time),
        cmocka_unit_test(test_redispy_rejects),
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_plain_truncated),
        cmocka_unit_test(test_plain_binary),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_ambiguity),
        cmocka_unit_test(test_redisson_semaphore),
        cmocka_unit_test(test_random_inputs),
    };

    return cmocka_run_group_tests_name("formats", tests, NULL, NULL);
}
