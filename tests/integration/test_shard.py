# SPDX-License-Identifier: BSD-3-Clause
"""`[agent] shard = I/N` (issue 27, docs/deploying.md): agents of one config
split its targets by rendezvous hashing of their names.

Twelve targets (the twelve databases of one redis-server, each holding one
lock lock:tN) and two agents, shard 0/2 and 1/2, each naming the other in
shard_peers: each agent scans exactly its share - together every target
once - and says which targets are elsewhere: GET /api/v1/shard (with the
peer's URL), the status page (a link to the peer), and a 404 naming the
shard for ?target= of another shard's target.  Then both are reloaded as
shards of 3 and a third agent starts: still every target once, and at most
ceil(12/3)+1 targets changed agent.
"""

import json
import os

import harness as h

N = 12


class Shards(h.TestCase):

    def make_agents(self, rs, n):
        targets = [("t%d" % i, "redis://127.0.0.1:%d/%d" % (rs.port, i)) for i in range(N)]
        ags = [h.Agent(targets=targets, start=False, scan_interval="300ms") for _ in range(n)]
        for ag in ags:
            self._agents.append(ag)
            self.addCleanup(self._stop_agent, ag)
        return ags

    def configure(self, ags, total):
        peers = ", ".join("http://127.0.0.1:%d" % ag.port for ag in ags[:total])
        for i, ag in enumerate(ags[:total]):
            ag.cfg["agent_extra"] = {"shard": "%d/%d" % (i, total), "shard_peers": peers}
            ag.write_config(ag.render_config())

    def placement(self, ags, total):
        """{target: index of the agent watching it}, checked on the way:
        every target once, each agent's elsewhere list the complement with
        the right shard and peer, its locks and metrics only its own."""
        owner = {}
        for i, ag in enumerate(ags[:total]):
            st, sh = ag.get_json("/api/v1/shard")
            self.assertEqual(st, 200, sh)
            self.assertEqual((sh["shard"], sh["shards"], sh["replica"]), (i, total, None))
            for t in sh["targets"]:
                self.assertNotIn(t, owner, "target %s watched by agents %s and %d"
                                 % (t, owner.get(t), i))
                owner[t] = i
            here = set(sh["targets"])
            away = {e["target"]: e for e in sh["elsewhere"]}
            self.assertEqual(here | set(away), {"t%d" % k for k in range(N)})
            self.assertFalse(here & set(away))
            for e in away.values():
                self.assertNotEqual(e["shard"], i)
                self.assertEqual(e["peer"], "http://127.0.0.1:%d" % ags[e["shard"]].port)
            up = {l["target"] for l, v in h.select(ag.metrics(), "lockwatch_target_up")}
            self.assertEqual(up, here)
        self.assertEqual(len(owner), N)
        for i, ag in enumerate(ags[:total]):
            mine = {t for t, o in owner.items() if o == i}

            def keys():
                st, body = ag.get_json("/api/v1/locks?limit=100")
                return {l["key"] for l in body["locks"]}
            ag.wait_for(lambda: keys() == {"lock:" + t for t in mine}, timeout=20,
                        desc="agent %d lists the locks of %s" % (i, sorted(mine)))
        return owner

    def test_two_then_three_shards(self):
        rs = self.start_redis()
        for i in range(N):
            c = rs.client(db=i)
            c.set("lock:t%d" % i, "tok")
        ags = self.make_agents(rs, 3)
        self.configure(ags, 2)
        for ag in ags[:2]:
            ag.start()
        two = self.placement(ags, 2)
        self.assertTrue(0 < list(two.values()).count(0) < N, two)

        # another shard's target: a 404 that says where it is
        away = next(t for t, o in two.items() if o == 1)
        st, _, body = ags[0].get("/api/v1/locks?target=" + away)
        self.assertEqual(st, 404, body)
        msg = json.loads(body)["error"]
        self.assertIn("shard 1/2", msg)
        self.assertIn("http://127.0.0.1:%d" % ags[1].port, msg)
        # the status page lists it, linked to the peer
        st, _, page = ags[0].get("/")
        self.assertEqual(st, 200)
        self.assertIn(b"shard 0/2", page)
        self.assertIn(('<a href="http://127.0.0.1:%d/">' % ags[1].port).encode(), page)
        st, _, ready = ags[0].get("/readyz")
        self.assertIn(st, (200, 503))

        # N from 2 to 3
        self.configure(ags, 3)
        for ag in ags[:2]:
            ag.reload()
        ags[2].start()
        three = ags[0].wait_for(lambda: self.placement(ags, 3), timeout=30,
                                desc="three shards settle")
        moved = sorted(t for t in two if two[t] != three[t])
        self.assertLessEqual(len(moved), (N + 2) // 3 + 1, moved)
        # rendezvous: a target moves only to the new shard
        self.assertEqual({three[t] for t in moved}, {2}, moved)
        print("shard: 2 -> 3 shards moved %d of %d targets: %s" % (len(moved), N, moved))


if __name__ == "__main__":
    h.main()
