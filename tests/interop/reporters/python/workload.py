# SPDX-License-Identifier: BSD-3-Clause
"""The application side of tests/interop/reporters/python/test: runs in the
venv tests/interop/reporters/python/fetch built (redis-py 5.2.1,
python-redis-lock 4.0.0, lockwatch-reporter) and prints one JSON object.

  workload.py contend LIB PORT SECONDS PREFIX   8 threads (sync, redislock)
        or 8 asyncio tasks (async) on 4 locks; reports, per key, the acquires
        made and the waits the reporter reported (its tap), in microseconds
  workload.py lost PORT PREFIX                   four forced lost leases
  workload.py down PORT TARGET N                 lock calls with the reporter
        aimed at TARGET vs without it: results and per-call times
  workload.py deadlock PORT HELD WANTED SECONDS  acquire HELD (blocking),
        print "HELD", read a line on stdin, then wait up to SECONDS for
        WANTED (the test's cross-language deadlock: liblockwatch holds WANTED
        and waits for HELD)

LOCKWATCH_SAMPLES / LOCKWATCH_KEY_FILE come from the environment.
"""

import asyncio
import json
import random
import sys
import threading
import time

import redis
import redis.asyncio as aredis
import redis_lock
from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

import lockwatch_reporter
from lockwatch_reporter import AsyncReportingLock, ReportingLock, ReportingRedisLock
from lockwatch_reporter import _sender

NAMES = ["orders", "payments", "users", "stock"]


