/*
 * scan.h - one full, paced scan of one Redis target into a snapshot.
 *
 * The scanner owns its Redis connection, its first-seen tracker and the
 * target's cumulative counters; all three survive from scan to scan (and
 * across config reloads, which hand the same scanner the new settings).
 * It is used by one thread at a time.
 */
#ifndef LOCKWATCH_SCAN_H
#define LOCKWATCH_SCAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf/config.h"
#include "collectors/snapshot.h"

struct scan_rules {
    int64_t leak_grace_ms;
    int64_t max_hold_ms;
    long max_reentrancy;
    const struct class_rule *classes;
    size_t nclasses;
};

struct scanner;

struct scanner *scanner_new(const char *target_name);
void scanner_free(struct scanner *sc);
const char *scanner_name(const struct scanner *sc);

/*
 * Scan every pattern of target once.  Returns a new snapshot (the caller
 * owns one reference): ok with the locks found, or !ok with err saying
 * what failed.  Returns NULL when *stop became true mid-scan (nothing to
 * publish) or on memory exhaustion (errno ENOMEM).  The connection is
 * opened on demand and kept open between scans; after an error it is
 * dropped and the next call reconnects.
 */
struct snapshot *scanner_run(struct scanner *sc, const struct target_conf *target,
                             const struct scan_rules *rules, const atomic_int *stop);

/* Drop the connection (next run reconnects). */
void scanner_disconnect(struct scanner *sc);

/* Unix time in ms, and a monotonic clock in ms. */
int64_t scan_now_ms(void);
int64_t scan_mono_ms(void);

#endif
