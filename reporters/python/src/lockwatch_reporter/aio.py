# SPDX-License-Identifier: BSD-3-Clause
"""AsyncReportingLock: redis.asyncio's Lock with the waits, holds, waiting
and lost events reported, used as `r.lock(name, lock_class=AsyncReportingLock)`
on a redis.asyncio.Redis.  Same rules, same per-call state (self.local:
lw_wait, lw_hold) and same direct calls of the library's methods as
redis_py.ReportingLock; the owner party is the current
asyncio task (queued as -id(task), written `task-<hex id>`: unique among live
tasks), or the thread when called outside a task.

release(), extend() and reacquire() keep redis.asyncio's shape: plain
methods that raise LockError at once for an unlocked lock and otherwise
return an awaitable.
"""

from asyncio import current_task
from threading import get_ident

from redis.asyncio.lock import Lock
from redis.exceptions import LockNotOwnedError

from . import _sender
from ._holding import _now, holding


def _lease_ns(timeout):
    return int(timeout * 1e9) if timeout else None


def _party():
    try:
        t = current_task()
    except RuntimeError:
        t = None
    return -id(t) if t is not None else get_ident()


class AsyncReportingLock(Lock):
    """redis.asyncio.lock.Lock reporting to the lockwatch agent."""

    async def acquire(self, blocking=None, blocking_timeout=None, token=None):
        rep = _sender.active or _sender.get()
        if rep is None:
            return await Lock.acquire(self, blocking, blocking_timeout, token)
        local = self.local
        # `waiting ... start` goes out when the first attempt finds the lock
        # taken (do_acquire below), as liblockwatch does; `waiting ... ok`
        # goes out for every acquire that acquired
        local.lw_wait = (self.blocking if blocking is None else blocking) or None
        t0 = _now()
        try:
            got = await Lock.acquire(self, blocking, blocking_timeout, token)
        except BaseException:
            self._lw_end(rep, t0, "error")
            raise
        t1 = _now()
        if got:
            party = _party()
            token = local.token
            ev = ("ok", self.name, party, token, t0, t1)
            rep.put(ev)
            local.lw_hold = ev      # the holding (_holding.holding())
            return got
        self._lw_end(rep, t0, "timeout")
        return got

    def _lw_end(self, rep, t0, outcome):
        """An acquire call that did not acquire: its `wait` line, and its
        `waiting` end when it sent a start."""
        local = self.local
        started = local.lw_wait
        local.lw_wait = None
        if started is True:
            started = None
        rep.put(("end", self.name, _party(), started, t0, _now(), outcome,
                 started is not None))

    async def do_acquire(self, token):
        if await Lock.do_acquire(self, token):
            return True
        local = self.local
        if getattr(local, "lw_wait", None) is True:
            rep = _sender.active or _sender.get()
            if rep is not None:
                local.lw_wait = token
                rep.put(("start", self.name, _party(), token))
        return False

    def release(self):
        local = self.local
        holder = local.token
        h = getattr(local, "lw_hold", None)
        if h.__class__ is tuple:
            if h[3] is not holder or holder is None:
                return Lock.release(self)
        elif h is None or h.holder is not holder or holder is None:
            return Lock.release(self)
        rep = _sender.active or _sender.get()
        if rep is None:
            return Lock.release(self)
        return self._released(Lock.release(self), h, holder, rep)

    async def _released(self, aw, h, holder, rep):
        try:
            await aw
        except LockNotOwnedError:
            now = _now()
            h = holding(h, _lease_ns(self.timeout))
            h.report_lost(rep, "expired", now)
            h.report_hold(rep, now)
            raise
        except BaseException:
            holding(h, None).report_hold(rep)
            raise
        if h.__class__ is tuple:
            rep.put(("hold", h[1], h[2], holder, h[5], _now()))
        else:
            h.report_hold(rep)

    def _holding(self):
        """The current holding as a Holding (made from the tuple when need
        be), or None."""
        local = self.local
        holder = local.token
        h = getattr(local, "lw_hold", None)
        if h is None or holder is None:
            return None
        if h.__class__ is not tuple:
            return h if h.holder is holder else None
        if h[3] is not holder:
            return None
        h = holding(h, _lease_ns(self.timeout))
        local.lw_hold = h
        return h

    def extend(self, additional_time, replace_ttl=False):
        aw = Lock.extend(self, additional_time, replace_ttl)  # LockError at once, as upstream
        h = self._holding()
        if h is None:
            return aw
        return self._renewal(aw, h, _lease_ns(additional_time), not replace_ttl)

    def reacquire(self):
        aw = Lock.reacquire(self)
        h = self._holding()
        if h is None:
            return aw
        return self._renewal(aw, h, _lease_ns(self.timeout), False)

    async def _renewal(self, aw, h, lease_ns, add):
        try:
            r = await aw
        except LockNotOwnedError:
            rep = _sender.active or _sender.get()
            if rep is not None:
                h.report_lost(rep, "renewal")
            raise
        h.renewed(_now(), lease_ns, add=add)
        return r
