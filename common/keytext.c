/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keytext.c - safe text forms of arbitrary Redis bytes (see keytext.h).
 *
 * The UTF-8 validator follows RFC 3629: it refuses overlong forms,
 * surrogates (U+D800..U+DFFF) and code points above U+10FFFF, because
 * Prometheus and JSON parsers refuse them too.
 */
#include "common/keytext.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t len)
{
    unsigned char c = s[0];

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        if (len >= 2 && (s[1] & 0xc0) == 0x80)
            return 2;
        return 0;
    }
    if (c >= 0xe0 && c <= 0xef) {
        if (len < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
            return 0;
        if (c == 0xe0 && s[1] < 0xa0)
            return 0;           /* overlong */
        if (c == 0xed && s[1] >= 0xa0)
            return 0;           /* surrogate */
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (len < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
            (s[3] & 0xc0) != 0x80)
            return 0;
        if (c == 0xf0 && s[1] < 0x90)
            return 0;           /* overlong */
        if (c == 0xf4 && s[1] >= 0x90)
            return 0;           /* above U+10FFFF */
        return 4;
    }
    return 0;
}

size_t
keytext_utf8_next(const char *s, size_t len, unsigned long *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = len > 0 ? utf8_seq(u, len) : 0;

    switch (n) {
    case 1:
        *cp = u[0];
        break;
    case 2:
        *cp = ((unsigned long)(u[0] & 0x1f) << 6) | (u[1] & 0x3f);
        break;
    case 3:
        *cp = ((unsigned long)(u[0] & 0x0f) << 12) | ((unsigned long)(u[1] & 0x3f) << 6) |
            (u[2] & 0x3f);
        break;
    case 4:
        *cp = ((unsigned long)(u[0] & 0x07) << 18) | ((unsigned long)(u[1] & 0x3f) << 12) |
            ((unsigned long)(u[2] & 0x3f) << 6) | (u[3] & 0x3f);
        break;
    }
    return n;
}

int
keytext_display_unsafe(unsigned long cp)
{
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||   /* C0, DEL, C1 */
        cp == 0xad || cp == 0x61c ||                    /* soft hyphen, Arabic mark */
        (cp >= 0x200b && cp <= 0x200f) ||               /* zero-width, LRM, RLM */
        (cp >= 0x2028 && cp <= 0x202e) ||               /* separators, embeddings */
        (cp >= 0x2060 && cp <= 0x2069) ||               /* joiners, isolates */
        cp == 0xfeff;                                   /* BOM */
}

static void
put(char *out, size_t outsz, size_t at, const char *src, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (at + i + 1 < outsz)
            out[at + i] = src[i];
}

/* A C0 control byte other than '\n', or DEL: what a label must not carry
 * (a terminal acts on ESC and CR; '\n' the label formats escape). */
static int
label_control(unsigned char c)
{
    return (c < 0x20 && c != '\n') || c == 0x7f;
}

/* sanitize()'s modes: what each replaces besides invalid UTF-8 and NUL */
enum { SAN_BYTES, SAN_LABEL, SAN_TEXT };

/* A character SAN_TEXT replaces beyond the label's control bytes: what a
 * terminal would not just print in one place (keytext_display_unsafe()). */
static int
text_unsafe(const char *s, size_t n)
{
    unsigned long cp;

    return n >= 2 && keytext_utf8_next(s, n, &cp) == n && keytext_display_unsafe(cp);
}

/* Does mode replace the character at in (len bytes left)?  *n: the bytes
 * it takes (0 for an invalid byte). */
static bool
replaced(const char *in, size_t len, int mode, size_t *n)
{
    const unsigned char *s = (const unsigned char *)in;

    *n = utf8_seq(s, len);
    return *n == 0 || (*n == 1 && (s[0] == 0 || (mode != SAN_BYTES && label_control(s[0])))) ||
           (mode == SAN_TEXT && text_unsafe(in, *n));
}

bool
keytext_text_clean(const char *in, size_t len)
{
    size_t i = 0, n;

    while (i < len) {
        if (replaced(in + i, len - i, SAN_TEXT, &n))
            return false;
        i += n;
    }
    return true;
}

