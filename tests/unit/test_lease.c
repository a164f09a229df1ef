/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lease.c - leases that ran out: the (target, class) rows, the events
 * an expiry and a lost line push, and the match of a holder's late line
 * with the expiry (the overrun), bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/events/events.h"
#include "collectors/lease/lease.h"
#include "collectors/lease/lostat.h"
#include "collectors/lease/released.h"
#include "common/clock.h"
#include "common/keyhash.h"

static int
reset(void **state)
{
    (void)state;
    lease_reset();
    released_reset();
    lostat_reset();
    events_reset();
    return 0;
}

static struct lease_end
end_of(int row, const char *key, const char *holder, bool renewed, int64_t expires_ms)
{
    struct lease_end e;

    memset(&e, 0, sizeof(e));
    e.row = row;
    e.key_hash = keyhash(key, strlen(key));
    e.holder_hash = (uint32_t)keyhash(holder, strlen(holder));
    e.key = key;
    e.keylen = strlen(key);
    e.holder = holder;
    e.holderlen = strlen(holder);
    e.renewed = renewed;
    e.first_seen_ms = expires_ms - 30000;
    e.expires_ms = expires_ms;
    return e;
}

static struct lease_line
line_of(const char *key, const char *holder, const char *verb, int64_t at_ms)
{
    struct lease_line l = { key, strlen(key), holder, holder != NULL ? strlen(holder) : 0,
                            "web-1:42/7", 10, verb, at_ms, 0 };

    return l;
}

static enum event_kind last_kind;
static double last_seconds;
static char last_target[128], last_holder[256];

static void
last_event(const struct event *e, void *arg)
{
    (void)arg;
    last_kind = e->kind;
    last_seconds = e->seconds;
    snprintf(last_target, sizeof(last_target), "%s", e->target);
    snprintf(last_holder, sizeof(last_holder), "%.*s", (int)e->holderlen, e->holder);
}

/* Rows by (target, class), counted renewed or not; a renewed expiry is an
 * expired_renewed event naming holder and how long it held. */
static void
rows_count_and_renewed_pushes(void **state)
{
    struct lease_view v;
    struct lease_end e;
    int a, b;

    (void)state;
    a = lease_row("main", "lock:order:*");
    b = lease_row("main", "lock:job:*");
    assert_true(a >= 0 && b >= 0 && a != b);
    assert_int_equal(lease_row("main", "lock:order:*"), a);
    e = end_of(a, "lock:order:1", "tok-1", false, clock_now_ms());
    lease_expired(&e);
    assert_int_equal(events_total(EVENT_EXPIRED_RENEWED), 0);
    e = end_of(a, "lock:order:2", "uuid-1:7", true, clock_now_ms());
    lease_expired(&e);
    assert_int_equal(events_total(EVENT_EXPIRED_RENEWED), 1);
    events_each(0, 0, last_event, NULL);
    assert_string_equal(last_target, "main");
    assert_string_equal(last_holder, "uuid-1:7");
    assert_true(last_seconds > 29.9 && last_seconds < 30.1);
    assert_int_equal(lease_view_take(&v), 0);
    assert_int_equal(v.nrows, 2);
    assert_int_equal(v.rows[a].expired[0], 1);
    assert_int_equal(v.rows[a].expired[1], 1);
    assert_int_equal(v.recent, 2);
    lease_view_release(&v);
}

/* A line of the holder after its expiry: the overrun, measured from the
 * expiry, once; another holder's or another key's line matches nothing. */
