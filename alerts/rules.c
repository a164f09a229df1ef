/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rules.c - judging which alerts hold and writing their texts (see
 * rules.h for when, alert_kinds.h for the kinds).
 *
 * The rule table is made from ALERT_KINDS: per kind its scope, a holds()
 * that judges one subject and a texts() that writes the summary and the
 * description.  The walkers at the end go over the subjects of each scope
 * (the bad locks of fresh snapshots, the targets, the shards of fresh
 * cluster snapshots, the wait classes, the keys of Redlock reports), fill in a rule_ctx with the subject and its
 * labels, and judge() runs every row of that scope on it; so a kind is
 * one row and its two functions here (or, for the EVENT kinds, in
 * rules_event.c, and for the DEADLOCK and INVERSION kinds, in
 * rules_graph.c, declared in rules_impl.h), and a walker knows no kind.
 *
 * Texts are strbufs capped at RULES_SUMMARY_MAX / RULES_DESCRIPTION_MAX
 * and cut at a UTF-8 character boundary (alerts/text.h), because every
 * label and annotation ends up in JSON, whose encoders refuse invalid
 * UTF-8 (jansson returns NULL), and in a Slack message.  Everything quoted
 * from Redis or a client (keys, holders, hosts, class names, scan errors)
 * is sanitised first (keytext_sanitize_text: bidi controls too, as
 * lockctl's tables do, so a holder cannot reverse a Slack line).
 */
#include "alerts/rules.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerts/rules_impl.h"
#include "alerts/text.h"
#include "collectors/locks/lostview.h"
#include "collectors/waits/leaseadvice.h"
#include "common/keytext.h"

/* Arbitrary bytes, sanitised (valid UTF-8; control bytes but newline, and
 * bidi and other display-unsafe characters, as U+FFFD, docs/alerts.md): at
 * most max (<= RULES_HOLDER_TEXT_MAX) input bytes, and an ellipsis when
 * cut (rules_impl.h).  Bytes sanitising changed are said to be: a holder
 * id shown is not one to paste into lockctl release. */
void
text_bytes(struct strbuf *t, const char *p, size_t n, size_t max)
{
    char stack[KEYTEXT_SANITIZED_MAX(RULES_HOLDER_TEXT_MAX)];
    size_t take = n, len;

    if (max > RULES_HOLDER_TEXT_MAX)
        max = RULES_HOLDER_TEXT_MAX;
    if (take > max)
        take = keytext_utf8_prefix(p, n, max);
    len = keytext_sanitize_text(stack, sizeof(stack), p, take);
    text_add(t, stack, len);
    if (take < n)
        text_adds(t, "\xe2\x80\xa6");
    if (!keytext_text_clean(p, take))
        text_adds(t, " (not its exact bytes: lockctl show has them)");
}

/* Formats for numbers and ASCII only: the output is cut as bytes. */
void
text_addf(struct strbuf *t, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    text_add(t, tmp, strlen(tmp));
}

char *
sanitized(const char *p, size_t n)
{
    size_t need = KEYTEXT_SANITIZED_MAX(n);
    char *out = malloc(need);

    if (out != NULL)
        keytext_sanitize_text(out, need, p, n);
    return out;
}

char *
rules_key_label(const char *key, size_t keylen)
{
    char tail[32], *head, *out;
    size_t cut, hl;

    if (keylen <= RULES_KEY_LABEL_MAX) {
        /* compared, not measured: a bidi control and its U+FFFD are both
         * 3 bytes */
        if ((out = sanitized(key, keylen)) == NULL ||
            (strlen(out) == keylen && memcmp(out, key, keylen) == 0))
            return out;
        free(out);
    }
    /* the same cut as the offender metric's key label, and the same hash
     * when sanitising would change the key, so two keys that differ only
     * in invalid bytes or bidi controls never share an alert */
    cut = keytext_utf8_prefix(key, keylen,
                              keylen <= RULES_KEY_LABEL_MAX ? keylen : RULES_KEY_LABEL_MAX - 20);
    snprintf(tail, sizeof(tail), "\xe2\x80\xa6#%016" PRIx64, keytext_hash(key, keylen));
    if ((head = sanitized(key, cut)) == NULL)
        return NULL;
    hl = strlen(head);
    out = malloc(hl + strlen(tail) + 1);
    if (out != NULL) {
        memcpy(out, head, hl);
        memcpy(out + hl, tail, strlen(tail) + 1);
    }
    free(head);
    return out;
}

/* "holder tok (host web-1, pid 42)" and how many more there are. */
static void
text_holder(struct strbuf *t, const struct snap_lock *l)
{
    if (l->nholders == 0) {
        text_adds(t, "no holder recorded");
        return;
    }
    text_adds(t, "holder ");
    text_bytes(t, l->holders[0].id, l->holders[0].id_len, RULES_HOLDER_TEXT_MAX);
    if (l->host_len > 0 || l->pid != 0) {
        text_adds(t, " (");
        if (l->host_len > 0) {
            text_adds(t, "host ");
            text_bytes(t, l->host, l->host_len, HOST_MAX);
        }
        if (l->pid != 0)
            text_addf(t, "%spid %" PRId32, l->host_len > 0 ? ", " : "", l->pid);
        text_adds(t, ")");
    }
    if (l->holders_total > 1)
        text_addf(t, " and %" PRIu32 " more", l->holders_total - 1);
}

static void
text_ttl(struct strbuf *t, const struct snap_lock *l)
{
    if (l->pttl_ms < 0) {
        text_adds(t, "no TTL");
        return;
    }
    text_adds(t, "TTL ");
    text_duration(t, l->pttl_ms);
}

/* LOCK: "Lock K (class C, target T, format F): ", how every lock
 * description starts. */
static void
lock_intro(const struct rule_ctx *c, struct strbuf *desc)
{
    const struct snap_lock *l = c->lock;

    text_adds(desc, "Lock ");
    text_adds(desc, c->key);
    text_adds(desc, " (class ");
    text_adds(desc, c->class_);
    text_adds(desc, ", target ");
    text_adds(desc, c->target);
    text_adds(desc, ", format ");
    text_adds(desc, l->format < formats_count ? formats_table[l->format].name : "unknown");
    text_adds(desc, "): ");
}

/* LOCK: "Lock K on T", how every lock summary starts. */
static void
lock_subject(const struct rule_ctx *c, struct strbuf *sum)
{
    text_adds(sum, "Lock ");
    text_adds(sum, c->key);
    text_adds(sum, " on ");
    text_adds(sum, c->target);
}

static int64_t
lock_age(const struct rule_ctx *c)
{
    return c->now_ms - c->lock->first_seen_ms;
}

static bool
leaked_holds(const struct rule_ctx *c)
{
    return (c->lock->states & LOCK_LEAKED) != 0;
}

static void
leaked_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    lock_subject(c, sum);
    text_adds(sum, " has no TTL and will never expire");
    lock_intro(c, desc);
    text_adds(desc, "no TTL for at least leak_grace (");
    text_duration(desc, c->p->judge.leak_grace_ms);
    text_adds(desc, "); ");
    text_holder(desc, c->lock);
    text_adds(desc, ", held for ");
    text_duration(desc, lock_age(c));
    text_adds(desc, ". Nothing will release it if its holder died: check the holder, "
              "then lockctl release (or lockctl expire to give it a TTL).");
}

