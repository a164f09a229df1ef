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
#include <stdint.h>

#include "common/strbuf.h"

/* Bytes that still fit before the cap. */
size_t text_room(const struct strbuf *sb);

/* Append n bytes of UTF-8, cut at a character boundary if they do not all
 * fit.  Returns false when s was cut.  Running out of memory shows in
 * sb_failed(), as for any strbuf. */
bool text_add(struct strbuf *sb, const char *s, size_t n);

/* text_add of a NUL-terminated string. */
bool text_adds(struct strbuf *sb, const char *s);

/* text_add of duration_format(ms) (common/duration.h), the house format
 * every alert text, log line, the status page and lockctl use. */
void text_duration(struct strbuf *t, int64_t ms);

/* A value that a rule compared with limit_ms.  Above it, never understated
 * (rounded up), so it reads above the limit and stays true where a text
 * states it as a bound ("waited 3.94s or less"): under a minute to three
 * significant digits ("3.94s" for 3,933.151 ms, "1.4s", "851ms"), from a
 * minute on the house format rounded up to its last unit ("5m01s" for
 * 5m00.4s).  Not above: the house format, cut down, so it reads below. */
void text_duration_above(struct strbuf *t, double value_ms, int64_t limit_ms);

/* ms (Unix) as UTC to the second: "2026-12-06T15:00:00Z". */
void text_utc(struct strbuf *t, int64_t ms);

/* "after 3m02s (firing since 2027-01-15T07:59:55Z)": how long a resolved
 * alert fired and since when (Unix ms). */
void text_since(struct strbuf *t, int64_t start_ms, int64_t end_ms);
/* "for 22s (since 2026-12-03T08:38:11Z)": how long a state has lasted */
void text_for(struct strbuf *t, int64_t start_ms, int64_t end_ms);

struct alert;
/* The line for a resolved alert: "lock K on T: resolved after 3m02s
 * (firing since ...)" - what it was about and since when, not the firing
 * text again. */
void text_resolved(struct strbuf *t, const struct alert *a);

#endif
