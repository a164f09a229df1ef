/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tracker.c - first-seen tracking across scan passes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <string.h>

#include "collectors/scan/tracker.h"

/* the leases the tracker said ended */
static struct lease_end ended[8];
static char ended_key[8][64];
static size_t nended;

static void
on_end(const struct lease_end *e)
{
    if (nended == 8)
        return;
    ended[nended] = *e;
    if (e->key != NULL) {
        memcpy(ended_key[nended], e->key, e->keylen < 63 ? e->keylen : 63);
        ended_key[nended][e->keylen < 63 ? e->keylen : 63] = '\0';
    } else {
        ended_key[nended][0] = '\0';
    }
    nended++;
}

/* a read of key "k:<kh>" held by "h<holder>", its TTL running out at exp
 * (0: none), read at at */
static struct track_lease *
lease(int64_t exp, int64_t at, int row)
{
    static struct track_lease ls;

    memset(&ls, 0, sizeof(ls));
    ls.expires_ms = exp;
    ls.at_ms = at;
    ls.row = row;
    ls.key = "lock:renewed";
    ls.keylen = strlen(ls.key);
    ls.holder = "uuid-1:7";
    ls.holderlen = strlen(ls.holder);
    return &ls;
}

/* one holder hash, as a one-element list */
static const uint32_t *
hs(uint64_t h)
{
    static uint32_t one[64];
    static unsigned n;

    n = (n + 1) % 64;
    one[n] = (uint32_t)h;
    return &one[n];
}

static void
age_survives_renewals_and_restarts_on_new_holder(void **state)
{
    struct tracker *t = tracker_new(NULL);
    struct track_result r;

    (void)state;
    assert_non_null(t);
    assert_int_equal(tracker_visit(t, 42, hs(7), 1, 1, 10000, 0, 1, NULL, &r), 0);
    assert_int_equal(r.first_seen_ms, 10000);
    /* same holder, later passes (a watchdog renewal changes nothing) */
    tracker_visit(t, 42, hs(7), 1, 2, 20000, 0, 1, NULL, &r);
    tracker_visit(t, 42, hs(7), 1, 3, 30000, 0, 1, NULL, &r);
    assert_int_equal(r.first_seen_ms, 10000);
    /* a new holder restarts the clock, back-dated by its idle time */
    tracker_visit(t, 42, hs(8), 1, 4, 40000, 500, 1, NULL, &r);
    assert_int_equal(r.first_seen_ms, 39500);
    tracker_free(t);
}

static void
start_age_backdates_new_entries(void **state)
{
    struct tracker *t = tracker_new(NULL);
    struct track_result r;

    (void)state;
    tracker_visit(t, 1, hs(1), 1, 1, 100000, 60000, 0, NULL, &r);
    assert_int_equal(r.first_seen_ms, 40000);
    assert_int_equal(r.nottl_since_ms, 40000);  /* no TTL since it appeared */
    tracker_free(t);
}

static void
ttl_loss_and_gain_tracked(void **state)
{
    struct tracker *t = tracker_new(NULL);
    struct track_result r;

    (void)state;
    tracker_visit(t, 5, hs(1), 1, 1, 1000, 0, 1, NULL, &r);
    assert_int_equal(r.nottl_since_ms, 0);
    tracker_visit(t, 5, hs(1), 1, 2, 2000, 0, 0, NULL, &r);   /* PERSIST */
    assert_int_equal(r.nottl_since_ms, 2000);
    tracker_visit(t, 5, hs(1), 1, 3, 3000, 0, 0, NULL, &r);
    assert_int_equal(r.nottl_since_ms, 2000);
    tracker_visit(t, 5, hs(1), 1, 4, 4000, 0, 1, NULL, &r);   /* got a TTL again */
    assert_int_equal(r.nottl_since_ms, 0);
    /* overwritten without a TTL by another holder: no TTL since the first
     * (the freshness trial: a leak overwritten resolved LockLeaked) */
    tracker_visit(t, 5, hs(1), 1, 5, 5000, 0, 0, NULL, &r);
    tracker_visit(t, 5, hs(2), 1, 6, 6000, 0, 0, NULL, &r);
    assert_int_equal(r.first_seen_ms, 6000);
    assert_int_equal(r.nottl_since_ms, 5000);
    /* a new holder with a TTL, then one without: from that one */
    tracker_visit(t, 5, hs(3), 1, 7, 7000, 0, 1, NULL, &r);
    assert_int_equal(r.nottl_since_ms, 0);
    tracker_visit(t, 5, hs(4), 1, 8, 8000, 0, 0, NULL, &r);
    assert_int_equal(r.nottl_since_ms, 8000);
    tracker_free(t);
}