static void
late_line_is_an_overrun_once(void **state)
{
    int64_t now = clock_now_ms();
    struct lease_end e = end_of(lease_row("main", "lock:*"), "lock:a", "uuid-1:7", true,
                                now - 1500);
    struct lease_line l;
    char target[LEASE_TARGET_MAX], klass[LEASE_CLASS_MAX];
    double over = -1;

    (void)state;
    lease_expired(&e);
    l = line_of("lock:a", "uuid-2:7", "hold", now);
    assert_false(lease_overrun(&l, &over, target, klass));
    l = line_of("lock:b", "uuid-1:7", "hold", now);
    assert_false(lease_overrun(&l, &over, target, klass));
    l = line_of("lock:a", NULL, "hold", now);
    assert_false(lease_overrun(&l, &over, target, klass));
    l = line_of("lock:a", "uuid-1:7", "hold", now);
    assert_true(lease_overrun(&l, &over, target, klass));
    assert_true(over > 1.499 && over < 1.501);
    assert_string_equal(target, "main");
    assert_string_equal(klass, "lock:*");
    assert_int_equal(events_total(EVENT_LEASE_OVERRUN), 1);
    /* used up: the next line of the same holding is no second overrun */
    assert_false(lease_overrun(&l, &over, target, klass));
    /* a release's line within LEASE_HOLD_SLACK_MS of the lease's end (as
     * a user's trial found: released 150 ms before it, the line batched
     * after it) is no overrun, before or after the end, and uses the entry
     * up; a lost line then is one, at 0 s */
    e = end_of(lease_row("main", "lock:*"), "lock:a", "uuid-1:7", false, now - 150);
    lease_expired(&e);
    l = line_of("lock:a", "uuid-1:7", "hold", now - 200);
    assert_false(lease_overrun(&l, &over, target, klass));
    assert_false(lease_overrun(&l, &over, target, klass));
    lease_expired(&e);
    l = line_of("lock:a", "uuid-1:7", "hold", now - 150 + LEASE_HOLD_SLACK_MS - 1);
    assert_false(lease_overrun(&l, &over, target, klass));
    lease_expired(&e);
    l = line_of("lock:a", "uuid-1:7", "hold", now - 150 + LEASE_HOLD_SLACK_MS);
    assert_true(lease_overrun(&l, &over, target, klass));
    lease_expired(&e);
    l = line_of("lock:a", "uuid-1:7", "lost", now - 200);
    assert_true(lease_overrun(&l, &over, target, klass));
    assert_true(over == 0.0);
    assert_int_equal(events_total(EVENT_LEASE_OVERRUN), 3);
    /* too long after the expiry was noted: no match */
    lease_expired(&e);
    l.at_ms = now + LEASE_RECENT_MS + 1000;
    assert_false(lease_overrun(&l, &over, NULL, NULL));
}

/* A trial: a release 0.2 s before the lease's end whose hold line was
 * sent 2.5 s late (the sender's event loop blocked after the release)
 * read as a 2.3 s overrun.  The holding ended by its acquire's arrival
 * plus the hold the line reports; without the acquire, by the arrival. */
static void
late_hold_line_counts_from_its_acquire(void **state)
{
    int64_t now = clock_now_ms(), expiry = now - 2300;
    struct lease_end e = end_of(lease_row("main", "lock:*"), "lock:n", "tok-n", false, expiry);
    struct lease_line l, ok;
    double over = -1;

    (void)state;
    /* acquired 2 s before the expiry (its ok arrived 50 ms later), held
     * 1.8 s: released 150 ms before the lease's end */
    ok = line_of("lock:n", "tok-n", "waiting", expiry - 2000 + 50);
    lease_forget(&ok);
    lease_expired(&e);
    l = line_of("lock:n", "tok-n", "hold", now);
    l.held_us = 1800000;
    assert_false(lease_overrun(&l, &over, NULL, NULL));
    assert_int_equal(events_total(EVENT_LEASE_OVERRUN), 0);
    /* a red-team: a later holding of that holder id that sent no acquire
     * line (taken again at once) is not reckoned from the earlier one's:
     * its hold line counts from its arrival */
    lease_expired(&e);
    assert_true(lease_overrun(&l, &over, NULL, NULL));
    assert_true(over > 2.299 && over < 2.301);
    /* held 4 s: released 2 s after the lease's end, though its line came
     * 2.3 s after: the overrun is the release's */
    lease_forget(&ok);
    lease_expired(&e);
    l.held_us = 4000000;
    assert_true(lease_overrun(&l, &over, NULL, NULL));
    assert_true(over > 1.999 && over < 2.051);
    events_each(0, 0, last_event, NULL);
    assert_int_equal(last_kind, EVENT_LEASE_OVERRUN);
    /* a hold longer than the time since its acquire arrived changes
     * nothing: the arrival bounds it */
    lease_forget(&ok);
    lease_expired(&e);
    l.held_us = 60000000;
    assert_true(lease_overrun(&l, &over, NULL, NULL));
    assert_true(over > 2.299 && over < 2.301);
    /* no acquire seen (another holder id): the arrival, as before */
    e = end_of(lease_row("main", "lock:*"), "lock:n", "tok-m", false, expiry);
    lease_expired(&e);
    l = line_of("lock:n", "tok-m", "hold", now);
    l.held_us = 1800000;
    assert_true(lease_overrun(&l, &over, NULL, NULL));
    assert_true(over > 2.299 && over < 2.301);
}

