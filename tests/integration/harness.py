# SPDX-License-Identifier: BSD-3-Clause
"""Shared harness for the lockwatch integration tests.

Every test program starts its own throwaway redis-server (Debian's
/usr/bin/redis-server) on a free loopback port in a temp dir, and its own
lockwatchd ($LOCKWATCH_BUILD/bin/lockwatchd) with a config written to a temp
dir.  Nothing depends on a Redis or a service left running on the machine,
and everything started here is stopped at the end of the test, at interpreter
exit (atexit) and on SIGTERM (tests/run-all's timeout).

Standard library only, plus Debian's python3-redis.  Run with /usr/bin/python3.

A test program ends with main() here: it exits 77 when every test of it
skipped, and prints each skip reason on a "skipped: " line (testmain.py),
so that tests/run-all shows it as skipped and why.

Every wait here is a bounded polling loop: a test fails with a message (and the
agent's log tail), it never hangs.
"""

import atexit
import faulthandler
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

import redis

import testmain

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("LOCKWATCH_BUILD") or os.path.join(REPO, "build")
LOCKWATCHD = os.path.join(BUILD, "bin", "lockwatchd")
REDIS_SERVER = "/usr/bin/redis-server"
PROMTOOL = "/usr/bin/promtool"

# Everything we started, so that atexit / SIGTERM can clean it up.
_live_procs = []
_temp_dirs = []
_cleanup_lock = threading.Lock()


def _cleanup_all():
    with _cleanup_lock:
        for p in list(_live_procs):
            try:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=5)
            except Exception:
                pass
        _live_procs.clear()
        for d in list(_temp_dirs):
            shutil.rmtree(d, ignore_errors=True)
        _temp_dirs.clear()


atexit.register(_cleanup_all)


