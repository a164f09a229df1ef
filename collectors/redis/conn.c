/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.c - connect to one node of a target: timeouts, AUTH, SELECT.
 *
 * Factored out of the scanner so that lockctl and the agent's release
 * endpoint connect exactly as a scan does (same timeouts, same AUTH with
 * ACL user, same database) and report failures in the same words.  Every
 * connection also asks for CLIENT NO-TOUCH where the server has it (7.2+),
 * so that reading a lock's value does not make it look freshly used.
 * A rediss:// target gets its TLS handshake (tls.c) right after the TCP
 * connect, before AUTH.  Every reply is read through redisconn_get_reply(),
 * which keeps to the thread's scope (a whole-operation deadline and a stop
 * flag) and to the reply limits, so no server sizes our memory or holds a
 * scan, a release or lockctl past its deadline by answering one byte at a
 * time.  This is the bottom of collectors/redis (with
 * tls.c): sentinel.c, cluster.c and target.c call it, and it calls none of
 * them.
 */
#include "collectors/redis/conn.h"
#include "collectors/redis/tls.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "common/clock.h"

/*
 * The thread's scope, and what the reply being read has made so far
 * (objects, its charge to the budget, which limit it hit).  guard_armed
 * is true only inside redisconn_get_reply() and redisconn_read_pushed()
 * (follow mode's subscriber, whose object limit, guard_max, is its own).
 */
static _Thread_local const struct redisconn_scope *cur_scope;
static _Thread_local size_t guard_objects;
static _Thread_local size_t guard_cost;         /* this reply's charge to the budget */
static _Thread_local bool guard_armed;
static _Thread_local enum { TRIP_NONE, TRIP_OBJECTS, TRIP_BUDGET } guard_tripped;
static _Thread_local unsigned long long guard_asked;   /* objects an array wanted */
static _Thread_local size_t guard_max = REDISCONN_REPLY_OBJECTS_MAX;    /* a reply's objects */

/* What the replies being read now are charged, on every thread: the one
 * process-wide resource here, as the memory they take is. */
static atomic_size_t budget_used;

/* hiredis' own object functions, which the guard delegates to: the same
 * table for every context, taken from the first one guarded. */
static _Atomic(redisReplyObjectFunctions *) base_fns;

const struct redisconn_scope *
redisconn_scope_enter(const struct redisconn_scope *s)
{
    const struct redisconn_scope *prev = cur_scope;

    cur_scope = s;
    return prev;
}

void
redisconn_scope_leave(const struct redisconn_scope *prev)
{
    cur_scope = prev;
}

const struct cluster_node *
redisconn_scope_known(size_t *n, bool *check)
{
    *n = cur_scope != NULL && cur_scope->known != NULL ? cur_scope->nknown : 0;
    *check = *n > 0 && cur_scope->known_check;
    return *n > 0 ? cur_scope->known : NULL;
}

/* ---- the nodes found silent (conn.h) ------------------------------------------- */

/* What the error of an open of a node not waited for again says first. */
#define SILENT_TAG "not waited for again: "

void
redisconn_silent_init(struct redisconn_silent *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
}

void
redisconn_silent_clear(struct redisconn_silent *s)
{
    pthread_mutex_lock(&s->mu);
    s->n = 0;
    pthread_mutex_unlock(&s->mu);
}

void
redisconn_silent_turn(struct redisconn_silent *s)
{
    pthread_mutex_lock(&s->mu);
    s->turn++;
    pthread_mutex_unlock(&s->mu);
}

void
redisconn_silent_forget(struct redisconn_silent *s)
{
    size_t i, n = 0;

    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->n; i++)
        if (s->node[i].turn == s->turn)
            s->node[n++] = s->node[i];
    s->n = n;
    pthread_mutex_unlock(&s->mu);
}

void
redisconn_silent_destroy(struct redisconn_silent *s)
{
    pthread_mutex_destroy(&s->mu);
}

/* host:port let a wait of waited_ms go by without a byte: into the
 * scope's set, or its entry renewed (beyond REDISCONN_SILENT_MAX nodes,
 * not kept). */
