# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (an agent with a leaked lock and a target down, waited on with 20 s timeouts;
#   lockctl runs a handful of times; next to no CPU)
"""lockctl alerts: what fires now, from the agent (GET /api/v1/alerts), for
the on-call trial whose engineer had to curl the API to learn it.

A real redis-server and lockwatchd with two targets: "main" holds a lock
without a TTL (LockLeaked, warning) and one whose key is hostile (a newline,
ESC, CR, a right-to-left override, invalid UTF-8), and "second" points at a
free port with nothing listening (LockTargetDown, critical).  Then

- the table lists the critical alert first, every line within 80 columns at
  COLUMNS=80, the subject as the labels have it ("lock:leak on main",
  "target second"), the summary under its row, and a line saying how many
  fire; the hostile key shown with U+FFFD, no control character;
- -t keeps one target's alerts, --severity one severity; a filter that
  keeps none says so in one line, exit 0;
- --json is the agent's document (its alerts, labels, startsAt,
  fingerprints, summaries, total);
- an agent with nothing firing: one line, "no alerts firing (agent at URL)";
- no agent answering: exit 3, the hint, and --json's error object;
- --severity of another word, or an operand: exit 2.
"""

import json
import os

import harness as h
import test_lockctl as lt

HOSTILE = b"lock:evil\n\x1b[2J\r\xe2\x80\xae\xff\xfe:1"


def run(ag, *args, columns="80"):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = columns
    return lt.run(["--agent", "http://127.0.0.1:%d" % ag.port, "alerts"] + list(args),
                  ag.config_path, env=env)


