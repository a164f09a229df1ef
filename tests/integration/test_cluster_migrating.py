# SPDX-License-Identifier: BSD-3-Clause
"""A slot left half migrated (the source node MIGRATING, the destination
IMPORTING, as `redis-cli --cluster reshard` leaves it between its steps or
when it stalls): the keys MIGRATE already moved sit on the importing node,
which answers MOVED to a plain read of them and serves them only after
ASKING.  The agent reads them there after ASKING, so they stay in its view
like any other lock:

- one moved as it was keeps its holder and its first sight;
- one changed, one taken and one released on the importing node (each
  after ASKING, as a client sent there by ASK writes) show as they are
  now, and one not moved yet is read on the source as ever;
- the locks page says complete: true, /readyz has no line about keys of
  moving slots not read, and lockwatch_scan_asking_keys_total counts the
  reads;
- once the migration ends the view is still Redis's.

In scan mode (every pass reads the importing node's keys after ASKING)
and in follow mode (a notification's key, re-read on the source that
still owns the slot, meets ASK and is read on the importing node after
ASKING)."""

import redis

import harness as h
import topo

NLOCKS = 20


class ClusterMigrating(h.TestCase):

    def test_half_migrated_slot_scanning(self):
        self.run_case("off")

    def test_half_migrated_slot_following(self):
        self.run_case("on")

    @staticmethod
    def asking(node, *cmd):
        """Run cmd on node right after ASKING (one round trip)."""
        pipe = node.client().pipeline(transaction=False)
        pipe.execute_command("ASKING")
        pipe.execute_command(*cmd)
        return pipe.execute()[1]

    @staticmethod
    def locks(ag):
        st, page = ag.get_json("/api/v1/locks?target=c&limit=10000")
        assert st == 200, page
        return page, {l["key"]: l for l in page["locks"]}

    @staticmethod
    def holder(locks, key):
        l = locks.get(key)
        return l["holders"][0]["id"] if l is not None and l["holders"] else None

    def held(self, ag):
        """{key: holder} of every lock the agent lists."""
        locks = self.locks(ag)[1]
        return {k: self.holder(locks, k) for k in locks}

    def run_case(self, incremental):
        c = topo.start_cluster(self, primaries=3)
        # four locks of one slot (a hash tag), and others all over
        moved, changed, released, stays = ("lock:mg:{m}:%d" % i for i in range(4))
        fresh = "lock:mg:{m}:new"
        others = ["lock:mg:%d" % i for i in range(NLOCKS)]
        c.load([("SET", k, "tok-%s" % k.rsplit(":", 1)[1], "PX", "600000")
                for k in [moved, changed, released, stays] + others])
        if incremental == "on":
            for n in c.nodes:
                n.client().config_set("notify-keyspace-events", "Kg$lshzxet")
        ag = self.start_agent(targets=[("c", c.url)], scan_interval="500ms", max_hold="1h",
                              target_extra={"mode": "cluster", "incremental": incremental,
                                            "reconcile_interval": "1h"})
        if incremental == "on":
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active",
                                       target="c") == 1, 20, desc="following")
        ag.wait_for(lambda: len(self.locks(ag)[1]) == NLOCKS + 4, 20, desc="every lock listed")
        _, before = self.locks(ag)
        first_seen = before[moved]["first_seen_ms"]

        slot = topo.keyslot(moved)
        src = c.by_port[c.owner[slot]]
        dst = next(n for n in c.nodes if n.port != src.port)
        ids = {n.port: n.client().execute_command("CLUSTER", "MYID") for n in (src, dst)}
        ids = {p: v.decode() if isinstance(v, bytes) else v for p, v in ids.items()}
        dst.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[src.port])
        src.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[dst.port])
        self.addCleanup(self.settle, c, slot, ids[dst.port])
        for k in (moved, changed, released):
            src.client().execute_command("MIGRATE", "127.0.0.1", dst.port, k, 0, 5000)
        # on the importing node, after ASKING, as a client sent there by ASK
        self.asking(dst, "SET", changed, "tok-changed", "PX", "600000")
        self.asking(dst, "SET", fresh, "tok-fresh", "PX", "600000")
        self.asking(dst, "DEL", released)
        self.assertEqual(self.asking(dst, "GET", moved), b"tok-0")
        # the source sends a client there, the importing node sends one
        # without ASKING back (what the agent met there before)
        with self.assertRaisesRegex(redis.exceptions.ResponseError, "^ASK "):
            src.client().get(moved)
        with self.assertRaisesRegex(redis.exceptions.ResponseError, "^MOVED "):
            dst.client().get(moved)

        expect = {k: self.holder(before, k) for k in before}
        expect.update({changed: "tok-changed", fresh: "tok-fresh"})
        del expect[released]
        if incremental == "off":
            # two passes begun after the writes: what a pass reads now
            ag.wait_scans(2, target="c")
            self.assertEqual(self.held(ag), expect)
        else:
            ag.wait_for(lambda: self.held(ag) == expect, 10,
                        desc="the view as Redis has it, on the importing node too")
        page, locks = self.locks(ag)
        self.assertTrue(page["complete"], page)
        self.assertEqual(page["total"], len(expect))
        self.assertEqual(locks[moved]["first_seen_ms"], first_seen)
        st, _, body = ag.get("/readyz")
        self.assertEqual(st, 200, body)
        self.assertNotIn(b"moving between shards", body)
        m = ag.metrics()
        reads = h.msum(m, "lockwatch_scan_asking_keys_total", target="c")
        self.assertGreaterEqual(reads, 1)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="c"), len(expect))
        print("%s: 3 locks of a migrating slot read on the importing node after ASKING "
              "(%d reads counted)" % ("scan" if incremental == "off" else "follow", reads))

        # the migration ends: the slot is the destination's, the view
        # still Redis's
        src.client().execute_command("MIGRATE", "127.0.0.1", dst.port, stays, 0, 5000)
        self.settle(c, slot, ids[dst.port])
        ag.wait_for(lambda: self.held(ag) == expect, 20,
                    desc="the view after the migration ended")
        st, _, body = ag.get("/readyz")
        self.assertEqual(st, 200, body)

    @staticmethod
    def settle(c, slot, dst_id):
        """End the migration of slot: every node gives it to dst_id."""
        for n in c.nodes:
            if n.running:
                n.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)


if __name__ == "__main__":
    h.main()