static void
duplicates_within_a_pass(void **state)
{
    struct tracker *t = tracker_new(NULL);
    struct track_result r;

    (void)state;
    assert_false(tracker_seen(t, 9, 1));
    tracker_visit(t, 9, hs(1), 1, 1, 0, 0, 1, NULL, &r);
    assert_false(r.duplicate);
    assert_true(tracker_seen(t, 9, 1));
    tracker_visit(t, 9, hs(1), 1, 1, 0, 0, 1, NULL, &r);
    assert_true(r.duplicate);
    assert_false(tracker_seen(t, 9, 2));
    tracker_free(t);
}

static void
joining_reader_keeps_the_age_leaving_one_passes_it_on(void **state)
{
    struct tracker *t = tracker_new(NULL);
    struct track_result r;
    uint32_t a[1] = { 11 }, ab[2] = { 11, 22 }, b[1] = { 22 };

    (void)state;
    tracker_visit(t, 3, a, 1, 1, 1000, 0, 1, NULL, &r);
    tracker_visit(t, 3, ab, 2, 2, 5000, 0, 1, NULL, &r);
    assert_int_equal(r.first_seen_ms, 1000);     /* B joined: A still timed */
    tracker_visit(t, 3, b, 1, 3, 9000, 0, 1, NULL, &r);
    assert_int_equal(r.first_seen_ms, 5000);     /* A left: B's age, not 0 */
    tracker_sweep(t, 3, 0, 0);
    tracker_visit(t, 3, a, 1, 4, 12000, 0, 1, NULL, &r);
    assert_int_equal(r.first_seen_ms, 12000);    /* a new holder: restart */
    tracker_free(t);
}

static void
sweep_drops_unseen_and_keeps_seen(void **state)
{
    struct tracker *t = tracker_new(NULL);
    struct track_result r;
    uint64_t k;

    (void)state;
    for (k = 1; k <= 100000; k++)
        assert_int_equal(tracker_visit(t, k * 0x9e3779b97f4a7c15ULL | 1, hs(k), 1, 1, 0, 0, 1, NULL, &r), 0);
    assert_int_equal(tracker_count(t), 100000);
    for (k = 1; k <= 100000; k += 2)
        tracker_visit(t, k * 0x9e3779b97f4a7c15ULL | 1, hs(k), 1, 2, 5000, 0, 1, NULL, &r);
    assert_int_equal(tracker_sweep(t, 2, 0, 0), 50000);
    /* every survivor is still found after the in-place re-pack */
    for (k = 1; k <= 100000; k++)
        assert_int_equal(tracker_seen(t, k * 0x9e3779b97f4a7c15ULL | 1, 2), k % 2 == 1);
    /* a survivor keeps its first-seen time */
    tracker_visit(t, 1 * 0x9e3779b97f4a7c15ULL | 1, hs(1), 1, 3, 9000, 0, 1, NULL, &r);
    assert_int_equal(r.first_seen_ms, 0);
    /* a dropped one is new again */
    tracker_visit(t, 2 * 0x9e3779b97f4a7c15ULL | 1, hs(2), 1, 3, 9000, 0, 1, NULL, &r);
    assert_int_equal(r.first_seen_ms, 9000);
    tracker_free(t);
}

/* The holding is proven unbroken since its first sight until a read
 * finds its lease set again (a renewal, or the same holder id taking the
 * lock again between two reads: they look alike) or its TTL given or
 * lost; the first sight stays the age, and a new holder starts both. */
