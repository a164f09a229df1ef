# SPDX-License-Identifier: BSD-3-Clause
"""The lw1 line protocol on the wire (docs/line-protocol.md): percent-encoding
of keys, owners and holder ids, the text of each line, packing lines into
datagrams of at most 1432 bytes, and the `lw1 mac` signature.

Pure functions, no I/O: the unit tests check them against the protocol's test
vector, and the sender thread (_sender.py) is their only other caller.
"""

import hashlib
import hmac

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


def pct(v):
    """v (str, bytes or anything str() takes) percent-encoded for a field."""
    raw = to_bytes(v)
    if all(0x21 <= b <= 0x7E and b != 0x25 for b in raw):
        return raw
    return b"".join(_TABLE[b] for b in raw)


def holder_field(v):
    """A holder id: `-` when not known, an id that really is `-` as %2D."""
    if v is None:
        return b"-"
    raw = to_bytes(v)
    if raw == b"-":
        return b"%2D"
    return pct(raw) if raw else b"-"


def us(v):
    """Microseconds as the protocol's decimal: clamped to 0..2^53."""
    v = int(v)
    if v < 0:
        return b"0"
    if v > 9007199254740992:
        v = 9007199254740992
    return b"%d" % v


def line(event, process):
    """The text of one event tuple (see _sender.Reporter.put), without the
    terminator.  process is the already encoded `<process>` part."""
    kind = event[0]
    if kind == "wait":
        _, key, t, outcome = event
        return b"lw1 wait %s %s %s" % (pct(key), us(t), outcome.encode())
    if kind == "hold":
        _, key, t, party, holder = event
        return b"lw1 hold %s %s %s%s %s" % (pct(key), us(t), process, pct(party),
                                             holder_field(holder))
    if kind == "waiting":
        _, key, party, holder, phase = event
        return b"lw1 waiting %s %s%s %s %s" % (pct(key), process, pct(party),
                                               holder_field(holder), phase.encode())
    if kind == "lost":
        _, key, party, holder, held, overrun, reason = event
        return b"lw1 lost %s %s%s %s %s %s %s" % (
            pct(key), process, pct(party), holder_field(holder), us(held),
            b"-" if overrun is None else us(overrun), reason.encode())
    raise ValueError("unknown event %r" % (kind,))


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
