/*
 * rules.c - judging which alerts hold and writing their texts (see
 * rules.h for the rules).
 *
 * Texts are strbufs capped at RULES_SUMMARY_MAX / RULES_DESCRIPTION_MAX
 * and cut at a UTF-8 character boundary (alerts/text.h), because every
 * label and annotation ends up in JSON, whose encoders refuse invalid
 * UTF-8 (jansson returns NULL), and in a Slack message.  Everything quoted
 * from Redis (keys, holders, hosts, class names, scan errors) is sanitised
 * first.
 */
#include "alerts/rules.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerts/text.h"
#include "common/keytext.h"

/* Start a summary and a description. */
static void
texts_init(struct strbuf *sum, struct strbuf *desc)
{
    sb_init(sum, RULES_SUMMARY_MAX);
    sb_init(desc, RULES_DESCRIPTION_MAX);
}

/* Hand the texts to the alert and release them; out of memory keeps the
 * alert's previous texts. */
static void
texts_annotate(struct alert *a, struct strbuf *sum, struct strbuf *desc)
{
    if (!sb_failed(sum) && !sb_failed(desc) && sum->buf != NULL && desc->buf != NULL)
        alert_annotate(a, sum->buf, desc->buf);
    sb_release(sum);
    sb_release(desc);
}

/* Arbitrary bytes, sanitised to UTF-8: at most max (<= RULES_HOLDER_TEXT_MAX)
 * input bytes, and an ellipsis when cut. */
static void
text_bytes(struct strbuf *t, const char *p, size_t n, size_t max)
{
    char stack[KEYTEXT_SANITIZED_MAX(RULES_HOLDER_TEXT_MAX)];
    size_t take = n, len;

    if (max > RULES_HOLDER_TEXT_MAX)
        max = RULES_HOLDER_TEXT_MAX;
    if (take > max)
        take = keytext_utf8_prefix(p, n, max);
    len = keytext_sanitize(stack, sizeof(stack), p, take);
    text_add(t, stack, len);
    if (take < n)
        text_adds(t, "\xe2\x80\xa6");
}

/* Formats for numbers and ASCII only: the output is cut as bytes. */
__attribute__((format(printf, 2, 3)))
static void
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

void
rules_format_duration(int64_t ms, char *buf, size_t len)
{
    int64_t s;

    if (ms < 0)
        ms = 0;
    s = ms / 1000;
    if (ms < 1000)
        snprintf(buf, len, "%" PRId64 "ms", ms);
    else if (s < 60)
        snprintf(buf, len, "%" PRId64 "s", s);
    else if (s < 3600)
        snprintf(buf, len, "%" PRId64 "m %" PRId64 "s", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, len, "%" PRId64 "h %" PRId64 "m", s / 3600, (s % 3600) / 60);
    else
        snprintf(buf, len, "%" PRId64 "d %" PRId64 "h", s / 86400, (s % 86400) / 3600);
}

static void
text_duration(struct strbuf *t, int64_t ms)
{
    char buf[64];

    rules_format_duration(ms, buf, sizeof(buf));
    text_adds(t, buf);
}

static char *
sanitized(const char *p, size_t n)
{
    size_t need = KEYTEXT_SANITIZED_MAX(n);
    char *out = malloc(need);

    if (out != NULL)
        keytext_sanitize(out, need, p, n);
    return out;
}

