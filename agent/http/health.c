/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * health.c - GET /healthz and GET /readyz: is the process up, and has
 * every target's last scan succeeded.
 *
 * /healthz says only that the process answers.  /readyz is 200 "ready"
 * once every target (every shard of a cluster target) was scanned whole
 * by its last scan, and 503 otherwise with one line per target that is
 * not, saying why; an agent with no targets is never ready, but for a
 * shard that no target hashes to (said above "ready").  A target in
 * follow mode whose reconciles keep finding drift gets a line too, above
 * "ready" (its view is still whole: each reconcile repairs it), as does
 * one that scans because notify-keyspace-events lacks a class while
 * following was meant (incremental = on, or a setting someone made, as
 * one left from an older release): the cost of scanning, said.  So does
 * another shard whose shard_peers URL counts as down (agent/peers.h):
 * this agent's own targets are fine, so it stays ready.
 */
#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "common/duration.h"
#include "common/log.h"

void
serve_healthz(const struct http_request *rq, struct http_response *out)
{
    (void)rq;
    http_text(out, 200, "ok\n");
}

void
serve_ready(const struct http_request *rq, struct http_response *out)
{
    struct strbuf sb;
    struct view v;
    int ready;

    if (agent_view(rq->agent, &v) == -1) {
        http_text(out, 500, HTTP_OOM_TEXT);
        return;
    }
    sb_init(&sb, 1 << 20);
    ready = render_ready(&v, &sb);
    view_release(&v);
    if (ready)
        sb_adds(&sb, "ready\n");
    out->status = ready ? 200 : 503;
    out->ctype = HTTP_CT_TEXT;
    out->body = sb_detach(&sb, &out->len);
}

int
render_ready(const struct view *v, struct strbuf *reason)
{
    size_t i;
    int ready = 1;

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;
        size_t k;

        /* a cluster target with a shard down is scanned, but not wholly */
        for (k = 0; s != NULL && s->ok && k < s->nshards; k++) {
            if (s->shards[k].ok)
                continue;
            ready = 0;
            sb_addf(reason, "target %s: shard %s (%s): %s\n", v->targets[i].name,
                    s->shards[k].shard, s->shards[k].node, s->shards[k].err);
        }
        /* follow mode losing events is said, but the view is still whole
         * as of the last full scan: not a reason to take the agent out;
         * nor events just lost (a cap): the full scan under way repairs it */
        if (s != NULL && s->ok &&
            (s->follow.drift || s->follow.behind_since_ms != 0 || s->follow.lacking))
            sb_addf(reason, "target %s: %s\n", v->targets[i].name, s->follow.note);
        /* nor a resharding: the view may lack the keys in motion */
        if (s != NULL && s->ok && s->keys_moved > 0)
            sb_addf(reason, "target %s: %llu key(s) of slots moving between shards were not "
                    "read where the last scan found them; the view may lack them until the "
                    "migration ends\n", v->targets[i].name,
                    (unsigned long long)s->keys_moved);
        if (s != NULL && s->ok)
            continue;
        ready = 0;
        sb_addf(reason, "target %s: %s", v->targets[i].name,
                s == NULL ? "no scan has completed yet" : s->err);
        if (s != NULL && s->last_good != NULL) {
            char age[32];

            duration_format((v->now_ms - s->last_success_ms) / 1000 * 1000, age, sizeof(age));
            sb_addf(reason, " (stale: the last good scan, %s old, is shown)", age);
        }
        sb_adds(reason, "\n");
    }
    /* a failed reload: said, the previous configuration still works */
    if (v->reload.failed) {
        char safe[LOG_DEFANG_MAX(sizeof(v->reload.why))], at[32];

        log_defang(safe, sizeof(safe), v->reload.why);
        duration_format((v->now_ms - v->reload.failed_ms) / 1000 * 1000, at, sizeof(at));
        sb_addf(reason, "config: the reload %s ago failed (%s): the previous configuration "
                "stays in effect; fix the file and reload again\n", at, safe);
    }
    /* who speaks to the direct sinks: said, never a reason to be unready */
    if (v->has_leader) {
        char said[1024];

        leader_describe(&v->leader, said, sizeof(said));
        sb_addf(reason, "leader: %s\n", said);
    }
    /* another shard's agent gone: said, its targets are not this agent's */
    for (i = 0; i < v->npeers; i++)
        if (v->peers[i].down) {
            render_peer_down(reason, v, &v->peers[i]);
            sb_adds(reason, ": its targets are watched by no agent unless a replica of it "
                    "is up\n");
        }
    if (v->ntargets == 0 && v->naway > 0)
        sb_addf(reason, "shard %d/%d: no target hashes here (%zu watched by other shards)\n",
                v->shard_index, v->shard_total, v->naway);
    else if (v->ntargets == 0) {
        ready = 0;
        sb_adds(reason, "no targets configured\n");
    }
    return ready;
}
