# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits on dripping fake servers and a 60 s scan_timeout; its bounds - down
#   within 90 s at the defaults, SIGTERM exit within 5 s - leave room for a busy neighbour)
"""A whole-scan deadline (scan_timeout): a server that answers one byte
every 0.5 s (each read well inside command_timeout) or a SCAN cursor that
never returns to 0 must not freeze a target's scan.  The scan fails naming
scan_timeout, lockwatch_target_up goes to 0, /readyz answers 503 naming the
target and the reason, the other target keeps being scanned, and SIGTERM
mid-scan against such a server exits within 5 s.

The misbehaving servers are tests/integration/fake_redis.py: redis-server
cannot be made to drip or to loop a cursor."""

import time

import harness as h
from fake_redis import FakeRedis


def up(m, target):
    vals = h.select(m, "lockwatch_target_up", target=target)
    return vals[0][1] if len(vals) == 1 else None


class ScanDeadline(h.TestCase):

    def _down_named(self, ag, target, t0, limit):
        """Wait for /readyz to name the target's failed scan (before the first
        scan ends it says "no scan has completed yet"); the seconds it took."""
        def named():
            st, _, body = ag.get("/readyz", timeout=2)
            return st == 503 and b"scan_timeout" in body and body
        body = ag.wait_for(named, timeout=limit, interval=0.2,
                           desc="/readyz naming %s's scan_timeout" % target)
        down_s = time.monotonic() - t0
        self.assertIn(target.encode(), body)
        self.assertEqual(up(ag.metrics(), target), 0)
        self.assertTrue(ag.alive)
        return down_s

    def _sigterm_mid_scan(self, ag, fake):
        # the next attempt is under way (backoff <= 1 s) and stuck on the fake
        time.sleep(1.5)
        t0 = time.monotonic()
        ag.stop(timeout=15)
        took = time.monotonic() - t0
        print("SIGTERM exit: %.2f s" % took)
        self.assertLess(took, 5.0, "lockwatchd took %.1f s to exit on SIGTERM" % took)

    def test_drip_on_scan(self):
        rs = self.start_redis()
        rs.client().set("lock:a", "t", px=600000)
        with FakeRedis("drip", on={"SCAN"}) as fake:
            t0 = time.monotonic()
            ag = self.start_agent(targets=[("drip", fake.url), ("main", rs.url)],
                                  scan_interval="1s",
                                  target_extra={"scan_timeout": "5s",
                                                "command_timeout": "2s"})
            down_s = self._down_named(ag, "drip", t0, 30)
            print("drip on SCAN: target down after %.1f s (scan_timeout 5 s)" % down_s)
            self.assertGreater(fake.sent, 0, "the fake server never dripped")
            m = ag.metrics()
            self.assertEqual(up(m, "main"), 1)
            self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 1)
            self.assertIn("scan_timeout", ag.log_tail(40))
            self._sigterm_mid_scan(ag, fake)

    def test_endless_cursor(self):
        with FakeRedis("endless") as fake:
            t0 = time.monotonic()
            ag = self.start_agent(targets=[("loop", fake.url)], scan_interval="1s",
                                  target_extra={"scan_timeout": "3s",
                                                "command_timeout": "2s"})
            down_s = self._down_named(ag, "loop", t0, 30)
            print("endless cursor: target down after %.1f s (scan_timeout 3 s)" % down_s)
            # the stream's own check ("not finished within scan_timeout") or a
            # read waiting at the deadline ("gave up: scan_timeout ran out"):
            # _down_named() saw scan_timeout named either way
            self._sigterm_mid_scan(ag, fake)

    def test_drip_from_the_first_byte_at_defaults(self):
        # every command drips, from the connection's first (CLIENT NO-TOUCH);
        # default scan_timeout (60 s) and command_timeout (5 s): down within 90 s
        with FakeRedis("drip") as fake:
            t0 = time.monotonic()
            ag = self.start_agent(targets=[("drip", fake.url)], scan_interval="15s")
            down_s = self._down_named(ag, "drip", t0, 90)
            print("drip from the first byte, defaults: target down after %.1f s" % down_s)
            self.assertLess(down_s, 90)
            self._sigterm_mid_scan(ag, fake)


if __name__ == "__main__":
    h.main()
