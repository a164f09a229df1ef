/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.c - the /metrics exposition (Prometheus text format 0.0.4).
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
 * The wait families (histograms and P99 per lock class, sample counters)
 * come last, from the view's copy of the wait statistics, and only when
 * the agent ingests samples.  The HTTP server's own admission counters
 * are added by the /metrics route only (--once serves no HTTP).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/alerts_http.h"
#include "agent/http/guard.h"
#include "agent/http/release_http.h"
#include "agent/http/render.h"
#include "agent/http/routes.h"
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
    len = keytext_sanitize(tmp, need, p, n);
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

static void
label_str(struct strbuf *sb, const char *s)
{
    label_value(sb, s, strlen(s));
}

/* A label of at most max bytes: longer values become prefix + "…#hash",
 * and so do values that sanitising would change (each invalid byte grows
 * to a 3-byte U+FFFD), since "a\xff" and "a\xfe" would otherwise both be
 * "a\uFFFD" and one series. */
static void
label_capped(struct strbuf *sb, const char *p, size_t n, size_t max)
{
    char tail[32];
    size_t cut;

    if (n <= max && keytext_sanitize(NULL, 0, p, n) == n) {
        label_value(sb, p, n);
        return;
    }
    cut = keytext_utf8_prefix(p, n, n <= max ? n : max - 20);
    label_value(sb, p, cut);
    snprintf(tail, sizeof(tail), "\xe2\x80\xa6#%016" PRIx64, keytext_hash(p, n));
    sb_adds(sb, tail);
}

static void
family(struct strbuf *sb, const char *name, const char *type, const char *help)
{
    sb_addf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
target_label(struct strbuf *sb, const char *name, const char *target)
{
    sb_adds(sb, name);
    sb_adds(sb, "{target=\"");
    label_str(sb, target);
    sb_adds(sb, "\"");
}

static void
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
 * does not vanish, nor an alert on it resolve, while the agent is blind. */
static bool
has_locks(const struct view_target *t)
{
    return snapshot_shown(t->snap) != NULL;
}

/* One gauge per (target, class) from the class stats. */
enum class_field { CF_LEAKED, CF_LONG, CF_OLDEST, CF_REENTRANCY, CF_WAITERS };

static void
class_gauge(struct strbuf *sb, const struct view *v, const char *name,
            enum class_field f)
{
    size_t i, c;

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = snapshot_shown(v->targets[i].snap);

        if (!has_locks(&v->targets[i]))
            continue;
        for (c = 0; c < s->nclasses && c < s->class_cap; c++) {
            const struct snap_class *st = &s->class_stats[c];

            if (!class_used(st))
                continue;
            target_class_label(sb, name, s->target, s->classes[c]);
            switch (f) {
            case CF_LEAKED:
                sb_addf(sb, "} %" PRIu64 "\n", st->leaked);
                break;
            case CF_LONG:
                sb_addf(sb, "} %" PRIu64 "\n", st->long_held);
                break;
            case CF_OLDEST:
                sb_addf(sb, "} %.3f\n", (double)st->oldest_ms / 1000.0);
                break;
            case CF_REENTRANCY:
                sb_addf(sb, "} %" PRId64 "\n", st->max_reentrancy);
                break;
            case CF_WAITERS:
                sb_addf(sb, "} %" PRIu64 "\n", st->waiters);
                break;
            }
        }
    }
}

