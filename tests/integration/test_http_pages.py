# SPDX-License-Identifier: BSD-3-Clause
# run-all: serial (/metrics must answer within 1 s and the RSS rise stay under 200 MB while twelve
#   slow readers pull 20 MB pages)
"""The lock list is paged and bounded: ?offset= and next_offset, the
8 MiB page cap, and what slow readers of the largest pages cost.

A throwaway redis-server holds 600 locks whose keys are 16 KiB each (well
within the agent's retention caps), so a page of every lock would be about
20 MB of JSON; lockwatchd watches it.

- paging: walking next_offset from offset 0 visits every lock exactly once,
  in worst-first order, whatever the limit; every page is at most 8 MiB
  (8,388,608 bytes), a full-limit page is cut before the cap at a lock
  boundary, and next_offset is null on the last page; a bad offset is a 400
  that says what to send;
- slow readers: twelve clients ask for the largest page and read it slowly
  (64 KiB every half second) for about 12 s.  The agent's RSS
  (/proc/PID/status) must rise by less than 200 MB above where it stood
  before, and /metrics must answer 200 within 1 s throughout.  With four
  more readers the budget of http_max_api_requests (16) is spent and the
  next API request is answered 503 with Retry-After, counted as busy;
  /metrics and the probes still answer.

Figures are printed (stderr) for the report.
"""

import json
import socket
import sys
import time

import harness as h

NLOCKS = 600
KEYLEN = 16 * 1024
PAGE_MAX = 8 * 1024 * 1024
READERS = 12


def key_of(i):
    return "lock:big:%04d:" % i + "k" * (KEYLEN - 14)


class SlowReader:
    """A GET of path whose answer is read 64 KiB at a time, when told."""

    def __init__(self, port, path):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: slow\r\n\r\n" % path).encode())
        self.got = b""

    def nibble(self):
        self.s.settimeout(5)
        chunk = self.s.recv(65536)
        self.got += chunk
        return chunk

    def status(self):
        line = self.got.split(b"\r\n", 1)[0].split()
        return int(line[1]) if len(line) >= 2 else None

    def close(self):
        self.s.close()


