/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * http.c - the HTTP server over libmicrohttpd: the route table, the one
 * dispatcher that walks it, and the answers it sends.
 *
 * MHD runs a small pool of threads that poll() their connections (see
 * HTTP_THREADS); a request only takes a view (references to immutable
 * snapshots, copied under a short lock) and renders it, so a slow client
 * never holds up a scan.
 *
 * Admission (agent/http/guard.c) keeps the probes answering under abuse:
 * every request has a deadline for its whole headers and body; the
 * expensive answers (rows marked HEAVY: the JSON API and the status page)
 * share a budget and are answered 503 with Retry-After when it is spent
 * or when the connection is over its client's limit; /metrics, /healthz
 * and /readyz are never refused, so a flood of API requests or slow
 * clients cannot make an orchestrator restart a healthy agent.  At
 * http_max_connections libmicrohttpd stops accepting and new connections
 * wait in the kernel's listen queue rather than being reset.
 *
 * MHD's default URL unescaping stops at the first NUL byte and cannot
 * represent every key; the server is given an identity unescaper, and
 * paths and query values are percent-decoded here, binary-safe.
 */
#include "agent/http/http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "agent/http/guard.h"
#include "agent/http/release_http.h"
#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "common/keytext.h"
#include "common/log.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

struct http_server {
    struct MHD_Daemon *d;
    struct agent *agent;
    struct http_guard *guard;
};

/* MHD's worker threads.  Four, so that a probe finds a thread free while
 * others render the largest API pages.  Each polls its connections with
 * poll(), not epoll: libmicrohttpd's epoll loop (0.9.75, and upstream
 * still) calls epoll_wait again, with the full timeout, whenever a call
 * returned its maximum of 128 events, so a worker whose connections all
 * became ready at once (a burst that fills its share of
 * http_max_connections, 256 = 2 x 128) slept up to HTTP_IDLE_TIMEOUT with
 * every one of their requests unread, until some other event woke it. */
#define HTTP_THREADS 4
/* Idle time (seconds) after which MHD drops a connection: a reader that
 * stopped reading, or a keep-alive connection nobody uses. */
#define HTTP_IDLE_TIMEOUT 30
/* Descriptors kept free of HTTP connections for Redis, webhooks, logs. */
#define HTTP_FD_RESERVE 256

/*
 * The routes.  The dispatcher takes the first row whose path is the URL
 * (ROUTE_EXACT) or starts it (ROUTE_PREFIX; the handler gets the rest),
 * so an exact path under a prefix comes before the prefix.
 *
 * A read route (read set) answers the methods listed, 405 any other; it
 * is answered once the headers are in, and a body sent with it is read
 * and dropped.  A body route (body set, methods NULL) is MHD's handler for
 * the whole request and checks the method itself (the release endpoint
 * answers 404 while it is off, before the method); what it keeps in its
 * state is freed with body_free.  A URL no row matches is answered like a
 * read route's: 405 for a method other than GET or HEAD, else 404.
 *
 * A HEAVY row's answer is made only within the budget of expensive
 * answers (guard.h); a cheap row must stay cheap: bounded work, a few
 * kilobytes or so, whatever the number of locks.
 *
 * A JSON route names the query parameters its handler reads (the names it
 * passes to http_query()); the dispatcher answers any other name 400,
 * naming it and the known ones, before the handler runs: a typo such as
 * ?stat=leaked would otherwise be ignored and answer every lock.  The pages
 * that are not the JSON API (Q_UNCHECKED) take none and are left as they
 * were: a scraper's or a probe's parameters change nothing there.  The body
 * route checks its own query (none), after its 404, 405 and 401.
 *
 * Adding a route: one row here, its handler in the file of its concern,
 * declared in agent/http/routes.h (and the path in lockwatchd.8, which
 * tests/integration/test_man.py holds to this table).
 */
typedef int (*http_body_fn)(struct agent *a, struct MHD_Connection *c, const char *method,
                            const char *upload, size_t *upload_size, void **state);

enum route_match { ROUTE_EXACT, ROUTE_PREFIX };

struct route {
    const char *methods;        /* space-separated */
    const char *path;
    enum route_match match;
    http_read_fn read;
    http_body_fn body;
    void (*body_free)(void *state);
    bool heavy;                 /* in the budget of expensive answers */
    const char *query;          /* the query parameters it takes, space-separated;
                                 * Q_UNCHECKED: not checked */
};

#define HEAVY true

#define READ_METHODS "GET HEAD"

/* The query parameters of the JSON routes (their handlers' http_query()s). */
#define Q_LOCKS     "state target class limit offset"   /* api.c, serve_locks */
#define Q_LOCK      "target"                            /* api.c, serve_lock */
#define Q_EVENTS    "after kind target limit"           /* events_http.c */
#define Q_NONE      ""
#define Q_UNCHECKED NULL