static bool
long_holds(const struct rule_ctx *c)
{
    return (c->lock->states & LOCK_LONG) != 0;
}

static void
long_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    lock_subject(c, sum);
    text_adds(sum, " held for ");
    text_duration(sum, lock_age(c));
    lock_intro(c, desc);
    text_adds(desc, "the same ");
    text_holder(desc, c->lock);
    text_adds(desc, " has held it for ");
    text_duration_above(desc, (double)lock_age(c), c->p->judge.max_hold_ms);
    text_adds(desc, ", longer than max_hold (");
    text_duration(desc, c->p->judge.max_hold_ms);
    text_adds(desc, "); ");
    text_ttl(desc, c->lock);
    text_adds(desc, ". A watchdog may be renewing a lock whose work is stuck.");
}

static bool
reentrant_holds(const struct rule_ctx *c)
{
    return (c->lock->states & LOCK_REENTRANT_HIGH) != 0;
}

static void
reentrant_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct snap_lock *l = c->lock;

    lock_subject(c, sum);
    text_addf(sum, " taken %" PRId64 " times by one holder", l->max_count);
    lock_intro(c, desc);
    text_addf(desc, "a hold count of %" PRId64 ", at or above max_reentrancy (%ld); ",
              l->max_count, c->p->judge.max_reentrancy);
    text_holder(desc, l);
    text_adds(desc, ", held for ");
    text_duration(desc, lock_age(c));
    text_adds(desc, ", ");
    text_ttl(desc, l);
    text_adds(desc, ". A code path takes the lock more often than it releases it.");
}

static bool
wait_holds(const struct rule_ctx *c)
{
    return wait_p99_high(c->p, c->wait);
}

