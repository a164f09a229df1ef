#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/soak/soak.py - hours of steady load on one lockwatchd: a slow leak or a plateau?

    bench/soak/soak.py [--minutes N] [--csv PATH] [--lockwatchd PATH] [--nice N]
                       [--rate N] [--reload-minutes N] [--restart-minutes N]

`make soak` runs it for SOAK_MINUTES (default 120).  It starts two throwaway
redis-servers (harness.RedisServer: Debian's, free loopback ports, temp dirs)
and one lockwatchd with a target "scan" (incremental = off) and a target
"follow" (incremental = on; its server has notify-keyspace-events Kg$lshzxet),
and a samples listener with a key_file.  For the whole run:

  churn     ~--rate lock acquires/s spread over both targets (and as many
            releases): plain SET NX PX locks, Redisson-style hash locks (some
            re-entered), a few long-held ones and a few leaked ones (no TTL,
            deleted a minute or two later), on ~600 keys of 20 classes a
            target whose ids slide, so new keys keep appearing;
  samples   signed datagrams (wait, hold, waiting, lost lines; 20 classes,
            4 sources, 40 owners) ~4 a second, and every few seconds one
            unsigned, one badly signed and one garbage datagram;
  reads     GET /metrics, /api/v1/locks, /api/v1/events, /readyz every 5 s;
  reload    SIGHUP every 3 minutes (--reload-minutes);
  restart   the scan target's redis-server every 20 minutes (--restart-minutes).
No Redis Cluster target: the two servers cover the agent's tables; the
cluster code's own memory is tests/integration's and bench/cluster's.

Every 30 s a CSV row (elapsed s, lockwatchd's VmRSS and VmHWM in MB, its CPU
seconds, and what it tracks, from its /metrics).  At the end, or on Ctrl-C,
a summary: RSS after the warm-up (the first 5 minutes; half the run when
that is shorter than 10 minutes), its max and last value, and the least-squares
slope of RSS in MB/hour over the first and the last half of the time after
the warm-up: under 1 MB/h in the last half is a plateau.

Figures, never pass/fail: exit 0 when they were produced, 1 when the set-up
failed or the agent died (or did not exit 0 at SIGTERM).  Every process it
starts runs at nice --nice (default 19) and is stopped at exit; the CSV is
kept.  The load costs well under half a CPU core.
"""

import argparse
import hashlib
import hmac
import os
import random
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

NOTIFY = "Kg$lshzxet"
CLASSES = 20
KEYS_PER_CLASS = 30             # live id window per class and target
RECORD_EVERY = 30.0
READ_EVERY = 5.0
COLUMNS = ["elapsed_s", "rss_mb", "hwm_mb", "cpu_s", "locks", "leaked", "long_held",
           "lock_classes", "sample_classes", "offenders", "events_ring", "samples_sources",
           "samples_waiting", "wait_graph_edges", "series", "reloads", "redis_restarts"]


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.n = {}

    def add(self, what, k=1):
        with self.lock:
            self.n[what] = self.n.get(what, 0) + k


def churn(stop, rs, tag, rate, stats):
    """Acquire ~rate locks a second on rs's redis-server and release each when
    its hold is due, until stop.  Survives the server's restarts."""
    rnd = random.Random(tag)
    c = rs.client(socket_timeout=5)
    held = {}                    # key -> release time (monotonic)
    t0 = time.monotonic()
    tick = 0.05
    next_t = t0
    while not stop.is_set():
        now = time.monotonic()
        base = int((now - t0) / 10)      # the id window slides one id per 10 s
        try:
            for key in [k for k, due in held.items() if due <= now]:
                c.delete(key)
                del held[key]
                stats.add("releases")
            acquires = int(rate * tick) + (rnd.random() < (rate * tick) % 1)
            for _ in range(acquires):
                cls = rnd.randrange(CLASSES)
                key = "lock:%s%02d:%d" % (tag, cls, base + rnd.randrange(KEYS_PER_CLASS))
                r = rnd.random()
                if r < 0.005:                                  # leaked: no TTL
                    key = "lock:leak%s%02d:%d" % (tag, cls % 4, base + rnd.randrange(50))
                    ok = c.set(key, "leak-%x" % rnd.getrandbits(48), nx=True)
                    hold = rnd.uniform(20, 120)
                elif r < 0.18:                                 # Redisson-style hash lock
                    key = "lock:rs%s%02d:%d" % (tag, cls, base + rnd.randrange(KEYS_PER_CLASS))
                    field = "%s:%d" % (secrets.token_hex(16), rnd.randrange(1, 64))
                    ok = c.exists(key) == 0
                    if ok:
                        p = c.pipeline()
                        p.hincrby(key, field, 1 + (rnd.random() < 0.2))  # some re-entered
                        p.pexpire(key, 30000)
                        p.execute()
                    hold = rnd.uniform(0.2, 8)
                else:                                          # plain SET NX PX
                    long_held = rnd.random() < 0.01
                    hold = rnd.uniform(40, 90) if long_held else rnd.uniform(0.2, 6)
                    ttl = hold + rnd.uniform(5, 30)
                    if rnd.random() < 0.05:
                        ttl = hold / 2          # expires while held
                    ok = c.set(key, "lw1:soak:%d:%x" % (os.getpid(), rnd.getrandbits(64)),
                               nx=True, px=int(ttl * 1000))
                if ok:
                    held[key] = now + hold
                    stats.add("acquires")
                else:
                    stats.add("contended")
        except redis.RedisError:
            stats.add("redis_errors")
            held.clear()                 # a restart without persistence lost them
            stop.wait(0.5)
        next_t += tick
        stop.wait(max(0.0, next_t - time.monotonic()))
        if time.monotonic() - next_t > 1:
            next_t = time.monotonic()


def signed(key, body):
    cover = b"%d\n" % int(time.time()) + body
    mac = hmac.new(key, cover, hashlib.sha256).hexdigest()[:32].encode()
    return b"lw1 mac " + mac + b" " + cover


def sample_lines(rnd, src):
    """One datagram's lines: a few acquisitions of one source's owners."""
    out = []
    for _ in range(rnd.randint(1, 3)):
        key = "lock:smp%02d:%d" % (rnd.randrange(CLASSES), rnd.randrange(1000))
        owner = "soak-%d:%d/%d" % (src, 4000 + src, rnd.randrange(10))
        holder = "lw1:soak-%d:%d:%x" % (src, rnd.randrange(10), rnd.getrandbits(64))
        wait_us, hold_us = rnd.randrange(50, 200000), rnd.randrange(100, 2000000)
        r = rnd.random()
        if r < 0.1:
            out += ["lw1 waiting %s %s - start" % (key, owner),
                    "lw1 wait %s %d timeout %s -" % (key, wait_us, owner)]
        elif r < 0.15:
            out.append("lw1 waiting %s %s - start" % (key, owner))   # still waiting
        elif r < 0.2:
            out += ["lw1 wait %s %d ok" % (key, wait_us), "lw1 hold %s %d" % (key, hold_us)]
        else:
            out += ["lw1 waiting %s %s %s start" % (key, owner, holder),
                    "lw1 wait %s %d ok %s %s" % (key, wait_us, owner, holder),
                    "lw1 hold %s %d %s %s" % (key, hold_us, owner, holder)]
            if rnd.random() < 0.05:
                out.append("lw1 lost %s %s %s %d %s %s" % (
                    key, owner, holder, hold_us, rnd.choice(["0", "-", "1500"]),
                    rnd.choice(["renewal", "expired"])))
    return ("\n".join(out) + "\n").encode()


def sampler(stop, port, key, stats):
    rnd = random.Random(7)
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(4)]
    for i, s in enumerate(socks):
        s.bind(("127.0.0.%d" % (i + 2), 0))       # four sender addresses: four sources
    dst = ("127.0.0.1", port)
    n = 0
    try:
        while not stop.wait(0.25):
            src = rnd.randrange(len(socks))
            try:
                socks[src].sendto(signed(key, sample_lines(rnd, src)), dst)
                stats.add("datagrams")
                n += 1
                if n % 20 == 0:              # every ~5 s: what must be rejected
                    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                        s.sendto(sample_lines(rnd, 9), dst)
                        s.sendto(signed(b"not the key, not the key", sample_lines(rnd, 9)), dst)
                        s.sendto(bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(1, 300))),
                                 dst)
                    stats.add("bad_datagrams", 3)
            except OSError:
                stats.add("send_errors")
    finally:
        for s in socks:
            s.close()


