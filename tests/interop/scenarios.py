# SPDX-License-Identifier: BSD-3-Clause
"""The interop scenarios (tests/interop/README.md): real clients take,
re-enter, wait on and release locks; every check asks lockwatch what it saw
(`lockctl --json list/show/release/expire`, the agent's JSON API,
`lockwatchd --once`) and compares it with what the real library did.

Every check is one line, "ok" or "FAIL" with what was expected and what came
back; the run ends with "N passed, N failed".  Waits are bounded polls; the
one timing bound is the issue's: a waiter blocked in the real library
acquires within 1 s of `lockctl release` (each measurement is printed).
"""

import datetime
import json
import os
import shlex
import socket
import subprocess
import sys
import time
import traceback

import clients
import harness
from clientproc import ClientError

LOCKCTL = os.path.join(harness.BUILD, "bin", "lockctl")
WAKE_BOUND = 1.0          # seconds: the bound, asserted as is
PATTERNS = ("lock:*, {lock:*, redisson_*, lock-signal:*, redlock:*, mutex:*, semaphore:*, "
            "job-lock:*, lockwatch:client:*")
ENV_SKEW = 3.0            # seconds an acquisition time may differ from the client's clock


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []
        self.xfailed = []
        self.measured = []

    def check(self, scen, what, cond, detail="", xfail=None):
        """One check.  xfail: the reason it is known to fail (told to the lead); it
        then counts apart, and passing unexpectedly fails the run (XPASS)."""
        if xfail is not None:
            if cond:
                self.failed += 1
                self.failures.append("%s: %s (XPASS: remove the expected-fail mark)" % (scen, what))
                print("FAIL  %-28s %s\n      | XPASS: it passes now; remove its expected-fail mark (%s)"
                      % (scen, what, xfail), flush=True)
            else:
                self.xfailed.append("%s: %s (%s)" % (scen, what, xfail))
                print("XFAIL %-28s %s\n      | %s\n      | known: %s"
                      % (scen, what, str(detail)[:600], xfail), flush=True)
            return bool(cond)
        if cond:
            self.passed += 1
            print("ok    %-28s %s" % (scen, what), flush=True)
        else:
            self.failed += 1
            self.failures.append("%s: %s" % (scen, what))
            print("FAIL  %-28s %s\n      | %s" % (scen, what, str(detail)[:1500].replace("\n", "\n      | ")),
                  flush=True)
        return bool(cond)


R = Results()


class Env:
    """A throwaway redis-server, a config for it, and (on demand) an agent."""

    def __init__(self, scen, **cfg):
        self.scen = scen
        self.rs = harness.RedisServer()
        self.r = self.rs.client(decode_responses=True)
        self.rb = self.rs.client()
        self.cfg = dict(patterns=PATTERNS, scan_interval="500ms", leak_grace="3s",
                        max_hold="60s", scan_duty="100%")
        self.cfg.update(cfg)
        self.dir = harness._mkdtemp("lw-interop-")
        self.config = os.path.join(self.dir, "lockwatch.ini")
        self.listen = harness.free_port()
        with open(self.config, "w") as f:
            f.write(harness.config_text(self.listen, [("main", self.rs.url)], **self.cfg))
        self.procs = []
        self.agent = None

    def client(self, kind, *more, extra=(), name=None):
        c = clients.start(kind, self.rs.port, *more, extra=extra, name=name)
        self.procs.append(c)
        return c

    def close(self):
        for c in self.procs:
            c.kill()
        if self.agent is not None:
            self.agent.kill()
        self.rs.kill()

    # lockctl -------------------------------------------------------------
    def lockctl(self, *args, timeout=30):
        p = subprocess.run([LOCKCTL, "-c", self.config, "--agent", "off", "--json"] + list(args),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout)
        try:
            body = json.loads(p.stdout) if p.stdout.strip() else None
        except ValueError:
            body = p.stdout
        return p.returncode, body, p.stderr

    def show(self, key):
        rc, body, err = self.lockctl("show", key)
        if rc != 0 or not isinstance(body, dict):
            raise AssertionError("lockctl show %s: exit %s %r %s" % (key, rc, body, err))
        return body

    def listed(self):
        """{key: lock} of `lockctl list --state all`."""
        rc, body, err = self.lockctl("list", "--state", "all", "--limit", "10000")
        if rc != 0 or not isinstance(body, dict):
            raise AssertionError("lockctl list: exit %s %r %s" % (rc, body, err))
        return {l["key"]: l for l in body["locks"]}

    def release(self, key, holder, *more):
        return self.lockctl("release", key, "--holder", holder, "--yes", "--reason", "interop",
                            *more)

    # lockwatchd --once -------------------------------------------------------
    def once(self):
        p = harness.run_lockwatchd(["--once", "-c", self.config], timeout=60)
        if p.returncode != 0:
            raise AssertionError("lockwatchd --once exit %s: %s" % (p.returncode, p.stderr[-800:]))
        return harness.parse_metrics(p.stdout)

    # agent ---------------------------------------------------------------------
    def start_agent(self):
        self.agent = harness.Agent(self.rs, start=True, samples="off", **self.cfg)
        return self.agent

    def api_locks(self):
        """{key: lock} from GET /api/v1/locks?state=all after two fresh scans."""
        self.agent.wait_scans(2)
        st, body = self.agent.get_json("/api/v1/locks?state=all&limit=10000")
        if st != 200:
            raise AssertionError("GET /api/v1/locks: %s %r" % (st, body))
        return {l["key"]: l for l in body["locks"]}

    def api_lock(self, key):
        """GET /api/v1/locks/{key} once the agent's scans have seen it (bounded)."""
        def seen():
            st, body = self.agent.lock(key)
            return body if st == 200 else None
        return self.agent.wait_for(seen, 20, desc="GET /api/v1/locks/%s == 200" % key)


