/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_peerhealth.c - a shard peer's down/up judgement
 * (agent/peerhealth.h): down only after PEER_DOWN_CHECKS failed checks in
 * a row, a success between them starts the count again, up again at the
 * first success; how long it has failed counts from the first failure.
 * A check's answer must be the shard's: another shard's, or an answer
 * that is no lockwatch agent's, fails it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/peerhealth.h"

static void
down_after_three_failures_in_a_row(void **state)
{
    struct peer_health h;
    int64_t t = 1000000;

    (void)state;
    memset(&h, 0, sizeof(h));
    assert_false(peer_health_record(&h, false, "Couldn't connect to server", t));
    assert_false(h.down);
    assert_int_equal(h.failing_since_ms, t);
    assert_false(peer_health_record(&h, false, "Timeout was reached", t + PEER_CHECK_MS));
    assert_false(h.down);
    /* the third in a row: down, and said once */
    assert_true(peer_health_record(&h, false, "HTTP 503", t + 2 * PEER_CHECK_MS));
    assert_true(h.down);
    assert_string_equal(h.err, "HTTP 503");
    assert_int_equal(h.failing_since_ms, t);
    assert_false(peer_health_record(&h, false, "HTTP 503", t + 3 * PEER_CHECK_MS));
    assert_true(h.down);
    assert_int_equal(h.fails, PEER_DOWN_CHECKS);    /* bounded */
    assert_int_equal(h.checks, 4);
}

static void
a_success_resets_and_brings_it_up(void **state)
{
    struct peer_health h;
    int64_t t = 5000;

    (void)state;
    memset(&h, 0, sizeof(h));
    /* two failures, an answer, two failures: never down */
    assert_false(peer_health_record(&h, false, "x", t));
    assert_false(peer_health_record(&h, false, "x", t + 10));
    assert_false(peer_health_record(&h, true, NULL, t + 20));
    assert_int_equal(h.fails, 0);
    assert_int_equal(h.failing_since_ms, 0);
    assert_string_equal(h.err, "");
    assert_false(peer_health_record(&h, false, NULL, t + 30));
    assert_string_equal(h.err, "no answer");
    assert_int_equal(h.failing_since_ms, t + 30);
    assert_false(peer_health_record(&h, false, "x", t + 40));
    assert_false(h.down);
    /* the third: down; the first answer after: up at once */
    assert_true(peer_health_record(&h, false, "x", t + 50));
    assert_true(h.down);
    assert_true(peer_health_record(&h, true, NULL, t + 60));
    assert_false(h.down);
    assert_int_equal(h.fails, 0);
    assert_false(peer_health_record(&h, true, NULL, t + 70));
}

static void
an_answer_must_be_the_shards(void **state)
{
    char err[160];
    const char *one = "{\"replica\":null,\"shard\":1,\"shards\":3,\"targets\":[\"b\"],"
                      "\"elsewhere\":[]}";
    const char *two = "{\"replica\":\"a\",\"shard\":2,\"shards\":3,\"targets\":[],"
                      "\"elsewhere\":[]}";

    (void)state;
    err[0] = '\0';
    assert_true(peer_answer_check(one, strlen(one), 1, 3, err, sizeof(err)));
    assert_string_equal(err, "");
    /* shard_peers in another order than the shards: a healthy agent of
     * shard 2 at shard 1's URL watches none of shard 1's targets */
    assert_false(peer_answer_check(two, strlen(two), 1, 3, err, sizeof(err)));
    assert_string_equal(err, "it answers as shard 2/3: shard_peers names another agent there");
    /* the same index of another split */
    assert_false(peer_answer_check(one, strlen(one), 1, 4, err, sizeof(err)));
    assert_non_null(strstr(err, "as shard 1/3"));
    /* not an agent: an HTML page, no shard fields, a shard as a string, cut */
    assert_false(peer_answer_check("<html>ok</html>", 15, 1, 3, err, sizeof(err)));
    assert_non_null(strstr(err, "not as a lockwatch agent"));
    assert_false(peer_answer_check("{\"status\":\"ok\"}", 15, 1, 3, err, sizeof(err)));
    assert_non_null(strstr(err, "not as a lockwatch agent"));
    assert_false(peer_answer_check("{\"shard\":\"1\",\"shards\":3}", 24, 1, 3, err,
                                   sizeof(err)));
    assert_false(peer_answer_check(one, 20, 1, 3, err, sizeof(err)));
    assert_false(peer_answer_check("", 0, 1, 3, err, sizeof(err)));
    /* a short buffer is cut, never overrun */
    assert_false(peer_answer_check(two, strlen(two), 1, 3, err, 8));
    assert_int_equal(strlen(err), 7);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(down_after_three_failures_in_a_row),
        cmocka_unit_test(a_success_resets_and_brings_it_up),
        cmocka_unit_test(an_answer_must_be_the_shards),
    };

    return cmocka_run_group_tests_name("peerhealth", tests, NULL, NULL);
}