static void
wait_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct waitstats_class *w = c->wait;
    double p99_ms = w->window_p99_us / 1000.0;

    /* rounded up, so it reads above wait_p99 and "or less" holds */
    text_adds(sum, "P99 acquire wait of lock class ");
    text_adds(sum, c->class_);
    text_adds(sum, " is ");
    text_duration_above(sum, p99_ms, c->p->wait_p99_ms);
    text_adds(desc, "Over the last wait_window (");
    text_duration(desc, c->p->wait_window_ms);
    text_adds(desc, "), clients waited ");
    text_duration_above(desc, p99_ms, c->p->wait_p99_ms);
    text_adds(desc, " or less in 99% of ");
    text_addf(desc, "%" PRIu64, w->window_count);
    text_adds(desc, " acquires of class ");
    text_adds(desc, c->class_);
    text_adds(desc, ", above wait_p99 (");
    text_duration(desc, c->p->wait_p99_ms);
    text_adds(desc, "). Holders keep the lock too long or too many clients contend.");
}

/* --- issue 28: leases against holds, counts against their baseline ------- */

static enum lease_verdict
lease_verdict(const struct rule_ctx *c, struct lease_judgement *j)
{
    lease_judge(c->p, c->trend, c->wait, j);
    return j->verdict;
}

static bool
lease_short_holds(const struct rule_ctx *c)
{
    struct lease_judgement j;

    return lease_verdict(c, &j) == LEASE_TOO_SHORT;
}

static bool
lease_long_holds(const struct rule_ctx *c)
{
    struct lease_judgement j;

    return c->p->lease_too_long && lease_verdict(c, &j) == LEASE_TOO_LONG;
}

/* A lease as the scans saw it: the TTL at first sight, a little under the
 * lease set (by the time from the acquire to the scan); to the nearest
 * second from 1 s on, so a 10 s lease seen at 9.7 s reads "10s". */
static void
text_lease(struct strbuf *t, int64_t ms)
{
    text_duration(t, ms >= 1000 ? (ms + 500) / 1000 * 1000 : ms);
}

/* The value a lease was judged too short by (hold P99.9 or the renewal
 * period), with the decimals that make it read above lease_short_at x
 * the lease. */
static void
text_over_lease(const struct rule_ctx *c, struct strbuf *t, double value_ms)
{
    text_duration_above(t, value_ms, (int64_t)(c->p->lease_short_at * (double)c->trend->lease_ms));
}

/* What the lease was judged on: the holds of the window, or for a
 * watchdog class the renewal period the scans saw; then the lease. */
static void
lease_facts(const struct rule_ctx *c, struct strbuf *desc)
{
    const struct classtrend_class *t = c->trend;

    text_adds(desc, "Lock class ");
    text_adds(desc, c->class_);
    if (t->watchdog) {
        text_adds(desc, ": its locks are renewed (a watchdog) about every ");
        text_over_lease(c, desc, (double)t->renewal_ms);
        text_adds(desc, " (the lease less the lowest TTL the scans saw)");
    }
    if (c->wait != NULL && c->wait->hold_window_count > 0) {
        text_addf(desc, "%s%" PRIu64, t->watchdog ? "; " : ": ", c->wait->hold_window_count);
        text_adds(desc, " holds in the last wait_window (");
        text_duration(desc, c->p->wait_window_ms);
        text_adds(desc, ") had a P99.9 of ");
        text_over_lease(c, desc, c->wait->hold_p999_us / 1000.0);
    }
    text_adds(desc, "; its locks carry a lease of ");
    text_lease(desc, t->lease_ms);
    text_adds(desc, " (the longest TTL at first sight in wait_window)");
}

/* One texts function for both lease kinds: which one says the verdict. */
static void
lease_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct classtrend_class *t = c->trend;
    struct lease_judgement j;
    bool shrt;

    lease_judge(c->p, t, c->wait, &j);
    shrt = j.verdict == LEASE_TOO_SHORT;
    text_adds(sum, "Lease of lock class ");
    text_adds(sum, c->class_);
    text_adds(sum, " (");
    text_lease(sum, t->lease_ms);
    text_adds(sum, shrt ? ") is too short: " : ") is far longer than its holds: ");
    if (shrt && t->watchdog) {
        text_adds(sum, "renewed every ");
        text_over_lease(c, sum, (double)t->renewal_ms);
    } else {
        text_adds(sum, "hold P99.9 ");
        text_over_lease(c, sum, c->wait != NULL ? c->wait->hold_p999_us / 1000.0 : 0.0);
    }
    text_adds(sum, "; suggested lease ");
    text_duration(sum, j.suggest_ms);
    lease_facts(c, desc);
    if (shrt)
        text_addf(desc, ", and %s is above lease_short_at (%.0f%%) of it. The lock expires "
                  "before its holder is done (or renews) and another node takes it: "
                  "concurrent access. Suggested lease: ",
                  t->watchdog ? "the renewal period" : "the hold P99.9",
                  c->p->lease_short_at * 100.0);
    else
        text_addf(desc, ", more than lease_long_factor (%ld) times the hold P99.9. A holder "
                  "that crashes blocks every other one for the whole lease. Suggested lease: ",
                  c->p->lease_long_factor);
    text_duration(desc, j.suggest_ms);
    text_adds(desc, !shrt ? " (2x hold P99.9, rounded up)." : t->watchdog ?
              " (3x the renewal period, rounded up), or renew more often." :
              " (2x hold P99.9, rounded up); or shorten the work, or renew the lease while "
              "holding (a watchdog).");
}

