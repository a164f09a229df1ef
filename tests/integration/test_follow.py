# SPDX-License-Identifier: BSD-3-Clause
# run-all: split (cases of 1-10 s, each with its own servers)
# run-all: idle (waits on scans and notifications; its bounds have room), but for the flood
#   of 150,000 keys, which is heavy
"""Follow mode (incremental =): keyspace notifications keep the lock view
current between full scans.

With notify-keyspace-events covering Kg$lshzxet the agent follows after its
first scan: a new lock appears, a deleted one disappears, PERSIST and
PEXPIRE change the TTL state, a lock that lost its TTL is leaked
leak_grace after that, all with no SCAN between reconciles (INFO
commandstats).  auto falls back to scanning with one log line naming the
setting when notifications are off, and follows once the operator sets
what that line asks for: seen by the check every RECHECK_S while it
scans, and at once at a reload (SIGHUP), changed config or not; an ACL that denies CONFIG GET still
follows (on trust) when notifications flow, and falls back when a
reconcile finds what no notification said; a flood past the pending cap
is counted and ends in a full scan that finds every key; a lost
subscriber connection is followed by a full scan; Sentinel: after a
failover the agent follows the new primary.  Every wait is for an event,
bounded by a deadline.
"""

import base64
import os
import re
import time

import harness as h
import topo

NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet"]
# collectors/follow/follow_impl.h FOLLOW_RECHECK_MS: while a target scans
# because notify-keyspace-events lacks a class, the setting is read again
# at a full scan at most this often (README "Follow mode")
RECHECK_S = 10
# README "Follow mode": what follow mode adds to the scanner's ACL (Redis
# compares PSUBSCRIBE patterns with the user's channel patterns literally)
FOLLOW_ACL = ["+psubscribe", "+info", "&__keyspace@0__:lock:*",
              "&__keyspace@0__:lockwatch:client:*"]


def scan_calls(client):
    st = client.info("commandstats").get("cmdstat_scan")
    return int(st["calls"]) if st else 0


