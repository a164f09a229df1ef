# SPDX-License-Identifier: BSD-3-Clause
"""The runner's side of the scenario protocol every interop client speaks
(tests/interop/README.md): one command a line to the client's stdin, one JSON
event a line back per command.  Also the layout recorder: what a client wrote
to Redis (every key: TYPE, PTTL, full content) and what it published or
subscribed to (MONITOR), as plain text.

Standard library plus Debian's python3-redis, like tests/integration/harness.py.
"""

import json
import os
import queue
import socket
import subprocess
import threading
import time

import redis


class ClientError(AssertionError):
    pass


class ClientProc:
    """One interop client process.  send(line) queues a command; expect()
    waits (bounded) for the event that answers it."""

    def __init__(self, name, argv, env=None, cwd=None, start_timeout=120):
        self.name = name
        self.argv = argv
        self.events = []            # every event, in arrival order
        self._new = threading.Condition()
        self.stderr_lines = []
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=cwd)
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        self.ready = self.expect(op="ready", timeout=start_timeout)

    def _read_out(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                ev = {"op": "noise", "info": line, "t": int(time.time() * 1000)}
            ev["_seen"] = time.monotonic()
            with self._new:
                self.events.append(ev)
                self._new.notify_all()
        with self._new:
            self.events.append({"op": "eof", "t": int(time.time() * 1000),
                                "_seen": time.monotonic()})
            self._new.notify_all()

    def _read_err(self):
        for raw in self.proc.stderr:
            self.stderr_lines.append(raw.decode("utf-8", "replace").rstrip())
            del self.stderr_lines[:-200]

    def send(self, line):
        """Queue one command line; returns the index the answer will be at or after."""
        with self._new:
            mark = len(self.events)
        self.proc.stdin.write((line.strip() + "\n").encode())
        self.proc.stdin.flush()
        return mark

    def expect(self, after=0, timeout=60, **match):
        """The first event at index >= after whose fields equal match (ok is
        not matched unless given).  Raises ClientError on timeout or exit."""
        deadline = time.monotonic() + timeout
        with self._new:
            i = after
            while True:
                while i < len(self.events):
                    ev = self.events[i]
                    if ev.get("op") == "eof":
                        raise ClientError("%s exited (%s) before %r; stderr:\n%s"
                                          % (self.name, self.proc.poll(), match,
                                             "\n".join(self.stderr_lines[-30:])))
                    if all(ev.get(k) == v for k, v in match.items()):
                        return ev
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ClientError("%s: no event %r within %.0fs; last events: %r; stderr:\n%s"
                                      % (self.name, match, timeout, self.events[-5:],
                                         "\n".join(self.stderr_lines[-30:])))
                self._new.wait(min(left, 0.5))

    def do(self, line, timeout=60, ok=True):
        """send() one command and wait for its answer; fails when ok differs."""
        w = line.split()
        mark = self.send(line)
        ev = self.expect(after=mark, timeout=timeout, actor=w[0], op=w[1], name=w[3])
        if ok is not None and ev.get("ok") != ok:
            raise ClientError("%s: %r answered %r" % (self.name, line, ev))
        return ev

    def pending(self, line):
        """send() a command that will block; returns a waiter to .result()."""
        w = line.split()
        mark = self.send(line)
        return _Pending(self, mark, w)

    def close(self, timeout=20):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)


class _Pending:
    def __init__(self, cp, mark, w):
        self.cp, self.mark, self.w = cp, mark, w

    def done(self):
        try:
            return self.cp.expect(after=self.mark, timeout=0, actor=self.w[0], op=self.w[1],
                                  name=self.w[3])
        except ClientError:
            return None

    def result(self, timeout=60):
        return self.cp.expect(after=self.mark, timeout=timeout, actor=self.w[0], op=self.w[1],
                              name=self.w[3])


# --------------------------------------------------------------------------
# layouts

def _show(v):
    if isinstance(v, bytes):
        try:
            s = v.decode("utf-8")
            if s.isprintable():
                return s
        except UnicodeDecodeError:
            pass
        return "0x" + v.hex()
    return str(v)


