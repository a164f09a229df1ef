# SPDX-License-Identifier: BSD-3-Clause
"""A misbehaving Redis for the tests of what a real redis-server cannot be
made to do: answer one byte every half second, never end a SCAN, or stream
a reply sized to exhaust the client's memory.

FakeRedis(mode, on=...) listens on a free loopback port and answers each
command it reads (RESP arrays, as hiredis sends them): the commands named
in `on` (upper case; None: every command) get the mode's misbehaviour, the
others a plausible harmless answer (+OK, :0, an empty SCAN page).  Modes:

  drip         a bulk string header, then one byte every DRIP_S seconds
  endless      SCAN answers cursor "1" with no keys, for ever
  huge_array   "*2000000000", then ":1" elements, STREAM_MAX bytes in all
  huge_bulk    "$2000000000", then STREAM_MAX bytes of "a"

Everything is bounded in time and size: each connection gives up after
LIFETIME_S, a stream stops at STREAM_MAX bytes, and stop() closes all.
"""

import socket
import threading
import time

import harness as h

DRIP_S = 0.5
STREAM_MAX = 128 << 20
LIFETIME_S = 180


class FakeRedis:

    def __init__(self, mode, on=None):
        self.mode = mode
        self.on = set(on) if on is not None else None
        self.port = h.free_port()
        self.url = "redis://127.0.0.1:%d/0" % self.port
        self.sent = 0                   # misbehaving bytes sent, all connections
        self.connections = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._conns = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", self.port))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    # -- lifecycle
    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            for c in self._conns:
                try:
                    c.close()
                except OSError:
                    pass
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _accept(self):
        while not self._stop.is_set():
            try:
                c, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self._lock:
                self._conns.append(c)
                self.connections += 1
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    # -- protocol
    def _commands(self, c, buf):
        """Yield each command (list of bytes) read from c."""
        end = time.monotonic() + LIFETIME_S
        c.settimeout(0.2)
        while not self._stop.is_set() and time.monotonic() < end:
            while True:
                cmd, buf = _parse(buf)
                if cmd is None:
                    break
                yield cmd
            try:
                data = c.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                return
            buf += data

    def _serve(self, c):
        try:
            for cmd in self._commands(c, b""):
                name = cmd[0].upper().decode("latin-1") if cmd else ""
                if self.mode == "endless":
                    # SCAN never comes back to cursor 0; the rest as usual
                    c.sendall(b"*2\r\n$1\r\n1\r\n*0\r\n" if name == "SCAN"
                              else _harmless(name))
                    continue
                if self.on is None or name in self.on:
                    self._misbehave(c, name)
                    return
                c.sendall(_harmless(name))
        except OSError:
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass

    def _count(self, n):
        with self._lock:
            self.sent += n

    def _alive(self, t0):
        return not self._stop.is_set() and time.monotonic() - t0 < LIFETIME_S

    def _misbehave(self, c, name):
        t0 = time.monotonic()
        if self.mode == "drip":
            c.sendall(b"$100000\r\n")
            while self._alive(t0):
                c.sendall(b"a")
                self._count(1)
                time.sleep(DRIP_S)
        elif self.mode in ("huge_array", "huge_bulk"):
            if self.mode == "huge_array":
                head, unit = b"*2000000000\r\n", b":1\r\n" * 16384
            else:
                head, unit = b"$2000000000\r\n", b"a" * 65536
            c.sendall(head)
            sent = 0
            c.settimeout(5)
            while sent < STREAM_MAX and self._alive(t0):
                c.sendall(unit)
                sent += len(unit)
                self._count(len(unit))
            # then silence until the client gives up
            while self._alive(t0):
                time.sleep(0.2)
        else:
            raise ValueError(self.mode)


def _harmless(name):
    if name == "SCAN":
        return b"*2\r\n$1\r\n0\r\n*0\r\n"
    if name in ("PTTL", "OBJECT", "HLEN", "ZCARD", "EXISTS", "LLEN"):
        return b":-2\r\n"
    if name == "TYPE":
        return b"+none\r\n"
    if name == "PUBSUB":
        return b"*0\r\n"
    if name == "CONFIG":
        return b"*0\r\n"
    if name == "PING":
        return b"+PONG\r\n"
    return b"+OK\r\n"


def _parse(buf):
    """One RESP array of bulk strings from buf -> (list, rest), or (None, buf)."""
    if not buf.startswith(b"*"):
        if b"\r\n" in buf:      # an inline command
            line, rest = buf.split(b"\r\n", 1)
            return line.split(), rest
        return None, buf
    i = buf.find(b"\r\n")
    if i < 0:
        return None, buf
    n = int(buf[1:i])
    pos = i + 2
    out = []
    for _ in range(n):
        j = buf.find(b"\r\n", pos)
        if j < 0:
            return None, buf
        ln = int(buf[pos + 1:j])
        start = j + 2
        if len(buf) < start + ln + 2:
            return None, buf
        out.append(buf[start:start + ln])
        pos = start + ln + 2
    return out, buf[pos:]
