# SPDX-License-Identifier: BSD-3-Clause
"""The lw1 line protocol on the wire (docs/line-protocol.md): percent-encoding
of keys, owners and holder ids, the text of each event's lines (Encoder)
and the `lw1 mac` signature.  The sender (_sender.py) packs the lines into
datagrams of at most MAX_DATAGRAM bytes (LOOPBACK_DATAGRAM when every
destination is a loopback address).

Pure functions, no I/O: the unit tests check them against the protocol's test
vector, and the sender thread (_sender.py) is their only other caller.
"""

import hashlib
import hmac
import re

MAX_DATAGRAM = 1432
# To a loopback address: the most the agent reads of one datagram
# (docs/line-protocol.md "Datagrams").
LOOPBACK_DATAGRAM = 8192
# "lw1 mac " + 32 hex + " " + unix seconds (10 digits until 2286) + "\n"
MAC_LINE_LEN = 8 + 32 + 1 + 10 + 1

_SAFE = bytes(range(0x21, 0x7F))


def _build_table():
    # One precomputed replacement per byte value: printable ASCII but '%'
    # stays, everything else becomes %XX (the agent decodes exactly that).
    t = []
    for b in range(256):
        if b in _SAFE and b != 0x25:
            t.append(bytes([b]))
        else:
            t.append(b"%%%02X" % b)
    return t


_TABLE = _build_table()


def to_bytes(v):
    if isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    return str(v).encode("utf-8", "surrogateescape")


_NEEDS_ESCAPE = re.compile(rb"[^\x21-\x24\x26-\x7e]")
_CACHE_MAX = 4096
_cache = {}


def _encode(raw):
    return raw if _NEEDS_ESCAPE.search(raw) is None else b"".join(_TABLE[b] for b in raw)


def pct(v):
    """v (str, bytes or anything str() takes) percent-encoded for a field.
    Keys and owners repeat, so results are cached (bounded: the cache is
    emptied when full); the check is one C-speed regex search."""
    try:
        return _cache[v]
    except (KeyError, TypeError):
        pass
    out = _encode(to_bytes(v))
    try:
        if len(_cache) >= _CACHE_MAX:
            _cache.clear()
        _cache[v] = out
    except TypeError:
        pass
    return out


def holder_field(v):
    """A holder id: `-` when not known, an id that really is `-` as %2D.
    Not cached: each id is new (one per acquire)."""
    if v is None:
        return b"-"
    raw = to_bytes(v)
    if raw == b"-":
        return b"%2D"
    return _encode(raw) if raw else b"-"


MAX_US = 9007199254740992


def us(v):
    """Microseconds as the protocol's decimal: clamped to 0..2^53."""
    v = int(v)
    if v < 0:
        return b"0"
    if v > MAX_US:
        v = MAX_US
    return b"%d" % v


def _clamp(t):
    return 0 if t < 0 else MAX_US


class Encoder:
    """The lines of one reporter's events (see below), with its `<process>/`
    owner prefix and per-reporter caches of the encoded keys and owners (a
    busy service repeats a few of each; bounded: emptied when full).  The
    sender thread is its only user: this is its whole cost per event.

    The events the lock path queues (times are time.monotonic_ns(); the
    differences are taken here, not on the lock path):
      ("ok", key, party, holder, t0, t1)      an acquire call that acquired:
          `wait <us> ok <owner> <holder>`, its wait and its `waiting ... ok`
          in one line (every acquire that acquired sends that waiting end)
      ("end", key, party, holder, t0, t1, outcome, started)   one that did
          not (outcome `timeout` or `error`): `wait` with owner and holder
          (its waiting end too) when it sent `waiting ... start` (started),
          else the 5-field `wait`
      ("start", key, party, holder)           `waiting ... start`
      ("hold", key, party, holder, t_acquired, t_released)
      ("lost", key, party, holder, held_us, overrun_us or None, reason)
      ("wait", key, us, outcome), ("waiting", key, party, holder, phase)
    A party is a thread ident (int), a str, or a negative int: an asyncio
    task, -id(task), written `task-<hex id>`.
    """

    def __init__(self, process):
        self.prefix = owner_prefix(process)
        self._keys = {}
        self._owners = {}

    def key(self, k):
        try:
            return self._keys[k]
        except KeyError:
            pass
        except TypeError:
            return pct(k)
        v = pct(k)
        if len(self._keys) >= _CACHE_MAX:
            self._keys.clear()
        self._keys[k] = v
        return v

    def owner(self, party):
        try:
            return self._owners[party]
        except KeyError:
            pass
        except TypeError:
            return self.prefix + pct(party)
        if party.__class__ is int and party < 0:
            v = self.prefix + b"task-%x" % -party
        else:
            v = self.prefix + pct(party)
        if len(self._owners) >= _CACHE_MAX:
            self._owners.clear()
        self._owners[party] = v
        return v

    def encode(self, ev):
        """The text of one event: one line, without the terminator.  The
        three events of every lock cycle (start, ok, hold) take the short
        paths, with the cache lookups inline."""
        kind = ev[0]
        if kind == "ok" or kind == "hold":
            _, key, party, holder, t0, t1 = ev
            try:
                k = self._keys[key]
                o = self._owners[party]
            except (KeyError, TypeError):
                k, o = self.key(key), self.owner(party)
            t = (t1 - t0) // 1000
            if not 0 <= t <= MAX_US:
                t = _clamp(t)
            if holder.__class__ is not bytes or not holder.isalnum():
                holder = holder_field(holder)
            if kind == "ok":
                return b"lw1 wait %s %d ok %s %s" % (k, t, o, holder)
            return b"lw1 hold %s %d %s %s" % (k, t, o, holder)
        if kind == "start":
            _, key, party, holder = ev
            return b"lw1 waiting %s %s %s start" % (self.key(key), self.owner(party),
                                                     holder_field(holder))
        if kind == "end":
            _, key, party, holder, t0, t1, outcome, started = ev
            w = self.line(("wait", key, (t1 - t0) // 1000, outcome))
            if not started:
                return w
            return b"%s %s %s" % (w, self.owner(party), holder_field(holder))
        return self.line(ev)

    def line(self, ev):
        """The text of one `wait`, `waiting` or `lost` event."""
        kind = ev[0]
        if kind == "wait":
            _, key, t, outcome = ev
            return b"lw1 wait %s %s %s" % (self.key(key), us(t), _word(outcome))
        if kind == "waiting":
            _, key, party, holder, phase = ev
            return b"lw1 waiting %s %s %s %s" % (self.key(key), self.owner(party),
                                                 holder_field(holder), _word(phase))
        if kind == "lost":
            _, key, party, holder, held, overrun, reason = ev
            return b"lw1 lost %s %s %s %s %s %s" % (
                self.key(key), self.owner(party), holder_field(holder), us(held),
                b"-" if overrun is None else us(overrun), _word(reason))
        raise ValueError("unknown event %r" % (kind,))


_WORDS = {w: w.encode() for w in ("start", "ok", "timeout", "error", "renewal", "expired")}


def _word(w):
    return _WORDS[w]


def owner_prefix(process):
    """The encoded `<process>/` every owner field starts with."""
    return pct(process) + b"/"


def sign(key, body, unix_seconds):
    """The signed datagram: `lw1 mac <32 hex> <unix>\\n` + body, the MAC over
    `<unix>\\n` + body (HMAC-SHA-256, first 16 bytes)."""
    signed = b"%d\n" % unix_seconds + body
    mac = hmac.new(key, signed, hashlib.sha256).hexdigest()[:32].encode()
    return b"lw1 mac " + mac + b" " + signed
