#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# run-all: quiet (a waiter must wake within 0.1 s of Redisson's unlock)
"""liblockwatch's reentrant locks are Redisson RLocks on the wire.

Redisson's own acquire and unlock scripts (client_helpers.REDISSON_*, from
RedissonLock.java) run here on a separate redis-py connection, standing in
for a Java service:
  - a lock taken by liblockwatch blocks Redisson's acquire (it answers the
    PTTL), and the hash is exactly <key> -> {"<uuid>:<tid>": count};
  - a lock taken by Redisson's script blocks liblockwatch's reentrant (and
    plain) acquire;
  - a liblockwatch waiter wakes on the "0" that Redisson's unlock publishes
    on redisson_lock__channel:{key} (counted as a pub/sub wake-up, long
    before its re-check would have run);
  - liblockwatch's release publishes "0" on that same channel, so Redisson
    waiters wake too; the brace rule for keys that hold a '{' is Redisson's.
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from client_helpers import Shell, parse_kv, prefixed, redisson_acquire, redisson_unlock  # noqa: E402

JAVA_FIELD = "8743c9c0-0795-4907-87fd-6c719a6b4586:57"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


class RedissonTest(harness.TestCase):

    def setUp(self):
        super().setUp()
        self.redis = self.start_redis()
        self.r = self.redis.client(decode_responses=True)
        self.sh = Shell(self, self.redis.port)
        self.uuid = self.sh.ok("connect a agent=off").split()[1]
        self.tid = self.sh.cmd("tid")

    def test_client_id_is_a_lowercase_uuid4(self):
        self.assertRegex(self.uuid, UUID_RE)

    def test_liblockwatch_lock_blocks_redisson(self):
        key = "lock:rs:a"
        ans = self.sh.ok("lock a l1 %s 20000 1000 reentrant" % key)
        field = "%s:%s" % (self.uuid, self.tid)
        self.assertEqual(parse_kv(ans)["token"], field)
        self.assertEqual(self.r.type(key), "hash")
        self.assertEqual(self.r.hgetall(key), {field: "1"})
        pttl = redisson_acquire(self.r, key, JAVA_FIELD)
        self.assertIsNotNone(pttl, "Redisson took a lock liblockwatch holds")
        self.assertTrue(15000 < pttl <= 20000, pttl)
        # reentry by the same thread counts up, as Redisson's would
        self.sh.ok("lock a l2 %s 20000 1000 reentrant" % key)
        self.assertEqual(self.r.hgetall(key), {field: "2"})
        # and Redisson's unlock of a field it does not own changes nothing
        self.assertIsNone(redisson_unlock(self.r, key, JAVA_FIELD))
        self.assertEqual(self.r.hgetall(key), {field: "2"})
        self.sh.ok("unlock l2")
        self.assertEqual(self.r.hgetall(key), {field: "1"})
        self.sh.ok("unlock l1")
        self.assertEqual(self.r.exists(key), 0)
        self.assertIsNone(redisson_acquire(self.r, key, JAVA_FIELD))

    def test_redisson_lock_blocks_liblockwatch(self):
        key = "lock:rs:b"
        self.assertIsNone(redisson_acquire(self.r, key, JAVA_FIELD))
        ans = self.sh.cmd("trylock a l1 %s 0 reentrant" % key)
        self.assertTrue(ans.startswith("BUSY"), ans)
        ans = self.sh.cmd("trylock a l1 %s 0 -" % key)
        self.assertTrue(ans.startswith("BUSY"), ans)
        ans = self.sh.cmd("lock a l1 %s 0 200 reentrant,fencing" % key)
        self.assertTrue(ans.startswith("TIMEOUT"), ans)
        self.assertEqual(self.r.hgetall(key), {JAVA_FIELD: "1"})
        self.assertEqual(self.r.exists(prefixed("lockwatch_fence", key)), 0)
        self.assertEqual(redisson_unlock(self.r, key, JAVA_FIELD), 1)
        self.sh.ok("trylock a l1 %s 0 reentrant" % key)
        self.sh.ok("unlock l1")

    def check_wakes_on_redisson_unlock(self, key):
        self.assertIsNone(redisson_acquire(self.r, key, JAVA_FIELD, lease_ms=60000))
        before = self.sh.stats("a")
        self.sh.send("lock a l1 %s 0 20000 reentrant" % key)
        # long enough for the waiter's re-check interval to reach 250 ms
        time.sleep(1.2)
        t_unlock = time.monotonic()
        self.assertEqual(redisson_unlock(self.r, key, JAVA_FIELD, lease_ms=60000), 1)
        ans = self.sh.recv(timeout=10)
        handoff = time.monotonic() - t_unlock
        self.assertTrue(ans.startswith("OK"), ans)
        after = self.sh.stats("a")
        self.assertGreaterEqual(after["wakeups"] - before["wakeups"], 1,
                                "woken by a re-check, not by Redisson's publish")
        # a re-check would have come up to 250 ms later
        self.assertLess(handoff, 0.1)
        self.assertEqual(self.r.hgetall(key), {"%s:%s" % (self.uuid, self.tid): "1"})
        self.sh.ok("unlock l1")

    def test_waiter_wakes_on_redisson_unlock(self):
        self.check_wakes_on_redisson_unlock("lock:rs:c")

    def test_waiter_wakes_on_redisson_unlock_braced_key(self):
        # a key with its own hash tag: channel redisson_lock__channel:<key>
        self.check_wakes_on_redisson_unlock("lock:{rs}:d")

    def test_liblockwatch_unlock_publishes_for_redisson_waiters(self):
        for key in ("lock:rs:e", "lock:{rs}:f"):
            channel = prefixed("redisson_lock__channel", key)
            ps = self.r.pubsub()
            ps.subscribe(channel)
            self.assertEqual(ps.get_message(timeout=2)["type"], "subscribe")
            self.sh.ok("lock a l1 %s 0 1000 reentrant" % key)
            self.sh.ok("lock a l2 %s 0 1000 reentrant" % key)
            self.sh.ok("unlock l2")
            self.assertIsNone(ps.get_message(timeout=0.2), "published before the last hold went")
            self.sh.ok("unlock l1")
            msg = ps.get_message(timeout=2)
            self.assertIsNotNone(msg, "no publish on %s" % channel)
            self.assertEqual((msg["channel"], msg["data"]), (channel, "0"))
            ps.close()
            # and a Redisson waiter's retry now succeeds
            self.assertIsNone(redisson_acquire(self.r, key, JAVA_FIELD))
            self.assertEqual(redisson_unlock(self.r, key, JAVA_FIELD), 1)

    def test_same_client_other_thread_is_excluded(self):
        # the field names the thread: another thread of the same client is
        # another holder, as in Redisson
        key = "lock:rs:g"
        self.sh.ok("lock a l1 %s 0 1000 reentrant" % key)
        self.assertEqual(self.sh.cmd("trythread a %s 0 reentrant" % key), "BUSY")
        self.sh.ok("unlock l1")
        self.assertEqual(self.sh.cmd("trythread a %s 0 reentrant" % key), "OK")

    def test_watchdog_renews_like_redisson(self):
        sh = Shell(self, self.redis.port)
        sh.ok("connect w agent=off lease=900")
        key = "lock:rs:h"
        sh.ok("lock w l1 %s 0 1000 reentrant" % key)
        low = 900
        t_end = time.monotonic() + 2.7
        while time.monotonic() < t_end:
            pttl = self.r.pttl(key)
            self.assertGreater(pttl, 0, "lock gone while the watchdog runs")
            low = min(low, pttl)
            time.sleep(0.03)
        self.assertGreater(low, 300)
        sh.ok("unlock l1")


if __name__ == "__main__":
    harness.main()
