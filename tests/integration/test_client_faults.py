#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# run-all: quiet (its clients run with a 300 ms command timeout, which a busy machine passes on
#   an ordinary command)
# run-all: split (sixteen tests of 0.1-3 s, each with its own Redis: side by side, the quiet
#   phase is not as long as this file)
"""liblockwatch under Redis faults (issue 13): no orphan lock after a lost
acquire reply, transparent reconnect after a restart, nested reentrant
leases that never shorten the hold, fencing tokens that never go backwards.

Each client is a client_shell process (tests/integration/client_shell.c)
against a throwaway redis-server.  A paused Redis is SIGSTOP (it keeps its
socket and answers nothing, like a slow fork or a stalled host); a restart
is SIGTERM and a new redis-server on the same port, without persistence."""

import hashlib
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from client_helpers import Shell, parse_kv, prefixed  # noqa: E402

FOREIGN_LEASE_MS = 1500
PAUSE_S = 2.5
CMD_TIMEOUT_MS = 300
JAVA_FIELD = "0b3e0d8c-5d1a-4a57-9b4e-2f7c1d9e8a01:1"


class FaultsTest(harness.TestCase):

    def setUp(self):
        super().setUp()
        self.redis = self.start_redis()
        self.r = self.redis.client(decode_responses=True)

    def shell(self, name="a", extra=""):
        sh = Shell(self, self.redis.port)
        sh.ok("connect %s agent=off %s" % (name, extra))
        return sh

    def foreign_hold(self, key, reentrant):
        """Someone else's lock on key with a short lease."""
        if reentrant:
            self.r.hset(key, JAVA_FIELD, 1)
            self.r.pexpire(key, FOREIGN_LEASE_MS)
        else:
            self.r.set(key, "someone-else", px=FOREIGN_LEASE_MS)

    def expect_lock(self, w, key, since, within):
        """w's pending 'lock w l1 KEY ...' answers OK within `within` s of
        `since`, holding key in Redis; then releases it."""
        ans = w.recv(timeout=20)
        self.assertTrue(ans.startswith("OK"), ans)
        self.assertLess(time.monotonic() - since, within)
        self.assertEqual(self.r.get(key), ans.split("token=")[1])
        w.ok("unlock l1")

    # --- orphan after a lost acquire reply -------------------------------

    def check_no_orphan(self, key, flags):
        """Redis stalls past a foreign lease while a waiter with a short
        command timeout tries the lock: its SET NX (or script) runs when
        Redis resumes.  The lock must not stay held by that lost attempt."""
        w = self.shell("w", "cmd_timeout=%d" % CMD_TIMEOUT_MS)
        self.foreign_hold(key, "reentrant" in flags)
        self.redis.pause()
        try:
            ans = w.cmd("lock w l1 %s 30000 0 %s" % (key, flags))
            self.assertTrue(ans.startswith("ERR"), ans)
            time.sleep(PAUSE_S)
        finally:
            self.redis.resume()
        t_resume = time.monotonic()
        harness.wait_until(lambda: self.r.exists(key) == 0, 2, interval=0.01,
                           desc="the lost attempt's lock to be undone")
        self.assertLess(time.monotonic() - t_resume, 1.0)
        # the same handle takes the lock at once afterwards
        ans = w.ok("lock w l2 %s 30000 2000 %s" % (key, flags))
        self.assertLess(int(parse_kv(ans)["waited_us"]), 500000)
        st = w.stats("w")
        self.assertEqual(st["lost_replies"], 1)
        self.assertEqual(st["orphans_undone"], 1)
        w.ok("unlock l2")
        self.assertEqual(self.r.exists(key), 0)

    def test_no_orphan_plain(self):
        self.check_no_orphan("lock:orphan:plain", "-")

    def test_no_orphan_fenced(self):
        self.check_no_orphan("lock:orphan:fenced", "fencing")

    def test_no_orphan_reentrant(self):
        self.check_no_orphan("lock:orphan:reentrant", "reentrant")

    def test_no_orphan_after_broken_connection(self):
        """The server runs the acquire and closes the connection before the
        reply leaves (CLIENT KILL read in the same event-loop turn): the
        lost attempt is undone on a new connection by the background
        thread, without the program calling again.  Which of SET and KILL
        Redis reads first is up to it, so the set-up is tried until the SET
        ran and its reply was lost (about every other try)."""
        before = {c["id"] for c in self.r.client_list()}
        w = self.shell("w", "cmd_timeout=5000")
        admin = socket.create_connection(("127.0.0.1", self.redis.port))
        self.addCleanup(admin.close)
        admin.sendall(b"CLIENT ID\r\n")
        before.add(admin.recv(32).decode().strip(":\r\n"))
        staged = 0
        for i in range(12):
            key = "lock:orphan:broken:%d" % i
            if i > 0:
                # the last try's kill may have left the shell with no
                # connection (it reconnects on its next call): one call that
                # touches nothing of the test's gives it one again
                for attempt in range(2):
                    if w.cmd("trylock w probe lock:orphan:probe:%d:%d 30000 -"
                             % (i, attempt)).startswith("OK"):
                        w.cmd("unlock probe")
                        break
            harness.wait_until(lambda: len([c for c in self.r.client_list()
                                            if c["id"] not in before]) == 1,
                               5, interval=0.05, desc="the shell's connection")
            shell_id = [c["id"] for c in self.r.client_list()
                        if c["id"] not in before][0]
            self.redis.pause()
            try:
                w.send("lock w l1 %s 30000 0 -" % key)
                time.sleep(0.3)     # the SET waits in Redis's socket
                admin.sendall(b"CLIENT KILL ID %s\r\n" % shell_id.encode())
                time.sleep(0.3)
            finally:
                self.redis.resume()
            ans = w.recv(timeout=10)
            self.assertEqual(admin.recv(16), b":1\r\n")
            if ans.startswith("OK"):        # the reply left before the kill,
                # which still closed the connection: the release may meet it
                # closed (the lock's lease then runs out: each try has its own key)
                r = w.cmd("unlock l1")
                self.assertTrue(r.startswith("OK") or "connection" in r, r)
                continue
            self.assertTrue(ans.startswith("ERR"), ans)
            if self.r.exists(key) == 0:     # killed before the SET ran
                continue
            staged += 1
            harness.wait_until(lambda: self.r.exists(key) == 0, 3, interval=0.02,
                               desc="the lost attempt's lock to be undone")
            break
        self.assertEqual(staged, 1, "never got a SET that ran with its reply lost")
        harness.wait_until(lambda: w.stats("w")["orphans_undone"] >= 1, 3,
                           interval=0.05, desc="the undo to be counted")
        self.assertGreaterEqual(w.stats("w")["reconnects"], 1)

    def test_nested_lost_reply_keeps_outer_hold(self):
        """A nested acquire whose reply was lost is undone back to the
        outer hold, not past it."""
        key = "lock:orphan:nested"
        w = self.shell("w", "cmd_timeout=%d" % CMD_TIMEOUT_MS)
        ans = w.ok("lock w outer %s 60000 1000 reentrant" % key)
        field = ans.split("token=")[1]
        self.redis.pause()
        try:
            ans = w.cmd("lock w inner %s 60000 0 reentrant" % key)
            self.assertTrue(ans.startswith("ERR"), ans)
        finally:
            self.redis.resume()
        harness.wait_until(lambda: w.stats("w")["orphans_undone"] == 1 or
                           self.r.hget(key, field) == "1", 2, interval=0.01,
                           desc="the nested attempt to be undone")
        w.ok("trylock w probe nokey:probe 1000 -")     # the connection is in step
        w.ok("unlock probe")
        self.assertEqual(self.r.hgetall(key), {field: "1"})
        w.ok("unlock outer")
        self.assertEqual(self.r.exists(key), 0)

    def test_nested_lost_reply_after_outer_expired(self):
        """The torture's orphan (seed 103): an outer hold whose lease ends
        while Redis is paused, a nested acquire sent meanwhile (its reply
        lost), and the outer unlock made before Redis answers.  When Redis
        resumes, the nested acquire finds the key expired and takes it
        afresh; the undo must remove that hold, though the outer lock
        object was alive when the undo was sent, and no hold may be left
        for the same thread's next lock to build on."""
        key = "lock:orphan:nested-expired"
        w = self.shell("w", "cmd_timeout=%d" % CMD_TIMEOUT_MS)
        w.ok("lock w outer %s 400 1000 reentrant" % key)
        self.redis.pause()
        try:
            ans = w.cmd("lock w inner %s 60000 0 reentrant" % key)
            self.assertTrue(ans.startswith("ERR"), ans)
            ans = w.cmd("unlock outer")
            self.assertTrue(ans.startswith("ERR"), ans)
            time.sleep(0.8)             # past the outer lease
        finally:
            self.redis.resume()
        t_resume = time.monotonic()
        harness.wait_until(lambda: self.r.exists(key) == 0, 2, interval=0.01,
                           desc="the nested attempt's fresh hold to be undone")
        self.assertLess(time.monotonic() - t_resume, 1.0)
        # the same thread's next hold is a first hold, released in one go
        ans = w.ok("lock w again %s 60000 1000 reentrant" % key)
        field = ans.split("token=")[1]
        self.assertEqual(self.r.hgetall(key), {field: "1"})
        w.ok("unlock again")
        self.assertEqual(self.r.exists(key), 0)

    def test_unlock_while_silent_runs_on_resume(self):
        """An unlock made while Redis has not answered an earlier command
        (nothing can be read, so nothing new would be sent) is queued
        behind it and runs when Redis resumes, instead of leaving the lock
        for its whole lease; a reentrant one leaves no hold behind."""
        w = self.shell("w", "cmd_timeout=%d" % CMD_TIMEOUT_MS)
        keys = ("lock:silent:plain", "lock:silent:reentrant")
        w.ok("lock w p %s 60000 1000 -" % keys[0])
        w.ok("lock w r %s 60000 1000 reentrant" % keys[1])
        self.redis.pause()
        try:
            ans = w.cmd("trylock w other lock:silent:other 60000 -")
            self.assertTrue(ans.startswith("ERR"), ans)
            for name in ("p", "r"):
                ans = w.cmd("unlock %s" % name)
                self.assertTrue(ans.startswith("ERR") and "runs when Redis resumes" in ans,
                                ans)
        finally:
            self.redis.resume()
        t_resume = time.monotonic()
        harness.wait_until(lambda: self.r.exists(*keys, "lock:silent:other") == 0, 2,
                           interval=0.01, desc="the queued releases to run")
        self.assertLess(time.monotonic() - t_resume, 1.0)
        # the connection is in step: the next lock is a first hold
        ans = w.ok("lock w again %s 60000 1000 reentrant" % keys[1])
        self.assertEqual(self.r.hgetall(keys[1]), {ans.split("token=")[1]: "1"})
        w.ok("unlock again")
        self.assertEqual(self.r.exists(keys[1]), 0)

    def test_waiter_across_pause_gets_lock_on_resume(self):
        key = "lock:pause:wait"
        w = self.shell("w", "cmd_timeout=%d" % CMD_TIMEOUT_MS)
        self.foreign_hold(key, False)
        self.redis.pause()
        try:
            w.send("lock w l1 %s 30000 8000 -" % key)
            time.sleep(PAUSE_S)
        finally:
            self.redis.resume()
        self.expect_lock(w, key, since=time.monotonic(), within=1.5)

    # --- a paused Redis bounds lw_lock by its timeout ----------------------

    def check_paused_bound(self, timeout_ms, holder):
        """lw_lock on a paused Redis returns within timeout_ms and one
        command timeout (liblockwatch(3)), not after four of them (the
        first attempt, two SUBSCRIBEs and a re-read of the lost reply),
        with an error that names the call and the key.  holder: the lock
        is someone else's (a real wait) rather than free."""
        ct = 500
        key = "lock:paused:bound:%d:%d" % (timeout_ms, holder)
        w = self.shell("w", "cmd_timeout=%d" % ct)
        if holder:
            self.r.set(key, "someone-else", px=60000)
        self.redis.pause()
        try:
            t0 = time.monotonic()
            ans = w.cmd("lock w l1 %s 30000 %d -" % (key, timeout_ms))
            took = time.monotonic() - t0
        finally:
            self.redis.resume()
        # the scheduling slack is under the second command timeout
        self.assertLess(took, (timeout_ms + 2 * ct) / 1000.0, ans)
        self.assertGreaterEqual(took, max(timeout_ms, ct) / 1000.0 - 0.05, ans)
        self.assertTrue(ans.startswith("ERR lw_lock %s: " % key), ans)
        self.assertIn("timed out after %d ms" % ct, ans)

    def test_paused_lock_short_timeout_returns_in_one_command_timeout(self):
        self.check_paused_bound(1, holder=True)

    def test_paused_lock_timeout_within_bound(self):
        self.check_paused_bound(500, holder=False)

    def test_paused_lock_longer_wait_within_bound(self):
        """A wait that outlives the first attempt's timeout: its later
        attempts find the lost reply still unanswered, and say so."""
        ct = 500
        key = "lock:paused:bound:long"
        w = self.shell("w", "cmd_timeout=%d" % ct)
        self.r.set(key, "someone-else", px=60000)
        self.redis.pause()
        try:
            t0 = time.monotonic()
            ans = w.cmd("lock w l1 %s 30000 1200 -" % key)
            took = time.monotonic() - t0
        finally:
            self.redis.resume()
        self.assertLess(took, (1200 + 2 * ct) / 1000.0, ans)
        self.assertGreaterEqual(took, 1.2 - 0.05, ans)
        self.assertTrue(ans.startswith("ERR lw_lock %s: " % key), ans)
        self.assertIn("timed out earlier", ans)

    def test_errors_name_the_call_and_the_key(self):
        """On a paused Redis, and on one that is gone, each call's error
        starts with the call and the key (it said 'lw_lock SET: ...' for
        lw_trylock, and 'command connection: ...')."""
        w = self.shell("w", "cmd_timeout=%d" % CMD_TIMEOUT_MS)
        w.ok("lock w held lock:err:held 60000 1000 -")
        self.redis.pause()
        try:
            ans = w.cmd("trylock w l1 lock:err:paused 60000 -")
        finally:
            self.redis.resume()
        self.assertTrue(ans.startswith("ERR lw_trylock lock:err:paused: SET: read from "
                                       "Redis timed out"), ans)
        w.ok("trylock w l2 lock:err:after 60000 -")     # in step again
        self.redis.kill()
        for cmd, head in (("trylock w l3 lock:err:down 60000 -", "lw_trylock lock:err:down"),
                          ("lock w l3 lock:err:down 60000 0 reentrant",
                           "lw_lock lock:err:down"),
                          ("extend held 5000", "lw_extend lock:err:held"),
                          ("unlock held", "lw_unlock lock:err:held")):
            ans = w.cmd(cmd)
            self.assertTrue(ans.startswith("ERR %s: " % head), ans)
            # the first call may find the kept connection closed, the
            # next ones cannot connect: either is said after the prefix
            self.assertTrue("cannot connect to Redis" in ans or
                            "Server closed the connection" in ans, ans)

    # --- reconnect after a restart --------------------------------------

    def test_first_call_after_restart_succeeds(self):
        w = self.shell("w")
        for flags in ("-", "fencing", "reentrant"):
            w.ok("lock w l1 lock:restart:first 5000 1000 %s" % flags)
            w.ok("unlock l1")
        self.redis.restart()
        for flags in ("-", "fencing", "reentrant"):
            ans = w.cmd("lock w l1 lock:restart:first 5000 1000 %s" % flags)
            self.assertTrue(ans.startswith("OK"), "after restart, %s: %s" % (flags, ans))
            w.ok("unlock l1")
        self.assertGreaterEqual(w.stats("w")["reconnects"], 1)
        # the scripts were loaded again into the new server's cache
        lua = os.path.join(harness.REPO, "client", "lua")
        shas = [hashlib.sha1(open(os.path.join(lua, f), "rb").read()).hexdigest()
                for f in sorted(os.listdir(lua))]
        self.assertEqual(self.r.script_exists(*shas), [True] * len(shas))

    def wait_through_restart(self, key):
        """A holder h and a waiter w blocked on key; Redis restarted
        (without persistence: the lock is gone) while w waits."""
        holder = self.shell("h")
        holder.ok("lock h l1 %s 60000 1000 -" % key)
        w = self.shell("w")
        w.send("lock w l1 %s 60000 20000 -" % key)
        time.sleep(0.3)
        self.redis.restart()
        return holder, w

    def test_waiter_across_restart_gets_free_lock(self):
        key = "lock:restart:wait"
        holder, w = self.wait_through_restart(key)
        self.expect_lock(w, key, since=time.monotonic(), within=1.0)
        self.assertTrue(holder.cmd("unlock l1").startswith("LOST"))

    def test_waiter_resubscribes_after_restart(self):
        """A waiter's wake-up subscription broken by a restart is opened
        again: a release after the restart wakes it by pub/sub."""
        key = "lock:restart:resub"
        holder, w = self.wait_through_restart(key)
        h2 = self.shell("h2")
        h2.ok("lock h2 l2 %s 60000 5000 -" % key)
        # the waiter retries within 250 ms and subscribes again meanwhile
        time.sleep(1.0)
        h2.ok("unlock l2")
        ans = w.recv(timeout=10)
        self.assertTrue(ans.startswith("OK"), ans)
        self.assertGreaterEqual(w.stats("w")["wakeups"], 1)
        w.ok("unlock l1")
        self.assertTrue(holder.cmd("unlock l1").startswith("LOST"))

    # --- nested leases never shorten the hold ---------------------------

    def check_nested(self, key, outer_ms, inner_ms, lease=30000, renew_s=0):
        """Outer hold, then an inner one: after the inner acquire, its
        watchdog renewals (renew_s) and its release, the TTL is still at
        least what is left of the longer of the two leases."""
        w = self.shell("w", "lease=%d" % lease)
        longest = max(outer_ms, inner_ms or lease)
        w.ok("lock w outer %s %d 1000 reentrant" % (key, outer_ms))
        w.ok("lock w inner %s %d 1000 reentrant" % (key, inner_ms))
        self.assertGreater(self.r.pttl(key), longest - 5000)
        if renew_s:
            time.sleep(renew_s)
            self.assertGreater(w.stats("w")["renewals"], 0)
            self.assertGreater(self.r.pttl(key), longest - 5000)
        w.ok("unlock inner")
        self.assertGreater(self.r.pttl(key), outer_ms - 5000 - renew_s * 1000)
        w.ok("unlock outer")
        self.assertEqual(self.r.exists(key), 0)

    def test_nested_short_lease_does_not_shorten_outer(self):
        self.check_nested("lock:nested:short", 60000, 200)

    def test_nested_default_lease_does_not_shorten_outer(self):
        # the inner hold is watchdog-renewed (lease 3 s, every 1 s)
        self.check_nested("lock:nested:default", 60000, 0, lease=3000, renew_s=1.2)

    def test_nested_longer_lease_extends(self):
        self.check_nested("lock:nested:longer", 2000, 60000)

    # --- fencing across a restart ----------------------------------------

    def test_fence_never_goes_backwards_across_restart(self):
        w = self.shell("w")
        for flags in ("fencing", "reentrant,fencing"):
            key = "lock:fence:restart:" + flags.split(",")[0]
            before = []
            for _ in range(3):
                ans = w.ok("lock w l1 %s 5000 1000 %s" % (key, flags))
                before.append(int(parse_kv(ans)["fence"]))
                w.ok("unlock l1")
            self.redis.restart()    # no persistence: the counter is gone
            self.assertEqual(self.r.exists(prefixed("lockwatch_fence", key)), 0)
            ans = w.ok("lock w l1 %s 5000 1000 %s" % (key, flags))
            after = int(parse_kv(ans)["fence"])
            w.ok("unlock l1")
            self.assertGreater(after, max(before), flags)

    def test_fence_above_a_stale_counter(self):
        """A counter behind the tokens already issued (a replica promoted
        before it saw the last INCRs) does not hand out old tokens again."""
        key = "lock:fence:stale"
        w = self.shell("w")
        ans = w.ok("lock w l1 %s 5000 1000 fencing" % key)
        issued = int(parse_kv(ans)["fence"])
        w.ok("unlock l1")
        self.r.set(prefixed("lockwatch_fence", key), 3)
        ans = w.ok("lock w l1 %s 5000 1000 fencing" % key)
        w.ok("unlock l1")
        self.assertGreater(int(parse_kv(ans)["fence"]), issued)


if __name__ == "__main__":
    harness.main()
