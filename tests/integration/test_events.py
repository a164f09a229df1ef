# SPDX-License-Identifier: BSD-3-Clause
"""The timeline of lock events (docs/events.md): a forced release over HTTP
(write actions on, the token from a file) is a force_release event

- in GET /api/v1/events, with seq, time, kind, severity, target, key,
  holder and the audit's who (operator, reason), never the token;
- in lockctl events (within 80 columns, newest last, ids, addresses, owners
  and keys whole; -o wide; --json; --kind; --since) and on the status page;
- ?after= returns only what is newer; a filtered read moves next_after past
  what did not match; an after beyond the newest seq (an agent restarted)
  reads from the start with gap true; bad queries are 400;
- a 63 KiB key (the most the release body takes) of quotes, newlines and invalid UTF-8 round-trips escaped
  (its first 1024 bytes, key_cut) through the API, lockctl's table and JSON,
  the status page and /metrics (lockwatch_events_total{kind}).
A release by lockctl (another process) reaches the agent's timeline through
the audit stream, once. A dry run or a refusal is no event.
The ring's cap is tested in tests/unit/test_events.c.
"""

import html
import json
import os
import queue
import socket
import subprocess
import threading
import time

import harness as h
import test_lockctl as lt
import test_release_http as rh

# as long as the release endpoint's 64 KiB body lets through (key_escaped)
HOSTILE = b'lock:"q\'<b>\n\r\t\x00\xff\xfe\xc3' + b"\xe2\x80\xae" + b"x" * (63 * 1024)


def line_reader(stream):
    """A queue of stream's lines, read by a thread (a test waits with a
    timeout rather than hang on a silent process)."""
    q = queue.Queue()

    def pump():
        for line in iter(stream.readline, b""):
            q.put(line)
        q.put(b"")
    threading.Thread(target=pump, daemon=True).start()
    return q


def lockctl_env():
    env = dict(os.environ)
    env["COLUMNS"] = "80"
    return env