class Follow(h.TestCase):

    def following(self, ag, target="main"):
        return h.msum(ag.metrics(), "lockwatch_follow_active", target=target) == 1

    def wait_following(self, ag, target="main", timeout=20):
        ag.wait_for(lambda: self.following(ag, target), timeout,
                    desc="lockwatch_follow_active{target=%s} == 1" % target)

    def state(self, ag, key):
        st, lk = ag.lock(key)
        return lk if st == 200 else None

    def test_follow_lifecycle(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        c.set("lock:a", "tok-a", px=600000)
        c.set("unrelated", "x")
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="2s", max_hold="1h",
                              target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        ag.wait_for(lambda: self.state(ag, "lock:a"), 10, desc="lock:a seen")
        scans = scan_calls(c)
        scans_ok = ag.scans_ok()

        # a new lock appears
        c.set("lock:b", "tok-b", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:b"), 5, desc="new lock:b appears")
        # a deleted lock disappears
        c.delete("lock:a")
        ag.wait_for(lambda: ag.lock("lock:a")[0] == 404, 5, desc="deleted lock:a gone")

        # PERSIST: no TTL now, leaked leak_grace after it
        c.persist("lock:b")
        t_lost = time.monotonic()
        ag.wait_for(lambda: self.state(ag, "lock:b")["pttl_ms"] == -1, 5,
                    desc="PTTL -1 after PERSIST")
        if time.monotonic() - t_lost < 1.4:
            self.assertNotIn("leaked", self.state(ag, "lock:b")["states"])
        ag.wait_for(lambda: "leaked" in self.state(ag, "lock:b")["states"], 8,
                    desc="lock:b leaked after leak_grace")
        self.assertGreaterEqual(time.monotonic() - t_lost, 2.0 - 0.3, "leaked before grace")
        # the alert rules judge snapshots made from events as they judge scans
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_alerts_firing",
                                   alertname="LockLeaked") >= 1, 5,
                    desc="LockLeaked firing from events")
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks_leaked", target="main"), 1)

        # PEXPIRE: a TTL again, no longer leaked
        c.pexpire("lock:b", 600000)
        ag.wait_for(lambda: "leaked" not in self.state(ag, "lock:b")["states"], 5,
                    desc="not leaked once it has a TTL")
        self.assertGreater(self.state(ag, "lock:b")["pttl_ms"], 0)

        # a hash lock (Redisson's shape), written field by field
        c.hset("lock:r", "0c5d2ba9-2f3a-4f6e-9a61-1b2c3d4e5f60:1", 1)
        c.pexpire("lock:r", 600000)
        ag.wait_for(lambda: (self.state(ag, "lock:r") or {}).get("format") == "redisson", 5,
                    desc="hash lock read as redisson")
        c.hincrby("lock:r", "0c5d2ba9-2f3a-4f6e-9a61-1b2c3d4e5f60:1", 1)
        ag.wait_for(lambda: self.state(ag, "lock:r")["max_count"] == 2, 5,
                    desc="HINCRBY seen")
        c.rename("lock:r", "lock:r2")
        ag.wait_for(lambda: ag.lock("lock:r")[0] == 404 and self.state(ag, "lock:r2"), 5,
                    desc="RENAME followed")
        c.set("lock:short", "t", px=300)
        ag.wait_for(lambda: self.state(ag, "lock:short"), 5, desc="short lock seen")
        ag.wait_for(lambda: ag.lock("lock:short")[0] == 404, 5, desc="expired lock gone")

        # a key outside the patterns changes nothing
        c.set("unrelated", "y")
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 2)
        self.assertGreater(h.msum(m, "lockwatch_follow_events_total", target="main"), 5)
        self.assertLess(h.msum(m, "lockwatch_follow_lag_seconds", target="main"), 1.0)

        # all of that without a scan, although scan_interval is 1s
        self.assertEqual(scan_calls(c), scans, "SCAN ran between reconciles")
        self.assertEqual(ag.scans_ok(), scans_ok)
        self.assertEqual(h.msum(m, "lockwatch_reconcile_fixed_keys_total", target="main"), 0)

        # the subscriber connection dropped: a full scan at once, then following again
        c.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        ag.wait_for(lambda: ag.scans_ok() > scans_ok, 10, desc="a full scan after the loss")
        self.wait_following(ag)
        self.assertGreater(scan_calls(c), scans)
        c.set("lock:c", "tok-c", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:c"), 5, desc="lock:c after resubscribing")

    def test_helper_keys_and_waiters_hold_in_snapshots_from_events(self):
        # A Redisson fair lock written after the first scan is seen through
        # events only: its format (given by its queue, outside the patterns),
        # helper keys and waiters are what a full scan would say, and an
        # in-pattern helper key (lock-signal:*, python-redis-lock's) stays
        # counted to its lock, never a lock of its own.
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s", max_hold="1h",
                              patterns="lock:*,lock-signal:*",
                              target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        scans = scan_calls(c)
        uuid = "620c50b1-0f73-40ef-8370-68d6a63cc579"
        c.rpush("redisson_lock_queue:{lock:fair}", uuid + ":23", uuid + ":28")
        c.zadd("redisson_lock_timeout:{lock:fair}",
               {uuid + ":23": 1796177259689, uuid + ":28": 1796177559689})
        c.hset("lock:fair", "d63a46e4-f396-4c0e-aa4a-57b4da6fbf97:23", "1")
        c.pexpire("lock:fair", 600000)
        c.set("lock:prl", base64.b64encode(os.urandom(18)), px=600000)
        c.rpush("lock-signal:prl", "1")

        def fair():
            lk = self.state(ag, "lock:fair")
            return lk if lk and lk["format"] == "redisson-fair" else None
        ag.wait_for(fair, 10, desc="lock:fair seen as redisson-fair from events")
        ag.wait_for(lambda: (self.state(ag, "lock:prl") or {}).get("helper_keys") == 1, 10,
                    desc="lock-signal:prl counted to lock:prl")
        # another event: the next snapshot keeps all of it
        c.set("lock:other", "tok", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:other"), 5, desc="lock:other appears")
        self.assertEqual(scan_calls(c), scans, "no SCAN between reconciles")
        # what a full scan of the same keys says
        ref = self.start_agent(rs, scan_interval="1s", max_hold="1h",
                               patterns="lock:*,lock-signal:*",
                               target_extra={"incremental": "off"})
        ref.wait_for(lambda: self.state(ref, "lock:other"), 10, desc="scan-mode agent scanned")
        fields = ("format", "helper_keys", "waiters", "waiters_source", "holders_total")
        for key in ("lock:fair", "lock:prl"):
            got, want = self.state(ag, key), self.state(ref, key)
            self.assertEqual({f: got.get(f) for f in fields}, {f: want.get(f) for f in fields},
                             key)
        self.assertEqual(self.state(ag, "lock:fair")["waiters"], 2)
        for a in (ag, ref):
            self.assertEqual(a.lock("lock-signal:prl")[0], 404, "a helper key is no lock")

    def test_sets_and_streams_under_a_pattern_are_what_a_scan_says(self):
        # No lock client writes a set or a stream, but a scan lists any key
        # under a pattern: a set (SADD), a stream (XADD) and a lock
        # overwritten by SUNIONSTORE are announced only by the `s` and `t`
        # classes, so the followed view says of them what a scan says,
        # without a scan
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        c.set("lock:over", "tok", px=600000)
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        ag.wait_for(lambda: self.state(ag, "lock:over"), 10, desc="lock:over seen")
        scans = ag.scans_ok()
        c.sadd("lock:set", "m")
        c.xadd("lock:stream", {"f": "v"})
        c.sadd("src", "a")
        c.sunionstore("lock:over", ["src"])
        ref = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                               target_extra={"incremental": "off"})
        ref.wait_for(lambda: self.state(ref, "lock:stream"), 10, desc="scan-mode agent scanned")
        fields = ("format", "pttl_ms", "states")
        for key in ("lock:set", "lock:stream", "lock:over"):
            want = self.state(ref, key)
            self.assertIsNotNone(want, key)
            want = {f: want.get(f) for f in fields}
            ag.wait_for(lambda: {f: (self.state(ag, key) or {}).get(f) for f in fields} == want,
                        5, desc="%s followed as scanned: %r" % (key, want))
        self.assertEqual(ag.scans_ok(), scans, "no full scan between reconciles")

    def test_a_leak_found_by_the_first_scan_is_judged_without_events(self):
        rs = self.start_redis(args=NOTIFY)
        rs.client().set("lock:nottl", "t")
        t0 = time.monotonic()
        ag = self.start_agent(rs, scan_interval="1h", leak_grace="2s",
                              target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        ag.wait_for(lambda: "leaked" in (self.state(ag, "lock:nottl") or {}).get("states", []),
                    8, desc="leaked leak_grace after the first scan, with no event")
        self.assertGreaterEqual(time.monotonic() - t0, 2.0 - 0.3)
        self.assertEqual(ag.scans_ok(), 1)

    def test_drift_is_counted_and_named(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s",
                              target_extra={"reconcile_interval": "1s"})
        self.wait_following(ag)
        # the operator turns notifications off: changes go unannounced
        c.config_set("notify-keyspace-events", "")
        n = [0]

        def drifted():
            n[0] += 1
            c.set("lock:quiet:%d" % n[0], "t", px=600000)
            st, _, body = ag.get("/readyz")
            return st == 200 and b"follow drift" in body
        ag.wait_for(drifted, 20, interval=0.3, desc="drift named in /readyz")
        self.assertGreaterEqual(h.msum(ag.metrics(), "lockwatch_reconcile_fixed_keys_total",
                                       target="main"), 2)
        self.assertIn("follow drift", ag.log_tail(50))
        # the reconciles keep the view whole meanwhile
        ag.wait_for(lambda: self.state(ag, "lock:quiet:%d" % n[0]), 5, desc="quiet lock found")
        # notifications back: the next clean reconcile clears it
        c.config_set("notify-keyspace-events", "Kg$lshzxet")
        ag.wait_for(lambda: b"follow drift" not in ag.get("/readyz")[2], 10,
                    desc="drift cleared")

    def test_drift_brings_the_next_reconcile_forward(self):
        # a change Redis makes without a notification even with every
        # class set: PFCOUNT writes its cached cardinality into the HLL's
        # header (the value changes, no event).  Once a reconcile found it,
        # the next comes at scan_interval (1 s), not reconcile_interval (6 s)
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s",
                              target_extra={"reconcile_interval": "6s"})
        self.wait_following(ag)
        c.pfadd("lock:hll", "a", "b", "c")
        ag.wait_for(lambda: self.state(ag, "lock:hll"), 5, desc="lock:hll from its event")
        c.pfcount("lock:hll")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_reconcile_fixed_keys_total",
                                   target="main") >= 1, 15, desc="the reconcile finds the drift")
        scans = ag.scans_ok()
        ag.wait_for(lambda: ag.scans_ok() > scans, 4, desc="the next full scan within 4 s, "
                    "not reconcile_interval (6 s) later")

    def test_redis_restart_then_reconcile_and_follow_again(self):
        rs = self.start_redis(args=NOTIFY)
        ag = self.start_agent(rs, scan_interval="1s")
        self.wait_following(ag)
        rs.client().set("lock:old", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:old"), 5, desc="lock:old")
        base = ag.scans_ok()
        rs.kill()
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_target_up", target="main") == 0,
                    10, desc="target down while Redis is")
        rs.restart()
        ag.wait_for(lambda: ag.scans_ok() > base, 15, desc="a full scan after the restart")
        self.wait_following(ag)
        # the restarted server has no data: the reconcile dropped lock:old
        self.assertEqual(ag.lock("lock:old")[0], 404)
        rs.client().set("lock:new", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:new"), 5, desc="lock:new from events")

    def test_more_locks_than_follow_max_locks_scan(self):
        # follow mode keeps a copy of each lock: past follow_max_locks the
        # target scans (said once in the log), the view still right; a lock
        # set past it while following ends following at the next tick; at
        # a reload with fewer locks it follows again
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        for i in range(12):
            c.set("lock:m:%d" % i, "t", px=600000)
        ag = self.start_agent(rs, scan_interval="300ms", leak_grace="1h", max_hold="1h",
                              target_extra={"follow_max_locks": "10"})
        ag.wait_scans(3)
        self.assertFalse(self.following(ag))
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks", target="main"), 12)
        said = [l for l in ag.log_tail(200).splitlines() if "follow_max_locks (10)" in l]
        self.assertEqual(len(said), 1, ag.log_tail(50))
        self.assertIn("scanning every scan_interval", said[0])
        # fewer locks and a reload: it follows, and keeps following past
        # the next full scan (a killed subscriber sets one off)
        for i in range(4):
            c.delete("lock:m:%d" % i)
        ag.reload()
        ag.wait_for(lambda: self.following(ag), 10, desc="following again")
        scans = h.msum(ag.metrics(), "lockwatch_scans_total", target="main")
        c.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_scans_total", target="main") > scans,
                    10, desc="the full scan after the subscriber was killed")
        ag.wait_for(lambda: self.following(ag), 10, desc="following after that scan")
        time.sleep(1)
        self.assertTrue(self.following(ag))
        # past the cap while following: it stops following, the view right
        for i in range(12, 16):
            c.set("lock:m:%d" % i, "t", px=600000)
        ag.wait_for(lambda: not self.following(ag), 10, desc="scanning again")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 12, 10,
                    desc="the 12 locks seen")

    def test_auto_falls_back_when_notifications_are_off(self):
        rs = self.start_redis()
        rs.client().set("lock:a", "t")
        ag = self.start_agent(rs, scan_interval="300ms")
        ag.wait_scans(3)
        self.assertFalse(self.following(ag))
        lines = [l for l in ag.log_tail(200).splitlines() if "notify-keyspace-events" in l]
        self.assertEqual(len(lines), 1, ag.log_tail(50))
        self.assertIn("Kg$lshzxet", lines[0])
        self.assertIn('lacks "Kg$lshzxet"', lines[0])

    def test_key_miss_events_do_not_feed_the_agents_own_reads(self):
        # With class m (KEAm), a read of a missing key is announced: the
        # agent's re-read of an expired lock must not announce a re-read
        # of its own, for ever (80k-800k reads/s of Redis before)
        rs = self.start_redis(args=["--notify-keyspace-events", "KEAm"])
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s", target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        for i in range(20):
            c.set("lock:miss:%d" % i, "t", px=300)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 0, 10,
                    desc="the 20 locks expired")
        time.sleep(1.0)

        def reads():
            return c.info("commandstats").get("cmdstat_type", {}).get("calls", 0)
        before = reads()
        time.sleep(2.0)
        grew = reads() - before
        print("key-miss events: %d TYPE reads in 2 s after 20 locks expired" % grew)
        self.assertLess(grew, 20)
        self.assertTrue(self.following(ag))

    def test_the_old_minimal_setting_without_sets_and_streams_scans(self):
        # Kg$lhzxe lacks s and t: a set or stream under a pattern would go
        # unannounced, so the target scans (and sees it), the log naming
        # the classes to add
        rs = self.start_redis(args=["--notify-keyspace-events", "Kg$lhzxe"])
        c = rs.client()
        c.sadd("lock:set", "m")
        ag = self.start_agent(rs, scan_interval="300ms")
        ag.wait_scans(3)
        self.assertFalse(self.following(ag))
        self.assertIn('lacks "st"', ag.log_tail(200))
        self.assertIsNotNone(self.state(ag, "lock:set"))
        # a setting someone made, so following was meant: /readyz says it,
        # above "ready" (the view is whole, the agent ready)
        st, _, body = ag.get("/readyz")
        self.assertEqual(st, 200, body)
        self.assertRegex(body.decode(), r'(?s)^target \S+: not following keyspace notifications:'
                         r'.*lacks "st".*\nready\n$')

    def flags_asked(self, ag):
        """The setting the agent's log line asks for (e.g. Kg$lshzxet)."""
        lines = [l for l in ag.log_tail(200).splitlines() if "which lacks" in l]
        self.assertTrue(lines, ag.log_tail(50))
        m = re.search(r"e\.g\. notify-keyspace-events (\S+);", lines[-1])
        self.assertIsNotNone(m, lines[-1])
        return m.group(1)

    def test_auto_follows_once_the_setting_has_the_classes(self):
        # scanning because notify-keyspace-events lacks classes; the operator
        # sets what the log asks for and sends no SIGHUP: the next check
        # (every RECHECK_S, at a full scan) sees it and the target follows
        rs = self.start_redis()
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s")
        ag.wait_scans(2)
        self.assertFalse(self.following(ag))
        # Redis's default (empty), as on a default install: the log says
        # it, /readyz does not (every such install would carry the line)
        self.assertEqual(ag.get("/readyz")[2], b"ready\n")
        flags = self.flags_asked(ag)
        c.config_set("notify-keyspace-events", flags)
        t0 = time.monotonic()
        # the bound: one check interval, a scan interval, and room for a
        # slow (sanitizer) build
        bound = RECHECK_S + 1 + 15
        self.wait_following(ag, timeout=bound)
        print("setting fixed under the agent: following after %.1fs (checked every %ds)"
              % (time.monotonic() - t0, RECHECK_S))
        self.assertIn("notify-keyspace-events now has the classes follow mode needs",
                      ag.log_tail(50))
        c.set("lock:after", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:after"), 10, desc="lock:after appears")
        scans = scan_calls(c)
        c.set("lock:after2", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:after2"), 10, desc="lock:after2 from events")
        self.assertEqual(scan_calls(c), scans, "SCAN ran while following")

        # turned off again: noticed (the freshness check), scanning ...
        c.config_set("notify-keyspace-events", "")
        ag.wait_for(lambda: not self.following(ag), 15, desc="back to scanning")
        self.assertIn("no longer following", ag.log_tail(50))
        # ... and on again: following again, still with no SIGHUP
        c.config_set("notify-keyspace-events", flags)
        self.wait_following(ag, timeout=bound)
        c.set("lock:again", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:again"), 10, desc="lock:again appears")

    def test_reload_checks_the_setting_again(self):
        # scan_interval 1h: between reloads the agent scans (and so checks
        # the setting) once, at start, so only a reload can make it follow
        # within the test's bounds
        rs = self.start_redis()
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1h")
        ag.wait_for(lambda: ag.scans_ok() >= 1, 30, desc="the first scan")
        self.assertFalse(self.following(ag))
        flags = self.flags_asked(ag)
        c.config_set("notify-keyspace-events", flags)
        ag.reload()                     # the same config file
        self.wait_following(ag, timeout=20)
        log = ag.log_tail(50)
        self.assertIn("reloaded: 1 target(s)", log)
        self.assertIn("notify-keyspace-events now has the classes follow mode needs", log)
        c.set("lock:a", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:a"), 10, desc="lock:a from events")

        # a reload while following keeps the subscription; scan_interval 1s
        # lets the freshness check see the setting turned off
        ag.write_config(ag.render_config(scan_interval="1s"))
        ag.reload()
        ag.wait_for(lambda: ag.log_tail(50).count("reloaded: 1 target(s)") >= 2, 10,
                    desc="second reload")
        c.config_set("notify-keyspace-events", "")
        ag.wait_for(lambda: not self.following(ag), 15, desc="back to scanning")
        # on again, and a reload with a changed config (scan_interval 1h
        # again): following again at the reload's scan
        c.config_set("notify-keyspace-events", flags)
        ag.write_config(ag.render_config(scan_interval="1h"))
        ag.reload()
        self.wait_following(ag, timeout=20)
        c.set("lock:b", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:b"), 10, desc="lock:b from events")

    def test_off_never_subscribes(self):
        rs = self.start_redis(args=NOTIFY)
        ag = self.start_agent(rs, scan_interval="300ms", target_extra={"incremental": "off"})
        ag.wait_scans(2)
        self.assertFalse(self.following(ag))
        self.assertEqual(rs.client().pubsub_numpat(), 0)

    def acl_user(self, rs, extra):
        pw = "s3cret-follow"
        rs.client().acl_setuser("scan", enabled=True, passwords=["+" + pw], reset=True)
        rs.client().execute_command("ACL", "SETUSER", "scan", *(h.SCANNER_ACL + extra))
        return pw

    def test_acl_denied_config_get_follows_on_trust(self):
        rs = self.start_redis(args=NOTIFY)
        pw = self.acl_user(rs, FOLLOW_ACL)
        ag = self.start_agent(targets=[("main", "redis://scan@127.0.0.1:%d/0" % rs.port)],
                              scan_interval="1s",
                              target_extra={"password_file": h.password_file(pw)})
        self.wait_following(ag)
        self.assertIn("on trust", ag.log_tail(50))
        rs.client().set("lock:n", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:n"), 5, desc="event-driven lock")

    def test_acl_denied_config_get_without_notifications_falls_back(self):
        rs = self.start_redis()
        pw = self.acl_user(rs, FOLLOW_ACL)
        ag = self.start_agent(targets=[("main", "redis://scan@127.0.0.1:%d/0" % rs.port)],
                              scan_interval="500ms",
                              target_extra={"password_file": h.password_file(pw)})
        self.wait_following(ag)
        rs.client().set("lock:n", "t", px=600000)
        # no notification comes; the next reconcile (scan_interval while
        # unproven) finds the lock and gives up following
        ag.wait_for(lambda: self.state(ag, "lock:n"), 10, desc="lock found by a scan")
        ag.wait_for(lambda: not self.following(ag), 10, desc="back to scanning")
        # and it stays there (until a reload), saying so once
        ag.wait_scans(3)
        self.assertFalse(self.following(ag))
        lines = [l for l in ag.log_tail(200).splitlines() if "none arrived" in l]
        self.assertEqual(len(lines), 1, ag.log_tail(50))

    # run-all: heavy (150,000 SETs and their notifications: a core for seconds, more under ASan)
    def test_flood_past_the_cap_is_counted_and_reconciled(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s", target_extra={"command_timeout": "15s"})
        self.wait_following(ag)
        base = ag.scans_ok()
        n = 150000
        # one script: the notifications of every SET arrive in one burst;
        # CLIENT PAUSE in the same read stalls the agent's re-reads (not the
        # notifications Redis writes out) for 3 s, so the burst meets a busy
        # agent however fast this machine lets it drain (well under the
        # command_timeout, also on a loaded machine: a paused read, and the
        # subscriber's PING behind the burst, are slow, not failed)
        pipe = c.pipeline(transaction=False)
        pipe.eval("for i = 1, tonumber(ARGV[1]) do redis.call('SET', 'lock:f:' .. i, 't', "
                  "'PX', 600000) end", 0, n)
        pipe.execute_command("CLIENT", "PAUSE", "3000", "ALL")
        pipe.execute()
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_overflows_total",
                                   target="main") >= 1, 30, desc="the pending cap hit")
        ag.wait_for(lambda: ag.scans_ok() > base, 30, desc="a reconcile after the flood")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == n,
                    60, desc="every flooded lock counted")
        self.wait_following(ag, timeout=60)

    def test_acl_without_psubscribe_scans_with_the_additions_named(self):
        rs = self.start_redis(args=NOTIFY)
        pw = self.acl_user(rs, [])
        ag = self.start_agent(targets=[("main", "redis://scan@127.0.0.1:%d/0" % rs.port)],
                              scan_interval="300ms",
                              target_extra={"password_file": h.password_file(pw)})
        ag.wait_scans(3)
        self.assertFalse(self.following(ag))
        lines = [l for l in ag.log_tail(100).splitlines() if "PSUBSCRIBE" in l]
        self.assertEqual(len(lines), 1, ag.log_tail(50))
        for need in ["+psubscribe"] + ["&__keyspace@0__:lock:*",
                                       "&__keyspace@0__:lockwatch:client:*"]:
            self.assertIn(need, lines[0])

    def test_sentinel_failover_follows_the_new_primary(self):
        primary = self.start_redis(args=NOTIFY)
        replica = self.start_redis(args=NOTIFY + ["--replicaof", "127.0.0.1",
                                                  str(primary.port)])
        h.wait_until(lambda: replica.client().info("replication").get(
            "master_link_status") == "up", 20, desc="replica in sync")
        sentinels = [topo.Sentinel(primary.port) for _ in range(3)]
        for s in sentinels:
            self.addCleanup(s.kill)

        def ready(s):
            flat = s.client().execute_command("SENTINEL", "MASTER", "mymaster")
            info = {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}
            return len(s.replicas()) == 1 and int(info["num-other-sentinels"]) == 2
        for s in sentinels:
            h.wait_until(lambda s=s: ready(s), 30, desc="sentinel :%d ready" % s.port)
        ag = self.start_agent(targets=[("main", "redis://127.0.0.1:1/0")],
                              scan_interval="1s",
                              target_extra={
                                  "mode": "sentinel",
                                  "sentinels": ",".join("127.0.0.1:%d" % s.port
                                                        for s in sentinels),
                                  "master_name": "mymaster"})
        self.wait_following(ag)
        primary.client().set("lock:before", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:before"), 5, desc="lock on the old primary")
        sentinels[0].client().execute_command("SENTINEL", "FAILOVER", "mymaster")
        h.wait_until(lambda: sentinels[0].master_port() == replica.port, 30,
                     desc="replica promoted")
        h.wait_until(lambda: replica.client().info("replication")["role"] == "master", 30,
                     desc="replica is primary")
        ag.wait_for(lambda: h.select(ag.metrics(), "lockwatch_follow_active", target="main")
                    and replica.client().pubsub_numpat() >= 1, 30,
                    desc="subscribed on the new primary")
        replica.client().set("lock:after", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:after"), 10, desc="lock on the new primary")
        self.wait_following(ag)

    def test_cluster_follows_every_primary_and_topology_changes(self):
        cl = topo.start_cluster(self, primaries=3, replicas=1)
        for n in cl.nodes:
            n.client().config_set("notify-keyspace-events", "Kg$lshzxet")
        ag = self.start_agent(targets=[("main", cl.url)], scan_interval="1s",
                              target_extra={"mode": "cluster"})
        self.wait_following(ag)
        for p in cl.primaries():
            self.assertGreaterEqual(cl.by_port[p].client().pubsub_numpat(), 1)
        scans = {p: scan_calls(cl.by_port[p].client()) for p in cl.primaries()}
        keys = {}
        for i in range(200):
            k = "lock:c:%d" % i
            keys.setdefault(cl.owner[topo.keyslot(k)], k)
        self.assertEqual(len(keys), 3)
        for k in keys.values():
            cl.node_of(k).client().set(k, "t", px=600000)
        ag.wait_for(lambda: all(self.state(ag, k) for k in keys.values()), 10,
                    desc="a new lock on every shard")
        first = list(keys.values())[0]
        cl.node_of(first).client().delete(first)
        ag.wait_for(lambda: ag.lock(first)[0] == 404, 5, desc="deleted lock gone")
        for p in cl.primaries():
            self.assertEqual(scan_calls(cl.by_port[p].client()), scans[p],
                             "SCAN on :%d between reconciles" % p)
        # a failover: a replica takes over a shard; the agent reconciles and
        # follows the new primary
        base = ag.scans_ok()
        old = cl.node_of(first).port
        replica = [n for n in cl.nodes if n.port != old and n.client().info(
            "replication").get("master_port") == old][0]
        replica.client().execute_command("CLUSTER", "FAILOVER")
        h.wait_until(lambda: replica.client().info("replication")["role"] == "master", 30,
                     desc="replica promoted")
        ag.wait_for(lambda: ag.scans_ok() > base, 20, desc="a reconcile after the failover")
        self.wait_following(ag)
        ag.wait_for(lambda: replica.client().pubsub_numpat() >= 1, 20,
                    desc="subscribed on the new primary")
        replica.client().set(first, "t2", px=600000)
        ag.wait_for(lambda: (self.state(ag, first) or {}).get("holders", [{}])[0].get("id")
                    == "t2", 10, desc="a lock on the new primary from events")


if __name__ == "__main__":
    h.main()
