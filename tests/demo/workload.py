#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/demo/workload.py - the lock traffic `make demo` shows lockwatchd.

    workload.py --port PORT [--host 127.0.0.1] [--ready FILE]

Plays, against the throwaway redis that tests/demo/run started, every way
SPEC "What it is" says locks go wrong, next to healthy traffic:

  pool       ~200 plain locks (SET NX PX, compare-and-delete release) under
             lock:order:<id> and lock:invoice:<id>.  Each is held 2-12 s by a
             fresh token, then released (most) or left to expire (a holder
             that "crashed"), and taken again after a short gap, so the pool
             is alive but never trips max_hold.
  leaks      lock:invoice:4711 and lock:cron:nightly-report, SET without a
             TTL once and never touched again (OBJECT IDLETIME keeps growing).
  reentrant  lock:inventory:sku-1042 in Redisson's format: hash field
             <uuid>:<thread> taken 3 deep (HINCRBY x3) with a 30 s lease that
             a watchdog renews every 10 s, like Redisson's default.
  renewer    lock:payment:settlement: one holder that keeps its lock by
             compare-and-PEXPIRE every 2 s (the same token, forever).
  churn      4 workers contending for 3 hot locks lock:cart:<id>:
             try SET NX PX, back off, hold 0.1-0.8 s, release.