def tap_waits():
    waits = {}
    glock = threading.Lock()

    def tap(ev):  # an acquire call's event: ("ok" | "end", key, party, holder, t0, t1, ...)
        if ev[0] in ("ok", "end"):
            key = ev[1].decode() if isinstance(ev[1], bytes) else ev[1]
            with glock:   # the microseconds the sender writes (_wire.Encoder)
                waits.setdefault(key, []).append((ev[5] - ev[4]) // 1000)
    rep = _sender.get()
    rep.tap = tap
    return waits


def contend(lib, port, seconds, prefix):
    waits = tap_waits()
    keys = ["%s:%s" % (prefix, n) for n in NAMES]
    acquires = {}
    count_lock = threading.Lock()
    stop_at = time.monotonic() + seconds
    errors = []

    def count(key):
        with count_lock:
            acquires[key] = acquires.get(key, 0) + 1

    if lib == "async":
        async def task(seed):
            rnd = random.Random(seed)
            r = aredis.Redis(port=port)
            try:
                while time.monotonic() < stop_at:
                    key = rnd.choice(keys)
                    lk = r.lock(key, timeout=10, sleep=0.001, lock_class=AsyncReportingLock)
                    await lk.acquire()
                    count(key)
                    await asyncio.sleep(rnd.uniform(0, 0.002))
                    await lk.release()
            finally:
                await r.aclose()

        async def main():
            await asyncio.gather(*(task(i) for i in range(8)))
        asyncio.run(main())
    else:
        def worker(seed):
            rnd = random.Random(seed)
            r = redis.Redis(port=port)
            try:
                while time.monotonic() < stop_at:
                    key = rnd.choice(keys)
                    if lib == "sync":
                        lk = r.lock(key, timeout=10, sleep=0.001, lock_class=ReportingLock)
                        lk.acquire()
                        count(key)
                        time.sleep(rnd.uniform(0, 0.002))
                        lk.release()
                    else:
                        lk = ReportingRedisLock(r, key, expire=10)
                        lk.acquire()
                        count("lock:" + key)
                        time.sleep(rnd.uniform(0, 0.002))
                        lk.release()
            except Exception as e:  # reported, the test fails on it
                errors.append(repr(e))
            finally:
                r.close()
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    lockwatch_reporter.flush()
    return {"acquires": acquires, "waits": waits, "errors": errors,
            "stats": lockwatch_reporter.stats()}


def lost(port, prefix):
    r = redis.Redis(port=port)
    other = redis.Redis(port=port)
    out = {}

    # a: a lease without renewal runs out, another client takes the lock,
    #    the release finds it lost (LockNotOwnedError still raised)
    k = prefix + ":release"
    lk = r.lock(k, timeout=0.3, lock_class=ReportingLock)
    lk.acquire()
    time.sleep(0.6)
    assert other.lock(k, timeout=5).acquire(blocking=False)
    try:
        lk.release()
        out["release"] = "no error"
    except LockNotOwnedError:
        out["release"] = "LockNotOwnedError"

    # b: the same, found by extend()
    k = prefix + ":extend"
    lk = r.lock(k, timeout=0.3, lock_class=ReportingLock)
    lk.acquire()
    time.sleep(0.6)
    assert other.lock(k, timeout=5).acquire(blocking=False)
    try:
        lk.extend(1)
        out["extend"] = "no error"
    except LockNotOwnedError:
        out["extend"] = "LockNotOwnedError"

    # c: python-redis-lock's auto-renewal: another client takes the key
    #    over; the renewal thread's next extend finds it lost
    name = prefix + ":renewal"
    lk = ReportingRedisLock(r, name, expire=1, auto_renewal=True)
    lk.acquire()
    other.set("lock:" + name, "someone-else", ex=5)
    time.sleep(1.2)  # renewal every 2/3 s
    try:
        lk.release()
        out["renewal_release"] = "no error"
    except redis_lock.NotAcquired:
        out["renewal_release"] = "NotAcquired"

    # d: redis.asyncio, lost at release
    async def alost():
        ar = aredis.Redis(port=port)
        k = prefix + ":async"
        lk = ar.lock(k, timeout=0.3, lock_class=AsyncReportingLock)
        await lk.acquire()
        await asyncio.sleep(0.6)
        await other_async_take(ar, k)
        try:
            await lk.release()
            res = "no error"
        except LockNotOwnedError:
            res = "LockNotOwnedError"
        await ar.aclose()
        return res

    async def other_async_take(ar, k):
        assert await ar.set(k, "someone-else", nx=True, px=5000)
    out["async_release"] = asyncio.run(alost())
    lockwatch_reporter.flush()
    out["stats"] = lockwatch_reporter.stats()
    return out


def down(port, target, n):
    """Interleaved acquire+release with the reporter aimed at target and
    without it; any exception fails; results must be the same."""
    lockwatch_reporter.configure(samples=target)
    r = redis.Redis(port=port)
    key = "lwrep:py:down"
    times = {"with": [], "without": []}
    results = {"with": [], "without": []}
    busy = r.lock("lwrep:py:down:busy", timeout=30)
    busy.acquire()
    for i in range(n):
        for mode in (("with", "without") if i % 2 == 0 else ("without", "with")):
            cls = ReportingLock if mode == "with" else Lock
            t0 = time.perf_counter()
            lk = r.lock(key, timeout=5, lock_class=cls)
            a = lk.acquire(blocking=False)
            lk.release()
            tl = r.lock("lwrep:py:down:busy", timeout=5, lock_class=cls)
            b = tl.acquire(blocking=True, blocking_timeout=0.002, sleep=0.001)
            times[mode].append(time.perf_counter() - t0)
            results[mode].append((a, b))
    busy.release()
    lockwatch_reporter.flush()
    return {"times": times, "same": results["with"] == results["without"],
            "results": results["with"][:1], "stats": lockwatch_reporter.stats()}


def deadlock(port, held, wanted, seconds):
    r = redis.Redis(port=port)
    lh = r.lock(held, timeout=120, sleep=0.01, lock_class=ReportingLock)
    lh.acquire(blocking=True)
    print("HELD", flush=True)
    sys.stdin.readline()
    lw = r.lock(wanted, timeout=120, sleep=0.01, lock_class=ReportingLock)
    got = lw.acquire(blocking=True, blocking_timeout=seconds)
    lh.release()
    lockwatch_reporter.flush()
    return {"got": bool(got), "stats": lockwatch_reporter.stats()}


def main(argv):
    mode = argv[1]
    if mode == "deadlock":
        json.dump(deadlock(int(argv[2]), argv[3], argv[4], float(argv[5])), sys.stdout)
        return
    if mode == "contend":
        res = contend(argv[2], int(argv[3]), float(argv[4]), argv[5])
    elif mode == "lost":
        res = lost(int(argv[2]), argv[3])
    elif mode == "down":
        res = down(int(argv[2]), argv[3], int(argv[4]))
    else:
        raise SystemExit("unknown mode %s" % mode)
    json.dump(res, sys.stdout)


if __name__ == "__main__":
    main(sys.argv)
