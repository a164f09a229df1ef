# SPDX-License-Identifier: BSD-3-Clause
"""The guarded release and expire scripts against a real redis-server.

- every refusal path (pattern, gone, holder_changed, wrongtype, not_leaked,
  too_young, has_ttl) and every success, each audited, through lockctl;
- the glob guard agrees with Redis' own SCAN MATCH on thousands of random
  globs and keys (stars, '?', sets, ranges, escapes, bytes >= 0x80), and
  hostile patterns from the config behave;
- the wake-up of each format: Redisson RLock "0", RW lock "1", fair-lock
  queue head, liblockwatch "0", python-redis-lock's signal list, Spring's
  channel; none for polling formats; fencing counters never touched;
- a real Redis Cluster: the release runs on the key's shard with SPUBLISH
  as well, the audit entry goes to the stream's own shard by a second
  command, list sees every shard; a Sentinel target releases on the
  primary the sentinels name;
- the race: 2,000 rounds of a takeover at a random moment around the
  release never lose the new holder's lock (and the naive GET-then-DEL,
  run the same way, does - so the test can see the bug);
- bounded old values, the capped audit stream, EVALSHA after SCRIPT FLUSH,
  and the least-privilege ACL documented in docs/lockctl.md.
"""

import hashlib
import json
import os
import random
import socket
import subprocess
import textwrap
import threading
import time

import harness as h
import test_lockctl as lt

LUA = os.path.join(h.REPO, "collectors", "release", "lua")
DRIVER = os.path.join(h.BUILD, "itests", "release_driver")
UUID = lt.UUID


def script(action):
    """The script text exactly as collectors/release/release.c builds it."""
    parts = []
    for name in ("guard", "formats", action):
        with open(os.path.join(LUA, name + ".lua")) as f:
            parts.append(f.read())
    return "\n".join(parts)


def call(client, action, key, holder, *, companions=(("audit", "lockwatch:audit"),),
         if_leaked=False, older_ms=0, known_ms=0, dry=False, cluster=False, ttl_ms=0,
         patterns=("lock:*",), operator="test", reason="r", target="main", fmt=None,
         now_ms=None):
    """Run the script with the documented KEYS/ARGV (guard.lua's header)."""
    keys = [key] + [k for _, k in companions]
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    argv = [holder, "1" if if_leaked else "0", str(older_ms), str(known_ms),
            "1" if dry else "0", "1" if cluster else "0", str(now),
            operator, reason, target, str(ttl_ms), " ".join(r for r, _ in companions),
            str(len(patterns))] + list(patterns) + ([fmt] if fmt is not None else [])
    return client.eval(script(action), len(keys), *keys, *argv)


def bus_safe_port():
    """A free port whose cluster bus port (+10000) is a valid, free port."""
    for _ in range(200):
        p = h.free_port()
        if p + 10000 < 65536:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p + 10000))
                return p
            except OSError:
                pass
            finally:
                s.close()
    raise RuntimeError("no port with a free cluster bus port")


