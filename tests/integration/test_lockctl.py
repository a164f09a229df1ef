# SPDX-License-Identifier: BSD-3-Clause
# run-all: idle (lockctl's commands against small keyspaces; a second of CPU in ten; its one
#   bound is 30 s)
"""lockctl, the on-call CLI, against a real redis-server (issue 5's acceptance).

- release with the wrong holder exits 1, says the holder changed, leaves the
  key; with the right holder exits 0 and the key is gone; both are audited
  and `lockctl audit` shows them;
- a key outside the target's patterns is refused even with the right value;
- a Redisson-format waiter subscribed to redisson_lock__channel:{K} gets "0"
  when lockctl releases K, and the fencing counters beside it are unchanged;
- `expire K --ttl 30s` on a leaked lock gives PTTL about 30 s and changes
  nothing else;
- with Redis down every command exits 3 naming the target and the address;
- --dry-run changes nothing; no terminal and no --yes is exit 2; a terminal
  gets a prompt;
- list / show / --json with hostile keys: valid JSON, tables within 100
  columns at COLUMNS=100 (test_lockctl_paste tests 80 and 200), every cell
  whole in a pipe without COLUMNS, nothing that moves the cursor;
- --help for lockctl and each command; usage and config errors exit 2.

The helpers at the top (run, config, width) are used by test_release_*.py
too (imported as a module).
"""

import json
import os
import pty
import select
import subprocess
import time
import unicodedata

import harness as h

LOCKCTL = os.path.join(h.BUILD, "bin", "lockctl")
# a pipe without COLUMNS prints every cell whole; tables checked for their
# width are run at an explicit 100 columns
COLS100 = dict(os.environ, COLUMNS="100")
COMMANDS = ("list", "show", "release", "expire", "audit", "events", "deadlocks", "classes",
            "alerts")
UUID = "8743c9c0-0795-4907-87fd-6c719a6b4586"


def write_config(redis_server=None, *, url=None, patterns="lock:*", extra="",
                 name="main", **rules):
    """A config with one target `name` and [rules]; returns its path."""
    d = h._mkdtemp("lw-lockctl-")
    path = os.path.join(d, "lockwatch.ini")
    rules.setdefault("leak_grace", "1s")
    rules.setdefault("max_hold", "1h")
    text = h.config_text(h.free_port(), [(name, url or redis_server.url)],
                         patterns=patterns, extra=extra, **rules)
    with open(path, "w") as f:
        f.write(text)
    return path


def run(args, config=None, stdin=subprocess.DEVNULL, timeout=30, env=None):
    """lockctl [-c config] args -> CompletedProcess (stdout/stderr bytes)."""
    if not os.access(LOCKCTL, os.X_OK):
        raise RuntimeError("%s is not built (run make)" % LOCKCTL)
    argv = [LOCKCTL] + (["-c", config] if config else []) + list(args)
    return subprocess.run(argv, stdin=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, env=env)


