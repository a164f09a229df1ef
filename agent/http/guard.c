/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * guard.c - the HTTP server's admission control: request deadlines,
 * connections per client address, and the budget of expensive answers.
 *
 * Deadlines.  libmicrohttpd's own timeout counts idle time only, so a
 * client that sends one header line every few seconds holds its slot
 * for ever.  Here every request is on a deadline list from the moment its
 * connection opens (or its previous answer ends) until its headers and
 * body are in; a thread looks at the lists every GUARD_TICK_MS and shuts
 * the socket of each request past its deadline down.  libmicrohttpd then
 * sees the connection end and closes it as it would any other.  Every
 * request on a list has the same timeout, so appending at the tail keeps
 * a list in deadline order and the thread only ever looks at its heads.
 * There are two lists: the normal timeout, and the short one of
 * connections over their client's limit.
 *
 * The deadline is the client's, not the server's.  When it passes while
 * bytes the client sent still wait unread in the socket (FIONREAD), it is
 * libmicrohttpd that is behind (a worker thread with a burst of
 * connections to go through on a starved CPU; before http.c chose poll(),
 * one asleep in epoll_wait with 256 requests unread), so the request is
 * put back at the tail with a new deadline instead of being cut; a slow
 * client cannot make the server leave its bytes unread.  Cutting such a
 * request answered nothing: libmicrohttpd read it after the shutdown
 * (Linux keeps received data readable), the router counted its 503, and
 * the client saw end-of-file.  A request cut all the same (its last bytes
 * were read just before the cut) is marked, and guard_answered says so:
 * the router then closes it without an answer and counts nothing.
 *
 * The socket is shut down, never closed, here, and only while its entry
 * is on a list under the mutex: libmicrohttpd calls guard_close (which
 * unlinks it under the same mutex) before it closes the descriptor, so
 * the descriptor shut down is always still the connection's own.
 *
 * Clients.  Connections are counted per source address in a chained hash
 * table (entries live only while their address has a connection, so it
 * holds at most as many entries as there are connections).  A connection
 * that opens while its address already has per_client is "over": its
 * request gets GUARD_OVER_CLIENT_TIMEOUT_MS, and the router answers it
 * 503 for anything but the cheap probes, so one client can neither hold
 * many slots for long nor take the expensive answers' budget.
 *
 * Budget.  An expensive answer (rendered in full before it is sent, up to
 * the API's page cap) holds one of heavy_max from when it is taken until
 * the request is done, slow readers included: memory held by answers is
 * at most heavy_max pages.
 */
#include "agent/http/guard.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common/clock.h"

#define GUARD_TICK_MS   100
#define GUARD_BUCKETS   1024        /* per-client table; chains hold the rest */
#define ADDR_MAX        16          /* bytes of an IPv6 address */

struct client {
    struct client *next;
    unsigned char addr[ADDR_MAX];
    size_t len;
    unsigned int conns;
};

enum guard_list { LIST_NORMAL, LIST_SHORT, LIST_COUNT };

struct guard_conn {
    struct guard_conn *prev, *next; /* on a deadline list while armed */
    int fd;
    bool armed, over, heavy;
    bool cut;                       /* shut down at its deadline */
    int64_t deadline_ms;
    struct client *client;          /* NULL: address not countable */
};

struct deadline_list {
    struct guard_conn *head, *tail;
    int64_t timeout_ms;
};

struct http_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stop;
    struct guard_limits lim;
    struct deadline_list lists[LIST_COUNT];
    struct client *buckets[GUARD_BUCKETS];
    unsigned int heavy_now;
    struct guard_stats st;
};

/* The address bytes that name a client (port excluded); 0 when the family
 * is neither IPv4 nor IPv6. */
static size_t
addr_bytes(const struct sockaddr *sa, unsigned char *out)
{
    if (sa == NULL)
        return 0;
    if (sa->sa_family == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        return 16;
    }
    return 0;
}

static size_t
bucket_of(const unsigned char *a, size_t n)
{
    uint32_t h = 2166136261u;
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ a[i]) * 16777619u;
    return h % GUARD_BUCKETS;
}

/* The client entry of an address, made when absent; NULL on ENOMEM. */
static struct client *
client_get(struct http_guard *g, const unsigned char *a, size_t n)
{
    struct client **b = &g->buckets[bucket_of(a, n)], *c;

    for (c = *b; c != NULL; c = c->next)
        if (c->len == n && memcmp(c->addr, a, n) == 0)
            return c;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return NULL;
    memcpy(c->addr, a, n);
    c->len = n;
    c->next = *b;
    *b = c;
    return c;
}

static void
client_put(struct http_guard *g, struct client *c)
{
    struct client **p;

    if (--c->conns > 0)
        return;
    for (p = &g->buckets[bucket_of(c->addr, c->len)]; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            free(c);
            return;
        }
    }
}

static void
arm(struct http_guard *g, struct guard_conn *gc)
{
    struct deadline_list *l = &g->lists[gc->over ? LIST_SHORT : LIST_NORMAL];

    if (gc->armed)
        return;
    gc->deadline_ms = clock_deadline(l->timeout_ms);
    gc->prev = l->tail;
    gc->next = NULL;
    if (l->tail != NULL)
        l->tail->next = gc;
    else
        l->head = gc;
    l->tail = gc;
    gc->armed = true;
}

