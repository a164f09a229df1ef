# SPDX-License-Identifier: BSD-3-Clause
# run-all: quiet (bounds of 2 x scan_interval + 1.5 s on the view going stale; next to no CPU)
"""A replica whose link to its primary is down is no proof of freshness:
it keeps answering reads with the data it had when the link broke (new
locks never appear, old ones leave only as their TTLs run out).

- standalone, scan mode and follow mode: the agent watches a replica; the
  view is current while the link is up (a lock taken on the primary
  appears); the primary killed, the target is down within 2 x
  scan_interval + 1.5 s, the reason (log, /readyz, the API's stale entry)
  naming the replica's link, its last known locks listed "stale": true;
  the primary started again on its port, the target is up and current;
- a link cut without a close (its packets dropped: "up" until
  repl-timeout) is down once the replica has heard nothing from its
  primary for over 30 s (three of its pings); replica_silence sets that
  bound: 10 s keeps a replica current through a primary's 4 s between
  pings, 2 s finds it cut off;
- cluster, scan_replicas = yes: a replica cut off from its primary (which
  still answers: a wrong masteruser, then its link killed) is passed over
  for the primary, so a lock taken since is seen; the link back, the
  replica is read again.
Each prints its figure.
"""

import time

import harness as h
import topo

NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet"]
REASON = "is a replica whose link to its primary is down"


def link_up(rs):
    info = rs.client().info("replication")
    return info.get("master_link_status") == "up"


