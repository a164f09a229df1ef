# SPDX-License-Identifier: BSD-3-Clause
# run-all: heavy (loads 30,000 locks into a 3-node cluster and scans them)
"""mode = cluster: a 3-primary Redis Cluster made by the test
(`redis-cli --cluster create`), 30,000 locks over all slots including
Redisson-format hash-tagged keys.  Every lock is counted exactly once;
the client registry is read on the shard of its own slot; stopping one
primary marks its shard down (lockwatch_shard_up 0, readyz says which),
the other two stay scanned and its locks kept in detail stay, last known;
lockctl releases a key on any shard.  A shard that cannot be scanned
raises LockShardDown, naming its slots and node, which resolves when the
shard is back."""

import json
import os
import threading
import uuid

import harness as h
import topo
from alerts_receiver import Receiver

PLAIN, REDISSON, LEAKED = 24000, 5000, 1000
UUID = "8743c9c0-0795-4907-87fd-6c719a6b4586"


def keyspace():
    cmds = []
    for i in range(PLAIN):
        cmds.append(("SET", "lock:c:%d" % i, "tok-%d" % i, "PX", "600000"))
    for i in range(REDISSON):
        k = "lock:{rs%d}" % i
        cmds.append(("HSET", k, "%s:%d" % (uuid.UUID(int=i), 1), "1"))
        cmds.append(("PEXPIRE", k, "600000"))
    for i in range(LEAKED):
        cmds.append(("SET", "lock:leak:{%d}" % i, "tok"))
    for i in range(3000):
        cmds.append(("SET", "other:%d" % i, "x"))
    return cmds


