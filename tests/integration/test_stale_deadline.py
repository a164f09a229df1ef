# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (servers stopped with SIGSTOP for a few seconds; polls every 0.1 s; its bound,
#   scan_interval + command_timeout + 1.5 s on the agent's own clock, has room)
"""The promise of "The last proof" (README): a view is marked stale within
scan_interval + command_timeout of its last good read when its node stops
answering (SIGSTOP: the socket accepts, nothing replies), in every mode,
not after two or three command_timeout waits stacked back to back (a ROLE
check, a reconnect, sentinel rounds, a retried pass).

Measured with scan_interval = command_timeout = 1 s: the age of the last
good view (now - its stale entry's last_success, the agent's own stamp)
when /readyz, polled every 0.1 s, is first 503; asserted within the
promise + 1.5 s (a loaded 2-core machine, ASan):

- a Sentinel target whose primary is stopped (no replica: no failover),
  by three agents: scanning; following (its freshness check meets the
  node); following with a full scan every scan_interval (reconcile, as a
  lost subscription or a move calls for: the full scan meets the node).
  The issue's run: 5.5 s scanning and following;
- the same with a replica: stale within the bound, then the sentinels fail
  over and every agent reads the new primary (the issue's run: the frozen
  primary's view served as current, 2.8-3.3 s old, until the switch);
- a cluster followed, one shard's primary stopped (the cluster's own
  failure detection kept out by a long node timeout): that shard is stale
  within the bound, the others fresh (the issue's run: every shard up 3 s
  after the stop, 5.6 s);
- the same with the seed stopped (the node url names, which every
  discovery asks first), followed and scanned.

Each figure is printed on stderr."""

import sys
import time

import harness as h
import topo

NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet"]
INTERVAL_MS = 1000
TIMEOUT_MS = 1000
# room for a loaded 2-core machine and ASan, on top of the promise
SLACK_MS = 1500
BOUND_MS = INTERVAL_MS + TIMEOUT_MS + SLACK_MS
AGENT_KW = dict(scan_interval="1s", leak_grace="1h", max_hold="1h")
SENTINEL_AGENTS = ("sentinel scan", "sentinel follow", "sentinel follow, full scans")


def first_stale(agents, want_shard=False, timeout=20):
    """Poll each agent's /readyz every 0.1 s until it is 503 with a stale
    entry (a shard's when want_shard): {agent index: (entry, age_ms)},
    age_ms the age of the entry's last success when the 503 was seen."""
    seen = {}
    t_end = time.monotonic() + timeout
    while len(seen) < len(agents) and time.monotonic() < t_end:
        for i, ag in enumerate(agents):
            if i in seen:
                continue
            st, _, _ = ag.get("/readyz")
            now_ms = time.time() * 1000.0
            if st != 503:
                continue
            _, page = ag.get_json("/api/v1/locks?state=all")
            ent = [e for e in page["stale"] if ("shard" in e) == want_shard]
            if ent:
                seen[i] = (ent[0], now_ms - (ent[0]["last_success_ms"] or 0))
        time.sleep(0.1)
    return seen


def gap_ms(entry):
    """stale_since - last_success of a stale entry, on the agent's clock."""
    import datetime
    since = datetime.datetime.strptime(entry["stale_since"], "%Y-%m-%dT%H:%M:%S.%fZ")
    since = since.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000.0
    return since - entry["last_success_ms"]