/* Cumulative target counters. */
static void
counter(struct strbuf *sb, const struct view *v, const char *name,
        size_t offset)
{
    size_t i;

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;
        uint64_t val = 0;

        if (s != NULL)
            memcpy(&val, (const char *)&s->counters + offset, sizeof(val));
        target_label(sb, name, v->targets[i].name);
        sb_addf(sb, "} %" PRIu64 "\n", val);
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

/* --- wait statistics, from the samples clients send ------------------------ */

/* A double as the shortest of %.15g / %.17g that reads back the same. */
static void
add_double(struct strbuf *sb, double d)
{
    char buf[40];

    snprintf(buf, sizeof(buf), "%.15g", d);
    if (strtod(buf, NULL) != d)
        snprintf(buf, sizeof(buf), "%.17g", d);
    sb_adds(sb, buf);
}

static void
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

/* One classic histogram series set: cumulative buckets, +Inf, sum, count. */
static void
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
render_wait(struct strbuf *sb, const struct waitstats_view *w)
{
    size_t i;
    int o;

    family(sb, "lockwatch_samples_received_total", "counter",
           "Sample lines received over UDP, valid or not (a datagram cut at 8192 bytes counts "
           "its cut part as one line); valid ones are in the wait and hold histograms.");
    sb_addf(sb, "lockwatch_samples_received_total %" PRIu64 "\n", w->received);
    family(sb, "lockwatch_samples_invalid_total", "counter",
           "Sample lines dropped as malformed (also counted in "
           "lockwatch_samples_received_total).");
    sb_addf(sb, "lockwatch_samples_invalid_total %" PRIu64 "\n", w->invalid);
    family(sb, "lockwatch_samples_class_overflow_total", "counter",
           "Valid samples counted in class \"other\" because the wait statistics already "
           "hold the class cap (200).");
    sb_addf(sb, "lockwatch_samples_class_overflow_total %" PRIu64 "\n", w->class_overflowed);
    family(sb, "lockwatch_samples_dropped_datagrams_total", "counter",
           "Sample datagrams the kernel dropped because the agent's receive buffer was full "
           "(in no other counter).");
    sb_addf(sb, "lockwatch_samples_dropped_datagrams_total %" PRIu64 "\n", w->kernel_drops);

    family(sb, "lockwatch_acquire_wait_seconds", "histogram",
           "Time clients waited to acquire a lock, by lock class and outcome, since start.");
    for (i = 0; i < w->nclasses; i++) {
        if (!w->classes[i].has_wait)
            continue;
        for (o = 0; o < SAMPLE_OUTCOMES; o++)
            wait_histogram(sb, "lockwatch_acquire_wait_seconds", w->classes[i].name,
                           sample_outcome_str((enum sample_outcome)o), &w->classes[i].wait[o]);
    }
    family(sb, "lockwatch_hold_seconds", "histogram",
           "Time clients held a lock, by lock class, since start.");
    for (i = 0; i < w->nclasses; i++)
        if (w->classes[i].has_hold)
            wait_histogram(sb, "lockwatch_hold_seconds", w->classes[i].name, NULL,
                           &w->classes[i].hold);

    family(sb, "lockwatch_acquire_wait_p99_seconds", "gauge",
           "P99 acquire wait (nearest rank, within 1%; all outcomes) over the last "
           "wait_window; absent for a class without waits in the window.");
    for (i = 0; i < w->nclasses; i++) {
        if (w->classes[i].window_count == 0)
            continue;
        class_series(sb, "lockwatch_acquire_wait_p99_seconds", "", w->classes[i].name, NULL);
        sb_adds(sb, "} ");
        add_double(sb, w->classes[i].window_p99_us / 1e6);
        sb_adds(sb, "\n");
    }
    family(sb, "lockwatch_acquire_wait_window_samples", "gauge",
           "Acquire waits (all outcomes) in the last wait_window, behind the P99 gauge.");
    for (i = 0; i < w->nclasses; i++) {
        if (w->classes[i].window_count == 0)
            continue;
        class_series(sb, "lockwatch_acquire_wait_window_samples", "", w->classes[i].name, NULL);
        sb_addf(sb, "} %" PRIu64 "\n", w->classes[i].window_count);
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
 * Cluster targets, per shard of the last scan.  Bounded by the shards of
 * the cluster: shard is the slot ranges (stable across a failover), node
 * the address scanned (a failover replaces the series, it does not add
 * to them: every scan lists only the current shards).
 */
static void
render_shards(struct strbuf *sb, const struct view *v)
{
    size_t i, k;

    family(sb, "lockwatch_shard_up", "gauge",
           "Cluster targets: 1 if the shard (its slot ranges) was scanned on node in the "
           "target's last scan, 0 if that failed.");
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;

        for (k = 0; s != NULL && k < s->nshards; k++) {
            shard_label(sb, "lockwatch_shard_up", s->target, &s->shards[k]);
            sb_addf(sb, "} %d\n", s->shards[k].ok ? 1 : 0);
        }
    }
    family(sb, "lockwatch_shard_scan_duration_seconds", "gauge",
           "Cluster targets: wall time of the shard's part of the last scan (shards are "
           "scanned in parallel).");
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;

        for (k = 0; s != NULL && k < s->nshards; k++) {
            shard_label(sb, "lockwatch_shard_scan_duration_seconds", s->target, &s->shards[k]);
            sb_addf(sb, "} %.6f\n", s->shards[k].duration_s);
        }
    }
    family(sb, "lockwatch_shard_scan_keys", "gauge",
           "Cluster targets: keys examined on the shard in the last scan.");
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;

        for (k = 0; s != NULL && k < s->nshards; k++) {
            shard_label(sb, "lockwatch_shard_scan_keys", s->target, &s->shards[k]);
            sb_addf(sb, "} %" PRIu64 "\n", s->shards[k].keys);
        }
    }
}

