# SPDX-License-Identifier: BSD-3-Clause
"""Every fact shown is proven (issue 23), end to end.

- 50,000 locks with random 128-bit hex tokens taken just now (pipelined SET;
  the unit test test_lockfacts runs the same check over a million values in
  the fact builder; LOCKWATCH_FACTS_TOKENS=1000000 runs a million here):
  none labelled redis-py, none with an acquisition time, none with an age
  over the time since they were written, none long.
- A ShedLock value whose time is 30 minutes old, written after the
  agent's passes had begun: its age is the agent's sight, not the claim
  (no LockHeldTooLong, --if-older-than refused).
- A lock with value 1 (a Redis shared integer, whose OBJECT IDLETIME is the
  shared object's) and a token lock taken together: the same age within
  1 s, neither long before max_hold, in the agent and in lockctl.
- A hash of 1,000,000 "<uuid>:<n>" fields without "mode": not redisson-rw,
  holders_total 1,000,000.
- format_patterns: a declared format is shown as declared, a value that
  contradicts it is flagged, not forced.
- Under an LFU maxmemory-policy OBJECT IDLETIME is not asked at all: not
  by a scan, lockctl, nor follow mode's re-reads.
"""

import os
import time
import uuid

import harness as h
import test_lockctl as tl

# the acceptance's full million end to end: LOCKWATCH_FACTS_TOKENS=1000000
# (a heavy run by hand; the default keeps the test under a minute)
TOKENS = int(os.environ.get("LOCKWATCH_FACTS_TOKENS", "50000"))
FIELDS = 1000000
RUUID = "8743c9c0-0795-4907-87fd-6c719a6b4586"


