# SPDX-License-Identifier: BSD-3-Clause
# run-all: split (thirteen cases of 3-10 s, each with its own servers)
# run-all: quiet (each times how soon LockLostAtFailover fires after the target is back,
#   within 2 x scan_interval + 1 s; little CPU of its own)
"""Locks lost at a failover, restart or flush (issue 26): 20 locks held,
then

- Redis restarted without persistence (scan mode, and follow mode with
  keyspace notifications on): one LockLostAtFailover naming all 20 within
  2 x scan_interval of the target being back, and
  lockwatch_locks_lost_total{cause="restart"} 20;
- a Sentinel failover to a replica that had not received them (its link
  to the primary cut and the replica stopped while the locks are written,
  the primary killed, the replica resumed and promoted): the same, cause
  "failover" (scan and follow mode);
- FLUSHDB under the agent (scan and follow mode): cause "flush"; SWAPDB
  (scan mode): cause "swapdb", "at a SWAPDB on ..."; FLUSHDB of another
  database, a lock released unseen: nothing lost;
- one primary of a 3-primary Redis Cluster restarted without persistence:
  only the locks of its slots are lost, and named;
- a Sentinel failover to an in-sync replica (scan and follow mode), a
  restart with persistence (AOF), and a restart where the locks expired on
  their own: no alert, nothing counted.
Each prints the time from the target being back to the alert.
"""

import os
import time

import harness as h
import test_lockctl as lt
import topo

INTERVAL = 1.0
N = 20
NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet"]
PREFIX = "lock:lost:"


def write_locks(c, n=N, px=600000):
    for i in range(n):
        c.set("%s%02d" % (PREFIX, i), "tok-%02d" % i, px=px)


