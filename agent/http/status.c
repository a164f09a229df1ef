/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * status.c - the status page (GET /), what on-call looks at first,
 * rendered from a view.
 *
 * One self-contained HTML page: the targets (up or down, last scan), the
 * alerts firing in the agent, the newest lock events of the timeline
 * (collectors/events/: at most STATUS_EVENTS_MAX, newest first), and the
 * worst locks of each bad state
 * (leaked, long, reentrant_high) with key, class, format, holder, host and
 * pid where the format encodes them, age, TTL and the exact lockctl
 * commands to inspect and release each one.  Read-only: the page has no
 * forms and no script, loads nothing from elsewhere, refreshes itself with
 * a meta refresh, and is sent with a Content-Security-Policy that forbids
 * every script (STATUS_CSP).
 *
 * Everything on the page comes from the same immutable snapshots as
 * /metrics and /api/v1/locks, plus the alert set's own JSON (the one
 * /api/v1/alerts serves, read back with jansson rather than a second way
 * into the alert set's lock).  The page is bounded: at most top_offenders
 * locks per state and STATUS_ALERTS_MAX alerts are listed, the rest are
 * counted with a pointer to the JSON API, and the whole page is capped at
 * STATUS_MAX_BYTES.
 *
 * What must stay true: every byte that did not come from this file goes
 * through esc_text() (valid UTF-8 in, HTML text out: & < > " ' as
 * entities, control characters as U+FFFD) or, for raw Redis bytes,
 * esc_bytes() (sanitised to UTF-8 first).  The lockctl commands are
 * printable ASCII (percent-encoded with --escaped when a key or holder is
 * not), single-quoted for the shell, then escaped for HTML like the rest.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "common/strbuf.h"
#include "alerts/alerts.h"
#include "alerts/rules.h"
#include "alerts/text.h"
#include "collectors/events/events.h"
#include "collectors/formats/formats.h"
#include "common/duration.h"
#include "common/keytext.h"
#include "collectors/locks/snapshot.h"

/* No script, no frame, nothing fetched but the page itself and its
 * inline style. */
#define STATUS_CSP "default-src 'none'; style-src 'unsafe-inline'; " \
                   "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
#define STATUS_REFRESH_S  15            /* the page reloads itself this often */
#define STATUS_MAX_BYTES  (8u << 20)    /* cap on the page */
#define STATUS_ALERTS_MAX 100           /* alerts listed; the rest counted */
#define STATUS_EVENTS_MAX 50            /* newest lock events listed */
#include "conf/config.h"

#define KEY_SHOW_MAX     300    /* bytes of a key shown; the rest is cut with ... */
#define HOLDER_SHOW_MAX  80
#define COMMAND_KEY_MAX  (16 * 1024)    /* longer keys get no copy-paste command: lockctl
                                         * pastes a word of up to 16 KiB too */

static const struct {
    uint8_t flag;
    const char *id;             /* the API's and lockctl's name for it */
    const char *title;
    const char *why;
} states[] = {
    { LOCK_LEAKED, "leaked", "Leaked locks",
      "No TTL for longer than leak_grace: these never go away on their own." },
    { LOCK_LONG, "long", "Long-held locks",
      "The same holder for longer than max_hold (a watchdog may be renewing stuck work)." },
    { LOCK_REENTRANT_HIGH, "reentrant_high", "Reentrancy too high",
      "A hold count at or above max_reentrancy: taken more often than released." },
};
#define NSTATES (sizeof(states) / sizeof(states[0]))

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d1d1f;background:#fff}"
    "h1{font-size:1.6em;margin:0 0 .2em}h2{font-size:1.2em;margin:1.6em 0 .3em}"
    "p.meta{color:#555;margin:.2em 0}"
    "table{border-collapse:collapse;width:100%;margin:.4em 0}"
    "th,td{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}"
    "th{background:#f4f4f6;font-weight:600}"
    "td.key,code{font-family:ui-monospace,monospace;overflow-wrap:anywhere}"
    /* a narrow window squeezes the wide columns, never the keys below 16
     * characters (overflow-wrap:anywhere would let them shrink to one) */
    "td.key,td.cmd{min-width:16ch}"
    "code{display:block;font-size:12px;background:#f6f6f8;padding:.15em .3em;margin:.1em 0;"
    "white-space:pre-wrap}"
    ".up{color:#137333;font-weight:600}.down{color:#b3261e;font-weight:600}"
    ".stale{color:#8a5a00}"
    ".waiting{color:#8a6d00;font-weight:600}.elsewhere{color:#5f6368}"
    ".firing{color:#b3261e;font-weight:600}.none{color:#555}"
    ".summary span{display:inline-block;margin-right:1.5em}"
    "nav a{margin-right:1em}"
    /* a narrow window: less margin and padding, so the columns above fit */
    "@media (max-width:1000px){body{margin:.6em}th,td{padding:.25em .25em}}";

