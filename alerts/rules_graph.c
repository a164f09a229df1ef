/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rules_graph.c - the holds and texts of the wait-for graph's kinds
 * (alert_kinds.h): LockDeadlock (holders waiting for each other in a
 * cycle, confirmed over two passes) and LockOrderInversion (two lock
 * classes taken in both orders).  rules.c's rules_eval_graph() judges each
 * deadlock and inversion of a graph report (collectors/graph/graph.h) with
 * them; owners, keys and holder ids are quoted sanitised, within the caps
 * of alerts/text.h.
 */
#include <stdlib.h>
#include <string.h>

#include "alerts/rules_impl.h"
#include "alerts/text.h"
#include "collectors/graph/graph.h"

/* Every deadlock of the report holds while the report has it. */
bool
deadlock_holds(const struct rule_ctx *c)
{
    return c->dl->nsteps >= 2;
}

/* "holder H" and, when the lock is on a target, " (target T)". */
static void
text_step_lock(struct strbuf *t, const struct graph_step *s)
{
    text_bytes(t, s->key.p, s->key.len, RULES_HOLDER_TEXT_MAX);
    if (s->target[0] != '\0') {
        text_adds(t, " (target ");
        text_adds(t, s->target);
        text_adds(t, ")");
    }
}

void
deadlock_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct graph_deadlock *d = c->dl;
    const struct graph_step *b = &d->steps[d->breaker];
    size_t i;

    text_addf(sum, "Deadlock of %zu lock holders: ", d->nsteps);
    text_adds(sum, c->key);
    text_addf(desc, "%zu holders wait for each other in a cycle, seen on two passes in a "
              "row, ", d->nsteps);
    text_for(desc, d->since_ms, c->now_ms);
    text_adds(desc, ": ");
    for (i = 0; i < d->nsteps; i++) {
        const struct graph_step *s = &d->steps[i];

        text_bytes(desc, s->waiter.p, s->waiter.len, RULES_HOLDER_TEXT_MAX);
        text_adds(desc, " waits for ");
        text_step_lock(desc, s);
        text_adds(desc, ", held by ");
        text_bytes(desc, s->holder.p, s->holder.len, RULES_HOLDER_TEXT_MAX);
        if (s->unconfirmed[0] != '\0') {
            text_adds(desc, " (by its own lines; target ");
            text_adds(desc, s->unconfirmed);
            text_adds(desc, " cannot confirm it: its last scan failed or was partial)");
        }
        text_adds(desc, "; ");
    }
    text_adds(desc, "none can proceed on its own. Release ");
    text_step_lock(desc, b);
    text_adds(desc, ", held by ");
    text_bytes(desc, b->holder.p, b->holder.len, RULES_HOLDER_TEXT_MAX);
    if (b->holder_id.len > 0) {
        /* the owner is no holder id: lockctl release --holder takes this */
        text_adds(desc, " as holder id ");
        text_bytes(desc, b->holder_id.p, b->holder_id.len, RULES_HOLDER_TEXT_MAX);
        if (b->holder_id.cut && b->holder_id.len <= RULES_HOLDER_TEXT_MAX)
            text_adds(desc, "\xe2\x80\xa6");
    }
    if (b->held_since_ms > 0) {
        text_adds(desc, " for ");
        text_duration(desc, c->now_ms - b->held_since_ms);
    }
    text_adds(desc, " (the youngest hold: the least work lost), or restart that holder: "
              "the others then proceed. `lockctl deadlocks` prints the release command to "
              "paste (--holder is the holder id, not the owner). Then take these locks in one "
              "order everywhere.");
    for (i = 0; i < d->nsteps && d->steps[i].target[0] != '\0'; i++)
        ;
    if (i < d->nsteps)
        text_adds(desc, " Keys no target's patterns cover are known only from their owners' "
                  "lines: an owner that died or restarted (a new owner) never says it let go, "
                  "so if they did, this stays until the agent restarts. Add those keys' "
                  "pattern to a target so that its scans vouch for them.");
}

bool
inversion_holds(const struct rule_ctx *c)
{
    return c->inv->class_a[0] != '\0';
}

static void
text_site(struct strbuf *t, const struct graph_site *s, const char *held, const char *wanted)
{
    text_adds(t, "owner ");
    text_bytes(t, s->owner.p, s->owner.len, RULES_HOLDER_TEXT_MAX);
    text_adds(t, " held ");
    text_adds(t, held);
    text_adds(t, " (");
    text_bytes(t, s->held_key.p, s->held_key.len, RULES_HOLDER_TEXT_MAX);
    text_adds(t, ") while acquiring ");
    text_adds(t, wanted);
    text_adds(t, " (");
    text_bytes(t, s->wanted_key.p, s->wanted_key.len, RULES_HOLDER_TEXT_MAX);
    text_adds(t, ")");
}

void
inversion_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct graph_inversion *v = c->inv;
    char *a = sanitized(v->class_a, strlen(v->class_a));
    char *b = sanitized(v->class_b, strlen(v->class_b));

    if (a == NULL || b == NULL)
        goto out;
    text_adds(sum, "Lock classes ");
    text_adds(sum, a);
    text_adds(sum, " and ");
    text_adds(sum, b);
    text_adds(sum, " are taken in both orders");
    text_adds(desc, "The two orders can deadlock when they run at the same time: ");
    text_site(desc, &v->ab, a, b);
    text_adds(desc, "; ");
    text_site(desc, &v->ba, b, a);
    text_adds(desc, ". Take them in one order everywhere (for example ");
    text_adds(desc, a);
    text_adds(desc, " first).");
out:
    free(a);
    free(b);
}
