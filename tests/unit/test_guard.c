/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_guard.c - HTTP admission (agent/http/guard.c) on socketpairs: a
 * request past its deadline has its socket shut down and is counted, an
 * answered one is not, nor one whose bytes the server has not read yet
 * (its deadline is renewed), and a cut one is not to be answered;
 * connections beyond the per-client limit get the short deadline and no
 * expensive answer; the budget of expensive answers
 * is taken, refused when spent and given back when a request is done.
 * Waits are bounded polls for the event, never a timing assertion.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/http/guard.h"

struct pair {
    int ours, peer;
};

static struct pair
pair_new(void)
{
    int sv[2];
    struct pair p;

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    p.ours = sv[0];
    p.peer = sv[1];
    return p;
}

static void
pair_free(struct pair *p)
{
    close(p->ours);
    close(p->peer);
}

/* Does the peer see end-of-file within wait_ms? */
static bool
peer_sees_eof(const struct pair *p, int wait_ms)
{
    struct pollfd pfd = { .fd = p->peer, .events = POLLIN };
    char c;

    if (poll(&pfd, 1, wait_ms) != 1)
        return false;
    return read(p->peer, &c, 1) == 0;
}

static struct sockaddr_in
addr4(uint32_t host)
{
    struct sockaddr_in a;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(host);
    return a;
}

static struct http_guard *
guard_with(unsigned int per_client, int64_t timeout_ms, unsigned int heavy_max)
{
    struct guard_limits lim = { per_client, timeout_ms, heavy_max };
    char err[128];
    struct http_guard *g = guard_new(&lim, err, sizeof(err));

    assert_non_null(g);
    return g;
}

static void
late_requests_are_shut_down_answered_ones_not(void **state)
{
    struct http_guard *g = guard_with(8, 200, 4);
    struct sockaddr_in a = addr4(0x7f000001);
    struct pair late = pair_new(), fine = pair_new();
    struct guard_conn *gl, *gf;
    struct guard_stats st;

    (void)state;
    gl = guard_open(g, late.ours, (struct sockaddr *)&a);
    gf = guard_open(g, fine.ours, (struct sockaddr *)&a);
    assert_non_null(gl);
    assert_non_null(gf);
    guard_answered(g, gf);
    assert_true(peer_sees_eof(&late, 5000));
    assert_false(peer_sees_eof(&fine, 600));
    guard_stats(g, &st);
    assert_int_equal(st.timeouts, 1);
    assert_int_equal(st.open, 2);
    assert_false(guard_answered(g, gl));    /* cut: nothing to answer */

    /* done: the next request on the connection has a deadline again */
    guard_done(g, gf);
    assert_true(peer_sees_eof(&fine, 5000));
    guard_stats(g, &st);
    assert_int_equal(st.timeouts, 2);

    guard_close(g, gl);
    guard_close(g, gf);
    guard_stats(g, &st);
    assert_int_equal(st.open, 0);
    guard_free(g);
    pair_free(&late);
    pair_free(&fine);
}

/* Wait (bounded) until the guard has renewed n deadlines. */
static bool
extended_reaches(struct http_guard *g, uint64_t n)
{
    struct guard_stats st;
    int i;

    for (i = 0; i < 500; i++) {
        guard_stats(g, &st);
        if (st.extended >= n)
            return true;
        usleep(10000);
    }
    return false;
}

