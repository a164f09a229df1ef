/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * follow.h - follow mode: keyspace notifications keep a target's lock view
 * current between full scans (README "Follow mode").
 *
 * Follow mode sits above the scanner (collectors/scan/): it hooks into a
 * scanner's full scans (scanrun.h) to subscribe before each pass and keep
 * what the pass read, and between full scans re-reads the keys events name
 * and makes snapshots through the scanner's per-key step.  The scanner
 * knows nothing of it.
 */
#ifndef LOCKWATCH_FOLLOW_H
#define LOCKWATCH_FOLLOW_H

#include <stdatomic.h>

#include "collectors/scan/scan.h"

struct follow;

/*
 * Give sc follow mode: from now on its full scans follow a target whose
 * incremental = says so (and never with a NULL stop: lockwatchd --once).
 * sc owns the result (scanner_free() frees it).  NULL on ENOMEM.
 */
struct follow *follow_new(struct scanner *sc);

/*
 * After a good scanner_run() of fw's scanner that subscribed to the
 * target's keyspace notifications, keep the lock view current from
 * events, handing a new snapshot to publish whenever something changed
 * (at most every 250 ms) or a lock's state is due to change by time,
 * until a full scan is due: then 0, and the caller runs scanner_run() at
 * once (the reconcile).  0 too when *stop became true.  -1 at once when
 * the target is not following (scan mode: wait scan_interval as before).
 */
int follow_run(struct follow *fw, const struct target_conf *target,
               const struct scan_rules *rules, const atomic_int *stop,
               scan_publish_fn *publish, void *arg);

/*
 * A reload (SIGHUP): a target of fw's scanner that scans because
 * CONFIG GET showed notify-keyspace-events lacking a class reads the
 * setting again at its next full scan, whether its config changed or
 * not (otherwise it does so every FOLLOW_RECHECK_MS at most).  Only while
 * the target's thread is stopped.
 */
void follow_reload(struct follow *fw);

#endif
