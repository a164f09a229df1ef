# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (lockctl against a running agent; measures no time, next to no CPU)
"""lockctl asks the agent for what only the agent knows (issue 14's scenario).

A real redis-server and a real lockwatchd with two leaked locks among
ordinary held ones.  The agent's own scans keep resetting OBJECT IDLETIME
(Redis before 7.2), so from Redis alone the leaks look young; the test
also touches them itself before each lockctl run, so that holds on any
Redis version.

- with the agent up: `list --state leaked` shows both leaks with
  age_source agent; `show KEY` says leaked with the agent's age; plain
  `list` puts them first (worst first); `release --if-leaked --dry-run`
  would release a leak and refuses a no-TTL lock the agent has not yet
  seen without a TTL for leak_grace (the same definition as the listing);
- with the agent stopped: the fallback marks IDLETIME ages as lower bounds
  (">= ") and `list --state leaked` includes the no-TTL locks whose age is
  unknown (leaked?), and says the agent did not answer; --if-leaked refuses
  such a lock;
- an HTTP server that is not the agent (HTML answers) is a clear fallback,
  not a crash; --agent must be an http:// URL (exit 2);
- `release --if-older-than` takes the agent's first-seen age of the same
  holder (a user trial on Redis 7.0: list said 35s, the release said
  too_young, the HTTP release would_release): a plain lock without a TTL,
  its IDLETIME reset before each run, releases with --if-older-than under
  the agent's age; another holder is refused as ever; a DUR far over the
  age is too_young with the age known and where it came from; the prompt
  shows the agent's age; with the agent down it is too_young as before;
- a liblockwatch reentrant lock (a Redisson-format hash; its holder's
  host, pid and acquisition time in the client registry
  lockwatch:client:{<uuid>}): `show` gives the host, pid and acquired_at
  the agent's API gives, in --json and as text rows, with the agent up
  and with --agent off;
- a copy of the agent's config pointing at another server (another port,
  nothing listening): `list` and `show` exit 3 and show none of the
  agent's view (it is of the agent's server), stderr saying whose address
  the agent watches, as with --url (test_lockctl_blind); the agent's
  /api/v1/locks?target= and /api/v1/locks/KEY carry target_address; a
  copy pointing at another server that answers, with the same key held
  by the same holder: `list` and `show` take no age from the agent
  (age_source is not agent), stderr saying why.
"""

import http.server
import json
import os
import threading
import time

import harness as h
import test_lockctl as t

LEAKS = ["lock:invoice:4711", "lock:cron:nightly-report"]
HELD = ["lock:ok:%d" % i for i in range(20)]


