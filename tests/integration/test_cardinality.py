"""The number of series in /metrics does not grow with the number of locks.

1,000 locks of one class, then (FLUSHALL) 100,000 locks of the same class:
after a full scan of each, /metrics has the same number of sample lines.
"""

import harness as h

CLASS = "lock:*"


class Cardinality(h.TestCase):

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


if __name__ == "__main__":
    h.main()
