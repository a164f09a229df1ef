# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (lockctl against a running agent and a stopped Redis; next to no CPU)
"""lockctl's defects from a user trial, each against a real redis-server and
lockwatchd.

- a 64 KiB key: `show` asks the agent for it, whose URL is then over what
  libmicrohttpd takes (HTTP 414); lockctl takes the lock from the agent's
  list instead (age_source agent), and never advises starting a running
  agent; a 16 KiB key's show gives the true reason it has no release line;
- `release --if-leaked` on a lock with a TTL is refused not_leaked with the
  next step (it expires on its own; the release without --if-leaked to
  paste), in the text and as the JSON's hint;
- with Redis down, `show` and `release` say what to check (the hint --json
  gives), and `show` prints the agent's last known view of the key;
- `show` writes a lock's states as list's STATE does (`leaked`, not
  `held, leaked`);
- --json's `key` is valid UTF-8 with control characters kept (as documented),
  `key_escaped` exact.
"""

import os

import harness as h
import test_lockctl as t

BIG_KEY = "lock:" + "x" * 65536
LONG_KEY = "lock:" + "y" * 16385


class LockctlTrial(h.TestCase):
    def setUp(self):
        super().setUp()
        self.r = self.start_redis()
        self.c = self.r.client()
        self.c.set(BIG_KEY, "tok-big")                 # no TTL: leaked
        self.c.set(LONG_KEY, "tok-long")
        self.ag = self.start_agent(self.r, leak_grace="1s", max_hold="1h",
                                   scan_interval="500ms")
        self.cfg = self.ag.config_path

        def big_leaked():
            st, doc = self.ag.get_json("/api/v1/locks?state=leaked")
            return st == 200 and BIG_KEY in [l["key"] for l in doc["locks"]]
        self.ag.wait_for(big_leaked, timeout=30, desc="the agent calls the 64 KiB key leaked")

    def test_big_key_takes_the_agents_view(self):
        doc = t.run_json(self, ["show", BIG_KEY], self.cfg)
        self.assertTrue(doc["agent"]["answered"], doc["agent"])
        self.assertEqual(doc["age_source"], "agent", doc["agent"])
        self.assertIn("leaked", doc["states"])
        p = t.run(["show", BIG_KEY], self.cfg)
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("did not answer", out)
        self.assertNotIn("start the agent", out)
        self.assertIn("age_source: agent", out)
        self.assertIn("no release command: key too long for a command line", out)
        self.assertNotIn("control character", out)
        # the release reads the agent's view the same way
        doc = t.run_json(self, ["release", BIG_KEY, "--holder", "tok-big", "--if-leaked",
                                "--dry-run"], self.cfg)
        self.assertEqual(doc["outcome"], "would_release", doc)

    def test_long_key_says_why_it_has_no_release_line(self):
        p = t.run(["show", LONG_KEY], self.cfg)
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("no release command: key too long for a command line (16390 bytes", out)
        self.assertNotIn("release with:", out)
        self.assertNotIn("control character", out)

    def test_if_leaked_on_a_lock_with_a_ttl_names_the_next_step(self):
        self.c.set("lock:x:1", "realtok", px=600000)
        p = t.run(["release", "lock:x:1", "--holder", "realtok", "--if-leaked", "--yes"],
                  self.cfg, env=dict(os.environ, COLUMNS="200"))
        err = p.stderr.decode().replace("\n  ", " ")       # sentences wrap
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("[not_leaked]", err)
        self.assertIn("next: the lock has a TTL (", err)
        self.assertIn("without --if-leaked", err)
        cmd = [ln for ln in err.splitlines() if " release lock:x:1 --holder realtok" in ln]
        self.assertTrue(cmd and "--if-leaked" not in cmd[0], err)
        doc = t.run_json(self, ["release", "lock:x:1", "--holder", "realtok", "--if-leaked",
                                "--dry-run"], self.cfg, rc=1)
        self.assertEqual(doc["outcome"], "not_leaked", doc)
        self.assertIn("expires on its own", doc.get("hint", ""), doc)
        self.assertRegex(doc["hint"], r"release lock:x:1 --holder realtok$")
        self.assertEqual(self.c.get("lock:x:1"), b"realtok")

    def test_if_leaked_too_young_json_hint_has_the_commands(self):
        # no TTL for an unknown time (no agent asked): the hint's next
        # steps are commands to paste, not KEY and H
        self.c.set("lock:young:1", "youngtok")
        doc = t.run_json(self, ["--agent", "off", "release", "lock:young:1", "--holder",
                                "youngtok", "--if-leaked", "--dry-run"], self.cfg, rc=1)
        self.assertEqual(doc["outcome"], "not_leaked", doc)
        self.assertRegex(doc["hint"], r"expire lock:young:1 --holder youngtok --ttl 30s, or ")
        self.assertRegex(doc["hint"], r"release lock:young:1 --holder youngtok$")
        self.assertNotIn(" KEY ", doc["hint"])

    def test_redis_down_show_and_release_give_the_hint_and_the_agents_view(self):
        self.r.kill()
        self.ag.wait_for(lambda: self.ag.get("/readyz")[0] == 503, timeout=20,
                         desc="target down")
        p = t.run(["show", LONG_KEY], self.cfg)
        out, err = p.stdout.decode(), p.stderr.decode()
        self.assertEqual(p.returncode, 3, err)
        self.assertIn("Connection refused", err)
        self.assertIn("hint: check that Redis answers", err)
        # the target is down: its view is last known, said so (never "from the agent" as
        # if current)
        self.assertRegex(out, r"^LAST KNOWN \(stale\): ", out[:200])
        self.assertRegex(out, r"(?m)^state +leaked$")
        self.assertRegex(out, r"(?m)^holder +tok-long$")
        for extra in ([], ["--json"]):
            p = t.run(["release", LONG_KEY, "--holder", "tok-long", "--yes"] + extra, self.cfg)
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertIn(b"check that Redis answers", p.stdout + p.stderr)
        # --json keeps its error object, with the same hint
        doc = t.run_json(self, ["show", LONG_KEY], self.cfg, rc=3)
        self.assertIn("check that Redis answers", doc["hint"])

    def test_show_writes_states_as_list_does(self):
        p = t.run(["show", LONG_KEY], self.cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout.decode(), r"(?m)^state +leaked$")
        p = t.run(["list", "--state", "leaked"], self.cfg,
                  env=dict(os.environ, COLUMNS="200"))
        rows = [ln.split() for ln in p.stdout.decode().splitlines() if ln.startswith("lock:y")]
        self.assertTrue(rows and rows[0][-1] == "leaked", p.stdout[:300])

    def test_json_key_is_utf8_with_control_characters_kept(self):
        """docs/lockctl.md, JSON: `key` changes only invalid bytes (U+FFFD),
        `key_escaped` is exact; the table shows U+FFFD for ESC and newline."""
        raw = b"lock:esc\x1b[31m\nnl\xff"
        self.c.set(raw, "tok-esc", px=600000)
        doc = t.run_json(self, ["show", h.url_key(raw), "--escaped"], self.cfg)
        self.assertEqual(doc["key"], "lock:esc\x1b[31m\nnl\ufffd")
        self.assertEqual(h.unescape_key(doc["key_escaped"]), raw)
        p = t.run(["show", h.url_key(raw), "--escaped"], self.cfg)
        self.assertNotIn(b"\x1b", p.stdout)


if __name__ == "__main__":
    h.main()