/* Valid UTF-8 as HTML text (attribute-safe too). */
static void
esc_text(struct strbuf *sb, const char *s, size_t n)
{
    size_t i, start = 0;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep;

        switch (c) {
        case '&':  rep = "&amp;"; break;
        case '<':  rep = "&lt;"; break;
        case '>':  rep = "&gt;"; break;
        case '"':  rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default:
            rep = c < 0x20 || c == 0x7f ? "\xef\xbf\xbd" : NULL;
            break;
        }
        if (rep == NULL)
            continue;
        sb_add(sb, s + start, i - start);
        sb_adds(sb, rep);
        start = i + 1;
    }
    sb_add(sb, s + start, n - start);
}

static void
esc_str(struct strbuf *sb, const char *s)
{
    esc_text(sb, s, strlen(s));
}

/* Raw bytes (a key, a holder) as HTML text: sanitised to UTF-8 with no
 * character that reorders or hides text (a bidi override would turn the
 * row around it), cut at max bytes (on a character boundary) with an
 * ellipsis. */
static void
esc_bytes(struct strbuf *sb, const char *p, size_t n, size_t max)
{
    char stack[1024], *tmp = stack;
    size_t need = KEYTEXT_SANITIZED_MAX(n), len;
    bool cut = false;

    if (need > sizeof(stack) && (tmp = malloc(need)) == NULL) {
        sb->failed = true;
        return;
    }
    len = keytext_sanitize_text(tmp, need, p, n);
    if (len > max) {
        len = keytext_utf8_prefix(tmp, len, max);
        cut = true;
    }
    esc_text(sb, tmp, len);
    if (cut)
        sb_adds(sb, "\xe2\x80\xa6");
    if (tmp != stack)
        free(tmp);
}

static void
fmt_utc(char *buf, size_t len, int64_t ms)
{
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;

    if (ms <= 0 || gmtime_r(&sec, &tm) == NULL ||
        strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(buf, len, "never");
}

/* Would the shell or lockctl need the percent-encoded form? */
static bool
needs_percent(const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c < 0x21 || c > 0x7e || c == '%')
            return true;
    }
    return false;
}

/* Characters a shell word may hold without quotes (no globs, no $, no
 * quotes, no separators). */
static bool
shell_plain(const char *p, size_t n)
{
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "0123456789_.:/@%+=,-";
    size_t i;

    if (n == 0)
        return false;
    for (i = 0; i < n; i++)
        if (p[i] == '\0' || strchr(ok, p[i]) == NULL)
            return false;
    return true;
}

/* One shell word: as it is when it is plain, else in single quotes with
 * ' as '\''; percent-encoded first when asked (then it is printable
 * ASCII). */
static void
shell_word(struct strbuf *sb, const char *p, size_t n, bool percent)
{
    char stack[1024], *tmp = stack;
    size_t need = KEYTEXT_PERCENT_MAX(n), i;

    if (percent) {
        if (need > sizeof(stack) && (tmp = malloc(need)) == NULL) {
            sb->failed = true;
            return;
        }
        n = keytext_percent(tmp, need, p, n);
        p = tmp;
    }
    if (shell_plain(p, n)) {
        sb_add(sb, p, n);
    } else {
        sb_adds(sb, "'");
        for (i = 0; i < n; i++) {
            if (p[i] == '\'')
                sb_adds(sb, "'\\''");
            else
                sb_add(sb, p + i, 1);
        }
        sb_adds(sb, "'");
    }
    if (tmp != stack)
        free(tmp);
}

/* "lockctl -c FILE -t TARGET " (no -c for lockctl's own default). */
static void
lockctl_prefix(struct strbuf *cmd, const char *config_path, const char *target)
{
    sb_adds(cmd, "lockctl ");
    if (config_path != NULL && config_path[0] != '(' &&
        strcmp(config_path, CONFIG_DEFAULT_PATH) != 0) {
        sb_adds(cmd, "-c ");
        shell_word(cmd, config_path, strlen(config_path), false);
        sb_adds(cmd, " ");
    }
    sb_adds(cmd, "-t ");
    shell_word(cmd, target, strlen(target), false);
    sb_adds(cmd, " ");
}

/* The holder a release names: the deepest one for reentrant_high, else
 * the first; NULL when none was decoded or it was cut. */
static const struct snap_holder *
release_holder(const struct snap_lock *l, uint8_t state)
{
    const struct snap_holder *best = NULL;
    uint16_t i;

    for (i = 0; i < l->nholders; i++) {
        const struct snap_holder *h = &l->holders[i];

        if (best == NULL || (state == LOCK_REENTRANT_HIGH && h->count > best->count))
            best = h;
        if (state != LOCK_REENTRANT_HIGH)
            break;
    }
    return best != NULL && !best->truncated ? best : NULL;
}

