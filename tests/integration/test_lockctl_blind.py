# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits out lockctl's --timeout against a drip-feeding server: a deadline on
#   the monotonic clock, with 1 s of room, for a command that needs next to no CPU)
"""lockctl never hangs and never goes blind silently.

- A whole-command deadline: against a server that answers one byte every
  0.5 s, `lockctl list` ends within --timeout (and within the default 15 s
  without it), exit 3, the message naming --timeout.
- Redis down, the agent up: `lockctl list` prints the agent's last-known
  view, marked stale with the agent's reason (table and --json, whose
  "states" is an array as everywhere), exit 3 (the locks were not read
  now); with --url, another address than the one the agent watches, none
  of the agent's view is shown and stderr says why.  `lockctl show` says
  the same of one lock: last known, its age then and its TTL as read then.
- A stale agent view never judges what Redis shows now: a lock wiped and
  set again with the same value while the agent cannot scan is not
  "leaked" by the agent's old first sight, and --if-leaked refuses it.
"""

import json
import os
import time

import harness as h
import test_lockctl as lt
from fake_redis import FakeRedis


class LockctlBlind(h.TestCase):

    def timed(self, args, config, limit):
        t0 = time.monotonic()
        p = lt.run(args, config, timeout=limit + 20)
        took = time.monotonic() - t0
        return p, took

    def test_deadline_against_a_drip_feeding_server(self):
        with FakeRedis("drip", on={"SCAN"}) as fake:
            cfg = lt.write_config(url=fake.url)
            p, took = self.timed(["--agent", "off", "--timeout", "3s", "list"], cfg, 3)
            print("lockctl list --timeout 3s against a drip: %.2f s, exit %d" %
                  (took, p.returncode))
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertLess(took, 4.0)
            self.assertIn(b"--timeout", p.stderr)
            p, took = self.timed(["--agent", "off", "list"], cfg, 15)
            print("lockctl list (default deadline) against a drip: %.2f s, exit %d" %
                  (took, p.returncode))
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertLess(took, 16.0)
            p = lt.run(["--timeout", "soon", "list"], cfg)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(b"--timeout", p.stderr)

    def test_redis_down_shows_the_agents_last_known_view(self):
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:leak:1", "tok-1")
        c.set("lock:held:1", "tok-2", px=600000)
        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1s", max_hold="1h")
        ag.wait_for(lambda: ag.get_json("/api/v1/locks?state=leaked")[1]["count"] == 1,
                    timeout=20, desc="the agent sees the leak")
        rs.kill()
        ag.wait_for(lambda: ag.get("/readyz")[0] == 503, timeout=20, desc="target down")
        p = lt.run(["list", "--state", "leaked"], ag.config_path)
        out = p.stdout.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("LAST KNOWN (stale)", out)
        # one instant for a row: ages as of that scan, as its TTLs (an
        # on-call trial: ages grew to now beside TTLs as read then)
        self.assertIn("ages and TTLs as of then", " ".join(out.split()))
        self.assertIn("lock:leak:1", out)
        self.assertNotIn("lock:held:1", out)
        # the same table as list's: headed, fit to the terminal, states as
        # list writes them
        p = lt.run(["list"], ag.config_path, env=dict(os.environ, COLUMNS="80"))
        out = p.stdout.decode("utf-8", "replace")
        self.assertTrue(all(len(ln) <= 80 for ln in out.splitlines()), out)
        self.assertTrue(any(ln.split()[:5] == ["KEY", "HOLDER", "AGE", "TTL", "STATE"]
                            for ln in out.splitlines() if ln.strip()), out)
        row = [ln for ln in out.splitlines() if ln.startswith("lock:leak:1")]
        self.assertTrue(row and row[0].rstrip().endswith("leaked"), out)
        p = lt.run(["list", "--json"], ag.config_path)
        self.assertEqual(p.returncode, 3, p.stderr)
        doc = json.loads(p.stdout.decode())
        self.assertEqual(doc["source"], "agent")
        self.assertTrue(doc["stale"], doc)
        self.assertTrue(doc["stale_reason"], doc)
        self.assertIsInstance(doc["last_success_ms"], int)
        self.assertEqual(sorted(l["key"] for l in doc["locks"]), ["lock:held:1", "lock:leak:1"])
        self.assertTrue(all(l["stale"] for l in doc["locks"]), doc)
        states = {l["key"]: l["states"] for l in doc["locks"]}
        self.assertIsInstance(states["lock:leak:1"], list, doc)
        self.assertIn("leaked", states["lock:leak:1"])
        self.assertNotIn("leaked", states["lock:held:1"])
        ttls = {l["key"]: l["pttl_ms"] for l in doc["locks"]}
        self.assertEqual(ttls["lock:leak:1"], -1, doc)
        self.assertGreater(ttls["lock:held:1"], 0, doc)
        # show: the same last-known view of one lock, never as current
        _, body = ag.get_json("/api/v1/locks/lock%3Aheld%3A1?target=main")
        self.assertTrue(body["stale"], body)
        self.assertTrue(body["stale_reason"], body)
        self.assertIsInstance(body["last_success_ms"], int, body)
        p = lt.run(["show", "lock:held:1"], ag.config_path, env=dict(os.environ, COLUMNS="80"))
        out = p.stdout.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertRegex(out, r"LAST KNOWN \(stale\).*")
        self.assertRegex(out.replace("\n  ", " "), r"its last good scan, (\d+ms|\d+s|\d+m\d\ds) ago:")
        fields = {ln.split(None, 1)[0]: ln.split(None, 1)[1] for ln in out.splitlines()
                  if ln[:1].isalpha() and len(ln.split(None, 1)) == 2 and ":" not in ln[:6]}
        self.assertRegex(fields.get("ttl", ""), r"^\S+ as read then$", out)
        self.assertRegex(fields.get("age", ""), r"^\S+ then$", out)
        # --url names another server: the agent's view is of the configured one
        other = "redis://127.0.0.1:%d/0" % h.free_port()
        p = lt.run(["--url", other, "list"], ag.config_path)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertNotIn(b"lock:leak:1", p.stdout)
        self.assertNotIn(b"LAST KNOWN", p.stdout)
        self.assertIn(b"not of --url", p.stderr)
        # --json: the error is why --url failed, not the note about the agent
        p = lt.run(["--url", other, "list", "--json"], ag.config_path)
        self.assertEqual(p.returncode, 3, p.stderr)
        doc = json.loads(p.stdout.decode())
        self.assertIn("connect to 127.0.0.1:%d" % int(other.rsplit(":", 1)[1].split("/")[0]),
                      doc["error"], doc)
        self.assertNotIn("not of --url", doc["error"], doc)

    def test_a_stale_view_never_judges_a_lock_set_again(self):
        # the agent saw lock:const:1 leaked; then its scans fail (its ACL
        # user gone) while the lock is wiped and set again with the same
        # value, as a client does after a restart without persistence:
        # lockctl, which reads Redis fine, must not take the agent's old
        # first sight for this lock's age
        rs = self.start_redis()
        c = rs.client()
        c.execute_command("ACL", "SETUSER", "lw", "on", ">s3cret-scan", *h.SCANNER_ACL)
        c.set("lock:const:1", "batch:1")
        ag = self.start_agent(targets=[("main", "redis://lw@127.0.0.1:%d/0" % rs.port)],
                              target_extra={"password_file": h.password_file("s3cret-scan")},
                              scan_interval="300ms", leak_grace="1s", max_hold="1h")
        agent = ["--agent", "http://127.0.0.1:%d" % ag.port]
        cfg = lt.write_config(rs)
        ag.wait_for(lambda: ag.get_json("/api/v1/locks?state=leaked")[1]["count"] == 1,
                    timeout=20, desc="the agent sees the leak")
        doc = lt.run_json(self, agent + ["list"], cfg)
        self.assertIn("leaked", doc["locks"][0]["states"], doc)     # judged with its times
        c.execute_command("ACL", "DELUSER", "lw")
        ag.wait_for(lambda: ag.get("/readyz")[0] == 503, timeout=20, desc="target down")
        c.delete("lock:const:1")
        c.set("lock:const:1", "batch:1")
        doc = lt.run_json(self, agent + ["list"], cfg)
        self.assertEqual([l["key"] for l in doc["locks"]], ["lock:const:1"], doc)
        self.assertNotIn("leaked", doc["locks"][0]["states"], doc)
        self.assertEqual(doc["agent"]["judged"], 0, doc)
        self.assertTrue(doc["agent"]["stale_reason"], doc)
        p = lt.run(agent + ["release", "lock:const:1", "--holder", "batch:1", "--if-leaked",
                            "--dry-run"], cfg)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertNotIn(b"would_release", p.stdout)
        p = lt.run(agent + ["list"], cfg, env=dict(os.environ, COLUMNS="200"))
        self.assertIn(b"its view is stale", p.stdout + p.stderr)


if __name__ == "__main__":
    h.main()
