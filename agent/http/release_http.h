/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * release_http.h - POST /api/v1/locks/release: the guarded release over
 * HTTP (SPEC "Guarded release", "HTTP"), and the counters behind
 * lockwatch_releases_total (a row of metrics.c).
 *
 * Off unless [unlock] http = on (404 otherwise).  When on, a request needs
 * "Authorization: Bearer <token>" with the token of [unlock] token_file
 * (401 without it, 403 with another), a JSON body of at most
 * RELEASE_HTTP_BODY_MAX bytes, and runs the same script as lockctl
 * (collectors/release/release.h) on a connection of its own, within the target's
 * connect and command timeouts.  docs/lockctl.md "HTTP" has the contract.
 */
#ifndef LOCKWATCH_RELEASE_HTTP_H
#define LOCKWATCH_RELEASE_HTTP_H

#include <stddef.h>

#define RELEASE_HTTP_PATH      "/api/v1/locks/release"
#define RELEASE_HTTP_BODY_MAX  (64 * 1024)
/* Releases running at once, each on a thread of its own while its
 * connection is suspended (the HTTP workers, which the probes share, never
 * wait on Redis); one more is answered 503 with Retry-After (README
 * "Design"). */
#define RELEASE_HTTP_RUNNING_MAX 2

/* Indexes of struct agent's releases[] (lockwatch_releases_total{result}). */
enum { RELEASES_RELEASED, RELEASES_REFUSED, RELEASES_ERROR, RELEASES_RESULTS };

struct agent;
struct MHD_Connection;

/*
 * The MHD access handler for RELEASE_HTTP_PATH, called like any MHD
 * handler (the first call with *state NULL, then with body chunks, then
 * once with *upload_size 0).  It keeps its own per-request state in
 * *state; the server's request-completed callback must hand any state it
 * does not own itself to release_http_free().  Returns an MHD_Result.
 */
int release_http(struct agent *a, struct MHD_Connection *c, const char *method,
                 const char *upload, size_t *upload_size, void **state);

/* Wait until no release runs (each ends within its deadline): the HTTP
 * server calls it before it stops, since a release's thread resumes its
 * connection when it ends.  The daemon needs MHD_ALLOW_SUSPEND_RESUME. */
void release_http_drain(struct agent *a);
void release_http_free(void *state);

#endif
