# SPDX-License-Identifier: BSD-3-Clause
"""The per-format guarded release (issue 17, points 1 and 6) on a real
redis-server, with locks laid out by the effects of Redisson's own scripts.

The states are made by EVAL of small scripts that do what Redisson's do
(RedissonReadLock / RedissonWriteLock / RedissonFairLock lock and unlock,
RedissonSemaphore and RedissonPermitExpirableSemaphore release, as their
sources describe them; the real clients are tests/interop's), so the keys,
fields, timeout keys, queues and channels are the ones a Redisson user has.

- one reader of a read/write lock released: its field and its
  rwlock_timeout keys go, the other reader keeps its count and keys, the
  lock stays, mode stays read; Redisson's own unlock of the other reader
  then deletes the lock as if nothing had happened;
- a writer that also took reads: releasing the writer turns mode to read
  and wakes the waiters ("1"), its read hold stays;
- a fair lock whose queue head is a dead waiter (its turn timed out, or
  its client died and nobody listens on its channel): the dead head is
  dropped, the live waiter behind it is woken on its own channel (current
  and 2.x names) and can then take the lock with Redisson's own acquire;
  a live head keeps its place;
- semaphores: one permit back, published on redisson_sc:{K}; a permit
  semaphore's permit id leaves the timeout set; redis-semaphore's zset
  loses only that member; expire refuses them;
- a wrong --holder is refused (holder_changed) and changes nothing, the
  ":write" suffix included; a caller's format that no longer matches the
  key is refused.
"""

import time

import harness as h
import test_lockctl as lt
import test_release_http as th
import test_release_script as rs

UUID = lt.UUID
UUID2 = "5f0c2a9e-1b3d-4c5e-8f70-9a1b2c3d4e5f"
LEASE = 30000

# RedissonReadLock.tryLockInnerAsync's effect: KEYS[1] the lock, KEYS[2]
# the reader's timeout prefix {K}:<field>:rwlock_timeout; ARGV lease,
# field, the same thread's write field.
READ_LOCK = """
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
    local left = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))
    return nil
end
return redis.call('pttl', KEYS[1])
"""

# RedissonReadLock.unlockInnerAsync's effect (without the unlock latch):
# KEYS[1] lock, KEYS[2] channel, KEYS[3] the timeout prefix, KEYS[4] {K};
# ARGV message, field.  1: unlocked and deleted, 0: unlocked, nil: not held.
READ_UNLOCK = """
if redis.call('hget', KEYS[1], 'mode') == false then
    redis.call('publish', KEYS[2], ARGV[1])
    return 1
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if counter == 0 then redis.call('hdel', KEYS[1], ARGV[2]) end
redis.call('del', KEYS[3] .. ':' .. (counter + 1))
if redis.call('hlen', KEYS[1]) > 1 then
    local longest = -3
    for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
        local c = tonumber(redis.call('hget', KEYS[1], f))
        if type(c) == 'number' then
            for i = c, 1, -1 do
                longest = math.max(longest,
                    redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. i))
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        return 0
    end
    if redis.call('hget', KEYS[1], 'mode') == 'write' then return 0 end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
"""

# RedissonWriteLock.tryLockInnerAsync's effect: ARGV lease, write field.
WRITE_LOCK = """
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + tonumber(ARGV[1]))
    return nil
end
return redis.call('pttl', KEYS[1])
"""

# RedissonFairLock.tryLockInnerAsync's effect (the waiting variant): drop
# heads whose turn timed out, take the lock when it is free and the queue
# is empty or starts with me, else queue me with a timeout.  KEYS lock,
# queue, timeout set; ARGV lease, field, wait ms, now ms.  nil: acquired.
FAIR_LOCK = """
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then break end
    local t = tonumber(redis.call('zscore', KEYS[3], head))
    if t <= tonumber(ARGV[4]) then
        redis.call('zrem', KEYS[3], head)
        redis.call('lpop', KEYS[2])
    else
        break
    end
end
if redis.call('exists', KEYS[1]) == 0 and (redis.call('exists', KEYS[2]) == 0 or
        redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[2])
    for _, w in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), w)
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
local t = redis.call('zscore', KEYS[3], ARGV[2])
if t ~= false then return t - tonumber(ARGV[3]) - tonumber(ARGV[4]) end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] then
    ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
    ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
"""


