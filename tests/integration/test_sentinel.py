# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits on Sentinel's own failover timers; next to no CPU; its bound, two
#   scan intervals plus 1 s, has room)
"""mode = sentinel: a primary, a replica and three sentinels started by the
test.  The agent finds the primary through the sentinels (its URL names no
server that matters), finds the leaks there, and after SENTINEL FAILOVER
scans the new primary within two scan intervals, without a restart, and
finds a leak written after the failover."""

import time

import harness as h
import topo

INTERVAL = 1.0


class SentinelMode(h.TestCase):

    def test_failover(self):
        primary = self.start_redis()
        replica = self.start_redis(args=["--replicaof", "127.0.0.1", str(primary.port)])
        h.wait_until(lambda: replica.client().info("replication").get(
            "master_link_status") == "up", 20, desc="replica in sync")
        sentinels = [topo.Sentinel(primary.port) for _ in range(3)]
        for s in sentinels:
            self.addCleanup(s.kill)

        # a failover needs the sentinels to know the replica and each other
        def ready(s):
            flat = s.client().execute_command("SENTINEL", "MASTER", "mymaster")
            info = {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}
            return len(s.replicas()) == 1 and int(info["num-other-sentinels"]) == 2
        for s in sentinels:
            h.wait_until(lambda s=s: ready(s), 30,
                         desc="sentinel :%d sees the replica and 2 sentinels" % s.port)

        primary.client().set("lock:leak:before", "tok-a")
        primary.client().set("lock:held:1", "tok-b", px=600000)

        # the URL is a placeholder: mode = sentinel asks the sentinels
        ag = self.start_agent(targets=[("main", "redis://127.0.0.1:1/0")],
                              scan_interval="%gs" % INTERVAL, leak_grace="1s",
                              target_extra={
                                  "mode": "sentinel",
                                  "sentinels": ",".join("127.0.0.1:%d" % s.port
                                                        for s in sentinels),
                                  "master_name": "mymaster"})
        pid = ag.proc.pid

        def leaked():
            m = ag.metrics()
            return m if h.msum(m, "lockwatch_locks_leaked", target="main") >= 1 else None
        m = ag.wait_for(leaked, 20, desc="the leak on the primary found")
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 2)
        st, j = ag.lock("lock:leak:before")
        self.assertEqual(st, 200, j)

        # SENTINEL FAILOVER: the replica becomes the primary
        sentinels[0].client().execute_command("SENTINEL", "FAILOVER", "mymaster")

        def promoted():
            return (sentinels[0].master_port() == replica.port and
                    replica.client().execute_command("ROLE")[0] in (b"master", "master"))
        h.wait_until(promoted, 30, desc="replica :%d promoted" % replica.port)
        # a leak written on the new primary only (the old one now follows it)
        replica.client().set("lock:leak:after", "tok-c")
        t0 = time.monotonic()

        def found():
            st, j = ag.lock("lock:leak:after")
            return j if st == 200 else None
        ag.wait_for(found, 2 * INTERVAL + 3, interval=0.05,
                    desc="lock:leak:after found on the new primary")
        took = time.monotonic() - t0
        # within two scan intervals (plus the scan itself and this poll)
        self.assertLess(took, 2 * INTERVAL + 1.0, "found after %.2fs" % took)
        self.assertEqual(ag.proc.pid, pid)
        self.assertTrue(ag.alive)
        self.assertIn("now scanning 127.0.0.1:%d" % replica.port, ag.log_tail(200))

        # and it stays there: the leak ages into a leak on the new primary
        def leaked_after():
            st, j = ag.lock("lock:leak:after")
            return st == 200 and "leaked" in j["states"]
        ag.wait_for(leaked_after, 10, desc="lock:leak:after leaked")
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="main"), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 3)

    def test_no_sentinel_answers(self):
        """Every sentinel down: the target is down with a reason naming
        them, and the agent keeps running."""
        dead = [h.free_port(), h.free_port()]
        ag = self.start_agent(targets=[("main", "redis://127.0.0.1:1/0")],
                              target_extra={
                                  "mode": "sentinel",
                                  "sentinels": ",".join("127.0.0.1:%d" % p for p in dead),
                                  "master_name": "mymaster"})

        def down():
            st, _, body = ag.get("/readyz")
            return body if st == 503 and b"sentinel" in body else None
        body = ag.wait_for(down, 20, desc="readyz names the sentinels")
        for p in dead:
            self.assertIn(b"127.0.0.1:%d" % p, body)


if __name__ == "__main__":
    h.main()
