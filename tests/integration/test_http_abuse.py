# SPDX-License-Identifier: BSD-3-Clause
# run-all: serial (probes must answer within 1 s and the agent's RSS stay under 100 MB while 300
#   slow clients and 1,000-connection bursts run; that load would also slow its neighbours)
# run-all: split (the two attacks run alone; the deadline and per-client tests, in parallel)
"""The HTTP server under abusive clients: slowloris, connection bursts,
the per-client limit and the request deadline.

A throwaway redis-server holds a few hundred locks; lockwatchd watches it
with its default HTTP limits (unless a test says otherwise).  The attackers
run in child processes (fork), so their socket loops never hold up the
probes' timing in this one:

- slowloris: 300 clients, each sending a request line and then one header
  line every 2 s, never finishing, reconnecting as soon as the agent drops
  it; together with 1,000-connection bursts of complete API requests every
  few seconds; once all from 127.0.0.1 like the probes, once from several
  loopback addresses that each stay under the per-client limit (the probes
  always from 127.0.0.1).  Meanwhile 30 probes each of /metrics, /healthz and /readyz
  (fresh connections, one at a time) must answer 200 within 1 s, at least
  29 of 30 each, and the agent's RSS (VmRSS of /proc/PID/status) must stay
  under 100 MB.  Every burst connection gets an HTTP answer (200, or 503
  with Retry-After, counted by reason), none a reset; the slow clients
  were really cut (lockwatch_http_request_timeouts_total) and none was
  answered;
- the request deadline: a client that keeps sending header lines (never
  idle) is closed once http_request_timeout has passed, without an answer;
  a complete request on a keep-alive connection is answered;
- the per-client limit: beyond http_max_connections_per_client the API
  answers 503 with Retry-After and says why, the probes still answer, and
  another client address is not affected.

Every figure measured is printed (stderr) for the report.
"""

import http.client
import json
import multiprocessing
import selectors
import socket
import sys
import time

import harness as h

SLOW_CLIENTS = 300
BURST = 1000
PROBES = 30
RUN_SECONDS = 24


# ---------------------------------------------------------------------------
# attackers (each in a child process)

def new_socket(sources, i):
    """A non-blocking socket bound to source address sources[i % len]."""
    s = socket.socket()
    s.bind((sources[i % len(sources)], 0))
    s.setblocking(False)
    return s


def slowloris(port, sources, n, interval, seconds, out):
    """n slow clients for `seconds`, spread over the source addresses: a
    request line, then one header line every `interval` seconds; reconnect
    when dropped.  Reports (connections made, drops seen, answers seen)."""
    sel = selectors.DefaultSelector()
    made = drops = answers = 0
    due = {}

    def connect():
        nonlocal made
        s = new_socket(sources, made)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        sel.register(s, selectors.EVENT_READ)
        due[s] = time.monotonic()
        made += 1

    def drop(s):
        sel.unregister(s)
        del due[s]
        s.close()

    end = time.monotonic() + seconds
    for _ in range(n):
        connect()
    sent_line = set()
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data:
                answers += 1
            drops += 1
            sent_line.discard(s)
            drop(s)
            connect()
        now = time.monotonic()
        for s, t in list(due.items()):
            if t > now:
                continue
            try:
                if s not in sent_line:
                    s.send(b"GET /api/v1/locks HTTP/1.1\r\nHost: slow\r\n")
                    sent_line.add(s)
                else:
                    s.send(b"X-Slow: 1\r\n")
                due[s] = now + interval
            except (BlockingIOError, InterruptedError):
                due[s] = now + 0.1
            except OSError:
                drops += 1
                sent_line.discard(s)
                drop(s)
                connect()
    for s in list(due):
        drop(s)
    out.send((made, drops, answers))


def bursts(port, sources, n, every, seconds, out):
    """Every `every` seconds, n connections at once (spread over the source
    addresses), each a complete GET /api/v1/locks; read every answer.
    Reports a dict of outcomes: status codes, "503-no-retry-after",
    "reset", "no-answer"."""
    outcomes = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        sel = selectors.DefaultSelector()
        bufs = {}
        for i in range(n):
            s = new_socket(sources, i)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            sel.register(s, selectors.EVENT_WRITE)
            bufs[s] = b""
        deadline = t0 + 15
        while bufs and time.monotonic() < deadline:
            for key, ev in sel.select(timeout=0.2):
                s = key.fileobj
                if ev & selectors.EVENT_WRITE:
                    try:
                        s.send(b"GET /api/v1/locks?limit=20 HTTP/1.1\r\nHost: burst\r\n"
                               b"Connection: close\r\n\r\n")
                    except OSError:
                        outcomes["reset"] = outcomes.get("reset", 0) + 1
                        sel.unregister(s)
                        s.close()
                        del bufs[s]
                        continue
                    sel.modify(s, selectors.EVENT_READ)
                    continue
                try:
                    data = s.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = None
                if data:
                    bufs[s] += data
                    continue
                got = bufs.pop(s)
                sel.unregister(s)
                s.close()
                if data is None and not got:
                    outcomes["reset"] = outcomes.get("reset", 0) + 1
                    continue
                head = got.split(b"\r\n\r\n", 1)[0].lower()
                line = head.split(b"\r\n", 1)[0].split()
                if len(line) < 2:
                    outcomes["no-answer"] = outcomes.get("no-answer", 0) + 1
                    continue
                code = line[1].decode()
                if code == "503" and b"\r\nretry-after: 1" not in head:
                    code = "503-no-retry-after"
                outcomes[code] = outcomes.get(code, 0) + 1
        for s in list(bufs):
            outcomes["no-answer"] = outcomes.get("no-answer", 0) + 1
            sel.unregister(s)
            s.close()
        sel.close()
        time.sleep(max(0.0, every - (time.monotonic() - t0)))
    out.send(outcomes)