static void
silent_note(const char *host, int port, int64_t waited_ms)
{
    struct redisconn_silent *s = cur_scope != NULL ? cur_scope->silent : NULL;
    size_t i;

    if (s == NULL || host == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->n; i++)
        if (s->node[i].port == port && strcmp(s->node[i].host, host) == 0)
            break;
    /* full: an entry past keep_ms makes room */
    for (size_t k = 0; i == s->n && s->n == REDISCONN_SILENT_MAX && k < s->n; k++)
        if (s->keep_ms > 0 && clock_mono_ms() - s->node[k].since_mono > s->keep_ms)
            i = k;
    if (i < s->n || s->n < REDISCONN_SILENT_MAX) {
        if (i == s->n)
            s->n++;
        snprintf(s->node[i].host, sizeof(s->node[i].host), "%s", host);
        s->node[i].port = port;
        s->node[i].since_mono = clock_mono_ms();
        s->node[i].waited_ms = waited_ms;
        s->node[i].turn = s->turn;
    }
    pthread_mutex_unlock(&s->mu);
}

/* Is host:port in the scope's set?  true with why (SILENT_TAG and the
 * wait that found it so) when it is. */
static bool
silent_why(const char *host, int port, char *why, size_t whylen)
{
    struct redisconn_silent *s = cur_scope != NULL ? cur_scope->silent : NULL;
    bool found = false;
    size_t i;

    if (s == NULL || host == NULL)
        return false;
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->n && !found; i++) {
        if (s->node[i].port != port || strcmp(s->node[i].host, host) != 0 ||
            (s->keep_ms > 0 && clock_mono_ms() - s->node[i].since_mono > s->keep_ms))
            continue;
        found = true;
        if (why != NULL && whylen > 0)
            snprintf(why, whylen, SILENT_TAG "it let %lld ms pass without an answer %.1f s "
                     "ago (stopped, overloaded or cut off); asked again at the next pass",
                     (long long)s->node[i].waited_ms,
                     (double)(clock_mono_ms() - s->node[i].since_mono) / 1000.0);
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

bool
redisconn_is_silent(const char *host, int port)
{
    return silent_why(host, port, NULL, 0);
}

/* Charge the reply being read n bytes; false (and guard_tripped) when
 * the shared budget cannot take them. */
static bool
guard_charge(size_t n)
{
    size_t used = atomic_fetch_add(&budget_used, n);

    guard_cost += n;
    if (used + n > REDISCONN_BUDGET_BYTES) {
        guard_tripped = TRIP_BUDGET;
        return false;
    }
    return true;
}

/* n more objects for the reply being read; false (refuse them) past a
 * limit. */
static bool
guard_count(unsigned long long n)
{
    if (!guard_armed)
        return true;
    if (n > guard_max - guard_objects || guard_objects >= guard_max) {
        guard_tripped = TRIP_OBJECTS;
        guard_asked = n;
        return false;
    }
    guard_objects += n;
    return guard_charge((size_t)n * REDISCONN_OBJECT_COST);
}

static void *
guard_string(const redisReadTask *task, char *str, size_t len)
{
    return guard_count(1) ? atomic_load(&base_fns)->createString(task, str, len) : NULL;
}

static void *
guard_integer(const redisReadTask *task, long long v)
{
    return guard_count(1) ? atomic_load(&base_fns)->createInteger(task, v) : NULL;
}

static void *
guard_nil(const redisReadTask *task)
{
    return guard_count(1) ? atomic_load(&base_fns)->createNil(task) : NULL;
}

static void
guard_free(void *obj)
{
    atomic_load(&base_fns)->freeObject(obj);
}

/* An array's header announces its elements: refuse it before hiredis
 * allocates the element vector (a "*2000000000" header is 16 GB). */
#if HIREDIS_MAJOR >= 1
static void *
guard_array(const redisReadTask *task, size_t n)
{
    return guard_count(1 + (unsigned long long)n) ?
        atomic_load(&base_fns)->createArray(task, n) : NULL;
}

static void *
guard_double(const redisReadTask *task, double d, char *str, size_t len)
{
    return guard_count(1) ? atomic_load(&base_fns)->createDouble(task, d, str, len) : NULL;
}

static void *
guard_bool(const redisReadTask *task, int b)
{
    return guard_count(1) ? atomic_load(&base_fns)->createBool(task, b) : NULL;
}

static redisReplyObjectFunctions guard_fns = {
    guard_string, guard_array, guard_integer, guard_double, guard_nil, guard_bool,
    guard_free
};
#else
static void *
guard_array(const redisReadTask *task, int n)
{
    return guard_count(1 + (unsigned long long)(n > 0 ? n : 0)) ?
        atomic_load(&base_fns)->createArray(task, n) : NULL;
}

static redisReplyObjectFunctions guard_fns = {
    guard_string, guard_array, guard_integer, guard_nil, guard_free
};
#endif

void
redisconn_guard(redisContext *c)
{
    redisReplyObjectFunctions *expected = NULL;

    if (c == NULL || c->reader == NULL || c->reader->fn == NULL || c->reader->fn == &guard_fns)
        return;
    atomic_compare_exchange_strong(&base_fns, &expected, c->reader->fn);
    if (atomic_load(&base_fns) != c->reader->fn)
        return;                 /* another table than hiredis' own: leave it */
    c->reader->fn = &guard_fns;
#if HIREDIS_MAJOR >= 1
    /* 1.x checks an array header itself too */
    c->reader->maxelements = REDISCONN_REPLY_OBJECTS_MAX;
#endif
}

/* Fail c with a message of our own, in c->errstr as hiredis' own. */
__attribute__((format(printf, 3, 4)))
static int
fail_with(redisContext *c, int err, const char *fmt, ...)
{
    va_list ap;

    c->err = err;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
    return -1;
}

static size_t
buffered(const redisContext *c)
{
    return c->reader->len > c->reader->pos ? c->reader->len - c->reader->pos : 0;
}

/* Wait until c's socket has bytes, within the scope: 0, or -1 with c
 * failed (stop, deadline, or no byte within idle_ms: EAGAIN, as a
 * hiredis read timeout reports it). */
static int
wait_readable(redisContext *c, const struct redisconn_scope *sc, int64_t idle_deadline)
{
    struct pollfd pfd;
    int64_t left;
    int rc;

    for (;;) {
        if (sc->stop != NULL && atomic_load(sc->stop))
            return fail_with(c, REDIS_ERR_OTHER, "stopped");
        if (sc->deadline_ms != INT64_MAX && clock_left(sc->deadline_ms) == 0)
            return fail_with(c, REDIS_ERR_OTHER, "gave up: %s ran out", sc->what);
        if (idle_deadline != INT64_MAX && clock_left(idle_deadline) == 0) {
            c->err = REDIS_ERR_IO;
            snprintf(c->errstr, sizeof(c->errstr), "%s", strerror(EAGAIN));
            silent_note(c->tcp.host, c->tcp.port, sc->idle_ms);
            return -1;
        }
        left = idle_deadline == INT64_MAX ? INT_MAX : clock_left(idle_deadline);
        if (sc->deadline_ms != INT64_MAX && clock_left(sc->deadline_ms) < left)
            left = clock_left(sc->deadline_ms);
        if (sc->stop != NULL && left > REDISCONN_STOP_TICK_MS)
            left = REDISCONN_STOP_TICK_MS;
        pfd.fd = c->fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        rc = poll(&pfd, 1, (int)(left > INT_MAX ? INT_MAX : left));
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR)
            return fail_with(c, REDIS_ERR_IO, "poll: %s", strerror(errno));
    }
}

