/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * text.c - appends onto a strbuf that cut at a UTF-8 character boundary
 * instead of failing at the cap (see text.h), and durations in the house
 * format (common/duration.h: "850ms", "42s", "5m03s", "2h01m", "3d04h"),
 * the one lockctl's tables use too.
 */
#include "alerts/text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alerts/alertset.h"
#include "common/duration.h"
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

void
text_duration(struct strbuf *t, int64_t ms)
{
    char buf[64];

    duration_format(ms, buf, sizeof(buf));
    text_adds(t, buf);
}

/*
 * A value judged above a limit must read above it: 1.4 s against a 1 s
 * limit is "1.4s", not the house format's "1s".  Under a minute, in the
 * limit's unit (ms below 1 s, else s), with the fewest decimals (0..3) at
 * which the value, cut down, is already above the limit; at 3 decimals
 * still level, rounded up (the value is above, by less than shown).
 */
void
text_duration_above(struct strbuf *t, double value_ms, int64_t limit_ms)
{
    char buf[64];
    bool in_s = value_ms >= 1000.0;
    double v = in_s ? value_ms / 1000.0 : value_ms;
    double lim = in_s ? (double)limit_ms / 1000.0 : (double)limit_ms;
    double scale = 1.0, cut;
    int d;

    if (!(value_ms > (double)limit_ms) || value_ms >= 60000.0) {
        text_duration(t, (int64_t)value_ms);
        return;
    }
    for (d = 0; d <= 3; d++, scale *= 10.0) {
        cut = (double)(int64_t)(v * scale) / scale;     /* positive: cut down */
        if (cut > lim) {
            snprintf(buf, sizeof(buf), "%.*f%s", d, cut, in_s ? "s" : "ms");
            text_adds(t, buf);
            return;
        }
    }
    cut = (double)((int64_t)(v * 1000.0) + 1) / 1000.0;  /* rounded up */
    snprintf(buf, sizeof(buf), "%.3f%s", cut, in_s ? "s" : "ms");
    text_adds(t, buf);
}

/* "<word> <end - start> (<what> <start as UTC>)" */
static void
text_span(struct strbuf *t, const char *word, const char *what, int64_t start_ms, int64_t end_ms)
{
    char when[32];
    time_t secs = (time_t)(start_ms / 1000);
    struct tm tm;

    if (gmtime_r(&secs, &tm) == NULL || strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(when, sizeof(when), "%" PRId64 " ms after the epoch", start_ms);
    text_adds(t, word);
    text_adds(t, " ");
    text_duration(t, end_ms - start_ms);
    text_adds(t, " (");
    text_adds(t, what);
    text_adds(t, " ");
    text_adds(t, when);
    text_adds(t, ")");
}

void
text_since(struct strbuf *t, int64_t start_ms, int64_t end_ms)
{
    text_span(t, "after", "firing since", start_ms, end_ms);
}

void
text_for(struct strbuf *t, int64_t start_ms, int64_t end_ms)
{
    text_span(t, "for", "since", start_ms, end_ms);
}

void
text_resolved(struct strbuf *t, const struct alert *a)
{
    /* what it was about, from its labels: the firing summary is not
     * repeated (it described a state that is over) */
    if (a->key != NULL) {
        text_adds(t, "lock ");
        text_adds(t, a->key);
    } else if (a->shard != NULL) {
        text_adds(t, "shard ");
        text_adds(t, a->shard);
    } else if (a->class_ != NULL) {
        text_adds(t, "lock class ");
        text_adds(t, a->class_);
    } else {
        text_adds(t, "target ");
        text_adds(t, a->target != NULL ? a->target : "?");
    }
    if (a->target != NULL && (a->key != NULL || a->shard != NULL)) {
        text_adds(t, " on ");
        text_adds(t, a->target);
    }
    text_adds(t, ": resolved ");
    text_since(t, a->starts_ms, a->ends_ms);
}
