# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (a holder renewing every 0.5 s, watched across scans: next to no CPU; its
#   bounds have room)
"""Holder age: a watchdog-renewed lock becomes `long`; a new holder restarts
the clock.

A holder keeps renewing its lock every 0.5 s (same token, PEXPIRE), so the
key never lives long without a TTL and its OBJECT IDLETIME keeps resetting:
only the agent's first-seen tracking per (key, holder) can tell how long the
holder has had it.  After max_hold (3 s) the lock is `long`
(lockwatch_locks_long_held, API states), its age keeps growing across
renewals; SET to a new token, the next scan shows age < 2 s and not `long`.
On a shared read lock the age is per holder: a reader joining does not
restart the age of one already there, and when the oldest leaves the age is
that of the next oldest.  A change of hold count is the same holder.
"""

import threading
import time

import harness as h

KEY = "lock:job:42"
CLASS = "lock:job:*"
MAX_HOLD = 3.0


class Renewer(threading.Thread):
    """Renews KEY every `every` seconds while it still holds our token."""

    def __init__(self, client, key, token, every=0.5, ttl_ms=2000):
        super().__init__(daemon=True)
        self.c, self.key, self.token = client, key, token
        self.every, self.ttl_ms = every, ttl_ms
        self.halt = threading.Event()
        self.renewals = 0
        self.errors = []

    def run(self):
        lua = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
               "return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end")
        while not self.halt.wait(self.every):
            try:
                if self.c.eval(lua, 1, self.key, self.token, self.ttl_ms) == 1:
                    self.renewals += 1
            except Exception as e:  # shown by the test on failure
                self.errors.append(repr(e))

    def stop(self):
        self.halt.set()
        self.join(timeout=5)


