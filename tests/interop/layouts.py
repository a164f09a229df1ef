# SPDX-License-Identifier: BSD-3-Clause
"""`runner.py --layouts DIR`: each real client takes, re-enters, waits on and
releases its locks, and after every step the whole of Redis is written down
(clientproc.LayoutRecorder): the facts the format table is built on."""

import os
import time

import clients
import clientproc

import harness


def _wait(pend, timeout=60):
    return pend.result(timeout)


def _until(pred, timeout=30, desc="condition"):
    return harness.wait_until(pred, timeout, 0.05, desc)


def redisson(kind, out):
    rs = harness.RedisServer()
    try:
        rec = clientproc.LayoutRecorder(rs.port, clients.CLIENTS[kind])
        a = clients.start(kind, rs.port, name=kind + "#1")
        b = clients.start(kind, rs.port, name=kind + "#2")
        rec.note("# client #1: %s\n# client #2: %s\n" % (a.ready["info"], b.ready["info"]))
        r = rec.r
        # RLock
        a.do("a1 lock rlock lock:rlock")
        rec.step("RLock: #1 thread a1 lock() (watchdog lease)")
        a.do("a1 lock rlock lock:rlock")
        rec.step("RLock: #1 a1 re-enters")
        w = b.pending("b1 lock rlock lock:rlock")
        _until(lambda: r.pubsub_numsub("redisson_lock__channel:{lock:rlock}")[0][1] >= 1,
               desc="#2 subscribed")
        rec.step("RLock: #2 b1 waits in lock()")
        a.do("a1 unlock rlock lock:rlock")
        a.do("a1 unlock rlock lock:rlock")
        _wait(w)
        rec.step("RLock: #1 a1 unlocks twice; #2 b1 acquires")
        b.do("b1 unlock rlock lock:rlock")
        a.do("a2 lock rlock lock:lease lease=20000")
        rec.step("RLock: #2 b1 unlocked; #1 a2 lock(leaseTime=20 s)")
        a.do("a2 unlock rlock lock:lease")
        r.flushall()
        # fair lock
        a.do("a1 lock fair lock:fair")
        w1 = b.pending("b1 lock fair lock:fair")
        _until(lambda: r.llen("redisson_lock_queue:{lock:fair}") >= 1, desc="b1 queued")
        w2 = b.pending("b2 lock fair lock:fair")
        _until(lambda: r.llen("redisson_lock_queue:{lock:fair}") >= 2, desc="b2 queued")
        rec.step("RFairLock: #1 a1 holds; #2 b1 and b2 wait (queue, timeout set, per-waiter channel)")
        a.do("a1 unlock fair lock:fair")
        _wait(w1)
        rec.step("RFairLock: a1 unlocks; queue head b1 acquires, b2 still waits")
        b.do("b1 unlock fair lock:fair")
        _wait(w2)
        rec.step("RFairLock: b1 unlocks; b2 acquires")
        b.do("b2 unlock fair lock:fair")
        rec.step("RFairLock: b2 unlocks")
        r.flushall()
        # read/write lock
        a.do("a1 lock read lock:rw")
        b.do("b1 lock read lock:rw")
        b.do("b1 lock read lock:rw")
        rec.step("RReadWriteLock: #1 a1 read, #2 b1 read twice (reentry)")
        ww = a.pending("a2 lock write lock:rw")
        _until(lambda: r.pubsub_numsub("redisson_rwlock:{lock:rw}")[0][1] >= 1, desc="writer subscribed")
        rec.step("RReadWriteLock: #1 a2 waits for the write lock")
        a.do("a1 unlock read lock:rw")
        b.do("b1 unlock read lock:rw")
        rec.step("RReadWriteLock: a1 released its read, b1 one of two")
        b.do("b1 unlock read lock:rw")
        _wait(ww)
        rec.step("RReadWriteLock: b1's last read released; a2 holds write")
        a.do("a2 lock read lock:rw")
        rec.step("RReadWriteLock: a2 (writer) also takes read (write-then-read reentry)")
        a.do("a2 unlock write lock:rw")
        rec.step("RReadWriteLock: a2 releases write, keeps read")
        a.do("a2 unlock read lock:rw")
        rec.step("RReadWriteLock: a2 releases read")
        r.flushall()
        # spin lock
        a.do("a1 lock spin lock:spin")
        a.do("a1 lock spin lock:spin")
        rec.step("RSpinLock: a1 lock twice")
        a.do("a1 unlock spin lock:spin")
        a.do("a1 unlock spin lock:spin")
        rec.step("RSpinLock: a1 unlock twice")
        r.flushall()
        # fenced lock (3.19+)
        ev = a.do("a1 lock fenced lock:fenced", ok=None)
        if ev["ok"]:
            a.do("a1 lock fenced lock:fenced")
            rec.step("RFencedLock: a1 lock twice")
            a.do("a1 unlock fenced lock:fenced")
            a.do("a1 unlock fenced lock:fenced")
            rec.step("RFencedLock: a1 unlock twice (token counter stays)")
        else:
            rec.note("## RFencedLock: not in this version (%s)\n" % ev["info"])
        r.flushall()
        # semaphore
        a.do("x init semaphore lock:sem permits=3")
        a.do("a1 acquire semaphore lock:sem")
        b.do("b1 acquire semaphore lock:sem")
        rec.step("RSemaphore: trySetPermits(3); #1 a1 and #2 b1 acquire one permit each")
        a.do("a1 acquire semaphore lock:sem")
        ws = b.pending("b2 acquire semaphore lock:sem")
        time.sleep(0.5)
        rec.step("RSemaphore: a1 takes the last permit; #2 b2 waits")
        a.do("a1 release semaphore lock:sem")
        _wait(ws)
        rec.step("RSemaphore: a1 releases one; b2 acquires")
        r.flushall()
        # permit-expirable semaphore
        a.do("x init pexp lock:pexp permits=2")
        a.do("a1 acquire pexp lock:pexp lease=60000")
        b.do("b1 acquire pexp lock:pexp")
        rec.step("RPermitExpirableSemaphore: permits 2; a1 acquire(lease 60 s), b1 acquire() (no lease)")
        wp = b.pending("b2 acquire pexp lock:pexp lease=60000")
        time.sleep(0.5)
        rec.step("RPermitExpirableSemaphore: b2 waits")
        a.do("a1 release pexp lock:pexp")
        _wait(wp)
        rec.step("RPermitExpirableSemaphore: a1 releases its permit; b2 acquires")
        a.close()
        b.close()
        rec.write(out)
    finally:
        rs.kill()


