# SPDX-License-Identifier: BSD-3-Clause
"""POST /api/v1/locks/release, the guarded release over HTTP.

- off by default: 404, with or without a token; a reload turning it off
  answers 404 again;
- on: 401 without "Authorization: Bearer", 403 with a wrong token (also a
  prefix or an extension of the right one), 405 for another method;
- the same guards as lockctl (the same script): wrong holder, outside the
  patterns, gone, if_leaked, if_older_than are 409 with the outcome, the
  right holder is 200 and the Redisson waiter is woken; binary keys through
  key_escaped / holder_escaped; dry_run changes nothing; every attempt is
  audited with operator "http:<peer>";
- bad bodies are 400, a body over 64 KiB is 413;
- --if-older-than sees the agent's holder age (first seen by its tracker)
  for a lock whose IDLETIME the scans keep resetting, counted from the
  last read that found its lease set again (a holder id taking the lock
  again between two scans looks like a renewal);
- Redis down is 503 naming the address; lockwatch_releases_total counts
  released / refused / error, not dry runs or rejected requests.
"""

import http.client
import json
import os
import threading
import time

import harness as h
import test_lockctl as lt

TOKEN = "tok-3f9a2c71d0e84b5c"
UUID = lt.UUID
PATH = "/api/v1/locks/release"


