# SPDX-License-Identifier: BSD-3-Clause
"""lw1 encoding, batching and signing (no Redis, no network)."""

import hashlib
import hmac
import unittest

from lockwatch_reporter import _wire

VECTOR_KEY = b"lockwatch test key: not a secret"
VECTOR_BODY = (b"lw1 waiting lock:order:1001 web-1%3A4242%2F7 "
               b"lw1:web-1:4242:7:1767225599000:00112233aabbccdd start\n"
               b"lw1 wait lock:order:1001 1500 ok\n")


class Wire(unittest.TestCase):
    def test_vector(self):
        d = _wire.sign(VECTOR_KEY, VECTOR_BODY, 1767225600)
        self.assertEqual(d, b"lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225600\n" + VECTOR_BODY)
        self.assertEqual(len(d.split(b"\n", 1)[0]) + 1, _wire.MAC_LINE_LEN)

    def test_vector_lines(self):
        # the vector's lines as the encoder writes them
        self.assertEqual(_wire.owner_prefix("web-1:4242"), b"web-1:4242/")
        enc = _wire.Encoder("web-1")
        enc.prefix = b"web-1%3A4242%2F"   # the vector's owner, escaped as it is
        ln = enc.encode(("start", "lock:order:1001", 7,
                         b"lw1:web-1:4242:7:1767225599000:00112233aabbccdd"))
        self.assertEqual(ln + b"\n", VECTOR_BODY.split(b"\n")[0] + b"\n")
        self.assertEqual(enc.encode(("wait", "lock:order:1001", 1500, "ok")),
                         b"lw1 wait lock:order:1001 1500 ok")

    def test_pct(self):
        self.assertEqual(_wire.pct("lock:a b%c"), b"lock:a%20b%25c")
        self.assertEqual(_wire.pct("k\u00e9"), b"k%C3%A9")
        self.assertEqual(_wire.pct(b"\x00\x7f~!"), b"%00%7F~!")
        self.assertEqual(_wire.holder_field(None), b"-")
        self.assertEqual(_wire.holder_field("-"), b"%2D")
        self.assertEqual(_wire.holder_field(b"abc"), b"abc")

    def test_lines(self):
        e = _wire.Encoder("host:1")
        self.assertEqual(e.encode(("hold", "k", 3, b"tok", 1000, 13999)),
                         b"lw1 hold k 12 host:1/3 tok")
        self.assertEqual(e.encode(("lost", "k", 3, b"tok", 99, None, "renewal")),
                         b"lw1 lost k host:1/3 tok 99 - renewal")
        self.assertEqual(e.encode(("lost", "k", 3, b"tok", 99, 5, "expired")),
                         b"lw1 lost k host:1/3 tok 99 5 expired")
        self.assertEqual(e.encode(("wait", "k", -4, "timeout")), b"lw1 wait k 0 timeout")
        self.assertEqual(e.encode(("wait", "k", 2 ** 60, "ok")),
                         b"lw1 wait k 9007199254740992 ok")
        self.assertEqual(e.encode(("waiting", "k", 3, None, "start")),
                         b"lw1 waiting k host:1/3 - start")

    def test_acquire_events(self):
        # one queued event and one line per acquire call: the 7-field wait
        # (its waiting end too) for every one that acquired, and for one
        # that did not only after a start; else the 5-field wait
        e = _wire.Encoder("h:1")
        self.assertEqual(e.encode(("ok", "k", 3, b"tok", 1000, 16999)),
                         b"lw1 wait k 15 ok h:1/3 tok")
        self.assertEqual(e.encode(("end", "k", 3, b"tok", 0, 15000, "timeout", True)),
                         b"lw1 wait k 15 timeout h:1/3 tok")
        self.assertEqual(e.encode(("end", "k", 3, None, 0, 15000, "error", True)),
                         b"lw1 wait k 15 error h:1/3 -")
        self.assertEqual(e.encode(("end", "k", 3, None, 0, 15000, "error", False)),
                         b"lw1 wait k 15 error")
        # owner and holder encoded as in the waiting lines
        self.assertEqual(e.encode(("ok", "k k", "p q", "a b", 0, 1000)),
                         b"lw1 wait k%20k 1 ok h:1/p%20q a%20b")
        self.assertEqual(e.encode(("end", "k", -255, b"-", 0, 1000, "timeout", True)),
                         b"lw1 wait k 1 timeout h:1/task-ff %2D")
        self.assertEqual(e.encode(("ok", "k", 3, b"", 0, 1000)), b"lw1 wait k 1 ok h:1/3 -")
        self.assertEqual(e.encode(("start", "k", 3, b"tok")), b"lw1 waiting k h:1/3 tok start")
        # holder ids: hex tokens as they are, others escaped, `-` as %2D;
        # an asyncio task's party (-id) as task-<hex>
        self.assertEqual(e.encode(("hold", "k", -255, "a b+/=", 5, 4)),
                         b"lw1 hold k 0 h:1/task-ff a%20b+/=")
        self.assertEqual(e.encode(("hold", "k key", "p q", b"-", 0, 2 ** 80)),
                         b"lw1 hold k%20key 9007199254740992 h:1/p%20q %2D")
        self.assertRaises(ValueError, e.encode, ("what", "k"))

    def test_mac_matches_hmac(self):
        body = b"lw1 wait k 1 ok\n"
        d = _wire.sign(b"0123456789abcdef", body, 5)
        mac = hmac.new(b"0123456789abcdef", b"5\n" + body, hashlib.sha256).hexdigest()[:32]
        self.assertEqual(d, b"lw1 mac %s 5\n%s" % (mac.encode(), body))


if __name__ == "__main__":
    unittest.main()
