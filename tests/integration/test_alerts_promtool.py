# SPDX-License-Identifier: BSD-3-Clause
"""The shipped Prometheus rules (packaging/prometheus/lockwatch-rules.yml):
`promtool check rules` accepts them, `promtool test rules` passes their unit
tests (lockwatch-rules.test.yml), every alertname the agent raises has a rule,
and every metric a rule reads is one the agent exports (checked against a
live agent's /metrics with samples on, so the wait families are there).
docs/alerts.md's table lists every alert kind with its severity, and a
count of them in words in the docs is right.  Every lock rule takes its
condition over the replicas (max without (instance, pod,
lockwatch_replica)): two replicas make one alert, which outlives either
replica; the rules about the agents themselves keep instance."""

import hashlib
import hmac
import os
import re
import socket
import subprocess
import time

import yaml

import harness as h
from client_helpers import closed_udp_port

DIR = os.path.join(h.REPO, "packaging", "prometheus")
RULES = os.path.join(DIR, "lockwatch-rules.yml")
TESTS = os.path.join(DIR, "lockwatch-rules.test.yml")
ALERTNAMES = {"LockLeaked", "LockHeldTooLong", "LockReentrancyHigh", "LockWaitP99High",
              "LockTargetDown", "LockShardDown", "LockRedlockSplit", "LockLeaseTooShort",
              "LockCountSurge", "LockLeaseTooLong", "LockLostAtFailover", "LockDeadlock",
              "LockOrderInversion", "LockLeaseOverrun", "LockLeaseLost"}
RECORDS = 2     # lockwatch:class_locks:sum and :median_1h, LockCountSurge's
# Prometheus's own, about the agent (no agent can say it is gone itself)
SELF = {"LockwatchAgentDown", "LockwatchShardDown", "LockwatchBlind", "LockwatchTwoLeaders",
        "LockwatchUnfenced", "LockwatchSamplesRejected", "LockwatchFdsNearLimit",
        "LockwatchNoLeader",
        "LockwatchRestarting", "LockwatchConfigReloadFailed"}