class MiniCluster:
    """Three primaries made into a Redis Cluster with redis-cli."""

    def __init__(self, tc, n=3):
        self.nodes = []
        for _ in range(n):
            port = bus_safe_port()
            self.nodes.append(tc.start_redis(port=port, args=[
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes-%d.conf" % port,
                "--cluster-node-timeout", "2000"]))
        p = subprocess.run(["/usr/bin/redis-cli", "--cluster", "create"] +
                           ["127.0.0.1:%d" % r.port for r in self.nodes] +
                           ["--cluster-replicas", "0", "--cluster-yes"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        if p.returncode != 0:
            raise RuntimeError("redis-cli --cluster create: %s" % p.stdout.decode())
        h.wait_until(lambda: all(b"cluster_state:ok" in r.client().execute_command(
            "CLUSTER", "INFO") for r in self.nodes), 30, desc="cluster_state:ok")
        self.owner = {}
        for lo, hi, primary, *_ in self.nodes[0].client().execute_command("CLUSTER", "SLOTS"):
            port = primary[1]
            for slot in range(lo, hi + 1):
                self.owner[slot] = port
        self.by_port = {r.port: r for r in self.nodes}

    @property
    def url(self):
        return self.nodes[0].url

    def node_of(self, key):
        return self.by_port[self.owner[keyslot(key)]]

    def load(self, commands):
        for cmd in commands:
            self.node_of(cmd[1]).client().execute_command(*cmd)


def keyslot(key):
    """The cluster spec's hash slot (CRC16 XModem of the hash tag)."""
    key = key.encode() if isinstance(key, str) else key
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    crc = 0
    for b in key:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc % 16384


class Subscriber:
    """A raw RESP connection that (S)SUBSCRIBEs or PSUBSCRIBEs and collects
    pushes (python3-redis 4.3 has no SSUBSCRIBE)."""

    def __init__(self, port, cmd, channel):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        ch = channel if isinstance(channel, bytes) else channel.encode()
        c = cmd.encode()
        self.s.sendall(b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(c), c, len(ch), ch))
        self.buf = b""
        self.wait_for(cmd.lower().encode())      # the subscribe confirmation

    def wait_for(self, needle, timeout=5):
        deadline = time.monotonic() + timeout
        while needle not in self.buf:
            self.s.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                data = self.s.recv(65536)
            except socket.timeout:
                data = b""
            self.buf += data
            if time.monotonic() >= deadline:
                raise AssertionError("no %r within %ss (got %r)" % (needle, timeout, self.buf))
        return self.buf

    def close(self):
        self.s.close()


class ReleaseScript(h.TestCase):

    def setUp(self):
        super().setUp()
        self.rs = self.start_redis()
        self.c = self.rs.client()
        self.cfg = lt.write_config(self.rs, patterns="lock:*,app:*,job-lock:*")

    def lockctl(self, args, rc=None):
        doc = lt.run_json(self, args, self.cfg, rc=rc if rc is not None else 0)
        return doc

    # -- guards ------------------------------------------------------------------

    def test_every_refusal_path_and_success_audited(self):
        c = self.c
        c.set("user:1", "v")
        c.set("lock:str", "tok")
        c.hset("lock:hash", UUID + ":1", 1)
        c.hset("lock:rw", mapping={"mode": "write", UUID + ":2:write": 1})
        c.rpush("lock:list", "x")
        c.set("lock:ttl", "tok", px=600000)
        c.set("lock:young", "tok")
        cases = [
            (["release", "user:1", "--holder", "v"], 1, "pattern"),
            (["release", "lock:none", "--holder", "v"], 1, "gone"),
            (["release", "lock:str", "--holder", "other"], 1, "holder_changed"),
            (["release", "lock:str", "--holder", "tok\n"], 1, "holder_changed"),
            (["release", "lock:hash", "--holder", UUID + ":9"], 1, "holder_changed"),
            (["release", "lock:rw", "--holder", "mode"], 1, "holder_changed"),
            (["release", "lock:list", "--holder", "x"], 1, "wrongtype"),
            (["release", "lock:ttl", "--holder", "tok", "--if-leaked"], 1, "not_leaked"),
            (["release", "lock:young", "--holder", "tok", "--if-older-than", "1h"], 1,
             "too_young"),
            (["expire", "lock:ttl", "--holder", "tok", "--ttl", "5s"], 1, "has_ttl"),
            (["expire", "lock:str", "--holder", "bad", "--ttl", "5s"], 1, "holder_changed"),
            (["expire", "user:1", "--holder", "v", "--ttl", "5s"], 1, "pattern"),
            (["expire", "lock:none", "--holder", "v", "--ttl", "5s"], 1, "gone"),
            # --if-leaked is the agent's definition: no TTL for leak_grace (1s
            # here), seen by lockctl as OBJECT IDLETIME since its last read
            None,
            (["release", "lock:str", "--holder", "tok", "--if-leaked"], 0, "released"),
            (["release", "lock:hash", "--holder", UUID + ":1"], 0, "released"),
            # the RW write holder must be named exactly, ":write" and all
            (["release", "lock:rw", "--holder", UUID + ":2"], 1, "holder_changed"),
            (["release", "lock:rw", "--holder", UUID + ":2:write"], 0, "released"),
            (["expire", "lock:young", "--holder", "tok", "--ttl", "5s"], 0, "expired"),
        ]
        for case in cases:
            if case is None:
                time.sleep(2.2)     # IDLETIME ticks in whole seconds: 2 prove 1
                continue
            args, rc, outcome = case
            doc = self.lockctl(args + ["--yes"], rc=rc)
            self.assertEqual(doc["outcome"], outcome, args)
            self.assertEqual(doc["refused"], rc == 1, args)
        self.assertEqual(c.get("user:1"), b"v")
        self.assertEqual(c.lrange("lock:list", 0, -1), [b"x"])
        self.assertGreater(c.pttl("lock:ttl"), 500000)
        self.assertFalse(c.exists("lock:str") or c.exists("lock:hash") or c.exists("lock:rw"))
        self.assertTrue(0 < c.pttl("lock:young") <= 5000)
        # a key outside the patterns is refused before Redis is asked: not audited
        audit = [e["outcome"].decode() for _, e in lt.audit_entries(c)]
        self.assertEqual(audit, [case[2] for case in cases
                                 if case is not None and case[2] != "pattern"])

    def test_too_young_then_old_enough(self):
        self.c.set("lock:idle", "tok")
        time.sleep(2.2)
        doc = self.lockctl(["release", "lock:idle", "--holder", "tok", "--if-older-than",
                            "1h", "--yes"], rc=1)
        self.assertEqual(doc["outcome"], "too_young")
        # that refusal read the key, and on Redis 7.0 (no CLIENT NO-TOUCH)
        # a read resets IDLETIME: wait again before the condition can hold
        # (IDLETIME less its clock's second: 3 s idle is a sure 2 s)
        time.sleep(3.2)
        doc = self.lockctl(["release", "lock:idle", "--holder", "tok", "--if-older-than",
                            "2s", "--yes"])
        self.assertEqual(doc["outcome"], "released")

    def test_if_older_than_uses_the_age_the_format_encodes(self):
        # a watchdog keeps touching the key (IDLETIME ~0), but the lw1 token
        # says it was taken 2 h ago: lockctl passes that age to the script
        acquired = int(time.time() * 1000) - 2 * 3600 * 1000
        tok = "lw1:web-3:4211:4230:%d:9f86d081884c7d65" % acquired
        self.c.set("lock:renewed", tok, px=30000)
        doc = self.lockctl(["release", "lock:renewed", "--holder", tok, "--if-older-than",
                            "1h", "--yes"])
        self.assertEqual(doc["outcome"], "released")
        # without that age (the script alone), it is too young
        self.c.set("lock:renewed", tok, px=30000)
        r = call(self.c, "release", "lock:renewed", tok, older_ms=3600000)
        self.assertEqual(r[0], b"too_young")
        r = call(self.c, "release", "lock:renewed", tok, older_ms=3600000, known_ms=7200000)
        self.assertEqual(r[0], b"released")

    def test_an_age_bound_to_the_lease_counts_only_while_it_is_as_read(self):
        # ARGV[4] "A:B:P:S": B (the agent's age) counts only while PTTL is
        # within S of P; another is a lease set since, by a renewal or by the
        # same holder id taking the lock again, with a longer or a shorter
        # lease (a red-team: shorter passed a check that PTTL was at most P)
        def bound(a, p, s=1000):
            return "%d:7200000:%d:%d" % (a, p, s)
        self.c.set("lock:same", "worker-7", px=600000)
        pttl = self.c.pttl("lock:same")
        r = call(self.c, "release", "lock:same", "worker-7", older_ms=3600000,
                 known_ms=bound(0, pttl), dry=True)
        self.assertEqual(r[0], b"would_release", r)
        # taken again (DEL, SET) with the same holder id, after the read:
        # a longer lease, then a shorter one
        for px in (900000, 120000):
            self.c.set("lock:same", "worker-7", px=px)
            r = call(self.c, "release", "lock:same", "worker-7", older_ms=3600000,
                     known_ms=bound(0, pttl))
            self.assertEqual(r[0], b"too_young", (px, r))
            self.assertEqual(self.c.get("lock:same"), b"worker-7")
        # the age A stands on its own, whatever the lease
        r = call(self.c, "release", "lock:same", "worker-7", older_ms=3600000,
                 known_ms=bound(7200000, pttl), dry=True)
        self.assertEqual(r[0], b"would_release", r)
        # P -1: no TTL then, and none now; a TTL since is a lease set
        self.c.set("lock:nottl", "worker-7")
        r = call(self.c, "release", "lock:nottl", "worker-7", older_ms=3600000,
                 known_ms=bound(0, -1, 0), dry=True)
        self.assertEqual(r[0], b"would_release", r)
        self.c.pexpire("lock:nottl", 60000)
        r = call(self.c, "release", "lock:nottl", "worker-7", older_ms=3600000,
                 known_ms=bound(0, -1, 0))
        self.assertEqual(r[0], b"too_young", r)
        # and a TTL gone since one was read
        self.c.set("lock:same", "worker-7")
        r = call(self.c, "release", "lock:same", "worker-7", older_ms=3600000,
                 known_ms=bound(0, pttl))
        self.assertEqual(r[0], b"too_young", r)
        # the audit entry says the age the script went by
        r = call(self.c, "release", "lock:nottl", "worker-7", older_ms=1000,
                 known_ms=bound(5000, -1, 0))
        self.assertEqual(r[0], b"released", r)
        entry = self.c.xrevrange("lockwatch:audit", count=1)[0][1]
        self.assertEqual(entry[b"age"], b"5000")

    def test_if_older_than_takes_no_idletime_of_a_shared_integer(self):
        # issue 23: "7" is one of Redis's shared integers, idle since the
        # server started; its IDLETIME is no age of a lock just taken
        self.c.set("lock:own", "tok-7", px=60000)
        time.sleep(3.5)
        self.c.set("lock:seven", "7", px=60000)
        self.assertGreaterEqual(self.c.object("idletime", "lock:seven"), 3)   # the premise
        r = call(self.c, "release", "lock:seven", "7", older_ms=2000)
        self.assertEqual(r[0], b"too_young")
        self.assertEqual(self.c.get("lock:seven"), b"7")
        # a value of its own, idle as long, is old enough
        r = call(self.c, "release", "lock:own", "tok-7", older_ms=2000)
        self.assertEqual(r[0], b"released")

    # -- the glob guard ----------------------------------------------------------

    def test_glob_guard_agrees_with_scan_match(self):
        rnd = random.Random(5)
        probe = self.rs.client(db=1)
        pat_alpha = [b"a", b"b", b"*", b"?", b"[", b"]", b"^", b"-", b"\\", b"\x80", b"\xff",
                     b"c", b":"]
        key_alpha = [b"a", b"b", b"c", b"-", b"^", b"]", b"[", b"\\", b"*", b"?", b"\x80",
                     b"\xff", b":", b"\x00"]
        sha = self.c.script_load(script("release"))
        mismatches = []
        for _ in range(2500):
            pat = b"".join(rnd.choice(pat_alpha) for _ in range(rnd.randint(0, 8)))
            key = b"".join(rnd.choice(key_alpha) for _ in range(rnd.randint(0, 7)))
            probe.flushdb()
            probe.set(key, b"v")
            scan = set(probe.scan(0, match=pat, count=1000)[1])
            r = self.c.evalsha(sha, 1, key, b"no-such-holder", "0", "0", "0", "1", "0", "1",
                               "t", "r", "main", "0", "", "1", pat)
            guard = r[0] != b"pattern"
            if guard != (key in scan):
                mismatches.append((pat, key, key in scan, guard))
        self.assertEqual(mismatches, [])

    def test_hostile_patterns_and_keys(self):
        cfg = lt.write_config(self.rs, patterns=r"lock:[a-c]?\*x, job\[1\]:*, *:{tag}:*, "
                                                r"[^l]ock:*")
        table = [
            (b"lock:ab*x", True), (b"lock:dx*x", False), (b"lock:abxx", False),
            (b"job[1]:run", True), (b"job1:run", False), (b"jobx:run", False),
            (b"x:{tag}:1", True), (b"x:{tag}", False),
            (b"bock:1", True), (b"lock:1", False),
            (b"lock:a\xff*x", True), (b"lock:a\n*x", True), (b"lock:a\x00*x", True),
        ]
        for key, inside in table:
            self.c.set(key, b"tok")
            doc = lt.run_json(self, ["release", "--escaped", h.escape_key(key), "--holder",
                                     "tok", "--yes", "--dry-run"], cfg,
                              rc=0 if inside else 1)
            self.assertEqual(doc["outcome"], "would_release" if inside else "pattern", key)
        # a hostile key far longer than any pattern: linear, refused quickly
        big = b"lock:" + b"a" * 200000
        self.c.set(big, b"tok")
        t0 = time.monotonic()
        r = call(self.c, "release", big, b"tok", patterns=("*a*a*a*a*a*b",), dry=True)
        self.assertEqual(r[0], b"pattern")
        self.assertLess(time.monotonic() - t0, 5)

    # -- wake-ups ----------------------------------------------------------------

    def test_wake_ups_per_format(self):
        c, port = self.c, self.rs.port
        # Redisson RW lock: "1" on redisson_rwlock:{K} once its last holder goes
        c.hset("lock:rw", mapping={"mode": "read", UUID + ":3": 2, UUID + ":4": 1})
        sub = Subscriber(port, "SUBSCRIBE", "redisson_rwlock:{lock:rw}")
        doc = self.lockctl(["release", "lock:rw", "--holder", UUID + ":4", "--yes"])
        self.assertEqual((doc["format"], doc["holders_left"], doc["deleted"]),
                         ("redisson-rw", 1, False))
        self.assertEqual(c.hget("lock:rw", UUID + ":3"), b"2")
        doc = self.lockctl(["release", "lock:rw", "--holder", UUID + ":3", "--yes"])
        self.assertEqual((doc["holders_left"], doc["deleted"]), (0, True))
        sub.wait_for(b"redisson_rwlock:{lock:rw}\r\n$1\r\n1\r\n")
        sub.close()
        # liblockwatch: "0" on lockwatch_lock__channel:{K}
        tok = "lw1:h:1:2:%d:0123456789abcdef" % int(time.time() * 1000)
        c.set("lock:lw", tok, px=60000)
        sub = Subscriber(port, "SUBSCRIBE", "lockwatch_lock__channel:{lock:lw}")
        self.lockctl(["release", "lock:lw", "--holder", tok, "--yes"])
        sub.wait_for(b"lockwatch_lock__channel:{lock:lw}\r\n$1\r\n0\r\n")
        sub.close()
        # a key with its own hash tag: no extra braces
        c.hset("lock:{grp}:1", UUID + ":5", 1)
        sub = Subscriber(port, "SUBSCRIBE", "redisson_lock__channel:lock:{grp}:1")
        self.lockctl(["release", "lock:{grp}:1", "--holder", UUID + ":5", "--yes"])
        sub.wait_for(b"redisson_lock__channel:lock:{grp}:1\r\n$1\r\n0\r\n")
        sub.close()
        # Redisson fair lock: the queue head's own channel too; queue kept
        c.hset("lock:fair", UUID + ":6", 1)
        c.rpush("redisson_lock_queue:{lock:fair}", UUID + ":7", UUID + ":8")
        later = int(time.time() * 1000) + 300000     # both turns still to come
        c.zadd("redisson_lock_timeout:{lock:fair}", {UUID + ":7": later, UUID + ":8": later + 1})
        head = "redisson_lock__channel:{lock:fair}:%s:7" % UUID
        sub = Subscriber(port, "SUBSCRIBE", head)
        self.lockctl(["release", "lock:fair", "--holder", UUID + ":6", "--yes"])
        sub.wait_for(head.encode() + b"\r\n$1\r\n0\r\n")
        sub.close()
        self.assertEqual(c.llen("redisson_lock_queue:{lock:fair}"), 2)
        self.assertEqual(c.zcard("redisson_lock_timeout:{lock:fair}"), 2)
        # python-redis-lock: lock:<name>, 24 base64 chars; its signal list
        c.set("lock:job", "q3Rv+/a0b1c2d3e4f5g6h7i8")
        got = []
        waiter = threading.Thread(target=lambda: got.append(
            self.rs.client().blpop("lock-signal:job", timeout=10)))
        waiter.start()
        time.sleep(0.2)
        self.lockctl(["release", "lock:job", "--holder", "q3Rv+/a0b1c2d3e4f5g6h7i8", "--yes"])
        waiter.join(15)
        self.assertEqual(got, [(b"lock-signal:job", b"1")])
        c.set("lock:job2", "q3Rv+/a0b1c2d3e4f5g6h7i8")
        self.lockctl(["release", "lock:job2", "--holder", "q3Rv+/a0b1c2d3e4f5g6h7i8", "--yes"])
        self.assertEqual(c.lrange("lock-signal:job2", 0, -1), [b"1"])
        self.assertTrue(0 < c.pttl("lock-signal:job2") <= 1000)
        # Spring RedisLockRegistry PUB_SUB_LOCK: the key on <registry>-channel:<key>
        spring_id = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"
        c.set("app:orders:42", spring_id)
        sub = Subscriber(port, "PSUBSCRIBE", "app-channel:*")
        self.lockctl(["release", "app:orders:42", "--holder", spring_id, "--yes"])
        sub.wait_for(b"app-channel:app:orders:42\r\n$13\r\napp:orders:42\r\n")
        sub.close()

    def test_polling_formats_get_only_the_del_and_counters_stay(self):
        c = self.c
        c.set("job-lock:default:nightly", "ADDED:2026-08-21T12:30:37.810Z@host:%s" % UUID)
        c.set("redisson_lock_token:{job-lock:default:nightly}", 5)
        c.set("lockwatch_fence:{job-lock:default:nightly}", 6)
        before = lt.snapshot_keys(c)
        self.lockctl(["release", "job-lock:default:nightly", "--holder",
                      "ADDED:2026-08-21T12:30:37.810Z@host:%s" % UUID, "--yes"])
        after = lt.snapshot_keys(c)
        del before[b"job-lock:default:nightly"]
        self.assertEqual(after, before)

    # -- cluster mode ------------------------------------------------------------

    def test_cluster_spublish_and_audit_on_the_streams_node(self):
        cl = MiniCluster(self)
        cfg = lt.write_config(url=cl.url, target_extra={"mode": "cluster"})
        audit_node = cl.node_of("lockwatch:audit")
        # a lock on another shard than the audit stream and the seed
        key = next("lock:c%d" % i for i in range(1000)
                   if cl.node_of("lock:c%d" % i) not in (audit_node, cl.nodes[0]))
        node = cl.node_of(key)
        node.client().hset(key, UUID + ":1", 1)
        node.client().set("redisson_lock_token:{%s}" % key, 3)
        chan = "redisson_lock__channel:{%s}" % key
        sharded = Subscriber(node.port, "SSUBSCRIBE", chan)
        plain = Subscriber(audit_node.port, "SUBSCRIBE", chan)   # PUBLISH reaches every node
        doc = lt.run_json(self, ["release", key, "--holder", "nobody", "--yes"], cfg, rc=1)
        self.assertEqual(doc["outcome"], "holder_changed")
        doc = lt.run_json(self, ["release", key, "--holder", UUID + ":1", "--yes"], cfg)
        self.assertEqual(doc["outcome"], "released", doc)
        self.assertTrue(doc["audit_id"])
        sharded.wait_for(b"smessage")
        sharded.wait_for(chan.encode() + b"\r\n$1\r\n0\r\n")
        plain.wait_for(chan.encode() + b"\r\n$1\r\n0\r\n")
        sharded.close()
        plain.close()
        self.assertFalse(node.client().exists(key))
        self.assertEqual(node.client().get("redisson_lock_token:{%s}" % key), b"3")
        # the entries were written by a second command on the stream's node
        entries = lt.audit_entries(audit_node.client())
        self.assertEqual([e["outcome"] for _, e in entries], [b"holder_changed", b"released"])
        self.assertEqual(entries[1][0].decode(), doc["audit_id"])
        self.assertEqual(entries[1][1]["old"], (UUID + ":1=1").encode())
        self.assertEqual([e["outcome"] for e in lt.run_json(self, ["audit"], cfg)["entries"]],
                         ["released", "holder_changed"])
        # a dry run writes no entry; list sees every shard
        cl.load([("SET", "lock:k%d" % i, "t%d" % i) for i in range(30)])
        doc = lt.run_json(self, ["release", "lock:k1", "--holder", "t1", "--dry-run"], cfg)
        self.assertEqual(doc["outcome"], "would_release")
        self.assertEqual(len(lt.audit_entries(audit_node.client())), 2)
        doc = lt.run_json(self, ["list"], cfg)
        self.assertEqual((doc["total"], doc["cluster_primaries"]), (30, 3))
        self.assertEqual(lt.run_json(self, ["show", "lock:k7"], cfg)["holders"][0]["id"], "t7")

    def test_sentinel_target_releases_on_the_primary(self):
        replica = self.start_redis(args=["--replicaof", "127.0.0.1", str(self.rs.port)])
        sport = h.free_port()
        d = h._mkdtemp("lw-sentinel-")
        conf = os.path.join(d, "sentinel.conf")
        with open(conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster 127.0.0.1 "
                    "%d 1\n" % (sport, d, self.rs.port))
        proc = subprocess.Popen([h.REDIS_SERVER, conf, "--sentinel"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        h._live_procs.append(proc)
        self.addCleanup(proc.kill)
        h.wait_until(lambda: h.redis.Redis(port=sport, socket_timeout=1).execute_command(
            "SENTINEL", "get-master-addr-by-name", "mymaster"), 10, desc="sentinel up")
        cfg = lt.write_config(url="redis://127.0.0.1:%d/0" % replica.port, target_extra={
            "mode": "sentinel", "sentinels": "127.0.0.1:%d" % sport, "master_name": "mymaster"})
        self.c.set("lock:s", "tok")
        doc = lt.run_json(self, ["release", "lock:s", "--holder", "tok", "--yes"], cfg)
        self.assertEqual(doc["outcome"], "released")
        self.assertFalse(self.c.exists("lock:s"))
        self.assertEqual(len(lt.audit_entries(self.c)), 1)
        self.assertEqual(lt.run_json(self, ["audit"], cfg)["count"], 1)

    # -- the race ------------------------------------------------------------------

    def test_race_never_deletes_the_new_holders_lock(self):
        t0 = time.monotonic()
        p = subprocess.run([DRIVER, "race", "127.0.0.1", str(self.rs.port), "2000"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        sys_out = p.stdout.decode() + p.stderr.decode()[-3000:]
        self.assertEqual(p.returncode, 0, sys_out)
        self.assertIn("violations 0", sys_out)
        self.assertLess(time.monotonic() - t0, 60)
        # every round left an audit entry, released or refused
        outcomes = {}
        for _, e in lt.audit_entries(self.c):
            outcomes[e["outcome"]] = outcomes.get(e["outcome"], 0) + 1
        self.assertEqual(sum(outcomes.values()), 2000, outcomes)
        self.assertEqual(set(outcomes), {b"released", b"holder_changed"})
        # the naive client-side check-then-delete, raced the same way, does
        # delete new holders' locks: the test sees the bug it guards against
        p = subprocess.run([DRIVER, "race-naive", "127.0.0.1", str(self.rs.port), "2000"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-2000:])

    # -- bounds, caching, ACL --------------------------------------------------------

    def test_old_values_are_bounded(self):
        big = b"B" * 100000
        self.c.set("lock:big", big)
        doc = self.lockctl(["release", "lock:big", "--holder", "short", "--yes"], rc=1)
        self.assertEqual(doc["outcome"], "holder_changed")
        self.assertEqual(len(doc["old"]), 512)
        r = call(self.c, "release", "lock:big", big)
        self.assertEqual(r[0], b"released")
        self.assertEqual(len(r[4]), 512)
        entries = lt.audit_entries(self.c)
        self.assertTrue(all(len(e["old"]) == 512 for _, e in entries))
        self.c.hset("lock:wide", mapping={"%s:%d" % (UUID, i): i + 1 for i in range(500)})
        r = call(self.c, "release", "lock:wide", UUID + ":7", dry=True)
        self.assertEqual(r[0], b"would_release")
        self.assertLessEqual(len(r[4]), 512)

    def test_audit_stream_is_capped(self):
        # releases fill it to MAXLEN ~ 10000 (refusals cannot: a flood of
        # them is written at most 50 a minute, test_release_guessing)
        pipe = self.c.pipeline(transaction=False)
        sha = self.c.script_load(script("release"))
        for i in range(10600):
            pipe.set("lock:cap", "x")
            pipe.evalsha(sha, 2, "lock:cap", "lockwatch:audit", "x", "0", "0", "0", "0", "0",
                         "1", "t", "r", "main", "0", "audit", "1", "lock:*")
            if i % 2000 == 1999:
                pipe.execute()
        pipe.execute()
        n = self.c.xlen("lockwatch:audit")
        self.assertTrue(10000 <= n < 10600, n)
        # a flood of refusals after them is written 50 times, then not
        for i in range(200):
            pipe.evalsha(sha, 2, "lock:none", "lockwatch:audit", "x", "0", "0", "0", "0", "0",
                         str(int(time.time() * 1000)), "t", "r", "main", "0", "audit", "1",
                         "lock:*")
        out = pipe.execute()
        self.assertEqual(sum(1 for r in out if r[5]), 50, [r[5] for r in out[:3]])

    def test_evalsha_survives_script_flush(self):
        self.c.set("lock:a", "t")
        self.c.script_flush()
        doc = self.lockctl(["release", "lock:a", "--holder", "t", "--yes"])
        self.assertEqual(doc["outcome"], "released")
        # lockctl ran exactly the documented text (guard.lua + release.lua)
        sha = hashlib.sha1(script("release").encode()).hexdigest()
        self.assertEqual(self.c.script_exists(sha), [True])

    def test_least_privilege_acl(self):
        # the ACL line of docs/lockctl.md, on a server with requirepass
        rs = self.start_redis(password="admin-pw")
        admin = rs.client()
        with open(os.path.join(h.REPO, "docs", "lockctl.md")) as f:
            doc = f.read()
        block = doc[doc.index("    redis-cli ACL SETUSER lockctl "):].split("\n\n", 1)[0]
        self.assertTrue(all(l.endswith(" \\") for l in block.splitlines()[:-1]),
                        "each line of the documented ACL but the last ends in a continuation")
        # pasted into bash as it is written (an on-call trial: unquoted, '>' was
        # a redirection and '|' a pipe), with the server's port and password
        cmd = textwrap.dedent(block).replace("'>PASSWORD'", "'>ctl-pw'").replace(
            "redis-cli ", "redis-cli -p %d " % rs.port, 1)
        p = subprocess.run(["bash", "-c", cmd], env=dict(os.environ, REDISCLI_AUTH="admin-pw"),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30,
                           cwd=h._mkdtemp("lw-paste-"))
        self.assertEqual(p.stdout.strip(), b"OK", p.stdout)
        self.assertIn("+object|idletime", " ".join(
            x.decode() if isinstance(x, bytes) else str(x)
            for x in admin.execute_command("ACL", "GETUSER", "lockctl")[:12]))
        d = h._mkdtemp("lw-acl-")
        pw = os.path.join(d, "ctl.pass")
        with open(pw, "w") as f:
            f.write("ctl-pw\n")
        cfg = lt.write_config(url="redis://lockctl@127.0.0.1:%d/0" % rs.port,
                              target_extra={"password_file": pw})
        admin.set("lock:a", "tok")
        admin.hset("lock:r", UUID + ":1", 1)
        admin.set("user:secret", "s")
        for args in (["list"], ["show", "lock:a"], ["audit"]):
            p = lt.run(args, cfg)
            self.assertEqual(p.returncode, 0, (args, p.stderr))
        for key, holder in (("lock:a", "tok"), ("lock:r", UUID + ":1")):
            doc = lt.run_json(self, ["release", key, "--holder", holder, "--yes"], cfg)
            self.assertEqual(doc["outcome"], "released", doc)
            self.assertEqual(doc["wake_errors"], 0)
        # outside the patterns (and the ACL's keys): lockctl refuses it before
        # any Redis call, never a NOPERM (exit 3) with advice to widen the ACL
        doc = lt.run_json(self, ["release", "user:secret", "--holder", "s", "--yes"], cfg, rc=1)
        self.assertEqual(doc["outcome"], "pattern")
        self.assertEqual(admin.get("user:secret"), b"s")
        # inside the ACL but outside the patterns: the same, nothing audited
        admin.set("redisson_sc:x", "v")
        doc = lt.run_json(self, ["release", "redisson_sc:x", "--holder", "v", "--yes"], cfg,
                          rc=1)
        self.assertEqual(doc["outcome"], "pattern")
        self.assertEqual([e["outcome"] for _, e in lt.audit_entries(admin)],
                         [b"released", b"released"])


if __name__ == "__main__":
    h.main()