static size_t
sanitize(char *out, size_t outsz, const char *in, size_t len, int mode)
{
    size_t i = 0, o = 0, n;

    while (i < len) {
        if (replaced(in + i, len - i, mode, &n)) {
            /* U+FFFD; a NUL byte too, so the result is a C string; for
             * each invalid byte, or for the whole unsafe character */
            put(out, outsz, o, "\xef\xbf\xbd", 3);
            o += 3;
            i += n > 1 ? n : 1;
            continue;
        }
        put(out, outsz, o, in + i, n);
        o += n;
        i += n;
    }
    if (outsz > 0)
        out[o < outsz ? o : outsz - 1] = '\0';
    return o;
}

size_t
keytext_sanitize(char *out, size_t outsz, const char *in, size_t len)
{
    return sanitize(out, outsz, in, len, SAN_BYTES);
}

size_t
keytext_sanitize_label(char *out, size_t outsz, const char *in, size_t len)
{
    return sanitize(out, outsz, in, len, SAN_LABEL);
}

size_t
keytext_sanitize_text(char *out, size_t outsz, const char *in, size_t len)
{
    return sanitize(out, outsz, in, len, SAN_TEXT);
}

size_t
keytext_percent(char *out, size_t outsz, const char *in, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *s = (const unsigned char *)in;
    size_t i, o = 0;
    char esc[3];

    for (i = 0; i < len; i++) {
        if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '%') {
            esc[0] = '%';
            esc[1] = hex[s[i] >> 4];
            esc[2] = hex[s[i] & 0x0f];
            put(out, outsz, o, esc, 3);
            o += 3;
        } else {
            put(out, outsz, o, in + i, 1);
            o++;
        }
    }
    if (outsz > 0)
        out[o < outsz ? o : outsz - 1] = '\0';
    return o;
}

size_t
keytext_ascii(char *out, size_t outsz, const char *in)
{
    size_t i;

    for (i = 0; in[i] != '\0'; i++)
        put(out, outsz, i, (unsigned char)in[i] >= 0x20 && (unsigned char)in[i] < 0x7f ?
            in + i : "?", 1);
    if (outsz > 0)
        out[i < outsz ? i : outsz - 1] = '\0';
    return i;
}

int
keytext_hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t
keytext_unpercent(char *out, const char *in, size_t len, int plus_is_space)
{
    size_t i, o;
    int hi, lo;

    /* Up to the first byte that decodes to something else, the output is
     * the input: found with memchr, and copied only when out is not in
     * (the sample parser decodes every field in place). */
    if (plus_is_space) {
        for (i = 0; i < len && in[i] != '%' && in[i] != '+'; i++)
            ;
    } else {
        const char *pct = memchr(in, '%', len);

        i = pct != NULL ? (size_t)(pct - in) : len;
    }
    if (out != in && i > 0)
        memmove(out, in, i);
    for (o = i; i < len; i++) {
        if (in[i] == '%') {
            if (i + 2 >= len)
                return (size_t)-1;
            hi = keytext_hexval((unsigned char)in[i + 1]);
            lo = keytext_hexval((unsigned char)in[i + 2]);
            if (hi < 0 || lo < 0)
                return (size_t)-1;
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else if (in[i] == '+' && plus_is_space) {
            out[o++] = ' ';
        } else {
            out[o++] = in[i];
        }
    }
    return o;
}

size_t
keytext_utf8_prefix(const char *s, size_t len, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, n;

    if (len <= max)
        return len;
    while (i < max) {
        n = utf8_seq(u + i, len - i);
        if (n == 0)
            n = 1;
        if (i + n > max)
            break;
        i += n;
    }
    return i;
}

uint64_t
keytext_hash(const void *p, size_t len)
{
    /* FNV-1a with a final avalanche (splitmix64 finaliser): cheap, and the
     * tracker only needs a well-spread 64-bit value, not secrecy. */
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= s[i];
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h ? h : 1;
}