def reader(stop, agent, stats):
    paths = ["/metrics", "/api/v1/locks", "/api/v1/events", "/readyz"]
    while not stop.wait(READ_EVERY):
        for p in paths:
            try:
                st, _, _ = agent.get(p, timeout=10)
                stats.add("gets")
                if st != 200:
                    stats.add("gets_not_200")
            except Exception:
                stats.add("get_errors")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def record(h, agent, t0, reloads, restarts):
    pid = agent.proc.pid
    m = h.parse_metrics(agent.metrics_text())
    names = lambda name, label: {s[0].get(label) for s in h.select(m, name)}
    ev = h.msum(m, "lockwatch_events_total") - h.msum(m, "lockwatch_events_dropped_total")
    row = [round(time.monotonic() - t0), round(h.vm_rss_mb(pid), 2), round(h.peak_rss_mb(pid), 2),
           round(cpu_seconds(pid), 2),
           h.msum(m, "lockwatch_locks"), h.msum(m, "lockwatch_locks_leaked"),
           h.msum(m, "lockwatch_locks_long_held"),
           len({(s[0].get("target"), s[0].get("class")) for s in h.select(m, "lockwatch_locks")}),
           len(names("lockwatch_acquire_wait_seconds_count", "class")
               | names("lockwatch_hold_seconds_count", "class")),
           len(h.select(m, "lockwatch_lock_offender_info")), ev,
           h.msum(m, "lockwatch_samples_sources"), h.msum(m, "lockwatch_samples_waiting"),
           h.msum(m, "lockwatch_wait_graph_edges"), len(m), reloads, restarts]
    return [int(v) if isinstance(v, float) and v.is_integer() else v for v in row]


