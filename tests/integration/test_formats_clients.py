# SPDX-License-Identifier: BSD-3-Clause
"""Every client's key layout, end to end (issue 17, "Formats").

The layouts the real clients write (Redisson RLock, FairLock with waiters,
FencedLock, SpinLock, a read lock of 600 readers with their rwlock_timeout
keys, a write lock re-entered as a read lock, an unlock latch, a
PermitExpirableSemaphore; redis-py, python-redis-lock with its signal list,
pottery, node-redlock, redis-semaphore's Mutex and Semaphore, redsync,
ShedLock, Spring's RedisLockRegistry; liblockwatch's client registry) are
written here with redis-py, byte for byte as the libraries' sources say
(the real clients' own proof is tests/interop).  Checked:

- lockwatchd --once and the API list exactly the locks, each with its
  format, holders, counts and mode; no helper key is a lock, a leak or a
  class member, each is counted to its lock ("helper_keys"); the fair lock,
  the fenced lock and the permit semaphore take their format from them;
- node-redlock tokens shaped like a uuid1 get no acquisition time;
- exclude_patterns keys are never listed, counted or released;
- lockctl list does not list helper keys; lockctl release / expire and the
  HTTP release refuse a helper key naming its lock, and change nothing.
"""

import base64
import os
import random
import time
import uuid

import harness as h
import test_lockctl as tl
import test_release_http as th

RUUID = "8743c9c0-0795-4907-87fd-6c719a6b4586"
RUUID2 = "0b7d3c1e-5a8f-4e2d-9c61-3f0a9e8b7d21"
READERS = 600


def uuid1_shaped_random(rng):
    """32 random hex digits with a uuid1's version and variant nibbles:
    what 1 node-redlock token in 64 looks like."""
    while True:
        v = "%032x" % rng.getrandbits(128)
        if v[12] == "1" and v[16] in "89ab":
            return v


permit_id = bytes(range(0xf0, 0x100))        # 16 raw bytes, as Redisson 3.17+ writes


