/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http.h - the agent's HTTP server (libmicrohttpd): /metrics, /healthz,
 * /readyz, the JSON API and the landing page.  Every handler renders a
 * view of the newest snapshots; none waits for a scan.
 */
#ifndef LOCKWATCH_HTTP_H
#define LOCKWATCH_HTTP_H

#include "agent/agent.h"

struct http_server;

/* The [agent] http_* options (lockwatch.ini(5)). */
struct http_limits {
    unsigned int max_connections;
    unsigned int max_connections_per_client;
    int64_t request_timeout_ms;
    unsigned int max_api_requests;
};

/* Listen on host:port.  NULL with a message in err on failure.  May raise
 * the process's soft RLIMIT_NOFILE to fit max_connections. */
struct http_server *http_start(struct agent *a, const char *host, int port,
                               const struct http_limits *lim, char *err, size_t errlen);
void http_stop(struct http_server *h);

#endif
