#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write packaging/kubernetes/prometheusrule.yaml from the shipped rules,
packaging/prometheus/lockwatch-rules.yml (run it after changing them:
tests/integration/test_kubernetes.py fails until the two are equal)."""

import os

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
HEAD = """\
# SPDX-License-Identifier: BSD-3-Clause
# Prometheus Operator: the shipped rules (packaging/prometheus/lockwatch-rules.yml)
# as a PrometheusRule.  Written by gen-prometheusrule.py from that file; keep the
# two equal (tests/integration/test_kubernetes.py compares them).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: lockwatch
  labels:
    app.kubernetes.io/name: lockwatch
"""

with open(os.path.join(HERE, "..", "prometheus", "lockwatch-rules.yml")) as f:
    rules = yaml.safe_load(f)
with open(os.path.join(HERE, "prometheusrule.yaml"), "w") as f:
    f.write(HEAD + yaml.safe_dump({"spec": rules}, sort_keys=False, width=100,
                                  allow_unicode=True))