/* The <td> with the lockctl commands for one lock. */
static void
commands_cell(struct strbuf *sb, const char *config_path, const struct snapshot *s,
              const struct snap_lock *l, uint8_t state)
{
    const struct snap_holder *h = release_holder(l, state);
    struct strbuf cmd;
    bool pct;

    sb_adds(sb, "<td class=\"cmd\">");
    if ((l->flags & SNAP_KEY_TRUNCATED) || l->key_len > COMMAND_KEY_MAX) {
        sb_adds(sb, KEYTEXT_TOO_LONG_FOR_COMMAND ": ");
        sb_init(&cmd, 4096);
        lockctl_prefix(&cmd, config_path, s->target);
        sb_addf(&cmd, "list --state %s", state == LOCK_LEAKED ? "leaked" :
                state == LOCK_LONG ? "long" : "reentrant_high");
        goto out;
    }
    pct = needs_percent(l->key, l->key_len) ||
          (h != NULL && needs_percent(h->id, h->id_len));
    sb_init(&cmd, 64 * 1024);
    lockctl_prefix(&cmd, config_path, s->target);
    sb_adds(&cmd, "show ");
    shell_word(&cmd, l->key, l->key_len, pct);
    if (pct)
        sb_adds(&cmd, " --escaped");
    if (h != NULL) {
        sb_adds(&cmd, "\n");
        lockctl_prefix(&cmd, config_path, s->target);
        sb_adds(&cmd, "release ");
        shell_word(&cmd, l->key, l->key_len, pct);
        sb_adds(&cmd, " --holder ");
        shell_word(&cmd, h->id, h->id_len, pct);
        if (state == LOCK_LEAKED)
            sb_adds(&cmd, " --if-leaked");
        if (pct)
            sb_adds(&cmd, " --escaped");
    }
out:
    if (sb_failed(&cmd)) {
        sb->failed = true;
    } else {
        /* one <code> per command line */
        char *line = cmd.buf, *nl;

        while (line != NULL && cmd.len > 0) {
            nl = memchr(line, '\n', (size_t)(cmd.buf + cmd.len - line));
            sb_adds(sb, "<code>");
            esc_text(sb, line, nl != NULL ? (size_t)(nl - line) :
                     (size_t)(cmd.buf + cmd.len - line));
            sb_adds(sb, "</code>");
            line = nl != NULL ? nl + 1 : NULL;
        }
    }
    sb_release(&cmd);
    sb_adds(sb, "</td>");
}

struct row {
    const struct snapshot *s;
    const struct snap_lock *l;
};

static int
row_cmp(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;

    if (a->l->first_seen_ms != b->l->first_seen_ms)
        return a->l->first_seen_ms < b->l->first_seen_ms ? -1 : 1;  /* oldest first */
    return strcmp(a->s->target, b->s->target);
}

static uint64_t
state_total(const struct snapshot *s, uint8_t flag)
{
    uint64_t n = 0;
    size_t c;

    for (c = 0; c < s->nclasses; c++)
        n += flag == LOCK_LEAKED ? s->class_stats[c].leaked :
             flag == LOCK_LONG ? s->class_stats[c].long_held : s->class_stats[c].reentrant_high;
    return n;
}

/* Whether s is shown in place of a failed scan (a stale view). */
static bool
stale_target(const struct view *v, const struct snapshot *s)
{
    size_t i;

    for (i = 0; i < v->ntargets; i++)
        if (v->targets[i].snap != NULL && !v->targets[i].snap->ok &&
            v->targets[i].snap->last_good == s)
            return true;
    return false;
}

/* One line per cluster shard that the last scan of an up target could
 * not read: its locks below are last known, "N ago", and why. */
static void
stale_shards(struct strbuf *sb, const char *target, const struct snapshot *s, int64_t now_ms)
{
    char ago[32];
    size_t k;

    for (k = 0; k < s->nshards; k++) {
        const struct snap_shard *sh = &s->shards[k];

        if (sh->ok)
            continue;
        sb_adds(sb, "<p class=\"stale\">target ");
        esc_str(sb, target);
        sb_adds(sb, ", shard ");
        esc_bytes(sb, sh->shard, strnlen(sh->shard, sizeof(sh->shard)), sizeof(sh->shard));
        sb_adds(sb, " (");
        esc_bytes(sb, sh->node, strnlen(sh->node, sizeof(sh->node)), sizeof(sh->node));
        if (sh->last_success_ms > 0) {
            duration_format(now_ms - sh->last_success_ms, ago, sizeof(ago));
            sb_addf(sb, "): <b>last known %s ago</b> (its %" PRIu64 " lock%s here are from then); ",
                    ago, sh->carried, sh->carried == 1 ? "" : "s");
        } else {
            sb_adds(sb, "): <b>never read</b> (its locks are unknown); ");
        }
        sb_adds(sb, "scans failing: ");
        esc_bytes(sb, sh->err, strnlen(sh->err, sizeof(sh->err)), sizeof(sh->err));
        sb_adds(sb, "</p>\n");
    }
}

