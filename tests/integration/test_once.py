# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits out hung and dead targets within 10-30 s bounds; next to no CPU)
"""lockwatchd --once: one scan of every target, the exposition on stdout.

Against a live redis-server with a few locks: exit 0, stdout passes
`promtool check metrics` and counts the locks.  With the target down (a free
port, nothing listening): exit 1, quickly (a connect failure, not a hang).
"""

import os
import time

import harness as h


def write_config(tc, targets, **kw):
    d = h._mkdtemp("lw-once-")
    path = os.path.join(d, "lockwatch.ini")
    with open(path, "w") as f:
        f.write(h.config_text(h.free_port(), targets, **kw))
    return path


class Once(h.TestCase):

    def test_once_live_target(self):
        rs = self.start_redis()
        c = rs.client()
        for i in range(5):
            c.set("lock:%d" % i, "tok-%d" % i, px=600000)
        c.set("lock:order:1001", "tok-order")             # no TTL
        c.hset("lock:rl:7", "8743c9c0-0795-4907-87fd-6c719a6b4586:1", "4")
        c.pexpire("lock:rl:7", 600000)
        for i in range(100):
            c.set("user:%d" % i, "u")
        cfg = write_config(self, [("main", rs.url)], scan_interval="15s",
                           leak_grace="1h", max_hold="1h")
        t0 = time.monotonic()
        p = h.run_lockwatchd(["--once", "-c", cfg], timeout=60)
        took = time.monotonic() - t0
        err = p.stderr.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, "exit %s, stderr:\n%s" % (p.returncode, err[-3000:]))
        self.assertLess(took, 30)
        rc, out = h.promtool_check(p.stdout)
        self.assertEqual(rc, 0, "promtool: %s\n--- stdout:\n%s"
                         % (out, p.stdout[:3000].decode("utf-8", "replace")))
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 7,
                         h.select(m, "lockwatch_locks"))
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main",
                                **{"class": "lock:order:*"}), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main", format="redisson"), 1)
        self.assertEqual(h.mmax(m, "lockwatch_lock_max_reentrancy", target="main"), 4)
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="main"), 1)
        self.assertEqual(h.msum(m, "lockwatch_scans_total", target="main", result="ok"), 1)
        # Only the exposition on stdout (no log lines mixed in).
        for line in p.stdout.decode("utf-8").splitlines():
            self.assertTrue(line == "" or line.startswith("# ")
                            or line.startswith("lockwatch_"), line)
        # It did not leave anything listening or running: it exited.
        # A second run gives the same lock counts (nothing was modified).
        p2 = h.run_lockwatchd(["--once", "-c", cfg], timeout=60)
        self.assertEqual(p2.returncode, 0)
        m2 = h.parse_metrics(p2.stdout)
        self.assertEqual(h.msum(m2, "lockwatch_locks", target="main"), 7)
        self.assertEqual(c.dbsize(), 107)
        self.assertEqual(c.get("lock:order:1001"), b"tok-order")

    def test_once_age_from_idletime(self):
        # SPEC "What the scan finds": a lock seen for the first time starts
        # at its OBJECT IDLETIME, so --once does not report every age as 0.
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:idle:1", "tok-idle", px=600000)
        # IDLETIME counts whole seconds (3 after 3.5 s), the agent takes one
        # off as its lower bound and times it from the reply, which the
        # view's clock may precede by a millisecond: 4.5 s leaves >= 2 s
        time.sleep(4.5)
        cfg = write_config(self, [("main", rs.url)], leak_grace="1h", max_hold="1h")
        p = h.run_lockwatchd(["--once", "-c", cfg], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        m = h.parse_metrics(p.stdout)
        age = h.msum(m, "lockwatch_lock_oldest_holder_seconds", target="main",
                     **{"class": "lock:idle:*"})
        self.assertGreaterEqual(age, 2.0, h.select(m, "lockwatch_lock_oldest_holder_seconds"))
        self.assertLess(age, 60)

    def test_once_password_file(self):
        # requirepass, and an ACL user in the URL: the password comes from
        # password_file, never from the URL, and is never printed.
        secret = "pw-Once-9f8e7d6c5b"
        rs = self.start_redis(password=secret)
        c = rs.client()
        c.execute_command("ACL", "SETUSER", "watcher", "on", ">" + secret + "-acl",
                          "~lock:*", "+@read", "+@keyspace", "+@connection", "+scan",
                          "+object", "+type", "+pttl", "+get", "+hgetall", "+info",
                          "+client", "+hscan", "+getrange", "+ping")
        c.set("lock:pw:1", "tok", px=600000)
        d = h._mkdtemp("lw-pw-")
        good = os.path.join(d, "main.pass")
        with open(good, "w") as f:
            f.write(secret + "\n")
        acl = os.path.join(d, "acl.pass")
        with open(acl, "w") as f:
            f.write(secret + "-acl\n")
        wrong = os.path.join(d, "wrong.pass")
        with open(wrong, "w") as f:
            f.write("not-" + secret + "\n")
        for name, url, pwf in (("default user", rs.url, good),
                               ("ACL user", "redis://watcher@127.0.0.1:%d/0" % rs.port, acl)):
            cfg = write_config(self, [("main", url)], target_extra={"password_file": pwf})
            p = h.run_lockwatchd(["--once", "-c", cfg], timeout=30)
            self.assertEqual(p.returncode, 0, "%s: %s" % (name, p.stderr[-2000:]))
            m = h.parse_metrics(p.stdout)
            self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 1, name)
            self.assertNotIn(secret.encode(), p.stdout + p.stderr)
        # no password, or a wrong one: a failed scan, exit 1, secret not shown
        for extra in ({}, {"password_file": wrong}):
            cfg = write_config(self, [("main", rs.url)], target_extra=extra)
            p = h.run_lockwatchd(["--once", "-c", cfg], timeout=30)
            self.assertEqual(p.returncode, 1, "%s: %s" % (extra, p.stderr[-2000:]))
            self.assertNotIn(secret.encode(), p.stdout + p.stderr)
            self.assertIn(b"main", p.stderr)

    def test_once_target_hung(self):
        # A server that accepts but never answers (SIGSTOP): the command
        # timeout ends it, exit 1, and the reason says it timed out.
        rs = self.start_redis()
        rs.client().set("lock:1", "t", px=600000)
        cfg = write_config(self, [("main", rs.url)])
        rs.pause()
        self.addCleanup(rs.resume)
        t0 = time.monotonic()
        p = h.run_lockwatchd(["--once", "-c", cfg], timeout=60)
        took = time.monotonic() - t0
        err = p.stderr.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 1, err)
        self.assertLess(took, 15, "--once against a hung target took %.1fs" % took)
        self.assertIn("main", err)
        self.assertRegex(err.lower(), r"time[d ]*out", "reason does not say timed out: %r" % err)

    def test_once_target_down(self):
        dead = h.free_port()
        cfg = write_config(self, [("main", "redis://127.0.0.1:%d/0" % dead)],
                           scan_interval="15s")
        t0 = time.monotonic()
        p = h.run_lockwatchd(["--once", "-c", cfg], timeout=30)
        took = time.monotonic() - t0
        err = p.stderr.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 1, "exit %s, stderr:\n%s" % (p.returncode, err[-3000:]))
        self.assertLess(took, 10, "--once against a dead target took %.1fs" % took)
        # It says why, naming the target.
        self.assertIn("main", err)

    def test_once_one_of_two_targets_down(self):
        rs = self.start_redis()
        rs.client().set("lock:1", "tok", px=600000)
        dead = h.free_port()
        cfg = write_config(self, [("main", rs.url),
                                  ("dead", "redis://127.0.0.1:%d/0" % dead)],
                           scan_interval="15s")
        t0 = time.monotonic()
        p = h.run_lockwatchd(["--once", "-c", cfg], timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr[-2000:])
        self.assertLess(time.monotonic() - t0, 10)
        # The live target was still scanned and exported.
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 1)
        rc, out = h.promtool_check(p.stdout)
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    h.main()
