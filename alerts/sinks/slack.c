/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slack.c - format = slack: a Slack incoming webhook.
 *
 * The body is Slack's documented minimal message, {"text": "...",
 * "mrkdwn": false}: plain text.  mrkdwn has no escape for its *, _, ~ and
 * `, and keys and classes are full of them (lock:order:*), so a key would
 * format the message; plain, a key reads as it is and pastes as it is.
 * Slack still reads &, < and > as markup (<url|label>, &lt;), so those
 * three are escaped as &amp; &lt; &gt; in everything quoted from an alert;
 * that is the escaping Slack documents, and with it a hostile key cannot
 * forge a link or a mention.  A line break quoted from an alert (a key may
 * hold a newline) is written \n (\r, \u2028, \u2029), and a backslash
 * \\: a key cannot end its alert's line and write one of its own, nor pass
 * for one that did.  A batch lists at most SLACK_LINES alerts,
 * then "and N more", and the text stays under SLACK_TEXT_MAX bytes (Slack
 * truncates long messages; cuts never split a UTF-8 sequence).
 *
 * Slack accepts one message per second per incoming webhook and answers
 * 429 past that; the row's min_interval_ms makes the notifier keep to it
 * (queued, not dropped: alerts/pace.h).
 *
 * The webhook URL is the secret here (it embeds the token): it is never
 * logged, and metrics name the sink by its [webhook NAME].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerts/sinks/sinks.h"
#include "alerts/text.h"

#define SLACK_LINES     20
#define SLACK_TEXT_MAX  3500
#define SLACK_INTERVAL_MS 1000  /* Slack: 1 message per second per webhook */

/* The message: once one piece is cut, nothing more is added, so the text
 * never goes on past a gap. */
struct out {
    struct strbuf sb;
    bool full;
};

static void
add_raw(struct out *o, const char *s, size_t n)
{
    if (!o->full && !text_add(&o->sb, s, n))
        o->full = true;
}

static void
add(struct out *o, const char *s)
{
    add_raw(o, s, strlen(s));
}

/* What stands for the character at s in quoted text, and its length in
 * *n; NULL: itself. */
static const char *
escape_of(const char *s, size_t *n)
{
    *n = 1;
    switch (*s) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '\n':
        return "\\n";
    case '\r':
        return "\\r";
    case '\\':
        return "\\\\";     /* a key's own "\n" is not a line break written out */
    default:
        break;
    }
    /* U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR */
    if ((unsigned char)s[0] == 0xe2 && (unsigned char)s[1] == 0x80 &&
        ((unsigned char)s[2] == 0xa8 || (unsigned char)s[2] == 0xa9)) {
        *n = 3;
        return (unsigned char)s[2] == 0xa8 ? "\\u2028" : "\\u2029";
    }
    return NULL;
}

/* Quoted text: escaped (escape_of); the escapes are never cut in half. */
static void
add_escaped(struct out *o, const char *s)
{
    const char *run = s;
    size_t n;

    for (; *s != '\0'; s += n) {
        const char *esc = escape_of(s, &n);

        if (esc == NULL)
            continue;
        add_raw(o, run, (size_t)(s - run));
        if (strlen(esc) > text_room(&o->sb))
            o->full = true;
        add(o, esc);
        run = s + n;
    }
    add_raw(o, run, (size_t)(s - run));
}

/* A resolved alert: what it was about and since when (text_resolved), not
 * the firing text again. */
static void
add_resolved(struct out *o, const struct alert *a)
{
    struct strbuf t;

    sb_init(&t, SLACK_TEXT_MAX + 1);
    text_resolved(&t, a);
    if (sb_failed(&t) || t.buf == NULL)
        o->full = true;
    else
        add_escaped(o, t.buf);
    sb_release(&t);
}

static const char *
heading(enum alert_event_kind k)
{
    switch (k) {
    case EV_RESOLVED:
        return "RESOLVED";
    case EV_REPEAT:
        return "FIRING, still";
    default:
        return "FIRING";
    }
}

static int
slack_render(const struct sink_batch *b, char **body, size_t *len)
{
    struct out o = { .full = false };
    char num[64], *rb;
    size_t i;
    int rc = -1;

    sb_init(&o.sb, SLACK_TEXT_MAX + 1);
    add(&o, "[");
    add(&o, heading(b->kind));
    add(&o, "]");
    if (b->n == 1) {
        const struct alert *a = b->alerts[0];

        add(&o, " ");
        add(&o, alert_name_str(a->name));
        add(&o, ": ");
        if (b->kind == EV_RESOLVED) {
            add_resolved(&o, a);
        } else {
            add_escaped(&o, a->summary);
            add(&o, "\n");
            add_escaped(&o, a->description);
        }
    } else {
        snprintf(num, sizeof(num), " %zu lockwatch alerts", b->n);
        add(&o, num);
        for (i = 0; i < b->n && i < SLACK_LINES; i++) {
            add(&o, "\n\xe2\x80\xa2 ");
            add(&o, alert_name_str(b->alerts[i]->name));
            add(&o, ": ");
            if (b->kind == EV_RESOLVED)
                add_resolved(&o, b->alerts[i]);
            else
                add_escaped(&o, b->alerts[i]->summary);
        }
        if (b->n > SLACK_LINES) {
            snprintf(num, sizeof(num), "\nand %zu more", b->n - SLACK_LINES);
            add(&o, num);
        }
    }
    /* the runbook of a firing batch of one alert name */
    for (i = 1; i < b->n && b->alerts[i]->name == b->alerts[0]->name; i++)
        ;
    if (b->kind != EV_RESOLVED && b->n > 0 && i == b->n && !o.full &&
        (rb = sink_runbook(b, b->alerts[0]->name)) != NULL) {
        add(&o, "\nRunbook: ");
        add_escaped(&o, rb);
        free(rb);
    }
    if (b->generator_url != NULL && !o.full) {
        add(&o, "\n");
        add_escaped(&o, b->generator_url);
    }
    if (!sb_failed(&o.sb))
        rc = sink_dump(json_pack("{s:s%,s:b}", "text", o.sb.buf, o.sb.len, "mrkdwn", 0),
                       body, len);
    sb_release(&o.sb);
    return rc;
}

const struct sink_type sink_slack = {
    .name = "slack",
    .kinds = SINK_KIND(EV_FIRING) | SINK_KIND(EV_REPEAT) | SINK_KIND(EV_RESOLVED),
    .leader_only = true,
    .render = slack_render,
    .headers = sink_headers_json,
    .endpoint = sink_endpoint_as_is,
    .min_interval_ms = SLACK_INTERVAL_MS,
};
