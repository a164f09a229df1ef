# SPDX-License-Identifier: BSD-3-Clause
"""ReportingRedisLock: python-redis-lock's redis_lock.Lock with the waits,
holds, waiting and lost events reported; a drop-in for redis_lock.Lock (same
arguments).  The key reported is the one the library uses (`lock:<name>`),
the holder id the lock's id (the value it stores), the owner party the
thread that called acquire() (kept for the holding: the auto-renewal thread
reports in its name).

Lost: a renewal (the auto-renewal thread's or the caller's extend()) that
finds the lock not ours (NotAcquired) is `lost ... renewal`; a release that
finds it not ours is `lost ... expired`.  The exceptions are raised as the
library raises them (the renewal thread ends on it, as it does without the
reporter).
"""

import threading

import redis_lock

from . import _sender
from ._holding import Holding, _now, outcome_of, report_acquire


class ReportingRedisLock(redis_lock.Lock):
    """redis_lock.Lock reporting to the lockwatch agent."""

    _lw_holding = None

    def acquire(self, blocking=True, timeout=None):
        rep = _sender.get()
        if rep is None:
            return super().acquire(blocking=blocking, timeout=timeout)
        party = threading.get_ident()
        key = self._name
        holder = self._id
        if blocking:
            rep.put(("waiting", key, party, holder, "start"))
        t0 = _now()
        try:
            got = super().acquire(blocking=blocking, timeout=timeout)
        except BaseException:
            report_acquire(rep, key, party, holder, blocking, t0, _now(), "error")
            raise
        t1 = _now()
        report_acquire(rep, key, party, holder, blocking, t0, t1, outcome_of(got))
        if got:
            self._lw_holding = Holding(key, party, holder, t1,
                                       int(self._expire * 1e9) if self._expire else None)
        return got

    def extend(self, expire=None):
        h = self._lw_holding
        try:
            r = super().extend(expire=expire)
        except redis_lock.NotAcquired:
            rep = _sender.get() if h is not None else None
            if rep is not None:
                h.report_lost(rep, "renewal")
            raise
        if h is not None:
            e = int(expire) if expire else self._expire
            h.renewed(_now(), int(e * 1e9) if e else None)
        return r

    def release(self):
        h = self._lw_holding
        rep = _sender.get() if h is not None else None
        if rep is None:
            return super().release()
        try:
            super().release()
        except redis_lock.NotAcquired:
            self._lw_holding = None
            now = _now()
            h.report_lost(rep, "expired", now)
            h.report_hold(rep, now)
            raise
        except BaseException:
            # the library keeps the lock held on a connection error: so do we
            raise
        self._lw_holding = None
        h.report_hold(rep)
