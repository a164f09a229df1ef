/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.c - the /metrics exposition (Prometheus text format 0.0.4).
 *
 * Every family is a row of metric_families[] (the table at the end; its
 * columns are described in metrics.h): render_metrics_http walks it,
 * writes each row's HELP and TYPE and calls the row's sample renderer.
 * Most rows share a renderer that reads one field of a snapshot, a class,
 * a shard or a counter set at the row's offset, so a new metric of that
 * shape is one row; a family with labels of its own has its renderer
 * above the table (or in metrics_targets.c or leasemetrics.c, declared
 * in metrics_impl.h, which keeps this file under the size limit), and
 * writes the row's name.
 *
 * Cardinality is bounded by construction: per-target and per-class series
 * only (classes are capped per target), plus lockwatch_lock_offender_info
 * for the top_offenders worst locks across all targets.  Label values are
 * sanitised to valid UTF-8 and escaped (\\, \", \n); offender keys and
 * holders are cut at a byte cap and, when cut or when sanitising changed
 * them (invalid UTF-8, a NUL), end in a short hash of the full bytes, so
 * two keys never collapse into one series.
 *
 * Lock gauges come from each target's last full scan, which runs on its
 * own schedule (a SCAN of a large keyspace is too slow for a scrape); the
 * HELP texts say so.
 *
 * After the scan families come those of other sources, each left out
 * whole when this render has not got it: the wait families (histograms
 * and P99 per lock class, sample counters) from the view's copy of the
 * wait statistics, only when the agent ingests samples; the alert and
 * release counters, not in --once; and the HTTP server's own admission
 * counters, added by the /metrics route only (--once serves no HTTP).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/metrics.h"
#include "agent/http/metrics_impl.h"

#include "agent/http/guard.h"
#include "agent/http/release_http.h"
#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "agent/http/throttle.h"
#include "alerts/alerts.h"
#include "collectors/events/events.h"
#include "common/keytext.h"

static void
label_value(struct strbuf *sb, const char *p, size_t n)
{
    char stack[512], *tmp = stack;
    size_t need = KEYTEXT_SANITIZED_MAX(n), len, i;

    if (need > sizeof(stack) && (tmp = malloc(need)) == NULL) {
        sb->failed = true;
        return;
    }
    len = keytext_sanitize_text(tmp, need, p, n);
    for (i = 0; i < len; i++) {
        if (tmp[i] == '\\')
            sb_add(sb, "\\\\", 2);
        else if (tmp[i] == '"')
            sb_add(sb, "\\\"", 2);
        else if (tmp[i] == '\n')
            sb_add(sb, "\\n", 2);
        else
            sb_add(sb, tmp + i, 1);
    }
    if (tmp != stack)
        free(tmp);
}

void
label_str(struct strbuf *sb, const char *s)
{
    label_value(sb, s, strlen(s));
}

/* A label of at most max bytes: longer values become prefix + "…#hash",
 * and so do values that sanitising would change (each invalid byte grows
 * to a 3-byte U+FFFD, and so does a control byte), since "a\xff" and
 * "a\xfe" would otherwise both be "a\uFFFD" and one series. */
static void
label_capped(struct strbuf *sb, const char *p, size_t n, size_t max)
{
    char tail[32];
    size_t cut;

    if (n <= max && keytext_text_clean(p, n)) {
        label_value(sb, p, n);
        return;
    }
    cut = keytext_utf8_prefix(p, n, n <= max ? n : max - 20);
    label_value(sb, p, cut);
    snprintf(tail, sizeof(tail), "\xe2\x80\xa6#%016" PRIx64, keytext_hash(p, n));
    sb_adds(sb, tail);
}

void
target_label(struct strbuf *sb, const char *name, const char *target)
{
    sb_adds(sb, name);
    sb_adds(sb, "{target=\"");
    label_str(sb, target);
    sb_adds(sb, "\"");
}

void
target_class_label(struct strbuf *sb, const char *name, const char *target,
                   const char *cls)
{
    target_label(sb, name, target);
    sb_adds(sb, ",class=\"");
    label_str(sb, cls);
    sb_adds(sb, "\"");
}

/* A class with no lock now (the preset "other", typically) gets no series. */
static bool
class_used(const struct snap_class *c)
{
    size_t f;

    for (f = 0; f < FORMATS_MAX; f++)
        if (c->locks[f] != 0)
            return true;
    return false;
}

/* A target has locks to show once a scan succeeded: after a failure,
 * the last good scan's (stale; lockwatch_target_up says 0), so a series
 * does not vanish, nor an alert on it resolve, while the agent is blind.
 * Lock series read snapshot_shown(), never the failed snapshot. */
static bool
has_locks(const struct view_target *t)
{
    return snapshot_shown(t->snap) != NULL;
}

/* --- the shared renderers: a value the row points at, per target, class,
 * shard, or once ---------------------------------------------------------- */

/* The value at offset mf->at of p, as mf->value says, and the line's end. */
static void
add_value(struct strbuf *sb, const void *p, const struct metric_family *mf)
{
    const char *at = (const char *)p + mf->at;
    uint64_t u;
    int64_t i;
    size_t z;
    double d;
    bool b;

    switch (mf->value) {
    case VAL_U64:
        memcpy(&u, at, sizeof(u));
        sb_addf(sb, "%" PRIu64 "\n", u);
        break;
    case VAL_I64:
        memcpy(&i, at, sizeof(i));
        sb_addf(sb, "%" PRId64 "\n", i);
        break;
    case VAL_SIZE:
        memcpy(&z, at, sizeof(z));
        sb_addf(sb, "%zu\n", z);
        break;
    case VAL_BOOL:
        memcpy(&b, at, sizeof(b));
        sb_addf(sb, "%d\n", b ? 1 : 0);
        break;
    case VAL_SECONDS:
        memcpy(&d, at, sizeof(d));
        /* a millisecond clock's 0.001 reads 0.001, not 0.001000 */
        sb_add_decimal(sb, d, 6);
        sb_adds(sb, "\n");
        break;
    case VAL_MS:
        memcpy(&i, at, sizeof(i));
        sb_addf(sb, "%.3f\n", (double)i / 1000.0);
        break;
    }
}

/* Which targets a per-target row has a series for. */
enum target_filter {
    EVERY_TARGET,               /* all; 0 for a target not scanned yet */
    SCANNED_TARGETS,            /* those with a snapshot, ok or not */
    UP_TARGETS,                 /* with a good scan to show (the last, or the
                                 * last good one: stale) */
};

/* A field of struct snapshot (mf->at), per target. */
static void
target_values(struct metrics_out *o, const struct metric_family *mf, enum target_filter which)
{
    static const struct snapshot none;  /* every counter 0 */
    const struct view *v = o->v;
    size_t i;

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = which == UP_TARGETS ? snapshot_shown(v->targets[i].snap)
            : v->targets[i].snap;

        if ((which != EVERY_TARGET && s == NULL) ||
            (which == UP_TARGETS && !has_locks(&v->targets[i])))
            continue;
        target_label(o->sb, mf->name, v->targets[i].name);
        sb_adds(o->sb, "} ");
        add_value(o->sb, s != NULL ? s : &none, mf);
    }
}