/* One line per target whose last scan failed: its locks below are the
 * last good scan's, "last known N ago", and why it cannot see now; and
 * one per cluster shard that an up target's last scan could not read. */
static void
stale_note(struct strbuf *sb, const struct view *v)
{
    char ago[32];
    size_t i;

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;

        if (s != NULL && s->ok)
            stale_shards(sb, v->targets[i].name, s, v->now_ms);
        if (s == NULL || s->ok)
            continue;
        sb_adds(sb, "<p class=\"stale\">target ");
        esc_str(sb, v->targets[i].name);
        if (s->last_good != NULL) {
            duration_format(v->now_ms - s->last_success_ms, ago, sizeof(ago));
            sb_addf(sb, ": <b>last known %s ago</b> (its locks here are from then); ", ago);
        } else {
            sb_adds(sb, ": <b>never scanned</b> (its locks are unknown); ");
        }
        sb_adds(sb, "scans failing: ");
        esc_bytes(sb, s->err, strnlen(s->err, sizeof(s->err)), sizeof(s->err));
        sb_adds(sb, "</p>\n");
    }
}

static void
render_state(struct strbuf *sb, const struct view *v, const char *config_path, size_t si)
{
    struct row *rows = NULL;
    size_t nrows = 0, cap = 0, i, j, shown;
    uint64_t total = 0;
    char age[32], ttl[32], when[40];

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = snapshot_shown(v->targets[i].snap);

        if (s == NULL)
            continue;
        total += state_total(s, states[si].flag);
        for (j = 0; j < s->nlocks; j++) {
            if (!(s->locks[j]->states & states[si].flag))
                continue;
            if (nrows == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                struct row *nr = realloc(rows, ncap * sizeof(*rows));

                if (nr == NULL) {
                    sb->failed = true;
                    free(rows);
                    return;
                }
                rows = nr;
                cap = ncap;
            }
            rows[nrows].s = s;
            rows[nrows].l = s->locks[j];
            nrows++;
        }
    }
    if (nrows > 1)
        qsort(rows, nrows, sizeof(*rows), row_cmp);

    sb_addf(sb, "<section id=\"%s\"><h2>%s (%" PRIu64 ")</h2>\n<p class=\"meta\">%s</p>\n",
            states[si].id, states[si].title, total, states[si].why);
    stale_note(sb, v);
    if (nrows == 0) {
        sb_adds(sb, "<p class=\"none\">None.</p></section>\n");
        free(rows);
        return;
    }
    sb_adds(sb, "<table><thead><tr><th>key</th><th>target</th><th>class</th><th>format</th>"
            "<th>holder</th><th>host / pid</th><th>age</th><th>TTL</th><th>waiting</th>"
            "<th>lockctl</th>"
            "</tr></thead><tbody>\n");
    shown = nrows < (size_t)v->top_offenders ? nrows : (size_t)v->top_offenders;
    for (i = 0; i < shown; i++) {
        const struct snapshot *s = rows[i].s;
        const struct snap_lock *l = rows[i].l;
        const struct snap_holder *h = release_holder(l, states[si].flag);

        duration_format(v->now_ms - l->first_seen_ms, age, sizeof(age));
        fmt_utc(when, sizeof(when), l->first_seen_ms);
        if (l->pttl_ms < 0)
            snprintf(ttl, sizeof(ttl), "none");
        else
            duration_format(l->pttl_ms, ttl, sizeof(ttl));
        sb_adds(sb, "<tr><td class=\"key\">");
        esc_bytes(sb, l->key, l->key_len, KEY_SHOW_MAX);
        sb_adds(sb, "</td><td>");
        esc_str(sb, s->target);
        if (stale_target(v, s) || l->stale_since_ms != 0)
            sb_adds(sb, " <span class=\"stale\">(last known)</span>");
        sb_adds(sb, "</td><td>");
        esc_bytes(sb, s->classes[l->class_idx], strlen(s->classes[l->class_idx]), KEY_SHOW_MAX);
        sb_adds(sb, "</td><td>");
        esc_str(sb, formats_table[l->format].name);
        /* where the name came from: a guess is marked as one */
        sb_adds(sb, l->format_source == FMT_SOURCE_DECLARED ? " (declared)"
                : l->format_source == FMT_SOURCE_PROVEN ? "" : " (guessed)");
        if (l->format_contradicts)
            sb_adds(sb, " <b>not as declared</b>");
        sb_adds(sb, "</td><td class=\"key\">");
        if (h == NULL && l->nholders > 0)
            h = &l->holders[0];
        if (h != NULL) {
            esc_bytes(sb, h->id, h->id_len, HOLDER_SHOW_MAX);
            if (l->max_count > 1)
                sb_addf(sb, " (\xc3\x97%" PRId64 ")", h->count);
            if (l->holders_total > 1)
                sb_addf(sb, " +%" PRIu32 " more", l->holders_total - 1);
        } else {
            sb_adds(sb, "unknown");
        }
        sb_adds(sb, "</td><td>");
        if (l->host_len > 0)
            esc_bytes(sb, l->host, l->host_len, HOLDER_SHOW_MAX);
        if (l->pid > 0)
            sb_addf(sb, "%s%" PRId32, l->host_len > 0 ? " / " : "pid ", l->pid);
        if (l->host_len == 0 && l->pid <= 0)
            sb_adds(sb, "\xe2\x80\x94");
        sb_addf(sb, "</td><td title=\"holder first seen %s\">%s</td><td>%s</td>", when, age,
                ttl);
        /* where Redis shows it (a fair queue, wake-channel subscribers) */
        if (l->flags & SNAP_WAITERS_KNOWN)
            sb_addf(sb, "<td title=\"%s\">%" PRIu32 "</td>", (l->flags & SNAP_WAITERS_QUEUE)
                    ? "fair-lock queue" : "clients subscribed to its wake channel", l->waiters);
        else
            sb_adds(sb, "<td title=\"its clients poll: Redis does not show them\">"
                    "\xe2\x80\x94</td>");
        commands_cell(sb, config_path, s, l, states[si].flag);
        sb_adds(sb, "</tr>\n");
    }
    sb_adds(sb, "</tbody></table>\n");
    if (total > shown)
        sb_addf(sb, "<p class=\"meta\">%" PRIu64 " more: <a href=\"api/v1/locks?state=%s"
                "&amp;limit=10000\">/api/v1/locks?state=%s</a></p>\n", total - shown,
                states[si].id, states[si].id);
    sb_adds(sb, "</section>\n");
    free(rows);
}

