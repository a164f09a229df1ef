/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_client_report.c - liblockwatch's sample reports: key
 * percent-encoding, the wait/hold lines, packing lines into datagrams of at
 * most 1432 bytes, agent address parsing; the waiting / lost / owned hold
 * lines and the signed datagram (the docs' test vector), the batch's room
 * to loopback and other destinations; and that the
 * agent's parser (collectors/waits/samples.c) and signature check
 * (sampleauth.c) read back exactly what we wrote.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "client/client_impl.h"
#include "collectors/waits/sampleauth.h"
#include "collectors/waits/samples.h"

static void
encode_escapes_the_protocol_set(void **state)
{
    char out[64];
    size_t n;

    (void)state;
    n = lwc_key_encode(out, sizeof(out), "lock:order:1001", 15);
    assert_int_equal(n, 15);
    assert_memory_equal(out, "lock:order:1001", 15);
    n = lwc_key_encode(out, sizeof(out), "lock:caf\xc3\xa9 job", 14);
    assert_int_equal(n, 20);
    assert_memory_equal(out, "lock:caf%C3%A9%20job", 20);
    n = lwc_key_encode(out, sizeof(out), "100%", 4);
    assert_memory_equal(out, "100%25", n);
    n = lwc_key_encode(out, sizeof(out), "\x00\x1f!~\x7f", 5);
    assert_int_equal(n, 11);
    assert_memory_equal(out, "%00%1F!~%7F", 11);
}

static void
encode_reports_needed_size(void **state)
{
    char out[4];

    (void)state;
    assert_int_equal(lwc_key_encode(out, sizeof(out), "a b", 3), 5);
    assert_int_equal(lwc_key_encode(NULL, 0, "%%", 2), 6);
}

static void
encode_every_byte_round_trips_through_the_agent(void **state)
{
    char key[256], line[1024];
    struct sample s;
    size_t n;

    (void)state;
    for (int i = 0; i < 256; i++)
        key[i] = (char)i;
    n = lwc_line_hold(line, sizeof(line), key, sizeof(key), 42);
    assert_true(n > 0);
    assert_int_equal(line[n - 1], '\n');
    assert_int_equal(samples_parse_line(line, n - 1, &s), 0);
    assert_int_equal(s.kind, SAMPLE_HOLD);
    assert_int_equal(s.us, 42);
    assert_int_equal(s.keylen, sizeof(key));
    assert_memory_equal(s.key, key, sizeof(key));
}

static void
lines_have_the_protocol_shape(void **state)
{
    char line[256];
    size_t n;

    (void)state;
    n = lwc_line_wait(line, sizeof(line), "lock:a b", 8, 1234, LW_OK);
    assert_int_equal(n, strlen("lw1 wait lock:a%20b 1234 ok\n"));
    assert_memory_equal(line, "lw1 wait lock:a%20b 1234 ok\n", n);
    n = lwc_line_wait(line, sizeof(line), "k", 1, 0, LW_TIMEOUT);
    assert_memory_equal(line, "lw1 wait k 0 timeout\n", n);
    n = lwc_line_wait(line, sizeof(line), "k", 1, 7, LW_BUSY);
    assert_memory_equal(line, "lw1 wait k 7 timeout\n", n);
    n = lwc_line_wait(line, sizeof(line), "k", 1, 7, LW_ERR);
    assert_memory_equal(line, "lw1 wait k 7 error\n", n);
    n = lwc_line_wait(line, sizeof(line), "k", 1, 7, LW_LOST);
    assert_memory_equal(line, "lw1 wait k 7 error\n", n);
    n = lwc_line_hold(line, sizeof(line), "k", 1, UINT64_C(9007199254740992));
    assert_memory_equal(line, "lw1 hold k 9007199254740992\n", n);
}

static void
lines_that_do_not_fit_are_refused(void **state)
{
    char line[LWC_DGRAM_MAX];
    char key[LWC_DGRAM_MAX];

    (void)state;
    /* exactly fits: "lw1 hold " (9) + key + " 5\n" (3) */
    memset(key, 'k', sizeof(key));
    assert_int_equal(lwc_line_hold(line, sizeof(line), key, LWC_DGRAM_MAX - 12, 5),
                     LWC_DGRAM_MAX);
    assert_int_equal(lwc_line_hold(line, sizeof(line), key, LWC_DGRAM_MAX - 11, 5), 0);
    /* a key whose encoding (3 bytes each) is too long */
    memset(key, ' ', sizeof(key));
    assert_int_equal(lwc_line_wait(line, sizeof(line), key, 500, 5, LW_OK), 0);
    assert_int_equal(lwc_line_wait(line, 8, "k", 1, 5, LW_OK), 0);
    assert_int_equal(lwc_line_wait(line, 15, "k", 1, 5, LW_OK), 0);
    assert_int_equal(lwc_line_wait(line, 16, "k", 1, 5, LW_OK), 16);
}

static void
batch_packs_lines_up_to_the_cap(void **state)
{
    struct lwc_batch *b = calloc(1, sizeof(*b));
    char line[100];
    int fitted = 0, rc;

    (void)state;
    assert_non_null(b);
    memset(line, 'x', sizeof(line));
    line[sizeof(line) - 1] = '\n';
    while ((rc = lwc_batch_append(b, line, sizeof(line))) == 0)
        fitted++;
    assert_int_equal(rc, 1);
    assert_int_equal(fitted, LWC_DGRAM_MAX / 100);
    assert_int_equal(b->len, (size_t)fitted * 100);
    assert_int_equal(b->lines, (unsigned)fitted);
    /* what is left fits exactly */
    assert_int_equal(lwc_batch_append(b, line, LWC_DGRAM_MAX - b->len), 0);
    assert_int_equal(b->len, LWC_DGRAM_MAX);
    assert_int_equal(lwc_batch_append(b, line, 1), 1);
    lwc_batch_reset(b);
    assert_int_equal(b->len, 0);
    assert_int_equal(b->lines, 0);
    assert_int_equal(lwc_batch_append(b, line, sizeof(line)), 0);
    free(b);
}

static void
batch_refuses_what_can_never_fit(void **state)
{
    struct lwc_batch *b = calloc(1, sizeof(*b));
    static char big[LWC_DGRAM_MAX + 1];

    (void)state;
    assert_non_null(b);
    assert_int_equal(lwc_batch_append(b, big, sizeof(big)), -1);
    assert_int_equal(lwc_batch_append(b, big, 0), -1);
    assert_int_equal(lwc_batch_append(b, big, LWC_DGRAM_MAX), 0);
    free(b);
}

/* A full datagram of our lines is read by the agent as that many valid
 * samples with the same numbers. */
static void
agent_reads_a_full_batch(void **state)
{
    struct lwc_batch *b = calloc(1, sizeof(*b));
    struct sample *out = calloc(SAMPLES_MAX_PER(LWC_DGRAM_MAX), sizeof(*out));
    char line[256], key[32];
    uint64_t lines = 0, invalid = 0;
    unsigned added = 0;
    size_t n, got;

    (void)state;
    assert_non_null(b);
    assert_non_null(out);
    for (;;) {
        int keylen = snprintf(key, sizeof(key), "lock:job %u", added);

        n = added % 2 == 0
            ? lwc_line_wait(line, sizeof(line), key, (size_t)keylen, added * 1000u,
                            added % 3 == 0 ? LW_TIMEOUT : LW_OK)
            : lwc_line_hold(line, sizeof(line), key, (size_t)keylen, added);
        assert_true(n > 0);
        if (lwc_batch_append(b, line, n) != 0)
            break;
        added++;
    }
    assert_true(b->len <= LWC_DGRAM_MAX);
    got = samples_parse_datagram(b->buf, b->len, false, out,
                                 SAMPLES_MAX_PER(LWC_DGRAM_MAX), &lines, &invalid);
    assert_int_equal(got, added);
    assert_int_equal(invalid, 0);
    assert_int_equal(lines, added);
    for (unsigned i = 0; i < added; i++) {
        int keylen = snprintf(key, sizeof(key), "lock:job %u", i);

        assert_int_equal(out[i].keylen, (size_t)keylen);
        assert_memory_equal(out[i].key, key, (size_t)keylen);
        if (i % 2 == 0) {
            assert_int_equal(out[i].kind, SAMPLE_WAIT);
            assert_int_equal(out[i].us, i * 1000u);
            assert_int_equal(out[i].outcome, i % 3 == 0 ? SAMPLE_TIMEOUT : SAMPLE_OK);
        } else {
            assert_int_equal(out[i].kind, SAMPLE_HOLD);
            assert_int_equal(out[i].us, i);
        }
    }
    free(out);
    free(b);
}

static void
hostport_parsing(void **state)
{
    static const char *bad[] = {
        "", ":9717", "host:", "host", "host:0", "host:65536", "host:12a",
        "host:-1", "host:123456", "::1:9717", "[::1]9717", "[::1]:", "[]:1",
        "[::1:9717",
    };
    char host[64];
    int port = 0;

    (void)state;
    assert_int_equal(lwc_parse_hostport("127.0.0.1:9717", host, sizeof(host), &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 9717);
    assert_int_equal(lwc_parse_hostport("[::1]:1", host, sizeof(host), &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 1);
    assert_int_equal(lwc_parse_hostport("agent.example:65535", host, sizeof(host), &port), 0);
    assert_string_equal(host, "agent.example");
    assert_int_equal(port, 65535);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (lwc_parse_hostport(bad[i], host, sizeof(host), &port) != -1)
            fail_msg("parsed: \"%s\"", bad[i]);
    assert_int_equal(lwc_parse_hostport(NULL, host, sizeof(host), &port), -1);
    /* a host longer than the buffer is refused, not cut */
    assert_int_equal(lwc_parse_hostport("abcdefgh:1", host, 8, &port), -1);
    assert_int_equal(lwc_parse_hostport("abcdefg:1", host, 8, &port), 0);
}


static void
event_lines_read_back(void **state)
{
    char line[LWC_DGRAM_MAX];
    struct sample s;
    size_t n;

    (void)state;
    n = lwc_line_waiting(line, sizeof(line), "lock:a b", 8, "h:1/7", 5, "lw1:h:1:7:x", 11,
                         true, LW_OK);
    assert_int_equal(n, strlen("lw1 waiting lock:a%20b h:1/7 lw1:h:1:7:x start\n"));
    assert_memory_equal(line, "lw1 waiting lock:a%20b h:1/7 lw1:h:1:7:x start\n", n);
    assert_int_equal(samples_parse_line(line, n - 1, &s), 0);
    assert_true(s.start);
    n = lwc_line_waiting(line, sizeof(line), "k", 1, "o/1", 3, NULL, 0, false, LW_TIMEOUT);
    assert_memory_equal(line, "lw1 waiting k o/1 - timeout\n", n);
    assert_int_equal(samples_parse_line(line, n - 1, &s), 0);
    assert_int_equal(s.outcome, SAMPLE_TIMEOUT);
    assert_int_equal(s.holderlen, 0);
    n = lwc_line_lost(line, sizeof(line), "k", 1, "o/1", 3, "t%", 2, 1500, -1, true);
    assert_memory_equal(line, "lw1 lost k o/1 t%25 1500 - renewal\n", n);
    assert_int_equal(samples_parse_line(line, n - 1, &s), 0);
    assert_int_equal(s.reason, SAMPLE_LOST_RENEWAL);
    assert_false(s.overrun_known);
    n = lwc_line_lost(line, sizeof(line), "k", 1, "o/1", 3, "t", 1, 9, 250, false);
    assert_memory_equal(line, "lw1 lost k o/1 t 9 250 expired\n", n);
    n = lwc_line_hold_owned(line, sizeof(line), "k", 1, 42, "o/1", 3, "t", 1);
    assert_memory_equal(line, "lw1 hold k 42 o/1 t\n", n);
    assert_int_equal(samples_parse_line(line, n - 1, &s), 0);
    assert_int_equal(s.ownerlen, 3);
    /* the end of a wait that sent its start: its waiting end and its wait
     * in one line, read back as a wait with owner and holder */
    n = lwc_line_wait_owned(line, sizeof(line), "lock:a b", 8, 1234, LW_TIMEOUT, "h:1/7", 5,
                            "lw1:h:1:7:x", 11);
    assert_int_equal(n, strlen("lw1 wait lock:a%20b 1234 timeout h:1/7 lw1:h:1:7:x\n"));
    assert_memory_equal(line, "lw1 wait lock:a%20b 1234 timeout h:1/7 lw1:h:1:7:x\n", n);
    assert_int_equal(samples_parse_line(line, n - 1, &s), 0);
    assert_int_equal(s.kind, SAMPLE_WAIT);
    assert_int_equal(s.outcome, SAMPLE_TIMEOUT);
    assert_int_equal(s.us, 1234);
    assert_int_equal(s.ownerlen, 5);
    assert_int_equal(s.holderlen, 11);
    n = lwc_line_wait_owned(line, sizeof(line), "k", 1, 7, LW_OK, "o/1", 3, NULL, 0);
    assert_memory_equal(line, "lw1 wait k 7 ok o/1 -\n", n);
    n = lwc_line_wait_owned(line, sizeof(line), "k", 1, 7, LW_ERR, "o/1", 3, "t", 1);
    assert_memory_equal(line, "lw1 wait k 7 error o/1 t\n", n);
    /* too small: refused, never cut */
    assert_int_equal(lwc_line_wait_owned(line, 21, "k", 1, 7, LW_OK, "o/1", 3, "t", 1), 0);
    assert_int_equal(lwc_line_wait_owned(line, 22, "k", 1, 7, LW_OK, "o/1", 3, "t", 1), 22);
    assert_int_equal(lwc_line_hold_owned(line, 19, "k", 1, 42, "o/1", 3, "t", 1), 0);
    assert_int_equal(lwc_line_lost(line, 20, "k", 1, "o/1", 3, "t", 1, 9, 250, false), 0);
}

/* docs/line-protocol.md's test vector, signed by the client's code. */
static void
signed_datagram_matches_the_vector(void **state)
{
    static const char body[] =
        "lw1 waiting lock:order:1001 web-1%3A4242%2F7 "
        "lw1:web-1:4242:7:1767225599000:00112233aabbccdd start\n"
        "lw1 wait lock:order:1001 1500 ok\n";
    static const char mac[] = "lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225600\n";
    const char *key = "lockwatch test key: not a secret";
    char out[LWC_DGRAM_MAX];
    size_t n, skip;

    (void)state;
    n = lwc_sign((const unsigned char *)key, strlen(key), body, strlen(body), 1767225600, out,
                 sizeof(out));
    assert_int_equal(n, strlen(mac) + strlen(body));
    assert_memory_equal(out, mac, strlen(mac));
    assert_int_equal(sampleauth_check(key, strlen(key), out, n, false, 1767225600, &skip),
                     SAMPLEAUTH_OK);
    /* a full batch under the signed limit still fits with its mac line */
    assert_true(LWC_DGRAM_MAX - LWC_MAC_LINE_MAX + strlen(mac) <= LWC_DGRAM_MAX);
    memset(out, 0, sizeof(out));
    {
        char big[LWC_DGRAM_MAX];

        memset(big, 'x', sizeof(big));
        assert_int_equal(lwc_sign((const unsigned char *)key, 32, big,
                                  LWC_DGRAM_MAX - LWC_MAC_LINE_MAX, 1767225600, out,
                                  sizeof(out)),
                         LWC_DGRAM_MAX - LWC_MAC_LINE_MAX + strlen(mac));
        assert_int_equal(lwc_sign((const unsigned char *)key, 32, big, LWC_DGRAM_MAX - 10,
                                  1767225600, out, sizeof(out)), 0);
    }
}

static void
batch_keeps_room_for_the_mac(void **state)
{
    struct lwc_batch *b = calloc(1, sizeof(*b));
    char line[100];

    (void)state;
    assert_non_null(b);
    memset(line, 'a', sizeof(line));
    b->limit = LWC_DGRAM_MAX - LWC_MAC_LINE_MAX;
    while (lwc_batch_append(b, line, sizeof(line)) == 0)
        ;
    assert_true(b->len <= LWC_DGRAM_MAX - LWC_MAC_LINE_MAX);
    assert_true(b->len + sizeof(line) > LWC_DGRAM_MAX - LWC_MAC_LINE_MAX);
    free(b);
}

/* Destination lists as the reporters split them: blanks around an entry
 * trimmed, an empty entry (for the caller to skip) kept as length 0. */
static void
list_entries_are_trimmed(void **state)
{
    static const char *const want[] = { "a:1", "b:2", "", "[::1]:3", "" };
    const char *p = " a:1 ,\tb:2,, [::1]:3\n,", *s;
    size_t len, i = 0;

    (void)state;
    while (lwc_list_next(&p, &s, &len)) {
        assert_true(i < sizeof(want) / sizeof(want[0]));
        assert_int_equal(len, strlen(want[i]));
        assert_memory_equal(s, want[i], len);
        i++;
    }
    assert_int_equal(i, sizeof(want) / sizeof(want[0]));
    assert_null(p);
    p = " ";
    assert_true(lwc_list_next(&p, &s, &len));
    assert_int_equal(len, 0);
    assert_false(lwc_list_next(&p, &s, &len));
}

/* docs/reporters.md "Batching": 8192-byte datagrams when every
 * destination is on loopback, 1432 when one is not, the mac line (11
 * digits of time at most) kept out of either; a full signed batch to
 * loopback is one datagram the agent reads whole, accepts, and parses. */
static void
batch_room_follows_the_destinations(void **state)
{
    struct lwc_report *rep = calloc(1, sizeof(*rep));
    struct sample *out = calloc(SAMPLES_MAX_PER(SAMPLES_DATAGRAM_MAX), sizeof(*out));
    const char *key = "lockwatch test key: not a secret";
    uint64_t lines = 0, invalid = 0;
    unsigned added = 0;
    size_t n, skip;
    char line[64];

    (void)state;
    assert_non_null(rep);
    assert_non_null(out);
    rep->ndest = 2;
    rep->dest[0].loopback = rep->dest[1].loopback = true;
    assert_int_equal(lwc_batch_room(rep), SAMPLES_DATAGRAM_MAX);
    rep->keylen = 32;
    assert_int_equal(lwc_batch_room(rep), SAMPLES_DATAGRAM_MAX - LWC_MAC_LINE_MAX);
    rep->dest[1].loopback = false;
    assert_int_equal(lwc_batch_room(rep), LWC_DGRAM_MAX - LWC_MAC_LINE_MAX);
    rep->keylen = 0;
    assert_int_equal(lwc_batch_room(rep), LWC_DGRAM_MAX);

    rep->dest[1].loopback = true;
    rep->keylen = 32;
    memset(rep->batch.buf, 'x', sizeof(rep->batch.buf));
    assert_int_equal(lwc_sign((const unsigned char *)key, 32, rep->batch.buf,
                              lwc_batch_room(rep), 99999999999, rep->sbuf, sizeof(rep->sbuf)),
                     SAMPLES_DATAGRAM_MAX);
    rep->batch.limit = lwc_batch_room(rep);
    while ((n = lwc_line_wait(line, sizeof(line), "lock:loop", 9, added, LW_OK)) > 0 &&
           lwc_batch_append(&rep->batch, line, n) == 0)
        added++;
    assert_true(rep->batch.len > LWC_DGRAM_MAX);
    n = lwc_sign((const unsigned char *)key, 32, rep->batch.buf, rep->batch.len, 1767225600,
                 rep->sbuf, sizeof(rep->sbuf));
    assert_true(n > 0 && n <= SAMPLES_DATAGRAM_MAX);
    assert_int_equal(sampleauth_check(key, 32, rep->sbuf, n, false, 1767225600, &skip),
                     SAMPLEAUTH_OK);
    assert_int_equal(samples_parse_datagram(rep->sbuf + skip, n - skip, false, out,
                                            SAMPLES_MAX_PER(SAMPLES_DATAGRAM_MAX), &lines,
                                            &invalid), added);
    assert_int_equal(invalid, 0);
    free(out);
    free(rep);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encode_escapes_the_protocol_set),
        cmocka_unit_test(encode_reports_needed_size),
        cmocka_unit_test(encode_every_byte_round_trips_through_the_agent),
        cmocka_unit_test(lines_have_the_protocol_shape),
        cmocka_unit_test(lines_that_do_not_fit_are_refused),
        cmocka_unit_test(batch_packs_lines_up_to_the_cap),
        cmocka_unit_test(batch_refuses_what_can_never_fit),
        cmocka_unit_test(agent_reads_a_full_batch),
        cmocka_unit_test(hostport_parsing),
        cmocka_unit_test(event_lines_read_back),
        cmocka_unit_test(signed_datagram_matches_the_vector),
        cmocka_unit_test(batch_keeps_room_for_the_mac),
        cmocka_unit_test(list_entries_are_trimmed),
        cmocka_unit_test(batch_room_follows_the_destinations),
    };

    return cmocka_run_group_tests_name("client_report", tests, NULL, NULL);
}