static void
every_target(struct metrics_out *o, const struct metric_family *mf)
{
    target_values(o, mf, EVERY_TARGET);
}

static void
scanned_targets(struct metrics_out *o, const struct metric_family *mf)
{
    target_values(o, mf, SCANNED_TARGETS);
}

static void
up_targets(struct metrics_out *o, const struct metric_family *mf)
{
    target_values(o, mf, UP_TARGETS);
}

/* A field of struct snap_class (mf->at), per (target, class) of the
 * targets whose last scan succeeded. */
static void
class_values(struct metrics_out *o, const struct metric_family *mf)
{
    const struct view *v = o->v;
    size_t i, c;

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = snapshot_shown(v->targets[i].snap);

        if (!has_locks(&v->targets[i]))
            continue;
        for (c = 0; c < s->nclasses && c < s->class_cap; c++) {
            const struct snap_class *st = &s->class_stats[c];

            if (!class_used(st))
                continue;
            target_class_label(o->sb, mf->name, s->target, s->classes[c]);
            sb_adds(o->sb, "} ");
            add_value(o->sb, st, mf);
        }
    }
}

static void
shard_label(struct strbuf *sb, const char *name, const char *target,
            const struct snap_shard *sh)
{
    target_label(sb, name, target);
    sb_adds(sb, ",shard=\"");
    label_str(sb, sh->shard);
    sb_adds(sb, "\",node=\"");
    label_str(sb, sh->node);
    sb_adds(sb, "\"");
}

/*
 * A field of struct snap_shard (mf->at), per shard of the cluster
 * targets' last scans.  Bounded by the shards of the cluster: shard is
 * the slot ranges (stable across a failover), node the address scanned
 * (a failover replaces the series, it does not add to them: every scan
 * lists only the current shards).
 */
static void
shard_values(struct metrics_out *o, const struct metric_family *mf)
{
    const struct view *v = o->v;
    size_t i, k;

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;

        for (k = 0; s != NULL && k < s->nshards; k++) {
            shard_label(o->sb, mf->name, s->target, &s->shards[k]);
            sb_adds(o->sb, "} ");
            add_value(o->sb, &s->shards[k], mf);
        }
    }
}

/* A field (mf->at) of the row's source, one series without labels. */
static void
scalar(struct metrics_out *o, const struct metric_family *mf)
{
    sb_adds(o->sb, mf->name);
    sb_adds(o->sb, " ");
    add_value(o->sb, o->source[mf->source], mf);
}

/* Datagrams rejected by the key check, by reason (a row of SRC_WAIT_KEYED:
 * only while [samples] key_file is set). */
static void
samples_rejected(struct metrics_out *o, const struct metric_family *mf)
{
    const struct waitstats_view *w = o->v->wait;
    int k;

    for (k = 0; k < SAMPLEAUTH_REJECTS; k++)
        sb_addf(o->sb, "%s{reason=\"%s\"} %" PRIu64 "\n", mf->name,
                sampleauth_reason_str((enum sampleauth_verdict)k), w->rejected[k]);
}

