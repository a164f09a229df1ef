# SPDX-License-Identifier: BSD-3-Clause
"""The reporter: a bounded queue the lock path appends event tuples to, and a
daemon thread that turns them into lw1 lines, packs them into datagrams of at
most 1432 bytes (8192 when every destination is a loopback address: fewer
sends, each of which releases the GIL and wakes the agent), signs them when
a key is set and sends them with non-blocking UDP sockets every 200 ms (or
sooner when the queue fills up).  The thread first applies the settings
(_config.Config.resolve(): the key file, the names), so that neither the
first lock call, which makes the reporter, nor an event loop ever waits for
DNS or the disk; events queue meanwhile, bounded as ever, and go out once it
is done.  When that turns reporting off, what was queued is dropped and
counted (sending failed) and the lock path goes back to the library alone.
Nobody waits for that step without a bound (a resolver or an NFS mount can
hang for ever): configure() waits up to START_WAIT, flush() and the exit
hook up to EXIT_WAIT, and a close() that gives up drops what was queued
(counted as failed sends) and leaves the thread, a daemon, to finish
resolving without sending anything.

Why tuples and a thread: the lock path must cost next to nothing (the 5%
budget of docs/reporters.md), so it only builds a tuple and appends it to a
deque (atomic under the GIL, no lock taken; the wrappers append themselves
while the queue is short, put() does it beyond: see fast_below); formatting, percent-encoding,
signing and the system calls all happen on the sender thread.  The thread is
a daemon, so it never keeps the process alive; an atexit hook flushes what is
queued, best effort; a forked child gets a reporter of its own, and a
multiprocessing child, which ends with os._exit() and runs no atexit hook,
flushes from a multiprocessing finalizer instead (_mp_child()).  A full queue
drops the event and counts it; a failed send drops the datagram and counts
its lines; nothing is ever retried or raised into the application.
"""

import atexit
import collections
import ipaddress
import os
import socket
import sys
import threading
import time

from . import _config, _wire

QUEUE_CAPACITY = 8192
FLUSH_SECONDS = 0.2
# The longest configure() waits for the sender thread to apply the settings:
# glibc's own timeout for one DNS query (resolv.conf `timeout:`, 5 s), so a
# resolver that answers, even slowly, is waited for and a stuck one is not.
START_WAIT = 5.0
# The longest close() (the exit hook) and flush() wait for it: the "best
# effort, about a second" of the flush at exit (docs/reporters.md).
EXIT_WAIT = 1.0


