# SPDX-License-Identifier: BSD-3-Clause
"""The lw1 line protocol on the wire (docs/line-protocol.md): percent-encoding
of keys, owners and holder ids, the text of each line, packing lines into
datagrams of at most 1432 bytes, and the `lw1 mac` signature.

Pure functions, no I/O: the unit tests check them against the protocol's test
vector, and the sender thread (_sender.py) is their only other caller.
"""

import hashlib
import hmac
import re

MAX_DATAGRAM = 1432
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


_holders = {}


def holder_field(v):
    """A holder id: `-` when not known, an id that really is `-` as %2D.
    Each id appears in a few lines of one batch (waiting, hold): a per-batch
    cache (emptied by new_batch()) encodes it once."""
    if v is None:
        return b"-"
    h = _holders.get(v)
    if h is None:
        raw = to_bytes(v)
        if raw == b"-":
            h = b"%2D"
        else:
            h = _encode(raw) if raw else b"-"
        _holders[v] = h
    return h


def new_batch():
    _holders.clear()


def us(v):
    """Microseconds as the protocol's decimal: clamped to 0..2^53."""
    v = int(v)
    if v < 0:
        return b"0"
    if v > 9007199254740992:
        v = 9007199254740992
    return b"%d" % v


_heads = {}


def _head(verb, key, party, process):
    """The constant start of a line, `lw1 <verb> <key> [<owner> ]`, cached
    per (verb, key, party, process): a busy service repeats a few of them, and
    building them once keeps the sender thread's cost per line small."""
    k = (verb, key, party, process)
    h = _heads.get(k)
    if h is None:
        if party is None:
            h = b"lw1 %s %s " % (verb, pct(key))
        else:
            h = b"lw1 %s %s %s%s " % (verb, pct(key), process, pct(party))
        if len(_heads) >= _CACHE_MAX:
            _heads.clear()
        _heads[k] = h
    return h


_PHASES = {p: b" " + p.encode() for p in ("start", "ok", "timeout", "error",
                                          "renewal", "expired")}


def line(event, process):
    """The text of one event tuple (see _sender.Reporter.put), without the
    terminator.  process is the already encoded `<process>/` part."""
    kind = event[0]
    if kind == "wait":
        _, key, t, outcome = event
        return _head(b"wait", key, None, process) + us(t) + _PHASES[outcome]
    if kind == "waiting":
        _, key, party, holder, phase = event
        return _head(b"waiting", key, party, process) + holder_field(holder) + _PHASES[phase]
    if kind == "hold":
        _, key, t, party, holder = event
        return b"%s%s %s%s %s" % (_head(b"hold", key, None, process), us(t), process,
                                  pct(party), holder_field(holder))
    if kind == "lost":
        _, key, party, holder, held, overrun, reason = event
        return b"%s%s %s %s%s" % (
            _head(b"lost", key, party, process), holder_field(holder), us(held),
            b"-" if overrun is None else us(overrun), _PHASES[reason])
    raise ValueError("unknown event %r" % (kind,))


def emit(event, process, out):
    """Append the line(s) of one event to out: an `acquired` event (an
    acquire call that returned: key, party, holder, us, outcome, may_wait)
    is its `waiting <outcome>` line (when the call may wait) and its `wait`
    line, so the lock path queues one tuple for both.  The three events of
    every lock cycle (waiting start, acquired, hold) take the short paths
    here: this loop is the sender thread's whole cost."""
    kind = event[0]
    if kind == "acquired":
        _, key, party, holder, t, outcome, may_wait = event
        ph = _PHASES[outcome]
        if may_wait:
            out.append(_head(b"waiting", key, party, process) + holder_field(holder) + ph)
        out.append(_head(b"wait", key, None, process)
                   + (b"%d" % t if 0 <= t <= 9007199254740992 else us(t)) + ph)
    elif kind == "waiting":
        out.append(_head(b"waiting", event[1], event[2], process) + holder_field(event[3])
                   + _PHASES[event[4]])
    elif kind == "hold":
        _, key, t, party, holder = event
        out.append(_head(b"hold", key, None, process)
                   + (b"%d" % t if 0 <= t <= 9007199254740992 else us(t))
                   + _owner_mid(party, process) + holder_field(holder))
    else:
        out.append(line(event, process))


_owners = {}


def _owner_mid(party, process):
    """` <owner> ` of a hold line, cached per (party, process)."""
    k = (party, process)
    o = _owners.get(k)
    if o is None:
        o = b" %s%s " % (process, pct(party))
        if len(_owners) >= _CACHE_MAX:
            _owners.clear()
        _owners[k] = o
    return o


def owner_prefix(process):
    """The encoded `<process>/` every owner field starts with."""
    return pct(process) + b"/"


def sign(key, body, unix_seconds):
    """The signed datagram: `lw1 mac <32 hex> <unix>\\n` + body, the MAC over
    `<unix>\\n` + body (HMAC-SHA-256, first 16 bytes)."""
    signed = b"%d\n" % unix_seconds + body
    mac = hmac.new(key, signed, hashlib.sha256).hexdigest()[:32].encode()
    return b"lw1 mac " + mac + b" " + signed


def pack(lines, budget=MAX_DATAGRAM):
    """Group encoded lines (no terminator) into datagram bodies of at most
    budget bytes each, every line ended by \\n.  A line longer than the budget
    goes alone in its own datagram (the agent reads up to 8192 bytes)."""
    out = []
    cur = []
    size = 0
    for ln in lines:
        n = len(ln) + 1
        if cur and size + n > budget:
            out.append(b"\n".join(cur) + b"\n")
            cur = []
            size = 0
        cur.append(ln)
        size += n
    if cur:
        out.append(b"\n".join(cur) + b"\n")
    return out
