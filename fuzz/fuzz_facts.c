/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_facts.c - libFuzzer harness for the one facts builder
 * (collectors/locks/lockfacts.c) and the age the judge takes from it
 * (lockstate_start_age()): issue 23's rule that a fact is shown as known
 * only when the data proves it.
 *
 * Input layout: one byte of flags (type, truncation, a declaration, the
 * semaphore pattern, the scan's time, the mode read), eight bytes of
 * PTTL, the key, then for a string its value (a two-byte length) and for
 * a hash a field count and each field's name and value, and its "mode"
 * as read on its own; then HLEN (four bytes), OBJECT IDLETIME (four
 * bytes, -1 for 0xffffffff), six bytes of the scan's time, a byte that
 * picks the declared row, and four bytes of how long before the scan the
 * agent last looked.
 *
 * Invariants, beyond not crashing:
 *  - the row is in the table; declared means the declared row (or the
 *    semaphore row of semaphore_patterns), a contradiction means a
 *    declaration the value did not fit; a row only a declaration gives
 *    (FMT_PROVES_DECLARED) never comes from detection;
 *  - a guessed format has no acquisition time (only a claim), a proven or
 *    declared one's time is in the table's range;
 *  - the starting age is never negative ("in the future") and never more
 *    than what proves it: OBJECT IDLETIME (less its clock's second) of a
 *    value Redis cannot share, or the time since a believed acquisition;
 *    nothing at all for a shared integer value without a believed time;
 *  - a corroborated claim lies between the agent's last look and now;
 *  - read/write only with a "mode" that says read or write; holders
 *    counted past the read cap never exceed HLEN where HLEN is known and
 *    above the fields read;
 *  - decoding is deterministic.
 */
#include <stdlib.h>
#include <string.h>

#include "collectors/formats/formats.h"
#include "collectors/locks/lockfacts.h"
#include "collectors/locks/lockstate.h"
#include "fuzz/fuzz.h"

#define KEY_MAX 256

/* The rows a key may be declared, as conf/options.c lists them. */
static const struct lock_format *
pick_declarable(uint8_t b)
{
    size_t n = 0, i, want;

    for (i = 0; i < formats_count; i++)
        n += formats_declarable(&formats_table[i]);
    want = b % n;
    for (i = 0; i < formats_count; i++)
        if (formats_declarable(&formats_table[i]) && want-- == 0)
            return &formats_table[i];
    return NULL;
}

static bool
mode_says_rw(const struct raw_lock *raw)
{
    size_t i, n = raw->nfields < RAW_FIELDS_MAX ? raw->nfields : RAW_FIELDS_MAX;
    const char *m = NULL;
    size_t mlen = 0;

    /* the fields read first, as the decoder takes them; the "mode" read on
     * its own (HMGET) only when they lack it (two reads of a changing hash
     * may differ: the fields' word is the decoder's) */
    for (i = 0; i < n && m == NULL; i++)
        if (raw->fields[i].namelen == 4 && memcmp(raw->fields[i].name, "mode", 4) == 0) {
            m = raw->fields[i].value;
            mlen = raw->fields[i].valuelen;
        }
    if (m == NULL && raw->mode_read && raw->mode != NULL) {
        m = raw->mode;
        mlen = raw->modelen;
    }
    return m != NULL && ((mlen == 4 && memcmp(m, "read", 4) == 0) ||
                         (mlen == 5 && memcmp(m, "write", 5) == 0));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = { data, size };
    struct raw_field fields[RAW_FIELDS_MAX];
    struct raw_lock raw;
    struct target_conf t;
    struct lockfacts_src s1, s2;
    struct lock_view *v1 = malloc(sizeof(*v1)), *v2 = malloc(sizeof(*v2));
    const struct lock_format *f1, *f2, *decl = NULL;
    char *glob = "*", *name = NULL, *sem = "*";
    uint8_t head = fz_u8(&in);
    long long hlen, idle, usable;
    int64_t now, looked, age, bound = 0, believed;
    uint32_t u;
    size_t i;

    FUZZ_CHECK(v1 != NULL && v2 != NULL);
    memset(&raw, 0, sizeof(raw));
    memset(&t, 0, sizeof(t));
    raw.type = (head & 1) ? RAW_HASH : RAW_STRING;
    raw.pttl = (long long)fz_u64(&in, 8);
    raw.key = fz_bytes(&in, KEY_MAX, &raw.keylen);
    if (raw.type == RAW_STRING) {
        raw.value = fz_bytes(&in, RAW_VALUE_MAX, &raw.valuelen);
        raw.value_truncated = head & 2;
    } else {
        raw.nfields = fz_u8(&in) % (RAW_FIELDS_MAX + 1);
        for (i = 0; i < raw.nfields; i++) {
            fields[i].name = fz_bytes(&in, 255, &fields[i].namelen);
            fields[i].value = fz_bytes(&in, 255, &fields[i].valuelen);
        }
        raw.fields = fields;
        raw.fields_truncated = head & 2;
        raw.mode_read = head & 32;
        if (raw.mode_read && fz_bool(&in))
            raw.mode = fz_bytes(&in, 16, &raw.modelen);
    }
    u = (uint32_t)fz_u64(&in, 4);
    hlen = u == 0xffffffffu ? -1 : (long long)u;
    u = (uint32_t)fz_u64(&in, 4);
    idle = u == 0xffffffffu ? -1 : (long long)(u & 0x7fffffff);
    now = (int64_t)fz_u64(&in, 6);
    raw.now_ms = (head & 64) ? now : 0;
    if (head & 4) {
        decl = pick_declarable(fz_u8(&in));
        name = (char *)decl->name;
        t.format_globs = &glob;
        t.format_names = &name;
        t.nformat_patterns = 1;
    }
    if (head & 8) {
        t.semaphore_patterns = &sem;
        t.nsemaphore_patterns = 1;
    }
    looked = now - (int64_t)fz_u64(&in, 4);

    memset(v1, 0xa5, sizeof(*v1));
    memset(v2, 0x5a, sizeof(*v2));
    f1 = lockfacts_decode(&t, &raw, hlen, v1, &s1);
    f2 = lockfacts_decode(&t, &raw, hlen, v2, &s2);
    FUZZ_CHECK(f1 == f2 && memcmp(v1, v2, sizeof(*v1)) == 0 &&
               memcmp(&s1, &s2, sizeof(s1)) == 0);

    /* where the row came from */
    FUZZ_CHECK(f1 >= formats_table && f1 < formats_table + formats_count);
    FUZZ_CHECK(s1.source == FMT_SOURCE_GUESSED || s1.source == FMT_SOURCE_PROVEN ||
               s1.source == FMT_SOURCE_DECLARED);
    FUZZ_CHECK(!s1.contradicts || decl != NULL);
    if (s1.source == FMT_SOURCE_DECLARED)
        FUZZ_CHECK(f1 == decl || f1->semaphore == FMT_SEM_COUNT);
    if (s1.contradicts)
        FUZZ_CHECK(f1 != decl);
    if (f1->proves == FMT_PROVES_DECLARED)
        FUZZ_CHECK(f1 == decl && s1.source == FMT_SOURCE_DECLARED);
    if (s1.source == FMT_SOURCE_PROVEN)
        FUZZ_CHECK(f1->proves == FMT_PROVES_LAYOUT && !v1->partial);

    /* times: a guess has only a claim */
    if (s1.source == FMT_SOURCE_GUESSED)
        FUZZ_CHECK(v1->acquired_ms == 0);
    else
        FUZZ_CHECK(s1.claimed_ms == 0);
    FUZZ_CHECK(v1->acquired_ms == 0 || (v1->acquired_ms >= FORMATS_TIME_MIN_MS &&
                                        v1->acquired_ms < FORMATS_TIME_MAX_MS));

    /* the age: never ahead, never more than what proves it */
    usable = lockfacts_idle_s(&raw, idle);
    FUZZ_CHECK(usable == -1 || usable == idle);
    if (lockfacts_value_shared(&raw))
        FUZZ_CHECK(usable == -1 && raw.type == RAW_STRING && raw.valuelen <= 4);
    age = lockstate_start_age(usable, v1->acquired_ms, now, NULL);
    FUZZ_CHECK(age >= 0);
    if (usable > 1)
        bound = (usable - 1) * 1000;
    if (v1->acquired_ms > 0 && now - v1->acquired_ms > bound)
        bound = now - v1->acquired_ms;
    FUZZ_CHECK(age <= bound);

    /* a claim believed lies between the last look and now */
    believed = lockfacts_corroborate(s1.claimed_ms, looked, now);
    if (believed != 0)
        FUZZ_CHECK(looked > 0 && believed >= looked && believed <= now &&
                   s1.claimed_ms >= looked);

    /* read/write only by "mode"; holders past the cap only up to HLEN */
    if (v1->mode[0] != '\0')
        FUZZ_CHECK(mode_says_rw(&raw));
    FUZZ_CHECK(v1->nholders <= HOLDERS_MAX && v1->nholders <= v1->holders_total);
    if (raw.type == RAW_HASH && hlen >= 0 && (long long)raw.nfields < hlen &&
        raw.fields_truncated)
        FUZZ_CHECK((long long)v1->holders_total <= hlen);
    free(v1);
    free(v2);
    return 0;
}
