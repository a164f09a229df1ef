# SPDX-License-Identifier: BSD-3-Clause
# run-all: serial (stops a leader past its lease and waits for the takeover)
"""One voice for direct sinks (issue 27): two replicas elect a leader with the
liblockwatch lock lockwatch:leader:<group> on a configured target; only the
leader posts to a generic webhook, every notice with the term's fencing token
in the body ("fence") and the X-Lockwatch-Fence header.

The receiver checks fences as the docs tell a receiver to: it accepts a
notice only if its fence is at least the highest it has seen.  The test:
exactly one replica leads (lockwatch_ha_leader, /readyz naming it); a leak
reaches the receiver once; the leader SIGSTOPped past its lease while a
notice of its waits for a retry (the receiver answering 503), the other
replica takes over within the lease and its notices carry a greater fence;
the old leader, SIGCONTed with that retry due and a new leak to see, sends
nothing (0 stale notices, none refused by the fence check; the retry counted
dropped); SIGKILL of the new leader, and the first one leads again; a reload
keeps its term, and one that changes a leader setting elects again without
sending old alerts again.  The electing Redis restarted without persistence
(the leaks and the leader lock wiped together): the resolutions the replicas
saw while none led reach the receiver."""

import os
import signal
import threading
import time

import redis

import alerts_receiver
import harness as h

LEASE_S = 3


def log_since(ag, offset):
    with open(ag.logfile, "rb") as f:
        return f.read()[offset:].decode(errors="replace")


def leading(ag):
    return h.msum(ag.metrics(), "lockwatch_ha_leader") == 1


class FenceReceiver:
    """Notices for a key, and the fence check a receiver does."""

    def __init__(self, recv):
        self.recv = recv

    def notices(self, key, status="firing"):
        out = []
        for r in self.recv.snapshot():
            body = r.json()
            if body.get("status") == status and \
                    any(a["labels"].get("key") == key for a in body["alerts"]):
                out.append((r, body))
        return out

    def refused(self):
        """Notices a fence-checking receiver drops: a fence below the
        highest it accepted before (answers other than 200 accept none)."""
        best, bad = 0, []
        for r in self.recv.snapshot():
            if r.status != 200 or "x-lockwatch-fence" not in r.headers:
                continue        # unfenced: a replica that could not reach the election
            f = int(r.headers["x-lockwatch-fence"])
            if f < best:
                bad.append(r.json())
            best = max(best, f)
        return bad


# docs/deploying.md "One voice for direct sinks" (keep in step): the scanner's
# rules and these on top.
LEADER_ACL = ["~lockwatch:leader:*", "~lockwatch_fence:{lockwatch:leader:*}",
              "~lockwatch_lock__channel:{lockwatch:leader:*}",
              "&lockwatch_lock__channel:{lockwatch:leader:*}", "+get", "+set", "+pexpire", "+del", "+incr", "+time",
              "+publish", "+eval", "+evalsha", "+script|load"]