def redisson_legacy(out):
    kind = "redisson-legacy"
    rs = harness.RedisServer()
    try:
        rec = clientproc.LayoutRecorder(rs.port, clients.CLIENTS[kind])
        a = clients.start(kind, rs.port, name=kind + "#1")
        b = clients.start(kind, rs.port, name=kind + "#2")
        rec.note("# client #1: %s\n# client #2: %s\n" % (a.ready["info"], b.ready["info"]))
        r = rec.r
        a.do("a1 lock rlock lock:rlock")
        a.do("a1 lock rlock lock:rlock")
        rec.step("RLock: #1 a1 lock() twice")
        w = b.pending("b1 lock rlock lock:rlock")
        _until(lambda: r.pubsub_numsub("redisson_lock__channel__{lock:rlock}")[0][1] >= 1,
               desc="#2 subscribed")
        rec.step("RLock: #2 b1 waits in lock()")
        a.do("a1 unlock rlock lock:rlock")
        a.do("a1 unlock rlock lock:rlock")
        _wait(w)
        rec.step("RLock: a1 unlocks twice; b1 acquires")
        b.do("b1 unlock rlock lock:rlock")
        r.flushall()
        a.do("a1 lock read lock:rw")
        b.do("b1 lock read lock:rw")
        b.do("b1 lock read lock:rw")
        rec.step("RReadWriteLock: #1 a1 read, #2 b1 read twice")
        ww = a.pending("a2 lock write lock:rw")
        _until(lambda: r.pubsub_numsub("redisson_rwlock__{lock:rw}")[0][1] >= 1, desc="writer subscribed")
        rec.step("RReadWriteLock: a2 waits for write")
        a.do("a1 unlock read lock:rw")
        b.do("b1 unlock read lock:rw")
        b.do("b1 unlock read lock:rw")
        _wait(ww)
        rec.step("RReadWriteLock: readers gone; a2 holds write")
        a.do("a2 unlock write lock:rw")
        rec.step("RReadWriteLock: a2 unlocks write")
        a.close()
        b.close()
        rec.write(out)
    finally:
        rs.kill()