def _mkdtemp(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    _temp_dirs.append(d)
    return d


def _forget(proc):
    try:
        _live_procs.remove(proc)
    except ValueError:
        pass


def tail(path, n=60):
    """The last n lines of a file, as text (never raises)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return "(no log: %s)" % e
    lines = data.decode("utf-8", "replace").splitlines()
    return "\n".join(lines[-n:])


# --------------------------------------------------------------------------
# ports and polling

def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def free_ports(n):
    """n distinct such ports (all held open while they are picked, so one
    call never returns the same port twice).  Another process may still
    take one before it is used: callers that start a program on several
    retry when it says its address is in use."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def listens(pid, port):
    """True when process pid holds the socket listening on TCP port (so an
    answer on that port is its own, not another program's that bound it
    first).  True as well where /proc cannot tell."""
    inodes = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(cols[9])
        except OSError:
            return True
    if not inodes:
        return False
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False


class Fatal(AssertionError):
    """Raised inside a polled predicate to stop waiting at once."""


def wait_until(predicate, timeout, interval=0.1, desc="condition"):
    """Poll predicate() until it returns a truthy value (returned) or timeout
    seconds pass (AssertionError naming desc and the last value or error).
    An exception from predicate counts as "not yet" (it is shown if time runs
    out), except Fatal, which ends the wait at once."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = predicate()
            if last:
                return last
        except Fatal:
            raise
        except Exception as e:  # transient: connection refused, 404 yet, ...
            last = "%s: %s" % (type(e).__name__, e)
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s (last: %r)"
                                 % (timeout, desc, _short(last)))
        time.sleep(interval)


def _short(v, n=400):
    s = repr(v)
    return s if len(s) <= n else s[:n] + "..."


def sanitized():
    """True when lockwatchd is a sanitizer build (CI's second pass is ASan;
    `make SANITIZE=thread` is TSan): its memory figures are the sanitizer's
    shadow and quarantine, so RSS bounds do not apply."""
    try:
        with open(LOCKWATCHD, "rb") as f:
            data = f.read()
        return b"__asan_init" in data or b"__tsan_init" in data
    except OSError:
        return False


def _status_mb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no %s for pid %d" % (field, pid))


def vm_rss_mb(pid):
    """A process's resident set (VmRSS of /proc/PID/status), in MB."""
    return _status_mb(pid, "VmRSS")


def peak_rss_mb(pid):
    """A process's peak resident set (VmHWM of /proc/PID/status), in MiB."""
    return _status_mb(pid, "VmHWM")


def timed_get(port, path, timeout=1.0):
    """One GET on a fresh connection to 127.0.0.1:port, the whole answer
    read within timeout seconds: (status, or None when there was no whole
    answer in time, and the seconds it took)."""
    t0 = time.monotonic()
    s = None
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.sendall(("GET %s HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n"
                   % path).encode())
        data = b""
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                return None, time.monotonic() - t0
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        line = data.split(b"\r\n", 1)[0].split()
        return (int(line[1]) if len(line) >= 2 else None), time.monotonic() - t0
    except OSError:
        return None, time.monotonic() - t0
    finally:
        if s is not None:
            s.close()


# --------------------------------------------------------------------------
# redis-server

# --------------------------------------------------------------------------
# TLS: certificates made by openssl in a temp dir, and whether the build has TLS

def tls_built():
    """(True, "") when lockwatchd was built with TLS (hiredis 1.x with
    hiredis_ssl), else (False, the reason lockwatchd -V gives)."""
    r = subprocess.run([LOCKWATCHD, "-V"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    out = r.stdout.decode("utf-8", "replace")
    m = re.search(r"TLS \(rediss://\): (.*)", out)
    if m is None:
        return False, "lockwatchd -V does not say whether TLS is built in: %r" % out
    return m.group(1).strip() == "yes", out.strip().replace("\n", "; ")


class TLSCerts:
    """A test CA and, signed by it, a server certificate and a client
    certificate, made with openssl in a fresh temp dir (EC P-256, fast).

    names: the server certificate's subjectAltName entries ("DNS:localhost",
    "IP:127.0.0.1").  Attributes are paths: ca, server_crt, server_key,
    client_crt, client_key.  other_ca() makes a second, unrelated CA;
    expired_server() a server certificate whose validity ended."""

    def __init__(self, names=("DNS:localhost", "IP:127.0.0.1")):
        self.dir = _mkdtemp("lw-tls-")
        self.names = list(names)
        self.ca, self.ca_key = self._ca("ca", "lockwatch test CA")
        self.server_crt, self.server_key = self._leaf("server", "localhost", self.names)
        self.client_crt, self.client_key = self._leaf("client", "lockwatch-client", None,
                                                      usage="clientAuth")

    def _openssl(self, *args):
        r = subprocess.run(["openssl"] + list(args), cwd=self.dir, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("openssl %s: %s" % (" ".join(args), r.stdout.decode()))

    def path(self, name):
        return os.path.join(self.dir, name)

    def _ca(self, base, cn):
        self._openssl("req", "-x509", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
                      "ec_paramgen_curve:P-256", "-keyout", base + ".key", "-out",
                      base + ".crt", "-days", "3650", "-subj", "/CN=" + cn)
        return self.path(base + ".crt"), self.path(base + ".key")

    def _leaf(self, base, cn, names, usage="serverAuth,clientAuth", days=365, ca=None,
              ca_key=None):
        ext = self.path(base + ".ext")
        with open(ext, "w") as f:
            f.write("basicConstraints=CA:FALSE\nextendedKeyUsage=%s\n" % usage)
            if names:
                f.write("subjectAltName=%s\n" % ",".join(names))
        self._openssl("req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
                      "ec_paramgen_curve:P-256", "-keyout", base + ".key", "-out",
                      base + ".csr", "-subj", "/CN=" + cn)
        self._openssl("x509", "-req", "-in", base + ".csr", "-CA", ca or self.ca, "-CAkey",
                      ca_key or self.ca_key, "-CAcreateserial", "-out", base + ".crt",
                      "-days", str(days), "-extfile", ext)
        return self.path(base + ".crt"), self.path(base + ".key")

    def other_ca(self):
        """A second CA that signed nothing of this set: its certificate's path."""
        return self._ca("other-ca", "unrelated CA")[0]

    def expired_server(self):
        """(crt, key): a server certificate from the same CA whose validity
        ended a day ago (openssl x509 -days -1)."""
        return self._leaf("expired", "localhost", self.names, days=-1)

    def target_extra(self, client_cert=True):
        """The [target] TLS keys that trust this CA (and present the client
        certificate)."""
        extra = {"tls_ca_file": self.ca}
        if client_cert:
            extra.update(tls_cert_file=self.client_crt, tls_key_file=self.client_key)
        return extra

    def server_args(self, port, crt=None, key=None, auth_clients="yes"):
        """redis-server arguments: TLS only on port (--port 0), client
        certificates required."""
        return ["--port", "0", "--tls-port", str(port),
                "--tls-cert-file", crt or self.server_crt,
                "--tls-key-file", key or self.server_key,
                "--tls-ca-cert-file", self.ca, "--tls-auth-clients", auth_clients]

    def redis_kw(self):
        """redis-py keyword arguments for a client of a server these made."""
        return dict(ssl=True, ssl_ca_certs=self.ca, ssl_certfile=self.client_crt,
                    ssl_keyfile=self.client_key, ssl_cert_reqs="none")


class PortTaken(RuntimeError):
    """A server could not bind its port: something else took it."""


class RedisServer:
    """A throwaway redis-server on 127.0.0.1:<free port>, in a temp dir.
    RedisServer(tls=TLSCerts()) listens with TLS only (see TLSCerts)."""

    def __init__(self, port=None, start=True, args=(), password=None, tls=None,
                 tls_crt=None, tls_key=None):
        """args: extra redis-server arguments.  password: requirepass, also
        used by client() and the PING that waits for start-up.  tls: a
        TLSCerts; tls_crt/tls_key: another server certificate of it."""
        self.port = port or free_port()
        self.extra_args = list(args)
        self.password = password
        self.tls = tls
        self.tls_crt, self.tls_key = tls_crt, tls_key
        self.dir = _mkdtemp("lw-redis-")
        self.logfile = os.path.join(self.dir, "redis.log")
        self.proc = None
        if start:
            # A free port can be taken by another test's process between
            # free_port() and redis-server's bind (tests/run-all runs
            # several at once): a port nobody has seen yet may move.
            for attempt in range(3):
                try:
                    self.start()
                    break
                except PortTaken:
                    if port is not None or attempt == 2:
                        raise
                    self.port = free_port()

    def start(self, timeout=10):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", self.dir, "--save", "", "--appendonly", "no",
                "--daemonize", "no", "--logfile", self.logfile] + self.extra_args
        if self.tls is not None:
            args += self.tls.server_args(self.port, self.tls_crt, self.tls_key)
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        _live_procs.append(self.proc)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                why = tail(self.logfile)
                _forget(self.proc)
                raise (PortTaken if "Address already in use" in why else RuntimeError)(
                    "redis-server on port %d exited %s:\n%s"
                    % (self.port, self.proc.returncode, why))
            try:
                c = redis.Redis(host="127.0.0.1", port=self.port, password=self.password,
                                socket_timeout=1, socket_connect_timeout=1,
                                **(self.tls.redis_kw() if self.tls else {}))
                if c.ping():
                    c.close()
                    return self
            except redis.RedisError:
                pass
            if time.monotonic() >= deadline:
                raise RuntimeError("redis-server on port %d did not answer PING "
                                   "within %ss:\n%s" % (self.port, timeout,
                                                         tail(self.logfile)))
            time.sleep(0.05)

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def url(self):
        return "%s://127.0.0.1:%d/0" % ("rediss" if self.tls else "redis", self.port)

    def client(self, **kw):
        kw.setdefault("socket_timeout", 30)
        kw.setdefault("socket_connect_timeout", 5)
        kw.setdefault("password", self.password)
        for k, v in (self.tls.redis_kw() if self.tls else {}).items():
            kw.setdefault(k, v)
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def stop(self, timeout=10):
        """SIGTERM and wait."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)   # in case it was paused
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc is not None:
            _forget(self.proc)

    def pause(self):
        """SIGSTOP: the server keeps its socket but answers nothing."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def kill(self):
        """SIGKILL (kill -9) and reap."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc is not None:
            _forget(self.proc)

    def restart(self, timeout=20):
        """Start again on the SAME port (after stop() or kill())."""
        self.stop()
        # The port can be briefly busy after a kill; retry within timeout.
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.start()
            except RuntimeError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def load(client, commands, chunk=5000):
    """Run commands (iterable of argument tuples) through non-transactional
    pipelines of `chunk` commands each."""
    pipe = client.pipeline(transaction=False)
    n = 0
    for cmd in commands:
        pipe.execute_command(*cmd)
        n += 1
        if n % chunk == 0:
            pipe.execute()
    pipe.execute()
    return n


# --------------------------------------------------------------------------
# Prometheus text format

_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LNAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def parse_metrics(text):
    """Parse a Prometheus text exposition (0.0.4) into a list of
    (name, labels dict, value float).  bytes are decoded as strict UTF-8
    (the format requires it).  Label values are unescaped (\\\\, \\", \\n);
    any other escape, or a malformed line, raises ValueError."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")  # strict on purpose
    out = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            out.append(_parse_sample(line))
        except ValueError as e:
            raise ValueError("line %d: %s: %s" % (lineno, e, _short(line, 200)))
    return out


def _parse_sample(line):
    m = _NAME_RE.match(line)
    if not m:
        raise ValueError("no metric name")
    name = m.group(0)
    i = m.end()
    labels = {}
    if i < len(line) and line[i] == "{":
        i += 1
        while True:
            while i < len(line) and line[i] in " \t":
                i += 1
            if i < len(line) and line[i] == "}":
                i += 1
                break
            lm = _LNAME_RE.match(line, i)
            if not lm:
                raise ValueError("bad label name at column %d" % i)
            lname = lm.group(0)
            i = lm.end()
            if line[i:i + 2] != '="':
                raise ValueError("expected =\" after label %s" % lname)
            i += 2
            buf = []
            while True:
                if i >= len(line):
                    raise ValueError("unterminated label value")
                c = line[i]
                if c == "\\":
                    if i + 1 >= len(line):
                        raise ValueError("dangling backslash")
                    e = line[i + 1]
                    if e == "\\":
                        buf.append("\\")
                    elif e == '"':
                        buf.append('"')
                    elif e == "n":
                        buf.append("\n")
                    else:
                        raise ValueError("invalid escape \\%s" % e)
                    i += 2
                elif c == '"':
                    i += 1
                    break
                else:
                    buf.append(c)
                    i += 1
            if lname in labels:
                raise ValueError("duplicate label %s" % lname)
            labels[lname] = "".join(buf)
            while i < len(line) and line[i] in " \t":
                i += 1
            if i < len(line) and line[i] == ",":
                i += 1
                continue
            if i < len(line) and line[i] == "}":
                i += 1
                break
            raise ValueError("expected , or } after label %s" % lname)
    rest = line[i:].split()
    if len(rest) not in (1, 2):
        raise ValueError("expected value [timestamp]")
    value = float(rest[0])  # accepts NaN, +Inf, -Inf
    if len(rest) == 2:
        int(rest[1])
    return (name, labels, value)


def _match(labels, filt):
    return all(labels.get(k) == v for k, v in filt.items())


def select(samples, name, **filt):
    """The (labels, value) pairs of metric `name` whose labels include filt."""
    return [(l, v) for (n, l, v) in samples if n == name and _match(l, filt)]


def msum(samples, name, **filt):
    """Sum of the values of metric `name` whose labels include filt."""
    return sum(v for (l, v) in select(samples, name, **filt))


def mmax(samples, name, **filt):
    """Largest value of `name` (None when there is no such sample)."""
    vals = [v for (l, v) in select(samples, name, **filt)]
    return max(vals) if vals else None


def series_count(text):
    """Number of sample lines in an exposition."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    return sum(1 for line in text.split("\n")
               if line.strip() and not line.lstrip().startswith("#"))


def promtool_check(exposition):
    """Run `promtool check metrics` on the exposition (bytes or str).
    Returns (exit code, combined output)."""
    if isinstance(exposition, str):
        exposition = exposition.encode("utf-8")
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=exposition,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace")


# --------------------------------------------------------------------------
# keys

def escape_key(raw):
    """The SPEC's key escaping: bytes < 0x21, > 0x7e and '%' as %XX."""
    return "".join("%%%02X" % b if (b < 0x21 or b > 0x7e or b == 0x25) else chr(b)
                   for b in raw)


def unescape_key(s):
    return urllib.parse.unquote_to_bytes(s)


def agent_lock_keys(ag, target="main"):
    """The keys (bytes) of every lock the agent's API lists for target."""
    st, body = ag.get_json("/api/v1/locks?target=%s&limit=10000" % target)
    assert st == 200, (st, body)
    return {unescape_key(l["key"]) for l in body["locks"]}


def redis_lock_keys(c, match="lock:*"):
    """The keys (bytes) matching match on one node."""
    return set(c.scan_iter(match=match, count=10000))


def url_key(raw):
    """raw key bytes percent-encoded for use as one URL path segment."""
    return urllib.parse.quote(raw, safe="")


# --------------------------------------------------------------------------
# lockwatchd

def config_text(listen_port, targets, *, samples="off", top_offenders=20,
                patterns="lock:*", scan_interval="1s", scan_duty="100%",
                leak_grace="3s", max_hold="5s", max_reentrancy=16,
                target_extra=None, agent_extra=None, rules_extra=None, extra=""):
    """An INI config (SPEC "Config").  targets: list of (name, url);
    agent_extra: more [agent] keys ({"shard": "0/2"}); rules_extra: more
    [rules] keys."""
    lines = ["[agent]",
             "listen = 127.0.0.1:%d" % listen_port,
             "samples = %s" % samples,
             "top_offenders = %s" % top_offenders]
    for k, v in (agent_extra or {}).items():
        lines.append("%s = %s" % (k, v))
    lines.append("")
    for name, url in targets:
        lines += ["[target %s]" % name,
                  "url = %s" % url,
                  "patterns = %s" % patterns,
                  "scan_interval = %s" % scan_interval,
                  "scan_duty = %s" % scan_duty]
        for k, v in (target_extra or {}).items():
            lines.append("%s = %s" % (k, v))
        lines.append("")
    lines += ["[rules]",
              "leak_grace = %s" % leak_grace,
              "max_hold = %s" % max_hold,
              "max_reentrancy = %s" % max_reentrancy]
    lines += ["%s = %s" % kv for kv in (rules_extra or {}).items()] + [""]
    text = "\n".join(lines)
    if extra:
        text += "\n" + extra.strip("\n") + "\n"
    return text


class Agent:
    """lockwatchd -d -c <config in a temp dir>, stderr to a log in that dir.

    Agent(redis_server) watches one target "main"; targets=[(name, url), ...]
    gives several.  Keyword arguments go to config_text()."""

    def __init__(self, redis_server=None, *, targets=None, start=True,
                 start_timeout=15, **cfg):
        if targets is None:
            assert redis_server is not None
            targets = [("main", redis_server.url)]
        self.dir = _mkdtemp("lw-agent-")
        self.port = free_port()
        self.targets = targets
        self.cfg = dict(cfg)
        self.config_path = os.path.join(self.dir, "lockwatch.ini")
        self.logfile = os.path.join(self.dir, "lockwatchd.log")
        self.write_config(self.render_config())
        self.proc = None
        self.started_at = None
        if start:
            self.start(timeout=start_timeout)

    # config
    def render_config(self, **changes):
        cfg = dict(self.cfg)
        cfg.update(changes)
        return config_text(self.port, self.targets, **cfg)

    def write_config(self, text):
        tmp = self.config_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.config_path)

    # process
    def _port_taken(self, retries):
        """True when lockwatchd could not listen because another program
        (a test running beside this one) took the free port between
        free_port() and the bind, and the config is ours to rewrite: then a
        new port is chosen and written."""
        if retries <= 0:
            return False
        try:
            with open(self.config_path) as f:
                ours = f.read() == self.render_config()
            with open(self.logfile, "rb") as f:
                taken = (b"cannot listen on 127.0.0.1:%d " % self.port) in f.read()
        except OSError:
            return False
        if not (ours and taken):
            return False
        self.port = free_port()
        self.write_config(self.render_config())
        return True

    def start(self, timeout=15, retries=3):
        if not os.access(LOCKWATCHD, os.X_OK):
            raise RuntimeError("%s is not built (run make)" % LOCKWATCHD)
        self._log = open(self.logfile, "ab")
        self.proc = subprocess.Popen([LOCKWATCHD, "-d", "-c", self.config_path],
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=self._log)
        _live_procs.append(self.proc)
        self.started_at = time.monotonic()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                if self._port_taken(retries):
                    return self.start(timeout, retries - 1)
                raise AssertionError("lockwatchd exited %s at start-up:\n%s"
                                     % (self.proc.returncode, self.log_tail()))
            try:
                st, _, _ = self.get("/healthz", timeout=2)
                # another test's lockwatchd may have taken the port first and
                # answer: then this one is about to exit (handled above)
                if st == 200 and listens(self.proc.pid, self.port):
                    return self
            except (OSError, http.client.HTTPException):
                pass
            if time.monotonic() >= deadline:
                raise AssertionError("lockwatchd: GET /healthz not 200 within %ss:\n%s"
                                     % (timeout, self.log_tail()))
            time.sleep(0.05)

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def reload(self):
        self.proc.send_signal(signal.SIGHUP)

    def stop(self, timeout=10):
        """SIGTERM; assert it exits 0 within timeout seconds."""
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                t0 = time.monotonic()
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
                    raise AssertionError("lockwatchd did not exit within %ss of "
                                         "SIGTERM:\n%s" % (timeout, self.log_tail()))
                self.stop_seconds = time.monotonic() - t0
            rc = self.proc.returncode
            if rc != 0:
                raise AssertionError("lockwatchd exited %s after SIGTERM (expected 0):\n%s"
                                     % (rc, self.log_tail()))
        finally:
            _forget(self.proc)
            try:
                self._log.close()
            except Exception:
                pass

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
        if self.proc is not None:
            _forget(self.proc)

    def log_tail(self, n=60):
        return tail(self.logfile, n)

    # HTTP
    def get(self, path, timeout=10):
        """GET path -> (status, headers dict with lower-case names, body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
            headers = {k.lower(): v for k, v in r.getheaders()}
            return r.status, headers, body
        finally:
            conn.close()

    def get_json(self, path, timeout=10):
        """GET path -> (status, parsed JSON).  Fails the test when the body is
        not JSON."""
        st, _, body = self.get(path, timeout=timeout)
        try:
            return st, json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise AssertionError("GET %s: %s: body is not valid JSON (%s): %r"
                                 % (path[:200], st, e, body[:300]))

    def release(self, body, token, timeout=30):
        """POST body (a dict) to the release endpoint with the bearer token
        -> (status, body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("POST", "/api/v1/locks/release", body=json.dumps(body),
                         headers={"Authorization": "Bearer " + token,
                                  "Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def metrics_text(self):
        st, headers, body = self.get("/metrics")
        if st != 200:
            raise AssertionError("GET /metrics: %s %r" % (st, body[:300]))
        return body

    def metrics(self):
        return parse_metrics(self.metrics_text())

    def scans_ok(self, target="main"):
        return msum(self.metrics(), "lockwatch_scans_total", target=target, result="ok")

    def wait_for(self, predicate, timeout=20, interval=0.1, desc="condition"):
        """Poll predicate() (exceptions count as "not yet"); fail with the
        agent's log tail after timeout seconds.  Also fails at once if the
        agent died."""
        def check():
            if not self.alive:
                raise Fatal("lockwatchd died (exit %s) while waiting for %s"
                                     % (self.proc.returncode, desc))
            return predicate()
        return wait_until(check, timeout, interval, desc)

    def wait_ready(self, timeout=20):
        return self.wait_for(lambda: self.get("/readyz")[0] == 200, timeout,
                             desc="GET /readyz == 200")

    def wait_scans(self, n=1, target="main", timeout=30):
        """Wait until n more scans of target completed OK (from now).
        Returns the new scans_total{result="ok"}."""
        try:
            base = self.scans_ok(target)
        except Exception:
            base = 0
        def enough():
            v = self.scans_ok(target)
            return v if v >= base + n else None
        return self.wait_for(enough, timeout,
                             desc="%d more ok scan(s) of %s" % (n, target))

    def lock(self, raw_key, target="main"):
        """GET /api/v1/locks/{key} -> (status, JSON)."""
        if isinstance(raw_key, str):
            raw_key = raw_key.encode("utf-8")
        return self.get_json("/api/v1/locks/%s?target=%s"
                             % (url_key(raw_key), urllib.parse.quote(target)))


# The least-privilege scanner of README "Redis permissions" (keep in step).
SCANNER_ACL = ["resetkeys", "~lock:*", "~lockwatch:client:*", "~redisson_lock_queue:*", "-@all",
               "+scan", "+type", "+pttl", "+object|idletime", "+getrange", "+hlen", "+hscan",
               "+zcard", "+zrange", "+exists", "+hmget", "+llen", "+lrange", "+pubsub|numsub",
               "+ping"]


def password_file(password):
    """A file in a fresh temp dir holding password alone, for password_file."""
    path = os.path.join(_mkdtemp("lw-pass-"), "scan.pass")
    with open(path, "w") as f:
        f.write(password + "\n")
    return path


def once_as_user(redis_server, user, password, **cfg):
    """lockwatchd --once on redis_server's target "main" as ACL user `user`
    (password in a password_file); keyword arguments go to config_text().
    The CompletedProcess."""
    path = os.path.join(_mkdtemp("lw-once-"), "lockwatch.ini")
    with open(path, "w") as f:
        f.write(config_text(free_port(),
                            [("main", "redis://%s@127.0.0.1:%d/0" % (user, redis_server.port))],
                            target_extra={"password_file": password_file(password)}, **cfg))
    return run_lockwatchd(["--once", "-c", path], timeout=60)


def run_lockwatchd(args, timeout=30):
    """Run lockwatchd with args; CompletedProcess with stdout/stderr bytes."""
    if not os.access(LOCKWATCHD, os.X_OK):
        raise RuntimeError("%s is not built (run make)" % LOCKWATCHD)
    return subprocess.run([LOCKWATCHD] + list(args), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)


# --------------------------------------------------------------------------
# test case base

class TestCase(unittest.TestCase):
    """Starts redis servers and agents for one test and stops them after it;
    when the test fails, prints the log tails of what it started."""

    def assert_peak_rss_under(self, peak_mb, limit_mb):
        """peak_mb < limit_mb, but for an ASan build (CI's second pass),
        whose RSS is its shadow and quarantine: then it says so."""
        if sanitized():
            print("skipped: the peak RSS bound (an ASan build's RSS is its shadow and "
                  "quarantine)")
        else:
            self.assertLess(peak_mb, limit_mb, "peak RSS %.1f MiB" % peak_mb)

    def setUp(self):
        self._agents = []
        self._redises = []

    def start_redis(self, **kw):
        r = RedisServer(**kw)
        self._redises.append(r)
        self.addCleanup(r.kill)
        return r

    def start_agent(self, *a, **kw):
        # cleanups run last-in first-out: the agent stops (and is checked
        # for a clean exit 0) before the redis servers go.
        ag = Agent(*a, start=False, **kw)
        self._agents.append(ag)
        self.addCleanup(self._stop_agent, ag)
        ag.start(timeout=kw.get("start_timeout", 15))
        return ag

    def _stop_agent(self, ag):
        if ag.proc is not None and ag.proc.returncode is None:
            ag.stop()

    def run(self, result=None):
        before = None
        if result is not None:
            before = len(result.failures) + len(result.errors)
        res = super().run(result)
        r = result if result is not None else res
        if r is not None and before is not None and \
                len(r.failures) + len(r.errors) > before:
            for ag in getattr(self, "_agents", []):
                sys.stderr.write("\n----- lockwatchd log (%s), last lines -----\n%s\n"
                                 % (ag.logfile, ag.log_tail(80)))
            for rs in getattr(self, "_redises", []):
                sys.stderr.write("\n----- redis-server :%d log, last lines -----\n%s\n"
                                 % (rs.port, tail(rs.logfile, 15)))
            sys.stderr.flush()
        return res


def main():
    """unittest.main() with clean-up on SIGTERM and a global safety timeout;
    exits as testmain.main() says (77 when every test skipped)."""
    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    limit = float(os.environ.get("LOCKWATCH_TEST_TIMEOUT", "540"))

    def on_timeout():
        sys.stderr.write("\nharness: global timeout of %.0fs, dumping threads\n" % limit)
        faulthandler.dump_traceback(all_threads=True)
        os.kill(os.getpid(), signal.SIGTERM)
    t = threading.Timer(limit, on_timeout)
    t.daemon = True
    t.start()
    if not os.access(LOCKWATCHD, os.X_OK):
        sys.stderr.write("harness: %s is not built (run make)\n" % LOCKWATCHD)
    testmain.main()
