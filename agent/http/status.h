/*
 * status.h - the status page (GET /): what on-call looks at first.
 *
 * One self-contained HTML page, rendered from the same view as /metrics
 * and the JSON API: the targets (up or down, last scan), the alerts firing
 * in the agent, and the worst locks of each bad state (leaked, long,
 * reentrant_high) with key, class, format, holder, host and pid where the
 * format encodes them, age, TTL and the exact lockctl commands to inspect
 * and release each one.  Read-only: the page has no forms and no script,
 * loads nothing from elsewhere, and refreshes itself with a meta refresh.
 *
 * Keys, holders, class names, hosts and error texts are bytes from Redis
 * or from the network: they are sanitised to UTF-8 and HTML-escaped, so
 * they always render as text, never as markup.  The HTTP layer also sends
 * a Content-Security-Policy that forbids every script (STATUS_CSP).
 */
#ifndef LOCKWATCH_STATUS_H
#define LOCKWATCH_STATUS_H

#include <stddef.h>

#include "agent/agent.h"

/* No script, no frame, nothing fetched but the page itself and its
 * inline style. */
#define STATUS_CSP "default-src 'none'; style-src 'unsafe-inline'; " \
                   "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
#define STATUS_REFRESH_S  15            /* the page reloads itself this often */
#define STATUS_MAX_BYTES  (8u << 20)    /* cap on the page */
#define STATUS_ALERTS_MAX 100           /* alerts listed; the rest counted */

/*
 * Render the page for the agent's state now into a malloc'd body.
 * Returns 200, or 500 (out of memory, page over the cap) with *body NULL.
 */
int status_page(struct agent *a, char **body, size_t *len);

#endif
