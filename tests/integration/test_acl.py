# SPDX-License-Identifier: BSD-3-Clause
"""The agent scans with the least privileges README documents: a Redis ACL
user that may read lock keys and the client registry, and nothing else (no
write command, no key outside ~lock:* and ~lockwatch:client:*).  Every
lock format, the registry look-up and the value caps must work under it,
with no NOPERM anywhere."""

import os
import subprocess
import textwrap

import harness as h

# Keep in step with README.md "Redis permissions".
SCANNER_ACL = h.SCANNER_ACL


def paste_readme_acl(rs, password):
    """README's ACL command, pasted into bash as written (an on-call trial:
    unquoted, its '>' was a redirection and '|' a pipe), with the server's
    port and the user's password."""
    with open(os.path.join(h.REPO, "README.md")) as f:
        doc = f.read()
    block = doc[doc.index("    redis-cli ACL SETUSER lockwatch "):].split("\n\n", 1)[0]
    cmd = textwrap.dedent(block).replace("'>PASSWORD'", "'>%s'" % password).replace(
        "redis-cli ", "redis-cli -p %d " % rs.port, 1)
    p = subprocess.run(["bash", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=30, cwd=h._mkdtemp("lw-paste-"))
    return p.stdout.strip()

UUID = "8743c9c0-0795-4907-87fd-6c719a6b4586"


class Acl(h.TestCase):

    def test_least_privilege_user_scans_everything(self):
        rs = self.start_redis()
        c = rs.client()
        self.assertEqual(paste_readme_acl(rs, "s3cret-scan"), b"OK")
        c.set("lock:plain:1", "tok", px=600000)
        c.set("lock:leak:1", "tok")
        c.hset("lock:rl:1", UUID + ":7", "2")
        c.pexpire("lock:rl:1", 600000)
        c.hset("lock:rw:1", mapping={"mode": "read", UUID + ":8": "1"})
        c.pexpire("lock:rw:1", 600000)
        c.hset("lockwatch:client:{%s}" % UUID, mapping={
            "host": "app-7", "pid": "4242", "at:7:lock:rl:1": "1790000000000"})
        c.set("secret:1", "not for the scanner")
        # a client waiting for the RLock, subscribed to its wake channel
        waiter = rs.client().pubsub()
        waiter.subscribe("redisson_lock__channel:{lock:rl:1}")
        h.wait_until(lambda: waiter.get_message(timeout=0.1) is not None, 10,
                     desc="the waiter's subscription")

        p = h.once_as_user(rs, "lockwatch", "s3cret-scan", leak_grace="1s", max_hold="1h")
        err = p.stderr.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("NOPERM", err)
        # without +info (optional), what it costs is said once
        self.assertEqual(err.count("INFO refused on 127.0.0.1:%d (the ACL user lacks +info): "
                                   "locks lost at a restart, failover or flush go unseen"
                                   % rs.port), 1, err)
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 4,
                         h.select(m, "lockwatch_locks"))
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main", format="redisson"), 1)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main", format="redisson-rw"), 1)
        self.assertEqual(h.msum(m, "lockwatch_lock_max_reentrancy", target="main",
                                **{"class": "lock:rl:*"}), 2)
        # No read refused (the registry's HMGET among them; the time it
        # claims, 2026-09, is no age at the agent's first look: formats.md)
        self.assertEqual(h.msum(m, "lockwatch_scan_read_errors_total", target="main"), 0)
        # The waiters look-ups are within the ACL too.
        self.assertEqual(h.msum(m, "lockwatch_scan_waiter_errors_total", target="main"), 0)
        self.assertEqual(h.msum(m, "lockwatch_lock_waiters", target="main",
                                **{"class": "lock:rl:*"}), 1)
        waiter.close()
        # And the user really is that narrow.
        import redis
        scanner = redis.Redis(host="127.0.0.1", port=rs.port, username="lockwatch",
                              password="s3cret-scan")
        with self.assertRaises(redis.exceptions.NoPermissionError):
            scanner.get("secret:1")
        with self.assertRaises(redis.exceptions.NoPermissionError):
            scanner.delete("lock:plain:1")


if __name__ == "__main__":
    h.main()
