# SPDX-License-Identifier: BSD-3-Clause
# run-all: split (tests of 0.2-22 s, each with its own servers; their time bounds
#   - within 2 s of a TTL, 3 s of a flush, 20 s of a forged message - have ample room, and
#   the four list-then-watch tests, which churn Redis as fast as one client writes, run as
#   heavy ones)
"""Follow mode's proof of freshness (issues 22 and 29): the view the agent
serves from keyspace notifications matches Redis, key for key, even when
the notifications cannot be trusted, say nothing, or arrive while a full
scan runs.

- list-then-watch: a full scan during churn (the subscriber killed mid-
  churn, three rounds; a flood past the pending cap; a Sentinel failover;
  every cluster shard's subscriber killed) ends with the same lock keys
  as Redis (issue 29's repro, scaled: 200k noise keys, 60k a cluster
  shard; 5,000 churned lock keys, 3,000 on Sentinel and cluster).  The
  churn stops when that full scan ends, so a key it got wrong is put
  right only by the events kept while it ran: an agent that drops them
  fails each of the four (7-285 keys differ); bench/follow --part
  fullscan runs the repro at the issue's size;
- a fake PUBLISH, or a restart that lost the setting, is no proof that
  notifications flow: a new leak is reported within 20 s;
- notifications turned off under the agent: a new leak and a deleted lock
  are right within 2 x scan_interval + leak_grace + 2 s, the log saying
  why; an ACL that denies INFO is named in /readyz;
- FLUSHDB, FLUSHALL (sync and ASYNC) and SWAPDB, which send no per-key
  events, a full sync from another primary (REPLICAOF) and a CONFIG
  RESETSTAT that hides a flush or the setting off and on: the view
  matches Redis within 2 x scan_interval;
- a lock whose TTL ran out leaves the API within 2 s of its deadline,
  with no read of the key;
- 2,000 cluster slots resharded with 330 locks held: no stretch over 2 s
  with a wrong count;
- keys gone from one cluster primary with no notification (DEBUG RELOAD
  NOSAVE), the others agreeing with the view: fewer keys than locks
  there, twice in a row, is seen within 2 x scan_interval;
- a red-team trial's two ways past the check (the key count unchanged,
  the reconcile an hour away): DEBUG RELOAD NOSAVE after a SAVE and
  announced changes (seen as DEBUG's calls), and the setting off and on
  around unannounced writes, then CONFIG RESETSTAT and more INFO calls
  than before, twice (the first seen as config|resetstat's count, 0 to
  1; the second, which leaves it 1, as a new connection's client ID
  less total_connections_received, which a reset widens and no call
  narrows): the view matches Redis within 2 x scan_interval + 2 s, the
  log saying why; with INFO denied, /readyz still says unchecked.
Each prints its figure.
"""

import datetime
import random
import time

import subprocess
import threading

import harness as h
import topo

NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet", "--enable-debug-command", "local"]
FOLLOW_ACL = ["+psubscribe", "+info", "&__keyspace@0__:lock:*",
              "&__keyspace@0__:lockwatch:client:*"]


agent_keys = h.agent_lock_keys
redis_keys = h.redis_lock_keys


