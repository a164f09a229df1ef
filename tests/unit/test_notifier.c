/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_notifier.c - the notifier's bounded queue and its shutdown bound,
 * against a loopback socket that listens but never answers (the kernel
 * completes the handshake, nobody reads): the request in flight hangs,
 * so everything else waits in the queue; and the leader gate (a notice of
 * a past term dropped unsent, the current one sent with its fence).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "alerts/notifier.h"

static int
silent_listener(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

/* A generic sink at url with a minute's timeout and 1 s retries. */
static void
generic_sink(struct notifier_sink_conf *c, const char *name, const char *url,
             const struct sink_key *key)
{
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->type = &sink_generic;
    c->url = url;
    c->key = key;
    c->delivery.timeout_ms = 60000;
    c->delivery.retry_base_ms = 1000;
}

/* A notifier with one generic sink, "stuck" (its conf in *c, over url),
 * posting to a listener that never answers (*fd). */
static struct notifier *
stuck_notifier(struct notifier_sink_conf *c, char *url, size_t urllen, int *fd)
{
    static const struct sink_key none = { NULL, 0 };
    struct notifier *n;
    int port;

    *fd = silent_listener(&port);
    snprintf(url, urllen, "http://127.0.0.1:%d/hook", port);
    assert_int_equal(notifier_global_init(), 0);
    n = notifier_new();
    assert_non_null(n);
    generic_sink(c, "stuck", url, &none);
    assert_int_equal(notifier_configure(n, c, 1), 0);
    return n;
}

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
queue_is_bounded_and_shutdown_is_bounded(void **state)
{
    struct notifier_sink_conf c;
    struct notifier_stats *st;
    struct notifier *n;
    char url[64];
    size_t i, ns;
    int fd;
    double t0;

    (void)state;
    n = stuck_notifier(&c, url, sizeof(url), &fd);
    for (i = 0; i < NOTIFY_QUEUE_MAX + 10; i++)
        notifier_enqueue(n, 0, strdup("{}"), 2);
    assert_int_equal(notifier_stats(n, &st, &ns), 0);
    assert_int_equal(ns, 1);
    assert_string_equal(st[0].name, "stuck");
    /* one may be in flight, the queue holds at most NOTIFY_QUEUE_MAX */
    assert_true(st[0].queued <= NOTIFY_QUEUE_MAX + 1);
    assert_true(st[0].dropped >= 9);
    assert_int_equal(st[0].sent, 0);
    notifier_stats_free(st, ns);
    /* an unknown sink index is ignored (the body is freed) */
    notifier_enqueue(n, 7, strdup("{}"), 2);
    /* a reload that drops the sink drops its queue, in flight or not */
    assert_int_equal(notifier_configure(n, NULL, 0), 0);
    assert_int_equal(notifier_stats(n, &st, &ns), 0);
    assert_int_equal(ns, 0);
    notifier_stats_free(st, ns);
    /* and back: a fresh queue; stop gives it its bounded last chance */
    assert_int_equal(notifier_configure(n, &c, 1), 0);
    notifier_enqueue(n, 0, strdup("{}"), 2);
    t0 = now_s();
    notifier_free(n, 500);
    assert_true(now_s() - t0 < 3.0);
    notifier_global_cleanup();
    close(fd);
}

/* The sink's notices not sent yet, the one in flight included. */
static size_t
queued_now(struct notifier *n)
{
    struct notifier_stats *st;
    size_t ns, q;

    assert_int_equal(notifier_stats(n, &st, &ns), 0);
    assert_int_equal(ns, 1);
    q = st[0].queued;
    notifier_stats_free(st, ns);
    return q;
}

/* An Alertmanager refresh replaces the queued refreshes and firing notices
 * of older ticks (it says every alert again; an old one sent late says an
 * end already past), never a resolution or another notice, nor one of its
 * own tick (a refresh of more alerts than a batch is several notices). */
static void
a_refresh_replaces_older_queued_refreshes(void **state)
{
    struct notifier_sink_conf c;
    struct notifier *n;
    char url[64];
    int fd;

    (void)state;
    n = stuck_notifier(&c, url, sizeof(url), &fd);
    notifier_enqueue(n, 0, strdup("{}"), 2);        /* in flight, never answered */
    usleep(200000);
    assert_int_equal(queued_now(n), 1);
    notifier_enqueue_fenced(n, 0, strdup("{\"r\":1}"), 7, 0, false, 60000, true);
    notifier_enqueue_fenced(n, 0, strdup("{\"res\":1}"), 9, 0, true, 0, false);
    notifier_enqueue_fenced(n, 0, strdup("{\"f\":2}"), 7, 0, false, 120000, false);
    notifier_enqueue_fenced(n, 0, strdup("{\"r\":2}"), 7, 0, false, 120000, true);
    notifier_enqueue_fenced(n, 0, strdup("{\"r\":2}"), 7, 0, false, 120000, true);
    notifier_enqueue(n, 0, strdup("{}"), 2);
    /* the first tick's refresh went: a resolution, the second tick's
     * firing notice (an alert that started then, which that tick's own
     * refresh does not say) and two refreshes (one tick's batches stay
     * together), and the plain notice */
    assert_int_equal(queued_now(n), 1 + 5);
    notifier_enqueue_fenced(n, 0, strdup("{\"r\":3}"), 7, 0, false, 180000, true);
    /* the second tick's firing notice and refreshes went too; the
     * resolution, the plain notice and the new refresh stay, beside the one
     * in flight */
    assert_int_equal(queued_now(n), 1 + 3);
    notifier_free(n, 0);
    notifier_global_cleanup();
    close(fd);
}

static long long
term_five(void *arg)
{
    (void)arg;
    return 5;
}

static long long
following(void *arg)
{
    (void)arg;
    return 0;
}

/* A notifier with one generic sink, "fenced", posting to a listener that
 * never answers (*fd), gated by gate. */
static struct notifier *
fenced_notifier_grace(int *fd, notifier_fence_fn gate, int64_t grace_ms)
{
    static struct notifier_sink_conf c;
    static struct sink_key none = { NULL, 0 };
    static char url[64];
    struct notifier *n;
    int port;

    *fd = silent_listener(&port);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/hook", port);
    assert_int_equal(notifier_global_init(), 0);
    assert_non_null(n = notifier_new());
    generic_sink(&c, "fenced", url, &none);
    assert_int_equal(notifier_configure(n, &c, 1), 0);
    notifier_set_gate(n, gate, NULL, grace_ms);
    return n;
}

static struct notifier *
fenced_notifier(int *fd, notifier_fence_fn gate)
{
    return fenced_notifier_grace(fd, gate, 0);
}

/* The first request's bytes on the listener fd, up to the one with want. */
static void
read_request(int fd, const char *want, char *req, size_t size)
{
    struct timeval tv = { 5, 0 };
    ssize_t got = 0;
    int conn;
    double t0;

    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    conn = accept(fd, NULL, NULL);
    assert_true(conn >= 0);
    assert_int_equal(setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    t0 = now_s();
    req[0] = '\0';
    while (got < (ssize_t)size - 1 && now_s() - t0 < 5.0 && strstr(req, want) == NULL) {
        ssize_t r = read(conn, req + got, size - 1 - (size_t)got);

        if (r <= 0)
            break;
        got += r;
        req[got] = '\0';
    }
    close(conn);
}

/* Within 5 s, one notice dropped unsent, none sent; then free n. */
static void
expect_dropped_unsent(struct notifier *n)
{
    struct notifier_stats *st;
    size_t ns;
    double t0 = now_s();

    do {
        assert_int_equal(notifier_stats(n, &st, &ns), 0);
        if (st[0].dropped == 1) {
            notifier_stats_free(st, ns);
            break;
        }
        notifier_stats_free(st, ns);
        usleep(10000);
    } while (now_s() - t0 < 5.0);
    assert_int_equal(notifier_stats(n, &st, &ns), 0);
    assert_int_equal(st[0].dropped, 1);
    assert_int_equal(st[0].sent, 0);
    notifier_stats_free(st, ns);
    notifier_free(n, 200);
    notifier_global_cleanup();
}

/*
 * With a gate saying term 5 and the given grace, a firing notice of term 4
 * is dropped unsent, and the next notice (body, of term fence, a
 * resolution or not) is the request the receiver gets, with header.
 */
static void
drops_old_then_sends(int64_t grace_ms, const char *body, long long fence, bool resolve,
                     const char *header)
{
    struct notifier_stats *st;
    struct notifier *n;
    char req[4096];
    size_t ns;
    int fd;

    n = fenced_notifier_grace(&fd, term_five, grace_ms);
    notifier_enqueue_fenced(n, 0, strdup("{\"old\":1}"), 9, 4, false, 0, false);
    notifier_enqueue_fenced(n, 0, strdup(body), strlen(body), fence, resolve, 0, false);
    read_request(fd, body, req, sizeof(req));
    assert_non_null(strstr(req, header));
    assert_non_null(strstr(req, body));
    assert_null(strstr(req, "old"));
    assert_int_equal(notifier_stats(n, &st, &ns), 0);
    assert_int_equal(st[0].dropped, 1);
    notifier_stats_free(st, ns);
    notifier_free(n, 200);
    notifier_global_cleanup();
    close(fd);
}

/* A notice of an ended leader term is dropped unsent; one of the current
 * term goes, with its fence in X-Lockwatch-Fence. */
static void
gate_drops_past_terms_and_sends_the_fence(void **state)
{
    (void)state;
    drops_old_then_sends(0, "{\"now\":1}", 5, false, "X-Lockwatch-Fence: 5\r\n");
}

/* A notice made while no replica could lead (fence < 0) is dropped once
 * another leads (this one follows: the gate says 0); while this one
 * leads it goes, with no X-Lockwatch-Fence (unelected_goes_unfenced). */
static void
gate_drops_unelected_notices_once_another_leads(void **state)
{
    struct notifier *n;
    int fd;

    (void)state;
    n = fenced_notifier(&fd, following);
    notifier_enqueue_fenced(n, 0, strdup("{\"une\":1}"), 9, -1, false, 0, false);
    expect_dropped_unsent(n);
    close(fd);
}

static void
unelected_goes_unfenced(void **state)
{
    struct notifier *n;
    char req[4096];
    int fd;

    (void)state;
    n = fenced_notifier(&fd, term_five);
    notifier_enqueue_fenced(n, 0, strdup("{\"une\":1}"), 9, -1, false, 0, false);
    read_request(fd, "{\"une\":1}", req, sizeof(req));
    assert_non_null(strstr(req, "{\"une\":1}"));
    assert_null(strstr(req, "X-Lockwatch-Fence"));
    notifier_free(n, 200);
    notifier_global_cleanup();
    close(fd);
}

/* A resolution made in a term that then ended still goes, with that
 * term's fence, while younger than the grace (a lease); the term's firing
 * notice does not. */
static void
gate_keeps_a_past_terms_resolution_within_the_grace(void **state)
{
    (void)state;
    drops_old_then_sends(60000, "{\"res\":1}", 4, true, "X-Lockwatch-Fence: 4\r\n");
}

/* Past the grace (0 here), a resolution of an ended term is dropped too. */
static void
gate_drops_a_past_terms_resolution_after_the_grace(void **state)
{
    struct notifier *n;
    int fd;

    (void)state;
    n = fenced_notifier(&fd, term_five);
    notifier_enqueue_fenced(n, 0, strdup("{\"res\":1}"), 9, 4, true, 0, false);
    expect_dropped_unsent(n);
    close(fd);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(queue_is_bounded_and_shutdown_is_bounded),
        cmocka_unit_test(a_refresh_replaces_older_queued_refreshes),
        cmocka_unit_test(gate_drops_past_terms_and_sends_the_fence),
        cmocka_unit_test(gate_drops_unelected_notices_once_another_leads),
        cmocka_unit_test(unelected_goes_unfenced),
        cmocka_unit_test(gate_keeps_a_past_terms_resolution_within_the_grace),
        cmocka_unit_test(gate_drops_a_past_terms_resolution_after_the_grace),
    };

    return cmocka_run_group_tests_name("notifier", tests, NULL, NULL);
}
