# SPDX-License-Identifier: BSD-3-Clause
# run-all: serial (the first scan of 11,000 keys must end well within leak_grace)
"""Issue 2 acceptance: one scan over a mixed keyspace.

1,000 plain locks with a TTL, 7 without, 5 Redisson hash locks with hold
counts 1..5 (all under lock:*), and 10,000 unrelated keys.  After the first
scan: lockwatch_locks sums to 1,012, nothing is leaked yet (leak_grace has
not passed), lockwatch_lock_max_reentrancy is 5.  Once leak_grace has passed:
lockwatch_locks_leaked sums to 7 and /api/v1/locks?state=leaked lists exactly
those 7 keys.  /api/v1/locks/{key} shows a Redisson lock, and 404s a missing
key.
"""

import time
import uuid

import harness as h

LEAK_GRACE = 5.0
REDISSON_UUID = "8743c9c0-0795-4907-87fd-6c719a6b4586"
LEAK_KEYS = ["lock:%d" % (5000 + i) for i in range(7)]
REDISSON_KEYS = ["lock:redisson:%d" % n for n in range(1, 6)]   # hold count n


class ScanAcceptance(h.TestCase):

    def test_mixed_keyspace(self):
        rs = self.start_redis()
        c = rs.client()
        h.load(c, (("SET", "user:%d" % i, "x" * 16) for i in range(10000)))
        h.load(c, (("SET", "lock:%d" % i, uuid.uuid4().hex, "PX", 600000)
                   for i in range(1000)))
        for n, key in enumerate(REDISSON_KEYS, 1):
            c.hset(key, "%s:%d" % (REDISSON_UUID, 50 + n), str(n))
            c.pexpire(key, 600000)
        # The leaks last, just before the agent starts, so leak_grace is
        # measured from here at the earliest (OBJECT IDLETIME starts here).
        for key in LEAK_KEYS:
            c.set(key, "leaktoken-" + key)
        t_leaks = time.monotonic()
        self.assertEqual(c.dbsize(), 10000 + 1000 + 5 + 7)

        ag = self.start_agent(rs, scan_interval="1s",
                              leak_grace="%ds" % LEAK_GRACE, max_hold="1h")

        # First scan, checked promptly.
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_scans_total",
                                   target="main", result="ok") >= 1,
                    timeout=LEAK_GRACE - 1.5, interval=0.05,
                    desc="first ok scan well within leak_grace")
        m = ag.metrics()
        elapsed = time.monotonic() - t_leaks
        self.assertLess(elapsed, LEAK_GRACE - 0.5,
                        "first scan took too long to check 'not leaked yet'")
        self.assertEqual(h.msum(m, "lockwatch_locks"), 1012,
                         h.select(m, "lockwatch_locks"))
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 1012)
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked"), 0,
                         "leaked before leak_grace: %s"
                         % h.select(m, "lockwatch_locks_leaked"))
        self.assertEqual(h.mmax(m, "lockwatch_lock_max_reentrancy"), 5,
                         h.select(m, "lockwatch_lock_max_reentrancy"))
        self.assertEqual(h.msum(m, "lockwatch_locks", format="redisson"), 5,
                         h.select(m, "lockwatch_locks"))
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="main"), 1)
        # lock:<digits> is class lock:*
        self.assertEqual(h.msum(m, "lockwatch_locks", **{"class": "lock:*"}), 1007)
        self.assertEqual(h.msum(m, "lockwatch_locks", **{"class": "lock:redisson:*"}), 5)

        # Once leak_grace has passed and another scan ran: 7 leaked.
        def leaked():
            mm = ag.metrics()
            return h.msum(mm, "lockwatch_locks_leaked") == 7 and mm
        m = ag.wait_for(leaked, timeout=LEAK_GRACE + 15, interval=0.2,
                        desc="sum(lockwatch_locks_leaked) == 7")
        self.assertGreaterEqual(time.monotonic() - t_leaks, LEAK_GRACE - 0.5,
                                "leaked before leak_grace passed")
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", **{"class": "lock:*"}), 7)
        self.assertEqual(h.msum(m, "lockwatch_locks"), 1012)
        self.assertEqual(h.mmax(m, "lockwatch_lock_max_reentrancy"), 5)

        st, body = ag.get_json("/api/v1/locks?state=leaked&limit=100")
        self.assertEqual(st, 200, body)
        keys = [l["key"] for l in body["locks"]]
        self.assertEqual(sorted(keys), sorted(LEAK_KEYS), body)
        self.assertEqual(len(keys), 7, "a key listed twice: %s" % keys)
        self.assertEqual(body["count"], 7)
        self.assertEqual(body["total"], 7)
        for l in body["locks"]:
            self.assertIn("leaked", l["states"], l)
            self.assertEqual(l["pttl_ms"], -1, l)
            self.assertEqual(l["target"], "main", l)
            self.assertEqual(l["class"], "lock:*", l)
            self.assertEqual([x["id"] for x in l["holders"]],
                             ["leaktoken-" + l["key"]], l)

        # state=all: every lock, limit honoured, total counts them all.
        st, body = ag.get_json("/api/v1/locks?state=all&limit=10")
        self.assertEqual(st, 200, body)
        self.assertEqual(body["total"], 1012, {k: body[k] for k in ("count", "total")})
        self.assertEqual(body["count"], 10)
        self.assertEqual(len(body["locks"]), 10)
        # worst first: the 7 leaks come before any merely held lock
        self.assertTrue(all("leaked" in l["states"] for l in body["locks"][:7]),
                        [(l["key"], l["states"]) for l in body["locks"]])
        st, body = ag.get_json("/api/v1/locks?state=reentrant_high")
        self.assertEqual(st, 200, body)
        self.assertEqual(body["total"], 0, body)   # max_reentrancy 16 > 5

        # One Redisson lock by key.
        st, lk = ag.lock("lock:redisson:3")
        self.assertEqual(st, 200, lk)
        self.assertEqual(lk["key"], "lock:redisson:3")
        self.assertEqual(lk["target"], "main")
        self.assertEqual(lk["format"], "redisson")
        self.assertEqual(lk["class"], "lock:redisson:*")
        self.assertEqual([(x["id"], x["count"]) for x in lk["holders"]],
                         [(REDISSON_UUID + ":53", 3)], lk)
        self.assertEqual(lk["holders_total"], 1)
        self.assertEqual(lk["max_count"], 3)
        self.assertIn("held", lk["states"])
        self.assertNotIn("leaked", lk["states"])
        self.assertGreater(lk["pttl_ms"], 0)
        self.assertLessEqual(lk["pttl_ms"], 600000)

        # A missing key: 404 with an error object.
        st, err = ag.lock("lock:no-such-lock:xyz")
        self.assertEqual(st, 404, err)
        self.assertIsInstance(err.get("error"), str, err)
        # An unrelated key (not matching the patterns) is no lock either.
        st, err = ag.lock("user:1")
        self.assertEqual(st, 404, err)


if __name__ == "__main__":
    h.main()
