#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# run-all: quiet (wake-ups within 0.1 s, lock cycles within 0.2 s, timeouts within 150 ms)
"""liblockwatch against a real redis-server: the watchdog, fencing tokens,
trylock and timeouts, waiting (pub/sub wake-ups and the bounded re-check),
the lw1 token and the holder registry as the agent reads them, and the UDP
reports (on, off, to nowhere)."""

import hashlib
import hmac
import os
import re
import socket
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from client_helpers import Shell, UdpSink, closed_udp_port, parse_kv, prefixed  # noqa: E402

TOKEN_RE = re.compile(r"^lw1:([A-Za-z0-9._-]{1,63}):([1-9][0-9]*)\.([0-9a-f]{16}):"
                      r"(0|[1-9][0-9]*):([1-9][0-9]*):([0-9a-f]{16})$")


def sanitized_hostname():
    h = socket.gethostname().encode()[:63]
    return "".join(chr(b) if (chr(b).isascii() and (chr(b).isalnum() or chr(b) in "._-"))
                   else "-" for b in h) or "localhost"


class BasicsTest(harness.TestCase):

    def setUp(self):
        super().setUp()
        self.redis = self.start_redis()
        self.r = self.redis.client(decode_responses=True)

    def shell(self, name="a", extra="agent=off", env=None):
        sh = Shell(self, self.redis.port, env=env)
        sh.ok("connect %s %s" % (name, extra))
        return sh

    # --- watchdog -------------------------------------------------------

    def test_watchdog_keeps_pttl_high(self):
        lease = 900
        sh = self.shell(extra="agent=off lease=%d" % lease)
        sh.ok("lock a l1 lock:wd 0 1000 -")
        low = lease
        t_end = time.monotonic() + 3 * lease / 1000     # 3 x lease, 9 renewals
        while time.monotonic() < t_end:
            pttl = self.r.pttl("lock:wd")
            self.assertGreater(pttl, 0, "the lock expired under the watchdog")
            low = min(low, pttl)
            time.sleep(0.02)
        # renewed every lease/3: never below 2/3 lease, bar scheduling jitter
        self.assertGreater(low, lease / 3)
        self.assertGreaterEqual(sh.stats("a")["renewals"], 6)
        sh.ok("unlock l1")
        self.assertEqual(self.r.exists("lock:wd"), 0)

    def test_extend_keeps_a_watchdog_lock_at_the_longer_lease(self):
        """lw_extend on a watchdog lock: the renewals that follow keep the
        longer lease it set (they cut it back to the default lease),
        plain and reentrant alike."""
        lease = 900
        sh = self.shell(extra="agent=off lease=%d" % lease)
        for flags in ("-", "reentrant"):
            key = "lock:wd:extend:" + flags
            sh.ok("lock a l1 %s 0 1000 %s" % (key, flags))
            renewals = sh.stats("a")["renewals"]
            sh.ok("extend l1 20000")
            time.sleep(3 * lease / 1000)        # 9 renewal periods
            self.assertGreater(sh.stats("a")["renewals"], renewals + 3, flags)
            self.assertGreater(self.r.pttl(key), 18000, flags)
            sh.ok("unlock l1")
            self.assertEqual(self.r.exists(key), 0)

    def test_default_lease_is_30s(self):
        sh = self.shell()
        sh.ok("lock a l1 lock:wd30 0 1000 -")
        self.assertTrue(29000 < self.r.pttl("lock:wd30") <= 30000)
        sh.ok("unlock l1")

    # --- fencing --------------------------------------------------------

    def test_fencing_tokens_increase_across_clients(self):
        a = self.shell("a")
        b = self.shell("b")
        for flags in ("fencing", "reentrant,fencing"):
            key = "lock:fence:" + flags.split(",")[0]
            seen = []
            for i in range(8):
                sh, c = (a, "a") if i % 2 == 0 else (b, "b")
                ans = sh.ok("lock %s l1 %s 5000 2000 %s" % (c, key, flags))
                seen.append(int(parse_kv(ans)["fence"]))
                sh.ok("unlock l1")
            self.assertEqual(seen, sorted(set(seen)), "fences not strictly increasing")
            self.assertGreaterEqual(seen[0], 1)
            fence_key = prefixed("lockwatch_fence", key)
            # release never deletes the counter, and it never expires
            self.assertEqual(int(self.r.get(fence_key)), seen[-1])
            self.assertEqual(self.r.ttl(fence_key), -1)
        # no fence asked, none taken
        ans = a.ok("lock a l1 lock:nofence 5000 1000 -")
        self.assertEqual(parse_kv(ans)["fence"], "0")
        self.assertEqual(self.r.exists(prefixed("lockwatch_fence", "lock:nofence")), 0)
        a.ok("unlock l1")

    def test_fencing_key_follows_brace_rule(self):
        sh = self.shell()
        ans = sh.ok("lock a l1 lock:{tag}:x 5000 1000 fencing")
        self.assertEqual(self.r.get("lockwatch_fence:lock:{tag}:x"),
                         parse_kv(ans)["fence"])
        sh.ok("unlock l1")

    # --- trylock and timeouts -------------------------------------------

    def test_trylock_on_held_lock_is_busy_and_quick(self):
        a = self.shell("a")
        b = self.shell("b")
        a.ok("lock a l1 lock:busy 10000 1000 -")
        for flags in ("-", "fencing"):
            t0 = time.monotonic()
            ans = b.cmd("trylock b l2 lock:busy 0 %s" % flags)
            self.assertTrue(ans.startswith("BUSY"), ans)
            self.assertLess(int(parse_kv(ans)["elapsed_us"]), 50000)
            self.assertLess(time.monotonic() - t0, 0.5)
        a.ok("unlock l1")
        b.ok("trylock b l2 lock:busy 0 -")
        b.ok("unlock l2")

    def test_lock_timeout(self):
        a = self.shell("a")
        b = self.shell("b")
        a.ok("lock a l1 lock:to 20000 1000 -")
        for timeout in (150, 400):
            ans = b.cmd("lock b l2 lock:to 0 %d -" % timeout)
            self.assertTrue(ans.startswith("TIMEOUT"), ans)
            elapsed = int(parse_kv(ans)["elapsed_us"]) / 1000
            self.assertGreaterEqual(elapsed, timeout)
            self.assertLess(elapsed, timeout + 150)
        a.ok("unlock l1")

    def test_a_key_of_another_type_is_an_error_not_a_wait(self):
        """SET NX never takes a list, so lw_lock on one waited out its whole
        timeout (for ever with LW_WAIT_FOREVER) as if a holder had it; a
        waiter that finds the key without a TTL asks its type once and
        says what it is.  A leaked plain lock (a string without TTL) is
        still a wait."""
        self.r.lpush("lock:type:list", "x")
        self.r.set("lock:type:leaked", "someone")
        b = self.shell("b")
        t0 = time.monotonic()
        ans = b.cmd("lock b l1 lock:type:list 0 -1 -")
        self.assertTrue(ans.startswith("ERR lw_lock lock:type:list: the key is a list, not a "
                                       "plain lock"), ans)
        self.assertLess(time.monotonic() - t0, 2.0)
        self.assertTrue(b.cmd("lock b l2 lock:type:leaked 0 300 -").startswith("TIMEOUT"))
        self.assertEqual(self.r.lrange("lock:type:list", 0, -1), ["x"])   # untouched

    # --- waiting --------------------------------------------------------

    def test_handoff_by_publish(self):
        a = self.shell("a")
        b = self.shell("b")
        for flags in ("-", "reentrant"):
            key = "lock:handoff:" + flags
            a.ok("lock a l1 %s 0 1000 %s" % (key, flags))
            before = b.stats("b")
            b.send("lock b l2 %s 0 10000 %s" % (key, flags))
            time.sleep(0.8)             # re-check interval is at 250 ms now
            t0 = time.monotonic()
            a.ok("unlock l1")
            ans = b.recv()
            self.assertTrue(ans.startswith("OK"), ans)
            self.assertLess(time.monotonic() - t0, 0.1)
            self.assertGreaterEqual(b.stats("b")["wakeups"] - before["wakeups"], 1)
            b.ok("unlock l2")

    def test_plain_release_publishes_on_its_channel(self):
        sh = self.shell()
        for key in ("lock:pub:x", "lock:{pub}:y"):
            channel = prefixed("lockwatch_lock__channel", key)
            ps = self.r.pubsub()
            ps.subscribe(channel)
            self.assertEqual(ps.get_message(timeout=2)["type"], "subscribe")
            sh.ok("lock a l1 %s 5000 1000 -" % key)
            sh.ok("unlock l1")
            msg = ps.get_message(timeout=2)
            self.assertIsNotNone(msg)
            self.assertEqual((msg["channel"], msg["data"]), (channel, "0"))
            ps.close()

    def test_silent_release_is_noticed_by_recheck(self):
        # redis-py style holder: DEL without a publish
        sh = self.shell()
        self.assertTrue(self.r.set("lock:silent", "py-holder", nx=True, px=60000))
        sh.send("lock a l1 lock:silent 0 10000 -")
        time.sleep(1.0)
        t0 = time.monotonic()
        self.r.delete("lock:silent")
        ans = sh.recv()
        took = time.monotonic() - t0
        self.assertTrue(ans.startswith("OK"), ans)
        self.assertLess(took, 0.25 + 0.1)       # the re-check interval's cap
        st = sh.stats("a")
        self.assertEqual(st["wakeups"], 0)
        self.assertGreaterEqual(st["rechecks"], 3)
        # 50 + 100 + 200 + 250...: a handful of attempts, not busy polling
        self.assertLess(st["rechecks"], 12)
        sh.ok("unlock l1")

    def test_expiring_holder_is_noticed_at_its_ttl(self):
        sh = self.shell()
        self.assertTrue(self.r.set("lock:expiring", "py-holder", nx=True, px=2000))
        time.sleep(1.0)         # the waiter's interval grows past the TTL left
        t0 = time.monotonic()
        ans = sh.ok("lock a l1 lock:expiring 0 10000 -")
        waited = int(parse_kv(ans)["waited_us"]) / 1e6
        self.assertLess(waited, 1.0 + 0.1)
        self.assertLess(time.monotonic() - t0, 1.2)
        sh.ok("unlock l1")

    # --- identity ---------------------------------------------------------

    def test_token_grammar(self):
        sh = self.shell()
        tid = int(sh.cmd("tid"))
        now_ms = int(time.time() * 1000)
        ans = sh.ok("lock a l1 lock:token 5000 1000 -")
        token = parse_kv(ans)["token"]
        self.assertEqual(self.r.get("lock:token"), token)
        m = TOKEN_RE.match(token)
        self.assertIsNotNone(m, token)
        self.assertEqual(m.group(1), sanitized_hostname())
        self.assertEqual(int(m.group(2)), sh.pid)
        self.assertEqual(int(m.group(4)), tid)
        self.assertLess(abs(int(m.group(5)) - now_ms), 5000)
        # every acquisition gets its own token, under the process's one
        # nonce (another client of the process too); another process draws
        # its own
        sh.ok("unlock l1")
        sh.ok("connect b agent=off")
        ans = sh.ok("lock b l1 lock:token 5000 1000 -")
        again = TOKEN_RE.match(parse_kv(ans)["token"])
        self.assertNotEqual(again.group(0), token)
        self.assertEqual(again.group(3), m.group(3))
        sh.ok("unlock l1")
        other = self.shell()
        ans = other.ok("lock a l1 lock:token 5000 1000 -")
        self.assertNotEqual(TOKEN_RE.match(parse_kv(ans)["token"]).group(3), m.group(3))
        other.ok("unlock l1")

    def test_registry(self):
        sh = self.shell(extra="agent=off lease=3000")
        uuid = sh.ok("lock a l1 lock:reg 0 1000 reentrant").split("token=")[1].split(":")[0]
        tid = sh.cmd("tid")
        reg = "lockwatch:client:{%s}" % uuid
        h = self.r.hgetall(reg)
        self.assertEqual(h["host"], sanitized_hostname())
        self.assertEqual(int(h["pid"]), sh.pid)
        at = int(h["at:%s:lock:reg" % tid])
        self.assertLess(abs(at - time.time() * 1000), 5000)
        self.assertTrue(8000 < self.r.pttl(reg) <= 9000, self.r.pttl(reg))
        # a second hold by the same thread keeps the first time
        sh.ok("lock a l2 lock:reg 0 1000 reentrant")
        self.assertEqual(int(self.r.hget(reg, "at:%s:lock:reg" % tid)), at)
        sh.ok("unlock l2")
        self.assertIn("at:%s:lock:reg" % tid, self.r.hgetall(reg))
        # the watchdog keeps the registry alive past its first TTL
        time.sleep(1.2)
        self.assertGreater(self.r.pttl(reg), 8000)
        sh.ok("unlock l1")
        self.assertNotIn("at:%s:lock:reg" % tid, self.r.hgetall(reg))

    def test_agent_decodes_holders(self):
        agent = self.start_agent(self.redis, patterns="lock:*", scan_interval="1s")
        sh = self.shell()
        tid = int(sh.cmd("tid"))
        sh.ok("lock a l1 lock:agent:plain 30000 1000 -")
        agent.wait_scans(2)
        st, body = agent.lock("lock:agent:plain")
        self.assertEqual(st, 200, body)
        text = repr(body)
        self.assertIn("liblockwatch", text)
        self.assertIn(str(sh.pid), text)
        self.assertIn(str(tid), text)
        sh.ok("unlock l1")

    def test_argument_errors_have_messages(self):
        sh = self.shell()
        ans = sh.cmd("trylock a l1 %s 0 -" % ("k" * 4097))
        self.assertTrue(ans.startswith("ERR") and "1..4096 bytes" in ans, ans[:200])
        sh.ok("trylock a l1 %s 1000 -" % ("k" * 4096))
        sh.ok("unlock l1")
        ans = sh.cmd("lock a l1 lock:args -5 100 -")
        self.assertTrue(ans.startswith("ERR") and "lease_ms" in ans, ans)
        ans = sh.cmd("lock a l1 lock:args 0 -7 -")
        self.assertTrue(ans.startswith("ERR") and "timeout_ms" in ans, ans)
        sh.ok("lock a l1 lock:args 1000 100 -")
        ans = sh.cmd("extend l1 0")
        self.assertTrue(ans.startswith("ERR") and "lease_ms" in ans, ans)
        sh.ok("unlock l1")
        # nothing was reported or left behind by the refused calls
        self.assertEqual(self.r.keys("lock:args*"), [])

    # --- connecting -------------------------------------------------------

    def test_connect_errors_have_messages(self):
        sh = Shell(self, harness.free_port())
        ans = sh.cmd("connect a agent=off")
        self.assertTrue(ans.startswith("ERR"), ans)
        self.assertIn("cannot connect to Redis", ans)
        sh2 = Shell(self, self.redis.port)
        ans = sh2.cmd("connect a agent=no-port-here")
        self.assertTrue(ans.startswith("ERR"), ans)
        self.assertIn("agent", ans)
        ans = sh2.cmd("connect b agent=off lease=5")
        self.assertTrue(ans.startswith("ERR") and "default_lease_ms" in ans, ans)

    def test_password_file(self):
        redis = self.start_redis(password="s3cret pass")
        d = self._tmp()
        good = os.path.join(d, "pw")
        with open(good, "w") as f:
            f.write("s3cret pass\n")
        bad = os.path.join(d, "bad")
        with open(bad, "w") as f:
            f.write("wrong\n")
        sh = Shell(self, redis.port)
        self.assertTrue(sh.cmd("connect x agent=off").startswith("ERR"))
        ans = sh.cmd("connect y agent=off password_file=%s" % bad)
        self.assertTrue(ans.startswith("ERR") and "AUTH" in ans, ans)
        self.assertNotIn("wrong", ans)
        sh.ok("connect z agent=off password_file=%s" % good)
        sh.ok("lock z l1 lock:auth 0 1000 reentrant")
        sh.ok("unlock l1")

    def _tmp(self):
        import tempfile
        import shutil
        d = tempfile.mkdtemp(prefix="lw-client-")
        self.addCleanup(shutil.rmtree, d, True)
        return d

    # --- reporting --------------------------------------------------------

    def test_reports_lines(self):
        sink = UdpSink(self)
        a = self.shell("a", extra="agent=%s" % sink.address)
        b = self.shell("b", extra="agent=off")
        key = "lock:r\u00e9p%x"
        enc = "lock:r%C3%A9p%25x"
        token = a.ok("lock a l1 %s 5000 1000 -" % key).split("token=")[1].split()[0]
        a.ok("unlock l1")
        # flushed within 100 ms of the first buffered line, without a close
        harness.wait_until(lambda: len(sink.lines()) >= 2, 2, interval=0.02,
                           desc="2 report lines")
        b.ok("lock b l2 %s 5000 1000 -" % key)
        self.assertTrue(a.cmd("trylock a l3 %s 0 -" % key).startswith("BUSY"))
        self.assertTrue(a.cmd("lock a l3 %s 0 100 reentrant" % key).startswith("TIMEOUT"))
        b.ok("unlock l2")
        a.ok("free a")
        # free flushes; the datagram may still be on its way to the sink
        harness.wait_until(lambda: len(sink.lines()) >= 5, 2, interval=0.02,
                           desc="5 report lines")
        lines = sink.lines()
        self.assertEqual(len(lines), 5, lines)
        w = lines[0].split(" ")
        self.assertEqual((w[0], w[1], w[2], w[4]), ("lw1", "wait", enc, "ok"))
        self.assertLess(int(w[3]), 1000000)
        # the hold names its owner (<host>:<pid>/<thread>) and the token
        h = lines[1].split(" ")
        self.assertEqual((h[0], h[1], h[2], len(h)), ("lw1", "hold", enc, 6))
        host, pid, tid = token.split(":")[1:4]
        pid = pid.split(".")[0]         # <pid>.<nonce>
        self.assertEqual(h[4], "%s:%s/%s" % (host, pid, tid))
        self.assertEqual(urllib.parse.unquote(h[5]), token)
        # a try-lock that does not wait sends no waiting lines
        self.assertTrue(lines[2].startswith("lw1 wait %s " % enc) and lines[2].endswith(" timeout"))
        # a lock that waits: waiting start, then its end and its wait as one
        # 7-field wait (owner and holder: the agent takes it as both)
        ws, we = lines[3].split(" "), lines[4].split(" ")
        self.assertEqual((ws[1], ws[2], ws[3], ws[5]), ("waiting", enc, h[4], "start"))
        self.assertEqual((we[1], we[2], we[4], we[5], len(we)), ("wait", enc, "timeout", h[4], 7))
        self.assertTrue(urllib.parse.unquote(ws[4]).endswith(":%s" % tid))   # <uuid>:<tid>
        self.assertTrue(urllib.parse.unquote(we[6]).endswith(":%s" % tid))
        self.assertGreaterEqual(int(we[3]), 100000)
        for d in sink.datagrams:
            self.assertLessEqual(len(d), 8192)     # on loopback
            self.assertTrue(d.endswith(b"\n"))

    def test_reports_long_keys_to_a_loopback_agent(self):
        """A line too long for a 1432-byte datagram reaches an agent on
        loopback in one of up to 8192 bytes (line-protocol.md), up to a
        key of LW_KEY_MAX bytes: in a batch that long when every
        destination is on loopback, alone when one is not (192.0.2.1,
        TEST-NET-1); one longer than that even so (3000 '%' are 9000
        bytes encoded) is dropped and counted."""
        for extra in ("", ",192.0.2.1:9"):
            sink = UdpSink(self)
            sh = self.shell("a", extra="agent=%s%s" % (sink.address, extra))
            keys = ["lock:big:" + "q" * (n - 9) for n in (1400, 4096)]
            for key in keys:
                sh.ok("lock a l1 %s 5000 1000 -" % key)
                sh.ok("unlock l1")
            harness.wait_until(lambda: len(sink.lines()) >= 4, 2, interval=0.02,
                               desc="4 report lines")
            st = sh.stats("a")
            self.assertEqual((st["sent"], st["dropped"]), (4, 0), extra)
            lines = sink.lines()
            self.assertEqual([(l.split(" ")[1], l.split(" ")[2]) for l in lines],
                             [(v, k) for k in keys for v in ("wait", "hold")])
            for d in sink.datagrams:
                self.assertLessEqual(len(d), 8192)
            sh.ok("lock a l1 lock:%s 5000 1000 -" % ("%" * 3000))
            sh.ok("unlock l1")
            st = sh.stats("a")
            self.assertEqual((st["sent"], st["dropped"]), (4, 2), extra)

    def test_batches_are_8192_bytes_when_every_destination_is_on_loopback(self):
        """docs/reporters.md "Batching": datagrams of up to 8192 bytes when
        every destination is a loopback address (the wait and hold of a
        1000-byte key share one), 1432 when one is not (192.0.2.1,
        TEST-NET-1: nothing answers there)."""
        key = "lock:batch:" + "b" * 989
        for extra, most in (("", 8192), (",192.0.2.1:9", 1432)):
            sink = UdpSink(self)
            sh = self.shell("a", extra="agent=%s%s" % (sink.address, extra))
            for _ in range(5):
                sh.ok("lock a l1 %s 5000 1000 -" % key)
                sh.ok("unlock l1")
            sh.ok("free a")
            harness.wait_until(lambda: len(sink.lines()) >= 10, 5, interval=0.01,
                               desc="10 report lines")
            sizes = [len(d) for d in sink.datagrams]
            self.assertLessEqual(max(sizes), most, (extra, sizes))
            self.assertEqual(max(sizes) > 1432, most == 8192, (extra, sizes))

    def test_reports_to_every_LOCKWATCH_SAMPLES_destination_signed(self):
        sinks = [UdpSink(self), UdpSink(self)]
        keyfile = os.path.join(self._tmp(), "samples.key")
        key = b"client test key, 32 bytes long.."
        with open(keyfile, "wb") as f:
            f.write(key + b"\n")
        sh = Shell(self, self.redis.port,
                   env={"LOCKWATCH_SAMPLES": ",".join(s.address for s in sinks),
                        "LOCKWATCH_AGENT": "127.0.0.1:9", "LOCKWATCH_KEY_FILE": keyfile,
                        "LOCKWATCH_OWNER": "pod 7"})
        sh.ok("connect a")
        sh.ok("lock a l1 lock:multi 5000 1000 -")
        sh.ok("unlock l1")
        sh.ok("free a")
        for sink in sinks:
            lines = self.signed_lines(sink, key)
            self.assertTrue(lines[0].startswith("lw1 wait lock:multi "), lines)
            self.assertTrue(lines[1].startswith("lw1 hold lock:multi "), lines)
            self.assertTrue(lines[1].split(" ")[4].startswith("pod%%207:%d/" % sh.pid), lines[1])
            self.assertLessEqual(len(sink.datagrams[0]), 8192)     # on loopback

    def signed_lines(self, sink, key):
        """The lines of the first datagram at sink, once there, whose mac
        line signs it with key now (docs/line-protocol.md)."""
        harness.wait_until(lambda: len(sink.datagrams) >= 1, 5, interval=0.01,
                           desc="a datagram at the destination")
        d = sink.datagrams[0]
        head, _, rest = d.partition(b"\n")
        f = head.split(b" ")
        self.assertEqual((f[0], f[1], len(f[2]), len(f)), (b"lw1", b"mac", 32, 4))
        self.assertLess(abs(int(f[3]) - time.time()), 5)
        cover = d[len(b"lw1 mac ") + 33:]
        self.assertEqual(hmac.new(key, cover, hashlib.sha256).hexdigest()[:32].encode(), f[2])
        return rest.decode().split("\n")

    def test_LOCKWATCH_KEY_FILE_signs_with_its_first_line(self):
        """docs/reporters.md, docs/line-protocol.md "Signed datagrams": the
        reporters sign with the key file's first line ('\\r' at its end
        dropped); a second line is no error (only the agent refuses one)."""
        sink = UdpSink(self)
        key = b"client test key, 32 bytes long.."
        keyfile = os.path.join(self._tmp(), "samples.key")
        with open(keyfile, "wb") as f:
            f.write(key + b"\r\nnot the key\n")
        sh = Shell(self, self.redis.port,
                   env={"LOCKWATCH_SAMPLES": sink.address, "LOCKWATCH_KEY_FILE": keyfile})
        sh.ok("connect a")
        sh.ok("lock a l1 lock:firstline 5000 1000 -")
        sh.ok("unlock l1")
        sh.ok("free a")
        self.assertTrue(self.signed_lines(sink, key)[0].startswith("lw1 wait lock:firstline "))

    def owners_sent(self, env):
        """The connect answer, and the owner of the hold line a client of
        env (agent NULL) sends to its LOCKWATCH_SAMPLES sink."""
        sink = UdpSink(self)
        ans, sh = self.samples_by_env(dict(env, LOCKWATCH_SAMPLES=sink.address), sink)
        return ans, sh.pid, sink.lines()[1].split(" ")[4]

    def test_a_too_long_LOCKWATCH_OWNER_is_a_warning_and_the_default(self):
        """docs/reporters.md: LOCKWATCH_OWNER is 1 to 200 bytes, a longer
        one a warning and <host>:<pid>, as in every reporter; liblockwatch
        never prints, so lw_connect() succeeds with the warning in its
        lw_error (code LW_OK)."""
        ans, pid, owner = self.owners_sent({"LOCKWATCH_OWNER": "o" * 200})
        self.assertNotIn("WARN", ans)
        self.assertEqual(owner.split("/")[0], "o" * 200 + ":%d" % pid)
        ans, pid, owner = self.owners_sent({"LOCKWATCH_OWNER": "o" * 201})
        self.assertIn(" WARN reporting: LOCKWATCH_OWNER is 201 bytes (at most 200); using "
                      "%s:%d" % (sanitized_hostname(), pid), ans)
        self.assertEqual(owner.split("/")[0], "%s:%d" % (sanitized_hostname(), pid))

    def test_the_agent_option_takes_several_destinations(self):
        """lw_options.agent: several, comma-separated, each sent every
        datagram (liblockwatch(3)), split as LOCKWATCH_SAMPLES."""
        sinks = [UdpSink(self), UdpSink(self)]
        sh = self.shell("a", extra="agent=%s,%s," % (sinks[0].address, sinks[1].address))
        sh.ok("lock a l1 lock:option 5000 1000 -")
        sh.ok("unlock l1")
        sh.ok("free a")
        for sink in sinks:
            harness.wait_until(lambda: len(sink.lines()) >= 2, 5, interval=0.01,
                               desc="the wait and hold samples at each destination")

    def test_bad_LOCKWATCH_KEY_FILE_is_an_error(self):
        short = os.path.join(self._tmp(), "short.key")
        with open(short, "w") as f:
            f.write("short\n" + "a second line, long enough\n")
        for path, says in ((short, "its first line must be a key of 16"),
                           ("/nonexistent/samples.key", "cannot read LOCKWATCH_KEY_FILE")):
            sh = Shell(self, self.redis.port, env={"LOCKWATCH_KEY_FILE": path})
            ans = sh.cmd("connect a")
            self.assertIn(says, ans)
            self.assertNotIn("short\n", ans)

    def test_LOCKWATCH_KEY_FILE_set_but_empty_is_a_warning(self):
        """docs/reporters.md: unsigned, and said (a trial: it was silent);
        liblockwatch never prints, so lw_connect() succeeds with the
        warning in its lw_error."""
        for value in ("", " "):
            sink = UdpSink(self)
            ans, _ = self.samples_by_env({"LOCKWATCH_SAMPLES": sink.address,
                                          "LOCKWATCH_KEY_FILE": value}, sink)
            self.assertIn(" WARN reporting: LOCKWATCH_KEY_FILE is set but empty; datagrams go "
                          "unsigned", ans)
            self.assertFalse(sink.datagrams[0].startswith(b"lw1 mac "), sink.datagrams[0])
        sink = UdpSink(self)
        ans, _ = self.samples_by_env({"LOCKWATCH_SAMPLES": sink.address}, sink)
        self.assertNotIn("WARN", ans)

    def test_LOCKWATCH_SAMPLES_off_sends_nothing(self):
        """off (in any case: a trial's OFF failed lw_connect()) or empty,
        blanks around it trimmed as the reporters do."""
        sink = UdpSink(self)
        for samples in ("off", " off ", "", " \t", "OFF", " Off "):
            sh = Shell(self, self.redis.port, env={"LOCKWATCH_AGENT": sink.address,
                                                   "LOCKWATCH_SAMPLES": samples})
            sh.ok("connect a")
            sh.ok("lock a l1 lock:off2 5000 1000 -")
            sh.ok("unlock l1")
            self.assertEqual(sh.stats("a")["sent"], 0, repr(samples))
            sh.ok("free a")
        time.sleep(0.3)
        self.assertEqual(sink.datagrams, [])

    def sinks_reached(self, samples, sinks):
        """The connect answer of a client given LOCKWATCH_SAMPLES=samples,
        and which of sinks its wait and hold samples reached."""
        ans, _ = self.samples_by_env({"LOCKWATCH_SAMPLES": samples}, sinks[0])
        time.sleep(0.2)
        return ans, [len(s.lines()) == 2 for s in sinks]

    def test_LOCKWATCH_SAMPLES_entries_are_trimmed_and_empty_ones_skipped(self):
        """docs/reporters.md, as the reporters split it: blanks around an
        entry, and empty entries (a trailing comma), are no error; an entry
        that is no address still fails lw_connect() (the C way)."""
        sinks = [UdpSink(self), UdpSink(self)]
        ans, reached = self.sinks_reached(" %s, %s ,," % (sinks[0].address, sinks[1].address),
                                          sinks)
        self.assertNotIn("WARN", ans)
        self.assertEqual(reached, [True, True])
        sh = Shell(self, self.redis.port,
                   env={"LOCKWATCH_SAMPLES": "%s, no-port" % sinks[0].address})
        self.assertIn('bad agent address "no-port" (from LOCKWATCH_SAMPLES)',
                      sh.cmd("connect a"))

    def test_one_agent_named_twice_is_sent_to_once(self):
        """A trial: two names of one agent counted every sample twice."""
        sink = UdpSink(self)
        ans, _ = self.samples_by_env({"LOCKWATCH_SAMPLES": "%s, %s" % (sink.address,
                                                                        sink.address)}, sink)
        time.sleep(0.2)
        self.assertEqual(len(sink.lines()), 2, sink.lines())
        self.assertIn(" WARN reporting: LOCKWATCH_SAMPLES: %s is a destination already; "
                      "sending there once" % sink.address, ans)

    def test_LOCKWATCH_SAMPLES_past_8_destinations_are_ignored_with_a_warning(self):
        sinks = [UdpSink(self) for _ in range(9)]
        ans, reached = self.sinks_reached(",".join(s.address for s in sinks), sinks)
        self.assertIn(" WARN reporting: LOCKWATCH_SAMPLES: more than 8 destinations; "
                      "the rest are ignored", ans)
        self.assertEqual(reached, [True] * 8 + [False])

    def samples_by_env(self, env, sink):
        """A client connected with env and agent NULL takes and releases a
        lock; waits for its wait and hold samples at sink.  Returns the
        connect answer and the shell."""
        sh = Shell(self, self.redis.port, env=env)
        ans = sh.ok("connect a")
        sh.ok("lock a l1 lock:env 5000 1000 -")
        sh.ok("unlock l1")
        sh.ok("free a")
        # the datagram is sent by then, but the sink's thread reads it later
        harness.wait_until(lambda: len(sink.lines()) >= 2, 5, interval=0.01,
                           desc="the wait and hold samples at the sink")
        self.assertEqual(len(sink.lines()), 2, sink.lines())
        return ans, sh

    def test_reports_go_to_LOCKWATCH_AGENT(self):
        sink = UdpSink(self)
        self.samples_by_env({"LOCKWATCH_AGENT": sink.address}, sink)

    def test_LOCKWATCH_SAMPLES_before_LOCKWATCH_AGENT(self):
        """liblockwatch(3) agent option: NULL is LOCKWATCH_SAMPLES, and
        only without it LOCKWATCH_AGENT."""
        samples, agent = UdpSink(self), UdpSink(self)
        self.samples_by_env({"LOCKWATCH_SAMPLES": samples.address,
                             "LOCKWATCH_AGENT": agent.address}, samples)
        time.sleep(0.1)
        self.assertEqual(agent.lines(), [])

    def test_reporting_off_sends_nothing(self):
        sink = UdpSink(self)
        sh = Shell(self, self.redis.port, env={"LOCKWATCH_AGENT": sink.address})
        sh.ok("connect a agent=off")
        for i in range(20):
            sh.ok("lock a l1 lock:off 5000 1000 -")
            sh.ok("unlock l1")
        self.assertTrue(sh.cmd("trylock a l9 lock:nothing-here 0 -").startswith("OK"))
        sh.ok("unlock l9")
        st = sh.stats("a")
        sh.ok("free a")
        time.sleep(0.3)
        self.assertEqual(sink.datagrams, [])
        self.assertEqual((st["sent"], st["dropped"], st["datagrams"]), (0, 0, 0))

    def test_missing_agent_never_blocks(self):
        for target in ("127.0.0.1:%d" % closed_udp_port(), "192.0.2.1:9"):
            sh = self.shell("a", extra="agent=%s" % target)
            t0 = time.monotonic()
            worst = 0.0
            for i in range(300):
                t = time.monotonic()
                sh.ok("lock a l1 lock:nowhere 5000 1000 -")
                sh.ok("unlock l1")
                worst = max(worst, time.monotonic() - t)
            total = time.monotonic() - t0
            self.assertLess(worst, 0.2, "one cycle took %.3fs with agent %s" % (worst, target))
            self.assertLess(total, 20)
            # the last batch (up to 8192 bytes to loopback, about 120 lines:
            # how many depends on the host name's and token's length) goes
            # with the background flush, 100 ms after its first line
            time.sleep(0.3)
            st = sh.stats("a")
            # every sample either left or was counted as dropped
            self.assertEqual(st["sent"] + st["dropped"] <= 600, True)
            if target.startswith("127."):
                # a refused port is not known to an unconnected socket: what
                # the kernel took counts sent (liblockwatch(3) REPORTING)
                self.assertGreater(st["sent"], 500, target)
                self.assertEqual(st["dropped"], 0, target)
            t = time.monotonic()
            sh.ok("free a")
            self.assertLess(time.monotonic() - t, 1.0)
            self.assertEqual(sh.quit(), 0)


if __name__ == "__main__":
    harness.main()