def dump_keys(r, match="*"):
    """Every key: name, TYPE, PTTL and full content, one block per key."""
    out = []
    for k in sorted(r.scan_iter(match=match, count=1000)):
        t = r.type(k).decode()
        pttl = r.pttl(k)
        head = "%s  TYPE=%s  PTTL=%s" % (_show(k), t, pttl)
        if t == "string":
            body = ["  value: %s" % _show(r.get(k))]
        elif t == "hash":
            body = ["  field %s = %s" % (_show(f), _show(v)) for f, v in sorted(r.hgetall(k).items())]
        elif t == "list":
            body = ["  [%d] %s" % (i, _show(v)) for i, v in enumerate(r.lrange(k, 0, -1))]
        elif t == "zset":
            body = ["  member %s score %s" % (_show(m), repr(s))
                    for m, s in r.zrange(k, 0, -1, withscores=True)]
        elif t == "set":
            body = ["  member %s" % _show(m) for m in sorted(r.smembers(k))]
        else:
            body = ["  (%s)" % t]
        out.append("\n".join([head] + body))
    return "\n".join(out) if out else "(no keys)"


class Monitor:
    """MONITOR on its own connection; keeps the lines that name pub/sub or
    key-writing commands (what a client publishes and subscribes to)."""

    KEEP = (b'"publish"', b'"spublish"', b'"subscribe"', b'"ssubscribe"', b'"psubscribe"',
            b'"unsubscribe"', b'"sunsubscribe"', b'"punsubscribe"')

    def __init__(self, port, everything=False, ignore=()):
        self.lines = []
        self.everything = everything
        self.ignore = [("127.0.0.1:%d]" % p).encode() for p in ignore]
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.s.sendall(b"MONITOR\r\n")
        self.s.settimeout(None)
        self._stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        buf = b""
        while not self._stop:
            try:
                chunk = self.s.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\r\n" in buf:
                line, buf = buf.split(b"\r\n", 1)
                low = line.lower()
                if any(i in line for i in self.ignore) or b'"monitor"' in low:
                    continue
                if self.everything or any(k in low for k in self.KEEP):
                    self.lines.append(line.decode("utf-8", "replace").lstrip("+"))

    def take(self):
        time.sleep(0.2)     # MONITOR lines trail the command by a moment
        got, self.lines = self.lines, []
        return got

    def close(self):
        self._stop = True
        try:
            self.s.close()
        except OSError:
            pass


class LayoutRecorder:
    """Writes <dir>/<client>-<version>.txt: after each step, every key and
    the pub/sub traffic since the step before."""

    def __init__(self, port, title):
        self.r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10,
                             single_connection_client=True)
        self.r.ping()
        me = self.r.connection._sock.getsockname()[1]
        self.mon = Monitor(port, everything=True, ignore=[me])
        self.parts = ["# %s" % title,
                      "# Recorded by tests/interop/runner.py --layouts against a real "
                      "redis-server %s." % self.r.info("server").get("redis_version"),
                      "# Per step: every key (TYPE, PTTL in ms, full content), then the "
                      "every command the clients sent (MONITOR) since the previous step.",
                      ""]

    def step(self, what):
        pub = self.mon.take()
        self.parts.append("## %s" % what)
        self.parts.append(dump_keys(self.r))
        chans = sorted(self.r.pubsub_channels())
        if chans:
            self.parts.append("-- PUBSUB CHANNELS / NUMSUB now:")
            for c, n in self.r.pubsub_numsub(*chans):
                self.parts.append("  %s  numsub=%d" % (_show(c), n))
        self.parts.append("-- commands since the previous step (MONITOR):")
        self.parts.extend("  " + l for l in pub) if pub else self.parts.append("  (none)")
        self.parts.append("")

    def note(self, text):
        self.parts.append(text)

    def write(self, path):
        self.mon.close()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(self.parts) + "\n")
        os.replace(path + ".tmp", path)