def holders(lock):
    return sorted((h["id"], h["count"]) for h in lock.get("holders", []))


def iso_ms(s):
    if not s:
        return None
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def chan(kind, base, key):
    """The unlock channel a Redisson version's waiters subscribe to:
    base "lock" (redisson_lock__channel) or "rw" (redisson_rwlock)."""
    if kind == "redisson-legacy":
        return {"lock": "redisson_lock__channel__{%s}", "rw": "redisson_rwlock__{%s}"}[base] % key
    return {"lock": "redisson_lock__channel:{%s}", "rw": "redisson_rwlock:{%s}"}[base] % key


def redisson_field(proc, ev):
    """<uuid>:<thread id> of the holder that answered ev."""
    rid = proc.ready["info"].split("id=")[1].strip()
    tid = ev["info"].split("thread=")[1].split()[0]
    return "%s:%s" % (rid, tid)


def pasted_releases(env, key):
    """The argv a shell makes of each release command `lockctl show KEY`
    ends with, at 80 columns (issue 24: they paste as they stand)."""
    p = subprocess.run([LOCKCTL, "-c", env.config, "--agent", "off", "show", key],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, COLUMNS="80"))
    lines, out = p.stdout.split("\n"), []
    for i, ln in enumerate(lines):
        if ln.startswith("release ") and ln.endswith(" with:") and i + 1 < len(lines):
            j, cmd = i + 1, lines[i + 1]
            while cmd.endswith("\\") and j + 1 < len(lines):
                j += 1
                cmd += "\n" + lines[j]
            out.append(shlex.split(cmd.replace("\\\n", "")))     # sh drops backslash-newline
    return out


def wake(env, scen, label, key, holder, pend, extra=()):
    """lockctl release of holder; the real library's waiter pend must
    acquire within WAKE_BOUND.  Prints the measured time.  First a release
    naming another holder must be refused and change nothing."""
    hb = holder if isinstance(holder, bytes) else holder.encode("utf-8", "surrogateescape")
    want = [("--holder", hb.decode("utf-8", "replace")), ("--holder-hex", hb.hex())]
    argvs = pasted_releases(env, key)
    R.check(scen, "%s: lockctl show ends with a release command for the holder that a shell "
            "reads as KEY and --holder" % label,
            any("release" in a and key in a and any(
                o in a and a.index(o) + 1 < len(a) and a[a.index(o) + 1] == v for o, v in want)
                for a in argvs), argvs)
    before = env.rb.dump(key)
    rc, body, err = env.release(key, holder + "-not-me", *extra)
    R.check(scen, "%s: lockctl release --holder <another> is refused (exit 1), lock unchanged" % label,
            rc == 1 and env.rb.dump(key) == before and pend.done() is None,
            "exit %s %r %s" % (rc, body, err))
    t0 = time.time()
    rc, body, err = env.release(key, holder, *extra)
    t_rel = time.time() - t0
    if not R.check(scen, "%s: lockctl release --holder <the holder> exits 0" % label, rc == 0,
                   "exit %s %r %s" % (rc, body, err)):
        return None
    try:
        ev = pend.result(timeout=max(15.0, WAKE_BOUND * 5))
    except ClientError as e:
        R.check(scen, "%s: the waiter acquires within %.1f s of lockctl release" % (label, WAKE_BOUND),
                False, "not within 15 s: %s" % e)
        return None
    lat = ev["t"] / 1000.0 - t0
    R.measured.append((scen, label, lat, t_rel))
    print("      measured %-26s %s: waiter acquired %.3f s after lockctl release started "
          "(lockctl itself took %.3f s)" % (scen, label, lat, t_rel), flush=True)
    R.check(scen, "%s: the waiter acquires within %.1f s of lockctl release (%.3f s)"
            % (label, WAKE_BOUND, lat), ev.get("ok") and lat < WAKE_BOUND, ev)
    return ev


def expect_locks(env, scen, expected, where="lockctl list"):
    """Exactly the expected lock keys are listed (no helper key as a lock)."""
    got = env.listed()
    extra = sorted(set(got) - set(expected))
    missing = sorted(set(expected) - set(got))
    R.check(scen, "%s shows exactly the %d real locks (no helper key as a lock)"
            % (where, len(expected)), not extra and not missing,
            "extra %r, missing %r" % (extra, missing))
    return got


def expect_once(env, scen, expected_by_format, leak_allowed=()):
    """lockwatchd --once: lockwatch_locks per format as expected, nothing else,
    and no class leaked (but the classes in leak_allowed, checked apart)."""
    m = env.once()
    got = {}
    for labels, v in harness.select(m, "lockwatch_locks"):
        if v:
            got[labels["format"]] = got.get(labels["format"], 0) + int(v)
    R.check(scen, "lockwatchd --once: lockwatch_locks by format = %r" % (expected_by_format,),
            got == expected_by_format, "got %r" % got)
    leaked = [(l["class"], v) for l, v in harness.select(m, "lockwatch_locks_leaked")
              if v and l["class"] not in leak_allowed]
    R.check(scen, "lockwatchd --once: no leaked lock%s" % (" (but %s)" % ", ".join(leak_allowed)
                                                         if leak_allowed else ""), not leaked, leaked)
    return m


def expect_format(env, scen, key, fmt, lock=None):
    lock = lock or env.show(key)
    R.check(scen, "%s: format %s" % (key, fmt), lock.get("format") == fmt,
            "format %r (holders %r)" % (lock.get("format"), lock.get("holders")))
    return lock


def expect_acquired(scen, key, lock, t_ms):
    at = iso_ms(lock.get("acquired_at"))
    R.check(scen, "%s: acquired_at within %.0f s of the client's own clock" % (key, ENV_SKEW),
            at is not None and abs(at - t_ms / 1000.0) <= ENV_SKEW,
            "acquired_at %r, client acquired at %s" % (lock.get("acquired_at"),
                                                      time.strftime("%H:%M:%S", time.gmtime(t_ms / 1000))))


