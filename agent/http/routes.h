/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * routes.h - the contract between the router (agent/http/http.c) and the
 * handlers of its read routes: what a handler is given, what it gives
 * back, and the helpers that fill an answer; then the handlers that the
 * route table names, each declared here and defined in the file of its
 * concern.
 *
 * A read route answers GET and HEAD, takes no body and renders from a
 * view of the agent (agent/agent.h); its handler never sees
 * libmicrohttpd.  The release endpoint, which takes a body, is a route of
 * another kind (agent/http/release_http.h).
 */
#ifndef LOCKWATCH_ROUTES_H
#define LOCKWATCH_ROUTES_H

#include <stddef.h>

#include "agent/agent.h"

#define HTTP_CT_TEXT     "text/plain; charset=utf-8"
#define HTTP_CT_METRICS  "text/plain; version=0.0.4; charset=utf-8"
#define HTTP_CT_JSON     "application/json"
#define HTTP_CT_HTML     "text/html; charset=utf-8"

#define HTTP_OOM_TEXT    "internal error: out of memory\n"

struct MHD_Connection;
struct guard_stats;

struct http_request {
    struct agent *agent;
    const char *rest;               /* the path past a prefix route's prefix,
                                     * still percent-encoded; "" for an exact route */
    struct MHD_Connection *conn;    /* for http_query() */
    const struct guard_stats *http; /* the server's admission counters */
};

/* The answer; the router sends it with Cache-Control: no-store. */
struct http_response {
    unsigned int status;
    const char *ctype;
    char *body;                     /* malloc'd, the router's from now on;
                                     * NULL: no answer, the connection is dropped */
    size_t len;
    const char *const *headers;     /* more headers: name, value, ..., NULL;
                                     * static, or NULL for none */
};

typedef void (*http_read_fn)(const struct http_request *rq, struct http_response *out);

/* A text/plain answer, a copy of text (body NULL on ENOMEM). */
void http_text(struct http_response *out, unsigned int status, const char *text);
/* A JSON answer from a render_api_*() status and body; a 5xx without a
 * body becomes the text "out of memory" 500. */
void http_json(struct http_response *out, int status, char *body, size_t len);
/* The percent-decoded query value name (caller frees), NULL when absent
 * or empty ("?target=" means any); *bad set on a malformed escape, a NUL
 * byte or ENOMEM.  A JSON route's name is in its row's query column
 * (http.c): the router refuses the others before the handler runs. */
char *http_query(const struct http_request *rq, const char *name, int *bad);
/* Bytes of a client's text an error message echoes (keytext_ascii()). */
#define HTTP_ECHO_MAX 64
/* Whether every query parameter of c is one of known (space-separated
 * names): 0, or -1 with the message for a 400 in msg, naming the first
 * unknown one (printable ASCII, at most HTTP_ECHO_MAX bytes) and known.
 * The router checks the JSON routes' queries with it; a body route calls
 * it itself. */
int http_query_check(struct MHD_Connection *c, const char *known, char *msg, size_t len);

/* The handlers of the route table, by file. */
void serve_metrics(const struct http_request *rq, struct http_response *out);   /* metrics.c */
void serve_healthz(const struct http_request *rq, struct http_response *out);   /* health.c */
void serve_ready(const struct http_request *rq, struct http_response *out);     /* health.c */
void serve_locks(const struct http_request *rq, struct http_response *out);     /* api.c */
void serve_lock(const struct http_request *rq, struct http_response *out);      /* api.c */
void serve_alerts(const struct http_request *rq, struct http_response *out);    /* alerts_http.c */
void serve_classes(const struct http_request *rq, struct http_response *out);   /* classes_api.c */
void serve_deadlocks(const struct http_request *rq, struct http_response *out); /* deadlocks.c */
void serve_shard(const struct http_request *rq, struct http_response *out);     /* shard_http.c */
void serve_status(const struct http_request *rq, struct http_response *out);    /* status.c */
void serve_events(const struct http_request *rq, struct http_response *out);    /* events_http.c */

#endif