def now_ms():
    return int(time.time() * 1000)


class ReleaseFormats(h.TestCase):

    def setUp(self):
        super().setUp()
        self.rs = self.start_redis()
        self.c = self.rs.client()
        self.cfg = lt.write_config(self.rs, patterns="lock:*,semaphore:*")

    def lockctl(self, args, rc=0):
        return lt.run_json(self, args + ["--yes"], self.cfg, rc=rc)

    # -- Redisson RReadWriteLock ---------------------------------------------

    def read_lock(self, key, field, lease=LEASE):
        self.assertIsNone(self.c.eval(READ_LOCK, 2, key, "{%s}:%s:rwlock_timeout" % (key, field),
                                      lease, field, field + ":write"))

    def read_unlock(self, key, field):
        return self.c.eval(READ_UNLOCK, 4, key, "redisson_rwlock:{%s}" % key,
                           "{%s}:%s:rwlock_timeout" % (key, field), "{%s}" % key, 0, field)

    def timeouts(self, key, field):
        return sorted(k.decode() for k in self.c.keys("{%s}:%s:rwlock_timeout:*" % (key, field)))

    def test_one_reader_released_the_other_keeps_its_hold(self):
        c, key = self.c, "lock:inventory"
        a, b = UUID + ":41", UUID2 + ":7"
        for field in (a, a, b, b):
            self.read_lock(key, field)
        self.assertEqual(len(self.timeouts(key, a)), 2)
        # the exact holder only: a writer-style or unknown id is refused
        for wrong in (a + ":write", UUID + ":42", "mode"):
            doc = self.lockctl(["release", key, "--holder", wrong], rc=1)
            self.assertEqual(doc["outcome"], "holder_changed", wrong)
        self.assertEqual(c.hgetall(key), {b"mode": b"read", a.encode(): b"2", b.encode(): b"2"})
        # a dry run says what the release will do: one hold removed, one
        # other left (an on-call trial: it said "would delete the lock")
        doc = self.lockctl(["release", key, "--holder", a, "--dry-run"])
        self.assertEqual((doc["outcome"], doc["holders_left"]), ("would_release", 1))
        p = lt.run(["release", key, "--holder", a, "--dry-run"], self.cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"a release would remove that holder's hold; 1 other holder(s) would "
                      b"still hold it (redisson-rw)", p.stdout)
        sub = rs.Subscriber(self.rs.port, "SUBSCRIBE", "redisson_rwlock:{%s}" % key)
        doc = self.lockctl(["release", key, "--holder", a])
        self.assertEqual((doc["outcome"], doc["format"], doc["holders_left"], doc["deleted"]),
                         ("released", "redisson-rw", 1, False))
        # reader A and its timeout keys are gone; reader B's count and keys stay
        self.assertEqual(c.hgetall(key), {b"mode": b"read", b.encode(): b"2"})
        self.assertEqual(self.timeouts(key, a), [])
        self.assertEqual(self.timeouts(key, b), ["{%s}:%s:rwlock_timeout:%d" % (key, b, i)
                                                 for i in (1, 2)])
        self.assertTrue(0 < c.pttl(key) <= LEASE)
        # and Redisson's own unlock of B works on what is left: twice, then gone
        self.assertEqual(self.read_unlock(key, b), 0)
        self.assertEqual(c.hget(key, b), b"1")
        self.assertEqual(self.read_unlock(key, b), 1)
        self.assertFalse(c.exists(key))
        sub.wait_for(b"message")            # Redisson's own "0" once the lock went
        sub.close()
        # the audit entry names the holder and the format
        entry = lt.audit_entries(c)[-1][1]
        self.assertEqual((entry["holder"], entry["format"], entry["outcome"]),
                         (a.encode(), b"redisson-rw", b"released"))

    def test_six_hundred_readers_one_released(self):
        c, key = self.c, "lock:catalog"
        fields = ["%s:%d" % (UUID, i) for i in range(600)]
        for f in fields:
            self.read_lock(key, f)
        doc = self.lockctl(["release", key, "--holder", fields[300]])
        self.assertEqual((doc["outcome"], doc["holders_left"]), ("released", 599))
        self.assertEqual(c.hlen(key), 600)          # 599 readers + mode
        self.assertFalse(c.hexists(key, fields[300]))
        self.assertEqual(c.hget(key, "mode"), b"read")
        self.assertEqual(self.timeouts(key, fields[300]), [])
        self.assertEqual(len(self.timeouts(key, fields[299])), 1)

    def test_writer_released_its_read_hold_stays_mode_turns_read(self):
        c, key = self.c, "lock:ledger"
        w = UUID + ":9"
        self.assertIsNone(c.eval(WRITE_LOCK, 1, key, LEASE, w + ":write"))
        self.read_lock(key, w)                      # write-then-read reentry
        self.assertEqual(c.hget(key, "mode"), b"write")
        sub = rs.Subscriber(self.rs.port, "SUBSCRIBE", "redisson_rwlock:{%s}" % key)
        old = rs.Subscriber(self.rs.port, "SUBSCRIBE", "redisson_rwlock__{%s}" % key)
        doc = self.lockctl(["release", key, "--holder", w + ":write"])
        self.assertEqual((doc["holders_left"], doc["deleted"]), (1, False))
        self.assertEqual(c.hgetall(key), {b"mode": b"read", w.encode(): b"1"})
        self.assertEqual(len(self.timeouts(key, w)), 1)
        # waiting readers may come in now: every waiter is woken, both names
        sub.wait_for(b"redisson_rwlock:{%s}\r\n$1\r\n1\r\n" % key.encode())
        old.wait_for(b"redisson_rwlock__{%s}\r\n$1\r\n1\r\n" % key.encode())
        sub.close()
        old.close()
        # the last holder: the key goes
        doc = self.lockctl(["release", key, "--holder", w])
        self.assertEqual((doc["holders_left"], doc["deleted"]), (0, True))
        self.assertFalse(c.exists(key))
        self.assertEqual(self.timeouts(key, w), [])

    def test_reader_released_while_a_writer_holds_keeps_write(self):
        c, key = self.c, "lock:batch"
        w, r = UUID + ":3", UUID + ":3"
        c.eval(WRITE_LOCK, 1, key, LEASE, w + ":write")
        self.read_lock(key, r)
        doc = self.lockctl(["release", key, "--holder", r])
        self.assertEqual(doc["holders_left"], 1)
        self.assertEqual(c.hgetall(key), {b"mode": b"write", (w + ":write").encode(): b"1"})

    def test_http_release_of_one_reader_as_the_agent_saw_it(self):
        c, key = self.c, "lock:http-rw"
        a, b = UUID + ":1", UUID2 + ":2"
        for field in (a, b, b):
            self.read_lock(key, field)
        path = th.token_file()
        ag = self.start_agent(self.rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              extra=th.unlock_section(path))

        def seen():
            st, body = ag.get_json("/api/v1/locks?state=all")
            return st == 200 and any(l["key"] == key and l["format"] == "redisson-rw"
                                     for l in body["locks"])
        ag.wait_for(seen, timeout=30, desc="the RW lock in the agent's scan")
        st, _, doc = th.post(ag, {"key": key, "holder": a + ":write"})
        self.assertEqual((st, doc["outcome"]), (409, "holder_changed"), doc)
        st, _, doc = th.post(ag, {"key": key, "holder": a})
        self.assertEqual((st, doc["outcome"], doc["format"], doc["holders_left"]),
                         (200, "released", "redisson-rw", 1), doc)
        self.assertEqual(c.hgetall(key), {b"mode": b"read", b.encode(): b"2"})
        self.assertEqual(self.timeouts(key, a), [])
        self.assertEqual(len(self.timeouts(key, b)), 2)

    def test_cluster_reader_release_and_waiters_on_the_keys_shard(self):
        cl = rs.MiniCluster(self)
        cfg = lt.write_config(url=cl.url, target_extra={"mode": "cluster"})
        key = next("lock:c%d" % i for i in range(1000)
                   if cl.node_of("lock:c%d" % i) is not cl.nodes[0])
        node = cl.node_of(key).client()
        a, b = UUID + ":1", UUID2 + ":2"
        for field in (a, a, b):
            self.assertIsNone(node.eval(READ_LOCK, 2, key,
                                        "{%s}:%s:rwlock_timeout" % (key, field), LEASE,
                                        field, field + ":write"))
        waiter = rs.Subscriber(cl.node_of(key).port, "SSUBSCRIBE", "redisson_rwlock:{%s}" % key)
        plain = rs.Subscriber(cl.node_of(key).port, "SUBSCRIBE", "redisson_rwlock:{%s}" % key)
        doc = lt.run_json(self, ["show", key], cfg)
        # both: the sharded subscriber (SHARDNUMSUB) and the plain one
        self.assertEqual((doc["format"], doc["waiters"]), ("redisson-rw", 2), doc)
        # the agent's scan asks the key's shard too
        ag = self.start_agent(targets=[("main", cl.url)], target_extra={"mode": "cluster"},
                              scan_interval="1s", leak_grace="1h", max_hold="1h")

        def waiters():
            st, body = ag.get_json("/api/v1/locks?state=all")
            got = [l["waiters"] for l in body["locks"] if l["key"] == key]
            return st == 200 and got == [2]
        ag.wait_for(waiters, timeout=30, desc="the RW lock's two waiters in the agent")
        doc = lt.run_json(self, ["release", key, "--holder", a, "--yes"], cfg)
        self.assertEqual((doc["outcome"], doc["holders_left"]), ("released", 1), doc)
        self.assertEqual(node.hgetall(key), {b"mode": b"read", b.encode(): b"1"})
        self.assertEqual(node.keys("{%s}:%s:*" % (key, a)), [])
        doc = lt.run_json(self, ["release", key, "--holder", b, "--yes"], cfg)
        self.assertEqual(doc["deleted"], True, doc)
        waiter.wait_for(b"smessage")            # SPUBLISH, Redisson >= 3.22 on Cluster 7
        plain.wait_for(b"$1\r\n1\r\n")      # PUBLISH, older clients
        waiter.close()
        plain.close()
        # a fair lock on that shard: its dead head (nobody listens, not even
        # sharded) is dropped, the live one (SSUBSCRIBEd) woken by SPUBLISH
        fair = next("lock:f%d" % i for i in range(1000)
                    if cl.node_of("lock:f%d" % i) is cl.node_of(key))
        for field in (UUID + ":1", UUID + ":2", UUID2 + ":3"):
            node.eval(FAIR_LOCK, 3, fair, "redisson_lock_queue:{%s}" % fair,
                      "redisson_lock_timeout:{%s}" % fair, LEASE, field, 300000, now_ms())
        chan = "redisson_lock__channel:{%s}:%s:3" % (fair, UUID2)
        live = rs.Subscriber(cl.node_of(fair).port, "SSUBSCRIBE", chan)
        doc = lt.run_json(self, ["release", fair, "--holder", UUID + ":1", "--yes"], cfg)
        self.assertEqual((doc["deleted"], doc["purged_waiters"]), (True, 1), doc)
        live.wait_for(b"smessage")
        live.close()
        self.assertEqual(node.lrange("redisson_lock_queue:{%s}" % fair, 0, -1),
                         [(UUID2 + ":3").encode()])

    # -- Redisson fair lock ------------------------------------------------------

    def fair(self, key, field, wait=300000, now=None):
        return self.c.eval(FAIR_LOCK, 3, key, "redisson_lock_queue:{%s}" % key,
                           "redisson_lock_timeout:{%s}" % key, LEASE, field, wait,
                           now if now is not None else now_ms())

    def test_fair_lock_dead_head_skipped_live_waiter_woken(self):
        c, key = self.c, "lock:fair"
        holder, dead, live = UUID + ":1", UUID + ":2", UUID2 + ":3"
        queue, tset = "redisson_lock_queue:{%s}" % key, "redisson_lock_timeout:{%s}" % key
        self.assertIsNone(self.fair(key, holder))
        self.assertIsNotNone(self.fair(key, dead))
        self.assertIsNotNone(self.fair(key, live))
        self.assertEqual(c.lrange(queue, 0, -1), [dead.encode(), live.encode()])
        # the head stopped retrying (it died): its turn times out while
        # nobody calls the lock, which is where its score now is
        c.zadd(tset, {dead: now_ms() - 1000}, xx=True)
        chan = "redisson_lock__channel:{%s}:%s" % (key, live)
        woken = rs.Subscriber(self.rs.port, "SUBSCRIBE", chan)
        woken_v2 = rs.Subscriber(self.rs.port, "SUBSCRIBE",
                                 "redisson_lock__channel__{%s}:%s" % (key, live))
        deadsub = rs.Subscriber(self.rs.port, "SUBSCRIBE",
                                "redisson_lock__channel:{%s}:%s" % (key, dead))
        doc = self.lockctl(["release", key, "--holder", holder])
        self.assertEqual((doc["outcome"], doc["deleted"], doc["purged_waiters"]),
                         ("released", True, 1))
        woken.wait_for(chan.encode() + b"\r\n$1\r\n0\r\n")
        woken_v2.wait_for(b"message")
        self.assertNotIn(b"message", deadsub.buf)
        for s in (woken, woken_v2, deadsub):
            s.close()
        # the live waiter is now the head and takes the lock, Redisson's way
        self.assertEqual(c.lrange(queue, 0, -1), [live.encode()])
        self.assertIsNone(c.zscore(tset, dead))
        self.assertIsNone(self.fair(key, live))
        self.assertEqual(c.hgetall(key), {live.encode(): b"1"})
        self.assertFalse(c.exists(queue))

    def test_fair_lock_head_whose_client_died(self):
        # the head's client died: its turn is minutes ahead (ttl + the
        # 5 min fairLockWaitTimeout) but nobody listens on its channel any
        # more; the waiter behind it is subscribed and is the one woken
        c, key = self.c, "lock:fair-died"
        holder, dead, live = UUID + ":1", UUID + ":2", UUID2 + ":3"
        queue = "redisson_lock_queue:{%s}" % key
        self.assertIsNone(self.fair(key, holder))
        self.assertIsNotNone(self.fair(key, dead))
        self.assertIsNotNone(self.fair(key, live))
        self.assertGreater(c.zscore("redisson_lock_timeout:{%s}" % key, dead), now_ms() + 60000)
        chan = "redisson_lock__channel:{%s}:%s" % (key, live)
        woken = rs.Subscriber(self.rs.port, "SUBSCRIBE", chan)
        doc = self.lockctl(["release", key, "--holder", holder])
        self.assertEqual((doc["deleted"], doc["purged_waiters"]), (True, 1), doc)
        woken.wait_for(chan.encode() + b"\r\n$1\r\n0\r\n")
        woken.close()
        self.assertEqual(c.lrange(queue, 0, -1), [live.encode()])
        self.assertIsNone(self.fair(key, live))

    def test_fair_lock_live_head_kept(self):
        c, key = self.c, "lock:fair2"
        holder, head, next_ = UUID + ":1", UUID + ":2", UUID + ":3"
        self.assertIsNone(self.fair(key, holder))
        self.fair(key, head)
        self.fair(key, next_)
        chan = "redisson_lock__channel:{%s}:%s" % (key, head)
        sub = rs.Subscriber(self.rs.port, "SUBSCRIBE", chan)
        doc = self.lockctl(["release", key, "--holder", holder])
        self.assertEqual(doc["purged_waiters"], 0)
        sub.wait_for(chan.encode() + b"\r\n$1\r\n0\r\n")
        sub.close()
        self.assertEqual(c.llen("redisson_lock_queue:{%s}" % key), 2)

    # -- the RLock, 2.x channel names ------------------------------------------

    def test_rlock_wakes_current_and_old_channel_names(self):
        c, key = self.c, "lock:plainrlock"
        c.hset(key, UUID + ":5", 2)
        c.set("redisson_lock_token:{%s}" % key, 6)
        subs = [rs.Subscriber(self.rs.port, "SUBSCRIBE", ch) for ch in
                ("redisson_lock__channel:{%s}" % key, "redisson_lock__channel__{%s}" % key)]
        doc = self.lockctl(["release", key, "--holder", UUID + ":5"])
        # lockctl sees its fencing counter: a fenced lock, released as one
        self.assertEqual((doc["format"], doc["deleted"]), ("redisson-fenced", True))
        self.assertEqual(c.get("redisson_lock_token:{%s}" % key), b"6")
        for s in subs:
            s.wait_for(b"$1\r\n0\r\n")
            s.close()
        self.assertEqual(c.get("redisson_lock_token:{%s}" % key), b"6")

    # -- semaphores (the caller names the format, as h-formats' rows will) -------

    def test_redisson_semaphore_one_permit_back(self):
        c, key = self.c, "lock:pool"
        c.set(key, 0)
        comp = (("audit", "lockwatch:audit"), ("redisson-sc", "redisson_sc:{%s}" % key))
        sub = rs.Subscriber(self.rs.port, "SUBSCRIBE", "redisson_sc:{%s}" % key)
        r = rs.call(c, "release", key, "3", companions=comp, fmt="redisson-semaphore")
        self.assertEqual(r[0], b"holder_changed")   # the count is not what was seen
        self.assertEqual(c.get(key), b"0")
        r = rs.call(c, "release", key, "0", companions=comp, fmt="redisson-semaphore")
        self.assertEqual((r[0], r[7]), (b"released", b"redisson-semaphore"))
        self.assertEqual(c.get(key), b"1")
        sub.wait_for(b"redisson_sc:{%s}\r\n$1\r\n1\r\n" % key.encode())
        sub.close()
        # a semaphore never gets a TTL from expire: it would take every permit
        c.persist(key)
        r = rs.call(c, "expire", key, "1", companions=comp[:1], fmt="redisson-semaphore",
                    ttl_ms=5000)
        self.assertEqual(r[0], b"wrongtype")
        self.assertEqual(c.pttl(key), -1)

    def test_redisson_permit_semaphore_one_permit(self):
        c, key = self.c, "lock:permits"
        tset = "{%s}:timeout" % key
        p1, p2 = b"\x01" * 16, b"\xfe\x00" * 8
        c.set(key, 1)
        c.zadd(tset, {p1: now_ms() + 60000, p2: 922337203685477})
        comp = (("audit", "lockwatch:audit"), ("permits", tset),
                ("redisson-sc", "redisson_sc:{%s}" % key))
        r = rs.call(c, "release", key, b"\x02" * 16, companions=comp,
                    fmt="redisson-permit-semaphore")
        self.assertEqual(r[0], b"holder_changed")
        sub = rs.Subscriber(self.rs.port, "SUBSCRIBE", "redisson_sc:{%s}" % key)
        r = rs.call(c, "release", key, p2, companions=comp, fmt="redisson-permit-semaphore")
        self.assertEqual((r[0], r[8]), (b"released", 1))
        self.assertEqual(c.zrange(tset, 0, -1), [p1])
        self.assertEqual(c.get(key), b"2")
        sub.wait_for(b"$1\r\n2\r\n")
        sub.close()

    def test_semaphore_read_as_plain_is_never_deleted(self):
        # lockctl reads one key: a semaphore's count shows as a plain token
        c, key = self.c, "lock:seen-plain"
        c.set(key, 1)
        c.zadd("{%s}:timeout" % key, {b"\x07" * 16: now_ms() + 60000})
        doc = self.lockctl(["release", key, "--holder", "1"], rc=1)
        self.assertEqual((doc["outcome"], doc["format"]),
                         ("holder_changed", "redisson-permit-semaphore"))
        self.assertEqual(c.get(key), b"1")
        # an RSemaphore with a waiter on its channel: one permit back
        key2 = "lock:waited-on"
        c.set(key2, 0)
        waiter = rs.Subscriber(self.rs.port, "SUBSCRIBE", "redisson_sc:{%s}" % key2)
        doc = self.lockctl(["release", key2, "--holder", "0"])
        self.assertEqual((doc["outcome"], doc["format"]), ("released", "redisson-semaphore"))
        self.assertEqual(c.get(key2), b"1")
        waiter.wait_for(b"redisson_sc:{%s}\r\n$1\r\n1\r\n" % key2.encode())
        waiter.close()
        # nobody waits on it: expire still never gives a count a TTL
        doc = self.lockctl(["expire", key2, "--holder", "1", "--ttl", "1s"], rc=1)
        self.assertEqual(doc["outcome"], "wrongtype")
        self.assertEqual((c.get(key2), c.pttl(key2)), (b"1", -1))
        c.set("lock:tok", "tok")
        doc = self.lockctl(["expire", "lock:tok", "--holder", "tok", "--ttl", "30s"])
        self.assertEqual(doc["outcome"], "expired")

    def test_redis_semaphore_zset_member(self):
        c, key = self.c, "semaphore:jobs"
        c.zadd(key, {UUID: now_ms(), UUID2: now_ms()})
        c.pexpire(key, 10000)
        r = rs.call(c, "release", key, "nobody", patterns=("semaphore:*",),
                    fmt="redis-semaphore")
        self.assertEqual(r[0], b"holder_changed")
        # without a format, a zset is never guessed to be a semaphore
        r = rs.call(c, "release", key, UUID, patterns=("semaphore:*",))
        self.assertEqual(r[0], b"wrongtype")
        r = rs.call(c, "release", key, UUID, patterns=("semaphore:*",), fmt="redis-semaphore")
        self.assertEqual((r[0], r[8]), (b"released", 1))
        self.assertEqual(c.zrange(key, 0, -1), [UUID2.encode()])

    # -- the caller's format is a promise about the shape ------------------------

    def test_format_that_no_longer_fits_is_refused(self):
        c, key = self.c, "lock:shape"
        # a hash read as a Redisson lock: its "mode" field, read in the
        # script, decides whether it is released as a read/write lock
        c.hset(key, mapping={"mode": "read", UUID + ":1": 1, UUID + ":2": 1})
        r = rs.call(c, "release", key, UUID + ":1", fmt="redisson")
        self.assertEqual((r[0], r[7], r[8]), (b"released", b"redisson-rw", 1))
        c.delete(key)
        c.set(key, "tok")
        r = rs.call(c, "release", key, "tok", fmt="redisson")
        self.assertEqual(r[0], b"holder_changed")
        self.assertEqual(c.get(key), b"tok")
        # a format without a row: picked by what the script sees
        r = rs.call(c, "release", key, "tok", fmt="some-future-format")
        self.assertEqual((r[0], r[7]), (b"released", b"plain"))


if __name__ == "__main__":
    h.main()
