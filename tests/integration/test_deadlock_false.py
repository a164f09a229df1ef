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
  - a container restarted with the same hostname runs as pid 1, thread 1
    again: the dead process's `waiting ... start` (its token
    `lw1:vm:1.<nonce A>:1:...`) for lock:rs:b, held by D, and the new
    process's lock:rs:a taken at once (no line, token
    `lw1:vm:1.<nonce B>:1:...`), which D waits for, are no cycle: the
    nonce makes the token's party one process start's, no LockDeadlock;
    the same with a real liblockwatch process as the new one (the dead
    one's token: its host, pid and thread, another nonce); the same
    scenario within one process (the same nonce, or the older token form
    without one, whose party is host, pid and thread) is a LockDeadlock;
  - one sender's hold line read before its own acquire's (reordered)
    leaves no holder behind: no cycle through it;
  - a confirmed deadlock stays while another address floods the waiting
    table with 4,200 starts: it may fill the table, then evicts its own
    pairs (the source holding the most), never the cycle's.
"""

import socket
import time

import harness
import test_deadlock as td
from client_helpers import Shell, parse_kv
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

    def restart_scenario(self, k, d, owner, old_token, new_token):
        """d holds <k>:b and waits for <k>:a, taken at once (no line) with
        new_token; owner waited for <k>:b with old_token and never ended."""
        self.set("%s:b" % k, "tokD-" + k)
        self.set("%s:a" % k, new_token)
        self.scanned("%s:a" % k, "%s:b" % k)
        k, d = k.encode(), d.encode()
        self.lines(b"lw1 waiting %s:b %s tokD-%s ok" % (k, d, k),
                   b"lw1 waiting %s:b %s %s start" % (k, owner.encode(), old_token.encode()),
                   b"lw1 waiting %s:a %s tokD2-%s start" % (k, d, k))

    def test_restarted_process_is_another_party(self):
        now = int(time.time() * 1000)
        # the killed process, waiting for b forever
        old = "lw1:vm:1.5b2e9c0d71a4f836:1:%d:0123456789abcdef" % (now - 60000)
        # the new one: the same host, pid and thread, another nonce
        new = "lw1:vm:1.c0ffee00d15ea5e0:1:%d:fedcba9876543210" % now
        self.restart_scenario("lock:rs", "D/1", "vm:1/1", old, new)
        self.no_deadlock_for(SCANS)
        # vm:1/1 -> D on b, D -> a's holder (a node of its own): both taken
        body = self.deadlocks()
        self.assertEqual(body["graph"]["edges"], 2)
        waits = {(w["waiter"], w["key"], w["holder"]) for w in body["waits"]}
        self.assertIn(("vm:1/1", "lock:rs:b", "D/1"), waits)
        self.assertNotIn(("D/1", "lock:rs:a", "vm:1/1"), waits)

    def test_restarted_liblockwatch_process(self):
        """The new process a real liblockwatch client: its token's host, pid
        and thread, with another nonce, are the dead process's."""
        sh = Shell(self, self.redis.port)
        sh.ok("connect c agent=127.0.0.1:%d" % self.udp)
        new = parse_kv(sh.ok("lock c l1 lock:rl:a 120000 1000 -"))["token"]
        host, pid, thread, ms = new.split(":")[1:5]
        pid, _, nonce = pid.partition(".")
        # (a library without the nonce: the dead process's party is its own)
        dead = "%s.%016x" % (pid, int(nonce, 16) ^ 1) if nonce else pid
        old = "lw1:%s:%s:%s:%d:0123456789abcdef" % (host, dead, thread, int(ms) - 60000)
        owner = "%s:%s/%s" % (host, pid, thread)
        self.set("lock:rl:b", "tokD")
        self.scanned("lock:rl:a", "lock:rl:b")
        self.lines(b"lw1 waiting lock:rl:b D/1 tokD ok",
                   b"lw1 waiting lock:rl:b %s %s start" % (owner.encode(), old.encode()),
                   b"lw1 waiting lock:rl:a D/1 tokD2 start")
        self.no_deadlock_for(SCANS)
        self.assertEqual(self.deadlocks()["graph"]["edges"], 2)
        sh.ok("unlock l1")

    def test_one_process_is_one_party(self):
        now = int(time.time() * 1000)
        # one process of the older form (no nonce): party vm:1:1
        self.restart_scenario("lock:op", "D/1", "vm:1/1",
                              "lw1:vm:1:1:%d:0123456789abcdef" % (now - 60000),
                              "lw1:vm:1:1:%d:fedcba9876543210" % now)
        self.agent.wait_for(lambda: self.firing("LockDeadlock"), timeout=SCANS + td.SLACK,
                            desc="LockDeadlock of the older token form")
        (d,) = self.deadlocks()["deadlocks"]
        self.assertEqual(sorted((s["waiter"], s["key"], s["holder"]) for s in d["steps"]),
                         [("D/1", "lock:op:a", "vm:1/1"), ("vm:1/1", "lock:op:b", "D/1")])
        # one process of the new form: the same nonce on both tokens
        self.restart_scenario("lock:np", "E/1", "ct:1/1",
                              "lw1:ct:1.5b2e9c0d71a4f836:1:%d:0123456789abcdef" % (now - 60000),
                              "lw1:ct:1.5b2e9c0d71a4f836:1:%d:fedcba9876543210" % now)
        self.agent.wait_for(lambda: len(self.deadlocks()["deadlocks"]) == 2,
                            timeout=SCANS + td.SLACK, desc="the second LockDeadlock")
        keys = sorted(s["key"] for d in self.deadlocks()["deadlocks"] for s in d["steps"])
        self.assertEqual(keys, ["lock:np:a", "lock:np:b", "lock:op:a", "lock:op:b"])

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


    def test_release_read_before_its_acquire(self):
        # a trial: r1's hold of app:q:1 read before its own acquire's line
        # (one sender's datagrams reordered) left r1 holding app:q:1 for
        # good, on keys no target watches, and closed a false cycle
        self.lines(b"lw1 hold app:q:1 1000 r1%3A1%2F1 tok-r1-q1",
                   b"lw1 wait app:q:1 500 ok r1%3A1%2F1 tok-r1-q1",
                   b"lw1 wait app:q:2 500 ok r2%3A2%2F1 tok-r2-q2",
                   b"lw1 waiting app:q:1 r2%3A2%2F1 tok-r2-q1 start",
                   b"lw1 waiting app:q:2 r1%3A1%2F1 tok-r1-q2 start")
        self.no_deadlock_for(SCANS)
        self.assertEqual(msum(self.agent.metrics(),
                              "lockwatch_samples_waiting_late_acquires_total"), 1)


class FalseDeadlockSlowScans(FalseDeadlock):
    """Scans 3 s apart, as in the trial."""
    scan = 3.0
    test_reused_holder_id = test_dead_process_start = test_flood_from_another_source = None
    test_restarted_process_is_another_party = test_one_process_is_one_party = None
    test_restarted_liblockwatch_process = None

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
