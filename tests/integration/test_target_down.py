# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (a target down and back, waited on with 15-45 s timeouts; next to no CPU)
"""A target going down, and coming back, without an agent restart.

kill -9 of the target's redis-server: lockwatch_target_up{target="main"}
goes to 0, /readyz answers 503 naming the target, the process stays up,
/healthz and /metrics keep being served.  redis-server restarted on the same
port: target_up back to 1, scans_total{result="ok"} grows again, /readyz
200.  And a second target on a dead port never stops the first from being
scanned.
"""

import time

import harness as h


def up(ag, target="main", m=None):
    """The one lockwatch_target_up{target} value (None when not exactly one)."""
    vals = h.select(m if m is not None else ag.metrics(), "lockwatch_target_up",
                    target=target)
    return vals[0][1] if len(vals) == 1 else None


class TargetDown(h.TestCase):

    def check_process_families(self, ag):
        """The standard process_* families (agent/http/procmetrics.c): each
        one series, its RSS that of /proc/PID/status, the exposition valid."""
        text = ag.metrics_text()
        m = h.parse_metrics(text)
        one = {}
        for name in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                     "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
                     "process_start_time_seconds"):
            vals = h.select(m, name)
            self.assertEqual([l for l, v in vals], [{}], name)
            one[name] = vals[0][1]
        with open("/proc/%d/status" % ag.proc.pid) as f:
            kib = [int(l.split()[1]) for l in f if l.startswith("VmRSS:")][0]
        self.assertLess(abs(one["process_resident_memory_bytes"] - kib * 1024), kib * 1024 * 0.2,
                        (one["process_resident_memory_bytes"], kib))
        self.assertGreater(one["process_open_fds"], 0)
        self.assertGreaterEqual(one["process_max_fds"], one["process_open_fds"])
        self.assertGreaterEqual(one["process_virtual_memory_bytes"],
                                one["process_resident_memory_bytes"])
        self.assertLess(abs(one["process_start_time_seconds"] - time.time()), 600)
        rc, out = h.promtool_check(text)
        self.assertEqual(rc, 0, out)

    def test_kill_and_restart_redis(self):
        rs = self.start_redis()
        c = rs.client()
        h.load(c, (("SET", "lock:%d" % i, "t%d" % i, "PX", 600000) for i in range(20)))
        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1h", max_hold="1h")
        ag.wait_ready(timeout=20)
        ag.wait_scans(1)
        m = ag.metrics()
        self.assertEqual(up(ag, "main", m), 1, h.select(m, "lockwatch_target_up"))
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 20)
        errors_before = h.msum(m, "lockwatch_scans_total", target="main", result="error")
        self.check_process_families(ag)

        rs.kill()
        ag.wait_for(lambda: up(ag) == 0, timeout=30, interval=0.2,
                    desc='lockwatch_target_up{target="main"} == 0 after kill -9')
        self.assertTrue(ag.alive)

        def not_ready():
            st, _, body = ag.get("/readyz")
            return st == 503 and body
        body = ag.wait_for(not_ready, timeout=15, desc="/readyz 503 while the target is down")
        self.assertIn(b"main", body, body)
        self.assertTrue(ag.alive)
        self.assertEqual(ag.get("/healthz")[0], 200)
        # /metrics keeps being served (and valid) while the target is down,
        # and failed scans are counted as errors.
        text = ag.metrics_text()
        rc, out = h.promtool_check(text)
        self.assertEqual(rc, 0, out)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_scans_total", target="main",
                                   result="error") > errors_before,
                    timeout=20, desc='scans_total{result="error"} grows while down')
        # Stays down a while: several intervals with nothing to connect to.
        time.sleep(2.0)
        self.assertTrue(ag.alive)
        self.assertEqual(up(ag), 0)
        self.assertEqual(ag.get("/healthz")[0], 200)
        self.assertEqual(ag.get("/readyz")[0], 503)
        ok_down = ag.scans_ok()

        rs.restart()
        c = rs.client()
        h.load(c, (("SET", "lock:%d" % i, "t%d" % i, "PX", 600000) for i in range(7)))
        ag.wait_for(lambda: up(ag) == 1, timeout=45, interval=0.2,
                    desc="lockwatch_target_up back to 1 after redis restarts")
        ag.wait_for(lambda: ag.scans_ok() > ok_down, timeout=20,
                    desc='scans_total{result="ok"} grows again')
        ag.wait_ready(timeout=20)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 7,
                    timeout=20, desc="the 7 locks of the restarted redis counted")
        self.assertTrue(ag.alive)

    def test_dead_second_target_does_not_block_first(self):
        rs = self.start_redis()
        c = rs.client()
        h.load(c, (("SET", "lock:%d" % i, "t%d" % i, "PX", 600000) for i in range(30)))
        dead_port = h.free_port()          # nothing listens there
        ag = self.start_agent(targets=[("dead", "redis://127.0.0.1:%d/0" % dead_port),
                                       ("main", rs.url)],
                              scan_interval="500ms", leak_grace="1h", max_hold="1h")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 30,
                    timeout=20, desc="the live target's 30 locks counted")
        # The live target keeps being scanned, again and again.
        ag.wait_scans(3, target="main", timeout=20)
        m = ag.metrics()
        self.assertEqual(up(ag, "main", m), 1, h.select(m, "lockwatch_target_up"))
        self.assertEqual(up(ag, "dead", m), 0, h.select(m, "lockwatch_target_up"))
        self.assertEqual(h.msum(m, "lockwatch_scans_total", target="dead", result="ok"), 0)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="dead"), 0)
        # Not ready while one target never completed a scan; the reason
        # names that target.
        st, _, body = ag.get("/readyz")
        self.assertEqual(st, 503, body)
        self.assertIn(b"dead", body)
        # New locks on the live target show up while the dead one stays dead.
        c.set("lock:new:1", "tok", px=600000)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 31,
                    timeout=10, desc="a new lock on the live target counted")
        st, lk = ag.lock("lock:new:1", target="main")
        self.assertEqual(st, 200, lk)
        self.assertEqual(lk["target"], "main")
        self.assertEqual(ag.get("/healthz")[0], 200)

    def test_hung_target_does_not_block_others(self):
        # A redis-server that accepts connections but never answers
        # (SIGSTOP): the command timeout ends each attempt, the other target
        # keeps being scanned, HTTP keeps answering promptly, and the hung
        # target recovers on SIGCONT.
        live = self.start_redis()
        hung = self.start_redis()
        live.client().set("lock:1", "t1", px=600000)
        hung.client().set("lock:2", "t2", px=600000)
        ag = self.start_agent(targets=[("hung", hung.url), ("main", live.url)],
                              scan_interval="500ms", leak_grace="1h", max_hold="1h")
        ag.wait_ready(timeout=20)
        hung.pause()
        self.addCleanup(hung.resume)
        ag.wait_for(lambda: up(ag, "hung") == 0, timeout=40, interval=0.2,
                    desc='lockwatch_target_up{target="hung"} == 0 while SIGSTOPped')
        ag.wait_scans(3, target="main", timeout=20)
        t0 = time.monotonic()
        m = ag.metrics()
        st, _, body = ag.get("/readyz")
        self.assertLess(time.monotonic() - t0, 2.0, "HTTP slowed down by a hung target")
        self.assertEqual(up(ag, "main", m), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 1)
        self.assertEqual(st, 503, body)
        self.assertIn(b"hung", body)
        live.client().set("lock:3", "t3", px=600000)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 2,
                    timeout=10, desc="a new lock on the live target counted")
        hung.resume()
        ag.wait_for(lambda: up(ag, "hung") == 1, timeout=45, interval=0.2,
                    desc="the hung target back after SIGCONT")
        ag.wait_ready(timeout=20)
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks", target="hung"), 1)

    def test_hung_target_reason_says_timeout(self):
        # /readyz "says why": for a server that does not answer, the reason
        # is a timeout (not an errno text that reads like a transient error).
        hung = self.start_redis()
        ag = self.start_agent(hung, scan_interval="500ms")
        ag.wait_ready()
        hung.pause()
        self.addCleanup(hung.resume)
        ag.wait_for(lambda: up(ag) == 0, timeout=40, interval=0.2,
                    desc="target_up 0 while SIGSTOPped")
        st, _, body = ag.get("/readyz")
        self.assertEqual(st, 503, body)
        self.assertIn(b"main", body)
        self.assertRegex(body.decode("utf-8", "replace").lower(), r"time[d ]*out",
                         "the reason does not say it timed out: %r" % body)

    def test_sigterm_while_target_hung(self):
        # Stopping must not wait on a Redis that does not answer.
        hung = self.start_redis()
        ag = self.start_agent(hung, scan_interval="500ms")
        ag.wait_scans(1)
        hung.pause()
        self.addCleanup(hung.resume)
        time.sleep(1.0)                      # a scan is now stuck in a call
        t0 = time.monotonic()
        ag.stop(timeout=10)
        self.assertLess(time.monotonic() - t0, 10)


if __name__ == "__main__":
    h.main()