def python(out):
    rs = harness.RedisServer()
    try:
        rec = clientproc.LayoutRecorder(rs.port, clients.CLIENTS["python"])
        p = clients.start("python", rs.port, name="python#1")
        q = clients.start("python", rs.port, name="python#2")
        rec.note("# %s\n" % p.ready["info"])
        r = rec.r
        p.do("a lock redispy lock:rp lease=30000")
        p.do("b lock redispy lock:rp-nottl")
        rec.step("redis-py Lock: a timeout=30 s; b timeout=None")
        w = q.pending("c lock redispy lock:rp lease=30000")
        time.sleep(0.4)
        rec.step("redis-py Lock: #2 c blocks (polls, sleep=0.1 by default)")
        p.do("a unlock redispy lock:rp")
        _wait(w)
        rec.step("redis-py Lock: a releases, c acquires")
        r.flushall()
        p.do("a lock prl job1 lease=30000")
        p.do("b lock prl job2")
        rec.step("python-redis-lock: a Lock('job1', expire=30), b Lock('job2', expire=None)")
        w = q.pending("c lock prl job1 lease=30000")
        time.sleep(0.4)
        rec.step("python-redis-lock: #2 c waits (BLPOP on the signal list)")
        p.do("a unlock prl job1")
        _wait(w)
        rec.step("python-redis-lock: a releases (signal list pushed), c acquires")
        q.do("c unlock prl job1")
        rec.step("python-redis-lock: c releases, nobody waits")
        r.flushall()
        p.do("a lock pottery job3 lease=30000")
        rec.step("pottery Redlock(key='job3', masters={one}, auto_release_time=30 s)")
        w = q.pending("c lock pottery job3 lease=30000")
        time.sleep(0.4)
        rec.step("pottery: #2 c waits")
        p.do("a unlock pottery job3")
        _wait(w)
        rec.step("pottery: a releases, c acquires")
        p.close()
        q.close()
        rec.write(out)
    finally:
        rs.kill()


def node(out):
    rs = harness.RedisServer()
    rs2 = harness.RedisServer()
    rs3 = harness.RedisServer()
    try:
        rec = clientproc.LayoutRecorder(rs.port, clients.CLIENTS["node"])
        n = clients.start("node", rs.port, name="node#1")
        m = clients.start("node", rs.port, name="node#2")
        rec.note("# %s\n" % n.ready["info"])
        r = rec.r
        n.do("a lock redlock lock:nr lease=30000")
        rec.step("node-redlock 1 node: a lock('lock:nr', 30 s)")
        w = m.pending("c lock redlock lock:nr lease=30000")
        time.sleep(0.4)
        rec.step("node-redlock: #2 c retries (retryDelay 200 ms by default)")
        n.do("a unlock redlock lock:nr")
        _wait(w)
        rec.step("node-redlock: a unlocks; c acquires")
        r.flushall()
        n.do("a lock mutex lock:m lease=30000")
        rec.step("redis-semaphore Mutex(redis, 'lock:m', lockTimeout 30 s)")
        w = m.pending("c lock mutex lock:m lease=30000")
        time.sleep(0.4)
        rec.step("redis-semaphore Mutex: #2 c waits (retryInterval 10 ms by default)")
        n.do("a unlock mutex lock:m")
        _wait(w)
        rec.step("redis-semaphore Mutex: a releases, c acquires")
        r.flushall()
        n.do("a lock semaphore lock:s limit=2 lease=30000")
        n.do("b lock semaphore lock:s limit=2 lease=30000")
        rec.step("redis-semaphore Semaphore(limit 2): a and b acquire")
        w = m.pending("c lock semaphore lock:s limit=2 lease=30000")
        time.sleep(0.4)
        rec.step("redis-semaphore Semaphore: #2 c waits")
        n.do("a unlock semaphore lock:s")
        _wait(w)
        rec.step("redis-semaphore Semaphore: a releases, c acquires")
        n.close()
        m.close()
        r.flushall()
        three = clients.start("node", rs.port, rs2.port, rs3.port, name="node#3")
        three.do("a lock redlock lock:nr3 lease=30000")
        rec.step("node-redlock on 3 nodes: a lock (this is node 1 of 3; nodes 2 and 3 hold the same)")
        for other in (rs2, rs3):
            rec.note("node :%d: %s\n" % (other.port, clientproc.dump_keys(other.client())))
        three.close()
        rec.write(out)
    finally:
        for s in (rs, rs2, rs3):
            s.kill()


