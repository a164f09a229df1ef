#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""test_deadlock - the wait-for graph end to end (collectors/graph/, issue 26):
real lock keys in a real redis-server, `lw1 waiting` / `hold` lines over UDP
as liblockwatch and the reporters send them, the agent scanning every second.

  - two owners each holding one SET lock and waiting for the other's:
    LockDeadlock (critical) naming both keys and both owners, within two
    scans, /api/v1/deadlocks with the cycle and the youngest hold to
    release, lockwatch_deadlocks{target="main"} 1; after one owner gives up
    and releases, it resolves;
  - the same cycle through Redisson fair queues as Redisson writes them
    (a hash `<uuid>:<tid> -> count`, `redisson_lock_queue:{K}` of waiting
    `<uuid>:<tid>`), and one whose holder reports its owner (a reporter in
    another language holding a Redisson lock): the fair queue's waiter and
    the reporter's owner are one node;
  - a chain (A waits for B waits for C) is no deadlock, and
    /api/v1/deadlocks lists its two waits (waiter, lock, holder), which
    `lockctl deadlocks` shows as "waiting now" in 80 columns (--waits 1:
    one, and "1 of 2 waits shown");
  - a lock-order inversion that never overlapped (A then B by one owner,
    released, later B then A by another): one LockOrderInversion with both
    sites, no LockDeadlock; a lock released without its `hold` line (by
    on-call) teaches no order once a scan lacks it;
  - 4,400 try-locks of one host that found their locks taken leave a live
    cycle in the table (ended pairs go with their end);
  - hostile key bytes (quotes, newline, ESC, CR, NUL, invalid UTF-8) in a
    cycle keep /api/v1/deadlocks valid JSON, /metrics parseable and
    `lockctl deadlocks` free of raw control bytes, in 80 columns;
  - each step's holder_id is the Redis holder id (the SET value, the
    Redisson hash field) beside its owner;
  - with the target's Redis gone (its scans fail), a cycle of the holders'
    lines says in the alert, /api/v1/deadlocks and lockctl that the target
    cannot confirm those holdings;
  - `lockctl deadlocks` shows the cycle in 80 columns, the holder id and the
    release command, and --json the agent's document; with no agent
    answering it exits 3.  (test_deadlock_release.py runs that command.)
