# SPDX-License-Identifier: BSD-3-Clause
"""semaphore_patterns: an idle Redisson RSemaphore is not a leak.

An RSemaphore is a string holding the permits available, without a TTL;
with nobody waiting Redis cannot tell it from a plain lock whose token is a
number.  With semaphore_patterns naming it:
- the agent (API, metrics) and lockctl (list, show) call it
  `redisson-semaphore` with `permits_available`, never leaked or long,
  counted in its class;
- a key under semaphore_patterns whose value is not an integer keeps the
  format its value gives (here plain, and leaked);
- lockctl release and the HTTP release give one permit back (the key stays),
  lockctl expire refuses it.
Without the option the same key is `plain` and leaked (the documented limit).
"""

import time

import harness as h
import test_lockctl as tl
import test_release_http as th

SEM = "lock:sem"


def agent_locks(ag):
    st, body = ag.get_json("/api/v1/locks?limit=1000")
    assert st == 200, body
    return {l["key"]: l for l in body["locks"]}


class Semaphore(h.TestCase):

    def test_semaphore_patterns(self):
        rs = self.start_redis()
        c = rs.client()
        c.set(SEM, "5")                      # an idle RSemaphore: no TTL by design
        c.set("lock:sem:word", "not-a-count")  # under the patterns, not an integer
        c.set("lock:counter", "7")           # a number outside semaphore_patterns
        c.set("lock:ok", "tok", px=600000)
        path = th.token_file()
        ag = self.start_agent(rs, scan_interval="200ms", leak_grace="1s", max_hold="1s",
                              target_extra={"semaphore_patterns": "lock:sem*"},
                              extra=th.unlock_section(path))
        # wait until the plain no-TTL keys are leaked and long: the
        # semaphore has had the same time to become either
        locks = ag.wait_for(
            lambda: (lambda l: len(l) == 4 and
                     "leaked" in l["lock:counter"]["states"] and
                     "long" in l["lock:counter"]["states"] and
                     "leaked" in l["lock:sem:word"]["states"] and l)(agent_locks(ag)),
            timeout=30, desc="the plain no-TTL keys leaked and long")
        sem = locks[SEM]
        self.assertEqual(sem["format"], "redisson-semaphore", sem)
        self.assertEqual(sem["states"], ["held"], sem)
        self.assertEqual(sem["permits_available"], 5, sem)
        self.assertEqual(sem["pttl_ms"], -1)
        self.assertEqual(locks["lock:sem:word"]["format"], "plain")
        self.assertNotIn("permits_available", locks["lock:sem:word"])
        self.assertEqual(locks["lock:counter"]["format"], "plain")
        self.assertNotIn("permits_available", locks["lock:counter"])
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_locks", format="redisson-semaphore"), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 4)
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="main"), 2)
        st, body = ag.get_json("/api/v1/locks?state=leaked")
        self.assertEqual(sorted(l["key"] for l in body["locks"]),
                         ["lock:counter", "lock:sem:word"])

        # lockctl reads semaphore_patterns from the same config (-c)
        cfg = ag.config_path
        doc = tl.run_json(self, ["show", SEM], cfg)
        self.assertEqual((doc["format"], doc["permits_available"]),
                         ("redisson-semaphore", 5), doc)
        self.assertNotIn("leaked", doc["states"])
        self.assertNotIn("long", doc["states"])
        p = tl.run(["show", SEM], cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, rb"\npermits +5 available \(a Redisson semaphore")
        self.assertIn(b"redisson-semaphore", p.stdout)
        doc = tl.run_json(self, ["list", "--state", "leaked"], cfg)
        self.assertEqual(sorted(l["key"] for l in doc["locks"]),
                         ["lock:counter", "lock:sem:word"])

        # expire never gives a semaphore a TTL (it would take every permit)
        p = tl.run(["expire", SEM, "--holder", "5", "--ttl", "5s", "--yes"], cfg)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertEqual(c.pttl(SEM), -1)
        self.assertEqual(c.get(SEM), b"5")
        # release: one permit back, the semaphore stays
        doc = tl.run_json(self, ["release", SEM, "--holder", "5", "--yes"], cfg)
        self.assertEqual((doc["outcome"], doc["format"]), ("released", "redisson-semaphore"))
        self.assertEqual(c.get(SEM), b"6")
        # the HTTP release takes the format from the agent's scan
        ag.wait_for(lambda: agent_locks(ag)[SEM].get("permits_available") == 6, timeout=10,
                    desc="the agent sees 6 permits")
        st, _, doc = th.post(ag, {"key": SEM, "holder": "6"})
        self.assertEqual((st, doc.get("outcome"), doc.get("format")),
                         (200, "released", "redisson-semaphore"), doc)
        self.assertEqual(c.get(SEM), b"7")

    def test_without_the_option_it_is_plain(self):
        # the limit: Redis cannot tell an idle RSemaphore from a numeric token
        rs = self.start_redis()
        c = rs.client()
        c.set(SEM, "5")
        cfg = tl.write_config(rs, leak_grace="1s")
        time.sleep(2.2)
        doc = tl.run_json(self, ["show", SEM], cfg)
        self.assertEqual(doc["format"], "plain", doc)
        # "5" is one of Redis's shared integers: its OBJECT IDLETIME is not
        # the key's (issue 23), so lockctl alone cannot say how long it has
        # had no TTL: "leaked?", and the agent's first sight decides
        self.assertEqual((doc["states"], doc["leak_unknown"], doc["idle_seconds"]),
                         (["held"], True, None), doc)
        self.assertNotIn("permits_available", doc)
        p = h.run_lockwatchd(["--once", "-c", cfg], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_locks", format="plain"), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks", format="redisson-semaphore"), 0)


if __name__ == "__main__":
    h.main()
