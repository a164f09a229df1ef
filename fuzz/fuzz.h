/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz.h - what every libFuzzer harness in fuzz/ shares: a reader that
 * turns the fuzzer's bytes into the fields a harness builds its input
 * from, the check that aborts on a broken invariant, and a UTF-8 validator
 * of the harnesses' own, so that output claimed to be UTF-8 is judged by
 * code other than the product's keytext.c.
 *
 * The reader never fails: past the end it yields zeros and empty byte
 * strings, so every input, however short, builds some case.  Header-only
 * (static inline): each harness is one .c linked against the project's
 * objects, nothing else.
 */
#ifndef LOCKWATCH_FUZZ_H
#define LOCKWATCH_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The entry point libFuzzer calls; declared here for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a finding: say which, then abort() so libFuzzer
 * keeps the input that caused it. */
#define FUZZ_CHECK(cond)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__,        \
                    __LINE__, #cond);                                         \
            abort();                                                          \
        }                                                                     \
    } while (0)

struct fuzz_in {
    const uint8_t *p;
    size_t n;
};

static inline uint8_t
fz_u8(struct fuzz_in *in)
{
    uint8_t b = 0;

    if (in->n > 0) {
        b = in->p[0];
        in->p++;
        in->n--;
    }
    return b;
}

static inline uint64_t
fz_u64(struct fuzz_in *in, unsigned nbytes)
{
    uint64_t v = 0;

    while (nbytes-- > 0)
        v = v << 8 | fz_u8(in);
    return v;
}

static inline bool
fz_bool(struct fuzz_in *in)
{
    return fz_u8(in) & 1;
}

/* Up to max bytes: a length byte (pair, when max > 255) then that many
 * bytes, cut to what is left.  *len gets the count. */
static inline const char *
fz_bytes(struct fuzz_in *in, size_t max, size_t *len)
{
    size_t want = max > 255 ? (size_t)fz_u64(in, 2) : fz_u8(in);
    const char *p = (const char *)in->p;

    if (want > max)
        want %= max + 1;
    if (want > in->n)
        want = in->n;
    in->p += want;
    in->n -= want;
    *len = want;
    return p;
}

/* RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above
 * U+10FFFF.  When no_nul, a NUL byte is invalid too. */
static inline bool
fz_utf8_valid(const char *s, size_t n, bool no_nul)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, k, len;
    uint32_t cp;

    while (i < n) {
        if (u[i] < 0x80) {
            if (u[i] == 0 && no_nul)
                return false;
            i++;
            continue;
        }
        if ((u[i] & 0xe0) == 0xc0) {
            len = 2;
            cp = u[i] & 0x1f;
        } else if ((u[i] & 0xf0) == 0xe0) {
            len = 3;
            cp = u[i] & 0x0f;
        } else if ((u[i] & 0xf8) == 0xf0) {
            len = 4;
            cp = u[i] & 0x07;
        } else {
            return false;
        }
        if (n - i < len)
            return false;
        for (k = 1; k < len; k++) {
            if ((u[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (u[i + k] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
            (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

#endif