class HolderAge(h.TestCase):

    def test_renewed_lock_becomes_long_and_new_holder_resets(self):
        rs = self.start_redis()
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="500ms", max_hold="%ds" % MAX_HOLD,
                              leak_grace="1h")
        token1 = "holder-one-7f3a"
        c.set(KEY, token1, px=2000)
        t_set = time.monotonic()
        ren = Renewer(rs.client(), KEY, token1)
        ren.start()
        self.addCleanup(ren.stop)

        # Seen and young first.
        def seen():
            st, lk = ag.lock(KEY)
            return st == 200 and lk
        lk = ag.wait_for(seen, timeout=10, desc="lock %s in the API" % KEY)
        self.assertEqual([x["id"] for x in lk["holders"]], [token1], lk)
        if time.monotonic() - t_set < MAX_HOLD - 1:
            self.assertNotIn("long", lk["states"], lk)
            self.assertLess(lk["age_seconds"], MAX_HOLD, lk)

        # Becomes long after max_hold, though its TTL keeps being renewed.
        def long_now():
            st, lk = ag.lock(KEY)
            return st == 200 and "long" in lk["states"] and lk
        lk = ag.wait_for(long_now, timeout=MAX_HOLD + 10, interval=0.2,
                         desc="state long on %s (renewer errors: %s)"
                         % (KEY, ren.errors))
        self.assertGreaterEqual(time.monotonic() - t_set, MAX_HOLD - 0.5,
                                "long before max_hold: %s" % lk)
        self.assertGreaterEqual(lk["age_seconds"], MAX_HOLD - 0.5, lk)
        self.assertGreater(lk["pttl_ms"], 0, lk)     # renewed, not leaked
        self.assertNotIn("leaked", lk["states"], lk)
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_locks_long_held", target="main",
                                **{"class": CLASS}), 1,
                         h.select(m, "lockwatch_locks_long_held"))
        self.assertGreaterEqual(h.msum(m, "lockwatch_lock_oldest_holder_seconds",
                                       target="main", **{"class": CLASS}),
                                MAX_HOLD - 0.5)
        self.assertTrue(any(l.get("key") == KEY and l.get("state") == "long"
                            and l.get("holder") == token1
                            for (l, v) in h.select(m, "lockwatch_lock_offender_info")),
                        h.select(m, "lockwatch_lock_offender_info"))
        st, lst = ag.get_json("/api/v1/locks?state=long")
        self.assertEqual(st, 200, lst)
        self.assertEqual([l["key"] for l in lst["locks"]], [KEY], lst)

        # Its age keeps growing across renewals (several scans, several renewals).
        renewals0 = ren.renewals
        age0, t0 = lk["age_seconds"], time.monotonic()
        ag.wait_scans(4, timeout=15)
        st, lk = ag.lock(KEY)
        self.assertEqual(st, 200, lk)
        grown = time.monotonic() - t0
        self.assertGreaterEqual(ren.renewals - renewals0, 2, "renewer stalled: %s" % ren.errors)
        self.assertGreaterEqual(lk["age_seconds"], age0 + grown - 1.5,
                                "age did not keep growing: %.2f -> %s after %.1fs"
                                % (age0, lk["age_seconds"], grown))
        self.assertGreaterEqual(lk["age_seconds"], time.monotonic() - t_set - 1.5, lk)
        self.assertIn("long", lk["states"], lk)

        # A new holder: SET to a new token; the renewer follows the new token
        # (the lock is still renewed, only the holder changed).
        token2 = "holder-two-c41d"
        ren.token = token2
        c.set(KEY, token2, px=2000)
        t_new = time.monotonic()

        def new_holder():
            st, lk = ag.lock(KEY)
            return (st == 200 and [x["id"] for x in lk["holders"]] == [token2]) and lk
        ag.wait_for(new_holder, timeout=10, desc="the new holder in the API")
        ag.wait_scans(1, timeout=10)
        st, lk = ag.lock(KEY)
        self.assertEqual(st, 200, lk)
        self.assertEqual([x["id"] for x in lk["holders"]], [token2], lk)
        self.assertLess(lk["age_seconds"], 2.0,
                        "age did not restart for a new holder: %s" % lk)
        self.assertLessEqual(lk["age_seconds"], time.monotonic() - t_new + 1.0, lk)
        self.assertNotIn("long", lk["states"], lk)
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_locks_long_held", target="main",
                                **{"class": CLASS}), 0,
                         h.select(m, "lockwatch_locks_long_held"))
        self.assertFalse(any(l.get("key") == KEY and l.get("state") == "long"
                             for (l, v) in h.select(m, "lockwatch_lock_offender_info")),
                         h.select(m, "lockwatch_lock_offender_info"))
        self.assertEqual(ren.errors, [])

    def test_shared_read_lock_age_is_per_holder(self):
        # SPEC: "first-seen time of the current holder", long = "same holder
        # longer than max_hold"; issue 2: first-seen per (key, holder).  On a
        # Redisson read lock, reader A holds it throughout while reader B
        # joins later: B joining must not restart A's clock (else a reader
        # that never lets go is never `long` while others come and go), and
        # when A leaves the lock's age is B's, not zero.
        A = "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
        B = "0b7d3c1e-5a8f-4e2d-9c61-3f0a9e8b7d21:2"
        key = "lock:shared:7"
        rs = self.start_redis()
        c = rs.client()
        c.hset(key, mapping={"mode": "read", A: "1"})
        c.pexpire(key, 600000)
        t_a = time.monotonic()
        ag = self.start_agent(rs, scan_interval="300ms", max_hold="5s", leak_grace="1h")
        ag.wait_for(lambda: ag.lock(key)[0] == 200, timeout=10, desc="the read lock seen")
        time.sleep(max(0.0, t_a + 2.5 - time.monotonic()))
        c.hset(key, B, "1")
        t_b = time.monotonic()
        ag.wait_for(lambda: len(ag.lock(key)[1]["holders"]) == 2, timeout=10,
                    desc="reader B seen")
        ag.wait_scans(2, timeout=10)
        st, lk = ag.lock(key)
        self.assertEqual(lk["format"], "redisson-rw", lk)
        self.assertGreaterEqual(lk["age_seconds"], time.monotonic() - t_a - 1.0,
                                "reader B joining restarted the age of reader A: age %.2f, "
                                "A has held it %.2fs, B %.2fs"
                                % (lk["age_seconds"], time.monotonic() - t_a,
                                   time.monotonic() - t_b))
        # A has held it past max_hold (5s) while B is younger: long.
        time.sleep(max(0.0, t_a + 6.0 - time.monotonic()))
        ag.wait_scans(1, timeout=10)
        st, lk = ag.lock(key)
        self.assertLess(time.monotonic() - t_b, 5.0, "test too slow to tell")
        self.assertIn("long", lk["states"],
                      "reader A held it %.1fs > max_hold 5s: %s" % (time.monotonic() - t_a, lk))
        # A leaves: the lock's age is now B's.
        c.hdel(key, A)
        ag.wait_for(lambda: len(ag.lock(key)[1]["holders"]) == 1, timeout=10,
                    desc="reader A gone")
        ag.wait_scans(1, timeout=10)
        st, lk = ag.lock(key)
        b_age = time.monotonic() - t_b
        self.assertGreaterEqual(lk["age_seconds"], b_age - 1.0,
                                "age %.2f, but B has held it %.2fs" % (lk["age_seconds"], b_age))
        self.assertLessEqual(lk["age_seconds"], b_age + 1.0,
                             "age %.2f, but B has held it %.2fs" % (lk["age_seconds"], b_age))

    def test_reentrant_count_change_keeps_age(self):
        # The same Redisson holder re-entering and leaving (count 1 -> 3 -> 1)
        # is the same holder: its age keeps growing.
        key = "lock:reent:9"
        holder = "8743c9c0-0795-4907-87fd-6c719a6b4586:57"
        rs = self.start_redis()
        c = rs.client()
        c.hset(key, holder, "1")
        c.pexpire(key, 30000)
        t0 = time.monotonic()
        ag = self.start_agent(rs, scan_interval="300ms", max_hold="1h", leak_grace="1h")
        ag.wait_for(lambda: ag.lock(key)[0] == 200, timeout=10, desc="lock seen")
        for count in (2, 3, 2, 1):
            time.sleep(0.7)
            c.hset(key, holder, str(count))     # re-enter / leave
            c.pexpire(key, 30000)
        ag.wait_scans(2, timeout=10)
        st, lk = ag.lock(key)
        self.assertEqual(st, 200, lk)
        self.assertEqual(lk["max_count"], 1, lk)
        self.assertGreaterEqual(lk["age_seconds"], time.monotonic() - t0 - 1.0,
                                "a change of hold count restarted the age: %s" % lk)


if __name__ == "__main__":
    h.main()
