# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (waits out the peers' 10 s checks: about a minute and a half of sleeping)
"""A shard whose agent dies is said by the other shards (docs/deploying.md
"When a shard dies"): three agents, shards 0/3, 1/3 and 2/3 of six targets,
each naming the others in shard_peers.  Shard 1's agent is killed (kill -9):
within the documented time (3 failed checks of /api/v1/shard, 10 s apart, each
within 2 s: at most about 35 s) the two others export
lockwatch_shard_peer_up{shard="1"} 0, say it on /readyz above "ready" (still
200: their own targets are fine) and on the status page beside the targets
shard 1 watches; shard 2 stays 1.  Shard 1 started again: back to 1 at the
first check that answers (within about 12 s).  A healthy agent at a shard's
URL that is another shard's (shard_peers in the wrong order) counts as
down too, saying which shard it answers as.  Waits are generous: CI runs
four tests at once on two cores.
"""

import time

import harness as h

N = 6
# the documented bound (3 checks 10 s apart, the last within 2 s), and room
DOWN_WITHIN = 35 + 25
UP_WITHIN = 12 + 18


class ShardPeers(h.TestCase):

    def peer_up(self, ag, shard):
        vals = [v for l, v in h.select(ag.metrics(), "lockwatch_shard_peer_up", shard=str(shard))]
        return vals[0] if len(vals) == 1 else None

    def test_a_dead_shard_is_said_by_the_others(self):
        rs = self.start_redis()
        for i in range(N):
            rs.client(db=i).set("lock:t%d" % i, "tok")
        targets = [("t%d" % i, "redis://127.0.0.1:%d/%d" % (rs.port, i)) for i in range(N)]
        ags = [h.Agent(targets=targets, start=False, scan_interval="500ms") for _ in range(3)]
        for ag in ags:
            self._agents.append(ag)
            self.addCleanup(self._stop_agent, ag)
        peers = ", ".join("http://127.0.0.1:%d" % ag.port for ag in ags)
        for i, ag in enumerate(ags):
            ag.cfg["agent_extra"] = {"shard": "%d/3" % i, "shard_peers": peers}
            ag.write_config(ag.render_config())
        for ag in ags:
            ag.start()
        dead_url = "http://127.0.0.1:%d" % ags[1].port
        # every peer answers: 1 for the two others, no series for itself
        for i, ag in enumerate(ags):
            others = [k for k in range(3) if k != i]
            ag.wait_for(lambda: all(self.peer_up(ag, k) == 1 for k in others), timeout=30,
                        desc="agent %d: lockwatch_shard_peer_up 1 for shards %s" % (i, others))
            self.assertIsNone(self.peer_up(ag, i))
        st, sh = ags[0].get_json("/api/v1/shard")
        self.assertEqual(st, 200, sh)
        away1 = [e["target"] for e in sh["elsewhere"] if e["shard"] == 1]

        ags[1].kill()
        t0 = time.monotonic()
        survivors = (ags[0], ags[2])
        for ag in survivors:
            ag.wait_for(lambda: self.peer_up(ag, 1) == 0, timeout=DOWN_WITHIN,
                        desc="lockwatch_shard_peer_up{shard=\"1\"} 0 on a surviving shard")
        print("shard_peers: shard 1 counted down %.1f s after kill -9"
              % (time.monotonic() - t0))
        for ag in survivors:
            self.assertEqual(self.peer_up(ag, ags.index(ag) ^ 2), 1)   # the other survivor
            ag.wait_for(lambda: ag.get("/readyz")[0] == 200, timeout=30,
                        desc="a surviving shard stays ready")
            st, _, body = ag.get("/readyz")
            self.assertEqual(st, 200, body)
            text = body.decode()
            self.assertIn("shard 1/3 (%s): does not answer as that shard for " % dead_url, text)
            self.assertIn("its targets are watched by no agent unless a replica of it is up",
                          text)
            self.assertTrue(text.endswith("ready\n"), text)
            self.assertLess(text.index("shard 1/3"), text.index("ready\n"))
            st, _, page = ag.get("/")
            self.assertEqual(st, 200)
            page = page.decode()
            self.assertIn("watched by shard 1/3", page)
            self.assertIn("shard 1/3 (%s): does not answer as that shard for" % dead_url, page)
        # the page says it beside the targets shard 1 watches, not others
        if away1:
            st, _, page = ags[0].get("/")
            row = page.decode().split(">%s</td>" % away1[0], 1)[1].split("</tr>", 1)[0]
            self.assertIn("does not answer as that shard", row)

        ags[1]._log.close()     # kill() leaves it open; start() opens it again
        ags[1].start()
        t0 = time.monotonic()
        for ag in survivors:
            ag.wait_for(lambda: self.peer_up(ag, 1) == 1, timeout=UP_WITHIN,
                        desc="lockwatch_shard_peer_up{shard=\"1\"} back to 1")
            st, _, body = ag.get("/readyz")
            self.assertNotIn(b"does not answer", body)
            st, _, page = ag.get("/")
            self.assertNotIn(b"does not answer as that shard", page)
        print("shard_peers: shard 1 counted up %.1f s after its restart"
              % (time.monotonic() - t0))

    def test_a_peer_of_another_shard_is_no_answer(self):
        rs = self.start_redis()
        targets = [("t%d" % i, "redis://127.0.0.1:%d/%d" % (rs.port, i)) for i in range(4)]
        ags = [h.Agent(targets=targets, start=False, scan_interval="500ms") for _ in range(2)]
        for ag in ags:
            self._agents.append(ag)
            self.addCleanup(self._stop_agent, ag)
        # shard 1's URL first: each agent finds the other answering as itself
        swapped = ", ".join("http://127.0.0.1:%d" % ag.port for ag in reversed(ags))
        for i, ag in enumerate(ags):
            ag.cfg["agent_extra"] = {"shard": "%d/2" % i, "shard_peers": swapped}
            ag.write_config(ag.render_config())
        for ag in ags:
            ag.start()
        for i, ag in enumerate(ags):
            ag.wait_for(lambda: self.peer_up(ag, 1 - i) == 0, timeout=DOWN_WITHIN,
                        desc="agent %d: a peer of the wrong shard counted down" % i)
            st, _, body = ag.get("/readyz")
            self.assertEqual(st, 200, body)
            self.assertIn("shard %d/2 (http://127.0.0.1:%d): does not answer as that shard for "
                          % (1 - i, ags[i].port), body.decode())
            self.assertIn("(it answers as shard %d/2: shard_peers names another agent there)"
                          % i, body.decode())
        with open(ags[1].logfile, "rb") as f:
            self.assertIn(b"it answers as shard 1/2", f.read())


if __name__ == "__main__":
    h.main()
