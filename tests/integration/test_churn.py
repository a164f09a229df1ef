# SPDX-License-Identifier: BSD-3-Clause
# run-all: serial (two writers flood Redis while the agent scans every 100 ms: it takes both
#   cores, and counts scans and writes in a fixed window)
"""Scanning a keyspace that changes under the scan.

Writers keep taking and dropping locks (short TTLs, DELs, type changes of the
same key) while the agent scans every 100 ms.  No scan fails, the agent
stays up, /metrics stays valid, the API stays consistent (count <= total,
no key twice), and once the churn stops the counts settle on exactly what is
in Redis.  A key that changes type between scans is decoded by its new type.
"""

import random
import threading
import time

import harness as h

STABLE = 2000


class Churn(threading.Thread):
    def __init__(self, client, seed):
        super().__init__(daemon=True)
        self.c = client
        self.rnd = random.Random(seed)
        self.seed = seed    # each writer has its own keys: no cross-writer races
        self.halt = threading.Event()
        self.ops = 0
        self.errors = []

    def run(self):
        while not self.halt.is_set():
            try:
                p = self.c.pipeline(transaction=False)
                for _ in range(200):
                    k = "lock:churn:%d:%d" % (self.seed, self.rnd.randrange(2500))
                    op = self.rnd.randrange(4)
                    if op == 0:
                        p.set(k, "t%d" % self.rnd.randrange(10**6), px=self.rnd.randrange(1, 300))
                    elif op == 1:
                        p.delete(k)
                    elif op == 2:
                        p.delete(k)
                        p.hset(k, "8743c9c0-0795-4907-87fd-6c719a6b4586:%d"
                               % self.rnd.randrange(100), "2")
                        p.pexpire(k, self.rnd.randrange(1, 300))
                    else:
                        p.delete(k)
                        p.rpush(k, "x")
                        p.pexpire(k, 200)
                p.execute()
                self.ops += 200
            except Exception as e:
                self.errors.append(repr(e))
                return
            time.sleep(0.002)

    def stop(self):
        self.halt.set()
        self.join(timeout=10)


class ChurnTest(h.TestCase):

    def test_scan_under_churn(self):
        rs = self.start_redis()
        c = rs.client()
        h.load(c, (("SET", "lock:%d" % i, "s%d" % i, "PX", 600000) for i in range(STABLE)))
        h.load(c, (("SET", "user:%d" % i, "u") for i in range(20000)))
        ag = self.start_agent(rs, scan_interval="100ms", leak_grace="1h", max_hold="1h")
        ag.wait_ready()
        workers = [Churn(rs.client(), seed) for seed in (1, 2)]
        for w in workers:
            w.start()
            self.addCleanup(w.stop)
        ok0 = ag.scans_ok()
        err0 = h.msum(ag.metrics(), "lockwatch_scans_total", target="main", result="error")
        deadline = time.monotonic() + 6.0
        while time.monotonic() < deadline:
            text = ag.metrics_text()
            m = h.parse_metrics(text)
            n = h.msum(m, "lockwatch_locks", target="main")
            self.assertGreaterEqual(n, STABLE, "stable locks missed under churn")
            self.assertLessEqual(n, STABLE + 5000)
            st, body = ag.get_json("/api/v1/locks?state=all&limit=10000")
            self.assertEqual(st, 200)
            self.assertLessEqual(body["count"], body["total"])
            self.assertEqual(body["count"], len(body["locks"]))
            keys = [l["key_escaped"] for l in body["locks"]]
            self.assertEqual(len(keys), len(set(keys)), "a key listed twice")
            time.sleep(0.3)
        rc, out = h.promtool_check(ag.metrics_text())
        self.assertEqual(rc, 0, out)
        for w in workers:
            w.stop()
            self.assertEqual(w.errors, [])
            self.assertGreater(w.ops, 1000)
        m = ag.metrics()
        self.assertGreaterEqual(h.msum(m, "lockwatch_scans_total", target="main",
                                       result="ok") - ok0, 5, "too few scans under churn")
        self.assertEqual(h.msum(m, "lockwatch_scans_total", target="main", result="error"),
                         err0, "scans failed under churn")
        self.assertTrue(ag.alive)

        # Churn over: the short-lived keys expire; the count settles on Redis'.
        def settled():
            left = [k for k in c.scan_iter(match="lock:*", count=1000)]
            return (len(left) == STABLE and
                    h.msum(ag.metrics(), "lockwatch_locks", target="main") == STABLE)
        ag.wait_for(settled, timeout=20, interval=0.3, desc="lockwatch_locks == %d" % STABLE)

        # One key changing type between scans: decoded by its new type.
        c.set("lock:shift:1", "plain-token", px=600000)
        ag.wait_for(lambda: ag.lock("lock:shift:1")[1].get("format") == "plain", timeout=10,
                    desc="lock:shift:1 as plain")
        c.delete("lock:shift:1")
        c.hset("lock:shift:1", "8743c9c0-0795-4907-87fd-6c719a6b4586:5", "4")
        c.pexpire("lock:shift:1", 600000)

        def as_hash():
            st, lk = ag.lock("lock:shift:1")
            return st == 200 and lk["format"] == "redisson" and lk
        lk = ag.wait_for(as_hash, timeout=10, desc="lock:shift:1 as redisson")
        self.assertEqual(lk["max_count"], 4)
        self.assertLess(lk["age_seconds"], 5)    # a new holder, a new clock
        c.delete("lock:shift:1")
        ag.wait_for(lambda: ag.lock("lock:shift:1")[0] == 404, timeout=10,
                    desc="a deleted lock leaves the API")


if __name__ == "__main__":
    h.main()
