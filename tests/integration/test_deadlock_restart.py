#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""test_deadlock_restart - [samples] state_file: the waiting table kept
across an agent restart (collectors/waits/waitstate.h, docs/deadlocks.md
"Across a restart").

Owners caught in a deadlock send nothing more, so an agent restarted
during one (an upgrade, on-call restarting it) used to forget it for good.

  - two owners each holding one real SET lock and waiting for the other's:
    LockDeadlock; the agent restarts (SIGTERM, start): it says how many
    pairs it read back and LockDeadlock fires again; the pairs of a key no target watches are left out (their
    end could never be seen), and said;
  - a state file last current more than a minute ago is not read back
    (the lines sent meanwhile are lost): said, the table starts empty; an
    unchanged table is not written again, only its file touched;
  - a state_file the agent cannot write: the agent runs, and says so once;
    one that holds something else is never written; a relative path is a
    config error naming file, line and key.
"""

import os
import re
import socket
import stat
import subprocess
import time

import harness
from client_helpers import closed_udp_port as free_udp_port
import test_deadlock as td
from test_deadlock import BOUND, SCAN, SLACK, LinesAgent, q


class Restart(LinesAgent):

    acquire = td.Deadlock.acquire     # (not the class: its tests would run here)
    firing = td.Deadlock.firing

    def setUp(self):
        harness.TestCase.setUp(self)
        self.redis = self.start_redis()
        self.r = self.redis.client()
        self.udp = free_udp_port()
        self.state = os.path.join(harness._mkdtemp("lw-state-"), "waiting")
        self.agent = self.start_agent(self.redis, samples="127.0.0.1:%d" % self.udp,
                                      scan_interval="%gs" % SCAN, leak_grace="30s",
                                      max_hold="10m",
                                      extra="[samples]\nstate_file = %s\n" % self.state)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(self.sock.close)

    def log(self):
        with open(self.agent.logfile, encoding="utf-8", errors="replace") as f:
            return f.read()

    def waiting_now(self):
        return harness.msum(self.agent.metrics(), "lockwatch_samples_waiting")

    def deadlock(self):
        self.acquire("lock:acct:a", "api-1:41/7", "tok-a-41")
        time.sleep(0.3)
        self.acquire("lock:ship:b", "api-2:42/9", "tok-b-42")
        # and a holding of a key no target watches (lines only)
        self.send(self.waiting("app:cache:c", "api-3:43/1", "tok-c-43", "ok"))
        self.send(self.waiting("lock:ship:b", "api-1:41/7", None, "start"),
                  self.waiting("lock:acct:a", "api-2:42/9", None, "start"))
        self.agent.wait_for(lambda: self.firing("LockDeadlock"), timeout=BOUND + SLACK,
                            desc="LockDeadlock before the restart")

    def test_a_deadlock_is_found_again_after_a_restart(self):
        self.deadlock()
        self.agent.stop()
        with open(self.state, "rb") as f:
            saved = f.read()
        self.assertRegex(saved, rb"^lockwatch-waiting 1 \d+\n")
        self.assertIn(b" lw1 waiting app:cache:c api-3:43/1 tok-c-43 ok\n", saved)
        self.assertEqual(os.stat(self.state).st_mode & 0o777, 0o600)
        self.agent.start()
        # read back before the first sample: two owners waiting at once
        self.assertEqual(self.waiting_now(), 2)
        self.agent.wait_for(lambda: self.firing("LockDeadlock"), timeout=BOUND + SLACK,
                            desc="LockDeadlock after the restart")
        log = self.log()
        self.assertRegex(log, r"\[samples\] state_file %s: 4 waiting pair\(s\) read back, "
                         r"written \d+ s before; 1 of keys no target watches left out"
                         % re.escape(self.state))
        # a released holding ends its pair in the file too
        self.send(self.waiting("lock:acct:a", "api-2:42/9", None, "timeout"),
                  b"lw1 hold %s 1000 %s %s" % (q("lock:acct:a"), q("api-1:41/7"),
                                               q("tok-a-41")))
        self.r.delete("lock:acct:a")
        self.agent.wait_for(lambda: not self.firing("LockDeadlock"), timeout=BOUND + SLACK,
                            desc="LockDeadlock resolved")
        self.agent.stop()
        with open(self.state, "rb") as f:
            saved = f.read()
        self.assertNotIn(b"lock:acct:a", saved)
        self.assertIn(b"lock:ship:b", saved)

    def test_a_state_file_older_than_a_minute_is_not_read_back(self):
        self.deadlock()
        self.agent.stop()
        with open(self.state, "rb") as f:
            head, rest = f.read().split(b"\n", 1)
        old = int(time.time() * 1000) - 61000
        with open(self.state, "wb") as f:
            f.write(b"lockwatch-waiting 1 %d\n" % old + rest)
        os.utime(self.state, (old / 1000, old / 1000))      # nor touched since
        self.agent.start()
        self.assertEqual(self.waiting_now(), 0)
        log = self.log()
        self.assertIn("[samples] state_file %s: written 61 s ago, more than 60 s: the waits "
                      "and holdings it knew may have ended unseen; the waiting table starts "
                      "empty" % self.state, log)

    def test_a_file_of_something_else_is_never_written(self):
        self.agent.stop()
        other = os.path.join(self.agent.dir, "notes.txt")
        with open(other, "w") as f:
            f.write("on-call notes\n")
        fifo = os.path.join(self.agent.dir, "fifo")
        os.mkfifo(fifo)
        link = os.path.join(self.agent.dir, "link")
        os.symlink(other, link)
        # a red-team: a FIFO hung the start for good, a symlink or a
        # device was replaced by a file
        for path, why in ((other, "holds something other than a waiting table"),
                          (fifo, "is not a regular file"), (link, "is a symbolic link")):
            self.agent.write_config(self.agent.render_config(
                extra="[samples]\nstate_file = %s\n" % path))
            self.agent.start()
            self.send(self.waiting("lock:x", "api-1:1/1", "tok", "ok"))
            time.sleep(1)           # the first write is at start
            self.agent.stop()
            self.assertEqual(self.log().count("[samples] state_file %s %s; it is not written "
                                              "(point state_file at a file of its own)"
                                              % (path, why)), 1, path)
        with open(other) as f:
            self.assertEqual(f.read(), "on-call notes\n")
        self.assertTrue(os.path.islink(link) and stat.S_ISFIFO(os.stat(fifo).st_mode))
        self.assertIn("[samples] state_file %s: not a waiting table of this version (no "
                      "\"lockwatch-waiting 1\" header); the waiting table starts empty" % other,
                      self.log())
        # removed, it is written again (a red-team: refused until a restart)
        os.unlink(other)
        self.agent.write_config(self.agent.render_config(
            extra="[samples]\nstate_file = %s\n" % other))
        self.agent.start()
        self.agent.wait_for(lambda: os.path.exists(other) or None, timeout=5,
                            desc="the state file written")

    def test_a_reload_to_another_file_writes_it(self):
        # the last read of the change: with the table unchanged, a reload
        # that pointed state_file at another waiting-table file touched it
        # (its old table stayed, said current) instead of writing it
        self.send(self.waiting("lock:x", "api-1:1/1", "tok", "ok"))
        self.agent.wait_for(lambda: os.path.exists(self.state) and
                            b"lock:x" in open(self.state, "rb").read() or None, timeout=15,
                            desc="the pair written")
        other = os.path.join(os.path.dirname(self.state), "other")
        with open(other, "wb") as f:
            f.write(b"lockwatch-waiting 1 %d\n" % (int(time.time() * 1000) - 30000))
        self.agent.write_config(self.agent.render_config(
            extra="[samples]\nstate_file = %s\n" % other))
        self.agent.reload()
        self.agent.wait_for(lambda: b"lock:x" in open(other, "rb").read() or None, timeout=15,
                            desc="the table written to the new file")

    def test_an_unchanged_table_is_touched_not_written(self):
        self.send(self.waiting("lock:x", "api-1:1/1", "tok", "ok"))
        self.agent.wait_for(lambda: os.path.exists(self.state) and
                            b"lock:x" in open(self.state, "rb").read() or None, timeout=15,
                            desc="the pair written")
        ino, head = os.stat(self.state).st_ino, open(self.state, "rb").readline()
        before = os.stat(self.state).st_mtime
        time.sleep(11)          # past the next write's time
        st = os.stat(self.state)
        self.assertEqual((st.st_ino, open(self.state, "rb").readline()), (ino, head))
        self.assertGreater(st.st_mtime, before)

    def test_a_state_file_it_cannot_write_is_said_once(self):
        self.agent.stop()
        bad = "/nonexistent-lockwatch-dir/waiting"
        self.agent.write_config(self.agent.render_config(
            extra="[samples]\nstate_file = %s\n" % bad))
        self.agent.start()
        self.send(self.waiting("lock:x", "api-1:1/1", "tok", "ok"))
        time.sleep(12)          # past a second write (every 10 s)
        self.assertEqual(self.agent.get("/healthz")[0], 200)
        log = self.log()
        self.assertEqual(log.count("[samples] state_file: cannot write %s.tmp: No such file or "
                                   "directory; a restart now forgets who waits for and holds "
                                   "what (said once, until a write works)" % bad), 1, log)
        # a relative path: a config error naming file, line and key
        path = os.path.join(self.agent.dir, "rel.ini")
        with open(path, "w") as f:
            f.write("[samples]\nstate_file = waiting\n")
        p = subprocess.run([harness.LOCKWATCHD, "-n", "-c", path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=10)
        self.assertEqual(p.returncode, 2)
        self.assertIn("%s:2: [samples] state_file: must be an absolute path" % path,
                      p.stderr.decode())


if __name__ == "__main__":
    harness.main()