class NotTheAgent(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html><body>hello</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class LockctlAgent(h.TestCase):
    def setUp(self):
        super().setUp()
        self.r = self.start_redis()
        self.c = self.r.client()
        for k in LEAKS:
            self.c.set(k, "tok-" + k)                 # no TTL: leaks
        for k in HELD:
            self.c.set(k, "tok-" + k, px=600000)
        self.ag = self.start_agent(self.r, leak_grace="2s", max_hold="1h")
        self.cfg = self.ag.config_path

        def both_leaked():
            st, doc = self.ag.get_json("/api/v1/locks?state=leaked")
            return st == 200 and sorted(l["key"] for l in doc["locks"]) == sorted(LEAKS)
        self.ag.wait_for(both_leaked, timeout=30, desc="the agent calls both locks leaked")

    def touch(self):
        """What the agent's scans do on Redis < 7.2: reset IDLETIME."""
        for k in LEAKS + HELD:
            self.c.get(k)

    def test_agent_up_then_down(self):
        # agent up: leaked, with the agent's ages
        self.touch()
        doc = t.run_json(self, ["list", "--state", "leaked"], self.cfg)
        self.assertEqual(doc["age_source"], "agent")
        self.assertTrue(doc["agent"]["answered"], doc["agent"])
        self.assertEqual(sorted(l["key"] for l in doc["locks"]), sorted(LEAKS))
        for l in doc["locks"]:
            self.assertEqual(l["age_source"], "agent", l)
            self.assertIn("leaked", l["states"], l)
            # held before the agent's first look: at least its age
            self.assertTrue(l["age_lower_bound"], l)
            self.assertGreaterEqual(l["nottl_seconds"], 2.0, l)
            self.assertIsNotNone(l["first_seen"], l)

        self.touch()
        p = t.run(["show", LEAKS[0]], self.cfg)
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 0, p.stderr)
        state = [ln for ln in out.splitlines() if ln.startswith("state")]
        self.assertTrue(state and "leaked" in state[0], out)
        age = [ln for ln in out.splitlines() if ln.startswith("age ")]
        self.assertTrue(age and "the agent" in age[0] and "age_source: agent" in age[0], out)
        self.touch()
        one = t.run_json(self, ["show", LEAKS[0]], self.cfg)
        self.assertEqual(one["age_source"], "agent")
        self.assertIn("leaked", one["states"])
        self.assertGreaterEqual(one["age_seconds"], 2.0)

        # worst first: the two leaks lead the plain listing
        self.touch()
        doc = t.run_json(self, ["list"], self.cfg)
        self.assertEqual(doc["count"], len(LEAKS) + len(HELD))
        self.assertEqual(sorted(l["key"] for l in doc["locks"][:2]), sorted(LEAKS))
        self.assertTrue(all("leaked" not in l["states"] for l in doc["locks"][2:]))
        ages = [l["age_seconds"] for l in doc["locks"][2:]]
        self.assertEqual(ages, sorted(ages, reverse=True), "held locks not by age")

        # --if-leaked: the listing's definition
        self.touch()
        doc = t.run_json(self, ["release", LEAKS[0], "--holder", "tok-" + LEAKS[0],
                                "--if-leaked", "--dry-run"], self.cfg)
        self.assertEqual(doc["outcome"], "would_release", doc)
        self.c.set("lock:fresh", "tok-fresh")         # no TTL, seconds old at most
        doc = t.run_json(self, ["release", "lock:fresh", "--holder", "tok-fresh",
                                "--if-leaked", "--dry-run"], self.cfg, rc=1)
        self.assertEqual(doc["outcome"], "not_leaked", doc)
        self.assertEqual(self.c.get("lock:fresh"), b"tok-fresh")
        self.c.delete("lock:fresh")

        # agent down: lower bounds, and the unknown leaks are listed, marked
        self.ag.stop()
        self.touch()
        doc = t.run_json(self, ["list", "--state", "leaked"], self.cfg)
        self.assertEqual(doc["age_source"], "redis")
        self.assertFalse(doc["agent"]["answered"])
        self.assertTrue(doc["agent"]["error"], doc["agent"])
        self.assertEqual(sorted(l["key"] for l in doc["locks"]), sorted(LEAKS))
        for l in doc["locks"]:
            self.assertEqual(l["age_source"], "idletime", l)
            self.assertTrue(l["age_lower_bound"], l)
            self.assertTrue(l["leak_unknown"], l)
            self.assertNotIn("leaked", l["states"], l)
        self.assertEqual(doc["leak_unknown"], len(LEAKS))

        self.touch()
        p = t.run(["list", "--state", "leaked"], self.cfg, env=t.COLS100)
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [ln for ln in out.splitlines() if ln.startswith("lock:")]
        self.assertEqual(len(rows), 2, out)
        for ln in rows:
            # IDLETIME just reset: a lower bound under a second says nothing
            self.assertIn("unknown", ln)
            self.assertNotIn(">= 0ms", ln)
            self.assertIn("leaked?", ln)
        self.assertIn("did not answer", out)
        self.assertTrue(all(t.width(ln) <= 100 for ln in out.splitlines()), out)

        self.touch()
        p = t.run(["release", LEAKS[1], "--holder", "tok-" + LEAKS[1], "--if-leaked",
                   "--yes"], self.cfg)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"not_leaked", p.stderr)
        self.assertIn(b"unknown", p.stderr)
        # ... and names the next step: the agent, expire, or a plain release
        self.assertIn(b"start lockwatchd if it is down", p.stderr.replace(b"\n  ", b" "))
        self.assertIn(b" expire " + LEAKS[1].encode(), p.stderr.replace(b"\\\n    ", b""))
        self.assertEqual(self.c.get(LEAKS[1]), b"tok-" + LEAKS[1].encode())

    def test_show_says_a_renewed_lock_is_alive(self):
        # a lock whose TTL its holder keeps raising (a watchdog): the agent
        # says renewed, and show's ttl row says its holder is alive, so a
        # release lets another client in; a lock never renewed says neither
        k, once = "lock:renewed:1", HELD[0]
        self.c.set(k, "tok-r", px=5000)

        def renewed():
            self.c.pexpire(k, 5000)
            st, doc = self.ag.get_json("/api/v1/locks/lock%3Arenewed%3A1?target=main")
            return st == 200 and doc["renewed"]
        self.ag.wait_for(renewed, timeout=30, interval=0.5, desc="the agent sees the renewal")
        self.c.pexpire(k, 5000)
        st, doc = self.ag.get_json("/api/v1/locks/%s?target=main" % once.replace(":", "%3A"))
        self.assertEqual(st, 200, doc)
        self.assertIs(doc["renewed"], False, doc)
        p = t.run(["show", k], self.cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        ttl = [ln for ln in p.stdout.decode().splitlines() if ln.startswith("ttl")]
        self.assertTrue(ttl and "its holder renews it, so it is alive" in ttl[0], p.stdout)
        self.assertIs(t.run_json(self, ["show", k], self.cfg)["renewed"], True)
        p = t.run(["show", once], self.cfg)
        ttl = [ln for ln in p.stdout.decode().splitlines() if ln.startswith("ttl")]
        self.assertTrue(ttl and "renews" not in ttl[0], p.stdout)
        self.assertIs(t.run_json(self, ["show", once], self.cfg)["renewed"], False)
        # the release's prompt says both, as show does (an on-call trial: it
        # said neither that the holder is alive nor that 3 holds all go)
        r = "lock:renewed:3"
        self.c.hset(r, REG_UUID + ":1", 3)
        self.c.pexpire(r, 5000)

        def renewed3():
            self.c.pexpire(r, 5000)
            st, doc = self.ag.get_json("/api/v1/locks/lock%3Arenewed%3A3?target=main")
            return st == 200 and doc["renewed"]
        self.ag.wait_for(renewed3, timeout=30, interval=0.5, desc="the agent sees the renewal")
        rc, _, err = on_terminal(self.cfg, ["release", r, "--holder", REG_UUID + ":1"], b"n\n")
        err = b" ".join(err.split())
        self.assertEqual(rc, 1, err)
        self.assertIn(b"its holder renews it, so it is alive", err)
        self.assertIn(b"it holds it 3 times (reentrant): the release drops them all", err)
        self.assertEqual(self.c.hget(r, REG_UUID + ":1"), b"3")

    def test_not_the_agent(self):
        srv = http.server.HTTPServer(("127.0.0.1", 0), NotTheAgent)
        th = threading.Thread(target=srv.serve_forever, daemon=True)
        th.start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        url = "http://127.0.0.1:%d" % srv.server_address[1]
        self.touch()
        doc = t.run_json(self, ["list", "--state", "leaked", "--agent", url], self.cfg)
        self.assertFalse(doc["agent"]["answered"])
        self.assertIn("not JSON", doc["agent"]["error"])
        self.assertEqual(sorted(l["key"] for l in doc["locks"]), sorted(LEAKS))
        self.assertTrue(all(l["leak_unknown"] for l in doc["locks"]))
        p = t.run(["show", LEAKS[0], "--agent", url], self.cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"did not answer", p.stdout)

        p = t.run(["list", "--agent", "ftp://127.0.0.1:1"], self.cfg)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"--agent must be", p.stderr)
        doc = t.run_json(self, ["list", "--agent", "off"], self.cfg)
        self.assertEqual(doc["age_source"], "redis")
        self.assertIsNone(doc["agent"]["url"])