class Reporter:
    """One per process (see get()), or made directly with a Config for tests.
    put(event) is the only method the lock path calls."""

    def __init__(self, config, capacity=QUEUE_CAPACITY, flush_seconds=FLUSH_SECONDS,
                 start=True):
        self.config = config
        self.capacity = capacity
        self._wake_at = capacity >> 2  # wake the sender early, well before full
        # The wrappers append to q themselves while it is shorter than
        # fast_below (no call; put() takes over from there: the wake, the
        # drops, the tap); a tap sets it to 0.
        self.q = collections.deque()
        self.fast_below = self._wake_at
        self.flush_seconds = flush_seconds
        self._q = self.q
        self._wake = threading.Event()
        self._stop = False
        self._count_lock = threading.Lock()  # only the drop and flush paths take it
        self._flush_lock = threading.Lock()
        self._dropped_full = 0
        self._queued = 0
        self._sent_lines = 0
        self._sent_datagrams = 0
        self._dropped_send = 0
        self._unix = 0
        self._socks = {}
        self._tap = None
        self._thread = None
        self._abandoned = False     # close() gave up waiting: never send
        self._is_off = False        # _off(): what is put now is a failed send
        # set once the settings are applied (flush() sends nothing before)
        self.ready = threading.Event()
        if config.settings is None:
            self._settled()
        elif not start:
            self._start()   # no thread to apply them: here, in the caller
        if config.enabled and start:
            self._thread = threading.Thread(target=self._run, name="lockwatch-reporter",
                                            daemon=True)
            self._thread.start()

    def _settled(self):
        """What depends on the applied settings: the encoder (the owner),
        the datagram budget (the destinations, the key)."""
        config = self.config
        self._encoder = _wire.Encoder(config.process)
        size = _wire.MAX_DATAGRAM
        if config.destinations and all(is_loopback(a[0]) for _, a in config.destinations):
            size = _wire.LOOPBACK_DATAGRAM
        self._budget = size - (_wire.MAC_LINE_LEN if config.key else 0)
        self.ready.set()

    def _start(self):
        """The sender thread's first step: apply the settings (DNS, the key
        file) and open the sockets; False when that turned reporting off."""
        config = self.config
        try:
            config.resolve()
        except Exception as e:  # never fail the application
            _config.log.warning("lockwatch reporter: %s; off", e)
            config.enabled = False
        for fam, _ in config.destinations if config.enabled else ():
            if fam not in self._socks:
                try:
                    s = socket.socket(fam, socket.SOCK_DGRAM)
                    s.setblocking(False)
                    self._socks[fam] = s
                except OSError as e:
                    _config.log.warning("lockwatch reporter: no UDP socket (%s); off", e)
                    config.enabled = False
                    break
        if not config.enabled:
            self._off()
        self._settled()
        return config.enabled

    def wait_ready(self, timeout=None):
        """Wait until the thread has applied the settings, at most timeout
        seconds (configure(), flush(), exit: the application asking, never
        a lock call); False when it gave up waiting (no thread to wait for:
        True)."""
        t = self._thread
        if t is not None and t is not threading.current_thread():
            return self.ready.wait(timeout)
        return True

    def _off(self):
        """Reporting turned off after the lock path started queueing: the
        wrappers go back to the library alone (active, get()), and what was
        queued, or is put by a call under way, is dropped and counted."""
        global active
        with _reporter_lock:
            if active is self:
                active = None
        self._is_off = True
        self.fast_below = 0
        self.capacity = 0
        self._drop_queued()

    def _drop_queued(self):
        """Drop what is queued, counted as failed sends."""
        q = self._q
        with self._count_lock:
            n = len(q)
            q.clear()
            self._queued += n
            self._dropped_send += n

    # ---- lock path ----------------------------------------------------
    def put(self, event):
        """Queue one event tuple (_wire.Encoder lists them); never blocks,
        never raises.  A deque's append is atomic under the GIL: no lock."""
        q = self._q
        n = len(q)
        if n < self.capacity:
            q.append(event)
            # >=: the wrappers' own appends (fast_below) may race past it
            if n >= self._wake_at and not self._wake.is_set():
                self._wake.set()
            return
        with self._count_lock:
            if self._is_off:
                # a call under way when reporting turned off: what was
                # queued went the same way (queued and dropped, as
                # _drop_queued() counts those)
                self._queued += 1
                self._dropped_send += 1
            else:
                self._dropped_full += 1

    @property
    def tap(self):
        """The test hook: called with each event on the lock path when set
        (tests/interop/reporters/python records the waits it reports).  Set,
        it puts a tapping put() on the instance, so that put() itself has no
        test to make when there is no tap."""
        return self._tap

    @tap.setter
    def tap(self, fn):
        self._tap = fn
        self.fast_below = self._wake_at if fn is None else 0
        if fn is None:
            self.__dict__.pop("put", None)
            return
        put = Reporter.put.__get__(self)

        def tapped(event):
            try:
                fn(event)
            except Exception:
                pass
            put(event)
        self.put = tapped

    def send_soon(self):
        """A lost line was queued: wake the sender now rather than at its next
        tick (the agent times a lease overrun by the line's arrival)."""
        self._wake.set()

    # ---- sender thread ------------------------------------------------
    def _run(self):
        try:
            on = self._start()
        finally:
            self.ready.set()    # whatever happened: nobody waits for ever
        while on and not self._stop:
            self._wake.wait(self.flush_seconds)
            self._wake.clear()
            self.flush()

    def flush(self):
        """Send what is queued now (the sender thread, atexit, tests): the
        events are encoded and packed in one pass, and each datagram goes out
        as soon as it is full, so the thread gives up the GIL (sendto) every
        few dozen lines rather than after the whole batch."""
        if not self.ready.is_set() or self._abandoned:
            return      # the settings are still being applied: kept queued
        with self._flush_lock:
            q = self._q
            todo = len(q)
            if not todo:
                return
            popleft = q.popleft
            encode = self._encoder.encode
            budget = self._budget
            cur = []
            size = n = bad = 0
            self._unix = int(time.time())
            res = [0, 0, 0]     # lines sent, lines failed, datagrams
            while n < todo:
                try:
                    ev = popleft()
                except IndexError:
                    break
                n += 1
                try:
                    ln = encode(ev)
                except Exception:
                    bad += 1  # a value the encoder cannot take: dropped, counted
                    continue
                size += len(ln) + 1
                if size > budget and cur:
                    self._send(cur, res)
                    cur = []
                    size = len(ln) + 1
                cur.append(ln)
            if cur:
                self._send(cur, res)
            with self._count_lock:
                self._queued += n   # one line per event (a refused one counted too)
                self._sent_lines += res[0]
                self._dropped_send += res[1] + bad
                self._sent_datagrams += res[2]

    def _send(self, lines, res):
        """One datagram of lines (a line longer than the budget goes alone:
        the agent reads up to 8192 bytes), signed when a key is set, to every
        destination; res counts it (sent when one destination took it)."""
        lines.append(b"")
        body = b"\n".join(lines)
        nl = body.count(b"\n")
        key = self.config.key
        if key:
            body = _wire.sign(key, body, self._unix)
        ok = False
        for fam, addr in self.config.destinations:
            try:
                self._socks[fam].sendto(body, addr)
                ok = True
            except (OSError, KeyError):
                pass
        if ok:
            res[0] += nl
            res[2] += 1
        else:
            res[1] += nl

    def close(self):
        """Flush and stop the thread (at exit; tests): once the settings are
        applied, so that the lines of a short run go out too, but waiting
        for that at most EXIT_WAIT.  Past it (DNS or the key file's disk
        hung) what is queued is dropped and counted as failed sends, and
        the thread, which checks _stop once it is done, sends nothing."""
        self._stop = True
        self._wake.set()
        try:
            if not self.wait_ready(EXIT_WAIT):
                self._abandoned = True
                self._drop_queued()
                return
            self.flush()
        except Exception:
            pass

    def stats(self):
        """Counters, in lines as in the other languages' reporters: queued
        (lines made from the events the sender took off the queue, one per
        event; an event the encoder refused counts as one), sent (lines in
        a datagram at least one destination accepted), datagrams,
        dropped_queue_full (events), dropped_send_failed, pending (events
        in the queue now, not yet made into lines)."""
        with self._count_lock:
            return {"queued": self._queued, "sent": self._sent_lines,
                    "datagrams": self._sent_datagrams,
                    "dropped_queue_full": self._dropped_full,
                    "dropped_send_failed": self._dropped_send,
                    "pending": len(self._q)}