def token_file():
    d = h._mkdtemp("lw-token-")
    path = os.path.join(d, "unlock.token")
    with open(path, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(path, 0o600)
    return path


def unlock_section(path, on=True):
    return "[unlock]\nhttp = %s\ntoken_file = %s\n" % ("on" if on else "off", path)


def post(agent, body, token=TOKEN, method="POST", auth=None, raw=None, path=PATH):
    """-> (status, headers, parsed JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", agent.port, timeout=30)
    try:
        headers = {"Content-Type": "application/json"}
        if auth is not None:
            headers["Authorization"] = auth
        elif token is not None:
            headers["Authorization"] = "Bearer " + token
        data = raw if raw is not None else (json.dumps(body).encode()
                                            if body is not None else None)
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        payload = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()
    try:
        doc = json.loads(payload.decode("utf-8"))
    except ValueError:
        raise AssertionError("%s %s: %s: not JSON: %r" % (method, PATH, r.status, payload[:300]))
    return r.status, hdrs, doc


def releases(agent):
    m = agent.metrics()
    return {r: h.msum(m, "lockwatch_releases_total", result=r)
            for r in ("released", "refused", "error")}


class ReleaseHttp(h.TestCase):

    def setUp(self):
        super().setUp()
        self.rs = self.start_redis()
        self.c = self.rs.client()
        self.tok = token_file()

    def agent(self, on=True, **kw):
        kw.setdefault("scan_interval", "500ms")
        return self.start_agent(self.rs, extra=unlock_section(self.tok, on), **kw)

    def test_off_by_default_and_off_again_after_a_reload(self):
        self.c.set("lock:a", "tok")
        ag = self.start_agent(self.rs)              # no [unlock]: off
        for token in (TOKEN, None):
            st, _, doc = post(ag, {"key": "lock:a", "holder": "tok"}, token=token)
            self.assertEqual(st, 404, doc)
        st, _, _ = post(ag, None, method="GET")
        self.assertEqual(st, 404)
        self.assertEqual(self.c.get("lock:a"), b"tok")
        self.assertEqual(releases(ag), {"released": 0, "refused": 0, "error": 0})

        ag.write_config(ag.render_config(extra=unlock_section(self.tok, True)))
        ag.reload()
        ag.wait_for(lambda: post(ag, {"key": "lock:a", "holder": "x"})[0] == 409, timeout=10,
                    desc="release endpoint on after SIGHUP")
        ag.write_config(ag.render_config(extra=unlock_section(self.tok, False)))
        ag.reload()
        ag.wait_for(lambda: post(ag, {"key": "lock:a", "holder": "x"})[0] == 404,
                    timeout=10, desc="release endpoint off after SIGHUP")
        st, _, _ = post(ag, {"key": "lock:a", "holder": "tok"})
        self.assertEqual(st, 404)
        self.assertEqual(self.c.get("lock:a"), b"tok")

    def test_token_required(self):
        self.c.set("lock:a", "tok")
        ag = self.agent()
        body = {"key": "lock:a", "holder": "tok"}
        st, hdrs, doc = post(ag, body, token=None)
        self.assertEqual(st, 401, doc)
        self.assertIn("Bearer", hdrs.get("www-authenticate", ""))
        for auth in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer ", TOKEN):
            st, _, doc = post(ag, body, auth=auth)
            self.assertIn(st, (401, 403), (auth, doc))
        for wrong in ("nope", TOKEN[:-1], TOKEN + "x", TOKEN.upper(), "x" + TOKEN):
            st, _, doc = post(ag, body, token=wrong)
            self.assertEqual(st, 403, (wrong, doc))
        st, hdrs, doc = post(ag, None, method="GET")
        self.assertEqual(st, 405)
        self.assertEqual(hdrs.get("allow"), "POST")
        self.assertEqual(self.c.get("lock:a"), b"tok")
        self.assertFalse(self.c.exists("lockwatch:audit"))
        self.assertEqual(releases(ag), {"released": 0, "refused": 0, "error": 0})

    def test_same_guards_as_the_cli(self):
        c = self.c
        c.set("lock:a", "tok-A")
        c.set("user:1", "v")
        c.set("lock:ttl", "t", px=600000)
        c.set("lock:young", "y")
        c.hset("lock:r", UUID + ":5", 1)
        c.set(b"lock:bin\x00\xff\n", b"t\x00k")
        ag = self.agent()
        cases = [
            ({"key": "lock:a", "holder": "tok-WRONG", "reason": "INC-7"}, 409, "holder_changed"),
            ({"key": "user:1", "holder": "v"}, 409, "pattern"),
            ({"key": "lock:none", "holder": "v"}, 409, "gone"),
            ({"key": "lock:ttl", "holder": "t", "if_leaked": True}, 409, "not_leaked"),
            ({"key": "lock:young", "holder": "y", "if_older_than": "1h"}, 409, "too_young"),
            ({"key": "lock:young", "holder": "y", "if_older_than": 3600}, 409, "too_young"),
            ({"key": "lock:a", "holder": "tok-A", "dry_run": True}, 200, "would_release"),
            ({"key": "lock:a", "holder": "tok-A", "reason": "INC-7", "if_leaked": True,
              "target": "main"}, 200, "released"),
            ({"key_escaped": h.escape_key(b"lock:bin\x00\xff\n"),
              "holder_escaped": h.escape_key(b"t\x00k")}, 200, "released"),
        ]
        # if_leaked is the agent's "leaked": no TTL for leak_grace (3s here) in
        # its last scan, as for lockctl and ?state=leaked.  lock:a is judged so
        # before its release below; a lock just made is not, though it has no
        # TTL either, and nothing runs for it (no audit entry).
        def leaked_a():
            st, j = ag.get_json("/api/v1/locks?state=leaked")
            return st == 200 and any(l["key"] == "lock:a" for l in j["locks"])
        ag.wait_for(leaked_a, 15, desc="lock:a judged leaked")
        c.set("lock:fresh", "f")
        st, _, doc = post(ag, {"key": "lock:fresh", "holder": "f", "if_leaked": True})
        self.assertEqual((st, doc.get("outcome")), (409, "not_leaked"), doc)
        self.assertIn("leak_grace", doc["message"])
        self.assertEqual(c.get("lock:fresh"), b"f")
        self.assertFalse(c.exists("lockwatch:audit"))
        for body, status, outcome in cases:
            st, _, doc = post(ag, body)
            self.assertEqual((st, doc.get("outcome")), (status, outcome), (body, doc))
            self.assertEqual(doc["refused"], status == 409)
            if outcome == "too_young":      # named by the field sent, not lockctl's option
                self.assertTrue(doc["message"].startswith("refused: if_older_than, but "), doc)
                self.assertNotIn("--if-older-than", doc["message"])
        self.assertEqual(c.get("user:1"), b"v")
        self.assertTrue(c.exists("lock:ttl") and c.exists("lock:young"))
        self.assertFalse(c.exists("lock:a") or c.exists(b"lock:bin\x00\xff\n"))

        # a Redisson waiter is woken
        ps = self.rs.client().pubsub()
        ps.subscribe("redisson_lock__channel:{lock:r}")
        h.wait_until(lambda: ps.get_message(timeout=0.2), 5, desc="subscribed")
        st, _, doc = post(ag, {"key": "lock:r", "holder": UUID + ":5"})
        self.assertEqual((st, doc["outcome"]), (200, "released"))
        msg = h.wait_until(lambda: ps.get_message(timeout=0.5), 5, desc="wake-up")
        self.assertEqual(msg["data"], b"0")
        ps.close()

        entries = lt.audit_entries(c)
        # every attempt but the dry run, in order
        self.assertEqual([e["outcome"] for _, e in entries],
                         [b"holder_changed", b"pattern", b"gone", b"not_leaked", b"too_young",
                          b"too_young", b"released", b"released", b"released"])
        self.assertTrue(all(e["operator"] == b"http:127.0.0.1" for _, e in entries))
        self.assertEqual(entries[0][1]["reason"], b"INC-7")
        self.assertEqual(entries[7][1]["key"], b"lock:bin\x00\xff\n")
        self.assertEqual(releases(ag), {"released": 3, "refused": 6, "error": 0})
        # lockctl audit shows the HTTP entries too
        cfg = lt.write_config(self.rs)
        doc = lt.run_json(self, ["audit"], cfg)
        self.assertEqual(doc["entries"][0]["operator"], "http:127.0.0.1")
        # its table shows the operator whole where there is room (an on-call
        # trial: cut to "http…0.1" at any width)
        p = lt.run(["audit"], cfg, env=dict(os.environ, COLUMNS="120"))
        self.assertIn(b"http:127.0.0.1", p.stdout)

    def test_releases_across_reloads(self):
        """A release runs on a thread of its own with a copy of its target:
        the target's exclude_patterns (and patterns, TLS, declared formats)
        are its own, so releases keep their guards while SIGHUPs replace
        the config under them (the copy shared them; ASan's run of this
        test saw a reload free them)."""
        import threading
        self.c.set("lock:skip:1", "t")
        self.c.set("lock:a", "tok-A")
        ag = self.agent(target_extra={"exclude_patterns": "lock:skip:*"})
        stop = threading.Event()

        def reloads():
            while not stop.is_set():
                ag.reload()
                time.sleep(0.02)
        th = threading.Thread(target=reloads)
        th.start()
        try:
            seen = []
            for i in range(40):
                st, _, doc = post(ag, {"key": "lock:skip:1", "holder": "t"})
                seen.append((st, doc.get("outcome")))
                st, _, doc = post(ag, {"key": "lock:a", "holder": "tok-A", "dry_run": True})
                seen.append((st, doc.get("outcome")))
        finally:
            stop.set()
            th.join()
        self.assertEqual(set(seen), {(409, "excluded"), (200, "would_release")}, seen)
        self.assertEqual(self.c.get("lock:skip:1"), b"t")
        self.assertEqual(self.c.get("lock:a"), b"tok-A")
        self.assertIsNone(ag.proc.poll())

    def test_bad_requests(self):
        self.c.set("lock:a", "tok")
        ag = self.agent()
        bad = [b"not json", b"[1,2]", b"{}", b'{"key":"lock:a"}', b'{"holder":"tok"}',
               b'{"key":"lock:a","key_escaped":"lock:a","holder":"tok"}',
               b'{"key_escaped":"lock%zz","holder":"tok"}',
               b'{"key":"lock:a","holder":"tok","bogus":1}',
               b'{"key":"lock:a","holder":"tok","if_older_than":"5x"}',
               b'{"key":"lock:a","holder":"tok","if_older_than":-1}',
               # 0 is no guard at all (a red-team: accepted, as no condition)
               b'{"key":"lock:a","holder":"tok","if_older_than":0}',
               b'{"key":"lock:a","holder":"tok","if_older_than":"0s"}',
               b'{"key":"lock:a","holder":"tok","if_leaked":"yes"}',
               b'{"key":"lock:a","holder":"tok","target":"nope"}',
               b'{"key":"","holder":"tok"}', b'{"key":1,"holder":"tok"}',
               b'{"key":"lock:a","holder":"tok","key":"lock:b"}']
        for raw in bad:
            st, _, doc = post(ag, None, raw=raw)
            self.assertEqual(st, 400, (raw, doc))
            self.assertIn("error", doc)
        # an unknown target is named with the known ones, as the locks API does
        st, _, doc = post(ag, {"key": "lock:a", "holder": "tok", "target": "no\npe"})
        self.assertEqual(st, 400, doc)
        self.assertEqual(doc["error"], 'no target "no?pe" (known targets: main)')
        # an unknown field is named (printable ASCII, at most 64 bytes)
        known = ("known: target, key, key_escaped, holder, holder_escaped, reason, if_leaked, "
                 "if_older_than, dry_run")
        for field, shown in (("dryrun", "dryrun"),
                             ("if_older\u00e9\n" + "x" * 100, "if_older???" + "x" * 53)):
            st, _, doc = post(ag, {"key": "lock:a", "holder": "tok", field: True})
            self.assertEqual((st, doc.get("error")),
                             (400, 'unknown field "%s" (%s)' % (shown, known)))
        # the request is its body: a query is refused, not ignored (this
        # dry run would have released the lock)
        st, _, doc = post(ag, {"key": "lock:a", "holder": "tok"}, path=PATH + "?dry_run=true")
        self.assertEqual((st, doc.get("error")),
                         (400, 'unknown query parameter "dry_run" (this endpoint takes none)'))
        st, _, doc = post(ag, None, raw=b'{"key":"lock:a","holder":"' + b"x" * 70000 + b'"}')
        self.assertEqual(st, 413, doc)
        self.assertEqual(self.c.get("lock:a"), b"tok")
        self.assertEqual(releases(ag), {"released": 0, "refused": 0, "error": 0})
        self.assertTrue(ag.alive)

    def test_if_older_than_uses_the_agents_holder_age(self):
        # a lock whose lease nobody sets again: the agent's age counts,
        # though its scans keep OBJECT IDLETIME near 0 (Redis < 7.2)
        self.c.hset("lock:w", UUID + ":1", 1)
        self.c.pexpire("lock:w", 600000)
        ag = self.agent(scan_interval="300ms")
        ag.wait_for(lambda: ag.lock("lock:w")[0] == 200, timeout=10, desc="lock seen")
        st, _, doc = post(ag, {"key": "lock:w", "holder": UUID + ":1",
                               "if_older_than": "2s"})
        self.assertEqual((st, doc["outcome"]), (409, "too_young"), doc)
        time.sleep(2.5)
        st, _, doc = post(ag, {"key": "lock:w", "holder": UUID + ":1",
                               "if_older_than": "2s"})
        self.assertEqual((st, doc["outcome"]), (200, "released"), doc)
        self.assertLessEqual(doc["idle_seconds"], 1)   # IDLETIME alone: too young

    def test_if_older_than_counts_from_the_last_lease_set(self):
        # the on-call trial: a holder id used again (Spring's client id,
        # Redisson's uuid:thread, a fixed worker token) takes the lock again
        # between two scans; the agent's first sight is the old holding's
        ag = self.agent(scan_interval="5s")
        self.c.set("lock:job", "worker-7", px=600000)
        ag.wait_for(lambda: ag.lock("lock:job")[1].get("age_seconds", 0) >= 3, timeout=30,
                    desc="the agent's age of lock:job at least 3 s")
        self.c.delete("lock:job")
        self.c.set("lock:job", "worker-7", px=600000)
        st, _, doc = post(ag, {"key": "lock:job", "holder": "worker-7",
                               "if_older_than": "2s"})
        self.assertEqual((st, doc["outcome"]), (409, "too_young"), doc)
        self.assertEqual(self.c.get("lock:job"), b"worker-7")
        # the next scan sees the lease set again: the age counts from there
        ag.wait_for(lambda: ag.lock("lock:job")[1].get("unbroken_since_ms", 0) >
                    ag.lock("lock:job")[1]["first_seen_ms"], timeout=30,
                    desc="the agent sees the lease set again")
        st, doc = ag.lock("lock:job")
        self.assertTrue(doc["renewed"], doc)
        self.assertGreaterEqual(doc["age_seconds"], 3, doc)    # the lock's age stays
        st, _, doc = post(ag, {"key": "lock:job", "holder": "worker-7",
                               "if_older_than": "2s"})
        self.assertEqual((st, doc["outcome"]), (409, "too_young"), doc)
        # a watchdog's renewals look the same: its age counts from the last
        stop = threading.Event()

        def watchdog():
            r = self.rs.client()
            while not stop.is_set():
                r.pexpire("lock:job", 600000)
                time.sleep(0.5)
        t = threading.Thread(target=watchdog)
        t.start()
        try:
            time.sleep(6)
            st, _, doc = post(ag, {"key": "lock:job", "holder": "worker-7",
                                   "if_older_than": "5s"})
            self.assertEqual((st, doc["outcome"]), (409, "too_young"), doc)
        finally:
            stop.set()
            t.join()
        self.assertEqual(self.c.get("lock:job"), b"worker-7")

    def test_if_older_than_a_lock_taken_again_with_a_shorter_lease(self):
        # a red-team: the same holder id taking the lock again with a shorter
        # lease looked like the old lease running down
        ag = self.agent(scan_interval="5s")
        self.c.set("lock:short", "worker-8", px=600000)
        ag.wait_for(lambda: ag.lock("lock:short")[1].get("age_seconds", 0) >= 4, timeout=30,
                    desc="the agent's age of lock:short at least 4 s")
        self.c.delete("lock:short")
        self.c.set("lock:short", "worker-8", px=120000)
        st, _, doc = post(ag, {"key": "lock:short", "holder": "worker-8",
                               "if_older_than": "3s"})
        self.assertEqual((st, doc["outcome"]), (409, "too_young"), doc)
        ag.wait_for(lambda: ag.lock("lock:short")[1].get("unbroken_since_ms", 0) >
                    ag.lock("lock:short")[1]["first_seen_ms"], timeout=30,
                    desc="the agent sees the shorter lease as set again")
        st, _, doc = post(ag, {"key": "lock:short", "holder": "worker-8",
                               "if_older_than": "3s"})
        self.assertEqual((st, doc["outcome"]), (409, "too_young"), doc)
        self.assertEqual(self.c.get("lock:short"), b"worker-8")

    def test_if_older_than_a_lock_age_is_not_a_new_readers(self):
        # a read lock held by one reader for a while, then joined by another:
        # the agent's first-seen time is the lock's, not the new reader's
        old, new = UUID + ":1", UUID + ":2"
        self.c.hset("lock:rw", mapping={"mode": "read", old: 1})
        ag = self.agent(scan_interval="300ms")
        ag.wait_for(lambda: ag.lock("lock:rw")[0] == 200, timeout=10, desc="lock seen")
        time.sleep(2.5)
        self.c.hset("lock:rw", new, 1)
        ag.wait_for(lambda: ag.lock("lock:rw")[1].get("holders_total") == 2, timeout=10,
                    desc="two readers seen")
        st, _, doc = post(ag, {"key": "lock:rw", "holder": new, "if_older_than": "2s",
                               "dry_run": True})
        self.assertEqual((st, doc["outcome"]), (409, "too_young"), doc)
        self.assertEqual(self.c.hget("lock:rw", new), b"1")

    def test_redis_down_is_503(self):
        self.c.set("lock:a", "tok")
        ag = self.agent()
        self.rs.stop()
        st, _, doc = post(ag, {"key": "lock:a", "holder": "tok"})
        self.assertEqual(st, 503, doc)
        self.assertEqual(doc["outcome"], "error")
        self.assertIn("127.0.0.1:%d" % self.rs.port, doc["error"])
        st, _, doc = post(ag, {"key": "lock:a", "holder": "tok", "dry_run": True})
        self.assertEqual(st, 503)
        self.assertEqual(releases(ag), {"released": 0, "refused": 0, "error": 1})


if __name__ == "__main__":
    h.main()