static bool
surge_holds(const struct rule_ctx *c)
{
    return count_surges(c->p, c->trend);
}

#define BASE_DECIMALS(t) ((t)->baseline != (double)(int64_t)(t)->baseline ? 1 : 0)

static void
surge_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct classtrend_class *t = c->trend;

    text_adds(sum, "Lock class ");
    text_adds(sum, c->class_);
    /* a median: x.5 shown as such (%.0f would round 101.5 to "102", and
     * 3 x 102 is above the 305 locks that surged past 3 x 101.5) */
    text_addf(sum, " has %" PRIu64 " locks, %.1fx its baseline of %.*f", t->count,
              t->count / (t->baseline > 1.0 ? t->baseline : 1.0), BASE_DECIMALS(t), t->baseline);
    text_adds(desc, "Lock class ");
    text_adds(desc, c->class_);
    text_addf(desc, " has %" PRIu64 " locks over every target, above count_surge_factor "
              "(%ld) x its baseline (%.*f, the median count over the last "
              "count_baseline_window of ", t->count, c->p->count_surge_factor,
              BASE_DECIMALS(t), t->baseline);
    text_duration(desc, c->p->count_baseline_window_ms);
    text_addf(desc, "; at least count_surge_floor, %ld). Over the last minute the scans saw "
              "%.1f locks created and %.1f deleted per second. Locks that are taken and "
              "never released (a leak with a long TTL), holders crashing in a loop, or a "
              "code path that locks per request show here first: look at the class's "
              "locks and holders (lockctl list --pattern with the class's pattern, on "
              "each target), then at what changed in its clients.",
              c->p->count_surge_floor, t->created_rate, t->deleted_rate);
}

static bool
down_holds(const struct rule_ctx *c)
{
    return !c->snap->ok;
}

static void
down_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct snapshot *s = c->snap;
    char *err;

    text_adds(sum, "Target ");
    text_adds(sum, c->target);
    text_adds(sum, " cannot be scanned");
    text_adds(desc, "The last scan of target ");
    text_adds(desc, c->target);
    text_adds(desc, " failed: ");
    err = sanitized(s->err, strnlen(s->err, sizeof(s->err)));
    text_adds(desc, err != NULL ? err : "(out of memory)");
    free(err);
    text_adds(desc, ". Its lock alerts keep their state until a scan succeeds again.");
}

static bool
shard_down_holds(const struct rule_ctx *c)
{
    return !c->sh->ok;
}

static void
shard_down_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    char *err;

    text_adds(sum, "Shard ");
    text_adds(sum, c->shard);
    text_adds(sum, " of target ");
    text_adds(sum, c->target);
    text_adds(sum, " (node ");
    text_adds(sum, c->node);
    text_adds(sum, ") cannot be scanned");
    text_adds(desc, "The last scan of cluster target ");
    text_adds(desc, c->target);
    text_adds(desc, " could not scan the shard of slots ");
    text_adds(desc, c->shard);
    text_adds(desc, c->sh->replica ? " on its replica " : " on its primary ");
    text_adds(desc, c->node);
    text_adds(desc, ": ");
    err = sanitized(c->sh->err, strnlen(c->sh->err, sizeof(c->sh->err)));
    text_adds(desc, err != NULL ? err : "(out of memory)");
    free(err);
    text_addf(desc, ". The other %zu shards were scanned; the locks of these slots are "
              "missing from the counts and keep their alerts' state until the shard is "
              "scanned again. Check the node and the cluster (CLUSTER INFO, CLUSTER SHARDS).",
              c->snap->nshards - 1);
}

/* Every key a report details is one its nodes disagree on. */
static bool
split_holds(const struct rule_ctx *c)
{
    return c->issue->kind == REDLOCK_SPLIT || c->issue->kind == REDLOCK_UNDER_QUORUM;
}

