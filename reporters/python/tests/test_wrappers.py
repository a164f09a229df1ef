# SPDX-License-Identifier: BSD-3-Clause
"""The lines the three wrappers send around fake clients (no Redis): an
acquire that got the lock at once, one that waited, one that timed out, a
non-blocking one that failed, the hold at release, and lost at release and
at extend.  Every acquire that acquired sends `waiting ... ok`, and one
that did not its `waiting` end only after a start, both in its 7-field wait
line; `waiting ... start` only goes out once the first attempt found the
lock taken (redis-py,
redis.asyncio, and python-redis-lock when it waits for the release's
signal).  Needs
redis-py (and python-redis-lock for its class; skipped otherwise); the real
libraries run in tests/interop/reporters/python."""

import asyncio
import gc
import os
import re
import socket
import threading
import unittest
import weakref

try:
    from redis.exceptions import LockNotOwnedError
    from redis._parsers.encoders import Encoder
    from lockwatch_reporter import ReportingLock, AsyncReportingLock
    HAVE_REDIS = True
except ImportError:  # redis-py absent, or too old for redis._parsers
    HAVE_REDIS = False
try:
    import redis_lock
    from lockwatch_reporter import ReportingRedisLock
    HAVE_REDIS_LOCK = HAVE_REDIS
except ImportError:
    HAVE_REDIS_LOCK = False

from lockwatch_reporter import _sender, _wire
from test_sender import FirstUse


class FakeRedis:
    """Just what redis.lock.Lock and python-redis-lock call: SET NX, GET,
    BLPOP (returns at once: nothing is ever pushed) and their scripts."""

    def __init__(self):
        self.data = {}
        self.enc = Encoder("utf-8", "strict", False) if HAVE_REDIS else None

    def get_encoder(self):
        return self.enc

    def set(self, name, value, nx=False, px=None, ex=None):
        if nx and name in self.data:
            return None
        self.data[name] = value
        return True

    def get(self, name):
        return self.data.get(name)

    blpop_hook = None   # called by blpop(): a release elsewhere

    def blpop(self, key, timeout=0):
        if self.blpop_hook is not None:
            self.blpop_hook()
            return (key, b"1")
        return None

    def register_script(self, text):
        return _Script(self, text)


class _Script:
    """A callable object, not a function: redis-py keeps scripts as class
    attributes, where a function would become a method.  redis-py's scripts
    answer 1 for "ours", python-redis-lock's (bytes) 0 for "ours"."""

    def __init__(self, fake, text):
        self.fake = fake
        self.delete = "'del'" in str(text) or '"del", KEYS[1]' in str(text)
        self.rlock = isinstance(text, bytes)

    def __call__(self, keys=(), args=(), client=None):
        data = (client or self.fake).data
        v = data.get(keys[0])
        mine = v == args[0] or (isinstance(v, str) and v.encode() == args[0])
        if mine and self.delete:
            del data[keys[0]]
        if self.rlock:
            return 0 if mine else 1
        return 1 if mine else 0


class AsyncFake(FakeRedis):
    """redis.asyncio's view of the same: awaitable SET and scripts."""

    async def set(self, name, value, nx=False, px=None, ex=None):
        return FakeRedis.set(self, name, value, nx=nx, px=px)

    def register_script(self, text):
        return _AsyncScript(self, text)


class _AsyncScript(_Script):
    async def __call__(self, keys=(), args=(), client=None):
        return _Script.__call__(self, keys, args, client)


OWNER = "h:1/"


class Lines(unittest.TestCase):
    def setUp(self):
        self.rep = _sender.configure(samples="127.0.0.1:9", flush_seconds=3600)
        self.evs = []
        self.rep.tap = self.evs.append
        self.enc = _wire.Encoder("h:1")

    def tearDown(self):
        _sender.configure(samples="off")

    def lines(self):
        """The lines of the events tapped so far (then forgotten), times
        written as <us>, the holder ids kept as they are."""
        out = []
        for e in self.evs:
            for ln in self.enc.encode(e).decode().split("\n"):
                ln = re.sub(r"^(lw1 wait \S+) \d+ ", r"\1 <us> ", ln)
                out.append(re.sub(r"^(lw1 hold \S+) \d+ ", r"\1 <us> ", ln))
        self.evs.clear()
        return out


