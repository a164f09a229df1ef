# SPDX-License-Identifier: BSD-3-Clause
"""Many targets, each with its own interval, rate cap and credentials,
scanned concurrently: a slow target - one whose server is SIGSTOPped (it
accepts connections and never answers), and one throttled by a tiny
max_keys_per_second over many keys - never delays the scans of another."""

import os
import time

import harness as h


class ManyTargets(h.TestCase):

    def test_slow_targets_never_delay_another(self):
        fast = self.start_redis()
        stopped = self.start_redis()
        throttled = self.start_redis(password="thr0ttled")
        fast.client().set("lock:fast:1", "tok", px=600000)
        h.load(throttled.client(), (("SET", "lock:t:%d" % i, "tok", "PX", "600000")
                                    for i in range(20000)))
        d = h._mkdtemp("lw-many-")
        pw = os.path.join(d, "throttled.pass")
        with open(pw, "w") as f:
            f.write("thr0ttled\n")
        os.chmod(pw, 0o600)
        port = h.free_port()
        cfg = os.path.join(d, "lockwatch.ini")
        with open(cfg, "w") as f:
            f.write("""[agent]
listen = 127.0.0.1:%d
samples = off

[target fast]
url = %s
patterns = lock:*
scan_interval = 500ms

[target stopped]
url = %s
patterns = lock:*
scan_interval = 1s
command_timeout = 3s

[target throttled]
url = %s
password_file = %s
patterns = lock:*
scan_interval = 1s
scan_count = 100
max_keys_per_second = 2000
""" % (port, fast.url, stopped.url, throttled.url, pw))
        ag = h.Agent(targets=[], start=False)
        ag.port = port
        ag.config_path = cfg
        self._agents.append(ag)
        self.addCleanup(self._stop_agent, ag)
        ag.start()
        ag.wait_scans(1, target="fast")
        stopped.pause()
        self.addCleanup(stopped.resume)

        # while the paused target sits in a 3 s command timeout and the
        # throttled one crawls through 20,000 keys (10 s a scan), the fast
        # one keeps its 500 ms schedule
        t0 = time.monotonic()
        base = ag.scans_ok("fast")
        time.sleep(4.0)
        m = ag.metrics()
        fast_scans = h.msum(m, "lockwatch_scans_total", target="fast", result="ok") - base
        elapsed = time.monotonic() - t0
        self.assertGreaterEqual(fast_scans, 5, "fast target: %d scans in %.1fs"
                                % (fast_scans, elapsed))
        self.assertEqual(h.msum(m, "lockwatch_scans_total", target="throttled", result="ok"), 0,
                         "the throttled scan cannot be done yet (max_keys_per_second)")
        last = h.msum(m, "lockwatch_last_scan_timestamp_seconds", target="fast")
        self.assertLess(time.time() - last, 1.5)

        # the paused target is reported down with its own reason
        def down():
            st, _, body = ag.get("/readyz")
            return body if st == 503 and b"target stopped" in body else None
        body = ag.wait_for(down, 15, desc="readyz names the paused target")
        self.assertIn(b"timed out", body)
        self.assertNotIn(b"target fast", body)

        # and the throttled one finishes at its own pace, all keys counted
        def throttled_done():
            m = ag.metrics()
            return m if h.msum(m, "lockwatch_locks", target="throttled") == 20000 else None
        m = ag.wait_for(throttled_done, 30, desc="throttled scan done")
        self.assertGreaterEqual(h.msum(m, "lockwatch_scan_duration_seconds",
                                       target="throttled"), 7.0)

    def test_reload_to_another_server(self):
        """A reload that points a target at another server (or mode, user,
        password) reconnects; it never goes on scanning the old one."""
        a = self.start_redis()
        b = self.start_redis(password="b-pass")
        a.client().set("lock:on:a", "tok")
        b.client().set("lock:on:b", "tok")
        ag = self.start_agent(a, scan_interval="500ms")
        ag.wait_for(lambda: ag.lock("lock:on:a")[0] == 200, 10, desc="lock:on:a")
        pw = os.path.join(ag.dir, "b.pass")
        with open(pw, "w") as f:
            f.write("b-pass\n")
        os.chmod(pw, 0o600)
        ag.targets = [("main", b.url)]
        ag.write_config(ag.render_config(target_extra={"password_file": pw}))
        ag.reload()
        ag.wait_for(lambda: ag.lock("lock:on:b")[0] == 200 and
                    ag.lock("lock:on:a")[0] == 404, 10, desc="scanning b, not a")


if __name__ == "__main__":
    h.main()
