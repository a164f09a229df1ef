# SPDX-License-Identifier: BSD-3-Clause
"""[redlock NAME]: five independent redis-servers, one target each, one
group.  A key held by the same token on 3 of 5 is consistent; different
tokens on 2 and 2 fire LockRedlockSplit and raise
lockwatch_redlock_inconsistent; when the nodes agree again both go."""

import harness as h

GROUP = "orders"


class Redlock(h.TestCase):

    def test_split_and_consistent(self):
        nodes = [self.start_redis() for _ in range(5)]
        names = ["r%d" % (i + 1) for i in range(5)]
        for n in nodes[:3]:
            n.client().set("lock:order:1", "tok-same", px=600000)
        for n in nodes[:2]:
            n.client().set("lock:order:2", "tok-a", px=600000)
        for n in nodes[2:4]:
            n.client().set("lock:order:2", "tok-b", px=600000)
        # a lock on all five, and one only on a minority but young: pending
        for n in nodes:
            n.client().set("lock:order:3", "tok-all", px=600000)
        nodes[4].client().set("lock:order:4", "tok-alone", px=600000)

        ag = self.start_agent(targets=list(zip(names, [n.url for n in nodes])),
                              scan_interval="1s", max_hold="1h",
                              extra="[redlock %s]\ntargets = %s\n" % (GROUP, ", ".join(names)))

        # The group is compared as each member's scan lands: wait for a
        # report that has all four keys (lock:order:4 exists on r5 alone,
        # whose first scan may come after r1-r4 already show the split).
        def split():
            m = ag.metrics()
            v = h.select(m, "lockwatch_redlock_inconsistent", group=GROUP)
            seen = sum(n for _, n in h.select(m, "lockwatch_redlock_keys", group=GROUP))
            return m if v and v[0][1] == 1 and seen == 4 else None
        m = ag.wait_for(split, 20, desc="lockwatch_redlock_inconsistent{group=%s} == 1 "
                        "with all four keys reported" % GROUP)
        keys = {l["state"]: v for l, v in h.select(m, "lockwatch_redlock_keys", group=GROUP)}
        self.assertEqual(keys["split"], 1, keys)
        self.assertEqual(keys["consistent"], 2, keys)      # lock:order:1 and :3
        self.assertEqual(keys["under_quorum"], 0, keys)
        self.assertEqual(keys["pending"], 1, keys)         # lock:order:4, young

        # The alert may fire while a member's first scan is still to land
        # (its node shows as "?"); the description follows each evaluation,
        # so wait for the one that names every node.
        want = "r1=A r2=A r3=B r4=B r5=-"

        def firing():
            st, j = ag.get_json("/api/v1/alerts")
            got = [a for a in j["alerts"] if a["labels"]["alertname"] == "LockRedlockSplit"]
            if st != 200 or not got:
                return None
            return got if any(want in a["annotations"]["description"] for a in got) else None
        alerts = ag.wait_for(firing, 10, desc="LockRedlockSplit firing, description naming %s" % want)
        self.assertEqual(len(alerts), 1, alerts)
        a = alerts[0]
        self.assertEqual(a["labels"]["key"], "lock:order:2")
        self.assertEqual(a["labels"]["target"], GROUP)
        self.assertEqual(a["labels"]["class"], "lock:order:*")
        self.assertIn(want, a["annotations"]["description"])
        self.assertEqual(h.msum(ag.metrics(), "lockwatch_alerts_firing",
                                alertname="LockRedlockSplit"), 1)
        rc, out = h.promtool_check(ag.metrics_text())
        self.assertEqual(rc, 0, out)

        # the nodes agree again: the minority copies go
        for n in nodes[:2]:
            n.client().delete("lock:order:2")
        n = nodes[4]
        n.client().set("lock:order:2", "tok-b", px=600000)

        def agreed():
            m = ag.metrics()
            v = h.select(m, "lockwatch_redlock_inconsistent", group=GROUP)
            return v and v[0][1] == 0 and \
                h.msum(m, "lockwatch_alerts_firing", alertname="LockRedlockSplit") == 0
        ag.wait_for(agreed, 20, desc="the group consistent and the alert resolved")

    def test_once_reports_a_split(self):
        nodes = [self.start_redis() for _ in range(3)]
        nodes[0].client().set("lock:x", "a")
        nodes[1].client().set("lock:x", "b")
        names = ["n1", "n2", "n3"]
        ag = h.Agent(targets=list(zip(names, [n.url for n in nodes])), start=False,
                     extra="[redlock g3]\ntargets = n1, n2, n3\n")
        p = h.run_lockwatchd(["--once", "-c", ag.config_path])
        self.assertEqual(p.returncode, 0, p.stderr)
        m = h.parse_metrics(p.stdout)
        self.assertEqual(h.select(m, "lockwatch_redlock_inconsistent", group="g3")[0][1], 1)


if __name__ == "__main__":
    h.main()