def until(pred, timeout=20, desc="condition"):
    return harness.wait_until(pred, timeout, 0.05, desc)


def numsub(r, chan):
    return r.pubsub_numsub(chan)[0][1]


# ---------------------------------------------------------------------------
# Redisson


def redisson_rlock(kind):
    scen = kind + "/rlock"
    env = Env(scen)
    try:
        a = env.client(kind, name="a")
        b = env.client(kind, name="b")
        ev = a.do("a1 lock rlock lock:rlock")
        a.do("a1 lock rlock lock:rlock")
        field = redisson_field(a, ev)
        lk = expect_format(env, scen, "lock:rlock", "redisson")
        R.check(scen, "lock:rlock: holder is the Redisson field with count 2",
                holders(lk) == [(field, 2)], holders(lk))
        env.start_agent()
        api = env.api_lock("lock:rlock")
        R.check(scen, "API: lock:rlock format redisson, holder and count", api.get("format") == "redisson"
                and holders(api) == [(field, 2)], api)
        rc, body, err = env.release("lock:rlock", field.replace(":", ":9"))
        R.check(scen, "lockctl release with another holder is refused (exit 1)", rc == 1,
                "exit %s %r" % (rc, body))
        R.check(scen, "... and the lock is untouched", env.r.hget("lock:rlock", field) == "2",
                env.r.hgetall("lock:rlock"))
        pend = b.pending("b1 lock rlock lock:rlock")
        until(lambda: numsub(env.r, chan(kind, "lock", "lock:rlock")) >= 1, desc="b1 subscribed")
        ev2 = wake(env, scen, "RLock waiter", "lock:rlock", field, pend)
        if ev2:
            lk = env.show("lock:rlock")
            R.check(scen, "after release the new holder is b1", holders(lk) == [(redisson_field(b, ev2), 1)],
                    holders(lk))
    finally:
        env.close()


def redisson_rw(kind):
    """Reproduction 1: releasing one reader keeps the other reader's hold."""
    scen = kind + "/rw-one-reader"
    env = Env(scen)
    try:
        a = env.client(kind, name="a")
        b = env.client(kind, name="b")
        fa = redisson_field(a, a.do("a1 lock read lock:rw"))
        fb = redisson_field(b, b.do("b1 lock read lock:rw"))
        b.do("b1 lock read lock:rw")
        lk = expect_format(env, scen, "lock:rw", "redisson-rw")
        R.check(scen, "lock:rw: mode read", lk.get("mode") == "read", lk.get("mode"))
        R.check(scen, "lock:rw: two readers, counts 1 and 2", holders(lk) == sorted([(fa, 1), (fb, 2)]),
                holders(lk))
        expect_locks(env, scen, ["lock:rw"])
        wpend = a.pending("a2 lock write lock:rw")
        until(lambda: numsub(env.r, chan(kind, "rw", "lock:rw")) >= 1, desc="writer subscribed")
        rc, body, err = env.release("lock:rw", fa)
        R.check(scen, "lockctl release of reader A exits 0", rc == 0, "exit %s %r %s" % (rc, body, err))
        h = env.r.hgetall("lock:rw")
        R.check(scen, "reader B keeps its hold (count 2) and mode stays read",
                h.get(fb) == "2" and h.get("mode") == "read" and fa not in h, h)
        R.check(scen, "A's timeout key is gone, B's two remain", kind == "redisson-legacy" or
                not env.r.exists("{lock:rw}:%s:rwlock_timeout:1" % fa)
                and env.r.exists("{lock:rw}:%s:rwlock_timeout:1" % fb)
                and env.r.exists("{lock:rw}:%s:rwlock_timeout:2" % fb),
                sorted(env.r.scan_iter("{lock:rw}:*")))
        R.check(scen, "lock:rw TTL is still set", env.r.pttl("lock:rw") > 0, env.r.pttl("lock:rw"))
        lk = env.show("lock:rw")
        R.check(scen, "lockctl show: one reader B with count 2", holders(lk) == [(fb, 2)], holders(lk))
        R.check(scen, "the writer still waits (B still reads)", wpend.done() is None, wpend.done())
        ok1 = b.do("b1 unlock read lock:rw", ok=None)
        ok2 = b.do("b1 unlock read lock:rw", ok=None)
        R.check(scen, "B unlocks its two holds with Redisson's own unlock", ok1["ok"] and ok2["ok"],
                (ok1, ok2))
        try:
            wev = wpend.result(timeout=15)
            R.check(scen, "then the waiting writer acquires", wev["ok"], wev)
        except ClientError as e:
            R.check(scen, "then the waiting writer acquires", False, e)
            return
        if kind != "redisson-legacy":               # 2.2's writer cannot also take read
            a.do("a2 lock read lock:rw")            # write-then-read reentry
            lk = env.show("lock:rw")
            R.check(scen, "write-then-read: mode write, one holder (the writer's thread)",
                    lk.get("mode") == "write"
                    and len({h["id"].split(":write")[0] for h in lk["holders"]}) == 1, lk)
            a.do("a2 unlock write lock:rw")
            lk = env.show("lock:rw")
            R.check(scen, "writer drops write, keeps read: mode read", lk.get("mode") == "read", lk)
            a.do("a2 unlock read lock:rw")
        else:
            lk = env.show("lock:rw")
            R.check(scen, "the writer holds: mode write, one holder", lk.get("mode") == "write"
                    and len(lk.get("holders", [])) == 1, lk)
            a.do("a2 unlock write lock:rw")
        # a reader released by lockctl wakes a waiting writer
        fr = redisson_field(b, b.do("b2 lock read lock:rw"))
        wpend = a.pending("a3 lock write lock:rw")
        until(lambda: numsub(env.r, chan(kind, "rw", "lock:rw")) >= 1, desc="writer subscribed")
        wake(env, scen, "writer behind the only reader", "lock:rw", fr, wpend)
    finally:
        env.close()


