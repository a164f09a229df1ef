/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_formats.c - libFuzzer harness for every lock-format decoder
 * (collectors/formats/): the fuzzer's bytes become a raw_lock of string,
 * hash, other or no type, as the scanner would read it from Redis, and
 * formats_decode() walks the whole table on it.
 *
 * Input layout: one byte of type and truncation flags, eight bytes of
 * PTTL, the key, then for a string its value (a two-byte length) and for
 * a hash (a zset when flag 16 is set) a field count and each field's name
 * and value; then, with flag 64, six bytes of the scan's time
 * (raw.now_ms).
 *
 * The key also goes through formats_helper(): the owner it names lies
 * inside the key, a helper kind has a name, and formats_kin() of any
 * row and kinds stays in the table.
 *
 * Invariants, beyond not crashing: the promises of formats.h's "What a
 * decoded view promises".  Holder ids are the exact bytes the value or a
 * field name held (cut to HOLDER_ID_MAX - 1, and marked truncated exactly
 * then or when the read was partial); the counts add up (nholders is
 * min(holders_total, HOLDERS_MAX), max_count is the largest count, a hash
 * has no more holders than fields); the host is printable ASCII; the
 * acquisition time is 0 or within range; identity is reported only for a
 * single holder; a string always decodes (never "unknown"), a non-string
 * never as "plain"; decoding is deterministic; and the wake channel of
 * the row that decoded is Redisson's prefixName() of the key.
 */
#include <stdlib.h>
#include <string.h>

#include "collectors/formats/formats.h"
#include "fuzz/fuzz.h"

#define KEY_MAX 256

static void
check_holder_bytes(const struct raw_lock *raw, const struct lock_holder *h)
{
    size_t i;

    FUZZ_CHECK(h->idlen <= HOLDER_ID_MAX - 1 && h->id[h->idlen] == '\0');
    if (raw->type == RAW_STRING) {
        size_t keep = raw->valuelen < HOLDER_ID_MAX - 1 ? raw->valuelen : HOLDER_ID_MAX - 1;

        FUZZ_CHECK(h->idlen == keep && memcmp(h->id, raw->value, keep) == 0);
        FUZZ_CHECK(h->id_truncated == (raw->value_truncated || keep < raw->valuelen));
        return;
    }
    FUZZ_CHECK(raw->type == RAW_HASH || raw->type == RAW_ZSET);
    for (i = 0; i < raw->nfields; i++) {
        const struct raw_field *f = &raw->fields[i];
        size_t keep = f->namelen < HOLDER_ID_MAX - 1 ? f->namelen : HOLDER_ID_MAX - 1;

        if (h->idlen == keep && memcmp(h->id, f->name, keep) == 0 &&
            h->id_truncated == (keep < f->namelen))
            return;
    }
    FUZZ_CHECK(!"a hash holder id that is no field name");
}

static void
check_view(const struct raw_lock *raw, const struct lock_format *fmt,
           const struct lock_view *v)
{
    size_t i, hostlen;
    long maxc = 0;

    FUZZ_CHECK(fmt >= formats_table && fmt < formats_table + formats_count);
    FUZZ_CHECK(formats_by_name(fmt->name) == fmt);
    FUZZ_CHECK(v->nholders <= HOLDERS_MAX);
    FUZZ_CHECK(v->nholders == (v->holders_total < HOLDERS_MAX ? v->holders_total : HOLDERS_MAX));
    for (i = 0; i < v->nholders; i++) {
        check_holder_bytes(raw, &v->holders[i]);
        FUZZ_CHECK(v->holders[i].count >= 1);
        FUZZ_CHECK(v->holders[i].count <= v->max_count);
        if (v->holders[i].count > maxc)
            maxc = v->holders[i].count;
    }
    if (v->holders_total <= HOLDERS_MAX)
        FUZZ_CHECK(v->max_count == maxc);
    if (raw->type == RAW_HASH || raw->type == RAW_ZSET)
        FUZZ_CHECK(v->holders_total <= raw->nfields);

    hostlen = strnlen(v->host, HOST_MAX);
    FUZZ_CHECK(hostlen < HOST_MAX);
    for (i = 0; i < hostlen; i++)
        FUZZ_CHECK((unsigned char)v->host[i] >= 0x21 && (unsigned char)v->host[i] <= 0x7e);
    FUZZ_CHECK(v->acquired_ms == 0 ||
               (v->acquired_ms >= FORMATS_TIME_MIN_MS && v->acquired_ms < FORMATS_TIME_MAX_MS));
    if (v->holders_total != 1)
        FUZZ_CHECK(v->pid == 0 && v->thread == -1 && hostlen == 0);
    FUZZ_CHECK(strnlen(v->mode, sizeof(v->mode)) < sizeof(v->mode));
    FUZZ_CHECK(v->mode[0] == '\0' || strcmp(v->mode, "read") == 0 ||
               strcmp(v->mode, "write") == 0);

    if (fmt == &formats_table[formats_count - 1])
        FUZZ_CHECK(v->holders_total == 0 && raw->type != RAW_STRING);
    if (fmt == formats_by_name("plain"))
        FUZZ_CHECK(raw->type == RAW_STRING && v->holders_total == 1);
}