static void
unbroken_since_the_last_lease_set(void **state)
{
    struct tracker *t = tracker_new(NULL);
    struct track_result r;

    (void)state;
    static const struct {
        int64_t at, expires, settled;
    } reads[] = {
        { 1000, 31000, 1000 },
        { 6000, 31100, 1000 },          /* run down as read: nobody set it */
        { 11000, 41000, 11000 },        /* its expiry moved later: from here */
        { 16000, 0, 16000 },            /* the TTL gone (SET without PX, PERSIST) */
        { 21000, 0, 16000 },
        { 26000, 56000, 26000 },        /* and back */
        { 31000, 56100, 26000 },
        { 36000, 46000, 36000 },        /* earlier: taken again with a shorter lease */
    };
    size_t i;

    for (i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
        tracker_visit(t, 12, hs(5), 1, (uint32_t)i + 1, reads[i].at, 0, reads[i].expires > 0,
                      lease(reads[i].expires, reads[i].at, -1), &r);
        assert_int_equal(r.settled_ms, reads[i].settled);
        assert_int_equal(r.first_seen_ms, 1000);
    }
    /* another holder: both start again, back-dated alike */
    tracker_visit(t, 12, hs(6), 1, 9, 41000, 2000, 1, lease(71000, 41000, -1), &r);
    assert_int_equal(r.first_seen_ms, 39000);
    assert_int_equal(r.settled_ms, 39000);
    /* a back-dating claim moves an unbroken holding's start too */
    assert_int_equal(tracker_backdate(t, 12, 20000, 0, &r), 0);
    assert_int_equal(r.first_seen_ms, 20000);
    assert_int_equal(r.settled_ms, 20000);
    tracker_visit(t, 12, hs(6), 1, 10, 46000, 0, 1, lease(80000, 46000, -1), &r);
    assert_int_equal(r.settled_ms, 46000);
    assert_true(r.renewed);
    /* ... but not one whose lease was set again since */
    assert_int_equal(tracker_backdate(t, 12, 15000, 0, &r), 0);
    assert_int_equal(r.first_seen_ms, 15000);
    assert_int_equal(r.settled_ms, 46000);
    assert_true(r.renewed);
    tracker_free(t);
}

/* A watchdog renews (the expiry moves later between reads), then stops:
 * the key gone at a sweep after its expiry is a renewed lease that ended,
 * with its names, its row and its holder's first sighting. */
static void
renewed_then_gone_after_expiry_ends_renewed(void **state)
{
    struct tracker *t = tracker_new(on_end);
    struct track_result r;

    (void)state;
    nended = 0;
    tracker_visit(t, 11, hs(5), 1, 1, 1000, 0, 1, lease(4000, 1000, 3), &r);
    assert_false(r.renewed);
    /* the TTL went back up: 4000 -> 5000 (a renewal at 2000) */
    tracker_visit(t, 11, hs(5), 1, 2, 2000, 0, 1, lease(5000, 2000, 3), &r);
    assert_true(r.renewed);
    assert_true(r.renewed_since_outage);
    assert_int_equal(tracker_names(t), 1);
    /* an outage: renewed still, but its TTL no renewal low until it is
     * renewed again */
    tracker_outage(t);
    tracker_visit(t, 11, hs(5), 1, 2, 2000, 0, 1, lease(5000, 2000, 3), &r);
    assert_true(r.renewed);
    assert_false(r.renewed_since_outage);
    /* gone at 6000, after 5000: expired */
    tracker_sweep(t, 3, 6000, 0);
    assert_int_equal(nended, 1);
    assert_true(ended[0].renewed);
    assert_int_equal(ended[0].expires_ms, 5000);
    assert_int_equal(ended[0].first_seen_ms, 1000);
    assert_int_equal(ended[0].row, 3);
    assert_int_equal(ended[0].holder_hash, 5);
    assert_string_equal(ended_key[0], "lock:renewed");
    assert_int_equal(tracker_names(t), 0);
    assert_int_equal(tracker_take_ends_unknown(t), 0);
    /* the same after an outage (ends_seen false): its holder may have
     * renewed and released it unseen; counted, not told */
    tracker_visit(t, 11, hs(5), 1, 4, 7000, 0, 1, lease(10000, 7000, 3), &r);
    tracker_visit(t, 11, hs(5), 1, 5, 8000, 0, 1, lease(11000, 8000, 3), &r);
    assert_true(r.renewed);
    tracker_sweep(t, 6, 20000, 9000);
    assert_int_equal(nended, 1);
    assert_int_equal(tracker_take_ends_unknown(t), 1);
    assert_int_equal(tracker_take_ends_unknown(t), 0);
    assert_int_equal(tracker_count(t), 0);
    /* one whose lease ran out before the outage's first pass began: the
     * read due after its end was missed by no outage: told as ever */
    tracker_visit(t, 11, hs(5), 1, 7, 21000, 0, 1, lease(24000, 21000, 3), &r);
    tracker_visit(t, 11, hs(5), 1, 8, 22000, 0, 1, lease(25000, 22000, 3), &r);
    tracker_sweep(t, 9, 40000, 30000);
    assert_int_equal(nended, 2);
    assert_int_equal(tracker_take_ends_unknown(t), 0);
    tracker_free(t);
}