class LockctlAlerts(h.TestCase):

    def setUp(self):
        super().setUp()
        self.rs = self.start_redis()
        c = self.rs.client()
        c.set("lock:leak", "tok-1")                 # no TTL: leaked after leak_grace
        c.set(HOSTILE, "tok-2")
        self.ag = self.start_agent(targets=[("main", self.rs.url),
                                            ("second", "redis://127.0.0.1:%d/0" % h.free_port())],
                                   scan_interval="300ms", leak_grace="1s", max_hold="1h")
        self.doc = self.ag.wait_for(self.firing, timeout=20,
                                    desc="two LockLeaked and one LockTargetDown")

    def firing(self):
        st, doc = self.ag.get_json("/api/v1/alerts")
        self.assertEqual(st, 200, doc)
        names = sorted(a["labels"]["alertname"] for a in doc["alerts"])
        return doc if names == ["LockLeaked", "LockLeaked", "LockTargetDown"] else None

    def ok(self, p):
        self.assertEqual(p.returncode, 0, "stdout: %s\nstderr: %s" % (p.stdout[-2000:],
                                                                      p.stderr[-2000:]))
        return p.stdout.decode("utf-8")

    def test_worst_first_within_80_columns_hostile_key_safe(self):
        p = run(self.ag)
        out = self.ok(p)
        lt.assert_terminal_safe(self, p.stdout, 80)
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("SEVERITY"), out)
        for title in ("ALERT", "SUBJECT", "SINCE"):
            self.assertIn(title, lines[0])
        rows = [ln for ln in lines if ln.startswith(("critical", "warning", "info"))]
        self.assertEqual(len(rows), 3, out)
        self.assertTrue(rows[0].startswith("critical"), out)
        self.assertIn("LockTargetDown", rows[0])
        self.assertIn("target second", rows[0])
        self.assertTrue(all(r.startswith("warning") and "LockLeaked" in r for r in rows[1:]), out)
        self.assertTrue(any("lock:leak on main" in r for r in rows), out)
        # the hostile key: every byte that could move the cursor is U+FFFD
        evil = [r for r in rows if "lock:evil" in r]
        self.assertEqual(len(evil), 1, out)
        self.assertIn("\ufffd", evil[0])
        for bad in ("\x1b", "\r", "\u202e"):
            self.assertNotIn(bad, out)
        # the summary, a sentence under its row, wrapped at spaces
        down = [a for a in self.doc["alerts"] if a["labels"]["alertname"] == "LockTargetDown"][0]
        summary = down["annotations"]["summary"]
        self.assertIn(" ".join(summary.split()), " ".join(out.split()))
        after = lines[lines.index(rows[0]) + 1]
        self.assertTrue(after.startswith("    ") and summary.split()[0] in after, out)
        self.assertIn("3 alerts firing, worst first (agent at http://127.0.0.1:%d)" % self.ag.port,
                      " ".join(out.split()))

        # --describe: each description follows its summary, wrapped the same
        description = down["annotations"]["description"]
        self.assertNotIn(" ".join(description.split()[:6]), " ".join(out.split()))
        p = run(self.ag, "--describe")
        described = self.ok(p)
        lt.assert_terminal_safe(self, p.stdout, 80)
        self.assertIn(" ".join(description.split()), " ".join(described.split()))

        # a pipe without COLUMNS: every cell whole, still terminal-safe
        p = run(self.ag, columns=None)
        wide = self.ok(p)
        lt.assert_terminal_safe(self, p.stdout, None)
        self.assertIn(summary, wide)
        self.assertIn("lock:evil\ufffd", wide)

    def test_target_and_severity_filters(self):
        out = self.ok(run(self.ag, "-t", "second"))
        self.assertIn("LockTargetDown", out)
        self.assertNotIn("LockLeaked", out)
        self.assertIn("1 alert firing on target second", " ".join(out.split()))
        out = self.ok(run(self.ag, "-t", "main"))
        self.assertNotIn("LockTargetDown", out)
        self.assertEqual(out.count("LockLeaked"), 2, out)
        out = self.ok(run(self.ag, "--severity", "critical"))
        self.assertIn("LockTargetDown", out)
        self.assertNotIn("LockLeaked", out)
        out = self.ok(run(self.ag, "--severity", "info", "-t", "main"))
        self.assertEqual(" ".join(out.split()),
                         "no info alerts firing on target main (agent at http://127.0.0.1:%d); "
                         "3 others firing" % self.ag.port)
        js = json.loads(self.ok(run(self.ag, "-t", "main", "--json")))
        self.assertEqual(sorted(a["labels"]["alertname"] for a in js["alerts"]),
                         ["LockLeaked", "LockLeaked"])
        # usage errors: exit 2
        for args in (["--severity", "page"], ["stray"], ["--bogus"]):
            p = run(self.ag, *args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertTrue(p.stderr, args)

    def test_json_is_the_agents_document(self):
        js = json.loads(self.ok(run(self.ag, "--json")))
        st, doc = self.ag.get_json("/api/v1/alerts")
        self.assertEqual(st, 200)
        self.assertEqual(sorted(js), sorted(doc))          # alerts, total, suppressed
        self.assertEqual((js["total"], js["suppressed"]), (doc["total"], doc["suppressed"]))

        def key(a):
            return (a["fingerprint"], a["labels"], a["startsAt"], a["state"],
                    a["annotations"]["summary"])
        self.assertEqual(sorted(map(key, js["alerts"]), key=lambda k: k[0]),
                         sorted(map(key, doc["alerts"]), key=lambda k: k[0]))
        evil = [a for a in js["alerts"] if a["labels"].get("key", "").startswith("lock:evil")]
        self.assertEqual(len(evil), 1, js)
        self.assertIn("\n", evil[0]["labels"]["key"])        # the agent's label, as it came

    def test_agent_down_is_exit_3_with_a_hint(self):
        port = h.free_port()
        for extra in ([], ["--json"]):
            p = lt.run(["--agent", "http://127.0.0.1:%d" % port, "alerts"] + extra,
                       self.ag.config_path)
            self.assertEqual(p.returncode, 3, (extra, p.stdout, p.stderr))
            self.assertIn(b"did not answer", p.stderr)
            self.assertIn(b"127.0.0.1:%d" % port, p.stderr)
        err = json.loads(p.stdout)
        self.assertEqual(err["exit"], 3, err)
        self.assertIn("start lockwatchd", err["hint"])
        p = lt.run(["--agent", "http://127.0.0.1:%d" % port, "alerts"], self.ag.config_path)
        self.assertIn(b"\nhint: ", p.stderr)
        p = lt.run(["--agent", "off", "alerts"], self.ag.config_path)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_nothing_firing_is_one_line(self):
        rs = self.start_redis()
        ag = self.start_agent(rs, scan_interval="300ms", leak_grace="1s", max_hold="1h")
        ag.wait_scans(2)
        st, doc = ag.get_json("/api/v1/alerts")
        self.assertEqual((st, doc["alerts"]), (200, []))
        out = self.ok(run(ag))
        self.assertEqual(out, "no alerts firing (agent at http://127.0.0.1:%d)\n" % ag.port)


if __name__ == "__main__":
    h.main()
