/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strbuf.c - bounded growable buffer (see strbuf.h).
 */
#include "common/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
sb_init(struct strbuf *sb, size_t max)
{
    memset(sb, 0, sizeof(*sb));
    sb->max = max;
}

void
sb_release(struct strbuf *sb)
{
    free(sb->buf);
    memset(sb, 0, sizeof(*sb));
}

static bool
reserve(struct strbuf *sb, size_t more)
{
    size_t need, ncap;
    char *nb;

    if (sb->failed)
        return false;
    if (more > sb->max || sb->len + 1 > sb->max - more) {
        sb->failed = true;
        return false;
    }
    need = sb->len + more + 1;
    if (need <= sb->cap)
        return true;
    ncap = sb->cap ? sb->cap : 4096;
    while (ncap < need)
        ncap *= 2;
    if (ncap > sb->max + 1)
        ncap = sb->max + 1;
    nb = realloc(sb->buf, ncap);
    if (nb == NULL) {
        sb->failed = true;
        return false;
    }
    sb->buf = nb;
    sb->cap = ncap;
    return true;
}

void
sb_add(struct strbuf *sb, const char *p, size_t n)
{
    if (!reserve(sb, n))
        return;
    memcpy(sb->buf + sb->len, p, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void
sb_adds(struct strbuf *sb, const char *s)
{
    sb_add(sb, s, strlen(s));
}

void
sb_addf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void
sb_add_decimal(struct strbuf *sb, double d, int places)
{
    char buf[64];
    int n = snprintf(buf, sizeof(buf), "%.*f", places, d);

    if (n <= 0 || (size_t)n >= sizeof(buf)) {
        sb_addf(sb, "%.*f", places, d);     /* huge: as it is */
        return;
    }
    if (strchr(buf, '.') != NULL) {
        while (buf[n - 1] == '0')
            n--;
        if (buf[n - 1] == '.')
            n--;
    }
    sb_add(sb, buf, (size_t)n);
}

char *
sb_detach(struct strbuf *sb, size_t *len)
{
    char *p = sb->buf;

    if (p == NULL) {
        p = calloc(1, 1);
        if (len)
            *len = 0;
    } else if (len) {
        *len = sb->len;
    }
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return p;
}