/* The same expiry read twice, a jitter within the slack, and a key gone
 * before its expiry (a release): no renewal, no ending. */
static void
unrenewed_and_released_leases(void **state)
{
    struct tracker *t = tracker_new(on_end);
    struct track_result r;

    (void)state;
    nended = 0;
    tracker_visit(t, 12, hs(5), 1, 1, 1000, 0, 1, lease(9000, 1000, 0), &r);
    tracker_visit(t, 12, hs(5), 1, 2, 2000, 0, 1,
                  lease(9000 + TRACKER_RENEW_SLACK_MS, 2000, 0), &r);
    assert_false(r.renewed);
    tracker_sweep(t, 3, 8000, 0);          /* gone before 9250: released */
    assert_int_equal(nended, 0);
    /* a lease that ran out unrenewed counts, renewed = no, without names */
    tracker_visit(t, 13, hs(6), 1, 4, 1000, 0, 1, lease(3000, 1000, 1), &r);
    tracker_sweep(t, 5, 3000, 0);
    assert_int_equal(nended, 1);
    assert_false(ended[0].renewed);
    assert_null(ended[0].key);
    tracker_free(t);
}

/* Another holder takes the key after the first one's lease ran out: the
 * first one's lease ended (expired, then taken); taken before it ran out
 * (a release and a new acquire): nothing ended. */
static void
holder_change_after_expiry_ends_the_old_lease(void **state)
{
    struct tracker *t = tracker_new(on_end);
    struct track_result r;

    (void)state;
    nended = 0;
    tracker_visit(t, 14, hs(1), 1, 1, 1000, 0, 1, lease(3000, 1000, 2), &r);
    tracker_visit(t, 14, hs(1), 1, 2, 2000, 0, 1, lease(4000, 2000, 2), &r);
    tracker_visit(t, 14, hs(2), 1, 3, 5000, 0, 1, lease(8000, 5000, 2), &r);
    assert_int_equal(nended, 1);
    assert_true(ended[0].renewed);
    assert_int_equal(ended[0].holder_hash, 1);
    assert_int_equal(ended[0].expires_ms, 4000);
    assert_false(r.renewed);            /* the new holder starts unrenewed */
    assert_int_equal(r.first_seen_ms, 5000);
    /* holder 3 takes it while holder 2's lease still runs: a release */
    tracker_visit(t, 14, hs(3), 1, 4, 6000, 0, 1, lease(9000, 6000, 2), &r);
    assert_int_equal(nended, 1);
    tracker_free(t);
}

/* The names of renewed locks are bounded: past TRACKER_NAMES_MAX the
 * ending is told without them. */
static void
names_are_bounded(void **state)
{
    struct tracker *t = tracker_new(on_end);
    struct track_result r;
    uint64_t k;

    (void)state;
    for (k = 1; k <= TRACKER_NAMES_MAX + 10; k++) {
        tracker_visit(t, k, hs(1), 1, 1, 1000, 0, 1, lease(3000, 1000, 0), &r);
        tracker_visit(t, k, hs(1), 1, 2, 2000, 0, 1, lease(4000, 2000, 0), &r);
    }
    assert_int_equal(tracker_names(t), TRACKER_NAMES_MAX);
    tracker_sweep(t, 3, 1000, 0);          /* gone before 4000: released */
    assert_int_equal(tracker_names(t), 0);
    tracker_free(t);
}

/* an empty server's restart: a holder first seen before its start is not
 * the one there now, even under the same hash; one first seen after keeps
 * its time; a new key is never dated before the start; a shared lock's
 * holders restart too; a back-dating claim older than the start is not
 * believed */