static void
split_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct redlock_issue *is = c->issue;
    const struct redlock_report *r = c->report;

    text_adds(sum, "Redlock group ");
    text_adds(sum, c->target);
    text_adds(sum, is->kind == REDLOCK_SPLIT ? " has different holders of " :
              " holds without a quorum ");
    text_adds(sum, c->key);
    text_adds(desc, "Lock ");
    text_adds(desc, c->key);
    text_adds(desc, " (class ");
    text_adds(desc, c->class_);
    text_adds(desc, ") in Redlock group ");
    text_adds(desc, c->target);
    if (is->kind == REDLOCK_SPLIT) {
        text_addf(desc, ": %u different holders at the same time, the most common "
                  "on %u of %zu nodes (quorum %zu). ", is->holders, is->best, r->members,
                  r->quorum);
    } else {
        text_addf(desc, ": held on %u of %zu nodes (quorum %zu) for ", is->held, r->members,
                  r->quorum);
        text_duration(desc, c->now_ms - is->since_ms);
        text_adds(desc, ", longer than its TTL. ");
    }
    text_adds(desc, "Nodes: ");
    text_adds(desc, is->nodes);
    text_adds(desc, " (letters are holders, - not held, ? not scanned). Two clients "
              "may both believe they hold it: check them, then release the minority "
              "copies with lockctl on their nodes.");
}

/* A loss at a change of server, named for RULES_LOST_FIRING_MS after it
 * (collectors/scan/lost.c keeps the last one on every snapshot). */
static bool
lost_holds(const struct rule_ctx *c)
{
    const struct snap_lost *lo = &c->snap->lost;

    return lo->count > 0 && c->now_ms - lo->at_ms < RULES_LOST_FIRING_MS;
}

/* What changed: "a restart of N", "a failover to N (was M)", "a SWAPDB on
 * N"; "a flush" alone when out of memory. */
static void
lost_change(struct strbuf *t, const struct snap_lost *lo)
{
    char *was = sanitized(lo->was, strnlen(lo->was, sizeof(lo->was)));
    char *now = sanitized(lo->now, strnlen(lo->now, sizeof(lo->now)));
    const char *prep;

    text_adds(t, lost_cause_words((enum lost_cause)lo->cause, &prep));
    if (now != NULL && was != NULL) {
        text_adds(t, " ");
        text_adds(t, prep);
        text_adds(t, " ");
        text_adds(t, now);
        if (lo->cause == LOST_FAILOVER && strcmp(was, now) == 0) {
            text_adds(t, " (the same node, its data replaced by another primary's)");
        } else if (lo->cause == LOST_FAILOVER) {
            text_adds(t, " (was ");
            text_adds(t, was);
            text_adds(t, ")");
        }
    }
    free(was);
    free(now);
}

/* One named lock: "K (holder H, held 5m)", or "K (now another holder's;
 * was H's, held 5m)". */
static void
lost_item(struct strbuf *t, const struct snap_lost *lo, const struct snap_lost_lock *e)
{
    text_bytes(t, e->key, e->key_len, RULES_HOLDER_TEXT_MAX);
    if (e->key_cut)
        text_adds(t, "\xe2\x80\xa6");
    text_adds(t, e->taken ? " (another holder has it now; was " : " (");
    if (e->holder_len > 0) {
        text_adds(t, "holder ");
        text_bytes(t, e->holder, e->holder_len, RULES_HOLDER_TEXT_MAX / 2);
        text_adds(t, ", ");
    }
    text_adds(t, "held ");
    text_duration(t, lo->at_ms - e->first_seen_ms);
    text_adds(t, ")");
}

#define LOST_TAIL "Their holders may still believe they hold them while other clients take " \
    "them anew: two holders may both be inside the critical section. Check the holders " \
    "named (their work, their logs) and the server's history (INFO persistence, the " \
    "Sentinel or cluster log)."

static void
lost_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct snap_lost *lo = &c->snap->lost;
    struct strbuf item;
    size_t i, reserve = strlen(LOST_TAIL) + 64;

    text_addf(sum, "%" PRIu64 " lock%s lost on target ", lo->count, lo->count == 1 ? "" : "s");
    text_adds(sum, c->target);
    text_adds(sum, " at ");
    lost_change(sum, lo);
    text_adds(desc, "The server under target ");
    text_adds(desc, c->target);
    text_adds(desc, " changed (");
    lost_change(desc, lo);
    text_adds(desc, ", ");
    text_duration(desc, c->now_ms - lo->at_ms);
    text_addf(desc, " ago): %" PRIu64 " of the %" PRIu64 " locks held before were gone "
              "after with no release seen, or held by another holder, their TTL not run "
              "out%s. Oldest hold first: ", lo->count, lo->compared,
              lo->partial ? " (only the locks the view kept in detail were compared)" : "");
    for (i = 0; i < lo->nlisted; i++) {
        sb_init(&item, RULES_DESCRIPTION_MAX);
        if (i > 0)
            text_adds(&item, ", ");
        lost_item(&item, lo, &lo->listed[i]);
        if (sb_failed(&item) || item.buf == NULL || text_room(desc) < item.len + reserve) {
            sb_release(&item);
            break;
        }
        text_add(desc, item.buf, item.len);
        sb_release(&item);
    }
    if (lo->count > i)
        text_addf(desc, "%s and %" PRIu64 " more", i > 0 ? "" : "none named", lo->count - i);
    text_adds(desc, ". " LOST_TAIL);
}

