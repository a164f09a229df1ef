# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (a shard down for 8 s, checked every second: it waits, and measures no time)
"""What a failed cluster shard gave stays visible, marked stale: with a
leaked lock on one of three primaries and that primary killed, the target
stays up (LockShardDown fires) and the lock stays in /api/v1/locks marked
"stale" with its shard's stale_since, the page "complete": false with a
"stale" entry naming the target, shard, node, last success and reason,
lockwatch_locks_leaked keeps counting it and the agent's LockLeaked is
not resolved at a webhook receiver, while the other shards' locks stay
fresh.  Once the primary is back (empty: the test server keeps nothing on
disk) its slots are judged afresh: nothing stale, and the leak gone with
the data, LockLeaked resolved.  In scan mode and in follow mode.
The target's URL node reset into a cluster of its own is not taken for
the cluster while a node known before still answers as it was: the
agent's release endpoint and audit tail go through the nodes it knows,
and lockctl, told them by the agent, refuses to read or release in
another cluster (it never connects to the nodes an answer names).
"""

import http.server
import json
import os
import socket
import subprocess
import threading
import time

import harness as h
import topo
from alerts_receiver import Receiver

LEAK = "lock:sl:a"                      # slot 1367


class ClusterStale(h.TestCase):

    def test_failed_shard_keeps_its_last_known_locks(self):
        self.run_case("off")

    def test_failed_shard_keeps_its_last_known_locks_following(self):
        self.run_case("on")

    def run_case(self, incremental):
        c = topo.start_cluster(self, primaries=3)
        victim = c.by_port[c.owner[topo.keyslot(LEAK)]]
        node = "127.0.0.1:%d" % victim.port
        # a held lock on another shard: fresh throughout
        other = next("lock:sl:b%d" % i for i in range(100)
                     if c.owner[topo.keyslot("lock:sl:b%d" % i)] != victim.port)
        c.load([("SET", LEAK, "tok"), ("SET", other, "tok", "PX", "600000")])
        if incremental == "on":
            for n in c.nodes:
                n.client().config_set("notify-keyspace-events", "KEA")
        rcv = Receiver()
        self.addCleanup(rcv.stop)
        ag = self.start_agent(targets=[("c", c.url)], scan_interval="500ms",
                              leak_grace="1s", max_hold="1h",
                              target_extra={"mode": "cluster", "incremental": incremental},
                              extra="[webhook oncall]\nurl = %s\nretry_base = 100ms\n" % rcv.url)

        def alerts(status, name):
            return [a for _, b in rcv.notices(status) for a in b["alerts"]
                    if a["labels"]["alertname"] == name]
        leak = ag.wait_for(lambda: [a for a in alerts("firing", "LockLeaked")
                                    if a["labels"]["key"] == LEAK],
                           30, desc="LockLeaked %s at the receiver" % LEAK)
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks_leaked", target="c"), 1)
        if incremental == "on":
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active", target="c") == 1,
                        20, desc="following keyspace notifications")

        victim.kill()
        down = ag.wait_for(lambda: alerts("firing", "LockShardDown"), 30,
                           desc="LockShardDown for %s" % node)
        self.assertEqual(down[0]["labels"]["node"], node)
        shard = down[0]["labels"]["shard"]

        t_down = time.monotonic()
        checks = 0
        while time.monotonic() - t_down < 8:
            m = ag.metrics()
            self.assertEqual(h.msum(m, "lockwatch_target_up", target="c"), 1)
            self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="c"), 1,
                             "the failed shard's last-known leak left /metrics")
            self.assertEqual(h.msum(m, "lockwatch_locks", target="c"), 2)

            st, body = ag.get_json("/api/v1/locks?state=all")
            self.assertEqual(st, 200, body)
            self.assertFalse(body["complete"], body)
            self.assertEqual(body["count"], 2, body)
            by_key = {l["key"]: l for l in body["locks"]}
            self.assertTrue(by_key[LEAK]["stale"], body)
            self.assertTrue(by_key[LEAK]["stale_since"], body)
            self.assertIn("leaked", by_key[LEAK]["states"], body)
            self.assertNotIn("stale", by_key[other], body)
            self.assertEqual(len(body["stale"]), 1, body)
            entry = body["stale"][0]
            self.assertEqual((entry["target"], entry["shard"], entry["node"]),
                             ("c", shard, node), body)
            self.assertIn("shard %s (%s)" % (shard, node), entry["reason"])
            self.assertTrue(entry["last_success"], body)
            self.assertGreater(entry["last_success_ms"], 0, body)
            self.assertEqual(entry["stale_since"], by_key[LEAK]["stale_since"], body)

            st, one = ag.lock(LEAK, target="c")
            self.assertEqual(st, 200, one)
            self.assertTrue(one["stale"], one)

            st, _, page = ag.get("/")
            self.assertIn(b"last known", page)

            self.assertEqual(alerts("resolved", "LockLeaked"), [],
                             "LockLeaked resolved while its shard was down")
            checks += 1
            time.sleep(1)
        self.assertGreaterEqual(checks, 4)
        # lockctl, whose Redis (the URL's node, the victim) is gone too:
        # the agent's view with that shard's locks marked stale, not the
        # whole target said stale (a trial: every lock read "as of then")
        ctl = ["-c", ag.config_path, "-t", "c"]
        p = topo.lockctl(ctl + ["list", "--state", "all"])
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("It cannot read it either: target c's shard %s (%s): " % (shard, node), out)
        self.assertNotIn("LAST KNOWN", out)
        rows = {l.split()[0]: l for l in out.splitlines() if l.startswith("lock:sl:")}
        self.assertTrue(rows[LEAK].rstrip().endswith("(stale)"), out)
        self.assertNotIn("stale", rows[other], out)
        p = topo.lockctl(ctl + ["--json", "list", "--state", "all"])
        j = json.loads(p.stdout)
        self.assertEqual((j["stale"], j["stale_shards"]), (True, [shard]), j)
        self.assertEqual({l["key"]: l["stale"] for l in j["locks"]}, {LEAK: True, other: False})
        p = topo.lockctl(ctl + ["show", LEAK])
        self.assertIn("cannot read it either: target c's shard %s (%s): " % (shard, node),
                      p.stdout.decode())
        self.assertEqual(alerts("firing", "LockLeaked")[0]["fingerprint"], leak[0]["fingerprint"])

        # back, empty: its slots judged afresh
        victim.restart()

        def fresh():
            st, body = ag.get_json("/api/v1/locks?state=all")
            return body if st == 200 and body["stale"] == [] else None
        body = ag.wait_for(fresh, 40, desc="the shard of %s read again" % node)
        self.assertTrue(body["complete"], body)
        self.assertEqual([l["key"] for l in body["locks"]], [other], body)
        ag.wait_for(lambda: alerts("resolved", "LockLeaked"), 20,
                    desc="LockLeaked resolved once the shard answers without it")
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks_leaked", target="c"), 0)

    def test_lockctl_names_every_stale_shard(self):
        """A red-team: with two shards down, lockctl named the first only,
        and dated both shards' locks from its last read.  Now it names
        both, marks their locks alone (stale), each aged as of its own
        shard's last good read, and --json lists both."""
        c = topo.start_cluster(self, primaries=3)
        keys = {}
        for i in range(200):
            keys.setdefault(c.owner[topo.keyslot("lock:m%d" % i)], "lock:m%d" % i)
        c.load([("SET", k, "tok", "PX", "600000") for k in keys.values()])
        ag = self.start_agent(targets=[("c", c.url)], scan_interval="500ms",
                              target_extra={"mode": "cluster"})
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="c") == 3, 20,
                    desc="a lock on each shard")
        ports = sorted(keys)[1:]             # not the URL's node
        c.by_port[ports[0]].kill()
        time.sleep(2)
        c.by_port[ports[1]].kill()

        def both_stale():
            st, body = ag.get_json("/api/v1/locks?state=all")
            return len(body.get("stale", [])) == 2 or None
        ag.wait_for(both_stale, 20, desc="two shards stale")
        ctl = ["-c", ag.config_path, "-t", "c"]
        out = topo.lockctl(ctl + ["list"]).stdout.decode()
        self.assertIn("target c's shards ", out)
        rows = {l.split()[0]: l for l in out.splitlines() if l.startswith("lock:m")}
        for port, key in keys.items():
            self.assertEqual(rows[key].rstrip().endswith("(stale)"), port in ports, out)
        j = json.loads(topo.lockctl(ctl + ["--json", "list"]).stdout)
        self.assertEqual(len(j["stale_shards"]), 2, j)
        ages = {l["key"]: l for l in j["locks"]}
        self.assertTrue(all(ages[keys[p]]["stale"] for p in ports), j)

    def test_a_url_node_gone_to_another_cluster_is_not_the_cluster(self):
        # the freshness trial: the URL's node (a replica) reset and set up as
        # a one-node cluster of its own (a name now pointing at another
        # cluster, a node reused) answered for every slot with nothing in
        # it: an empty view served as current, every LockLeaked resolved,
        # while the cluster it had left still held the leaks
        c = topo.start_cluster(self, primaries=3, replicas=1)
        primaries = set(c.primaries())
        seed = next(r for r in c.nodes if r.port not in primaries)
        leaks = ["lock:sd:%d" % i for i in range(12)]
        c.load([("SET", k, "tok") for k in leaks])
        ag = self.start_agent(targets=[("c", "redis://127.0.0.1:%d/0" % seed.port)],
                              scan_interval="500ms", leak_grace="1s", max_hold="1h",
                              target_extra={"mode": "cluster", "command_timeout": "500ms",
                                            "connect_timeout": "300ms"})
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks_leaked", target="c") == 12,
                    30, desc="12 leaks counted")
        sc = seed.client()

        def still_the_cluster():
            end = time.monotonic() + 3
            while time.monotonic() < end:
                m = ag.metrics()
                self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="c"), 12)
                self.assertEqual(h.msum(m, "lockwatch_target_up", target="c"), 1)
                time.sleep(0.25)
        # out of the cluster (del-node does this): it serves no slot
        sc.execute_command("CLUSTER", "RESET", "HARD")
        ag.wait_for(lambda: "serves no slot" in ag.log_tail(50), 10,
                    desc="the URL's node said to serve no slot")
        still_the_cluster()
        # ... and a cluster of its own, every slot and no key
        sc.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        ag.wait_for(lambda: "answers as another cluster" in ag.log_tail(50), 10,
                    desc="the URL's node said to be in another cluster")
        still_the_cluster()
        # the known nodes stalled a few seconds: no proof the cluster was
        # replaced (a red-team: taken as one for good); the target is down,
        # its view last known, and current again once they answer
        others = [n for n in c.nodes if n.port != seed.port]
        for n in others:
            n.pause()
        try:
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_target_up", target="c") == 0,
                        15, desc="the target down while no known node answers")
            self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks_leaked", target="c"), 12)
        finally:
            for n in others:
                n.resume()
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_target_up", target="c") == 1,
                    20, desc="the target up again through a known node")
        still_the_cluster()
        self.assertNotIn("LockLostAtFailover", ag.log_tail(200))
        st, body = ag.get_json("/api/v1/locks?target=c&state=leaked")
        self.assertEqual((st, body["total"], body["complete"]), (200, 12, True), body)

    def test_lockctl_refuses_and_the_release_goes_where_the_agent_reads(self):
        # the freshness trial's one high finding left: with the URL's node
        # reset into a cluster of its own, the agent read the real cluster
        # through the nodes it knew, while lockctl, the release endpoint
        # and the audit tail found "the cluster" through the URL's node
        # alone: lockctl listed the other cluster's keys and released
        # there, the same key and holder left in the real one.  The agent's
        # release and audit tail now go through its nodes; lockctl, told
        # them over HTTP, only checks the URL's cluster against them (a
        # red-team: an answer may not choose where lockctl connects)
        c = topo.start_cluster(self, primaries=3, replicas=1)
        primaries = set(c.primaries())
        seed = next(r for r in c.nodes if r.port not in primaries)
        leaks = ["lock:sd:%d" % i for i in range(12)]
        both = ["lock:sd:both%d" % i for i in range(2)]
        c.load([("SET", k, "tok") for k in leaks] +
               [("SET", k, "tok-both", "PX", "600000") for k in both])
        token = "t0ken-%d" % os.getpid()
        token_file = topo.write_file(h._mkdtemp("lw-tok-"), "unlock.token", token + "\n")
        ag = self.start_agent(targets=[("c", "redis://127.0.0.1:%d/0" % seed.port)],
                              scan_interval="500ms", leak_grace="1s", max_hold="1h",
                              target_extra={"mode": "cluster", "command_timeout": "500ms",
                                            "connect_timeout": "300ms"},
                              extra="[unlock]\nhttp = on\ntoken_file = %s\n" % token_file)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks_leaked", target="c") == 12,
                    30, desc="12 leaks counted")
        sc = seed.client()
        sc.execute_command("CLUSTER", "RESET", "HARD")
        sc.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        h.wait_until(lambda: "cluster_state:ok" in str(sc.execute_command("CLUSTER", "INFO")),
                     10, desc="the other cluster up")
        # the other cluster holds the same keys, with the same holder
        for k in both:
            sc.set(k, "tok-both", px=600000)
        sc.set("lock:impostor", "tok")
        ag.wait_for(lambda: "answers as another cluster" in ag.log_tail(50), 10,
                    desc="the URL's node said to be in another cluster")

        def real(k):
            return c.by_port[c.owner[topo.keyslot(k)]].client().exists(k)

        ctl = ["-c", ag.config_path, "-t", "c"]
        for cmd in (["list"], ["show", leaks[0]], ["audit"],
                    ["release", both[0], "--holder", "tok-both", "--yes", "--reason", "t"]):
            p = topo.lockctl(ctl + cmd)
            err = b" ".join(p.stderr.split())
            self.assertEqual(p.returncode, 3, (cmd, p.stdout, err))
            self.assertIn(b"not as the cluster the agent reads", err, cmd)
            self.assertIn(b"--agent off to read the URL's cluster anyway", err, cmd)
        self.assertEqual((real(both[0]), sc.exists(both[0])), (1, 1))
        p = topo.lockctl(ctl + ["--json", "list"])
        self.assertEqual(json.loads(p.stdout)["redis"], "another_cluster", p.stdout)
        # told another node of the real cluster, lockctl releases there
        node = "redis://127.0.0.1:%d/0" % next(iter(primaries))
        p = topo.lockctl(ctl + ["--url", node, "--json", "release", both[0], "--holder",
                                "tok-both", "--yes", "--reason", "test"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertIn(b'"released"', p.stdout)
        self.assertEqual((real(both[0]), sc.exists(both[0])), (0, 1))
        # --agent off: the URL's cluster, as asked
        p = topo.lockctl(ctl + ["--agent", "off", "--json", "list", "--state", "all"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("lock:impostor", {l["key"] for l in json.loads(p.stdout)["locks"]})
        # the release endpoint goes where the agent reads
        st, body = ag.release({"target": "c", "key": both[1], "holder": "tok-both",
                               "reason": "test"}, token)
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body)["outcome"], "released", body)
        self.assertEqual((real(both[1]), sc.exists(both[1])), (0, 1))
        # both audited in the real cluster, and lockctl's release put on the
        # agent's timeline by its audit tail
        self.assertEqual(sc.exists("lockwatch:audit"), 0)
        self.assertEqual(real("lockwatch:audit"), 1)
        p = topo.lockctl(ctl + ["--url", node, "--json", "audit"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(json.loads(p.stdout)["entries"]), 2, p.stdout)

        def on_timeline():
            st, ev = ag.get_json("/api/v1/events?target=c")
            return st == 200 and any(e.get("kind") == "force_release" and
                                     e.get("key") == both[0] for e in ev["events"])
        ag.wait_for(on_timeline, 15, desc="lockctl's release on the agent's timeline")

    def test_lockctl_never_connects_where_an_agent_says(self):
        # a red-team: a fake agent (whatever answers at its address) named
        # a node of its own in cluster_nodes, and lockctl sent it AUTH and
        # its reads; the nodes an answer names are only checked against
        c = topo.start_cluster(self, primaries=3)
        trap = socket.socket()
        trap.bind(("127.0.0.1", 0))
        trap.listen(16)
        trap.settimeout(0.2)
        self.addCleanup(trap.close)
        url = "redis://127.0.0.1:%d/0" % c.nodes[0].port
        answer = json.dumps({
            "count": 0, "total": 0, "complete": True, "stale": [], "offset": 0,
            "next_offset": None, "locks": [], "target_address": "127.0.0.1:%d/0" % c.nodes[0].port,
            "cluster_nodes": [{"id": "e" * 40, "host": "127.0.0.1", "port": trap.getsockname()[1]},
                              {"id": "f" * 40, "host": "127.0.0.1",
                               "port": trap.getsockname()[1]}]}).encode()

        class Fake(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *a):
                pass
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.shutdown)
        cfg = topo.write_file(h._mkdtemp("lw-fake-"), "lw.ini",
                              "[target c]\nurl = %s\nmode = cluster\npatterns = lock:*\n" % url)
        agent = "http://127.0.0.1:%d" % srv.server_address[1]
        for cmd in (["list"], ["show", "lock:x"], ["release", "lock:x", "--holder", "t", "--yes"]):
            p = topo.lockctl(["-c", cfg, "-t", "c", "--agent", agent] + cmd)
            self.assertEqual(p.returncode, 3, (cmd, p.stdout, p.stderr))
            self.assertIn(b"not as the cluster the agent reads", p.stderr, cmd)
        with self.assertRaises(socket.timeout):
            trap.accept()

    def test_slots_no_node_serves_keep_their_last_known_locks(self):
        self.unserved_case("off")

    def test_slots_no_node_serves_keep_their_last_known_locks_following(self):
        self.unserved_case("on")

    def unserved_case(self, incremental):
        # the freshness trial: with cluster-require-full-coverage no and
        # slots 0-99 deleted from every node, the locks there left the view
        # and their LockLeaked resolved, though the keys were still in memory
        c = topo.start_cluster(self, primaries=3)
        inside = next("lock:gap:%d" % i for i in range(10000)
                      if topo.keyslot("lock:gap:%d" % i) < 100)
        outside = next("lock:gap:%d" % i for i in range(10000)
                       if c.owner[topo.keyslot("lock:gap:%d" % i)] != c.owner[0])
        # on the node that served 0-99, and still holds inside (its read
        # answers CLUSTERDOWN): that node's other keys are read as ever
        # (a freshness trial: its whole part of the view went last known)
        beside = next("lock:gap:%d" % i for i in range(10000)
                      if topo.keyslot("lock:gap:%d" % i) >= 100 and
                      c.owner[topo.keyslot("lock:gap:%d" % i)] == c.owner[0])
        c.load([("SET", inside, "tok"), ("SET", outside, "tok"), ("SET", beside, "tok")])
        for n in c.nodes:
            n.client().config_set("cluster-require-full-coverage", "no")
            if incremental == "on":
                n.client().config_set("notify-keyspace-events", "KEA")
        ag = self.start_agent(targets=[("c", c.url)], scan_interval="500ms",
                              leak_grace="1s", max_hold="1h",
                              target_extra={"mode": "cluster", "incremental": incremental})
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks_leaked", target="c") == 3,
                    30, desc="the leaks counted")
        for n in c.nodes:
            n.client().execute_command("CLUSTER", "DELSLOTSRANGE", "0", "99")
        ag.wait_for(lambda: any(l["shard"] == "0-99" and l["node"] == "none"
                                for l, v in h.select(ag.metrics(), "lockwatch_shard_up",
                                                     target="c") if v == 0),
                    15, desc="the slots no node serves a shard down")
        end = time.monotonic() + 3
        while time.monotonic() < end:
            m = ag.metrics()
            self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="c"), 3)
            # every node's shard is up: only the gap is down
            self.assertEqual(sorted(l["node"] == "none" for l, v in
                                    h.select(m, "lockwatch_shard_up", target="c") if v == 0),
                             [True])
            time.sleep(0.25)
        st, body = ag.get_json("/api/v1/locks?target=c&state=leaked")
        self.assertEqual((st, body["total"], body["complete"]), (200, 3, False), body)
        locks = {l["key"]: l for l in body["locks"]}
        self.assertTrue(locks[inside].get("stale"), locks)
        self.assertFalse(locks[outside].get("stale"), locks)
        self.assertFalse(locks[beside].get("stale"), locks)
        self.assertIn("no node serves slots 0-99", json.dumps(body["stale"]))
        # the view before read those slots: the gap has a last success (a
        # trial: a shard whose ranges changed had none)
        gap = next(e for e in body["stale"] if e.get("shard") == "0-99")
        self.assertIsNotNone(gap["last_success"], gap)
        _, _, ready = ag.get("/readyz")
        self.assertIn(b"no node serves slots 0-99", ready)
        self.assertNotIn(b"moving between shards", ready)
        # lockctl list reads every node's other keys (before: the first
        # CLUSTERDOWN failed the whole list), and says what it cannot read
        p = topo.lockctl(["-c", ag.config_path, "-t", "c", "--json", "list", "--state", "all"])
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual({l["key"] for l in doc["locks"]}, {outside, beside}, doc)
        self.assertEqual((doc["slots_unserved"], doc["keys_not_read"],
                          doc["unserved_known_to_agent"]), ("0-99", 1, 1), doc)
        p = topo.lockctl(["-c", ag.config_path, "-t", "c", "list"])
        self.assertIn(b"no node serves slots 0-99: their locks are unknown now", p.stdout)

    def test_a_slot_only_its_owner_gave_up_is_no_gap(self):
        self.owner_only_case("off")

    def test_a_slot_only_its_owner_gave_up_is_no_gap_following(self):
        # follow mode: its check every scan_interval compares each
        # primary's own count of the slots assigned (CLUSTER INFO) with the
        # cluster's map (a red-team: the locks were kept current until the
        # next reconcile, an hour later by default)
        self.owner_only_case("on")

    def owner_only_case(self, incremental):
        # a red-team: CLUSTER DELSLOTS on the owner alone (the other nodes,
        # the URL's among them, still name it): its keys there answer
        # CLUSTERDOWN while the pass's topology gives the slot a shard, so
        # the owner's read is refused, its shard down with the lock last
        # known; skipped as a gap's key, the lock dropped out as released
        c = topo.start_cluster(self, primaries=3)
        owner = c.owner[0]
        leak = next("lock:own:%d" % i for i in range(10000)
                    if c.owner[topo.keyslot("lock:own:%d" % i)] == owner)
        slot = topo.keyslot(leak)
        c.load([("SET", leak, "tok")])
        for n in c.nodes:
            n.client().config_set("cluster-require-full-coverage", "no")
            if incremental == "on":
                n.client().config_set("notify-keyspace-events", "KEA")
        url_node = next(n for n in c.nodes if n.port != owner)
        ag = self.start_agent(targets=[("c", "redis://127.0.0.1:%d/0" % url_node.port)],
                              scan_interval="500ms", leak_grace="1s", max_hold="1h",
                              target_extra={"mode": "cluster", "incremental": incremental})
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks_leaked", target="c") == 1,
                    30, desc="the leak counted")
        c.by_port[owner].client().execute_command("CLUSTER", "DELSLOTS", slot)
        ag.wait_for(lambda: any(v == 0 for _, v in h.select(ag.metrics(), "lockwatch_shard_up",
                                                            target="c")),
                    15, desc="the owner's shard down")
        end = time.monotonic() + 3
        while time.monotonic() < end:
            st, lk = ag.lock(leak, target="c")
            self.assertEqual(st, 200, lk)
            self.assertTrue(lk.get("stale"), lk)
            self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks_leaked", target="c"), 1)
            time.sleep(0.25)
        # lockctl list says so too (a red-team: "moving between nodes: run
        # list again", though nothing moves)
        p = topo.lockctl(["-c", ag.config_path, "-t", "c", "--agent", "off", "--json", "list",
                          "--state", "all"])
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual((doc["keys_not_read"], doc["keys_not_served_by_their_node"],
                          doc["slots_unserved"], doc["slots_moved"]), (1, 1, None, False), doc)
        p = topo.lockctl(["-c", ag.config_path, "-t", "c", "--agent", "off", "list"])
        self.assertIn(b"their node says no node serves their slot, though the cluster names it",
                      b" ".join(p.stdout.split()))

    def test_lockctl_list_says_the_slots_moved_while_it_listed(self):
        # a red-team: during a resharding lockctl list missed the keys that
        # moved between two nodes' SCANs and said nothing (complete: true)
        c = topo.start_cluster(self, primaries=3)
        c.load([("SET", "lock:mv:%d" % i, "tok", "PX", 600000) for i in range(20000)])
        empty = next(s for s in range(16384) if c.by_port[c.owner[s]].client()
                     .execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0)
        dst = next(n for n in c.nodes if n.port != c.owner[empty])
        dst_id = dst.client().execute_command("CLUSTER", "MYID")
        cfg = topo.write_file(h._mkdtemp("lw-mv-"), "lw.ini",
                              "[target c]\nurl = redis://127.0.0.1:%d/0\nmode = cluster\n"
                              "patterns = lock:*\nscan_duty = 3%%\n" % c.nodes[0].port)
        ctl = [topo.LOCKCTL, "-c", cfg, "-t", "c", "--agent", "off", "--json", "list"]
        p = subprocess.Popen(ctl, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.5)
        for n in c.nodes:           # an empty slot changes hands: no key moves
            n.client().execute_command("CLUSTER", "SETSLOT", empty, "NODE", dst_id)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        doc = json.loads(out)
        self.assertTrue(doc["slots_moved"], {k: v for k, v in doc.items() if k != "locks"})
        p = subprocess.run(ctl[:-2] + ["list"], stdout=subprocess.PIPE, timeout=120)
        self.assertNotIn(b"slots moved", p.stdout)      # nothing moves now

    def test_shard_never_read_is_no_blind_target(self):
        """A shard down since the agent started has no last success (its
        stale entry's last_success is null), but the target is scanned:
        lockctl, when it cannot read the cluster itself, shows the other
        shards' locks from the agent, not "nothing known"."""
        c = topo.start_cluster(self, primaries=3)
        # a shard other than the node the target's url names (discovery
        # starts there), and a lock on each side
        lost = next("lock:sl:a%d" % i for i in range(100)
                    if c.owner[topo.keyslot("lock:sl:a%d" % i)] != c.nodes[0].port)
        victim = c.by_port[c.owner[topo.keyslot(lost)]]
        other = next("lock:sl:b%d" % i for i in range(100)
                     if c.owner[topo.keyslot("lock:sl:b%d" % i)] != victim.port)
        c.load([("SET", lost, "tok"), ("SET", other, "tok", "PX", "600000")])
        victim.kill()
        ag = self.start_agent(targets=[("c", c.url)], scan_interval="500ms",
                              leak_grace="1s", max_hold="1h", target_extra={"mode": "cluster"})

        def shard_stale():
            st, body = ag.get_json("/api/v1/locks?state=all")
            return body if st == 200 and body["stale"] and body["count"] == 1 else None
        body = ag.wait_for(shard_stale, 30, desc="the other shards read, one stale")
        self.assertEqual([l["key"] for l in body["locks"]], [other], body)
        self.assertIn("shard", body["stale"][0], body)
        self.assertIsNone(body["stale"][0]["last_success_ms"], body)
        r = topo.lockctl(["-c", ag.config_path, "list"])
        self.assertEqual(r.returncode, 3, r)
        self.assertNotIn(b"NOTHING KNOWN", r.stdout)
        self.assertIn(other.encode(), r.stdout)


if __name__ == "__main__":
    h.main()