def is_loopback(address):
    """127.0.0.0/8, ::1 and IPv4-mapped loopback: no 1500-byte MTU on the
    way."""
    try:
        a = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(a, "ipv4_mapped", None)
    return a.is_loopback or (mapped is not None and mapped.is_loopback)


_reporter = None
_reporter_lock = threading.Lock()
# The process's reporter when it reports (or may: its settings still being
# applied), else None: what the wrappers read first
# (`_sender.active or _sender.get()`), one global load on the lock path.
active = None


def get():
    """The process's reporter, made from the environment on first use; None
    when reporting is off (the wrappers then only call the library).
    Threads that race here on first use get the one the first of them made
    (each making its own would close the others' with their lines).  The
    first use is a lock call: this returns at once, the reporter's thread
    applies the settings (DNS, the key file) and events queue meanwhile."""
    r = current()
    return r if r.config.enabled else None


def current():
    """The process's reporter, made on first use, on or off; never waits."""
    r = _reporter
    if r is None:
        with _reporter_lock:
            if _reporter is None:
                _install(None, None, None, {})
            r = _reporter
    return r


_settings = None


def _install(samples, key_file, owner, kw):
    """Make the reporter of these settings the process's (under
    _reporter_lock); returns the one it replaced, for the caller to close."""
    global _reporter, _settings, active
    _settings = (samples, key_file, owner, kw)
    old = _reporter
    try:
        cfg = _config.load(samples, key_file, owner)
    except Exception as e:  # never fail the application's start
        _config.log.warning("lockwatch reporter: %s; off", e)
        cfg = _config.Config([], None, _config.default_process(), enabled=False)
    _reporter = Reporter(cfg, **kw)
    active = _reporter if _reporter.config.enabled else None
    return old


def configure(samples=None, key_file=None, owner=None, **kw):
    """(Re)make the process's reporter with these settings (None: from the
    environment).  Returns it once its thread has applied them (resolved
    the names, read the key file: the application's start, not a lock
    call, waits for that), or after START_WAIT when that is still under
    way; its config.enabled says whether it reports (True while the
    names are still resolving: lines queue, and are dropped and counted
    if the thread then finds they cannot work)."""
    r = _configure(samples, key_file, owner, kw)
    r.wait_ready(START_WAIT)
    return r


def _configure(samples, key_file, owner, kw):
    with _reporter_lock:
        old = _install(samples, key_file, owner, kw)
        r = _reporter
    if old is not None:
        old.close()
    return r


def _at_exit():
    r = _reporter
    if r is not None:
        r.close()


class _Anchor:
    """What multiprocessing's after-fork registry holds on to (weakly)."""


_mp_anchor = _Anchor()
_mp_hooked = False


def _mp_child(_anchor):
    # In a multiprocessing child, after its bootstrap cleared the parent's
    # finalizers: the process ends with os._exit() (a Process's run()
    # returned, a Pool worker stopped by close()), which runs no atexit
    # hook, but multiprocessing's own exit runs its finalizers first.
    # Priority below 0: after those of the application (and after the
    # children it waits for), as atexit would.
    sys.modules["multiprocessing.util"].Finalize(None, _at_exit, exitpriority=-100)


def _mp_hook():
    """Have every multiprocessing child this process forks flush at its
    end (once per process tree: the registry is inherited)."""
    global _mp_hooked
    mpu = sys.modules.get("multiprocessing.util")
    if _mp_hooked or mpu is None:
        return
    try:
        mpu.register_after_fork(_mp_anchor, _mp_child)
        _mp_hooked = True
    except Exception:
        pass


def _after_fork_in_child():
    # A forked worker (gunicorn, celery, multiprocessing) has no sender
    # thread and another pid: it gets a reporter of its own, with the same
    # settings, and drops what its parent had queued (the parent sends it).
    # A multiprocessing child (fork, or forkserver: this hook runs in the
    # forked process before the child's bootstrap) flushes at its end.
    global _reporter, _reporter_lock, active
    _reporter_lock = threading.Lock()
    _mp_hook()
    if _reporter is None:
        return
    _reporter = active = None
    samples, key_file, owner, kw = _settings
    try:
        _configure(samples, key_file, owner, kw)   # without waiting: maybe a lock call's thread
    except Exception:
        pass


atexit.register(_at_exit)
_mp_hook()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
