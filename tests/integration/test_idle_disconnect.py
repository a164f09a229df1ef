# SPDX-License-Identifier: BSD-3-Clause
# run-all: split (cases of 10-20 s, each with its own server and agent)
# run-all: idle (mostly sleeps through scan intervals; its bounds leave room for a neighbour)
"""A kept connection closed while idle is no target down.

The agent keeps its Redis connections between scans.  When the server's
idle timeout (CONFIG SET timeout 1, with scan_interval 3s), a proxy's, or
an operator (CLIENT KILL USER lockwatch) closes one, the next use finds it
closed at once (EOF); the agent opens it again and sends the command once
more: no scan fails, LockTargetDown never fires, /readyz stays 200, the log
says nothing worse than info, and lockwatch_reconnects_total{target,reason}
counts each.  In follow mode the same holds for the data connection (the
freshness check every scan_interval is its first use since the last: no
full scan for it, the subscription kept) and a killed subscriber is
resubscribed after a full scan, which does not fail either.  A server
really stopped is still reported down as fast as before: within
scan_interval + command_timeout (README "Never silently blind"), and is
no reconnect: the counter moves only once the new connection answered
(standalone, following, and Sentinel's ROLE on the kept connection).
"""

import os
import time

import harness as h
import topo

NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet"]
PASSWORD = "idle-s3cret"
INTERVAL_S = 2.0
# the idle-timeout cases: Redis closes a client idle more than `timeout`
# whole seconds (its clock and the client's last interaction are kept in
# seconds, checked at its cron), so a connection idle 2 s against
# timeout 1 may be checked just before its second turns and used again
# first, pass after pass in the same phase (CI's sanitized pass: one
# reconnect in 20 s); idle 3 s is closed a second before every use
IDLE_INTERVAL_S = 3.0
COMMAND_TIMEOUT_S = 1.0
WATCH_S = 10.0


def scan_calls(client):
    st = client.info("commandstats").get("cmdstat_scan")
    return int(st["calls"]) if st else 0