class ClusterMode(h.TestCase):

    def test_cluster(self):
        c = topo.start_cluster(self, primaries=3)
        per_port = {}
        for cmd in keyspace():
            if cmd[0] == "PEXPIRE" or cmd[1].startswith("other:"):
                continue
            p = c.owner[topo.keyslot(cmd[1])]
            per_port[p] = per_port.get(p, 0) + 1
        c.load(keyspace())
        self.assertEqual(len(per_port), 3, "the locks must cover every shard")

        # A liblockwatch-registered Redisson holder whose registry key lives
        # on another shard than its lock: the scanner must ask the right one.
        lock_key = next("lock:{reg%d}" % i for i in range(1000)
                        if c.owner[topo.keyslot("lock:{reg%d}" % i)] !=
                        c.owner[topo.keyslot(UUID)])
        c.load([("HSET", lock_key, UUID + ":7", "1"),
                ("HSET", "lockwatch:client:{%s}" % UUID, "host", "app-7", "pid", "4242",
                 "at:7:" + lock_key, "1790000000000")])
        total = PLAIN + REDISSON + LEAKED + 1

        self.token = "t0ken-%d" % os.getpid()
        token_file = topo.write_file(h._mkdtemp("lw-tok-"), "unlock.token", self.token + "\n")
        ag = self.start_agent(targets=[("c", c.url)], scan_interval="1s",
                              leak_grace="1s", max_hold="1h",
                              target_extra={"mode": "cluster"},
                              extra="[classes]\nlock:{rs* = lock:rs\nlock:{reg* = lock:reg\n"
                                    "lock:leak:* = lock:leak\n\n[unlock]\nhttp = on\n"
                                    "token_file = %s\n" % token_file)

        def counted():
            m = ag.metrics()
            if h.msum(m, "lockwatch_scans_total", target="c", result="ok") < 2:
                return None
            # leaks count once a scan is leak_grace past their first sight
            return m if h.msum(m, "lockwatch_locks", target="c") == total and \
                h.msum(m, "lockwatch_locks_leaked", target="c") == LEAKED + 1 else None
        m = ag.wait_for(counted, 60, desc="%d locks (%d leaked) counted on target c"
                        % (total, LEAKED + 1))
        self.assertEqual(h.msum(m, "lockwatch_locks", target="c", format="redisson"),
                         REDISSON + 1)
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="c"), 1)
        shards = h.select(m, "lockwatch_shard_up", target="c")
        self.assertEqual(len(shards), 3, shards)
        self.assertTrue(all(v == 1 for _, v in shards), shards)
        self.assertEqual(sorted(int(l["node"].rsplit(":", 1)[1]) for l, _ in shards),
                         sorted(per_port))
        # keys examined: the lock keys of every shard, each counted once
        self.assertGreaterEqual(h.msum(m, "lockwatch_shard_scan_keys", target="c"), total)
        self.assertEqual(h.msum(m, "lockwatch_scan_duplicate_keys_total", target="c"), 0)
        self.assertEqual(ag.get("/readyz")[0], 200)

        # the registry on the uuid's shard gave the holder's host and pid
        def registry():
            st, j = ag.lock(lock_key, target="c")
            return j if st == 200 and j.get("host") == "app-7" else None
        j = ag.wait_for(registry, 20, desc="registry host of %s" % lock_key)
        self.assertEqual(j["pid"], 4242)

        # lockctl list, without the agent, reads that registry on its own
        # shard as well (the lock's primary answers MOVED)
        p = topo.lockctl(["-c", ag.config_path, "-t", "c", "--agent", "off", "--json", "list",
                          "--state", "long"])
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [l for l in json.loads(p.stdout)["locks"] if l["key"] == lock_key]
        self.assertEqual(len(rows), 1, p.stdout[:2000])
        self.assertEqual((rows[0]["host"], rows[0]["pid"], rows[0]["acquired_source"]),
                         ("app-7", 4242, "registry"), rows[0])

        # --once scans the cluster the same way
        p = h.run_lockwatchd(["--once", "-c", ag.config_path], timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode("utf-8", "replace"))
        once = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(once, "lockwatch_locks", target="c"), total)

        # lockctl releases a key on any shard, whichever node the URL names,
        # and follows an ASK to a key whose slot is being migrated
        self.lockctl_release_everywhere(c, ag)
        self.lockctl_follows_ask(c, ag, total)
        total -= 4

        # Stop the primary the URL names: discovery falls back to the other
        # nodes, its shard is down, the other two are still counted, and
        # of its own locks those the last view kept in detail stay, last
        # known (test_cluster_stale.py): every leak (the worst), then the
        # oldest held.
        victim = c.nodes[0]
        lost = sum(1 for k in self.lock_keys(lock_key)
                   if c.owner[topo.keyslot(k)] == victim.port and k not in self.released)
        victim.kill()

        def degraded():
            m = ag.metrics()
            up = {int(l["node"].rsplit(":", 1)[1]): v
                  for l, v in h.select(m, "lockwatch_shard_up", target="c")}
            if up.get(victim.port) != 0 or sorted(up.values()) != [0, 1, 1]:
                return None
            kept = self.stale_locks(ag)
            return (m, kept) if h.msum(m, "lockwatch_locks", target="c") == \
                total - lost + kept else None
        m, kept = ag.wait_for(degraded, 40, desc="shard of :%d down, %d locks left and its "
                              "kept ones last known" % (victim.port, total - lost))
        self.assertGreater(kept, 0)
        self.assertLess(kept, lost)
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="c"), LEAKED + 1)
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="c"), 1)
        st, _, body = ag.get("/readyz")
        self.assertEqual(st, 503)
        self.assertIn(b"shard", body)
        self.assertIn(b":%d" % victim.port, body)
        rc, out = h.promtool_check(ag.metrics_text())
        self.assertEqual(rc, 0, out)

    def test_scan_replicas(self):
        """scan_replicas = yes: each shard is scanned on its replica
        (READONLY), and every lock is still counted once."""
        c = topo.start_cluster(self, primaries=3, replicas=1)
        c.load([("SET", "lock:r:%d" % i, "tok", "PX", "600000") for i in range(3000)] +
               [("SET", "lock:r:{%d}" % i, "tok") for i in range(300)])
        primaries = set(c.primaries())
        # replication is asynchronous: wait until every replica has the keys
        def synced():
            return sum(r.client().dbsize() for r in c.nodes) == 2 * 3300
        h.wait_until(synced, 30, desc="replicas in sync")
        ag = self.start_agent(targets=[("c", c.url)], scan_interval="1s",
                              target_extra={"mode": "cluster", "scan_replicas": "yes"})

        # a replica the cluster still reports "loading" (no offset gossiped
        # yet) is passed over for its primary; once online it is scanned
        def counted():
            m = ag.metrics()
            nodes = {int(l["node"].rsplit(":", 1)[1])
                     for l, v in h.select(m, "lockwatch_shard_up", target="c") if v == 1}
            if len(nodes) != 3 or nodes & primaries:
                return None
            return m if h.msum(m, "lockwatch_locks", target="c") == 3300 and \
                h.msum(m, "lockwatch_locks_leaked", target="c") == 300 else None
        ag.wait_for(counted, 40, desc="3300 locks (300 leaked) counted on the three replicas")

    def test_shard_down_alert(self):
        """LockShardDown: stopping one primary of three fires one alert for
        its shard, naming its slots and node, delivered to a webhook, while
        the target stays up; restarting it resolves the alert."""
        c = topo.start_cluster(self, primaries=3)
        c.load([("SET", "lock:s:%d" % i, "tok", "PX", "600000") for i in range(300)])
        rcv = Receiver()
        self.addCleanup(rcv.stop)
        ag = self.start_agent(targets=[("c", c.url)], scan_interval="500ms",
                              target_extra={"mode": "cluster"},
                              extra="[webhook oncall]\nurl = %s\nretry_base = 100ms\n" % rcv.url)
        victim = c.nodes[2]
        node = "127.0.0.1:%d" % victim.port

        def shard_of_victim():
            for l, v in h.select(ag.metrics(), "lockwatch_shard_up", target="c"):
                if l["node"] == node and v == 1:
                    return l["shard"]
            return None
        slots = ag.wait_for(shard_of_victim, 30, desc="the shard of %s scanned" % node)
        self.assertEqual(self.shard_alerts(ag), [])

        victim.kill()

        def fired():
            return [a for _, b in rcv.notices("firing") for a in b["alerts"]
                    if a["labels"]["alertname"] == "LockShardDown"]
        sent = ag.wait_for(fired, 40, desc="LockShardDown for %s (%s)" % (slots, node))
        self.assertEqual(len(sent), 1, sent)
        self.assertEqual(sent[0]["labels"], {"alertname": "LockShardDown", "target": "c",
                                             "shard": slots, "node": node,
                                             "severity": "critical"})
        self.assertIn(slots, sent[0]["annotations"]["summary"])
        self.assertIn(node, sent[0]["annotations"]["summary"])
        firing = self.shard_alerts(ag)
        self.assertEqual([a["labels"] for a in firing], [sent[0]["labels"]])
        self.assertEqual(firing[0]["fingerprint"], sent[0]["fingerprint"])
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_alerts_firing", alertname="LockShardDown"), 1)
        self.assertEqual(h.msum(m, "lockwatch_alerts_firing", alertname="LockTargetDown"), 0)
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="c"), 1)

        victim.restart()

        def resolved():
            return [a for _, b in rcv.notices("resolved") for a in b["alerts"]
                    if a["labels"]["alertname"] == "LockShardDown"]
        back = ag.wait_for(resolved, 60, desc="LockShardDown resolved after the restart")
        self.assertEqual(back[0]["labels"], sent[0]["labels"])
        self.assertEqual(self.shard_alerts(ag), [])
        self.assertEqual(len(fired()), 1)

    @staticmethod
    def stale_locks(ag):
        """The locks of target c the API marks stale (last known), every page."""
        n, offset = 0, 0
        while offset is not None:
            st, body = ag.get_json("/api/v1/locks?target=c&limit=10000&offset=%d" % offset,
                                   timeout=30)
            assert st == 200, body
            n += sum(1 for l in body["locks"] if l.get("stale"))
            offset = body["next_offset"]
        return n

    @staticmethod
    def shard_alerts(ag):
        st, body = ag.get_json("/api/v1/alerts")
        assert st == 200, body
        return [a for a in body["alerts"] if a["labels"]["alertname"] == "LockShardDown"]

    released = set()

    @staticmethod
    def lock_keys(extra):
        keys = ["lock:c:%d" % i for i in range(PLAIN)]
        keys += ["lock:{rs%d}" % i for i in range(REDISSON)]
        keys += ["lock:leak:{%d}" % i for i in range(LEAKED)]
        return keys + [extra]

    def lockctl_follows_ask(self, c, ag, total):
        """A slot in migration: the key has moved to the importing node while
        the migrating one still owns the slot, so the release script gets
        ASK there and must run on the other node after ASKING; the agent
        reads it there after ASKING.  total: the locks loaded."""
        i = next(i for i in range(PLAIN) if "lock:c:%d" % i not in self.released and
                 c.owner[topo.keyslot("lock:c:%d" % i)] != c.nodes[0].port)
        key, slot = "lock:c:%d" % i, topo.keyslot("lock:c:%d" % i)
        src = c.by_port[c.owner[slot]]
        dst = next(n for n in c.nodes if n.port not in (src.port, c.nodes[0].port))
        src_id = src.client().execute_command("CLUSTER", "MYID").decode()
        dst_id = dst.client().execute_command("CLUSTER", "MYID").decode()
        dst.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
        src.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
        src.client().execute_command("MIGRATE", "127.0.0.1", dst.port, key, 0, 5000)
        # lockctl reads the key on the node CLUSTER SHARDS names, which
        # answers ASK: it must follow to the importing node with ASKING.
        p = topo.lockctl(["-c", ag.config_path, "-t", "c", "--json", "show", key])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertIn(b'"tok-%d"' % i, p.stdout)
        # The agent's scans find the key on the importing node, which
        # answers MOVED to a plain read: they read it there after ASKING,
        # and it is counted as ever, with no line about keys of moving
        # slots not read.  (The page of 30,000 locks keeps 10,000 in
        # detail, so it is not complete and may not list the key whatever
        # a scan reads: test_cluster_migrating.py lists such keys.)
        # (two scans that began after the MIGRATE: one under way then read
        # the key where it was)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_scan_asking_keys_total",
                                   target="c") >= 2, timeout=60,
                    desc="two scans reading the moved key after ASKING")
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_locks", target="c"), total - len(self.released))
        st, _, body = ag.get("/readyz")
        self.assertEqual(st, 200, body)
        self.assertNotIn(b"moving between shards", body)
        # The release endpoint goes straight to the script.  The script's
        # KEYS are the lock and its wake-up companions: while the slot is
        # migrating the importing node answers TRYAGAIN (not all of them
        # are there) until the migration ends, which it does here 0.5 s in.
        finisher = threading.Timer(0.5, self.finish_migration, (c, src, dst, slot, dst_id))
        finisher.start()
        self.addCleanup(finisher.join)
        st, body = ag.release({"target": "c", "key": key, "holder": "tok-%d" % i,
                               "reason": "ask test"}, self.token)
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body)["outcome"], "released", body)
        pipe = dst.client().pipeline(transaction=False)
        pipe.execute_command("ASKING")
        pipe.exists(key)
        self.assertEqual(pipe.execute()[1], 0)
        self.released.add(key)
        finisher.join()
        h.wait_until(lambda: c._slot_map(c.nodes[0]) is not None and
                     c._slot_map(c.nodes[0])[slot] == dst.port, 10, desc="slot moved")
        c.refresh()

    @staticmethod
    def finish_migration(c, src, dst, slot, dst_id):
        while True:
            keys = src.client().execute_command("CLUSTER", "GETKEYSINSLOT", slot, 1000)
            if not keys:
                break
            src.client().execute_command("MIGRATE", "127.0.0.1", dst.port, "", 0, 5000,
                                         "KEYS", *keys)
        for n in c.nodes:
            n.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)

    def lockctl_release_everywhere(self, c, ag):
        """lockctl -c (the agent's config, whose URL names one node) releases
        a plain lock on each primary, and a Redisson lock, following the
        cluster to the node that serves each key."""
        done = set()
        for i in range(PLAIN):
            k = "lock:c:%d" % i
            port = c.owner[topo.keyslot(k)]
            if port in done:
                continue
            p = topo.lockctl(["-c", ag.config_path, "-t", "c", "--json", "release", k,
                              "--holder", "tok-%d" % i, "--yes", "--reason", "test"])
            self.assertEqual(p.returncode, 0, (k, port, p.stdout, p.stderr))
            self.assertIn(b'"released"', p.stdout)
            self.assertEqual(c.by_port[port].client().exists(k), 0)
            self.released.add(k)
            done.add(port)
            if len(done) == 3:
                break
        self.assertEqual(len(done), 3)


if __name__ == "__main__":
    h.main()