class Pages(h.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.redis = h.RedisServer()
        c = cls.redis.client()
        h.load(c, (("SET", key_of(i), "token-%d" % i, "PX", "600000") for i in range(NLOCKS)),
               chunk=100)
        cls.agent = h.Agent(cls.redis, scan_interval="1h")
        cls.agent.wait_for(lambda: cls.agent.get_json("/api/v1/locks?limit=1")[1]["total"]
                           == NLOCKS, timeout=60, desc="the first scan saw every lock")

    @classmethod
    def tearDownClass(cls):
        cls.agent.stop()
        cls.redis.stop()

    def walk(self, limit):
        """Every page from offset 0: [(body bytes, parsed)]."""
        pages, offset = [], 0
        while True:
            st, _, body = self.agent.get("/api/v1/locks?limit=%d&offset=%d" % (limit, offset),
                                         timeout=30)
            self.assertEqual(st, 200, body[:300])
            doc = json.loads(body)
            pages.append((body, doc))
            self.assertEqual(doc["offset"], offset)
            self.assertEqual(doc["count"], len(doc["locks"]))
            self.assertEqual(doc["total"], NLOCKS)
            if doc["next_offset"] is None:
                return pages
            self.assertEqual(doc["next_offset"], offset + doc["count"])
            offset = doc["next_offset"]
            self.assertLess(len(pages), NLOCKS + 1, "next_offset never ended")

    def check_once(self, pages):
        keys = [l["key"] for _, d in pages for l in d["locks"]]
        self.assertEqual(len(keys), NLOCKS)
        self.assertEqual(set(keys), {key_of(i) for i in range(NLOCKS)})
        # worst first across pages: the oldest holders first (first_seen
        # rather than age_seconds, which each page computes at its own time)
        seen = [l["first_seen"] for _, d in pages for l in d["locks"]]
        self.assertEqual(seen, sorted(seen))

    def test_pages_hold_every_lock_once_within_the_byte_cap(self):
        pages = self.walk(10000)
        sizes = [len(b) for b, _ in pages]
        sys.stderr.write("limit=10000: %d pages of %s bytes (cap %d), %s locks\n"
                         % (len(pages), sizes, PAGE_MAX, [d["count"] for _, d in pages]))
        self.assertGreaterEqual(len(pages), 3)
        for b, d in pages:
            self.assertLessEqual(len(b), PAGE_MAX)
        for b, d in pages[:-1]:
            # cut by bytes, not by the limit, and close to the cap: one more
            # lock would not have fitted
            self.assertLess(d["count"], 10000)
            self.assertGreater(len(b) + len(json.dumps(d["locks"][0], separators=(",", ":"))),
                               PAGE_MAX - 512)
        self.check_once(pages)
        self.check_once(self.walk(37))

    def test_a_bad_offset_says_how_to_page(self):
        for bad in ("-1", "x", "1e3", "2000000000"):
            st, doc = self.agent.get_json("/api/v1/locks?offset=" + bad)
            self.assertEqual(st, 400, bad)
            self.assertIn("next_offset", doc["error"])
        st, doc = self.agent.get_json("/api/v1/locks?offset=%d" % NLOCKS)
        self.assertEqual((st, doc["count"], doc["next_offset"]), (200, 0, None))
        # without offset: the first page, with the fields it always had
        st, doc = self.agent.get_json("/api/v1/locks")
        self.assertEqual(st, 200)
        for field in ("count", "total", "complete", "locks", "offset", "next_offset"):
            self.assertIn(field, doc)
        self.assertEqual((doc["count"], doc["offset"], doc["next_offset"]), (100, 0, 100))

    def test_slow_readers_of_the_largest_page(self):
        ag = self.agent
        pid = ag.proc.pid
        self.assertEqual(ag.get("/api/v1/locks?limit=10000", timeout=30)[0], 200)
        rss0 = h.vm_rss_mb(pid)
        path = "/api/v1/locks?limit=10000"
        readers = [SlowReader(ag.port, path) for _ in range(READERS)]
        extra = []
        try:
            probes, rss_max = [], rss0
            t_end = time.monotonic() + 12
            while time.monotonic() < t_end:
                for r in readers:
                    r.nibble()
                probes.append(h.timed_get(ag.port, "/metrics"))
                rss_max = max(rss_max, h.vm_rss_mb(pid))
                time.sleep(0.5)
            for r in readers:
                self.assertEqual(r.status(), 200)
                self.assertFalse(r.got.endswith(b"]}"), "a reader was not slow")
            ok = [t for st, t in probes if st == 200 and t <= 1.0]
            sys.stderr.write("%d slow readers of %s: RSS %.1f MB before, %.1f MB max "
                             "(+%.1f MB); /metrics %d/%d within 1 s, max %.3f s\n"
                             % (READERS, path, rss0, rss_max, rss_max - rss0, len(ok),
                                len(probes), max(t for _, t in probes)))
            if not h.sanitized():
                self.assertLess(rss_max - rss0, 200.0)
            self.assertEqual(len(ok), len(probes), probes)

            # four more fill the budget of 16; the next one is refused
            busy0 = h.msum(ag.metrics(), "lockwatch_http_rejected_total", reason="busy")
            extra = [SlowReader(ag.port, path) for _ in range(4)]
            for r in extra:
                r.nibble()
                self.assertEqual(r.status(), 200)
            st, headers, body = ag.get("/api/v1/locks?limit=1")
            self.assertEqual(st, 503, body[:200])
            self.assertEqual(headers.get("retry-after"), "1")
            self.assertIn("http_max_api_requests", json.loads(body)["error"])
            for p in ("/metrics", "/healthz", "/readyz"):
                self.assertEqual(ag.get(p)[0], 200, p)
            self.assertEqual(h.msum(ag.metrics(), "lockwatch_http_rejected_total",
                                    reason="busy"), busy0 + 1)
        finally:
            for r in readers + extra:
                r.close()
        ag.wait_for(lambda: ag.get("/api/v1/locks?limit=1")[0] == 200, timeout=10,
                    desc="the budget is given back when the readers go")


if __name__ == "__main__":
    h.main()
