# SPDX-License-Identifier: BSD-3-Clause
# run-all: serial (a reload mid-scan must be followed by two paced scans of 100,000 keys
#   (scan_duty 20%) within 30 s; that is throughput, which neighbours take)
"""SIGHUP while a scan is running (the rest of reload is test_reload.py):
the reload must not turn into a failed scan, and the scans after it read
correct replies.  Apart from test_reload.py because it alone measures
throughput and so runs alone (tests/run-all's serial marker).
"""

import time

import harness as h


class ReloadMidScan(h.TestCase):

    def test_reload_mid_scan_is_not_a_target_failure(self):
        # A SIGHUP that lands while a scan is running must not turn into a
        # failed scan: target_up stays 1, /readyz stays 200, no
        # scans_total{result="error"}, and the scan that follows reads
        # correct replies (no pipeline left half-read on a reused
        # connection).
        rs = self.start_redis()
        c = rs.client()
        h.load(c, (("SET", "lock:%d" % i, "t", "PX", 600000) for i in range(100000)))
        ag = self.start_agent(rs, scan_interval="100ms", scan_duty="20%",
                              leak_grace="1h", max_hold="1h")
        ag.wait_for(lambda: ag.scans_ok() >= 1, timeout=60, desc="first full scan")
        for round_ in range(2):
            time.sleep(0.8)                  # a (slow, paced) scan is running now
            m = ag.metrics()
            err0 = h.msum(m, "lockwatch_scans_total", target="main", result="error")
            ok0 = h.msum(m, "lockwatch_scans_total", target="main", result="ok")
            if round_ == 1:
                # a changed target: its scanning thread is stopped mid-scan
                # and another started (a soak: logged "scan failed: ...
                # stopped" and published the view stale for a moment)
                ag.write_config(ag.render_config(patterns="lock:*,lockx:*"))
            ag.reload()
            bad = []
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                m = ag.metrics()
                upv = h.msum(m, "lockwatch_target_up", target="main")
                st = ag.get("/readyz")[0]
                if upv != 1 or st != 200:
                    bad.append((round(time.monotonic() - deadline + 30, 2), upv, st))
                if h.msum(m, "lockwatch_scans_total", target="main", result="ok") >= ok0 + 2:
                    break
                time.sleep(0.05)
            m = ag.metrics()
            self.assertEqual(h.msum(m, "lockwatch_scans_total", target="main", result="error"),
                             err0, "a reload mid-scan counted as a failed scan:\n"
                             + ag.log_tail(6))
            self.assertEqual(bad, [], "target_up / readyz flapped after a reload mid-scan")
            self.assertNotIn("scan failed", ag.log_tail(200))
            self.assertGreaterEqual(h.msum(m, "lockwatch_scans_total", target="main",
                                           result="ok"), ok0 + 2)
            self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 100000)


if __name__ == "__main__":
    h.main()
