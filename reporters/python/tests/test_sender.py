# SPDX-License-Identifier: BSD-3-Clause
"""Environment parsing, the bounded queue, batching into datagrams, signing
on the wire and failed sends (a loopback UDP socket, no agent, no Redis)."""

import os
import socket
import tempfile
import threading
import time
import unittest
from unittest import mock

from lockwatch_reporter import _config, _sender, _wire


def udp_sink():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(2)
    return s


def recv_all(s):
    out = []
    s.settimeout(0.2)
    try:
        while True:
            out.append(s.recv(65536))
    except socket.timeout:
        pass
    return out


def _mp_work(key):
    """A multiprocessing child's work: three events, nothing flushed."""
    r = _sender.get()
    for _ in range(3):
        r.put(("wait", key, 7, "ok"))
    return 3


class FirstUse:
    """A process whose reporter is not made yet, its settings naming
    agent.lockwatch.test (a patched getaddrinfo that takes 0.5 s resolves it
    to self.sink, a local UDP socket as the agent, or fails when
    self.resolvable is False) and a key file.  resolved_on and key_read_on
    record the threads that resolved the name and read the key: never one
    that locks (docs/reporters.md "Configuration").  A mixin of TestCases."""

    HOST = "agent.lockwatch.test"
    KEY = b"lockwatch test key: not a secret"
    resolvable = True

    def setUp(self):
        super().setUp()
        self.sink = udp_sink()
        self.addCleanup(self.sink.close)
        self.resolved_on, self.key_read_on = [], []
        with tempfile.NamedTemporaryFile("wb", delete=False) as f:
            f.write(self.KEY + b"\n")
        self.addCleanup(os.unlink, f.name)
        real_getaddrinfo, real_read_key = socket.getaddrinfo, _config.read_key
        agent = self.sink.getsockname()

        def getaddrinfo(host, *a, **kw):
            if host != self.HOST:
                return real_getaddrinfo(host, *a, **kw)
            self.resolved_on.append(threading.get_ident())
            time.sleep(0.5)
            if not self.resolvable:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return [(socket.AF_INET, socket.SOCK_DGRAM, 17, "", agent)]

        def read_key(path):
            self.key_read_on.append(threading.get_ident())
            return real_read_key(path)

        for p in (mock.patch("socket.getaddrinfo", getaddrinfo),
                  mock.patch.object(_config, "read_key", read_key),
                  mock.patch.dict(os.environ, {"LOCKWATCH_SAMPLES": "%s:%d" % (self.HOST, agent[1]),
                                               "LOCKWATCH_KEY_FILE": f.name})):
            p.start()
            self.addCleanup(p.stop)
        _sender.configure(samples="off")
        with _sender._reporter_lock:
            _sender._reporter = _sender.active = None
        self.addCleanup(_sender.configure, samples="off")

    def received(self, n):
        """The first n lines the agent got (signed with KEY), within 5 s."""
        lines = []
        self.sink.settimeout(5)
        while len(lines) < n:
            d = self.sink.recv(65536)
            head, rest = d.split(b"\n", 1)
            self.assertEqual(_wire.sign(self.KEY, rest, int(head.split(b" ")[3])), d)
            lines += rest.decode().splitlines()
        return lines

    def assert_resolved_by_the_reporter(self, *lockers):
        """The name was resolved and the key read once each, on the
        reporter's thread, by none of the lockers (thread idents)."""
        for t in lockers:   # a locker that resolved did so before returning
            self.assertNotIn(t, self.resolved_on)
            self.assertNotIn(t, self.key_read_on)
        rep = _sender._reporter
        rep.wait_ready()
        self.assertEqual(self.resolved_on, [rep._thread.ident])
        self.assertEqual(self.key_read_on, [rep._thread.ident])


