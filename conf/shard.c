/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard.c - rendezvous hashing of target names over `shard = I/N`, and
 * the split of a loaded config into the targets this shard watches and
 * those it leaves to the others (conf/shard.h).
 *
 * The weight of name k for shard i is mix(fnv1a64(k) ^ mix(i + golden)),
 * mix being SplitMix64's finaliser; the shard of k is the i of highest
 * weight (the lower i on a tie, which needs a 64-bit collision).  Each
 * name's weights are independent per shard, which is what makes adding
 * shard n move a name only when shard n outweighs every old one.
 */
#include "conf/shard.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t
mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t
fnv1a64(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

int
shard_of(const char *name, size_t len, int total)
{
    uint64_t h = fnv1a64(name, len), best = 0;
    int owner = 0;

    for (int i = 0; i < total; i++) {
        uint64_t w = mix64(h ^ mix64((uint64_t)i + 0x9e3779b97f4a7c15ULL));

        if (i == 0 || w > best) {
            best = w;
            owner = i;
        }
    }
    return owner;
}

/* The name a target is placed by: its first [redlock] group's, or its own. */
static const char *
placement_name(const struct config *cfg, const char *target)
{
    for (size_t g = 0; g < cfg->nredlocks; g++)
        for (size_t m = 0; m < cfg->redlocks[g].ntargets; m++)
            if (strcmp(cfg->redlocks[g].targets[m], target) == 0)
                return cfg->redlocks[g].name;
    return target;
}

int
shard_of_target(const struct config *cfg, const char *target)
{
    const char *k = placement_name(cfg, target);

    return shard_of(k, strlen(k), cfg->shard_total);
}

static bool
group_has_here(const struct config *cfg, const struct redlock_conf *r)
{
    for (size_t m = 0; m < r->ntargets; m++)
        if (config_target(cfg, r->targets[m]) != NULL)
            return true;
    return false;
}

/* Move the groups with no member left here (targets already split) into
 * away, which has room for all of them. */
static void
split_groups(struct config *cfg, struct redlock_conf *away)
{
    size_t g, keep = 0, naway = 0;

    for (g = 0; g < cfg->nredlocks; g++) {
        if (group_has_here(cfg, &cfg->redlocks[g]))
            cfg->redlocks[keep++] = cfg->redlocks[g];
        else
            away[naway++] = cfg->redlocks[g];
    }
    cfg->nredlocks = keep;
    cfg->away_redlocks = away;
    cfg->naway_redlocks = naway;
}

const struct target_conf *
config_target_anywhere(const struct config *cfg, const char *name)
{
    const struct target_conf *t = config_target(cfg, name);

    for (size_t i = 0; t == NULL && name != NULL && i < cfg->naway; i++)
        if (strcmp(cfg->away[i].name, name) == 0)
            t = &cfg->away[i];
    return t;
}

int
config_shard_split(struct config *cfg)
{
    size_t i, keep = 0, naway = 0, n = cfg->ntargets ? cfg->ntargets : 1;
    struct target_conf *away;
    struct redlock_conf *groups;
    int *owner, *shard;

    if (cfg->shard_total <= 1 || cfg->away != NULL)
        return 0;
    away = calloc(n, sizeof(*away));
    owner = calloc(n, sizeof(*owner));
    shard = calloc(n, sizeof(*shard));
    groups = calloc(cfg->nredlocks ? cfg->nredlocks : 1, sizeof(*groups));
    if (away == NULL || owner == NULL || shard == NULL || groups == NULL) {
        free(away);
        free(owner);
        free(shard);
        free(groups);
        return -1;
    }
    /* every owner first: placement reads the groups, which name targets */
    for (i = 0; i < cfg->ntargets; i++)
        owner[i] = shard_of_target(cfg, cfg->targets[i].name);
    for (i = 0; i < cfg->ntargets; i++) {
        if (owner[i] == cfg->shard_index) {
            cfg->targets[keep++] = cfg->targets[i];
        } else {
            shard[naway] = owner[i];
            away[naway++] = cfg->targets[i];
        }
    }
    free(owner);
    cfg->ntargets = keep;
    cfg->away = away;
    cfg->away_shard = shard;
    cfg->naway = naway;
    split_groups(cfg, groups);
    return 0;
}
