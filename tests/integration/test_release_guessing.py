# SPDX-License-Identifier: BSD-3-Clause
# run-all: heavy (20,000 HTTP requests and 10,000 release scripts back to back: a core for
# half a minute; its limits are per minute, which a busy neighbour does not move)
"""The release endpoint under abuse (issue 24).

- Guessing the token: 10,000 wrong tokens from one address.  After
  THROTTLE_FAILS (20) in a minute the address gets 429 with Retry-After,
  even with the right token, so the guesses stop being answered; the
  attempts are logged, in a few lines (not one per request), and counted in
  lockwatch_release_auth_failures_total{result}.
- Flooding the audit: 10,000 refused releases (a wrong holder each time,
  with the right token) leave every successful release's audit entry in
  the capped stream (MAXLEN ~ 10000), and a release after the flood is
  audited too.
"""
import http.client
import json
import re

import harness as h
import test_release_http as rh

N = 10000


class Conn:
    """One keep-alive connection to the agent (10,000 requests, quickly)."""

    def __init__(self, agent):
        self.agent = agent
        self.c = http.client.HTTPConnection("127.0.0.1", agent.port, timeout=30)

    def post(self, body, token):
        data = json.dumps(body).encode()
        for attempt in (0, 1):
            try:
                self.c.request("POST", rh.PATH, body=data,
                               headers={"Content-Type": "application/json",
                                        "Authorization": "Bearer " + token})
                r = self.c.getresponse()
                payload = r.read()
                return r.status, {k.lower(): v for k, v in r.getheaders()}, payload
            except (http.client.HTTPException, OSError):
                if attempt:
                    raise
                self.c.close()
                self.c = http.client.HTTPConnection("127.0.0.1", self.agent.port, timeout=30)

    def close(self):
        self.c.close()


class ReleaseGuessing(h.TestCase):

    def setUp(self):
        super().setUp()
        self.rs = self.start_redis()
        self.c = self.rs.client()
        self.tok = rh.token_file()

    def test_wrong_tokens_are_slowed_and_logged(self):
        self.c.set("lock:a", "tok")
        ag = self.start_agent(self.rs, extra=rh.unlock_section(self.tok, True),
                              scan_interval="500ms")
        conn = Conn(ag)
        self.addCleanup(conn.close)
        body = {"key": "lock:a", "holder": "tok"}
        seen = {}
        first_429 = None
        for i in range(N):
            st, hdrs, payload = conn.post(body, "guess-%d" % i)
            seen[st] = seen.get(st, 0) + 1
            if st == 429 and first_429 is None:
                first_429 = i
                retry = hdrs.get("retry-after")
                self.assertIsNotNone(retry, hdrs)
                self.assertTrue(1 <= int(retry) <= 60, retry)
                self.assertIn("too many requests", json.loads(payload)["error"])
            if first_429 is not None:
                self.assertEqual(st, 429, (i, payload[:200]))
        self.assertEqual(first_429, 20, seen)
        self.assertEqual(seen.get(403), 20, seen)
        self.assertEqual(seen.get(429), N - 20, seen)
        # the right token from the same address is refused too while blocked
        st, hdrs, _ = conn.post(body, rh.TOKEN)
        self.assertEqual(st, 429)
        self.assertEqual(self.c.get("lock:a"), b"tok")
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_release_auth_failures_total",
                                result="wrong_token"), 20)
        self.assertEqual(h.msum(m, "lockwatch_release_auth_failures_total",
                                result="rate_limited"), N - 20 + 1)
        log = ag.log_tail(400)
        lines = [l for l in log.splitlines() if "release:" in l and "token" in l]
        self.assertTrue(any("wrong or missing token from 127.0.0.1" in l for l in lines), log)
        self.assertTrue(any(re.search(r"127\.0\.0\.1 sent 20 wrong tokens .* get 429", l)
                            for l in lines), log)
        self.assertLessEqual(len(lines), 5, lines)     # logged, not 10,000 lines

    def test_refusals_do_not_evict_releases_from_the_audit(self):
        c = self.c
        ag = self.start_agent(self.rs, extra=rh.unlock_section(self.tok, True),
                              scan_interval="500ms")
        conn = Conn(ag)
        self.addCleanup(conn.close)
        done = []
        for i in range(3):
            c.set("lock:done:%d" % i, "tok-%d" % i)
            st, _, payload = conn.post({"key": "lock:done:%d" % i, "holder": "tok-%d" % i,
                                        "reason": "INC-%d" % i}, rh.TOKEN)
            self.assertEqual(st, 200, payload)
            done.append(json.loads(payload)["audit_id"])
        c.set("lock:held", "the-holder")
        refused = 0
        for i in range(N):
            st, _, payload = conn.post({"key": "lock:held", "holder": "wrong-%d" % i},
                                       rh.TOKEN)
            self.assertEqual(st, 409, payload[:300])
            refused += 1
        self.assertEqual(c.get("lock:held"), b"the-holder")
        ids = {e[0].decode() for e in c.xrange("lockwatch:audit")}
        for aid in done:
            self.assertIn(aid, ids)
        # refusals were audited, but a bounded number of them
        outcomes = [e[1][b"outcome"] for e in c.xrange("lockwatch:audit")]
        self.assertGreater(outcomes.count(b"holder_changed"), 0)
        self.assertLess(len(ids), 1000, len(ids))
        # and a release after the flood is audited
        st, _, payload = conn.post({"key": "lock:held", "holder": "the-holder"}, rh.TOKEN)
        self.assertEqual(st, 200, payload)
        self.assertIn(json.loads(payload)["audit_id"],
                      {e[0].decode() for e in c.xrange("lockwatch:audit")})
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_releases_total", result="refused"),
                         refused)


if __name__ == "__main__":
    h.main()
