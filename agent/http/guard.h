/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * guard.h - admission control for the HTTP server: who may hold a
 * connection, for how long, and who may have an expensive answer made.
 *
 * The router (agent/http/http.c) tells the guard when a connection opens
 * and closes, when a request has been answered and when it is done; the
 * guard gives every request a deadline for its whole headers and body
 * (not an idle timeout: a client that trickles a header line every few
 * seconds is still cut), counts connections per client address, and holds
 * the budget of expensive answers (the JSON API and the status page) in
 * flight.  It never sees a URL and never answers; it says yes or no and
 * the router answers.
 *
 * Thread safety: every function may be called from any of the server's
 * threads; one mutex guards the state, held only for list and table
 * updates.
 */
#ifndef LOCKWATCH_GUARD_H
#define LOCKWATCH_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr;

struct http_guard;
struct guard_conn;

struct guard_limits {
    unsigned int per_client;        /* connections from one address before
                                     * the over-limit rules apply */
    int64_t request_timeout_ms;     /* whole request, headers and body */
    unsigned int heavy_max;         /* expensive answers in flight */
};

/* Counters for /metrics; every field only grows except open. */
struct guard_stats {
    uint64_t open;                  /* connections open now */
    uint64_t timeouts;              /* closed: request not in within its deadline */
    uint64_t busy;                  /* 503: expensive-answer budget full */
    uint64_t over_client;           /* 503: over the per-client limit */
    uint64_t extended;              /* deadlines passed with the client's bytes
                                     * still unread by the server: renewed */
};

/* What the guard says about an expensive request. */
enum guard_verdict { GUARD_OK, GUARD_BUSY, GUARD_OVER_CLIENT };

/* Over the per-client limit, a connection gets this long for a request. */
#define GUARD_OVER_CLIENT_TIMEOUT_MS 1000
/* What a 503 tells the client to wait, in seconds (Retry-After). */
#define GUARD_RETRY_AFTER "1"

/* Start the guard and its deadline thread.  NULL with a message in err. */
struct http_guard *guard_new(const struct guard_limits *lim, char *err, size_t errlen);
/* Stop the thread and free the guard; every connection must be closed. */
void guard_free(struct http_guard *g);

/* A connection on socket fd from addr (IPv4 or IPv6; NULL or another
 * family: not counted per client) opened: its first request's deadline
 * starts now.  NULL when out of memory: the connection is then served
 * without a deadline and never given an expensive answer (pass the NULL
 * to the others, which accept it). */
struct guard_conn *guard_open(struct http_guard *g, int fd, const struct sockaddr *addr);
/* It closed; gc is freed.  Must come before the socket is closed: the
 * deadline thread may shut the socket down until this returns. */
void guard_close(struct http_guard *g, struct guard_conn *gc);
/* Its request is in and about to be answered: no deadline while the answer
 * is sent (however slowly it is read).  False when the guard has already
 * shut the socket down at the request's deadline: answer nothing (an
 * answer could not reach the client, and would be counted). */
bool guard_answered(struct http_guard *g, struct guard_conn *gc);
/* Its request is done (answer sent or the request aborted): an expensive
 * answer's budget is given back and the next request's deadline starts. */
void guard_done(struct http_guard *g, struct guard_conn *gc);
/* May this connection's request have an expensive answer made?  GUARD_OK
 * takes one of the budget until guard_done; the others are counted. */
enum guard_verdict guard_heavy(struct http_guard *g, struct guard_conn *gc);
void guard_stats(struct http_guard *g, struct guard_stats *out);

#endif