def redisson_readers(kind, n=600):
    """Reproduction 2: a read lock with 600 readers."""
    scen = kind + "/%d-readers" % n
    env = Env(scen)
    try:
        a = env.client(kind, name="a")
        marks = [a.send("r%d lock read lock:rw600" % i) for i in range(n)]
        try:
            evs = [a.expect(after=marks[0], actor="r%d" % i, op="lock", timeout=120) for i in range(n)]
        except ClientError as e:
            got = {ev.get("actor") for ev in a.events[marks[0]:] if ev.get("op") == "lock"}
            raise ClientError("%d of %d readers answered; %s" % (len(got), n, e)) from None
        R.check(scen, "%d readers acquired in Redisson" % n, all(e["ok"] for e in evs),
                [e for e in evs if not e["ok"]][:3])
        lk = expect_format(env, scen, "lock:rw600", "redisson-rw")
        R.check(scen, "mode read", lk.get("mode") == "read", lk.get("mode"))
        R.check(scen, "%d holders" % n, lk.get("holders_total") == n,
                "holders_total %r" % lk.get("holders_total"))
        R.check(scen, "every holder is a reader field with count 1",
                all(h["count"] == 1 and h["id"] != "mode" for h in lk.get("holders", [])),
                lk.get("holders", [])[:3])
        expect_locks(env, scen, ["lock:rw600"])
        expect_once(env, scen, {"redisson-rw": 1})
    finally:
        env.close()