/* A trial: a renewed lock released 0.2 s before its lease's end, its hold
 * line in before the scan found the key gone, was a LockLeaseLost
 * "without an unlock".  A release its holder reported since the agent
 * first saw the holding, and no acquire after it, is no expiry; one
 * reported before, or followed by an acquire, or by a loss, is. */
static void
reported_release_is_no_expiry(void **state)
{
    int64_t now = clock_now_ms();
    int row = lease_row("main", "lock:*");
    struct lease_end e = end_of(row, "lock:r", "tok-r", true, now - 100);
    uint64_t kh = keyhash("lock:r", 6);
    uint32_t hh = (uint32_t)keyhash("tok-r", 5);
    struct lease_view v;

    (void)state;
    released_note(kh, hh, RELEASED_ACQUIRE, e.first_seen_ms - 10);
    released_note(kh, hh, RELEASED_HOLD, now - 300);
    lease_expired(&e);
    assert_int_equal(events_total(EVENT_EXPIRED_RENEWED), 0);
    assert_int_equal(lease_view_take(&v), 0);
    assert_int_equal(v.released_early, 1);
    assert_int_equal(v.rows[row].expired[1], 0);
    assert_int_equal(v.recent, 0);
    lease_view_release(&v);
    /* taken again after that release: this holding's end is an expiry */
    released_note(kh, hh, RELEASED_ACQUIRE, now - 200);
    lease_expired(&e);
    assert_int_equal(events_total(EVENT_EXPIRED_RENEWED), 1);
    /* a release reported before the holding was first seen: an expiry */
    released_reset();
    released_note(kh, hh, RELEASED_HOLD, e.first_seen_ms - 1);
    lease_expired(&e);
    assert_int_equal(events_total(EVENT_EXPIRED_RENEWED), 2);
    /* a red-team: reported after the first sight but before a later read
     * that found the key held (an earlier holding's release; the holder
     * id took the key again at once, with no acquire line): an expiry */
    released_reset();
    released_note(kh, hh, RELEASED_HOLD, now - 5000);
    e.last_seen_ms = now - 1000;
    lease_expired(&e);
    assert_int_equal(events_total(EVENT_EXPIRED_RENEWED), 3);
    e.last_seen_ms = 0;
    /* a release, then a loss the holder reported: an expiry */
    released_reset();
    released_note(kh, hh, RELEASED_HOLD, now - 300);
    released_note(kh, hh, RELEASED_LOST, now - 250);
    lease_expired(&e);
    assert_int_equal(events_total(EVENT_EXPIRED_RENEWED), 4);
}

/* The same holder id taking the key again (Redisson's <id>:<thread>,
 * after a lease that ran out by design) starts a new holding: the expiry
 * is forgotten, and that holding's release is no overrun; another key's
 * or another holder's acquire forgets nothing. */