/* waiting and lost lines, by kind. */
static void
samples_events(struct metrics_out *o, const struct metric_family *mf)
{
    const struct waitstats_view *w = o->v->wait;
    int k;

    for (k = 0; k < WS_EVENTS; k++)
        sb_addf(o->sb, "%s{kind=\"%s\"} %" PRIu64 "\n", mf->name,
                waitstats_event_names[k], w->events[k]);
}

/* --- targets and their last scans ------------------------------------------ */

static void
build_info(struct metrics_out *o, const struct metric_family *mf)
{
    sb_addf(o->sb, "%s{version=\"%s\"} 1\n", mf->name, LOCKWATCH_VERSION);
}

static void
target_up(struct metrics_out *o, const struct metric_family *mf)
{
    size_t i;

    for (i = 0; i < o->v->ntargets; i++) {
        target_label(o->sb, mf->name, o->v->targets[i].name);
        sb_addf(o->sb, "} %d\n",
                o->v->targets[i].snap != NULL && o->v->targets[i].snap->ok ? 1 : 0);
    }
}

/* When the last good scan finished, for the targets that had one: the
 * age of the lock series while target_up is 0. */
static void
last_success(struct metrics_out *o, const struct metric_family *mf)
{
    size_t i;

    for (i = 0; i < o->v->ntargets; i++) {
        const struct snapshot *s = o->v->targets[i].snap;

        if (s == NULL || s->last_success_ms == 0)
            continue;
        target_label(o->sb, mf->name, o->v->targets[i].name);
        sb_adds(o->sb, "} ");
        add_value(o->sb, s, mf);
    }
}

static void
scans_by_result(struct metrics_out *o, const struct metric_family *mf)
{
    size_t i;

    for (i = 0; i < o->v->ntargets; i++) {
        const struct snapshot *s = o->v->targets[i].snap;

        target_label(o->sb, mf->name, o->v->targets[i].name);
        sb_addf(o->sb, ",result=\"ok\"} %" PRIu64 "\n", s ? s->counters.scans_ok : 0);
        target_label(o->sb, mf->name, o->v->targets[i].name);
        sb_addf(o->sb, ",result=\"error\"} %" PRIu64 "\n", s ? s->counters.scans_error : 0);
    }
}

static void
read_errors_by_kind(struct metrics_out *o, const struct metric_family *mf)
{
    size_t i, k;

    for (i = 0; i < o->v->ntargets; i++) {
        const struct snapshot *s = o->v->targets[i].snap;

        /* a kind appears once it happened: 8 zero series a target for
         * what nearly never happens would be noise */
        for (k = 0; s != NULL && k < SCAN_READ_KINDS; k++) {
            if (s->counters.read_errors[k] == 0)
                continue;
            target_label(o->sb, mf->name, o->v->targets[i].name);
            sb_addf(o->sb, ",kind=\"%s\"} %" PRIu64 "\n",
                    scan_read_error_name((enum scan_read_error)k), s->counters.read_errors[k]);
        }
    }
}

/* --- locks ------------------------------------------------------------------ */

static void
locks_by_format(struct metrics_out *o, const struct metric_family *mf)
{
    size_t i, c, f;

    for (i = 0; i < o->v->ntargets; i++) {
        const struct snapshot *s = snapshot_shown(o->v->targets[i].snap);

        if (!has_locks(&o->v->targets[i]))
            continue;
        for (c = 0; c < s->nclasses && c < s->class_cap; c++)
            for (f = 0; f < formats_count && f < FORMATS_MAX; f++) {
                if (s->class_stats[c].locks[f] == 0)
                    continue;
                target_class_label(o->sb, mf->name, s->target, s->classes[c]);
                sb_adds(o->sb, ",format=\"");
                label_str(o->sb, formats_table[f].name);
                sb_addf(o->sb, "\"} %" PRIu64 "\n", s->class_stats[c].locks[f]);
            }
    }
}

struct offender {
    const struct snapshot *s;
    const struct snap_lock *l;
};

/* Merge the targets' worst-first retained locks into the global top n. */
static size_t
pick_offenders(const struct view *v, struct offender *out, size_t n)
{
    size_t *pos, got = 0, i;

    pos = calloc(v->ntargets ? v->ntargets : 1, sizeof(*pos));
    if (pos == NULL)
        return 0;
    while (got < n) {
        const struct snap_lock *best = NULL;
        size_t bi = 0;

        for (i = 0; i < v->ntargets; i++) {
            const struct snapshot *s = snapshot_shown(v->targets[i].snap);
            const struct snap_lock *l;

            if (!has_locks(&v->targets[i]) || pos[i] >= s->nlocks)
                continue;
            l = s->locks[pos[i]];
            /* worst first: past the first healthy lock there are no more */
            if (!(l->states & LOCK_BAD))
                continue;
            if (best == NULL || snapshot_worse(l, best)) {
                best = l;
                bi = i;
            }
        }
        if (best == NULL)
            break;
        out[got].s = snapshot_shown(v->targets[bi].snap);
        out[got].l = best;
        got++;
        pos[bi]++;
    }
    free(pos);
    return got;
}

