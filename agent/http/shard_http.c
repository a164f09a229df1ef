/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_http.c - GET /api/v1/shard: where this agent stands among its
 * replicas and shards (docs/deploying.md): its replica name, shard I of
 * N, the targets it watches and those other shards watch, each with the
 * shard and, when shard_peers is set, that shard's base URL.
 *
 *   {"replica":"a","shard":0,"shards":2,"targets":["orders"],
 *    "elsewhere":[{"target":"jobs","shard":1,"peer":"http://lw-1:9717"}]}
 *
 * The peers' checks (agent/peers.h) are said where the split is shown:
 * view_peer_down() and render_peer_down() serve /readyz and the status
 * page.
 *
 * Target names are config names ([a-zA-Z0-9_.-]); the replica and peers
 * were checked by the config loader.  Cost grows with the config, not
 * with the locks.
 */
#include <jansson.h>
#include <string.h>

#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "collectors/locks/lockjson.h"

const char *
view_peer(const struct view *v, int shard)
{
    if (v->shard_peers == NULL || shard < 0 || shard >= v->shard_total)
        return NULL;
    return v->shard_peers[shard];
}

const struct peer_view *
view_peer_down(const struct view *v, int shard)
{
    size_t i;

    for (i = 0; i < v->npeers; i++)
        if (v->peers[i].shard == shard)
            return v->peers[i].down ? &v->peers[i] : NULL;
    return NULL;
}

void
render_peer_down(struct strbuf *sb, const struct view *v, const struct peer_view *pv)
{
    const char *peer = view_peer(v, pv->shard);

    sb_addf(sb, "shard %d/%d (%s): does not answer as that shard for %lld s (%s)", pv->shard,
            v->shard_total, peer != NULL ? peer : "?", (long long)(pv->failing_ms / 1000),
            pv->err);
}

static json_t *
away_json(const struct view *v, size_t i)
{
    const char *peer = view_peer(v, v->away[i].shard);

    return json_pack("{s:s,s:i,s:o}", "target", v->away[i].name, "shard", v->away[i].shard,
                     "peer", peer != NULL ? json_string(peer) : json_null());
}

int
render_api_shard(const struct view *v, char **body, size_t *len)
{
    json_t *root, *here = json_array(), *away = json_array();
    size_t i;
    int bad = here == NULL || away == NULL;
    char *s;

    for (i = 0; !bad && i < v->ntargets; i++)
        bad |= json_array_append_new(here, json_string(v->targets[i].name));
    for (i = 0; !bad && i < v->naway; i++)
        bad |= json_array_append_new(away, away_json(v, i));
    root = bad ? NULL : json_pack("{s:o,s:i,s:i,s:O,s:O}",
                                  "replica", v->replica != NULL ? json_string(v->replica) :
                                  json_null(), "shard", v->shard_index,
                                  "shards", v->shard_total, "targets", here,
                                  "elsewhere", away);
    json_decref(here);
    json_decref(away);
    if (root == NULL)
        return 500;
    s = json_dumps(root, JSON_COMPACT | LOCKJSON_REALS);
    json_decref(root);
    if (s == NULL)
        return 500;
    *body = s;
    *len = strlen(s);
    return 200;
}

void
serve_shard(const struct http_request *rq, struct http_response *out)
{
    struct view v;
    char *body = NULL;
    size_t len = 0;
    int status;

    if (agent_view(rq->agent, &v) == -1) {
        http_text(out, 500, HTTP_OOM_TEXT);
        return;
    }
    status = render_api_shard(&v, &body, &len);
    view_release(&v);
    http_json(out, status, body, len);
}