/* The targets other shards watch (shard = I/N), each linked to its
 * shard's page when shard_peers names it, and marked when that page's
 * agent counts as down (agent/peers.h). */
static void
render_away(struct strbuf *sb, const struct view *v)
{
    const struct peer_view *pv;
    size_t i;

    for (i = 0; i < v->naway; i++) {
        const char *peer = view_peer(v, v->away[i].shard);

        sb_adds(sb, "<tr><td>");
        esc_str(sb, v->away[i].name);
        sb_addf(sb, "</td><td class=\"elsewhere\">elsewhere</td><td colspan=\"8\">"
                "watched by shard %d/%d", v->away[i].shard, v->shard_total);
        if (peer != NULL) {
            sb_adds(sb, ": <a href=\"");
            esc_str(sb, peer);
            sb_adds(sb, "/\">");
            esc_str(sb, peer);
            sb_adds(sb, "</a>");
        }
        if ((pv = view_peer_down(v, v->away[i].shard)) != NULL) {
            struct strbuf said;

            sb_init(&said, 1024);
            render_peer_down(&said, v, pv);
            sb_adds(sb, " <span class=\"down\">&mdash; ");
            esc_str(sb, said.buf != NULL ? said.buf : "");
            sb_adds(sb, ": watched by no agent unless a replica of it is up</span>");
            sb_release(&said);
        }
        sb_adds(sb, "</td></tr>\n");
    }
}

