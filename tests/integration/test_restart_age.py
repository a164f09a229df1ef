# SPDX-License-Identifier: BSD-3-Clause
# run-all: split (six cases of 10-20 s, each with its own servers)
# run-all: idle (waits on leak_grace and scans; bounds of seconds, next to no CPU)
"""A lock's age across a restart of its server (an on-call trial).

A Redis without persistence held lock:const:1 = batch-host-a:1 (no TTL)
long enough to be `leaked`; the server was stopped, restarted (empty) on
the same port, and a client at once SET the same key to the same value.
The agent kept the holder's first sight from before the restart: it
reported the new lock with the old age, `leaked`, and fired LockLeaked.
A server that loaded no data at its start holds no lock older than that
start (collectors/scan/reborn.c): the lock is timed from its first sight
after the restart, young, and `leaked` only once leak_grace has passed
again.  The agent is paused (SIGSTOP) across the start and the SET, so that
no pass sees the key missing in between (which would time it anew anyway)
- the "at once" of the trial, made certain.

- scan mode, follow mode, and one primary of a Redis Cluster (the locks on
  the other primaries keep their ages);
- with persistence (an RDB saved before the restart; appendonly yes) the
  lock the server loaded is the holding it was: it keeps its age and stays
  `leaked`.
"""

import signal
import time

import harness as h
import topo

KEY = "lock:const:1"
HOLDER = "batch-host-a:1"
GRACE = 2.0
INTERVAL = "500ms"
NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet"]


