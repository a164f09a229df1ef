# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits out leak_grace; its bounds are lower ones, which a busy neighbour
#   cannot break)
"""The leak clock: `leaked` = no TTL for at least leak_grace.

A lock that loses its TTL (PERSIST) is not leaked before leak_grace and is
after; it stops being leaked when a TTL comes back (PEXPIRE) and the grace
starts over when the TTL goes again.  A leaked lock that is deleted leaves
lockwatch_locks_leaked and the API.  The holder's age is not touched by any
of this (same holder all along).
"""

import time

import harness as h

KEY = "lock:batch:3"
GRACE = 2.0


class Leak(h.TestCase):

    def state(self, ag):
        st, lk = ag.lock(KEY)
        self.assertEqual(st, 200, lk)
        return lk

    def leaked_metric(self, ag):
        return h.msum(ag.metrics(), "lockwatch_locks_leaked", target="main",
                      **{"class": "lock:batch:*"})

    def test_leak_lifecycle(self):
        rs = self.start_redis()
        c = rs.client()
        c.set(KEY, "tok-batch", px=600000)
        t0 = time.monotonic()
        ag = self.start_agent(rs, scan_interval="200ms", leak_grace="%ds" % GRACE,
                              max_hold="1h")
        ag.wait_for(lambda: ag.lock(KEY)[0] == 200, timeout=10, desc="lock seen")
        self.assertNotIn("leaked", self.state(ag)["states"])

        for round_ in (1, 2):
            c.persist(KEY)
            t_lost = time.monotonic()
            ag.wait_for(lambda: self.state(ag)["pttl_ms"] == -1, timeout=5,
                        desc="PTTL -1 seen (round %d)" % round_)
            lk = self.state(ag)
            if time.monotonic() - t_lost < GRACE - 0.6:
                self.assertNotIn("leaked", lk["states"],
                                 "leaked %.1fs after losing its TTL (grace %ss)"
                                 % (time.monotonic() - t_lost, GRACE))
                self.assertEqual(self.leaked_metric(ag), 0)
            lk = ag.wait_for(lambda: "leaked" in self.state(ag)["states"] and self.state(ag),
                             timeout=GRACE + 5, interval=0.1,
                             desc="leaked after leak_grace (round %d)" % round_)
            self.assertGreaterEqual(time.monotonic() - t_lost, GRACE - 0.3,
                                    "leaked before leak_grace")
            self.assertEqual(self.leaked_metric(ag), 1)
            st, body = ag.get_json("/api/v1/locks?state=leaked")
            self.assertEqual([l["key"] for l in body["locks"]], [KEY])

            c.pexpire(KEY, 600000)
            ag.wait_for(lambda: "leaked" not in self.state(ag)["states"], timeout=5,
                        desc="not leaked once it has a TTL again (round %d)" % round_)
            self.assertEqual(self.leaked_metric(ag), 0)
            # the holder never changed: its age runs from the start
            self.assertGreaterEqual(self.state(ag)["age_seconds"], time.monotonic() - t0 - 1.0)

        # deleted while leaked: gone from the metric and the API
        c.persist(KEY)
        ag.wait_for(lambda: "leaked" in self.state(ag)["states"], timeout=GRACE + 5,
                    desc="leaked again")
        c.delete(KEY)
        ag.wait_for(lambda: ag.lock(KEY)[0] == 404, timeout=5, desc="deleted lock gone")
        self.assertEqual(self.leaked_metric(ag), 0)
        st, body = ag.get_json("/api/v1/locks?state=leaked")
        self.assertEqual(body["total"], 0, body)
        self.assertFalse(h.select(ag.metrics(), "lockwatch_lock_offender_info", key=KEY))


if __name__ == "__main__":
    h.main()