static void
a_new_acquire_forgets_the_expiry(void **state)
{
    int64_t now = clock_now_ms();
    struct lease_end e = end_of(lease_row("main", "lock:*"), "lock:a", "uuid-1:7", false,
                                now - 1500);
    struct lease_line l;
    double over = -1;

    (void)state;
    lease_expired(&e);
    l = line_of("lock:b", "uuid-1:7", "waiting", now);
    lease_forget(&l);
    l = line_of("lock:a", "uuid-2:7", "waiting", now);
    lease_forget(&l);
    l = line_of("lock:a", "uuid-1:7", "hold", now);
    assert_true(lease_overrun(&l, &over, NULL, NULL));
    lease_expired(&e);
    l = line_of("lock:a", "uuid-1:7", "waiting", now);
    lease_forget(&l);
    l = line_of("lock:a", "uuid-1:7", "hold", now + 5000);
    assert_false(lease_overrun(&l, &over, NULL, NULL));
    assert_int_equal(events_total(EVENT_LEASE_OVERRUN), 1);
    /* the acquire seen before the scan records the expiry (a pass under
     * way): an expiry that ended before the acquire is no overrun of the
     * new holding; one that ended after it is */
    l = line_of("lock:c", "uuid-1:7", "waiting", now);
    lease_forget(&l);
    e = end_of(lease_row("main", "lock:*"), "lock:c", "uuid-1:7", false, now - 1500);
    lease_expired(&e);
    l = line_of("lock:c", "uuid-1:7", "hold", now + 5000);
    assert_false(lease_overrun(&l, &over, NULL, NULL));
    e = end_of(lease_row("main", "lock:*"), "lock:c", "uuid-1:7", false, now + 1000);
    lease_expired(&e);
    l = line_of("lock:c", "uuid-1:7", "hold", now + 5000);
    assert_true(lease_overrun(&l, &over, NULL, NULL));
    assert_int_equal(events_total(EVENT_LEASE_OVERRUN), 2);
}

/* A lost line is a lease_lost event, with the target where one is known. */
static void
lost_line_pushes(void **state)
{
    struct lease_line l = line_of("lock:a", "tok-9", "lost", clock_now_ms());

    (void)state;
    lease_lost(&l, 12.5, -1, true, "", "lock:*");
    assert_int_equal(events_total(EVENT_LEASE_LOST), 1);
    events_each(0, 0, last_event, NULL);
    assert_int_equal(last_kind, EVENT_LEASE_LOST);
    assert_string_equal(last_holder, "tok-9");
    assert_true(last_seconds == 12.5);
}

/* At most LEASE_RECENT_MAX expiries: the oldest go, the newest all match;
 * the same pair noted twice is one entry. */
static void
recent_is_bounded(void **state)
{
    int64_t now = clock_now_ms();
    char key[32];
    struct lease_end e;
    struct lease_line l;
    struct lease_view v;
    double over;
    int i, row = lease_row("t", "c");

    (void)state;
    for (i = 0; i < LEASE_RECENT_MAX + 100; i++) {
        snprintf(key, sizeof(key), "k:%d", i);
        e = end_of(row, key, "h", false, now - LEASE_HOLD_SLACK_MS);
        lease_expired(&e);
    }
    lease_expired(&e);
    assert_int_equal(lease_view_take(&v), 0);
    assert_int_equal(v.recent, LEASE_RECENT_MAX);
    assert_int_equal(v.rows[row].expired[0], LEASE_RECENT_MAX + 101);
    lease_view_release(&v);
    l = line_of("k:5", "h", "hold", now);
    assert_false(lease_overrun(&l, &over, NULL, NULL));     /* dropped */
    for (i = 100; i < LEASE_RECENT_MAX + 100; i++) {
        snprintf(key, sizeof(key), "k:%d", i);
        l = line_of(key, "h", "hold", now);
        assert_true(lease_overrun(&l, &over, NULL, NULL));
    }
    assert_int_equal(lease_view_take(&v), 0);
    assert_int_equal(v.recent, 0);
    assert_int_equal(v.overruns, LEASE_RECENT_MAX);
    lease_view_release(&v);
}

/* The rows are bounded: past the table, a target's "other" row, then
 * the overflow count. */