def write_layouts(c, now_ms):
    """Write every layout; returns {lock key: (format, helper keys)}."""
    want = {}
    # Redisson RLock (watchdog lease), with an unlock latch and the
    # liblockwatch client registry of its holder's uuid (which counts to
    # every lock held by that client)
    c.hset("orders-lock", "%s:57" % RUUID, "1")
    c.pexpire("orders-lock", 30000)
    c.set("redisson_unlock_latch:{orders-lock}:%s" % os.urandom(16).hex(), "0", px=20000)
    c.hset("lockwatch:client:{%s}" % RUUID,
           mapping={"host": "web-1", "pid": "4211", "at:57:orders-lock": str(now_ms - 5000)})
    want["orders-lock"] = ("redisson", 2)
    # RSpinLock: stored like an RLock
    c.hset("spin-lock", "%s:58" % RUUID2, "2")
    c.pexpire("spin-lock", 30000)
    want["spin-lock"] = ("redisson", 0)
    # RFairLock held, two waiters queued
    c.hset("fair-lock", "%s:60" % RUUID, "1")
    c.pexpire("fair-lock", 30000)
    c.rpush("redisson_lock_queue:{fair-lock}", "%s:61" % RUUID2, "%s:62" % RUUID2)
    c.zadd("redisson_lock_timeout:{fair-lock}",
           {"%s:61" % RUUID2: now_ms + 330000, "%s:62" % RUUID2: now_ms + 630000})
    want["fair-lock"] = ("redisson-fair", 3)      # + the client registry
    # RFencedLock: its token counter has no TTL and is never deleted
    c.hset("fenced-lock", "%s:70" % RUUID, "1")
    c.pexpire("fenced-lock", 30000)
    c.set("redisson_lock_token:{fenced-lock}", "6")
    want["fenced-lock"] = ("redisson-fenced", 2)  # + the client registry
    # RReadWriteLock: a read lock of 600 readers, one timeout key each
    rw = {"mode": "read"}
    for i in range(READERS):
        u = str(uuid.UUID(int=random.Random(i).getrandbits(128), version=4))
        rw["%s:%d" % (u, 100 + i)] = "1"
    c.hset("rw-lock", mapping=rw)
    c.pexpire("rw-lock", 30000)
    p = c.pipeline(transaction=False)
    for field in rw:
        if field != "mode":
            p.set("{rw-lock}:%s:rwlock_timeout:1" % field, "1", px=30000)
    p.execute()
    want["rw-lock"] = ("redisson-rw", READERS)
    # a write lock whose holder re-entered it as a reader
    c.hset("rw-w", mapping={"mode": "write", "%s:5:write" % RUUID: "1", "%s:5" % RUUID: "1"})
    c.pexpire("rw-w", 30000)
    c.set("{rw-w}:%s:5:rwlock_timeout:1" % RUUID, "1", px=30000)
    want["rw-w"] = ("redisson-rw", 2)            # + the client registry
    # RPermitExpirableSemaphore: 3 permits left, one in use until +60 s
    c.set("permits", "3")
    c.zadd("{permits}:timeout", {permit_id: now_ms + 60000})
    want["permits"] = ("redisson-permit-semaphore", 1)
    # redis-py Lock(timeout=None): uuid1 token, no TTL; 32 hex prove no
    # uuid1, so it is declared (format_patterns, below)
    c.set("rp-lock", uuid.uuid1().hex)
    want["rp-lock"] = ("redis-py", 0)
    # python-redis-lock: lock:<name> and its signal list
    c.set("lock:prl", base64.b64encode(os.urandom(18)))
    c.rpush("lock-signal:prl", "1")
    want["lock:prl"] = ("python-redis-lock", 1)
    # pottery Redlock
    c.set("redlock:printer", str(uuid.uuid4()), px=10000)
    want["redlock:printer"] = ("pottery", 0)
    # node-redlock: tokens that look like uuid1s (the old false times)
    rng = random.Random(17)
    for i in range(40):
        c.set("nr:%d" % i, uuid1_shaped_random(rng), px=60000)
        want["nr:%d" % i] = ("node-redlock", 0)
    # redis-semaphore Mutex and Semaphore (limit 3, two permits taken)
    c.set("mutex:jobs", str(uuid.uuid4()), px=10000)
    want["mutex:jobs"] = ("redis-semaphore", 0)
    c.zadd("semaphore:pool", {str(uuid.uuid4()): now_ms, str(uuid.uuid4()): now_ms - 1000})
    c.pexpire("semaphore:pool", 10000)
    want["semaphore:pool"] = ("redis-semaphore", 0)
    # redsync
    c.set("rs-lock", base64.b64encode(os.urandom(16)), px=8000)
    want["rs-lock"] = ("redsync", 0)
    # ShedLock 6.7+
    at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now_ms // 1000 - 2))
    c.set("job-lock:default:nightly", "ADDED:%s.123Z@batch-1:%s" % (at, uuid.uuid4()),
          px=600000)
    want["job-lock:default:nightly"] = ("shedlock", 0)
    # Spring Integration RedisLockRegistry: any uuid4, so declared
    c.set("registry:jobs-1", str(uuid.uuid4()), px=60000)
    want["registry:jobs-1"] = ("spring", 0)
    # the same shape undeclared is no library's in particular
    c.set("other:jobs-1", str(uuid.uuid4()), px=60000)
    want["other:jobs-1"] = ("plain", 0)
    # not a lock: kept under the patterns by the team, excluded
    c.set("stats:counter", "12")
    return want


# the values that prove no format alone (docs/formats.md "What is a fact")
DECLARED = "rp-lock=redis-py registry:*=spring"


def agent_locks(ag):
    def scanned():
        st, body = ag.get_json("/api/v1/locks?state=all&limit=1000")
        return st == 200 and body["total"] > 0 and body
    body = ag.wait_for(scanned, timeout=30, desc="a scan in the API")
    return body, {l["key"]: l for l in body["locks"]}


