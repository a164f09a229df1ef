/*
 * http.h - the agent's HTTP server (libmicrohttpd): /metrics, /healthz,
 * /readyz, the JSON API and the landing page.  Every handler renders a
 * view of the newest snapshots; none waits for a scan.
 */
#ifndef LOCKWATCH_HTTP_H
#define LOCKWATCH_HTTP_H

#include "agent/agent.h"

struct http_server;

/* Listen on host:port.  NULL with a message in err on failure. */
struct http_server *http_start(struct agent *a, const char *host, int port,
                               char *err, size_t errlen);
void http_stop(struct http_server *h);

#endif
