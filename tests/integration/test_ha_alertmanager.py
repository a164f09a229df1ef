# SPDX-License-Identifier: BSD-3-Clause
"""Replicas behind a real 3-peer Alertmanager cluster (issue 27): two agents
with the same config but `replica = a` / `replica = b` watch one Redis and
post to all three peers; the cluster delivers each alert to its webhook
receiver exactly once, firing and resolved, with the replica only in the
"replica" annotation.  With replica a killed, a new leak is still delivered
once (by b).

The wait after a delivery is the cluster's own dedup window (the last peer
sends 2 x peer_timeout after the first), with room: a duplicate would have
arrived by then.
"""

import signal
import time

import alerts_receiver
import am_cluster
import harness as h

DEDUP_WINDOW_S = 3 * am_cluster.PEER_TIMEOUT_S + 4


def notices(recv, status, key):
    """The webhook notifications of this status carrying an alert for key."""
    out = []
    for r in recv.snapshot():
        body = r.json()
        if body.get("status") != status:
            continue
        alerts = [a for a in body["alerts"] if a["labels"].get("key") == key
                  and a["status"] == status]
        if alerts:
            out.append(alerts)
    return out


class HAAlertmanager(h.TestCase):

    def test_two_replicas_one_delivery(self):
        recv = alerts_receiver.Receiver()
        self.addCleanup(recv.stop)
        am = am_cluster.Cluster(recv.url)
        self.addCleanup(am.stop)
        rs = self.start_redis()
        c = rs.client()
        ags = [self.start_agent(rs, scan_interval="300ms", leak_grace="1s", max_hold="1h",
                                agent_extra={"replica": name}, extra=am.webhook_sections())
               for name in ("a", "b")]

        c.set("lock:ha:1", "tok")
        try:
            h.wait_until(lambda: notices(recv, "firing", "lock:ha:1"), 30,
                         desc="LockLeaked delivered")
            # both replicas posted it to every peer
            for ag in ags:
                ag.wait_for(lambda: all(h.msum(ag.metrics(), "lockwatch_notifications_total",
                                               sink="am%d" % i, result="sent") >= 1
                                        for i in range(3)), timeout=20,
                            desc="posted to all three peers")
            time.sleep(DEDUP_WINDOW_S)
            fired = notices(recv, "firing", "lock:ha:1")
            self.assertEqual(len(fired), 1, fired)
            self.assertEqual(len(fired[0]), 1, fired)   # one alert, not one per replica
            a = fired[0][0]
            self.assertNotIn("replica", a["labels"])
            self.assertIn(a["annotations"]["replica"], ("a", "b"))

            c.pexpire("lock:ha:1", 600000)
            h.wait_until(lambda: notices(recv, "resolved", "lock:ha:1"), 30,
                         desc="resolved delivered")
            time.sleep(DEDUP_WINDOW_S)
            self.assertEqual(len(notices(recv, "resolved", "lock:ha:1")), 1)

            # one replica gone: the other still alerts, once
            ags[0].kill()
            c.set("lock:ha:2", "tok")
            h.wait_until(lambda: notices(recv, "firing", "lock:ha:2"), 30,
                         desc="LockLeaked from replica b alone")
            time.sleep(DEDUP_WINDOW_S)
            fired = notices(recv, "firing", "lock:ha:2")
            self.assertEqual(len(fired), 1, fired)
            self.assertEqual(fired[0][0]["annotations"]["replica"], "b")
            self.assertEqual(len(notices(recv, "firing", "lock:ha:1")), 1)
        except AssertionError:
            print(am.logs())
            raise


if __name__ == "__main__":
    h.main()