/* The top_offenders worst locks across all targets, one series each. */
static void
offenders(struct metrics_out *o, const struct metric_family *mf)
{
    struct offender *off;
    size_t i, noff;

    if (o->v->top_offenders <= 0)
        return;
    off = calloc((size_t)o->v->top_offenders, sizeof(*off));
    if (off == NULL) {
        o->sb->failed = true;
        return;
    }
    noff = pick_offenders(o->v, off, (size_t)o->v->top_offenders);
    for (i = 0; i < noff; i++) {
        const struct snapshot *s = off[i].s;
        const struct snap_lock *l = off[i].l;

        target_label(o->sb, mf->name, s->target);
        sb_adds(o->sb, ",key=\"");
        label_capped(o->sb, l->key, l->key_len, OFFENDER_KEY_MAX);
        sb_adds(o->sb, "\",class=\"");
        label_str(o->sb, s->classes[l->class_idx]);
        sb_addf(o->sb, "\",state=\"%s\",holder=\"", snapshot_worst_state(l->states));
        if (l->nholders > 0)
            label_capped(o->sb, l->holders[0].id, l->holders[0].id_len, OFFENDER_HOLDER_MAX);
        sb_adds(o->sb, "\"} 1\n");
    }
    free(off);
}

/* --- [redlock] groups, from their last comparison (absent until a quorum
 * of members has been scanned) ---------------------------------------------- */

static void
redlock_inconsistent_keys(struct metrics_out *o, const struct metric_family *mf)
{
    size_t i;

    for (i = 0; i < o->v->ngroups; i++) {
        const struct redlock_report *r = o->v->groups[i].report;

        if (r == NULL || !r->judged)
            continue;
        sb_adds(o->sb, mf->name);
        sb_adds(o->sb, "{group=\"");
        label_str(o->sb, o->v->groups[i].name);
        sb_addf(o->sb, "\"} %" PRIu64 "\n", redlock_inconsistent(r));
    }
}

static void
redlock_keys_by_state(struct metrics_out *o, const struct metric_family *mf)
{
    static const char *const states[] = { "consistent", "split", "under_quorum", "pending" };
    size_t i, k;

    for (i = 0; i < o->v->ngroups; i++) {
        const struct redlock_report *r = o->v->groups[i].report;
        uint64_t n[4];

        if (r == NULL || !r->judged)
            continue;
        n[0] = r->consistent;
        n[1] = r->split;
        n[2] = r->under_quorum;
        n[3] = r->pending;
        for (k = 0; k < 4; k++) {
            sb_adds(o->sb, mf->name);
            sb_adds(o->sb, "{group=\"");
            label_str(o->sb, o->v->groups[i].name);
            sb_addf(o->sb, "\",state=\"%s\"} %" PRIu64 "\n", states[k], n[k]);
        }
    }
}

/* --- wait statistics, from the samples clients send ------------------------ */

/* A double as the shortest of %.15g / %.17g that reads back the same. */
void
add_double(struct strbuf *sb, const double d)
{
    char buf[40];

    snprintf(buf, sizeof(buf), "%.15g", d);
    if (strtod(buf, NULL) != d)
        snprintf(buf, sizeof(buf), "%.17g", d);
    sb_adds(sb, buf);
}

void
class_series(struct strbuf *sb, const char *name, const char *suffix, const char *cls,
             const char *outcome)
{
    sb_adds(sb, name);
    sb_adds(sb, suffix);
    sb_adds(sb, "{class=\"");
    label_str(sb, cls);
    sb_adds(sb, "\"");
    if (outcome != NULL)
        sb_addf(sb, ",outcome=\"%s\"", outcome);
}

void
wait_histogram(struct strbuf *sb, const char *name, const char *cls, const char *outcome,
               const struct wait_hist *h)
{
    uint64_t cum = 0;
    size_t i;

    for (i = 0; i <= WAITSTATS_NBOUNDS; i++) {
        cum += h->bucket[i];
        class_series(sb, name, "_bucket", cls, outcome);
        sb_addf(sb, ",le=\"%s\"} %" PRIu64 "\n",
                i < WAITSTATS_NBOUNDS ? waitstats_bounds_le[i] : "+Inf", cum);
    }
    class_series(sb, name, "_sum", cls, outcome);
    sb_adds(sb, "} ");
    add_double(sb, h->sum_us / 1e6);
    sb_adds(sb, "\n");
    class_series(sb, name, "_count", cls, outcome);
    sb_addf(sb, "} %" PRIu64 "\n", h->count);
}

/*
 * The wait families (SPEC "Metrics"; docs/line-protocol.md).  No target
 * label: samples come from clients, not from a scan.  Classes appear once
 * they had a sample and stay (their histograms are counters); a class
 * with waits gets all three outcomes, zeros included, so that rate() sees
 * the first timeout.  At most CLASS_MAX + 1 classes, so at most
 * 201 x (3 + 1) x 19 histogram series.
 */