/* [redlock] groups, from their last comparison (absent until a quorum of
 * members has been scanned). */
static void
render_redlock(struct strbuf *sb, const struct view *v)
{
    static const char *const states[] = { "consistent", "split", "under_quorum", "pending" };
    size_t i, k;

    family(sb, "lockwatch_redlock_inconsistent", "gauge",
           "Keys of the Redlock group whose nodes disagree now: different holders at the "
           "same time (split), or held on fewer than a quorum for longer than the TTL.");
    for (i = 0; i < v->ngroups; i++) {
        const struct redlock_report *r = v->groups[i].report;

        if (r == NULL || !r->judged)
            continue;
        sb_adds(sb, "lockwatch_redlock_inconsistent{group=\"");
        label_str(sb, v->groups[i].name);
        sb_addf(sb, "\"} %" PRIu64 "\n", redlock_inconsistent(r));
    }
    family(sb, "lockwatch_redlock_keys", "gauge",
           "Keys compared in the Redlock group's last comparison, by verdict (pending: under "
           "quorum for less than the TTL so far).");
    for (i = 0; i < v->ngroups; i++) {
        const struct redlock_report *r = v->groups[i].report;
        uint64_t n[4];

        if (r == NULL || !r->judged)
            continue;
        n[0] = r->consistent;
        n[1] = r->split;
        n[2] = r->under_quorum;
        n[3] = r->pending;
        for (k = 0; k < 4; k++) {
            sb_adds(sb, "lockwatch_redlock_keys{group=\"");
            label_str(sb, v->groups[i].name);
            sb_addf(sb, "\",state=\"%s\"} %" PRIu64 "\n", states[k], n[k]);
        }
    }
}

/* One series per target with a snapshot: the uint64_t at off in its
 * follow-mode figures (struct snap_follow). */
static void
follow_counter(struct strbuf *sb, const struct view *v, const char *name, size_t off)
{
    size_t i;

    for (i = 0; i < v->ntargets; i++) {
        uint64_t n;

        if (v->targets[i].snap == NULL)
            continue;
        memcpy(&n, (const char *)&v->targets[i].snap->follow + off, sizeof(n));
        target_label(sb, name, v->targets[i].name);
        sb_addf(sb, "} %" PRIu64 "\n", n);
    }
}