class Events(h.TestCase):

    def setUp(self):
        super().setUp()
        self.rs = self.start_redis()
        self.c = self.rs.client()
        self.tok = rh.token_file()
        self.ag = self.start_agent(self.rs, scan_interval="500ms",
                                   extra=rh.unlock_section(self.tok))
        self.ag.wait_scans(1)

    def events(self, query=""):
        st, doc = self.ag.get_json("/api/v1/events" + query)
        self.assertEqual(st, 200, doc)
        return doc

    def release(self, key, holder, reason="stuck since the deploy"):
        body = {"key_escaped": h.escape_key(key), "holder": holder, "reason": reason}
        st, _, doc = rh.post(self.ag, body)
        self.assertEqual(st, 200, doc)
        self.assertTrue(doc["deleted"], doc)
        return doc

    def lockctl(self, *args, rc=0, ag=None):
        ag = ag or self.ag
        p = lt.run(["--agent", "http://127.0.0.1:%d" % ag.port, "events"] + list(args),
                   ag.config_path, env=lockctl_env())
        self.assertEqual(p.returncode, rc, "lockctl events %s: %s\n%s"
                         % (args, p.stdout[-2000:], p.stderr[-2000:]))
        return p

    def test_forced_release_everywhere(self):
        doc = self.events()
        self.assertEqual((doc["count"], doc["last_seq"], doc["gap"]), (0, 0, False), doc)
        self.c.set("lock:orders", "tok-1")
        self.release(b"lock:orders", "tok-1")

        doc = self.events()
        self.assertEqual(doc["count"], 1, doc)
        e = doc["events"][0]
        self.assertEqual((e["seq"], e["kind"], e["severity"], e["target"], e["key"],
                          e["key_escaped"], e["key_cut"], e["holder"]),
                         (1, "force_release", "info", "main", "lock:orders", "lock:orders",
                          False, "tok-1"), e)
        self.assertIn("released by http:127.0.0.1", e["detail"])
        self.assertIn("stuck since the deploy", e["detail"])
        self.assertIn("audit entry", e["detail"])
        self.assertNotIn(rh.TOKEN, json.dumps(doc))
        self.assertRegex(e["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
        self.assertLess(abs(e["time_ms"] / 1000.0 - __import__("time").time()), 60)
        self.assertEqual(doc["last_seq"], 1)
        self.assertEqual(h.msum(self.ag.metrics(), "lockwatch_events_total",
                                kind="force_release"), 1)
        self.assertEqual(h.msum(self.ag.metrics(), "lockwatch_events_total",
                                kind="deadlock"), 0)
        self.assertEqual(h.msum(self.ag.metrics(), "lockwatch_events_dropped_total"), 0)

        # lockctl: the table (newest last), --json, --kind, --since
        self.c.set("lock:billing", "tok-2")
        self.release(b"lock:billing", "tok-2")
        out = self.lockctl().stdout.decode("utf-8")
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("TIME (UTC)"), out)
        self.assertIn("lock:orders", lines[1])
        self.assertIn("lock:billing", "\n".join(lines[2:]))
        self.assertIn("2 lock events (newest last)", out)
        for line in lines:
            self.assertLessEqual(lt.width(line), 80, line)
        js = json.loads(self.lockctl("--json").stdout)
        self.assertEqual([x["key"] for x in js["events"]], ["lock:orders", "lock:billing"])
        self.assertEqual(js["last_seq"], 2)
        js = json.loads(self.lockctl("--json", "--kind", "deadlock").stdout)
        self.assertEqual(js["events"], [])
        js = json.loads(self.lockctl("--json", "--since", "10m", "--limit", "1").stdout)
        self.assertEqual([x["seq"] for x in js["events"]], [2])
        p = self.lockctl("--kind", "nonsense", rc=2)
        self.assertIn(b"--kind must be one of", p.stderr)

        # the status page, newest first
        st, _, body = self.ag.get("/")
        self.assertEqual(st, 200)
        page = body.decode("utf-8")
        self.assertIn('<section id="events">', page)
        sec = page[page.index('<section id="events">'):]
        self.assertLess(sec.index("lock:billing"), sec.index("lock:orders"))
        self.assertIn("force_release", sec)

    def test_lockctl_release_reaches_the_timeline(self):
        """lockctl runs in its own process: the agent reads its release from
        the audit stream after a scan; the agent's own HTTP release is one
        event, not two."""
        self.ag.wait_scans(2)                   # the tail has started
        self.c.set("lock:cli", "tok-9")
        self.ag.wait_for(lambda: self.ag.lock("lock:cli")[0] == 200, 10, desc="lock:cli seen")
        time.sleep(1.2)                         # an age the agent knows
        before = time.time()
        p = lt.run(["release", "lock:cli", "--holder", "tok-9", "--yes", "--reason", "INC-7"],
                   self.ag.config_path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.ag.wait_for(lambda: self.events()["count"] == 1, timeout=20,
                         desc="lockctl's release on the timeline")
        e = self.events()["events"][0]
        self.assertEqual((e["kind"], e["key"], e["holder"], e["target"]),
                         ("force_release", "lock:cli", "tok-9", "main"), e)
        self.assertIn("INC-7", e["detail"])
        self.assertIn("audit entry", e["detail"])
        self.assertNotIn("released by http:", e["detail"])
        # the holder's age the agent knew (lockctl --yes asks it nothing),
        # and when it ran (not when the agent read the stream)
        self.assertIsNotNone(e["seconds"], e)
        self.assertGreaterEqual(e["seconds"], 1.0, e)
        self.assertLess(abs(e["time_ms"] / 1000.0 - before), 1.0, e)

        self.c.set("lock:h", "t")
        self.release(b"lock:h", "t")
        self.ag.wait_scans(3)                   # the tail has read past it
        self.assertEqual([x["key"] for x in self.events()["events"]], ["lock:cli", "lock:h"])

    def test_lockctl_release_reaches_the_timeline_while_following(self):
        """In follow mode the next full scan may be an hour away: the audit
        stream is read as the followed view is proven (every scan_interval),
        so lockctl's release is on the timeline within seconds, no scan."""
        rs = self.start_redis(args=["--notify-keyspace-events", "Kg$lshzxet"])
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s",
                              target_extra={"incremental": "on", "reconcile_interval": "1h"})
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active", target="main") == 1,
                    30, desc="following")
        time.sleep(1.5)                         # the tail has started
        scans = h.msum(ag.metrics(), "lockwatch_scans_total", target="main")
        c.set("lock:fol", "tok-f")
        p = lt.run(["release", "lock:fol", "--holder", "tok-f", "--yes"], ag.config_path)
        self.assertEqual(p.returncode, 0, p.stderr)
        t0 = time.monotonic()
        ag.wait_for(lambda: ag.get_json("/api/v1/events")[1]["count"] == 1, timeout=5,
                    desc="lockctl's release on the timeline while following")
        print("following: lockctl's release on the timeline in %.1fs" % (time.monotonic() - t0))
        e = ag.get_json("/api/v1/events")[1]["events"][0]
        self.assertEqual((e["kind"], e["key"], e["holder"]), ("force_release", "lock:fol", "tok-f"))
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_scans_total", target="main"), scans,
                         "a full scan ran")

    def test_a_user_that_may_not_read_the_audit_stream(self):
        """The least-privilege scanner user: the tail is refused (NOPERM),
        said once in the log, and the scans go on."""
        self.c.execute_command("ACL", "SETUSER", "scanner", "on", ">pw-scan-1",
                               *h.SCANNER_ACL)
        ag = self.start_agent(targets=[("main", "redis://scanner@127.0.0.1:%d/0"
                                        % self.rs.port)], scan_interval="300ms",
                              target_extra={"password_file": h.password_file("pw-scan-1")})
        ag.wait_scans(4)
        with open(ag.logfile, encoding="utf-8", errors="replace") as f:
            log = f.read()
        self.assertEqual(log.count("releases by lockctl are not on the agent's timeline"), 1,
                         log[-3000:])
        self.assertIn("NOPERM", log)
        st, doc = ag.get_json("/api/v1/events")
        self.assertEqual((st, doc["count"]), (200, 0))

    def test_after_returns_only_new_events(self):
        for i in range(3):
            self.c.set("lock:a%d" % i, "t")
            self.release(b"lock:a%d" % i, "t")
        doc = self.events("?after=1")
        self.assertEqual([e["seq"] for e in doc["events"]], [2, 3])
        self.assertEqual((doc["next_after"], doc["more"], doc["gap"]), (3, False, False))
        doc = self.events("?after=3")
        self.assertEqual((doc["count"], doc["next_after"]), (0, 3))
        doc = self.events("?after=0&limit=2")
        self.assertEqual([e["seq"] for e in doc["events"]], [1, 2])
        self.assertEqual((doc["next_after"], doc["more"]), (2, True))
        doc = self.events("?limit=2")                       # no after: the newest
        self.assertEqual([e["seq"] for e in doc["events"]], [2, 3])
        doc = self.events("?after=0&kind=deadlock")         # filtered: moves past them
        self.assertEqual((doc["count"], doc["next_after"]), (0, 3))
        doc = self.events("?after=0&target=other")
        self.assertEqual(doc["count"], 0)
        doc = self.events("?after=99")                      # the agent restarted
        self.assertEqual(([e["seq"] for e in doc["events"]], doc["gap"]), ([1, 2, 3], True))
        for q in ("?after=-1", "?after=x", "?limit=0", "?limit=1025", "?kind=lost",
                  "?after=%ZZ"):
            st, doc = self.ag.get_json("/api/v1/events" + q)
            self.assertEqual(st, 400, (q, doc))
            self.assertIn("error", doc)

        # a release that leaves the key (a dry run, a refusal) is no event
        self.c.set("lock:b", "t")
        st, _, doc = rh.post(self.ag, {"key": "lock:b", "holder": "t", "dry_run": True})
        self.assertEqual(st, 200, doc)
        st, _, doc = rh.post(self.ag, {"key": "lock:b", "holder": "other"})
        self.assertEqual(st, 409, doc)
        self.assertEqual(self.events()["last_seq"], 3)

        # lockctl --follow: prints only what is new
        argv = [lt.LOCKCTL, "-c", self.ag.config_path, "--agent",
                "http://127.0.0.1:%d" % self.ag.port, "events", "--follow", "--json"]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        lines = line_reader(p.stdout)
        try:
            seen = [json.loads(lines.get(timeout=20)) for _ in range(3)]
            self.assertEqual([e["seq"] for e in seen], [1, 2, 3])
            self.release(b"lock:b", "t")
            e = json.loads(lines.get(timeout=20))
            self.assertEqual((e["seq"], e["key"]), (4, "lock:b"))
        finally:
            p.kill()
            p.communicate()

        # as text: the titles once, above the first page, not again above
        # each new batch
        p = subprocess.Popen(argv[:-1], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env=lockctl_env())
        lines = line_reader(p.stdout)
        try:
            def until_quiet(got):
                while True:
                    try:
                        got.append(lines.get(timeout=2.5).decode("utf-8", "replace"))
                    except queue.Empty:
                        return got
            got = until_quiet([])
            self.assertTrue(any("events (newest last)" in ln for ln in got), got)
            self.c.set("lock:b", "t")
            self.release(b"lock:b", "t")
            before = sum("force_release" in ln for ln in got)
            got = until_quiet(got)
            self.assertEqual(sum("force_release" in ln for ln in got), before + 1, got)
            self.assertEqual(sum(ln.startswith("TIME (UTC)") for ln in got), 1, got)
        finally:
            p.kill()
            p.communicate()

    def test_binary_holder_round_trips_escaped(self):
        """A holder id that is not text (a NUL, invalid UTF-8) keeps every
        byte: holder sanitised, holder_escaped lossless, and lockctl shows it
        as list and show do (hex:..., what --holder-hex takes)."""
        binary = b"\x00\x01\x02\xff"
        self.c.set("lock:bin", binary)
        body = {"key": "lock:bin", "holder_escaped": h.escape_key(binary), "reason": "INC-9"}
        st, _, doc = rh.post(self.ag, body)
        self.assertEqual(st, 200, doc)
        e = self.events()["events"][0]
        self.assertEqual((e["kind"], e["key"]), ("force_release", "lock:bin"), e)
        self.assertEqual(h.unescape_key(e["holder_escaped"]), binary, e)
        self.assertEqual(e["holder"], "\ufffd\x01\x02\ufffd", e)
        self.assertFalse(e["holder_cut"], e)
        js = json.loads(self.lockctl("--json").stdout)
        self.assertEqual(h.unescape_key(js["events"][0]["holder_escaped"]), binary)
        for args in ((), ("-o", "wide")):                   # 80 columns, and wide
            out = self.lockctl(*args).stdout.decode("utf-8")
            self.assertIn("hex:000102ff", out)

    def test_lockctl_at_80_columns_keeps_words_whole(self):
        """The first tryout at 80 columns: the detail got 12 columns, so an
        audit entry id, an address and an owner were split over lines and
        keys were cut to 14 columns. Now every line fits 80 columns, each
        of those is whole on one line, two keys that differ only at their
        end are both whole, and -o wide puts every field on one line."""
        udp = h.free_port()
        ag = self.start_agent(self.rs, scan_interval="500ms", samples="127.0.0.1:%d" % udp,
                              extra=rh.unlock_section(self.tok))
        ag.wait_scans(1)
        ids, holder = [], lt.UUID + ":57"                       # a Redisson holder id
        for key in ("lock:order:1001", "lock:order:1002"):      # audit entry ids
            self.c.set(key, holder)
            st, _, doc = rh.post(ag, {"key": key, "holder": holder,
                                      "reason": "stuck since the deploy"})
            self.assertEqual(st, 200, doc)
            ids.append(doc["audit_id"])
        # an owner: a holder's own lost line (lw1 protocol, owner escaped)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(s.close)
        s.sendto(b"lw1 lost lock:order:1003 worker-2%3A99%2F3 tok-3 5000000 0 renewal\n",
                 ("127.0.0.1", udp))
        # an address: a lock lost at a restart of the server
        self.c.set("lock:order:1004", "tok-4", px=600000)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 1, 20,
                    desc="lock:order:1004 seen")
        self.rs.restart()
        ag.wait_for(lambda: ag.get_json("/api/v1/events")[1]["count"] == 4, 20,
                    desc="four events")
        whole = ids + [holder, "worker-2:99/3", "127.0.0.1:%d" % self.rs.port,
                       "lock:order:1001", "lock:order:1002", "lock:order:1003", "lock:order:1004"]

        out = self.lockctl(ag=ag).stdout.decode("utf-8")
        lines = out.splitlines()
        for line in lines:
            self.assertLessEqual(lt.width(line), 80, out)
            self.assertFalse(line.lstrip().startswith(","), out)
        for word in whole:
            self.assertTrue(any(word in line for line in lines), "%s split:\n%s" % (word, out))
        # an event is its first line and its detail (at most 3 lines here),
        # not the 8 to 10 lines a 12-column detail took
        self.assertLessEqual(len(lines), 1 + 4 * 4 + 1, out)

        out = self.lockctl("-o", "wide", ag=ag).stdout.decode("utf-8")
        for e in ag.get_json("/api/v1/events")[1]["events"]:
            self.assertIn(e["detail"], out)
            self.assertTrue(any(e["key"] in line and e["kind"] in line
                                for line in out.splitlines()), out)

    def test_hostile_key_round_trips_escaped(self):
        self.c.set(HOSTILE, "tok")
        self.release(HOSTILE, "tok", reason='"quoted"\nnewline <script>')
        doc = self.events()
        e = doc["events"][0]
        self.assertTrue(e["key_cut"])
        self.assertEqual(h.unescape_key(e["key_escaped"]), HOSTILE[:1024])
        self.assertTrue(e["key"].startswith('lock:"q\'<b>\n\r\t\ufffd'), e["key"][:40])
        st, _, raw = self.ag.get("/api/v1/events")
        raw.decode("utf-8")                                 # valid UTF-8
        self.assertNotIn(b"\n", raw.rstrip(b"\n"))          # escaped: \n, one line
        self.assertLess(len(raw), 64 * 1024)

        js = json.loads(self.lockctl("--json").stdout)
        self.assertEqual(h.unescape_key(js["events"][0]["key_escaped"]), HOSTILE[:1024])
        out = self.lockctl().stdout.decode("utf-8")
        for line in out.splitlines():
            self.assertLessEqual(lt.width(line), 80, line)
            self.assertNotIn("\r", line)
            self.assertNotIn("\x00", line)
            self.assertNotIn("\u202e", line)
        self.assertIn("force_release", out)

        st, _, body = self.ag.get("/")
        page = body.decode("utf-8")
        sec = page[page.index('<section id="events">'):page.index("</section>",
                                                                   page.index('<section id="events">'))]
        self.assertNotIn("<b>", sec)
        self.assertNotIn("<script>", sec)
        self.assertIn(html.escape("lock:\"q'<b>", quote=True).replace("&#x27;", "&#39;"), sec)
        h.promtool_check(self.ag.metrics_text())


if __name__ == "__main__":
    h.main()
