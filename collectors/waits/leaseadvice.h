/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * leaseadvice.h - the one judgement of a class's lease against its holds
 * and of its lock count against its baseline (issue 28), shared by the
 * alert rules (LockLeaseTooShort, LockLeaseTooLong, LockCountSurge), the
 * API's /api/v1/classes advice and lockctl classes, so all three say the
 * same thing.
 *
 * A lease is judged only with at least lease_min_holds holds in the
 * window and a lease seen (a TTL at first sight in the window):
 *  - too short: hold P99.9 > lease_short_at x lease;
 *  - too long:  lease > lease_long_factor x hold P99.9;
 * the lease that would fit is 2 x hold P99.9 rounded up to a round
 * duration (lease_suggest_ms).  A watchdog class (classtrend.h: its
 * locks are renewed) is judged by its renewal period instead, which is
 * what must fit in the lease while the holder lives: too short when the
 * period is above lease_short_at x lease (suggested: 3 x the period, as
 * Redisson and liblockwatch renew every lease / 3); headroom is lease /
 * period; too long as above.  A count surges when it is above
 * count_surge_factor x max(baseline, count_surge_floor), once the
 * baseline is known.  Pure: no locks, no I/O, no clock.
 */
#ifndef LOCKWATCH_LEASEADVICE_H
#define LOCKWATCH_LEASEADVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "collectors/waits/classtrend.h"
#include "collectors/waits/waitstats.h"
#include "conf/config.h"

enum lease_verdict {
    LEASE_NO_LEASE,             /* no TTL at first sight in the window */
    LEASE_FEW_HOLDS,            /* fewer than lease_min_holds holds */
    LEASE_FITS,
    LEASE_TOO_SHORT,
    LEASE_TOO_LONG,
    LEASE_VERDICTS
};

struct lease_judgement {
    enum lease_verdict verdict;
    bool headroom_known;        /* lease and holds both known */
    double headroom;            /* lease / hold P99.9; a watchdog's: lease /
                                 * renewal period */
    int64_t suggest_ms;         /* the lease that would fit; 0: none */
};

/* Judge trend's lease against hold's window (either may be NULL). */
void lease_judge(const struct rules_conf *p, const struct classtrend_class *trend,
                 const struct waitstats_class *hold, struct lease_judgement *out);

/* 2 x p999_us rounded up to a round duration, in ms (at least 1 s). */
int64_t lease_suggest_ms(double p999_us);

/* "no_lease", "few_holds", "fits", "too_short", "too_long". */
const char *lease_verdict_str(enum lease_verdict v);

/* The count above which the class surges (count_surge_factor x
 * max(baseline, count_surge_floor)); 0 while the baseline is unknown. */
double count_surge_threshold(const struct rules_conf *p, const struct classtrend_class *c);
bool count_surges(const struct rules_conf *p, const struct classtrend_class *c);

/* LockWaitP99High's condition: the wait P99 of wait_window above wait_p99,
 * with at least wait_min_samples waits in it (false for w NULL); what
 * /api/v1/classes says as wait_p99_high and lockctl classes marks. */
bool wait_p99_high(const struct rules_conf *p, const struct waitstats_class *w);

#endif