/* The rule table: one row per alert kind, made from ALERT_KINDS. */
struct rule {
    enum rule_scope scope;
    bool (*holds)(const struct rule_ctx *c);
    void (*texts)(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc);
};

#define RULE_ROW(e, name, severity, scope, holds, texts) [ALERT_##e] = { SCOPE_##scope, holds, texts },
static const struct rule rules[ALERT_NAMES] = { ALERT_KINDS(RULE_ROW) };
#undef RULE_ROW

/* LockLostAtFailover tells of one loss, the last (snap_lost): named by the
 * time of the view after it. */
static int64_t
lost_occurrence(const struct rule_ctx *c)
{
    return c->snap->lost.at_ms;
}

/* The kinds whose texts tell of one discrete event, which a later one
 * replaces, rather than of a state that lasts: the event's id, so that
 * another one while the alert fires is sent at once as a new episode of
 * the same alert (alertset_occurred), not left to repeat_interval.  The
 * EVENT kinds are not here: a lease's loss can be two LockLeaseLost
 * events (the scan's expired_renewed, the holder's lost line), which
 * would notify twice, and a holder overrunning every lease of a key would
 * notify once a lease (docs/alerts.md, Lifecycle). */
static int64_t (*const occurrences[ALERT_NAMES])(const struct rule_ctx *c) = {
    [ALERT_LOCK_LOST_AT_FAILOVER] = lost_occurrence,
};

/* Observe every kind of this scope that holds for c's subject, and write
 * its texts (capped, cut at a character boundary; out of memory keeps an
 * instance's previous texts). */
static void
judge(struct alertset *set, enum rule_scope scope, const struct rule_ctx *c)
{
    size_t k;

    for (k = 0; k < ALERT_NAMES; k++) {
        const struct rule *r = &rules[k];
        struct alert_labels lab = { (enum alert_name)k, c->target, c->class_, c->key,
                                    c->shard, c->node };
        struct strbuf sum, desc;
        struct alert *a;

        if (r->scope != scope || !r->holds(c))
            continue;
        if ((a = alertset_observe(set, &lab)) == NULL)
            continue;
        if (occurrences[k] != NULL)
            alertset_occurred(set, a, occurrences[k](c));
        if (scope == SCOPE_EVENT)
            alertset_hold(a, c->event->at_ms + RULES_EVENT_FIRING_MS);
        sb_init(&sum, RULES_SUMMARY_MAX);
        sb_init(&desc, RULES_DESCRIPTION_MAX);
        r->texts(c, &sum, &desc);
        if (!sb_failed(&sum) && !sb_failed(&desc) && sum.buf != NULL && desc.buf != NULL)
            alert_annotate(a, sum.buf, desc.buf);
        sb_release(&sum);
        sb_release(&desc);
    }
}

/* The per-lock alerts (one per bad state of a lock: LockLeaked,
 * LockHeldTooLong, LockReentrancyHigh) of the bad locks s counted but did
 * not keep in detail (past the worst SNAP of a target): none can be
 * raised, and they are counted as suppressed. */
static size_t
unkept_bad(const struct snapshot *s)
{
    uint64_t counted = 0, kept = 0;
    size_t i;

    for (i = 0; i < s->nclasses && i < s->class_cap; i++)
        counted += s->class_stats[i].leaked + s->class_stats[i].long_held +
            s->class_stats[i].reentrant_high;
    for (i = 0; i < s->nlocks && (s->locks[i]->states & LOCK_BAD); i++)
        kept += !!(s->locks[i]->states & LOCK_LEAKED) + !!(s->locks[i]->states & LOCK_LONG) +
            !!(s->locks[i]->states & LOCK_REENTRANT_HIGH);
    return counted > kept ? (size_t)(counted - kept) : 0;
}

