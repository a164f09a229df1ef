/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_ha.c - the sample renderers of the replica and shard families
 * (docs/deploying.md "Replicas and shards"): lockwatch_ha_info, the one
 * series that names the replica, and lockwatch_ha_leader and
 * lockwatch_ha_unfenced, only where an election runs; and
 * lockwatch_shard_peer_up{shard}, one series per other shard that
 * shard_peers names (agent/peers.h), bounded by the configured shards.
 * Their rows are METRICS_HA_ROWS (metrics_impl.h).
 */
#include "agent/http/metrics_impl.h"

#include "agent/agent.h"

void
metrics_ha_info(struct metrics_out *o, const struct metric_family *mf)
{
    sb_addf(o->sb, "%s{replica=\"", mf->name);
    label_str(o->sb, o->v->replica != NULL ? o->v->replica : "");
    sb_addf(o->sb, "\",shard=\"%d\",shards=\"%d\"} 1\n", o->v->shard_index,
            o->v->shard_total > 1 ? o->v->shard_total : 1);
}

/* 1 while this agent leads its replicas (agent/leader.h); 0 while another
 * does or none; absent without an election. */
void
metrics_ha_leader(struct metrics_out *o, const struct metric_family *mf)
{
    if (o->v->has_leader)
        sb_addf(o->sb, "%s %d\n", mf->name, o->v->leader.leading ? 1 : 0);
}

/* 1 while this agent sends to the direct sinks unelected, unfenced (the
 * leader lock unreachable for longer than the lease + 1s: every replica
 * that cannot reach it does); 0 otherwise; absent without an election. */
void
metrics_ha_unfenced(struct metrics_out *o, const struct metric_family *mf)
{
    if (o->v->has_leader)
        sb_addf(o->sb, "%s %d\n", mf->name, o->v->leader.unelected ? 1 : 0);
}

/* 1 while the shard_peers URL of that shard answers as it, 0 once
 * PEER_DOWN_CHECKS checks in a row failed; absent without shard_peers. */
void
metrics_shard_peer_up(struct metrics_out *o, const struct metric_family *mf)
{
    size_t i;

    for (i = 0; i < o->v->npeers; i++)
        sb_addf(o->sb, "%s{shard=\"%d\"} %d\n", mf->name, o->v->peers[i].shard,
                o->v->peers[i].down ? 0 : 1);
}