/* Follow mode (keyspace notifications between full scans), per target. */
static void
follow_metrics(struct strbuf *sb, const struct view *v)
{
    size_t i;

    family(sb, "lockwatch_follow_active", "gauge",
           "1 while the target follows keyspace notifications between full scans, else 0.");
    for (i = 0; i < v->ntargets; i++) {
        if (v->targets[i].snap == NULL)
            continue;
        target_label(sb, "lockwatch_follow_active", v->targets[i].name);
        sb_addf(sb, "} %d\n", v->targets[i].snap->follow.active ? 1 : 0);
    }
    family(sb, "lockwatch_follow_lag_seconds", "gauge",
           "Follow mode: first event to the publication of its change, last publication.");
    for (i = 0; i < v->ntargets; i++) {
        if (v->targets[i].snap == NULL)
            continue;
        target_label(sb, "lockwatch_follow_lag_seconds", v->targets[i].name);
        sb_addf(sb, "} %.6f\n", v->targets[i].snap->follow.lag_s);
    }
    family(sb, "lockwatch_follow_events_total", "counter",
           "Keyspace notifications received for the target's lock and registry keys.");
    follow_counter(sb, v, "lockwatch_follow_events_total",
                   offsetof(struct snap_follow, events_total));
    family(sb, "lockwatch_reconcile_fixed_keys_total", "counter",
           "Keys a full scan in follow mode found changed without a notification.");
    follow_counter(sb, v, "lockwatch_reconcile_fixed_keys_total",
                   offsetof(struct snap_follow, fixed_total));
    family(sb, "lockwatch_follow_overflows_total", "counter",
           "Times the pending set of changed keys hit its cap (each ends in a full scan).");
    follow_counter(sb, v, "lockwatch_follow_overflows_total",
                   offsetof(struct snap_follow, overflows_total));
}