class Unresolvable(FirstUse, unittest.TestCase):
    resolvable = False

    def test_one_warning_and_off_with_what_was_queued_counted(self):
        # the first lock call's get() returns the reporter at once; the name
        # fails on its thread: one warning, reporting off, the events queued
        # before dropped and counted, the lock path back to the library
        with self.assertLogs("lockwatch_reporter", "WARNING") as logs:
            r = _sender.active or _sender.get()
            for i in range(3):
                r.put(("wait", "lock:k", i, "ok"))
            self.assert_resolved_by_the_reporter(threading.get_ident())
        self.assertEqual(len(logs.records), 1)
        self.assertIn(self.HOST, logs.output[0])
        self.assertIsNone(_sender.active)
        self.assertIsNone(_sender.get())
        st = r.stats()
        self.assertEqual((st["queued"], st["sent"], st["dropped_send_failed"], st["pending"]),
                         (3, 0, 3, 0))
        r.put(("wait", "lock:k", 9, "ok"))   # a call under way: counted, not kept
        self.assertEqual(r.stats()["pending"], 0)


class ResolverHangs(unittest.TestCase):
    """The agent's name never resolves (a DNS server that does not answer, a
    key file on a hung NFS mount: getaddrinfo blocks until the test ends).
    The exit hook's close() still returns, within about a second: what was
    queued is dropped and counted as failed sends, and the sender thread,
    left resolving, sends nothing once it is done.  configure() returns
    after START_WAIT, the reporter still enabled."""

    HOST = "agent.lockwatch.test"

    def setUp(self):
        super().setUp()
        self.sink = udp_sink()
        self.addCleanup(self.sink.close)
        self.resolving, release = threading.Event(), threading.Event()
        real_getaddrinfo = socket.getaddrinfo
        agent = self.sink.getsockname()

        def getaddrinfo(host, *a, **kw):
            if host != self.HOST:
                return real_getaddrinfo(host, *a, **kw)
            self.resolving.set()
            release.wait()      # for ever, as far as close() can tell
            return [(socket.AF_INET, socket.SOCK_DGRAM, 17, "", agent)]

        self.samples = "%s:%d" % (self.HOST, agent[1])
        p = mock.patch("socket.getaddrinfo", getaddrinfo)
        p.start()
        self.addCleanup(p.stop)
        self.addCleanup(_sender.configure, samples="off")
        self.addCleanup(release.set)    # the first to run: the thread resolves, then ends

    def returns_within_10s(self, fn):
        t = threading.Thread(target=fn, daemon=True)
        t.start()
        t.join(10)
        self.assertFalse(t.is_alive(), "%s waited for the resolver" % fn.__name__)

    def test_exit_drops_and_counts_what_was_queued(self):
        r = _sender._configure(self.samples, None, None, {})   # as a first lock call makes it
        self.assertIs(_sender.get(), r)
        for i in range(3):
            r.put(("wait", "lock:k", i, "ok"))
        self.assertTrue(self.resolving.wait(5))
        self.returns_within_10s(_sender._at_exit)
        st = r.stats()
        self.assertEqual((st["queued"], st["sent"], st["dropped_send_failed"], st["pending"]),
                         (3, 0, 3, 0))
        # the name resolves after all: the closed reporter's thread sends nothing
        self.doCleanups()
        self.assertTrue(r.ready.wait(5))
        r._thread.join(5)
        self.assertFalse(r._thread.is_alive())
        self.assertEqual(r.stats()["sent"], 0)

    def test_configure_returns_while_still_resolving(self):
        with mock.patch.object(_sender, "START_WAIT", 0.2):
            self.returns_within_10s(lambda: _sender.configure(samples=self.samples))
        r = _sender._reporter
        self.assertFalse(r.ready.is_set())
        self.assertTrue(r.config.enabled)
        self.assertIs(_sender.get(), r)


def applied(environ):
    """The Config of these settings once the reporter's thread would have
    applied them (load() itself resolves and reads nothing)."""
    c = _config.load(environ=environ)
    c.resolve()
    return c


