# SPDX-License-Identifier: BSD-3-Clause
"""Follow mode's memory is not sized by whoever may PUBLISH (issue 22):
any client may publish on a keyspace channel, and the issue's fake
notifications with 200 KB key names took the agent from 11 to 636 MB.

A flood of fake notifications (1,000 naming 200 KB keys, over the 128 KiB
key cap; 1,000 naming 100 KB keys, which fill the pending set's 16 MiB
byte cap after ~160; one message of 1.5 MB, over the subscriber's 1 MiB
message limit) leaves the agent's peak RSS (VmHWM) under 64 MiB, each cap
it hit is counted in lockwatch_follow_overflows_total and ends in a full
scan, the log names the cap, and a lock set and one deleted during the
flood are right: the view matches Redis afterwards, and the target follows
again.  Each flood is read to its end before the next, so each cap is met
whatever the machine's speed."""

import time

import harness as h

NOTIFY = ["--notify-keyspace-events", "Kg$lshzxet",
          # the subscriber is to be flooded: Redis must not end it for
          # falling behind (its own limit, not the agent's)
          "--client-output-buffer-limit", "pubsub", "0", "0", "0"]
RSS_LIMIT_MB = 64
agent_keys = h.agent_lock_keys
redis_keys = h.redis_lock_keys


