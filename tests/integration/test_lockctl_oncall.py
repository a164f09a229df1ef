# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (lockctl against a small keyspace and an agent scanning it; next to no CPU)
"""lockctl's defects from an on-call trial, each against a real redis-server
(and lockwatchd where the defect was about the agent's view).

- a --url of the very server the agent watches (127.0.0.1 or localhost for
  the config's address) is no other server: the agent's view is used, with
  no false "watches another server" footer; a --url of another server
  still drops it;
- a key outside the target's patterns is refused by release and expire
  before any Redis call (`pattern`, exit 1, naming the patterns), not sent
  to Redis to be refused NOPERM (exit 3) with advice to widen the ACL; show
  of such a key the Redis user may not read says it is outside the
  patterns (exit 1), without that advice;
- a holder longer than the 159 bytes lockctl and the agent keep: show marks
  the cut ("…") and says how to read it whole; list, show and release
  --if-leaked judge it as the agent does (its tracker knows a holder by the
  kept bytes): leaked with the agent's times, leaked? without the agent,
  where release --if-leaked then refuses (before: would_release);
- with the agent down, list and show agree on a liblockwatch reentrant
  lock: list reads the client registry (lockwatch:client:{<uuid>}) as show
  does, so its age is the registry's acquisition time and `list --state
  long` has it; show says that time is the registry's, not the value's;
- a hash whose fields name no holder lockctl knows: show says lockctl does
  not release it and how to read its fields; release's refusal says no
  --holder can match, not that the holder changed hands.
"""

import os
import time

import harness as h
import test_lockctl as lt