class FormatsClients(h.TestCase):

    def test_layouts(self):
        rs = self.start_redis()
        c = rs.client()
        now_ms = int(time.time() * 1000)
        want = write_layouts(c, now_ms)
        path = th.token_file()
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              patterns="*",
                              target_extra={"exclude_patterns": "stats:*",
                                            "format_patterns": DECLARED},
                              extra=th.unlock_section(path))
        body, locks = agent_locks(ag)
        self.assertEqual(sorted(locks), sorted(want))
        self.assertEqual(body["total"], len(want))
        for key, (fmt, comp) in want.items():
            l = locks[key]
            self.assertEqual((key, l["format"], l["helper_keys"]), (key, fmt, comp), l)
            self.assertEqual(l["states"], ["held"], l)    # no helper made a leak
        rwl = locks["rw-lock"]
        self.assertEqual((rwl["mode"], rwl["holders_total"]), ("read", READERS))
        rww = locks["rw-w"]
        self.assertEqual((rww["mode"], rww["holders_total"]), ("write", 2))
        self.assertEqual(sorted(x["id"] for x in rww["holders"]),
                         ["%s:5" % RUUID, "%s:5:write" % RUUID])
        self.assertEqual(locks["semaphore:pool"]["holders_total"], 2)
        # a permit semaphore's holders are its permits in use
        self.assertEqual(locks["permits"]["holders_total"], 1)
        self.assertEqual(locks["permits"]["holders"][0]["id_escaped"],
                         h.escape_key(permit_id))
        for i in range(40):
            self.assertIsNone(locks["nr:%d" % i]["acquired_at"], locks["nr:%d" % i])
        self.assertIsNotNone(locks["rp-lock"]["acquired_at"])
        # where each format came from (issue 23)
        for key, src in (("rp-lock", "declared"), ("registry:jobs-1", "declared"),
                         ("other:jobs-1", "guessed"), ("nr:0", "guessed"),
                         ("orders-lock", "proven"), ("fair-lock", "proven"),
                         ("rw-lock", "proven"), ("job-lock:default:nightly", "proven"),
                         ("permits", "proven")):
            self.assertEqual((key, locks[key]["format_source"]), (key, src), locks[key])
        self.assertNotIn("format_contradicts", locks["rp-lock"])
        # the per-format series count locks only
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_locks"), len(want))
        self.assertEqual(h.msum(m, "lockwatch_locks", format="redisson-rw"), 2)
        self.assertEqual(h.msum(m, "lockwatch_locks", format="node-redlock"), 40)

        # HTTP release of a reader's timeout key: refused, naming the lock
        tkey = "{rw-lock}:%s:rwlock_timeout:1" % rwl["holders"][0]["id"]
        st, _, doc = th.post(ag, {"key": tkey, "holder": "1"})
        self.assertEqual((st, doc["outcome"]), (409, "helper_key"), doc)
        self.assertIn("read/write lock rw-lock", doc["message"])
        self.assertEqual(c.get(tkey), b"1")

        # lockctl: the fencing counter is neither released nor expired
        cfg = tl.write_config(rs, patterns="*")
        for args in (["release", "redisson_lock_token:{fenced-lock}", "--holder", "6",
                      "--yes"],
                     ["expire", "redisson_lock_token:{fenced-lock}", "--holder", "6",
                      "--ttl", "10s", "--yes"]):
            p = tl.run(args, cfg)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(b"fencing token counter of Redisson fenced lock fenced-lock",
                          b" ".join(p.stderr.split()))     # wrapped at spaces
            self.assertIn(b"[helper_key]", p.stderr)
        doc = tl.run_json(self, ["release", "redisson_lock_queue:{fair-lock}", "--holder",
                                 "x", "--yes"], cfg, rc=1)
        self.assertEqual(doc["outcome"], "helper_key")
        self.assertIn("fair lock fair-lock", doc["message"])
        self.assertEqual(c.get("redisson_lock_token:{fenced-lock}"), b"6")
        self.assertEqual(c.pttl("redisson_lock_token:{fenced-lock}"), -1)
        self.assertEqual(c.llen("redisson_lock_queue:{fair-lock}"), 2)

        # lockctl list: the locks, no helper key; show of the 600 readers
        doc = tl.run_json(self, ["list", "--limit", "1000"], cfg)
        listed = sorted(l["key"] for l in doc["locks"])
        self.assertEqual(listed, sorted(list(want) + ["stats:counter"]))  # not excluded here
        doc = tl.run_json(self, ["show", tkey], cfg)
        self.assertEqual(doc["helper_kind"], "rwlock-timeout")
        self.assertIn("read/write lock rw-lock", doc["not_a_lock"])
        p = tl.run(["show", "redisson_lock_token:{fenced-lock}"], cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"NOT a lock", p.stdout)
        self.assertNotIn(b"release with:", p.stdout)
        # and nothing that reads it as a lock (a format, a state, a holder)
        rows = [ln.split()[0] for ln in p.stdout.decode().splitlines() if ln[:1].isalpha()]
        for field in ("format", "state", "holder", "waiting"):
            self.assertNotIn(field, rows, p.stdout)
        self.assertIn("value", rows, p.stdout)
        self.assertIn(b"release the lock it serves", p.stdout)
        shown = tl.run_json(self, ["show", "rw-lock"], cfg)
        self.assertEqual((shown["format"], shown["mode"], shown["holders_total"]),
                         ("redisson-rw", "read", READERS))

        # leak_grace 0s: keys without a TTL leak at once, but a permit
        # semaphore lives without one by design
        cfg0 = tl.write_config(rs, patterns="*", leak_grace="0s")
        p = h.run_lockwatchd(["--once", "-c", cfg0], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", **{"class": "rp-lock"}), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", **{"class": "permits"}), 0)
        self.assertEqual(h.msum(m, "lockwatch_locks", format="redisson-permit-semaphore"), 1)

    def test_helpers_outside_the_patterns(self):
        """patterns = lock:* (the common config) does not cover Redisson's
        redisson_lock_token:{lock:x} or {lock:x}:timeout: the agent asks
        for them, and an ACL that does not let it changes only that."""
        rs = self.start_redis()
        c = rs.client()
        now_ms = int(time.time() * 1000)
        c.hset("lock:fenced", "%s:23" % RUUID, "1")
        c.pexpire("lock:fenced", 30000)
        c.set("redisson_lock_token:{lock:fenced}", "2")
        c.hset("lock:fair", "%s:24" % RUUID, "1")
        c.pexpire("lock:fair", 30000)
        c.rpush("redisson_lock_queue:{lock:fair}", "%s:25" % RUUID2)
        c.zadd("redisson_lock_timeout:{lock:fair}", {"%s:25" % RUUID2: now_ms + 300000})
        c.hset("lock:rlock", "%s:26" % RUUID, "1")
        c.pexpire("lock:rlock", 30000)
        c.set("lock:pexp", "0")
        c.zadd("{lock:pexp}:timeout", {os.urandom(16): now_ms + 60000,
                                       os.urandom(16): 922337203685477})
        c.set("lock:sem", "3")                  # RSemaphore: a number, like a token
        want = {"lock:fenced": "redisson-fenced", "lock:fair": "redisson-fair",
                "lock:rlock": "redisson", "lock:pexp": "redisson-permit-semaphore",
                "lock:sem": "plain"}
        cfg = tl.write_config(rs, patterns="lock:*", leak_grace="0s")
        p = h.run_lockwatchd(["--once", "-c", cfg], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = h.parse_metrics(p.stdout)
        for key, fmt in want.items():
            self.assertEqual(h.msum(m, "lockwatch_locks", **{"class": key, "format": fmt}), 1,
                             (key, fmt, h.select(m, "lockwatch_locks", **{"class": key})))
        # lockctl list and show ask for the same helpers
        doc = tl.run_json(self, ["list"], cfg)
        listed = {l["key"]: l for l in doc["locks"]}
        self.assertEqual({k: l["format"] for k, l in listed.items()}, want)
        self.assertEqual(listed["lock:pexp"]["holders_total"], 2)
        self.assertEqual(tl.run_json(self, ["show", "lock:fenced"], cfg)["format"],
                         "redisson-fenced")
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", **{"class": "lock:pexp"}), 0)
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", **{"class": "lock:sem"}), 1)
        # the scanner ACL of README "Redis permissions": ~lock:* only
        c.execute_command("ACL", "SETUSER", "lockwatch", "on", ">scan-pw", *h.SCANNER_ACL)
        p = h.once_as_user(rs, "lockwatch", "scan-pw", patterns="lock:*")
        self.assertEqual(p.returncode, 0, p.stderr)
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_target_up", target="main"), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks", **{"class": "lock:fenced",
                                                          "format": "redisson"}), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks"), len(want))

    def test_exclude_patterns(self):
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:a", "tok-a", px=600000)
        c.set("lock:stats:hits", "41")          # no TTL: would be a leak
        c.set("lock:meta:x", "y")
        cfg = tl.write_config(rs, patterns="lock:*")
        with open(cfg) as f:
            text = f.read()
        text = text.replace("patterns = lock:*",
                            "patterns = lock:*\nexclude_patterns = lock:stats:*, lock:meta:?")
        with open(cfg, "w") as f:
            f.write(text)
        p = h.run_lockwatchd(["--once", "-c", cfg], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="main"), 0)
        doc = tl.run_json(self, ["list"], cfg)
        self.assertEqual([l["key"] for l in doc["locks"]], ["lock:a"])
        for key, holder in (("lock:stats:hits", "41"), ("lock:meta:x", "y")):
            doc = tl.run_json(self, ["release", key, "--holder", holder, "--yes"], cfg, rc=1)
            self.assertEqual(doc["outcome"], "excluded")
            self.assertIn("exclude_patterns", doc["message"])
        p = tl.run(["expire", "lock:stats:hits", "--holder", "41", "--ttl", "5s", "--yes"],
                   cfg)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"[excluded]", p.stderr)
        self.assertEqual(c.get("lock:stats:hits"), b"41")
        self.assertEqual(c.pttl("lock:stats:hits"), -1)


if __name__ == "__main__":
    h.main()
