# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits on reloads and scans; next to no CPU; its bound, SIGTERM exit within
#   5 s, has room)
"""SIGHUP reload and SIGTERM.

SIGHUP with a changed config (max_hold 60s -> 2s) is applied: a lock held
for a few seconds, not `long` before, becomes `long` after.  Tracked state
survives: that lock's age keeps growing across the reload.  SIGHUP with a
broken config keeps the old config running (process alive, still scanning,
old max_hold still in force), and so does a file with no [target] left.
SIGTERM exits 0 quickly.
"""

import json
import os
import signal
import time

import harness as h

KEY = "lock:report:77"
CLASS = "lock:report:*"


class Reload(h.TestCase):

    def firing(self, ag):
        """The names of the agent's firing alerts."""
        st, doc = ag.get_json("/api/v1/alerts")
        self.assertEqual(st, 200, doc)
        return {a["labels"]["alertname"] for a in doc["alerts"]}

    def lock(self, ag):
        st, lk = ag.lock(KEY)
        self.assertEqual(st, 200, lk)
        return lk

    def test_reload_applies_keeps_state_and_survives_bad_config(self):
        rs = self.start_redis()
        c = rs.client()
        c.set(KEY, "tok-report", px=600000)
        t_set = time.monotonic()
        ag = self.start_agent(rs, scan_interval="500ms", max_hold="60s", leak_grace="1h")

        # Held for a while, not long under max_hold = 60s.
        ag.wait_for(lambda: self.lock(ag)["age_seconds"] >= 3.0, timeout=15,
                    interval=0.2, desc="age >= 3s")
        lk = self.lock(ag)
        self.assertNotIn("long", lk["states"], lk)
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks_long_held",
                                **{"class": CLASS}), 0)
        age_before, t_before = lk["age_seconds"], time.monotonic()
        pid = ag.proc.pid

        # Reload with max_hold = 2s.
        ag.write_config(ag.render_config(max_hold="2s"))
        ag.reload()

        def long_now():
            lk = self.lock(ag)
            return "long" in lk["states"] and lk
        lk = ag.wait_for(long_now, timeout=15, interval=0.2,
                         desc="state long after reloading max_hold = 2s")
        self.assertTrue(ag.alive)
        self.assertEqual(ag.proc.pid, pid)
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_locks_long_held", **{"class": CLASS}), 1,
                         h.select(m, "lockwatch_locks_long_held"))
        # The age did not restart at the reload.
        grown = time.monotonic() - t_before
        self.assertGreaterEqual(lk["age_seconds"], age_before + grown - 1.5,
                                "age restarted at reload: %.2f before, %s after %.1fs"
                                % (age_before, lk["age_seconds"], grown))
        self.assertGreaterEqual(lk["age_seconds"], time.monotonic() - t_set - 2.0, lk)
        self.assertEqual(ag.get("/readyz")[0], 200)

        # A broken config: refused, the old one keeps running.
        ag.write_config(ag.render_config(max_hold="5x"))
        ag.reload()
        time.sleep(1.0)
        self.assertTrue(ag.alive, "lockwatchd died on a bad reload:\n" + ag.log_tail())
        self.assertEqual(ag.get("/healthz")[0], 200)
        ag.wait_scans(3, timeout=15)
        lk = self.lock(ag)
        self.assertIn("long", lk["states"], "max_hold = 2s no longer in force: %s" % lk)
        self.assertGreaterEqual(lk["age_seconds"], time.monotonic() - t_set - 2.0, lk)
        self.assertIn("max_hold", ag.log_tail(200), "the refused reload is not logged")
        # and said where a monitor looks, not only in the log: /readyz
        # (still 200: the previous config works) and /metrics
        st, _, body = ag.get("/readyz")
        self.assertEqual(st, 200, body)
        self.assertRegex(body.decode(), r"config: the reload \S+ ago failed \(.*max_hold.*\): "
                         r"the previous configuration stays in effect")
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_config_last_reload_successful"), 0)
        t_ok = h.msum(m, "lockwatch_config_last_reload_success_timestamp_seconds")
        self.assertLess(t_ok, time.time() - 0.5)

        # A good config again after the broken one is taken (max_hold 1h:
        # no longer long).
        ag.write_config(ag.render_config(max_hold="1h"))
        ag.reload()
        ag.wait_for(lambda: "long" not in self.lock(ag)["states"], timeout=15,
                    interval=0.2, desc="not long after reloading max_hold = 1h")
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_config_last_reload_successful"), 1)
        self.assertGreater(h.msum(m, "lockwatch_config_last_reload_success_timestamp_seconds"),
                           t_ok)
        self.assertNotIn(b"config:", ag.get("/readyz")[2])
        self.assertGreaterEqual(self.lock(ag)["age_seconds"],
                                time.monotonic() - t_set - 2.0)

        # SIGTERM: exit 0, quickly.
        t0 = time.monotonic()
        ag.stop(timeout=10)
        self.assertLess(time.monotonic() - t0, 5.0)

    def test_reload_changes_patterns_and_targets(self):
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:1", "t1", px=600000)
        c.set("mutex:orders", "t2", px=600000)
        second = self.start_redis()
        second.client().set("lock:9", "t9", px=600000)
        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1h", max_hold="1h")
        ag.wait_ready()
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks", target="main"), 1)

        # patterns gain mutex:*, and a second target appears
        ag.targets = [("main", rs.url), ("second", second.url)]
        ag.write_config(ag.render_config(patterns="lock:*, mutex:*"))
        ag.reload()
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 2,
                    timeout=15, desc="mutex:* counted after the reload")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="second") == 1,
                    timeout=15, desc="the new target scanned after the reload")
        ag.wait_ready()
        st, lk = ag.lock("lock:9", target="second")
        self.assertEqual(st, 200, lk)

        # the second target goes away again
        ag.targets = [("main", rs.url)]
        ag.write_config(ag.render_config(patterns="lock:*, mutex:*"))
        ag.reload()
        ag.wait_for(lambda: not h.select(ag.metrics(), "lockwatch_target_up", target="second"),
                    timeout=15, desc="the removed target gone from /metrics")
        ag.wait_ready()
        st, err = ag.lock("lock:9", target="second")
        # a target the agent no longer has is a bad ?target= (400 naming
        # the known ones), not a missing lock
        self.assertEqual(st, 400, err)
        self.assertIn("known targets: main", err["error"])
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks", target="main"), 2)
        self.assertTrue(ag.alive)

    def test_a_removed_targets_event_alerts_resolve(self):
        """A trial: the per-lock and per-target alerts of a target a reload
        removed resolved, but an event alert of it (LockLeaseLost: a lock
        its holder renewed expired) kept firing its 15 minutes, about a
        target the agent no longer watches.  Now it resolves with the
        target; the event stays on the timeline."""
        rs = self.start_redis()
        second = self.start_redis()
        c = second.client()
        ag = self.start_agent(targets=[("main", rs.url), ("second", second.url)],
                              scan_interval="500ms", leak_grace="1h", max_hold="1h")
        ag.wait_ready()
        c.set("lock:9", "t9", px=1500)
        for _ in range(5):                  # renewed while held: a watchdog's lock
            time.sleep(0.5)
            c.pexpire("lock:9", 1500)

        def lease_lost():
            st, j = ag.get_json("/api/v1/alerts")
            return [a for a in j["alerts"] if a["labels"]["alertname"] == "LockLeaseLost"
                    and a["labels"].get("target") == "second"]
        ag.wait_for(lease_lost, 15, desc="LockLeaseLost for the renewed lock that expired")
        ag.targets = [("main", rs.url)]
        ag.write_config(ag.render_config())
        ag.reload()
        ag.wait_for(lambda: not lease_lost(), 10,
                    desc="the removed target's LockLeaseLost resolved")
        time.sleep(2)           # and not raised again from the timeline
        self.assertEqual(lease_lost(), [])
        st, ev = ag.get_json("/api/v1/events?kind=expired_renewed")
        self.assertEqual([(e["target"], e["key"]) for e in ev["events"]], [("second", "lock:9")])
        # added back: its old event raises nothing again (a red-team)
        ag.targets = [("main", rs.url), ("second", second.url)]
        ag.write_config(ag.render_config())
        ag.reload()
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_scans_total", target="second",
                                   result="ok") >= 1, 15, desc="the target back")
        time.sleep(2)
        self.assertEqual(lease_lost(), [])

    def test_a_target_pointed_at_another_server_starts_anew(self):
        # the freshness trial: repointed to a server not up yet, the target
        # kept the old server's locks as its "last known" view under the new
        # address, and resolved their alerts when the new server answered
        rs = self.start_redis()
        rs.client().set("lock:leakA", "t")
        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1s", max_hold="1h")
        ag.wait_for(lambda: ag.lock("lock:leakA")[0] == 200, 15, desc="lock:leakA seen")
        # the same server named otherwise keeps its view (a red-team: the URL
        # text alone threw it away, every alert resolved and fired again)
        first = ag.lock("lock:leakA")[1]["first_seen_ms"]
        ag.targets = [("main", rs.url.replace("127.0.0.1", "localhost"))]
        ag.write_config(ag.render_config())
        ag.reload()
        ag.wait_for(lambda: "now scanning localhost" in ag.log_tail(20), 15,
                    desc="the reload done")
        self.assertNotIn("its view starts anew", ag.log_tail(30))
        self.assertEqual(ag.lock("lock:leakA")[1]["first_seen_ms"], first)
        ag.wait_for(lambda: "LockLeaked" in self.firing(ag), 15, desc="the leak's alert")
        port = h.free_port()
        ag.targets = [("main", "redis://127.0.0.1:%d/0" % port)]
        ag.write_config(ag.render_config())
        ag.reload()
        ag.wait_for(lambda: "its view starts anew" in ag.log_tail(30), 15,
                    desc="the reload said the view starts anew")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_target_up", target="main") == 0,
                    15, desc="the new server down")
        st, body = ag.get_json("/api/v1/locks?target=main")
        # nothing known of the new server, and nothing of the old shown as its
        self.assertEqual((st, body["complete"], body["locks"]), (200, False, []), body)
        self.assertIsNone(body["stale"][0]["last_success"], body)
        self.assertNotIn("lock:leakA", json.dumps(body))
        st, lk = ag.lock("lock:leakA")
        self.assertNotEqual(st, 200, lk)
        # and its alerts are not the new server's (a trial: the old server's
        # leak kept firing while /metrics no longer showed it)
        ag.wait_for(lambda: "LockTargetDown" in self.firing(ag), 15, desc="the target down")
        self.assertNotIn("LockLeaked", self.firing(ag))

    def test_a_new_listen_address_waits_for_a_restart(self):
        # a trial: a reload to another listen address kept serving on the
        # old one but took the new one as in effect (alert links to a port
        # nothing listened on), and going back warned again
        rs = self.start_redis()
        ag = self.start_agent(rs, scan_interval="500ms")
        port, other = ag.port, h.free_port()
        ag.write_config(h.config_text(other, ag.targets, **ag.cfg))
        ag.reload()
        ag.wait_for(lambda: "reloaded:" in ag.log_tail(20), 15, desc="the reload")
        self.assertIn("reload: listen = 127.0.0.1:%d takes effect only after a restart; the "
                      "agent listens on 127.0.0.1:%d until then" % (other, port),
                      ag.log_tail(20))
        self.assertEqual(ag.get_json("/api/v1/alerts")[0], 200)
        # back to the address it listens on: nothing to say
        ag.write_config(ag.render_config())
        ag.reload()
        ag.wait_for(lambda: ag.log_tail(40).count("reloaded:") == 2, 15, desc="the reload back")
        self.assertEqual(ag.log_tail(40).count("takes effect only after a restart"), 1)

    def test_unlock_warning_judges_the_running_listener(self):
        # a red-team: an agent listening on every address, reloaded with a
        # loopback listen (not in effect until a restart) and [unlock] http
        # on, said nothing of the release endpoint it now served there
        rs = self.start_redis()
        ag = h.Agent(rs, start=False)
        ag.write_config(ag.render_config().replace("listen = 127.0.0.1:", "listen = 0.0.0.0:"))
        self._agents.append(ag)
        self.addCleanup(self._stop_agent, ag)
        ag.start()
        tok = os.path.join(ag.dir, "unlock.token")
        with open(tok, "w") as f:
            f.write("0123456789abcdef0123456789abcdef\n")
        os.chmod(tok, 0o600)
        ag.write_config(ag.render_config(extra="[unlock]\nhttp = on\ntoken_file = %s\n" % tok))
        ag.reload()
        ag.wait_for(lambda: "reloaded:" in ag.log_tail(30), 15, desc="the reload")
        log = ag.log_tail(30)
        self.assertIn("the agent listens on 0.0.0.0:%d until then" % ag.port, log)
        self.assertIn("[unlock] http = on with [agent] listen = 0.0.0.0:%d: the release endpoint"
                      % ag.port, log)

    def test_reload_without_target_refused(self):
        # A file cut short mid-deploy (no [target] left) must not swap the
        # configured target for the built-in 127.0.0.1:6379: the reload is
        # refused, said so, and "main" keeps being scanned.  A reload whose
        # error quotes control bytes logs them escaped.
        rs = self.start_redis()
        rs.client().set("lock:1", "t1", px=600000)
        ag = self.start_agent(rs, scan_interval="300ms", leak_grace="1h", max_hold="1h")
        ag.wait_ready()
        full = ag.render_config()
        ag.write_config(full[:full.index("[target main]")])
        ag.reload()
        ag.wait_for(lambda: "reload refused" in ag.log_tail(50), timeout=10,
                    desc="the refused reload logged")
        log = ag.log_tail(50)
        self.assertIn("no [target] section", log)
        self.assertIn("1 configured target(s)", log)
        self.assertNotIn("reloaded:", log)
        ag.wait_scans(2)
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="main"), 1)
        self.assertEqual(h.select(m, "lockwatch_target_up", target="default"), [])
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 1)
        self.assertEqual(ag.get("/readyz")[0], 200)

        ag.write_config(full.replace("max_hold = 1h", "max_hold = 1h\x1b[2J"))
        ag.reload()
        ag.wait_for(lambda: "max_hold" in ag.log_tail(5), timeout=10,
                    desc="the bad reload logged")
        with open(ag.logfile, "rb") as f:
            raw = f.read()
        self.assertNotIn(b"\x1b", raw)
        self.assertIn(b"[rules] max_hold: contains a control character (byte 0x1b)", raw)

        # the whole file again: taken
        ag.write_config(full)
        ag.reload()
        ag.wait_for(lambda: "reloaded: 1 target(s)" in ag.log_tail(5), timeout=10,
                    desc="the good reload taken")
        self.assertTrue(ag.alive)

    def test_sigint_stops_cleanly(self):
        rs = self.start_redis()
        ag = self.start_agent(rs, scan_interval="500ms")
        ag.wait_scans(1)
        t0 = time.monotonic()
        ag.signal(signal.SIGINT)
        rc = ag.proc.wait(timeout=10)
        self.assertEqual(rc, 0, ag.log_tail())
        self.assertLess(time.monotonic() - t0, 5.0)


if __name__ == "__main__":
    h.main()