def run_json(testcase, args, config, rc=0):
    p = run(list(args) + ["--json"], config)
    testcase.assertEqual(p.returncode, rc, "lockctl %s: exit %d\nstdout: %s\nstderr: %s"
                         % (" ".join(map(str, args)), p.returncode, p.stdout[-2000:],
                            p.stderr[-2000:]))
    try:
        return json.loads(p.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        testcase.fail("lockctl %s --json: not JSON (%s): %r" % (args, e, p.stdout[:500]))


def width(line):
    """Columns a terminal gives line: wide (W, F) characters two, combining
    marks none, everything else one."""
    w = 0
    for ch in line:
        if unicodedata.combining(ch):
            continue
        w += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return w


def assert_terminal_safe(testcase, out, limit=100):
    """Every line of out (bytes) is valid UTF-8, at most limit columns (None:
    any width), and holds no control character but the newline."""
    text = out.decode("utf-8")
    for line in text.split("\n"):
        if limit is not None:
            testcase.assertLessEqual(width(line), limit, "line wider than %d: %r"
                                     % (limit, line))
        for ch in line:
            cat = unicodedata.category(ch)
            testcase.assertFalse(cat in ("Cc", "Cf") or ch in "\u2028\u2029",
                                 "control/format character %r in %r" % (ch, line))


def audit_entries(client, stream="lockwatch:audit"):
    return [(i, {k.decode(): v for k, v in f.items()}) for i, f in client.xrange(stream)]


def snapshot_keys(client, skip=(b"lockwatch:audit",)):
    """Every key with its type, value and PTTL (to show nothing else changed)."""
    out = {}
    for k in client.scan_iter(count=1000):
        if k in skip:
            continue
        t = client.type(k)
        if t == b"string":
            v = client.get(k)
        elif t == b"hash":
            v = sorted(client.hgetall(k).items())
        elif t == b"list":
            v = client.lrange(k, 0, -1)
        else:
            v = None
        out[k] = (t, v, client.pttl(k) == -1)
    return out



def at_terminal(argv, answer=b"y\n", env=None, cwd=None):
    """argv at a terminal (a pty on stdin) that answers `answer`: (rc, stdout, stderr)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen(argv, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, cwd=cwd)
        os.close(slave)
        slave = None
        os.write(master, answer)
        out, err = p.communicate(timeout=30)
        return p.returncode, out, err
    finally:
        os.close(master)
        if slave is not None:
            os.close(slave)

class Lockctl(h.TestCase):

    def setUp(self):
        super().setUp()
        self.rs = self.start_redis()
        self.c = self.rs.client()
        self.cfg = write_config(self.rs)

    # -- the acceptance items --------------------------------------------------

    def test_wrong_holder_refused_right_holder_released_both_audited(self):
        self.c.set("lock:order:1001", "tok-A")
        p = run(["release", "lock:order:1001", "--holder", "tok-WRONG", "--yes",
                 "--reason", "INC-1 wrong"], self.cfg)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"holder changed", p.stderr)
        self.assertEqual(self.c.get("lock:order:1001"), b"tok-A")

        p = run(["release", "lock:order:1001", "--holder", "tok-A", "--yes",
                 "--reason", "INC-1 stuck"], self.cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"released", p.stdout)
        self.assertFalse(self.c.exists("lock:order:1001"))

        entries = audit_entries(self.c)
        self.assertEqual([e["outcome"] for _, e in entries], [b"holder_changed", b"released"])
        for _, e in entries:
            self.assertEqual(e["key"], b"lock:order:1001")
            self.assertEqual(e["old"], b"tok-A")
            self.assertEqual(e["action"], b"release")
            self.assertEqual(e["target"], b"main")
            self.assertTrue(e["operator"])
            self.assertGreater(int(e["time"]), 1e12)
        self.assertEqual(entries[0][1]["holder"], b"tok-WRONG")
        self.assertEqual(entries[1][1]["reason"], b"INC-1 stuck")

        # lockctl audit shows both, newest first, as a table and as JSON
        p = run(["audit"], self.cfg, env=COLS100)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.decode().splitlines()
        self.assertIn("released", lines[1])
        self.assertIn("holder_changed", lines[2])
        self.assertIn("INC-1 stuck", lines[1])
        assert_terminal_safe(self, p.stdout)
        doc = run_json(self, ["audit", "--limit", "5"], self.cfg)
        self.assertEqual(doc["count"], 2)
        self.assertEqual([e["outcome"] for e in doc["entries"]], ["released", "holder_changed"])
        self.assertEqual(doc["entries"][0]["key"], "lock:order:1001")
        self.assertEqual(doc["entries"][0]["old"], "tok-A")
        self.assertEqual(doc["entries"][1]["holder"], "tok-WRONG")
        self.assertEqual(doc["entries"][0]["id"], entries[1][0].decode())

    def test_key_outside_the_patterns_is_refused_even_with_the_right_value(self):
        for key in ("user:42", "lock", "Lock:a", "xlock:a", " lock:a"):
            self.c.set(key, "v")
            p = run(["release", key, "--holder", "v", "--yes"], self.cfg)
            self.assertEqual(p.returncode, 1, (key, p.stderr))
            self.assertIn(b"[pattern]", p.stderr)
            self.assertEqual(self.c.get(key), b"v")
            doc = run_json(self, ["release", key, "--holder", "v", "--yes"], self.cfg, rc=1)
            self.assertEqual(doc["outcome"], "pattern")
            p = run(["expire", key, "--holder", "v", "--ttl", "5s", "--yes"], self.cfg)
            self.assertEqual(p.returncode, 1)
            self.assertEqual(self.c.pttl(key), -1)
        # refused before Redis is asked: nothing ran, nothing is audited
        self.assertEqual(audit_entries(self.c), [])

    def test_redisson_waiter_gets_0_and_fencing_counters_stay(self):
        key = "lock:inventory:7"
        field = UUID + ":57"
        self.c.hset(key, field, 2)
        self.c.set("redisson_lock_token:{%s}" % key, 41)       # Redisson FencedLock
        self.c.set("lockwatch_fence:{%s}" % key, 9)            # liblockwatch fencing
        ps = self.rs.client().pubsub()
        ps.subscribe("redisson_lock__channel:{%s}" % key)
        h.wait_until(lambda: ps.get_message(timeout=0.2), 5, desc="subscribed")
        p = run(["release", key, "--holder", field, "--yes", "--reason", "waiters stuck"],
                self.cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        msg = h.wait_until(lambda: ps.get_message(timeout=0.5), 5, desc="wake-up message")
        self.assertEqual(msg["type"], "message")
        self.assertEqual(msg["channel"], ("redisson_lock__channel:{%s}" % key).encode())
        self.assertEqual(msg["data"], b"0")
        self.assertFalse(self.c.exists(key))
        self.assertEqual(self.c.get("redisson_lock_token:{%s}" % key), b"41")
        self.assertEqual(self.c.get("lockwatch_fence:{%s}" % key), b"9")
        self.assertEqual(self.c.pttl("redisson_lock_token:{%s}" % key), -1)
        ps.close()

    def test_expire_gives_a_leaked_lock_30s_and_nothing_else_changes(self):
        self.c.set("lock:batch:3", "tok-batch")                 # leaked: no TTL
        self.c.hset("lock:other", UUID + ":1", 1)
        self.c.set("lock:ttl", "t", px=600000)
        self.c.set("user:1", "x")
        before = snapshot_keys(self.c)
        p = run(["expire", "lock:batch:3", "--ttl", "30s", "--holder", "tok-batch", "--yes",
                 "--reason", "leak after crash"], self.cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        pttl = self.c.pttl("lock:batch:3")
        self.assertTrue(28000 <= pttl <= 30000, pttl)
        self.assertEqual(self.c.get("lock:batch:3"), b"tok-batch")
        after = snapshot_keys(self.c)
        before[b"lock:batch:3"] = (b"string", b"tok-batch", False)
        self.assertEqual(after, before)
        (_, e), = audit_entries(self.c)
        self.assertEqual((e["action"], e["outcome"], e["ttl"], e["pttl"]),
                         (b"expire", b"expired", b"30000", b"-1"))

        # a lock that has a TTL is its holder's business: refused, untouched
        p = run(["expire", "lock:ttl", "--ttl", "5s", "--holder", "t", "--yes"], self.cfg)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"[has_ttl]", p.stderr)
        self.assertGreater(self.c.pttl("lock:ttl"), 500000)

    def test_redis_down_every_command_exits_3_naming_target_and_address(self):
        port = h.free_port()
        cfg = write_config(url="redis://127.0.0.1:%d/0" % port)
        for args in (["list"], ["show", "lock:a"], ["audit"],
                     ["release", "lock:a", "--holder", "x", "--yes"],
                     ["release", "lock:a", "--holder", "x", "--dry-run"],
                     ["expire", "lock:a", "--ttl", "30s", "--holder", "x", "--yes"]):
            for extra in ([], ["--json"]):
                p = run(args + extra, cfg)
                self.assertEqual(p.returncode, 3, (args, p.stderr))
                err = p.stderr.decode()
                self.assertIn("target main", err)
                self.assertIn("127.0.0.1:%d" % port, err)
                self.assertIn("Connection refused", err)
        # --url names the address it was given
        p = run(["--url", "redis://127.0.0.1:%d/0" % port, "list"], self.cfg)
        self.assertEqual(p.returncode, 3)
        self.assertIn(b"127.0.0.1:%d" % port, p.stderr)

    def test_redis_stopped_mid_life_and_paused(self):
        # a server that stops answering: the command timeout, named
        self.c.set("lock:a", "x")
        cfg = self.cfg
        self.rs.pause()
        try:
            t0 = time.monotonic()
            p = run(["show", "lock:a"], cfg, timeout=60)
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertIn(b"target main", p.stderr)
            self.assertIn(b"127.0.0.1:%d" % self.rs.port, p.stderr)
            self.assertIn(b"timed out", b" ".join(p.stderr.split()))    # wrapped or not
            self.assertLess(time.monotonic() - t0, 30)
        finally:
            self.rs.resume()

    # -- dry runs, confirmation -------------------------------------------------

    def test_dry_run_changes_nothing(self):
        self.c.set("lock:a", "tok")
        self.c.set("lock:leak", "tok")
        before = snapshot_keys(self.c)
        doc = run_json(self, ["release", "lock:a", "--holder", "tok", "--dry-run"], self.cfg)
        self.assertEqual(doc["outcome"], "would_release")
        self.assertTrue(doc["dry_run"])
        self.assertFalse(doc["done"])
        doc = run_json(self, ["release", "lock:a", "--holder", "bad", "--dry-run"], self.cfg,
                       rc=1)
        self.assertEqual(doc["outcome"], "holder_changed")
        doc = run_json(self, ["expire", "lock:leak", "--holder", "tok", "--ttl", "1s",
                              "--dry-run"], self.cfg)
        self.assertEqual(doc["outcome"], "would_expire")
        p = run(["release", "user:1", "--holder", "x", "--dry-run"], self.cfg)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(snapshot_keys(self.c), before)
        self.assertFalse(self.c.exists("lockwatch:audit"), "a dry run wrote an audit entry")

    def test_without_a_terminal_release_needs_yes(self):
        self.c.set("lock:a", "tok")
        for args in (["release", "lock:a", "--holder", "tok"],
                     ["expire", "lock:a", "--holder", "tok", "--ttl", "5s"]):
            p = run(args, self.cfg)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(b"--yes", p.stderr)
        self.assertEqual(self.c.get("lock:a"), b"tok")
        self.assertEqual(self.c.pttl("lock:a"), -1)

    def _on_terminal(self, args, answer):
        return at_terminal([LOCKCTL, "-c", self.cfg] + args, answer)

    def test_a_terminal_gets_a_prompt(self):
        self.c.set("lock:a", "tok")
        rc, out, err = self._on_terminal(["release", "lock:a", "--holder", "tok"], b"n\n")
        self.assertEqual(rc, 1, err)
        self.assertIn(b"[y/N]", err)
        self.assertIn(b"lock:a", err)
        self.assertIn(b"not confirmed", err)
        self.assertEqual(self.c.get("lock:a"), b"tok")
        rc, out, err = self._on_terminal(["release", "lock:a", "--holder", "tok"], b"y\n")
        self.assertEqual(rc, 0, err)
        self.assertFalse(self.c.exists("lock:a"))

    def test_a_slow_answer_on_a_closed_connection_still_releases(self):
        """The operator reads the prompt for longer than --timeout, and the
        connection lockctl read the lock on is closed meanwhile (the
        server's timeout, a proxy, CLIENT KILL): the time at the prompt is
        not the command's, the connection is opened again, and the answer
        releases the lock."""
        self.c.set("lock:a", "tok")
        master, slave = pty.openpty()
        try:
            p = subprocess.Popen([LOCKCTL, "-c", self.cfg, "--timeout", "2s", "release", "lock:a",
                                  "--holder", "tok", "--reason", "slow reader"],
                                 stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            os.close(slave)
            slave = None
            err = b""
            end = time.monotonic() + 20
            while b"[y/N]" not in err and time.monotonic() < end:
                if select.select([p.stderr], [], [], 0.5)[0]:
                    err += os.read(p.stderr.fileno(), 4096)
            self.assertIn(b"[y/N]", err)
            killed = self.c.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
            self.assertGreaterEqual(killed, 1)
            time.sleep(2.5)             # past --timeout 2s, at the prompt
            os.write(master, b"y\n")
            out, rest = p.communicate(timeout=30)
        finally:
            os.close(master)
            if slave is not None:
                os.close(slave)
        self.assertEqual(p.returncode, 0, err + rest)
        self.assertIn(b"released", out)
        self.assertFalse(self.c.exists("lock:a"))

    # -- reading ---------------------------------------------------------------

    def test_list_and_show(self):
        now_ms = int(time.time() * 1000)
        lw1 = "lw1:web-3:4211:4230:%d:9f86d081884c7d65" % (now_ms - 3 * 3600 * 1000)
        self.c.set("lock:lw", lw1, px=600000)                    # long (3 h old)
        self.c.set("lock:leak", "plain-tok")                     # leaked
        self.c.hset("lock:re", UUID + ":9", 20)                  # reentrant_high
        self.c.pexpire("lock:re", 600000)
        self.c.set("lock:fine", "tok", px=600000)                # held
        self.c.set("user:1", "not a lock")
        # leak_grace 1s; IDLETIME's clock ticks in whole seconds, so only
        # IDLETIME - 1 is sure: 2 s of it prove the 1 s without a TTL
        time.sleep(2.2)
        doc = run_json(self, ["list"], self.cfg)
        self.assertEqual(doc["total"], 4)
        self.assertTrue(doc["complete"])
        keys = [l["key"] for l in doc["locks"]]
        self.assertEqual(keys[0], "lock:leak")                   # worst first
        self.assertEqual(set(keys), {"lock:lw", "lock:leak", "lock:re", "lock:fine"})
        # --pattern outside the patterns: nothing listed, and the footer says why
        p = run(["list", "--pattern", "user:*"], self.cfg)
        self.assertIn("matched 1 key outside", " ".join(p.stdout.decode().split()), p.stdout)
        narrow = run_json(self, ["list", "--pattern", "user:*"], self.cfg)
        self.assertEqual((narrow["total"], narrow["keys_outside_patterns"]), (0, 1))
        # a key outside the patterns is shown, but not judged as a lock
        p = run(["show", "user:1"], self.cfg)
        state = [ln for ln in p.stdout.decode().splitlines() if ln.startswith("state")]
        self.assertTrue(state and "not judged" in state[0], p.stdout)
        self.assertNotIn("leaked", state[0])
        by = {l["key"]: l for l in doc["locks"]}
        self.assertIn("long", by["lock:lw"]["states"])
        self.assertEqual(by["lock:lw"]["format"], "liblockwatch")
        self.assertEqual(by["lock:lw"]["age_source"], "acquired")
        self.assertGreater(by["lock:lw"]["age_seconds"], 3 * 3600 - 60)
        self.assertEqual(by["lock:lw"]["host"], "web-3")
        self.assertIn("reentrant_high", by["lock:re"]["states"])
        self.assertEqual(by["lock:re"]["format"], "redisson")
        self.assertEqual(by["lock:re"]["holders"][0]["id"], UUID + ":9")
        self.assertEqual(by["lock:re"]["max_count"], 20)
        self.assertEqual(by["lock:fine"]["states"], ["held"])
        # The listing read every lock, and on Redis < 7.2 (no CLIENT
        # NO-TOUCH) a read resets OBJECT IDLETIME: lock:leak is young again.
        # leak_grace = 0s judges a lock without a TTL leaked at once.
        cfg0 = write_config(self.rs, leak_grace="0s")
        for state, want in (("leaked", ["lock:leak"]), ("long", ["lock:lw"]),
                            ("reentrant_high", ["lock:re"])):
            doc = run_json(self, ["list", "--state", state], cfg0)
            self.assertEqual([l["key"] for l in doc["locks"]], want, state)
        doc = run_json(self, ["list", "--limit", "1"], self.cfg)
        self.assertEqual((doc["count"], doc["total"]), (1, 4))
        doc = run_json(self, ["list", "--pattern", "lock:l*"], self.cfg)
        self.assertEqual(sorted(l["key"] for l in doc["locks"]), ["lock:leak", "lock:lw"])
        doc = run_json(self, ["list", "--pattern", "user:*"], self.cfg)
        self.assertEqual(doc["locks"], [])                       # never beyond the patterns

        p = run(["list"], self.cfg, env=COLS100)
        self.assertEqual(p.returncode, 0)
        assert_terminal_safe(self, p.stdout)
        self.assertIn(b"4 of 4 locks", p.stdout)

        p = run(["show", "lock:re"], self.cfg, env=COLS100)
        self.assertEqual(p.returncode, 0, p.stderr)
        assert_terminal_safe(self, p.stdout)
        self.assertIn(UUID.encode() + b":9", p.stdout)
        # the release command, as run (-c, -t), to paste (test_lockctl_paste);
        # the line may be continued with " \\" at the width, which the path
        # of this checkout decides: compare it joined
        joined = p.stdout.replace(b" \\\n    ", b" ")
        self.assertIn(b"release with:\n%s -c %s -t main release" % (LOCKCTL.encode(),
                                                                   self.cfg.encode()),
                      joined)
        self.assertIn(b"lock:re --holder %s:9\n" % UUID.encode(), joined)
        doc = run_json(self, ["show", "lock:re"], self.cfg)
        self.assertTrue(doc["exists"] and doc["in_patterns"])
        p = run(["show", "lock:nope"], self.cfg)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"no key", p.stderr)
        doc = run_json(self, ["show", "lock:nope"], self.cfg, rc=1)
        self.assertFalse(doc["exists"])
        doc = run_json(self, ["show", "user:1"], self.cfg)
        self.assertFalse(doc["in_patterns"])

    def test_hostile_keys(self):
        hostile = [
            b"lock:new\nline", b"lock:\x1b[2J\x1b[31mred", b"lock:\xe2\x80\xaeevil",
            b"lock:\xff\xfe bad utf8", b"lock:nul\x00byte", b'lock:quote"back\\',
            b"lock:" + "\u65e5\u672c".encode() * 40, b"lock:" + b"k" * 2000 + b":1001",
            b"lock:tab\tcr\r\x7f\xc2\x9b", b"lock:%41%zz",
        ]
        for i, k in enumerate(hostile):
            self.c.set(k, b"tok\n\x1b[1m%d\xff" % i)
        self.c.set(b"lock:big-holder", b"T" * 3000)
        p = run(["list"], self.cfg, env=COLS100)
        self.assertEqual(p.returncode, 0, p.stderr)
        assert_terminal_safe(self, p.stdout)
        # a row each (every key starts "lock:", the footers do not)
        rows = [ln for ln in p.stdout.decode().splitlines() if ln.startswith("lock:")]
        self.assertEqual(len(rows), len(hostile) + 1)
        # a pipe without COLUMNS: the same rows, every cell whole, as safe
        p = run(["list"], self.cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        assert_terminal_safe(self, p.stdout, limit=None)
        rows = [ln for ln in p.stdout.decode().splitlines() if ln.startswith("lock:")]
        self.assertEqual(len(rows), len(hostile) + 1)
        self.assertIn(b"lock:" + b"k" * 2000 + b":1001", p.stdout)
        self.assertIn(b"T" * 100, p.stdout)        # (the read keeps the first 513 bytes)
        # nothing cut to fit; only the holder the read itself cut (159 bytes
        # kept, as the agent keeps them) ends in its mark
        for ln in p.stdout.splitlines():
            if not ln.startswith(b"lock:big-holder"):
                self.assertNotIn("\u2026".encode(), ln)
        big = [ln for ln in p.stdout.splitlines() if ln.startswith(b"lock:big-holder")]
        self.assertIn(b"T" * 100 + "\u2026".encode(), big[0])
        doc = run_json(self, ["list"], self.cfg)
        self.assertEqual(doc["total"], len(hostile) + 1)
        seen = {h.unescape_key(l["key_escaped"]) for l in doc["locks"]}
        self.assertEqual(seen, set(hostile) | {b"lock:big-holder"})
        for l in doc["locks"]:
            raw = h.unescape_key(l["key_escaped"])
            # show --escaped finds each one, as a table and as JSON
            p = run(["show", "--escaped", l["key_escaped"]], self.cfg, env=COLS100)
            self.assertEqual(p.returncode, 0, (raw, p.stderr))
            assert_terminal_safe(self, p.stdout)
            d = run_json(self, ["show", "--escaped", l["key_escaped"]], self.cfg)
            self.assertEqual(h.unescape_key(d["key_escaped"]), raw)
        # release of a binary key through --escaped, refused then done
        raw = b"lock:nul\x00byte"
        esc = h.escape_key(raw)
        tok = h.escape_key(self.c.get(raw))
        p = run(["release", "--escaped", esc, "--holder", "x", "--yes"], self.cfg, env=COLS100)
        self.assertEqual(p.returncode, 1, p.stderr)
        assert_terminal_safe(self, p.stderr, limit=400)
        doc = run_json(self, ["release", "--escaped", esc, "--holder", tok, "--yes"], self.cfg)
        self.assertEqual(doc["outcome"], "released")
        self.assertEqual(h.unescape_key(doc["key_escaped"]), raw)
        self.assertFalse(self.c.exists(raw))
        p = run(["audit"], self.cfg, env=COLS100)
        self.assertEqual(p.returncode, 0)
        assert_terminal_safe(self, p.stdout)
        run_json(self, ["audit"], self.cfg)

    # -- the CLI itself --------------------------------------------------------

    def test_help(self):
        p = run(["--help"])
        self.assertEqual(p.returncode, 0)
        for c in COMMANDS:
            self.assertIn(c.encode(), p.stdout)
        for c in COMMANDS:
            p = run([c, "--help"])
            self.assertEqual(p.returncode, 0, c)
            self.assertIn(b"usage: lockctl", p.stdout)
            self.assertIn(c.encode(), p.stdout)
            assert_terminal_safe(self, p.stdout)
        for args in [["--help"]] + [[c, "--help"] for c in COMMANDS]:
            for line in run(args).stdout.decode().splitlines():
                self.assertLessEqual(len(line), 80, (args, line))
        self.assertIn(b"--if-older-than", run(["release", "--help"]).stdout)
        # every exit code release has, 2 (no terminal without --yes) included
        text = run(["release", "--help"]).stdout.decode().split("\nExit ")[1]
        text = text.split("\n\n")[0].replace("\n", " ")
        for code in ("0 released", "1 refused", "2 usage error or no terminal without --yes",
                     "3 Redis error"):
            self.assertIn(code, text)
        self.assertIn(b"--ttl", run(["expire", "--help"]).stdout)
        self.assertIn(b"lockctl", run(["--version"]).stdout)

    def test_usage_and_config_errors_exit_2(self):
        for args in ([], ["bogus"], ["release", "lock:a", "--yes"],
                     ["release", "--holder", "x", "--yes"],
                     ["release", "lock:a", "--holder", "x", "--if-older-than", "5x", "--yes"],
                     ["expire", "lock:a", "--holder", "x", "--yes"],
                     ["expire", "lock:a", "--holder", "x", "--ttl", "0", "--yes"],
                     ["expire", "lock:a", "--holder", "x", "--ttl", "5s", "--if-leaked"],
                     ["list", "--state", "stuck"], ["list", "--limit", "0"],
                     ["audit", "--limit", "x"], ["show"], ["show", "a", "b"],
                     ["events", "--since", "soon"], ["events", "--limit", "1025"],
                     ["events", "stray"], ["deadlocks", "stray"], ["deadlocks", "--bogus"],
                     ["show", "--escaped", "%zz"], ["-t", "nope", "list"],
                     ["--url", "redis://:pw@127.0.0.1:1/0", "list"],
                     ["--url", "http://x", "list"],
                     ["--agent", "off", "deadlocks"], ["--agent", "off", "classes"],
                     ["--agent", "off", "events"], ["--agent", "off", "alerts"],
                     ["alerts", "stray"], ["alerts", "--severity", "page"]):
            p = run(args, self.cfg)
            self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))
            self.assertTrue(p.stderr, args)
            self.assertNotIn(b"pw@", p.stderr)
        p = run(["list"], "/nonexistent/lockwatch.ini")
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"/nonexistent/lockwatch.ini", p.stderr)
        bad = write_config(self.rs, max_hold="5x")
        p = run(["list"], bad)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"max_hold", p.stderr)
        p = run(["-t", "nope", "list"], self.cfg)
        self.assertIn(b"main", p.stderr)            # lists the targets there are
        p = run(["bogus"], self.cfg)               # names every command there is
        for c in COMMANDS:
            self.assertIn(c.encode(), p.stderr.split(b"commands:")[1])

    def test_targets_url_and_password_file(self):
        rs2 = self.start_redis(password="s3cret-pw")
        d = h._mkdtemp("lw-pw-")
        good, bad = os.path.join(d, "good.pass"), os.path.join(d, "bad.pass")
        for path, pw in ((good, "s3cret-pw\n"), (bad, "not-it-pw\n")):
            with open(path, "w") as f:
                f.write(pw)
            os.chmod(path, 0o600)
        cfg = os.path.join(d, "lockwatch.ini")
        with open(cfg, "w") as f:
            f.write("[target other]\nurl = %s\npatterns = lock:*\n\n"
                    "[target secure]\nurl = %s\npatterns = lock:*\npassword_file = %s\n\n"
                    "[target wrongpw]\nurl = %s\npatterns = lock:*\npassword_file = %s\n"
                    % (self.rs.url, rs2.url, good, rs2.url, bad))
        rs2.client().set("lock:s", "tok")
        self.c.set("lock:o", "tok")
        doc = run_json(self, ["-t", "secure", "show", "lock:s"], cfg)
        self.assertEqual((doc["target"], doc["holders"][0]["id"]), ("secure", "tok"))
        # no -t: the first target
        self.assertEqual(run_json(self, ["show", "lock:o"], cfg)["target"], "other")
        # a wrong password: exit 3, named, never printed
        p = run(["-t", "wrongpw", "show", "lock:s"], cfg)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(b"target wrongpw", p.stderr)
        self.assertIn(b"AUTH", p.stderr)
        self.assertNotIn(b"not-it-pw", p.stderr)
        self.assertNotIn(b"s3cret-pw", p.stderr)
        # --url replaces the address and keeps the target's password_file
        p = run(["-t", "secure", "--url", rs2.url.replace("/0", "/0"), "show", "lock:s"], cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run(["-t", "other", "--url", rs2.url, "show", "lock:s"], cfg)
        self.assertEqual(p.returncode, 3)               # no password for rs2: NOAUTH
        self.assertIn(b"target other", p.stderr)
        doc = run_json(self, ["-t", "secure", "release", "lock:s", "--holder", "tok", "--yes"],
                       cfg)
        self.assertEqual(doc["outcome"], "released")
        self.assertEqual(doc["target"], "secure")
        (_, e), = audit_entries(rs2.client())
        self.assertEqual(e["target"], b"secure")


if __name__ == "__main__":
    h.main()
