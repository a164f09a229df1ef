# SPDX-License-Identifier: BSD-3-Clause
"""Alerts pushed to a real Alertmanager (issue 4 acceptance, SPEC "Alerts",
format = alertmanager).

Debian's prometheus-alertmanager runs on a free loopback port with clustering
off and its storage in a temp dir.  A leaked lock appears in GET
/api/v2/alerts with the SPEC's labels (alertname, target, class, key), its
annotations, an endsAt in the future (now + 4m) and the fingerprint lockwatch
shows in GET /api/v1/alerts (both are the FNV-1a fingerprint of the labels);
once the lock gets a TTL the alert is posted with endsAt = now, and
Alertmanager no longer lists it as active.
"""

import datetime
import json
import os
import re
import subprocess
import time
import urllib.request

import harness as h

AM = "/usr/bin/prometheus-alertmanager"
KEY = "lock:shipment:7"
CLASS = "lock:shipment:*"

AM_CONFIG = """\
route:
  receiver: blackhole
  group_wait: 1s
receivers:
  - name: blackhole
"""


def parse_time(s):
    """RFC 3339 as Alertmanager and lockwatch write it (Python 3.11 reads any
    number of fraction digits and a Z)."""
    return datetime.datetime.fromisoformat(s)


class Alertmanager:
    def __init__(self):
        self.dir = h._mkdtemp("lw-am-")
        self.port = h.free_port()
        cfg = os.path.join(self.dir, "am.yml")
        with open(cfg, "w") as f:
            f.write(AM_CONFIG)
        self.log = open(os.path.join(self.dir, "am.log"), "wb")
        self.proc = subprocess.Popen(
            [AM, "--config.file=" + cfg, "--storage.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--cluster.listen-address="],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        h._live_procs.append(self.proc)
        h.wait_until(lambda: self.get("/-/ready") is not None, 30, desc="alertmanager ready")

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def get(self, path):
        if self.proc.poll() is not None:
            raise h.Fatal("alertmanager exited %s:\n%s" % (self.proc.returncode,
                                                           h.tail(self.log.name)))
        with urllib.request.urlopen(self.url + path, timeout=5) as r:
            return r.read()

    def alerts(self):
        return json.loads(self.get("/api/v2/alerts"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        h._forget(self.proc)
        self.log.close()


class AlertmanagerSink(h.TestCase):

    def test_leak_appears_and_resolves_in_alertmanager(self):
        if not os.access(AM, os.X_OK):
            self.fail("%s is missing (make deps installs prometheus-alertmanager)" % AM)
        am = Alertmanager()
        self.addCleanup(am.stop)
        rs = self.start_redis()
        c = rs.client()
        hook = ("[webhook am]\nurl = %s\nformat = alertmanager\ntimeout = 5s\n"
                "retry_base = 100ms\n" % am.url)
        ag = self.start_agent(rs, scan_interval="200ms", leak_grace="1s", max_hold="1h",
                              extra=hook,
                              rules_extra={"runbook_url": "https://wiki.example/lw/{alertname}"})
        c.set(KEY, "tok-ship")

        def leak_in_am():
            return [a for a in am.alerts() if a["labels"].get("alertname") == "LockLeaked"]
        found = ag.wait_for(leak_in_am, timeout=20, desc="LockLeaked in Alertmanager")
        self.assertEqual(len(found), 1, found)
        a = found[0]
        self.assertEqual(a["labels"], {"alertname": "LockLeaked", "target": "main",
                                       "class": CLASS, "key": KEY, "severity": "warning"})
        self.assertIn(KEY, a["annotations"]["summary"])
        self.assertIn("description", a["annotations"])
        self.assertEqual(a["annotations"]["runbook_url"], "https://wiki.example/lw/LockLeaked")
        self.assertEqual(a["status"]["state"], "active")
        ends = parse_time(a["endsAt"])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.assertGreater((ends - now).total_seconds(), 200, a["endsAt"])
        self.assertTrue(a["generatorURL"].endswith("/api/v1/alerts"), a)
        st, ours = ag.get_json("/api/v1/alerts")
        self.assertEqual([x["fingerprint"] for x in ours["alerts"]], [a["fingerprint"]])
        self.assertEqual(ours["alerts"][0]["annotations"], a["annotations"])
        # counted once its answer is read, which may come after Alertmanager lists it
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_notifications_total", sink="am",
                                   result="sent") == 1, timeout=5, desc="the post counted sent")

        c.pexpire(KEY, 600000)

        def gone():
            live = [x for x in leak_in_am() if x["status"]["state"] == "active"
                    and parse_time(x["endsAt"]) > datetime.datetime.now(datetime.timezone.utc)]
            return not live
        ag.wait_for(gone, timeout=20, desc="LockLeaked gone from Alertmanager")
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_notifications_total", sink="am",
                                result="dropped"), 0)
        # the log's resolved line says what it was about and since when, not
        # the firing text again (issue 24)
        log = ag.log_tail(200)
        line = [ln for ln in log.splitlines() if "alert resolved: LockLeaked" in ln]
        self.assertEqual(len(line), 1, log)
        self.assertRegex(line[0], r"alert resolved: LockLeaked: lock %s on main: resolved "
                         r"after \S+ \(firing since \d{4}-\d\d-\d\dT[\d:]+Z\)$"
                         % re.escape(KEY))
        self.assertNotIn("no TTL", line[0])

    def test_watchdog_fires_while_the_agent_runs(self):
        # watchdog = on: LockwatchWatchdog, always firing, the replica a
        # label (each replica its own), posted at start with nothing else
        # firing, and again with every re-post
        if not os.access(AM, os.X_OK):
            self.fail("%s is missing (make deps installs prometheus-alertmanager)" % AM)
        am = Alertmanager()
        self.addCleanup(am.stop)
        rs = self.start_redis()
        hook = ("[webhook am]\nurl = %s\nformat = alertmanager\nwatchdog = on\n"
                "retry_base = 100ms\n" % am.url)
        ag = self.start_agent(rs, scan_interval="500ms", extra=hook,
                              agent_extra={"replica": "a"})

        def watchdog():
            return [a for a in am.alerts()
                    if a["labels"].get("alertname") == "LockwatchWatchdog"] or None
        (w,) = ag.wait_for(watchdog, timeout=10, desc="LockwatchWatchdog in Alertmanager")
        self.assertEqual(w["labels"], {"alertname": "LockwatchWatchdog", "severity": "none",
                                       "replica": "a"})
        self.assertEqual(w["status"]["state"], "active")
        ends = parse_time(w["endsAt"])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.assertGreater((ends - now).total_seconds(), 200, w["endsAt"])
        self.assertIn("dead man's switch", w["annotations"]["description"])
        # not one of the agent's alerts: nothing of it in its own list
        st, ours = ag.get_json("/api/v1/alerts")
        self.assertEqual((st, ours["alerts"]), (200, []))
        self.assertGreaterEqual(h.msum(ag.metrics(), "lockwatch_notifications_total", sink="am",
                                       result="sent"), 1)


if __name__ == "__main__":
    h.main()