static void
wait_histograms(struct metrics_out *o, const struct metric_family *mf)
{
    const struct waitstats_view *w = o->v->wait;
    size_t i;
    int k;

    for (i = 0; i < w->nclasses; i++) {
        if (!w->classes[i].has_wait)
            continue;
        for (k = 0; k < SAMPLE_OUTCOMES; k++)
            wait_histogram(o->sb, mf->name, w->classes[i].name,
                           sample_outcome_str((enum sample_outcome)k), &w->classes[i].wait[k]);
    }
}

static void
hold_histograms(struct metrics_out *o, const struct metric_family *mf)
{
    const struct waitstats_view *w = o->v->wait;
    size_t i;

    for (i = 0; i < w->nclasses; i++)
        if (w->classes[i].has_hold)
            wait_histogram(o->sb, mf->name, w->classes[i].name, NULL, &w->classes[i].hold);
}

static void
wait_p99(struct metrics_out *o, const struct metric_family *mf)
{
    const struct waitstats_view *w = o->v->wait;
    size_t i;

    for (i = 0; i < w->nclasses; i++) {
        if (w->classes[i].window_count == 0)
            continue;
        class_series(o->sb, mf->name, "", w->classes[i].name, NULL);
        sb_adds(o->sb, "} ");
        add_double(o->sb, w->classes[i].window_p99_us / 1e6);
        sb_adds(o->sb, "\n");
    }
}

static void
wait_window_samples(struct metrics_out *o, const struct metric_family *mf)
{
    const struct waitstats_view *w = o->v->wait;
    size_t i;

    for (i = 0; i < w->nclasses; i++) {
        if (w->classes[i].window_count == 0)
            continue;
        class_series(o->sb, mf->name, "", w->classes[i].name, NULL);
        sb_addf(o->sb, "} %" PRIu64 "\n", w->classes[i].window_count);
    }
}

/* --- alerts, guarded releases and the HTTP server ------------------------- */

static void
alerts_firing(struct metrics_out *o, const struct metric_family *mf)
{
    int n;

    for (n = 0; n < ALERT_NAMES; n++)
        sb_addf(o->sb, "%s{alertname=\"%s\"} %zu\n", mf->name,
                alert_name_str((enum alert_name)n), o->alerts.firing[n]);
}

/* struct agent's releases[], indexed by RELEASES_* (release_http.h). */
static void
releases_by_result(struct metrics_out *o, const struct metric_family *mf)
{
    static const char *const results[RELEASES_RESULTS] = { "released", "refused", "error" };
    const atomic_uint_fast64_t *counters = o->v->releases;

    for (int i = 0; i < RELEASES_RESULTS; i++)
        sb_addf(o->sb, "%s{result=\"%s\"} %llu\n", mf->name, results[i],
                (unsigned long long)atomic_load(&counters[i]));
}

/* The agent's release-token throttle (throttle.h). */
static void
release_auth_failures(struct metrics_out *o, const struct metric_family *mf)
{
    struct throttle_stats st;

    throttle_stats((struct throttle *)o->source[SRC_THROTTLE], &st);
    sb_addf(o->sb, "%s{result=\"wrong_token\"} %" PRIu64 "\n", mf->name, st.wrong_token);
    sb_addf(o->sb, "%s{result=\"rate_limited\"} %" PRIu64 "\n", mf->name, st.rate_limited);
}

/* The process's ring of lock events (collectors/events/): every kind
 * always present. */
static void
events_by_kind(struct metrics_out *o, const struct metric_family *mf)
{
    for (int k = 0; k < EVENT_KIND_COUNT; k++)
        sb_addf(o->sb, "%s{kind=\"%s\"} %" PRIu64 "\n", mf->name,
                event_kind_name((enum event_kind)k), events_total((enum event_kind)k));
}

static void
events_dropped_total(struct metrics_out *o, const struct metric_family *mf)
{
    sb_addf(o->sb, "%s %" PRIu64 "\n", mf->name, events_dropped());
}

static void
http_rejected(struct metrics_out *o, const struct metric_family *mf)
{
    const struct guard_stats *st = o->source[SRC_HTTP];

    sb_addf(o->sb, "%s{reason=\"busy\"} %" PRIu64 "\n", mf->name, st->busy);
    sb_addf(o->sb, "%s{reason=\"client_limit\"} %" PRIu64 "\n", mf->name, st->over_client);
}

/* --- the table -------------------------------------------------------------- */