static void
disarm(struct http_guard *g, struct guard_conn *gc)
{
    struct deadline_list *l = &g->lists[gc->over ? LIST_SHORT : LIST_NORMAL];

    if (!gc->armed)
        return;
    if (gc->prev != NULL)
        gc->prev->next = gc->next;
    else
        l->head = gc->next;
    if (gc->next != NULL)
        gc->next->prev = gc->prev;
    else
        l->tail = gc->prev;
    gc->prev = gc->next = NULL;
    gc->armed = false;
}

/* Has the client sent bytes that are still waiting unread in the socket? */
static bool
unread_input(int fd)
{
    int n = 0;

    return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/* Shut down every request past its deadline, but for those whose bytes
 * the server has not read yet: those get a new deadline (at the list's
 * tail, later than now, so the loop ends).  Called with the mutex. */
static void
expire(struct http_guard *g, int64_t now)
{
    size_t i;

    for (i = 0; i < LIST_COUNT; i++) {
        struct guard_conn *gc;

        while ((gc = g->lists[i].head) != NULL && gc->deadline_ms <= now) {
            disarm(g, gc);
            if (unread_input(gc->fd)) {
                arm(g, gc);
                g->st.extended++;
                continue;
            }
            shutdown(gc->fd, SHUT_RDWR);
            gc->cut = true;
            g->st.timeouts++;
        }
    }
}

static void *
deadline_thread(void *arg)
{
    struct http_guard *g = arg;

    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        (void)clock_cond_wait_until(&g->cv, &g->mu, clock_deadline(GUARD_TICK_MS));
        expire(g, clock_mono_ms());
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

struct http_guard *
guard_new(const struct guard_limits *lim, char *err, size_t errlen)
{
    struct http_guard *g = calloc(1, sizeof(*g));
    int rc;

    if (g == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->lim = *lim;
    g->lists[LIST_NORMAL].timeout_ms = lim->request_timeout_ms;
    g->lists[LIST_SHORT].timeout_ms = lim->request_timeout_ms < GUARD_OVER_CLIENT_TIMEOUT_MS ?
        lim->request_timeout_ms : GUARD_OVER_CLIENT_TIMEOUT_MS;
    if ((rc = clock_cond_init(&g->cv)) != 0) {
        snprintf(err, errlen, "cannot make the HTTP deadline thread's condition variable: %s",
                 strerror(rc));
        free(g);
        return NULL;
    }
    pthread_mutex_init(&g->mu, NULL);
    if ((rc = pthread_create(&g->thread, NULL, deadline_thread, g)) != 0) {
        snprintf(err, errlen, "cannot start the HTTP deadline thread: %s", strerror(rc));
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return NULL;
    }
    return g;
}

void
guard_free(struct http_guard *g)
{
    size_t i;

    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    for (i = 0; i < GUARD_BUCKETS; i++) {
        while (g->buckets[i] != NULL) {
            struct client *c = g->buckets[i];

            g->buckets[i] = c->next;
            free(c);
        }
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

struct guard_conn *
guard_open(struct http_guard *g, int fd, const struct sockaddr *addr)
{
    unsigned char a[ADDR_MAX];
    size_t n = addr_bytes(addr, a);
    struct guard_conn *gc = calloc(1, sizeof(*gc));

    if (gc == NULL)
        return NULL;
    pthread_mutex_lock(&g->mu);
    gc->fd = fd;
    if (n > 0 && (gc->client = client_get(g, a, n)) != NULL) {
        gc->client->conns++;
        gc->over = gc->client->conns > g->lim.per_client;
    }
    g->st.open++;
    arm(g, gc);
    pthread_mutex_unlock(&g->mu);
    return gc;
}

void
guard_close(struct http_guard *g, struct guard_conn *gc)
{
    if (gc == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    disarm(g, gc);
    if (gc->heavy)
        g->heavy_now--;
    if (gc->client != NULL)
        client_put(g, gc->client);
    g->st.open--;
    pthread_mutex_unlock(&g->mu);
    free(gc);
}

bool
guard_answered(struct http_guard *g, struct guard_conn *gc)
{
    bool cut;

    if (gc == NULL)
        return true;
    pthread_mutex_lock(&g->mu);
    disarm(g, gc);
    cut = gc->cut;
    pthread_mutex_unlock(&g->mu);
    return !cut;
}

void
guard_done(struct http_guard *g, struct guard_conn *gc)
{
    if (gc == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    if (gc->heavy) {
        gc->heavy = false;
        g->heavy_now--;
    }
    disarm(g, gc);
    arm(g, gc);
    pthread_mutex_unlock(&g->mu);
}

enum guard_verdict
guard_heavy(struct http_guard *g, struct guard_conn *gc)
{
    enum guard_verdict v = GUARD_OK;

    pthread_mutex_lock(&g->mu);
    if (gc != NULL && gc->over) {
        v = GUARD_OVER_CLIENT;
        g->st.over_client++;
    } else if (gc == NULL || g->heavy_now >= g->lim.heavy_max) {
        v = GUARD_BUSY;
        g->st.busy++;
    } else if (!gc->heavy) {
        gc->heavy = true;
        g->heavy_now++;
    }
    pthread_mutex_unlock(&g->mu);
    return v;
}

void
guard_stats(struct http_guard *g, struct guard_stats *out)
{
    pthread_mutex_lock(&g->mu);
    *out = g->st;
    pthread_mutex_unlock(&g->mu);
}
