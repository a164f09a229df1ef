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

/* ceil() of x >= 0, without libm (nothing else here links it) */
static int64_t
ceil_pos(double x)
{
    int64_t i = (int64_t)x;

    return (double)i < x ? i + 1 : i;
}

/*
 * A value judged above a limit is never understated: shown rounded up, so
 * it reads above the limit and a sentence that states it as a bound ("X
 * or less") stays true.  Under a minute to three significant digits in
 * ms below 1 s, else in s, trailing zeros dropped ("3.94s" for 3,933.151
 * ms, "2.5s", "851ms"); from a minute on the house format rounded up to
 * its last unit ("5m01s" for 5m00.4s).
 */
static void
text_duration_up(struct strbuf *t, double value_ms)
{
    static const int64_t units[][2] = {     /* below: round up to */
        { 3600000, 1000 }, { 86400000, 60000 }, { INT64_MAX, 3600000 },
    };
    char buf[64];
    bool in_s = value_ms >= 1000.0;
    double v = in_s ? value_ms / 1000.0 : value_ms, scale = 1.0, r;
    int d = v >= 100.0 ? 0 : v >= 10.0 ? 1 : 2, i;
    size_t n;

    for (i = 0; i < (v < 1.0 ? 3 : d); i++)
        scale *= 10.0;
    /* ceil, less a millionth of the last digit: 3.94 * 100 can be 394.000...01 */
    r = (double)ceil_pos(v * scale - 1e-6) / scale;
    if (value_ms < 60000.0 && (in_s ? r < 60.0 : r < 1000.0)) {
        snprintf(buf, sizeof(buf), "%.*f", v < 1.0 ? 3 : d, r);
        n = strlen(buf);
        while (strchr(buf, '.') != NULL && (buf[n - 1] == '0' || buf[n - 1] == '.'))
            buf[--n] = '\0';
        snprintf(buf + n, sizeof(buf) - n, "%s", in_s ? "s" : "ms");
        text_adds(t, buf);
        return;
    }
    for (i = 0; value_ms >= (double)units[i][0]; i++)
        ;
    text_duration(t, (ceil_pos(value_ms - 1e-6) + units[i][1] - 1) / units[i][1] *
                  units[i][1]);
}

void
text_duration_above(struct strbuf *t, double value_ms, int64_t limit_ms)
{
    if (value_ms > (double)limit_ms)
        text_duration_up(t, value_ms);
    else
        text_duration(t, (int64_t)value_ms);
}

void
text_utc(struct strbuf *t, int64_t ms)
{
    char when[32];
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;

    if (gmtime_r(&secs, &tm) == NULL || strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(when, sizeof(when), "%" PRId64 " ms after the epoch", ms);
    text_adds(t, when);
}

/* "<word> <end - start> (<what> <start as UTC>)" */
static void
text_span(struct strbuf *t, const char *word, const char *what, int64_t start_ms, int64_t end_ms)
{
    text_adds(t, word);
    text_adds(t, " ");
    text_duration(t, end_ms - start_ms);
    text_adds(t, " (");
    text_adds(t, what);
    text_adds(t, " ");
    text_utc(t, start_ms);
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