const struct metric_family metric_families[] = {
    { "lockwatch_build_info", "gauge", SRC_VIEW, build_info, 0, VAL_U64,
      "Build information; always 1." },
    METRICS_HA_ROWS        /* replicas and shards: metrics_impl.h */
    { "lockwatch_target_up", "gauge", SRC_VIEW, target_up, 0, VAL_U64,
      "1 if the last scan of the target succeeded, 0 if it failed or none finished yet." },
    { "lockwatch_scan_duration_seconds", "gauge", SRC_VIEW, scanned_targets,
      offsetof(struct snapshot, duration_s), VAL_SECONDS,
      "Wall time of the target's last full scan, pacing pauses included." },
    { "lockwatch_last_scan_timestamp_seconds", "gauge", SRC_VIEW, scanned_targets,
      offsetof(struct snapshot, finished_ms), VAL_MS,
      "Unix time the target's last scan finished (ok or not)." },
    { "lockwatch_target_last_success_timestamp_seconds", "gauge", SRC_VIEW, last_success,
      offsetof(struct snapshot, last_success_ms), VAL_MS,
      "Unix time the target's last successful scan finished: the age of the lock series "
      "shown while lockwatch_target_up is 0 (absent before the first)." },
    { "lockwatch_scans_total", "counter", SRC_VIEW, scans_by_result, 0, VAL_U64,
      "Full scans by result." },

    /* follow mode (keyspace notifications between full scans) */
    { "lockwatch_follow_active", "gauge", SRC_VIEW, scanned_targets,
      offsetof(struct snapshot, follow.active), VAL_BOOL,
      "1 while the target follows keyspace notifications between full scans, else 0." },
    { "lockwatch_follow_lag_seconds", "gauge", SRC_VIEW, scanned_targets,
      offsetof(struct snapshot, follow.lag_s), VAL_SECONDS,
      "Follow mode: first event to the publication of its change, last publication." },
    { "lockwatch_follow_events_total", "counter", SRC_VIEW, scanned_targets,
      offsetof(struct snapshot, follow.events_total), VAL_U64,
      "Keyspace notifications received for the target's lock and registry keys." },
    { "lockwatch_reconcile_fixed_keys_total", "counter", SRC_VIEW, scanned_targets,
      offsetof(struct snapshot, follow.fixed_total), VAL_U64,
      "Keys a full scan in follow mode found changed without a notification." },
    { "lockwatch_follow_overflows_total", "counter", SRC_VIEW, scanned_targets,
      offsetof(struct snapshot, follow.overflows_total), VAL_U64,
      "Times notifications were lost to a cap (the pending set's 65,536 keys or 16 MiB, a "
      "key over 128 KiB, a subscriber message over 1 MiB); each ends in a full scan." },

    /* cumulative scan counters */
    METRIC_FAMILIES_SCAN_COUNTERS  /* keys, vanished, ...: metrics_impl.h */
    { "lockwatch_scan_read_errors_total", "counter", SRC_VIEW, read_errors_by_kind, 0, VAL_U64,
      "Reads of a key's type or value refused with an error reply other than WRONGTYPE, "
      "by error code; each fails its scan." },
    { "lockwatch_locks_lost_total", "counter", SRC_VIEW, lost_by_cause, 0, VAL_U64,
      "Locks lost at a change of the target's server (cause: restart, failover, flush, "
      "swapdb): held "
      "in the last view before, gone with no release seen (or held by another holder) in the "
      "first after, their TTL not run out; each loss raises LockLostAtFailover." },
    { "lockwatch_reconnects_total", "counter", SRC_VIEW, reconnects_by_reason, 0, VAL_U64,
      "Kept Redis connections found closed by their peer while idle (reason: eof, reset, "
      "broken_pipe: the server's timeout, a proxy's idle timeout, a CLIENT KILL) and opened "
      "again at once, the command sent once more: no scan failed for them." },
    { "lockwatch_class_overflow_keys", "gauge", SRC_VIEW, up_targets,
      offsetof(struct snapshot, classes_overflowed), VAL_U64,
      "Keys counted in class \"other\" because the target reached its class cap (last scan)." },

    /* cluster targets, per shard of the last scan */
    { "lockwatch_shard_up", "gauge", SRC_VIEW, shard_values,
      offsetof(struct snap_shard, ok), VAL_BOOL,
      "Cluster targets: 1 if the shard (its slot ranges) was scanned on node in the "
      "target's last scan, 0 if that failed." },
    { "lockwatch_shard_scan_duration_seconds", "gauge", SRC_VIEW, shard_values,
      offsetof(struct snap_shard, duration_s), VAL_SECONDS,
      "Cluster targets: wall time of the shard's part of the last scan (shards are "
      "scanned in parallel)." },
    { "lockwatch_shard_scan_keys", "gauge", SRC_VIEW, shard_values,
      offsetof(struct snap_shard, keys), VAL_U64,
      "Cluster targets: keys examined on the shard in the last scan." },

    /* locks, per (target, class) */
    { "lockwatch_locks", "gauge", SRC_VIEW, locks_by_format, 0, VAL_U64,
      "Locks held now by class and format (from the last full scan)." },
    { "lockwatch_locks_leaked", "gauge", SRC_VIEW, class_values,
      offsetof(struct snap_class, leaked), VAL_U64,
      "Locks without a TTL for at least leak_grace (from the last full scan)." },
    { "lockwatch_locks_long_held", "gauge", SRC_VIEW, class_values,
      offsetof(struct snap_class, long_held), VAL_U64,
      "Locks held by the same holder for longer than max_hold (from the last full scan)." },
    { "lockwatch_lock_oldest_holder_seconds", "gauge", SRC_VIEW, class_values,
      offsetof(struct snap_class, oldest_ms), VAL_MS,
      "Age of the oldest current holder in the class (from the last full scan)." },
    { "lockwatch_lock_max_reentrancy", "gauge", SRC_VIEW, class_values,
      offsetof(struct snap_class, max_reentrancy), VAL_I64,
      "Highest reentrant hold count in the class (from the last full scan)." },
    { "lockwatch_lock_waiters", "gauge", SRC_VIEW, class_values,
      offsetof(struct snap_class, waiters), VAL_U64,
      "Clients waiting for the class's locks where Redis shows it: fair-lock queues and "
      "wake-channel subscribers, over the locks kept in detail (from the last full scan)." },
    { "lockwatch_lock_offender_info", "gauge", SRC_VIEW, offenders, 0, VAL_U64,
      "The top_offenders worst locks (leaked, long or reentrant_high); always 1." },

    { "lockwatch_redlock_inconsistent", "gauge", SRC_VIEW, redlock_inconsistent_keys, 0, VAL_U64,
      "Keys of the Redlock group whose nodes disagree now: different holders at the "
      "same time (split), or held on fewer than a quorum for longer than the TTL." },
    { "lockwatch_redlock_keys", "gauge", SRC_VIEW, redlock_keys_by_state, 0, VAL_U64,
      "Keys compared in the Redlock group's last comparison, by verdict (pending: under "
      "quorum for less than the TTL so far)." },

    /* samples from clients */
    { "lockwatch_samples_received_total", "counter", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, received), VAL_U64,
      "Sample lines received over UDP, valid or not (a datagram cut at 8192 bytes counts "
      "its cut part as one line); valid ones are in the wait and hold histograms." },
    { "lockwatch_samples_invalid_total", "counter", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, invalid), VAL_U64,
      "Sample lines dropped as malformed (also counted in "
      "lockwatch_samples_received_total)." },
    { "lockwatch_samples_class_overflow_total", "counter", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, class_overflowed), VAL_U64,
      "Valid samples counted in class \"other\" because a class cap refused their class "
      "(200 classes, 150 derived, 32 new per source)." },
    { "lockwatch_samples_sources", "gauge", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, sources), VAL_SIZE,
      "Sample senders (addresses) tracked for the per-source class budget (at most 256)." },
    { "lockwatch_samples_sources_over_budget", "gauge", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, sources_over_budget), VAL_SIZE,
      "Tracked senders that had a new class refused because their budget (32) was spent." },
    { "lockwatch_samples_rejected_total", "counter", SRC_WAIT_KEYED, samples_rejected, 0,
      VAL_U64, "Sample datagrams rejected whole by the [samples] key_file check, by reason "
      "(replay: a copy of one taken in the last 2 minutes)." },
    { "lockwatch_samples_replay_unchecked_total", "counter", SRC_WAIT_KEYED, scalar,
      offsetof(struct waitstats_view, replay_unchecked), VAL_U64,
      "Signed datagrams taken without the replay check: its cache was full (about 6,500 a "
      "second for 2 minutes)." },
    { "lockwatch_samples_events_total", "counter", SRC_WAIT, samples_events, 0, VAL_U64,
      "waiting and lost lines received, by kind (they add to no histogram)." },
    { "lockwatch_samples_waiting", "gauge", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, waiting_now), VAL_SIZE,
      "(owner, key) pairs whose latest waiting line is a start: owners waiting now." },
    { "lockwatch_samples_waiting_evicted_total", "counter", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, waiting_evicted), VAL_U64,
      "(owner, key) pairs evicted from the full 4096-pair waiting table (the oldest of the "
      "sender holding the most)." },
    { "lockwatch_samples_waiting_sources_shared_total", "counter", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, waiting_sources_shared), VAL_U64,
      "Sample datagrams whose sender found all 256 source numbers of the waiting table in use "
      "by other senders' pairs, so shared one number with the rest." },
    { "lockwatch_samples_waiting_superseded_total", "counter", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, waiting_superseded), VAL_U64,
      "waiting starts ended by a later acquire of their owner on another key (a process "
      "that died waiting)." },
    { "lockwatch_samples_waiting_late_acquires_total", "counter", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, waiting_late_acquires), VAL_U64,
      "Acquires read after their own release line (same owner, key and holder id, within "
      "5 s: reordered datagrams), not taken as holdings." },
    { "lockwatch_samples_dropped_datagrams_total", "counter", SRC_WAIT, scalar,
      offsetof(struct waitstats_view, kernel_drops), VAL_U64,
      "Sample datagrams the kernel dropped because the agent's receive buffer was full "
      "(in no other counter)." },
    { "lockwatch_acquire_wait_seconds", "histogram", SRC_WAIT, wait_histograms, 0, VAL_U64,
      "Time clients waited to acquire a lock, by lock class and outcome, since start." },
    { "lockwatch_hold_seconds", "histogram", SRC_WAIT, hold_histograms, 0, VAL_U64,
      "Time clients held a lock, by lock class, since start." },
    /* leases that ran out, and holders past them (issue 26; leasemetrics.c) */
    METRIC_FAMILIES_LEASE
    { "lockwatch_acquire_wait_p99_seconds", "gauge", SRC_WAIT, wait_p99, 0, VAL_U64,
      "P99 acquire wait (nearest rank, within 1%; all outcomes) over the last "
      "wait_window; absent for a class without waits in the window." },
    { "lockwatch_acquire_wait_window_samples", "gauge", SRC_WAIT, wait_window_samples, 0,
      VAL_U64,
      "Acquire waits (all outcomes) in the last wait_window, behind the P99 gauge." },

    /* leases and counts per class over time (issue 28; classmetrics.c) */
    METRIC_FAMILIES_TREND
    { "lockwatch_alerts_firing", "gauge", SRC_ALERTS, alerts_firing, 0, VAL_U64,
      "Alerts firing now, by alertname (every alertname is always present)." },
    { "lockwatch_alerts_suppressed", "gauge", SRC_ALERTS, scalar,
      offsetof(struct alerts_stats, suppressed), VAL_SIZE,
      "Alerts whose condition holds but that were not raised because 10000 already fire, "
      "or whose lock is counted but not kept in detail (past a target's worst 10000; "
      "last evaluation)." },
    { "lockwatch_alerts_events_unjudged_total", "counter", SRC_ALERTS, scalar,
      offsetof(struct alerts_stats, events_unjudged), VAL_U64,
      "Timeline events pushed out of its 1,024-event ring before the alert rules judged "
      "them (a burst of more in a second): a LockLeaseLost or LockLeaseOverrun among them "
      "was not raised." },
    METRICS_SINK_ROWS      /* the sinks' families: metrics_impl.h */
    METRICS_CONFIG_ROWS    /* the last reload's: metrics_impl.h */
    METRICS_GRAPH_ROWS     /* the wait-for graph's families: metrics_impl.h */
    { "lockwatch_releases_total", "counter", SRC_RELEASES, releases_by_result, 0, VAL_U64,
      "Guarded releases over HTTP (POST /api/v1/locks/release) by result; dry runs are not "
      "counted." },
    { "lockwatch_release_auth_failures_total", "counter", SRC_THROTTLE, release_auth_failures,
      0, VAL_U64,
      "Release requests refused before their body: wrong_token (a missing or wrong bearer "
      "token, 401/403) or rate_limited (429: too many wrong tokens from the address)." },

    /* the timeline of lock events (/api/v1/events, docs/events.md) */
    { "lockwatch_events_total", "counter", SRC_VIEW, events_by_kind, 0, VAL_U64,
      "Lock events pushed to the timeline since start, by kind (docs/events.md)." },
    { "lockwatch_events_dropped_total", "counter", SRC_VIEW, events_dropped_total, 0, VAL_U64,
      "Lock events pushed out of the full timeline (it keeps the newest 1024) or lost "
      "to a failed allocation." },

    METRICS_HTTP_ROWS      /* the HTTP server's admission: metrics_impl.h */
    METRICS_PROCESS_ROWS   /* process_* of the agent process: procmetrics.c */
};
const size_t metric_nfamilies = sizeof(metric_families) / sizeof(metric_families[0]);