@unittest.skipUnless(HAVE_REDIS, "redis-py is not installed")
class RedisPy(Lines):
    def setUp(self):
        super().setUp()
        ReportingLock.lua_release = ReportingLock.lua_extend = ReportingLock.lua_reacquire = None
        self.me = OWNER + str(threading.get_ident())

    def test_at_once_waited_timed_out_nonblocking(self):
        r = FakeRedis()
        a = ReportingLock(r, "lock:a", timeout=10)
        self.assertTrue(a.acquire())
        ta = a.local.token.decode()
        # at once: no start, but the wait with owner and the token Redis
        # shows (its `waiting ... ok`) in one line
        self.assertEqual(self.lines(), ["lw1 wait lock:a <us> ok %s %s" % (self.me, ta)])
        b = ReportingLock(r, "lock:a", timeout=10)
        self.assertFalse(b.acquire(blocking=False))
        # non-blocking, failed: no start, no waiting end: the 5-field wait
        self.assertEqual(self.lines(), ["lw1 wait lock:a <us> timeout"])
        self.assertFalse(b.acquire(blocking_timeout=0.01, sleep=0.005, token="tok-b"))
        # timed out: start (its first attempt found the lock taken), then
        # the wait that ends it
        self.assertEqual(self.lines(), ["lw1 waiting lock:a %s tok-b start" % self.me,
                                        "lw1 wait lock:a <us> timeout %s tok-b" % self.me])
        a.release()
        self.assertEqual(self.lines(), ["lw1 hold lock:a <us> %s %s" % (self.me, ta)])

    def test_waited(self):
        r = FakeRedis()
        r.data["lock:w"] = b"other"
        a = ReportingLock(r, "lock:w", timeout=10, sleep=0.005)
        t = threading.Timer(0.05, lambda: r.data.pop("lock:w"))
        t.start()
        self.assertTrue(a.acquire())
        t.join()
        # the wait counts from the call's start
        self.assertGreaterEqual((self.evs[1][5] - self.evs[1][4]) // 1000, 40000)
        tok = a.local.token.decode()
        a.release()
        self.assertEqual(self.lines(), ["lw1 waiting lock:w %s %s start" % (self.me, tok),
                                        "lw1 wait lock:w <us> ok %s %s" % (self.me, tok),
                                        "lw1 hold lock:w <us> %s %s" % (self.me, tok)])

    def test_nonblocking_acquired(self):
        # a try-lock without a wait time that got the lock sends `ok` too
        r = FakeRedis()
        a = ReportingLock(r, "lock:n", timeout=10)
        self.assertTrue(a.acquire(blocking=False, token="tok-n"))
        self.assertEqual(self.lines(), ["lw1 wait lock:n <us> ok %s tok-n" % self.me])

    def test_failed_without_start(self):
        # an acquire that sent no start and did not acquire ends in the
        # 5-field wait: no waiting end (here Redis fails its first attempt,
        # non-blocking and blocking alike)
        r = FakeRedis()

        def down(*a, **kw):
            raise ConnectionError("redis down")
        r.set = down
        for blocking in (False, True):
            with self.assertRaises(ConnectionError):
                ReportingLock(r, "lock:e", timeout=10).acquire(blocking=blocking)
            self.assertEqual([ln.split(" ") for ln in self.lines()],
                             [["lw1", "wait", "lock:e", "<us>", "error"]])

    def test_lost_at_release_and_extend(self):
        r = FakeRedis()
        a = ReportingLock(r, "lock:b", timeout=10)
        a.acquire(token="tok")
        self.lines()
        r.data["lock:b"] = b"someone else"
        with self.assertRaises(LockNotOwnedError):
            a.extend(5)
        with self.assertRaises(LockNotOwnedError):
            a.release()
        # lost once per holding, found before the lease's end: overrun 0
        self.assertEqual([re.sub(r" tok \d+ ", " tok <us> ", ln) for ln in self.lines()],
                         ["lw1 lost lock:b %s tok <us> 0 renewal" % self.me,
                          "lw1 hold lock:b <us> %s tok" % self.me])

    def test_off_is_the_library(self):
        _sender.configure(samples="off")
        r = FakeRedis()
        a = ReportingLock(r, "lock:c")
        self.assertTrue(a.acquire())
        a.release()
        self.assertEqual(self.evs, [])


@unittest.skipUnless(HAVE_REDIS, "redis-py is not installed")
class RedisAsyncio(Lines):
    def setUp(self):
        super().setUp()
        AsyncReportingLock.lua_release = None
        AsyncReportingLock.lua_extend = AsyncReportingLock.lua_reacquire = None

    def test_at_once_waited_timed_out_nonblocking(self):
        async def run():
            r = AsyncFake()
            me = OWNER + "task-%x" % id(asyncio.current_task())
            a = AsyncReportingLock(r, "lock:a", timeout=10, sleep=0.005)
            self.assertTrue(await a.acquire(token="tok-a"))
            self.assertEqual(self.lines(), ["lw1 wait lock:a <us> ok %s tok-a" % me])
            b = AsyncReportingLock(r, "lock:a", timeout=10, sleep=0.005)
            self.assertFalse(await b.acquire(blocking=False, token="tok-b"))
            self.assertEqual(self.lines(), ["lw1 wait lock:a <us> timeout"])
            self.assertFalse(await b.acquire(blocking_timeout=0.01, token="tok-b"))
            self.assertEqual(self.lines(), ["lw1 waiting lock:a %s tok-b start" % me,
                                            "lw1 wait lock:a <us> timeout %s tok-b" % me])
            asyncio.get_running_loop().call_later(0.03, lambda: r.data.pop("lock:a"))
            c = AsyncReportingLock(r, "lock:a", timeout=10, sleep=0.005)
            self.assertTrue(await c.acquire(token="tok-c"))
            self.assertEqual(self.lines(), ["lw1 waiting lock:a %s tok-c start" % me,
                                            "lw1 wait lock:a <us> ok %s tok-c" % me])
            await c.release()
            self.assertEqual(self.lines(), ["lw1 hold lock:a <us> %s tok-c" % me])
        asyncio.run(run())

    def test_a_cancelled_acquire_is_a_timeout(self):
        # the caller gave up (task.cancel(), asyncio.wait_for's deadline):
        # `timeout`, as a blocking_timeout would be, not a Redis `error`
        async def run():
            r = AsyncFake()
            r.data["lock:a"] = b"someone"
            b = AsyncReportingLock(r, "lock:a", timeout=10, sleep=0.005)
            t = asyncio.create_task(b.acquire(token="tok-b"))
            await asyncio.sleep(0.03)
            t.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await t
            me = OWNER + "task-%x" % id(t)
            self.assertEqual(self.lines(), ["lw1 waiting lock:a %s tok-b start" % me,
                                            "lw1 wait lock:a <us> timeout %s tok-b" % me])
            with self.assertRaises(asyncio.TimeoutError):
                await asyncio.wait_for(b.acquire(token="tok-c"), 0.03)
            self.assertEqual([ln.split(" ")[4] for ln in self.lines()][-1:], ["timeout"])
        asyncio.run(run())


@unittest.skipUnless(HAVE_REDIS_LOCK, "python-redis-lock is not installed")
class PythonRedisLock(Lines):
    def test_at_once_waited_timed_out_nonblocking(self):
        r = FakeRedis()
        me = OWNER + str(threading.get_ident())
        a = ReportingRedisLock(r, "a", expire=10, id="tok-a", strict=False)
        self.assertTrue(a.acquire())
        # a blocking acquire that got the lock at once sends no start
        self.assertEqual(self.lines(), ["lw1 wait lock:a <us> ok %s tok-a" % me])
        b = ReportingRedisLock(r, "a", expire=10, id="tok-b", strict=False)
        self.assertFalse(b.acquire(blocking=False))
        self.assertEqual(self.lines(), ["lw1 wait lock:a <us> timeout"])
        # one that found it taken sends its start when the library waits
        # for the release's signal (BLPOP: the fake's returns at once)
        self.assertFalse(b.acquire(timeout=1))
        self.assertEqual(self.lines(), ["lw1 waiting lock:a %s tok-b start" % me,
                                        "lw1 wait lock:a <us> timeout %s tok-b" % me])
        a.release()
        self.assertEqual(self.lines(), ["lw1 hold lock:a <us> %s tok-a" % me])
        # one woken twice (the second time the lock is free) sends one start
        r.data["lock:a"] = "someone else"
        woken = []
        r.blpop_hook = lambda: woken.append(1) if len(woken) < 1 else r.data.pop("lock:a")
        d = ReportingRedisLock(r, "a", expire=10, id="tok-d", strict=False)
        self.assertTrue(d.acquire())
        r.blpop_hook = None
        self.assertEqual(self.lines(), ["lw1 waiting lock:a %s tok-d start" % me,
                                        "lw1 wait lock:a <us> ok %s tok-d" % me])
        d.release()
        self.lines()
        self.assertIs(d._client, a._client)   # one watcher per client
        c = ReportingRedisLock(r, "a", expire=10, id="tok-c", strict=False)
        self.assertTrue(c.acquire(blocking=False))
        self.assertEqual(self.lines(), ["lw1 wait lock:a <us> ok %s tok-c" % me])
        r.data["lock:a"] = "someone else"
        with self.assertRaises(redis_lock.NotAcquired):
            c.release()
        self.assertEqual([re.sub(r" tok-c \d+ ", " tok-c <us> ", ln) for ln in self.lines()],
                         ["lw1 lost lock:a %s tok-c <us> 0 expired" % me,
                          "lw1 hold lock:a <us> %s tok-c" % me])

    def test_the_client_watcher_goes_with_the_client(self):
        # (python-redis-lock keeps the client its scripts were registered
        # with: a first lock registers them with another)
        ReportingRedisLock(FakeRedis(), "x", expire=10, strict=False)
        r = FakeRedis()
        a = ReportingRedisLock(r, "a", expire=10, id="tok-a", strict=False)
        self.assertTrue(a.acquire())
        a.release()
        self.lines()
        self.assertIs(a._client._lw_client, r)
        ref = weakref.ref(r)
        del r, a
        gc.collect()
        self.assertIsNone(ref())


@unittest.skipUnless(HAVE_REDIS, "redis-py is not installed")
class FirstLockCall(FirstUse, unittest.TestCase):
    """The first lock call of the process makes the reporter: the name of
    the agent (resolved in 0.5 s) and the key file are the reporter's
    thread's to resolve and read, not the caller's nor an event loop's; the
    lines of that first call go out once they are (a trial measured 3 s on
    the first acquire with a slow resolver, 0.2 ms on the next)."""

    def setUp(self):
        super().setUp()
        for cls in (ReportingLock, AsyncReportingLock):
            cls.lua_release = cls.lua_extend = cls.lua_reacquire = None

    def assert_sent(self, key, tok):
        lines = sorted(re.sub(r"^(lw1 \w+ \S+) \d+ ", r"\1 <us> ", ln) for ln in self.received(2))
        owner = lines[0].split(" ")[4]
        self.assertTrue(owner.startswith("%s:%d/" % (socket.gethostname(), os.getpid())))
        self.assertEqual(lines, ["lw1 hold %s <us> %s %s" % (key, owner, tok),
                                 "lw1 wait %s <us> ok %s %s" % (key, owner, tok)])

    def test_redis_py(self):
        a = ReportingLock(FakeRedis(), "lock:first", timeout=10)
        self.assertTrue(a.acquire(token="tok-1"))
        a.release()
        self.assert_resolved_by_the_reporter(threading.get_ident())
        self.assert_sent("lock:first", "tok-1")

    def test_redis_asyncio(self):
        async def run():
            a = AsyncReportingLock(AsyncFake(), "lock:first", timeout=10)
            self.assertTrue(await a.acquire(token="tok-a"))
            await a.release()
            return threading.get_ident()
        loop_thread = asyncio.run(run())
        self.assert_resolved_by_the_reporter(loop_thread)
        self.assert_sent("lock:first", "tok-a")

    @unittest.skipUnless(HAVE_REDIS_LOCK, "python-redis-lock is not installed")
    def test_python_redis_lock(self):
        a = ReportingRedisLock(FakeRedis(), "first", expire=10, id="tok-p", strict=False)
        self.assertTrue(a.acquire())
        a.release()
        self.assert_resolved_by_the_reporter(threading.get_ident())
        self.assert_sent("lock:first", "tok-p")


if __name__ == "__main__":
    unittest.main()
