# SPDX-License-Identifier: BSD-3-Clause
"""A cluster of real Alertmanagers on loopback for the HA tests (issue 27):
Debian's prometheus-alertmanager, N peers gossiping over
--cluster.listen-address / --cluster.peer on free loopback ports, each
routing every alert to one webhook receiver (alerts_receiver.Receiver).

The timers are short so a test sees the cluster's deduplication quickly:
peer i waits i x peer_timeout before it sends what the peers before it
should have sent (then sends only if the notification log gossiped to it
says nobody did).  group_interval is longer than the last peer's wait
(2 x peer_timeout), as docs/deploying.md says it must be: shorter, a late
peer may send a state the first one has already sent the next of.
repeat_interval is an hour: a second notification of the same group within
a test is a duplicate, never a repeat."""

import json
import os
import subprocess

import harness as h
import test_alerts_alertmanager

AM = test_alerts_alertmanager.AM
PEER_TIMEOUT_S = 2

CONFIG = """\
route:
  receiver: hook
  group_by: [alertname, target, key]
  group_wait: 1s
  group_interval: 5s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: %s
        send_resolved: true
"""


class Peer(test_alerts_alertmanager.Alertmanager):
    """One peer; url, get() and stop() as the single Alertmanager's."""

    def __init__(self, i, cluster_ports, hook_url, port):
        self.i = i
        self.dir = h._mkdtemp("lw-am%d-" % i)
        self.port = port
        cfg = os.path.join(self.dir, "am.yml")
        with open(cfg, "w") as f:
            f.write(CONFIG % hook_url)
        self.log = open(os.path.join(self.dir, "am.log"), "wb")
        args = [AM, "--config.file=" + cfg, "--storage.path=" + os.path.join(self.dir, "data"),
                "--web.listen-address=127.0.0.1:%d" % self.port,
                "--cluster.listen-address=127.0.0.1:%d" % cluster_ports[i],
                "--cluster.advertise-address=127.0.0.1:%d" % cluster_ports[i],
                "--cluster.peer-timeout=%ds" % PEER_TIMEOUT_S,
                "--cluster.gossip-interval=50ms", "--cluster.pushpull-interval=1s",
                "--cluster.settle-timeout=5s"]
        args += ["--cluster.peer=127.0.0.1:%d" % p
                 for j, p in enumerate(cluster_ports) if j != i]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log)
        h._live_procs.append(self.proc)

    def peers(self):
        return len(json.loads(self.get("/api/v2/status"))["cluster"]["peers"])


class Cluster:
    """n peers, each knowing the others; ready when every one sees all n."""

    def __init__(self, hook_url, n=3):
        if not os.access(AM, os.X_OK):
            raise h.Fatal("%s is missing (make deps installs prometheus-alertmanager)" % AM)
        # 2n distinct ports (web and cluster); a port another test took
        # between the pick and the bind ("address already in use") starts
        # the cluster again on fresh ones, at most three times
        for attempt in range(3):
            ports = h.free_ports(2 * n)
            self.peers = [Peer(i, ports[n:], hook_url, ports[i]) for i in range(n)]
            try:
                for p in self.peers:
                    h.wait_until(lambda: p.peers() == n, 60,
                                 desc="alertmanager %d sees %d peers" % (p.i, n))
                return
            except h.Fatal as e:
                self.stop()
                if attempt == 2 or "address already in use" not in str(e):
                    raise

    def webhook_sections(self):
        """[webhook amN] sections for a lockwatch config: every agent posts
        to every peer (never through a load balancer)."""
        return "".join("[webhook am%d]\nurl = %s\nformat = alertmanager\ntimeout = 5s\n"
                       "retry_base = 100ms\n\n" % (p.i, p.url) for p in self.peers)

    def stop(self):
        for p in self.peers:
            p.stop()

    def logs(self):
        return "".join("\n----- alertmanager %d -----\n%s" % (p.i, h.tail(p.log.name, 20))
                       for p in self.peers)