int
render_metrics_http(const struct view *v, const struct guard_stats *http, struct strbuf *sb)
{
    struct metrics_out o;
    size_t i;

    memset(&o, 0, sizeof(o));
    o.sb = sb;
    o.v = v;
    o.source[SRC_VIEW] = v;
    o.source[SRC_WAIT] = v->wait;
    o.source[SRC_WAIT_KEYED] = v->wait != NULL && v->wait->keyed ? v->wait : NULL;
    o.source[SRC_RELEASES] = v->releases;
    o.source[SRC_THROTTLE] = v->throttle;
    o.source[SRC_HTTP] = http;
    o.source[SRC_TREND] = v->trend;
    o.source[SRC_LEASE] = v->lease;
    o.source[SRC_GRAPH] = v->graph;
    o.source[SRC_PROCESS] = http != NULL ? proc_sample_take(&o.proc, v->started_ms) : NULL;
    if (v->alerts != NULL) {
        if (alerts_stats(v->alerts, &o.alerts) == -1)
            sb->failed = true;
        else
            o.source[SRC_ALERTS] = &o.alerts;
    }
    for (i = 0; i < metric_nfamilies && !sb_failed(sb); i++) {
        const struct metric_family *mf = &metric_families[i];

        if (o.source[mf->source] == NULL)
            continue;
        sb_addf(sb, "# HELP %s %s\n# TYPE %s %s\n", mf->name, mf->help, mf->name, mf->type);
        mf->samples(&o, mf);
    }
    if (o.source[SRC_ALERTS] != NULL)
        alerts_stats_release(&o.alerts);
    return sb_failed(sb) ? -1 : 0;
}

int
render_metrics(const struct view *v, struct strbuf *sb)
{
    return render_metrics_http(v, NULL, sb);
}

void
serve_metrics(const struct http_request *rq, struct http_response *out)
{
    struct strbuf sb;
    struct view v;
    int rc;

    if (agent_view(rq->agent, &v) == -1) {
        http_text(out, 500, HTTP_OOM_TEXT);
        return;
    }
    sb_init(&sb, RENDER_MAX_BYTES);
    rc = render_metrics_http(&v, rq->http, &sb);
    view_release(&v);
    if (rc == -1) {
        sb_release(&sb);
        http_text(out, 500, "internal error: exposition too large or out of memory\n");
        return;
    }
    out->status = 200;
    out->ctype = HTTP_CT_METRICS;
    out->body = sb_detach(&sb, &out->len);
}