class Env(unittest.TestCase):
    def test_destinations(self):
        d = _config.split_destinations("127.0.0.1:9717, [::1]:9718,bad,host:0,x:99999,a:1")
        self.assertEqual(d, [("127.0.0.1", 9717), ("::1", 9718), ("a", 1)])
        many = ",".join("h%d:1" % i for i in range(12))
        self.assertEqual(len(_config.split_destinations(many)), 8)

    def test_off_and_defaults(self):
        self.assertFalse(_config.load(environ={"LOCKWATCH_SAMPLES": "off"}).enabled)
        self.assertFalse(_config.load(environ={"LOCKWATCH_SAMPLES": ""}).enabled)
        c = applied({})
        self.assertTrue(c.enabled)
        self.assertEqual(c.destinations[0][1], ("127.0.0.1", 9717))
        self.assertEqual(c.process, "%s:%d" % (socket.gethostname(), os.getpid()))
        self.assertEqual(applied({"LOCKWATCH_OWNER": "pod-7"}).process, "pod-7:%d" % os.getpid())
        self.assertNotEqual(applied({"LOCKWATCH_OWNER": "x" * 201}).process, "x" * 201)

    def test_off_in_any_case_and_an_empty_key_file_said(self):
        # a trial: `OFF` was taken for a destination (skipped with a
        # warning), and LOCKWATCH_KEY_FILE set but empty sent unsigned
        # datagrams silently
        with self.assertNoLogs("lockwatch_reporter", "WARNING"):
            for v in ("OFF", " Off "):
                c = _config.load(environ={"LOCKWATCH_SAMPLES": v})
                c.resolve()
                self.assertFalse(c.enabled)
        with self.assertLogs("lockwatch_reporter", "WARNING") as logs:
            c = applied({"LOCKWATCH_SAMPLES": "127.0.0.1:9", "LOCKWATCH_KEY_FILE": ""})
        self.assertEqual(logs.output, ["WARNING:lockwatch_reporter:LOCKWATCH_KEY_FILE is set but "
                                       "empty; datagrams go unsigned"])
        self.assertTrue(c.enabled)
        self.assertIsNone(c.key)
        with self.assertNoLogs("lockwatch_reporter", "WARNING"):
            applied({"LOCKWATCH_SAMPLES": "127.0.0.1:9"})

    def test_two_names_of_one_agent_are_sent_to_once(self):
        # a trial: "127.0.0.1:P,localhost:P" counted every sample twice
        real = socket.getaddrinfo

        def fake(host, *a, **kw):
            return real("127.0.0.1" if host == "agent.lockwatch.test" else host, *a, **kw)
        c = _config.load(environ={"LOCKWATCH_SAMPLES": "127.0.0.1:9717, agent.lockwatch.test:9717"})
        with mock.patch("socket.getaddrinfo", fake), \
                self.assertLogs("lockwatch_reporter", "WARNING") as logs:
            c.resolve()
        self.assertEqual(len(c.destinations), 1)
        self.assertIn("agent.lockwatch.test:9717 is 127.0.0.1:9717 again; sending there once",
                      logs.output[0])
        c = _config.load(environ={"LOCKWATCH_SAMPLES": "127.0.0.1:9717, 127.0.0.1:9718"})
        c.resolve()
        self.assertEqual(len(c.destinations), 2)

    def test_unresolvable(self):
        c = _config.load(environ={"LOCKWATCH_SAMPLES": "no-such-host.invalid:9717"})
        self.assertTrue(c.enabled)      # until the reporter's thread resolves it
        c.resolve()
        self.assertFalse(c.enabled)

    def test_key_file(self):
        with tempfile.NamedTemporaryFile("wb", delete=False) as f:
            f.write(b"0123456789abcdef0123\n\n")
        try:
            c = _config.load(environ={"LOCKWATCH_KEY_FILE": f.name})
            self.assertIsNone(c.key)        # read by the reporter's thread
            c.resolve()
            self.assertEqual(c.key, b"0123456789abcdef0123")
            with open(f.name, "wb") as g:
                g.write(b"short\n")
            self.assertFalse(applied({"LOCKWATCH_KEY_FILE": f.name}).enabled)
        finally:
            os.unlink(f.name)
        self.assertFalse(applied({"LOCKWATCH_KEY_FILE": "/nonexistent/k"}).enabled)


    def test_an_event_after_reporting_turned_off_is_a_failed_send(self):
        # a user's trial: a key file that could not be used turned reporting
        # off, and the event of a lock call under way then was counted as
        # queue full (docs: dropped and counted in dropped_send_failed)
        cfg = _config.load(environ={"LOCKWATCH_SAMPLES": "127.0.0.1:9",
                                    "LOCKWATCH_KEY_FILE": "/nonexistent/k"})
        r = _sender.Reporter(cfg, start=False)
        self.assertFalse(cfg.enabled)
        r.put(("x",))
        st = r.stats()
        self.assertEqual(st["dropped_queue_full"], 0)
        self.assertEqual(st["dropped_send_failed"], 1)

    def test_without_a_thread_the_settings_apply_in_the_caller(self):
        # start=False (no sender thread): the settings from the environment
        # are applied at once, so flush() sends, rather than keeping the
        # lines queued for a thread that never comes
        sink = udp_sink()
        cfg = _config.load(environ={"LOCKWATCH_SAMPLES": "127.0.0.1:%d" % sink.getsockname()[1]})
        r = _sender.Reporter(cfg, start=False)
        self.assertTrue(r.ready.is_set())
        r.put(("wait", "lock:k", 5, "ok"))
        r.flush()
        self.assertEqual(b"".join(recv_all(sink)), b"lw1 wait lock:k 5 ok\n")


