# SPDX-License-Identifier: BSD-3-Clause
"""docs/deploying.md stays true (issue 27): the Prometheus config it shows for
replicas passes `promtool check config` (with the shipped rules file in
place of its installed path), labels each replica's target, and drops no
label from the alerts it sends: the rules take each lock condition over the
replicas themselves, and a labeldrop of instance or lockwatch_replica would
give Alertmanager one identity for two replicas' alerts, which flaps
between resolved and firing once a replica is gone.  Nor does the
Kubernetes section tell the Prometheus resource to drop them, nor run in a
pod a tool that the image it suggests (the .deb on debian:bookworm-slim)
does not have."""

import os
import re
import subprocess

import harness as h

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "deploying.md")
RULES = os.path.join(REPO, "packaging", "prometheus", "lockwatch-rules.yml")


def yaml_blocks(text):
    return re.findall(r"```yaml\n(.*?)```", text, re.S)


class DeployingDoc(h.TestCase):

    def test_prometheus_config_for_replicas_checks(self):
        with open(DOC) as f:
            blocks = [b for b in yaml_blocks(f.read()) if b.startswith("# prometheus.yml")]
        self.assertEqual(len(blocks), 1, "one prometheus.yml block in docs/deploying.md")
        text = blocks[0].replace("/usr/share/lockwatch/prometheus/lockwatch-rules.yml", RULES)
        self.assertIn(RULES, text)
        d = h._mkdtemp("lw-promdoc-")
        path = os.path.join(d, "prometheus.yml")
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([h.PROMTOOL, "check", "config", path], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # each replica's target is labelled, and no alert loses a label
        self.assertEqual(set(re.findall(r"labels: \{lockwatch_replica: (\w+)\}", text)),
                         {"a", "b"})
        self.assertNotIn("alert_relabel_configs", text)
        self.assertNotIn("labeldrop", text)

    def test_no_wget_or_curl_in_the_pods(self):
        with open(DOC) as f:
            text = f.read()
        self.assertIn("debian:bookworm-slim", text)
        self.assertEqual(re.findall(r"kubectl exec[^`\n]*\b(?:wget|curl)\b", text), [])

    def test_no_label_dropped_anywhere(self):
        # the Kubernetes section (the Prometheus resource) included
        with open(DOC) as f:
            self.assertNotIn("labeldrop", f.read())


if __name__ == "__main__":
    h.main()
