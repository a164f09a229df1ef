# SPDX-License-Identifier: BSD-3-Clause
"""Samples reach every replica (issue 27): liblockwatch with
LOCKWATCH_SAMPLES=<replica a>,<replica b> sends each wait and hold sample to
both agents, so the two replicas count the same samples and compute the same
P99 per class.  Waits of several lengths come from real contention: one client
holds a lock while another waits for it with a timeout."""

import sys

import harness as h

sys.path.insert(0, h.os.path.dirname(h.os.path.abspath(__file__)))
from client_helpers import Shell  # noqa: E402

CLASS = "lock:p:*"
ROUNDS = 30


class HASamples(h.TestCase):

    def test_two_replicas_same_p99(self):
        rs = self.start_redis()
        ags = [self.start_agent(rs, samples="127.0.0.1:%d" % h.free_port(),
                                agent_extra={"replica": name}) for name in ("a", "b")]
        dests = ",".join(ag.cfg["samples"] for ag in ags)
        sh = Shell(self, rs.port, env={"LOCKWATCH_SAMPLES": dests})
        sh.ok("connect holder")
        sh.ok("connect waiter")
        calls = 0
        for i in range(ROUNDS):
            key = "lock:p:%d" % i
            sh.ok("lock holder h %s 5000 1000 -" % key)
            # the waiter gives up after 10..100 ms: waits of many lengths
            ans = sh.cmd("lock waiter w %s 5000 %d -" % (key, 10 + (i % 10) * 10))
            self.assertTrue(ans.startswith("TIMEOUT"), ans)
            sh.ok("unlock h")
            sh.ok("lock waiter w %s 5000 1000 -" % key)
            sh.ok("unlock w")
            calls += 3
        sh.ok("free holder")
        sh.ok("free waiter")

        def counts(ag):
            return h.msum(ag.metrics(), "lockwatch_acquire_wait_seconds_count",
                          **{"class": CLASS})
        for ag in ags:
            ag.wait_for(lambda: counts(ag) == calls, timeout=20,
                        desc="%d wait samples" % calls)
        got = []
        for ag in ags:
            m = ag.metrics()
            got.append(tuple(h.msum(m, name, **{"class": CLASS}) for name in (
                "lockwatch_acquire_wait_seconds_count", "lockwatch_acquire_wait_seconds_sum",
                "lockwatch_acquire_wait_p99_seconds", "lockwatch_acquire_wait_window_samples")))
        self.assertEqual(got[0], got[1])
        self.assertGreater(got[0][2], 0.009)     # the P99 is one of the timed-out waits
        print("samples: both replicas: count %d, P99 %.3f s" % (got[0][0], got[0][2]))


if __name__ == "__main__":
    h.main()
