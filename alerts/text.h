/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * text.h - alert texts on the one bounded buffer (common/strbuf.h), cut
 * the way alert texts must be cut.
 *
 * Every label and annotation ends up in JSON, whose encoder refuses
 * invalid UTF-8 (jansson returns NULL), and in Slack messages.  A text
 * that reaches its strbuf's cap is therefore cut at a character boundary
 * and keeps what fits, where sb_add would refuse the whole append and
 * fail the buffer.  Used by the rules' summaries and descriptions
 * (rules.c) and the Slack message (sinks/slack.c).
 *
 * The strbuf must have been sb_init'ed with a max of at least 1; the cap
 * on the text is max - 1 bytes (the NUL takes the last one).
 */
#ifndef LOCKWATCH_ALERTS_TEXT_H
#define LOCKWATCH_ALERTS_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

/* Bytes that still fit before the cap. */
size_t text_room(const struct strbuf *sb);

/* Append n bytes of UTF-8, cut at a character boundary if they do not all
 * fit.  Returns false when s was cut.  Running out of memory shows in
 * sb_failed(), as for any strbuf. */
bool text_add(struct strbuf *sb, const char *s, size_t n);

/* text_add of a NUL-terminated string. */
bool text_adds(struct strbuf *sb, const char *s);

#endif
