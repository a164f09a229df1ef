/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_client_sigpipe.c - liblockwatch does not let hiredis's write(2) on a
 * connection the server closed end the program: SIGPIPE's default action
 * (death; the torture's workers died of it after Redis restarts) becomes
 * SIG_IGN at lw_connect (lwc_sigpipe_ignore_default), so the write fails
 * with EPIPE like any broken connection, while a program's own handler is
 * left alone.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "client/client_impl.h"

static volatile sig_atomic_t handled;

static void
on_pipe(int sig)
{
    (void)sig;
    handled++;
}

static void
set_pipe(void (*handler)(int))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGPIPE, &sa, NULL), 0);
}

static void (*pipe_handler(void))(int)
{
    struct sigaction sa;

    assert_int_equal(sigaction(SIGPIPE, NULL, &sa), 0);
    return sa.sa_handler;
}

/* What the library does on a connection whose peer is gone: hiredis's
 * write(2) fails (raising SIGPIPE unless it is ignored). */
static void
write_to_closed_peer(void)
{
    int sv[2], done = 0;
    redisContext *ctx;

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);
    ctx = redisConnectFd(sv[0]);
    assert_non_null(ctx);
    assert_int_equal(redisAppendCommand(ctx, "PING"), REDIS_OK);
    assert_int_equal(redisBufferWrite(ctx, &done), REDIS_ERR);
    assert_int_equal(ctx->err, REDIS_ERR_IO);
    redisFree(ctx);
}

static void
default_becomes_ignored(void **state)
{
    sigset_t pending;

    (void)state;
    set_pipe(SIG_DFL);
    lwc_sigpipe_ignore_default();
    assert_true(pipe_handler() == SIG_IGN);
    write_to_closed_peer();             /* alive: the write failed instead */
    assert_int_equal(sigpending(&pending), 0);
    assert_false(sigismember(&pending, SIGPIPE));
}

static void
own_handler_is_left_alone(void **state)
{
    (void)state;
    set_pipe(on_pipe);
    handled = 0;
    lwc_sigpipe_ignore_default();
    assert_true(pipe_handler() == on_pipe);
    write_to_closed_peer();
    assert_int_equal(handled, 1);
    set_pipe(SIG_DFL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_becomes_ignored),
        cmocka_unit_test(own_handler_is_left_alone),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