class FollowLimits(h.TestCase):

    def overflows(self, ag):
        return h.msum(ag.metrics(), "lockwatch_follow_overflows_total", target="main")

    def following(self, ag):
        return h.msum(ag.metrics(), "lockwatch_follow_active", target="main") == 1

    def flood(self, c, n, size, tag):
        pipe = c.pipeline(transaction=False)
        for i in range(n):
            key = ("lock:%s:%d:" % (tag, i)).encode() + b"x" * size
            pipe.publish(b"__keyspace@0__:" + key, "set")
            if i % 25 == 24:
                pipe.execute()
        pipe.execute()

    def settle(self, ag, events):
        """Wait until the agent has read `events` notifications and is done
        with what they set off: the overflow count holds still a second
        and the target follows."""
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_events_total",
                                   target="main") >= events, 120, interval=0.2,
                    desc="%d notifications read" % events)
        last = [None]

        def still():
            n, was = self.overflows(ag), last[0]
            last[0] = n
            return n == was and self.following(ag)
        ag.wait_for(still, 60, interval=1.0, desc="done with them")

    def test_fake_notifications_with_long_keys(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        for i in range(50):
            c.set("lock:real:%d" % i, "t", px=600000)
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"incremental": "on", "reconcile_interval": "1h"})
        ag.wait_for(lambda: self.following(ag), 30, desc="following")
        ag.wait_for(lambda: agent_keys(ag) == redis_keys(c), 10, desc="the locks seen")
        events = lambda: h.msum(ag.metrics(), "lockwatch_follow_events_total", target="main")
        before = h.peak_rss_mb(ag.proc.pid)
        counted = []
        t0 = time.monotonic()

        # the key cap: 200 KB keys are never kept
        base, ev = self.overflows(ag), events()
        self.flood(c, 1000, 200 * 1000, "k")
        self.settle(ag, ev + 1000)
        counted.append(self.overflows(ag) - base)
        self.assertGreaterEqual(counted[-1], 1, "the key cap's drops not counted")
        self.assertIn("over the 131072-byte cap", ag.log_tail(200))

        # the pending set's byte cap: 100 KB keys fill it after ~160; a lock
        # set and one deleted meanwhile
        base, ev = self.overflows(ag), events()
        c.set("lock:new", "t", px=600000)
        self.flood(c, 1000, 100 * 1000, "b")
        c.delete("lock:real:0")
        self.settle(ag, ev + 1002)
        counted.append(self.overflows(ag) - base)
        self.assertGreaterEqual(counted[-1], 1, "the pending set's overflow not counted")
        self.assertIn("notifications overflowed the pending set of keys to re-read "
                      "(65536 keys, 16 MiB)", ag.log_tail(200))

        # the subscriber's message limit: its connection ends, and is made again
        base = self.overflows(ag)
        c.publish(b"__keyspace@0__:lock:huge:" + b"x" * 1500000, "set")
        ag.wait_for(lambda: self.overflows(ag) > base, 30, desc="the message refused, counted")
        counted.append(self.overflows(ag) - base)
        self.assertIn("a message of over 1048576 bytes: refused (the reply limit)",
                      ag.log_tail(200))
        ag.wait_for(lambda: self.following(ag), 30, desc="following again")

        a, r = agent_keys(ag), redis_keys(c)
        self.assertEqual(a, r)
        self.assertIn(b"lock:new", a)
        self.assertNotIn(b"lock:real:0", a)
        took = time.monotonic() - t0
        peak = h.peak_rss_mb(ag.proc.pid)
        print("fake notifications (1,000 x 200 KB keys, 1,000 x 100 KB, one 1.5 MB message) "
              "in %.1fs: overflows counted %r (key cap, pending bytes, message), the view "
              "right; peak RSS %.1f MiB (%.1f before)" % (took, counted, peak, before))
        self.assertTrue(ag.alive)
        self.assert_peak_rss_under(peak, RSS_LIMIT_MB)

    def test_lost_notifications_are_said_before_the_repair_ends(self):
        """A cap hit (here one fake notification naming a 200 KB key) means
        notifications were lost; the full scan that repairs the view takes
        a while with many keys (here 6,000 locks at max_keys_per_second
        1000: about 6 s).  Meanwhile the view is not passed off as current: at
        once the overflow is counted, /readyz and the log say so, the API's
        page is complete: false with a stale entry and its locks marked
        stale, and the last proof of freshness does not move; the repair
        clears it all."""
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        h.load(c, (("SET", "lock:bulk:%d" % i, "t", "PX", "600000") for i in range(6000)))
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"incremental": "on", "reconcile_interval": "1h",
                                            "max_keys_per_second": "1000"})
        ag.wait_for(lambda: self.following(ag), 60, desc="following")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 6000, 10,
                    desc="the locks seen")
        base = self.overflows(ag)
        proof = lambda: h.msum(ag.metrics(), "lockwatch_target_last_success_timestamp_seconds",
                               target="main")
        t_lost = time.time()
        c.publish(b"__keyspace@0__:lock:fake:" + b"x" * 200000, "set")
        ag.wait_for(lambda: self.overflows(ag) > base, 3, interval=0.1,
                    desc="the overflow counted at once")
        said = time.time() - t_lost
        st, _, ready = ag.get("/readyz")
        self.assertEqual(st, 200, ready)
        self.assertIn(b"notifications were lost (a notification named a key of 200010 bytes",
                      ready)
        st, doc = ag.get_json("/api/v1/locks?limit=100")
        self.assertEqual(st, 200)
        self.assertFalse(doc["complete"], doc)
        self.assertEqual([e["target"] for e in doc["stale"]], ["main"], doc["stale"])
        self.assertIn("the view may miss changes", doc["stale"][0]["reason"])
        self.assertEqual(len(doc["locks"]), 100)
        self.assertTrue(all(l["stale"] for l in doc["locks"]), doc["locks"][:2])
        # the proof stands still while the repair runs (a freshness check
        # every scan_interval, 1 s, moved it before the loss)
        p1 = proof()
        time.sleep(1.5)
        self.assertFalse(ag.get_json("/api/v1/locks?limit=1")[1]["complete"],
                         "the repair ended within 1.6 s: too fast to tell")
        self.assertEqual(proof(), p1)
        self.assertIn("notifications were lost", ag.log_tail(50))
        # the repair: a full scan ends it, and the proof moves again
        ag.wait_for(lambda: ag.get_json("/api/v1/locks?limit=1")[1]["complete"], 30,
                    desc="the view repaired")
        repaired = time.time() - t_lost
        self.assertGreater(proof(), t_lost)
        st, doc = ag.get_json("/api/v1/locks?limit=100")
        self.assertEqual(doc["stale"], [])
        self.assertFalse(any(l.get("stale") for l in doc["locks"]))
        self.assertNotIn(b"notifications were lost", ag.get("/readyz")[2])
        print("lost notifications said %.2f s after the loss, the view repaired %.1f s after "
              "it (6,000 keys at 1000 keys/s)" % (said, repaired))


if __name__ == "__main__":
    h.main()