static void
render_targets(struct strbuf *sb, const struct view *v)
{
    size_t i, k;
    char ago[32], took[32], when[40];

    sb_adds(sb, "<section id=\"targets\"><h2>Targets</h2>\n<table><thead><tr><th>target</th>"
            "<th>state</th><th>last scan</th><th>duration</th><th>keys</th><th>locks</th>"
            "<th>leaked</th><th>long</th><th>reentrant_high</th><th>error</th></tr></thead>"
            "<tbody>\n");
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;

        sb_adds(sb, "<tr><td>");
        esc_str(sb, v->targets[i].name);
        if (s == NULL) {
            sb_adds(sb, "</td><td class=\"waiting\">waiting</td><td>not yet</td>"
                    "<td></td><td></td><td></td><td></td><td></td><td></td><td></td></tr>\n");
            continue;
        }
        duration_format(v->now_ms - s->finished_ms, ago, sizeof(ago));
        /* the house format (alerts/text.h), as every duration on the page */
        duration_format((int64_t)(s->duration_s * 1000.0), took, sizeof(took));
        fmt_utc(when, sizeof(when), s->finished_ms);
        sb_addf(sb, "</td><td class=\"%s\">%s</td><td title=\"%s\">%s ago</td>"
                "<td>%s</td><td>%" PRIu64 "</td>",
                s->ok ? "up" : "down", s->ok ? "up" : "down", when, ago, took,
                s->keys_examined);
        if (s->ok) {
            sb_addf(sb, "<td>%" PRIu64 "</td>", s->locks_total);
            for (k = 0; k < NSTATES; k++)
                sb_addf(sb, "<td>%" PRIu64 "</td>", state_total(s, states[k].flag));
            /* values that contradict their format_patterns: flagged */
            if (s->format_contradictions > 0)
                sb_addf(sb, "<td>%" PRIu64 " lock%s not of the format format_patterns "
                        "declare</td>", s->format_contradictions,
                        s->format_contradictions == 1 ? "" : "s");
            else
                sb_adds(sb, "<td></td>");
        } else if (s->last_good != NULL) {
            /* what was known stays, said to be old */
            sb_addf(sb, "<td class=\"stale\">%" PRIu64 "</td>", s->last_good->locks_total);
            for (k = 0; k < NSTATES; k++)
                sb_addf(sb, "<td class=\"stale\">%" PRIu64 "</td>",
                        state_total(s->last_good, states[k].flag));
            duration_format(v->now_ms - s->last_success_ms, ago, sizeof(ago));
            sb_addf(sb, "<td>last known %s ago; ", ago);
            esc_bytes(sb, s->err, strnlen(s->err, sizeof(s->err)), sizeof(s->err));
            sb_adds(sb, "</td>");
        } else {
            sb_adds(sb, "<td></td><td></td><td></td><td></td><td>");
            esc_bytes(sb, s->err, strnlen(s->err, sizeof(s->err)), sizeof(s->err));
            sb_adds(sb, "</td>");
        }
        sb_adds(sb, "</tr>\n");
    }
    render_away(sb, v);
    sb_adds(sb, "</tbody></table></section>\n");
}

static const char *
label(json_t *alert, const char *group, const char *name)
{
    const char *s = json_string_value(json_object_get(json_object_get(alert, group), name));

    return s != NULL ? s : "";
}

/* Where an alert goes on the page: its kind's severity (critical first),
 * then its kind's row in ALERT_KINDS (leaked, long, reentrant, wait, ...);
 * an unknown name first of all.  Not the names: the table's columns. */
static int
alert_rank(json_t *alert)
{
    const char *name = label(alert, "labels", "alertname");
    int n;

    for (n = 0; n < ALERT_NAMES; n++)
        if (strcmp(name, alert_name_str((enum alert_name)n)) == 0)
            return 1 + (int)alert_severity_of((enum alert_name)n) * ALERT_NAMES + n;
    return 0;
}

/* Worst first; within one kind the oldest first (startsAt is ISO 8601 UTC
 * with milliseconds: it sorts as text). */
static int
alert_cmp(const void *pa, const void *pb)
{
    json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
    int ra = alert_rank(a), rb = alert_rank(b);
    const char *sa = json_string_value(json_object_get(a, "startsAt"));
    const char *sb = json_string_value(json_object_get(b, "startsAt"));

    if (ra != rb)
        return ra < rb ? -1 : 1;
    return strcmp(sa != NULL ? sa : "", sb != NULL ? sb : "");
}

static void
render_alerts(struct strbuf *sb, const struct view *v, size_t *firing)
{
    json_t *root = NULL, *list, *a, **order;
    char *body = NULL;
    size_t len = 0, i;

    *firing = 0;
    sb_adds(sb, "<section id=\"alerts\">");
    if (v->alerts == NULL) {
        sb_adds(sb, "<h2>Alerts firing</h2><p class=\"none\">Alerting is not running.</p>"
                "</section>\n");
        return;
    }
    if (alerts_render_json(v->alerts, &body, &len) == -1 ||
        (root = json_loadb(body, len, 0, NULL)) == NULL) {
        free(body);
        sb->failed = true;
        return;
    }
    free(body);
    list = json_object_get(root, "alerts");
    *firing = json_array_size(list);
    sb_addf(sb, "<h2>Alerts firing (%zu)</h2>\n", *firing);
    if (*firing == 0) {
        sb_adds(sb, "<p class=\"none\">None.</p></section>\n");
        json_decref(root);
        return;
    }
    /* worst first: the one that paged is at the top, not below the fold */
    if ((order = malloc(*firing * sizeof(*order))) == NULL) {
        sb->failed = true;
        json_decref(root);
        return;
    }
    json_array_foreach(list, i, a)
        order[i] = a;
    qsort(order, *firing, sizeof(*order), alert_cmp);
    sb_adds(sb, "<table><thead><tr><th>alert</th><th>target</th><th>class</th><th>key</th>"
            "<th>summary</th><th>since</th></tr></thead><tbody>\n");
    for (i = 0; i < *firing && i < STATUS_ALERTS_MAX; i++) {
        a = order[i];
        sb_adds(sb, "<tr><td class=\"firing\">");
        esc_str(sb, label(a, "labels", "alertname"));
        sb_adds(sb, "</td><td>");
        esc_str(sb, label(a, "labels", "target"));
        sb_adds(sb, "</td><td>");
        esc_str(sb, label(a, "labels", "class"));
        sb_adds(sb, "</td><td class=\"key\">");
        esc_str(sb, label(a, "labels", "key"));
        sb_adds(sb, "</td><td>");
        esc_str(sb, label(a, "annotations", "summary"));
        sb_adds(sb, "</td><td>");
        esc_str(sb, json_string_value(json_object_get(a, "startsAt")) ?
                json_string_value(json_object_get(a, "startsAt")) : "");
        sb_adds(sb, "</td></tr>\n");
    }
    sb_adds(sb, "</tbody></table>\n");
    free(order);
    if (*firing > STATUS_ALERTS_MAX)
        sb_addf(sb, "<p class=\"meta\">%zu more: <a href=\"api/v1/alerts\">/api/v1/alerts</a>"
                "</p>\n", *firing - STATUS_ALERTS_MAX);
    sb_adds(sb, "</section>\n");
    json_decref(root);
}