class ReplicaLink(h.TestCase):

    def up(self, ag):
        return h.select(ag.metrics(), "lockwatch_target_up", target="main")[0][1]

    def current_has(self, ag, key):
        """key is in the view, and the view is not stale."""
        st, lk = ag.lock(key)
        return st == 200 and not lk.get("stale") and self.up(ag) == 1

    def cut_and_mend(self, incremental):
        primary = self.start_redis(args=NOTIFY)
        replica = self.start_redis(args=NOTIFY + ["--replicaof", "127.0.0.1",
                                                  str(primary.port)])
        h.wait_until(lambda: link_up(replica), 20, desc="the replica in sync")
        p = primary.client()
        p.set("lock:held:1", "tok", px=600000)
        p.set("lock:leak:1", "tok")
        ag = self.start_agent(replica, scan_interval="1s", leak_grace="1s", max_hold="1h",
                              target_extra={"incremental": incremental,
                                            "reconcile_interval": "1h"})
        ag.wait_for(lambda: self.current_has(ag, "lock:held:1"), 20,
                    desc="the replica's locks, current")
        if incremental == "on":
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active",
                                       target="main") == 1, 30, desc="following")

        # the link up: a replica in sync is a legitimate source
        p.set("lock:new:1", "tok", px=600000)
        ag.wait_for(lambda: self.current_has(ag, "lock:new:1"), 10,
                    desc="a lock taken on the primary seen through the replica")

        primary.kill()
        t0 = time.monotonic()
        ag.wait_for(lambda: self.up(ag) == 0, 10, desc="target_up 0, the link down")
        took = time.monotonic() - t0
        print("%s: the primary killed, the replica's view stale in %.2f s "
              "(scan_interval 1 s)" % ("follow mode" if incremental == "on" else "scan mode",
                                       took))
        self.assertLess(took, 2 * 1 + 1.5)

        st, _, ready = ag.get("/readyz")
        self.assertEqual(st, 503)
        self.assertIn(REASON.encode(), ready)
        self.assertIn(b"127.0.0.1:%d" % replica.port, ready)
        st, body = ag.get_json("/api/v1/locks")
        self.assertEqual(st, 200, body)
        self.assertFalse(body["complete"], body)
        self.assertEqual([s["target"] for s in body["stale"]], ["main"], body)
        self.assertIn(REASON, body["stale"][0]["reason"], body)
        keys = {h.unescape_key(l["key"]): l for l in body["locks"]}
        for k in (b"lock:held:1", b"lock:leak:1", b"lock:new:1"):
            self.assertIn(k, keys, body)
            self.assertTrue(keys[k]["stale"], keys[k])
        self.assertIn(REASON, ag.log_tail(40))
        # and it stays so: the replica still answers, and still proves
        # nothing; the reason reads the same at every pass, so it is logged
        # once, not every scan_interval
        time.sleep(2.5)
        self.assertEqual(self.up(ag), 0)
        self.assertEqual(ag.log_tail(200).count("scan failed: 127.0.0.1:%d %s"
                                                % (replica.port, REASON)), 1)

        # the primary back on its port (empty: nothing on disk), the
        # replica syncs from it: current again, a new lock seen
        primary.restart()
        t1 = time.monotonic()
        primary.client().set("lock:after:1", "tok", px=600000)
        ag.wait_for(lambda: self.current_has(ag, "lock:after:1"), 30,
                    desc="target_up 1 and current once the primary is back")
        print("the primary back: current again in %.2f s (its full sync waits "
              "repl-diskless-sync-delay, 5 s)" % (time.monotonic() - t1))
        st, body = ag.get_json("/api/v1/locks")
        self.assertEqual(body["stale"], [], body)

    def test_scan_mode(self):
        self.cut_and_mend("off")

    def test_follow_mode(self):
        self.cut_and_mend("on")

    def test_a_link_cut_without_a_close(self):
        # the freshness trial: a link whose packets are dropped (a firewall,
        # a NAT entry gone) stays "up" until repl-timeout (60 s by default)
        # while the replica hears nothing, not even the primary's pings
        primary = self.start_redis()
        proxy = topo.TcpProxy(primary.port)
        self.addCleanup(proxy.kill)
        replica = self.start_redis(args=["--replicaof", "127.0.0.1", str(proxy.port),
                                         "--repl-timeout", "600"])
        h.wait_until(lambda: link_up(replica), 20, desc="the replica in sync")
        primary.client().set("lock:held:1", "tok", px=600000)
        ag = self.start_agent(replica, scan_interval="1s", max_hold="1h")
        ag.wait_for(lambda: self.current_has(ag, "lock:held:1"), 20,
                    desc="the replica's locks, current")
        self.assertEqual(proxy.silence(b"PSYNC"), 1)
        t0 = time.monotonic()
        ag.wait_for(lambda: self.up(ag) == 0, 60, desc="target_up 0, the link silent")
        took = time.monotonic() - t0
        print("a link silent (no close): stale in %.1f s (the link still %s)"
              % (took, replica.client().info("replication")["master_link_status"]))
        self.assertGreater(took, 25)
        st, body = ag.get_json("/api/v1/locks")
        self.assertIn("heard nothing from its primary for over 30 s", body["stale"][0]["reason"],
                      body)
        self.assertTrue(body["locks"][0]["stale"], body)

    def test_replica_silence_follows_the_ping_period(self):
        # a primary that pings its replicas every 4 s: an idle replica
        # hears nothing for up to 4 s at a time.  replica_silence 10s keeps
        # it current through those pauses; 2s finds it cut off between two
        # pings (what the fixed 30 s did to a repl-ping-replica-period of
        # 30 s or more: a trial, "flaps")
        primary = self.start_redis(args=["--repl-ping-replica-period", "4"])
        replica = self.start_redis(args=["--replicaof", "127.0.0.1", str(primary.port)])
        h.wait_until(lambda: link_up(replica), 20, desc="the replica in sync")
        primary.client().set("lock:held:1", "tok", px=600000)
        patient = self.start_agent(replica, scan_interval="500ms", max_hold="1h",
                                   target_extra={"replica_silence": "10s"})
        eager = self.start_agent(replica, scan_interval="500ms", max_hold="1h",
                                 target_extra={"replica_silence": "2s"})
        for ag in (patient, eager):
            ag.wait_for(lambda: self.current_has(ag, "lock:held:1"), 20,
                        desc="the replica's locks, current")
        end = time.monotonic() + 10
        eager_down = False
        while time.monotonic() < end:
            self.assertEqual(self.up(patient), 1)
            eager_down |= self.up(eager) == 0
            time.sleep(0.2)
        self.assertTrue(eager_down, "replica_silence 2s never cut the idle replica off")
        self.assertIn("heard nothing from its primary for over 2 s (replica_silence)",
                      eager.log_tail(200))

    def test_cluster_replica_falls_back_to_its_primary(self):
        c = topo.start_cluster(self, primaries=3, replicas=1)
        primaries = set(c.primaries())
        c.load([("SET", "lock:r:%d" % i, "tok", "PX", "600000") for i in range(30)])
        replicas = [r for r in c.nodes if r.port not in primaries]
        h.wait_until(lambda: all(link_up(r) for r in replicas) and
                     sum(r.client().dbsize() for r in c.nodes) == 60, 30,
                     desc="replicas in sync")
        ag = self.start_agent(targets=[("main", c.url)], scan_interval="1s",
                              target_extra={"mode": "cluster", "scan_replicas": "yes"})

        def read_on():
            return {int(l["node"].rsplit(":", 1)[1]): l["shard"]
                    for l, v in h.select(ag.metrics(), "lockwatch_shard_up", target="main")
                    if v == 1}
        ag.wait_for(lambda: len(read_on()) == 3 and not set(read_on()) & primaries, 40,
                    desc="every shard read on its replica")

        # cut one replica off: its primary refuses it (a user that does not
        # exist), and the link it had is killed
        victim = replicas[0]
        vc = victim.client()
        its_primary = int(vc.info("replication")["master_port"])
        shard = read_on()[victim.port]
        vc.config_set("masteruser", "nosuch")
        vc.config_set("masterauth", "nosuch")
        vc.execute_command("CLIENT", "KILL", "TYPE", "master")
        h.wait_until(lambda: not link_up(victim), 10, desc="the replica's link down")
        key = next("lock:cut:%d" % i for i in range(10000)
                   if c.owner[topo.keyslot("lock:cut:%d" % i)] == its_primary)
        c.by_port[its_primary].client().set(key, "tok", px=600000)
        # a lock released meanwhile: gone on the primary, still on the
        # replica the last pass read; reading the shard on its primary is
        # no failover, so it is released, not lost
        gone = next("lock:r:%d" % i for i in range(30)
                    if c.owner[topo.keyslot("lock:r:%d" % i)] == its_primary)
        c.by_port[its_primary].client().delete(gone)
        time.sleep(0.5)
        ro = victim.client(single_connection_client=True)
        ro.execute_command("READONLY")
        self.assertFalse(ro.exists(key), "the replica must not have it")
        ro.close()
        t0 = time.monotonic()
        ag.wait_for(lambda: self.current_has(ag, key) and
                    read_on().get(its_primary) == shard, 10,
                    desc="the shard read on its primary, the new lock seen")
        print("cluster: a replica cut off, its shard read on the primary in %.2f s"
              % (time.monotonic() - t0))
        self.assertIn(REASON, ag.log_tail(40))
        self.assertEqual(len(read_on()), 3)
        ag.wait_for(lambda: not self.current_has(ag, gone), 10, desc="the released lock gone")
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks_lost_total"), 0,
                         "a lock counted lost when the shard was read on its primary")

        vc.config_set("masteruser", "")
        vc.config_set("masterauth", "")
        h.wait_until(lambda: link_up(victim), 20, desc="the replica's link up again")
        ag.wait_for(lambda: read_on().get(victim.port) == shard, 10,
                    desc="the shard read on its replica again")
        time.sleep(2)
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks_lost_total"), 0,
                         "a lock counted lost when the shard was read on its replica again")


if __name__ == "__main__":
    h.main()
