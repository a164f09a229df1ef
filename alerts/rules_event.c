/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rules_event.c - the holds and texts of the EVENT kinds (alert_kinds.h):
 * LockLeaseLost (a renewed lease that ran out without an unlock, or a
 * holder's own word that its lease ended: events expired_renewed and
 * lease_lost) and LockLeaseOverrun (a holder that reported a lock after
 * its lease ran out: event lease_overrun).  rules.c's walker
 * rules_eval_event() judges each recent event of the ring
 * (collectors/events/events.h) with them; the texts quote the event's
 * holder and detail, sanitised, within the caps of alerts/text.h.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alerts/rules_impl.h"
#include "alerts/text.h"

/* EVENT: "Lock K (class C, target T): ", the target left out when the
 * event has none (a holder's line about a lock no scan saw end). */
static void
event_intro(const struct rule_ctx *c, struct strbuf *desc)
{
    text_adds(desc, "Lock ");
    text_adds(desc, c->key);
    text_adds(desc, " (class ");
    text_adds(desc, c->class_);
    if (c->target != NULL) {
        text_adds(desc, ", target ");
        text_adds(desc, c->target);
    }
    text_adds(desc, "): ");
}

static void
event_holder(const struct rule_ctx *c, struct strbuf *t)
{
    const struct event *e = c->event;

    if (e->holderlen == 0) {
        text_adds(t, "its holder");
        return;
    }
    text_adds(t, "holder ");
    text_bytes(t, e->holder, e->holderlen, RULES_HOLDER_TEXT_MAX);
}

/* The event's own sentence, and when it was (a time, not an age: the
 * text stays true in the repeats of an alert whose event has left the
 * timeline, whose texts are no longer rewritten). */
static void
event_detail(const struct rule_ctx *c, struct strbuf *desc)
{
    const struct event *e = c->event;
    char *d = sanitized(e->detail, strlen(e->detail));

    text_adds(desc, " (");
    text_adds(desc, d != NULL ? d : "(out of memory)");
    free(d);
    text_adds(desc, "; at ");
    text_utc(desc, e->at_ms);
    text_adds(desc, "). ");
}

bool
lease_lost_holds(const struct rule_ctx *c)
{
    return c->event->kind == EVENT_EXPIRED_RENEWED || c->event->kind == EVENT_LEASE_LOST;
}

void
lease_lost_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct event *e = c->event;
    bool said = e->kind == EVENT_LEASE_LOST;

    text_adds(sum, "Lock ");
    text_adds(sum, c->key);
    if (c->target != NULL) {
        text_adds(sum, " on ");
        text_adds(sum, c->target);
    }
    text_adds(sum, " lost its lease while held by ");
    event_holder(c, sum);
    event_intro(c, desc);
    event_holder(c, desc);
    if (said) {
        text_adds(desc, " reported that its lease ended while it held the lock");
    } else {
        text_adds(desc, " had held it for ");
        text_duration(desc, (int64_t)(e->seconds * 1000.0));
        text_adds(desc, " and renewed it, then the renewals stopped and the lease ran out "
                  "without an unlock");
    }
    event_detail(c, desc);
    text_adds(desc, "The holder crashed, hung (a GC or stop-the-world pause, a stuck "
              "thread) or lost its connection; another client may take the lock while it "
              "still works. Check the holder; if it resumes, its work may overlap the next "
              "holder's (LockLeaseOverrun).");
}

/* An overrun: to the hundredth of a second below a minute (the window two
 * holders shared is often a fraction of one), the house format above;
 * rounded up, as it is said to be past the lease (%.2f wrote 4 ms "0.00s
 * past its lease"). */
static void
text_overrun(struct strbuf *t, double seconds)
{
    int64_t hundredths;

    if (seconds < 0.0)
        seconds = 0.0;
    hundredths = (int64_t)(seconds * 100.0);
    if ((double)hundredths < seconds * 100.0)
        hundredths++;
    if (seconds < 60.0)
        text_addf(t, "%" PRId64 ".%02" PRId64 "s", hundredths / 100, hundredths % 100);
    else
        text_duration_above(t, seconds * 1000.0, 0);
}

bool
overrun_holds(const struct rule_ctx *c)
{
    return c->event->kind == EVENT_LEASE_OVERRUN;
}

void
overrun_texts(const struct rule_ctx *c, struct strbuf *sum, struct strbuf *desc)
{
    const struct event *e = c->event;

    text_adds(sum, "Lock ");
    text_adds(sum, c->key);
    if (c->target != NULL) {
        text_adds(sum, " on ");
        text_adds(sum, c->target);
    }
    text_adds(sum, ": ");
    event_holder(c, sum);
    text_adds(sum, " worked ");
    text_overrun(sum, e->seconds);
    text_adds(sum, " past its lease");
    event_intro(c, desc);
    event_holder(c, desc);
    text_adds(desc, " still reported the lock ");
    text_overrun(desc, e->seconds);
    text_adds(desc, " after its lease ran out");
    event_detail(c, desc);
    text_adds(desc, "For that long two clients may both have been inside the lock: check "
              "the data it protects, then the holder (GC pauses, lease shorter than the "
              "work, a watchdog that cannot reach Redis).");
}