class Sending(unittest.TestCase):
    def reporter(self, sink, key=None, **kw):
        cfg = _config.Config([(socket.AF_INET, sink.getsockname())], key, "h:1")
        r = _sender.Reporter(cfg, start=False, **kw)
        r._socks[socket.AF_INET] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        r._socks[socket.AF_INET].setblocking(False)
        return r

    def test_batches(self):
        # to a loopback agent: datagrams of up to 8192 bytes, filled
        sink = udp_sink()
        r = self.reporter(sink)
        for i in range(1000):
            r.put(("wait", "lock:k:%d" % i, i, "ok"))
        r.flush()
        dgs = recv_all(sink)
        self.assertGreater(len(dgs), 2)
        self.assertTrue(all(len(d) <= 8192 for d in dgs))
        self.assertGreater(len(dgs[0]), 8192 - 30)
        lines = b"".join(dgs).splitlines()
        self.assertEqual(len(lines), 1000)
        self.assertEqual(lines[5], b"lw1 wait lock:k:5 5 ok")
        st = r.stats()
        self.assertEqual((st["queued"], st["sent"], st["datagrams"]), (1000, 1000, len(dgs)))

    def test_counters_are_lines(self):
        # an acquire that acquired is one event and one line (the 7-field
        # `wait`, its `waiting ... ok` too); one with its start, two:
        # queued counts the lines, as sent does
        sink = udp_sink()
        r = self.reporter(sink)
        for i in range(10):
            r.put(("start", "lock:k", 7, b"tok%d" % i))
            r.put(("ok", "lock:k", 7, b"tok%d" % i, 0, 5000))
        self.assertEqual(r.stats()["pending"], 20)
        r.flush()
        lines = b"".join(recv_all(sink)).splitlines()
        self.assertEqual(len(lines), 20)
        self.assertEqual(lines[:2], [b"lw1 waiting lock:k h:1/7 tok0 start",
                                     b"lw1 wait lock:k 5 ok h:1/7 tok0"])
        st = r.stats()
        self.assertEqual((st["queued"], st["sent"], st["pending"]), (20, 20, 0))

    def test_datagram_size_by_destination(self):
        # 8192 bytes only when every destination is loopback; 1432 else;
        # the mac line's share kept free when signing
        def budget(addrs, key=None):
            cfg = _config.Config([(socket.AF_INET6 if ":" in a else socket.AF_INET, (a, 9))
                                  for a in addrs], key, "h:1")
            return _sender.Reporter(cfg, start=False)._budget
        self.assertEqual(budget(["127.0.0.1"]), 8192)
        self.assertEqual(budget(["127.3.2.1", "::1"]), 8192)
        self.assertEqual(budget(["::ffff:127.0.0.1"]), 8192)
        self.assertEqual(budget(["127.0.0.1", "192.0.2.1"]), 1432)
        self.assertEqual(budget(["fe80::1%eth0"]), 1432)
        self.assertEqual(budget(["127.0.0.1"], key=b"k" * 16), 8192 - _wire.MAC_LINE_LEN)
        self.assertEqual(budget(["10.0.0.1"], key=b"k" * 16), 1432 - _wire.MAC_LINE_LEN)
        r = _sender.Reporter(_config.Config([(socket.AF_INET, ("192.0.2.1", 9))], None, "h:1"),
                             start=False)
        sent = []
        r._socks[socket.AF_INET] = type("Sock", (), {"sendto": lambda self, b, a: sent.append(b)})()
        for i in range(200):
            r.put(("wait", "lock:k:%d" % i, i, "ok"))
        r.flush()
        self.assertGreater(len(sent), 2)
        self.assertTrue(all(len(d) <= 1432 for d in sent))
        self.assertEqual(len(b"".join(sent).splitlines()), 200)

    def test_lost_wakes_the_sender(self):
        # a lost line is sent at once, not at the next tick: the holding
        # wakes the sending thread (docs/reporters.md "Batching")
        from lockwatch_reporter import _holding
        sink = udp_sink()
        r = self.reporter(sink)
        h = _holding.Holding("lock:k:1", "1", "tok-1", 0, 0)
        r.put(("wait", "lock:k:1", 5, "ok"))
        self.assertFalse(r._wake.is_set())
        h.report_lost(r, "renewal")
        self.assertTrue(r._wake.is_set())

    def test_signed(self):
        sink = udp_sink()
        key = b"lockwatch test key: not a secret"
        r = self.reporter(sink, key=key)
        for i in range(500):
            r.put(("hold", "lock:k", 1, b"tok", 0, i * 1000))
        r.flush()
        dgs = recv_all(sink)
        self.assertGreater(len(dgs), 1)
        for d in dgs:
            self.assertLessEqual(len(d), 8192)
            head, rest = d.split(b"\n", 1)
            _, _, mac, unix = head.split(b" ")
            self.assertEqual(_wire.sign(key, rest, int(unix)), d)

    def test_queue_full_drops_counted(self):
        sink = udp_sink()
        r = self.reporter(sink, capacity=10)
        for i in range(25):
            r.put(("wait", "k", i, "ok"))
        self.assertEqual(r.stats()["dropped_queue_full"], 15)
        r.flush()
        self.assertEqual(r.stats()["sent"], 10)

    def test_fast_path_bounds(self):
        # the wrappers append to q themselves only below fast_below (a
        # quarter of the capacity); a tap turns that off, so it sees all
        sink = udp_sink()
        r = self.reporter(sink, capacity=8)
        self.assertEqual(r.fast_below, 2)
        r.tap = lambda ev: None
        self.assertEqual(r.fast_below, 0)
        r.tap = None
        self.assertEqual(r.fast_below, 2)
        self.assertNotIn("put", r.__dict__)

    def test_send_failure_counted_not_raised(self):
        # a port nothing listens on: ECONNREFUSED may come back; never raised
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        cfg = _config.Config([(socket.AF_INET, ("127.0.0.1", port))], None, "h:1")
        r = _sender.Reporter(cfg, start=False)
        r._socks[socket.AF_INET] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        r._socks[socket.AF_INET].setblocking(False)
        for _ in range(3):
            r.put(("wait", "k", 1, "ok"))
            r.flush()
        st = r.stats()
        self.assertEqual(st["sent"] + st["dropped_send_failed"], 3)

    def test_tap_errors_swallowed(self):
        sink = udp_sink()
        r = self.reporter(sink)
        r.tap = lambda ev: 1 / 0
        r.put(("wait", "k", 1, "ok"))
        self.assertEqual(r.stats()["pending"], 1)

    @unittest.skipUnless(hasattr(os, "fork"), "no fork")
    def test_forked_child_gets_its_own_reporter(self):
        sink = udp_sink()
        parent = _sender.configure(samples="127.0.0.1:%d" % sink.getsockname()[1])
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report one line, exit without atexit
            try:
                child = _sender.get()
                ok = child is not None and child is not parent and child._thread.is_alive()
                child.put(("wait", "lock:child", 7, "ok"))
                child.wait_ready()
                child.flush()
                os.write(w, b"1" if ok else b"0")
            finally:
                os._exit(0)
        os.close(w)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.read(r, 1), b"1")
        os.close(r)
        d = recv_all(sink)
        self.assertEqual(len(d), 1)
        self.assertTrue(d[0].startswith(b"lw1 wait lock:child 7 ok"))
        _sender.configure(samples="off")

    @unittest.skipUnless(hasattr(os, "fork"), "no fork")
    def test_multiprocessing_children_flush_at_their_end(self):
        # A multiprocessing child ends with os._exit(), no atexit hook: a
        # Process whose run() returned and a Pool's workers stopped by
        # close() still send what they queued (their finalizers flush).
        import multiprocessing
        sink = udp_sink()
        _sender.configure(samples="127.0.0.1:%d" % sink.getsockname()[1])
        ctx = multiprocessing.get_context("fork")
        ps = [ctx.Process(target=_mp_work, args=("lock:mp:p%d" % i,)) for i in range(2)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        pool = ctx.Pool(2)
        self.assertEqual(pool.map(_mp_work, ["lock:mp:w%d" % i for i in range(4)]), [3] * 4)
        pool.close()
        pool.join()
        got = b"".join(recv_all(sink))
        for k in ["p0", "p1", "w0", "w1", "w2", "w3"]:
            self.assertEqual(got.count(b"lw1 wait lock:mp:%s 7 ok\n" % k.encode()), 3, k)
        _sender.configure(samples="off")

    def test_first_use_from_many_threads_makes_one_reporter(self):
        # Threads that take their first lock at once share one reporter:
        # none replaces (and closes) the one another has queued lines on.
        import threading
        sink = udp_sink()
        old_env = os.environ.get("LOCKWATCH_SAMPLES")
        os.environ["LOCKWATCH_SAMPLES"] = "127.0.0.1:%d" % sink.getsockname()[1]
        made = []
        real_init = _sender.Reporter.__init__

        def counting_init(self, *a, **kw):
            made.append(self)
            real_init(self, *a, **kw)

        try:
            for _ in range(20):
                _sender.configure(samples="off")
                with _sender._reporter_lock:
                    _sender._reporter = _sender.active = None
                made.clear()
                _sender.Reporter.__init__ = counting_init
                barrier = threading.Barrier(8)
                got = []

                def first_lock(i):
                    barrier.wait()
                    r = _sender.get()
                    r.put(("wait", "lock:race:%d" % i, i, "ok"))
                    got.append(r)

                ts = [threading.Thread(target=first_lock, args=(i,)) for i in range(8)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                _sender.Reporter.__init__ = real_init
                self.assertEqual(len(made), 1)
                self.assertEqual(len({id(r) for r in got}), 1)
                self.assertEqual(got[0].stats()["pending"], 8)
                got[0].wait_ready()
                got[0].flush()
                lines = b"".join(recv_all(sink)).decode().split()
                self.assertEqual(sorted(l for l in lines if l.startswith("lock:race:")),
                                 ["lock:race:%d" % i for i in range(8)])
        finally:
            _sender.Reporter.__init__ = real_init
            if old_env is None:
                os.environ.pop("LOCKWATCH_SAMPLES", None)
            else:
                os.environ["LOCKWATCH_SAMPLES"] = old_env
            _sender.configure(samples="off")

    def test_off_reporter(self):
        r = _sender.configure(samples="off")
        self.assertFalse(r.config.enabled)
        self.assertIsNone(_sender.get())


if __name__ == "__main__":
    unittest.main()