"""

import json
import os
import socket
import subprocess
import time
import unicodedata
import urllib.parse

import harness
from client_helpers import closed_udp_port as free_udp_port
from harness import msum

SCAN = 1.0                  # scan_interval, seconds
BOUND = 2 * SCAN + 0.5      # two scans, and a pass of the graph (twice a second)
SLACK = 6.0                 # load (ASan, 4 tests at once) on top of it
NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet"]


def q(raw):
    """A key, owner or holder as a line field (docs/line-protocol.md)."""
    if isinstance(raw, str):
        raw = raw.encode()
    return urllib.parse.quote_from_bytes(raw, safe="").encode()


LOCKCTL = os.path.join(harness.BUILD, "bin", "lockctl")


def lockctl(config, *args, columns=80):
    env = dict(os.environ, COLUMNS=str(columns))
    return subprocess.run([LOCKCTL, "-c", config] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=30, env=env)


def columns(line):
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


UUID_A = "2d4b7c1e-9f0a-4c3b-8e21-5a6f7b8c9d0e"
UUID_B = "7e8f9a0b-1c2d-4e3f-a465-768798a9bacb"


class LinesAgent(harness.TestCase):
    """A redis-server and an agent taking samples (scanning every `scan`
    seconds, or following), and the lines to send it; no tests of its own
    (test_deadlock_release.py builds on it too)."""
    follow = False
    scan = SCAN

    def setUp(self):
        super().setUp()
        self.redis = self.start_redis(args=NOTIFY if self.follow else ())
        self.r = self.redis.client()
        self.udp = free_udp_port()
        extra = {"incremental": "on", "reconcile_interval": "1h"} if self.follow else None
        self.agent = self.start_agent(self.redis, samples="127.0.0.1:%d" % self.udp,
                                      scan_interval="10s" if self.follow else "%gs" % self.scan,
                                      leak_grace="30s", max_hold="10m", target_extra=extra)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(self.sock.close)

    def send(self, *lines):
        self.sock.sendto(b"\n".join(lines) + b"\n", ("127.0.0.1", self.udp))

    def waiting(self, key, owner, holder, what):
        return b"lw1 waiting %s %s %s %s" % (q(key), q(owner), q(holder) if holder else b"-",
                                             what.encode())


class Deadlock(LinesAgent):

    def hold(self, key, owner, holder):
        return b"lw1 hold %s 1000 %s %s" % (q(key), q(owner), q(holder))

    def acquire(self, key, owner, token):
        """owner takes SET lock key = token, and says so as a reporter does."""
        self.assertTrue(self.r.set(key, token, nx=True, px=600000))
        self.send(self.waiting(key, owner, token, "start"), self.waiting(key, owner, token, "ok"))

    def firing(self, name):
        st, body = self.agent.get_json("/api/v1/alerts")
        self.assertEqual(st, 200)
        return [a for a in body["alerts"] if a["labels"]["alertname"] == name]

    def deadlocks(self):
        st, body = self.agent.get_json("/api/v1/deadlocks")
        self.assertEqual(st, 200, body)
        return body

    def wait_deadlock(self, since):
        self.agent.wait_for(lambda: self.firing("LockDeadlock"), timeout=self.bound + SLACK,
                            desc="LockDeadlock firing")
        took = time.monotonic() - since
        print("LockDeadlock %.2f s after the cycle closed (bound %.1f s)"
              % (took, self.bound))
        return took

    bound = BOUND

    def test_cycle_of_two_reporters(self):
        self.acquire("lock:acct:a", "api-1:41/7", "tok-a-41")
        time.sleep(0.3)             # b is the younger hold
        self.acquire("lock:ship:b", "worker-2:99/3", "tok-b-99")
        # a scan has seen both (else the cycle is first known from the lines
        # alone, and keeps the target label "*" it was confirmed with)
        self.agent.wait_for(lambda: self.agent.lock("lock:ship:b")[0] == 200, timeout=10,
                            desc="lock:ship:b scanned")
        self.send(self.waiting("lock:ship:b", "api-1:41/7", None, "start"),
                  self.waiting("lock:acct:a", "worker-2:99/3", None, "start"))
        closed = time.monotonic()
        self.wait_deadlock(closed)
        (a,) = self.firing("LockDeadlock")
        self.assertEqual(a["labels"]["severity"], "critical")
        self.assertEqual(a["labels"]["target"], "main")
        desc = a["annotations"]["description"]
        for part in ("lock:acct:a", "lock:ship:b", "api-1:41/7", "worker-2:99/3"):
            self.assertIn(part, desc)
        body = self.deadlocks()
        (d,) = body["deadlocks"]
        self.assertEqual(d["target"], "main")
        steps = d["steps"]
        self.assertEqual(sorted(s["key"] for s in steps), ["lock:acct:a", "lock:ship:b"])
        self.assertEqual(sorted(s["holder"] for s in steps), ["api-1:41/7", "worker-2:99/3"])
        # the Redis holder id beside the owner: what lockctl release --holder takes
        self.assertEqual(sorted((s["key"], s["holder_id"]) for s in steps),
                         [("lock:acct:a", "tok-a-41"), ("lock:ship:b", "tok-b-99")])
        for s in steps:
            self.assertEqual(s["source"], "waiting")
            self.assertNotEqual(s["waiter"], s["holder"])
        # the youngest hold is b's: releasing it loses the least work
        self.assertEqual(steps[d["release"]]["key"], "lock:ship:b")
        self.assertIn("Release lock:ship:b", desc)
        self.assertNotIn("no target's patterns", desc)    # both keys are main's
        m = self.agent.metrics()
        self.assertEqual(msum(m, "lockwatch_deadlocks", target="main"), 1)
        self.assertEqual(msum(m, "lockwatch_deadlocks", target="*"), 0)
        self.assertEqual(msum(m, "lockwatch_deadlocks_total"), 1)

        p = lockctl(self.agent.config_path, "deadlocks")
        out = p.stdout.decode("utf-8")
        self.assertEqual(p.returncode, 0, p.stderr)
        for line in out.splitlines():
            self.assertLessEqual(columns(line), 80, line)
        for part in ("deadlock 1: 2 holders on target main", "WAITER", "lock:acct:a",
                     "lock:ship:b", "worker-2:99/3", "release lock:ship:b",
                     "as holder id tok-b-99", "release with:", "--holder tok-b-99"):
            self.assertIn(part, out)
        p = lockctl(self.agent.config_path, "deadlocks", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(json.loads(p.stdout)["deadlocks"]), 1)

        # worker-2 gives up on a and releases b: the cycle is gone
        self.send(self.waiting("lock:acct:a", "worker-2:99/3", None, "timeout"),
                  self.hold("lock:ship:b", "worker-2:99/3", "tok-b-99"))
        self.r.delete("lock:ship:b")
        self.agent.wait_for(lambda: not self.firing("LockDeadlock"), timeout=10,
                            desc="LockDeadlock resolved")
        self.assertEqual(self.deadlocks()["deadlocks"], [])
        self.assertEqual(msum(self.agent.metrics(), "lockwatch_deadlocks", target="main"), 0)

    def test_cycle_on_keys_no_target_covers_says_how_it_ends(self):
        # a trial: the owners of a deadlock on such keys died; the alert
        # stayed (nothing vouches for those keys) and told on-call that a
        # restart of the holder would end it
        self.acquire("app:acct:x", "svc-x:1/1", "tok-x")
        time.sleep(0.3)
        self.acquire("app:ship:y", "svc-y:2/1", "tok-y")
        self.send(self.waiting("app:ship:y", "svc-x:1/1", None, "start"),
                  self.waiting("app:acct:x", "svc-y:2/1", None, "start"))
        self.wait_deadlock(time.monotonic())
        (a,) = self.firing("LockDeadlock")
        self.assertEqual(a["labels"]["target"], "*")
        desc = " ".join(a["annotations"]["description"].split())
        self.assertIn("Keys no target's patterns cover are known only from their owners' lines: "
                      "an owner that died or restarted (a new owner) never says it let go, so "
                      "if they did, this stays until the agent restarts.", desc)
        out = " ".join(lockctl(self.agent.config_path, "deadlocks").stdout.decode().split())
        self.assertIn("If its owners died or restarted, nothing says they let go: the deadlock "
                      "stays until the agent restarts", out)

    def test_cycle_while_the_scans_fail(self):
        """With main's Redis gone, its scans fail: the cycle stands on the
        holders' own lines, and every text says main cannot confirm them."""
        self.acquire("lock:acct:e", "api-3:7/1", "tok-e-7")
        time.sleep(0.3)
        self.acquire("lock:ship:f", "worker-4:8/2", "tok-f-8")
        self.agent.wait_for(lambda: self.agent.lock("lock:ship:f")[0] == 200, timeout=10,
                            desc="lock:ship:f scanned")
        self.redis.stop()
        self.agent.wait_for(lambda: msum(self.agent.metrics(), "lockwatch_target_up", target="main") == 0,
                            timeout=10 + SLACK, desc="main down")
        self.send(self.waiting("lock:ship:f", "api-3:7/1", None, "start"),
                  self.waiting("lock:acct:e", "worker-4:8/2", None, "start"))
        self.wait_deadlock(time.monotonic())
        (a,) = self.firing("LockDeadlock")
        desc = a["annotations"]["description"]
        for holder in ("api-3:7/1", "worker-4:8/2"):
            self.assertIn("held by %s (by its own lines; target main cannot confirm it: its last "
                          "scan failed or was partial)" % holder, desc)
        (d,) = self.deadlocks()["deadlocks"]
        self.assertEqual([s["unconfirmed_target"] for s in d["steps"]], ["main", "main"])
        p = lockctl(self.agent.config_path, "deadlocks")
        out = p.stdout.decode("utf-8")
        self.assertEqual(p.returncode, 0, p.stderr)
        for key in ("lock:acct:e", "lock:ship:f"):
            self.assertIn("the holding of %s is its holder's own word: target main" % key, out)
        # first known from the lines: the label "*", said in words
        self.assertEqual(d["target"], "*")
        self.assertIn("deadlock 1: 2 holders, target * (on several targets, or first known from "
                      "reporters' lines), since", " ".join(out.split()))
        for line in out.splitlines():
            self.assertLessEqual(columns(line), 80, line)

    def test_cycle_of_reporters_that_end_acquires_in_one_line(self):
        """An owner that took its lock at once and ended the acquire with the
        7-field wait (its waiting end and its wait, as the Node reporter
        sends it) is tied to its holder id by that line alone."""
        for key, owner, token in (("lock:acct:c", "node-1:5/1", "v-c-1"),
                                  ("lock:ship:d", "node-2:6/1", "v-d-2")):
            self.assertTrue(self.r.set(key, token, nx=True, px=600000))
            self.send(b"lw1 wait %s 120 ok %s %s" % (q(key), q(owner), q(token)))
            time.sleep(0.3)         # d is the younger hold
        self.agent.wait_for(lambda: self.agent.lock("lock:ship:d")[0] == 200, timeout=10,
                            desc="lock:ship:d scanned")
        self.send(self.waiting("lock:ship:d", "node-1:5/1", None, "start"),
                  self.waiting("lock:acct:c", "node-2:6/1", None, "start"))
        self.wait_deadlock(time.monotonic())
        (d,) = self.deadlocks()["deadlocks"]
        self.assertEqual(sorted((s["key"], s["holder"], s["holder_id"]) for s in d["steps"]),
                         [("lock:acct:c", "node-1:5/1", "v-c-1"),
                          ("lock:ship:d", "node-2:6/1", "v-d-2")])
        m = self.agent.metrics()
        self.assertEqual(msum(m, "lockwatch_samples_invalid_total"), 0)

    def test_try_lock_timeouts_keep_a_deadlock(self):
        """A red-team trial: 4,400 try-locks of one host that found their
        locks taken (a start, then the 7-field wait that ends it timeout)
        filled the 4,096-pair table, the live cycle's pairs (the oldest)
        were evicted and LockDeadlock resolved while both owners still
        waited.  Ended pairs now go with their end: the cycle stays."""
        for key, owner, token in (("lock:acct:e", "node-1:5/1", "v-e-1"),
                                  ("lock:ship:f", "node-2:6/1", "v-f-2")):
            self.assertTrue(self.r.set(key, token, nx=True, px=600000))
            self.send(b"lw1 wait %s 120 ok %s %s" % (q(key), q(owner), q(token)))
            time.sleep(0.3)
        self.agent.wait_for(lambda: self.agent.lock("lock:ship:f")[0] == 200, timeout=10,
                            desc="lock:ship:f scanned")
        self.send(self.waiting("lock:ship:f", "node-1:5/1", None, "start"),
                  self.waiting("lock:acct:e", "node-2:6/1", None, "start"))
        self.wait_deadlock(time.monotonic())
        batch = []
        for i in range(4400):
            key, owner = "lock:busy:%d" % i, "node-3:7/%d" % (i % 8)
            batch.append(self.waiting(key, owner, "tok-%d" % i, "start"))
            batch.append(b"lw1 wait %s 5000 timeout %s %s" % (q(key), q(owner),
                                                              q("tok-%d" % i)))
            if len(batch) == 80:
                self.send(*batch)
                batch = []
                time.sleep(0.002)       # loopback, but the socket buffer is finite
        self.send(*batch)
        self.agent.wait_for(lambda: msum(self.agent.metrics(), "lockwatch_samples_events_total",
                                         kind="waiting_end") >= 4400, timeout=20,
                            desc="the try-locks' ends taken in")
        time.sleep(2 * SCAN + 0.5)      # two scans and a pass of the graph
        m = self.agent.metrics()
        self.assertEqual(msum(m, "lockwatch_samples_waiting_evicted_total"), 0)
        self.assertEqual(msum(m, "lockwatch_samples_waiting"), 2)
        self.assertTrue(self.firing("LockDeadlock"), "the cycle was forgotten")
        self.assertEqual(len(self.deadlocks()["deadlocks"]), 1)

    def redisson_hold(self, key, holder):
        self.r.hset(key, holder, 1)
        self.r.pexpire(key, 30000)

    def test_cycle_through_fair_queues(self):
        """Redisson FairLocks as Redisson lays them out: each thread holds
        one and is queued on the other."""
        ta, tb = UUID_A + ":61", UUID_B + ":88"
        self.redisson_hold("lock:fair:x", ta)
        self.redisson_hold("lock:fair:y", tb)
        self.r.rpush("redisson_lock_queue:{lock:fair:y}", ta)
        self.r.rpush("redisson_lock_queue:{lock:fair:x}", tb)
        closed = time.monotonic()
        self.wait_deadlock(closed)
        (d,) = self.deadlocks()["deadlocks"]
        self.assertEqual(sorted(s["holder"] for s in d["steps"]), sorted([ta, tb]))
        # no owner: the node is the Redisson hash field, the holder id itself
        self.assertEqual([s["holder_id"] for s in d["steps"]], [s["holder"] for s in d["steps"]])
        self.assertEqual(sorted(s["key"] for s in d["steps"]), ["lock:fair:x", "lock:fair:y"])
        self.assertEqual({s["source"] for s in d["steps"]}, {"fair-queue"})
        # the queue empties (one waiter gave up): resolved
        self.r.delete("redisson_lock_queue:{lock:fair:x}")
        self.agent.wait_for(lambda: not self.firing("LockDeadlock"), timeout=10,
                            desc="LockDeadlock resolved")

    def test_cycle_across_languages(self):
        """A Redisson thread queued on a fair lock that a reporter's owner
        holds (its `lw1` lines name the Redisson hash field as its holder),
        while that owner waits for the Redisson thread's lock."""
        java = UUID_A + ":17"
        self.redisson_hold("lock:fair:j", java)
        # the Python owner holds a SET lock, and waits for the Java one
        self.acquire("lock:py:p", "py-host:5/main", "tok-py")
        self.send(self.waiting("lock:fair:j", "py-host:5/main", None, "start"))
        # the Java thread's own wait, as the Java reporter says it
        self.send(self.waiting("lock:py:p", "jvm-1:300/17", None, "start"),
                  self.waiting("lock:fair:j", "jvm-1:300/17", java, "ok"))
        closed = time.monotonic()
        self.wait_deadlock(closed)
        (d,) = self.deadlocks()["deadlocks"]
        self.assertEqual(sorted(s["holder"] for s in d["steps"]),
                         ["jvm-1:300/17", "py-host:5/main"])
        self.assertEqual(sorted((s["holder"], s["holder_id"]) for s in d["steps"]),
                         [("jvm-1:300/17", java), ("py-host:5/main", "tok-py")])

    def test_lockctl_without_agent(self):
        p = lockctl(self.agent.config_path, "--agent", "http://127.0.0.1:%d" % free_udp_port(),
                    "deadlocks")
        self.assertEqual(p.returncode, 3, p.stdout)
        self.assertIn(b"did not answer", p.stderr)
        p = lockctl(self.agent.config_path, "deadlocks", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn(b"wait-for graph", p.stdout)

    def test_liblockwatch_took_its_lock_at_once(self):
        """liblockwatch sends no line for an acquire that did not wait: its
        lock A is known as its owner's through the token it waits for B
        with (the same `lw1:<host>:<pid>.<nonce>:<thread>` party), while a
        Python reporter (which says `waiting ok` for every blocking
        acquire) holds B and waits for A.  (test_deadlock_false.py: another
        nonce is another process.)"""
        now = int(time.time() * 1000)
        tok_a = "lw1:web-1:4242.5b2e9c0d71a4f836:77:%d:00aa11bb22cc33dd" % now
        tok_b_try = "lw1:web-1:4242.5b2e9c0d71a4f836:77:%d:44ee55ff66aa77bb" % (now + 900)
        self.assertTrue(self.r.set("lock:lw:a", tok_a, px=600000))    # no line at all
        self.send(self.waiting("lock:lw:b", "py-7:9/140234", "0f9e8d7c6b5a", "ok"))
        self.assertTrue(self.r.set("lock:lw:b", "0f9e8d7c6b5a", px=600000))
        self.send(self.waiting("lock:lw:b", "web-1:4242/77", tok_b_try, "start"),
                  self.waiting("lock:lw:a", "py-7:9/140234", None, "start"))
        self.wait_deadlock(time.monotonic())
        (d,) = self.deadlocks()["deadlocks"]
        self.assertEqual(sorted(s["holder"] for s in d["steps"]),
                         ["py-7:9/140234", "web-1:4242/77"])

    def test_chain_is_no_deadlock(self):
        self.acquire("lock:c:1", "o-1", "t1")
        self.acquire("lock:c:2", "o-2", "t2")
        self.acquire("lock:c:3", "o-3", "t3")
        self.send(self.waiting("lock:c:2", "o-1", None, "start"),
                  self.waiting("lock:c:3", "o-2", None, "start"))
        time.sleep(4 * SCAN)
        body = self.deadlocks()
        self.assertEqual(body["deadlocks"], [])
        self.assertGreaterEqual(body["graph"]["edges"], 2)
        self.assertEqual(self.firing("LockDeadlock"), [])
        # who waits for whom, though no deadlock: each edge, on its lock,
        # with the holder id a release takes
        waits = {(w["waiter"], w["key"], w["holder"], w["holder_id"], w["source"])
                 for w in body["waits"]}
        self.assertEqual(waits, {("o-1", "lock:c:2", "o-2", "t2", "waiting"),
                                 ("o-2", "lock:c:3", "o-3", "t3", "waiting")})
        self.assertEqual(body["waits_total"], 2)
        # lockctl deadlocks shows them as "waiting now", in 80 columns
        for cols in (80, 100, 200):
            p = lockctl(self.agent.config_path, "deadlocks", columns=cols)
            out = p.stdout.decode("utf-8")
            self.assertEqual(p.returncode, 0, p.stderr)
            for line in out.splitlines():
                self.assertLessEqual(columns(line), cols, line)
            self.assertIn("waiting now", out)
            rows = [line.split() for line in out.splitlines()]
            for waiter, key, holder, hid in (("o-1", "lock:c:2", "o-2", "t2"),
                                             ("o-2", "lock:c:3", "o-3", "t3")):
                (row,) = [r for r in rows if r[:3] == [waiter, key, holder]]
                self.assertEqual(row[-1], hid, out)     # HOLDER ID: room for it
            self.assertNotIn("waits shown", out)        # none left out
        p = lockctl(self.agent.config_path, "deadlocks", "--waits", "1")
        out = p.stdout.decode("utf-8")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len([line for line in out.splitlines()
                              if line.split()[:1] in (["o-1"], ["o-2"])]), 1, out)
        self.assertIn("1 of 2 waits shown (oldest holdings first; --json for all the agent "
                      "lists)", " ".join(out.split()))
        p = lockctl(self.agent.config_path, "deadlocks", "--waits", "0")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(b"waiting now", p.stdout)
        self.assertIn(b"0 deadlocks", p.stdout)
        p = lockctl(self.agent.config_path, "deadlocks", "--waits", "257")
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertIn(b"--waits must be an integer from 0", p.stderr)
        # --json: the agent's document as it came, every wait in it
        p = lockctl(self.agent.config_path, "deadlocks", "--json", "--waits", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(json.loads(p.stdout)["waits"]), 2)

    def test_inversion_without_overlap(self):
        # owner 1: acct then ship, both released before owner 2 starts
        self.acquire("lock:acct:1001", "svc-a:1/1", "ta1")
        self.send(self.waiting("lock:ship:2002", "svc-a:1/1", None, "start"))
        # seen by a pass while it waits (a loaded machine's passes run late)
        self.agent.wait_for(lambda: self.deadlocks()["graph"]["orders"] >= 1, timeout=10,
                            desc="the order acct -> ship learnt")
        self.r.set("lock:ship:2002", "ta2", px=600000)
        self.send(self.waiting("lock:ship:2002", "svc-a:1/1", "ta2", "ok"))
        time.sleep(1.5 * SCAN)
        self.send(self.hold("lock:ship:2002", "svc-a:1/1", "ta2"),
                  self.hold("lock:acct:1001", "svc-a:1/1", "ta1"))
        self.r.delete("lock:ship:2002", "lock:acct:1001")
        time.sleep(1.5 * SCAN)
        self.assertEqual(self.firing("LockOrderInversion"), [])
        # owner 2: ship then acct
        self.acquire("lock:ship:3003", "svc-b:2/9", "tb1")
        self.send(self.waiting("lock:acct:4004", "svc-b:2/9", None, "start"))
        self.agent.wait_for(lambda: self.firing("LockOrderInversion"), timeout=10,
                            desc="LockOrderInversion firing")
        (a,) = self.firing("LockOrderInversion")
        self.assertEqual(a["labels"]["severity"], "warning")
        self.assertEqual(a["labels"]["class"], "lock:acct:*,lock:ship:*")
        desc = a["annotations"]["description"]
        for part in ("svc-a:1/1", "lock:acct:1001", "lock:ship:2002", "svc-b:2/9",
                     "lock:ship:3003", "lock:acct:4004"):
            self.assertIn(part, desc)
        (inv,) = self.deadlocks()["inversions"]
        self.assertEqual(inv["classes"], ["lock:acct:*", "lock:ship:*"])
        time.sleep(2 * SCAN)
        self.assertEqual(self.firing("LockDeadlock"), [])
        m = self.agent.metrics()
        self.assertEqual(msum(m, "lockwatch_lock_order_inversions"), 1)
        self.assertEqual(msum(m, "lockwatch_lock_order_inversions_total"), 1)
        self.assertEqual(msum(m, "lockwatch_deadlocks_total"), 0)

    def test_released_lock_teaches_no_order(self):
        """A lock on-call released (no `hold` line came) is held by no one:
        its owner waiting for another class after that teaches no order."""
        self.acquire("lock:acct:7007", "svc-r:3/3", "tr1")
        self.agent.wait_for(lambda: self.agent.lock("lock:acct:7007")[0] == 200, timeout=10,
                            desc="a scan showing lock:acct:7007")
        self.r.delete("lock:acct:7007")
        self.agent.wait_for(lambda: self.agent.lock("lock:acct:7007")[0] == 404, timeout=10,
                            desc="a scan without lock:acct:7007")
        self.send(self.waiting("lock:ship:8008", "svc-r:3/3", None, "start"))
        self.agent.wait_for(lambda: msum(self.agent.metrics(), "lockwatch_samples_waiting") == 1,
                            timeout=10, desc="the wait in the table")
        time.sleep(3 * SCAN)        # passes that see the wait
        self.assertEqual(self.deadlocks()["graph"]["orders"], 0)
        # the same owner holding a lock a scan shows: the order is learnt
        self.acquire("lock:acct:9009", "svc-r:3/3", "tr2")
        self.send(self.waiting("lock:ship:8008", "svc-r:3/3", None, "start"))
        self.agent.wait_for(lambda: self.deadlocks()["graph"]["orders"] == 1, timeout=10,
                            desc="the order acct -> ship learnt")

    def test_hostile_keys(self):
        k1 = b'lock:"q\nx\xff\xfe' + b"z" * 3000
        k2 = b"lock:\\b\x00\xc3(\x1b[2J\r\xc2\x9b"
        self.assertTrue(self.r.set(k1, "h1", px=600000))
        self.assertTrue(self.r.set(k2, "h2", px=600000))
        self.send(self.waiting(k1, "o/1", "h1", "ok"), self.waiting(k2, "o/2", "h2", "ok"))
        self.send(self.waiting(k2, "o/1", None, "start"), self.waiting(k1, "o/2", None, "start"))
        self.wait_deadlock(time.monotonic())
        st, _, raw = self.agent.get("/api/v1/deadlocks")
        self.assertEqual(st, 200)
        body = json.loads(raw.decode("utf-8"))
        (d,) = body["deadlocks"]
        keys = sorted(urllib.parse.unquote_to_bytes(s["key_escaped"]) for s in d["steps"])
        self.assertEqual(keys, sorted([k1[:1024], k2]))
        self.assertTrue(any(s.get("key_cut") for s in d["steps"]))
        harness.parse_metrics(self.agent.metrics_text())
        # lockctl: the cycle and the waits, no byte of the keys raw on the terminal
        p = lockctl(self.agent.config_path, "deadlocks")
        self.assertEqual(p.returncode, 0, p.stderr)
        for raw in (b"\x1b", b"\r", b"\x00", b"\xc2\x9b"):
            self.assertNotIn(raw, p.stdout)
        out = p.stdout.decode("utf-8")
        self.assertIn("waiting now", out)
        for line in out.splitlines():
            self.assertLessEqual(columns(line), 80, line)


