# SPDX-License-Identifier: BSD-3-Clause
# run-all: quiet (measures probe latencies during stalled releases)
# run-all: split (two cases, each with its own Redis and agent: side by side in the quiet phase)
"""Releases off the probes' path: with Redis stalled (SIGSTOP: connects are
accepted by the kernel, nothing is answered) and 8 authorised releases sent
at once, every /healthz and /metrics probe answers within 2 s.  At most
RELEASE_HTTP_RUNNING_MAX (2) releases run at once, each on a thread of its
own within its deadline (the target's command_timeout, here 2 s): the
others are answered 503 with Retry-After at once, the running ones 502/503
naming the deadline.  SIGTERM while one runs waits for it and exits 0."""

import threading
import time

import harness as h
import test_release_http as rh


class ReleaseStall(h.TestCase):

    def test_stalled_redis_keeps_probes_answering(self):
        rs = self.start_redis()
        rs.client().set("lock:a", "tok")
        tok = rh.token_file()
        ag = self.start_agent(rs, extra=rh.unlock_section(tok, True), scan_interval="1s",
                              target_extra={"command_timeout": "2s"})
        ag.wait_scans(1)
        rs.pause()
        self.addCleanup(rs.resume)
        results = []

        def release():
            t0 = time.monotonic()
            st, hdrs, doc = rh.post(ag, {"key": "lock:a", "holder": "tok"})
            results.append((st, hdrs.get("retry-after"), time.monotonic() - t0, doc))
        threads = [threading.Thread(target=release) for _ in range(8)]
        for t in threads:
            t.start()
        probes = []
        t_end = time.monotonic() + 6
        while time.monotonic() < t_end:
            for path in ("/healthz", "/metrics"):
                st, took = h.timed_get(ag.port, path, timeout=5)
                probes.append((path, st, took))
            time.sleep(0.2)
        for t in threads:
            t.join(timeout=30)
        rs.resume()
        slowest = max(p[2] for p in probes)
        print("%d probes during 8 stalled releases: slowest %.3f s; releases: %s" %
              (len(probes), slowest, sorted((r[0], round(r[2], 2)) for r in results)))
        for path, st, took in probes:
            self.assertEqual(st, 200, (path, st, took))
            self.assertLess(took, 2.0, (path, took))
        self.assertEqual(len(results), 8)
        busy = [r for r in results if r[0] == 503 and r[1] == "1"]
        ran = [r for r in results if r not in busy]
        # 8 sent at once, 2 run (each on a thread of its own, the MHD
        # workers free): the other 6 are turned away at once, none queued
        # behind a running one on its worker
        self.assertEqual(len(busy), 6, results)
        self.assertTrue(all(r[2] < 0.5 for r in busy), results)
        for st, _, took, doc in ran:
            self.assertIn(st, (502, 503), doc)
            self.assertLess(took, 10.0, doc)   # its 2 s, after at most a few rounds
        self.assertTrue(ag.alive)

    def test_stop_while_a_release_runs(self):
        """SIGTERM while a release waits on a stalled Redis on its own
        thread: the agent waits for it (its deadline, 2 s), answers it, and
        exits 0 (the HTTP server is not stopped under a suspended
        connection)."""
        rs = self.start_redis()
        rs.client().set("lock:a", "tok")
        tok = rh.token_file()
        ag = self.start_agent(rs, extra=rh.unlock_section(tok, True), scan_interval="1s",
                              target_extra={"command_timeout": "2s"})
        ag.wait_scans(1)
        rs.pause()
        self.addCleanup(rs.resume)
        results = []

        def release():
            try:
                st, _, doc = rh.post(ag, {"key": "lock:a", "holder": "tok"})
                results.append((st, doc))
            except Exception as e:      # the agent may close it as it exits
                results.append((None, repr(e)))
        t = threading.Thread(target=release)
        t.start()
        time.sleep(0.5)                 # the release is waiting on Redis
        t0 = time.monotonic()
        ag.stop(timeout=15)             # asserts exit status 0
        took = time.monotonic() - t0
        t.join(timeout=10)
        rs.resume()
        print("stopped %.2f s after SIGTERM with a release running; it got %r"
              % (took, results))
        self.assertEqual(len(results), 1)
        self.assertIn(results[0][0], (502, 503, None), results)
        self.assertLess(took, 10.0)


if __name__ == "__main__":
    h.main()
