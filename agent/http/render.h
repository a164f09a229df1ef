/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * render.h - what HTTP and --once show: the Prometheus exposition and the
 * JSON lock API, both rendered from a view (immutable snapshots).
 */
#ifndef LOCKWATCH_RENDER_H
#define LOCKWATCH_RENDER_H

#include <stddef.h>

#include "common/strbuf.h"
#include "agent/agent.h"

#define RENDER_MAX_BYTES   (256u * 1024 * 1024)  /* cap on one response */
#define API_PAGE_MAX_BYTES (8u * 1024 * 1024)    /* cap on one page of the lock list */
#define OFFENDER_KEY_MAX   200                   /* bytes of a key label */
#define OFFENDER_HOLDER_MAX 128                  /* bytes of a holder label */

/* Prometheus text format 0.0.4.  0, or -1 when the buffer failed. */
int render_metrics(const struct view *v, struct strbuf *sb);

/* Readiness: 1 ready, 0 not; reason lists each target that is not. */
int render_ready(const struct view *v, struct strbuf *reason);

/* The JSON API.  Each returns an HTTP status and a malloc'd body.  A list
 * is one page of at most API_PAGE_MAX_BYTES (api.c). */
struct api_query {
    const char *state;          /* NULL = all */
    const char *target;         /* NULL = any */
    const char *class_;         /* NULL = any */
    const char *limit;          /* NULL = default */
    const char *offset;         /* NULL = 0: the first page */
};
int render_api_locks(const struct view *v, const struct api_query *q,
                     char **body, size_t *len);
int render_api_lock(const struct view *v, const char *key, size_t keylen,
                    const char *target, char **body, size_t *len);
/* GET /api/v1/shard (shard_http.c): replica, shard, the targets here
 * and elsewhere. */
int render_api_shard(const struct view *v, char **body, size_t *len);
/* The base URL of shard `shard` from shard_peers; NULL when unset. */
const char *view_peer(const struct view *v, int shard);
/* That shard's peer when its checks count it down (agent/peers.h); NULL
 * while it answers or is not checked. */
const struct peer_view *view_peer_down(const struct view *v, int shard);
/* "shard I/N (URL): does not answer as that shard for S s (why)" into sb, for
 * a peer down. */
void render_peer_down(struct strbuf *sb, const struct view *v, const struct peer_view *pv);
/* {"error": msg} with the given status. */
int render_api_error(int status, const char *msg, char **body, size_t *len);

#endif
