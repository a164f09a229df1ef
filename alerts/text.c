/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * text.c - appends onto a strbuf that cut at a UTF-8 character boundary
 * instead of failing at the cap (see text.h).
 */
#include "alerts/text.h"

#include <string.h>

#include "common/keytext.h"

size_t
text_room(const struct strbuf *sb)
{
    return sb->len < sb->max ? sb->max - 1 - sb->len : 0;
}

bool
text_add(struct strbuf *sb, const char *s, size_t n)
{
    size_t room = text_room(sb);
    bool whole = n <= room;

    if (!whole)
        n = keytext_utf8_prefix(s, n, room);
    sb_add(sb, s, n);
    return whole;
}

bool
text_adds(struct strbuf *sb, const char *s)
{
    return text_add(sb, s, strlen(s));
}