Writes FILE (if given) once every lock above exists, then runs until
SIGTERM/SIGINT.  Exits quietly when redis goes away.  Loopback only.
"""

import argparse
import os
import random
import signal
import socket
import sys
import threading
import time
import uuid

import redis

# KEYS[1] lock, ARGV[1] token: delete only if we still hold it.
RELEASE_LUA = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
# KEYS[1] lock, ARGV[1] token, ARGV[2] ms: extend only if we still hold it.
EXTEND_LUA = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""

POOL_ORDERS = range(1001, 1101)      # lock:order:1001 .. 1100
POOL_INVOICES = range(5001, 5101)    # lock:invoice:5001 .. 5100
LEAKS = ("lock:invoice:4711", "lock:cron:nightly-report")
REENTRANT_KEY = "lock:inventory:sku-1042"
RENEWED_KEY = "lock:payment:settlement"
HOT_KEYS = ("lock:cart:77001", "lock:cart:77002", "lock:cart:77003")

stop = threading.Event()


def token():
    return str(uuid.uuid4())


def guarded(fn):
    """Run a thread body; a lost redis ends the whole workload quietly."""
    def run(*a):
        try:
            fn(*a)
        except redis.exceptions.ConnectionError:
            if not stop.is_set():
                print("workload: redis went away; stopping", file=sys.stderr, flush=True)
            stop.set()
    return run


@guarded
def pool(r, rng):
    """Keep ~200 plain locks turning over, each held 2-12 s."""
    release = r.register_script(RELEASE_LUA)
    now = time.monotonic()
    slots = {}   # key -> [token or None, when the next step is due, expires on its own]
    for i in POOL_ORDERS:
        slots[f"lock:order:{i}"] = [None, now, False]
    for i in POOL_INVOICES:
        slots[f"lock:invoice:{i}"] = [None, now, False]
    while not stop.is_set():
        now = time.monotonic()
        for key, slot in slots.items():
            tok, due, crashed = slot
            if now < due:
                continue
            if tok is None:
                hold_ms = rng.randint(2000, 12000)
                tok = token()
                # A crashed holder's lock is still there until its PX runs out.
                if r.set(key, tok, nx=True, px=hold_ms + 3000):
                    crashed = rng.random() < 0.2
                    slot[:] = [tok, now + hold_ms / 1000.0, crashed]
                else:
                    slot[1] = now + 0.5
            else:
                if not crashed:
                    release(keys=[key], args=[tok])
                slot[:] = [None, now + rng.uniform(0.2, 2.0), False]
        stop.wait(0.2)


@guarded
def reentrant(r):
    """A Redisson-format lock taken 3 deep, its lease renewed by a watchdog."""
    field = f"{uuid.uuid4()}:57"
    for _ in range(3):
        r.hincrby(REENTRANT_KEY, field, 1)
        r.pexpire(REENTRANT_KEY, 30000)
    while not stop.wait(10):
        if r.hexists(REENTRANT_KEY, field):
            r.pexpire(REENTRANT_KEY, 30000)


@guarded
def renewer(r):
    """One holder that never lets go: compare-and-PEXPIRE every 2 s."""
    extend = r.register_script(EXTEND_LUA)
    tok = token()
    while not stop.is_set():
        if not r.set(RENEWED_KEY, tok, nx=True, px=6000) and r.get(RENEWED_KEY) != tok.encode():
            stop.wait(1)        # someone else holds it; wait and try again
            continue
        while not stop.wait(2):
            if not extend(keys=[RENEWED_KEY], args=[tok, 6000]):
                break           # lost it (should not happen): take it again


def reporter(agent):
    """A sender of lw1 sample lines (docs/line-protocol.md), or None."""
    if not agent:
        return None
    host, _, port = agent.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)

    def send(line):
        try:
            sock.sendto(line.encode() + b"\n", (host, int(port)))
        except OSError:
            pass                # never block or fail the worker
    return send


@guarded
def worker(r, rng, report):
    """Contend for a hot lock: SET NX PX with back-off, hold briefly, release;
    report each wait and hold to the agent like liblockwatch does."""
    release = r.register_script(RELEASE_LUA)
    while not stop.is_set():
        key = rng.choice(HOT_KEYS)
        tok = token()
        start = time.monotonic()
        deadline = start + 3.0
        got = False
        while not stop.is_set() and time.monotonic() < deadline:
            if r.set(key, tok, nx=True, px=5000):
                got = True
                break
            stop.wait(rng.uniform(0.02, 0.1))
        if report:
            report("lw1 wait %s %d %s" % (key, (time.monotonic() - start) * 1e6,
                                          "ok" if got else "timeout"))
        if got:
            held = time.monotonic()
            stop.wait(rng.uniform(0.1, 0.8))
            release(keys=[key], args=[tok])
            if report:
                report("lw1 hold %s %d" % (key, (time.monotonic() - held) * 1e6))
        stop.wait(rng.uniform(0.0, 0.3))


def main():
    ap = argparse.ArgumentParser(description="lock traffic for make demo")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ready", help="file to create once every lock exists")
    ap.add_argument("--agent", help="host:port to send wait/hold samples to")
    args = ap.parse_args()

    def on_signal(_signum, _frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def conn():
        return redis.Redis(host=args.host, port=args.port, socket_timeout=10)

    r = conn()
    r.ping()
    for key in LEAKS:       # never touched again: their idle time grows
        r.set(key, token())

    threads = [threading.Thread(target=pool, args=(conn(), random.Random(1))),
               threading.Thread(target=reentrant, args=(conn(),)),
               threading.Thread(target=renewer, args=(conn(),))]
    report = reporter(args.agent)
    threads += [threading.Thread(target=worker, args=(conn(), random.Random(10 + i), report))
                for i in range(4)]
    for t in threads:
        t.daemon = True
        t.start()

    # Ready once the long-lived ones exist and the pool has filled up.
    deadline = time.monotonic() + 10
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            if r.exists(REENTRANT_KEY, RENEWED_KEY) == 2 and r.dbsize() >= 150:
                break
        except redis.exceptions.ConnectionError:
            stop.set()
        time.sleep(0.1)
    if args.ready and not stop.is_set():
        with open(args.ready, "w") as f:
            f.write(f"{os.getpid()}\n")

    while not stop.wait(1):
        if not any(t.is_alive() for t in threads):
            break
    stop.set()
    for t in threads:
        t.join(timeout=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
