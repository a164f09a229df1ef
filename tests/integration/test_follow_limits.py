# SPDX-License-Identifier: BSD-3-Clause
# run-all: serial (measures the agent's peak RSS)
"""Follow mode's memory is not sized by whoever may PUBLISH (issue 22):
any client may publish on a keyspace channel, and the issue's fake
notifications with 200 KB key names took the agent from 11 to 636 MB.

A flood of fake notifications (1,000 naming 200 KB keys, over the 128 KiB
key cap; 1,000 naming 100 KB keys, which fill the pending set's 16 MiB
byte cap after ~160; one message of 1.5 MB, over the subscriber's 1 MiB
message limit) leaves the agent's peak RSS (VmHWM) under 64 MiB, each cap
it hit is counted in lockwatch_follow_overflows_total and ends in a full
scan, the log names the cap, and meanwhile a lock set and one deleted
without a notification that the agent could use are right: the view
matches Redis afterwards, and the target follows again."""

import time

import harness as h

NOTIFY = ["--notify-keyspace-events", "Kg$lhzxe",
          # the subscriber is to be flooded: Redis must not end it for
          # falling behind (its own limit, not the agent's)
          "--client-output-buffer-limit", "pubsub", "0", "0", "0"]
RSS_LIMIT_MB = 64


def peak_rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return None


def agent_keys(ag):
    st, body = ag.get_json("/api/v1/locks?target=main&limit=10000")
    assert st == 200, (st, body)
    return {h.unescape_key(l["key"]) for l in body["locks"]}


def redis_keys(c):
    return set(c.scan_iter(match="lock:*", count=10000))


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

    def test_fake_notifications_with_long_keys(self):
        rs = self.start_redis(args=NOTIFY)
        c = rs.client()
        for i in range(50):
            c.set("lock:real:%d" % i, "t", px=600000)
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"incremental": "on", "reconcile_interval": "1h"})
        ag.wait_for(lambda: self.following(ag), 30, desc="following")
        ag.wait_for(lambda: agent_keys(ag) == redis_keys(c), 10, desc="the locks seen")
        before = peak_rss_mb(ag.proc.pid)
        base = self.overflows(ag)
        t0 = time.monotonic()

        # the key cap: 200 KB keys are never kept
        self.flood(c, 1000, 200 * 1000, "k")
        after_key_cap = self.overflows(ag)
        # the pending set's byte cap: 100 KB keys fill it after ~160
        c.set("lock:new", "t", px=600000)
        self.flood(c, 1000, 100 * 1000, "b")
        c.delete("lock:real:0")
        # the subscriber's message limit: its connection ends, and again
        c.publish(b"__keyspace@0__:lock:huge:" + b"x" * 1500000, "set")
        sent_s = time.monotonic() - t0

        ag.wait_for(lambda: self.overflows(ag) >= base + 3, 30,
                    desc="every cap hit counted (key, pending bytes, message)")
        took = None
        try:
            ag.wait_for(lambda: agent_keys(ag) == redis_keys(c), 15, interval=0.2,
                        desc="the view matches Redis")
            took = time.monotonic() - t0
        finally:
            a, r = agent_keys(ag), redis_keys(c)
        ag.wait_for(lambda: self.following(ag), 30, desc="following again")
        time.sleep(1)
        peak = peak_rss_mb(ag.proc.pid)
        n = self.overflows(ag) - base
        log = ag.log_tail(200)
        print("fake notifications (1,000 x 200 KB keys, 1,000 x 100 KB, one 1.5 MB message) "
              "sent in %.1fs: %d overflows counted (%d by the key cap), view matched "
              "Redis %.1fs after the flood began; peak RSS %.1f MiB (%.1f before)"
              % (sent_s, n, after_key_cap - base, took, peak, before))
        self.assertEqual(a, r)
        self.assertGreaterEqual(after_key_cap - base, 1, "the key cap's drop not counted")
        self.assertIn("over the 131072-byte cap", log)
        self.assertIn("pending set of keys to re-read", log)
        self.assertIn("a message of over 1048576 bytes: refused (the reply limit)", log)
        self.assertTrue(ag.alive)
        if h.sanitized():
            print("skipped: the peak RSS bound (an ASan build's RSS is its shadow and "
                  "quarantine)")
        else:
            self.assertLess(peak, RSS_LIMIT_MB, "peak RSS %.1f MiB" % peak)


if __name__ == "__main__":
    h.main()
