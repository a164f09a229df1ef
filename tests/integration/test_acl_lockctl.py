# SPDX-License-Identifier: BSD-3-Clause
"""The two least-privilege Redis ACL users README documents: the scanner
(read-only) and lockctl's (the guarded release: EVALSHA/EVAL of its
script, the wake-ups, the audit stream).  lockctl with its user releases
a plain lock and a Redisson lock (waking the waiters) and expires a leak,
with an audit entry each; the scanner user cannot delete a key, neither
directly nor through lockctl's script; neither user reads other keys.

One config holds both (test_one_config): url and password_file are the
scanner's, release_user and release_password_file lockctl's; the agent
scans with it, lockctl reads as the scanner and releases, expires and
reads the audit as the release user, and so does the agent's release
endpoint.  Without release_user a release's NOPERM names the permission
the scanner user lacks and the keys that give the writes their own."""

import json
import os
import threading
import time

import redis

import harness as h
import test_release_http as rh
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

    def users(self):
        rs = self.start_redis()
        c = rs.client()
        c.execute_command("ACL", "SETUSER", "lockwatch", "on", ">scan-pw", *SCANNER_ACL)
        c.execute_command("ACL", "SETUSER", "lockctl", "on", ">ctl-pw", *LOCKCTL_ACL)
        return rs, c

    def agent(self, rs, release=True):
        """An agent with ONE config: the scanner's url and password_file,
        and (release) the lockctl user as release_user."""
        d = h._mkdtemp("lw-acl3-")
        extra = {"password_file": topo.write_file(d, "scan.pass", "scan-pw\n")}
        if release:
            extra["release_user"] = "lockctl"
            extra["release_password_file"] = topo.write_file(d, "release.pass", "ctl-pw\n")
        ag = self.start_agent(rs, targets=[("main", "redis://lockwatch@127.0.0.1:%d/0"
                                            % rs.port)],
                              target_extra=extra, leak_grace="1s", max_hold="1h",
                              extra=rh.unlock_section(rh.token_file()) +
                              "audit_stream = lockwatch:audit\n")
        return ag

    def test_one_config(self):
        rs, c = self.users()
        for i in range(1, 4):
            c.set("lock:one:%d" % i, "tok-%d" % i)
        c.hset("lock:rl:1", UUID + ":7", "1")
        ag = self.agent(rs)
        cfg = ag.config_path

        # -n shows the keys, never the password
        p = h.run_lockwatchd(["-n", "-c", cfg])
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(out, r"(?m)^release_user\s*=\s*lockctl$")
        self.assertRegex(out, r"(?m)^release_password_file\s*=\s*/.*release\.pass$")
        self.assertNotIn("ctl-pw", out + p.stderr.decode())

        # the agent scans with the read-only user
        ag.wait_for(lambda: len(h.agent_lock_keys(ag)) == 4, timeout=30,
                    desc="the agent's four locks")

        # lockctl reads as the scanner and writes as release_user
        doc = json.loads(topo.lockctl(["-c", cfg, "--json", "list"]).stdout)
        self.assertEqual(doc["total"], 4, doc)
        p = topo.lockctl(["-c", cfg, "--json", "release", "lock:one:1", "--holder", "tok-1",
                          "--yes", "--reason", "one config"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertEqual(json.loads(p.stdout)["outcome"], "released")
        self.assertEqual(c.exists("lock:one:1"), 0)
        p = topo.lockctl(["-c", cfg, "--json", "release", "lock:rl:1", "--holder",
                          UUID + ":7", "--yes"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertEqual(json.loads(p.stdout)["wake_errors"], 0)
        p = topo.lockctl(["-c", cfg, "expire", "lock:one:2", "--ttl", "1h", "--holder",
                          "tok-2", "--yes"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertGreater(c.pttl("lock:one:2"), 0)

        # the agent's release endpoint too
        st, _, doc = rh.post(ag, {"key": "lock:one:3", "holder": "tok-3", "reason": "http"})
        self.assertEqual((st, doc["outcome"]), (200, "released"), doc)
        self.assertEqual(c.exists("lock:one:3"), 0)

        # the audit stream is read as the user that writes it
        p = topo.lockctl(["-c", cfg, "--json", "audit"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertEqual([e["key"] for e in json.loads(p.stdout)["entries"]],
                         ["lock:one:3", "lock:one:2", "lock:rl:1", "lock:one:1"])

        # reads never need the release user: with it off, list still works,
        # and a release names the user it could not log in as
        c.set("lock:one:4", "tok-4")
        c.execute_command("ACL", "SETUSER", "lockctl", "off")
        p = topo.lockctl(["-c", cfg, "--json", "show", "lock:one:4"])
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        p = topo.lockctl(["-c", cfg, "release", "lock:one:4", "--holder", "tok-4", "--yes"])
        self.assertEqual(p.returncode, 3, (p.stdout, p.stderr))
        self.assertIn(b"as release_user lockctl", p.stderr)
        # the hint names the release user's keys, not the reader's password_file
        self.assertIn(b"release_password_file", b" ".join(p.stderr.split()))
        self.assertEqual(c.get("lock:one:4"), b"tok-4")

    def test_noperm_names_the_permission(self):
        rs, c = self.users()
        c.set("lock:np:1", "tok-1")
        ag = self.agent(rs, release=False)
        cfg = ag.config_path
        ag.wait_for(lambda: len(h.agent_lock_keys(ag)) == 1, timeout=30,
                    desc="the agent's lock")

        want = ("the Redis user lockwatch (the url's; [target main] has no release_user) "
                "lacks +evalsha and +eval, which the release script needs: set release_user "
                "and release_password_file")
        # lockctl, text: the sentence, not the "check that Redis answers" hint
        p = topo.lockctl(["-c", cfg, "release", "lock:np:1", "--holder", "tok-1", "--yes"])
        err = b" ".join(p.stderr.split()).decode()
        self.assertEqual(p.returncode, 3, err)
        self.assertIn("NOPERM", err)
        self.assertIn(want, err)
        self.assertIn("docs/lockctl.md#least-privilege-acl", err)
        self.assertNotIn("check that Redis answers", err)
        # --json
        p = topo.lockctl(["-c", cfg, "--json", "release", "lock:np:1", "--holder", "tok-1",
                          "--yes"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(want, json.loads(p.stdout)["error"])
        # the release endpoint
        st, _, doc = rh.post(ag, {"key": "lock:np:1", "holder": "tok-1"})
        self.assertEqual((st, doc["outcome"]), (502, "error"), doc)
        self.assertIn(want, doc["error"])
        self.assertEqual(c.get("lock:np:1"), b"tok-1")
        # lockctl audit, as the scanner user (no release_user)
        p = topo.lockctl(["-c", cfg, "--json", "audit"])
        self.assertEqual(p.returncode, 3, p.stderr)
        doc = json.loads(p.stdout)
        self.assertIn("lacks +xrevrange, which lockctl audit", doc["error"])
        self.assertNotIn("check that Redis answers", doc["hint"])

        # a release user that lacks a key: named too
        c.execute_command("ACL", "SETUSER", "lockctl", "resetkeys", "~lock:*")
        d = h._mkdtemp("lw-acl4-")
        with open(cfg) as f:
            text = f.read()
        text = text.replace("[target main]\n", "[target main]\nrelease_user = lockctl\n"
                            "release_password_file = %s\n"
                            % topo.write_file(d, "r.pass", "ctl-pw\n"), 1)
        cfg2 = topo.write_file(d, "lockwatch.ini", text)
        p = topo.lockctl(["-c", cfg2, "--json", "release", "lock:np:1", "--holder", "tok-1",
                          "--yes"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("the Redis user lockctl (release_user of [target main]) lacks a key "
                      "pattern (~...)", json.loads(p.stdout)["error"])
        self.assertEqual(c.get("lock:np:1"), b"tok-1")


if __name__ == "__main__":
    h.main()
