# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits on scans and on Sentinel's own failover timers; next to no CPU)
"""mode = sentinel with no sentinel answering: the agent cannot prove which
server is the primary, so it must not present what it last read as
current.  Both a scanning agent (incremental = off) and a following one
(incremental = on, keyspace notifications) are watched.

Every sentinel killed: lockwatch_target_up 0, /readyz 503 naming each
sentinel and its error, the last view kept in /api/v1/locks marked stale,
and lockctl failing with the same reason (showing the agent's view as
stale); the sentinels started again: up again, fresh.  The same with the
sentinels stopped (SIGSTOP: connected to, never answering): each is given
up after a second, whatever command_timeout says (the default 5 s here).

A partition: the agents reach the sentinels through TCP proxies that are
killed, then the sentinels fail over to the replica while the old primary
cannot be demoted (REPLICAOF and SLAVEOF renamed away), so it still says
primary to ROLE and keeps its locks.  The agents stay down with the old
primary's view marked stale, never fresh; once the proxies listen again
they scan the new primary: the lock deleted there is gone, the new one
is listed.
"""

import time

import harness as h
import topo

NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet"]
# agents' scan_interval: how often a scan, or follow mode's check, asks the
# sentinels
INTERVAL = "1s"


class SentinelDown(h.TestCase):

    def start_agents(self, sentinel_ports):
        """A scanning agent and a following one (in that order) on the
        sentinels at sentinel_ports, each with its target "main"."""
        agents = []
        for incremental in ("off", "on"):
            agents.append(self.start_agent(
                targets=[("main", "redis://127.0.0.1:1/0")],   # the sentinels say where
                scan_interval=INTERVAL,
                target_extra={"mode": "sentinel",
                              "sentinels": ",".join("127.0.0.1:%d" % p
                                                    for p in sentinel_ports),
                              "master_name": "mymaster",
                              "incremental": incremental}))
        return agents

    @staticmethod
    def listed(ag, key):
        """key's lock in /api/v1/locks, or None."""
        st, body = ag.get_json("/api/v1/locks?state=all")
        assert st == 200, body
        for lk in body["locks"]:
            if lk["key"] == key:
                return lk
        return None

    def wait_fresh(self, agents, key):
        """On both agents target_up 1, /readyz 200 and key listed, not
        stale; the following one following."""
        def fresh(ag):
            lk = self.listed(ag, key)
            return (h.msum(ag.metrics(), "lockwatch_target_up", target="main") == 1 and
                    ag.get("/readyz")[0] == 200 and lk is not None and not lk.get("stale"))
        for ag in agents:
            ag.wait_for(lambda: fresh(ag), 20, desc="target up, %s listed fresh" % key)
        follow = agents[1]
        follow.wait_for(lambda: h.msum(follow.metrics(), "lockwatch_follow_active",
                                       target="main") == 1, 20, desc="lockwatch_follow_active 1")

    def wait_down(self, agents, sentinel_ports, key, error):
        """On both agents the target down, /readyz naming every sentinel
        with error, key listed stale."""
        def down(ag):
            st, _, body = ag.get("/readyz")
            return body if st == 503 and all(b"127.0.0.1:%d: %s" % (p, error) in body
                                             for p in sentinel_ports) else None
        for ag in agents:
            body = ag.wait_for(lambda: down(ag), 20,
                               desc="/readyz 503 naming every sentinel: %s" % error)
            self.assertIn(b"no sentinel named the primary", body)
            self.assertIn(b"stale", body)
            self.assertEqual(h.msum(ag.metrics(), "lockwatch_target_up", target="main"), 0)
            lk = self.listed(ag, key)
            self.assertIsNotNone(lk, "%s left the view: the last one must stay, stale" % key)
            self.assertTrue(lk.get("stale"), lk)
            st, page = ag.get_json("/api/v1/locks?state=all")
            self.assertFalse(page["complete"], page)
            self.assertEqual([s["target"] for s in page["stale"]], ["main"], page)
            self.assertIn("no sentinel named the primary", ag.log_tail(40))

    def held_then_cut_off(self, primary, ports, key, cuts):
        """key held on primary, both agents on the sentinels at ports fresh
        with it, then every sentinel cut off (each of cuts called): both
        down, key stale.  Returns the agents."""
        primary.client().set(key, "tok", px=600000)
        agents = self.start_agents(ports)
        self.wait_fresh(agents, key)
        for cut in cuts:
            cut()
        self.wait_down(agents, ports, key, b"Connection refused")
        return agents

    def test_every_sentinel_killed(self):
        primary = self.start_redis(args=NOTIFY)
        sentinels = topo.start_sentinels(self, primary.port, n=2, replicas=0)
        ports = [s.port for s in sentinels]
        agents = self.held_then_cut_off(primary, ports, "lock:held:1",
                                        [s.kill for s in sentinels])

        # lockctl resolves the primary the same way: it fails naming the
        # sentinels, and shows the agent's view only as the stale one
        r = topo.lockctl(["-c", agents[0].config_path, "list"])
        self.assertEqual(r.returncode, 3, r)
        for p in ports:
            self.assertIn(b"127.0.0.1:%d" % p, r.stderr)
        self.assertIn(b"LAST KNOWN (stale)", r.stdout)

        for s in sentinels:
            s.start()
        self.wait_fresh(agents, "lock:held:1")

        # stopped sentinels accept connections and never answer
        for s in sentinels:
            s.pause()
        try:
            self.wait_down(agents, ports, "lock:held:1",
                           b"no answer within 1000 ms")
            # each is given up after a second, not command_timeout (5 s):
            # within lockctl's 4 s both have been asked and named
            r = topo.lockctl(["-c", agents[0].config_path, "--timeout", "4s", "list"])
            self.assertEqual(r.returncode, 3, r)
            for p in ports:
                self.assertIn(b"sentinel 127.0.0.1:%d: no answer within 1000 ms" % p,
                              r.stderr.replace(b"\n  ", b" "))
        finally:
            for s in sentinels:
                s.resume()
        self.wait_fresh(agents, "lock:held:1")

    def test_partition_from_the_sentinels_during_a_failover(self):
        # the old primary cannot be demoted: it answers ROLE as a primary
        primary = self.start_redis(args=["--rename-command", "REPLICAOF", "",
                                         "--rename-command", "SLAVEOF", ""] + NOTIFY)
        replica = self.start_redis(args=NOTIFY + ["--replicaof", "127.0.0.1",
                                                  str(primary.port)])
        h.wait_until(lambda: replica.client().info("replication").get(
            "master_link_status") == "up", 20, desc="replica in sync")
        sentinels = topo.start_sentinels(self, primary.port, n=2, replicas=1)
        proxies = [topo.TcpProxy(s.port) for s in sentinels]
        for p in proxies:
            self.addCleanup(p.kill)
        agents = self.held_then_cut_off(primary, [p.port for p in proxies], "lock:old",
                                        [p.kill for p in proxies])

        sentinels[0].client().execute_command("SENTINEL", "FAILOVER", "mymaster")
        h.wait_until(lambda: sentinels[0].master_port() == replica.port and
                     replica.client().info("replication")["role"] == "master", 30,
                     desc="replica promoted")
        self.assertEqual(primary.client().info("replication")["role"], "master")
        replica.client().delete("lock:old")
        replica.client().set("lock:new", "tok", px=600000)
        # two scan intervals: the old primary still answers, as a primary,
        # with lock:old; never shown as current
        t_end = time.monotonic() + 2.5
        while time.monotonic() < t_end:
            for ag in agents:
                self.assertEqual(h.msum(ag.metrics(), "lockwatch_target_up", target="main"), 0)
                self.assertTrue(self.listed(ag, "lock:old")["stale"])
            time.sleep(0.5)

        for p in proxies:
            p.start()
        self.wait_fresh(agents, "lock:new")
        for ag in agents:
            self.assertIsNone(self.listed(ag, "lock:old"))
            self.assertIn("now scanning 127.0.0.1:%d" % replica.port, ag.log_tail(100))


if __name__ == "__main__":
    h.main()
