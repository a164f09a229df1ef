# SPDX-License-Identifier: BSD-3-Clause
"""What every wrapper reports around one holding, whatever the library: the
hold line of a release and the lost line (at most once per holding) with the
reporter's own lease clock (acquired at + lease, moved by each successful
extension).

A wrapper keeps, per holding, the cheapest state that will do: the event
tuple its acquire() queued, ("ok", key, party, holder, t0, acquired).  Only
an extension or a lost lease, which are rare, turn it into a Holding
(holding() below), which then keeps the lease clock and the lost flag.
Times are time.monotonic_ns(); a lease of None means "no lease known" (a
lock without a timeout), and a lost line then carries `-` as overrun.
"""

import time

_now = time.monotonic_ns


class Holding:
    """One holding of one lock by one owner (party)."""

    __slots__ = ("key", "party", "holder", "acquired", "lease_end", "lost")

    def __init__(self, key, party, holder, acquired, lease_ns):
        self.key = key
        self.party = party
        self.holder = holder
        self.acquired = acquired
        self.lease_end = None if not lease_ns else acquired + lease_ns
        self.lost = False

    def renewed(self, now, lease_ns, add=False):
        """A successful extension: the lease now ends lease_ns after now
        (or after its previous end when add is True)."""
        if not lease_ns:
            return
        if add and self.lease_end is not None:
            self.lease_end += lease_ns
        else:
            self.lease_end = now + lease_ns

    def report_lost(self, rep, reason, now=None):
        if self.lost:
            return
        self.lost = True
        now = _now() if now is None else now
        overrun = None
        if self.lease_end is not None:
            overrun = max(0, now - self.lease_end) // 1000
        rep.put(("lost", self.key, self.party, self.holder,
                 (now - self.acquired) // 1000, overrun, reason))
        soon = getattr(rep, "send_soon", None)   # sent at once (docs/reporters.md)
        if soon is not None:
            soon()

    def report_hold(self, rep, now=None):
        now = _now() if now is None else now
        rep.put(("hold", self.key, self.party, self.holder, self.acquired, now))


def holding(state, lease_ns):
    """The Holding of a wrapper's per-holding state: state itself when it
    already is one, else a new one made from the acquire's "ok" tuple, with
    the lease the lock had when it was acquired (lease_ns)."""
    if state.__class__ is tuple:
        return Holding(state[1], state[2], state[3], state[5], lease_ns)
    return state
