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

from . import _sender

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


def held_by(h, holder):
    """Whether the wrapper's holding state h is that of the holder id the
    lock holds with now (redis-py and redis.asyncio keep it in lock.local,
    where it stays after the release: a later holding has another token)."""
    return (h is not None and holder is not None
            and (h[3] if h.__class__ is tuple else h.holder) is holder)


class LocalState:
    """What ReportingLock (redis_py.py) and AsyncReportingLock (aio.py)
    share of their per-call and per-holding state in lock.local; _lw_party
    is the owner party of the calling thread or task."""

    _lw_party = None

    def _lw_busy(self, token):
        """An attempt found the lock taken: `waiting ... start` when it is
        the first of an acquire call that may wait."""
        local = self.local
        if getattr(local, "lw_wait", None) is True:
            rep = _sender.active or _sender.get()
            if rep is not None:
                local.lw_wait = token
                rep.put(("start", self.name, self._lw_party(), token))

    def _lw_end(self, rep, t0, outcome):
        """An acquire call that did not acquire: its `wait` line, with
        owner and holder (its `waiting` end too) when it sent a start."""
        local = self.local
        started = local.lw_wait
        local.lw_wait = None
        if started is True:
            started = None
        rep.put(("end", self.name, self._lw_party(), started, t0, _now(), outcome,
                 started is not None))

    def _lw_holding(self):
        """The current holding as a Holding (made from the "ok" tuple when
        need be), or None."""
        local = self.local
        h = getattr(local, "lw_hold", None)
        if not held_by(h, local.token):
            return None
        if h.__class__ is tuple:
            h = local.lw_hold = holding(h, int(self.timeout * 1e9) if self.timeout else None)
        return h