/* The LOCK scope: the bad locks a fresh snapshot keeps in detail. */
static void
judge_locks(struct alertset *set, const struct rules_conf *p, const char *target,
            const struct snapshot *s, int64_t now_ms)
{
    char **classes;
    size_t i, nclasses = s->nclasses;

    /* class names once per snapshot, not once per lock */
    classes = calloc(nclasses ? nclasses : 1, sizeof(*classes));
    if (classes == NULL)
        goto keep;
    for (i = 0; i < nclasses; i++)
        if ((classes[i] = sanitized(s->classes[i], strlen(s->classes[i]))) == NULL)
            goto keep;

    /* retained locks are worst first: past the first healthy one there are
     * no more bad ones */
    for (i = 0; i < s->nlocks && (s->locks[i]->states & LOCK_BAD); i++) {
        const struct snap_lock *l = s->locks[i];
        struct rule_ctx c = { .p = p, .now_ms = now_ms, .target = target, .snap = s,
                              .lock = l };
        char *key;

        if (l->class_idx >= nclasses)
            continue;
        if ((key = rules_key_label(l->key, l->key_len)) == NULL)
            continue;
        c.class_ = classes[l->class_idx];
        c.key = key;
        judge(set, SCOPE_LOCK, &c);
        free(key);
    }
    if (s->nlocks < s->locks_total)
        alertset_suppress(set, unkept_bad(s));
    goto out;
keep:
    /* out of memory: judge nothing rather than resolve everything */
    alertset_keep_target(set, target);
out:
    if (classes != NULL)
        for (i = 0; i < nclasses; i++)
            free(classes[i]);
    free(classes);
}

/* The SHARD scope: every shard of a cluster target's fresh snapshot. */
static void
judge_shards(struct alertset *set, const struct rules_conf *p, const char *target,
             const struct snapshot *s, int64_t now_ms)
{
    size_t k;

    for (k = 0; k < s->nshards; k++) {
        const struct snap_shard *sh = &s->shards[k];
        char *shard = sanitized(sh->shard, strnlen(sh->shard, sizeof(sh->shard)));
        char *node = sanitized(sh->node, strnlen(sh->node, sizeof(sh->node)));
        struct rule_ctx c = { .p = p, .now_ms = now_ms, .target = target, .snap = s,
                              .sh = sh, .shard = shard, .node = node };

        if (shard != NULL && node != NULL)
            judge(set, SCOPE_SHARD, &c);
        else
            alertset_keep_target(set, target);
        free(shard);
        free(node);
    }
}

void
rules_eval_redlock(struct alertset *set, const struct rules_group *groups, size_t ngroups,
                   int64_t now_ms)
{
    size_t g, i;

    for (g = 0; g < ngroups; g++) {
        const struct redlock_report *r = groups[g].report;

        if (r == NULL || !r->judged) {
            alertset_keep_target(set, groups[g].name);
            continue;
        }
        for (i = 0; i < r->nissues; i++) {
            const struct redlock_issue *is = &r->issues[i];
            char *key = rules_key_label(is->key, is->key_len);
            char *cls = sanitized(is->cls, strnlen(is->cls, sizeof(is->cls)));
            struct rule_ctx c = { .now_ms = now_ms, .target = groups[g].name, .class_ = cls,
                                  .key = key, .report = r, .issue = is };

            if (key != NULL && cls != NULL)
                judge(set, SCOPE_GROUP, &c);
            free(key);
            free(cls);
        }
    }
}

/* The TREND scope: every class the scans have seen, with its holds. */
static void
judge_trends(struct alertset *set, const struct rules_conf *p,
             const struct classtrend_view *tv, const struct waitstats_view *w, int64_t now_ms)
{
    size_t i;

    for (i = 0; tv != NULL && i < tv->nclasses; i++) {
        const struct classtrend_class *t = &tv->classes[i];
        char *cls = sanitized(t->name, strlen(t->name));
        struct rule_ctx c = { .p = p, .now_ms = now_ms, .class_ = cls, .trend = t,
                              .wait = waitstats_view_class(w, t->name) };

        if (cls != NULL)
            judge(set, SCOPE_TREND, &c);
        free(cls);
    }
}

/* Append the len bytes of s to out at *at with '\\' and c (a byte of the
 * join's separator) escaped by a '\\': then the only bare c of a join is
 * in its separators, and the join has one reading.  out has room for
 * 2 * len bytes more. */
static void
add_escaped_part(char *out, size_t *at, const char *s, size_t len, char c)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (s[i] == '\\' || s[i] == c)
            out[(*at)++] = '\\';
        out[(*at)++] = s[i];
    }
}

/* "A -> B -> C": the deadlock's keys in cycle order, as a key label (a
 * key's '>' and '\\' escaped: two cycles never share one). */
