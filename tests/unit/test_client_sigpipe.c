/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_client_sigpipe.c - liblockwatch never lets a SIGPIPE through: hiredis
 * writes with write(2), and a write on a connection the server closed
 * raises SIGPIPE, whose default action ends the program (the torture's
 * workers died of it after Redis restarts).  lwc_sigpipe_block/restore
 * bracket every public call that may write; here a real write on a socket
 * whose peer is gone, with SIGPIPE at its default action, must leave the
 * process alive, nothing pending and the thread's mask as it was.
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

static bool
pipe_pending(void)
{
    sigset_t p;

    assert_int_equal(sigpending(&p), 0);
    return sigismember(&p, SIGPIPE);
}

static bool
pipe_blocked(void)
{
    sigset_t m;

    assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &m), 0);
    return sigismember(&m, SIGPIPE);
}

/* write(2) on a stream socket whose peer was closed: EPIPE, and SIGPIPE. */
static void
write_to_closed_peer(void)
{
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);
    assert_int_equal(write(sv[0], "PING\r\n", 6), -1);
    assert_int_equal(errno, EPIPE);
    close(sv[0]);
}

static void
write_inside_survives(void **state)
{
    struct lwc_sigpipe sp;

    (void)state;
    signal(SIGPIPE, SIG_DFL);
    assert_false(pipe_blocked());
    lwc_sigpipe_block(&sp);
    assert_true(pipe_blocked());
    write_to_closed_peer();
    assert_true(pipe_pending());
    lwc_sigpipe_restore(&sp);
    assert_false(pipe_pending());
    assert_false(pipe_blocked());
}

/* A caller that blocked SIGPIPE itself keeps its mask and the SIGPIPE it
 * had pending (it is the caller's, not ours). */
static void
callers_own_pending_sigpipe_is_left(void **state)
{
    struct lwc_sigpipe sp;
    sigset_t pipe;
    struct timespec zero = { 0, 0 };

    (void)state;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    assert_int_equal(pthread_sigmask(SIG_BLOCK, &pipe, NULL), 0);
    write_to_closed_peer();
    assert_true(pipe_pending());
    lwc_sigpipe_block(&sp);
    write_to_closed_peer();
    lwc_sigpipe_restore(&sp);
    assert_true(pipe_blocked());
    assert_true(pipe_pending());
    assert_int_equal(sigtimedwait(&pipe, NULL, &zero), SIGPIPE);
    assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &pipe, NULL), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(write_inside_survives),
        cmocka_unit_test(callers_own_pending_sigpipe_is_left),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