static void
born_after_an_empty_restart(void **state)
{
    struct tracker *t = tracker_new(NULL);
    struct track_result r;
    uint32_t two[2] = { 5, 6 };

    (void)state;
    tracker_visit(t, 42, hs(7), 1, 1, 10000, 0, 0, NULL, &r);
    tracker_visit(t, 43, hs(7), 1, 1, 50000, 0, 0, NULL, &r);
    tracker_visit(t, 44, two, 2, 1, 10000, 0, 0, NULL, &r);
    /* the server started at 40000 having loaded nothing; seen at 60000 */
    assert_int_equal(tracker_visit_born(t, 42, hs(7), 1, 2, 60000, 1000, 40000, 0, NULL, &r),
                     0);
    assert_int_equal(r.first_seen_ms, 59000);   /* its start age, from now */
    assert_int_equal(r.nottl_since_ms, 59000);
    assert_int_equal(r.acquired, 1);
    /* first seen after the start (a pass that failed later): kept */
    tracker_visit_born(t, 43, hs(7), 1, 2, 60000, 0, 40000, 0, NULL, &r);
    assert_int_equal(r.first_seen_ms, 50000);
    assert_int_equal(r.acquired, 0);
    /* both readers of a shared lock are of the lost holding */
    tracker_visit_born(t, 44, two, 2, 2, 60000, 0, 40000, 0, NULL, &r);
    assert_int_equal(r.first_seen_ms, 60000);
    two[0] = 6;
    tracker_visit_born(t, 44, two, 1, 3, 61000, 0, 40000, 0, NULL, &r);
    assert_int_equal(r.first_seen_ms, 60000);
    /* a new key: its start age back-dates it, never before the start */
    tracker_visit_born(t, 45, hs(9), 1, 2, 60000, 30000, 40000, 0, NULL, &r);
    assert_int_equal(r.first_seen_ms, 40000);
    /* ... nor to after now when the start is later (uptime 0, asked after
     * the run began) */
    tracker_visit_born(t, 46, hs(9), 1, 2, 60000, 500, 60200, 0, NULL, &r);
    assert_int_equal(r.first_seen_ms, 60000);
    /* a claim (the client registry, a time in the value) before the start */
    assert_int_equal(tracker_backdate(t, 42, 30000, 40000, &r), 0);
    assert_int_equal(r.first_seen_ms, 59000);
    assert_int_equal(tracker_backdate(t, 42, 45000, 40000, &r), 0);
    assert_int_equal(r.first_seen_ms, 45000);
    /* with no start known (0) nothing changes: the holder keeps its age */
    tracker_visit_born(t, 42, hs(7), 1, 3, 70000, 0, 0, 0, NULL, &r);
    assert_int_equal(r.first_seen_ms, 45000);
    assert_int_equal(r.acquired, 0);
    tracker_free(t);
}

/* A holding counted in "other" stays there while its timed holder holds
 * (a reader joining too); a new holder is a new holding; not noted, or
 * noted back, it is not. */
static void
other_lasts_as_long_as_the_holding(void **state)
{
    struct tracker *t = tracker_new(NULL);
    struct track_result r;
    uint32_t two[2] = { 7, 9 };

    (void)state;
    assert_false(tracker_in_other(t, 42, hs(7), 1));        /* unknown key */
    tracker_visit(t, 42, hs(7), 1, 1, 10000, 0, 0, NULL, &r);
    assert_false(tracker_in_other(t, 42, hs(7), 1));        /* not noted */
    tracker_note_other(t, 42, true);
    assert_true(tracker_in_other(t, 42, hs(7), 1));
    assert_true(tracker_in_other(t, 42, two, 2));           /* still among them */
    assert_false(tracker_in_other(t, 42, hs(8), 1));        /* taken by another */
    tracker_visit(t, 42, hs(8), 1, 2, 20000, 0, 0, NULL, &r);
    assert_true(r.acquired);
    tracker_note_other(t, 42, false);
    assert_false(tracker_in_other(t, 42, hs(8), 1));
    tracker_note_other(t, 43, true);                        /* no entry: nothing */
    assert_false(tracker_in_other(t, 43, hs(8), 1));
    tracker_free(t);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(age_survives_renewals_and_restarts_on_new_holder),
        cmocka_unit_test(start_age_backdates_new_entries),
        cmocka_unit_test(ttl_loss_and_gain_tracked),
        cmocka_unit_test(duplicates_within_a_pass),
        cmocka_unit_test(joining_reader_keeps_the_age_leaving_one_passes_it_on),
        cmocka_unit_test(sweep_drops_unseen_and_keeps_seen),
        cmocka_unit_test(renewed_then_gone_after_expiry_ends_renewed),
        cmocka_unit_test(unrenewed_and_released_leases),
        cmocka_unit_test(holder_change_after_expiry_ends_the_old_lease),
        cmocka_unit_test(names_are_bounded),
        cmocka_unit_test(unbroken_since_the_last_lease_set),
        cmocka_unit_test(born_after_an_empty_restart),
        cmocka_unit_test(other_lasts_as_long_as_the_holding),
    };

    return cmocka_run_group_tests_name("tracker", tests, NULL, NULL);
}