int
render_metrics(const struct view *v, struct strbuf *sb)
{
    struct offender *off = NULL;
    size_t i, c, f, noff;

    family(sb, "lockwatch_build_info", "gauge", "Build information; always 1.");
    sb_addf(sb, "lockwatch_build_info{version=\"%s\"} 1\n", LOCKWATCH_VERSION);

    family(sb, "lockwatch_target_up", "gauge",
           "1 if the last scan of the target succeeded, 0 if it failed or none finished yet.");
    for (i = 0; i < v->ntargets; i++) {
        target_label(sb, "lockwatch_target_up", v->targets[i].name);
        sb_addf(sb, "} %d\n", v->targets[i].snap != NULL && v->targets[i].snap->ok ? 1 : 0);
    }

    family(sb, "lockwatch_scan_duration_seconds", "gauge",
           "Wall time of the target's last full scan, pacing pauses included.");
    for (i = 0; i < v->ntargets; i++) {
        if (v->targets[i].snap == NULL)
            continue;
        target_label(sb, "lockwatch_scan_duration_seconds", v->targets[i].name);
        sb_addf(sb, "} %.6f\n", v->targets[i].snap->duration_s);
    }

    family(sb, "lockwatch_last_scan_timestamp_seconds", "gauge",
           "Unix time the target's last scan finished (ok or not).");
    for (i = 0; i < v->ntargets; i++) {
        if (v->targets[i].snap == NULL)
            continue;
        target_label(sb, "lockwatch_last_scan_timestamp_seconds", v->targets[i].name);
        sb_addf(sb, "} %.3f\n", (double)v->targets[i].snap->finished_ms / 1000.0);
    }

    family(sb, "lockwatch_target_last_success_timestamp_seconds", "gauge",
           "Unix time the target's last successful scan finished: the age of the lock "
           "values shown while lockwatch_target_up is 0 (absent before the first).");
    for (i = 0; i < v->ntargets; i++) {
        if (v->targets[i].snap == NULL || v->targets[i].snap->last_success_ms == 0)
            continue;
        target_label(sb, "lockwatch_target_last_success_timestamp_seconds",
                     v->targets[i].name);
        sb_addf(sb, "} %.3f\n", (double)v->targets[i].snap->last_success_ms / 1000.0);
    }

    family(sb, "lockwatch_scans_total", "counter", "Full scans by result.");
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;

        target_label(sb, "lockwatch_scans_total", v->targets[i].name);
        sb_addf(sb, ",result=\"ok\"} %" PRIu64 "\n", s ? s->counters.scans_ok : 0);
        target_label(sb, "lockwatch_scans_total", v->targets[i].name);
        sb_addf(sb, ",result=\"error\"} %" PRIu64 "\n", s ? s->counters.scans_error : 0);
    }

    follow_metrics(sb, v);

    family(sb, "lockwatch_scan_keys_total", "counter",
           "Keys examined (returned by SCAN for the lock patterns), all scans.");
    counter(sb, v, "lockwatch_scan_keys_total", offsetof(struct scan_counters, keys_total));
    family(sb, "lockwatch_scan_vanished_keys_total", "counter",
           "Keys that disappeared between SCAN and the reads of their type and value.");
    counter(sb, v, "lockwatch_scan_vanished_keys_total",
            offsetof(struct scan_counters, vanished_total));
    family(sb, "lockwatch_scan_duplicate_keys_total", "counter",
           "Keys SCAN returned more than once in one pass (counted once).");
    counter(sb, v, "lockwatch_scan_duplicate_keys_total",
            offsetof(struct scan_counters, duplicates_total));
    family(sb, "lockwatch_scan_waiter_errors_total", "counter",
           "Waiter look-ups (PUBSUB NUMSUB, LLEN of a fair queue) refused with an error reply; "
           "those locks' waiters are unknown.");
    counter(sb, v, "lockwatch_scan_waiter_errors_total",
            offsetof(struct scan_counters, waiter_errors_total));
    family(sb, "lockwatch_scan_truncated_values_total", "counter",
           "Lock values or hash fields cut by the per-key read caps.");
    counter(sb, v, "lockwatch_scan_truncated_values_total",
            offsetof(struct scan_counters, truncated_total));
    family(sb, "lockwatch_scan_read_errors_total", "counter",
           "Reads of a key's type or value refused with an error reply other than WRONGTYPE, "
           "by error code; each fails its scan.");
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;
        size_t k;

        /* a kind appears once it happened: 8 zero series a target for
         * what nearly never happens would be noise */
        for (k = 0; s != NULL && k < SCAN_READ_KINDS; k++) {
            if (s->counters.read_errors[k] == 0)
                continue;
            target_label(sb, "lockwatch_scan_read_errors_total", v->targets[i].name);
            sb_addf(sb, ",kind=\"%s\"} %" PRIu64 "\n",
                    scan_read_error_name((enum scan_read_error)k), s->counters.read_errors[k]);
        }
    }

    family(sb, "lockwatch_class_overflow_keys", "gauge",
           "Keys counted in class \"other\" because the target reached its class cap (last scan).");
    for (i = 0; i < v->ntargets; i++) {
        if (!has_locks(&v->targets[i]))
            continue;
        target_label(sb, "lockwatch_class_overflow_keys", v->targets[i].name);
        sb_addf(sb, "} %" PRIu64 "\n", snapshot_shown(v->targets[i].snap)->classes_overflowed);
    }

    render_shards(sb, v);

    family(sb, "lockwatch_locks", "gauge",
           "Locks held now by class and format (from the last full scan).");
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = snapshot_shown(v->targets[i].snap);

        if (!has_locks(&v->targets[i]))
            continue;
        for (c = 0; c < s->nclasses; c++)
            for (f = 0; f < formats_count && f < FORMATS_MAX; f++) {
                if (c >= s->class_cap)
                    break;
                if (s->class_stats[c].locks[f] == 0)
                    continue;
                target_class_label(sb, "lockwatch_locks", s->target, s->classes[c]);
                sb_adds(sb, ",format=\"");
                label_str(sb, formats_table[f].name);
                sb_addf(sb, "\"} %" PRIu64 "\n", s->class_stats[c].locks[f]);
            }
    }

    family(sb, "lockwatch_locks_leaked", "gauge",
           "Locks without a TTL for at least leak_grace (from the last full scan).");
    class_gauge(sb, v, "lockwatch_locks_leaked", CF_LEAKED);
    family(sb, "lockwatch_locks_long_held", "gauge",
           "Locks held by the same holder for longer than max_hold (from the last full scan).");
    class_gauge(sb, v, "lockwatch_locks_long_held", CF_LONG);
    family(sb, "lockwatch_lock_oldest_holder_seconds", "gauge",
           "Age of the oldest current holder in the class (from the last full scan).");
    class_gauge(sb, v, "lockwatch_lock_oldest_holder_seconds", CF_OLDEST);
    family(sb, "lockwatch_lock_max_reentrancy", "gauge",
           "Highest reentrant hold count in the class (from the last full scan).");
    class_gauge(sb, v, "lockwatch_lock_max_reentrancy", CF_REENTRANCY);
    family(sb, "lockwatch_lock_waiters", "gauge",
           "Clients waiting for the class's locks where Redis shows it: fair-lock queues and "
           "wake-channel subscribers, over the locks kept in detail (from the last full scan).");
    class_gauge(sb, v, "lockwatch_lock_waiters", CF_WAITERS);

    family(sb, "lockwatch_lock_offender_info", "gauge",
           "The top_offenders worst locks (leaked, long or reentrant_high); always 1.");
    if (v->top_offenders > 0 &&
        (off = calloc((size_t)v->top_offenders, sizeof(*off))) == NULL) {
        sb->failed = true;
        return -1;
    }
    noff = off ? pick_offenders(v, off, (size_t)v->top_offenders) : 0;
    for (i = 0; i < noff; i++) {
        const struct snapshot *s = off[i].s;
        const struct snap_lock *l = off[i].l;

        target_label(sb, "lockwatch_lock_offender_info", s->target);
        sb_adds(sb, ",key=\"");
        label_capped(sb, l->key, l->key_len, OFFENDER_KEY_MAX);
        sb_adds(sb, "\",class=\"");
        label_str(sb, s->classes[l->class_idx]);
        sb_addf(sb, "\",state=\"%s\",holder=\"", snapshot_worst_state(l->states));
        if (l->nholders > 0)
            label_capped(sb, l->holders[0].id, l->holders[0].id_len, OFFENDER_HOLDER_MAX);
        sb_adds(sb, "\"} 1\n");
    }
    render_redlock(sb, v);
    if (v->wait != NULL)
        render_wait(sb, v->wait);
    render_alert_metrics(v->alerts, sb);
    render_release_metrics(v->releases, sb);
    free(off);
    return sb_failed(sb) ? -1 : 0;
}

