# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (a Sentinel failover while lockctl's prompt waits; mostly waiting)
"""lockctl release when the lock's server or holder changes while its
prompt waits (an on-call trial).

Across a failover: the lock was read
and the prompt shown on one primary, the sentinels failed over while the
operator read it, and the answer came after.  The release ran on the old
primary, which still took writes until it was demoted, said "released"
and exited 0, while the new primary still had the lock (and the old one got
it back in its resync, its audit entry gone).

Now, after the prompt and before any write, lockctl asks again which node
serves the key (the sentinels; a cluster's slot owner): another node is a
refusal (exit 1) that names both and says to run the command again, and
nothing is written anywhere."""

import os
import pty
import subprocess
import time

import harness as h
import topo
from test_lockctl import LOCKCTL, audit_entries


class LockctlFailover(h.TestCase):

    def test_release_refused_when_the_primary_moved_during_the_prompt(self):
        primary = self.start_redis()
        replica = self.start_redis(args=["--replicaof", "127.0.0.1", str(primary.port)])
        h.wait_until(lambda: replica.client().info("replication").get(
            "master_link_status") == "up", 20, desc="replica in sync")
        sentinels = topo.start_sentinels(self, primary.port, down_after_ms=1000)
        primary.client().set("lock:fo:1", "tok-1")
        h.wait_until(lambda: replica.client().get("lock:fo:1") == b"tok-1", 10,
                     desc="the lock replicated")
        path = os.path.join(h._mkdtemp("lw-lockctl-fo-"), "lockwatch.ini")
        with open(path, "w") as f:
            f.write(h.config_text(
                h.free_port(), [("main", "redis://127.0.0.1:1/0")],
                target_extra={"mode": "sentinel", "master_name": "mymaster",
                              "sentinels": ",".join("127.0.0.1:%d" % s.port
                                                    for s in sentinels)}))
        master, slave = pty.openpty()
        self.addCleanup(os.close, master)
        p = subprocess.Popen([LOCKCTL, "-c", path, "--agent", "off", "release", "lock:fo:1",
                              "--holder", "tok-1", "--reason", "INC-7 stuck"],
                             stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(slave)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        time.sleep(1.5)                 # read, and asking
        self.assertIsNone(p.poll(), "lockctl did not wait for the answer")
        sentinels[0].client().execute_command("SENTINEL", "FAILOVER", "mymaster")

        def promoted():
            try:
                role = replica.client().execute_command("ROLE")[0]
            except Exception:
                return False
            return sentinels[0].master_port() == replica.port and role in (b"master",
                                                                            "master")
        h.wait_until(promoted, 40, desc="the replica promoted")
        os.write(master, b"y\n")
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 1, err)
        self.assertIn(b"while you confirmed, the node serving it moved from 127.0.0.1:%d to "
                      b"127.0.0.1:%d (a failover); nothing was changed"
                      % (primary.port, replica.port), err)
        self.assertIn(b"run the same command again", err)
        self.assertNotIn(b"released", out)
        self.assertEqual(replica.client().get("lock:fo:1"), b"tok-1")
        self.assertEqual(audit_entries(replica.client()), [])

        # asked again, on the new primary: released there
        again = subprocess.run([LOCKCTL, "-c", path, "--agent", "off", "release", "lock:fo:1",
                            "--holder", "tok-1", "--reason", "INC-7 stuck", "--yes"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn(b"127.0.0.1:%d" % replica.port, again.stdout)
        self.assertFalse(replica.client().exists("lock:fo:1"))

    def test_cluster_key_off_the_seed_keeps_the_agents_view(self):
        """The same trial: in a cluster, a leaked lock on a primary other
        than the one the url names was 'leaked' in lockctl show, but
        release --if-leaked said the agent watched another server (it
        compared the key's node with the agent's url) and refused it as of
        unknown age, for ever."""
        c = topo.Cluster(primaries=3)
        self.addCleanup(c.stop)
        self._redises.extend(c.nodes)
        seed = c.nodes[0].port
        self.assertIn(":%d" % seed, c.url)
        key = next("lock:off:%d" % i for i in range(200)
                   if c.owner[topo.keyslot("lock:off:%d" % i)] != seed)
        c.load([("SET", key, "tok-off")])
        ag = self.start_agent(targets=[("c", c.url)], target_extra={"mode": "cluster"},
                              leak_grace="1s", max_hold="1h")
        ag.wait_for(lambda: "leaked" in str(ag.lock(key, target="c")[1]), 20,
                    desc="the lock leaked, as the agent sees it")
        p = subprocess.run([LOCKCTL, "-c", ag.config_path, "release", key, "--holder",
                            "tok-off", "--if-leaked", "--dry-run"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(b"watches target c at", p.stderr)
        self.assertIn(b"every guard holds", p.stdout + p.stderr)

    def test_holder_changed_during_the_prompt_names_the_new_one(self):
        """The same trial: a lock re-taken (a new token) while the prompt
        waited was refused by the script, as it must be, but the next step
        named the refused holder as the one holding it now, and its command
        was refused again.  It names the new holder."""
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:race", "tok-C")
        path = os.path.join(h._mkdtemp("lw-lockctl-race-"), "lockwatch.ini")
        with open(path, "w") as f:
            f.write(h.config_text(h.free_port(), [("main", rs.url)]))
        master, slave = pty.openpty()
        self.addCleanup(os.close, master)
        proc = subprocess.Popen([LOCKCTL, "-c", path, "--agent", "off", "release", "lock:race",
                                 "--holder", "tok-C"],
                                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(slave)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        time.sleep(1.0)
        c.set("lock:race", "tok-D")
        os.write(master, b"y\n")
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn(b"holder changed", err)
        self.assertIn(b"it is held by tok-D now", err)
        self.assertNotIn(b"held by tok-C now", err)
        self.assertIn(b"--holder tok-D", err)
        self.assertEqual(c.get("lock:race"), b"tok-D")


if __name__ == "__main__":
    h.main()
