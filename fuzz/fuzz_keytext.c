/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_keytext.c - libFuzzer harness for common/keytext.c: the text forms
 * every Redis key and holder id takes on its way to a label, JSON, a URL
 * or a sample line.  The fuzzer's bytes are the key.
 *
 * Invariants, beyond not crashing:
 *  - percent-encoding is lossless: keytext_unpercent(keytext_percent(x))
 *    == x, and the encoding holds only printable ASCII (0x21..0x7e);
 *  - sanitising yields valid UTF-8 without NUL bytes, leaves a valid,
 *    NUL-free string unchanged, and replaces each other byte by U+FFFD;
 *  - both honour the snprintf contract: the length returned does not
 *    depend on the buffer, and a short buffer gets a NUL-terminated
 *    prefix of the full result;
 *  - decoding arbitrary bytes either fails or gives a string whose own
 *    encoding decodes back to it (decode, encode, decode is stable);
 *  - keytext_utf8_prefix never exceeds its cap and never splits a
 *    sequence of valid UTF-8.
 */
#include <stdlib.h>
#include <string.h>

#include "common/keytext.h"
#include "fuzz/fuzz.h"

static void
check_percent(const char *in, size_t n)
{
    size_t cap = KEYTEXT_PERCENT_MAX(n), len, back, i, shortsz;
    char *enc = malloc(cap), *dec = malloc(n + 1), small[8];

    FUZZ_CHECK(enc != NULL && dec != NULL);
    len = keytext_percent(enc, cap, in, n);
    FUZZ_CHECK(len < cap && enc[len] == '\0');
    for (i = 0; i < len; i++)
        FUZZ_CHECK((unsigned char)enc[i] >= 0x21 && (unsigned char)enc[i] <= 0x7e);
    back = keytext_unpercent(dec, enc, len, 0);
    FUZZ_CHECK(back == n && memcmp(dec, in, n) == 0);
    /* '+' is kept as itself by the encoder, so the form-decoding variant
     * may only differ where the key had a '+'. */
    if (memchr(in, '+', n) == NULL) {
        back = keytext_unpercent(dec, enc, len, 1);
        FUZZ_CHECK(back == n && memcmp(dec, in, n) == 0);
    }
    shortsz = n % sizeof(small);
    if (shortsz > 0) {
        FUZZ_CHECK(keytext_percent(small, shortsz, in, n) == len);
        FUZZ_CHECK(strlen(small) == (len < shortsz ? len : shortsz - 1));
        FUZZ_CHECK(memcmp(small, enc, strlen(small)) == 0);
    }
    free(enc);
    free(dec);
}

static void
check_sanitize(const char *in, size_t n)
{
    size_t cap = KEYTEXT_SANITIZED_MAX(n), len, i, shortsz, kept = 0;
    char *out = malloc(cap), small[8];

    FUZZ_CHECK(out != NULL);
    len = keytext_sanitize(out, cap, in, n);
    FUZZ_CHECK(len < cap && out[len] == '\0');
    FUZZ_CHECK(fz_utf8_valid(out, len, true));
    if (fz_utf8_valid(in, n, true))
        FUZZ_CHECK(len == n && memcmp(out, in, n) == 0);
    /* Every output byte is an input byte kept or part of a U+FFFD that
     * replaced exactly one input byte: len == kept + 3 * replaced. */
    for (i = 0; i < len; ) {
        if (i + 2 < len && memcmp(out + i, "\xef\xbf\xbd", 3) == 0 &&
            (kept + 3 > n || memcmp(in + kept, "\xef\xbf\xbd", 3) != 0)) {
            kept++;
            i += 3;
        } else {
            FUZZ_CHECK(kept < n && out[i] == in[kept]);
            kept++;
            i++;
        }
    }
    FUZZ_CHECK(kept == n);
    shortsz = n % sizeof(small);
    if (shortsz > 0) {
        FUZZ_CHECK(keytext_sanitize(small, shortsz, in, n) == len);
        FUZZ_CHECK(memcmp(small, out, strlen(small)) == 0);
    }
    free(out);
}

static void
check_decode(const char *in, size_t n)
{
    char *dec = malloc(n + 1), *enc = NULL, *again = NULL;
    size_t len, elen, alen;

    FUZZ_CHECK(dec != NULL);
    len = keytext_unpercent(dec, in, n, n > 0 && (in[0] & 1));
    if (len != (size_t)-1) {
        FUZZ_CHECK(len <= n);
        elen = keytext_percent(NULL, 0, dec, len);
        enc = malloc(elen + 1);
        again = malloc(elen + 1);
        FUZZ_CHECK(enc != NULL && again != NULL);
        FUZZ_CHECK(keytext_percent(enc, elen + 1, dec, len) == elen);
        alen = keytext_unpercent(again, enc, elen, 0);
        FUZZ_CHECK(alen == len && memcmp(again, dec, len) == 0);
    }
    free(dec);
    free(enc);
    free(again);
}

static void
check_prefix(const char *in, size_t n)
{
    size_t max = n > 0 ? (unsigned char)in[0] % (n + 1) : 0;
    size_t cut = keytext_utf8_prefix(in, n, max);

    FUZZ_CHECK(n <= max ? cut == n : cut <= max);
    if (fz_utf8_valid(in, n, false))
        FUZZ_CHECK(fz_utf8_valid(in, cut, false));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    int i;

    check_percent(in, size);
    check_sanitize(in, size);
    check_decode(in, size);
    check_prefix(in, size);
    for (i = 0; i < 256; i++)
        FUZZ_CHECK(keytext_hexval((unsigned char)i) ==
                   (i >= '0' && i <= '9' ? i - '0' :
                    i >= 'a' && i <= 'f' ? i - 'a' + 10 :
                    i >= 'A' && i <= 'F' ? i - 'A' + 10 : -1));
    FUZZ_CHECK(keytext_hash(in, size) != 0);
    return 0;
}
