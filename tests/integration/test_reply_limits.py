# SPDX-License-Identifier: BSD-3-Clause
"""Memory is not sized by the server: a target streaming 128 MiB replies
(an array header announcing 2e9 elements, then small elements; a bulk
header announcing 2 GB, then its bytes), at the connection's first command
or at SCAN, leaves the agent's peak RSS (VmHWM) under 96 MiB; each such
target is down within 60 s with the reply limit named, the agent stays up
and keeps scanning a healthy target beside them.

The servers are tests/integration/fake_redis.py: redis-server cannot be
made to send such replies."""

import time

import harness as h
from fake_redis import FakeRedis

RSS_LIMIT_MB = 96


class ReplyLimits(h.TestCase):

    def test_huge_replies(self):
        rs = self.start_redis()
        rs.client().set("lock:a", "t", px=600000)
        fakes = [FakeRedis("huge_array"), FakeRedis("huge_bulk"),
                 FakeRedis("huge_array", on={"SCAN"}), FakeRedis("huge_bulk", on={"SCAN"})]
        for f in fakes:
            self.addCleanup(f.stop)
        names = ["array_first", "bulk_first", "array_scan", "bulk_scan"]
        t0 = time.monotonic()
        ag = self.start_agent(targets=[(n, f.url) for n, f in zip(names, fakes)] +
                              [("main", rs.url)], scan_interval="1s")

        def all_named():
            st, _, body = ag.get("/readyz", timeout=5)
            return st == 503 and all((n + ":").encode() in body or n.encode() in body
                                     for n in names) and \
                body.count(b"reply limit") >= len(names) and body
        body = ag.wait_for(all_named, timeout=60, interval=0.5,
                           desc="/readyz naming the reply limit of every huge target")
        down_s = time.monotonic() - t0
        # each streamed for a while more on later attempts: let them
        time.sleep(5)
        peak = h.peak_rss_mb(ag.proc.pid)
        sent = sum(f.sent for f in fakes)
        print("huge replies: every target down after %.1f s; the fakes sent %.0f MiB; "
              "peak RSS %.1f MiB" % (down_s, sent / 1048576.0, peak))
        self.assertTrue(ag.alive)
        self.assert_peak_rss_under(peak, RSS_LIMIT_MB)
        m = ag.metrics()
        for n in names:
            self.assertEqual(h.select(m, "lockwatch_target_up", target=n)[0][1], 0, n)
        self.assertEqual(h.select(m, "lockwatch_target_up", target="main")[0][1], 1)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 1)
        self.assertIn(b"reply limit", body)
        print(body.decode("utf-8", "replace"))


if __name__ == "__main__":
    h.main()