static void
rows_are_bounded(void **state)
{
    char cls[32];
    struct lease_end e;
    struct lease_view v;
    int i, r = 0, other = -1;

    (void)state;
    for (i = 0; i < LEASE_ROWS_MAX + 10; i++) {
        snprintf(cls, sizeof(cls), "c%d", i);
        r = lease_row(i < LEASE_ROWS_MAX - LEASE_ROWS_OTHER ? "t" : "u", cls);
        if (i >= LEASE_ROWS_MAX - LEASE_ROWS_OTHER) {
            if (other < 0)
                other = r;
            assert_int_equal(r, other);     /* u's "other" row */
        }
    }
    assert_int_equal(lease_view_take(&v), 0);
    assert_string_equal(v.rows[other].klass, "other");
    assert_string_equal(v.rows[other].target, "u");
    lease_view_release(&v);
    e = end_of(-1, "k", "h", false, clock_now_ms());
    lease_expired(&e);
    assert_int_equal(lease_view_take(&v), 0);
    assert_int_equal(v.rows_overflow, 1);
    lease_view_release(&v);
}

/* A holder's line is a change's loss only for the holding the view
 * before the change saw: begun by then, reported after it, on its target
 * (or a line with none), within LOSTAT_KEEP_MS of the change. */
static void
lost_at_a_change_explains_only_its_holding(void **state)
{
    uint64_t k = keyhash("lock:a", 6), tg = keyhash("main", 4), other = keyhash("b", 1);
    uint32_t h = (uint32_t)keyhash("uuid:7", 6);

    (void)state;
    assert_false(lostat_explains(k, h, tg, 5000, 13000));       /* nothing noted */
    lostat_note(k, h, tg, 10000, 10000, 12000);
    assert_true(lostat_explains(k, h, tg, 5000, 13000));        /* after the change */
    assert_true(lostat_explains(k, h, tg, 5000, 11000));        /* before it was seen */
    assert_true(lostat_explains(k, h, 0, 5000, 13000));         /* the line: no target */
    assert_true(lostat_explains(k, h, tg, 10900, 13000));       /* the slack */
    assert_false(lostat_explains(k, h, other, 5000, 13000));    /* another target's */
    assert_false(lostat_explains(k, h, tg, 12500, 20000));      /* taken again after */
    assert_false(lostat_explains(k, h, tg, 5000, 9000));        /* an earlier holding */
    assert_false(lostat_explains(k, h, tg, 5000, 12000 + LOSTAT_KEEP_MS + 1));
    assert_false(lostat_explains(k, (uint32_t)keyhash("uuid:8", 6), tg, 5000, 13000));
    assert_false(lostat_explains(keyhash("lock:b", 6), h, tg, 5000, 13000));
    /* read late in a paced pass: begun before that pass finished */
    lostat_note(keyhash("lock:p", 6), h, tg, 10000, 15000, 16000);
    assert_true(lostat_explains(keyhash("lock:p", 6), h, tg, 14000, 17000));
    assert_false(lostat_explains(keyhash("lock:p", 6), h, tg, 16500, 17000));
    /* a lock with more holders than the view kept: any holder's line */
    lostat_note(keyhash("lock:s", 6), LOSTAT_ANY_HOLDER, tg, 10000, 10000, 12000);
    assert_true(lostat_explains(keyhash("lock:s", 6), (uint32_t)keyhash("h9", 2), tg, 5000,
                                13000));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(rows_count_and_renewed_pushes, reset),
        cmocka_unit_test_setup(lost_at_a_change_explains_only_its_holding, reset),
        cmocka_unit_test_setup(late_line_is_an_overrun_once, reset),
        cmocka_unit_test_setup(late_hold_line_counts_from_its_acquire, reset),
        cmocka_unit_test_setup(reported_release_is_no_expiry, reset),
        cmocka_unit_test_setup(a_new_acquire_forgets_the_expiry, reset),
        cmocka_unit_test_setup(lost_line_pushes, reset),
        cmocka_unit_test_setup(recent_is_bounded, reset),
        cmocka_unit_test_setup(rows_are_bounded, reset),
    };

    return cmocka_run_group_tests_name("lease", tests, NULL, NULL);
}