class DeadlockFollow(Deadlock):
    """The fair-queue cycle with the agent following keyspace notifications
    (scan_interval 10s, no reconcile): a queue push sends no event on the
    lock key, so follow mode reads the queues again every 500 ms while a
    Redisson lock is held; the bound is the issue's 2 s."""
    follow = True
    bound = 2.0

    def test_cycle_through_fair_queues(self):
        ta, tb = UUID_A + ":61", UUID_B + ":88"
        self.redisson_hold("lock:fair:x", ta)
        self.redisson_hold("lock:fair:y", tb)
        self.agent.wait_for(lambda: self.deadlocks()["graph"]["passes"] > 2, timeout=10,
                            desc="the graph running")
        time.sleep(1.0)             # both holds published, no queue yet
        self.assertEqual(self.deadlocks()["deadlocks"], [])
        self.r.rpush("redisson_lock_queue:{lock:fair:y}", ta)
        self.r.rpush("redisson_lock_queue:{lock:fair:x}", tb)
        self.wait_deadlock(time.monotonic())
        (d,) = self.deadlocks()["deadlocks"]
        self.assertEqual(sorted(s["holder"] for s in d["steps"]), sorted([ta, tb]))
        m = self.agent.metrics()
        self.assertEqual(msum(m, "lockwatch_deadlocks", target="main"), 1)

    # the others need no second run in follow mode
    test_cycle_of_two_reporters = None
    test_cycle_across_languages = None
    test_chain_is_no_deadlock = None
    test_liblockwatch_took_its_lock_at_once = None
    test_lockctl_without_agent = None
    test_inversion_without_overlap = None
    test_released_lock_teaches_no_order = None
    test_hostile_keys = None


if __name__ == "__main__":
    harness.main()