AGE = 4         # seconds the agent has seen holderA for before the releases


def on_terminal(cfg, args, answer):
    """lockctl -c cfg args at a terminal that answers `answer`: (rc, out, err)."""
    return t.at_terminal([t.LOCKCTL, "-c", cfg] + args, answer)


class IfOlderThanAgentAge(h.TestCase):
    def setUp(self):
        super().setUp()
        self.r = self.start_redis()
        self.c = self.r.client()
        self.c.set("lock:x", "holderA")                # plain, no TTL
        self.ag = self.start_agent(self.r, scan_interval="1s", leak_grace="1h",
                                   max_hold="1h")
        self.cfg = self.ag.config_path

        def old_enough():
            st, doc = self.ag.lock("lock:x")
            return st == 200 and doc["holders"][0]["id"] == "holderA" and \
                doc["age_seconds"] >= AGE
        self.ag.wait_for(old_enough, timeout=60,
                         desc="the agent's age of lock:x at least %ds" % AGE)

    def touch(self):
        """What the agent's scans do on Redis < 7.2: reset IDLETIME."""
        self.c.get("lock:x")

    def release(self, holder, older, *more, rc=0):
        self.touch()
        return t.run_json(self, ["release", "lock:x", "--holder", holder,
                                 "--if-older-than", older] + list(more), self.cfg, rc=rc)

    def test_if_older_than_takes_the_agents_age(self):
        older = "%ds" % (AGE - 1)
        doc = self.release("holderA", older, "--dry-run")
        self.assertEqual(doc["outcome"], "would_release", doc)
        # the agent's age is holderA's: another holder is refused as ever
        doc = self.release("holderB", older, "--dry-run", rc=1)
        self.assertEqual(doc["outcome"], "holder_changed", doc)
        # far over the age: too_young, with what is known and the next step
        doc = self.release("holderA", "1h", "--dry-run", rc=1)
        self.assertEqual(doc["outcome"], "too_young", doc)
        self.assertIn("the agent", doc.get("hint", ""), doc)
        self.touch()
        p = t.run(["release", "lock:x", "--holder", "holderA", "--if-older-than", "1h",
                   "--dry-run"], self.cfg)
        self.assertEqual(p.returncode, 1, p.stderr)
        err = p.stderr.decode().replace("\\\n    ", "").replace("\n  ", " ")
        self.assertIn("[too_young]", err)
        self.assertIn("old (from the agent", err)
        self.assertIn("release lock:x --holder holderA", err)   # the command to paste
        # a terminal's prompt shows the agent's age, not "unknown"
        self.touch()
        rc, _, err = on_terminal(self.cfg, ["release", "lock:x", "--holder", "holderA"],
                                 b"n\n")
        self.assertEqual(rc, 1, err)
        self.assertIn(b"(from the agent)", err)
        self.assertNotIn(b"age unknown", err)
        self.assertEqual(self.c.get("lock:x"), b"holderA")
        # and for real
        doc = self.release("holderA", older, "--yes")
        self.assertEqual(doc["outcome"], "released", doc)
        self.assertFalse(self.c.exists("lock:x"))

    def test_agent_down_is_as_before(self):
        self.ag.stop()
        doc = self.release("holderA", "%ds" % (AGE - 1), "--dry-run", rc=1)
        self.assertEqual(doc["outcome"], "too_young", doc)
        self.touch()
        p = t.run(["release", "lock:x", "--holder", "holderA", "--if-older-than", "1h",
                   "--dry-run"], self.cfg)
        self.assertEqual(p.returncode, 1, p.stderr)
        err = p.stderr.decode().replace("\n  ", " ")
        self.assertIn("[too_young]", err)
        self.assertIn("did not answer", err)
        self.assertEqual(self.c.get("lock:x"), b"holderA")


