# SPDX-License-Identifier: BSD-3-Clause
"""AsyncReportingLock: redis.asyncio's Lock with the waits, holds, waiting
and lost events reported, used as `r.lock(name, lock_class=AsyncReportingLock)`
on a redis.asyncio.Redis.  Same rules as redis_py.ReportingLock; the owner
party is the current asyncio task (id() of asyncio.current_task(), unique
among live tasks), or the thread when called outside a task.

release(), extend() and reacquire() keep redis.asyncio's shape: plain
methods that raise LockError at once for an unlocked lock and otherwise
return an awaitable.
"""

import asyncio
import threading
import uuid

from redis.asyncio.lock import Lock
from redis.exceptions import LockNotOwnedError

from . import _sender
from ._holding import Holding, _now, outcome_of, report_acquire


def _lease_ns(timeout):
    return int(timeout * 1e9) if timeout else None


def _party():
    try:
        t = asyncio.current_task()
    except RuntimeError:
        t = None
    return "task-%x" % id(t) if t is not None else threading.get_ident()


class AsyncReportingLock(Lock):
    """redis.asyncio.lock.Lock reporting to the lockwatch agent."""

    async def acquire(self, blocking=None, blocking_timeout=None, token=None):
        rep = _sender.get()
        if rep is None:
            return await super().acquire(blocking=blocking, blocking_timeout=blocking_timeout,
                                         token=token)
        if token is None:
            token = uuid.uuid1().hex.encode()
        holder = token
        party = _party()
        may_wait = self.blocking if blocking is None else blocking
        key = self.name
        # `waiting ... start` goes out when the first attempt finds the lock
        # taken (do_acquire below), as liblockwatch does: an acquire that
        # does not wait costs no waiting lines
        w = [rep, key, party, holder, False] if may_wait else None
        self.local.lw_wait = w
        t0 = _now()
        try:
            got = await super().acquire(blocking=blocking, blocking_timeout=blocking_timeout,
                                        token=token)
        except BaseException:
            self.local.lw_wait = None
            report_acquire(rep, key, party, holder, w is not None and w[4], t0, _now(), "error")
            raise
        t1 = _now()
        self.local.lw_wait = None
        waited = w is not None and w[4]
        report_acquire(rep, key, party, holder, waited, t0, t1, outcome_of(got))
        if got:
            self.local.lw_holding = Holding(key, party, self.local.token, t1,
                                            _lease_ns(self.timeout))
        return got

    async def do_acquire(self, token):
        got = await super().do_acquire(token)
        if not got:
            w = getattr(self.local, "lw_wait", None)
            if w is not None and not w[4]:
                w[4] = True
                w[0].put(("waiting", w[1], w[2], w[3], "start"))
        return got

    def _holding(self):
        return getattr(self.local, "lw_holding", None)

    def release(self):
        h = self._holding()
        rep = _sender.get() if h is not None else None
        if rep is None:
            return super().release()
        aw = super().release()  # raises LockError at once, as redis.asyncio does
        self.local.lw_holding = None
        return self._released(aw, h, rep)

    async def _released(self, aw, h, rep):
        try:
            await aw
        except LockNotOwnedError:
            now = _now()
            h.report_lost(rep, "expired", now)
            h.report_hold(rep, now)
            raise
        except BaseException:
            h.report_hold(rep)
            raise
        h.report_hold(rep)

    def extend(self, additional_time, replace_ttl=False):
        aw = super().extend(additional_time, replace_ttl)  # LockError at once, as upstream
        h = self._holding()
        if h is None:
            return aw
        return self._renewal(aw, h, _lease_ns(additional_time), not replace_ttl)

    def reacquire(self):
        aw = super().reacquire()
        h = self._holding()
        if h is None:
            return aw
        return self._renewal(aw, h, _lease_ns(self.timeout), False)

    async def _renewal(self, aw, h, lease_ns, add):
        try:
            r = await aw
        except LockNotOwnedError:
            rep = _sender.get()
            if rep is not None:
                h.report_lost(rep, "renewal")
            raise
        h.renewed(_now(), lease_ns, add=add)
        return r
