/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keytext.h - lock keys and holder ids as text, safely.
 *
 * Redis keys and values are arbitrary bytes.  Everything lockwatch shows a
 * person or a parser (Prometheus labels, JSON, the CLI table, URLs) needs
 * them as valid UTF-8 or as an unambiguous escape.  Two encodings:
 *   - sanitised: valid UTF-8 kept, each invalid byte replaced by U+FFFD
 *     (lossy, for display and labels);
 *   - percent-encoded: bytes below 0x21, above 0x7e and '%' as %XX
 *     (lossless; the same rule as the sample line protocol).
 * Functions write at most outsz bytes including the NUL and return the
 * length the full result needs (like snprintf), so callers can size first.
 */
#ifndef LOCKWATCH_KEYTEXT_H
#define LOCKWATCH_KEYTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Worst-case output sizes, NUL included. */
#define KEYTEXT_SANITIZED_MAX(n) (3 * (n) + 1)
#define KEYTEXT_PERCENT_MAX(n)   (3 * (n) + 1)

/* Why a key gets no command to paste, said the same way by the status
 * page and lockctl show: a key longer than the command lines they print. */
#define KEYTEXT_TOO_LONG_FOR_COMMAND "key too long for a command line"

size_t keytext_sanitize(char *out, size_t outsz, const char *in, size_t len);
/* The same, for class names as they are made: C0 control bytes but '\n'
 * (ESC, CR, ...) and DEL become U+FFFD too, so `curl /metrics` in a
 * terminal shows a hostile key and runs none of it.  (Metric labels are
 * written with keytext_sanitize_text(), which replaces more.) */
size_t keytext_sanitize_label(char *out, size_t outsz, const char *in, size_t len);
/* The same again, for texts people read in a chat or a browser (alert
 * labels and annotations): also each character keytext_display_unsafe()
 * names but '\n' (C1, bidirectional embeddings, overrides and isolates,
 * LRM / RLM, zero-width characters, line separators) becomes U+FFFD, the
 * rule lockctl's tables follow, so a key or holder cannot reverse the
 * text around it.  A bidi control is 3 bytes, as U+FFFD is: the length
 * alone does not tell that this changed a string. */
size_t keytext_sanitize_text(char *out, size_t outsz, const char *in, size_t len);
/* Whether keytext_sanitize_text() leaves in as it is (a bidi control is
 * replaced by as many bytes: the length cannot tell). */
bool keytext_text_clean(const char *in, size_t len);
size_t keytext_percent(char *out, size_t outsz, const char *in, size_t len);
/* The code point of the valid UTF-8 sequence at s (len bytes left) into
 * *cp: its length (1..4), or 0 when the bytes there are not valid UTF-8. */
size_t keytext_utf8_next(const char *s, size_t len, unsigned long *cp);
/* A character a terminal would not just print in one place: C0, DEL, C1,
 * zero-width and format characters, line separators, bidirectional
 * embeddings, overrides and isolates (what reorders or hides text). */
int keytext_display_unsafe(unsigned long cp);
/* A client's text (in, NUL-terminated: a query value, a JSON field name)
 * echoed in an error message: printable ASCII only, each other byte '?',
 * so the message stays UTF-8 and shows a terminal nothing to act on; cut
 * at outsz - 1 bytes. */
size_t keytext_ascii(char *out, size_t outsz, const char *in);

/*
 * Decode %XX escapes (and '+' as space when plus_is_space) in place-safe
 * fashion into out (at least len bytes).  Returns the decoded length, or
 * (size_t)-1 for a malformed escape.
 */
size_t keytext_unpercent(char *out, const char *in, size_t len, int plus_is_space);

/* Value of one hex digit (either case), or -1. */
int keytext_hexval(unsigned char c);

/* Length of the longest prefix of s (at most max bytes) that does not
 * split a UTF-8 sequence; for cutting labels at a byte cap. */
size_t keytext_utf8_prefix(const char *s, size_t len, size_t max);

/* 64-bit hash of a byte string (not cryptographic; never 0). */
uint64_t keytext_hash(const void *p, size_t len);

#endif