class LockctlOncall(h.TestCase):

    def test_url_of_the_agents_own_server_keeps_its_view(self):
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:url:1", "tok-url")
        ag = self.start_agent(rs, scan_interval="300ms", leak_grace="1s", max_hold="1h")
        ag.wait_for(lambda: ag.get_json("/api/v1/locks?state=leaked")[1]["count"] == 1,
                    timeout=30, desc="the agent sees lock:url:1 leaked")
        for host in ("127.0.0.1", "localhost"):
            url = "redis://%s:%d/0" % (host, rs.port)
            p = lt.run(["--url", url, "show", "lock:url:1"], ag.config_path,
                       env=dict(os.environ, COLUMNS="200"))
            out, err = p.stdout.decode(), p.stderr.decode()
            self.assertEqual(p.returncode, 0, err)
            self.assertNotIn("another server", out + err)
            self.assertNotIn("not of --url", err)
            self.assertIn("age_source: agent", out)
            doc = lt.run_json(self, ["--url", url, "list"], ag.config_path)
            self.assertTrue(doc["agent"]["answered"], doc["agent"])
            self.assertEqual(doc["agent"]["judged"], 1, doc["agent"])
        # the same server in another database is another keyspace: not its view
        p = lt.run(["--url", "redis://127.0.0.1:%d/1" % rs.port, "list"], ag.config_path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"not of --url", p.stderr)

    def test_a_redlock_group_as_target_names_its_nodes(self):
        # an on-call trial: -t with the target label LockRedlockSplit
        # carries (its [redlock] group) said only "no target"
        path = os.path.join(h._mkdtemp("lw-oncall-rl-"), "lockwatch.ini")
        with open(path, "w") as f:
            f.write(h.config_text(h.free_port(), [("r1", "redis://127.0.0.1:1/0"),
                                                  ("r2", "redis://127.0.0.1:2/0")],
                                  extra="[redlock orders]\ntargets = r1, r2\n"))
        p = lt.run(["-t", "orders", "show", "lock:x"], path)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(b'no target "orders"', p.stderr)
        self.assertIn(b'"orders" is a [redlock] group of targets r1, r2', p.stderr)
        self.assertIn(b"lockctl -t r1 show KEY", p.stderr)

    def test_expire_refusals_end_with_the_next_step(self):
        # an on-call trial: has_ttl (and wrongtype, a semaphore) said no next step
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:ttl:1", "tok-1", px=600000)
        cfg = lt.write_config(rs)
        p = lt.run(["expire", "lock:ttl:1", "--holder", "tok-1", "--ttl", "30s", "--yes"], cfg)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"[has_ttl]", p.stderr)
        self.assertIn(b"next: it expires on its own; to free it now, release that holder:",
                      p.stderr)
        self.assertRegex(p.stderr, rb"release lock:ttl:1 --holder tok-1")
        self.assertGreater(c.pttl("lock:ttl:1"), 30000)

    def test_a_key_outside_the_patterns_is_refused_before_redis(self):
        rs = self.start_redis()
        c = rs.client()
        c.execute_command("ACL", "SETUSER", "lockwatch", "on", ">s3cret", "resetkeys", "~lock:*",
                          "~lockwatch:*", "resetchannels", "-@all", "+@read", "+evalsha",
                          "+eval", "+ping", "+info", "+xadd")
        c.set("other:key", "x")
        cfg = lt.write_config(url="redis://lockwatch@127.0.0.1:%d/0" % rs.port,
                              target_extra={"password_file": h.password_file("s3cret")})
        c.config_resetstat()
        for args in (["release", "other:key", "--holder", "x", "--dry-run"],
                     ["release", "other:key", "--holder", "x", "--yes"],
                     ["expire", "other:key", "--holder", "x", "--ttl", "30s", "--yes"]):
            p = lt.run(args, cfg, env=dict(os.environ, COLUMNS="200"))
            err = p.stderr.decode()
            self.assertEqual(p.returncode, 1, err)
            self.assertIn("refused: the key matches none of the target's patterns (lock:*)", err)
            self.assertIn("[pattern]", err)
            self.assertIn("next: ", err)
            self.assertNotIn("NOPERM", err)
            self.assertNotIn("permission", err)
            doc = lt.run_json(self, args, cfg, rc=1)
            self.assertEqual((doc["outcome"], doc["refused"]), ("pattern", True), doc)
            self.assertIn("(lock:*)", doc["message"])
            self.assertTrue(doc["hint"], doc)
        stats = c.info("commandstats")
        self.assertFalse({"cmdstat_evalsha", "cmdstat_eval", "cmdstat_type",
                          "cmdstat_auth"} & set(stats), stats)
        self.assertEqual(c.get("other:key"), b"x")
        self.assertEqual(c.pttl("other:key"), -1)
        self.assertEqual(c.exists("lockwatch:audit"), 0)
        # show may read any key it is let read; one it is not is outside the
        # patterns, not an ACL to widen
        p = lt.run(["show", "other:key"], cfg, env=dict(os.environ, COLUMNS="200"))
        err = p.stderr.decode()
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("matches none of the target's patterns (lock:*)", err)
        self.assertNotIn("give the Redis user", err)
        # what to do next, once, as the hint: no advice to widen the ACL
        self.assertEqual(err.count("hint: "), 1, err)
        self.assertIn("hint: lockctl shows the locks of the target's patterns", err)
        self.assertNotIn("next: ", err)
        doc = lt.run_json(self, ["show", "other:key"], cfg, rc=1)
        self.assertIn("none of the target's patterns", doc["error"], doc)
        self.assertNotIn("permission", doc["hint"], doc)
        # a key inside the patterns reads as ever
        c.set("lock:in:1", "tok")
        self.assertEqual(lt.run(["show", "lock:in:1"], cfg).returncode, 0)

    def test_a_long_holder_is_judged_as_the_agent_judges_it(self):
        rs = self.start_redis()
        c = rs.client()
        holder = "h" * 200 + "-" + "t" * 299          # 500 bytes
        c.set("lock:long:1", holder)                  # no TTL: leaked
        ag = self.start_agent(rs, scan_interval="300ms", leak_grace="1s", max_hold="1h")
        ag.wait_for(lambda: ag.get_json("/api/v1/locks?state=leaked")[1]["count"] == 1,
                    timeout=30, desc="the agent calls lock:long:1 leaked")
        cfg = ag.config_path
        doc = lt.run_json(self, ["list", "--state", "leaked"], cfg)
        self.assertEqual(len(doc["locks"]), 1, doc)
        lock = doc["locks"][0]
        self.assertIn("leaked", lock["states"], lock)
        self.assertEqual(lock["age_source"], "agent", lock)
        self.assertFalse(lock["leak_unknown"], lock)
        self.assertTrue(lock["holders"][0]["id_truncated"], lock)
        self.assertEqual(doc["agent"]["judged"], 1, doc["agent"])
        doc = lt.run_json(self, ["show", "lock:long:1"], cfg)
        self.assertEqual((doc["age_source"], doc["states"]), ("agent", ["held", "leaked"]), doc)
        p = lt.run(["show", "lock:long:1"], cfg, env=dict(os.environ, COLUMNS="400"))
        out = " ".join(p.stdout.decode().split())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("h" * 159 + "\u2026", out)
        self.assertIn("no release command for holder 1: its id is longer than the 159 bytes "
                      "lockctl reads", out)
        # as the target's node and user, ready to paste (an on-call trial)
        self.assertIn("redis-cli -h 127.0.0.1 -p %d GET lock:long:1" % rs.port, out)
        self.assertIn("--holder-hex", out)
        p = lt.run(["list", "-o", "wide"], cfg)
        self.assertIn(("h" * 159 + "\u2026").encode(), p.stdout)
        doc = lt.run_json(self, ["release", "lock:long:1", "--holder", holder, "--if-leaked",
                                 "--dry-run"], cfg)
        self.assertEqual(doc["outcome"], "would_release", doc)
        # without the agent: leaked? (no TTL for how long is unknown) in list,
        # and the same verdict for release --if-leaked, refused before the script
        doc = lt.run_json(self, ["--agent", "off", "list", "--state", "leaked"], cfg)
        self.assertTrue(doc["locks"][0]["leak_unknown"], doc)
        doc = lt.run_json(self, ["--agent", "off", "release", "lock:long:1", "--holder", holder,
                                 "--if-leaked", "--dry-run"], cfg, rc=1)
        self.assertEqual(doc["outcome"], "not_leaked", doc)
        # another holder with the same first 159 bytes is still refused by the script
        doc = lt.run_json(self, ["release", "lock:long:1", "--holder", holder[:-1] + "x",
                                 "--dry-run"], cfg, rc=1)
        self.assertEqual(doc["outcome"], "holder_changed", doc)
        # a wrong holder refused before asking: the holder it has is shown
        # cut as cut, with how to get it whole (an on-call trial: the cut id
        # as if whole, then "release it with:" and nothing after)
        p = lt.run(["release", "lock:long:1", "--holder", "x", "--yes"], cfg,
                   env=dict(os.environ, COLUMNS="400"))
        err = " ".join(p.stderr.decode().split())
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("h" * 159 + "\u2026 now (an id longer than the 159 bytes lockctl reads)", err)
        self.assertIn("read it whole with redis-cli -h 127.0.0.1 -p %d GET KEY" % rs.port, err)
        self.assertNotIn("release it with:", err)
        self.assertEqual(c.get("lock:long:1"), holder.encode())

    def test_a_pid_token_gets_no_expire_it_would_refuse(self):
        # an on-call trial: a lock whose token is a PID got an expire to paste,
        # refused "wrongtype ... neither a string nor a hash lock", then advice
        # to give "that holder's permit back", which deletes the key
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:cron:pid", "31337")
        cfg = lt.write_config(url="redis://127.0.0.1:%d/0" % rs.port)
        p = lt.run(["--agent", "off", "release", "lock:cron:pid", "--holder", "31337",
                    "--if-leaked", "--yes"], cfg)
        err = " ".join(p.stderr.decode().split())
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("[not_leaked]", err)
        self.assertNotIn("expire lock:cron:pid", err)
        self.assertIn("release lock:cron:pid --holder 31337", err)
        doc = lt.run_json(self, ["--agent", "off", "release", "lock:cron:pid", "--holder", "31337",
                                 "--if-leaked", "--yes"], cfg, rc=1)
        self.assertNotIn("expire", doc["hint"], doc)
        self.assertIn("or release it without --if-leaked", doc["hint"], doc)
        p = lt.run(["expire", "lock:cron:pid", "--holder", "31337", "--ttl", "30s", "--yes"], cfg)
        err = " ".join(p.stderr.decode().split())
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("[wrongtype]", err)
        self.assertIn("a bare number that may be one's count", err)
        self.assertNotIn("permit back, release it", err)
        self.assertEqual(c.get("lock:cron:pid"), b"31337")

    def test_a_hash_of_no_known_holder_says_what_is_left(self):
        # an on-call trial: a hash lock whose field is no client's
        # <uuid>:<thread> showed "released by compare-and-delete" and
        # "lockctl show --json shows the value" (it does not), and its
        # release was refused as "a mistyped holder, or it changed hands"
        rs = self.start_redis()
        c = rs.client()
        c.hset("lock:odd", "worker-7", "1")
        cfg = lt.write_config(url="redis://127.0.0.1:%d/0" % rs.port)
        p = lt.run(["--agent", "off", "show", "lock:odd"], cfg)
        out = " ".join(p.stdout.decode().split())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("compare-and-delete", out)
        self.assertIn("lockctl does not release it", out)
        self.assertIn("redis-cli -h 127.0.0.1 -p %d HGETALL lock:odd" % rs.port, out)
        p = lt.run(["--agent", "off", "release", "lock:odd", "--holder", "worker-7", "--yes"],
                   cfg)
        err = " ".join(p.stderr.decode().split())
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("[holder_changed]", err)
        self.assertIn("fields name no holder lockctl knows", err)
        self.assertNotIn("mistyped", err)
        self.assertEqual(c.hgetall("lock:odd"), {b"worker-7": b"1"})

    def test_url_at_a_replica_says_so(self):
        # an on-call trial: --url at a replica (after a failover) was told
        # "run the same command again (it asks for the primary anew)", which
        # --url never does
        primary = self.start_redis()
        replica = self.start_redis(args=["--replicaof", "127.0.0.1", str(primary.port)])
        primary.client().set("lock:r", "tok")
        h.wait_until(lambda: replica.client().get("lock:r") == b"tok", 20,
                     desc="the replica in sync")
        cfg = lt.write_config(url="redis://127.0.0.1:%d/0" % primary.port)
        p = lt.run(["--agent", "off", "--url", "redis://127.0.0.1:%d/0" % replica.port,
                    "release", "lock:r", "--holder", "tok", "--yes"], cfg)
        err = " ".join(p.stderr.decode().split())
        self.assertEqual(p.returncode, 3, err)
        self.assertIn("READONLY", err)
        self.assertIn("--url names a replica", err)
        self.assertNotIn("asks for the primary anew", err)
        self.assertEqual(primary.client().get("lock:r"), b"tok")

    def test_list_reads_the_client_registry_as_show_does(self):
        rs = self.start_redis()
        c = rs.client()
        uuid = "5f0c2b9e-8d1a-4c3e-9b7f-2a6d4e8c1f30"
        key = "lock:report:monthly-close"
        at = int(time.time() * 1000) - 3 * 3600 * 1000        # taken 3 h ago
        c.hset(key, uuid + ":42", "20")
        c.pexpire(key, 600000)
        c.hset("lockwatch:client:{%s}" % uuid, mapping={
            "host": "batch-1", "pid": "4242", "at:42:%s" % key: str(at)})
        c.set("lock:plain:1", "tok", px=600000)
        cfg = lt.write_config(rs, max_hold="1h", max_reentrancy=16)
        agent_off = ["--agent", "off"]
        doc = lt.run_json(self, agent_off + ["list", "--state", "long"], cfg)
        self.assertEqual([l["key"] for l in doc["locks"]], [key], doc)
        lock = doc["locks"][0]
        self.assertEqual(lock["states"], ["held", "long", "reentrant_high"], lock)
        self.assertEqual((lock["age_source"], lock["acquired_source"]),
                         ("acquired", "registry"), lock)
        self.assertEqual((lock["host"], lock["pid"]), ("batch-1", 4242), lock)
        self.assertGreaterEqual(lock["age_seconds"], 3 * 3600 - 5, lock)
        shown = lt.run_json(self, agent_off + ["show", key], cfg)
        self.assertEqual((shown["states"], shown["acquired_at"], shown["acquired_source"]),
                         (lock["states"], lock["acquired_at"], "registry"), shown)
        p = lt.run(agent_off + ["list"], cfg, env=dict(os.environ, COLUMNS="200"))
        row = [ln for ln in p.stdout.decode().splitlines() if ln.startswith(key)]
        self.assertTrue(row and "3h00m" in row[0] and "long, reentrant_high" in row[0],
                        p.stdout)
        p = lt.run(agent_off + ["show", key], cfg, env=dict(os.environ, COLUMNS="200"))
        out = p.stdout.decode()
        self.assertRegex(out, r"(?m)^age +3h00m \(from the acquisition time in the client "
                         r"registry\)$")
        self.assertNotIn("in the value", out)
        # a plain lock's own acquisition time (an lw1 token) is still the value's
        tok = "lw1:web-3:4211:4230:%d:9f86d081884c7d65" % (at + 3600 * 1000)
        c.set("lock:lw1:1", tok, px=600000)
        doc = lt.run_json(self, agent_off + ["show", "lock:lw1:1"], cfg)
        self.assertEqual(doc["acquired_source"], "value", doc)


if __name__ == "__main__":
    h.main()
