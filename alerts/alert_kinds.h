/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alert_kinds.h - the one list of alert kinds (docs/alerts.md).
 *
 * Each row is X(ENUM_SUFFIX, "alertname", severity, scope, holds, texts):
 *
 *   alertname  the alertname label, as sent, exported and documented
 *              (docs/alerts.md, lockwatchd.8; tests/integration/test_man.py
 *              reads the names from here)
 *   severity   CRITICAL, WARNING or INFO (enum alert_severity, worst first): the
 *              severity label the sinks send, the same value as the shipped
 *              Prometheus rules' (test_alerts_promtool compares them), and
 *              with the row order the status page's worst-first order
 *   scope      what one instance is about, which fixes its labels:
 *                LOCK    a bad lock (LOCK_BAD) that a target's new snapshot
 *                        keeps in detail        {target, class, key}
 *                TARGET  a target's newest snapshot, every tick   {target}
 *                SHARD   a shard of a cluster target's new snapshot
 *                        {target, shard = its slot ranges, node = the
 *                        address scanned}; bounded by the cluster's shards
 *                CLASS   a lock class's wait statistics, every tick {class}
 *                TREND   a lock class the scans have seen: its lease and
 *                        count trend (collectors/waits/classtrend.h) with
 *                        its hold statistics when it has samples, every
 *                        tick {class}
 *                GROUP   a key that a [redlock] group's report details
 *                        {target = the group, class, key}
 *                EVENT   an event of the ring (collectors/events/events.h)
 *                        pushed within the last RULES_EVENT_FIRING_MS
 *                        {target, class, key}: one instance per lock
 *                        however many events it had; it resolves when
 *                        its newest event is that old
 *                DEADLOCK a deadlock of the wait-for graph's report
 *                        (collectors/graph/graph.h) {target = its target,
 *                        "*" across targets, key = its keys "A -> B"}
 *                INVERSION a lock-order inversion of that report
 *                        {class = its two classes "A,B", escaped: rules.h}
 *   holds      bool holds(const struct rule_ctx *c): the condition, for one
 *              subject of the scope
 *   texts      void texts(const struct rule_ctx *c, struct strbuf *summary,
 *              struct strbuf *description): the two annotations
 *
 * holds and texts are functions in alerts/rules.c, which walks the
 * subjects of each scope (rules.h says when).  The list makes enum
 * alert_name (alertset.h), alert_name_str and alert_severity_of
 * (alertset.c) and the rule table (rules.c); the row order is the enum's,
 * the order in which the kinds of one subject are judged, and within one
 * severity the order of the status page (the worse kind first).  A new kind is one row here plus its holds
 * and texts in rules.c; a kind whose texts tell of one discrete event that
 * a newer one replaces (LockLostAtFailover: the last loss) also names the
 * event in rules.c's occurrences table, so that a new one while it fires
 * is sent at once (alertset_occurred).
 */
#ifndef LOCKWATCH_ALERT_KINDS_H
#define LOCKWATCH_ALERT_KINDS_H

#define ALERT_KINDS(X)                                                                  \
    /* state leaked: no TTL for leak_grace */                                           \
    X(LOCK_LEAKED,          "LockLeaked",         WARNING,  LOCK,   leaked_holds,    leaked_texts)    \
    /* state long: the same holder for longer than max_hold */                          \
    X(LOCK_HELD_TOO_LONG,   "LockHeldTooLong",    WARNING,  LOCK,   long_holds,      long_texts)      \
    /* state reentrant_high: a hold count at or above max_reentrancy */                 \
    X(LOCK_REENTRANCY_HIGH, "LockReentrancyHigh", WARNING,  LOCK,   reentrant_holds, reentrant_texts) \
    /* the window P99 above wait_p99, with at least wait_min_samples waits */           \
    X(LOCK_WAIT_P99_HIGH,   "LockWaitP99High",    WARNING,  CLASS,  wait_holds,      wait_texts)      \
    /* issue 28: hold P99.9 above lease_short_at of the lease at first sight */        \
    X(LOCK_LEASE_TOO_SHORT, "LockLeaseTooShort",  WARNING,  TREND,  lease_short_holds, lease_texts) \
    /* issue 28: count above count_surge_factor x max(baseline, count_surge_floor) */  \
    X(LOCK_COUNT_SURGE,     "LockCountSurge",     WARNING,  TREND,  surge_holds,     surge_texts)     \
    /* issue 28: lease above lease_long_factor x hold P99.9 (lease_too_long = on) */   \
    X(LOCK_LEASE_TOO_LONG,  "LockLeaseTooLong",   INFO,     TREND,  lease_long_holds, lease_texts)  \
    /* the last scan failed */                                                          \
    X(LOCK_TARGET_DOWN,     "LockTargetDown",     CRITICAL, TARGET, down_holds,      down_texts)      \
    /* a cluster shard failed in a scan that reached the others */                    \
    X(LOCK_SHARD_DOWN,      "LockShardDown",      CRITICAL, SHARD,  shard_down_holds, shard_down_texts) \
    /* the group's nodes disagree on the key (collectors/locks/redlock.h) */            \
    X(LOCK_REDLOCK_SPLIT,   "LockRedlockSplit",   CRITICAL, GROUP,  split_holds,     split_texts)     \
    /* locks gone at a restart, failover or flush, within RULES_LOST_FIRING_MS */       \
    X(LOCK_LOST_AT_FAILOVER, "LockLostAtFailover", CRITICAL, TARGET, lost_holds,     lost_texts)    \
    /* a cycle of waiters seen on two passes in a row (collectors/graph/) */            \
    X(LOCK_DEADLOCK,        "LockDeadlock",       CRITICAL, DEADLOCK, deadlock_holds, deadlock_texts) \
    /* class A held while acquiring B by one owner, B then A by another */             \
    X(LOCK_ORDER_INVERSION, "LockOrderInversion", WARNING,  INVERSION, inversion_holds, inversion_texts) \
    /* a holder kept working after its lease ran out (event lease_overrun) */          \
    X(LOCK_LEASE_OVERRUN,   "LockLeaseOverrun",   CRITICAL, EVENT,  overrun_holds,   overrun_texts)   \
    /* a renewed lease ran out without an unlock, or a holder said it lost its lease  \
     * (events expired_renewed, lease_lost) */                                          \
    X(LOCK_LEASE_LOST,      "LockLeaseLost",      WARNING,  EVENT,  lease_lost_holds, lease_lost_texts)

#endif
