# SPDX-License-Identifier: BSD-3-Clause
"""Lock formats as the scan decodes them, end to end.

One lock of each kind the agent knows (plain, Redisson RLock, Redisson
read/write lock, redis-py uuid1 token (declared by format_patterns: the
value alone proves no uuid1), ShedLock, liblockwatch lw1 token) and
a key of another type under the patterns (unknown).  Each shows up in the
API with its format, holders and hold counts, and in lockwatch_locks{format}.
Identity the format encodes (host, pid, acquisition time) is shown, and a
lock first seen takes its acquisition time as its starting age (so it is
`long` on the first scan when that was long ago).  Reentrancy: a hold count
at max_reentrancy is `reentrant_high`, one below is not.  A Redisson hash
without a TTL leaks like a string does.
"""

import re
import time
import uuid
from datetime import datetime, timezone

import harness as h

RUUID = "8743c9c0-0795-4907-87fd-6c719a6b4586"
RUUID2 = "0b7d3c1e-5a8f-4e2d-9c61-3f0a9e8b7d21"


def iso_ms(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + \
        "%03dZ" % int((t % 1) * 1000)


def parse_time(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


class Formats(h.TestCase):

    def test_formats(self):
        rs = self.start_redis()
        c = rs.client()
        now = time.time()
        shed_at = now - 150.0
        lw_at = now - 130.0
        u1 = uuid.uuid1()
        c.set("lock:plain:1", "some-token-123", px=600000)
        c.hset("lock:rlock:1", "%s:57" % RUUID, "3")
        c.pexpire("lock:rlock:1", 600000)
        c.hset("lock:rw:1", mapping={"mode": "read", "%s:1" % RUUID: "2",
                                     "%s:9" % RUUID2: "1"})
        c.pexpire("lock:rw:1", 600000)
        c.hset("lock:rw:2", mapping={"mode": "write", "%s:7:write" % RUUID: "1"})
        c.pexpire("lock:rw:2", 600000)
        c.set("lock:redispy:1", u1.hex, px=600000)
        c.set("job-lock:default:nightly",
              "ADDED:%s@batch-host-1:%s" % (iso_ms(shed_at), uuid.uuid4()), px=600000)
        c.set("lock:lw:1", "lw1:web-3.example.com:4211:4230:%d:9f86d081884c7d65"
              % int(lw_at * 1000), px=600000)
        c.rpush("lock:weird:1", "a", "b")
        c.hset("lock:deep:1", "%s:1" % RUUID, "16")       # = max_reentrancy
        c.pexpire("lock:deep:1", 600000)
        c.hset("lock:deep:2", "%s:2" % RUUID, "15")       # one below
        c.pexpire("lock:deep:2", 600000)
        c.hset("lock:hleak:1", "%s:3" % RUUID, "1")       # Redisson, no TTL
        c.set("notalock:1", "x")                          # outside the patterns

        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1s",
                              max_hold="100s", max_reentrancy=16,
                              patterns="lock:*, job-lock:*",
                              # 32 hex prove no uuid1: redis-py is declared
                              target_extra={"format_patterns": "lock:redispy:*=redis-py"})

        def first():
            st, body = ag.get_json("/api/v1/locks?state=all&limit=1000")
            return st == 200 and body["total"] > 0 and body
        body = ag.wait_for(first, timeout=15, desc="the first scan in the API")
        locks = {l["key"]: l for l in body["locks"]}
        self.assertEqual(len(locks), 11, sorted(locks))
        self.assertNotIn("notalock:1", locks)

        def fmt(key):
            return locks[key]["format"]

        def holders(key):
            return sorted((x["id"], x["count"]) for x in locks[key]["holders"])

        # plain
        self.assertEqual(fmt("lock:plain:1"), "plain")
        self.assertEqual(holders("lock:plain:1"), [("some-token-123", 1)])
        # Redisson RLock
        self.assertEqual(fmt("lock:rlock:1"), "redisson")
        self.assertEqual(holders("lock:rlock:1"), [(RUUID + ":57", 3)])
        self.assertEqual(locks["lock:rlock:1"]["max_count"], 3)
        # Redisson RW: two readers; a writer
        self.assertEqual(fmt("lock:rw:1"), "redisson-rw")
        self.assertEqual(locks["lock:rw:1"]["holders_total"], 2)
        self.assertEqual(holders("lock:rw:1"), sorted([(RUUID + ":1", 2), (RUUID2 + ":9", 1)]))
        self.assertEqual(locks["lock:rw:1"]["max_count"], 2)
        self.assertEqual(fmt("lock:rw:2"), "redisson-rw")
        self.assertEqual(locks["lock:rw:2"]["holders_total"], 1)
        self.assertEqual([x["count"] for x in locks["lock:rw:2"]["holders"]], [1])
        self.assertTrue(locks["lock:rw:2"]["holders"][0]["id"].startswith(RUUID + ":7"),
                        locks["lock:rw:2"])
        # redis-py: uuid1 hex; its timestamp, where shown, is the real one
        self.assertEqual(fmt("lock:redispy:1"), "redis-py")
        self.assertEqual(locks["lock:redispy:1"]["format_source"], "declared")
        self.assertEqual(locks["lock:rlock:1"]["format_source"], "proven")
        self.assertEqual(locks["lock:plain:1"]["format_source"], "guessed")
        self.assertEqual(holders("lock:redispy:1"), [(u1.hex, 1)])
        acq = locks["lock:redispy:1"]["acquired_at"]
        if acq is not None:
            self.assertAlmostEqual(parse_time(acq), now, delta=5)
        # ShedLock: host and acquisition time from the value
        shed = locks["job-lock:default:nightly"]
        self.assertEqual(shed["format"], "shedlock")
        self.assertEqual(shed["host"], "batch-host-1")
        self.assertIsNotNone(shed["acquired_at"])
        self.assertAlmostEqual(parse_time(shed["acquired_at"]), shed_at, delta=1.5)
        # liblockwatch lw1 token: host, pid, acquisition time
        lw = locks["lock:lw:1"]
        self.assertEqual(lw["format"], "liblockwatch")
        self.assertEqual(lw["host"], "web-3.example.com")
        self.assertEqual(lw["pid"], 4211)
        self.assertAlmostEqual(parse_time(lw["acquired_at"]), lw_at, delta=1.5)
        # First seen at the agent's first look, a time the value claims
        # cannot be bounded (a host's clock may run behind: a red-team saw a
        # 79 s old lock made a 1-hour fact): the claim is shown (acquired_at),
        # the age is at least the first sight, and neither is `long` yet
        for key, at in (("job-lock:default:nightly", shed_at), ("lock:lw:1", lw_at)):
            self.assertTrue(locks[key]["age_lower_bound"], locks[key])
            self.assertLess(locks[key]["age_seconds"], time.time() - at - 5, locks[key])
            self.assertNotIn("long", locks[key]["states"], locks[key])
        self.assertNotIn("long", locks["lock:plain:1"]["states"])
        # unknown: a list under lock:*
        self.assertEqual(fmt("lock:weird:1"), "unknown")
        # times are RFC 3339 UTC
        for l in locks.values():
            self.assertTrue(l["first_seen"].endswith("Z"), l["first_seen"])
            parse_time(l["first_seen"])
            self.assertEqual(l["target"], "main")
        # age_seconds is whole ms, written as such in the list and in one
        # lock's answer alike: 72.556, never 72.555999999999997
        st, _, raw = ag.get("/api/v1/locks?state=all&limit=1000")
        ages = re.findall(rb'"age_seconds":([^,}]*)', raw)
        self.assertEqual(len(ages), 11, raw[:300])
        for key in locks:
            st, _, raw = ag.get("/api/v1/locks/" + h.url_key(key.encode()))
            self.assertEqual(st, 200, raw[:300])
            ages += re.findall(rb'"age_seconds":([^,}]*)', raw)
        self.assertEqual(len(ages), 22)
        for age in ages:
            self.assertRegex(age, rb"^[0-9]+(\.[0-9]{1,3})?$")

        # Metrics by format.
        m = ag.metrics()
        for f, n in (("plain", 1), ("redisson", 4), ("redisson-rw", 2), ("redis-py", 1),
                     ("shedlock", 1), ("liblockwatch", 1), ("unknown", 1)):
            self.assertEqual(h.msum(m, "lockwatch_locks", target="main", format=f), n,
                             (f, h.select(m, "lockwatch_locks")))
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 11)

        # Reentrancy: 16 is reentrant_high, 15 is not.
        st, body = ag.get_json("/api/v1/locks?state=reentrant_high")
        self.assertEqual(st, 200, body)
        self.assertEqual([l["key"] for l in body["locks"]], ["lock:deep:1"], body)
        self.assertEqual(h.msum(m, "lockwatch_lock_max_reentrancy",
                                **{"class": "lock:deep:*"}), 16)
        self.assertTrue(any(l["key"] == "lock:deep:1" and l["state"] == "reentrant_high"
                            for (l, v) in h.select(m, "lockwatch_lock_offender_info")),
                        h.select(m, "lockwatch_lock_offender_info"))
        self.assertNotIn("reentrant_high", locks["lock:deep:2"]["states"])

        # A Redisson hash without a TTL leaks.
        def hleak():
            st, lk = ag.lock("lock:hleak:1")
            return st == 200 and "leaked" in lk["states"] and lk
        lk = ag.wait_for(hleak, timeout=10, desc="the TTL-less Redisson hash leaked")
        self.assertEqual(lk["format"], "redisson")
        self.assertEqual(lk["pttl_ms"], -1)
        st, body = ag.get_json("/api/v1/locks?state=leaked")
        self.assertEqual(sorted(l["key"] for l in body["locks"]),
                         ["lock:hleak:1", "lock:weird:1"]
                         if any(l["key"] == "lock:weird:1" for l in body["locks"])
                         else ["lock:hleak:1"])

        # Filters: class and target.
        st, body = ag.get_json("/api/v1/locks?class=lock:deep:*")
        self.assertEqual(st, 200, body)
        self.assertEqual(sorted(l["key"] for l in body["locks"]), ["lock:deep:1", "lock:deep:2"])
        self.assertEqual(body["total"], 2)
        # A mistyped target is a 400 naming the known ones (issue 24), for
        # the list and for one lock; not an empty "complete" page.
        st, body = ag.get_json("/api/v1/locks?target=nosuchtarget")
        self.assertEqual(st, 400, body)
        self.assertIn('no target "nosuchtarget"', body["error"])
        self.assertIn("known targets: ", body["error"])
        st, body = ag.get_json("/api/v1/locks/lock%3Adeep%3A1?target=nosuchtarget")
        self.assertEqual(st, 400, body)
        self.assertIn("known targets: ", body["error"])
        # A mistyped parameter is a 400 naming it and the known ones, not
        # every lock as if no filter were given; each JSON route knows its
        # own.  The pages that are not JSON take none and check none.
        for path, err in (
                ("/api/v1/locks?stat=leaked",
                 'unknown query parameter "stat" (known: state, target, class, limit, offset)'),
                ("/api/v1/locks/?state=leaked&lmit=5",
                 'unknown query parameter "lmit" (known: state, target, class, limit, offset)'),
                ("/api/v1/locks/lock%3Adeep%3A1?state=leaked",
                 'unknown query parameter "state" (known: target)'),
                ("/api/v1/events?kinds=deadlock",
                 'unknown query parameter "kinds" (known: after, kind, target, limit)'),
                ("/api/v1/alerts?state=firing",
                 'unknown query parameter "state" (this endpoint takes none)'),
                ("/api/v1/classes?x%1b[1m" + "y" * 100,
                 'unknown query parameter "x%1b[1m' + "y" * 57 + '" (this endpoint takes none)')):
            st, body = ag.get_json(path)
            self.assertEqual((st, body.get("error")), (400, err), path)
        st, body = ag.get_json("/api/v1/locks?state=leaked&target=main&class=lock:*&limit=5"
                               "&offset=0")
        self.assertEqual(st, 200, body)
        for path in ("/metrics?x=1", "/healthz?x=1", "/readyz?x=1", "/?x=1"):
            self.assertEqual(ag.get(path)[0], 200, path)

        # Reentrancy drops below the threshold: no longer reentrant_high.
        c.hset("lock:deep:1", "%s:1" % RUUID, "3")
        ag.wait_for(lambda: ag.get_json("/api/v1/locks?state=reentrant_high")[1]["total"] == 0,
                    timeout=10, desc="reentrant_high cleared when the count drops")

    def test_many_readers_counted(self):
        # A read lock with 100 readers: the scan may read only part of the
        # hash (bounded), but holders_total is the number of holders there
        # are (HLEN is O(1)), not the number that fitted the read cap.
        rs = self.start_redis()
        c = rs.client()
        fields = {"mode": "read"}
        for i in range(100):
            fields["8743c9c0-0795-4907-87fd-%012d:%d" % (i, i)] = "1"
        c.hset("lock:readers:1", mapping=fields)
        c.pexpire("lock:readers:1", 600000)
        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1h", max_hold="1h")
        lk = ag.wait_for(lambda: ag.lock("lock:readers:1")[0] == 200 and
                         ag.lock("lock:readers:1")[1], timeout=10, desc="lock seen")
        self.assertEqual(lk["format"], "redisson-rw")
        self.assertLessEqual(len(lk["holders"]), 100)
        self.assertEqual(lk["holders_total"], 100,
                         "holders_total %s for 100 readers (holders listed: %d)"
                         % (lk["holders_total"], len(lk["holders"])))


if __name__ == "__main__":
    h.main()
