# SPDX-License-Identifier: BSD-3-Clause
"""The two least-privilege Redis ACL users README documents: the scanner
(read-only) and lockctl's (the guarded release: EVALSHA/EVAL of its
script, the wake-ups, the audit stream).  lockctl with its user releases
a plain lock and a Redisson lock (waking the waiters) and expires a leak,
with an audit entry each; the scanner user cannot delete a key, neither
directly nor through lockctl's script; neither user reads other keys."""

import json
import os
import threading

import redis

import harness as h
import topo

# Keep both in step with README.md "Redis permissions" (which adds
# +client|no-touch for Redis 7.2+; 7.0 does not know the subcommand).
SCANNER_ACL = ["resetkeys", "~lock:*", "~lockwatch:client:*", "~redisson_lock_queue:*",
               "resetchannels", "-@all",
               "+scan", "+type", "+pttl", "+object|idletime", "+getrange", "+hlen", "+hscan",
               "+zcard", "+zrange", "+exists", "+hmget", "+llen", "+lrange", "+pubsub|numsub",
               "+ping", "+role", "+readonly", "+asking", "+cluster|shards", "+cluster|slots"]
LOCKCTL_ACL = ["resetkeys", "~lock:*", "~{lock:*}:*", "~lockwatch:client:*",
               "~lockwatch:audit",
               "~redisson_lock__channel*", "~redisson_rwlock*", "~lockwatch_lock__channel:*",
               "~redisson_lock_queue:*", "~redisson_lock_timeout:*", "~redisson_sc:*",
               "~lock-signal:*",
               "resetchannels", "&redisson_lock__channel*", "&redisson_rwlock*",
               "&lockwatch_lock__channel:*", "&redisson_sc:*",
               "-@all", "+scan", "+type", "+pttl", "+object|idletime", "+getrange", "+hlen",
               "+hscan", "+exists", "+hmget", "+llen", "+ping", "+role", "+readonly",
               "+asking", "+cluster|shards", "+cluster|slots",
               "+evalsha", "+eval", "+get", "+strlen", "+hexists", "+hget", "+hgetall",
               "+hset", "+hdel", "+del", "+pexpire", "+incrby", "+zscore", "+zrem", "+zcard",
               "+zrange", "+lindex", "+lpop", "+lpush", "+pubsub|numsub",
               "+pubsub|shardnumsub", "+publish",
               "+spublish", "+xadd",
               "+xrevrange"]

UUID = "8743c9c0-0795-4907-87fd-6c719a6b4586"


class AclLockctl(h.TestCase):

    def config(self, rs, user, password):
        d = h._mkdtemp("lw-acl2-")
        pw = topo.write_file(d, "%s.pass" % user, password + "\n")
        cfg = topo.write_file(d, "lockwatch.ini", h.config_text(
            h.free_port(), [("main", "redis://%s@127.0.0.1:%d/0" % (user, rs.port))],
            target_extra={"password_file": pw}, leak_grace="1s", max_hold="1h") +
            "\n[unlock]\naudit_stream = lockwatch:audit\n", mode=0o640)
        return cfg

    def test_users(self):
        rs = self.start_redis()
        c = rs.client()
        c.execute_command("ACL", "SETUSER", "lockwatch", "on", ">scan-pw", *SCANNER_ACL)
        c.execute_command("ACL", "SETUSER", "lockctl", "on", ">ctl-pw", *LOCKCTL_ACL)
        c.set("lock:plain:1", "tok-1", px=600000)
        c.set("lock:leak:1", "tok-2")
        c.set("lock:leak:2", "tok-3")
        c.hset("lock:rl:1", UUID + ":7", "1")
        c.pexpire("lock:rl:1", 600000)
        c.set("secret:1", "not for either")
        scan_cfg = self.config(rs, "lockwatch", "scan-pw")
        ctl_cfg = self.config(rs, "lockctl", "ctl-pw")

        # the agent scans fully with the scanner user
        p = h.run_lockwatchd(["--once", "-c", scan_cfg], timeout=60)
        err = p.stderr.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("NOPERM", err)
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 4)

        # the scanner user cannot delete: not directly...
        scanner = redis.Redis(host="127.0.0.1", port=rs.port, username="lockwatch",
                              password="scan-pw")
        with self.assertRaises(redis.exceptions.NoPermissionError):
            scanner.delete("lock:plain:1")
        with self.assertRaises(redis.exceptions.NoPermissionError):
            scanner.execute_command("EVAL", "return redis.call('del', KEYS[1])", 1,
                                    "lock:plain:1")
        # ...nor through lockctl's guarded release
        p = topo.lockctl(["-c", scan_cfg, "release", "lock:plain:1", "--holder", "tok-1",
                          "--yes", "--reason", "acl test"])
        self.assertEqual(p.returncode, 3, (p.stdout, p.stderr))
        self.assertIn(b"NOPERM", p.stderr + p.stdout)
        self.assertEqual(c.get("lock:plain:1"), b"tok-1")

        # lockctl with its own user releases a plain lock...
        p = topo.lockctl(["-c", ctl_cfg, "--json", "release", "lock:plain:1", "--holder",
                          "tok-1", "--yes", "--reason", "acl test"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        out = json.loads(p.stdout)
        self.assertEqual(out["outcome"], "released")
        self.assertEqual(out["wake_errors"], 0)
        self.assertEqual(c.exists("lock:plain:1"), 0)

        # ...a Redisson lock, waking a waiter on its channel...
        sub = c.pubsub()
        sub.subscribe("redisson_lock__channel:{lock:rl:1}")
        got = []
        def listen():
            for msg in sub.listen():
                if msg["type"] == "message":
                    got.append(msg["data"])
                    return
        th = threading.Thread(target=listen, daemon=True)
        th.start()
        p = topo.lockctl(["-c", ctl_cfg, "--json", "release", "lock:rl:1", "--holder",
                          UUID + ":7", "--yes", "--reason", "acl test"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        out = json.loads(p.stdout)
        self.assertEqual(out["outcome"], "released", out)
        self.assertEqual(out["wake_errors"], 0, out)
        th.join(5)
        self.assertEqual(got, [b"0"])
        sub.close()

        # ...expires a leak, refuses a wrong holder, and audits all of it
        p = topo.lockctl(["-c", ctl_cfg, "expire", "lock:leak:1", "--ttl", "1m", "--holder",
                          "tok-2", "--yes"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertGreater(c.pttl("lock:leak:1"), 0)
        p = topo.lockctl(["-c", ctl_cfg, "release", "lock:leak:2", "--holder", "wrong",
                          "--yes"])
        self.assertEqual(p.returncode, 1, (p.stdout, p.stderr))
        p = topo.lockctl(["-c", ctl_cfg, "--json", "audit"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertGreaterEqual(c.xlen("lockwatch:audit"), 3)

        # and the lockctl user reads nothing else either
        ctl = redis.Redis(host="127.0.0.1", port=rs.port, username="lockctl",
                          password="ctl-pw")
        with self.assertRaises(redis.exceptions.NoPermissionError):
            ctl.get("secret:1")
        with self.assertRaises(redis.exceptions.NoPermissionError):
            ctl.delete("secret:1")
        with self.assertRaises(redis.exceptions.NoPermissionError):
            ctl.execute_command("FLUSHALL")


if __name__ == "__main__":
    h.main()