static const struct route routes[] = {
    /* methods, path, match, read, body, body_free, heavy, query */
    { NULL, RELEASE_HTTP_PATH, ROUTE_EXACT, NULL, release_http, release_http_free, false,
      Q_UNCHECKED },
    { READ_METHODS, "/metrics",          ROUTE_EXACT,  serve_metrics,   NULL, NULL, false, Q_UNCHECKED },
    { READ_METHODS, "/healthz",          ROUTE_EXACT,  serve_healthz,   NULL, NULL, false, Q_UNCHECKED },
    { READ_METHODS, "/readyz",           ROUTE_EXACT,  serve_ready,     NULL, NULL, false, Q_UNCHECKED },
    { READ_METHODS, "/api/v1/locks",     ROUTE_EXACT,  serve_locks,     NULL, NULL, HEAVY, Q_LOCKS },
    { READ_METHODS, "/api/v1/locks/",    ROUTE_EXACT,  serve_locks,     NULL, NULL, HEAVY, Q_LOCKS },
    { READ_METHODS, "/api/v1/locks/",    ROUTE_PREFIX, serve_lock,      NULL, NULL, HEAVY, Q_LOCK },
    { READ_METHODS, "/api/v1/alerts",    ROUTE_EXACT,  serve_alerts,    NULL, NULL, HEAVY, Q_NONE },
    { READ_METHODS, "/api/v1/deadlocks", ROUTE_EXACT,  serve_deadlocks, NULL, NULL, HEAVY, Q_NONE },
    { READ_METHODS, "/api/v1/events",    ROUTE_EXACT,  serve_events,    NULL, NULL, HEAVY, Q_EVENTS },
    { READ_METHODS, "/api/v1/classes",   ROUTE_EXACT,  serve_classes,   NULL, NULL, HEAVY, Q_NONE },
    { READ_METHODS, "/api/v1/shard",     ROUTE_EXACT,  serve_shard,     NULL, NULL, false, Q_NONE },
    { READ_METHODS, "/",                 ROUTE_EXACT,  serve_status,    NULL, NULL, HEAVY, Q_UNCHECKED },
};

#define NOT_FOUND_TEXT "not found: try /metrics, /healthz, /readyz or /api/v1/locks\n"
#define METHOD_TEXT    "method not allowed: lockwatch's read endpoints take GET\n"
#define BUSY_TEXT      "busy: the agent is making as many API answers as it allows " \
                       "(http_max_api_requests); retry after 1 s"
#define OVER_TEXT      "too many connections from your address " \
                       "(http_max_connections_per_client); close some and retry after 1 s"

static const char *const retry_after[] = { "Retry-After", GUARD_RETRY_AFTER, NULL };

static const struct route *
route_for(const char *url)
{
    size_t i, n;

    for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        n = strlen(routes[i].path);
        if (routes[i].match == ROUTE_EXACT ? strcmp(url, routes[i].path) == 0 :
            strncmp(url, routes[i].path, n) == 0)
            return &routes[i];
    }
    return NULL;
}

/* Is word one of the space-separated list? */
static bool
word_in(const char *list, const char *word)
{
    size_t n = strlen(word);
    const char *p = list;

    while ((p = strstr(p, word)) != NULL) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
        p += n;
    }
    return false;
}

void
http_text(struct http_response *out, unsigned int status, const char *text)
{
    out->status = status;
    out->ctype = HTTP_CT_TEXT;
    out->body = strdup(text);
    out->len = out->body != NULL ? strlen(out->body) : 0;
}

void
http_json(struct http_response *out, int status, char *body, size_t len)
{
    if (status >= 500 && body == NULL) {
        http_text(out, 500, HTTP_OOM_TEXT);
        return;
    }
    out->status = (unsigned int)status;
    out->ctype = HTTP_CT_JSON;
    out->body = body;
    out->len = len;
}

char *
http_query(const struct http_request *rq, const char *name, int *bad)
{
    const char *raw = MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
    size_t n;
    char *out;

    if (raw == NULL)
        return NULL;
    out = malloc(strlen(raw) + 1);
    if (out == NULL) {
        *bad = 1;
        return NULL;
    }
    n = keytext_unpercent(out, raw, strlen(raw), 1);
    if (n == (size_t)-1 || memchr(out, '\0', n) != NULL) {
        free(out);
        *bad = 1;
        return NULL;
    }
    out[n] = '\0';
    if (n == 0) {               /* ?target= means "any" */
        free(out);
        return NULL;
    }
    return out;
}

struct query_check {
    const char *known;          /* space-separated */
    const char *unknown;        /* the first name not among them */
};