/* A read that failed on c: when a reply limit refused it, say which in
 * c->errstr and return true. */
static bool
name_limit(redisContext *c)
{
    if (guard_tripped == TRIP_OBJECTS)
        fail_with(c, REDIS_ERR_OTHER, "a reply of over %zu objects (an array of %llu): "
                  "refused (the reply limit)", guard_max, guard_asked);
#if HIREDIS_MAJOR >= 1
    else if (c->err == REDIS_ERR_PROTOCOL && strstr(c->errstr, "out of range"))
        /* hiredis' own maxelements check, set to the same limit */
        fail_with(c, REDIS_ERR_OTHER, "a reply of over %zu objects: refused (the reply "
                  "limit)", guard_max);
#endif
    else if (guard_tripped == TRIP_BUDGET)
        fail_with(c, REDIS_ERR_OTHER, "replies being read hold the whole reply budget "
                  "(%u MiB): refused (the reply limit)", REDISCONN_BUDGET_BYTES >> 20);
    else
        return false;
    return true;
}

int
redisconn_get_reply(redisContext *c, redisReply **rep)
{
    const struct redisconn_scope *sc = cur_scope;
    int64_t idle_deadline = INT64_MAX;
    size_t inreply, before;
    void *p = NULL;
    int done = 0, rc = -1;

    *rep = NULL;
    if (c == NULL || c->err)
        return -1;
    guard_armed = true;
    guard_objects = 0;
    guard_cost = 0;
    guard_tripped = TRIP_NONE;
    if (redisGetReplyFromReader(c, &p) == REDIS_ERR)
        goto out;
    if (p != NULL) {
        rc = 0;                 /* already buffered: the common case */
        goto out;
    }
    while (!done)
        if (redisBufferWrite(c, &done) == REDIS_ERR)
            goto out;
    inreply = buffered(c);
    for (;;) {
        if (sc != NULL) {
            if (sc->idle_ms > 0)
                idle_deadline = clock_deadline(sc->idle_ms);
            if (wait_readable(c, sc, idle_deadline) == -1)
                goto out;
        }
        before = buffered(c);
        if (redisBufferRead(c) == REDIS_ERR)
            goto out;
        inreply += buffered(c) - before;
        if (inreply > REDISCONN_REPLY_BYTES_MAX) {
            fail_with(c, REDIS_ERR_OTHER, "a reply of over %u MiB: refused (the reply limit)",
                      REDISCONN_REPLY_BYTES_MAX >> 20);
            goto out;
        }
        if (!guard_charge(buffered(c) - before))
            goto out;
        if (redisGetReplyFromReader(c, &p) == REDIS_ERR)
            goto out;
        if (p != NULL)
            break;
    }
    rc = 0;
out:
    if (rc == -1)
        (void)name_limit(c);
    atomic_fetch_sub(&budget_used, guard_cost);
    guard_cost = 0;
    guard_armed = false;
    if (rc == 0)
        *rep = p;
    return rc;
}

