# SPDX-License-Identifier: BSD-3-Clause
"""ReportingRedisLock: python-redis-lock's redis_lock.Lock with the waits,
holds, waiting and lost events reported; a drop-in for redis_lock.Lock (same
arguments).  The key reported is the one the library uses (`lock:<name>`),
the holder id the lock's id (the value it stores), the owner party the
thread that called acquire() (kept for the holding: the auto-renewal thread
reports in its name).

Waiting: the library's attempts cannot be seen from outside, so a blocking
acquire() sends `waiting ... start` when it begins; every acquire() that
acquired sends `waiting ... ok` (one queued event, written as its 7-field
`wait` line).

Lost: a renewal (the auto-renewal thread's or the caller's extend()) that
finds the lock not ours (NotAcquired) is `lost ... renewal`; a release that
finds it not ours is `lost ... expired`.  The exceptions are raised as the
library raises them (the renewal thread ends on it, as it does without the
reporter).  The library's methods are called directly, not through
super(), as redis_py.ReportingLock does (the 5% budget).
"""

from threading import get_ident

import redis_lock

from . import _sender
from ._holding import _now, holding


def _lease_ns(expire):
    return int(expire * 1e9) if expire else None


class ReportingRedisLock(redis_lock.Lock):
    """redis_lock.Lock reporting to the lockwatch agent."""

    # the holding: the "ok" event its acquire queued, or a Holding once
    # extended or lost
    _lw_hold = None

    def acquire(self, blocking=True, timeout=None):
        rep = _sender.active or _sender.get()
        if rep is None:
            return redis_lock.Lock.acquire(self, blocking, timeout)
        party = get_ident()
        if blocking:
            q = rep.q
            if len(q) < rep.fast_below:
                q.append(("start", self._name, party, self._id))
            else:
                rep.put(("start", self._name, party, self._id))
        t0 = _now()
        try:
            got = redis_lock.Lock.acquire(self, blocking, timeout)
        except BaseException:
            rep.put(("end", self._name, party, self._id, t0, _now(), "error", bool(blocking)))
            raise
        t1 = _now()
        if got:
            ev = ("ok", self._name, party, self._id, t0, t1)
            q = rep.q
            if len(q) < rep.fast_below:
                q.append(ev)
            else:
                rep.put(ev)
            self._lw_hold = ev
        else:
            rep.put(("end", self._name, party, self._id, t0, t1, "timeout", bool(blocking)))
        return got

    def _holding(self):
        h = self._lw_hold
        if h is None or h.__class__ is not tuple:
            return h
        h = self._lw_hold = holding(h, _lease_ns(self._expire))
        return h

    def extend(self, expire=None):
        h = self._holding()
        try:
            r = redis_lock.Lock.extend(self, expire)
        except redis_lock.NotAcquired:
            rep = (_sender.active or _sender.get()) if h is not None else None
            if rep is not None:
                h.report_lost(rep, "renewal")
            raise
        if h is not None:
            h.renewed(_now(), _lease_ns(int(expire) if expire else self._expire))
        return r

    def release(self):
        rep = (_sender.active or _sender.get()) if self._lw_hold is not None else None
        if rep is None:
            return redis_lock.Lock.release(self)
        # the holding is read after the call: the library stops (joins) the
        # auto-renewal thread first, which may have extended it or found it lost
        try:
            redis_lock.Lock.release(self)
        except redis_lock.NotAcquired:
            h = self._holding()
            self._lw_hold = None
            now = _now()
            h.report_lost(rep, "expired", now)
            h.report_hold(rep, now)
            raise
        except BaseException:
            # the library keeps the lock held on a connection error: so do we
            raise
        h = self._lw_hold
        self._lw_hold = None
        if h.__class__ is tuple:
            q = rep.q
            if len(q) < rep.fast_below:
                q.append(("hold", h[1], h[2], h[3], h[5], _now()))
            else:
                rep.put(("hold", h[1], h[2], h[3], h[5], _now()))
        else:
            h.report_hold(rep)
