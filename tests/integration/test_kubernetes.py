# SPDX-License-Identifier: BSD-3-Clause
"""packaging/kubernetes/ (issue 27), checked as far as a machine without a
cluster allows:

  - every manifest parses (python3-yaml) and has the kinds the base names;
  - `kubectl kustomize` renders the base, when kubectl is installed (it is
    no Debian package: skipped with a word otherwise);
  - each StatefulSet: LOCKWATCH_SHARDS equals its replicas, both have the
    same, shard_peers lists that many URLs, its selector matches its pod
    labels, its serviceName is the headless Service, its ports are the
    ones the Service and PodMonitor name;
  - every pod's start script, run here with its HOSTNAME and the real
    lockwatchd -n, gives a valid config with shard = <ordinal>/<N> and its
    replica;
  - the PrometheusRule is the shipped rules file, and promtool checks it.
"""

import os
import re
import shutil
import subprocess

import yaml

import harness as h

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
K8S = os.path.join(REPO, "packaging", "kubernetes")


def load(name):
    with open(os.path.join(K8S, name)) as f:
        return yaml.safe_load(f)


def env_of(container):
    return {e["name"]: e["value"] for e in container.get("env", [])}


class Kubernetes(h.TestCase):

    def setUp(self):
        super().setUp()
        self.kust = load("kustomization.yaml")
        self.docs = {n: load(n) for n in self.kust["resources"]}
        self.sets = [d for d in self.docs.values() if d["kind"] == "StatefulSet"]
        self.svc = next(d for d in self.docs.values() if d["kind"] == "Service")

    def test_kinds(self):
        kinds = sorted(d["kind"] for d in self.docs.values())
        self.assertEqual(kinds, ["PodMonitor", "PrometheusRule", "Service", "StatefulSet",
                                 "StatefulSet"])
        self.assertEqual(self.kust["configMapGenerator"][0]["files"], ["lockwatch.ini"])
        self.assertEqual(self.svc["spec"]["clusterIP"], "None")

    def test_kustomize_renders(self):
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            print("skipped the render: kubectl is not installed")
            return
        r = subprocess.run([kubectl, "kustomize", K8S], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = list(yaml.safe_load_all(r.stdout))
        cms = [d for d in out if d["kind"] == "ConfigMap"]
        self.assertEqual(len(cms), 1)
        # the generated name (with its hash) is what the pods mount
        for d in out:
            if d["kind"] == "StatefulSet":
                vols = d["spec"]["template"]["spec"]["volumes"]
                self.assertIn(cms[0]["metadata"]["name"],
                              [v["configMap"]["name"] for v in vols if "configMap" in v])

    def test_statefulsets_agree(self):
        with open(os.path.join(K8S, "lockwatch.ini")) as f:
            ini = f.read()
        peers = next(l for l in ini.splitlines() if l.startswith("shard_peers"))
        npeers = len(peers.split("=", 1)[1].split(","))
        replicas = set()
        svc_ports = {(p["targetPort"], p["protocol"]) for p in self.svc["spec"]["ports"]}
        for s in self.sets:
            spec = s["spec"]
            c = spec["template"]["spec"]["containers"][0]
            env = env_of(c)
            labels = spec["template"]["metadata"]["labels"]
            self.assertEqual(int(env["LOCKWATCH_SHARDS"]), spec["replicas"], s["metadata"])
            self.assertEqual(env["LOCKWATCH_REPLICA"], labels["lockwatch.io/replica"])
            self.assertEqual(spec["serviceName"], self.svc["metadata"]["name"])
            for k, v in spec["selector"]["matchLabels"].items():
                self.assertEqual(labels.get(k), v)
            for k, v in self.svc["spec"]["selector"].items():
                self.assertEqual(labels.get(k), v)
            ports = {(p["name"], p["protocol"]) for p in c["ports"]}
            self.assertLessEqual(svc_ports, ports)
            replicas.add(spec["replicas"])
        self.assertEqual(len(replicas), 1, "every replica has every shard")
        self.assertEqual(npeers, replicas.pop())
        self.assertEqual(len({env_of(s["spec"]["template"]["spec"]["containers"][0])
                              ["LOCKWATCH_REPLICA"] for s in self.sets}), len(self.sets))

    def test_every_pod_gets_a_valid_config(self):
        d = h._mkdtemp("lw-k8s-")
        bindir = os.path.join(d, "bin")
        os.makedirs(bindir)
        # lockwatchd in the script is ours, checking instead of serving
        with open(os.path.join(bindir, "lockwatchd"), "w") as f:
            f.write("#!/bin/sh\nexec %s -n -c \"$3\"\n" % h.LOCKWATCHD)
        os.chmod(os.path.join(bindir, "lockwatchd"), 0o755)
        seen = set()
        for s in self.sets:
            c = s["spec"]["template"]["spec"]["containers"][0]
            self.assertEqual(c["command"], ["/bin/sh", "-c"])
            script = c["args"][0].replace("/etc/lockwatch/", K8S + "/") \
                                 .replace("/tmp/", d + "/%s-" % s["metadata"]["name"])
            for ordinal in range(s["spec"]["replicas"]):
                env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"],
                           HOSTNAME="%s-%d" % (s["metadata"]["name"], ordinal), **env_of(c))
                r = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True,
                                   text=True, timeout=30)
                self.assertEqual(r.returncode, 0, r.stderr)
                shard = "%d/%s" % (ordinal, env_of(c)["LOCKWATCH_SHARDS"])
                self.assertIn("\nshard               = %s\n" % shard, r.stdout)
                self.assertIn("\nreplica             = %s\n" % env_of(c)["LOCKWATCH_REPLICA"],
                              r.stdout)
                seen.add((shard, env_of(c)["LOCKWATCH_REPLICA"]))
        self.assertEqual(seen, {("0/2", "a"), ("1/2", "a"), ("0/2", "b"), ("1/2", "b")})
        # the placeholder lines as docs/deploying.md quotes them, without the
        # comment after them, are replaced too; one the script cannot
        # replace stops the pod with a reason, never runs it half set
        with open(os.path.join(K8S, "lockwatch.ini")) as f:
            ini = f.read()
        bare = re.sub(r"(?m)^(replica|shard) = (POD_\w+) .*$", r"\1 = \2", ini)
        self.assertNotEqual(bare, ini)
        odd = ini.replace("shard = POD_SHARD", "shard=POD_SHARD_OF_MINE")
        c = self.sets[0]["spec"]["template"]["spec"]["containers"][0]
        for text, ok in ((bare, True), (odd, False)):
            cd = h._mkdtemp("lw-k8s-ini-")
            with open(os.path.join(cd, "lockwatch.ini"), "w") as f:
                f.write(text)
            script = c["args"][0].replace("/tmp/", cd + "/out-") \
                                 .replace("/etc/lockwatch/", cd + "/")
            env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"],
                       HOSTNAME="lockwatch-a-1", **env_of(c))
            r = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True,
                               text=True, timeout=30)
            if ok:
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("\nshard               = 1/2\n", r.stdout)
                self.assertIn("\nreplica             = a\n", r.stdout)
            else:
                self.assertEqual(r.returncode, 2, r.stdout)
                self.assertIn("placeholder was not replaced", r.stderr)

    def test_podmonitor_scrapes_the_pods(self):
        pm = next(d for d in self.docs.values() if d["kind"] == "PodMonitor")
        labels = self.sets[0]["spec"]["template"]["metadata"]["labels"]
        for k, v in pm["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v)
        ep = pm["spec"]["podMetricsEndpoints"][0]
        names = {p["name"] for p in self.sets[0]["spec"]["template"]["spec"]["containers"][0]
                 ["ports"]}
        self.assertIn(ep["port"], names)
        self.assertEqual(ep["path"], "/metrics")
        self.assertIn("lockwatch_replica", [r["targetLabel"] for r in ep["relabelings"]])

    def test_prometheusrule_is_the_shipped_rules(self):
        pr = next(d for d in self.docs.values() if d["kind"] == "PrometheusRule")
        with open(os.path.join(REPO, "packaging", "prometheus", "lockwatch-rules.yml")) as f:
            self.assertEqual(pr["spec"], yaml.safe_load(f),
                             "run packaging/kubernetes/gen-prometheusrule.py")
        path = os.path.join(h._mkdtemp("lw-k8s-rules-"), "rules.yml")
        with open(path, "w") as f:
            yaml.safe_dump(pr["spec"], f)
        r = subprocess.run([h.PROMTOOL, "check", "rules", path], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    h.main()