/* The unused buffer a pushed connection's reader keeps once empty
 * (hiredis' own default, set here for the reads that count on it). */
#define PUSHED_MAXBUF (16u << 10)

/* Hand each reply already complete in c's reader to fn, each within the
 * object limit and charged to the budget while it lives.  0, or -1 (c
 * failed). */
static int
pushed_drain(redisContext *c, redisconn_push_fn *fn, void *arg)
{
    void *p;
    int rc;

    for (;;) {
        p = NULL;
        guard_objects = 0;
        rc = redisGetReplyFromReader(c, &p);
        if (rc == REDIS_OK && p != NULL) {
            fn(arg, p);
            freeReplyObject(p);
        }
        atomic_fetch_sub(&budget_used, guard_cost);
        guard_cost = 0;
        if (rc == REDIS_ERR)
            return -1;
        if (p == NULL)
            return 0;
    }
}

int
redisconn_read_pushed(redisContext *c, bool read, size_t max_bytes, size_t max_objects,
                      redisconn_push_fn *fn, void *arg)
{
    int rc = 0;

    if (c == NULL || c->err)
        return -1;
    c->reader->maxbuf = PUSHED_MAXBUF;
#if HIREDIS_MAJOR >= 1
    c->reader->maxelements = max_objects;
#endif
    guard_armed = true;
    guard_max = max_objects;
    guard_cost = 0;
    guard_tripped = TRIP_NONE;
    if (pushed_drain(c, fn, arg) == -1 ||
        (read && (redisBufferRead(c) == REDIS_ERR || pushed_drain(c, fn, arg) == -1))) {
        rc = name_limit(c) ? -2 : -1;
    } else if (buffered(c) > max_bytes) {
        fail_with(c, REDIS_ERR_OTHER, "a message of over %zu bytes: refused (the reply "
                  "limit)", max_bytes);
        rc = -2;
    }
    guard_armed = false;
    guard_max = REDISCONN_REPLY_OBJECTS_MAX;
    return rc;
}

int
redisconn_lfu_reply(const redisReply *rep)
{
    static const char field[] = "maxmemory_policy:";
    const char *p, *end;

    if (rep == NULL || rep->type != REDIS_REPLY_STRING || rep->str == NULL)
        return 0;
    end = rep->str + rep->len;
    p = memmem(rep->str, rep->len, field, sizeof(field) - 1);
    if (p == NULL)
        return 0;
    /* allkeys-lfu, volatile-lfu */
    for (p += sizeof(field) - 1; p + 3 <= end && *p != '\r' && *p != '\n'; p++)
        if (memcmp(p, "lfu", 3) == 0)
            return 1;
    return 0;
}

int
redisconn_lfu(redisContext *c)
{
    redisReply *rep = redisCommand(c, "INFO memory");
    int lfu;

    if (rep == NULL)
        return -1;
    lfu = redisconn_lfu_reply(rep);
    freeReplyObject(rep);
    return lfu;
}

bool
redisconn_lfu_error(const char *str, size_t len)
{
    return str != NULL && memmem(str, len, "LFU", 3) != NULL;
}

