# SPDX-License-Identifier: BSD-3-Clause
"""ReportingLock: redis-py's redis.lock.Lock with the waits, holds, waiting
and lost events reported (docs/reporters.md).  Use it as
`r.lock(name, lock_class=ReportingLock)`; it changes no lock behaviour: every
call goes to redis-py, and every exception redis-py raises reaches the caller
as it would without the reporter (a LockNotOwnedError is reported as `lost`
first).

Owner party: threading.get_ident().  Holder id: the lock's token; when the
caller passes none, this class makes it the way redis-py does
(uuid1().hex) before the call, so the `waiting ... start` line already
carries it.  The per-holding state lives in self.local, next to redis-py's
token, so it follows the lock's thread_local setting.
"""

import threading
import uuid

from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

from . import _sender
from ._holding import Holding, _now, outcome_of, report_acquire


def _lease_ns(timeout):
    return int(timeout * 1e9) if timeout else None


class ReportingLock(Lock):
    """redis.lock.Lock reporting to the lockwatch agent."""

    def acquire(self, sleep=None, blocking=None, blocking_timeout=None, token=None):
        rep = _sender.get()
        if rep is None:
            return super().acquire(sleep=sleep, blocking=blocking,
                                   blocking_timeout=blocking_timeout, token=token)
        if token is None:
            token = uuid.uuid1().hex.encode()
        holder = token
        party = threading.get_ident()
        may_wait = self.blocking if blocking is None else blocking
        key = self.name
        # `waiting ... start` goes out when the first attempt finds the lock
        # taken (do_acquire below), as liblockwatch does: an acquire that
        # does not wait costs no waiting lines
        w = [rep, key, party, holder, False] if may_wait else None
        self.local.lw_wait = w
        t0 = _now()
        try:
            got = super().acquire(sleep=sleep, blocking=blocking,
                                  blocking_timeout=blocking_timeout, token=token)
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

    def do_acquire(self, token):
        got = super().do_acquire(token)
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
        self.local.lw_holding = None
        try:
            super().release()
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
        h = self._holding()
        try:
            r = super().extend(additional_time, replace_ttl)
        except LockNotOwnedError:
            rep = _sender.get() if h is not None else None
            if rep is not None:
                h.report_lost(rep, "renewal")
            raise
        if h is not None:
            h.renewed(_now(), _lease_ns(additional_time), add=not replace_ttl)
        return r

    def reacquire(self):
        h = self._holding()
        try:
            r = super().reacquire()
        except LockNotOwnedError:
            rep = _sender.get() if h is not None else None
            if rep is not None:
                h.report_lost(rep, "renewal")
            raise
        if h is not None:
            h.renewed(_now(), _lease_ns(self.timeout))
        return r
