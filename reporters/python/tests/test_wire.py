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
        owner = _wire.owner_prefix("web-1:4242")
        self.assertEqual(owner, b"web-1:4242/")
        ln = _wire.line(("waiting", "lock:order:1001", 7,
                         b"lw1:web-1:4242:7:1767225599000:00112233aabbccdd", "start"),
                        b"web-1%3A4242%2F")
        self.assertEqual(ln + b"\n", VECTOR_BODY.split(b"\n")[0] + b"\n")
        self.assertEqual(_wire.line(("wait", "lock:order:1001", 1500, "ok"), owner),
                         b"lw1 wait lock:order:1001 1500 ok")

    def test_pct(self):
        self.assertEqual(_wire.pct("lock:a b%c"), b"lock:a%20b%25c")
        self.assertEqual(_wire.pct("k\u00e9"), b"k%C3%A9")
        self.assertEqual(_wire.pct(b"\x00\x7f~!"), b"%00%7F~!")
        self.assertEqual(_wire.holder_field(None), b"-")
        self.assertEqual(_wire.holder_field("-"), b"%2D")
        self.assertEqual(_wire.holder_field(b"abc"), b"abc")

    def test_lines(self):
        p = b"host:1/"
        self.assertEqual(_wire.line(("hold", "k", 12, 3, b"tok"), p), b"lw1 hold k 12 host:1/3 tok")
        self.assertEqual(_wire.line(("lost", "k", 3, b"tok", 99, None, "renewal"), p),
                         b"lw1 lost k host:1/3 tok 99 - renewal")
        self.assertEqual(_wire.line(("lost", "k", 3, b"tok", 99, 5, "expired"), p),
                         b"lw1 lost k host:1/3 tok 99 5 expired")
        self.assertEqual(_wire.line(("wait", "k", -4, "timeout"), p), b"lw1 wait k 0 timeout")
        self.assertEqual(_wire.line(("wait", "k", 2 ** 60, "ok"), p),
                         b"lw1 wait k 9007199254740992 ok")

    def test_emit(self):
        out = []
        p = b"h:1/"
        _wire.emit(("acquired", "k", 3, b"tok", 15, "timeout", True), p, out)
        _wire.emit(("acquired", "k", 3, b"tok", 16, "ok", False), p, out)
        _wire.emit(("waiting", "k", 3, None, "start"), p, out)
        _wire.emit(("hold", "k", 12, 3, b"tok"), p, out)
        _wire.emit(("hold", "k", -1, 3, b"-"), p, out)
        _wire.emit(("lost", "k", 3, b"tok", 99, None, "renewal"), p, out)
        self.assertEqual(out, [b"lw1 waiting k h:1/3 tok timeout", b"lw1 wait k 15 timeout",
                               b"lw1 wait k 16 ok", b"lw1 waiting k h:1/3 - start",
                               b"lw1 hold k 12 h:1/3 tok", b"lw1 hold k 0 h:1/3 %2D",
                               b"lw1 lost k h:1/3 tok 99 - renewal"])
        _wire.emit(("hold", "k", 1, 3, b"tok"), b"other:2/", out)
        self.assertEqual(out[-1], b"lw1 hold k 1 other:2/3 tok")

    def test_pack(self):
        lines = [b"x" * 100] * 30
        dgs = _wire.pack(lines)
        self.assertTrue(all(len(d) <= 1432 for d in dgs))
        self.assertEqual(sum(d.count(b"\n") for d in dgs), 30)
        self.assertEqual(len(dgs[0]), 14 * 101)
        # signed: the budget leaves room for the mac line
        budget = _wire.MAX_DATAGRAM - _wire.MAC_LINE_LEN
        for d in _wire.pack(lines, budget):
            self.assertLessEqual(len(_wire.sign(b"k" * 16, d, 1767225600)), 1432)
        # a huge line goes alone
        dgs = _wire.pack([b"a", b"b" * 2000, b"c"])
        self.assertEqual([len(d) for d in dgs], [2, 2001, 2])

    def test_mac_matches_hmac(self):
        body = b"lw1 wait k 1 ok\n"
        d = _wire.sign(b"0123456789abcdef", body, 5)
        mac = hmac.new(b"0123456789abcdef", b"5\n" + body, hashlib.sha256).hexdigest()[:32]
        self.assertEqual(d, b"lw1 mac %s 5\n%s" % (mac.encode(), body))


if __name__ == "__main__":
    unittest.main()