static MHD_RESULT
query_name(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct query_check *qc = cls;

    (void)kind;
    (void)value;
    /* an empty name (a stray '&') names nothing a handler could misread */
    if (key == NULL || key[0] == '\0' || word_in(qc->known, key))
        return MHD_YES;
    qc->unknown = key;
    return MHD_NO;
}

int
http_query_check(struct MHD_Connection *c, const char *known, char *msg, size_t len)
{
    struct query_check qc = { known, NULL };
    char name[HTTP_ECHO_MAX + 1], list[256];
    size_t i, n = 0;

    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_name, &qc);
    if (qc.unknown == NULL)
        return 0;
    keytext_ascii(name, sizeof(name), qc.unknown);
    for (i = 0; known[i] != '\0' && n + 3 < sizeof(list); i++) {
        if (known[i] == ' ')
            list[n++] = ',';
        list[n++] = known[i];
    }
    list[n] = '\0';
    snprintf(msg, len, "unknown query parameter \"%s\" (%s%s)", name,
             n > 0 ? "known: " : "this endpoint takes none", list);
    return -1;
}

/* Send out (its body is MHD's from here on). */
static MHD_RESULT
reply(struct MHD_Connection *c, const struct http_response *out)
{
    struct MHD_Response *r;
    MHD_RESULT ret;
    size_t i;

    if (out->body == NULL)
        return MHD_NO;
    r = MHD_create_response_from_buffer(out->len, out->body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(out->body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, out->ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    for (i = 0; out->headers != NULL && out->headers[i] != NULL; i += 2)
        MHD_add_response_header(r, out->headers[i], out->headers[i + 1]);
    ret = MHD_queue_response(c, out->status, r);
    MHD_destroy_response(r);
    return ret;
}

static MHD_RESULT
reply_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
    struct http_response out = { 0 };

    http_text(&out, status, text);
    return reply(c, &out);
}

/*
 * What MHD keeps in *state between the calls for one request: &read_state
 * for a read route (or no route) once its headers are in; for a body
 * route, a struct body_state holding the route's own state.
 */
static int read_state;

struct body_state {
    const struct route *route;
    void *state;
};

/* The guard's record of a connection (NULL when it had no memory). */
static struct guard_conn *
conn_guard(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return ci != NULL ? ci->socket_context : NULL;
}

/* An error in the route's own dialect: JSON under /api/, else a line of
 * text; headers as http_response's (NULL for none). */
static MHD_RESULT
reply_error(struct MHD_Connection *c, const char *url, int status, const char *why,
            const char *const *headers)
{
    struct http_response out = { 0 };
    char *body = NULL;
    size_t len = 0;

    if (strncmp(url, "/api/", 5) == 0) {
        status = render_api_error(status, why, &body, &len);
        http_json(&out, status, body, len);
    } else {
        char line[512];

        snprintf(line, sizeof(line), "%s\n", why);
        http_text(&out, (unsigned int)status, line);
    }
    out.headers = headers;
    return reply(c, &out);
}

static MHD_RESULT
handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
       const char *version, const char *upload, size_t *upload_size, void **state)
{
    struct http_server *h = cls;
    const struct route *r = route_for(url);
    struct http_response out = { 0 };
    struct http_request rq;
    struct guard_stats st;
    struct guard_conn *gc;
    struct body_state *bs;
    char why[512];

    (void)version;
    if (r != NULL && r->body != NULL) {
        if ((bs = *state) == NULL) {
            if ((bs = calloc(1, sizeof(*bs))) == NULL)
                return MHD_NO;
            bs->route = r;
            *state = bs;
        } else if (*upload_size == 0 && !guard_answered(h->guard, conn_guard(c))) {
            return MHD_NO;      /* the whole body is in, but after its deadline */
        }
        return (MHD_RESULT)r->body(h->agent, c, method, upload, upload_size, &bs->state);
    }
    if (*state == NULL) {       /* headers only so far; answer on the next call */
        *state = &read_state;
        return MHD_YES;
    }
    if (*upload_size != 0) {
        *upload_size = 0;       /* no read route takes a body */
        return MHD_YES;
    }
    gc = conn_guard(c);
    if (!guard_answered(h->guard, gc))
        return MHD_NO;          /* cut at its deadline: no answer, none counted */
    if (!word_in(r != NULL ? r->methods : READ_METHODS, method))
        return reply_text(c, 405, METHOD_TEXT);
    if (r == NULL)
        return reply_text(c, 404, NOT_FOUND_TEXT);
    if (r->query != Q_UNCHECKED && http_query_check(c, r->query, why, sizeof(why)) == -1)
        return reply_error(c, url, 400, why, NULL);
    if (r->heavy) {
        switch (guard_heavy(h->guard, gc)) {
        case GUARD_OK:
            break;
        case GUARD_BUSY:
            return reply_error(c, url, 503, BUSY_TEXT, retry_after);
        case GUARD_OVER_CLIENT:
            return reply_error(c, url, 503, OVER_TEXT, retry_after);
        }
    }
    guard_stats(h->guard, &st);
    rq.agent = h->agent;
    rq.rest = url + strlen(r->path);
    rq.conn = c;
    rq.http = &st;
    r->read(&rq, &out);
    return reply(c, &out);
}