/* The timeline's newest events, each row rendered while the ring is read
 * (under its lock: nothing here pushes) and shown newest first. */
struct event_rows {
    char *rows[STATUS_EVENTS_MAX];
    size_t lens[STATUS_EVENTS_MAX];
    size_t n;
    bool failed;
};

static void
event_row(const struct event *e, void *arg)
{
    struct event_rows *er = arg;
    struct strbuf row;
    char when[40];

    if (er->n >= STATUS_EVENTS_MAX)
        return;
    sb_init(&row, 64 * 1024);
    fmt_utc(when, sizeof(when), e->at_ms);
    sb_adds(&row, "<tr><td>");
    esc_str(&row, when);
    sb_addf(&row, "</td><td class=\"%s\">", strcmp(event_kind_severity(e->kind), "critical")
            == 0 ? "firing" : "waiting");
    esc_str(&row, event_kind_name(e->kind));
    sb_adds(&row, "</td><td>");
    esc_bytes(&row, e->target, strlen(e->target), HOLDER_SHOW_MAX);
    sb_adds(&row, "</td><td class=\"key\">");
    esc_bytes(&row, e->key, e->keylen, KEY_SHOW_MAX);
    if (e->key_cut && e->keylen <= KEY_SHOW_MAX)
        sb_adds(&row, "\xe2\x80\xa6");
    sb_adds(&row, "</td><td class=\"key\">");
    esc_bytes(&row, e->holder, e->holderlen, HOLDER_SHOW_MAX);
    sb_adds(&row, "</td><td>");
    esc_bytes(&row, e->detail, strlen(e->detail), KEY_SHOW_MAX);
    sb_adds(&row, "</td></tr>\n");
    if (sb_failed(&row) || (er->rows[er->n] = sb_detach(&row, &er->lens[er->n])) == NULL)
        er->failed = true;
    else
        er->n++;
    sb_release(&row);
}

static void
render_events(struct strbuf *sb)
{
    struct event_rows er;
    uint64_t last = events_last_seq();
    size_t i;

    memset(&er, 0, sizeof(er));
    events_each(last > STATUS_EVENTS_MAX ? last - STATUS_EVENTS_MAX : 0, STATUS_EVENTS_MAX,
                event_row, &er);
    sb_addf(sb, "<section id=\"events\"><h2>Lock events (%zu newest)</h2>\n", er.n);
    if (er.n == 0)
        sb_adds(sb, "<p class=\"none\">None since the agent started.</p>\n");
    else
        sb_adds(sb, "<table><thead><tr><th>time</th><th>kind</th><th>target</th><th>key</th>"
                "<th>holder</th><th>what</th></tr></thead><tbody>\n");
    for (i = er.n; i > 0; i--) {
        sb_add(sb, er.rows[i - 1], er.lens[i - 1]);
        free(er.rows[i - 1]);
    }
    if (er.n > 0)
        sb_addf(sb, "</tbody></table>\n<p class=\"meta\">Every kept event (the newest %d): "
                "<a href=\"api/v1/events\">/api/v1/events</a>, lockctl events "
                "(docs/events.md).</p>\n", EVENTS_MAX);
    sb_adds(sb, "</section>\n");
    if (er.failed)
        sb->failed = true;
}

