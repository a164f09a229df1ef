/*
 * http.c - request routing and responses over libmicrohttpd.
 *
 * MHD runs its own polling thread and a small thread pool; a request only
 * takes a view (references to immutable snapshots, copied under a short
 * lock) and renders it, so a slow client never holds up a scan.
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
#include <sys/socket.h>

#include "agent/http/alerts_http.h"
#include "common/log.h"
#include "agent/http/release_http.h"
#include "agent/http/render.h"
#include "agent/http/status.h"
#include "common/keytext.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

struct http_server {
    struct MHD_Daemon *d;
    struct agent *agent;
};

#define CT_TEXT     "text/plain; charset=utf-8"
#define CT_METRICS  "text/plain; version=0.0.4; charset=utf-8"
#define CT_JSON     "application/json"
#define CT_HTML     "text/html; charset=utf-8"

static MHD_RESULT
reply(struct MHD_Connection *c, unsigned int status, const char *ctype,
      char *body, size_t len)
{
    struct MHD_Response *r;
    MHD_RESULT ret;

    r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static MHD_RESULT
reply_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
    char *b = strdup(text);

    if (b == NULL)
        return MHD_NO;
    return reply(c, status, CT_TEXT, b, strlen(b));
}

static MHD_RESULT
reply_json(struct MHD_Connection *c, int status, char *body, size_t len)
{
    if (status >= 500 && body == NULL)
        return reply_text(c, 500, "internal error: out of memory\n");
    return reply(c, (unsigned int)status, CT_JSON, body, len);
}

/* Decoded query value (caller frees), NULL when absent; *bad on a
 * malformed escape. */