class AgentJustStarted(h.TestCase):
    def test_what_its_first_look_saw_is_at_least_that_old(self):
        # an on-call trial: an agent restarted 2 s before called a leak of
        # minutes "held", 2 s old (no ">="), where lockctl alone said leaked?
        r = self.start_redis()
        c = r.client()
        c.set("lock:leak:billing", "worker-7-x")          # a leak, of unknown age
        c.set("lock:orders:42", "tok", px=600000)
        ag = self.start_agent(r, scan_interval="1s", leak_grace="1h", max_hold="1h")
        ag.wait_scans(1)
        c.set("lock:orders:43", "tok", px=600000)        # after its first look
        ag.wait_for(lambda: ag.lock("lock:orders:43")[0] == 200, 20, desc="lock:orders:43 seen")
        for key, lower in (("lock:leak:billing", True), ("lock:orders:42", True),
                           ("lock:orders:43", False)):
            self.assertIs(ag.lock(key)[1]["age_lower_bound"], lower, key)
        doc = t.run_json(self, ["show", "lock:leak:billing"], ag.config_path)
        self.assertEqual(doc["age_source"], "agent", doc)
        self.assertTrue(doc["age_lower_bound"], doc)
        self.assertTrue(doc["leak_unknown"], doc)
        p = t.run(["list"], ag.config_path)
        row = [ln for ln in p.stdout.decode().splitlines() if "lock:leak:billing" in ln]
        self.assertTrue(row and "leaked?" in row[0] and ">=" in row[0], p.stdout)
        doc = t.run_json(self, ["show", "lock:orders:43"], ag.config_path)
        self.assertFalse(doc["age_lower_bound"], doc)