def go(out):
    rs = harness.RedisServer()
    try:
        rec = clientproc.LayoutRecorder(rs.port, clients.CLIENTS["go"])
        g = clients.start("go", rs.port, name="go#1")
        h = clients.start("go", rs.port, name="go#2")
        r = rec.r
        g.do("a lock redsync lock:gs lease=30000")
        rec.step("redsync NewMutex('lock:gs', WithExpiry 30 s): a Lock")
        w = h.pending("c lock redsync lock:gs lease=30000")
        time.sleep(0.4)
        rec.step("redsync: #2 c retries (50-250 ms by default)")
        g.do("a extend redsync lock:gs")
        rec.step("redsync: a Extend")
        g.do("a unlock redsync lock:gs")
        _wait(w)
        rec.step("redsync: a Unlock; c acquires")
        g.close()
        h.close()
        rec.write(out)
    finally:
        rs.kill()


def spring(out):
    rs = harness.RedisServer()
    try:
        rec = clientproc.LayoutRecorder(rs.port, clients.CLIENTS["spring"])
        s = clients.start("spring", rs.port, extra=("prod", "lock:spring"), name="spring#1")
        t = clients.start("spring", rs.port, extra=("prod", "lock:spring"), name="spring#2")
        rec.note("# %s\n" % s.ready["info"])
        r = rec.r
        s.do("a lock shedlock job1 lease=30000")
        rec.step("ShedLock RedisLockProvider(env 'prod'): a lock('job1', lockAtMostFor 30 s)")
        t.do("c lock shedlock job1 lease=30000", ok=False)
        rec.step("ShedLock: #2 c's lock('job1') is refused (ShedLock never waits)")
        s.do("a unlock shedlock job1")
        rec.step("ShedLock: a unlock (lockAtLeastFor 0)")
        r.flushall()
        s.do("a lock spring orders")
        s.do("a lock spring orders")
        rec.step("RedisLockRegistry('lock:spring', expireAfter 30 s): a obtain('orders').lock() twice")
        w = t.pending("c lock spring orders")
        time.sleep(0.5)
        rec.step("RedisLockRegistry: #2 c waits in lock()")
        s.do("a unlock spring orders")
        s.do("a unlock spring orders")
        _wait(w)
        rec.step("RedisLockRegistry: a unlocks twice; c acquires")
        s.close()
        t.close()
        rec.write(out)
    finally:
        rs.kill()


ALL = {
    "redisson-legacy": lambda d: redisson_legacy(os.path.join(d, "redisson-2.2.13.txt")),
    "redisson-old": lambda d: redisson("redisson-old", os.path.join(d, "redisson-3.16.8.txt")),
    "redisson-new": lambda d: redisson("redisson-new", os.path.join(d, "redisson-3.52.0.txt")),
    "python": lambda d: python(os.path.join(d, "python-redispy-5.2.1-prl-4.0.0-pottery-3.0.1.txt")),
    "node": lambda d: node(os.path.join(d, "node-redlock-4.2.0-redis-semaphore-5.8.0.txt")),
    "go": lambda d: go(os.path.join(d, "go-redsync-4.8.2.txt")),
    "spring": lambda d: spring(os.path.join(d, "spring-shedlock-6.10.0-integration-6.5.5.txt")),
}


def run(outdir, only=()):
    for name, fn in ALL.items():
        if only and name not in only:
            continue
        t0 = time.monotonic()
        fn(outdir)
        print("layouts: %s written (%.1fs)" % (name, time.monotonic() - t0), flush=True)
