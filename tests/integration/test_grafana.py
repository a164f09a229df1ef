# SPDX-License-Identifier: BSD-3-Clause
"""The Grafana dashboard (packaging/grafana/lockwatch.json) and the shipped
Prometheus rules, checked against a real Prometheus.

A throwaway redis-server holds leaked, long-held and deeply reentrant locks;
three more form a [redlock] group with a split key, and a 3-primary Redis
Cluster is a target of its own (so the Redlock and per-shard panels have
data); lockwatchd scans them all, ingests `lw1 wait` / `lw1 hold` samples sent over UDP
while the test runs, and notifies a loopback webhook.  Debian's prometheus,
started on a free loopback port with a config that scrapes that agent every
second (and loads packaging/prometheus/lockwatch-rules.yml when present),
then evaluates through its HTTP API (/api/v1/query):

- every PromQL expression of every dashboard panel, with the dashboard's
  variables as Grafana fills them for "All": no error, and data (a non-empty
  result with a number in it);
- the template variables' label_values() queries: the label has values;
- every shipped rule: Prometheus loaded and evaluated it without error
  (/api/v1/rules health "ok"), and its expression runs through the API.

Also checks the dashboard's shape (unique panel ids, the datasource
variable on every query, panels inside the 24-column grid) and that every
metric it reads is one the agent exports.  Loopback only; everything started
is stopped.
"""

import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import harness as h
import topo
from alerts_receiver import Receiver
from client_helpers import closed_udp_port

DASHBOARD = os.path.join(h.REPO, "packaging", "grafana", "lockwatch.json")
RULES = os.path.join(h.REPO, "packaging", "prometheus", "lockwatch-rules.yml")
PROMETHEUS = "/usr/bin/prometheus"
RUUID = "3f2c9a1e-8b7d-4c6e-9f10-2a3b4c5d6e7f"

# What Grafana puts in for the built-in variables and for "All" (allValue).
SUBSTITUTE = {"$__rate_interval": "15s", "$__interval": "1s", "$__range": "1m",
              "$target": ".*", "$class": ".*", "$group": ".*"}


def panels(dash):
    """Every panel, rows' nested panels included."""
    for p in dash["panels"]:
        yield p
        for q in p.get("panels", []):
            yield q


def expressions(dash):
    """(panel title, PromQL) for every query of every panel."""
    for p in panels(dash):
        for t in p.get("targets", []):
            yield p["title"], t["expr"]


def fill(expr):
    for var, value in sorted(SUBSTITUTE.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(var, value)
    return expr


class Prometheus:
    """prometheus on 127.0.0.1:<free port>, data in a temp dir, scraping
    TARGET (host:port) every second, once per name in REPLICAS as the
    lockwatch_replica of its series (docs/deploying.md "Replicas")."""

    def __init__(self, target, rules=None, replicas=("a",)):
        self.dir = tempfile.mkdtemp(prefix="lw-prom-")
        self.port = h.free_port()
        self.log = os.path.join(self.dir, "prometheus.log")
        cfg = ["global:", "  scrape_interval: 1s", "  evaluation_interval: 1s"]
        if rules:
            cfg += ["rule_files:", "  - %s" % json.dumps(rules)]
        cfg += ["scrape_configs:", "  - job_name: lockwatch", "    static_configs:"]
        for r in replicas:
            cfg += ["      - targets: [%s]" % json.dumps(target),
                    "        labels: {lockwatch_replica: %s}" % json.dumps(r)]
        self.config = os.path.join(self.dir, "prometheus.yml")
        with open(self.config, "w") as f:
            f.write("\n".join(cfg) + "\n")
        self._log = open(self.log, "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + self.config,
             "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--web.console.templates=" + os.path.join(self.dir, "none"),
             "--web.console.libraries=" + os.path.join(self.dir, "none"),
             "--log.level=warn"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log)
        h._live_procs.append(self.proc)    # the harness kills it at exit, whatever happens

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s" % (self.port, path)
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.loads(r.read().decode("utf-8"))
        except urllib.error.HTTPError as e:     # 400/422 carry the error as JSON
            return json.loads(e.read().decode("utf-8"))

    def query(self, expr):
        return self.api("query", query=expr)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        try:
            h._live_procs.remove(self.proc)
        except ValueError:
            pass
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self):
        return h.tail(self.log, 30)


