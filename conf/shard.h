/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard.h - which agent of `shard = I/N` watches a target: rendezvous
 * (highest random weight) hashing of names, so every agent of the same
 * config agrees without talking, and growing N from n to n+1 moves only
 * the targets the new shard wins (about 1/(n+1) of them), none between
 * the old shards.
 *
 * A target's name is what is hashed, but for a member of a [redlock]
 * group, which hashes its first group's name: a group's members stay
 * together, so the group is compared where all of them are scanned.
 * Replicas (replica = NAME) with the same config compute the same split.
 */
#ifndef LOCKWATCH_SHARD_H
#define LOCKWATCH_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

/* The shard, 0..total-1, that the name name[0..len) hashes to; 0 when
 * total <= 1.  Stable across versions and machines (docs/deploying.md). */
int shard_of(const char *name, size_t len, int total);

/* The shard that watches the target named target of cfg (its group's
 * name hashed for a [redlock] member). */
int shard_of_target(const struct config *cfg, const char *target);

/* A target of cfg by name, this shard's or another's (cfg->away). */
const struct target_conf *config_target_anywhere(const struct config *cfg, const char *name);

/*
 * lockwatchd, after a load (not -n, not lockctl): move every target that
 * another shard watches from cfg->targets to cfg->away (with its shard in
 * cfg->away_shard), and every [redlock] group none of whose members is
 * left to cfg->away_redlocks.  Nothing moves when shard_total is 1.
 * 0, or -1 on ENOMEM (cfg unchanged).
 */
int config_shard_split(struct config *cfg);

#endif