struct timeval
redisconn_tv(int64_t ms)
{
    struct timeval tv;

    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    return tv;
}

bool
redisconn_timed_out(const redisContext *c)
{
    return c != NULL && c->err == REDIS_ERR_IO &&
        (strcmp(c->errstr, strerror(EAGAIN)) == 0 ||
         strcmp(c->errstr, strerror(EWOULDBLOCK)) == 0);
}

/* How hiredis words each way a peer closes a connection: an EOF is its
 * own error code, the others an I/O error with strerror()'s text. */
static const struct {
    int err;                    /* hiredis' c->err */
    int errnum;                 /* with REDIS_ERR_IO: the errno; else 0 */
} closed_how[REDISCONN_CLOSED_COUNT] = {
    [REDISCONN_CLOSED_EOF] = { REDIS_ERR_EOF, 0 },
    [REDISCONN_CLOSED_RESET] = { REDIS_ERR_IO, ECONNRESET },
    [REDISCONN_CLOSED_PIPE] = { REDIS_ERR_IO, EPIPE },
};

static const char *const closed_names[REDISCONN_CLOSED_COUNT] = {
#define X(id, name) [REDISCONN_CLOSED_##id] = name,
    REDISCONN_CLOSED_REASONS(X)
#undef X
};

const char *
redisconn_closed_name(enum redisconn_closed r)
{
    return (unsigned)r < REDISCONN_CLOSED_COUNT ? closed_names[r] : "other";
}

bool
redisconn_closed(const redisContext *c, enum redisconn_closed *why)
{
    size_t i;

    if (c == NULL || c->err == 0)
        return false;
    for (i = 0; i < REDISCONN_CLOSED_COUNT; i++)
        if (c->err == closed_how[i].err &&
            (closed_how[i].errnum == 0 ||
             strcmp(c->errstr, strerror(closed_how[i].errnum)) == 0)) {
            *why = (enum redisconn_closed)i;
            return true;
        }
    return false;
}

void
redisconn_error(const redisContext *c, const struct target_conf *t,
                const char *what, char *err, size_t errlen)
{
    if (err == NULL || errlen == 0)
        return;
    /* hiredis reports a command timeout as EAGAIN ("Resource temporarily
     * unavailable"); say what it means, and which way: bytes still in the
     * output buffer mean the write timed out (the server is not reading),
     * an empty one that no reply came. */
    if (redisconn_timed_out(c))
        snprintf(err, errlen, c->obuf != NULL && sdslen(c->obuf) > 0
                 ? "%s on %s:%d: write to Redis timed out after %lld ms (command_timeout; "
                   "the server is not reading: busy, paused or unreachable)"
                 : "%s on %s:%d: read from Redis timed out after %lld ms (command_timeout: "
                   "no reply)",
                 what, t->host, t->port, (long long)t->command_timeout_ms);
    else
        snprintf(err, errlen, "%s on %s:%d: %s%s", what, t->host, t->port,
                 c == NULL ? "out of memory" : c->errstr[0] ? c->errstr : "connection lost",
                 /* TLS 1.3: a server that wants a client certificate
                  * accepts the handshake, then drops the connection */
                 t->tls && t->tls_cert == NULL && c != NULL &&
                 (c->err == REDIS_ERR_IO || c->err == REDIS_ERR_EOF) ?
                 " (over TLS: does the server require a client certificate? set "
                 "tls_cert_file and tls_key_file)" : "");
}

redisReply *
redisconn_command(redisContext *c, const struct target_conf *t, const char *what,
                  int argc, const char **argv, const size_t *argvlen,
                  char *err, size_t errlen)
{
    redisReply *rep = NULL;

    if (redisAppendCommandArgv(c, argc, argv, argvlen) != REDIS_OK ||
        redisconn_get_reply(c, &rep) == -1) {
        redisconn_error(c, t, what, err, errlen);
        return NULL;
    }
    return rep;
}

/* AUTH or SELECT; 0 when the server said OK.  Only the server's reply is
 * quoted, never the arguments (the password). */
static int
setup_cmd(redisContext *c, const struct target_conf *t, int argc, const char **argv,
          char *err, size_t errlen)
{
    redisReply *rep = NULL;
    int rc = 0;

    if (redisAppendCommandArgv(c, argc, argv, NULL) != REDIS_OK ||
        redisconn_get_reply(c, &rep) == -1) {
        redisconn_error(c, t, argv[0], err, errlen);
        return -1;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s on %s:%d refused: %.*s", argv[0], t->host, t->port,
                     (int)(rep->len > 160 ? 160 : rep->len), rep->str);
        rc = -1;
    }
    freeReplyObject(rep);
    return rc;
}

