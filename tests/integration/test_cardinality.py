# SPDX-License-Identifier: BSD-3-Clause
# run-all: heavy (loads and scans 100,000 locks)
"""The number of series in /metrics does not grow with the number of locks.

1,000 locks of one class, then (FLUSHALL) 100,000 locks of the same class:
after a full scan of each, /metrics has the same number of sample lines.
Classes are capped at 200 per target (the rest are "other"), a class
keeping its place from view to view (a leak's alert does not flap between
its class and "other"), and per-key series (lockwatch_lock_offender_info)
at top_offenders, worst first.
"""

import time

import harness as h

CLASS = "lock:*"


class Cardinality(h.TestCase):

    def leak_alerts(self, ag):
        """The agent's LockLeaked alerts: {(key, class, startsAt)}."""
        st, doc = ag.get_json("/api/v1/alerts")
        self.assertEqual(st, 200, doc)
        return {(a["labels"].get("key"), a["labels"].get("class"), a["startsAt"])
                for a in doc["alerts"] if a["labels"]["alertname"] == "LockLeaked"}

    def fill(self, c, n):
        c.flushall()
        h.load(c, (("SET", "lock:%d" % i, "tok-%d" % i, "PX", 3600000)
                   for i in range(n)))
        self.assertEqual(c.dbsize(), n)

    def settle(self, ag, n):
        """Wait for a scan that saw exactly n locks, then one more full scan;
        return the exposition."""
        def counted():
            m = ag.metrics()
            return h.msum(m, "lockwatch_locks", target="main") == n
        ag.wait_for(counted, timeout=90, interval=0.25,
                    desc="sum(lockwatch_locks) == %d" % n)
        ag.wait_scans(1, timeout=90)
        text = ag.metrics_text()
        m = h.parse_metrics(text)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), n)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main", **{"class": CLASS}), n,
                         h.select(m, "lockwatch_locks"))
        rc, out = h.promtool_check(text)
        self.assertEqual(rc, 0, out)
        return text

    def test_series_count_independent_of_lock_count(self):
        rs = self.start_redis()
        c = rs.client()
        self.fill(c, 1000)
        # Locks held, with TTLs, far from max_hold/leak_grace: the only thing
        # that changes between the two runs is how many there are.
        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1h",
                              max_hold="1h", top_offenders=20)
        small = self.settle(ag, 1000)
        self.fill(c, 100000)
        large = self.settle(ag, 100000)

        def names(text):
            return sorted((n, tuple(sorted((k, v) for k, v in l.items()
                                           if k not in ("key", "holder"))))
                          for (n, l, v) in h.parse_metrics(text))
        n_small, n_large = h.series_count(small), h.series_count(large)
        self.assertEqual(n_small, n_large,
                         "series: %d with 1,000 locks, %d with 100,000\n"
                         "only with 1,000: %s\nonly with 100,000: %s"
                         % (n_small, n_large,
                            sorted(set(names(small)) - set(names(large)))[:20],
                            sorted(set(names(large)) - set(names(small)))[:20]))
        # And it is small: per-key series are capped by top_offenders.
        offenders = h.select(h.parse_metrics(large), "lockwatch_lock_offender_info")
        self.assertLessEqual(len({l["key"] for (l, v) in offenders}), 20)
        self.assertLess(n_large, 500)

    def test_a_state_kept_whole_is_a_complete_page(self):
        # 10,500 locks, more than the 10,000 kept in detail: the list of
        # all is not complete, but the 50 leaked ones (the worst, all kept)
        # are a complete answer to state=leaked.
        rs = self.start_redis()
        c = rs.client()
        c.flushall()
        h.load(c, (("SET", "lock:%d" % i, "tok-%d" % i, "PX", 3600000) for i in range(10450)))
        h.load(c, (("SET", "lock:leak:%d" % i, "tok") for i in range(50)))
        ag = self.start_agent(rs, scan_interval="500ms", leak_grace="1s", max_hold="1h")

        def leaked():
            st, doc = ag.get_json("/api/v1/locks?state=leaked&limit=10000", timeout=30)
            return doc if st == 200 and doc["total"] == 50 else None
        doc = ag.wait_for(leaked, timeout=60, desc="50 leaked locks")
        self.assertEqual(doc["count"], 50)
        self.assertIsNone(doc["next_offset"])
        self.assertTrue(doc["complete"], {k: v for k, v in doc.items() if k != "locks"})
        st, doc = ag.get_json("/api/v1/locks?state=all&limit=10", timeout=30)
        self.assertEqual((st, doc["total"]), (200, 10500))
        self.assertFalse(doc["complete"])
        st, doc = ag.get_json("/api/v1/locks?state=held&limit=10", timeout=30)
        self.assertFalse(doc["complete"])

    def test_bad_locks_past_the_detail_cap_are_counted_suppressed(self):
        # 10,040 leaked locks: the worst 10,000 are kept and alert; the 40
        # counted past them cannot, and are counted as suppressed.
        rs = self.start_redis()
        c = rs.client()
        c.flushall()
        h.load(c, (("SET", "lock:leak:%d" % i, "tok") for i in range(10040)))
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1s", max_hold="1h")

        def settled():
            m = ag.metrics()
            return m if h.msum(m, "lockwatch_alerts_firing", alertname="LockLeaked") == 10000 \
                and h.msum(m, "lockwatch_alerts_suppressed") > 0 else None
        m = ag.wait_for(settled, timeout=90, desc="10,000 LockLeaked firing")
        self.assertEqual(h.msum(m, "lockwatch_alerts_suppressed"), 40)
        self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="main"), 10040)

    def test_class_cap(self):
        # At most 200 classes per target, the rest count as "other"; so the
        # series count is the same for 250 and for 1,000 classes.  The cap
        # does not stick to classes that are gone: after a flush, new
        # classes get the slots.
        rs = self.start_redis()
        c = rs.client()

        def fill(prefix, n):
            c.flushall()
            h.load(c, (("SET", "lock:%s%d:1" % (prefix, i), "t", "PX", 3600000)
                       for i in range(n)))

        def classes(m):
            return {l["class"] for (l, v) in h.select(m, "lockwatch_locks", target="main")}
        fill("a", 250)
        ag = self.start_agent(rs, scan_interval="300ms", leak_grace="1h", max_hold="1h")
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 250,
                    timeout=30, desc="250 locks counted")
        ag.wait_scans(1)
        t250 = ag.metrics_text()
        m = h.parse_metrics(t250)
        cls = classes(m)
        self.assertIn("other", cls)
        self.assertEqual(len(cls), 201, sorted(cls)[:5])
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main", **{"class": "other"}), 50)
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main"), 250)

        fill("b", 1000)
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 1000,
                    timeout=30, desc="1000 locks counted")
        ag.wait_scans(1)
        t1000 = ag.metrics_text()
        m = h.parse_metrics(t1000)
        cls = classes(m)
        self.assertEqual(len(cls), 201)
        self.assertEqual(sum(1 for x in cls if x.startswith("lock:b")), 200,
                         "new classes did not get the slots of the vanished ones")
        self.assertEqual(h.msum(m, "lockwatch_locks", target="main", **{"class": "other"}), 800)
        self.assertEqual(h.series_count(t250), h.series_count(t1000))
        rc, out = h.promtool_check(t1000)
        self.assertEqual(rc, 0, out)

    def test_a_class_keeps_its_place(self):
        # the freshness trial: past 200 classes, which keys had a class of
        # their own was decided per pass in the order the pass met them, so
        # a leak's class label (part of its alert) went lock:zleak / other /
        # lock:zleak, and LockLeaked resolved and fired again each time
        rs = self.start_redis(args=["--notify-keyspace-events", "Kg$lshzxet"])
        c = rs.client()
        c.set("lock:zleak", "x")
        c.set("lock:aleak", "x")
        ag = self.start_agent(rs, scan_interval="2s", leak_grace="1s", max_hold="1h",
                              target_extra={"incremental": "on"})

        def leaks():
            return self.leak_alerts(ag)
        ag.wait_for(lambda: len(leaks()) == 2, timeout=30, desc="both leaks firing")
        first = leaks()
        self.assertEqual({k for k, _, _ in first}, {"lock:zleak", "lock:aleak"}, first)
        h.load(c, (("SET", "lock:r%d" % i, "v", "PX", 900000) for i in range(250)))
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 252,
                    timeout=30, desc="252 locks counted")
        end = time.time() + 6
        while time.time() < end:
            self.assertEqual(leaks(), first)
            time.sleep(0.2)
        m = ag.metrics()
        for key in ("lock:zleak", "lock:aleak"):
            self.assertEqual(h.msum(m, "lockwatch_locks_leaked", target="main",
                                    **{"class": key}), 1, key)

    def test_a_leak_in_other_stays_there(self):
        self.leak_in_other("off")

    def test_a_leak_in_other_stays_there_following(self):
        self.leak_in_other("on")

    def leak_in_other(self, incremental):
        # a freshness trial: past 200 classes a leak counted in "other" got
        # its own class once churn freed a place, and its LockLeaked (class
        # is a label) resolved and fired again, its startsAt lost
        rs = self.start_redis(args=["--notify-keyspace-events", "Kg$lshzxet"])
        c = rs.client()
        h.load(c, (("SET", "lock:r%d:1" % i, "v", "PX", 900000) for i in range(250)))
        ag = self.start_agent(rs, scan_interval="1s", leak_grace="1s", max_hold="1h",
                              target_extra={"incremental": incremental})
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 250,
                    timeout=30, desc="250 locks counted")
        c.set("lock:zleak:1", "x")

        def leaks():
            return self.leak_alerts(ag)
        ag.wait_for(lambda: len(leaks()) == 1, timeout=30, desc="the leak firing")
        first = leaks()
        self.assertEqual(first.pop()[1], "other", first)
        first = leaks()
        c.delete(*["lock:r%d:1" % i for i in range(100)])
        ag.wait_for(lambda: h.msum(ag.metrics(), "lockwatch_locks", target="main") == 151,
                    timeout=30, desc="151 locks counted")
        end = time.time() + 5
        while time.time() < end:
            self.assertEqual(leaks(), first)
            time.sleep(0.2)
        # a new holding of the key is a new lock: it takes a free place
        c.set("lock:zleak:1", "y")
        ag.wait_for(lambda: {cl for _, cl, _ in leaks()} == {"lock:zleak:*"}, timeout=30,
                    desc="the new holding in its own class")

    def test_offender_cap_worst_first(self):
        # top_offenders = 5 with 105 leaked locks: exactly 5 keys in
        # lockwatch_lock_offender_info, and they are the 5 that leaked first.
        rs = self.start_redis()
        c = rs.client()
        old = ["lock:old:%d" % i for i in range(5)]
        for k in old:
            c.set(k, "o")
        time.sleep(2.5)
        h.load(c, (("SET", "lock:new:%d" % i, "n") for i in range(100)))
        ag = self.start_agent(rs, scan_interval="300ms", leak_grace="1s", max_hold="1h",
                              top_offenders=5)
        m = ag.wait_for(lambda: (h.msum(ag.metrics(), "lockwatch_locks_leaked") == 105
                                 and ag.metrics()),
                        timeout=20, desc="105 leaked")
        offenders = h.select(m, "lockwatch_lock_offender_info", target="main")
        self.assertEqual(sorted({l["key"] for (l, v) in offenders}), old, offenders)
        st, body = ag.get_json("/api/v1/locks?state=leaked&limit=5")
        self.assertEqual(st, 200)
        self.assertEqual(sorted(l["key"] for l in body["locks"]), old)
        self.assertEqual(body["total"], 105)


if __name__ == "__main__":
    h.main()
