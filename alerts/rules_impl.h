/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rules_impl.h - what the files of the alert rules share; internal to
 * alerts/rules*.c.
 *
 *   rules.c        the rule table (made from ALERT_KINDS), the walkers of
 *                  each scope, the kinds' holds and texts, the text helpers
 *   rules_event.c  the EVENT kinds' holds and texts (LockLeaseLost,
 *                  LockLeaseOverrun: leases lost while held)
 *
 * Kept apart so rules.c stays one file under the size limit.  A kind's
 * holds and texts in another file are named in the rule table like any
 * other: their prototypes go here.
 */
#ifndef LOCKWATCH_RULES_IMPL_H
#define LOCKWATCH_RULES_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alerts/rules.h"
#include "common/strbuf.h"

/* What rules are judged on: the scope's subject and its labels.  A walker
 * sets the fields of its scope (alert_kinds.h) and leaves the rest NULL,
 * so the label fields are exactly the instance's labels. */
struct rule_ctx {
    const struct rules_conf *p;
    int64_t now_ms;
    const char *target;                 /* LOCK, TARGET; GROUP: the group */
    const char *class_;                 /* LOCK, CLASS, GROUP (sanitised) */
    const char *key;                    /* LOCK, GROUP: the key label */
    const char *shard, *node;           /* SHARD (sanitised) */
    const struct snapshot *snap;        /* LOCK, TARGET, SHARD */
    const struct snap_shard *sh;        /* SHARD */
    const struct snap_lock *lock;       /* LOCK */
    const struct waitstats_class *wait; /* CLASS; TREND: NULL without holds */
    const struct classtrend_class *trend;   /* TREND */
    const struct redlock_report *report;    /* GROUP */
    const struct redlock_issue *issue;      /* GROUP */
    const struct event *event;              /* EVENT */
    const struct graph_deadlock *dl;        /* DEADLOCK */
    const struct graph_inversion *inv;      /* INVERSION */
};

enum rule_scope { SCOPE_LOCK, SCOPE_TARGET, SCOPE_SHARD, SCOPE_CLASS, SCOPE_TREND, SCOPE_GROUP,
                  SCOPE_EVENT, SCOPE_DEADLOCK, SCOPE_INVERSION };

/* Arbitrary bytes, sanitised to UTF-8: at most max (<= RULES_HOLDER_TEXT_MAX)
 * input bytes, and an ellipsis when cut. */
void text_bytes(struct strbuf *t, const char *p, size_t n, size_t max);
/* Formats for numbers and ASCII only: the output is cut as bytes. */
__attribute__((format(printf, 2, 3)))
void text_addf(struct strbuf *t, const char *fmt, ...);
/* n bytes sanitised to UTF-8 (keytext), NUL-terminated, malloc'd; NULL on
 * ENOMEM. */
char *sanitized(const char *p, size_t n);

/* rules_event.c: the EVENT kinds (alert_kinds.h) */
bool lease_lost_holds(const struct rule_ctx *c);
void lease_lost_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc);
bool overrun_holds(const struct rule_ctx *c);
void overrun_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc);

/* rules_graph.c: the DEADLOCK and INVERSION kinds (alert_kinds.h) */
bool deadlock_holds(const struct rule_ctx *c);
void deadlock_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc);
bool inversion_holds(const struct rule_ctx *c);
void inversion_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc);

#endif