char *
rules_key_label(const char *key, size_t keylen)
{
    char tail[32], *head, *out;
    size_t cut, hl;

    if (keylen <= RULES_KEY_LABEL_MAX)
        return sanitized(key, keylen);
    /* the same cut as the offender metric's key label */
    cut = keytext_utf8_prefix(key, keylen, RULES_KEY_LABEL_MAX - 20);
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

struct lock_ctx {
    const struct rules_params *p;
    const struct snapshot *s;
    const struct snap_lock *l;
    const char *target, *class_, *key;
    int64_t now_ms;
};

static void
annotate_lock(struct alert *a, const struct lock_ctx *c)
{
    struct strbuf sum, desc;
    const struct snap_lock *l = c->l;
    int64_t age = c->now_ms - l->first_seen_ms;

    texts_init(&sum, &desc);
    text_adds(&desc, "Lock ");
    text_adds(&desc, c->key);
    text_adds(&desc, " (class ");
    text_adds(&desc, c->class_);
    text_adds(&desc, ", target ");
    text_adds(&desc, c->target);
    text_adds(&desc, ", format ");
    text_adds(&desc, l->format < formats_count ? formats_table[l->format].name : "unknown");
    text_adds(&desc, "): ");
    switch (a->name) {
    case ALERT_LOCK_LEAKED:
        text_adds(&sum, "Lock ");
        text_adds(&sum, c->key);
        text_adds(&sum, " on ");
        text_adds(&sum, c->target);
        text_adds(&sum, " has no TTL and will never expire");
        text_adds(&desc, "no TTL for at least leak_grace (");
        text_duration(&desc, c->p->leak_grace_ms);
        text_adds(&desc, "); ");
        text_holder(&desc, l);
        text_adds(&desc, ", held for ");
        text_duration(&desc, age);
        text_adds(&desc, ". Nothing will release it if its holder died: check the holder, "
                 "then lockctl release (or lockctl expire to give it a TTL).");
        break;
    case ALERT_LOCK_HELD_TOO_LONG:
        text_adds(&sum, "Lock ");
        text_adds(&sum, c->key);
        text_adds(&sum, " on ");
        text_adds(&sum, c->target);
        text_adds(&sum, " held for ");
        text_duration(&sum, age);
        text_adds(&desc, "the same ");
        text_holder(&desc, l);
        text_adds(&desc, " has held it for ");
        text_duration(&desc, age);
        text_adds(&desc, ", longer than max_hold (");
        text_duration(&desc, c->p->max_hold_ms);
        text_adds(&desc, "); ");
        text_ttl(&desc, l);
        text_adds(&desc, ". A watchdog may be renewing a lock whose work is stuck.");
        break;
    case ALERT_LOCK_REENTRANCY_HIGH:
        text_adds(&sum, "Lock ");
        text_adds(&sum, c->key);
        text_adds(&sum, " on ");
        text_adds(&sum, c->target);
        text_addf(&sum, " taken %" PRId64 " times by one holder", l->max_count);
        text_addf(&desc, "a hold count of %" PRId64 ", at or above max_reentrancy (%ld); ",
                  l->max_count, c->p->max_reentrancy);
        text_holder(&desc, l);
        text_adds(&desc, ", held for ");
        text_duration(&desc, age);
        text_adds(&desc, ", ");
        text_ttl(&desc, l);
        text_adds(&desc, ". A code path takes the lock more often than it releases it.");
        break;
    default:
        break;
    }
    texts_annotate(a, &sum, &desc);
}

static void
eval_locks(struct alertset *set, const struct rules_params *p, const char *target,
           const struct snapshot *s, int64_t now_ms)
{
    static const struct {
        uint8_t state;
        enum alert_name name;
    } per_lock[] = {
        { LOCK_LEAKED, ALERT_LOCK_LEAKED },
        { LOCK_LONG, ALERT_LOCK_HELD_TOO_LONG },
        { LOCK_REENTRANT_HIGH, ALERT_LOCK_REENTRANCY_HIGH },
    };
    char **classes;
    size_t i, k, nclasses = s->nclasses;

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
        struct lock_ctx c;
        char *key;

        if (l->class_idx >= nclasses)
            continue;
        if ((key = rules_key_label(l->key, l->key_len)) == NULL)
            continue;
        c.p = p;
        c.s = s;
        c.l = l;
        c.target = target;
        c.class_ = classes[l->class_idx];
        c.key = key;
        c.now_ms = now_ms;
        for (k = 0; k < sizeof(per_lock) / sizeof(per_lock[0]); k++) {
            struct alert_labels lab = { per_lock[k].name, target, c.class_, key };
            struct alert *a;

            if (!(l->states & per_lock[k].state))
                continue;
            if ((a = alertset_observe(set, &lab)) != NULL)
                annotate_lock(a, &c);
        }
        free(key);
    }
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

static void
eval_target_down(struct alertset *set, const char *target, const struct snapshot *s)
{
    struct alert_labels lab = { ALERT_LOCK_TARGET_DOWN, target, NULL, NULL };
    struct strbuf sum, desc;
    struct alert *a;
    char *err;

    if ((a = alertset_observe(set, &lab)) == NULL)
        return;
    texts_init(&sum, &desc);
    text_adds(&sum, "Target ");
    text_adds(&sum, target);
    text_adds(&sum, " cannot be scanned");
    text_adds(&desc, "The last scan of target ");
    text_adds(&desc, target);
    text_adds(&desc, " failed: ");
    err = sanitized(s->err, strnlen(s->err, sizeof(s->err)));
    text_adds(&desc, err != NULL ? err : "(out of memory)");
    free(err);
    text_adds(&desc, ". Its lock alerts keep their state until a scan succeeds again.");
    texts_annotate(a, &sum, &desc);
}

static void
eval_waits(struct alertset *set, const struct rules_params *p, const struct waitstats_view *w)
{
    double limit_us = (double)p->wait_p99_ms * 1000.0;
    size_t i;

    for (i = 0; i < w->nclasses; i++) {
        const struct waitstats_class *c = &w->classes[i];
        struct alert_labels lab = { ALERT_LOCK_WAIT_P99_HIGH, NULL, c->name, NULL };
        struct strbuf sum, desc;
        struct alert *a;

        if (c->window_count < (uint64_t)p->wait_min_samples || c->window_p99_us <= limit_us)
            continue;
        if ((a = alertset_observe(set, &lab)) == NULL)
            continue;
        texts_init(&sum, &desc);
        text_adds(&sum, "P99 acquire wait of lock class ");
        text_adds(&sum, c->name);
        text_adds(&sum, " is ");
        text_duration(&sum, (int64_t)(c->window_p99_us / 1000.0));
        text_adds(&desc, "Over the last wait_window (");
        text_duration(&desc, p->wait_window_ms);
        text_adds(&desc, "), clients waited ");
        text_duration(&desc, (int64_t)(c->window_p99_us / 1000.0));
        text_adds(&desc, " or less in 99% of ");
        text_addf(&desc, "%" PRIu64, c->window_count);
        text_adds(&desc, " acquires of class ");
        text_adds(&desc, c->name);
        text_adds(&desc, ", above wait_p99 (");
        text_duration(&desc, p->wait_p99_ms);
        text_adds(&desc, "). Holders keep the lock too long or too many clients contend.");
        texts_annotate(a, &sum, &desc);
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
            char *key = rules_key_label(is->key, is->key_len), *cls;
            struct alert_labels lab = { ALERT_LOCK_REDLOCK_SPLIT, groups[g].name, NULL, key };
            struct strbuf sum, desc;
            struct alert *a;

            cls = sanitized(is->cls, strnlen(is->cls, sizeof(is->cls)));
            lab.class_ = cls;
            if (key == NULL || cls == NULL || (a = alertset_observe(set, &lab)) == NULL) {
                free(key);
                free(cls);
                continue;
            }
            texts_init(&sum, &desc);
            text_adds(&sum, "Redlock group ");
            text_adds(&sum, groups[g].name);
            text_adds(&sum, is->kind == REDLOCK_SPLIT ? " has different holders of " :
                     " holds without a quorum ");
            text_adds(&sum, key);
            text_adds(&desc, "Lock ");
            text_adds(&desc, key);
            text_adds(&desc, " (class ");
            text_adds(&desc, cls);
            text_adds(&desc, ") in Redlock group ");
            text_adds(&desc, groups[g].name);
            if (is->kind == REDLOCK_SPLIT)
                text_addf(&desc, ": %u different holders at the same time, the most common "
                          "on %u of %zu nodes (quorum %zu). ", is->holders, is->best,
                          r->members, r->quorum);
            else {
                text_addf(&desc, ": held on %u of %zu nodes (quorum %zu) for ", is->held,
                          r->members, r->quorum);
                text_duration(&desc, now_ms - is->since_ms);
                text_adds(&desc, ", longer than its TTL. ");
            }
            text_adds(&desc, "Nodes: ");
            text_adds(&desc, is->nodes);
            text_adds(&desc, " (letters are holders, - not held, ? not scanned). Two clients "
                     "may both believe they hold it: check them, then release the minority "
                     "copies with lockctl on their nodes.");
            texts_annotate(a, &sum, &desc);
            free(key);
            free(cls);
        }
    }
}

void
rules_eval(struct alertset *set, const struct rules_params *p,
           const struct rules_target *targets, size_t ntargets,
           const struct waitstats_view *w, int64_t now_ms)
{
    size_t i;

    for (i = 0; i < ntargets; i++) {
        const struct rules_target *t = &targets[i];

        if (t->snap == NULL) {
            alertset_keep_target(set, t->name);
        } else if (!t->snap->ok) {
            eval_target_down(set, t->name, t->snap);
            alertset_keep_target(set, t->name);
        } else if (!t->fresh) {
            alertset_keep_target(set, t->name);
        } else {
            eval_locks(set, p, t->name, t->snap, now_ms);
        }
    }
    if (w != NULL)
        eval_waits(set, p, w);
}
