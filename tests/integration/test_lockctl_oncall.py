# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (lockctl against a small keyspace and an agent scanning it; next to no CPU)
"""lockctl's defects from an on-call trial, each against a real redis-server
(and lockwatchd where the defect was about the agent's view).

- a --url of the very server the agent watches (127.0.0.1 or localhost for
  the config's address) is no other server: the agent's view is used, with
  no false "watches another server" footer; a --url of another server
  still drops it.
"""

import os

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


if __name__ == "__main__":
    h.main()