def redisson_helpers(kind):
    """Reproduction 3: of N real Redisson locks, N locks - no helper key as a
    lock or a leak.  Also reproduction 5 (expire/release on helper keys)."""
    scen = kind + "/helper-keys"
    # an idle RSemaphore cannot be told from a numeric token: the operator says
    env = Env(scen, leak_grace="1s", target_extra={"semaphore_patterns": "lock:sem"})
    new = kind == "redisson-new"
    try:
        a = env.client(kind, name="a")
        b = env.client(kind, name="b")
        # leave unlock latches behind (3.24+ writes them on every unlock)
        a.do("a1 lock rlock lock:gone")
        a.do("a1 unlock rlock lock:gone")
        a.do("a1 lock rlock lock:rlock")
        a.do("a1 lock fair lock:fair")
        p1 = b.pending("b1 lock fair lock:fair")
        until(lambda: env.r.llen("redisson_lock_queue:{lock:fair}") >= 1, desc="b1 queued")
        p2 = b.pending("b2 lock fair lock:fair")
        until(lambda: env.r.llen("redisson_lock_queue:{lock:fair}") >= 2, desc="b2 queued")
        a.do("a1 lock read lock:rw")
        b.do("b3 lock read lock:rw")
        a.do("a1 lock spin lock:spin")
        expected = {"lock:rlock": "redisson", "lock:fair": "redisson-fair", "lock:rw": "redisson-rw",
                    "lock:spin": "redisson",
                    # a decimal string that only semaphore_patterns tells from a
                    # numeric token (without the option: plain, checked below)
                    "lock:sem": "redisson-semaphore",
                    "lock:pexp": "redisson-permit-semaphore"}
        if new:
            a.do("a1 lock fenced lock:fenced")
            a.do("a1 lock fenced lock:fenced")
            expected["lock:fenced"] = "redisson-fenced"
        a.do("x init semaphore lock:sem permits=3")
        a.do("a1 acquire semaphore lock:sem")
        b.do("b1x acquire semaphore lock:sem")
        a.do("x init pexp lock:pexp permits=3")
        a.do("a1 acquire pexp lock:pexp lease=60000")
        b.do("b1x acquire pexp lock:pexp")
        got = expect_locks(env, scen, list(expected))
        env.start_agent()
        api = env.api_locks()
        R.check(scen, "API /api/v1/locks?state=all: exactly the real locks",
                sorted(api) == sorted(expected), sorted(api))
        for key, fmt in sorted(expected.items()):
            for where, locks in (("lockctl list", got), ("API", api)):
                if key in locks:
                    R.check(scen, "%s: %s says format %s" % (key, where, fmt), locks[key].get("format") == fmt,
                            "format %r (holders %r)" % (locks[key].get("format"), locks[key].get("holders")))
        for where, locks in (("lockctl list", got), ("API", api)):
            if "lock:pexp" in locks:
                R.check(scen, "lock:pexp: %s says 2 permits in use = 2 holders" % where,
                        locks["lock:pexp"].get("holders_total") == 2, locks["lock:pexp"].get("holders"))
        if "lock:fair" in got:
            lk = env.show("lock:fair")
            R.check(scen, "lock:fair: its holder is a1, its 2 queued waiters are waiters",
                    len(lk.get("holders", [])) == 1 and lk.get("waiters") == 2,
                    "holders %r waiters %r" % (lk.get("holders"), lk.get("waiters")))
        byfmt = {}
        for fmt in expected.values():
            byfmt[fmt] = byfmt.get(fmt, 0) + 1
        # the keys without a TTL (queue, timeout set, token, semaphores) idle past
        # leak_grace: were any of them taken for a lock, it would be a leak now
        env.agent.stop()            # its scans read the keys, so they would never idle
        env.agent = None
        nottl = [k for k in env.r.scan_iter("*") if env.r.pttl(k) == -1]
        until(lambda: all(env.r.object("idletime", k) >= 2 for k in nottl), timeout=30,
              desc="keys without TTL idle 2 s (leak_grace 1 s)")
        # the limit, documented: without semaphore_patterns it is a plain leaked lock
        nosem = os.path.join(env.dir, "no-semaphore-patterns.ini")
        with open(nosem, "w") as f:
            f.write(harness.config_text(harness.free_port(), [("main", env.rs.url)],
                                        **{k: v for k, v in env.cfg.items() if k != "target_extra"}))
        p = subprocess.run([LOCKCTL, "-c", nosem, "--agent", "off", "--json", "show", "lock:sem"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        try:
            lk = json.loads(p.stdout) if p.returncode == 0 else {}
        except ValueError:
            lk = {}
        # its count is one of Redis's shared integers, whose IDLETIME is not
        # the key's: lockctl alone says "leaked?" (the agent, from its
        # first sight, leaked)
        R.check(scen, "without semaphore_patterns lock:sem is plain and leaked or leaked? "
                "(the documented limit)",
                lk.get("format") == "plain" and ("leaked" in lk.get("states", [])
                                                 or lk.get("leak_unknown") is True),
                "exit %s: %s %s" % (p.returncode, p.stdout[-400:], p.stderr[-400:]))
        m = expect_once(env, scen, byfmt)
        R.check(scen, "lockwatchd --once: lockwatch_lock_waiters{class=\"lock:fair\"} = 2 (its queue)",
                harness.msum(m, "lockwatch_lock_waiters", **{"class": "lock:fair"}) == 2,
                harness.select(m, "lockwatch_lock_waiters"))
        R.check(scen, "lockwatchd --once: the RSemaphore lock:sem (no TTL by design) is not leaked",
                not harness.msum(m, "lockwatch_locks_leaked", **{"class": "lock:sem"}),
                harness.select(m, "lockwatch_locks_leaked", **{"class": "lock:sem"}))
        # reproduction 5: helper keys are never release/expire targets
        helpers = sorted(k for k in env.r.scan_iter("*") if k not in expected and k != "lock:gone")
        R.check(scen, "the helper keys exist (queue, timeout set, rwlock_timeout%s)"
                % (", token, unlock latches" if new else ""),
                any("lock_queue" in k for k in helpers) and any("rwlock_timeout" in k for k in helpers)
                and (not new or any("lock_token" in k for k in helpers)), helpers)
        tok = int(env.r.get("redisson_lock_token:{lock:fenced}") or 0) if new else 0
        for key in helpers:
            t = env.r.type(key)
            first = {"string": lambda: env.rb.get(key), "list": lambda: env.rb.lindex(key, 0),
                     "zset": lambda: (env.rb.zrange(key, 0, 0) or [b""])[0],
                     "hash": lambda: next(iter(env.rb.hkeys(key)), b"")}.get(t, lambda: b"")()
            try:
                holder = (first or b"").decode("utf-8")
            except UnicodeDecodeError:
                holder = ""
            if not holder.isprintable() or not holder:
                holder = "x"
            before = (env.rb.dump(key), env.r.pttl(key) < 0)
            rc1, b1, _ = env.lockctl("expire", key, "--ttl", "2s", "--holder", holder, "--yes")
            rc2, b2, _ = env.lockctl("release", key, "--holder", holder, "--yes")
            after = (env.rb.dump(key), env.r.pttl(key) < 0)
            R.check(scen, "expire and release of helper %s are refused, key untouched" % key,
                    rc1 != 0 and rc2 != 0 and before == after,
                    "expire exit %s %r; release exit %s %r; unchanged %s" % (rc1, b1, rc2, b2, before == after))
        if new:
            a.do("a1 unlock fenced lock:fenced")
            a.do("a1 unlock fenced lock:fenced")
            a.do("a1 lock fenced lock:fenced")
            R.check(scen, "the fencing token goes on from %d to %d" % (tok, tok + 1),
                    env.r.get("redisson_lock_token:{lock:fenced}") == str(tok + 1),
                    env.r.get("redisson_lock_token:{lock:fenced}"))
        sem_before = env.r.get("lock:sem")
        rc, body, err = env.lockctl("expire", "lock:sem", "--ttl", "1s", "--holder", sem_before, "--yes")
        R.check(scen, "lockctl expire of the semaphore by its permit count is refused, it stays",
                rc != 0 and env.r.get("lock:sem") == sem_before and env.r.pttl("lock:sem") == -1,
                "exit %s %r; value %r pttl %r" % (rc, body, env.r.get("lock:sem"), env.r.pttl("lock:sem")))
        for p in (p1, p2):
            p.cp.kill()
    finally:
        env.close()


def redisson_fair(kind):
    """Reproduction 6: force-release of a fair lock wakes the live waiter,
    also when the queue head is a dead waiter."""
    scen = kind + "/fair-wake"
    env = Env(scen)
    try:
        a = env.client(kind, name="a")
        b = env.client(kind, name="b")
        c = env.client(kind, name="c")
        fa = redisson_field(a, a.do("a1 lock fair lock:fair"))
        pb = b.pending("b1 lock fair lock:fair")
        until(lambda: env.r.llen("redisson_lock_queue:{lock:fair}") >= 1, desc="b1 queued")
        ev = wake(env, scen, "live queue head", "lock:fair", fa, pb)
        if not ev:
            return
        fb = redisson_field(b, ev)
        dead = env.client(kind, name="dead")
        dead.pending("d1 lock fair lock:fair")
        until(lambda: env.r.llen("redisson_lock_queue:{lock:fair}") >= 1, desc="dead-to-be queued")
        pc = c.pending("c1 lock fair lock:fair")
        until(lambda: env.r.llen("redisson_lock_queue:{lock:fair}") >= 2, desc="c1 queued")
        dead.kill()
        R.check(scen, "the dead waiter is the queue head", env.r.lindex("redisson_lock_queue:{lock:fair}", 0)
                .startswith(dead.ready["info"].split("id=")[1]), env.r.lrange("redisson_lock_queue:{lock:fair}", 0, -1))
        wake(env, scen, "live waiter behind a dead head", "lock:fair", fb, pc)
    finally:
        env.close()


# ---------------------------------------------------------------------------
# the other clients


def python_clients():
    scen = "python"
    # redis-py's uuid1().hex is 32 hex digits like any random token: the
    # value alone proves no uuid1, so its keys are declared (docs/formats.md
    # "What is a fact"); undeclared they would be node-redlock, without a time
    env = Env(scen, target_extra={"format_patterns": "lock:rp*=redis-py"})
    try:
        p = env.client("python", name="p")
        q = env.client("python", name="q")
        ev = p.do("a lock redispy lock:rp lease=30000")
        tok = ev["info"].split("token=")[1]
        lk = expect_format(env, scen, "lock:rp", "redis-py")
        R.check(scen, "lock:rp: holder is the redis-py token", holders(lk) == [(tok, 1)], holders(lk))
        expect_acquired(scen, "lock:rp", lk, ev["t"])
        ev2 = p.do("b lock prl job1 lease=30000")
        pid = ev2["info"].split("id=")[1]
        lk = expect_format(env, scen, "lock:job1", "python-redis-lock")
        R.check(scen, "lock:job1: holder is python-redis-lock's id", holders(lk) == [(pid, 1)], holders(lk))
        ev3 = p.do("c lock pottery job3 lease=30000")
        lk = expect_format(env, scen, "redlock:job3", "pottery")
        R.check(scen, "redlock:job3: holder is pottery's uuid",
                holders(lk) == [(env.r.get("redlock:job3"), 1)], holders(lk))
        p.do("d lock redispy lock:rp-nottl")
        # prl leaves lock-signal:<name> behind on release
        p.do("e lock prl job9 lease=30000")
        p.do("e unlock prl job9")
        expect_locks(env, scen, ["lock:rp", "lock:job1", "redlock:job3", "lock:rp-nottl"])
        try:
            until(lambda: "leaked" in env.show("lock:rp-nottl").get("states", []), timeout=15,
                  desc="lock:rp-nottl leaked after leak_grace")
            leaked = None
        except AssertionError as e:
            leaked = e
        R.check(scen, "redis-py lock without a timeout is leaked after leak_grace (3 s)", leaked is None,
                leaked)
        tok2 = env.r.get("lock:rp-nottl")
        rc, body, err = env.lockctl("expire", "lock:rp-nottl", "--ttl", "30s", "--holder", tok2, "--yes")
        R.check(scen, "lockctl expire gives the leaked redis-py lock a TTL, its token unchanged",
                rc == 0 and 0 < env.r.pttl("lock:rp-nottl") <= 30000 and env.r.get("lock:rp-nottl") == tok2,
                "exit %s %r; pttl %r" % (rc, body, env.r.pttl("lock:rp-nottl")))
        w = q.pending("w lock redispy lock:rp lease=30000")
        time.sleep(0.3)
        wake(env, scen, "redis-py waiter (polls)", "lock:rp", tok, w)
        w = q.pending("w lock prl job1 lease=30000")
        until(lambda: "cmd=blpop" in env.r.execute_command("CLIENT", "LIST"), timeout=10,
              desc="python-redis-lock's waiter in BLPOP")
        wake(env, scen, "python-redis-lock waiter (BLPOP)", "lock:job1", pid, w)
        w = q.pending("w lock pottery job3 lease=30000")
        time.sleep(0.3)
        wake(env, scen, "pottery waiter", "redlock:job3", env.r.get("redlock:job3") or "?", w)
        R.check(scen, "pottery's lock was ev3's", ev3["ok"], ev3)
    finally:
        env.close()


def node_clients():
    """Reproduction 4 (node-redlock values are not redis-py tokens) and 7
    (redis-semaphore's Semaphore)."""
    scen = "node"
    env = Env(scen)
    try:
        n = env.client("node", name="n")
        m = env.client("node", name="m")
        vals = {}
        for i in range(1, 12):
            ev = n.do("a%d lock redlock lock:nr:%d lease=60000" % (i, i))
            vals["lock:nr:%d" % i] = ev["info"].split("value=")[1]
        got = env.listed()
        bad = {k: got.get(k, {}).get("format") for k in vals if got.get(k, {}).get("format") != "node-redlock"}
        R.check(scen, "11 node-redlock locks: format node-redlock", not bad, bad)
        R.check(scen, "11 node-redlock locks: holder is the lock's value",
                all(holders(got.get(k, {})) == [(v, 1)] for k, v in vals.items()),
                {k: holders(got.get(k, {})) for k in list(vals)[:3]})
        old = {k: (got.get(k, {}).get("age_seconds"), got.get(k, {}).get("acquired_at")) for k in vals
               if (got.get(k, {}).get("age_seconds") or 0) > 60 or got.get(k, {}).get("acquired_at")}
        R.check(scen, "no age or acquisition time decoded from random values", not old, old)
        m_once = env.once()
        oldest = harness.mmax(m_once, "lockwatch_lock_oldest_holder_seconds")
        longs = [l for l, v in harness.select(m_once, "lockwatch_locks_long_held") if v]
        R.check(scen, "--once: oldest holder < 60 s and no long lock (oldest %r)" % oldest,
                oldest is not None and oldest < 60 and not longs, (oldest, longs))
        ev = n.do("s1 lock mutex lock:m lease=30000")
        mid = ev["info"].split("identifier=")[1]
        lk = expect_format(env, scen, "mutex:lock:m", "redis-semaphore")
        R.check(scen, "mutex:lock:m: holder is the Mutex identifier", holders(lk) == [(mid, 1)], holders(lk))
        e1 = n.do("t1 lock semaphore lock:s limit=2 lease=30000")
        e2 = n.do("t2 lock semaphore lock:s limit=2 lease=30000")
        ids = sorted(e["info"].split("identifier=")[1] for e in (e1, e2))
        lk = expect_format(env, scen, "semaphore:lock:s", "redis-semaphore")
        R.check(scen, "semaphore:lock:s: 2 holders, the Semaphore's identifiers",
                sorted(h["id"] for h in lk.get("holders", [])) == ids and lk.get("holders_total") == 2,
                lk.get("holders"))
        expect_locks(env, scen, list(vals) + ["mutex:lock:m", "semaphore:lock:s"])
        w = m.pending("w lock redlock lock:nr:1 lease=30000")
        time.sleep(0.3)
        wake(env, scen, "node-redlock waiter", "lock:nr:1", vals["lock:nr:1"], w)
        w = m.pending("w lock mutex lock:m lease=30000")
        time.sleep(0.3)
        wake(env, scen, "redis-semaphore Mutex waiter", "mutex:lock:m", mid, w)
        w = m.pending("w lock semaphore lock:s limit=2 lease=30000")
        time.sleep(0.3)
        first = e1["info"].split("identifier=")[1]
        second = e2["info"].split("identifier=")[1]
        wake(env, scen, "redis-semaphore Semaphore waiter", "semaphore:lock:s", first, w)
        R.check(scen, "releasing one permit keeps the other holder's",
                env.r.zscore("semaphore:lock:s", second) is not None
                and env.r.zscore("semaphore:lock:s", first) is None,
                env.r.zrange("semaphore:lock:s", 0, -1, withscores=True))
    finally:
        env.close()


def go_client():
    scen = "go"
    env = Env(scen)
    try:
        g = env.client("go", name="g")
        h = env.client("go", name="h")
        ev = g.do("a lock redsync lock:gs lease=30000")
        val = ev["info"].split("value=")[1]
        lk = expect_format(env, scen, "lock:gs", "redsync")
        R.check(scen, "lock:gs: holder is redsync's value", holders(lk) == [(val, 1)], holders(lk))
        R.check(scen, "lock:gs: no acquisition time (redsync stores none)", lk.get("acquired_at") is None,
                lk.get("acquired_at"))
        expect_locks(env, scen, ["lock:gs"])
        w = h.pending("w lock redsync lock:gs lease=30000")
        time.sleep(0.3)
        wake(env, scen, "redsync waiter", "lock:gs", val, w)
    finally:
        env.close()


def spring_clients():
    scen = "spring"
    # RedisLockRegistry's value is any uuid4: declared, as docs/formats.md
    # says (undeclared it would be plain)
    env = Env(scen, target_extra={"format_patterns": "lock:spring:*=spring"})
    try:
        s = env.client("spring", extra=("prod", "lock:spring"), name="s")
        t = env.client("spring", extra=("prod", "lock:spring"), name="t")
        ev = s.do("a lock shedlock job1 lease=60000")
        lk = expect_format(env, scen, "job-lock:prod:job1", "shedlock")
        expect_acquired(scen, "job-lock:prod:job1", lk, ev["t"])
        R.check(scen, "job-lock:prod:job1: host is this machine's name", lk.get("host") == socket.gethostname(),
                "host %r, hostname %r" % (lk.get("host"), socket.gethostname()))
        ev = s.do("b lock spring orders")
        s.do("b lock spring orders")
        val = env.r.get("lock:spring:orders")
        lk = expect_format(env, scen, "lock:spring:orders", "spring")
        R.check(scen, "lock:spring:orders: holder is the registry's client id", [h["id"] for h in lk.get("holders", [])]
                == [val], lk.get("holders"))
        expect_locks(env, scen, ["job-lock:prod:job1", "lock:spring:orders"])
        w = t.pending("w lock spring orders")
        time.sleep(0.5)
        wake(env, scen, "RedisLockRegistry waiter", "lock:spring:orders", val, w)
    finally:
        env.close()


def liblockwatch_registry():
    """Reproduction 7: liblockwatch's client-registry key is not a lock."""
    scen = "liblockwatch"
    env = Env(scen)
    shell = None
    try:
        from client_helpers import ITESTS
        shell = subprocess.Popen([os.path.join(ITESTS, "client_shell"), "127.0.0.1:%d" % env.rs.port],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

        def cmd(line):
            shell.stdin.write(line + "\n")
            shell.stdin.flush()
            return shell.stdout.readline().strip()
        ans = cmd("connect c agent=off")
        uuid = ans.split()[1]
        R.check(scen, "liblockwatch plain lock taken", cmd("lock c l1 lock:lw:1 30000 1000 -").startswith("OK"))
        R.check(scen, "liblockwatch reentrant lock taken",
                cmd("lock c l2 lock:lw:2 30000 1000 reentrant").startswith("OK"))
        until(lambda: env.r.exists("lockwatch:client:{%s}" % uuid), timeout=10, desc="registry key")
        t_lock = time.time() * 1000
        lk = expect_format(env, scen, "lock:lw:1", "liblockwatch")
        expect_acquired(scen, "lock:lw:1", lk, t_lock)
        R.check(scen, "lock:lw:1: pid is the client's", lk.get("pid") == shell.pid,
                "pid %r, client %d" % (lk.get("pid"), shell.pid))
        expect_format(env, scen, "lock:lw:2", "redisson")   # Redisson's wire format, by design
        expect_locks(env, scen, ["lock:lw:1", "lock:lw:2"])
        cmd("unlock l1")
        cmd("unlock l2")
        cmd("quit")
    finally:
        if shell is not None and shell.poll() is None:
            shell.kill()
        env.close()


def node_redlock_3():
    """node-redlock on three nodes, watched as a [redlock] group."""
    scen = "node/redlock-3-nodes"
    nodes = [harness.RedisServer() for _ in range(3)]
    names = ["n1", "n2", "n3"]
    ag = c = None
    try:
        c = clients.start("node", *[n.port for n in nodes], name="node3")
        ev = c.do("a lock redlock lock:order:1 lease=60000")
        val = ev["info"].split("value=")[1]
        R.check(scen, "the lock is on all three nodes",
                all(n.client(decode_responses=True).get("lock:order:1") == val for n in nodes))
        ag = harness.Agent(targets=list(zip(names, [n.url for n in nodes])), samples="off",
                           patterns=PATTERNS, scan_interval="500ms", max_hold="60s",
                           extra="[redlock orders]\ntargets = %s\n" % ", ".join(names))

        def consistent():
            m = ag.metrics()
            keys = {l["state"]: v for l, v in harness.select(m, "lockwatch_redlock_keys", group="orders")}
            return m if keys.get("consistent") == 1 else None
        try:
            m = ag.wait_for(consistent, 20, desc="lockwatch_redlock_keys{state=consistent} == 1")
            R.check(scen, "[redlock orders]: the lock is consistent, nothing split",
                    harness.msum(m, "lockwatch_redlock_inconsistent", group="orders") == 0,
                    harness.select(m, "lockwatch_redlock_inconsistent"))
        except AssertionError as e:
            R.check(scen, "[redlock orders]: the lock is consistent, nothing split", False, e)
        for name in names:
            st, body = ag.lock("lock:order:1", target=name)
            R.check(scen, "API on %s: format node-redlock, holder its value" % name,
                    st == 200 and body.get("format") == "node-redlock" and holders(body) == [(val, 1)],
                    (st, body))
    finally:
        if c is not None:
            c.kill()
        if ag is not None:
            ag.kill()
        for n in nodes:
            n.kill()


def exclude_patterns():
    """exclude_patterns: a team's own key under the lock prefix is no lock."""
    scen = "exclude-patterns"
    env = Env(scen, target_extra={"exclude_patterns": "lock:stats:*"})
    try:
        p = env.client("python", name="p")
        p.do("a lock redispy lock:rp lease=30000")
        env.r.set("lock:stats:hits", "42")
        expect_locks(env, scen, ["lock:rp"])
        rc, body, err = env.release("lock:stats:hits", "42")
        R.check(scen, "lockctl release of an excluded key is refused (exit 1), the key stays",
                rc == 1 and env.r.get("lock:stats:hits") == "42", "exit %s %r %s" % (rc, body, err))
        m = env.once()
        R.check(scen, "lockwatchd --once counts one lock", harness.msum(m, "lockwatch_locks") == 1,
                harness.select(m, "lockwatch_locks"))
    finally:
        env.close()


SCENARIOS = [
    ("redisson-new/rlock", lambda: redisson_rlock("redisson-new")),
    ("redisson-old/rlock", lambda: redisson_rlock("redisson-old")),
    ("redisson-legacy/rlock", lambda: redisson_rlock("redisson-legacy")),
    ("redisson-new/rw", lambda: redisson_rw("redisson-new")),
    ("redisson-old/rw", lambda: redisson_rw("redisson-old")),
    ("redisson-legacy/rw", lambda: redisson_rw("redisson-legacy")),
    ("redisson-new/readers", lambda: redisson_readers("redisson-new")),
    ("redisson-old/readers", lambda: redisson_readers("redisson-old")),
    ("redisson-new/helpers", lambda: redisson_helpers("redisson-new")),
    ("redisson-old/helpers", lambda: redisson_helpers("redisson-old")),
    ("redisson-new/fair", lambda: redisson_fair("redisson-new")),
    ("redisson-old/fair", lambda: redisson_fair("redisson-old")),
    ("python", python_clients),
    ("node", node_clients),
    ("node/redlock-3", node_redlock_3),
    ("go", go_client),
    ("spring", spring_clients),
    ("liblockwatch", liblockwatch_registry),
    ("exclude-patterns", exclude_patterns),
]


# which of issue 17's reproductions each scenario replays
REPRO = {
    "rw": "reproduction 1: lockctl release of one reader of a RW lock keeps the other reader's hold",
    "readers": "reproduction 2: a read lock with 600 readers is redisson-rw, mode read, 600 holders",
    "helpers": "reproductions 3 and 5: helper keys are no locks, no leaks, no release/expire targets",
    "node": "reproductions 4 and 7: node-redlock values carry no time; redis-semaphore's Semaphore",
    "fair": "reproduction 6: force-release of a fair lock whose queue head is a dead waiter",
    "legacy/rlock": "reproduction 6: waiters of a Redisson version with the older channel names",
    "liblockwatch": "reproduction 7: liblockwatch's client-registry key is no lock",
}


def run(only=()):
    import deadlocks            # the wait-for graph's scenarios (deadlocks.py)
    t0 = time.monotonic()
    for name, fn in SCENARIOS + deadlocks.SCENARIOS:
        if only and not any(o in name for o in only):
            continue
        t1 = time.monotonic()
        tags = [v for k, v in REPRO.items() if k in name and not (k == "node" and "redlock-3" in name)]
        print("== %s%s" % (name, "".join("\n   " + t for t in tags)), flush=True)
        try:
            fn()
        except Exception as e:          # a scenario that cannot go on is one failure
            R.check(name, "scenario ran to its end", False, "%s\n%s" % (e, traceback.format_exc()[-1200:]))
        print("      (%s: %.1f s)" % (name, time.monotonic() - t1), flush=True)
    print()
    if R.measured:
        worst = max(R.measured, key=lambda m: m[2])
        print("wake-ups measured: %d, worst %.3f s (%s, %s); bound %.1f s"
              % (len(R.measured), worst[2], worst[0], worst[1], WAKE_BOUND))
    if R.xfailed:
        print("expected to fail (%d):\n  %s" % (len(R.xfailed), "\n  ".join(R.xfailed)))
    if R.failures:
        print("failed:\n  " + "\n  ".join(R.failures))
    print("interop: %.0f s" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (R.passed, R.failed))
    return 0 if R.failed == 0 else 1