static char *
query(struct MHD_Connection *c, const char *name, int *bad)
{
    const char *raw = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
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

static MHD_RESULT
serve_metrics(struct http_server *h, struct MHD_Connection *c)
{
    struct view v;
    struct strbuf sb;
    char *body;
    size_t len;

    if (agent_view(h->agent, &v) == -1)
        return reply_text(c, 500, "internal error: out of memory\n");
    sb_init(&sb, RENDER_MAX_BYTES);
    if (render_metrics(&v, &sb) == -1) {
        view_release(&v);
        sb_release(&sb);
        return reply_text(c, 500, "internal error: exposition too large or out of memory\n");
    }
    view_release(&v);
    body = sb_detach(&sb, &len);
    return reply(c, 200, CT_METRICS, body, len);
}

static MHD_RESULT
serve_ready(struct http_server *h, struct MHD_Connection *c)
{
    struct view v;
    struct strbuf sb;
    char *body;
    size_t len;
    int ready;

    if (agent_view(h->agent, &v) == -1)
        return reply_text(c, 500, "internal error: out of memory\n");
    sb_init(&sb, 1 << 20);
    ready = render_ready(&v, &sb);
    view_release(&v);
    if (ready)
        sb_adds(&sb, "ready\n");
    body = sb_detach(&sb, &len);
    return reply(c, ready ? 200 : 503, CT_TEXT, body, len);
}

static MHD_RESULT
serve_locks(struct http_server *h, struct MHD_Connection *c)
{
    struct api_query q;
    struct view v;
    char *state, *target, *cls, *limit, *body = NULL;
    size_t len = 0;
    int bad = 0, status;

    state = query(c, "state", &bad);
    target = query(c, "target", &bad);
    cls = query(c, "class", &bad);
    limit = query(c, "limit", &bad);
    if (bad) {
        status = render_api_error(400, "malformed percent-encoding in the query", &body, &len);
    } else if (agent_view(h->agent, &v) == -1) {
        status = 500;
    } else {
        q.state = state;
        q.target = target;
        q.class_ = cls;
        q.limit = limit;
        status = render_api_locks(&v, &q, &body, &len);
        view_release(&v);
    }
    free(state);
    free(target);
    free(cls);
    free(limit);
    return reply_json(c, status, body, len);
}

static MHD_RESULT
serve_lock(struct http_server *h, struct MHD_Connection *c, const char *enc)
{
    struct view v;
    char *key, *target, *body = NULL;
    size_t keylen, len = 0;
    int bad = 0, status;

    key = malloc(strlen(enc) + 1);
    if (key == NULL)
        return reply_text(c, 500, "internal error: out of memory\n");
    keylen = keytext_unpercent(key, enc, strlen(enc), 0);
    target = query(c, "target", &bad);
    if (keylen == (size_t)-1 || bad) {
        status = render_api_error(400, "malformed percent-encoding in the key or query",
                                  &body, &len);
    } else if (agent_view(h->agent, &v) == -1) {
        status = 500;
    } else {
        status = render_api_lock(&v, key, keylen, target, &body, &len);
        view_release(&v);
    }
    free(key);
    free(target);
    return reply_json(c, status, body, len);
}

static MHD_RESULT
serve_alerts(struct http_server *h, struct MHD_Connection *c)
{
    char *body = NULL;
    size_t len = 0;
    int status = render_api_alerts(h->agent, &body, &len);

    return reply_json(c, status, body, len);
}

/* The status page, with a policy that forbids any script: keys and
 * holders on it are bytes from Redis (agent/http/status.h). */
static MHD_RESULT
serve_status(struct http_server *h, struct MHD_Connection *c)
{
    struct MHD_Response *r;
    MHD_RESULT ret;
    char *body;
    size_t len;

    if (status_page(h->agent, &body, &len) != 200)
        return reply_text(c, 500, "internal error: status page too large or out of memory\n");
    r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CT_HTML);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "Content-Security-Policy", STATUS_CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* The per-request state of the read endpoints; the release endpoint
 * keeps its own (a body), freed in request_completed(). */
static int first;

static MHD_RESULT
handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
       const char *version, const char *upload, size_t *upload_size, void **state)
{
    struct http_server *h = cls;

    (void)version;
    if (strcmp(url, RELEASE_HTTP_PATH) == 0)
        return (MHD_RESULT)release_http(h->agent, c, method, upload, upload_size, state);
    if (*state == NULL) {       /* headers only so far; answer on the next call */
        *state = &first;
        return MHD_YES;
    }
    if (*upload_size != 0) {
        *upload_size = 0;       /* no endpoint here takes a body */
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply_text(c, 405, "method not allowed: lockwatch's read endpoints take GET\n");

    if (strcmp(url, "/metrics") == 0)
        return serve_metrics(h, c);
    if (strcmp(url, "/healthz") == 0)
        return reply_text(c, 200, "ok\n");
    if (strcmp(url, "/readyz") == 0)
        return serve_ready(h, c);
    if (strcmp(url, "/api/v1/locks") == 0 || strcmp(url, "/api/v1/locks/") == 0)
        return serve_locks(h, c);
    if (strncmp(url, "/api/v1/locks/", 14) == 0)
        return serve_lock(h, c, url + 14);
    if (strcmp(url, "/api/v1/alerts") == 0)
        return serve_alerts(h, c);
    if (strcmp(url, "/") == 0)
        return serve_status(h, c);
    return reply_text(c, 404, "not found: try /metrics, /healthz, /readyz or /api/v1/locks\n");
}

static void
request_completed(void *cls, struct MHD_Connection *c, void **state,
                  enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    if (*state != NULL && *state != &first)
        release_http_free(*state);
    *state = NULL;
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
http_start(struct agent *a, const char *host, int port, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    struct http_server *h = NULL;
    char portstr[16];
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
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
    if (res->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, h,
                            MHD_OPTION_SOCK_ADDR, res->ai_addr,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)2,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned int)128,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
                            MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
                            MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                            MHD_OPTION_END);
    if (h->d == NULL) {
        snprintf(err, errlen, "cannot listen on %s:%d (in use, or not an address of this host?)",
                 host, port);
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
    MHD_stop_daemon(h->d);
    free(h);
}
