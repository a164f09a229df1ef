# SPDX-License-Identifier: BSD-3-Clause
"""lockctl at 3 a.m. (issue 24): every command pastes, fits, and says what
to do next.  Against a real redis-server (and lockwatchd where it says).

- `lockctl show` ends with a release command that, pasted into a shell as
  it stands (`sh -c`, at a terminal answering "y"), releases the lock: for
  every client layout tests/integration/test_formats_clients.py writes
  byte for byte as the libraries do (the formats of `make interop`: the
  Redisson locks, read/write and permit semaphore, redis-py, pottery,
  node-redlock, redis-semaphore, redsync, ShedLock, Spring), for
  liblockwatch, for binary tokens (rslock, walrus:
  --holder-hex, and shown as hex:... by show and list), a key with quotes
  and spaces, a binary key (--escaped),
  and at 80 columns where the line is continued with `\\` (never between
  an option and its value); with -c and -t
  as lockctl was run, relative paths made absolute (it pastes in another
  directory);
- a pipe without `COLUMNS` (`lockctl list | grep`) cuts no cell, as -o
  wide; a table that did cut says how many in one footer line naming -o wide;
- `COLUMNS=80` and `COLUMNS=200`: no line of list or show (or of the
  release prompt and outcome at 80) is wider, no
  sentence is cut ("…" only inside list's key and holder cells, and a
  holder only when the terminal has no room for it); -o wide prints
  everything whole; `list --state long` shows every state of a lock;
- a --holder that does not hold the lock is refused before the prompt,
  naming the holder it has and the command for it;
- with the agent down, ages under a second read "unknown", and a
  `release --if-leaked` refusal names the next step (expire, or release
  without it), both as pasteable commands;
- `--json` failures print a JSON error object with the exit code;
- an unsolicited reply (a proxy that injects one) is a protocol error in
  `lockctl show`, not "no key";
- no config file: one note on stderr, none with -q, stdout unchanged; none
  for a command that asks only the agent, given --agent.
"""

import json
import os
import re
import select
import socket
import subprocess
import threading
import time

import harness as h
import test_formats_clients as fc
import test_lockctl as lt

ELLIPSIS = "\u2026"


def release_blocks(out):
    """The commands show printed after "release ... with:" lines, each as
    its text (continuation lines kept: sh joins them)."""
    lines = out.split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        if re.match(r"^release (holder \d+ of \d+ )?with:$", lines[i]):
            j = i + 1
            cmd = [lines[j]]
            while cmd[-1].endswith("\\"):
                j += 1
                cmd.append(lines[j])
            blocks.append("\n".join(cmd))
            i = j
        i += 1
    return blocks


def commands(text):
    """The lockctl command lines in text (a refusal's next steps), each
    with its continuation lines."""
    out, cur = [], None
    for ln in text.split("\n"):
        if cur is not None:
            cur.append(ln)
        elif ln.startswith(lt.LOCKCTL):
            cur = [ln]
        else:
            continue
        if not ln.endswith("\\"):
            out.append("\n".join(cur))
            cur = None
    return out


def paste(line, answer=b"y\n", env=None, cwd=None):
    """sh -c line at a terminal that answers `answer`: (rc, stdout, stderr)."""
    return lt.at_terminal(["sh", "-c", line], answer, env=env, cwd=cwd)


def env_cols(n):
    return dict(os.environ, COLUMNS=str(n))


class InjectingProxy:
    """A TCP proxy to a Redis that puts one extra integer reply in front of
    the answer to the first command naming OBJECT: what a misbehaving proxy
    does, which leaves every later reply answering the wrong command."""

    def __init__(self, port):
        self.port_to = port
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(4)
        self.port = self.ls.getsockname()[1]
        self.stop = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.stop:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.pump, args=(c,), daemon=True).start()

    def pump(self, c):
        s = socket.create_connection(("127.0.0.1", self.port_to))
        injected = False
        try:
            while True:
                r, _, _ = select.select([c, s], [], [], 10)
                if not r:
                    return
                for x in r:
                    data = x.recv(65536)
                    if not data:
                        return
                    if x is c:
                        if not injected and b"OBJECT" in data:
                            injected = True
                            c.sendall(b":7\r\n")
                        s.sendall(data)
                    else:
                        c.sendall(data)
        finally:
            c.close()
            s.close()

    def close(self):
        self.stop = True
        self.ls.close()


