/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strbuf.h - a growable byte buffer with a hard cap.
 *
 * Appends never fail loudly: once an allocation fails or the cap is
 * reached the buffer is marked overflowed and further appends are
 * ignored, so a renderer can write straight through and check once at the
 * end (sb_failed).  Lifecycle: sb_init / sb_release.
 */
#ifndef LOCKWATCH_STRBUF_H
#define LOCKWATCH_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
    char *buf;
    size_t len, cap, max;
    bool failed;
};

void sb_init(struct strbuf *sb, size_t max);
void sb_release(struct strbuf *sb);
void sb_add(struct strbuf *sb, const char *p, size_t n);
void sb_adds(struct strbuf *sb, const char *s);
void sb_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* d with at most places decimals, without the trailing zeros (and '.')
 * that claim a resolution the value does not have: 0.001, 12, 0.000125. */
void sb_add_decimal(struct strbuf *sb, double d, int places);
/* Hand the bytes to the caller (who frees them); the buffer is reset. */
char *sb_detach(struct strbuf *sb, size_t *len);

static inline bool
sb_failed(const struct strbuf *sb)
{
    return sb->failed;
}

#endif
