# SPDX-License-Identifier: BSD-3-Clause
"""Topologies for the integration tests: a Redis Cluster, a Sentinel set,
the cluster's hash slots, and a TCP proxy to cut (a partition), on top of
harness.py (whose RedisServer, clean-up and polling they reuse).

Everything runs on loopback, on free ports, in temp dirs, and is stopped by
harness' clean-up (atexit, SIGTERM) as well as by the tests' own.
Standard library and python3-redis only.
"""

import errno
import os
import signal
import socket
import subprocess
import threading
import time

import redis

import harness as h

REDIS_CLI = "/usr/bin/redis-cli"


# --------------------------------------------------------------------------
# hash slots (the cluster spec's CRC16, XModem flavour)

def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def keyslot(key):
    if isinstance(key, str):
        key = key.encode("utf-8")
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key) % 16384


# --------------------------------------------------------------------------
# Redis Cluster

def _bindable(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def cluster_port():
    """A free port whose cluster bus port (port + 10000) exists and is free
    too (an ephemeral port above 55535 has none, and the node exits)."""
    for _ in range(200):
        port = h.free_port()
        if port + 10000 <= 65535 and _bindable(port + 10000):
            return port
    for port in range(20000 + os.getpid() % 20000, 45000):
        if _bindable(port) and _bindable(port + 10000):
            return port
    raise RuntimeError("no free port pair for a cluster node")


class Cluster:
    """n primaries (and replicas per primary) made into a cluster with
    `redis-cli --cluster create`.  cluster-require-full-coverage is off so
    the surviving shards keep answering when one primary is stopped."""

    def __init__(self, primaries=3, replicas=0, node_timeout_ms=1000, tls=None, args=()):
        """tls: a harness.TLSCerts: every node TLS-only, the cluster bus and
        replication over TLS too.  args: more redis-server arguments for
        every node."""
        n = primaries * (1 + replicas)
        self.nodes = []
        tls_args = ["--tls-cluster", "yes", "--tls-replication", "yes"] if tls else []
        for _ in range(n):
            port = cluster_port()
            self.nodes.append(h.RedisServer(port=port, tls=tls, args=[
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes-%d.conf" % port,
                "--cluster-node-timeout", str(node_timeout_ms),
                "--cluster-require-full-coverage", "no",
                "--cluster-allow-reads-when-down", "yes"] + tls_args + list(args)))
        addrs = ["127.0.0.1:%d" % r.port for r in self.nodes]
        cli = [REDIS_CLI]
        if tls:
            cli += ["--tls", "--cacert", tls.ca, "--cert", tls.client_crt, "--key",
                    tls.client_key, "--insecure"]
        p = subprocess.run(cli + ["--cluster", "create"] + addrs +
                           ["--cluster-replicas", str(replicas), "--cluster-yes"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        if p.returncode != 0:
            raise RuntimeError("redis-cli --cluster create failed:\n%s"
                               % p.stdout.decode("utf-8", "replace"))
        h.wait_until(self._all_ok, 30, desc="cluster_state:ok on every node")
        self.refresh()

    def _all_ok(self):
        for r in self.nodes:
            if not r.running:
                continue
            info = r.client().execute_command("CLUSTER", "INFO")
            if isinstance(info, bytes):
                info = info.decode()
            if "cluster_state:ok" not in info:
                return False
        # every node must also agree on who serves every slot
        return self._slot_map(self.live()[0]) is not None

    def live(self):
        return [r for r in self.nodes if r.running]

    def _slot_map(self, node):
        slots = node.client().execute_command("CLUSTER", "SLOTS")
        owner = [None] * 16384
        for entry in slots:
            lo, hi, primary = entry[0], entry[1], entry[2]
            port = primary[1]
            for s in range(lo, hi + 1):
                owner[s] = port
        if any(o is None for o in owner):
            return None
        return owner

    def refresh(self):
        """Re-read which primary serves each slot."""
        self.owner = self._slot_map(self.live()[0])
        self.by_port = {r.port: r for r in self.nodes}

    def primaries(self):
        return sorted(set(self.owner), key=lambda p: p)

    def node_of(self, key):
        return self.by_port[self.owner[keyslot(key)]]

    def load(self, commands, chunk=2000):
        """Run (key, *args) commands, each on the primary of its key
        (commands are tuples whose element 1 is the key)."""
        per = {}
        for cmd in commands:
            port = self.owner[keyslot(cmd[1])]
            per.setdefault(port, []).append(cmd)
        for port, cmds in per.items():
            h.load(self.by_port[port].client(), cmds, chunk=chunk)
        return {p: len(c) for p, c in per.items()}

    @property
    def url(self):
        return self.nodes[0].url

    def stop(self):
        for r in self.nodes:
            r.kill()


# --------------------------------------------------------------------------
# Sentinel

class Sentinel:
    """`redis-server <conf> --sentinel` monitoring one primary as master_name.
    Sentinel rewrites its config, so it lives in the temp dir."""

    def __init__(self, master_port, master_name="mymaster", quorum=2,
                 down_after_ms=1000, failover_timeout_ms=6000, tls=None):
        """tls: a harness.TLSCerts: the sentinel listens with TLS only and
        talks TLS to the servers it monitors."""
        self.port = h.free_port()
        self.tls = tls
        self.dir = h._mkdtemp("lw-sentinel-")
        self.conf = os.path.join(self.dir, "sentinel.conf")
        self.logfile = os.path.join(self.dir, "sentinel.log")
        with open(self.conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\n"
                    "sentinel monitor %s 127.0.0.1 %d %d\n"
                    "sentinel down-after-milliseconds %s %d\n"
                    "sentinel failover-timeout %s %d\n"
                    "sentinel parallel-syncs %s 1\n"
                    % (self.port, self.dir, self.logfile, master_name, master_port,
                       quorum, master_name, down_after_ms, master_name,
                       failover_timeout_ms, master_name))
            if tls:
                f.write("port 0\ntls-port %d\ntls-cert-file %s\ntls-key-file %s\n"
                        "tls-ca-cert-file %s\ntls-replication yes\ntls-auth-clients yes\n"
                        % (self.port, tls.server_crt, tls.server_key, tls.ca))
        self.proc = None
        self.start()

    def start(self):
        """Start it, on its port and with the config it rewrote (what it
        learnt of replicas and other sentinels)."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.proc = subprocess.Popen([h.REDIS_SERVER, self.conf, "--sentinel"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        h._live_procs.append(self.proc)
        h.wait_until(lambda: self.client().ping(), 10, desc="sentinel :%d PING" % self.port)

    def client(self):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5,
                           socket_connect_timeout=2,
                           **(self.tls.redis_kw() if self.tls else {}))

    def master_port(self, name="mymaster"):
        addr = self.client().execute_command("SENTINEL", "get-master-addr-by-name", name)
        return int(addr[1]) if addr else None

    def replicas(self, name="mymaster"):
        return self.client().execute_command("SENTINEL", "REPLICAS", name)

    def pause(self):
        """SIGSTOP: it keeps its socket (connects succeed) but answers nothing."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)   # in case it was paused
            self.proc.kill()
            self.proc.wait(timeout=10)
        h._forget(self.proc)


def start_sentinels(test, primary_port, n=3, replicas=1, **kw):
    """n Sentinels monitoring primary_port as "mymaster" (keyword arguments
    go to Sentinel), stopped with test (a harness TestCase); returned once
    each sees the replicas and the other n - 1 sentinels, which a failover
    needs."""
    sentinels = [Sentinel(primary_port, **kw) for _ in range(n)]
    for s in sentinels:
        test.addCleanup(s.kill)

    def ready(s):
        flat = s.client().execute_command("SENTINEL", "MASTER", "mymaster")
        info = {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}
        return len(s.replicas()) == replicas and int(info["num-other-sentinels"]) == n - 1
    for s in sentinels:
        h.wait_until(lambda s=s: ready(s), 30,
                     desc="sentinel :%d sees %d replica(s) and %d sentinels"
                     % (s.port, replicas, n - 1))
    return sentinels


# --------------------------------------------------------------------------
# a partition

class TcpProxy:
    """127.0.0.1:<free port> forwarded to 127.0.0.1:target_port by threads of
    the test.  kill() is a partition: the listener and every connection
    through it closed, so a client's next connect is refused; start()
    listens again on the same port.  silence(match) is a drop without a
    close (a NAT or conntrack entry gone): the connections whose client
    sent match stop passing bytes either way, and stay open; with
    freeze = match, so do those that send it later, until freeze = None.
    throttle = (match, bytes a second) passes the server's bytes to such
    connections no faster than that (a slow link), until throttle = None."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.port = h.free_port()
        self._mu = threading.Lock()
        self._conns = []
        self._flows = []                # [client bytes seen (a head), silent]
        self.freeze = None
        self.throttle = None
        self._listener = None
        self._thread = None
        self.start()

    def start(self):
        assert self._listener is None, "already listening"
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # listening again after kill(): while it was down, a test running
        # beside this one may have taken the port as a connection's local
        # port (a CI rehearsal: EADDRINUSE); such a connection ends soon
        deadline = time.monotonic() + 15
        while True:
            try:
                ls.bind(("127.0.0.1", self.port))
                break
            except OSError as e:
                if e.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                    ls.close()
                    raise
                time.sleep(0.05)
        ls.listen(64)
        self._listener = ls
        self._thread = threading.Thread(target=self._accept, args=(ls,), daemon=True)
        self._thread.start()

    def _accept(self, ls):
        while True:
            try:
                a, _ = ls.accept()
            except OSError:
                return                  # kill(): the listener was shut down
            try:
                b = socket.create_connection(("127.0.0.1", self.target_port), timeout=2)
                b.settimeout(None)
            except OSError:
                a.close()
                continue
            flow = [bytearray(), False]
            with self._mu:
                self._conns += [a, b]
                self._flows.append(flow)
            for src, dst, head in ((a, b, flow), (b, a, None)):
                threading.Thread(target=self._pump, args=(src, dst, head, flow),
                                 daemon=True).start()

    def _slow(self, flow):
        """The throttle's rate for the server's bytes of flow, or None."""
        th = self.throttle
        return th[1] if th is not None and th[0] in flow[0] else None

    def _pump(self, src, dst, head, flow):
        try:
            while True:
                rate = self._slow(flow) if head is None else None
                data = src.recv(65536 if rate is None else 1024)
                if not data:
                    break
                if head is not None and len(head[0]) < 65536:
                    head[0] += data[:65536]
                freeze = self.freeze
                if head is not None and freeze is not None and freeze in head[0]:
                    flow[1] = True
                if rate is not None:
                    time.sleep(len(data) / float(rate))
                if not flow[1]:
                    dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def silence(self, match):
        """Drop, without closing, every connection whose client has sent
        match (bytes): how many."""
        n = 0
        with self._mu:
            for flow in self._flows:
                if match in flow[0] and not flow[1]:
                    flow[1] = True
                    n += 1
        return n

    def kill(self):
        ls, self._listener = self._listener, None
        if ls is None:
            return
        ls.shutdown(socket.SHUT_RDWR)   # wakes accept() (Linux), refuses connects
        ls.close()
        self._thread.join(timeout=5)
        with self._mu:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


# --------------------------------------------------------------------------
# lockctl

LOCKCTL = os.path.join(h.BUILD, "bin", "lockctl")


def lockctl(args, timeout=60):
    """Run lockctl with args; CompletedProcess with stdout/stderr bytes."""
    return subprocess.run([LOCKCTL] + list(args), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def start_cluster(test, primaries=3, replicas=0, args=()):
    """A Cluster whose nodes stop with test (a harness TestCase)."""
    c = Cluster(primaries=primaries, replicas=replicas, args=args)
    test.addCleanup(c.stop)
    test._redises.extend(c.nodes)
    return c


def write_file(d, name, text, mode=0o600):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def elapsed_since(t0):
    return time.monotonic() - t0