def slope(points):
    """Least-squares slope of (t seconds, mb) points, in MB/hour; None under 2 points."""
    if len(points) < 2:
        return None
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    return None if den == 0 else sum((t - mt) * (v - mv) for t, v in points) / den * 3600


def summary(rows, warmup, alive, why):
    pts = [(r[0], r[1]) for r in rows]
    post = [p for p in pts if p[0] >= warmup]
    fmt = lambda s: "n/a (too few rows)" if s is None else "%+.2f MB/h" % s
    print("\nsoak summary: %d rows over %d s, warm-up %d s" % (len(rows), pts[-1][0] if pts else 0,
                                                             warmup))
    if post:
        mid = (post[0][0] + post[-1][0]) / 2
        first = [p for p in post if p[0] <= mid]
        last = [p for p in post if p[0] >= mid]
        s1, s2 = slope(first), slope(last)
        print("  RSS after warm-up %.1f MB, max %.1f MB, at end %.1f MB (VmHWM %.1f MB)"
              % (post[0][1], max(v for _, v in post), post[-1][1], rows[-1][2]))
        print("  RSS slope: first half %s, last half %s" % (fmt(s1), fmt(s2)))
        if s2 is None:
            print("  verdict: too short to tell")
        elif s2 < 1.0:
            print("  verdict: plateau (last half under 1 MB/h)")
        else:
            print("  verdict: still growing: %.2f MB/h" % s2)
        first_row = next(r for r in rows if r[0] >= warmup)
        grew = ["%s %s->%s" % (c, a, b) for c, a, b in zip(COLUMNS[4:15], first_row[4:15],
                                                          rows[-1][4:15]) if a != b]
        print("  tracked after warm-up -> at end: %s" % (", ".join(grew) or "unchanged"))
    else:
        print("  no rows after the warm-up: no figures")
    print("  agent: %s" % ("alive" if alive else "DIED" + (" (%s)" % why if why else "")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=120)
    ap.add_argument("--csv", help="CSV path (default: in a temp dir, printed at start)")
    ap.add_argument("--lockwatchd", help="default: $LOCKWATCH_BUILD or build/, bin/lockwatchd")
    ap.add_argument("--rate", type=float, default=100, help="lock acquires/s over both targets")
    ap.add_argument("--nice", type=int, default=19, help="niceness of all it runs (default 19)")
    ap.add_argument("--warmup-minutes", type=float, default=5)
    ap.add_argument("--reload-minutes", type=float, default=3, help="SIGHUP this often")
    ap.add_argument("--restart-minutes", type=float, default=20,
                    help="restart the scan target's redis-server this often")
    args = ap.parse_args()

    os.nice(max(0, args.nice - os.nice(0)))     # inherited by all it starts
    import harness as h
    if args.lockwatchd:
        h.LOCKWATCHD = os.path.abspath(args.lockwatchd)
    tmp = tempfile.mkdtemp(prefix="lw-soak-")
    csv_path = os.path.abspath(args.csv or os.path.join(tmp, "soak.csv"))
    warmup = min(args.warmup_minutes * 60, args.minutes * 60 / 2)
    print("soak: %s for %g min, nice %d, CSV %s" % (h.LOCKWATCHD, args.minutes, os.nice(0),
                                                    csv_path), flush=True)

    stop = threading.Event()
    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    stats, rows, threads = Stats(), [], []
    agent, alive, why = None, False, ""
    key_file = os.path.join(tmp, "samples.key")
    try:
        key = secrets.token_hex(16).encode()
        with open(os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(key + b"\n")
        rs_scan = h.RedisServer()
        rs_follow = h.RedisServer(args=["--notify-keyspace-events", NOTIFY])
        udp = h.free_port()
        extra = "".join("[target %s]\nurl = %s\npatterns = lock:*\nscan_interval = 5s\n"
                        "incremental = %s\n%s\n" % (n, rs.url, inc, more)
                        for n, rs, inc, more in (("scan", rs_scan, "off", ""),
                                                 ("follow", rs_follow, "on",
                                                  "reconcile_interval = 10m\n")))
        extra += "[samples]\nkey_file = %s\n" % key_file
        agent = h.Agent(targets=[], samples="127.0.0.1:%d" % udp, leak_grace="10s",
                        max_hold="30s", extra=extra)
        agent.wait_ready(timeout=60)
        print("soak: agent pid %d http %d udp %d, redis scan %d follow %d" % (
            agent.proc.pid, agent.port, udp, rs_scan.port, rs_follow.port), flush=True)
        for fn, a in ((churn, (rs_scan, "s", args.rate / 2, stats)),
                      (churn, (rs_follow, "f", args.rate / 2, stats)),
                      (sampler, (udp, key, stats)), (reader, (agent, stats))):
            threads.append(threading.Thread(target=fn, args=(stop,) + a, daemon=True))
            threads[-1].start()

        t0 = time.monotonic()
        end = t0 + args.minutes * 60
        reloads = restarts = 0
        reload_every, restart_every = args.reload_minutes * 60, args.restart_minutes * 60
        next_rec, next_reload, next_restart = t0, t0 + reload_every, t0 + restart_every
        with open(csv_path, "w") as csv:
            csv.write(",".join(COLUMNS) + "\n")
            while agent.alive:
                now = time.monotonic()
                if now >= next_rec:
                    next_rec += RECORD_EVERY
                    try:
                        rows.append(record(h, agent, t0, reloads, restarts))
                    except Exception as e:      # a busy or dying agent: no row this time
                        print("soak: no row: %s" % e, flush=True)
                        continue
                    csv.write(",".join(map(str, rows[-1])) + "\n")
                    csv.flush()
                    print(" ".join("%s=%s" % cv for cv in zip(COLUMNS, rows[-1])), flush=True)
                if now >= end:
                    break
                if now >= next_reload:
                    agent.reload()
                    reloads += 1
                    next_reload += reload_every
                if now >= next_restart:
                    rs_scan.restart()
                    restarts += 1
                    next_restart += restart_every
                time.sleep(min(1.0, max(0.0, min(next_rec, end) - time.monotonic())))
        alive = agent.alive
        why = "" if alive else "exit %s" % agent.proc.returncode
    except KeyboardInterrupt:
        print("\nsoak: interrupted", flush=True)
        alive = agent is not None and agent.alive
    except Exception as e:
        why = "set-up or run failed: %s" % e
        print("soak: %s" % why, file=sys.stderr)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
        if agent is not None:
            if alive:
                try:
                    agent.stop()
                except AssertionError as e:
                    alive, why = False, str(e).split("\n")[0]
            if not alive and agent.proc is not None:
                agent.kill()
                print(agent.log_tail(30), file=sys.stderr)
            shutil.copy(agent.logfile, os.path.join(tmp, "lockwatchd.log"))
        with stats.lock:
            print("soak: load: %s" % ", ".join("%s %d" % kv for kv in sorted(stats.n.items())))
        if rows and rows[-1][0]:
            tm = os.times()
            print("soak: CPU, share of one core: lockwatchd %.1f%%, this driver %.1f%%"
                  % (100 * rows[-1][3] / rows[-1][0], 100 * (tm.user + tm.system) / rows[-1][0]))
        summary(rows, warmup, alive, why)
        if os.path.exists(key_file):
            os.unlink(key_file)
        print("soak: CSV %s, the agent's log in %s" % (csv_path, tmp))
    return 0 if alive and rows else 1


if __name__ == "__main__":
    sys.exit(main())