class IfOlderThanTakenAgain(h.TestCase):
    """The on-call trial: a holder id used again (a fixed worker token,
    Spring's client id, Redisson's uuid:thread) takes the lock again between
    two scans; the agent's first sight is of the holding before."""

    def test_the_agents_age_is_not_of_a_lock_taken_again(self):
        r = self.start_redis()
        c = r.client()
        c.set("lock:job:nightly", "worker-7", px=600000)
        ag = self.start_agent(r, scan_interval="5s", max_hold="1h")
        cfg = ag.config_path
        ag.wait_for(lambda: ag.lock("lock:job:nightly")[1].get("age_seconds", 0) >= AGE,
                    timeout=60, desc="the agent's age of lock:job:nightly")
        c.delete("lock:job:nightly")
        c.set("lock:job:nightly", "worker-7", px=600000)    # a new holding, 0 s old
        doc = t.run_json(self, ["release", "lock:job:nightly", "--holder", "worker-7",
                                "--if-older-than", "%ds" % (AGE - 2), "--yes"], cfg, rc=1)
        self.assertEqual(doc["outcome"], "too_young", doc)
        self.assertEqual(c.get("lock:job:nightly"), b"worker-7")
        # said: the agent's age did not count, and why
        p = t.run(["release", "lock:job:nightly", "--holder", "worker-7",
                   "--if-older-than", "%ds" % (AGE - 2), "--yes"], cfg)
        self.assertEqual(p.returncode, 1, p.stderr)
        err = " ".join(p.stderr.decode().replace("\\\n", " ").split())
        if "the agent's age does not count" in err:
            self.assertIn("the lease was set again since it read the lock", err)
        else:
            # the agent scanned since: it counts from that read
            self.assertIn("last saw its lease set again", err)
        self.assertEqual(c.get("lock:job:nightly"), b"worker-7")
        # a holding nobody set again is as old as the agent says
        c.set("lock:job:weekly", "worker-7", px=600000)
        ag.wait_for(lambda: ag.lock("lock:job:weekly")[1].get("age_seconds", 0) >= AGE,
                    timeout=60, desc="the agent's age of lock:job:weekly")
        doc = t.run_json(self, ["release", "lock:job:weekly", "--holder", "worker-7",
                                "--if-older-than", "%ds" % (AGE - 2), "--yes"], cfg)
        self.assertEqual(doc["outcome"], "released", doc)


REG_UUID = "5f0c2b9e-8d1a-4c3e-9b7f-2a6d4e8c1f30"


class RegistryHolder(h.TestCase):
    def test_show_gives_the_registry(self):
        r = self.start_redis()
        c = r.client()
        at = int(time.time() * 1000) - 90000          # taken 90 s ago
        c.hset("lock:reent:1", REG_UUID + ":42", "2")
        c.pexpire("lock:reent:1", 600000)
        c.hset("lockwatch:client:{%s}" % REG_UUID, mapping={
            "host": "web-7", "pid": "4242", "at:42:lock:reent:1": str(at)})
        ag = self.start_agent(r, max_hold="1h")
        ag.wait_for(lambda: ag.lock("lock:reent:1")[0] == 200 and
                    ag.lock("lock:reent:1")[1]["pid"] == 4242, timeout=30,
                    desc="the agent's registry facts of lock:reent:1")
        api = ag.lock("lock:reent:1")[1]
        for extra in ([], ["--agent", "off"]):
            with self.subTest(extra=extra):
                doc = t.run_json(self, ["show", "lock:reent:1"] + extra, ag.config_path)
                self.assertEqual((doc["host"], doc["pid"], doc["acquired_at"]),
                                 (api["host"], api["pid"], api["acquired_at"]), doc)
                self.assertEqual((doc["host"], doc["pid"]), ("web-7", 4242))
                if extra:
                    self.assertGreaterEqual(doc["age_seconds"], 89, doc)
                else:
                    # the agent's first look cannot bound a claimed time (a
                    # red-team: after a restart a 79 s old lock was a 1-hour
                    # fact): at least its first sight, the claim shown apart
                    self.assertTrue(doc["age_lower_bound"], doc)
                p = t.run(["show", "lock:reent:1"] + extra, ag.config_path)
                out = p.stdout.decode()
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertRegex(out, r"(?m)^\s*host\s+web-7$")
                self.assertRegex(out, r"(?m)^\s*pid\s+4242$")
                self.assertRegex(out, r"(?m)^\s*acquired\s+\d{4}-")
        # a registry lockctl may not read leaves them unknown, no error
        c.delete("lockwatch:client:{%s}" % REG_UUID)
        doc = t.run_json(self, ["show", "lock:reent:1", "--agent", "off"], ag.config_path)
        self.assertEqual((doc["host"], doc["pid"], doc["acquired_at"]), (None, None, None))


