# SPDX-License-Identifier: BSD-3-Clause
# run-all: quiet (it times scans at a key rate and a duty cycle, and asks for HTTP answers within
#   1 s during a scan)
"""Scan pacing: scan_count, max_keys_per_second and scan_duty do what they say.

- scan_count is the SCAN COUNT hint: a full pass over N keys takes about
  N / scan_count SCAN calls (INFO commandstats);
- max_keys_per_second caps the scan: 3,000 lock keys at 1,000/s take about
  3 s per pass;
- scan_duty: at 20% a pass takes several times as long as at 100%.
(Figures, not thresholds of gentleness: those are `make bench`.)
"""

import time

import harness as h


def first_scan_duration(ag, timeout=120):
    ag.wait_for(lambda: ag.scans_ok() >= 1, timeout=timeout, interval=0.1,
                desc="a first full scan")
    vals = h.select(ag.metrics(), "lockwatch_scan_duration_seconds", target="main")
    assert len(vals) == 1, vals
    return vals[0][1]


class Pacing(h.TestCase):

    def test_scan_count_and_max_keys_per_second(self):
        rs = self.start_redis()
        c = rs.client()
        h.load(c, (("SET", "lock:%d" % i, "t", "PX", 600000) for i in range(3000)))
        h.load(c, (("SET", "user:%d" % i, "u") for i in range(30000)))
        c.config_resetstat()
        t0 = time.monotonic()
        ag = self.start_agent(rs, scan_interval="1h",
                              target_extra={"max_keys_per_second": 1000, "scan_count": 100})
        d = first_scan_duration(ag, timeout=30)
        wall = time.monotonic() - t0
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks", target="main"), 3000)
        self.assertGreaterEqual(d, 2.2, "3,000 keys at 1,000/s scanned in %.2fs" % d)
        self.assertGreaterEqual(wall, 2.2)
        self.assertLess(d, 10)
        calls = c.info("commandstats").get("cmdstat_scan", {}).get("calls", 0)
        # 33,000 keys / COUNT 100 = 330 calls for one pass (one pass only:
        # scan_interval is 1h)
        self.assertGreater(calls, 330 * 0.6, calls)
        self.assertLess(calls, 330 * 1.6, calls)

    def test_scan_duty(self):
        rs = self.start_redis()
        c = rs.client()
        h.load(c, (("SET", "lock:%d" % i, "t", "PX", 600000) for i in range(100000)))
        full = self.start_agent(rs, scan_interval="1h", scan_duty="100%")
        d100 = first_scan_duration(full)
        full.stop()
        gentle = self.start_agent(rs, scan_interval="1h", scan_duty="20%")
        # Not ready before its first scan has completed, and it says which.
        st, _, body = gentle.get("/readyz")
        if gentle.scans_ok() == 0:
            self.assertEqual(st, 503, body)
            self.assertIn(b"main", body)
        # While that slow first scan runs, HTTP answers at once (it renders
        # the last snapshot, it never waits for a scan).
        worst = 0.0
        deadline = time.monotonic() + 120
        while gentle.scans_ok() < 1 and time.monotonic() < deadline:
            t0 = time.monotonic()
            st, _, _ = gentle.get("/api/v1/locks?limit=5")
            self.assertEqual(st, 200)
            worst = max(worst, time.monotonic() - t0)
            time.sleep(0.05)
        d20 = first_scan_duration(gentle)
        self.assertLess(worst, 1.0, "HTTP took %.2fs during a scan" % worst)
        self.assertEqual(h.msum(gentle.metrics(), "lockwatch_locks", target="main"), 100000)
        self.assertGreaterEqual(d20, 2.5 * d100,
                                "scan_duty 20%%: %.2fs, 100%%: %.2fs" % (d20, d100))


if __name__ == "__main__":
    h.main()
