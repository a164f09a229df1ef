/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * leaseadvice.c - a class's lease against its holds, its count against
 * its baseline (leaseadvice.h has the rules), and the round lease to
 * suggest.
 */
#include "collectors/waits/leaseadvice.h"

#include <stddef.h>

static const char *const verdict_names[LEASE_VERDICTS] = {
    [LEASE_NO_LEASE] = "no_lease",
    [LEASE_FEW_HOLDS] = "few_holds",
    [LEASE_FITS] = "fits",
    [LEASE_TOO_SHORT] = "too_short",
    [LEASE_TOO_LONG] = "too_long",
};

/* Round leases, in seconds: a suggestion is the first at or above 2 x
 * hold P99.9; past the last, whole hours. */
static const int64_t round_s[] = {
    1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 900, 1200, 1800, 2700, 3600,
};

const char *
lease_verdict_str(enum lease_verdict v)
{
    return (unsigned)v < LEASE_VERDICTS ? verdict_names[v] : "unknown";
}

int64_t
lease_suggest_ms(double p999_us)
{
    double want_s = 2.0 * p999_us / 1e6;
    size_t i;

    for (i = 0; i < sizeof(round_s) / sizeof(round_s[0]); i++)
        if ((double)round_s[i] >= want_s)
            return round_s[i] * 1000;
    if (want_s > 30.0 * 86400.0)
        want_s = 30.0 * 86400.0;
    return ((int64_t)(want_s / 3600.0) + 1) * 3600 * 1000;
}

/* A renewed lease expires only when renewals stop for a whole lease:
 * the renewal period is what must fit in it, not the holds.  A period the
 * scans never saw (the TTL never read below the lease) is short, but how
 * short is not known: no headroom. */
static void
judge_watchdog(const struct rules_conf *p, const struct classtrend_class *t,
               const struct waitstats_class *hold, struct lease_judgement *out)
{
    double lease_ms = (double)t->lease_ms;

    out->headroom_known = t->renewal_ms > 0;
    out->headroom = t->renewal_ms > 0 ? lease_ms / (double)t->renewal_ms : 0.0;
    out->verdict = LEASE_FITS;
    if ((double)t->renewal_ms > p->lease_short_at * lease_ms) {
        out->verdict = LEASE_TOO_SHORT;
        out->suggest_ms = lease_suggest_ms(1.5 * 1000.0 * (double)t->renewal_ms);     /* 3 x period */
    } else if (hold != NULL && hold->hold_window_count >= (uint64_t)p->lease_min_holds &&
               lease_ms * 1000.0 > (double)p->lease_long_factor *
               (hold->hold_p999_us > 1.0 ? hold->hold_p999_us : 1.0)) {
        out->verdict = LEASE_TOO_LONG;
    }
}

void
lease_judge(const struct rules_conf *p, const struct classtrend_class *trend,
            const struct waitstats_class *hold, struct lease_judgement *out)
{
    double lease_us, p999;

    out->verdict = LEASE_NO_LEASE;
    out->headroom_known = false;
    out->headroom = 0.0;
    out->suggest_ms = 0;
    if (hold != NULL && hold->hold_window_count > 0)
        out->suggest_ms = lease_suggest_ms(hold->hold_p999_us);
    if (trend == NULL || !trend->lease_known)
        return;
    if (trend->watchdog) {
        judge_watchdog(p, trend, hold, out);
        return;
    }
    out->verdict = LEASE_FEW_HOLDS;
    if (hold == NULL || hold->hold_window_count == 0)
        return;
    lease_us = (double)trend->lease_ms * 1000.0;
    p999 = hold->hold_p999_us > 1.0 ? hold->hold_p999_us : 1.0;
    out->headroom_known = true;
    out->headroom = lease_us / p999;
    if (hold->hold_window_count < (uint64_t)p->lease_min_holds)
        return;
    if (hold->hold_p999_us > p->lease_short_at * lease_us)
        out->verdict = LEASE_TOO_SHORT;
    else if (lease_us > (double)p->lease_long_factor * p999)
        out->verdict = LEASE_TOO_LONG;
    else
        out->verdict = LEASE_FITS;
}

double
count_surge_threshold(const struct rules_conf *p, const struct classtrend_class *c)
{
    double base;

    if (!c->baseline_known)
        return 0.0;
    base = c->baseline > (double)p->count_surge_floor ? c->baseline : (double)p->count_surge_floor;
    return (double)p->count_surge_factor * base;
}

bool
count_surges(const struct rules_conf *p, const struct classtrend_class *c)
{
    return c->baseline_known && (double)c->count > count_surge_threshold(p, c);
}

bool
wait_p99_high(const struct rules_conf *p, const struct waitstats_class *w)
{
    return w != NULL && w->window_count >= (uint64_t)p->wait_min_samples &&
        w->window_p99_us > (double)p->wait_p99_ms * 1000.0;
}