class LockctlPaste(h.TestCase):

    def setUp(self):
        super().setUp()
        self.rs = self.start_redis()
        self.c = self.rs.client()

    def cfg(self, patterns="*", extra="", **rules):
        return lt.write_config(self.rs, patterns=patterns, extra=extra, **rules)

    def show(self, cfg, key, cols=80, escaped=False, extra=()):
        args = [lt.LOCKCTL, "-c", cfg, "-t", "main", "show"] + list(extra)
        args += ["--escaped", "--", h.escape_key(key)] if escaped else ["--", key]
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, env=env_cols(cols), timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.decode("utf-8")

    def holders(self, cfg, key):
        """The key's holders as bytes (show --json), or None when it is gone."""
        p = lt.run(["show", "--escaped", "--json", "--", h.escape_key(key)], cfg)
        if p.returncode == 1:
            return None
        doc = json.loads(p.stdout)
        return [bytes(h.unescape_key(x["id_escaped"])) for x in doc["holders"]]

    def assert_fits(self, out, cols):
        for line in out.split("\n"):
            self.assertLessEqual(lt.width(line), cols, "line over %d: %r" % (cols, line))

    def assert_pastes(self, cfg, key, cols=80, escaped=False):
        """show key's first release command, pasted, takes its holder away."""
        kb = key if isinstance(key, bytes) else key.encode()
        before = self.holders(cfg, kb)
        self.assertTrue(before, "no holders for %r" % key)
        out = self.show(cfg, key, cols, escaped)
        self.assert_fits(out, cols)
        blocks = release_blocks(out)
        self.assertTrue(blocks, "no release line for %r:\n%s" % (key, out))
        self.assertIn(lt.LOCKCTL, blocks[0])
        self.assertIn("-c", blocks[0].split())
        rc, o, e = paste(blocks[0], env=env_cols(cols))
        self.assertEqual(rc, 0, "%r: %s\n%s\n%s" % (key, blocks[0], o, e))
        self.assertIn(b"[y/N]", e)
        # the prompt and the outcome fit the terminal too
        self.assert_fits(e.decode("utf-8"), cols)
        self.assert_fits(o.decode("utf-8"), cols)
        after = self.holders(cfg, kb)
        self.assertTrue(after is None or before[0] not in after,
                        "%r: %r still holds it: %r" % (key, before[0], after))
        return blocks[0]

    # -- the release line --------------------------------------------------------

    def test_every_client_layout_pastes(self):
        now_ms = int(time.time() * 1000)
        want = fc.write_layouts(self.c, now_ms)
        # and what write_layouts has not: liblockwatch, binary tokens
        # (rslock, walrus), awkward keys
        self.c.set("lock:lw", "lw1:web-3:4211:4230:%d:9f86d081884c7d65" % (now_ms - 5000),
                   px=600000)
        self.c.set("lock:rslock", bytes([0, 1, 2, 0x27, 0xff]) + os.urandom(15), px=600000)
        self.c.set("walrus-lock", b"\x00" + os.urandom(15))
        self.c.set("lock:it's \"quoted\" $HOME `x` & spaces", "tok-q", px=600000)
        self.c.set(b"lock:bin\xff\x01key", b"tok-b", px=600000)
        self.c.set("-lock:dash", "--tok", px=600000)           # looks like options
        self.c.set("lock:empty", "", px=600000)                # SET key "": --holder ''

        self.c.set("lock:" + "long-" * 30, "tok-" + "t" * 90, px=600000)
        self.c.delete("stats:counter")           # not a lock (test_formats_clients excludes it)
        cfg = self.cfg()
        keys = sorted(k for k in want if not k.startswith("nr:")) + ["nr:0", "lock:lw",
                                                                      "lock:rslock",
                                                                      "walrus-lock"]
        keys += ["lock:it's \"quoted\" $HOME `x` & spaces", "lock:" + "long-" * 30]
        keys += ["-lock:dash", "lock:empty"]
        # a binary holder reads as the hex --holder-hex takes, not as U+FFFD
        out = self.show(cfg, "lock:rslock")
        self.assertRegex(out, r"(?m)^holder +hex:00010227ff[0-9a-f]{30}$")
        self.assertNotIn("\ufffd", out)
        p = subprocess.run([lt.LOCKCTL, "-c", cfg, "--agent", "off", "list"],
                           stdout=subprocess.PIPE, env=env_cols(200), timeout=30)
        row = [ln for ln in p.stdout.decode().split("\n") if ln.startswith("walrus-lock ")]
        self.assertIn(" hex:00", row[0])
        lines = {}
        for k in keys:
            with self.subTest(key=k):
                lines[k] = self.assert_pastes(cfg, k)
        self.assertIn("--holder-hex", lines["lock:rslock"])
        self.assertIn("--holder-hex", lines["walrus-lock"])
        self.assertIn("\\\n", lines["lock:" + "long-" * 30])      # continued at 80
        self.assert_pastes(cfg, b"lock:bin\xff\x01key", escaped=True)

    def test_release_line_keeps_target_and_wide_is_one_line(self):
        path = h._mkdtemp("lw-paste-")
        cfg = os.path.join(path, "two targets.ini")
        with open(cfg, "w") as f:
            f.write(h.config_text(h.free_port(), [("first", "redis://127.0.0.1:1"),
                                                  ("main", self.rs.url)],
                                  patterns="lock:*", leak_grace="1s", max_hold="1h"))
        self.c.set("lock:t", "tok-t", px=600000)
        out = self.show(cfg, "lock:t", cols=200)
        block = release_blocks(out)[0]
        self.assertIn("'%s'" % cfg, block)              # quoted: it has a space
        self.assertIn("-t main", block)
        rc, o, e = paste(block)
        self.assertEqual(rc, 0, e)
        self.assertFalse(self.c.exists("lock:t"))
        # lockctl and -c given relative to the working directory: the line
        # names them absolute, and pastes in a terminal elsewhere
        self.c.set("lock:t", "tok-t", px=600000)
        p = subprocess.run([os.path.relpath(lt.LOCKCTL, path), "-c", "./two targets.ini",
                            "-t", "main", "show", "lock:t"], cwd=path, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           env=env_cols(200), timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        block = release_blocks(p.stdout.decode())[0]
        self.assertIn("'%s'" % os.path.realpath(cfg), block)
        self.assertTrue(block.startswith("/"), block)
        rc, o, e = paste(block, cwd="/")
        self.assertEqual(rc, 0, e)
        self.assertFalse(self.c.exists("lock:t"))
        # -o wide: nothing continued
        self.c.set("lock:" + "w" * 150, "tok-" + "h" * 100, px=600000)
        out = self.show(cfg, "lock:" + "w" * 150, cols=80, extra=["-o", "wide"])
        block = release_blocks(out)[0]
        self.assertNotIn("\n", block)
        self.assertIn("w" * 150, out.split("\n")[1])

    def test_an_option_keeps_its_value_on_its_line(self):
        """Wherever the terminal width puts the break, --holder and its
        value are on one line (and the line still pastes)."""
        cfg = self.cfg(patterns="lock:*")
        for cols in range(48, 121):
            self.c.set("lock:o", "tok-%d" % cols, px=600000)
            out = self.show(cfg, "lock:o", cols=cols)
            block = release_blocks(out)[0]
            with self.subTest(cols=cols):
                self.assertTrue(any(ln.rstrip(" \\").endswith("--holder tok-%d" % cols)
                                    or "--holder tok-%d " % cols in ln
                                    for ln in block.split("\n")), block)
        rc, o, e = paste(block, env=env_cols(120))
        self.assertEqual(rc, 0, e)
        self.assertFalse(self.c.exists("lock:o"))

    # -- widths ------------------------------------------------------------------

    def test_80_and_200_columns(self):
        cfg = self.cfg(patterns="lock:*", leak_grace="1s", max_hold="2s",
                       max_reentrancy="2")
        self.c.hset("lock:orders:42", "%s:57" % lt.UUID, "5")        # reentrant_high
        self.c.set("lock:payments:settlement:2026-12-02:batch-000017", "tok-" + "x" * 40)
        self.c.set("lock:short", "tok", px=600000)
        time.sleep(4.5)                 # long and leaked (IDLETIME counts whole seconds,
                                        # and an age from it is one second less)
        # every state in the STATE column, at 200 where it is not wrapped
        # (first: every read resets IDLETIME on Redis < 7.2, and the ages
        # here are IDLETIME's)
        p = subprocess.run([lt.LOCKCTL, "-c", cfg, "list", "--state", "long"],
                           stdout=subprocess.PIPE, env=env_cols(200), timeout=30)
        row = [ln for ln in p.stdout.decode().split("\n") if ln.startswith("lock:orders:42")]
        self.assertTrue(row, p.stdout)
        self.assertIn("leaked, long, reentrant_high", row[0])
        for cols in (80, 200):
            with self.subTest(cols=cols):
                p = subprocess.run([lt.LOCKCTL, "-c", cfg, "--agent", "off", "list"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=env_cols(cols), timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)
                out = p.stdout.decode()
                self.assert_fits(out, cols)
                body = [ln for ln in out.split("\n") if not ln.startswith("lock:")]
                self.assertFalse(any(ELLIPSIS in ln for ln in body), out)
                self.assertIn("start the agent", out.replace("\n  ", " "))
                if cols == 200:         # room to spare: the holder whole
                    self.assertIn("tok-" + "x" * 40, out)
                # no state word broken over two lines: the STATE cells of
                # lock:orders:42's row (and its continuation lines) read
                # whole words
                lines = out.split("\n")
                at = [i for i, ln in enumerate(lines) if ln.startswith("lock:orders:42")][0]
                col = lines[0].index("STATE")
                cell = lines[at][col:]
                for ln in lines[at + 1:]:
                    if ln[:col].strip():
                        break
                    cell += " " + ln[col:]
                words = cell.replace(",", " ").split()
                self.assertIn("reentrant_high", words, out)
                self.assertTrue(set(words) <= {"leaked", "leaked?", "long", "reentrant_high"},
                                out)
                out = self.show(cfg, "lock:payments:settlement:2026-12-02:batch-000017", cols)
                self.assertNotIn(ELLIPSIS, out)
                self.assertIn("lock:payments:settlement:2026-12-02:batch-000017", out)
        # -o wide: the whole holder, even at 80
        p = subprocess.run([lt.LOCKCTL, "-c", cfg, "-o", "wide", "list"],
                           stdout=subprocess.PIPE, env=env_cols(80), timeout=30)
        self.assertIn(b"tok-" + b"x" * 40, p.stdout)
        # COLUMNS set explicitly keeps fitting, even to a pipe; the cut cells
        # are counted in one footer line that names -o wide
        p = subprocess.run([lt.LOCKCTL, "-c", cfg, "--agent", "off", "list"],
                           stdout=subprocess.PIPE, env=env_cols(60), timeout=30)
        out = p.stdout.decode()
        self.assert_fits(out, 60)
        cut = sum(ln.count(ELLIPSIS) for ln in out.split("\n") if ln.startswith("lock:"))
        self.assertGreater(cut, 0, out)
        foot = [ln for ln in out.split("\n") if "cut in the middle" in ln]
        self.assertEqual(len(foot), 1, out)
        self.assertIn("%d cell%s cut in the middle to fit 60 columns:"
                      % (cut, "" if cut == 1 else "s"), foot[0])
        self.assertRegex(out.replace("\n  ", " "), r"-o wide shows (it|them) whole")
        # a pipe without COLUMNS (lockctl list | grep, a ticket) cuts nothing,
        # as -o wide: every key and holder whole, and so no such footer
        env = dict(os.environ)
        env.pop("COLUMNS", None)
        p = subprocess.run([lt.LOCKCTL, "-c", cfg, "list"], stdout=subprocess.PIPE,
                           env=env, timeout=30)
        out = p.stdout.decode()
        self.assertNotIn(ELLIPSIS, out)
        self.assertNotIn("cut in the middle", out)
        self.assertIn("tok-" + "x" * 40, out)
        self.assertIn("lock:payments:settlement:2026-12-02:batch-000017", out)
        # nor with -o wide at 80
        p = subprocess.run([lt.LOCKCTL, "-c", cfg, "-o", "wide", "list"],
                           stdout=subprocess.PIPE, env=env_cols(80), timeout=30)
        self.assertNotIn(b"cut in the middle", p.stdout)

    def released_at_80(self, cfg, key, holder, *extra):
        """release's stdout at COLUMNS=80 (exit 0), checked to fit, uncut."""
        p = subprocess.run([lt.LOCKCTL, "-c", cfg, "--agent", "off", "release", key,
                            "--holder", holder] + list(extra), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env_cols(80), timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.decode()
        self.assert_fits(out, 80)
        self.assertNotIn(ELLIPSIS, out)
        return out

    def test_prompt_and_outcome_show_key_and_holder_whole(self):
        """The trial's 74-character key and 60-character holder at an
        80-column terminal: the prompt and the outcome wrap, never cut."""
        cfg = self.cfg(patterns="lock:*")
        key = "lock:tenant:acme-corporation-us-east-1:invoice-batch:2026-12-05:run-000017"
        holder = "worker-12.prod.us-east-1.compute.internal:31337:f00dfeedcafe"
        self.c.set(key, holder, px=600000)
        out = self.released_at_80(cfg, key, holder, "--dry-run")
        self.assertIn(key, out.split("\n")[0] + out.split("\n")[1])
        rc, o, e = lt.at_terminal([lt.LOCKCTL, "-c", cfg, "--agent", "off", "release", key,
                                   "--holder", holder], b"y\n", env=env_cols(80))
        self.assertEqual(rc, 0, e)
        err, out = e.decode(), o.decode()
        self.assertIn(b"[y/N]", e)
        for text in (err, out):
            self.assert_fits(text, 80)
            self.assertNotIn(ELLIPSIS, text)
            self.assertTrue(any(key in ln for ln in text.split("\n")), text)  # whole
        self.assertIn("  holder " + holder, err)
        self.assertFalse(self.c.exists(key))
        # a key wider than the terminal wraps onto more lines, whole
        key = "lock:" + "z" * 150
        self.c.set(key, holder, px=600000)
        out = self.released_at_80(cfg, key, holder, "--yes")
        self.assertEqual(out.count("z"), 150, out)

    def test_release_outcome_worded_per_format(self):
        """A plain (SET NX) lock has no wake-up: neither the prompt nor the
        outcome mentions waiters, and the outcome says the key went once; a
        Redisson lock's and a python-redis-lock's do mention them."""
        cfg = self.cfg(patterns="lock:*")
        self.c.set("lock:plain", "tok-p", px=600000)
        rc, o, e = lt.at_terminal([lt.LOCKCTL, "-c", cfg, "--agent", "off", "release",
                                   "lock:plain", "--holder", "tok-p"], b"y\n",
                                  env=env_cols(200))
        self.assertEqual(rc, 0, e)
        out, err = o.decode(), e.decode()
        self.assertNotIn("wake", err)
        self.assertNotIn("waiter", out)
        self.assertIn("released: the key was deleted, no holder being left (plain)", out)
        self.assertEqual(out.count("deleted"), 1, out)
        self.assertEqual(out.count("no holder"), 1, out)
        self.c.hset("lock:rs", "%s:1" % lt.UUID, "1")
        self.c.pexpire("lock:rs", 600000)
        rc, o, e = lt.at_terminal([lt.LOCKCTL, "-c", cfg, "--agent", "off", "release",
                                   "lock:rs", "--holder", "%s:1" % lt.UUID], b"y\n",
                                  env=env_cols(200))
        self.assertEqual(rc, 0, e)
        self.assertIn(b"wake its waiters?", e)
        self.assertIn(b"(redisson), and its waiters woken", o)
        # python-redis-lock wakes through its signal list, not a channel:
        # its row's release_wakes column says so, where it is declared; and
        # undeclared it is a guess, released as plain: then the prompt
        # promises what that row does, not what python-redis-lock's would
        tok = "QUJDREVGR0hJSktMTU5PUFFS"
        for declared in (True, False):
            cfg = self.cfg(patterns="lock:*", target_extra={
                "format_patterns": "lock:pyr=python-redis-lock"} if declared else None)
            self.c.delete("lock-signal:pyr")
            self.c.set("lock:pyr", tok, px=600000)
            rc, o, e = lt.at_terminal([lt.LOCKCTL, "-c", cfg, "--agent", "off", "release",
                                       "lock:pyr", "--holder", tok], b"y\n",
                                      env=env_cols(200))
            self.assertEqual(rc, 0, e)
            if declared:
                self.assertIn(b"wake its waiters?", e)
                self.assertIn(b"(python-redis-lock), and its waiters woken", o)
                self.assertEqual(self.c.lrange("lock-signal:pyr", 0, -1), [b"1"])
            else:
                self.assertNotIn(b"wake", e)
                self.assertIn(b"no holder being left (plain)\n", o)

    def test_pipe_keeps_keys_whole(self):
        """The trial's pipe: two keys that differ only in their middle are two
        rows a grep tells apart, whole, and a holder pastes into a ticket."""
        cfg = self.cfg(patterns="lock:*")
        keys = ["lock:tenant:acme-corporation-%s-1:invoice-batch:2026-12-05:run-000017" % r
                for r in ("eu-west", "us-east")]
        holder = "worker-12.prod.us-east-1.compute.internal:31337:f00dfeedcafe"
        for k in keys:
            self.c.set(k, holder, px=600000)
        env = dict(os.environ)
        env.pop("COLUMNS", None)
        p = subprocess.run("%s -c '%s' --agent off list | grep invoice-batch" % (lt.LOCKCTL, cfg),
                           shell=True, stdout=subprocess.PIPE, env=env, timeout=30)
        self.assertEqual(p.returncode, 0, p.stdout)
        rows = p.stdout.decode().split("\n")[:-1]
        self.assertEqual(len(rows), 2, rows)
        self.assertEqual(sorted(r.split()[0] for r in rows), keys)
        self.assertTrue(all(holder in r for r in rows), rows)

    # -- next steps --------------------------------------------------------------

    def test_wrong_holder_refused_before_the_prompt(self):
        cfg = self.cfg(patterns="lock:*")
        self.c.set("lock:w", "tok-right", px=600000)
        rc, o, e = paste(" ".join([lt.LOCKCTL, "-c", cfg, "release", "lock:w", "--holder",
                                   "tok-wrong"]), answer=b"y\n")
        self.assertEqual(rc, 1, e)
        self.assertNotIn(b"[y/N]", e)
        self.assertIn(b"refused before asking", e)
        self.assertIn(b"held by tok-right", e)
        self.assertNotIn(b"changed hands", e)
        line = commands(e.decode())[0]
        self.assertIn("--holder tok-right", line)
        self.assertEqual(self.c.get("lock:w"), b"tok-right")
        self.assertEqual(self.c.xlen("lockwatch:audit") if self.c.exists("lockwatch:audit")
                         else 0, 0)
        rc, o, e = paste(line)
        self.assertEqual(rc, 0, e)
        self.assertFalse(self.c.exists("lock:w"))
        # --yes: the script refuses (audited), and the next step is named
        self.c.set("lock:w", "tok-right")
        # at an 80-column terminal the refusal (300 columns as one line) wraps
        rc, o, e = paste(" ".join([lt.LOCKCTL, "-c", cfg, "release", "lock:w", "--holder",
                                   "tok-wrong", "--yes"]), env=env_cols(80))
        self.assertEqual(rc, 1, e)
        text = e.decode()
        self.assert_fits(text.replace("\r", ""), 80)
        self.assertIn("holder_changed", text)
        p = lt.run(["release", "lock:w", "--holder", "tok-wrong", "--yes"], cfg)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"held by tok-right", p.stderr)

    def test_holder_past_the_read_cap_is_still_asked(self):
        # 100 readers: lockctl reads 64 fields; one it did not see is not
        # "wrong", the script checks every field
        cfg = self.cfg(patterns="lock:*")
        fields = {"mode": "read"}
        fields.update({"%s:%d" % (lt.UUID, 100 + i): "1" for i in range(100)})
        self.c.hset("lock:many", mapping=fields)
        self.c.pexpire("lock:many", 600000)
        seen = set(x["id"] for x in lt.run_json(self, ["show", "lock:many"], cfg)["holders"])
        unseen = [f for f in fields if f != "mode" and f not in seen]
        self.assertTrue(unseen)
        rc, o, e = paste(" ".join([lt.LOCKCTL, "-c", cfg, "release", "lock:many", "--holder",
                                   unseen[0]]), answer=b"y\n")
        self.assertEqual(rc, 0, e)
        self.assertIn(b"[y/N]", e)
        self.assertFalse(self.c.hexists("lock:many", unseen[0]))
        self.assertEqual(self.c.hlen("lock:many"), 100)

    def test_agent_down_ages_unknown_and_if_leaked_next_step(self):
        cfg = self.cfg(patterns="lock:*", leak_grace="1s")
        self.c.set("lock:nottl", "tok-n")
        self.c.get("lock:nottl")                  # what a scan does: IDLETIME 0
        out = self.show(cfg, "lock:nottl", 200)
        age = [ln for ln in out.split("\n") if ln.startswith("age ")][0]
        self.assertIn("unknown", age)
        self.assertNotIn(">= 0ms", out)
        self.assertIn("lower bound", age)
        p = lt.run(["release", "lock:nottl", "--holder", "tok-n", "--if-leaked", "--yes"], cfg)
        self.assertEqual(p.returncode, 1)
        err = p.stderr.decode()
        self.assertIn("not_leaked", err)
        self.assertIn("start lockwatchd if it is down", err.replace("\n  ", " "))
        cmds = commands(err)
        self.assertEqual(len(cmds), 2, err)
        self.assertIn(" expire ", cmds[0])
        self.assertIn("--ttl 30s", cmds[0])
        rc, o, e = paste(cmds[0])
        self.assertEqual(rc, 0, e)
        self.assertGreater(self.c.pttl("lock:nottl"), 20000)
        doc = lt.run_json(self, ["release", "lock:other", "--holder", "x", "--if-leaked",
                                 "--yes"], cfg, rc=1)
        self.assertTrue(doc["outcome"], doc)

    # -- JSON errors, messages, config note -------------------------------------

    def test_json_errors(self):
        cfg = self.cfg(patterns="lock:*")
        cases = [
            (["list", "--state", "bogus"], 2),
            (["show"], 2),
            (["show", "lock:none"], 1),
            (["release", "lock:x"], 2),
            (["expire", "lock:x", "--holder", "h"], 2),
            (["audit", "--limit", "0"], 2),
            (["-o", "bogus", "list"], 2),
            (["nosuchcommand"], 2),
        ]
        for args, rc in cases:
            with self.subTest(args=args):
                p = lt.run(args + ["--json"] if args[0] != "nosuchcommand"
                           else ["--json"] + args, cfg)
                self.assertEqual(p.returncode, rc, p.stderr)
                doc = json.loads(p.stdout)
                if "error" in doc:
                    self.assertTrue(doc["error"], doc)
                    self.assertTrue(doc["hint"], doc)
                    self.assertEqual(doc["exit"], rc)
        self.rs.stop()
        p = lt.run(["list", "--json"], cfg)
        self.assertEqual(p.returncode, 3)
        doc = json.loads(p.stdout)
        self.assertIn("127.0.0.1", doc["error"])
        self.assertEqual(doc["exit"], 3)

    def test_unsolicited_reply_is_a_protocol_error(self):
        self.c.set("lock:p", "tok-p", px=600000)
        proxy = InjectingProxy(self.rs.port)
        self.addCleanup(proxy.close)
        cfg = lt.write_config(url="redis://127.0.0.1:%d" % proxy.port, patterns="lock:*")
        p = lt.run(["show", "lock:p", "--agent", "off"], cfg)
        self.assertEqual(p.returncode, 3, (p.stdout, p.stderr))
        self.assertIn(b"protocol error", p.stderr)
        self.assertNotIn(b"no key", p.stdout + p.stderr)

    def test_no_config_note(self):
        env = dict(os.environ, COLUMNS="200")
        if os.path.exists("/etc/lockwatch/lockwatch.ini"):
            self.skipTest("skipped: /etc/lockwatch/lockwatch.ini exists here")
        self.c.set("lock:n", "tok", px=600000)
        base = [lt.LOCKCTL, "--url", self.rs.url, "--agent", "off"]
        p = subprocess.run(base + ["list", "--json"], capture_output=True, env=env, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.count(b"note: no config file"), 1, p.stderr)
        json.loads(p.stdout)                       # stdout stays one document
        # wrapped at the width, as every sentence (it is 173 columns)
        p = subprocess.run(base + ["list"], capture_output=True, env=env_cols(80), timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        err = p.stderr.decode()
        self.assert_fits(err, 80)
        self.assertIn("lockctl: note: no config file", err)
        self.assertIn("give -c FILE for yours", err.replace("\n  ", " "))
        p = subprocess.run(base + ["-q", "list"], capture_output=True, env=env, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(b"note:", p.stderr)
        # a command that asks only the agent, given --agent, needs no target:
        # no note about one (the agent here is a closed port: exit 3)
        for cmd in ("classes", "deadlocks", "events", "alerts"):
            p = subprocess.run([lt.LOCKCTL, "--agent", "http://127.0.0.1:%d" % h.free_port(),
                                cmd], capture_output=True, env=env, timeout=30)
            self.assertEqual(p.returncode, 3, (cmd, p.stderr))
            self.assertNotIn(b"note: no config file", p.stderr, cmd)
            # the hint --json's error carries, in text too
            self.assertIn(b"\nhint: ", p.stderr, cmd)
            if cmd == "deadlocks":
                self.assertIn(b"hint: only the agent knows who waits for whom: start "
                              b"lockwatchd", p.stderr)


if __name__ == "__main__":
    h.main()