class OtherServer(h.TestCase):
    def test_a_config_of_another_server_is_not_shown_the_agents_view(self):
        r = self.start_redis()
        r.client().set("lock:mine:1", "tok", px=600000)
        ag = self.start_agent(r, max_hold="1h")
        ag.wait_for(lambda: ag.lock("lock:mine:1")[0] == 200, timeout=30,
                    desc="the agent sees lock:mine:1")
        where = "127.0.0.1:%d/0" % r.port
        st, doc = ag.get_json("/api/v1/locks?target=main")
        self.assertEqual((st, doc["target_address"]), (200, where), doc)
        self.assertEqual(ag.lock("lock:mine:1")[1]["target_address"], where)
        self.assertIsNone(ag.get_json("/api/v1/locks")[1]["target_address"])

        port = h.free_port()
        with open(ag.config_path) as f:
            text = f.read()
        d = h._mkdtemp("lw-p1-")
        p1 = os.path.join(d, "p1.ini")
        with open(p1, "w") as f:
            f.write(text.replace(r.url, "redis://127.0.0.1:%d/0" % port))
        for args in (["list"], ["show", "lock:mine:1"]):
            with self.subTest(args=args):
                p = t.run(args, p1)
                err = b" ".join(p.stderr.split()).decode()
                self.assertEqual(p.returncode, 3, err)
                self.assertNotIn(b"FROM THE AGENT", p.stdout)
                self.assertNotIn(b"lock:mine:1", p.stdout)
                self.assertIn("watches target main at %s, not at 127.0.0.1:%d/0 as %s says"
                              % (where, port, p1), err)
                self.assertIn("connect", err)
        # the agent's own config, Redis answering: as ever
        doc = t.run_json(self, ["list"], ag.config_path)
        self.assertEqual([l["key"] for l in doc["locks"]], ["lock:mine:1"])
        self.assertEqual(doc["age_source"], "agent")
        # the same server written another way (localhost): the same, the
        # agent's view is shown
        p0 = os.path.join(d, "p0.ini")
        with open(p0, "w") as f:
            f.write(text.replace(r.url, "redis://localhost:%d/0" % r.port))
        p = t.run(["list", "--json"], p0)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(b"watches target", p.stderr)
        self.assertEqual(json.loads(p.stdout.decode())["age_source"], "agent")

        # a config of another server that answers, holding the same key by
        # the same holder: no age or state of the agent's server is taken
        r2 = self.start_redis()
        r2.client().set("lock:mine:1", "tok", px=600000)
        p2 = os.path.join(d, "p2.ini")
        with open(p2, "w") as f:
            f.write(text.replace(r.url, "redis://127.0.0.1:%d/0" % r2.port))
        note = "watches target main at %s, not at 127.0.0.1:%d/0" % (where, r2.port)
        p = t.run(["list", "--json"], p2)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(note, b" ".join(p.stderr.split()).decode())
        doc = json.loads(p.stdout.decode())
        self.assertEqual([l["key"] for l in doc["locks"]], ["lock:mine:1"])
        self.assertNotEqual(doc["age_source"], "agent", doc)
        self.assertFalse(doc["agent"]["answered"], doc)
        for l in doc["locks"]:
            self.assertNotEqual(l["age_source"], "agent", l)
            self.assertIsNone(l["first_seen"], l)
        p = t.run(["show", "lock:mine:1", "--json"], p2)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(note, b" ".join(p.stderr.split()).decode())
        one = json.loads(p.stdout.decode())
        self.assertNotEqual(one["age_source"], "agent", one)
        p = t.run(["list"], p2)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(b"age_source: agent", p.stdout)
        self.assertIn(b"watches another server", p.stdout)
        # nor does a release judge by them (--if-older-than: an age only
        # the agent's view of its own server could give here)
        p = t.run(["release", "lock:mine:1", "--holder", "tok", "--if-older-than", "1ms",
                   "--dry-run"], p2)
        self.assertIn(note, b" ".join(p.stderr.split()).decode())


if __name__ == "__main__":
    h.main()
