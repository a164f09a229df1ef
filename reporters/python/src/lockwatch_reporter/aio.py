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

from asyncio import CancelledError, current_task
from threading import get_ident

from redis.asyncio.lock import Lock
from redis.exceptions import LockNotOwnedError

from . import _sender
from ._holding import LocalState, _now, holding


def _lease_ns(timeout):
    return int(timeout * 1e9) if timeout else None


def _party():
    try:
        t = current_task()
    except RuntimeError:
        t = None
    return -id(t) if t is not None else get_ident()


class AsyncReportingLock(LocalState, Lock):
    """redis.asyncio.lock.Lock reporting to the lockwatch agent."""

    _lw_party = staticmethod(_party)

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
        except CancelledError:
            # the caller gave up (task.cancel(), asyncio.wait_for's deadline)
            self._lw_end(rep, t0, "timeout")
            raise
        except BaseException:
            self._lw_end(rep, t0, "error")
            raise
        t1 = _now()
        if got:
            party = _party()
            token = local.token
            ev = ("ok", self.name, party, token, t0, t1)
            q = rep.q
            if len(q) < rep.fast_below:
                q.append(ev)
            else:
                rep.put(ev)
            local.lw_hold = ev      # the holding (_holding.holding())
            return got
        self._lw_end(rep, t0, "timeout")
        return got

    async def do_acquire(self, token):
        if await Lock.do_acquire(self, token):
            return True
        self._lw_busy(token)
        return False

    def release(self):
        local = self.local
        holder = local.token
        h = getattr(local, "lw_hold", None)
        if not (h is not None and holder is not None
                and (h[3] if h.__class__ is tuple else h.holder) is holder):
            return Lock.release(self)   # not a holding this wrapper reported
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
            q = rep.q
            if len(q) < rep.fast_below:
                q.append(("hold", h[1], h[2], holder, h[5], _now()))
            else:
                rep.put(("hold", h[1], h[2], holder, h[5], _now()))
        else:
            h.report_hold(rep)

    def extend(self, additional_time, replace_ttl=False):
        aw = Lock.extend(self, additional_time, replace_ttl)  # LockError at once, as upstream
        h = self._lw_holding()
        if h is None:
            return aw
        return self._renewal(aw, h, _lease_ns(additional_time), not replace_ttl)

    def reacquire(self):
        aw = Lock.reacquire(self)
        h = self._lw_holding()
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
