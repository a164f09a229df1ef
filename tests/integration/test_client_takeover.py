#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""liblockwatch: a handle whose lock was taken over never touches the new
holder's lock.  Its release (and extend) answers LW_LOST, and the new
holder's value / field is still there afterwards, for plain and reentrant
locks, whoever the new holder is (another liblockwatch client, redis-py,
Redisson)."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from client_helpers import Shell, redisson_acquire  # noqa: E402

SHORT_LEASE_MS = 300


class TakeoverTest(harness.TestCase):

    def setUp(self):
        super().setUp()
        self.redis = self.start_redis()
        self.r = self.redis.client(decode_responses=True)
        self.sh = Shell(self, self.redis.port)
        self.sh.ok("connect a agent=off")

    def expire_and_wait(self, key):
        harness.wait_until(lambda: self.r.exists(key) == 0, 5,
                           interval=0.02, desc="%s to expire" % key)

    def test_plain_release_after_takeover_by_redis_py(self):
        key = "lock:takeover:plain"
        self.sh.ok("lock a l1 %s %d 1000 -" % (key, SHORT_LEASE_MS))
        self.expire_and_wait(key)
        self.assertTrue(self.r.set(key, "someone-else", nx=True, px=30000))
        ans = self.sh.cmd("unlock l1")
        self.assertTrue(ans.startswith("LOST"), ans)
        self.assertEqual(self.r.get(key), "someone-else")

    def test_plain_release_after_takeover_by_liblockwatch(self):
        key = "lock:takeover:plain2"
        other = Shell(self, self.redis.port)
        other.ok("connect b agent=off")
        self.sh.ok("lock a l1 %s %d 1000 -" % (key, SHORT_LEASE_MS))
        self.expire_and_wait(key)
        ans = other.ok("lock b l2 %s 30000 1000 -" % key)
        token = ans.split("token=")[1]
        self.assertTrue(self.sh.cmd("extend l1 1000").startswith("LOST"))
        self.assertEqual(self.sh.cmd("lost l1"), "1")
        self.assertTrue(self.sh.cmd("unlock l1").startswith("LOST"))
        self.assertEqual(self.r.get(key), token)
        self.assertGreater(self.r.pttl(key), 20000)    # extend did not touch it
        other.ok("unlock l2")
        self.assertEqual(self.r.exists(key), 0)

    def test_plain_release_of_expired_lock_without_new_holder(self):
        key = "lock:takeover:gone"
        self.sh.ok("lock a l1 %s %d 1000 -" % (key, SHORT_LEASE_MS))
        self.expire_and_wait(key)
        self.assertTrue(self.sh.cmd("unlock l1").startswith("LOST"))

    def test_plain_lock_replaced_by_a_hash(self):
        # someone else's lock of another type: "not ours", not an error
        key = "lock:takeover:typed"
        self.sh.ok("lock a l1 %s %d 1000 -" % (key, SHORT_LEASE_MS))
        self.expire_and_wait(key)
        self.assertIsNone(redisson_acquire(self.r, key, "0b1f4c5e-0000-4000-8000-000000000001:7"))
        self.assertTrue(self.sh.cmd("unlock l1").startswith("LOST"))
        self.assertEqual(self.r.hgetall(key),
                         {"0b1f4c5e-0000-4000-8000-000000000001:7": "1"})

    def test_reentrant_release_after_takeover(self):
        key = "lock:takeover:reentrant"
        other_field = "8743c9c0-0795-4907-87fd-6c719a6b4586:57"
        ans = self.sh.ok("lock a l1 %s %d 1000 reentrant" % (key, SHORT_LEASE_MS))
        ours = ans.split("token=")[1]
        tid = ours.rsplit(":", 1)[1]
        registry = "lockwatch:client:{%s}" % ours.rsplit(":", 1)[0]
        self.assertIn("at:%s:%s" % (tid, key), self.r.hgetall(registry))
        self.expire_and_wait(key)
        self.assertIsNone(redisson_acquire(self.r, key, other_field))
        self.assertTrue(self.sh.cmd("extend l1 1000").startswith("LOST"))
        self.assertTrue(self.sh.cmd("unlock l1").startswith("LOST"))
        self.assertEqual(self.r.hgetall(key), {other_field: "1"})
        self.assertGreater(self.r.pttl(key), 20000)
        # the registry forgets a hold that is gone
        self.assertNotIn("at:%s:%s" % (tid, key), self.r.hgetall(registry))

    def test_reentrant_twice_taken_release_after_takeover(self):
        key = "lock:takeover:reentrant2"
        other_field = "8743c9c0-0795-4907-87fd-6c719a6b4586:58"
        self.sh.ok("lock a l1 %s %d 1000 reentrant" % (key, SHORT_LEASE_MS))
        self.sh.ok("lock a l2 %s %d 1000 reentrant" % (key, SHORT_LEASE_MS))
        self.assertEqual(list(self.r.hgetall(key).values()), ["2"])
        self.expire_and_wait(key)
        self.assertIsNone(redisson_acquire(self.r, key, other_field))
        self.assertTrue(self.sh.cmd("unlock l1").startswith("LOST"))
        self.assertTrue(self.sh.cmd("unlock l2").startswith("LOST"))
        self.assertEqual(self.r.hgetall(key), {other_field: "1"})

    def test_reentrant_lock_replaced_by_a_string(self):
        key = "lock:takeover:typed2"
        self.sh.ok("lock a l1 %s %d 1000 reentrant" % (key, SHORT_LEASE_MS))
        self.expire_and_wait(key)
        self.assertTrue(self.r.set(key, "plain-holder", nx=True, px=30000))
        self.assertTrue(self.sh.cmd("unlock l1").startswith("LOST"))
        self.assertEqual(self.r.get(key), "plain-holder")

    def test_release_while_held_is_ok(self):
        # the control: nothing taken over, release answers OK and deletes
        for flags in ("-", "reentrant"):
            key = "lock:takeover:control:" + flags
            self.sh.ok("lock a l1 %s 5000 1000 %s" % (key, flags))
            self.assertEqual(self.r.exists(key), 1)
            self.sh.ok("unlock l1")
            self.assertEqual(self.r.exists(key), 0)


if __name__ == "__main__":
    harness.main()