static void
request_completed(void *cls, struct MHD_Connection *c, void **state,
                  enum MHD_RequestTerminationCode toe)
{
    struct http_server *h = cls;
    struct body_state *bs = *state;

    (void)toe;
    if (bs != NULL && *state != &read_state) {
        if (bs->state != NULL)
            bs->route->body_free(bs->state);
        free(bs);
    }
    *state = NULL;
    guard_done(h->guard, conn_guard(c));
}

/* Connections open and close here: the guard's record of each. */
static void
notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                  enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *h = cls;
    const union MHD_ConnectionInfo *fd, *addr;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        *socket_context = fd == NULL ? NULL :
            guard_open(h->guard, fd->connect_fd, addr != NULL ? addr->client_addr : NULL);
        if (*socket_context == NULL)
            log_warnx("http: out of memory: a connection is served without a request deadline");
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        guard_close(h->guard, *socket_context);
        *socket_context = NULL;
    }
}

/*
 * Each connection is a descriptor: raise the soft limit so that
 * max_connections fit with HTTP_FD_RESERVE to spare (systemd starts
 * services at 1024), or cut max_connections to what the hard limit leaves.
 */
static unsigned int
fit_descriptors(unsigned int want)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)want + HTTP_FD_RESERVE;

    if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
        return want;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == -1 && getrlimit(RLIMIT_NOFILE, &rl) == -1)
            return want;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        unsigned int fit = rl.rlim_cur > 2 * HTTP_FD_RESERVE ?
            (unsigned int)(rl.rlim_cur - HTTP_FD_RESERVE) : (unsigned int)(rl.rlim_cur / 2);

        log_warnx("http: the descriptor limit (%llu) leaves room for %u HTTP connections, "
                  "not http_max_connections = %u: raise LimitNOFILE",
                  (unsigned long long)rl.rlim_cur, fit, want);
        return fit;
    }
    return want;
}

static size_t
no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

/* MHD hands over its own printf format; the callback type cannot carry
 * a format attribute, so clang's nonliteral warning is silenced here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    size_t n;

    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    log_debug("http: %s", msg);
}
#pragma GCC diagnostic pop

struct http_server *
http_start(struct agent *a, const char *host, int port, const struct http_limits *lim,
           char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    struct http_server *h = NULL;
    char portstr[16];
    /* poll(), not epoll (MHD_USE_AUTO's pick on Linux): see HTTP_THREADS */
    unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
        MHD_ALLOW_SUSPEND_RESUME;      /* releases run off the workers (release_http.c) */
    struct guard_limits gl;
    unsigned int maxconn;
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    snprintf(portstr, sizeof(portstr), "%d", port);
    rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "listen address %s:%d: %s", host, port, gai_strerror(rc));
        return NULL;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    h->agent = a;
    gl.per_client = lim->max_connections_per_client;
    gl.request_timeout_ms = lim->request_timeout_ms;
    gl.heavy_max = lim->max_api_requests;
    if ((h->guard = guard_new(&gl, err, errlen)) == NULL) {
        free(h);
        h = NULL;
        goto out;
    }
    maxconn = fit_descriptors(lim->max_connections);
    if (res->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* the logger first: libmicrohttpd warns on stderr when it is not */
    h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, h,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                            MHD_OPTION_SOCK_ADDR, res->ai_addr,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)HTTP_THREADS,
                            MHD_OPTION_CONNECTION_LIMIT, maxconn,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_IDLE_TIMEOUT,
                            MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
                            MHD_OPTION_NOTIFY_COMPLETED, request_completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, notify_connection, h,
                            MHD_OPTION_END);
    if (h->d == NULL) {
        snprintf(err, errlen, "cannot listen on %s:%d (in use, or not an address of this host?)",
                 host, port);
        guard_free(h->guard);
        free(h);
        h = NULL;
    }
out:
    freeaddrinfo(res);
    return h;
}

void
http_stop(struct http_server *h)
{
    if (h == NULL)
        return;
    release_http_drain(h->agent);      /* its threads resume connections */
    MHD_stop_daemon(h->d);
    guard_free(h->guard);
    free(h);
}
