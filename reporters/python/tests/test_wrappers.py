# SPDX-License-Identifier: BSD-3-Clause
"""The events ReportingLock sends around a fake redis-py client (no Redis):
acquire, timeout, release, lost at release and at extend.  Needs redis-py
installed (skipped otherwise); the real libraries run in
tests/interop/reporters/python."""

import threading
import unittest

try:
    from redis.exceptions import LockNotOwnedError
    from redis._parsers.encoders import Encoder
    from lockwatch_reporter import ReportingLock
    HAVE_REDIS = True
except ImportError:  # redis-py absent, or too old for redis._parsers
    HAVE_REDIS = False

from lockwatch_reporter import _sender


class FakeRedis:
    """Just what redis.lock.Lock calls: SET NX and three scripts."""

    def __init__(self):
        self.data = {}
        self.enc = Encoder("utf-8", "strict", False)

    def get_encoder(self):
        return self.enc

    def set(self, name, value, nx=False, px=None):
        if nx and name in self.data:
            return False
        self.data[name] = value
        return True

    def register_script(self, text):
        return _Script(self, text)


class _Script:
    """A callable object, not a function: redis-py keeps scripts as class
    attributes, where a function would become a method."""

    def __init__(self, fake, text):
        self.fake = fake
        self.delete = "'del'" in text

    def __call__(self, keys=(), args=(), client=None):
        data = self.fake.data
        mine = data.get(keys[0]) == args[0]
        if mine and self.delete:
            del data[keys[0]]
        return 1 if mine else 0


@unittest.skipUnless(HAVE_REDIS, "redis-py is not installed")
class Wrappers(unittest.TestCase):
    def setUp(self):
        self.rep = _sender.configure(samples="127.0.0.1:9", flush_seconds=3600)
        self.evs = []
        self.rep.tap = self.evs.append
        ReportingLock.lua_release = ReportingLock.lua_extend = ReportingLock.lua_reacquire = None

    def tearDown(self):
        _sender.configure(samples="off")

    def kinds(self):
        out = []
        for e in self.evs:
            if e[0] == "acquired":
                out += (["waiting:" + e[5]] if e[6] else []) + ["wait:" + e[5]]
            elif e[0] == "waiting":
                out.append("waiting:" + e[4])
            elif e[0] == "lost":
                out.append("lost:" + e[6])
            else:
                out.append(e[0])
        return out

    def test_acquire_release_timeout(self):
        r = FakeRedis()
        a = ReportingLock(r, "lock:a", timeout=10)
        self.assertTrue(a.acquire())
        b = ReportingLock(r, "lock:a", timeout=10)
        self.assertFalse(b.acquire(blocking=False))
        self.assertFalse(b.acquire(blocking_timeout=0.01, sleep=0.005))
        a.release()
        # no waiting lines for an acquire whose first attempt got the lock
        self.assertEqual(self.kinds(), ["wait:ok", "wait:timeout",
                                        "waiting:start", "waiting:timeout", "wait:timeout",
                                        "hold"])
        self.assertEqual(self.evs[0][3], self.evs[-1][4])   # the holder id: a's token
        self.assertEqual(self.evs[2][3], self.evs[3][3])    # b's start and end: b's token
        self.assertNotEqual(self.evs[2][3], self.evs[0][3])
        self.assertEqual(self.evs[2][2], threading.get_ident())

    def test_waiting_start_when_the_first_attempt_fails(self):
        r = FakeRedis()
        r.data["lock:w"] = b"other"
        a = ReportingLock(r, "lock:w", timeout=10, sleep=0.005)
        t = threading.Timer(0.05, lambda: r.data.pop("lock:w"))
        t.start()
        self.assertTrue(a.acquire())
        t.join()
        a.release()
        self.assertEqual(self.kinds(), ["waiting:start", "waiting:ok", "wait:ok", "hold"])
        self.assertGreaterEqual(self.evs[1][4], 40000)   # us, from the call's start

    def test_lost_at_release_and_extend(self):
        r = FakeRedis()
        a = ReportingLock(r, "lock:b", timeout=10)
        a.acquire()
        r.data["lock:b"] = b"someone else"
        with self.assertRaises(LockNotOwnedError):
            a.extend(5)
        with self.assertRaises(LockNotOwnedError):
            a.release()
        self.assertEqual(self.kinds(), ["wait:ok", "lost:renewal", "hold"])  # lost once per holding
        self.assertEqual(self.evs[1][5], 0)   # found before the lease's end: overrun 0

    def test_off_is_the_library(self):
        _sender.configure(samples="off")
        r = FakeRedis()
        a = ReportingLock(r, "lock:c")
        self.assertTrue(a.acquire())
        a.release()
        self.assertEqual(self.evs, [])


if __name__ == "__main__":
    unittest.main()
