# SPDX-License-Identifier: BSD-3-Clause
# run-all: heavy (4 agents, 3 Alertmanagers and 12 targets at once)
"""Issue 27's acceptance on loopback: 2 shards x 2 replicas (4 agents), 12 Redis
targets (the 12 databases of one redis-server), a real 3-peer Alertmanager
cluster and a generic webhook receiver behind each shard's elected leader.

  - every target is watched by exactly one agent per replica;
  - a leak in every target: Alertmanager delivers each alert exactly once,
    and the direct webhook receives each exactly once, from the leader of
    the target's shard, fenced;
  - shard 0's leader killed: its other replica leads within the lease, new
    leaks are again delivered once by Alertmanager and once by the webhook
    (shard 0's now from the new leader, with a greater fence), and the
    first round is not delivered again.

The 2 -> 3 shard move is test_shard.py, SIGSTOP past the lease
test_ha_leader.py, equal P99s test_ha_samples.py.
"""

import collections
import time

import alerts_receiver
import am_cluster
import harness as h

N = 12
LEASE_S = 3
DEDUP_WINDOW_S = 3 * am_cluster.PEER_TIMEOUT_S + 4


def am_deliveries(recv):
    """{key: notifications of Alertmanager carrying it firing}."""
    n = collections.Counter()
    for r in recv.snapshot():
        body = r.json()
        if body.get("status") != "firing":
            continue
        for key in {a["labels"]["key"] for a in body["alerts"] if a["status"] == "firing"}:
            n[key] += 1
    return n


def hook_alerts(recv):
    """{key: [(fence, replica)] of every firing alert the webhook got}."""
    out = collections.defaultdict(list)
    for r in recv.snapshot():
        body = r.json()
        if body.get("status") != "firing":
            continue
        for a in body["alerts"]:
            out[a["labels"]["key"]].append((int(r.headers["x-lockwatch-fence"]),
                                            a["annotations"]["replica"]))
    return out


def leading(ag):
    return h.msum(ag.metrics(), "lockwatch_ha_leader") == 1


class Acceptance(h.TestCase):

    def leader_of(self, ags, shard):
        lead = [r for r in "ab" if leading(ags[shard, r])]
        return lead[0] if len(lead) == 1 else None

    def leak_round(self, rs, suffix, amrecv, hook, every):
        """A leak lock:tN<suffix> in every target; then each key of every
        delivered exactly once by Alertmanager and once by the webhook.
        Returns hook_alerts()."""
        for i in range(N):
            rs.client(db=i).set("lock:t%d%s" % (i, suffix), "tok")
        h.wait_until(lambda: set(am_deliveries(amrecv)) >= every, 40, desc="alerts via AM")
        h.wait_until(lambda: set(hook_alerts(hook)) >= every, 40, desc="alerts via hook")
        time.sleep(DEDUP_WINDOW_S)
        amd, ha = am_deliveries(amrecv), hook_alerts(hook)
        self.assertEqual({k: amd[k] for k in every}, {k: 1 for k in every})
        self.assertEqual({k: len(ha[k]) for k in every}, {k: 1 for k in every})
        return ha

    def test_two_shards_two_replicas(self):
        hook = alerts_receiver.Receiver()
        self.addCleanup(hook.stop)
        amrecv = alerts_receiver.Receiver()
        self.addCleanup(amrecv.stop)
        am = am_cluster.Cluster(amrecv.url)
        self.addCleanup(am.stop)
        rs = self.start_redis()
        targets = [("t%d" % i, "redis://127.0.0.1:%d/%d" % (rs.port, i)) for i in range(N)]
        sinks = am.webhook_sections() + "[webhook hook]\nurl = %s\nformat = generic\n" \
            "timeout = 5s\nretry_base = 100ms\n" % hook.url
        ags = {}
        for shard in (0, 1):
            for rep in "ab":
                ags[shard, rep] = self.start_agent(
                    targets=targets, scan_interval="300ms", leak_grace="1s", max_hold="1h",
                    extra=sinks, agent_extra={"shard": "%d/2" % shard, "replica": rep,
                                              "leader_target": "t0",
                                              "leader_lease": "%ds" % LEASE_S})

        # every target once per replica, the replicas splitting alike
        owner = {}
        for rep in "ab":
            seen = []
            for shard in (0, 1):
                st, sh = ags[shard, rep].get_json("/api/v1/shard")
                seen += sh["targets"]
                for t in sh["targets"]:
                    self.assertEqual(owner.setdefault(t, shard), shard, t)
            self.assertEqual(sorted(seen), sorted(t for t, _ in targets), rep)
        leaders = {}
        for shard in (0, 1):
            leaders[shard] = ags[shard, "a"].wait_for(lambda: self.leader_of(ags, shard),
                                                      timeout=20, desc="shard %d leads" % shard)

        # round 1: a leak in every target
        keys1 = {"lock:t%d" % i for i in range(N)}
        ha = self.leak_round(rs, "", amrecv, hook, keys1)
        for k in keys1:
            self.assertEqual(ha[k][0][1], leaders[owner[k[len("lock:"):]]], k)
        fence0 = max(ha[k][0][0] for k in keys1 if owner[k[len("lock:"):]] == 0)

        # shard 0's leader killed: the other replica of shard 0 takes over
        old = leaders[0]
        new = "b" if old == "a" else "a"
        ags[0, old].kill()
        killed = time.monotonic()
        ags[0, new].wait_for(lambda: leading(ags[0, new]), timeout=LEASE_S * 2 + 5,
                             desc="shard 0 takeover")
        took = time.monotonic() - killed
        keys2 = {"lock:t%d:b" % i for i in range(N)}
        ha = self.leak_round(rs, ":b", amrecv, hook, keys1 | keys2)
        for k in keys2:
            shard = owner[k[len("lock:"):-2]]
            fence, rep = ha[k][0]
            self.assertEqual(rep, new if shard == 0 else leaders[1], k)
            if shard == 0:
                self.assertGreater(fence, fence0, k)
        print("acceptance: 24 alerts, each once via Alertmanager and once via the webhook; "
              "shard 0 takeover %.1f s after SIGKILL of its leader (lease %d s)"
              % (took, LEASE_S))


if __name__ == "__main__":
    h.main()