class FollowFresh(h.TestCase):

    def following(self, ag):
        return h.msum(ag.metrics(), "lockwatch_follow_active", target="main") == 1

    def wait_following(self, ag, timeout=30):
        ag.wait_for(lambda: self.following(ag), timeout, desc="lockwatch_follow_active == 1")

    def state(self, ag, key):
        st, lk = ag.lock(key)
        return lk if st == 200 else None

    def wait_match(self, ag, c, timeout, desc):
        """Wait until the agent's lock keys are Redis's (those of client c, or
        what c() returns); the seconds it took."""
        t0 = time.monotonic()
        last = [None]
        theirs = c if callable(c) else lambda: redis_keys(c)

        def same():
            a, r = agent_keys(ag), theirs()
            last[0] = (len(a), len(r), sorted(a ^ r)[:5])
            return a == r
        try:
            ag.wait_for(same, timeout, interval=0.1, desc=desc)
        except AssertionError:
            raise AssertionError("%s: agent/redis %r" % (desc, last[0]))
        return time.monotonic() - t0

    # ---- issue 29: list-then-watch ------------------------------------------------

    @staticmethod
    def churn_write(c, k, rnd):
        r = rnd.random()
        if r < 0.4:
            c.set(k, "t", px=500)
        elif r < 0.8:
            c.set(k, "t", px=60000)
        else:
            c.delete(k)

    def churn(self, write, before, nkeys, trigger, scanned, seed=29, cap=60):
        """Lock writes on nkeys keys lock:churn:<n>, one command at a time
        (write(key, rnd)): for `before` seconds, then trigger() (which sets
        off a full scan), then until scanned() says that full scan ended.
        The churn stops there: a key the scan got wrong is not written
        again, so only the events kept while it ran can put it right (a
        churn that goes on after the scan heals what the scan lost, and a
        test that drops them passes).  (writes, writes in the scan's
        window, the window's seconds)."""
        rnd = random.Random(seed)
        t0 = time.monotonic()
        fired, check, writes = None, 0.0, 0
        while True:
            now = time.monotonic()
            if fired is None and now - t0 >= before:
                trigger()
                fired, at = time.monotonic(), writes
            elif fired is not None and now >= check:
                if scanned():
                    break
                self.assertLess(now - fired, cap, "no full scan ended within %ds" % cap)
                check = now + 0.2
            write("lock:churn:%d" % rnd.randrange(nkeys), rnd)
            writes += 1
        return writes, writes - at, time.monotonic() - fired

    def same_keys(self, ag, theirs, what, figures):
        a, r = agent_keys(ag), theirs()
        writes, inside, secs = figures
        same = "the same keys" if a == r else "%d keys differ" % len(a ^ r)
        print("%s: agent/redis %d/%d locks, %s; %d writes, %d of them from the trigger to the "
              "full scan's end (%.1fs)" % (what, len(a), len(r), same, writes, inside, secs))
        self.assertEqual(a, r, "%s: agent/redis %d/%d, missing %r, extra %r"
                         % (what, len(a), len(r), sorted(r - a)[:5], sorted(a - r)[:5]))

    @staticmethod
    def reclaim(*clients):
        # Redis reclaims what expired (one SCAN), as in the repro
        for c in clients:
            for _ in c.scan_iter(count=10000):
                pass

    # run-all: heavy (a core or more while it churns; measures no time)
    def test_full_scan_during_churn_keeps_every_change(self):
        # issue 29's repro, scaled (200k noise keys, not 2M: bench/follow
        # --part fullscan runs it at the size), three rounds
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        c.execute_command("DEBUG", "POPULATE", 200000, "noise")
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"incremental": "on", "reconcile_interval": "1h"})
        self.wait_following(ag)
        killer = rs.client()
        for rnd in range(3):
            base = ag.scans_ok()
            figures = self.churn(lambda k, r: self.churn_write(c, k, r), 2, 5000,
                                 lambda: killer.execute_command("CLIENT", "KILL", "TYPE",
                                                                "pubsub"),
                                 lambda: ag.scans_ok() > base, seed=29 + rnd)
            self.reclaim(c)
            time.sleep(2)
            self.same_keys(ag, lambda: redis_keys(c), "subscriber killed, round %d" % rnd,
                           figures)
            self.wait_following(ag)

    # run-all: heavy (churns Redis; CLIENT PAUSE makes the flood meet a busy agent)
    def test_full_scan_after_a_pending_overflow_keeps_every_change(self):
        # the same, the full scan set off by a flood past the pending cap
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        c.execute_command("DEBUG", "POPULATE", 200000, "noise")
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"incremental": "on", "reconcile_interval": "1h"})
        self.wait_following(ag)
        flooder = rs.client()
        flood = ("for i = 1, tonumber(ARGV[1]) do redis.call('SET', 'lock:flood:' .. i, 't', "
                 "'PX', 3000) end")

        def flood_while_paused():
            # CLIENT PAUSE in the flood's read stalls the agent's re-reads
            # (not the notifications Redis writes out) for 3 s, so the flood
            # fills its pending set however fast the agent drains (a starved
            # agent beside other tests drained it as it came, never capped)
            pipe = flooder.pipeline(transaction=False)
            pipe.eval(flood, 0, 150000)
            pipe.execute_command("CLIENT", "PAUSE", "3000", "ALL")
            pipe.execute()
        # the count is published with the full scan's view
        overflowed = lambda: h.msum(ag.metrics(), "lockwatch_follow_overflows_total",
                                    target="main") >= 1
        figures = self.churn(lambda k, r: self.churn_write(c, k, r), 2, 5000,
                             flood_while_paused, overflowed)
        time.sleep(max(0.0, 3.5 - figures[2]))      # the flood's keys expired
        self.reclaim(c)
        time.sleep(2)
        self.same_keys(ag, lambda: redis_keys(c), "pending overflow", figures)

    # run-all: heavy (a core or more while it churns; measures no time)
    def test_full_scan_after_a_sentinel_failover_keeps_every_change(self):
        # the same, the full scan on the new primary after a failover mid-churn
        primary = self.start_redis(args=NOTIFY)
        replica = self.start_redis(args=NOTIFY + ["--replicaof", "127.0.0.1",
                                                  str(primary.port)])
        primary.client().execute_command("DEBUG", "POPULATE", 200000, "noise")
        h.wait_until(lambda: replica.client().info("replication").get(
            "master_link_status") == "up", 30, desc="replica in sync")
        sentinels = [topo.Sentinel(primary.port) for _ in range(3)]
        for s in sentinels:
            self.addCleanup(s.kill)

        def ready(s):
            flat = s.client().execute_command("SENTINEL", "MASTER", "mymaster")
            info = {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}
            return len(s.replicas()) == 1 and int(info["num-other-sentinels"]) == 2
        for s in sentinels:
            h.wait_until(lambda s=s: ready(s), 30, desc="sentinel :%d ready" % s.port)
        ag = self.start_agent(targets=[("main", "redis://127.0.0.1:1/0")],
                              scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={
                                  "mode": "sentinel", "incremental": "on",
                                  "reconcile_interval": "1h",
                                  "sentinels": ",".join("127.0.0.1:%d" % s.port
                                                        for s in sentinels),
                                  "master_name": "mymaster"})
        self.wait_following(ag)
        rc = replica.client()
        cur = [primary.client()]

        def fail_over():
            # the writes go on on the new primary as soon as it is one, so
            # that they fall in the agent's full scan there
            sentinels[0].client().execute_command("SENTINEL", "FAILOVER", "mymaster")
            h.wait_until(lambda: rc.info("replication")["role"] == "master", 30,
                         interval=0.02, desc="replica is primary")
            cur[0] = rc
        # the agent's full scan of the new primary ended: its SCAN calls
        # there (the only ones: the test's own come after) stopped, and a
        # scan ended well since the failover
        base = ag.scans_ok()
        last = [None]

        def scanned():
            n = rc.info("commandstats").get("cmdstat_scan", {}).get("calls", 0)
            done = n > 0 and n == last[0] and ag.scans_ok() > base
            last[0] = n
            return done
        figures = self.churn(lambda k, r: self.churn_write(cur[0], k, r), 3, 3000, fail_over,
                             scanned, seed=30)
        self.reclaim(rc)
        time.sleep(2)
        self.same_keys(ag, lambda: redis_keys(rc), "Sentinel failover", figures)

    # run-all: heavy (a core or more while it churns; measures no time)
    def test_full_scan_of_a_cluster_during_churn_keeps_every_change(self):
        # the same on a cluster: every shard's subscriber killed mid-churn
        from redis.cluster import RedisCluster
        cl = topo.start_cluster(self, primaries=3)
        for n in cl.nodes:
            n.client().config_set("notify-keyspace-events", "Kg$lshzxet")
        # 60k noise keys a shard, so that the full scan takes a while
        for p in cl.primaries():
            tag = next("n%d" % i for i in range(100000)
                       if cl.owner[topo.keyslot("{n%d}" % i)] == p)
            cp = cl.by_port[p].client()
            for j in range(0, 60000, 2000):
                cp.mset({"noise:{%s}:%d" % (tag, i): "v" for i in range(j, j + 2000)})
        ag = self.start_agent(targets=[("main", cl.url)], scan_interval="1s", leak_grace="1h",
                              max_hold="1h", target_extra={"mode": "cluster", "incremental": "on",
                                                           "reconcile_interval": "1h"})
        self.wait_following(ag)
        rc = RedisCluster(host="127.0.0.1", port=cl.nodes[0].port)
        primaries = [cl.by_port[p].client() for p in cl.primaries()]

        def kill_all():
            for c in primaries:
                c.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        base = ag.scans_ok()
        figures = self.churn(lambda k, r: self.churn_write(rc, k, r), 2, 3000, kill_all,
                             lambda: ag.scans_ok() > base, seed=31)
        self.reclaim(*primaries)
        time.sleep(2)
        self.same_keys(ag, lambda: set().union(*(redis_keys(c) for c in primaries)),
                       "cluster, every shard's subscriber killed", figures)

    # ---- expired but not reclaimed ------------------------------------------------------

    def test_a_lock_whose_ttl_ran_out_leaves_without_a_read(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        # Redis reclaims (and announces) an expired key only when it meets
        # it: with active expiry off, never by itself
        c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1s", max_hold="1h",
                              target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        c.set("lock:e", "t", px=3000)
        deadline = time.monotonic() + 3.0
        ag.wait_for(lambda: self.state(ag, "lock:e"), 2, desc="lock:e seen")
        reads = c.info("commandstats").get("cmdstat_type", {}).get("calls", 0)
        ag.wait_for(lambda: ag.lock("lock:e")[0] == 404, 6, interval=0.05,
                    desc="lock:e gone after its TTL")
        late = time.monotonic() - deadline
        print("lock left the API %.2fs after its deadline" % late)
        self.assertGreater(late, -0.3, "gone before its TTL ran out")
        self.assertLess(late, 2.0)
        self.assertEqual(c.info("commandstats").get("cmdstat_type", {}).get("calls", 0), reads,
                         "the key was read again")
        self.assertEqual(c.exists("lock:e"), 0)

    def test_a_quiet_followed_view_is_proven_by_its_checks(self):
        """Following, with no lock changing: every freshness check that
        passes moves the target's last success (a `time() - last_success`
        alert holds); a stalled server stops it, and the view goes stale."""
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        c.set("lock:quiet", "t", px=600000)
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"reconcile_interval": "1h", "command_timeout": "1s"})
        self.wait_following(ag)

        def last():
            return h.msum(ag.metrics(), "lockwatch_target_last_success_timestamp_seconds",
                          target="main")
        scanned = h.msum(ag.metrics(), "lockwatch_last_scan_timestamp_seconds", target="main")
        first = last()
        time.sleep(3.5)
        now = last()
        print("quiet follow: last success moved %.1fs in 3.5s" % (now - first))
        self.assertGreaterEqual(now - first, 2.0)
        self.assertGreater(time.time() - now, -1.0)
        self.assertLess(time.time() - now, 2.5)
        # the checks are no scan: the last full scan stays as it was
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_last_scan_timestamp_seconds",
                               target="main"), scanned)
        # a stall: no check passes, the last success stays, the view goes stale
        stall = subprocess.Popen(["redis-cli", "-p", str(rs.port), "DEBUG", "SLEEP", "5"],
                                 stdout=subprocess.DEVNULL)
        try:
            t0 = time.monotonic()
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_target_up", target="main") == 0,
                        5, interval=0.1, desc="target down during the stall")
            print("stall: target down after %.1fs" % (time.monotonic() - t0))
            self.assertLessEqual(last(), time.time() - (time.monotonic() - t0) + 1.0)
        finally:
            stall.wait(10)

    def test_a_frozen_server_is_stale_within_one_check(self):
        """Following a server that stops answering (SIGSTOP: its socket
        accepts, nothing replies): the check that waits command_timeout for
        it is the scan that failed, so the view is stale within
        scan_interval + command_timeout of its last proof (README "The last
        proof"), not after a second wait on a new connection; the reason
        is the check's own."""
        rs = self.start_redis(args=NOTIFY)
        rs.client().set("lock:frozen", "t", px=600000)
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"reconcile_interval": "1h",
                                            "command_timeout": "2s"})
        self.wait_following(ag)
        rs.pause()
        try:
            def stale():
                st, body = ag.get_json("/api/v1/locks")
                return body["stale"][0] if body["stale"] else None
            entry = ag.wait_for(stale, 15, interval=0.1, desc="the view marked stale")
        finally:
            rs.resume()
        since = datetime.datetime.strptime(entry["stale_since"], "%Y-%m-%dT%H:%M:%S.%fZ")
        since = since.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
        gap = since - entry["last_success_ms"]
        print("frozen server: stale %.1fs after the last proof (scan_interval 1s + "
              "command_timeout 2s)" % (gap / 1000.0))
        self.assertNotIn("connection setup", entry["reason"])
        self.assertIn("timed out", entry["reason"])
        # one wait of 2 s after at most 1 s, not two: 5 s and more
        self.assertLess(gap, 4500, entry)
        st, lk = ag.lock("lock:frozen")
        self.assertEqual(st, 200)
        self.assertTrue(lk["stale"], lk)

    def proxied_agent(self, rs, leak_grace):
        """An agent following rs through a topo.TcpProxy (scan_interval and
        command_timeout 1 s, no reconcile): (proxy, agent), following."""
        proxy = topo.TcpProxy(rs.port)
        self.addCleanup(proxy.kill)
        ag = self.start_agent(targets=[("main", "redis://127.0.0.1:%d/0" % proxy.port)],
                              scan_interval="1s", leak_grace=leak_grace, max_hold="1h",
                              target_extra={"reconcile_interval": "1h",
                                            "command_timeout": "1s"})
        self.wait_following(ag)
        return proxy, ag

    def test_a_subscriber_dropped_on_the_way_is_found(self):
        """A proxy, NAT or conntrack entry that drops the subscriber's
        connection without closing it: the data connection still answers,
        so every freshness check passed and the view was served as current
        until the next reconcile (1 h).  The subscriber's PING, unanswered
        for command_timeout, ends the subscription: a new leak made after
        the drop is reported within the PING's period + command_timeout +
        a full scan + leak_grace, the log naming the silence.  While new
        subscriptions are dropped too (their PSUBSCRIBE gets no answer),
        the target scans, and it follows again once one is answered: a
        subscription that timed out is no refusal, so following is not
        given up until a restart."""
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        c.set("lock:before", "t", px=600000)
        proxy, ag = self.proxied_agent(rs, leak_grace="1s")
        ag.wait_for(lambda: self.state(ag, "lock:before"), 10, desc="lock:before seen")
        self.assertEqual(proxy.silence(b"PSUBSCRIBE"), 1, "one subscriber connection")
        proxy.freeze = b"PSUBSCRIBE"
        took = self.leak_reported_within(ag, c, "lock:after", 15)
        print("subscriber dropped without a close: a new leak reported in %.1fs (PING every "
              "0.5s, command_timeout 1s, leak_grace 1s)" % took)
        self.assertLess(took, 6)
        self.assertIn("no answer to a PING within command_timeout", ag.log_tail(200))
        ag.wait_for(lambda: "subscribing again at the next full scan" in ag.log_tail(200), 10,
                    desc="a new subscription timed out, to be tried again")
        self.assertFalse(self.following(ag))
        proxy.freeze = None
        self.wait_following(ag)
        c.set("lock:later", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:later"), 5, desc="followed again")

    def test_a_subscriber_behind_is_said_not_dropped(self):
        """Notifications that come slower than Redis sends them (a slow link:
        the proxy passes the subscriber 20 KB/s while writes make ~60 KB/s of
        them): the PING's answer is late though bytes keep coming.  That is
        no dropped connection: the view is marked behind (the API's stale
        entry, /readyz, last_success frozen) while the subscription stays,
        and current again, without a full scan, once it catches up; behind
        for over ten times command_timeout, it is lost, and a full scan
        starts over."""
        rs = self.start_redis(args=NOTIFY)
        proxy, ag = self.proxied_agent(rs, leak_grace="1h")
        scans = ag.scans_ok()
        stop = threading.Event()

        def write():
            w = rs.client()
            i = 0
            while not stop.is_set():
                pipe = w.pipeline(transaction=False)
                for _ in range(50):
                    i += 1
                    pipe.set("lock:behind:%s:%d" % ("x" * 60, i % 2000), "t", px=600000)
                pipe.execute()
                time.sleep(0.1)
        writer = threading.Thread(target=write, daemon=True)
        self.addCleanup(writer.join, 5)
        self.addCleanup(stop.set)

        def behind():
            st, body = ag.get_json("/api/v1/locks?limit=1")
            return [e for e in body["stale"] if "behind" in e["reason"]] or None
        proxy.throttle = (b"PSUBSCRIBE", 20000)
        writer.start()
        (entry,) = ag.wait_for(behind, 10, interval=0.2, desc="the view marked behind")
        self.assertIn("notifications keep coming", entry["reason"])
        st, _, ready = ag.get("/readyz")
        self.assertEqual(st, 200)
        self.assertIn(b"behind", ready)
        t0 = time.monotonic()
        proof = h.msum(ag.metrics(), "lockwatch_target_last_success_timestamp_seconds",
                       target="main")
        # caught up: current again, the same subscription, no full scan
        proxy.throttle = None
        ag.wait_for(lambda: not behind(), 10, interval=0.2, desc="current again")
        print("subscriber behind: said, then current again %.1fs after the link was fast" %
              (time.monotonic() - t0))
        self.assertEqual(ag.scans_ok(), scans, "a full scan for a subscriber behind")
        self.assertTrue(self.following(ag))
        self.assertNotIn("nothing else comes", ag.log_tail(200))
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_target_last_success_timestamp_seconds",
                                   target="main") > proof, 5, desc="proven again")
        # behind for good: lost after 10 x command_timeout, a full scan
        proxy.throttle = (b"PSUBSCRIBE", 20000)
        ag.wait_for(lambda: ag.scans_ok() > scans, 30, desc="a full scan after 10 s behind")
        self.assertIn("is too far behind", ag.log_tail(200))
        stop.set()
        proxy.throttle = None
        self.wait_following(ag, timeout=30)

    # ---- issue 22: trust and what notifications cannot say ----------------------------

    def acl_agent(self, rs, extra, **kw):
        pw = "s3cret-fresh"
        rs.client().acl_setuser("scan", enabled=True, passwords=["+" + pw], reset=True)
        rs.client().execute_command("ACL", "SETUSER", "scan", *(h.SCANNER_ACL + extra))
        return self.start_agent(targets=[("main", "redis://scan@127.0.0.1:%d/0" % rs.port)],
                                scan_interval="1s", leak_grace="1s", max_hold="1h",
                                target_extra=dict({"password_file": h.password_file(pw),
                                                   "reconcile_interval": "1h"}, **kw))

    def leak_reported_within(self, ag, c, key, timeout):
        """SET key with no TTL: seconds until the API says it is leaked."""
        c.set(key, "t")
        t0 = time.monotonic()
        ag.wait_for(lambda: "leaked" in (self.state(ag, key) or {}).get("states", []),
                    timeout, desc="%s reported leaked" % key)
        return time.monotonic() - t0

    def test_a_fake_publish_is_no_proof(self):
        # the README's ACL user (no CONFIG GET) and no notifications at all:
        # one PUBLISH on a keyspace channel must not make the agent trust
        # a silent channel
        rs = self.start_redis(args=["--enable-debug-command", "local"])
        c = rs.client()
        ag = self.acl_agent(rs, FOLLOW_ACL, incremental="on")
        self.wait_following(ag)
        c.publish("__keyspace@0__:lock:zzz", "set")
        time.sleep(1.5)
        st, _, body = ag.get("/readyz")
        self.assertIn(b"on trust", body)
        took = self.leak_reported_within(ag, c, "lock:fake", 20)
        print("fake PUBLISH: a new leak reported in %.1fs" % took)
        self.assertLess(took, 20)

    def test_a_setting_lacking_a_class_is_no_proof(self):
        # the README's ACL user (no CONFIG GET) and "Kgx": a SET PX is
        # announced by its "expire", a SET without a TTL (a leak) not at
        # all.  The expire of a changed key proves generic events only:
        # the agent keeps a full scan every scan_interval, says which
        # class it never saw, and sees a new leak by a scan
        rs = self.start_redis(args=["--notify-keyspace-events", "Kgx"])
        c = rs.client()
        ag = self.acl_agent(rs, FOLLOW_ACL)
        self.wait_following(ag)
        for i in range(20):
            c.set("lock:churn:%d" % i, "t", nx=True, px=20000)
        c.delete(*["lock:churn:%d" % i for i in range(10)])
        ag.wait_for(lambda: b"'$' (string)" in ag.get("/readyz")[2], 10,
                    desc="/readyz naming the string class never seen")
        st, _, body = ag.get("/readyz")
        self.assertEqual(st, 200, body)
        self.assertIn(b"on trust", body)
        for n in range(3):
            took = self.leak_reported_within(ag, c, "lock:kgxleak:%d" % n, 15)
            print("Kgx: a new leak reported in %.1fs" % took)
        # once every class a followed key needs has come (the setting
        # fixed), the proof is made and the full scans stop
        c.config_set("notify-keyspace-events", "KA")
        c.set("lock:churn:0", "t2", px=20000)
        ag.wait_for(lambda: b"on trust" not in ag.get("/readyz")[2], 10,
                    desc="proven once a string event came")

    def test_a_forged_proof_is_taken_back_at_the_reconcile(self):
        # no notifications at all, the ACL user: a client that may write
        # and PUBLISH forges the proof (a key it changed, then its
        # message).  The view then misses an unannounced leak until the
        # reconcile, which must take the proof back rather than trust on
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:gone", "t", px=600000)
        ag = self.acl_agent(rs, FOLLOW_ACL, reconcile_interval="4s")
        self.wait_following(ag)
        c.set("lock:forged", "x", px=600000)
        c.publish("__keyspace@0__:lock:forged", "set")
        c.delete("lock:gone")
        c.publish("__keyspace@0__:lock:gone", "del")
        ag.wait_for(lambda: b"on trust" not in ag.get("/readyz")[2], 10,
                    desc="the forged proof taken")
        c.set("lock:blind", "t")
        ag.wait_for(lambda: self.state(ag, "lock:blind"), 15, desc="the reconcile finds it")
        # the next reconcile must not trust on: on trust again (a full scan
        # every scan_interval), or scanning once another finds drift too
        ag.wait_for(lambda: any(w in ag.get("/readyz")[2]
                                for w in (b"on trust", b"not following")), 5,
                    desc="the proof taken back")
        self.assertIn("without a notification, so notifications do not prove", ag.log_tail(100))

    def test_restart_without_the_setting(self):
        # notifications set at run time, lost by a restart; the ACL user
        # cannot CONFIG GET: the restart is no proof either way
        rs = self.start_redis()
        c = rs.client()
        c.config_set("notify-keyspace-events", "Kg$lshzxet")
        ag = self.acl_agent(rs, FOLLOW_ACL)
        self.wait_following(ag)
        c.set("lock:before", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:before"), 5, desc="proof: an event")
        rs.restart()
        c = rs.client()
        rs.client().acl_setuser("scan", enabled=True, passwords=["+s3cret-fresh"], reset=True)
        rs.client().execute_command("ACL", "SETUSER", "scan",
                                    *(h.SCANNER_ACL + FOLLOW_ACL))
        # the agent scanned the restarted server and follows it again ...
        ag.wait_for(lambda: ag.lock("lock:before")[0] == 404, 20, desc="the restart seen")
        self.wait_following(ag)
        # ... and a forged message is all that arrives
        c.publish("__keyspace@0__:lock:zzz", "set")
        time.sleep(1.5)
        took = self.leak_reported_within(ag, c, "lock:after", 20)
        print("restart without the setting: a new leak reported in %.1fs" % took)
        self.assertLess(took, 20)

    def test_info_denied_is_named(self):
        rs = self.start_redis(args=NOTIFY)
        ag = self.acl_agent(rs, [a for a in FOLLOW_ACL if a != "+info"])
        self.wait_following(ag)
        rs.client().set("lock:proof", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:proof"), 5, desc="proof: an event")
        ag.wait_for(lambda: b"INFO is denied" in ag.get("/readyz")[2], 10,
                    desc="/readyz names the unchecked freshness")
        self.assertEqual(ag.get("/readyz")[0], 200)
        self.assertIn("add +info", ag.log_tail(50))
        # no check, so a full scan every scan_interval proves the view: a
        # FLUSHALL (no per-key event) is seen, and the proof moves
        c = rs.client()
        reconciles = h.msum(ag.metrics(), "lockwatch_scans_total", target="main", result="ok")
        c.flushall()
        self.wait_match(ag, c, 2 * 1.0 + 2, "view matches Redis after FLUSHALL without INFO")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_scans_total", result="ok",
                                   target="main") >= reconciles + 2, 5,
                    desc="a full scan every scan_interval")

    def notifications_off(self, ag, c, scan_interval=1.0, leak_grace=1.0):
        c.set("lock:gone", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:gone"), 5, desc="lock:gone seen")
        c.config_set("notify-keyspace-events", "")
        c.set("lock:silent", "t")
        c.delete("lock:gone")
        t0 = time.monotonic()
        ag.wait_for(lambda: "leaked" in (self.state(ag, "lock:silent") or {}).get("states", [])
                    and ag.lock("lock:gone")[0] == 404, 15, interval=0.1,
                    desc="new leak and deleted lock right")
        took = time.monotonic() - t0
        bound = 2 * scan_interval + leak_grace + 2
        print("notifications off: new leak and deleted lock right in %.1fs (bound %.1fs)"
              % (took, bound))
        self.assertLess(took, bound)
        log = ag.log_tail(50)
        # the log names why: the CONFIG SET seen, or the setting found lacking
        self.assertTrue("CONFIG SET (notify-keyspace-events may have changed) ran" in log or
                        'notify-keyspace-events ""' in log, log)

    def test_notifications_turned_off_under_the_agent(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1s", max_hold="1h",
                              target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        self.notifications_off(ag, c)
        # where CONFIG GET is allowed, each check reads the setting itself
        # (first): so it is seen on Redis 6 too, whose commandstats cannot
        # tell a CONFIG SET from the agent's own CONFIG GET
        self.assertIn('notify-keyspace-events is now ""', ag.log_tail(50))

    def test_notifications_turned_off_acl_without_config_get(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        ag = self.acl_agent(rs, FOLLOW_ACL)
        self.wait_following(ag)
        c.set("lock:proof", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:proof"), 5, desc="proof: an event")
        self.notifications_off(ag, c)

    def test_flushes_and_swapdb_send_no_events(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1s", max_hold="1h",
                              target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        c1 = rs.client(db=1)
        for how in ("FLUSHDB", "FLUSHALL", "FLUSHALL ASYNC", "FLUSHDB ASYNC", "SWAPDB"):
            for i in range(20):
                c.set("lock:%d" % i, "t")
            c1.set("lock:db1", "t", px=600000)
            self.wait_match(ag, c, 5, "%s: locks seen" % how)
            if how == "SWAPDB":
                c.execute_command("SWAPDB", 0, 1)
            else:
                c.execute_command(*how.split())
            took = self.wait_match(ag, c, 2 * 1.0 + 1, "view matches Redis after " + how)
            print("%s: view matched Redis in %.2fs" % (how, took))
            c.flushall()
            c1.flushall()


    def test_data_replaced_or_stats_reset_without_events(self):
        """A full sync from another primary (REPLICAOF) replaces the data
        and sends no per-key event; CONFIG RESETSTAT hides a flush, or the
        setting turned off and on, from the call counts (0 before, 0
        after).  Both are seen by the next check: the view matches Redis
        within 2 x scan_interval."""
        rs = self.start_redis(args=NOTIFY)
        other = self.start_redis()
        c, oc = rs.client(), other.client()
        for i in range(50):
            oc.set("junk:%d" % i, "x")
        oc.set("lock:from:other", "t", px=600000)
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1s", max_hold="1h",
                              target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        for i in range(10):
            c.set("lock:%d" % i, "t", px=600000)
        self.wait_match(ag, c, 5, "locks seen")
        c.execute_command("REPLICAOF", "127.0.0.1", str(other.port))
        h.wait_until(lambda: c.info("replication").get("master_link_status") == "up", 20,
                     desc="the full sync")
        c.execute_command("REPLICAOF", "NO", "ONE")
        took = self.wait_match(ag, c, 2 * 1.0 + 1, "view matches Redis after a full sync")
        self.assertEqual(agent_keys(ag), {b"lock:from:other"})
        print("REPLICAOF full sync: view matched Redis in %.2fs" % took)

        # the setting off, a delete and a new lock unannounced, the setting
        # back, the statistics reset: the counts say nothing of it
        self.wait_following(ag)
        c.set("lock:keep", "t", px=600000)
        self.wait_match(ag, c, 5, "lock:keep seen")
        c.config_set("notify-keyspace-events", "")
        c.delete("lock:from:other")
        c.set("lock:ghost", "g", px=600000)
        c.config_set("notify-keyspace-events", "Kg$lshzxet")
        c.execute_command("CONFIG", "RESETSTAT")
        took = self.wait_match(ag, c, 2 * 1.0 + 1, "view matches Redis after CONFIG RESETSTAT")
        self.assertEqual(agent_keys(ag), {b"lock:keep", b"lock:ghost"})
        print("CONFIG RESETSTAT: view matched Redis in %.2fs" % took)

    # ---- a red-team trial: DEBUG RELOAD, a reset behind INFO calls -------------------------

    def followed_ten(self):
        """A Redis with DEBUG, ten locks, an agent following it (checks every
        1 s, the reconcile an hour away) that sees them: (client, agent)."""
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        c.mset({"lock:%d" % i: "t" for i in range(10)})
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"reconcile_interval": "1h"})
        self.wait_following(ag)
        self.wait_match(ag, c, 5, "locks seen")
        return c, ag

    def test_debug_reload_is_seen(self):
        c, ag = self.followed_ten()
        bound = 2 * 1.0 + 2
        for rnd in range(2):
            c.save()
            # announced: two locks go, two others come; the key count stays
            c.delete("lock:0", "lock:1")
            c.mset({"lock:new:%d:0" % rnd: "t", "lock:new:%d:1" % rnd: "t"})
            self.wait_match(ag, c, 5, "the announced changes seen")
            before = redis_keys(c)
            loaded = c.info("persistence")["rdb_last_load_keys_loaded"]
            c.execute_command("DEBUG", "RELOAD", "NOSAVE")
            after = redis_keys(c)
            self.assertNotEqual(before, after, "DEBUG RELOAD NOSAVE loaded the same keys")
            self.assertEqual(len(before), len(after))
            took = self.wait_match(ag, c, bound, "view matches Redis after DEBUG RELOAD")
            print("DEBUG RELOAD NOSAVE %d (rdb_last_load_keys_loaded %s -> %s): view matched "
                  "Redis in %.2fs (bound %.1fs)" % (rnd + 1, loaded, c.info("persistence")[
                      "rdb_last_load_keys_loaded"], took, bound))
            self.assertIn("DEBUG (RELOAD and LOADAOF load the data again", ag.log_tail(60))
            self.wait_following(ag)
            c.delete(*redis_keys(c))
            c.mset({"lock:%d" % i: "t" for i in range(10)})
            self.wait_match(ag, c, 5, "locks seen again")

    def test_stats_reset_behind_info_calls_is_seen(self):
        c, ag = self.followed_ten()
        bound = 2 * 1.0 + 2
        for rnd in range(2):
            calls = c.info("commandstats")["cmdstat_info"]["calls"]
            # the trial's sequence, between two checks
            c.config_set("notify-keyspace-events", "")
            c.delete("lock:%d" % rnd)
            c.set("lock:ghost:%d" % rnd, "g")
            c.config_set("notify-keyspace-events", "Kg$lshzxet")
            c.execute_command("CONFIG", "RESETSTAT")
            self.assertEqual(c.info("commandstats")["cmdstat_config|resetstat"]["calls"], 1)
            for _ in range(calls + 200):
                c.info("server")
            took = self.wait_match(ag, c, bound, "view matches Redis after CONFIG RESETSTAT "
                                   "and %d INFO calls" % (calls + 200))
            print("CONFIG RESETSTAT %d, then %d INFO calls (%d before): view matched Redis in "
                  "%.2fs (bound %.1fs)" % (rnd + 1, calls + 200, calls, took, bound))
            self.assertIn("the command statistics were reset", ag.log_tail(60))
            self.wait_following(ag)

    def test_info_denied_stays_unchecked_after_a_reload(self):
        rs = self.start_redis(args=NOTIFY)
        ag = self.acl_agent(rs, [a for a in FOLLOW_ACL if a != "+info"])
        self.wait_following(ag)
        c = rs.client()
        c.set("lock:proof", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:proof"), 5, desc="proof: an event")
        ag.wait_for(lambda: b"follow mode unchecked: INFO is denied" in ag.get("/readyz")[2],
                    10, desc="/readyz names the unchecked freshness")
        # a reload is seen all the same: a full scan every scan_interval
        c.save()
        c.set("lock:late", "t", px=600000)
        ag.wait_for(lambda: self.state(ag, "lock:late"), 5, desc="lock:late seen")
        c.execute_command("DEBUG", "RELOAD", "NOSAVE")
        took = self.wait_match(ag, c, 2 * 1.0 + 2, "view matches Redis after DEBUG RELOAD, "
                               "INFO denied")
        print("INFO denied: view matched Redis after DEBUG RELOAD in %.2fs" % took)
        self.assertIn(b"follow mode unchecked", ag.get("/readyz")[2])

    # ---- cluster: a flush on any primary ---------------------------------------------------

    def cluster_keys(self, cl):
        r = set()
        for p in cl.primaries():
            r |= redis_keys(cl.by_port[p].client())
        return r

    def wait_match_cluster(self, ag, cl, timeout, desc):
        return self.wait_match(ag, lambda: self.cluster_keys(cl), timeout, desc)

    def tagged_cluster(self, args=()):
        """A 3-primary cluster with the notifications on, its primaries'
        ports and a hash tag per primary (keys "x:{tag}:n" land there)."""
        cl = topo.start_cluster(self, primaries=3, args=args)
        for n in cl.nodes:
            n.client().config_set("notify-keyspace-events", "Kg$lshzxet")
        prim = cl.primaries()
        tags = {}
        for i in range(100000):
            port = cl.owner[topo.keyslot("{t%d}" % i)]
            tags.setdefault(port, "t%d" % i)
            if len(tags) == len(prim):
                break
        return cl, prim, tags

    def test_cluster_flush_on_any_primary(self):
        # FLUSHDB sends no per-key event: every scan_interval the check
        # reads every primary against a baseline taken before the full scan
        # read a key, so a flush on any shard is seen, even one while
        # another shard is still being scanned.  50 keys written right after
        # each flush keep the key count above the locks followed there: only
        # the FLUSHDB counter tells.
        cl, prim, tags = self.tagged_cluster()
        fill = lambda p, fmt, n, v: cl.by_port[p].client().mset(
            {fmt % (tags[p], i): v for i in range(n)})
        ag = self.start_agent(targets=[("main", cl.url)], scan_interval="1s", leak_grace="1s",
                              max_hold="1h", target_extra={"mode": "cluster", "scan_count": "20",
                                                           "reconcile_interval": "1h"})
        self.wait_following(ag)

        def flush(p):
            cl.by_port[p].client().flushdb()
            fill(p, "noise:{%s}:%d", 50, "v")

        # between full scans, on each primary in turn
        for p in prim:
            for q in prim:
                fill(q, "lock:{%s}:%d", 20, "t")
            self.wait_match_cluster(ag, cl, 5, "locks seen")
            flush(p)
            took = self.wait_match_cluster(ag, cl, 2 * 1.0 + 1,
                                           "view matches Redis after FLUSHDB on :%d" % p)
            print("cluster FLUSHDB on :%d: view matched Redis in %.2fs" % (p, took))

        # while a full scan still reads another shard: the first primary is
        # slow to scan (100,000 keys at SCAN COUNT 20), and a CONFIG SET
        # there starts a full scan (the setting is checked again)
        slow, other = prim[0], prim[1]
        cs = cl.by_port[slow].client()
        for j in range(0, 100000, 2000):
            cs.mset({"noise:{%s}:%d" % (tags[slow], i): "v" for i in range(j, j + 2000)})
        fill(other, "lock:{%s}:%d", 20, "t")
        self.wait_match_cluster(ag, cl, 30, "locks seen")
        scans = lambda: cs.info("commandstats").get("cmdstat_scan", {}).get("calls", 0)
        base = scans()
        cs.config_set("notify-keyspace-events", "Kg$lshzxet")
        ag.wait_for(lambda: scans() > base + 200, 10, interval=0.02,
                    desc="a full scan reading the slow shard")
        flush(other)
        at = scans()
        t0 = time.monotonic()
        time.sleep(0.3)
        self.assertGreater(scans(), at, "the full scan ended before the flush: nothing tested")
        pass_s = max(v for _, v in h.select(ag.metrics(), "lockwatch_shard_scan_duration_seconds",
                                            target="main"))
        bound = 3 * max(pass_s, 1.0) + 2 * 1.0 + 2
        took = self.wait_match_cluster(ag, cl, bound, "view matches Redis after a FLUSHDB "
                                       "during a full scan")
        took = time.monotonic() - t0
        print("cluster FLUSHDB during a full scan (%.1fs a pass): view matched Redis in %.2fs "
              "(bound %.1fs)" % (pass_s, took, bound))

    def test_cluster_keys_gone_silently_on_one_primary(self):
        # keys that leave one primary with no notification (DEBUG RELOAD
        # NOSAVE loads an older RDB: no event; DEBUG's calls are counted
        # now, which sees it first, so the key count is the second sign
        # here: the log names either) leave it with fewer keys than the
        # locks followed there, check
        # after check, while the other primaries agree with the view: the
        # "twice in a row" is that primary's own, so a full scan repairs
        # the view within 2 x scan_interval (a streak shared by every
        # primary, reset by the next one that agrees, never reached 2: the
        # view kept the locks until the hourly reconcile; a soak saw it
        # only when another primary was short by a pending delete too)
        cl, prim, tags = self.tagged_cluster(args=["--enable-debug-command", "local"])
        for p in prim:
            cl.by_port[p].client().mset({"lock:{%s}:%d" % (tags[p], i): "t" for i in range(20)})
        ag = self.start_agent(targets=[("main", cl.url)], scan_interval="1s", leak_grace="1h",
                              max_hold="1h", target_extra={"mode": "cluster",
                                                           "reconcile_interval": "1h"})
        self.wait_following(ag)
        for p in prim:
            c = cl.by_port[p].client()
            c.save()
            c.mset({"lock:{%s}:gone:%d" % (tags[p], i): "t" for i in range(5)})
            self.wait_match_cluster(ag, cl, 5, "the new locks seen on :%d" % p)
            c.execute_command("DEBUG", "RELOAD", "NOSAVE")
            self.assertEqual(len(c.keys("lock:*")), 20, "DEBUG RELOAD NOSAVE kept the new keys")
            t0 = time.monotonic()
            self.wait_match_cluster(ag, cl, 2 * 1.0 + 2, "view matches Redis after 5 keys "
                                    "left :%d silently" % p)
            print("cluster: 5 keys gone silently on :%d: view matched Redis in %.2fs"
                  % (p, time.monotonic() - t0))
        with open(ag.logfile) as f:
            log = f.read()
        self.assertTrue("fewer than the" in log or "DEBUG (RELOAD" in log, log)

    # ---- cluster slot migration ----------------------------------------------------------

    def test_slot_migration_keeps_the_count(self):
        # 2,000 slots move between shards with 330 locks held: MIGRATE
        # announces "del" on the old shard and "restore" on the new, and the
        # re-read on the old shard meets MOVED or ASK: the key is followed
        # there (or re-read once its slot settled), never dropped
        cl = topo.start_cluster(self, primaries=3)
        for n in cl.nodes:
            n.client().config_set("notify-keyspace-events", "Kg$lshzxet")
        nlocks = 330
        cl.load([("SET", "lock:m:%d" % i, "t", "PX", 3600000) for i in range(nlocks)])
        # scan_interval 10s: the topology check (a full scan when it changed)
        # comes too late to hide a lock dropped on MOVED
        ag = self.start_agent(targets=[("main", cl.url)], scan_interval="10s", max_hold="1h",
                              target_extra={"mode": "cluster", "reconcile_interval": "1h"})
        self.wait_following(ag)
        count = lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main")
        ag.wait_for(lambda: count() == nlocks, 10, desc="every lock counted")
        src, dst = cl.primaries()[0], cl.primaries()[1]
        ids = {p: cl.by_port[p].client().execute_command("CLUSTER", "MYID") for p in (src, dst)}
        ids = {p: v.decode() if isinstance(v, bytes) else v for p, v in ids.items()}
        proc = subprocess.Popen([topo.REDIS_CLI, "--cluster", "reshard", "127.0.0.1:%d" % src,
                                 "--cluster-from", ids[src], "--cluster-to", ids[dst],
                                 "--cluster-slots", "2000", "--cluster-yes",
                                 "--cluster-pipeline", "10"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        wrong_since, worst, samples = None, 0.0, 0
        end = time.monotonic() + 120
        while time.monotonic() < end:
            done = proc.poll() is not None
            n = count()
            now = time.monotonic()
            samples += 1
            if n != nlocks:
                wrong_since = wrong_since or now
                worst = max(worst, now - wrong_since)
            else:
                wrong_since = None
            if done and wrong_since is None:
                break
            time.sleep(0.05)
        self.assertEqual(proc.wait(), 0, "redis-cli --cluster reshard failed")
        print("slot migration (2000 slots, %d locks): longest stretch with a wrong count "
              "%.2fs (%d samples)" % (nlocks, worst, samples))
        self.assertLessEqual(worst, 2.0)
        ag.wait_for(lambda: count() == nlocks, 5, desc="every lock counted after")


if __name__ == "__main__":
    h.main()