class LostAtFailover(h.TestCase):

    def lost_alerts(self, ag):
        st, j = ag.get_json("/api/v1/alerts")
        self.assertEqual(st, 200, j)
        return [a for a in j["alerts"] if a["labels"]["alertname"] == "LockLostAtFailover"]

    def lost_total(self, ag, cause=None):
        m = ag.metrics()
        if cause is None:
            return h.msum(m, "lockwatch_locks_lost_total", target="main")
        return h.msum(m, "lockwatch_locks_lost_total", target="main", cause=cause)

    def wait_locks(self, ag, n=N):
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == n, 20,
                    desc="%d locks seen" % n)

    def wait_following(self, ag):
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active", target="main") == 1,
                    30, desc="following keyspace notifications")

    def expect_lost(self, ag, back, cause, what, words=None):
        """One LockLostAtFailover naming all N locks, soon after back; the
        texts name the change "a <cause>" unless words says otherwise."""
        words = words or "a " + cause
        def fired():
            got = self.lost_alerts(ag)
            return got or None
        got = ag.wait_for(fired, 2 * INTERVAL + 10, interval=0.05,
                          desc="LockLostAtFailover after %s" % what)
        took = time.monotonic() - back
        print("%s: LockLostAtFailover %.2fs after the target was back" % (what, took))
        self.assertEqual(len(got), 1, got)
        a = got[0]
        self.assertEqual(a["labels"]["target"], "main")
        self.assertEqual(a["labels"]["severity"], "critical")
        desc = a["annotations"]["description"]
        for i in range(N):
            self.assertIn("%s%02d (" % (PREFIX, i), desc)
        self.assertNotIn(" more", desc)
        self.assertIn("%d locks lost on target main at %s " % (N, words),
                      a["annotations"]["summary"])
        self.assertEqual(self.lost_total(ag, cause), N)
        self.assertEqual(self.lost_total(ag), N)
        # the scan after the target is back, then the alerts' tick (1 s)
        self.assertLess(took, 2 * INTERVAL + 1.0, "fired %.2fs after the target was back" % took)
        self.assertIn("locks lost at %s " % words, ag.log_tail(200))
        # an event a lock on the timeline, oldest hold first
        st, ev = ag.get_json("/api/v1/events?kind=lost_at_failover&target=main")
        self.assertEqual(st, 200, ev)
        events = ev["events"]
        self.assertEqual(sorted(e["key"] for e in events),
                         ["%s%02d" % (PREFIX, i) for i in range(N)])
        held = [e["seconds"] for e in events]
        self.assertEqual(held, sorted(held, reverse=True))
        for i, e in enumerate(events):
            self.assertEqual(e["holder"], "tok-" + e["key"][-2:])
            self.assertEqual(e["severity"], "critical")
            self.assertIn("lost at %s " % words, e["detail"])
            self.assertIn("(%d of %d lost" % (i + 1, N), e["detail"])

    def holding(self, follow, px=600000, args=()):
        """A server, an agent (follow mode or not) and N locks it has seen."""
        rs = self.start_redis(args=(NOTIFY if follow else []) + list(args))
        ag = self.start_agent(rs, scan_interval="%gs" % INTERVAL,
                              target_extra={"incremental": "on" if follow else "off"})
        if follow:
            self.wait_following(ag)
        write_locks(rs.client(), px=px)
        self.wait_locks(ag)
        return rs, ag

    # ---- restart ----------------------------------------------------------------

    def restart(self, follow):
        rs, ag = self.holding(follow)
        rs.restart()            # --save "" --appendonly no: nothing survives
        back = time.monotonic()
        self.expect_lost(ag, back, "restart", "restart (%s mode)" % ("follow" if follow
                                                                     else "scan"))

    def test_restart_scan_mode(self):
        self.restart(follow=False)

    def test_restart_follow_mode(self):
        self.restart(follow=True)

    def test_reported_releases_are_not_lost(self):
        """Scan mode cannot see a release made between its last scan and a
        restart; a holder that reported it (a 6-field `hold` line, and no
        `lost` line) released it: half of the locks released that way just
        before the restart are not counted lost; a release whose holder
        reported the lock lost (`lost` then `hold`, as a release that found
        it gone sends), one reported for another holder, one whose holder
        took the lock again after its release, and the locks no line speaks
        of are."""
        from client_helpers import closed_udp_port
        udp = closed_udp_port()
        rs = self.start_redis()
        ag = self.start_agent(rs, scan_interval="10s", samples="127.0.0.1:%d" % udp)
        c = rs.client()
        write_locks(c)
        self.wait_locks(ag)
        lines = []
        for i in range(10):         # released cleanly, and reported
            c.delete("%s%02d" % (PREFIX, i))
            lines.append(b"lw1 hold %s%02d 1000 app/%d tok-%02d" % (PREFIX.encode(), i, i, i))
        c.delete(PREFIX + "10")     # released, but reported lost first
        lines.append(b"lw1 lost %s10 app/10 tok-10 1000 0 renewal" % PREFIX.encode())
        lines.append(b"lw1 hold %s10 1000 app/10 tok-10" % PREFIX.encode())
        c.delete(PREFIX + "11")     # a report of another holder's release
        lines.append(b"lw1 hold %s11 1000 app/11 tok-other" % PREFIX.encode())
        # released, then taken again by the same holder id (Redisson's
        # "<uuid>:<thread>", a constant): the holding the restart ends is not
        lines.append(b"lw1 hold %s12 1000 app/12 tok-12" % PREFIX.encode())
        lines.append(b"lw1 waiting %s12 app/12 tok-12 ok" % PREFIX.encode())
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"\n".join(lines) + b"\n", ("127.0.0.1", udp))
        s.close()
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_hold_seconds_count") == 13,
                    10, desc="the 13 hold lines taken")
        rs.restart()
        got = ag.wait_for(lambda: self.lost_alerts(ag) or None, 20,
                          desc="LockLostAtFailover for the unreported ones")
        desc = got[0]["annotations"]["description"]
        for i in range(N):
            key = "%s%02d (" % (PREFIX, i)
            if i < 10:
                self.assertNotIn(key, desc)
            else:
                self.assertIn(key, desc)
        self.assertEqual(self.lost_total(ag, "restart"), N - 10)
        self.assertIn("locks compared were lost (10 gone were released, as their holders "
                      "reported)", ag.log_tail(200))

    def test_a_holders_lost_line_is_the_same_loss(self):
        """A trial (F3): a holder whose lock a failover (here a restart)
        lost reports it lost too (its renewal finds the lock gone), and
        that line raised a LockLeaseLost beside LockLostAtFailover: two
        pages for one loss.  Now the line of the holding the view before
        the change saw is that loss, whether it comes before the agent
        sees the change (lock 00, right after the restart) or after (01),
        and for every lock lost, not only the 25 the alert names (30 of
        the 30 held); a second restart losing lock 00 again does not make
        its first line page.  A holder that took its lock again after the change
        and lost that (03: the same holder id, as Redisson's thread ids
        are) pages, as do another holder's line for a lost lock (02) and
        one for a lock no change lost."""
        from client_helpers import closed_udp_port
        import socket
        udp = closed_udp_port()
        rs = self.start_redis()
        ag = self.start_agent(rs, scan_interval="%gs" % INTERVAL, samples="127.0.0.1:%d" % udp)
        c = rs.client()
        write_locks(c, n=30)
        self.wait_locks(ag, 30)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(sock.close)

        def lost_line(key, holder, held_us=60000000):
            sock.sendto(b"lw1 lost %s app/1 %s %d 0 renewal\n" % (key, holder, held_us),
                        ("127.0.0.1", udp))

        def lease_lost(key):
            st, j = ag.get_json("/api/v1/alerts")
            return [a for a in j["alerts"] if a["labels"]["alertname"] == "LockLeaseLost"
                    and a["labels"].get("key") == key]

        rs.restart()
        lost_line(b"lock:lost:00", b"tok-00")
        ag.wait_for(lambda: self.lost_alerts(ag) or None, 20, desc="LockLostAtFailover")
        self.assertIn(" and 5 more", self.lost_alerts(ag)[0]["annotations"]["description"])
        lost_line(b"lock:lost:01", b"tok-01")
        lost_line(b"lock:lost:29", b"tok-29")       # past the 25 named
        lost_line(b"lock:lost:02", b"tok-someone-else")
        lost_line(b"lock:elsewhere:1", b"tok-e")
        c.set("lock:lost:03", "tok-03", px=600000)  # taken again, then lost again
        time.sleep(1.0)
        c.delete("lock:lost:03")
        lost_line(b"lock:lost:03", b"tok-03", held_us=1000000)
        ag.wait_for(lambda: lease_lost("lock:elsewhere:1") and lease_lost("lock:lost:02")
                    and lease_lost("lock:lost:03"), 10,
                    desc="LockLeaseLost for the losses no change explains")
        ag.wait_for(lambda: not lease_lost("lock:lost:00"), 10,
                    desc="no LockLeaseLost for the line sent before the change was seen")
        time.sleep(2.5)         # two more ticks of the rules
        for k in ("00", "01", "29"):
            self.assertEqual(lease_lost("lock:lost:" + k), [], k)
        st, ev = ag.get_json("/api/v1/events?kind=lease_lost")
        self.assertEqual(sorted(e["key"] for e in ev["events"]),
                         ["lock:elsewhere:1", "lock:lost:00", "lock:lost:01", "lock:lost:02",
                          "lock:lost:03", "lock:lost:29"])
        # a second change that loses lock 00 of the same holder again (a
        # failback) does not make the first line page (a red-team: the
        # loss it was matched with was overwritten)
        c.set("lock:lost:00", "tok-00", px=600000)
        ag.wait_for(lambda: ag.lock("lock:lost:00")[0] == 200, 10, desc="lock 00 taken again")
        lost = self.lost_total(ag)
        rs.restart()
        ag.wait_for(lambda: self.lost_total(ag) > lost, 20, desc="the second restart's loss")
        time.sleep(2.5)
        self.assertEqual(lease_lost("lock:lost:00"), [])

    def test_binary_holder_on_the_timeline(self):
        """A lost lock whose holder id is not text (it starts with a NUL):
        the event keeps its bytes (holder_escaped), lockctl events shows it
        as list does (hex:...)."""
        rs = self.start_redis()
        ag = self.start_agent(rs, scan_interval="%gs" % INTERVAL)
        binary = b"\x00\x01\x02\xff"
        rs.client().set(PREFIX + "bin", binary, px=600000)
        self.wait_locks(ag, 1)
        rs.restart()
        ag.wait_for(lambda: ag.get_json("/api/v1/events")[1]["count"] == 1, 20,
                    desc="the lost lock on the timeline")
        e = ag.get_json("/api/v1/events")[1]["events"][0]
        self.assertEqual((e["kind"], e["key"]), ("lost_at_failover", PREFIX + "bin"), e)
        self.assertEqual(h.unescape_key(e["holder_escaped"]), binary, e)
        self.assertEqual(e["holder"], "\ufffd\x01\x02\ufffd", e)
        agent = ["--agent", "http://127.0.0.1:%d" % ag.port, "events"]
        for args, env in (([], dict(os.environ, COLUMNS="80")), (["-o", "wide"], None)):
            p = lt.run(agent + args, ag.config_path, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(b"hex:000102ff", p.stdout)
        js = lt.run_json(self, agent, ag.config_path)
        self.assertEqual(h.unescape_key(js["events"][0]["holder_escaped"]), binary)

    def test_expired_locks_are_not_lost(self):
        rs, ag = self.holding(False, px=2500)
        rs.stop()
        time.sleep(3)           # their TTL runs out while the server is down
        rs.restart()
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 0 and
                    h.msum(ag.metrics(), "lockwatch_target_up", target="main") == 1, 20,
                    desc="the target back, empty")
        time.sleep(2 * INTERVAL + 1)
        self.assertEqual(self.lost_alerts(ag), [])
        self.assertEqual(self.lost_total(ag), 0)

    def test_a_replica_attaching_is_no_failover(self):
        """A primary's replication ID changes when its first replica attaches
        (its data untouched): no full scan for it in follow mode, and the
        locks released meanwhile are not lost."""
        rs, ag = self.holding(True)
        c = rs.client()
        c.delete(*[k for k in c.scan_iter(PREFIX + "*")])     # released, as they are
        replica = self.start_redis(args=["--replicaof", "127.0.0.1", str(rs.port)])
        h.wait_until(lambda: replica.client().info("replication").get("master_link_status")
                     == "up", 20, desc="the replica in sync")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 0, 20,
                    desc="the released locks gone")
        time.sleep(2 * INTERVAL + 1)
        self.assertEqual(self.lost_alerts(ag), [])
        self.assertEqual(self.lost_total(ag), 0)
        self.assertNotIn("replication ID changed", ag.log_tail(200))

    # ---- flush ------------------------------------------------------------------

    def flushdb(self, follow):
        rs, ag = self.holding(follow)
        rs.client().flushdb()
        self.expect_lost(ag, time.monotonic(), "flush",
                         "FLUSHDB (%s mode)" % ("follow" if follow else "scan"))

    def test_flushdb_scan_mode(self):
        self.flushdb(follow=False)

    def test_flushdb_follow_mode(self):
        self.flushdb(follow=True)

    def flush_then_taken_again(self, follow, command, holder):
        """A trial: a lock taken again right after a flush (a waiter, or
        its holder's own id) looked kept, and so the flush another
        database's: none of its losses counted.  In follow mode every
        time, since a flush notifies no key and the replays took the new
        holding in before the freshness check found the flush."""
        rs, ag = self.holding(follow)
        c = rs.client()
        c.execute_command(command)
        c.set(PREFIX + "00", holder, px=600000)
        # the one taken again is not counted: follow mode's replay had the
        # new holding before the flush was found, and the same holder id
        # after a scan's is the same holding to it
        lost = N - 1
        ag.wait_for(lambda: self.lost_total(ag, "flush") or None, 2 * INTERVAL + 10,
                    desc="the locks lost at the %s counted" % command)
        time.sleep(1)
        self.assertEqual(self.lost_total(ag, "flush"), lost)
        (a,) = self.lost_alerts(ag)
        self.assertIn("%d locks lost on target main at a flush" % lost,
                      a["annotations"]["summary"])
        self.assertNotIn("another database's", ag.log_tail(200))

    def test_flushdb_follow_mode_a_lock_taken_again(self):
        self.flush_then_taken_again(True, "FLUSHDB", "tok-new")

    def test_flushall_a_lock_its_holder_took_again(self):
        # scan mode: the holder id that took it again is the one before
        self.flush_then_taken_again(False, "FLUSHALL", "tok-00")

    def test_flush_of_another_database_loses_nothing(self):
        # a red-team trial: a lock released without a reporter (scan mode
        # cannot see it), then FLUSHDB on database 1: the server's flush
        # count moved, and the released lock was called lost at a flush.
        # The other 19 still there, held as before: database 0 was not
        # flushed
        rs, ag = self.holding(follow=False)
        c = rs.client()
        c.delete("%s%02d" % (PREFIX, 0))
        rs.client(db=1).set("cache:x", "1")
        rs.client(db=1).flushdb()
        ag.wait_for(lambda: "another database's" in ag.log_tail(100), 2 * INTERVAL + 10,
                    desc="the flush seen and set aside")
        time.sleep(INTERVAL)
        self.assertEqual(self.lost_alerts(ag), [])
        self.assertEqual(self.lost_total(ag), 0)

    def test_swapdb_scan_mode(self):
        # the locks are in database 1 now: gone from the target's 0, and
        # called what they went by, not a flush
        rs, ag = self.holding(follow=False)
        rs.client().swapdb(0, 1)
        self.expect_lost(ag, time.monotonic(), "swapdb", "SWAPDB (scan mode)",
                         words="a SWAPDB on")
        self.assertEqual(self.lost_total(ag, "flush"), 0)

    def test_restart_with_persistence_loses_nothing(self):
        rs, ag = self.holding(False, args=["--appendonly", "yes", "--appendfsync", "always"])
        rs.restart()
        ag.wait_for(lambda: "the server changed (a restart of " in ag.log_tail(200), 20,
                    desc="the restart seen")
        time.sleep(INTERVAL + 1)
        self.assertIn("0 of %d locks compared were lost" % N, ag.log_tail(200))
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks", target="main"), N)
        self.assertEqual(self.lost_alerts(ag), [])
        self.assertEqual(self.lost_total(ag), 0)

    # ---- Cluster -----------------------------------------------------------------

    def test_cluster_primary_restart(self):
        c = topo.start_cluster(self, primaries=3)
        keys = ["%s%02d" % (PREFIX, i) for i in range(N)]
        c.load([("SET", k, "tok-" + k[-2:], "PX", 600000) for k in keys])
        node = c.node_of(keys[0])
        mine = [k for k in keys if c.node_of(k) is node]
        ag = self.start_agent(targets=[("main", c.url)], scan_interval="%gs" % INTERVAL,
                              target_extra={"mode": "cluster", "incremental": "off"})
        self.wait_locks(ag)
        node.restart()          # its slots stay its own (no replica); its keys are gone
        back = time.monotonic()
        got = ag.wait_for(lambda: self.lost_alerts(ag) or None, 20, interval=0.05,
                          desc="LockLostAtFailover after a cluster primary's restart")
        print("cluster primary restart: LockLostAtFailover %.2fs after the node was back, "
              "%d of %d locks on it" % (time.monotonic() - back, len(mine), N))
        self.assertEqual(len(got), 1, got)
        desc = got[0]["annotations"]["description"]
        for k in keys:
            if k in mine:
                self.assertIn(k + " (", desc)
            else:
                self.assertNotIn(k + " (", desc)
        self.assertEqual(self.lost_total(ag, "restart"), len(mine))
        self.assertEqual(self.lost_total(ag), len(mine))

    # ---- Sentinel ----------------------------------------------------------------

    def sentinel_pair(self):
        primary = self.start_redis(args=NOTIFY)
        replica = self.start_redis(args=NOTIFY + ["--replicaof", "127.0.0.1",
                                                  str(primary.port)])
        h.wait_until(lambda: replica.client().info("replication").get(
            "master_link_status") == "up", 20, desc="replica in sync")
        sentinels = topo.start_sentinels(self, primary.port, down_after_ms=1000)
        return primary, replica, sentinels

    def sentinel_agent(self, sentinels, follow):
        return self.start_agent(
            targets=[("main", "redis://127.0.0.1:1/0")], scan_interval="%gs" % INTERVAL,
            target_extra={"mode": "sentinel",
                          "sentinels": ",".join("127.0.0.1:%d" % s.port for s in sentinels),
                          "master_name": "mymaster",
                          "incremental": "on" if follow else "off"})

    def promoted(self, sentinels, replica):
        def done():
            try:
                role = replica.client().execute_command("ROLE")[0]
            except Exception:
                return False
            return (sentinels[0].master_port() == replica.port and
                    role in (b"master", "master"))
        h.wait_until(done, 40, desc="replica :%d promoted" % replica.port)

    def failover_unsynced(self, follow):
        primary, replica, sentinels = self.sentinel_pair()
        ag = self.sentinel_agent(sentinels, follow)
        if follow:
            self.wait_following(ag)
        # stop the replica, then have the primary drop its link: the locks
        # reach no replica, and a stopped replica cannot reconnect.  Stopping
        # it with the link up would not do: what the primary sends waits in
        # the stopped replica's socket and is applied on SIGCONT (and cutting
        # the link from the replica's side first races its reconnect, once
        # a second, on a busy machine).
        replica.pause()
        primary.client().execute_command("CLIENT", "KILL", "TYPE", "replica")
        h.wait_until(lambda: primary.client().info("replication")["connected_slaves"] == 0,
                     10, interval=0.01, desc="the primary has no replica")
        write_locks(primary.client())
        self.wait_locks(ag)
        primary.kill()
        replica.resume()
        self.promoted(sentinels, replica)
        back = time.monotonic()
        self.assertEqual(replica.client().dbsize(), 0)
        self.expect_lost(ag, back, "failover", "Sentinel failover to a replica without the "
                         "locks (%s mode)" % ("follow" if follow else "scan"))
        self.assertIn("127.0.0.1:%d" % replica.port,
                      self.lost_alerts(ag)[0]["annotations"]["summary"])

    def test_failover_unsynced_scan_mode(self):
        self.failover_unsynced(follow=False)

    def test_failover_unsynced_follow_mode(self):
        self.failover_unsynced(follow=True)

    def failover_in_sync(self, follow):
        primary, replica, sentinels = self.sentinel_pair()
        ag = self.sentinel_agent(sentinels, follow)
        if follow:
            self.wait_following(ag)
        c = primary.client()
        write_locks(c)
        self.assertEqual(c.execute_command("WAIT", 1, 5000), 1)
        self.wait_locks(ag)
        sentinels[0].client().execute_command("SENTINEL", "FAILOVER", "mymaster")
        self.promoted(sentinels, replica)
        ag.wait_for(lambda: "now scanning 127.0.0.1:%d" % replica.port in ag.log_tail(200),
                    20, desc="the agent scans the new primary")
        time.sleep(2 * INTERVAL + 1)
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_locks", target="main"), N)
        self.assertEqual(self.lost_alerts(ag), [])
        self.assertEqual(self.lost_total(ag), 0)
        self.assertIn("0 of %d locks compared were lost" % N, ag.log_tail(200))

    def test_failover_in_sync_scan_mode(self):
        self.failover_in_sync(follow=False)

    def test_failover_in_sync_follow_mode(self):
        self.failover_in_sync(follow=True)


if __name__ == "__main__":
    h.main()
