# SPDX-License-Identifier: BSD-3-Clause
"""ReportingLock: redis-py's redis.lock.Lock with the waits, holds, waiting
and lost events reported (docs/reporters.md).  Use it as
`r.lock(name, lock_class=ReportingLock)`; it changes no lock behaviour: every
call goes to redis-py with the caller's arguments, and every exception
redis-py raises reaches the caller as it would without the reporter (a
LockNotOwnedError is reported as `lost` first).

Owner party: threading.get_ident().  Holder id: the lock's token, the one
redis-py makes (or encodes) and passes to do_acquire().  The per-call and
per-holding state lives in self.local, next to redis-py's token, so it
follows the lock's thread_local setting:
  lw_wait   set by each acquire call that reports: True when it may wait
            (until its first attempt finds the lock taken, then the token
            `waiting ... start` named), else None
  lw_hold   the last holding: the "ok" event its acquire queued, or a
            _holding.Holding once extended or lost; it is the current one
            while its token is the lock's token

The 5% budget (docs/reporters.md "Never slow"): the lock path reads the
clock three times and queues two tuples per acquire + release
(_wire.Encoder lists them; an acquire that gets the lock at once queues
one, which the sender thread writes as one line, `wait ... ok <owner>
<holder>`, its `waiting ... ok` too), and calls redis-py's Lock methods
directly rather than through super(): it is meant to be the lock class
itself (a subclass of it may override anything).
"""

from threading import get_ident

from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

from . import _sender
from ._holding import LocalState, _now, holding


def _lease_ns(timeout):
    return int(timeout * 1e9) if timeout else None


class ReportingLock(LocalState, Lock):
    """redis.lock.Lock reporting to the lockwatch agent."""

    _lw_party = staticmethod(get_ident)

    def acquire(self, sleep=None, blocking=None, blocking_timeout=None, token=None):
        rep = _sender.active or _sender.get()
        if rep is None:
            return Lock.acquire(self, sleep, blocking, blocking_timeout, token)
        local = self.local
        # `waiting ... start` goes out when the first attempt finds the lock
        # taken (do_acquire below), as liblockwatch does; `waiting ... ok`
        # goes out for every acquire that acquired
        local.lw_wait = (self.blocking if blocking is None else blocking) or None
        t0 = _now()
        try:
            got = Lock.acquire(self, sleep, blocking, blocking_timeout, token)
        except BaseException:
            self._lw_end(rep, t0, "error")
            raise
        t1 = _now()
        if got:
            party = get_ident()
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

    def do_acquire(self, token):
        if Lock.do_acquire(self, token):
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
        try:
            Lock.release(self)
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
        h = self._lw_holding()
        try:
            r = Lock.extend(self, additional_time, replace_ttl)
        except LockNotOwnedError:
            rep = (_sender.active or _sender.get()) if h is not None else None
            if rep is not None:
                h.report_lost(rep, "renewal")
            raise
        if h is not None:
            h.renewed(_now(), _lease_ns(additional_time), add=not replace_ttl)
        return r

    def reacquire(self):
        h = self._lw_holding()
        try:
            r = Lock.reacquire(self)
        except LockNotOwnedError:
            rep = (_sender.active or _sender.get()) if h is not None else None
            if rep is not None:
                h.report_lost(rep, "renewal")
            raise
        if h is not None:
            h.renewed(_now(), _lease_ns(self.timeout))
        return r
