/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alert_kinds.h - the one list of alert kinds (SPEC "Alerts").
 *
 * Each row is X(ENUM_SUFFIX, "alertname", scope, holds, texts):
 *
 *   alertname  the alertname label, as sent, exported and documented
 *              (docs/alerts.md, lockwatchd.8; tests/integration/test_man.py
 *              reads the names from here)
 *   scope      what one instance is about, which fixes its labels:
 *                LOCK    a bad lock (LOCK_BAD) that a target's new snapshot
 *                        keeps in detail        {target, class, key}
 *                TARGET  a target's newest snapshot, every tick   {target}
 *                SHARD   a shard of a cluster target's new snapshot
 *                        {target, shard = its slot ranges, node = the
 *                        address scanned}; bounded by the cluster's shards
 *                CLASS   a lock class's wait statistics, every tick {class}
 *                GROUP   a key that a [redlock] group's report details
 *                        {target = the group, class, key}
 *   holds      bool holds(const struct rule_ctx *c): the condition, for one
 *              subject of the scope
 *   texts      void texts(const struct rule_ctx *c, struct strbuf *summary,
 *              struct strbuf *description): the two annotations
 *
 * holds and texts are functions in alerts/rules.c, which walks the
 * subjects of each scope (rules.h says when).  The list makes enum
 * alert_name (alertset.h), alert_name_str (alertset.c) and the rule table
 * (rules.c); the row order is the enum's and the order in which the kinds
 * of one subject are judged.  A new kind is one row here plus its holds
 * and texts in rules.c.
 */
#ifndef LOCKWATCH_ALERT_KINDS_H
#define LOCKWATCH_ALERT_KINDS_H

#define ALERT_KINDS(X)                                                                  \
    /* state leaked: no TTL for leak_grace */                                           \
    X(LOCK_LEAKED,          "LockLeaked",         LOCK,   leaked_holds,    leaked_texts)    \
    /* state long: the same holder for longer than max_hold */                          \
    X(LOCK_HELD_TOO_LONG,   "LockHeldTooLong",    LOCK,   long_holds,      long_texts)      \
    /* state reentrant_high: a hold count at or above max_reentrancy */                 \
    X(LOCK_REENTRANCY_HIGH, "LockReentrancyHigh", LOCK,   reentrant_holds, reentrant_texts) \
    /* the window P99 above wait_p99, with at least wait_min_samples waits */           \
    X(LOCK_WAIT_P99_HIGH,   "LockWaitP99High",    CLASS,  wait_holds,      wait_texts)      \
    /* the last scan failed */                                                          \
    X(LOCK_TARGET_DOWN,     "LockTargetDown",     TARGET, down_holds,      down_texts)      \
    /* a cluster shard failed in a scan that reached the others */                    \
    X(LOCK_SHARD_DOWN,      "LockShardDown",      SHARD,  shard_down_holds, shard_down_texts) \
    /* the group's nodes disagree on the key (collectors/locks/redlock.h) */            \
    X(LOCK_REDLOCK_SPLIT,   "LockRedlockSplit",   GROUP,  split_holds,     split_texts)

#endif
