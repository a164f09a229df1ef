#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""test_deadlock_release - a deadlock ends when on-call breaks it (the user
trial of the wait-for graph, docs/deadlocks.md): real SET locks in a real
redis-server, the reporters' `lw1 waiting` lines over UDP, the agent
scanning every 2 s (fewer than 10 locks, so every snapshot is complete).

  - two owners each holding one lock and waiting for the other's: a
    deadlock, whose steps carry the Redis holder id (`holder_id`, what
    `lockctl release --holder` takes) beside the owner, as do LockDeadlock's
    description and the deadlock event; `lockctl deadlocks` prints the
    release command, and that line, run as it stands (shlex, at a terminal
    answering "y"), releases the lock the agent names; no `hold` line
    follows (on-call is no reporter), and the deadlock resolves at the next
    scans, though the stale `waiting ... ok` of its holder is still there;
  - another cycle whose two keys are deleted outright: LockDeadlock
    resolves;
  - the same with the agent following keyspace notifications;
  - a cycle of keys no target's patterns take is known from the lines
    alone, and stays while they say so: no snapshot can vouch for them; its
    holder ids are the lines', and the release command says that no scan
    shows the lock;
  - a binary holder id: the command carries it as --holder-hex.
"""

import json
import os
import shlex
import subprocess
import time
import urllib.parse

import harness
import test_deadlock as td
import test_lockctl as lt
from harness import msum
from test_deadlock import q

SCAN = 2.0                  # scan_interval, seconds
BOUND = 3 * SCAN + 1.0      # a scan in progress, the next two, a pass of the graph
SLACK = 10.0                # load (ASan, other tests beside) on top of it
LOCKCTL = os.path.join(harness.BUILD, "bin", "lockctl")


class DeadlockRelease(td.LinesAgent):
    scan = SCAN

    def lockctl(self, *args):
        return subprocess.run([LOCKCTL, "-c", self.agent.config_path] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                              stdin=subprocess.DEVNULL, env=dict(os.environ, COLUMNS="200"))

    def release_command(self, out):
        """The command `lockctl deadlocks` printed after "release with:",
        continuation lines joined (a backslash-newline is removed by sh, and
        so here, inside quotes or not), as argv."""
        lines = out.split("\n")
        i = lines.index("release with:") + 1
        text = lines[i]
        while text.endswith("\\"):
            i += 1
            text += "\n" + lines[i]
        return shlex.split(text.replace("\\\n", ""))

    def run_at_terminal(self, argv, answer=b"y\n"):
        """argv at a terminal that answers `answer`: (rc, stdout, stderr)."""
        return lt.at_terminal(argv, answer, env=dict(os.environ, COLUMNS="80"))

    def firing(self):
        st, body = self.agent.get_json("/api/v1/alerts")
        self.assertEqual(st, 200)
        return [a for a in body["alerts"] if a["labels"]["alertname"] == "LockDeadlock"]

    def deadlocks(self):
        st, body = self.agent.get_json("/api/v1/deadlocks")
        self.assertEqual(st, 200, body)
        return body["deadlocks"]

    def gauge(self):
        """Deadlocks now, on every target label (a cycle first known from
        the lines, before a scan showed its keys, keeps the label "*")."""
        return msum(self.agent.metrics(), "lockwatch_deadlocks")

    def cycle(self, a, b, take=True):
        """Owner svc-a holds a (tok-a) and waits for b; svc-b holds b (tok-b)
        and waits for a: the lines of the user trial.  Returns the owners."""
        oa, ob = "svc-%s:1/1" % a[-1], "svc-%s:2/1" % b[-1]
        if take:
            self.assertTrue(self.r.set(a, "tok-" + a[-1], px=300000))
            self.assertTrue(self.r.set(b, "tok-" + b[-1], px=300000))
        self.send(self.waiting(a, oa, "tok-" + a[-1], "ok"),
                  self.waiting(b, ob, "tok-" + b[-1], "ok"),
                  self.waiting(b, oa, None, "start"),
                  self.waiting(a, ob, None, "start"))
        return oa, ob

    def wait_deadlock(self):
        self.agent.wait_for(lambda: self.gauge() == 1, timeout=BOUND + SLACK,
                            desc="lockwatch_deadlocks 1")
        self.agent.wait_for(self.firing, timeout=10, desc="LockDeadlock firing")

    def wait_resolved(self, what):
        since = time.monotonic()
        self.agent.wait_for(lambda: self.gauge() == 0 and not self.deadlocks(),
                            timeout=BOUND + SLACK, desc="the deadlock resolved after " + what)
        self.agent.wait_for(lambda: not self.firing(), timeout=10,
                            desc="LockDeadlock resolved after " + what)
        print("resolved %.1f s after %s (bound %.1f s)" % (time.monotonic() - since, what,
                                                           BOUND))

    def test_release_of_the_named_lock_resolves(self):
        self.cycle("lock:acct:c", "lock:acct:d")
        self.wait_deadlock()
        # a scan has shown both keys: the holder ids are the snapshot's
        self.agent.wait_for(lambda: all(s["target"] == "main" for d in self.deadlocks()
                                        for s in d["steps"]), timeout=BOUND + SLACK,
                            desc="the steps from a scan")
        (d,) = self.deadlocks()
        for s in d["steps"]:
            self.assertEqual(s["holder_id"], "tok-" + s["key"][-1])
            self.assertEqual(s["holder_id_escaped"], "tok-" + s["key"][-1])
            self.assertEqual(s["holder"], "svc-%s:%d/1" % (s["key"][-1],
                                                           1 if s["key"][-1] == "c" else 2))
        rel = d["steps"][d["release"]]
        key, hid = rel["key"], rel["holder_id"]
        self.assertIn(key, ("lock:acct:c", "lock:acct:d"))
        self.agent.wait_for(lambda: any("as holder id %s" % hid in a["annotations"]["description"]
                                        for a in self.firing()), timeout=10,
                            desc="LockDeadlock naming the holder id")
        (a,) = self.firing()
        self.assertIn("held by %s as holder id %s" % (rel["holder"], hid),
                      a["annotations"]["description"])
        st, ev = self.agent.get_json("/api/v1/events?kind=deadlock")
        self.assertEqual(st, 200)
        (e,) = ev["events"]
        self.assertIn("(holder id tok-", e["detail"])
        # --json: the agent's document, holder ids and all
        p = self.lockctl("deadlocks", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        (j,) = json.loads(p.stdout)["deadlocks"]
        self.assertEqual(j["steps"][j["release"]]["holder_id"], hid)
        # the table names the holder id, and the command to paste
        p = self.lockctl("deadlocks")
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("release %s (held by %s as holder id %s: the youngest hold)"
                      % (key, rel["holder"], hid), out)
        argv = self.release_command(out)
        self.assertEqual(argv[argv.index("--holder") + 1], hid)
        self.assertEqual(argv[argv.index("-t") + 1], "main")
        rc, o, e = self.run_at_terminal(argv)
        self.assertEqual(rc, 0, o + e)
        self.assertFalse(self.r.exists(key))
        self.wait_resolved("lockctl release " + key)
        time.sleep(2 * SCAN)        # and it stays resolved
        self.assertEqual(self.deadlocks(), [])
        self.assertEqual(self.gauge(), 0)

    def test_both_keys_deleted_resolves(self):
        self.cycle("lock:ship:e", "lock:ship:f")
        self.wait_deadlock()
        self.r.delete("lock:ship:e", "lock:ship:f")
        self.wait_resolved("both keys deleted")

    def test_keys_of_no_target_stand_in(self):
        """Keys outside lock:* are known from the reporters' lines only: no
        scan vouches for them, so their `waiting ok` lines hold them."""
        self.cycle("mutex:g", "mutex:h", take=False)
        self.wait_deadlock()
        (d,) = self.deadlocks()
        self.assertEqual(d["target"], "*")
        self.assertEqual({s["target"] for s in d["steps"]}, {None})
        self.assertEqual(sorted(s["holder_id"] for s in d["steps"]), ["tok-g", "tok-h"])
        p = self.lockctl("deadlocks")
        out = p.stdout.decode()
        self.assertIn("no scan shows this lock", out)
        argv = self.release_command(out)
        self.assertEqual(argv[argv.index("-t") + 1], "main")    # lockctl's own
        time.sleep(2 * SCAN)
        self.assertEqual(len(self.deadlocks()), 1)

    def test_binary_holder_id(self):
        """A holder id that is not text (rslock's random bytes) pastes as
        --holder-hex, and releases."""
        a, b = "lock:bin:i", "lock:bin:j"
        ta, tb = b"\x01\xfe'a b\x00", b"\x9c\x00\x7f"
        oa, ob = "svc-i:1/1", "svc-j:2/1"
        self.assertTrue(self.r.set(a, ta, px=300000))
        self.assertTrue(self.r.set(b, tb, px=300000))
        self.send(self.waiting(a, oa, ta, "ok"), self.waiting(b, ob, tb, "ok"),
                  self.waiting(b, oa, None, "start"), self.waiting(a, ob, None, "start"))
        self.wait_deadlock()
        self.agent.wait_for(lambda: all(s["target"] == "main" for d in self.deadlocks()
                                        for s in d["steps"]), timeout=BOUND + SLACK,
                            desc="the steps from a scan")
        (d,) = self.deadlocks()
        rel = d["steps"][d["release"]]
        key = rel["key"].encode()
        hid = urllib.parse.unquote_to_bytes(rel["holder_id_escaped"])
        self.assertEqual(hid, ta if key == a.encode() else tb)
        p = self.lockctl("deadlocks")
        out = p.stdout.decode()
        self.assertIn("as holder id hex:" + hid.hex(), out)
        argv = self.release_command(out)
        self.assertEqual(argv[argv.index("--holder-hex") + 1], hid.hex())
        rc, o, e = self.run_at_terminal(argv)
        self.assertEqual(rc, 0, o + e)
        self.assertFalse(self.r.exists(key))
        self.wait_resolved("lockctl release " + key.decode())


class DeadlockReleaseFollow(DeadlockRelease):
    """The agent following keyspace notifications (scan_interval 10s, no
    reconcile): a deletion is published at once, and the view is current."""
    follow = True

    test_keys_of_no_target_stand_in = None
    test_binary_holder_id = None


if __name__ == "__main__":
    harness.main()
