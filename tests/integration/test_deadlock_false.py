#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""test_deadlock_false - the false deadlocks of the on-call trial of the
wait-for graph (docs/deadlocks.md), each with the trial's own lines: a real
redis-server scanned every second by target `main` (pattern `lock:*`), raw
`lw1` lines over UDP, no key_file.

  - a holder id reused (hand-written locks writing "1" for everyone): the
    graph ties "1" on lock:c:x to the owner that named it on lock:c:x, not
    to the owner that named "1" last on another key: Q -> R -> P is a
    chain, no LockDeadlock (the graph has its two edges);
  - a `waiting ... start` left by a process that died: the next process
    with the same owner name takes another key 2 s later, which ends the
    dead wait (lockwatch_samples_waiting_superseded_total 1), so no cycle
    closes through it; the same owner really waiting later closes the real
    cycle, a LockDeadlock;
  - a cycle of lines on keys Redis never had, under main's pattern (scans
    3 s apart, the lines just after one): it
    waits for a scan begun since it was first seen, which vouches the keys
    gone: no LockDeadlock, no deadlock counted, over several scans;
  - a confirmed deadlock stays while another address floods the waiting
    table with 4,200 starts: it may fill the table, then evicts its own
    pairs (the source holding the most), never the cycle's.
"""

import socket
import time

import harness
import test_deadlock as td
from harness import msum

SCANS = 4 * td.SCAN + 1.0   # a scan in progress, three more, a pass: long enough to confirm


class FalseDeadlock(td.LinesAgent):
    firing = td.Deadlock.firing
    deadlocks = td.Deadlock.deadlocks

    def lines(self, *lines, gap=0.1):
        for line in lines:
            self.send(line)
            time.sleep(gap)

    def set(self, key, value):
        self.assertTrue(self.r.set(key, value, px=120000))

    def scanned(self, *keys):
        for key in keys:
            self.agent.wait_for(lambda: self.agent.lock(key)[0] == 200, timeout=10,
                                desc="%s scanned" % key)

    def no_deadlock_for(self, seconds):
        """No LockDeadlock and none counted, polled for seconds."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.assertEqual(self.firing("LockDeadlock"), [])
            self.assertEqual(self.deadlocks()["deadlocks"], [])
            self.assertEqual(msum(self.agent.metrics(), "lockwatch_deadlocks_total"), 0)
            time.sleep(0.25)

    def test_reused_holder_id(self):
        self.set("lock:c:x", "1")
        self.set("lock:c:y", "1")
        self.set("lock:c:z", "2")
        self.scanned("lock:c:x", "lock:c:y", "lock:c:z")
        self.lines(b"lw1 waiting lock:c:x P/1 1 ok",
                   b"lw1 waiting lock:c:z R/1 2 ok",
                   b"lw1 waiting lock:c:y Q/1 1 ok",
                   b"lw1 waiting lock:c:z Q/1 1b start",
                   b"lw1 waiting lock:c:x R/1 2b start")
        self.no_deadlock_for(SCANS)
        # the graph has Q -> R and R -> P: the lines were taken
        self.assertEqual(self.deadlocks()["graph"]["edges"], 2)

    def test_dead_process_start(self):
        self.send(b"lw1 waiting lock:e:y pod-0/worker-1 tokOLD start")   # then it dies
        time.sleep(2.0)
        self.set("lock:e:x", "tokNEW")          # its successor, the same owner name
        self.send(b"lw1 waiting lock:e:x pod-0/worker-1 tokNEW ok")
        self.set("lock:e:y", "tokV")
        self.send(b"lw1 waiting lock:e:y V/1 tokV ok")
        self.send(b"lw1 waiting lock:e:x V/1 tokV2 start")
        self.no_deadlock_for(SCANS)
        m = self.agent.metrics()
        self.assertEqual(msum(m, "lockwatch_samples_waiting_superseded_total"), 1)
        self.assertEqual(msum(m, "lockwatch_samples_waiting"), 1)      # V's
        # the successor really waits for y now: the real cycle is found
        self.send(b"lw1 waiting lock:e:y pod-0/worker-1 tokNEW2 start")
        self.agent.wait_for(lambda: self.firing("LockDeadlock"), timeout=SCANS + td.SLACK,
                            desc="the real deadlock")
        (d,) = self.deadlocks()["deadlocks"]
        self.assertEqual(sorted((s["waiter"], s["key"]) for s in d["steps"]),
                         [("V/1", "lock:e:x"), ("pod-0/worker-1", "lock:e:y")])

    def test_flood_from_another_source(self):
        for key, owner, token in (("lock:y:a", "A/1", "ta"), ("lock:y:b", "B/1", "tb")):
            self.set(key, token)
            self.send(b"lw1 waiting %s %s %s ok" % (key.encode(), owner.encode(),
                                                     token.encode()))
        self.scanned("lock:y:a", "lock:y:b")
        self.send(b"lw1 waiting lock:y:b A/1 - start", b"lw1 waiting lock:y:a B/1 - start")
        self.agent.wait_for(lambda: self.firing("LockDeadlock"), timeout=SCANS + td.SLACK,
                            desc="LockDeadlock")
        flood = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(flood.close)
        flood.bind(("127.0.0.2", 0))            # another source address
        for d in range(42):
            flood.sendto(b"".join(b"lw1 waiting job:flood:%d F/%d - start\n" % (n, n)
                                  for n in range(d * 100, d * 100 + 100)),
                         ("127.0.0.1", self.udp))
            time.sleep(0.01)
        self.agent.wait_for(
            lambda: msum(self.agent.metrics(), "lockwatch_samples_events_total",
                         kind="waiting_start") >= 4202,
            timeout=10, desc="the flood taken")
        time.sleep(SCANS)
        m = self.agent.metrics()
        self.assertEqual(msum(m, "lockwatch_deadlocks", target="main"), 1)
        self.assertEqual(len(self.firing("LockDeadlock")), 1)
        # the cycle's 4 pairs stay; the flood takes the other 4092 places
        self.assertEqual(msum(m, "lockwatch_samples_waiting_evicted_total"), 4200 - 4092)
        self.assertEqual(msum(m, "lockwatch_samples_waiting"), 2 + 4092)


class FalseDeadlockSlowScans(FalseDeadlock):
    """Scans 3 s apart, as in the trial."""
    scan = 3.0
    test_reused_holder_id = test_dead_process_start = test_flood_from_another_source = None

    def test_keys_redis_never_had(self):
        self.assertEqual(self.r.exists("lock:ph:a", "lock:ph:b"), 0)
        # just after a scan ended, as the trial's lines came (its scans 3 s
        # apart): the newest scan began before the lines, the next begins
        # only after the graph's two passes
        scans = msum(self.agent.metrics(), "lockwatch_scans_total")
        self.agent.wait_for(lambda: msum(self.agent.metrics(), "lockwatch_scans_total") > scans,
                            timeout=self.scan + td.SLACK, interval=0.02, desc="a scan")
        self.send(b"lw1 waiting lock:ph:a p/1 tokA ok",
                  b"lw1 waiting lock:ph:b q/1 tokB ok",
                  b"lw1 waiting lock:ph:b p/1 tokA2 start",
                  b"lw1 waiting lock:ph:a q/1 tokB2 start")
        self.no_deadlock_for(2 * self.scan + 1.0)
        st, body = self.agent.get_json("/api/v1/events?kind=deadlock")
        self.assertEqual(st, 200)
        self.assertEqual(body["events"], [])


if __name__ == "__main__":
    harness.main()