def promtool(*args):
    p = subprocess.run([h.PROMTOOL] + list(args), cwd=DIR, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace")


class PromRules(h.TestCase):

    def test_check_rules(self):
        rc, out = promtool("check", "rules", RULES)
        self.assertEqual(rc, 0, out)
        self.assertIn("%d rules found" % (len(ALERTNAMES) + len(SELF) + RECORDS), out)

    def test_rule_unit_tests(self):
        rc, out = promtool("test", "rules", TESTS)
        self.assertEqual(rc, 0, out)
        self.assertIn("SUCCESS", out)

    def test_severity_labels_match_the_alert_kinds(self):
        # the severity column of alerts/alert_kinds.h is what the agent sends;
        # the rules must say the same
        with open(os.path.join(h.REPO, "alerts", "alert_kinds.h")) as f:
            kinds = dict((n, s.lower()) for n, s in
                         re.findall(r'X\(LOCK_\w+,\s*"(\w+)",\s*(\w+),', f.read()))
        self.assertEqual(set(kinds), ALERTNAMES)
        with open(RULES) as f:
            text = f.read()
        rules = dict(re.findall(r"(?ms)^\s*- alert: (\w+)\n.*?^\s*severity: (\w+)", text))
        self.assertEqual({n: s for n, s in rules.items() if n not in SELF}, kinds)

    def test_docs_count_and_list_every_alert_kind(self):
        # issue 24: the docs said six alerts where there were seven.  The
        # table of docs/alerts.md has one row per kind with its severity,
        # and a count in words ("the same fifteen alerts") is the kinds'
        with open(os.path.join(h.REPO, "alerts", "alert_kinds.h")) as f:
            kinds = dict((n, s.lower()) for n, s in
                         re.findall(r'X\(LOCK_\w+,\s*"(\w+)",\s*(\w+),', f.read()))
        with open(os.path.join(h.REPO, "docs", "alerts.md")) as f:
            rows = dict(re.findall(r"(?m)^\| `(Lock\w+)` \| (\w+) \|", f.read()))
        self.assertEqual(rows, kinds)
        words = ("zero one two three four five six seven eight nine ten eleven twelve "
                 "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()
        docs = [os.path.join(h.REPO, "README.md"), os.path.join(h.REPO, "CONTRIBUTING.md")]
        docs += [os.path.join(h.REPO, "docs", n) for n in os.listdir(os.path.join(h.REPO, "docs"))
                 if n.endswith(".md")]
        counts = []
        for path in docs:
            with open(path) as f:
                for m in re.finditer(r"(?i)\b(%s|\d+) (?:alert kinds|alerts)\b(?! (?:a|per) )"
                                     % "|".join(words), f.read()):
                    n = m.group(1).lower()
                    if not n.isdigit():
                        counts.append((os.path.basename(path), words.index(n)))
        self.assertTrue(counts)
        self.assertEqual([c for c in counts if c[1] != len(kinds)], [], len(kinds))

    def test_lock_rules_take_the_replicas_together(self):
        # a rule left per replica fires once per replica, and its copy on a
        # replica that dies resolves (docs/deploying.md "Replicas")
        with open(RULES) as f:
            groups = {g["name"]: g["rules"] for g in yaml.safe_load(f)["groups"]}
        over = "max without (instance, pod, lockwatch_replica) ("
        for rule in groups["lockwatch"]:
            # no label that the max takes away is left to name
            self.assertNotIn("$labels.instance", str(rule["annotations"]), rule["alert"])
            expr = " ".join(rule["expr"].split())
            if rule["alert"] == "LockCountSurge":
                # on the recording rule, which takes one replica's count
                self.assertTrue(expr.startswith("lockwatch:class_locks:"), expr)
                continue
            self.assertTrue(expr.startswith(over) and expr.endswith(")"), (rule["alert"], expr))
        for rule in groups["lockwatch-self"]:
            if rule["alert"] == "LockwatchAgentDown":
                self.assertNotIn("without", rule["expr"])
                self.assertIn("$labels.instance", rule["annotations"]["summary"])

    def test_rules_match_the_agent(self):
        with open(RULES) as f:
            text = f.read()
        self.assertEqual(set(re.findall(r"(?m)^\s*- alert: (\w+)", text)), ALERTNAMES | SELF)
        code = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
        used = set(re.findall(r"\b((?:lockwatch|process)_[a-z0-9_]+)", code))
        used.discard("lockwatch_replica")      # the scrape's label (docs/deploying.md)
        self.assertIn("lockwatch_acquire_wait_seconds_count", used)
        self.assertIn("process_max_fds", used)
        rs = self.start_redis()
        udp = closed_udp_port()
        # with a samples key, so that the key check's families are there too
        key = b"promtool test key, not a secret"
        keyfile = os.path.join(h._mkdtemp("lw-key-"), "samples.key")
        with open(keyfile, "wb") as f:
            f.write(key + b"\n")
        ag = self.start_agent(rs, samples="127.0.0.1:%d" % udp,
                              extra="[samples]\nkey_file = %s\n" % keyfile)
        rs.client().set("lock:x:1", "t")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(s.close)
        body = b"%d\nlw1 wait lock:x:1 1000 ok\nlw1 hold lock:x:1 2000" % int(time.time())
        mac = hmac.new(key, body, hashlib.sha256).hexdigest()[:32].encode()
        s.sendto(b"lw1 mac " + mac + b" " + body, ("127.0.0.1", udp))
        ag.wait_scans(1)
        def exported():
            names = {n for n, _, _ in ag.metrics()}
            # families without a series yet (no [redlock] group here) still
            # declare their TYPE
            types = re.findall(r"(?m)^# TYPE (\w+) (\w+)", ag.metrics_text().decode())
            names |= {n for n, _ in types}
            # a histogram without a sample yet has its series' names too
            names |= {n + s for n, t in types if t == "histogram" for s in ("_bucket", "_sum", "_count")}
            return names if "lockwatch_acquire_wait_p99_seconds" in names else None
        names = ag.wait_for(exported, timeout=10, desc="the wait families")
        self.assertEqual(used - names, set(), "rules read metrics the agent does not export")


if __name__ == "__main__":
    h.main()
