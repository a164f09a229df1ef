/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_notifier.c - the notifier's bounded queue and its shutdown bound,
 * against a loopback socket that listens but never answers (the kernel
 * completes the handshake, nobody reads): the request in flight hangs,
 * so everything else waits in the queue.
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
    struct sink_key none = { NULL, 0 };
    struct notifier *n;
    char url[64];
    size_t i, ns;
    int fd, port;
    double t0;

    (void)state;
    fd = silent_listener(&port);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/hook", port);
    assert_int_equal(notifier_global_init(), 0);
    n = notifier_new();
    assert_non_null(n);
    memset(&c, 0, sizeof(c));
    c.name = "stuck";
    c.type = &sink_generic;
    c.url = url;
    c.key = &none;
    c.delivery.timeout_ms = 60000;
    c.delivery.retry_base_ms = 1000;
    assert_int_equal(notifier_configure(n, &c, 1), 0);
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(queue_is_bounded_and_shutdown_is_bounded),
    };

    return cmocka_run_group_tests_name("notifier", tests, NULL, NULL);
}