static void
check_wake(const struct raw_lock *raw, const struct lock_format *fmt)
{
    char chan[KEY_MAX + 64], want[KEY_MAX + 64];
    long n = formats_wake_channel(fmt, raw->key, raw->keylen, chan, sizeof(chan));
    size_t plen, w = 0;
    bool braced;

    if (fmt->wake_channel == NULL) {
        FUZZ_CHECK(n == -1);
        return;
    }
    plen = strlen(fmt->wake_channel);
    braced = raw->keylen > 0 && memchr(raw->key, '{', raw->keylen) != NULL;
    memcpy(want, fmt->wake_channel, plen);
    w = plen;
    want[w++] = ':';
    if (!braced)
        want[w++] = '{';
    memcpy(want + w, raw->key, raw->keylen);
    w += raw->keylen;
    if (!braced)
        want[w++] = '}';
    FUZZ_CHECK(n == (long)w && memcmp(chan, want, w) == 0 && chan[w] == '\0');
    /* one byte short of the NUL: refused, never cut */
    FUZZ_CHECK(formats_wake_channel(fmt, raw->key, raw->keylen, chan, w) == -1);
}

static void
check_helper(const struct raw_lock *raw)
{
    struct helper_key hk;
    enum helper_kind k = formats_helper(raw->key, raw->keylen, raw->type, &hk);

    FUZZ_CHECK((unsigned)k < HELPER_KINDS && hk.kind == k);
    FUZZ_CHECK(strcmp(formats_helper_name(k), "none") != 0 || k == HELPER_NONE);
    if (k != HELPER_NONE) {
        FUZZ_CHECK(hk.owner >= raw->key && hk.ownerlen <= raw->keylen &&
                   hk.owner + hk.ownerlen <= raw->key + raw->keylen);
        /* the same key, type unknown: the same answer, or none (only the
         * permit-timeout shape needs its type) */
        FUZZ_CHECK(formats_helper(raw->key, raw->keylen, RAW_NONE, NULL) == k ||
                   k == HELPER_PERMIT_TIMEOUT);
    }
}

/* The row a lock decoded as fmt becomes with the key's helper kind (as if
 * it were its own helper) stays in the table. */
static void
check_kin(const struct raw_lock *raw, const struct lock_format *fmt)
{
    enum helper_kind k = formats_helper(raw->key, raw->keylen, raw->type, NULL);
    const struct lock_format *f = formats_kin(fmt, 1u << k);

    FUZZ_CHECK(f >= formats_table && f < formats_table + formats_count);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = { data, size };
    struct raw_field fields[RAW_FIELDS_MAX];
    struct raw_lock raw;
    struct lock_view *v1 = malloc(sizeof(*v1)), *v2 = malloc(sizeof(*v2));
    const struct lock_format *f1, *f2;
    uint8_t head = fz_u8(&in);
    size_t i;

    FUZZ_CHECK(v1 != NULL && v2 != NULL);
    memset(&raw, 0, sizeof(raw));
    raw.type = (enum raw_type)(head & 3);
    if (raw.type == RAW_HASH && (head & 16))
        raw.type = RAW_ZSET;
    raw.pttl = (long long)fz_u64(&in, 8);
    raw.key = fz_bytes(&in, KEY_MAX, &raw.keylen);
    if (raw.type == RAW_STRING) {
        raw.value = fz_bytes(&in, RAW_VALUE_MAX, &raw.valuelen);
        raw.value_truncated = head & 4;
    } else if (raw.type == RAW_HASH || raw.type == RAW_ZSET) {
        raw.nfields = fz_u8(&in) % (RAW_FIELDS_MAX + 1);
        for (i = 0; i < raw.nfields; i++) {
            fields[i].name = fz_bytes(&in, 255, &fields[i].namelen);
            fields[i].value = fz_bytes(&in, 255, &fields[i].valuelen);
        }
        raw.fields = fields;
        raw.fields_truncated = head & 8;
    }
    if (head & 64)
        raw.now_ms = (int64_t)fz_u64(&in, 6);
    check_helper(&raw);

    memset(v1, 0xa5, sizeof(*v1));
    memset(v2, 0x5a, sizeof(*v2));
    f1 = formats_decode(&raw, v1);
    check_view(&raw, f1, v1);
    f2 = formats_decode(&raw, v2);
    FUZZ_CHECK(f1 == f2 && memcmp(v1, v2, sizeof(*v1)) == 0);
    FUZZ_CHECK(f1->claims(&raw));
    check_wake(&raw, f1);
    check_kin(&raw, f1);

    free(v1);
    free(v2);
    return 0;
}
