/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_events.c - the ring of lock events: sequence numbers, reading what
 * is new, the oldest dropped and counted when full, bounded copies of
 * long keys, and the kind table's names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/events/events.h"

struct seen {
    uint64_t seqs[EVENTS_MAX + 8];
    size_t n;
    struct event last;
    char lastkey[EVENT_KEY_MAX];
};

static void
collect(const struct event *e, void *arg)
{
    struct seen *s = arg;

    s->seqs[s->n++] = e->seq;
    s->last = *e;
    memcpy(s->lastkey, e->key, e->keylen);
}

static uint64_t
push_key(enum event_kind k, const char *key)
{
    struct event_in in = { .kind = k, .target = "main", .key = key,
                           .keylen = strlen(key), .holder = "uuid:1", .holderlen = 6,
                           .klass = "lock:order", .detail = "held 3s", .seconds = 3 };

    return events_push(&in);
}

static int
reset(void **state)
{
    (void)state;
    events_reset();
    return 0;
}

static void
sequence_and_reading_after(void **state)
{
    static struct seen s;

    (void)state;
    assert_int_equal(events_last_seq(), 0);
    assert_int_equal(push_key(EVENT_LEASE_LOST, "lock:a"), 1);
    assert_int_equal(push_key(EVENT_DEADLOCK, "lock:b"), 2);
    assert_int_equal(push_key(EVENT_DEADLOCK, "lock:c"), 3);
    memset(&s, 0, sizeof(s));
    assert_int_equal(events_each(1, 0, collect, &s), 2);
    assert_int_equal(s.seqs[0], 2);
    assert_int_equal(s.seqs[1], 3);
    assert_int_equal(s.last.kind, EVENT_DEADLOCK);
    assert_memory_equal(s.lastkey, "lock:c", 6);
    assert_string_equal(s.last.target, "main");
    assert_int_equal(s.last.holderlen, 6);
    assert_memory_equal(s.last.holder, "uuid:1", 6);
    assert_false(s.last.holder_cut);
    assert_string_equal(s.last.detail, "held 3s");
    assert_true(s.last.at_ms > 0);
    assert_int_equal(events_total(EVENT_DEADLOCK), 2);
    assert_int_equal(events_total(EVENT_LEASE_LOST), 1);
    memset(&s, 0, sizeof(s));
    assert_int_equal(events_each(0, 1, collect, &s), 1);      /* max */
    assert_int_equal(s.seqs[0], 1);
    assert_int_equal(events_each(3, 0, collect, &s), 0);      /* nothing new */
}

static void
full_ring_drops_the_oldest_and_counts_it(void **state)
{
    static struct seen s;
    char key[32];

    (void)state;
    for (int i = 1; i <= EVENTS_MAX + 5; i++) {
        snprintf(key, sizeof(key), "lock:%d", i);
        assert_int_equal(push_key(EVENT_INVERSION, key), (uint64_t)i);
    }
    assert_int_equal(events_kept(), EVENTS_MAX);
    assert_int_equal(events_dropped(), 5);
    memset(&s, 0, sizeof(s));
    assert_int_equal(events_each(0, 0, collect, &s), EVENTS_MAX);
    assert_int_equal(s.seqs[0], 6);             /* the gap says 1-5 are gone */
    assert_int_equal(s.seqs[EVENTS_MAX - 1], EVENTS_MAX + 5);
    assert_int_equal(s.last.keylen, strlen("lock:1029"));
    assert_memory_equal(s.lastkey, "lock:1029", 9);
}

static void
long_fields_are_cut_and_said_to_be(void **state)
{
    static char key[65536], holder[600];
    static struct seen s;
    struct event_in in = { .kind = EVENT_FORCE_RELEASE, .key = key,
                           .keylen = sizeof(key), .holder = holder,
                           .holderlen = sizeof(holder), .seconds = -1 };

    (void)state;
    memset(key, 'k', sizeof(key));
    memset(holder, 'h', sizeof(holder));
    assert_int_equal(events_push(&in), 1);
    memset(&s, 0, sizeof(s));
    events_each(0, 0, collect, &s);
    assert_int_equal(s.last.keylen, EVENT_KEY_MAX);
    assert_true(s.last.key_cut);
    assert_int_equal(s.last.holderlen, EVENT_HOLDER_MAX);
    assert_true(s.last.holder_cut);
    assert_string_equal(s.last.target, "");
    assert_string_equal(s.last.detail, "");
    assert_true(s.last.seconds < 0);
}

static void
kind_names_round_trip(void **state)
{
    (void)state;
    for (int k = 0; k < EVENT_KIND_COUNT; k++) {
        const char *n = event_kind_name((enum event_kind)k);

        assert_int_equal(event_kind_of(n, strlen(n)), k);
        assert_true(strcmp(event_kind_severity((enum event_kind)k), "critical") == 0 ||
                    strcmp(event_kind_severity((enum event_kind)k), "warning") == 0 ||
                    strcmp(event_kind_severity((enum event_kind)k), "info") == 0);
    }
    assert_int_equal(event_kind_of("deadlock", 8), EVENT_DEADLOCK);
    assert_int_equal(event_kind_of("deadlocks", 9), -1);
    assert_int_equal(event_kind_of("dead", 4), -1);
    assert_string_equal(event_kind_name(EVENT_KIND_COUNT), "?");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(sequence_and_reading_after, reset),
        cmocka_unit_test_setup(full_ring_drops_the_oldest_and_counts_it, reset),
        cmocka_unit_test_setup(long_fields_are_cut_and_said_to_be, reset),
        cmocka_unit_test_setup(kind_names_round_trip, reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