static void
render_page(struct strbuf *sb, const struct view *v, const char *config_path)
{
    struct strbuf body;
    size_t i, up = 0, stale = 0, unknown = 0, firing = 0, si;
    uint64_t bad[NSTATES] = { 0 };
    char now[40];

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = snapshot_shown(v->targets[i].snap);

        if (v->targets[i].snap != NULL && v->targets[i].snap->ok)
            up++;
        else if (s != NULL)
            stale++;
        else                    /* no good scan yet: nothing to show */
            unknown++;
        for (si = 0; s != NULL && si < NSTATES; si++)
            bad[si] += state_total(s, states[si].flag);
    }
    /* the sections first, so the summary at the top can count the alerts */
    sb_init(&body, STATUS_MAX_BYTES);
    render_targets(&body, v);
    render_alerts(&body, v, &firing);
    render_events(&body);
    for (si = 0; si < NSTATES; si++)
        render_state(&body, v, config_path, si);

    fmt_utc(now, sizeof(now), v->now_ms);
    sb_addf(sb, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"refresh\" content=\"%d\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>lockwatch: %" PRIu64 " leaked, %zu alert%s</title>\n<style>%s</style>"
            "</head>\n<body>\n<header><h1>lockwatch</h1>\n",
            STATUS_REFRESH_S, bad[0], firing, firing == 1 ? "" : "s", style);
    sb_addf(sb, "<p class=\"summary\"><span>targets up: <b>%zu / %zu</b></span>"
            "<span>alerts firing: <b>%zu</b></span>", up, v->ntargets, firing);
    for (si = 0; si < NSTATES; si++)
        sb_addf(sb, "<span>%s: <b>%" PRIu64 "</b>%s</span>", states[si].id, bad[si],
                stale > 0 ? " (incl. last known)" : "");
    if (stale > 0)
        sb_addf(sb, "<span class=\"stale\">blind: <b>%zu</b> target%s down, showing the "
                "last known view</span>", stale, stale == 1 ? "" : "s");
    if (unknown > 0)
        sb_addf(sb, "<span class=\"stale\">blind: <b>%zu</b> target%s with no good scan "
                "yet: nothing known, not counted</span>", unknown, unknown == 1 ? "" : "s");
    sb_addf(sb, "</p>\n<p class=\"meta\">lockwatchd %s, %s", LOCKWATCH_VERSION, now);
    if (v->replica != NULL) {
        sb_adds(sb, ", replica ");
        esc_str(sb, v->replica);
    }
    if (v->shard_total > 1)
        sb_addf(sb, ", shard %d/%d (%zu target%s elsewhere)", v->shard_index, v->shard_total,
                v->naway, v->naway == 1 ? "" : "s");
    if (v->has_leader) {
        char said[1024];

        leader_describe(&v->leader, said, sizeof(said));
        sb_adds(sb, "; leader: ");
        esc_str(sb, said);
    }
    sb_addf(sb, "; this page reloads every %d s."
            "</p>\n<nav><a href=\"metrics\">/metrics</a><a href=\"api/v1/locks\">"
            "/api/v1/locks</a><a href=\"api/v1/alerts\">/api/v1/alerts</a>"
            "<a href=\"api/v1/events\">/api/v1/events</a>"
            "<a href=\"api/v1/classes\">/api/v1/classes</a>"
            "<a href=\"api/v1/deadlocks\">/api/v1/deadlocks</a>"
            "<a href=\"api/v1/shard\">/api/v1/shard</a>"
            "<a href=\"readyz\">/readyz</a><a href=\"healthz\">/healthz</a></nav></header>\n",
            STATUS_REFRESH_S);
    if (sb_failed(&body))
        sb->failed = true;
    else
        sb_add(sb, body.buf, body.len);
    sb_release(&body);
    sb_adds(sb, "</body></html>\n");
}

/* The page for the agent's state now into a malloc'd body: 200, or 500
 * (out of memory, page over the cap) with *body NULL. */
static int
status_page(struct agent *a, char **body, size_t *len)
{
    struct strbuf sb;
    struct view v;
    char *config_path = NULL;

    *body = NULL;
    *len = 0;
    pthread_mutex_lock(&a->mu);
    if (a->cfg != NULL && a->cfg->path != NULL)
        config_path = strdup(a->cfg->path);
    pthread_mutex_unlock(&a->mu);
    if (agent_view(a, &v) == -1) {
        free(config_path);
        return 500;
    }
    sb_init(&sb, STATUS_MAX_BYTES);
    render_page(&sb, &v, config_path);
    view_release(&v);
    free(config_path);
    if (sb_failed(&sb)) {
        sb_release(&sb);
        return 500;
    }
    *body = sb_detach(&sb, len);
    return 200;
}

/* The page, with a policy that forbids any script: keys and holders on
 * it are bytes from Redis. */
void
serve_status(const struct http_request *rq, struct http_response *out)
{
    static const char *const headers[] = {
        "Content-Security-Policy", STATUS_CSP,
        "X-Content-Type-Options", "nosniff",
        NULL,
    };
    char *body;
    size_t len;

    if (status_page(rq->agent, &body, &len) != 200) {
        http_text(out, 500, "internal error: status page too large or out of memory\n");
        return;
    }
    out->status = 200;
    out->ctype = HTTP_CT_HTML;
    out->body = body;
    out->len = len;
    out->headers = headers;
}