def agent_locks(ag, query="state=all&limit=10000"):
    def scanned():
        st, body = ag.get_json("/api/v1/locks?" + query)
        return st == 200 and body["total"] > 0 and body
    return ag.wait_for(scanned, timeout=60 + TOKENS // 5000, desc="a scan in the API")


class Facts(h.TestCase):

    def test_random_tokens(self):
        rs = self.start_redis()
        c = rs.client()
        first_write = time.time()   # no lock can be older than this
        p = c.pipeline(transaction=False)
        for i in range(TOKENS):
            p.set("lock:nr:%d" % i, os.urandom(16).hex(), px=600000)
            if i % 5000 == 4999:
                p.execute()
        p.execute()
        ag = self.start_agent(rs, scan_interval="1s", max_hold="1h", leak_grace="1h")
        body = agent_locks(ag)
        self.assertEqual(body["total"], TOKENS)
        # IDLETIME less its clock's second is a lower bound; 0.2 s for the
        # cron that advances Redis's clock
        since = time.time() - first_write + 0.2
        m = ag.metrics()
        self.assertEqual(h.msum(m, "lockwatch_locks", format="redis-py"), 0)
        self.assertEqual(h.msum(m, "lockwatch_locks", format="node-redlock"), TOKENS)
        self.assertEqual(h.msum(m, "lockwatch_locks_long_held"), 0)
        self.assertLessEqual(h.msum(m, "lockwatch_lock_oldest_holder_seconds"), since)
        for lk in body["locks"]:
            self.assertEqual((lk["format"], lk["format_source"], lk["acquired_at"]),
                             ("node-redlock", "guessed", None), lk)
            self.assertLessEqual(lk["age_seconds"], since, lk)
            self.assertNotIn("long", lk["states"], lk)
        print("%d random hex tokens: 0 redis-py, 0 long, oldest %.1fs of %.1fs since the "
              "first was written" % (TOKENS, h.msum(m, "lockwatch_lock_oldest_holder_seconds"), since))

    def test_a_claimed_time_older_than_the_agents_last_look(self):
        # the freshness trial: a ShedLock value ("ADDED:<time>@<host>", a
        # proven layout) from a host whose clock runs 30 minutes behind was
        # a 30-minute hold (LockHeldTooLong) of a lock the agent's previous
        # pass had not seen, and --if-older-than 20m released it
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:other", "tok", px=600000)
        ag = self.start_agent(rs, scan_interval="1s", max_hold="20s", leak_grace="1h")
        ag.wait_scans(2)
        skew = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 1800))
        value = "ADDED:%s@batch-host-2" % skew
        written = time.time()
        c.set("lock:shed-skew", value, px=600000)
        ag.wait_for(lambda: ag.lock("lock:shed-skew")[0] == 200, 20, desc="the lock seen")
        ag.wait_scans(1)
        st, lk = ag.lock("lock:shed-skew")
        self.assertEqual((lk["format"], lk["format_source"]), ("shedlock", "proven"), lk)
        self.assertLessEqual(lk["age_seconds"], time.time() - written + 1.5, lk)
        self.assertNotIn("long", lk["states"], lk)
        doc = tl.run_json(self, ["release", "lock:shed-skew", "--holder", value,
                                 "--if-older-than", "20m", "--yes"], ag.config_path, rc=1)
        self.assertEqual(doc["outcome"], "too_young", doc)
        self.assertEqual(c.get("lock:shed-skew"), value.encode())

    def test_follow_mode_dates_no_holder_before_its_last_proof(self):
        # a failover trial: in follow mode, with the last full pass an hour
        # old, a redis-py holder was dated by the uuid1 its acquire made
        # before it waited (14-27 s early): the freshness check's proof
        # that the view was current without it bounds it now
        rs = self.start_redis(args=["--notify-keyspace-events", "KA"])
        c = rs.client()
        ag = self.start_agent(rs, scan_interval="1s", max_hold="1h", leak_grace="1h",
                              target_extra={"incremental": "on", "reconcile_interval": "1h",
                                            "format_patterns": "lock:py:*=redis-py"})
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active", target="main") == 1,
                    timeout=15, desc="following")
        time.sleep(8)           # the full pass 8 s old; freshness checks since
        ts = int((time.time() - 30) * 1e7) + 0x01B21DD213814000     # a uuid1 of 30 s ago
        token = uuid.UUID(fields=(ts & 0xFFFFFFFF, (ts >> 32) & 0xFFFF,
                                  (ts >> 48) & 0x0FFF | 0x1000, 0x80, 0x00,
                                  0x0123456789AB)).hex
        written = time.time()
        c.set("lock:py:job", token, px=600000)
        ag.wait_for(lambda: ag.lock("lock:py:job")[0] == 200, 10, desc="the lock seen")
        st, lk = ag.lock("lock:py:job")
        self.assertEqual((lk["format"], lk["format_source"]), ("redis-py", "declared"), lk)
        # within a freshness check (1 s) and the reads' slack, not 8 s or 30 s
        self.assertLessEqual(lk["age_seconds"], time.time() - written + 2.5, lk)

    def test_shared_integer_value(self):
        rs = self.start_redis()
        c = rs.client()
        # the shared object "1" is as old as the server (or its last use)
        time.sleep(3.5)
        c.set("lock:one", "1", nx=True, px=60000)
        c.set("lock:tok", uuid.uuid4().hex + "-tok", nx=True, px=60000)
        idle_one = c.object("idletime", "lock:one")
        self.assertGreaterEqual(idle_one, 3)   # the premise
        ag = self.start_agent(rs, scan_interval="500ms", max_hold="3s", leak_grace="1h")
        body = agent_locks(ag)
        locks = {l["key"]: l for l in body["locks"]}
        one, tok = locks["lock:one"], locks["lock:tok"]
        self.assertLess(abs(one["age_seconds"] - tok["age_seconds"]), 1.0, (one, tok))
        self.assertNotIn("long", one["states"], one)
        self.assertNotIn("long", tok["states"], tok)
        print("value 1: age %.1fs, token: age %.1fs (IDLETIME of the shared \"1\" was %ds)"
              % (one["age_seconds"], tok["age_seconds"], idle_one))
        # lockctl alone: no age from the shared object's idle time
        cfg = tl.write_config(rs, max_hold="3s")
        for key in ("lock:one", "lock:tok"):
            doc = tl.run_json(self, ["show", key, "--agent", "off"], cfg)
            self.assertLess(doc["age_seconds"], 1.5, doc)
            self.assertNotIn("long", doc["states"], doc)
        doc = tl.run_json(self, ["show", "lock:one", "--agent", "off"], cfg)
        self.assertIsNone(doc["idle_seconds"], doc)

    def test_million_field_hash_without_mode(self):
        rs = self.start_redis()
        c = rs.client()
        p = c.pipeline(transaction=False)
        chunk = {}
        for i in range(FIELDS):
            chunk["%s:%d" % (RUUID, i)] = "1"
            if len(chunk) == 10000:
                p.hset("lock:big", mapping=chunk)
                chunk = {}
        p.execute()
        c.pexpire("lock:big", 600000)
        self.assertEqual(c.hlen("lock:big"), FIELDS)
        ag = self.start_agent(rs, scan_interval="2s", max_hold="1h", leak_grace="1h")
        lk = agent_locks(ag)["locks"][0]
        self.assertNotEqual(lk["format"], "redisson-rw", lk["format"])
        self.assertEqual((lk["holders_total"], lk["format_source"]), (FIELDS, "guessed"))
        self.assertNotIn("mode", lk)
        cfg = tl.write_config(rs)
        doc = tl.run_json(self, ["show", "lock:big", "--agent", "off"], cfg)
        self.assertNotEqual(doc["format"], "redisson-rw")
        self.assertEqual(doc["holders_total"], FIELDS)
        # with "mode" it is the read lock it says it is (read on its own:
        # one HSCAN of a million fields need not show it)
        c.hset("lock:big", "mode", "read")
        doc = tl.run_json(self, ["show", "lock:big", "--agent", "off"], cfg)
        self.assertEqual((doc["format"], doc["mode"], doc["holders_total"]),
                         ("redisson-rw", "read", FIELDS))
        print("%d-field hash without mode: %s (%s), holders_total %d"
              % (FIELDS, lk["format"], lk["format_source"], lk["holders_total"]))

    def test_a_hash_no_decoder_knew_is_not_released_as_redisson(self):
        # "unknown" is a guess: lockctl refuses it as plain's row would (a
        # hash is not of its type: holder_changed) instead of releasing it
        # as a Redisson lock; the key and its field stay
        rs = self.start_redis()
        c = rs.client()
        c.hset("lock:weird", "foo", "1")
        cfg = tl.write_config(rs)
        doc = tl.run_json(self, ["show", "lock:weird", "--agent", "off"], cfg)
        self.assertEqual((doc["format"], doc["format_source"]), ("unknown", "guessed"))
        for dry in (["--dry-run"], ["--yes"]):
            out = tl.run_json(self, ["release", "lock:weird", "--holder", "foo", "--agent", "off"]
                              + dry, cfg, rc=1)
            self.assertEqual((out["outcome"], out["refused"], out["done"]),
                             ("holder_changed", True, False), out)
        self.assertEqual(c.hgetall("lock:weird"), {b"foo": b"1"})

    def test_declared_formats(self):
        rs = self.start_redis()
        c = rs.client()
        c.set("lock:jobs:a", uuid.uuid1().hex, px=600000)
        c.set("lock:jobs:b", "worker-7", px=600000)          # not redis-py's
        c.set("lock:orders:a", uuid.uuid1().hex, px=600000)  # node-redlock declared
        c.set("lock:other", uuid.uuid1().hex, px=600000)     # nothing declared
        # (max_hold 1s: the status page lists the long ones, with their formats)
        ag = self.start_agent(rs, scan_interval="500ms", max_hold="1s", leak_grace="1h",
                              target_extra={"format_patterns": "lock:jobs:*=redis-py "
                                            "lock:orders:*=node-redlock"})
        locks = {l["key"]: l for l in agent_locks(ag)["locks"]}
        got = {k: (l["format"], l["format_source"], l.get("format_contradicts", False),
                   l["acquired_at"] is not None) for k, l in locks.items()}
        self.assertEqual(got, {
            "lock:jobs:a": ("redis-py", "declared", False, True),
            "lock:jobs:b": ("plain", "guessed", True, False),
            "lock:orders:a": ("node-redlock", "declared", False, False),
            "lock:other": ("node-redlock", "guessed", False, False),
        })
        def long_page():
            # each lock turns long 1 s after it was first seen (only the
            # redis-py one carries its acquisition time): wait for all four
            # rows of the long table, whose format cells name them
            st, _, page = ag.get("/")
            return st == 200 and page.count(b" (declared)") >= 2 and \
                page.count(b" (guessed)") >= 2 and page
        # the page marks where each format came from
        page = ag.wait_for(long_page, 30, desc="the four locks long on the status page")
        self.assertIn(b"1 lock not of the format format_patterns declare", page)
        self.assertIn(b"redis-py (declared)", page)
        self.assertIn(b"node-redlock (guessed)", page)
        self.assertIn(b"plain (guessed) <b>not as declared</b>", page)
        # lockctl says where the format came from
        cfg = tl.write_config(rs)
        text = open(cfg).read().replace(
            "patterns = lock:*\n",
            "patterns = lock:*\nformat_patterns = lock:jobs:*=redis-py\n", 1)
        with open(cfg, "w") as f:
            f.write(text)
        p = tl.run(["show", "lock:jobs:a", "--agent", "off"], cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"redis-py, declared by format_patterns", p.stdout)
        p = tl.run(["show", "lock:jobs:b", "--agent", "off"], cfg)
        # (sentences wrap at the width: compare the words joined)
        self.assertIn(b"NOT the format format_patterns declare", b" ".join(p.stdout.split()))
        doc = tl.run_json(self, ["show", "lock:other", "--agent", "off"], cfg)
        self.assertEqual((doc["format"], doc["format_source"]), ("node-redlock", "guessed"))
        # a misspelt format fails the config, naming the names allowed
        p = h.run_lockwatchd(["-n", "-c", cfg])
        self.assertEqual(p.returncode, 0, p.stderr)
        bad = text.replace("=redis-py", "=redispy")
        with open(cfg, "w") as f:
            f.write(bad)
        p = h.run_lockwatchd(["-n", "-c", cfg])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"format_patterns: \"lock:jobs:*=redispy\": \"redispy\" is not a format",
                      p.stderr)

    def test_lfu_policy(self):
        rs = self.start_redis()
        c = rs.client()
        c.config_set("maxmemory", "1gb")
        c.config_set("maxmemory-policy", "allkeys-lfu")
        c.set("lock:a", "tok-a", px=60000)
        c.hset("lock:h", "%s:1" % RUUID, "1")
        c.pexpire("lock:h", 60000)
        c.config_resetstat()
        cfg = tl.write_config(rs)
        p = h.run_lockwatchd(["--once", "-c", cfg], timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.msum(m, "lockwatch_locks"), 2)
        doc = tl.run_json(self, ["show", "lock:a", "--agent", "off"], cfg)
        self.assertEqual(doc["age_source"], "unknown", doc)
        # nor by the release script (its INFO memory names the policy)
        doc = tl.run_json(self, ["release", "lock:a", "--holder", "tok-a", "--if-older-than",
                                 "1h", "--yes"], cfg, rc=1)
        self.assertEqual(doc["outcome"], "too_young", doc)
        stats = c.info("commandstats")
        self.assertNotIn("cmdstat_object|idletime", stats)
        self.assertNotIn("cmdstat_object", stats)

    def test_lfu_policy_follow_mode(self):
        # follow mode's re-reads (another thread than the scan's) keep to
        # the last pass's INFO: under an LFU policy no OBJECT IDLETIME
        rs = self.start_redis(args=["--notify-keyspace-events", "Kg$lshzxet"])
        c = rs.client()
        c.config_set("maxmemory", "1gb")
        c.config_set("maxmemory-policy", "allkeys-lfu")
        c.set("lock:before", "tok", px=600000)
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1h", max_hold="1h",
                              target_extra={"incremental": "on", "reconcile_interval": "1h"})
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_follow_active", target="main") == 1,
                    30, desc="lockwatch_follow_active == 1")
        c.config_resetstat()
        for i in range(20):
            c.set("lock:f:%d" % i, "tok-%d" % i, px=600000)
        ag.wait_for(lambda: ag.get_json("/api/v1/locks?state=all&limit=100")[1].get("total") == 21,
                    30, desc="the 20 new locks followed")
        stats = c.info("commandstats")
        self.assertIn("cmdstat_pttl", stats)        # the re-reads ran
        self.assertNotIn("cmdstat_object|idletime", stats)
        self.assertNotIn("cmdstat_object", stats)


if __name__ == "__main__":
    h.main()