/* The HTTP server's admission counters (agent/http/guard.h). */
static void
render_http(const struct guard_stats *st, struct strbuf *sb)
{
    family(sb, "lockwatch_http_connections", "gauge",
           "HTTP connections open now (at most http_max_connections).");
    sb_addf(sb, "lockwatch_http_connections %" PRIu64 "\n", st->open);
    family(sb, "lockwatch_http_request_timeouts_total", "counter",
           "HTTP connections closed because a request's headers and body were not in "
           "within http_request_timeout (1s over http_max_connections_per_client).");
    sb_addf(sb, "lockwatch_http_request_timeouts_total %" PRIu64 "\n", st->timeouts);
    family(sb, "lockwatch_http_rejected_total", "counter",
           "API and status page requests answered 503 with Retry-After: busy "
           "(http_max_api_requests in flight) or client_limit "
           "(over http_max_connections_per_client).");
    sb_addf(sb, "lockwatch_http_rejected_total{reason=\"busy\"} %" PRIu64 "\n", st->busy);
    sb_addf(sb, "lockwatch_http_rejected_total{reason=\"client_limit\"} %" PRIu64 "\n",
            st->over_client);
}

void
serve_metrics(const struct http_request *rq, struct http_response *out)
{
    struct strbuf sb;
    struct view v;

    if (agent_view(rq->agent, &v) == -1) {
        http_text(out, 500, HTTP_OOM_TEXT);
        return;
    }
    sb_init(&sb, RENDER_MAX_BYTES);
    if (render_metrics(&v, &sb) == -1) {
        view_release(&v);
        sb_release(&sb);
        http_text(out, 500, "internal error: exposition too large or out of memory\n");
        return;
    }
    view_release(&v);
    if (rq->http != NULL)
        render_http(rq->http, &sb);
    if (sb_failed(&sb)) {
        sb_release(&sb);
        http_text(out, 500, "internal error: exposition too large or out of memory\n");
        return;
    }
    out->status = 200;
    out->ctype = HTTP_CT_METRICS;
    out->body = sb_detach(&sb, &out->len);
}
