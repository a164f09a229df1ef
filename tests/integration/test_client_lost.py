#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits out short leases; next to no CPU; its bounds are a lease plus 1 s)
"""liblockwatch: a holder whose watchdog stops renewing loses the lock.

The holder is a client_shell process holding a watchdog lock (lease 0,
default lease 1.5 s).  SIGSTOP pauses every thread in it, the watchdog
included, exactly like a GC pause or a stuck host; the lock expires after
the lease and another client takes it.  After SIGCONT the watchdog's next
renewal finds the lock taken over: the on_lost callback runs,
lw_lock_is_lost() turns true, and releasing answers LW_LOST without
touching the new holder's lock.  For plain and reentrant locks.

With the agent listening (issue 25), the same story reaches it as events:
the waiter's `waiting` start and end, and the paused holder's `lost`
(renewal), counted in lockwatch_samples_events_total{kind}."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from client_helpers import Shell  # noqa: E402

LEASE_MS = 1500


class LostTest(harness.TestCase):

    def setUp(self):
        super().setUp()
        self.redis = self.start_redis()
        self.r = self.redis.client(decode_responses=True)

    def check_lost(self, key, flags):
        holder = Shell(self, self.redis.port)
        holder.ok("connect a agent=off lease=%d" % LEASE_MS)
        other = Shell(self, self.redis.port)
        other.ok("connect b agent=off lease=%d" % LEASE_MS)

        holder.ok("lock a l1 %s 0 1000 %s" % (key, flags))
        # renewed while the holder runs: alive well past one lease
        time.sleep(2 * LEASE_MS / 1000)
        self.assertEqual(self.r.exists(key), 1, "the watchdog did not renew")
        self.assertEqual(holder.cmd("lost l1"), "0")

        holder.stop()
        t_stop = time.monotonic()
        harness.wait_until(lambda: self.r.exists(key) == 0, LEASE_MS / 1000 + 3,
                           interval=0.02, desc="the paused holder's lock to expire")
        gone_after = time.monotonic() - t_stop
        self.assertLess(gone_after, LEASE_MS / 1000 + 1.0)
        ans = other.ok("lock b l2 %s 30000 2000 %s" % (key, flags))
        new_holder = ans.split("token=")[1]

        holder.cont()
        t_cont = time.monotonic()
        when, cb_key = holder.wait_callback(timeout=LEASE_MS / 1000 + 2)
        self.assertEqual(cb_key, key)
        self.assertLess(when - t_cont, LEASE_MS / 1000 + 1.0)
        self.assertEqual(holder.cmd("lost l1"), "1")
        self.assertEqual(holder.stats("a")["lost"], 1)
        ans = holder.cmd("unlock l1")
        self.assertTrue(ans.startswith("LOST"), ans)

        # the new holder still holds it, untouched
        if flags == "reentrant":
            self.assertEqual(self.r.hgetall(key), {new_holder: "1"})
        else:
            self.assertEqual(self.r.get(key), new_holder)
        self.assertGreater(self.r.pttl(key), 25000)
        other.ok("unlock l2")
        self.assertEqual(self.r.exists(key), 0)
        self.assertEqual(holder.quit(), 0)
        self.assertEqual(other.quit(), 0)

    def test_plain_lock_lost_after_pause(self):
        self.check_lost("lock:lost:plain", "-")

    def test_reentrant_lock_lost_after_pause(self):
        self.check_lost("lock:lost:reentrant", "reentrant")

    def test_deleted_lock_is_reported_lost(self):
        # not paused: someone deletes the lock; the next renewal notices
        sh = Shell(self, self.redis.port)
        sh.ok("connect a agent=off lease=600")
        sh.ok("lock a l1 lock:lost:deleted 0 1000 -")
        self.r.delete("lock:lost:deleted")
        when, key = sh.wait_callback(timeout=2)
        self.assertEqual(key, "lock:lost:deleted")
        self.assertEqual(sh.cmd("lost l1"), "1")
        self.assertTrue(sh.cmd("unlock l1").startswith("LOST"))

    def test_waiting_and_lost_reach_the_agent(self):
        for flags, key in (("-", "lock:lost:events"), ("reentrant", "lock:lost:events2")):
            self.check_events(flags, key)

    def check_events(self, flags, key):
        udp = harness.free_port()
        agent = self.start_agent(self.redis, samples="127.0.0.1:%d" % udp)
        addr = "agent=127.0.0.1:%d" % udp
        holder = Shell(self, self.redis.port)
        holder.ok("connect a %s lease=%d" % (addr, LEASE_MS))
        other = Shell(self, self.redis.port)
        other.ok("connect b %s lease=%d" % (addr, LEASE_MS))
        holder.ok("lock a l1 %s 0 1000 %s" % (key, flags))

        def ev(kind):
            return harness.msum(agent.metrics(), "lockwatch_samples_events_total", kind=kind)

        # the waiter blocks behind the holder: the agent sees it waiting
        other.send("lock b l2 %s 30000 10000 %s" % (key, flags))
        agent.wait_for(lambda: harness.msum(agent.metrics(), "lockwatch_samples_waiting") == 1,
                       timeout=5, desc="one owner waiting")
        self.assertEqual(ev("waiting_start"), 1)
        holder.stop()
        # the lease runs out; the waiter gets the lock
        ans = other.recv(timeout=LEASE_MS / 1000 + 5)
        self.assertTrue(ans.startswith("OK"), ans)
        agent.wait_for(lambda: ev("waiting_end") == 1, timeout=5, desc="the wait's end")
        self.assertEqual(harness.msum(agent.metrics(), "lockwatch_samples_waiting"), 0)
        holder.cont()
        holder.wait_callback(timeout=LEASE_MS / 1000 + 2)
        agent.wait_for(lambda: ev("lost_renewal") == 1, timeout=5,
                       desc="the holder's lost event")
        self.assertTrue(holder.cmd("unlock l1").startswith("LOST"))
        other.ok("unlock l2")
        holder.ok("free a")
        other.ok("free b")
        m = agent.metrics()
        self.assertEqual(ev("lost_expired"), 0)         # reported once, as renewal
        # every line is a valid sample or an event: nothing invalid
        self.assertEqual(harness.msum(m, "lockwatch_samples_invalid_total"), 0)
        self.assertEqual(holder.quit(), 0)
        self.assertEqual(other.quit(), 0)
        agent.stop()

    def test_explicit_lease_runs_out_reported_expired(self):
        udp = harness.free_port()
        agent = self.start_agent(self.redis, samples="127.0.0.1:%d" % udp)
        sh = Shell(self, self.redis.port)
        sh.ok("connect a agent=127.0.0.1:%d lease=600" % udp)
        sh.ok("lock a l1 lock:lost:expiring 300 1000 -")
        harness.wait_until(lambda: self.r.exists("lock:lost:expiring") == 0, 3,
                           interval=0.02, desc="the explicit lease to run out")
        time.sleep(0.2)
        self.assertTrue(sh.cmd("unlock l1").startswith("LOST"))
        sh.ok("free a")
        agent.wait_for(lambda: harness.msum(agent.metrics(), "lockwatch_samples_events_total",
                                            kind="lost_expired") == 1,
                       timeout=5, desc="a lost expired event")
        self.assertEqual(sh.quit(), 0)

    def test_explicit_lease_is_not_renewed(self):
        sh = Shell(self, self.redis.port)
        sh.ok("connect a agent=off lease=600")
        sh.ok("lock a l1 lock:lost:explicit 400 1000 -")
        harness.wait_until(lambda: self.r.exists("lock:lost:explicit") == 0, 3,
                           interval=0.02, desc="the explicit lease to run out")
        self.assertEqual(sh.stats("a")["renewals"], 0)
        self.assertTrue(sh.cmd("unlock l1").startswith("LOST"))


if __name__ == "__main__":
    harness.main()
