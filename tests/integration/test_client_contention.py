#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""liblockwatch under contention, end to end with the agent.

8 threads share one client and contend for lock:contend, each holding it
20 ms, 50 times (client_contend.c).  Every acquisition must be exclusive (a
counter checked inside the critical section).  The driver prints each wait
it measured itself around lw_lock(); from those 400 numbers the test
computes the exact nearest-rank P99.  The agent, receiving the library's
UDP samples, must count exactly 400 waits for class lock:contend (the sum
of lockwatch_acquire_wait_seconds_count over outcomes), and its
lockwatch_acquire_wait_p99_seconds for that class must be within 1%
(relative) of the exact P99."""

import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from client_helpers import ITESTS, closed_udp_port  # noqa: E402

KEY = "lock:contend"
CLASS = "lock:contend"          # no id-like segment: the key is its class
THREADS, ITERS, HOLD_MS = 8, 50, 20
TOTAL = THREADS * ITERS


def nearest_rank(values, q):
    s = sorted(values)
    return s[max(1, math.ceil(q * len(s))) - 1]


class ContentionTest(harness.TestCase):

    def test_contention_waits_reach_the_agent(self):
        redis = self.start_redis()
        udp = closed_udp_port()
        agent = self.start_agent(redis, samples="127.0.0.1:%d" % udp)
        driver = os.path.join(ITESTS, "client_contend")
        p = subprocess.run([driver, "127.0.0.1:%d" % redis.port, "127.0.0.1:%d" % udp,
                            KEY, str(THREADS), str(ITERS), str(HOLD_MS)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=240, text=True)
        out = p.stdout.splitlines()
        self.assertEqual(p.returncode, 0, "driver failed:\n%s\n%s"
                         % ("\n".join(out[-5:]), p.stderr[-2000:]))
        waits = [int(l.split()[1]) for l in out if l.startswith("wait ")]
        self.assertIn("violations 0", out)
        self.assertIn("errors 0", out)
        self.assertEqual(len(waits), TOTAL)
        p99 = nearest_rank(waits, 0.99) / 1e6
        sys.stderr.write("exact P99 wait %.6f s, max %.6f s; %s\n"
                         % (p99, max(waits) / 1e6,
                            [l for l in out if l.startswith("stats")][0]))

        # the waits and the holds: the last datagram may carry only holds,
        # and the agent reads what arrives within its batch_wait together
        def counted():
            m = agent.metrics()
            n = harness.msum(m, "lockwatch_acquire_wait_seconds_count", **{"class": CLASS})
            h = harness.msum(m, "lockwatch_hold_seconds_count", **{"class": CLASS})
            return m if n >= TOTAL and h >= TOTAL else None
        m = agent.wait_for(counted, timeout=15,
                           desc="%d waits and holds counted for class %s" % (TOTAL, CLASS))
        self.assertEqual(harness.msum(m, "lockwatch_acquire_wait_seconds_count",
                                      **{"class": CLASS}), TOTAL)
        self.assertEqual(harness.msum(m, "lockwatch_acquire_wait_seconds_count",
                                      **{"class": CLASS, "outcome": "ok"}), TOTAL)
        self.assertEqual(harness.msum(m, "lockwatch_hold_seconds_count",
                                      **{"class": CLASS}), TOTAL)
        got = harness.mmax(m, "lockwatch_acquire_wait_p99_seconds", **{"class": CLASS})
        self.assertIsNotNone(got, "no lockwatch_acquire_wait_p99_seconds{class=%s}" % CLASS)
        self.assertLessEqual(abs(got - p99) / p99, 0.01,
                             "agent P99 %.6f vs exact %.6f" % (got, p99))
        self.assertEqual(harness.msum(m, "lockwatch_samples_invalid_total"), 0)


if __name__ == "__main__":
    harness.main()