def has_data(reply):
    """A successful query result with at least one number (not NaN)."""
    if reply.get("status") != "success":
        return False
    data = reply["data"]
    if data["resultType"] == "scalar":
        values = [data["result"][1]]
    else:
        values = [r["value"][1] for r in data["result"]]
    return any(v not in ("NaN", "+Inf", "-Inf") for v in values)


KEY = b"grafana test key, not a secret at all"


def sign(body):
    """body (bytes) as a datagram signed with KEY (docs/line-protocol.md)."""
    cover = b"%d\n" % int(time.time()) + body
    return b"lw1 mac " + hmac.new(KEY, cover, hashlib.sha256).hexdigest()[:32].encode() + \
        b" " + cover


class Sender(threading.Thread):
    """Sends a datagram of wait and hold samples every 50 ms until stopped,
    so that every scrape sees the histograms grow (rate() needs that);
    signed with KEY, but every tenth unsigned (the rejected panel's)."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.addr = ("127.0.0.1", port)
        self.stopping = threading.Event()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def run(self):
        n = 0
        deadline = time.monotonic() + 120       # bounded even if never stopped
        while not self.stopping.is_set() and time.monotonic() < deadline:
            n += 1
            lines = ["lw1 wait lock:order:%d %d ok" % (1000 + n % 7, 800 + (n * 137) % 9000),
                     "lw1 wait lock:order:%d 250000 timeout" % (2000 + n % 5),
                     "lw1 wait lock:invoice:%d %d ok" % (n, 2000 + (n * 71) % 50000),
                     "lw1 hold lock:order:%d %d" % (1000 + n % 7, 20000 + (n * 31) % 300000)]
            try:
                body = "\n".join(lines).encode()
                self.sock.sendto(body if n % 10 == 0 else sign(body), self.addr)
            except OSError:
                pass
            self.stopping.wait(0.05)

    def stop(self):
        self.stopping.set()
        self.join(timeout=5)
        self.sock.close()


class Dashboard(h.TestCase):

    def setUp(self):
        super().setUp()
        with open(DASHBOARD) as f:
            self.dash = json.load(f)

    def test_shape(self):
        ids = [p["id"] for p in panels(self.dash)]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat")
        names = {v["name"] for v in self.dash["templating"]["list"]}
        self.assertEqual(names, {"datasource", "target", "class", "group"})
        for p in panels(self.dash):
            g = p["gridPos"]
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            self.assertTrue(p["title"])
            for t in p.get("targets", []):
                self.assertEqual(t["datasource"]["uid"], "${datasource}", p["title"])
        titles = " | ".join(p["title"] for p in panels(self.dash))
        exprs = " | ".join(e for _, e in expressions(self.dash))
        # what the dashboard is for (issue 7): each has a panel
        for needle in ("lockwatch_locks{", "lockwatch_locks_leaked", "lockwatch_lock_oldest_holder_seconds",
                       "lockwatch_lock_max_reentrancy", "lockwatch_acquire_wait_seconds_bucket",
                       "lockwatch_acquire_wait_p99_seconds", "lockwatch_target_up",
                       "lockwatch_scan_duration_seconds", "lockwatch_scans_total",
                       "lockwatch_notifications_total", "lockwatch_alerts_firing",
                       # issue 14: Redlock groups and cluster shards
                       "lockwatch_redlock_inconsistent", "lockwatch_redlock_keys",
                       "lockwatch_shard_up", "lockwatch_shard_scan_duration_seconds",
                       "lockwatch_shard_scan_keys",
                       # issue 24: waiters, follow mode, releases, read errors
                       "lockwatch_lock_waiters", "lockwatch_follow_active",
                       "lockwatch_follow_events_total", "lockwatch_releases_total",
                       "lockwatch_release_auth_failures_total",
                       "lockwatch_scan_read_errors_total",
                       # issue 26: the timeline of lock events
                       "lockwatch_events_total", "lockwatch_events_dropped_total",
                       # issue 26: leases lost while held
                       "lockwatch_lock_expirations_total",
                       "lockwatch_lease_overrun_seconds_bucket",
                       # the agent process itself (the standard process collector's)
                       "process_resident_memory_bytes", "process_cpu_seconds_total"):
            self.assertIn(needle, exprs)
        self.assertIn("histogram_quantile(0.99", exprs)
        self.assertIn("Top offenders", titles)

    def test_queries_against_prometheus(self):
        rs = self.start_redis()
        c = rs.client()
        # leaked (no TTL), long held (same holder, long TTL), reentrant too
        # deep (Redisson hash, hold count 20 >= max_reentrancy 16), plain
        for i in range(3):
            c.set("lock:order:%d" % (1001 + i), "holder-%d" % i)
        c.set("lock:job:42", "lw1:host:77:1:%d:00112233aabbccdd" % int(time.time() * 1000),
              px=600000)
        c.hset("lock:rlock:7", "%s:1" % RUUID, "20")
        c.pexpire("lock:rlock:7", 600000)

        # a Redlock group of three nodes; lock:pay:1 has two holders at once
        members = []
        for i, holder in enumerate(("a", "b", "a")):
            r = self.start_redis()
            r.client().set("lock:pay:1", "holder-" + holder, px=600000)
            members.append(("r%d" % (i + 1), r.url))
        cluster = topo.start_cluster(self)
        cluster.load([("SET", "lock:shard:%d" % i, "tok", "PX", "600000") for i in range(300)])

        rcv = Receiver()
        self.addCleanup(rcv.stop)
        udp = closed_udp_port()
        keyfile = os.path.join(h._mkdtemp("lw-key-"), "samples.key")
        with open(keyfile, "wb") as f:
            f.write(KEY + b"\n")
        ag = h.Agent(targets=[("main", rs.url)] + members, start=False,
                     samples="127.0.0.1:%d" % udp, scan_interval="500ms",
                     leak_grace="1s", max_hold="1s",
                     extra="[samples]\nkey_file = %s\n\n" % keyfile +
                           "[webhook oncall]\nurl = %s\nretry_base = 100ms\n\n"
                           "[redlock orders]\ntargets = r1, r2, r3\n\n"
                           "[target c]\nurl = %s\nmode = cluster\npatterns = lock:*\n"
                           "scan_interval = 500ms\n" % (rcv.url, cluster.url))
        self._agents.append(ag)
        self.addCleanup(self._stop_agent, ag)
        ag.start()

        sender = Sender(udp)
        sender.start()
        self.addCleanup(sender.stop)

        rules = RULES if os.path.exists(RULES) else None
        # the agent scraped twice, as two replicas a and b that see the same
        prom = Prometheus("127.0.0.1:%d" % ag.port, rules, replicas=("a", "b"))
        self.addCleanup(prom.stop)

        def scraped():
            if prom.proc.poll() is not None:
                raise h.Fatal("prometheus exited %s:\n%s" % (prom.proc.returncode,
                                                             prom.log_tail()))
            r = prom.query('count_over_time(lockwatch_build_info[1m])')
            return has_data(r) and float(r["data"]["result"][0]["value"][1]) >= 4
        h.wait_until(scraped, 30, 0.25, "prometheus to scrape the agent 4 times")

        # leases that run out under their holders, each holder reporting
        # late (lockwatch_lock_expirations_total, lockwatch_lease_overrun_seconds):
        # twice, the second after Prometheus scraped the first, so that
        # increase() over the panels' ranges sees one
        usock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(usock.close)

        def late_holder(key):
            n = h.msum(ag.metrics(), "lockwatch_lock_expirations_total")
            o = h.msum(ag.metrics(), "lockwatch_lease_overrun_seconds_count")
            c.set(key, "tok-" + key, px=1500)
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_lock_expirations_total") > n,
                        10, desc="the lease of %s to run out" % key)
            time.sleep(1.1)     # a hold line within 1 s of the end is no overrun
            usock.sendto(sign(("lw1 hold %s 1000 grafana%%2F1 tok-%s\n" % (key, key)).encode()),
                         ("127.0.0.1", udp))
            ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_lease_overrun_seconds_count")
                        > o, 10, desc="the overrun on %s" % key)
        late_holder("lock:lease:1")
        time.sleep(2.5)
        late_holder("lock:lease:2")

        # the agent's own view of the workload, before asking Prometheus
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks_leaked") >= 3 and
                    h.msum(ag.metrics(), "lockwatch_locks_long_held") >= 1, 15,
                    desc="leaked and long-held locks")

        exprs = list(expressions(self.dash))
        self.assertGreater(len(exprs), 20)
        pending = {fill(e): title for title, e in exprs}
        errors = {}

        def all_have_data():
            for expr in list(pending):
                r = prom.query(expr)
                if r.get("status") != "success":
                    errors[expr] = "%s: %s" % (r.get("errorType"), r.get("error"))
                    del pending[expr]
                elif has_data(r):
                    del pending[expr]
            if errors:
                raise h.Fatal("queries fail: %s" % json.dumps(errors, indent=1))
            return not pending
        try:
            h.wait_until(all_have_data, 30, 0.5, "data for every dashboard query")
        except AssertionError as e:
            raise AssertionError("%s\nno data for:\n  %s" % (
                e, "\n  ".join("%s: %s" % (t, q) for q, t in pending.items())))

        # the two P99 panels agree with what was sent: half of class
        # lock:order:*'s waits are 250 ms timeouts, the rest under 10 ms
        def p99(expr):
            r = prom.query(fill(expr))
            return {x["metric"].get("class"): float(x["value"][1]) for x in r["data"]["result"]}
        wait = [e for t, e in exprs if t.startswith("Acquire wait P99")]
        self.assertEqual(len(wait), 2)
        from_histogram, from_agent = p99(wait[0]), p99(wait[1])
        self.assertAlmostEqual(from_agent["lock:order:*"], 0.25, delta=0.25 * 0.02)
        self.assertTrue(0.1 <= from_histogram["lock:order:*"] <= 0.5, from_histogram)

        # template variables: label_values(selector, label) has values
        found = {}
        for v in self.dash["templating"]["list"]:
            if v["type"] != "query":
                continue
            m = re.match(r"^label_values\((.*), (\w+)\)$", v["query"]["query"])
            self.assertIsNotNone(m, v["query"])
            r = prom.api("series", **{"match[]": m.group(1)})
            self.assertEqual(r["status"], "success", r)
            found[v["name"]] = {s.get(m.group(2)) for s in r["data"]} - {None}
        self.assertIn("main", found["target"])
        self.assertIn("lock:order:*", found["class"])
        self.assertIn("lock:invoice:*", found["class"])    # from samples only
        self.assertIn("c", found["target"])
        self.assertEqual(found["group"], {"orders"})
        # the Redlock panels see the split key, the shard panels three shards
        inconsistent = prom.query(fill([e for t, e in exprs
                                        if t == "Redlock keys inconsistent"][0]))
        self.assertEqual(float(inconsistent["data"]["result"][0]["value"][1]), 1)
        shards = prom.query(fill([e for t, e in exprs if t == "Shard up"][0]))
        self.assertEqual(len({r["metric"]["shard"] for r in shards["data"]["result"]
                              if r["metric"]["target"] == "c"}), 3)

        # two replicas count once: every panel that adds series up takes one
        # replica's value first, so it reads as it does on replica a alone
        # (rates are read at other instants by the two scrapes: within 1.5x,
        # where counting both would read 2x).  ALERTS is left as it is: the
        # shipped rules take the replicas together, their lock alerts carry
        # no replica (checked below)
        def only_a(expr):
            return re.sub(r"\b(lockwatch_(?!replica\b)[a-z0-9_]+)(?:\{([^}]*)\})?",
                          lambda m: '%s{%slockwatch_replica="a"}' % (
                              m.group(1), m.group(2) + ", " if m.group(2) else ""), expr)

        def values(expr):
            r = prom.query(expr)
            self.assertEqual(r.get("status"), "success", "%s: %s" % (expr, r))
            return {json.dumps(x["metric"], sort_keys=True): float(x["value"][1])
                    for x in r["data"]["result"]}
        # the agent's own work against Redis, and what one replica did
        # (released, notified): each replica's is its own, and the sum is right
        own = re.compile(r"lockwatch_(releases|release_auth_failures|notifications|scans|"
                         r"scan_keys|scan_read_errors)_total")

        def agrees(e):
            # a panel over a subquery's history (the 1h baseline) reads the
            # ramp-up, when the two scrapes saw different counts; what it
            # takes of each instant is the inner expression, compared now
            sub = re.search(r"_over_time\([^(]*\((.*)\)\[\w+:\w+\]\)$", e)
            if sub:
                e = sub.group(1)
            both, one = values(fill(e)), values(fill(only_a(e)))
            if set(both) != set(one):
                return False
            slack = 1.5 if ("rate(" in e or "increase(" in e) else 1.0
            return all(v / slack - 1e-9 <= both[k] <= v * slack + 1e-9 for k, v in one.items())
        compared = 0
        for title, e in exprs:
            if own.search(e):
                continue
            if "max without (instance, pod, lockwatch_replica)" not in e:
                self.assertIsNone(re.search(r"\b(sum|count)\b", e),
                                  "%s adds up every replica's series: %s" % (title, e))
                continue
            h.wait_until(lambda: agrees(e), 10, 1.0,
                         "%s to read as on one replica: %s" % (title, e))
            compared += 1
        self.assertGreater(compared, 20)

        if rules is None:
            return
        # the shipped rules: loaded, evaluated without error, and each
        # expression runs through the query API
        def evaluated():
            groups = prom.api("rules")["data"]["groups"]
            rs_ = [r for g in groups for r in g["rules"]]
            done = rs_ and all(r.get("lastEvaluation", "").startswith("2") and
                               not r["lastEvaluation"].startswith("0001") for r in rs_)
            return rs_ if done else None
        loaded = h.wait_until(evaluated, 15, 0.25, "every rule evaluated once")
        self.assertGreaterEqual(len(loaded), 5)
        for r in loaded:
            self.assertEqual(r["health"], "ok", "%s: %s" % (r["name"], r.get("lastError")))
            q = prom.query(r["query"])
            self.assertEqual(q.get("status"), "success", "%s: %s" % (r["name"], q))
        # two replicas make one lock alert each, with neither replica's labels
        def lock_alerts():
            r = values('ALERTS{alertname=~"Lock[A-Z].*"}')
            return [json.loads(k) for k in r] or None
        alerts = h.wait_until(lock_alerts, 15, 0.5, "lock alerts of the shipped rules")
        for a in alerts:
            self.assertFalse({"instance", "lockwatch_replica"} & set(a), a)
        # the recording rule counts a class's locks once, not once per replica
        def per_class(expr):
            return {json.loads(k).get("class"): v for k, v in values(expr).items()}
        h.wait_until(lambda: per_class("lockwatch:class_locks:sum") ==
                     per_class('sum by (class) (lockwatch_locks{lockwatch_replica="a"})') and
                     per_class("lockwatch:class_locks:sum"), 15, 1.0,
                     "lockwatch:class_locks:sum to count each lock once")

        # every metric the dashboard reads is one the agent exports
        exported = {n for n, _, _ in ag.metrics()}
        # families without a series yet (no read error here) still declare
        # their TYPE
        exported |= set(re.findall(r"(?m)^# TYPE (\w+) ", ag.metrics_text().decode()))
        used = set(re.findall(r"\b((?:lockwatch|process)_[a-z0-9_]+)",
                              " ".join(e for _, e in exprs)))
        used.discard("lockwatch_replica")      # the scrape's label (docs/deploying.md)
        self.assertEqual(used - exported, set(), "the dashboard reads metrics the agent "
                         "does not export")


if __name__ == "__main__":
    h.main()