class HALeader(h.TestCase):

    def start_pair(self, lease_s=LEASE_S):
        """A Redis, a receiver behind a generic webhook, and replicas a and b
        electing on that Redis (lease lease_s), once one leads."""
        recv = alerts_receiver.Receiver()
        self.addCleanup(recv.stop)
        rs = self.start_redis()
        hook = "[webhook hook]\nurl = %s\nformat = generic\ntimeout = 5s\nretry_base = 100ms\n" \
            % recv.url
        ags = {}
        for name in ("a", "b"):
            ags[name] = self.start_agent(
                rs, scan_interval="200ms", leak_grace="1s", max_hold="1h", extra=hook,
                agent_extra={"replica": name, "leader_target": "main", "leader_group": "t",
                             "leader_lease": "%ds" % lease_s})
        ags["a"].wait_for(lambda: leading(ags["a"]) or leading(ags["b"]), timeout=15,
                          desc="a leader")
        return recv, FenceReceiver(recv), rs, ags

    def test_documented_acl_is_enough(self):
        rs = self.start_redis()
        c = rs.client()
        c.execute_command("ACL", "SETUSER", "lwl", "on", ">leader-pw-1234", "resetchannels",
                          *(h.SCANNER_ACL + LEADER_ACL))
        ag = self.start_agent(targets=[("main", "redis://lwl@127.0.0.1:%d/0" % rs.port)],
                              target_extra={"password_file": h.password_file("leader-pw-1234")},
                              agent_extra={"replica": "a", "leader_target": "main",
                                           "leader_lease": "%ds" % LEASE_S})
        ag.wait_for(lambda: leading(ag), timeout=15, desc="leading as the ACL user")
        self.assertEqual(c.get("lockwatch:leader:default:replica"), b"a")
        ag.stop()       # releases the lock: DEL and the wake-up, as that user
        self.assertIsNone(c.get("lockwatch:leader:default"))
        denied = {e[e.index(b"object") + 1] for e in c.execute_command("ACL", "LOG", "50")}
        # the scanner's optional reads (README "Redis permissions"): follow
        # mode's, the freshness check's and the audit tail's
        self.assertEqual(denied - {b"psubscribe", b"config|get", b"info", b"xrevrange",
                                   b"xread"}, set(), denied)

    def test_one_voice_and_fenced_takeover(self):
        recv, fr, rs, ags = self.start_pair()
        c = rs.client()
        lead = next(n for n in ags if leading(ags[n]))
        other = "b" if lead == "a" else "a"
        self.assertFalse(leading(ags[other]))
        st, _, ready = ags[other].get("/readyz")
        self.assertIn(("leader: replica %s leads lockwatch:leader:t (this agent follows"
                       % lead).encode(), ready)
        self.assertEqual(c.get("lockwatch:leader:t:replica"), lead.encode())

        # one leak, one notice, from the leader, fenced in body and header
        c.set("lock:ha:1", "tok")
        h.wait_until(lambda: fr.notices("lock:ha:1"), 20, desc="notice for lock:ha:1")
        time.sleep(2)
        got = fr.notices("lock:ha:1")
        self.assertEqual(len(got), 1, [b for r, b in got])
        r, body = got[0]
        fence1 = body["fence"]
        self.assertEqual(int(r.headers["x-lockwatch-fence"]), fence1)
        self.assertEqual(body["alerts"][0]["annotations"]["replica"], lead)
        self.assertEqual(h.msum(ags[other].metrics(), "lockwatch_notifications_total",
                                sink="hook", result="sent"), 0)

        # the leader stopped past its lease, with a notice in retry (the
        # receiver answers 503 meanwhile): the other takes over
        recv.statuses = [503] * 100000
        c.set("lock:ha:2", "tok")
        h.wait_until(lambda: len(fr.notices("lock:ha:2")) >= 2, 20,
                     desc="the leader retrying lock:ha:2")
        ags[lead].signal(signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            recv.statuses = []
            ags[other].wait_for(lambda: leading(ags[other]), timeout=LEASE_S * 2 + 5,
                                desc="takeover")
            took = time.monotonic() - stopped
            c.set("lock:ha:3", "tok")
            h.wait_until(lambda: fr.notices("lock:ha:3"), 20, desc="notice from new leader")
        finally:
            ags[lead].signal(signal.SIGCONT)
        resumed = time.monotonic()
        got = fr.notices("lock:ha:3")
        self.assertEqual(len(got), 1)
        fence2 = got[0][1]["fence"]
        # the notice the stopped leader never delivered: the new leader says
        # again what fires when its term starts
        again = [(r, b) for r, b in fr.notices("lock:ha:2") if b.get("fence") == fence2]
        self.assertEqual([(r.status, b["reason"]) for r, b in again], [(200, "repeat")])
        self.assertGreater(fence2, fence1)
        self.assertEqual(got[0][1]["alerts"][0]["annotations"]["replica"], other)
        # the old leader's retry is due and it scans lock:ha:3 leaked too:
        # it must say nothing
        ags[lead].wait_for(lambda: not leading(ags[lead]), timeout=10, desc="deposed")
        time.sleep(3)
        late = [r.json() for r in recv.snapshot() if r.at > resumed
                and r.headers.get("x-lockwatch-fence") == str(fence1)]
        self.assertEqual(late, [], "the deposed leader sent after SIGCONT")
        self.assertEqual(len(fr.notices("lock:ha:3")), 1)
        self.assertEqual(fr.refused(), [])
        self.assertGreater(h.msum(ags[lead].metrics(), "lockwatch_notifications_total",
                                  sink="hook", result="dropped"), 0)
        print("leader: takeover %.1f s after SIGSTOP (lease %d s)" % (took, LEASE_S))

        # the new leader killed: the first leads again, with a fence greater still
        ags[other].kill()
        killed = time.monotonic()
        ags[lead].wait_for(lambda: leading(ags[lead]), timeout=LEASE_S * 2 + 5,
                           desc="takeover after kill")
        print("leader: takeover %.1f s after SIGKILL" % (time.monotonic() - killed))
        c.set("lock:ha:4", "tok")
        h.wait_until(lambda: fr.notices("lock:ha:4"), 20, desc="notice after kill")
        fence3 = fr.notices("lock:ha:4")[0][1]["fence"]
        self.assertGreater(fence3, fence2)
        self.assertEqual(fr.refused(), [])

        # a reload with the same leader settings keeps the term (and its fence)
        ags[lead].reload()
        time.sleep(LEASE_S)
        st, _, ready = ags[lead].get("/readyz")
        self.assertIn(("leader: replica %s leads lockwatch:leader:t (this agent, fence %d)"
                       % (lead, fence3)).encode(), ready)

        # a reload that changes a leader setting (the lease) elects again: the
        # log says so, not that the agent stops, and the alerts that started
        # long before (lock:ha:1 to 3) are not sent again, whoever leads next
        before = os.path.getsize(ags[lead].logfile)
        ags[lead].cfg["agent_extra"] = dict(ags[lead].cfg["agent_extra"],
                                            leader_lease="%ds" % (LEASE_S + 1))
        ags[lead].write_config(ags[lead].render_config())
        reloaded = time.monotonic()
        ags[lead].reload()
        h.wait_until(lambda: "electing again with the new ones" in log_since(ags[lead], before),
                     10, desc="the reload's log line")
        ags[lead].wait_for(lambda: leading(ags[lead]), timeout=LEASE_S * 2 + 5,
                           desc="leading again after the reload")
        time.sleep(2)
        log = log_since(ags[lead], before)
        self.assertNotIn("the agent stops", log)
        again = [(key, b["reason"]) for key in ("lock:ha:1", "lock:ha:2", "lock:ha:3")
                 for r, b in fr.notices(key) if r.at > reloaded]
        self.assertEqual(again, [], log)
        self.assertEqual(fr.refused(), [])

    def test_a_refused_password_is_an_answer(self):
        """A red-team trial: a wrong password for the leader lock's Redis
        (rotated on one host only) read as "unreachable", and after the
        lease + 1s this replica sent to the direct sinks unfenced, beside
        the replica that leads.  An error reply is an answer
        (docs/deploying.md "When no replica can lead"): it follows, and
        says why."""
        rs = self.start_redis(password="right-pw-1234")
        ag = self.start_agent(targets=[("main", rs.url)],
                              target_extra={"password_file": h.password_file("wrong-pw-9876")},
                              agent_extra={"replica": "a", "leader_target": "main",
                                           "leader_lease": "%ds" % LEASE_S})
        time.sleep(LEASE_S + 2.5)
        self.assertFalse(leading(ag))
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_ha_unfenced"), 0)
        _, _, ready = ag.get("/readyz")
        self.assertIn(b"leader: no replica known to lead lockwatch:leader:default: ", ready)
        self.assertIn(b"refused AUTH", ready)
        self.assertNotIn(b"unreachable", ready)

    def test_the_electing_redis_down_is_still_said(self):
        """The Redis that holds the leader lock is one the replicas watch;
        it dies: no replica can lead, and its LockTargetDown would be said
        by nobody.  Each replica speaks unfenced once the lock has been
        unreachable for the lease + 1s; when it is back, one leads again."""
        recv, fr, rs, ags = self.start_pair()

        def down_notices(status):
            return [(r, b) for r, b in ((r, r.json()) for r in recv.snapshot())
                    if b.get("status") == status and any(
                        a["labels"]["alertname"] == "LockTargetDown" for a in b["alerts"])]
        rs.kill()
        killed = time.monotonic()
        h.wait_until(lambda: {b["alerts"][0]["annotations"]["replica"]
                              for r, b in down_notices("firing") if "fence" not in b} == {"a", "b"},
                     LEASE_S + 15, desc="LockTargetDown from both replicas, unfenced")
        print("leader: LockTargetDown said %.1f s after the electing Redis died (lease %d s)"
              % (time.monotonic() - killed, LEASE_S))
        for r, b in down_notices("firing"):
            if "fence" not in b:
                self.assertNotIn("x-lockwatch-fence", r.headers)
        for name, ag in ags.items():
            self.assertFalse(leading(ag))
            # what a rule watches: this replica sends unfenced
            self.assertEqual(h.msum(ag.metrics(), "lockwatch_ha_unfenced"), 1)
            _, _, ready = ag.get("/readyz")
            self.assertIn(b"leader: no replica can lead lockwatch:leader:t: unreachable for ",
                          ready)
            _, _, page = ag.get("/")
            self.assertIn(b"leader: no replica can lead lockwatch:leader:t", page)

        rs.restart()
        ags["a"].wait_for(lambda: leading(ags["a"]) or leading(ags["b"]), timeout=15,
                          desc="a leader once the Redis is back")
        lead = next(n for n in ags if leading(ags[n]))
        other = "b" if lead == "a" else "a"
        h.wait_until(lambda: down_notices("resolved"), 15, desc="LockTargetDown resolved")
        follows = ("leader: replica %s leads lockwatch:leader:t (this agent follows)"
                   % lead).encode()
        ags[other].wait_for(lambda: follows in ags[other].get("/readyz")[2], timeout=15,
                            desc="the other replica to follow")
        for ag in ags.values():
            self.assertEqual(h.msum(ag.metrics(), "lockwatch_ha_unfenced"), 0)
        self.assertEqual(fr.refused(), [])

    def test_resolutions_survive_a_restart_of_the_electing_redis(self):
        """The electing Redis restarted without persistence wipes the leaks
        and the leader lock together; the leader finds its lock gone and
        every replica sees the leaks end, while no replica leads (a holder
        the replicas do not know, the test's own, keeps the lock a few
        seconds after the start, as an ACL applied again late would).  The
        replica that leads next says those resolutions: the receiver has
        every leak resolved, none left open."""
        recv, fr, rs, ags = self.start_pair()
        c = rs.client()
        keys = ["lock:rs:1", "lock:rs:2"]
        for k in keys:
            c.set(k, "tok")
        h.wait_until(lambda: all(fr.notices(k) for k in keys), 20, desc="both leaks said")
        hold_s = 4

        def hold_the_lock():
            # the first command on the new server: before any replica's
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    r = redis.Redis(host="127.0.0.1", port=rs.port, socket_timeout=1,
                                    socket_connect_timeout=0.2)
                    r.set("lockwatch:leader:t", "held-by-the-test", nx=True,
                          px=hold_s * 1000)
                    r.close()
                    return
                except redis.RedisError:
                    time.sleep(0.001)
        rs.stop()       # SIGTERM, and the server saves nothing (--save "")
        grab = threading.Thread(target=hold_the_lock)
        grab.start()
        rs.restart()
        restarted = time.monotonic()
        grab.join()
        h.wait_until(lambda: all(fr.notices(k, "resolved") for k in keys), hold_s + 20,
                     desc="both leaks resolved at the receiver")
        print("leader: resolutions delivered %.1f s after the restart (lock held %d s)"
              % (time.monotonic() - restarted, hold_s))
        for k in keys:
            self.assertIn(200, [r.status for r, b in fr.notices(k, "resolved")])
        self.assertTrue(any(leading(ag) for ag in ags.values()))

    def test_idle_timeout_keeps_who_leads(self):
        """Redis closes connections idle for over a second (timeout 1); the
        leader renews every third of a 9 s lease, so its connections sit
        idle 3 s and are closed between uses.  Each renewal still writes
        the companion key that names the leader (on a connection opened
        again), not every other one, and the follower goes on naming it."""
        recv, fr, rs, ags = self.start_pair(lease_s=9)
        c = rs.client()
        lead = next(n for n in ags if leading(ags[n]))
        other = "b" if lead == "a" else "a"
        c.config_set("notify-keyspace-events", "Kg$")
        ps = c.pubsub()
        ps.psubscribe("__keyspace@0__:lockwatch:leader:t*")
        c.config_set("timeout", "1")
        follows = ("leader: replica %s leads lockwatch:leader:t (this agent follows"
                   % lead).encode()
        events = []
        end = time.monotonic() + 25
        while time.monotonic() < end:
            m = ps.get_message(timeout=0.5)
            if m is not None and m["type"] == "pmessage":
                events.append((m["channel"].decode(), m["data"].decode()))
            self.assertTrue(leading(ags[lead]))
            self.assertFalse(leading(ags[other]))
            self.assertIn(follows, ags[other].get("/readyz")[2])
        ps.close()
        renewals = sum(1 for ch, ev in events if ch.endswith(":leader:t") and ev == "expire")
        named = sum(1 for ch, ev in events if ch.endswith(":leader:t:replica") and ev == "set")
        print("leader: %d renewals, %d companion writes in 25 s with timeout 1" % (renewals, named))
        self.assertGreaterEqual(renewals, 6, events)
        self.assertGreaterEqual(named, renewals - 1, events)
        self.assertEqual(c.get("lockwatch:leader:t:replica"), lead.encode())

if __name__ == "__main__":
    h.main()
