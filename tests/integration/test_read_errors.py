# SPDX-License-Identifier: BSD-3-Clause
"""A refused read never hides a leak (issue 12, point 3).

A real redis-server with an ACL user for the scanner:
  - the user lacks +getrange and +hscan from the start (--once): the scan
    fails, exit 1, target_up 0, the refusal is named on stderr and counted
    in lockwatch_scan_read_errors_total{kind="NOPERM"}, once per refused
    read (21 leaked locks: 14 strings, 7 Redisson hashes);
  - the running agent has reported 21 leaks when the user loses +getrange
    and +hscan: the target goes down (target_up 0, /readyz 503 naming
    GETRANGE/HSCAN and NOPERM, the log, LockTargetDown firing) while the 21
    LockLeaked alerts keep firing; given the commands back, it is up again
    with the 21 leaks;
  - WRONGTYPE still means "changed type": keys flipped between string and
    list (atomically, so TYPE never says none) while the agent scans are
    counted as vanished, and no scan fails and no read error is counted.
"""

import threading
import time

import harness as h

FULL_ACL = h.SCANNER_ACL
NARROW_ACL = [a for a in FULL_ACL if a not in ("+getrange", "+hscan")]
UUID = "8743c9c0-0795-4907-87fd-6c719a6b4586"
STRINGS, HASHES = 14, 7
LEAKS = STRINGS + HASHES


def leak(c):
    for i in range(STRINGS):
        c.set("lock:leak:%d" % i, "tok-%d" % i)
    for i in range(HASHES):
        c.hset("lock:rl:%d" % i, UUID + ":%d" % (i + 1), "1")


class ReadErrors(h.TestCase):

    def scanner_user(self, rs, acl):
        c = rs.client()
        c.execute_command("ACL", "SETUSER", "lockwatch", "reset", "on", ">s3cret-scan", *acl)
        return c

    def test_refused_reads_fail_the_scan_once(self):
        rs = self.start_redis()
        leak(self.scanner_user(rs, NARROW_ACL))
        p = h.once_as_user(rs, "lockwatch", "s3cret-scan", leak_grace="1s", max_hold="1h")
        err = p.stderr.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("refused: NOPERM", err)
        self.assertIn("%d reads refused" % LEAKS, err)
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="main"), 0)
        self.assertEqual(h.msum(m, "lockwatch_scans_total", target="main", result="error"), 1)
        # one refused read a key: GETRANGE of each string, HSCAN of each hash
        self.assertEqual(h.msum(m, "lockwatch_scan_read_errors_total", target="main",
                                kind="NOPERM"), LEAKS, h.select(m, "lockwatch_scan_read_errors_total"))
        self.assertEqual(h.msum(m, "lockwatch_scan_vanished_keys_total", target="main"), 0)
        rc, out = h.promtool_check(p.stdout.decode())
        self.assertEqual(rc, 0, out)

    def test_leaks_stay_visible_when_reads_are_refused(self):
        rs = self.start_redis()
        c = self.scanner_user(rs, FULL_ACL)
        leak(c)
        ag = self.start_agent(targets=[("main", "redis://lockwatch@127.0.0.1:%d/0" % rs.port)],
                              target_extra={"password_file": h.password_file("s3cret-scan")},
                              scan_interval="300ms",
                              leak_grace="1s", max_hold="1h")

        def alerts(name):
            st, body = ag.get_json("/api/v1/alerts")
            return [a for a in body["alerts"] if a["labels"]["alertname"] == name]
        ag.wait_for(lambda: len(alerts("LockLeaked")) == LEAKS, timeout=20,
                    desc="%d LockLeaked alerts" % LEAKS)
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks_leaked", target="main"), LEAKS)

        # the scanner loses GETRANGE and HSCAN (on its open connection)
        c.execute_command("ACL", "SETUSER", "lockwatch", "-getrange", "-hscan")

        def not_ready():
            st, _, body = ag.get("/readyz")
            return st == 503 and body
        body = ag.wait_for(not_ready, timeout=15, desc="/readyz 503 once reads are refused")
        body = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        self.assertIn("target main", body)
        self.assertIn("NOPERM", body)
        self.assertRegex(body, r"(GETRANGE|HSCAN) on 127\.0\.0\.1:%d refused" % rs.port)
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="main"), 0)
        self.assertGreaterEqual(h.msum(m, "lockwatch_scan_read_errors_total", target="main",
                                       kind="NOPERM"), LEAKS)
        self.assertIn("refused: NOPERM", ag.log_tail(50))
        ag.wait_for(lambda: len(alerts("LockTargetDown")) == 1, timeout=15,
                    desc="LockTargetDown firing")
        # no leak went away because its read was refused
        time.sleep(1.0)
        self.assertEqual(len(alerts("LockLeaked")), LEAKS)
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_scan_vanished_keys_total",
                                target="main"), 0)

        # the commands back: up again, the same 21 leaks
        c.execute_command("ACL", "SETUSER", "lockwatch", "+getrange", "+hscan")
        ag.wait_ready()
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="main"), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="main"), LEAKS)
        ag.wait_for(lambda: not alerts("LockTargetDown"), timeout=15,
                    desc="LockTargetDown resolved")
        self.assertEqual(len(alerts("LockLeaked")), LEAKS)

    def test_wrongtype_is_a_changed_key_not_a_read_error(self):
        rs = self.start_redis()
        c = rs.client()
        keys = ["lock:flip:%d" % i for i in range(200)]
        for k in keys:
            c.set(k, "tok")
        stop = threading.Event()

        def flip():
            fc = rs.client()
            n = 0
            while not stop.is_set():
                pipe = fc.pipeline(transaction=True)
                for k in keys:
                    pipe.delete(k)
                    if n % 2:
                        pipe.set(k, "tok")
                    else:
                        pipe.rpush(k, "x")
                pipe.execute()
                n += 1
        t = threading.Thread(target=flip)
        t.start()
        try:
            ag = self.start_agent(rs, scan_interval="100ms", leak_grace="1h", max_hold="1h",
                                  target_extra={"scan_count": 10})
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_scan_vanished_keys_total",
                                       target="main") > 0,
                        timeout=60, interval=0.2, desc="a key read as WRONGTYPE")
        finally:
            stop.set()
            t.join(timeout=10)
        ag.wait_scans(1)
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_scans_total", target="main", result="error"), 0,
                         ag.log_tail(10))
        self.assertEqual(h.select(m, "lockwatch_scan_read_errors_total"), [])
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="main"), 1)
        self.assertEqual(ag.get("/readyz")[0], 200)


if __name__ == "__main__":
    h.main()