class StaleDeadline(h.TestCase):

    def check_all(self, whats, seen):
        """Each of whats (by agent index) seen stale in time: every figure
        printed before the first assertion."""
        for i, what in enumerate(whats):
            if i in seen:
                self.say(what, *seen[i])
        for i, what in enumerate(whats):
            self.assertIn(i, seen, "%s: never stale" % what)
            self.check(what, *seen[i], quiet=True)

    def say(self, what, entry, age_ms, timeout_ms=TIMEOUT_MS):
        gap = gap_ms(entry)
        sys.stderr.write("%s: the last good view %.2fs old at the first 503 (promise %.1fs, "
                         "asserted %.1fs; stale_since - last_success %.2fs): %s\n"
                         % (what, age_ms / 1000.0, (INTERVAL_MS + timeout_ms) / 1000.0,
                            (INTERVAL_MS + timeout_ms + SLACK_MS) / 1000.0, gap / 1000.0,
                            entry["reason"]))
        sys.stderr.flush()

    def check(self, what, entry, age_ms, quiet=False, timeout_ms=TIMEOUT_MS):
        if not quiet:
            self.say(what, entry, age_ms, timeout_ms)
        self.assertIsNotNone(entry["last_success_ms"], entry)
        # the age of the view when it was first seen stale (not stale_since,
        # which for a cluster shard is when the pass that failed it began)
        self.assertLessEqual(age_ms, INTERVAL_MS + timeout_ms + SLACK_MS,
                             "%s: %r" % (what, entry))

    def sentinel_agents(self, sentinels):
        """Agents on the sentinels (SENTINEL_AGENTS): scanning; following
        (its check every scan_interval finds the node silent); following
        with a full scan every scan_interval (reconcile_interval 1s: the
        full scan a lost subscription, a move or a reconcile calls for,
        which meets the stopped node first)."""
        agents = []
        for incremental, extra in (("off", {}), ("on", {}),
                                   ("on", {"reconcile_interval": "1s"})):
            extra.update({"mode": "sentinel", "master_name": "mymaster",
                          "sentinels": ",".join("127.0.0.1:%d" % s.port for s in sentinels),
                          "incremental": incremental, "command_timeout": "%dms" % TIMEOUT_MS})
            agents.append(self.start_agent(targets=[("main", "redis://127.0.0.1:1/0")],
                                           target_extra=extra, **AGENT_KW))
        for ag in agents:
            ag.wait_for(lambda: ag.get("/readyz")[0] == 200, 20, desc="ready")
        for ag in agents[1:]:
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active",
                                       target="main") == 1, 20, desc="following")
        # a good read after following began, for either agent
        time.sleep(1.5)
        return agents

    def listed(self, ag, key):
        st, body = ag.get_json("/api/v1/locks?state=all")
        return next((lk for lk in body["locks"] if lk["key"] == key), None)

    def test_sentinel_primary_stopped(self):
        primary = self.start_redis(args=NOTIFY)
        sentinels = topo.start_sentinels(self, primary.port, n=2, replicas=0)
        primary.client().set("lock:frozen", "tok", px=600000)
        agents = self.sentinel_agents(sentinels)
        primary.pause()
        try:
            seen = first_stale(agents)
        finally:
            primary.resume()
        self.check_all(SENTINEL_AGENTS, seen)
        for ag in agents:
            ag.wait_for(lambda: ag.get("/readyz")[0] == 200, 20, desc="fresh once resumed")
            lk = self.listed(ag, "lock:frozen")
            self.assertIsNotNone(lk)
            self.assertFalse(lk.get("stale"), lk)

    def test_sentinel_failover_of_a_stopped_primary(self):
        primary = self.start_redis(args=NOTIFY)
        replica = self.start_redis(args=NOTIFY + ["--replicaof", "127.0.0.1",
                                                  str(primary.port)])
        h.wait_until(lambda: replica.client().info("replication").get(
            "master_link_status") == "up", 20, desc="replica in sync")
        sentinels = topo.start_sentinels(self, primary.port, n=3, replicas=1)
        primary.client().set("lock:old", "tok", px=600000)
        h.wait_until(lambda: replica.client().exists("lock:old"), 10, desc="replicated")
        agents = self.sentinel_agents(sentinels)
        primary.pause()
        try:
            seen = first_stale(agents)
            self.check_all(["%s, failing over" % a for a in SENTINEL_AGENTS], seen)
            # the sentinels promote the replica: a pass finds it
            h.wait_until(lambda: sentinels[0].master_port() == replica.port and
                         replica.client().info("replication")["role"] == "master", 40,
                         desc="replica promoted")
            replica.client().set("lock:new", "tok", px=600000)
            for ag in agents:
                ag.wait_for(lambda: ag.get("/readyz")[0] == 200 and
                            self.listed(ag, "lock:new") is not None, 30,
                            desc="the new primary read")
                self.assertIn("now scanning 127.0.0.1:%d" % replica.port, ag.log_tail(200))
        finally:
            primary.resume()

    def cluster_node_stopped(self, what, seed, incremental, timeout_ms):
        """A cluster of 3 primaries, the cluster's own failure detection (node
        timeout) kept out of the measure so that only the agent's deadline
        decides; the seed (the node url names) or another primary stopped:
        that shard is stale within the bound, the others fresh."""
        c = topo.Cluster(primaries=3, node_timeout_ms=30000)
        self.addCleanup(c.stop)
        self._redises.extend(c.nodes)
        seed_port = c.nodes[0].port     # c.url names it
        self.assertIn(":%d" % seed_port, c.url)
        victim = next(n for n in c.nodes if (n.port == seed_port) == seed)
        key = next("lock:dl:a%d" % i for i in range(200)
                   if c.owner[topo.keyslot("lock:dl:a%d" % i)] == victim.port)
        other = next("lock:dl:b%d" % i for i in range(200)
                     if c.owner[topo.keyslot("lock:dl:b%d" % i)] != victim.port)
        c.load([("SET", key, "tok", "PX", "600000"), ("SET", other, "tok", "PX", "600000")])
        for n in c.nodes:
            n.client().config_set("notify-keyspace-events", "KEA")
        ag = self.start_agent(targets=[("c", c.url)],
                              target_extra={"mode": "cluster", "incremental": incremental,
                                            "command_timeout": "%dms" % timeout_ms},
                              **AGENT_KW)
        if incremental == "on":
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active",
                                       target="c") == 1, 20, desc="following")
        ag.wait_for(lambda: ag.get("/readyz")[0] == 200, 20, desc="ready")
        time.sleep(1.5)
        victim.pause()
        try:
            seen = first_stale([ag], want_shard=True)
            self.assertIn(0, seen, "%s: the stopped shard never stale" % what)
            self.check(what, *seen[0], timeout_ms=timeout_ms)
            self.assertIn("127.0.0.1:%d" % victim.port, seen[0][0]["node"])
            self.assertTrue(self.listed(ag, key)["stale"])
            self.assertFalse(self.listed(ag, other).get("stale"))
        finally:
            victim.resume()
        ag.wait_for(lambda: ag.get("/readyz")[0] == 200, 30, desc="the shard read again")

    def test_cluster_shard_stopped_following(self):
        self.cluster_node_stopped("cluster follow, one shard stopped", seed=False,
                                  incremental="on", timeout_ms=TIMEOUT_MS)

    # The seed: after the pass the audit tail's discovery asks it first, and
    # used to wait for it once more before the view was published (the
    # issue's run at 1 s / 3 s: 7.0 s).  command_timeout 2 s sets that wait
    # (+2 s) well apart from the bound's slack.
    def test_cluster_seed_stopped_following(self):
        self.cluster_node_stopped("cluster follow, the seed stopped", seed=True,
                                  incremental="on", timeout_ms=2000)

    def test_cluster_seed_stopped_scanning(self):
        self.cluster_node_stopped("cluster scan, the seed stopped", seed=True,
                                  incremental="off", timeout_ms=2000)

if __name__ == "__main__":
    h.main()