class RestartAge(h.TestCase):

    def leaked(self, ag, key=KEY):
        def check():
            st, lk = ag.lock(key)
            return lk if st == 200 and "leaked" in lk["states"] else None
        return ag.wait_for(check, 15, desc="%s leaked" % key)

    def held_for(self, ag, key, seconds):
        """key seen, leaked, and at least `seconds` old in the agent's view."""
        self.leaked(ag, key)

        def old():
            st, lk = ag.lock(key)
            return lk if st == 200 and lk["age_seconds"] >= seconds else None
        return ag.wait_for(old, seconds + 10, desc="%s %gs old" % (key, seconds))

    def restart_and_set(self, ag, server, setter, save=False):
        """Stop server, let the agent fail a pass or two, then start it and
        SET KEY again while the agent is paused.  Returns the monotonic time
        of the SET."""
        if save:
            server.client().save()
        self.ok_before = ag.scans_ok()
        server.stop()
        # a pass without the server (a cluster's is ok with one shard failed)
        base = h.msum(ag.metrics(), "lockwatch_scans_total", target="main")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_scans_total",
                                   target="main") > base + 1, 15, desc="a pass without it")
        ag.signal(signal.SIGSTOP)
        try:
            server.start()
            h.wait_until(lambda: self.try_set(setter), 15, desc="the SET after the start")
            t_set = time.monotonic()
        finally:
            ag.signal(signal.SIGCONT)
        return t_set

    @staticmethod
    def try_set(setter):
        """A restarted cluster node may refuse writes until it has heard
        from the others (CLUSTERDOWN)."""
        try:
            setter()
            return True
        except Exception:
            return False

    def young_after(self, ag, t_set, old_age, key=KEY, cluster=False):
        """The pass after the restart shows key young and not leaked, then
        leaked again once leak_grace has passed."""
        # the view of the first full pass after the restart (the one that
        # logs it; follow mode follows again after it, and scans no more);
        # a cluster's passes are ok with the shard down: the one after
        ag.wait_for(lambda: ag.scans_ok() > self.ok_before, 15, desc="a pass after the restart")
        ag.wait_for(lambda: "the server changed (a restart of " in ag.log_tail(300), 15,
                    desc="the restart seen")
        if cluster:
            base = ag.scans_ok()
            ag.wait_for(lambda: ag.scans_ok() > base, 10, desc="the pass after that")
        st, lk = ag.lock(key)
        self.assertEqual(st, 200, lk)
        since = time.monotonic() - t_set
        print("after the restart: age %.2fs (%.2fs since the SET; %.1fs before), states %s"
              % (lk["age_seconds"], since, old_age, lk["states"]))
        self.assertEqual([x["id"] for x in lk["holders"]], [HOLDER], lk)
        self.assertLess(lk["age_seconds"], since + 0.5, lk)
        if since < GRACE - 0.3:
            self.assertNotIn("leaked", lk["states"], lk)
        self.assertIn("loaded no data", ag.log_tail(300))
        lk = self.leaked(ag, key)
        took = time.monotonic() - t_set
        print("leaked again %.2fs after the SET (leak_grace %.1fs)" % (took, GRACE))
        self.assertGreaterEqual(took, GRACE - 0.2)
        self.assertLess(lk["age_seconds"], old_age, lk)

    def trial(self, follow):
        rs = self.start_redis(args=NOTIFY if follow else [])
        ag = self.start_agent(rs, scan_interval=INTERVAL, leak_grace="%gs" % GRACE,
                              max_hold="1h",
                              target_extra={"incremental": "on" if follow else "off"})
        if follow:
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active",
                                       target="main") == 1, 30, desc="following")
        rs.client().set(KEY, HOLDER)
        old = self.held_for(ag, KEY, GRACE + 2)["age_seconds"]
        t_set = self.restart_and_set(ag, rs, lambda: rs.client().set(KEY, HOLDER))
        self.young_after(ag, t_set, old)

    def test_restart_without_persistence_scan_mode(self):
        self.trial(follow=False)

    def test_restart_without_persistence_follow_mode(self):
        self.trial(follow=True)

    def kept(self, args, save):
        rs = self.start_redis(args=args)
        ag = self.start_agent(rs, scan_interval=INTERVAL, leak_grace="%gs" % GRACE,
                              max_hold="1h", target_extra={"incremental": "off"})
        rs.client().set(KEY, HOLDER)
        old = self.held_for(ag, KEY, GRACE + 2)["age_seconds"]
        # the client's SET finds the value the server loaded: the same holding
        t_set = self.restart_and_set(ag, rs, lambda: rs.client().set(KEY, HOLDER), save=save)
        # the pass that sees the restart logs it (a pass that ended ok just
        # before the stop may have moved scans_ok already: CI under ASan),
        # and the one after it is surely of the restarted server
        ag.wait_for(lambda: "the server changed (a restart of " in ag.log_tail(300), 15,
                    desc="the restart seen")
        base = ag.scans_ok()
        ag.wait_for(lambda: ag.scans_ok() > base, 15, desc="a pass after the restart")
        st, lk = ag.lock(KEY)
        print("with persistence: age %.2fs after the restart (%.1fs before, %.2fs since the "
              "SET), states %s" % (lk["age_seconds"], old, time.monotonic() - t_set,
                                   lk["states"]))
        self.assertEqual(st, 200, lk)
        self.assertGreaterEqual(lk["age_seconds"], old, lk)
        self.assertIn("leaked", lk["states"], lk)
        self.assertNotIn("loaded no data", ag.log_tail(300))

    def test_restart_with_an_rdb_keeps_the_age(self):
        self.kept([], save=True)

    def test_restart_with_aof_keeps_the_age(self):
        self.kept(["--appendonly", "yes", "--appendfsync", "always"], save=False)

    def test_cluster_primary_restart(self):
        c = topo.start_cluster(self, primaries=3)
        node = c.node_of(KEY)
        other = next(k for k in ("lock:const:%d" % i for i in range(2, 200))
                     if c.node_of(k) is not node)
        c.load([("SET", KEY, HOLDER), ("SET", other, HOLDER)])
        ag = self.start_agent(targets=[("main", c.url)], scan_interval=INTERVAL,
                              leak_grace="%gs" % GRACE, max_hold="1h",
                              target_extra={"mode": "cluster", "incremental": "off"})
        old = self.held_for(ag, KEY, GRACE + 2)["age_seconds"]
        self.leaked(ag, other)
        t_set = self.restart_and_set(ag, node, lambda: node.client().set(KEY, HOLDER))
        self.young_after(ag, t_set, old, cluster=True)
        # the other primary did not restart: its lock keeps its age
        st, lk = ag.lock(other)
        self.assertEqual(st, 200, lk)
        self.assertGreater(lk["age_seconds"], old, lk)
        self.assertIn("leaked", lk["states"], lk)


if __name__ == "__main__":
    h.main()
