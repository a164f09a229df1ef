/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * events_http.c - GET /api/v1/events: the timeline of lock events (lease
 * lost, expired after renewal, overrun, lost at a failover, deadlock,
 * inversion, forced release) from the process's ring
 * (collectors/events/), as JSON (collectors/events/eventjson.h).
 *
 *   ?after=SEQ   only events newer than SEQ, oldest first (a follower
 *                passes the last answer's next_after); without it the
 *                newest events
 *   ?kind=K      one kind (a name of EVENT_KINDS)
 *   ?target=T    one target's events (any name: a removed target's
 *                events stay in the ring)
 *   ?limit=N     at most N events (1..EVENTS_MAX, default
 *                EVENTS_PAGE_DEFAULT)
 *
 * The page's size is bounded by the ring: EVENTS_MAX events, each a key
 * of at most EVENT_KEY_MAX bytes and a detail of EVENT_TEXT_MAX.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "collectors/events/eventjson.h"
#include "collectors/locks/lockjson.h"

#define KINDS_TEXT "kind must be one of lease_lost, expired_renewed, lease_overrun, " \
                   "lost_at_failover, deadlock, inversion, force_release"

/* A whole number lo..hi from a query value into *v; -1 when it is not. */
static int
query_u64(const char *text, uint64_t lo, uint64_t hi, uint64_t *v)
{
    char *end;
    unsigned long long n;

    if (text[0] < '0' || text[0] > '9')
        return -1;              /* strtoull takes "-1" and " 1" */
    errno = 0;
    n = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || n < lo || n > hi)
        return -1;
    *v = (uint64_t)n;
    return 0;
}

/* The query into q; NULL, or what is wrong with it (400). */
static const char *
parse_query(const char *after, const char *kind, const char *limit, struct events_query *q)
{
    uint64_t n;

    q->has_after = after != NULL;
    if (after != NULL && query_u64(after, 0, UINT64_MAX, &q->after) == -1)
        return "after must be a whole number (the next_after of the previous answer)";
    q->kind = -1;
    if (kind != NULL && (q->kind = event_kind_of(kind, strlen(kind))) < 0)
        return KINDS_TEXT;
    q->limit = EVENTS_PAGE_DEFAULT;
    if (limit != NULL) {
        if (query_u64(limit, 1, EVENTS_MAX, &n) == -1)
            return "limit must be an integer from 1 to 1024";
        q->limit = (size_t)n;
    }
    return NULL;
}

/* GET /api/v1/events[?after=&kind=&target=&limit=] */
void
serve_events(const struct http_request *rq, struct http_response *out)
{
    struct events_query q;
    char *after, *kind, *target, *limit, *body = NULL;
    const char *msg;
    size_t len = 0;
    int bad = 0, status = 500;
    json_t *page;

    _Static_assert(EVENTS_MAX == 1024, "the limit message names EVENTS_MAX");
    after = http_query(rq, "after", &bad);
    kind = http_query(rq, "kind", &bad);
    target = http_query(rq, "target", &bad);
    limit = http_query(rq, "limit", &bad);
    memset(&q, 0, sizeof(q));
    if (bad) {
        status = render_api_error(400, "malformed percent-encoding in the query", &body, &len);
    } else if ((msg = parse_query(after, kind, limit, &q)) != NULL) {
        status = render_api_error(400, msg, &body, &len);
    } else {
        q.target = target;
        if ((page = events_page_json(&q)) != NULL &&
            (body = json_dumps(page, JSON_COMPACT | LOCKJSON_REALS)) != NULL) {
            len = strlen(body);
            status = 200;
        }
        json_decref(page);
    }
    free(after);
    free(kind);
    free(target);
    free(limit);
    http_json(out, status, body, len);
}
