# SPDX-License-Identifier: BSD-3-Clause
"""The timed part of bench/reporters/python (run by it in the reporter's
venv): uncontended acquire + release cycles through the bare library and
through the reporter (reporting to SINK), interleaved: R rounds, each running
N cycles of both variants in alternating order.  Prints JSON: per library,
the seconds per cycle of each round for both variants."""

import asyncio
import json
import sys
import time

import redis
import redis.asyncio as aredis
import redis_lock

import lockwatch_reporter
from lockwatch_reporter import AsyncReportingLock, ReportingLock, ReportingRedisLock


def main():
    port, sink, rounds, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    lockwatch_reporter.configure(samples=sink)
    r = redis.Redis(port=port)
    ar = aredis.Redis(port=port)
    loop = asyncio.new_event_loop()

    def sync(cls):
        def run():
            for _ in range(n):
                lk = r.lock("bench:py:sync", timeout=10, lock_class=cls)
                lk.acquire()
                lk.release()
        return run

    def aio(cls):
        async def cycles():
            for _ in range(n):
                lk = ar.lock("bench:py:async", timeout=10, lock_class=cls)
                await lk.acquire()
                await lk.release()
        return lambda: loop.run_until_complete(cycles())

    def rlock(cls):
        def run():
            for _ in range(n):
                lk = cls(r, "bench:py:rlock", expire=10)
                lk.acquire()
                lk.release()
        return run

    libs = {
        "redis-py Lock": (sync(redis.lock.Lock), sync(ReportingLock)),
        "redis.asyncio Lock": (aio(aredis.lock.Lock), aio(AsyncReportingLock)),
        "python-redis-lock": (rlock(redis_lock.Lock), rlock(ReportingRedisLock)),
    }
    out = {}
    for name, (bare, rep) in libs.items():
        bare()
        rep()  # warm up both (connections, scripts)
        res = {k: [] for k in ("bare", "reporter", "again", "bare_cpu", "reporter_cpu", "again_cpu")}
        # "again": the bare library a second time, the run's own noise (A/A)
        variants = (("bare", bare), ("reporter", rep), ("again", bare))
        for i in range(rounds):
            order = variants[i % 3:] + variants[:i % 3]
            if i % 2:
                order = order[::-1]
            for label, fn in order:
                c0 = time.process_time()
                t0 = time.perf_counter()
                fn()
                res[label].append((time.perf_counter() - t0) / n)
                res[label + "_cpu"].append((time.process_time() - c0) / n)
        out[name] = res
    lockwatch_reporter.flush()
    out["stats"] = lockwatch_reporter.stats()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
