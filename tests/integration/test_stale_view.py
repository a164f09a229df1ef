# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (Redis down for 30 s, checked every 3 s: it waits, and measures no time)
"""What was known stays visible, marked stale: with Redis down for 30 s, a
leaked lock found before stays in the API (complete: false, the lock
"stale": true, the page's "stale" array naming the target, since when and
why), on the status page ("last known N ago", never "Leaked locks (0)
None"), and in /metrics (lockwatch_locks_leaked keeps its last-known value
beside lockwatch_target_up 0 and a steady
lockwatch_target_last_success_timestamp_seconds), so the agent's own
LockLeaked and the shipped Prometheus rule (whose promtool test covers the
same series) both keep firing.  /readyz names the reason every time; once
Redis is back the view is fresh again."""

import time

import harness as h


class StaleView(h.TestCase):

    def test_redis_down_keeps_the_last_known_leak(self):
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:leak:1", "tok")                 # no TTL: leaked after leak_grace
        c.set("lock:held:1", "tok", px=600000)
        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1s", max_hold="1h")

        def leaked_alert():
            st, body = ag.get_json("/api/v1/alerts")
            return [a for a in body["alerts"] if a["labels"]["alertname"] == "LockLeaked"]
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks_leaked", target="main") == 1,
                    timeout=20, desc="the leak counted")
        ag.wait_for(leaked_alert, timeout=20, desc="the agent's LockLeaked firing")
        last_ok = h.select(ag.metrics(), "lockwatch_target_last_success_timestamp_seconds",
                           target="main")
        self.assertEqual(len(last_ok), 1)

        rs.kill()
        t_down = time.monotonic()
        ag.wait_for(lambda: h.select(ag.metrics(), "lockwatch_target_up",
                                     target="main")[0][1] == 0,
                    timeout=20, desc="target_up 0 after kill -9")
        stamp = h.select(ag.metrics(), "lockwatch_target_last_success_timestamp_seconds",
                         target="main")[0][1]
        checks = 0
        while time.monotonic() - t_down < 30:
            m = ag.metrics()
            self.assertEqual(h.select(m, "lockwatch_target_up", target="main")[0][1], 0)
            self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="main"), 1,
                             "the last-known leak left /metrics while Redis was down")
            self.assertEqual(h.select(m, "lockwatch_target_last_success_timestamp_seconds",
                                      target="main")[0][1], stamp)

            st, body = ag.get_json("/api/v1/locks?state=leaked")
            self.assertEqual(st, 200, body)
            self.assertFalse(body["complete"], body)
            self.assertEqual(body["count"], 1, body)
            self.assertTrue(body["locks"][0]["stale"], body)
            self.assertIn("stale_since", body["locks"][0])
            self.assertEqual([s["target"] for s in body["stale"]], ["main"], body)
            self.assertTrue(body["stale"][0]["reason"], body)
            self.assertTrue(body["stale"][0]["last_success"], body)

            st, _, page = ag.get("/")
            self.assertEqual(st, 200)
            self.assertIn(b"last known", page)
            self.assertNotIn(b"Leaked locks (0)", page)

            st, _, ready = ag.get("/readyz")
            self.assertEqual(st, 503)
            self.assertIn(b"target main: ", ready)
            # its age as every other duration is written ("850ms", "12s")
            self.assertRegex(ready, rb"\(stale: the last good scan, \d+(ms|s) old, is shown\)")

            self.assertTrue(leaked_alert(), "the agent's LockLeaked resolved while blind")
            checks += 1
            time.sleep(3)
        self.assertGreaterEqual(checks, 5)
        self.assertIn("last good view", ag.log_tail(40))

        # back (empty: the test server keeps nothing on disk): fresh again,
        # nothing stale, and the lock gone with the data
        rs.start()
        ag.wait_for(lambda: h.select(ag.metrics(), "lockwatch_target_up",
                                     target="main")[0][1] == 1,
                    timeout=30, desc="target_up 1 once Redis is back")
        st, body = ag.get_json("/api/v1/locks?state=leaked")
        self.assertEqual(body["stale"], [], body)
        self.assertTrue(body["complete"], body)
        self.assertEqual(body["count"], 0, body)

    def test_never_scanned_is_unknown_not_empty(self):
        """An agent started while its Redis is unreachable knows nothing of
        it: that is no empty view.  The page is complete: false with the
        target in "stale" (no last success), a key asked for is a 503, not
        "no such lock", lockctl shows the agent's view as stale, and the
        status page says nothing is known; once Redis answers, fresh."""
        import json
        import topo
        rs = self.start_redis()
        rs.kill()
        ag = self.start_agent(rs, scan_interval="500ms")
        ag.wait_for(lambda: b"target main: " in ag.get("/readyz")[2], timeout=20,
                    desc="/readyz naming the failed first scan")
        st, body = ag.get_json("/api/v1/locks")
        self.assertEqual(st, 200, body)
        self.assertFalse(body["complete"], body)
        self.assertEqual(body["count"], 0, body)
        self.assertEqual([s["target"] for s in body["stale"]], ["main"], body)
        self.assertIsNone(body["stale"][0]["last_success"], body)
        self.assertIsNone(body["stale"][0]["last_success_ms"], body)
        self.assertTrue(body["stale"][0]["reason"], body)
        st, body = ag.get_json("/api/v1/locks/lock:held:1")
        self.assertEqual(st, 503, body)
        self.assertIn("target main has no view", body["error"])
        st, _, page = ag.get("/")
        self.assertIn(b"no good scan yet", page)
        r = topo.lockctl(["-c", ag.config_path, "--json", "list"])
        self.assertEqual(r.returncode, 3, r)
        self.assertTrue(json.loads(r.stdout)["stale"], r.stdout)
        self.assertIsNone(json.loads(r.stdout)["last_success_ms"], r.stdout)
        self.assertTrue(json.loads(r.stdout)["nothing_known"], r.stdout)
        r = topo.lockctl(["-c", ag.config_path, "list"])
        self.assertIn(b"NOTHING KNOWN: ", r.stdout)
        self.assertNotIn(b"(none", r.stdout)

        rs.start()                  # empty: the test server keeps nothing on disk
        rs.client().set("lock:held:1", "tok", px=600000)
        ag.wait_for(lambda: ag.get_json("/api/v1/locks")[1]["count"] == 1, timeout=30,
                    desc="the lock listed once Redis answers")
        st, body = ag.get_json("/api/v1/locks")
        self.assertTrue(body["complete"], body)
        self.assertEqual(body["stale"], [], body)


if __name__ == "__main__":
    h.main()