class IdleDisconnect(h.TestCase):

    def setup_target(self, follow, interval=INTERVAL_S):
        rs = self.start_redis(args=NOTIFY if follow else ())
        c = rs.client()
        c.execute_command("ACL", "SETUSER", "lockwatch", "on", ">" + PASSWORD, "~*", "&*",
                          "+@all")
        h.load(c, (("SET", "lock:%d" % i, "t%d" % i, "PX", 600000) for i in range(5)))
        pw = h.password_file(PASSWORD)
        os.chmod(pw, 0o600)
        extra = {"password_file": pw,
                 "command_timeout": "%dms" % (COMMAND_TIMEOUT_S * 1000),
                 "incremental": "on" if follow else "off"}
        if follow:
            extra["reconcile_interval"] = "1h"
        ag = self.start_agent(targets=[("main", "redis://lockwatch@127.0.0.1:%d/0" % rs.port)],
                              scan_interval="%ds" % interval, leak_grace="1h",
                              max_hold="1h", target_extra=extra)
        ag.wait_ready(timeout=20)
        if follow:
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active",
                                       target="main") == 1, 20, desc="following")
        return rs, c, ag

    def reconnects(self, ag):
        return h.msum(ag.metrics(), "lockwatch_reconnects_total", target="main")

    def errors(self, ag):
        return h.msum(ag.metrics(), "lockwatch_scans_total", target="main", result="error")

    def log(self, ag):
        with open(ag.logfile, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def watch(self, ag, seconds, each=None):
        """For seconds: /readyz 200 and LockTargetDown not firing at every
        look (every 0.2 s); each() (when given) between looks."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if each is not None:
                each()
            st = ag.get("/readyz")[0]
            self.assertEqual(st, 200, "/readyz %s" % st)
            self.assertEqual(h.msum(ag.metrics(), "lockwatch_alerts_firing",
                                    alertname="LockTargetDown"), 0)
            time.sleep(0.2)

    def assert_quiet(self, ag, errors_before, log_from):
        """No failed scan, no LockTargetDown in the log, no warning about
        the target since log_from (bytes of the log)."""
        self.assertEqual(self.errors(ag), errors_before, "a scan failed")
        text = self.log(ag)[log_from:]
        self.assertNotIn("scan failed", text)
        self.assertNotIn("LockTargetDown", text)
        for line in text.splitlines():
            self.assertNotRegex(line, r"(?i)warn|error|crit", line)

    def assert_reconnected(self, ag, c, base, errors, log_from, key):
        """lockwatch_reconnects_total grew by 3 or more, and the view still
        follows the server (a new lock, key, is seen), all of it quietly."""
        ag.wait_for(lambda: self.reconnects(ag) >= base + 3, 10,
                    desc="lockwatch_reconnects_total grows")
        c.set(key, "t", px=600000)
        ag.wait_for(lambda: ag.lock(key)[0] == 200, 10, desc="%s seen" % key)
        self.assert_quiet(ag, errors, log_from)

    def mark(self, ag):
        return len(self.log(ag))

    # (a) the server's idle timeout -------------------------------------------------

    def idle_timeout(self, follow):
        rs, c, ag = self.setup_target(follow, IDLE_INTERVAL_S)
        errors, log_from, base = self.errors(ag), self.mark(ag), self.reconnects(ag)
        scans = scan_calls(c)
        c.config_set("timeout", 1)
        if follow:
            # the freshness check sees the CONFIG SET: one full scan for it
            # (then the idle connection is the only thing left to see)
            self.watch(ag, IDLE_INTERVAL_S * 2)
            ag.wait_for(lambda: scan_calls(c) > scans, 10, desc="the full scan after CONFIG SET")
            time.sleep(0.5)
            scans = scan_calls(c)
        self.watch(ag, WATCH_S)
        self.assert_quiet(ag, errors, log_from)
        if follow:
            # the data connection opened again in place: no full scan, the
            # subscription kept (Redis never times out a subscriber)
            self.assertEqual(scan_calls(c), scans, "a full scan for an idle connection")
            self.assertEqual(h.msum(ag.metrics(), "lockwatch_follow_active", target="main"), 1)
        # about one a scan_interval: the connection idles 3 s, the server
        # closes it after 1 s
        self.assert_reconnected(ag, c, base, errors, log_from, "lock:new")
        m = ag.metrics()
        self.assertGreaterEqual(h.msum(m, "lockwatch_reconnects_total", target="main",
                                       reason="eof"), 3)
        reasons = {lbl["reason"] for lbl, _ in
                   h.select(m, "lockwatch_reconnects_total", target="main")}
        self.assertEqual(reasons, {"eof", "reset", "broken_pipe"})
        self.assertIn("reconnected", self.log(ag)[log_from:])

    def test_idle_timeout_scanning(self):
        self.idle_timeout(follow=False)

    def test_idle_timeout_following(self):
        self.idle_timeout(follow=True)

    # (b) CLIENT KILL of the agent's connections -----------------------------------

    def client_kill(self, follow):
        rs, c, ag = self.setup_target(follow)
        errors, log_from, base = self.errors(ag), self.mark(ag), self.reconnects(ag)
        for i in range(4):
            # every connection of the agent's user: the data connection and,
            # following, the subscriber
            killed = c.execute_command("CLIENT", "KILL", "USER", "lockwatch")
            self.assertGreaterEqual(killed, 2 if follow else 1)
            self.watch(ag, INTERVAL_S + 0.5)
            if follow:
                # a lost subscriber: a full scan at once, then following again
                ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active",
                                           target="main") == 1, 10,
                            desc="following again after kill %d" % i)
        self.assert_quiet(ag, errors, log_from)
        self.assert_reconnected(ag, c, base, errors, log_from, "lock:after")

    def test_client_kill_scanning(self):
        self.client_kill(follow=False)

    def test_client_kill_following(self):
        self.client_kill(follow=True)

    # (c) a server really stopped is still down, as fast -------------------------------

    def kill_after_reconnect(self, rs, c, ag):
        """With the server's timeout under scan_interval, kill it just
        after a reconnect was counted (one a scan_interval: the next use is
        2 s away, so no honest one is under way at the kill); then target
        down, and lockwatch_reconnects_total not moved: EOF on the kept
        connection, then the connect refused, is no reconnect (counted and
        logged only once the new connection answered).  The seconds from
        the kill to target_up 0."""
        c.config_set("timeout", 1)
        time.sleep(INTERVAL_S + 0.5)      # the agent's connection idles past it
        before = self.reconnects(ag)
        ag.wait_for(lambda: self.reconnects(ag) > before, 20, interval=0.05,
                    desc="a reconnect before the kill")
        base = self.reconnects(ag)
        rs.kill()
        t0 = time.monotonic()
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_target_up", target="main") == 0,
                    15, interval=0.05, desc="target_up 0 after the server stopped")
        took = time.monotonic() - t0
        time.sleep(INTERVAL_S + 0.5)
        self.assertEqual(self.reconnects(ag), base,
                         "lockwatch_reconnects_total moved for a server that is gone")
        return took

    def stopped(self, follow):
        rs, c, ag = self.setup_target(follow)
        took = self.kill_after_reconnect(rs, c, ag)
        # README: a view is vouched for to within scan_interval +
        # command_timeout (and a refused connect takes no time)
        self.assertLess(took, INTERVAL_S + COMMAND_TIMEOUT_S + 0.5, "down after %.1fs" % took)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_alerts_firing",
                                   alertname="LockTargetDown") == 1, 10,
                    desc="LockTargetDown firing")
        self.assertEqual(ag.get("/readyz")[0], 503)
        self.assertRegex(self.log(ag), r"scan failed: .*Connection refused")

    def test_stopped_server_scanning(self):
        self.stopped(follow=False)

    def test_stopped_server_following(self):
        self.stopped(follow=True)

    def test_stopped_server_sentinel(self):
        """mode = sentinel: each pass's ROLE on the kept connection is its
        first use, and the path that opens it again (with the primary the
        sentinels name, here still the dead one: no replica) counts the
        same way."""
        rs = self.start_redis()
        sentinel = topo.start_sentinels(self, rs.port, n=1, replicas=0)[0]
        ag = self.start_agent(targets=[("main", "redis://127.0.0.1:1/0")],
                              scan_interval="%ds" % INTERVAL_S, leak_grace="1h",
                              max_hold="1h",
                              target_extra={"mode": "sentinel", "master_name": "mymaster",
                                            "sentinels": "127.0.0.1:%d" % sentinel.port,
                                            "command_timeout": "%dms" % (COMMAND_TIMEOUT_S * 1000),
                                            "incremental": "off"})
        ag.wait_ready(timeout=20)
        took = self.kill_after_reconnect(rs, rs.client(), ag)
        self.assertLess(took, INTERVAL_S + COMMAND_TIMEOUT_S + 0.5, "down after %.1fs" % took)


if __name__ == "__main__":
    h.main()
