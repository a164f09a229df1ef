# SPDX-License-Identifier: BSD-3-Clause
"""The acceptance checks every reporter's interop test runs (issue 25,
tests/interop/reporters/<lang>/test): a real redis-server and a real
lockwatchd (tests/integration/harness.py), and the language's check program
(built by tests/interop/reporters/<lang>/fetch), which drives the real lock
libraries through the reporter and prints one JSON object per mode:

  contend  8 workers on 4 locks for CONTEND_SECONDS (20 s): the agent's
           wait count per class equals the acquires made, and so does the
           count of `waiting` end lines (every acquire that acquired says
           `waiting ... ok`); its window P99 per class is
           within 1% of the nearest-rank P99 of the waits the reporter sent
           (read back from the reporter's tap), and of the waits the
           program timed itself (within 1% or 1 ms: those include the
           wrapper's own nanoseconds and the scheduler's)
  down     agent down / port closed / name unresolvable: the same results
           as the bare library, no call blocked (the P99 per call through the
           reporter at most DOWN_MAX_EXTRA_MS over the bare library's); the
           per-call medians and maxima are printed
  lost     a lease that runs out while held and is taken by another: the
           agent counts lost_* and waiting_* events
  lease    (issue 26) a Redisson watchdog holder (lockWatchdogTimeout
           LEASE_WATCHDOG_MS) paused with SIGSTOP past its lease while
           another client takes the lock: LockLeaseLost within leak_grace +
           2 s of the expiry, naming the holder; after it resumes and its
           unlock is refused (lost, hold), lockwatch_lease_overrun_seconds
           has the overrun within 100 ms of the truth (unlock - expiry)
           (Java only: the reporter's check program has the pause mode)
  burst    with [samples] key_file: signed samples are counted; signed with
           a wrong key, rejected as bad_mac and counted nowhere else
  bench    acquire+release through the reporter vs the bare library
           (the median ratio of 20 interleaved round pairs here; 40 in
           bench/reporters/run): printed, never a failure

Prints "ok ..." / "FAIL ..." per check and closes with "N passed, N failed".
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
import harness  # noqa: E402
from harness import msum, select  # noqa: E402

CONTEND_SECONDS = float(os.environ.get("LOCKWATCH_CONTEND_SECONDS", "20"))
DOWN_MAX_EXTRA_MS = 50.0  # the P99 of calls through the reporter over the bare library's
KEY = b"reporter interop key, not a secret"
LEASE_WATCHDOG_MS = 3000
LEAK_GRACE_S = 3            # harness.Agent's default leak_grace


class Checks:
    def __init__(self, lang, cmd):
        self.lang, self.cmd = lang, cmd
        self.passed = self.failed = 0

    def check(self, ok, what):
        print("%s %s: %s" % ("ok  " if ok else "FAIL", self.lang, what), flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def run(self, mode, redis, env=None, timeout=120, **flags):
        args = list(self.cmd) + ["-mode", mode, "-redis", "127.0.0.1:%d" % redis.port]
        for k, v in flags.items():
            args += ["-" + k, str(v)]
        e = dict(os.environ)
        for k in ("LOCKWATCH_SAMPLES", "LOCKWATCH_KEY_FILE", "LOCKWATCH_OWNER"):
            e.pop(k, None)
        e.update(env or {})
        p = subprocess.run(args, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        if p.returncode != 0:
            raise AssertionError("%s -mode %s exited %d: %s" % (self.cmd[-1], mode, p.returncode,
                                                                 p.stderr.decode(errors="replace")[-2000:]))
        lines = [l for l in p.stdout.decode().splitlines() if l.startswith("{")]
        return json.loads(lines[-1])


def udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def p99_gauge(m, cls):
    v = select(m, "lockwatch_acquire_wait_p99_seconds", **{"class": cls})
    return v[0][1] * 1e6 if v else None


def waiting_ends(agent):
    return msum(agent.metrics(), "lockwatch_samples_events_total", kind="waiting_end")


def contend(c, redis, agent, udp):
    ends0 = waiting_ends(agent)
    r = c.run("contend", redis, {"LOCKWATCH_SAMPLES": "127.0.0.1:%d" % udp, "LOCKWATCH_OWNER": "interop-" + c.lang},
              secs=CONTEND_SECONDS)
    if r.get("library_failures"):
        # the library's own errors (passed through, reported as `error` waits:
        # the counts below include them), not the reporter's
        print("info %s: contend: the library itself failed %d call(s): %s"
              % (c.lang, r["library_failures"], r.get("library_failed", "")), flush=True)
    c.check(r["failures"] == 0 and r["flushed"],
            "contend: %d workers' calls all succeeded (%d failed%s), queue flushed (%s; stats %s)"
            % (8, r["failures"], (": " + r["failed"]) if r.get("failed") else "", r["flushed"],
               json.dumps(r["stats"], sort_keys=True)))
    keys = r["keys"]
    want = {k: v["acquires"] for k, v in keys.items()}

    def counted():
        m = agent.metrics()
        return all(msum(m, "lockwatch_acquire_wait_seconds_count", **{"class": k}) == n for k, n in want.items())
    try:
        agent.wait_for(counted, timeout=10, desc="every acquire counted")
    except AssertionError:
        pass
    m = agent.metrics()
    # every acquire acquired (they block): each said whose its holder id is
    # with `waiting ... ok`, and its hold ended that pair
    made = sum(want.values())
    ends = msum(m, "lockwatch_samples_events_total", kind="waiting_end") - ends0
    c.check(ends == made and msum(m, "lockwatch_samples_waiting") == 0,
            "contend: %d `waiting` end lines for %d acquires, %d owners left waiting"
            % (ends, made, msum(m, "lockwatch_samples_waiting")))
    for k, v in sorted(keys.items()):
        got = msum(m, "lockwatch_acquire_wait_seconds_count", **{"class": k})
        c.check(got == v["acquires"] and v["reported"] == v["acquires"],
                "class %s: agent counted %d waits, the program made %d acquires" % (k, got, v["acquires"]))
        agent_p99 = p99_gauge(m, k)
        rep, meas = v["reported_p99_us"], v["measured_p99_us"]
        if agent_p99 is None or rep <= 0:
            c.check(False, "class %s: no P99 (agent %s, reported %s)" % (k, agent_p99, rep))
            continue
        rel = abs(agent_p99 - rep) / rep
        # DDSketch with alpha = 1% is within 1% of the exact value, to the last
        # bit when the value sits on a bucket's edge: allow the float's rounding
        c.check(rel <= 0.01 + 1e-9, "class %s: agent P99 %.0f us vs the reported waits' P99 %d us (%.2f%%)"
                % (k, agent_p99, rep, 100 * rel))
        relm = abs(agent_p99 - meas) / meas if meas else 1
        c.check(relm <= 0.01 or abs(agent_p99 - meas) <= 1000,
                "class %s: agent P99 %.0f us vs the program's own timing %d us (%.2f%%)"
                % (k, agent_p99, meas, 100 * relm))


def down(c, redis, agent, udp):
    cases = [("agent down", "127.0.0.1:%d" % udp), ("port closed", "127.0.0.1:%d" % udp_port()),
             ("address unresolvable", "lockwatch-nowhere.invalid:9717")]
    for what, dest in cases:
        r = c.run("down", redis, {"LOCKWATCH_SAMPLES": dest})
        # a reporter that blocked (DNS, a blocking send) would slow many calls;
        # one scheduler or GC stall on a busy machine slows one: the P99 tells
        extra_ms = (r["p99_wrapped_us"] - r["p99_bare_us"]) / 1000
        c.check(r["errors_bare"] == 0 and r["errors_wrapped"] == 0 and extra_ms <= DOWN_MAX_EXTRA_MS,
                "%s: %d calls each, no error; per call median %.0f us bare, %.0f us wrapped; P99 %.1f vs %.1f ms; "
                "max %.1f vs %.1f ms; reporter start %.1f ms"
                % (what, r["ops"], r["median_bare_us"], r["median_wrapped_us"], r["p99_bare_us"] / 1000,
                   r["p99_wrapped_us"] / 1000, r["max_bare_us"] / 1000, r["max_wrapped_us"] / 1000,
                   r["start_us"] / 1000))


def lost(c, redis, agent, udp, want_kinds):
    before = agent.metrics()
    r = c.run("lost", redis, {"LOCKWATCH_SAMPLES": "127.0.0.1:%d" % udp})
    c.check(r["lost_lines"] >= len(want_kinds), "lost: the reporter sent %d lost lines (%s)"
            % (r["lost_lines"], json.dumps({k: v for k, v in r.items() if k != "stats"}, sort_keys=True)))
    # what a language's program says its own cases must have given
    for k, want in sorted(r.get("expect", {}).items()):
        c.check(r.get(k) == want, "lost: %s is %r (want %r)" % (k, r.get(k), want))

    def grew():
        m = agent.metrics()
        return all(msum(m, "lockwatch_samples_events_total", kind=k) > msum(before, "lockwatch_samples_events_total", kind=k)
                   for k in want_kinds)
    try:
        agent.wait_for(grew, timeout=10, desc="lost events counted")
    except AssertionError:
        pass
    m = agent.metrics()
    for k in want_kinds:
        n = msum(m, "lockwatch_samples_events_total", kind=k) - msum(before, "lockwatch_samples_events_total", kind=k)
        c.check(n >= 1, "lost: the agent counted %d %s event(s)" % (n, k))
    ws = msum(m, "lockwatch_samples_events_total", kind="waiting_start")
    we = msum(m, "lockwatch_samples_events_total", kind="waiting_end")
    c.check(ws > 0 and we > 0, "waiting events reach the agent: %d waiting_start, %d waiting_end" % (ws, we))


def lease(c, redis, agent, udp):
    key = "lock:%s:lease:1" % c.lang      # the agent scans lock:*
    cls = "lock:%s:lease:*" % c.lang
    r = redis.client(decode_responses=True)
    e = dict(os.environ)
    for k in ("LOCKWATCH_KEY_FILE", "LOCKWATCH_OWNER"):
        e.pop(k, None)
    e["LOCKWATCH_SAMPLES"] = "127.0.0.1:%d" % udp
    args = list(c.cmd) + ["-mode", "pause", "-redis", "127.0.0.1:%d" % redis.port, "-key", key,
                          "-watchdog", str(LEASE_WATCHDOG_MS)]
    p = subprocess.Popen(args, env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        if not line.startswith("{"):
            raise AssertionError("pause: %r %s" % (line, p.stderr.read()[-2000:] if p.poll() else ""))
        holder = r.hkeys(key)[0]
        # renewed by the watchdog while it runs: the agent sees the TTL go up
        time.sleep(2.5 * LEASE_WATCHDOG_MS / 1000)
        os.kill(p.pid, signal.SIGSTOP)
        t_exp = time.time() + r.pttl(key) / 1000.0
        harness.wait_until(lambda: r.exists(key) == 0, LEASE_WATCHDOG_MS / 1000 + 3, interval=0.01,
                           desc="the paused holder's lease to run out")
        # another client takes the lock (Redisson's layout, another id)
        r.hset(key, "00000000-0000-0000-0000-00000000feed:1", 1)
        r.pexpire(key, 30000)

        def alert():
            st, body = agent.get_json("/api/v1/alerts")
            return [a for a in body["alerts"] if a["labels"]["alertname"] == "LockLeaseLost"
                    and a["labels"].get("key") == key] or None
        a = agent.wait_for(alert, timeout=LEAK_GRACE_S + 10, interval=0.05, desc="LockLeaseLost")
        after = time.time() - t_exp
        c.check(after <= LEAK_GRACE_S + 2 and holder in a[0]["annotations"]["summary"],
                "lease: LockLeaseLost %.2f s after the paused holder's lease ran out (at most "
                "leak_grace + 2 s = %d s), naming holder %s: %s"
                % (after, LEAK_GRACE_S + 2, holder, a[0]["annotations"]["summary"]))
        os.kill(p.pid, signal.SIGCONT)
        time.sleep(0.3)
        p.stdin.write("unlock\n")
        p.stdin.flush()
        out = p.stdout.readline()
        res = json.loads(out) if out.startswith("{") else {}
        p.wait(timeout=30)
        truth = res.get("unlock_ms", 0) / 1000.0 - t_exp

        def overrun():
            m = agent.metrics()
            n = msum(m, "lockwatch_lease_overrun_seconds_count", **{"class": cls})
            return (n, msum(m, "lockwatch_lease_overrun_seconds_sum", **{"class": cls})) if n else None
        n, got = agent.wait_for(overrun, timeout=10, desc="the overrun")
        c.check(res.get("unlock") == "IllegalMonitorStateException" and n == 1 and abs(got - truth) <= 0.1,
                "lease: lockwatch_lease_overrun_seconds has %d overrun of %.3f s, the truth %.3f s "
                "(unlock %s)" % (n, got, truth, res.get("unlock")))
    finally:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
            p.wait(timeout=10)
        for f in (p.stdin, p.stdout, p.stderr):
            f.close()


def signed(c, redis):
    d = harness._mkdtemp("lw-repkey-")
    good, bad = os.path.join(d, "good.key"), os.path.join(d, "bad.key")
    with open(good, "wb") as f:
        f.write(KEY + b"\n")
    with open(bad, "wb") as f:
        f.write(b"some other key, also 16+ bytes\n")
    udp = udp_port()
    agent = harness.Agent(redis, samples="127.0.0.1:%d" % udp, extra="[samples]\nkey_file = %s\n" % good)
    try:
        k_ok, k_bad = "rep:%s:signed:good" % c.lang, "rep:%s:signed:bad" % c.lang
        r = c.run("burst", redis, {"LOCKWATCH_SAMPLES": "127.0.0.1:%d" % udp, "LOCKWATCH_KEY_FILE": good},
                  n=50, key=k_ok)
        cnt = lambda: msum(agent.metrics(), "lockwatch_acquire_wait_seconds_count", **{"class": k_ok})
        try:
            agent.wait_for(lambda: cnt() == 50, timeout=10, desc="signed samples counted")
        except AssertionError:
            pass
        m = agent.metrics()
        rej = sum(msum(m, "lockwatch_samples_rejected_total", reason=x) for x in ("unsigned", "bad_mac", "stale", "truncated", "replay"))
        c.check(cnt() == 50 and r["errors"] == 0 and rej == 0,
                "key_file: 50 signed waits counted (%d), %d datagrams rejected" % (cnt(), rej))
        r = c.run("burst", redis, {"LOCKWATCH_SAMPLES": "127.0.0.1:%d" % udp, "LOCKWATCH_KEY_FILE": bad},
                  n=50, key=k_bad)
        badmac = lambda: msum(agent.metrics(), "lockwatch_samples_rejected_total", reason="bad_mac")
        try:
            agent.wait_for(lambda: badmac() >= 1, timeout=10, desc="bad_mac counted")
        except AssertionError:
            pass
        m = agent.metrics()
        c.check(badmac() >= 1 and not select(m, "lockwatch_acquire_wait_seconds_count", **{"class": k_bad}),
                "key_file: a wrong key's datagrams rejected as bad_mac (%d), its class absent" % badmac())
    finally:
        agent.stop()


def bench(c, redis, udp, **size):
    """size: rounds=, n= (the program's defaults: 40 round pairs of 300 calls)."""
    r = c.run("bench", redis, {"LOCKWATCH_SAMPLES": "127.0.0.1:%d" % udp}, timeout=240, **size)
    for lib, v in sorted(r.items()):
        if isinstance(v, dict) and "ratio" in v:
            print("info %s: overhead %s: acquire+release %.1f us bare, %.1f us through the reporter: x%.3f "
                  "(median ratio of %d interleaved round pairs of %d calls)" % (c.lang, lib, v["bare_us"], v["wrapped_us"], v["ratio"],
                                                               r["rounds"], r["ops_per_round"]), flush=True)


def main(lang, cmd, lost_kinds, pause=False):
    """pause: the check program has the pause mode (the lease check)."""
    c = Checks(lang, cmd)
    t0 = time.monotonic()
    redis = harness.RedisServer()
    udp = udp_port()
    try:
        agent = harness.Agent(redis, samples="127.0.0.1:%d" % udp)
        for name, f in (("contend", lambda: contend(c, redis, agent, udp)),
                        ("lost", lambda: lost(c, redis, agent, udp, lost_kinds)),
                        ("lease", lambda: lease(c, redis, agent, udp) if pause else None),
                        ("bench", lambda: bench(c, redis, udp, rounds=20, n=200))):
            try:
                f()
            except Exception as e:  # a crashed step is one failed check
                c.check(False, "%s: %s" % (name, e))
        agent.stop()
        for name, f in (("down", lambda: down(c, redis, agent, udp)), ("key_file", lambda: signed(c, redis))):
            try:
                f()
            except Exception as e:
                c.check(False, "%s: %s" % (name, e))
    finally:
        redis.stop()
    print("%s: %.0f s" % (lang, time.monotonic() - t0))
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0