static void
unread_bytes_renew_the_deadline_the_servers_wait_not_the_clients(void **state)
{
    struct http_guard *g = guard_with(8, 200, 4);
    struct sockaddr_in a = addr4(0x7f000001);
    struct pair p = pair_new();
    static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    char buf[64];
    struct guard_conn *gc;
    struct guard_stats st;

    (void)state;
    gc = guard_open(g, p.ours, (struct sockaddr *)&a);
    assert_non_null(gc);
    /* the whole request arrived, but the server has not read it yet */
    assert_int_equal(write(p.peer, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
    assert_true(extended_reaches(g, 2));    /* two deadlines passed, both renewed */
    assert_false(peer_sees_eof(&p, 0));
    guard_stats(g, &st);
    assert_int_equal(st.timeouts, 0);
    /* the server reads it and answers: no deadline cut it */
    assert_int_equal(read(p.ours, buf, sizeof(buf)), (ssize_t)(sizeof(req) - 1));
    assert_true(guard_answered(g, gc));

    /* the next request on the connection: the server has read every byte
     * of it there is, so its deadline cuts it */
    guard_done(g, gc);
    assert_int_equal(write(p.peer, "GET / HT", 8), 8);
    assert_int_equal(read(p.ours, buf, sizeof(buf)), 8);
    assert_true(peer_sees_eof(&p, 5000));
    guard_stats(g, &st);
    assert_int_equal(st.timeouts, 1);
    assert_false(guard_answered(g, gc));

    guard_close(g, gc);
    guard_free(g);
    pair_free(&p);
}

static void
over_the_client_limit_no_expensive_answer_and_a_short_deadline(void **state)
{
    struct http_guard *g = guard_with(2, 60000, 16);
    struct sockaddr_in a = addr4(0x7f000001), b = addr4(0x7f000002);
    struct pair p[4], again;
    struct guard_conn *gc[4], *ga;
    struct guard_stats st;
    int i;

    (void)state;
    for (i = 0; i < 4; i++) {
        p[i] = pair_new();
        gc[i] = guard_open(g, p[i].ours, (struct sockaddr *)(i < 3 ? &a : &b));
        assert_non_null(gc[i]);
    }
    assert_int_equal(guard_heavy(g, gc[0]), GUARD_OK);
    assert_int_equal(guard_heavy(g, gc[1]), GUARD_OK);
    assert_int_equal(guard_heavy(g, gc[2]), GUARD_OVER_CLIENT);  /* third from a */
    assert_int_equal(guard_heavy(g, gc[3]), GUARD_OK);          /* b is another client */
    /* over the limit: the short deadline (1 s), not the 60 s one */
    assert_true(peer_sees_eof(&p[2], 5000));
    assert_false(peer_sees_eof(&p[0], 100));
    guard_stats(g, &st);
    assert_int_equal(st.over_client, 1);
    assert_int_equal(st.timeouts, 1);

    /* a's count goes down as its connections close: a new one is under */
    guard_close(g, gc[2]);
    guard_close(g, gc[1]);
    again = pair_new();
    ga = guard_open(g, again.ours, (struct sockaddr *)&a);
    assert_int_equal(guard_heavy(g, ga), GUARD_OK);
    guard_close(g, ga);
    guard_close(g, gc[0]);
    guard_close(g, gc[3]);
    guard_free(g);
    for (i = 0; i < 4; i++)
        pair_free(&p[i]);
    pair_free(&again);
}

static void
the_budget_is_taken_refused_and_given_back(void **state)
{
    struct http_guard *g = guard_with(64, 60000, 2);
    struct sockaddr_in a = addr4(0x0a000001);
    struct pair p[3];
    struct guard_conn *gc[3];
    struct guard_stats st;
    int i;

    (void)state;
    for (i = 0; i < 3; i++) {
        p[i] = pair_new();
        gc[i] = guard_open(g, p[i].ours, (struct sockaddr *)&a);
    }
    assert_int_equal(guard_heavy(g, gc[0]), GUARD_OK);
    assert_int_equal(guard_heavy(g, gc[1]), GUARD_OK);
    assert_int_equal(guard_heavy(g, gc[2]), GUARD_BUSY);
    guard_done(g, gc[0]);
    assert_int_equal(guard_heavy(g, gc[2]), GUARD_OK);
    /* closing a connection mid-answer gives its share back too */
    guard_close(g, gc[1]);
    assert_int_equal(guard_heavy(g, gc[0]), GUARD_OK);
    assert_int_equal(guard_heavy(g, NULL), GUARD_BUSY);  /* untracked: never */
    guard_stats(g, &st);
    assert_int_equal(st.busy, 2);
    guard_close(g, gc[0]);
    guard_close(g, gc[2]);
    guard_free(g);
    for (i = 0; i < 3; i++)
        pair_free(&p[i]);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(late_requests_are_shut_down_answered_ones_not),
        cmocka_unit_test(unread_bytes_renew_the_deadline_the_servers_wait_not_the_clients),
        cmocka_unit_test(over_the_client_limit_no_expensive_answer_and_a_short_deadline),
        cmocka_unit_test(the_budget_is_taken_refused_and_given_back),
    };

    return cmocka_run_group_tests_name("guard", tests, NULL, NULL);
}
