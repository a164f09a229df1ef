# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (lockctl against a running agent and a stopped Redis; next to no CPU)
"""lockctl's defects from a user trial, each against a real redis-server and
lockwatchd.

- a 64 KiB key: `show` asks the agent for it, whose URL is then over what
  libmicrohttpd takes (HTTP 414); lockctl takes the lock from the agent's
  list instead (age_source agent), and never advises starting a running
  agent; a 16 KiB key's show gives the true reason it has no release line.
"""

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


if __name__ == "__main__":
    h.main()
