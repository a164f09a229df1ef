# SPDX-License-Identifier: BSD-3-Clause
"""Helpers for the liblockwatch integration tests (test_client_*.py).

Shell drives build/itests/client_shell (tests/integration/client_shell.c), a
line-oriented liblockwatch driver: one command in, one answer line out.
UdpSink collects the datagrams a client reports to.  REDISSON_* are
Redisson's RLock scripts (RedissonLock.java, reference/lock-formats.md 1.2),
for showing that liblockwatch and Redisson share a lock.

Standard library and python3-redis only; run with /usr/bin/python3.
"""

import os
import queue
import signal
import socket
import subprocess
import threading
import time

from harness import BUILD

ITESTS = os.path.join(BUILD, "itests")
EXAMPLES = os.path.join(BUILD, "examples")

# Redisson RLock acquire (tryLockInnerAsync): KEYS[1] = name,
# ARGV[1] = lease ms, ARGV[2] = "<uuid>:<threadId>".  nil when taken,
# else the holder's PTTL.
REDISSON_ACQUIRE = """
if ((redis.call('exists', KEYS[1]) == 0)
        or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;
return redis.call('pttl', KEYS[1]);
"""

# Redisson RLock unlock (unlockInnerAsync): KEYS = [name, channel,
# unlock latch], ARGV = [0 (UNLOCK_MESSAGE), lease ms, "<uuid>:<threadId>",
# publish command, latch timeout ms].
REDISSON_UNLOCK = """
local val = redis.call('get', KEYS[3]);
if val ~= false then
    return tonumber(val);
end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
    return 0;
else
    redis.call('del', KEYS[1]);
    redis.call(ARGV[4], KEYS[2], ARGV[1]);
    redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
    return 1;
end;
"""


def prefixed(prefix, key):
    """Redisson's prefixName(): the key in braces unless it has a '{'."""
    return "%s:%s" % (prefix, key) if "{" in key else "%s:{%s}" % (prefix, key)


def redisson_acquire(r, key, field, lease_ms=30000):
    return r.eval(REDISSON_ACQUIRE, 1, key, lease_ms, field)


def redisson_unlock(r, key, field, lease_ms=30000):
    latch = prefixed("redisson_unlock_latch", key) + ":" + os.urandom(16).hex()
    res = r.eval(REDISSON_UNLOCK, 3, key, prefixed("redisson_lock__channel", key),
                 latch, 0, lease_ms, field, "publish", 20000)
    r.delete(latch)     # as RedissonBaseLock does right after the unlock
    return res


def parse_kv(line):
    """'OK a=1 b=x' -> {'a': '1', 'b': 'x'} (words without '=' skipped)."""
    out = {}
    for word in line.split()[1:]:
        if "=" in word:
            k, v = word.split("=", 1)
            out[k] = v
    return out


class Shell:
    """build/itests/client_shell against one Redis; see client_shell.c."""

    def __init__(self, testcase, redis_port, env=None):
        path = os.path.join(ITESTS, "client_shell")
        if not os.access(path, os.X_OK):
            raise RuntimeError("%s is not built (run make)" % path)
        e = dict(os.environ)
        e.pop("LOCKWATCH_AGENT", None)
        e.update(env or {})
        self.proc = subprocess.Popen([path, "127.0.0.1:%d" % redis_port],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=e, text=True,
                                     bufsize=1)
        self.pid = self.proc.pid
        self.lines = queue.Queue()
        self.callbacks = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        testcase.addCleanup(self.kill)

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            if line.startswith("LOST-CALLBACK "):
                self.callbacks.put((time.monotonic(), line[len("LOST-CALLBACK "):]))
            else:
                self.lines.put(line)

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def recv(self, timeout=15):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("client_shell %d: no answer within %ss (alive: %s)"
                                 % (self.pid, timeout, self.proc.poll() is None))

    def cmd(self, line, timeout=15):
        self.send(line)
        return self.recv(timeout)

    def ok(self, line, timeout=15):
        """cmd() that must answer OK; returns the answer."""
        ans = self.cmd(line, timeout)
        if not ans.startswith("OK"):
            raise AssertionError("client_shell: %r -> %r" % (line, ans))
        return ans

    def wait_callback(self, timeout):
        try:
            return self.callbacks.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("client_shell %d: no on_lost callback within %ss"
                                 % (self.pid, timeout))

    def stats(self, client):
        return {k: int(v) for k, v in parse_kv("x " + self.cmd("stats %s" % client)).items()}

    def stop(self):
        """SIGSTOP, and wait until every thread is stopped: kill() returns
        before a busy machine has stopped them, and a watchdog thread that
        still runs could renew after the caller has read the lease."""
        os.kill(self.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not self._stopped():
            time.sleep(0.005)

    def _stopped(self):
        try:
            tasks = os.listdir("/proc/%d/task" % self.pid)
            for t in tasks:
                with open("/proc/%d/task/%s/stat" % (self.pid, t)) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
                        return False
        except (OSError, IndexError):
            return True         # gone: nothing runs
        return True

    def cont(self):
        os.kill(self.pid, signal.SIGCONT)

    def quit(self, timeout=15):
        """quit; returns the exit status."""
        try:
            self.send("quit")
        except (BrokenPipeError, ValueError):
            pass
        return self.proc.wait(timeout=timeout)

    def kill(self):
        """Cleanup: quit (so sanitizer and leak reports run) and fail the
        test when the shell did not exit 0."""
        rc = self.proc.poll()
        if rc is None:
            try:
                os.kill(self.pid, signal.SIGCONT)
                self.send("quit")
                rc = self.proc.wait(timeout=15)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=10)
                rc = None           # hung or gone: nothing more to learn
        self._reader.join(timeout=5)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except Exception:
                pass
        if rc not in (0, None):
            rest = []
            while not self.lines.empty():
                rest.append(self.lines.get())
            raise AssertionError("client_shell %d exited %s:\n%s"
                                 % (self.pid, rc, "\n".join(rest[-40:])))


class UdpSink:
    """A UDP socket on 127.0.0.1:<free port> that keeps every datagram."""

    def __init__(self, testcase):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.address = "127.0.0.1:%d" % self.port
        self.datagrams = []
        self._lock = threading.Lock()
        self._stop = False
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        testcase.addCleanup(self.close)

    def _run(self):
        while not self._stop:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            with self._lock:
                self.datagrams.append(data)

    def lines(self):
        with self._lock:
            out = []
            for d in self.datagrams:
                out += d.decode("ascii").split("\n")
            return [l for l in out if l]

    def close(self):
        self._stop = True
        self._t.join(timeout=2)
        self.sock.close()


def closed_udp_port():
    """A UDP port on 127.0.0.1 nothing listens on (right now)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
