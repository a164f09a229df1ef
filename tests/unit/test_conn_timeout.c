/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_conn_timeout.c - a timed-out write says so (issue 24): hiredis
 * reports a passed socket timeout as EAGAIN, "Resource temporarily
 * unavailable"; lockctl and the agent (collectors/redis/conn.c,
 * redisconn_error) and liblockwatch (client/conn.c, lwc_command) say
 * "write to Redis timed out after N ms" instead, and "read ... timed out"
 * when the command went out and no reply came.
 *
 * The peer is a loopback socket that is listened on and never read (no
 * Redis is mocked: nothing here speaks RESP); a 64 MiB command fills the
 * kernel's buffers, so the write blocks until the 200 ms send timeout.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "client/client_impl.h"
#include "collectors/redis/conn.h"

#define BIG (64u * 1024 * 1024)

/* A listening loopback socket nobody reads from; its port in *port. */
static int
deaf_listener(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

static redisContext *
connect_with_timeout(int port)
{
    struct timeval tv = { 0, 200 * 1000 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    assert_int_equal(redisSetTimeout(c, tv), REDIS_OK);
    return c;
}

static void
write_timeout_named(void **state)
{
    struct target_conf t;
    char *big = malloc(BIG), err[512];
    const char *argv[3] = { "SET", "k", big };
    size_t lens[3] = { 3, 1, BIG };
    int port, lfd = deaf_listener(&port);
    redisContext *c = connect_with_timeout(port);
    lw_error lerr;

    (void)state;
    assert_non_null(big);
    memset(big, 'x', BIG);
    memset(&t, 0, sizeof(t));
    snprintf(t.host, sizeof(t.host), "127.0.0.1");
    t.port = port;
    t.command_timeout_ms = 200;
    assert_null(redisCommandArgv(c, 3, argv, lens));
    redisconn_error(c, &t, "SET", err, sizeof(err));
    assert_non_null(strstr(err, "write to Redis timed out after 200 ms"));
    assert_null(strstr(err, "temporarily"));
    redisFree(c);

    c = connect_with_timeout(port);
    memset(&lerr, 0, sizeof(lerr));
    assert_null(lwc_command(c, 3, argv, lens, "lw_lock SET", &lerr));
    assert_non_null(strstr(lerr.str, "write to Redis timed out after 200 ms"));
    redisFree(c);
    free(big);
    close(lfd);
}

static void
read_timeout_named(void **state)
{
    struct target_conf t;
    char err[512];
    int port, lfd = deaf_listener(&port);
    redisContext *c = connect_with_timeout(port);

    (void)state;
    memset(&t, 0, sizeof(t));
    snprintf(t.host, sizeof(t.host), "127.0.0.1");
    t.port = port;
    t.command_timeout_ms = 200;
    assert_null(redisCommand(c, "PING"));
    redisconn_error(c, &t, "PING", err, sizeof(err));
    assert_non_null(strstr(err, "read from Redis timed out after 200 ms"));
    redisFree(c);
    close(lfd);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(write_timeout_named),
        cmocka_unit_test(read_timeout_named),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