def start_child(target, *args):
    ctx = multiprocessing.get_context("fork")
    mine, theirs = ctx.Pipe(duplex=False)
    p = ctx.Process(target=target, args=args + (theirs,), daemon=True)
    p.start()
    return p, mine


# ---------------------------------------------------------------------------

class Abuse(h.TestCase):

    def fill(self, r, n=200):
        c = r.client()
        h.load(c, (("SET", "lock:order:%d" % i, "token-%d" % i, "PX", "600000")
                   for i in range(n)))

    def abuse(self, slow_sources, burst_sources):
        """The slowloris + bursts run; returns the burst outcomes and the
        rejections counted by reason."""
        r = self.start_redis()
        self.fill(r)
        ag = self.start_agent(r, scan_interval="2s")
        ag.wait_ready()
        pid = ag.proc.pid
        rss0 = h.vm_rss_mb(pid)

        slow, slow_out = start_child(slowloris, ag.port, slow_sources, SLOW_CLIENTS, 2.0, RUN_SECONDS + 2)
        time.sleep(1.0)         # the slow clients are in
        burst, burst_out = start_child(bursts, ag.port, burst_sources, BURST, 5.0, RUN_SECONDS - 4)

        paths = ("/metrics", "/healthz", "/readyz")
        got = {p: [] for p in paths}
        rss_max = rss0
        t_end = time.monotonic() + RUN_SECONDS - 2
        gap = (RUN_SECONDS - 3) / float(PROBES)
        for i in range(PROBES):
            t0 = time.monotonic()
            for p in paths:
                got[p].append(h.timed_get(ag.port, p))
            rss_max = max(rss_max, h.vm_rss_mb(pid))
            time.sleep(max(0.0, min(gap - (time.monotonic() - t0), t_end - time.monotonic())))

        burst.join(30)
        slow.join(30)
        self.assertTrue(burst_out.poll(5) and slow_out.poll(5), "an attacker did not report")
        outcomes = burst_out.recv()
        made, drops, slow_answers = slow_out.recv()
        m = ag.metrics()
        timeouts = h.msum(m, "lockwatch_http_request_timeouts_total")
        rejected = {l["reason"]: v for l, v in h.select(m, "lockwatch_http_rejected_total")}

        for p in paths:
            ok = [t for st, t in got[p] if st == 200 and t <= 1.0]
            lat = sorted(t for _, t in got[p])
            sys.stderr.write("%-9s %2d/%d answered 200 within 1 s; latency median %.3f s, "
                             "max %.3f s\n" % (p, len(ok), PROBES, lat[len(lat) // 2], lat[-1]))
        sys.stderr.write("RSS %.1f MB before, %.1f MB max during the run\n" % (rss0, rss_max))
        sys.stderr.write("slowloris: %d connections made, %d dropped by the agent, %d answered; "
                         "request timeouts counted %d\n" % (made, drops, slow_answers, timeouts))
        sys.stderr.write("bursts: %s; rejected %s\n" % (json.dumps(outcomes, sort_keys=True),
                                                        rejected))

        for p in paths:
            ok = [t for st, t in got[p] if st == 200 and t <= 1.0]
            self.assertGreaterEqual(len(ok), PROBES - 1, "%s: %r" % (p, got[p]))
        if not h.sanitized():
            self.assertLess(rss_max, 100.0, "RSS over 100 MB under abuse")
        # the attack was real: the slow clients were cut and came back
        self.assertGreaterEqual(timeouts, SLOW_CLIENTS)
        self.assertGreater(made, 2 * SLOW_CLIENTS)
        self.assertEqual(slow_answers, 0, "a request that never ended was answered")
        # every burst connection had an answer, none a reset
        answered = sum(v for k, v in outcomes.items() if k in ("200", "503"))
        self.assertGreaterEqual(answered, BURST * 3, outcomes)
        self.assertEqual({k for k in outcomes if k not in ("200", "503")}, set(), outcomes)
        # every 503 was counted, with its reason
        self.assertEqual(sum(rejected.values()), outcomes.get("503", 0), rejected)
        self.assertTrue(ag.alive)
        return outcomes, rejected

    def test_one_abusive_address_like_the_probes(self):
        """Everything from 127.0.0.1, the probes' own address: the slow
        clients are mostly over the per-client limit, so they are cut after
        1 s, and every burst request is refused 503 client_limit."""
        outcomes, rejected = self.abuse(["127.0.0.1"], ["127.0.0.1"])
        self.assertGreater(rejected.get("client_limit", 0), 0)

    def test_many_abusive_addresses(self):
        """Slow clients from five addresses (60 each, under the per-client
        limit of 64: each holds its slot the whole 10 s of
        http_request_timeout) and bursts from eight (125 each): 1,300
        connections at once, over http_max_connections (1024), so some wait
        in the listen queue.  Each address's first 64 burst connections
        are answered 200 (or 503 busy when the API's budget is spent), the
        rest 503 client_limit."""
        outcomes, rejected = self.abuse(["127.0.0.%d" % i for i in range(2, 7)],
                                        ["127.0.0.%d" % i for i in range(10, 18)])
        self.assertGreater(outcomes.get("200", 0), 0, outcomes)


    # run-all: par (a 2 s http_request_timeout, polled with room; next to no CPU)
    def test_a_trickled_request_is_cut_at_its_deadline(self):
        r = self.start_redis()
        ag = self.start_agent(r, extra="")
        ag.stop()
        ag.write_config(ag.render_config().replace(
            "[agent]\n", "[agent]\nhttp_request_timeout = 2s\n", 1))
        ag.start()
        before = h.msum(ag.metrics(), "lockwatch_http_request_timeouts_total")

        s = socket.create_connection(("127.0.0.1", ag.port), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        closed, data = None, b""
        while time.monotonic() - t0 < 10:
            try:
                s.sendall(b"X-Trickle: 1\r\n")     # never idle for long
                s.settimeout(0.3)
                chunk = s.recv(4096)
                if not chunk:
                    closed = time.monotonic() - t0
                    break
                data += chunk
            except socket.timeout:
                continue
            except OSError:
                closed = time.monotonic() - t0
                break
        s.close()
        sys.stderr.write("trickled request closed after %.2f s (http_request_timeout 2s)\n"
                         % (closed or -1))
        self.assertIsNotNone(closed, "a request trickled for 10 s was never cut")
        self.assertGreaterEqual(closed, 1.5, "cut before its deadline")
        self.assertEqual(data, b"", "the unfinished request was answered")
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_http_request_timeouts_total"),
                         before + 1)

        # keep-alive: each complete request is answered, the deadline is per request
        c = http.client.HTTPConnection("127.0.0.1", ag.port, timeout=5)
        for _ in range(3):
            c.request("GET", "/healthz")
            resp = c.getresponse()
            resp.read()
            self.assertEqual(resp.status, 200)
            time.sleep(0.8)
        c.close()

    # run-all: par (counts answers, measures no time)
    def test_the_per_client_limit_answers_503_and_spares_others(self):
        r = self.start_redis()
        self.fill(r, 5)
        ag = self.start_agent(r)
        ag.stop()
        ag.write_config(ag.render_config().replace(
            "[agent]\n", "[agent]\nhttp_max_connections_per_client = 4\n", 1))
        ag.start()
        ag.wait_ready()
        idle = [socket.create_connection(("127.0.0.1", ag.port), timeout=5) for _ in range(4)]
        time.sleep(0.2)
        try:
            st, headers, body = ag.get("/api/v1/locks")
            self.assertEqual(st, 503, body)
            self.assertEqual(headers.get("retry-after"), "1")
            self.assertIn("http_max_connections_per_client", json.loads(body)["error"])
            st, headers, body = ag.get("/")
            self.assertEqual(st, 503)
            self.assertEqual(headers.get("retry-after"), "1")
            self.assertTrue(body.startswith(b"too many connections from your address"), body)
            for p in ("/metrics", "/healthz", "/readyz"):
                self.assertEqual(ag.get(p)[0], 200, p)

            # another address is another client
            s = socket.socket()
            s.bind(("127.0.0.2", 0))
            s.settimeout(5)
            s.connect(("127.0.0.1", ag.port))
            s.sendall(b"GET /api/v1/locks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            s.close()
            self.assertTrue(data.startswith(b"HTTP/1.1 200"), data[:200])
        finally:
            for s in idle:
                s.close()
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_http_rejected_total", reason="client_limit"), 2)
        # the idle ones were over nothing; once they are gone the API answers again
        ag.wait_for(lambda: ag.get("/api/v1/locks")[0] == 200, timeout=5,
                    desc="the API answers once the client is under its limit")


if __name__ == "__main__":
    h.main()