static char *
deadlock_label(const struct graph_deadlock *d)
{
    size_t i, need = 0, len = 0;
    char *raw, *out;

    for (i = 0; i < d->nsteps; i++)
        need += 2 * d->steps[i].key.len + 4;
    if ((raw = malloc(need + 1)) == NULL)
        return NULL;
    for (i = 0; i < d->nsteps; i++) {
        if (i > 0) {
            memcpy(raw + len, " -> ", 4);
            len += 4;
        }
        add_escaped_part(raw, &len, d->steps[i].key.p, d->steps[i].key.len, '>');
    }
    out = rules_key_label(raw, len);
    free(raw);
    return out;
}

/* "A,B": an inversion's two classes as a class label (a class's ',' and
 * '\\' escaped: two inversions never share one). */
static char *
inversion_label(const struct graph_inversion *v)
{
    size_t la = strlen(v->class_a), lb = strlen(v->class_b), len = 0;
    char *raw, *out;

    if ((raw = malloc(2 * (la + lb) + 2)) == NULL)
        return NULL;
    add_escaped_part(raw, &len, v->class_a, la, ',');
    raw[len++] = ',';
    add_escaped_part(raw, &len, v->class_b, lb, ',');
    out = sanitized(raw, len);
    free(raw);
    return out;
}

void
rules_eval_graph(struct alertset *set, const struct graph_report *r, int64_t now_ms)
{
    size_t i;

    for (i = 0; r != NULL && i < r->ndeadlocks; i++) {
        char *key = deadlock_label(&r->deadlocks[i]);
        struct rule_ctx c = { .now_ms = now_ms, .target = r->deadlocks[i].target, .key = key,
                              .dl = &r->deadlocks[i] };

        if (key != NULL)
            judge(set, SCOPE_DEADLOCK, &c);
        free(key);
    }
    for (i = 0; r != NULL && i < r->ninversions; i++) {
        struct rule_ctx c = { .now_ms = now_ms, .inv = &r->inversions[i] };
        char *s;

        if ((s = inversion_label(&r->inversions[i])) == NULL)
            continue;
        c.class_ = s;
        judge(set, SCOPE_INVERSION, &c);
        free(s);
    }
}

void
rules_eval_event(struct alertset *set, const struct rules_conf *p, const struct event *e,
                 bool at_failover, int64_t now_ms)
{
    struct rule_ctx c = { .p = p, .now_ms = now_ms, .event = e };
    char *key, *cls;

    if (now_ms - e->at_ms > RULES_EVENT_FIRING_MS)
        return;
    key = rules_key_label(e->key, e->keylen);
    cls = sanitized(e->klass[0] != '\0' ? e->klass : "other",
                    e->klass[0] != '\0' ? strnlen(e->klass, sizeof(e->klass)) : 5);
    if (key != NULL && cls != NULL) {
        c.target = e->target[0] != '\0' ? e->target : NULL;
        c.class_ = cls;
        c.key = key;
        if (at_failover && e->kind == EVENT_LEASE_LOST) {
            struct alert_labels lab = { ALERT_LOCK_LEASE_LOST, c.target, cls, key, NULL, NULL };
            struct alert *a = alertset_find(set, &lab);

            if (a != NULL)
                alertset_release(a);
        } else {
            judge(set, SCOPE_EVENT, &c);
        }
    }
    free(key);
    free(cls);
}

void
rules_eval(struct alertset *set, const struct rules_conf *p,
           const struct rules_target *targets, size_t ntargets,
           const struct waitstats_view *w, const struct classtrend_view *tv, int64_t now_ms)
{
    size_t i;

    for (i = 0; i < ntargets; i++) {
        const struct rules_target *t = &targets[i];
        struct rule_ctx c = { .p = p, .now_ms = now_ms, .target = t->name, .snap = t->snap };

        /* No view at all (a reload pointed it at another server, which
         * has not answered yet): the locks its alerts name were the old
         * server's, which it no longer watches, so they resolve. */
        if (t->snap == NULL)
            continue;
        judge(set, SCOPE_TARGET, &c);
        /* a failed scan or a snapshot judged before: nothing new is known
         * about the locks, and what was known stands */
        if (!t->snap->ok && t->snap->last_good == NULL) {
            continue;
        } else if (!t->snap->ok || !t->fresh) {
            alertset_keep_target(set, t->name);
        } else {
            judge_shards(set, p, t->name, t->snap, now_ms);
            judge_locks(set, p, t->name, t->snap, now_ms);
        }
    }
    for (i = 0; w != NULL && i < w->nclasses; i++) {
        char *cls = sanitized(w->classes[i].name, strlen(w->classes[i].name));
        struct rule_ctx c = { .p = p, .now_ms = now_ms, .class_ = cls, .wait = &w->classes[i] };

        if (cls != NULL)
            judge(set, SCOPE_CLASS, &c);
        free(cls);
    }
    judge_trends(set, p, tv, w, now_ms);
}
