# SPDX-License-Identifier: BSD-3-Clause
"""Waiters without instrumentation (issue 17, "Waiters"), on a real
redis-server: what Redis shows of who waits for a lock.

- a Redisson fair lock with two queued waiters (laid out by the effect of
  RedissonFairLock's own acquire): waiters 2 from its queue, and lockctl
  show lists them in order;
- an RLock whose wake channel has two subscribed clients, a liblockwatch
  lock with one: waiters 2 and 1 from PUBSUB NUMSUB; a waiter that goes
  away is no longer counted at the next scan;
- a lock whose clients poll (a plain token): waiters null, "not shown";
- the API's waiters / waiters_source, lockwatch_lock_waiters{class} (the
  class sums; no series for a class without locks), the status page's
  column, lockctl show (text and JSON);
- a Redisson 2.x waiter (redisson_lock__channel__{K}) is counted too;
- bounded: one PUBSUB NUMSUB per 256 channels: 600 RLocks (1,200 channels,
  current and 2.x names) cost 5 NUMSUBs a scan (INFO commandstats).
"""

import time

import harness as h
import test_lockctl as lt
import test_release_formats as rf
import test_release_script as rs

UUID = lt.UUID
UUID2 = rf.UUID2


def waiters_of(ag, want_keys):
    def scanned():
        st, body = ag.get_json("/api/v1/locks?state=all&limit=1000")
        if st != 200:
            return None
        locks = {l["key"]: l for l in body["locks"]}
        return locks if all(k in locks for k in want_keys) else None
    return ag.wait_for(scanned, timeout=30, desc="the locks in the API")


class Waiters(h.TestCase):

    def setUp(self):
        super().setUp()
        self.rs = self.start_redis()
        self.c = self.rs.client()

    def test_waiters_everywhere(self):
        c, port = self.c, self.rs.port
        # a fair lock: a1 holds, b1 and b2 queue behind it
        fair = "lock:fair"
        for field in (UUID + ":1", UUID2 + ":2", UUID2 + ":3"):
            c.eval(rf.FAIR_LOCK, 3, fair, "redisson_lock_queue:{%s}" % fair,
                   "redisson_lock_timeout:{%s}" % fair, 60000, field, 300000, rf.now_ms())
        # an RLock with two waiting clients, a liblockwatch lock with one
        c.hset("lock:rl", UUID + ":7", 1)     # no TTL: leaked, on the status page
        rl_subs = [rs.Subscriber(port, "SUBSCRIBE", "redisson_lock__channel:{lock:rl}"),
                   rs.Subscriber(port, "SUBSCRIBE", "redisson_lock__channel__{lock:rl}")]
        tok = "lw1:h:1:2:%d:0123456789abcdef" % rf.now_ms()
        c.set("job:lw", tok, px=60000)
        lw_sub = rs.Subscriber(port, "SUBSCRIBE", "lockwatch_lock__channel:{job:lw}")
        # a plain token: its clients poll
        c.set("lock:plain", "tok-1", px=60000)
        ag = self.start_agent(self.rs, scan_interval="1s", leak_grace="1s", max_hold="1h",
                              patterns="lock:*,job:*",
                              extra="[classes]\njob:* = jobs\n")
        locks = waiters_of(ag, [fair, "lock:rl", "job:lw", "lock:plain"])
        got = {k: (locks[k]["waiters"], locks[k]["waiters_source"])
               for k in (fair, "lock:rl", "job:lw", "lock:plain")}
        self.assertEqual(got, {fair: (2, "queue"), "lock:rl": (2, "pubsub"),
                               "job:lw": (1, "pubsub"), "lock:plain": (None, None)})
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_lock_waiters", **{"class": "jobs"}), 1)
        self.assertEqual(h.msum(m, "lockwatch_lock_waiters"), 5)
        self.assertEqual(h.msum(m, "lockwatch_scan_waiter_errors_total"), 0)
        # a waiter that goes away is not counted at the next scan (here the
        # current version's: the 2.x one stays)
        rl_subs[0].close()
        def one_left():
            st, body = ag.get_json("/api/v1/locks?state=all&limit=1000")
            l = {x["key"]: x for x in body["locks"]}.get("lock:rl")
            return l is not None and l["waiters"] == 1
        ag.wait_for(one_left, timeout=30, desc="lock:rl with one waiter")
        # the status page's column (lock:rl is leaked; the fair lock is not)
        def on_page():
            st, _, page = ag.get("/")
            return st == 200 and b"<th>waiting</th>" in page and (
                b'<td title="clients subscribed to its wake channel">1</td>' in page)
        ag.wait_for(on_page, timeout=30, desc="lock:rl's waiter on the status page")
        # lockctl show: the queue in order, and the counts
        cfg = lt.write_config(self.rs, patterns="lock:*,job:*")
        doc = lt.run_json(self, ["show", fair], cfg)
        self.assertEqual((doc["waiters"], doc["waiters_source"]), (2, "queue"))
        self.assertEqual([q["id"] for q in doc["queue"]], [UUID2 + ":2", UUID2 + ":3"])
        doc = lt.run_json(self, ["show", "lock:plain"], cfg)
        self.assertEqual((doc["waiters"], doc["queue"]), (None, None))
        p = lt.run(["show", fair], cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        text = p.stdout.decode()
        self.assertIn("2 (the fair lock's queue, in order)", text)
        self.assertLess(text.index(UUID2 + ":2"), text.index(UUID2 + ":3"))
        p = lt.run(["show", "job:lw"], cfg)
        self.assertIn("1 (clients subscribed to its wake channel)", p.stdout.decode())
        for s in rl_subs[1:] + [lw_sub]:
            s.close()

    def test_one_numsub_per_batch(self):
        c = self.c
        pipe = c.pipeline(transaction=False)
        for i in range(600):
            pipe.hset("lock:r%d" % i, UUID + ":%d" % i, 1)
        pipe.execute()
        ag = self.start_agent(self.rs, scan_interval="1h", leak_grace="1h", max_hold="1h",
                              patterns="lock:*")
        ag.wait_for(lambda: ag.scans_ok() >= 1, timeout=30, desc="the first scan")

        def pubsub_calls():
            stats = c.info("commandstats")
            return stats.get("cmdstat_pubsub|numsub", {}).get("calls", 0)
        # the first scan ran: 1,200 channels in ceil(1200/256) = 5 calls,
        # and one LRANGE per RLock for its (absent) fair queue, no LLEN
        self.assertEqual(pubsub_calls(), 5)
        stats = c.info("commandstats")
        self.assertEqual(stats.get("cmdstat_lrange", {}).get("calls", 0), 600)
        self.assertEqual(stats.get("cmdstat_llen", {}).get("calls", 0), 0)


if __name__ == "__main__":
    h.main()