void
redisconn_node(const struct target_conf *t, const char *host, int port,
               struct target_conf *out)
{
    *out = *t;
    if (host != out->host)
        snprintf(out->host, sizeof(out->host), "%s", host);
    out->port = port;
    /* A sentinel target's node is the address the sentinels gave: there
     * is no other name to check its certificate against (tls_server_name
     * overrides it).  A cluster node keeps the URL's host. */
    if (t->mode == TARGET_SENTINEL && host != out->tls_name)
        snprintf(out->tls_name, sizeof(out->tls_name), "%s", host);
}

redisContext *
redisconn_open(const struct target_conf *t, char *err, size_t errlen)
{
    const struct redisconn_scope *sc = cur_scope;
    int64_t connect_ms = t->connect_timeout_ms;
    redisContext *c;
    char db[16], scratch[160];

    if (silent_why(t->host, t->port, scratch, sizeof(scratch))) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s:%d: %s", t->host, t->port, scratch);
        return NULL;
    }
    /* the connect too ends by the scope's deadline */
    if (sc != NULL && sc->deadline_ms != INT64_MAX && clock_left(sc->deadline_ms) < connect_ms)
        connect_ms = clock_left(sc->deadline_ms) > 0 ? clock_left(sc->deadline_ms) : 1;
    c = redisConnectWithTimeout(t->host, t->port, redisconn_tv(connect_ms));
    if (c == NULL || c->err) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "connect to %s:%d: %s", t->host, t->port,
                     c ? c->errstr : "out of memory");
        /* no SYN-ACK within connect_timeout: a node cut off (not a
         * connect the scope's deadline cut short) */
        if (c != NULL && c->err == REDIS_ERR_IO && strcmp(c->errstr, strerror(ETIMEDOUT)) == 0 &&
            connect_ms == t->connect_timeout_ms)
            silent_note(t->host, t->port, connect_ms);
        goto fail;
    }
    redisconn_guard(c);
    /* TCP keepalive (hiredis: idle 15 s): a peer gone without a word is
     * found, and a NAT or load balancer that drops idle flows silently
     * keeps a kept connection's between passes */
    (void)redisEnableKeepAlive(c);
    if (redisSetTimeout(c, redisconn_tv(t->command_timeout_ms)) != REDIS_OK) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "set timeout on %s:%d: %s", t->host, t->port, c->errstr);
        goto fail;
    }
    /* rediss://: the handshake, bounded by the command timeout; never a
     * fall back to plaintext. */
    if (t->tls) {
        int64_t t0 = clock_mono_ms();

        if (redisconn_tls(c, t, t->host, t->port, t->tls_name[0] ? t->tls_name : t->host,
                          err != NULL ? err : scratch,
                          err != NULL ? errlen : sizeof(scratch)) == -1) {
            /* a stopped node takes the TCP connect (the kernel does) and
             * then says nothing: a handshake that used the whole
             * command_timeout is that silence */
            if (clock_mono_ms() - t0 >= t->command_timeout_ms)
                silent_note(t->host, t->port, t->command_timeout_ms);
            goto fail;
        }
    }
    if (t->password != NULL) {
        const char *argv[3] = { "AUTH", t->user ? t->user : t->password, t->password };

        if (setup_cmd(c, t, t->user ? 3 : 2, argv, err, errlen) == -1)
            goto fail;
    }
    if (t->db != 0) {
        const char *argv[2] = { "SELECT", db };

        snprintf(db, sizeof(db), "%d", t->db);
        if (setup_cmd(c, t, 2, argv, err, errlen) == -1)
            goto fail;
    }
    /* Redis >= 7.2: our reads must not reset OBJECT IDLETIME, the only age
     * a lock without an encoded acquisition time has.  Older servers
     * answer with an error, which changes nothing. */
    {
        const char *argv[3] = { "CLIENT", "NO-TOUCH", "ON" };
        redisReply *rep = NULL;

        if (redisAppendCommandArgv(c, 3, argv, NULL) != REDIS_OK ||
            redisconn_get_reply(c, &rep) == -1) {
            redisconn_error(c, t, "connection setup (CLIENT NO-TOUCH)", err, errlen);
            goto fail;
        }
        freeReplyObject(rep);
    }
    return c;
fail:
    if (c != NULL)
        redisFree(c);
    return NULL;
}
