# SPDX-License-Identifier: BSD-3-Clause
"""ReportingRedisLock: python-redis-lock's redis_lock.Lock with the waits,
holds, waiting and lost events reported; a drop-in for redis_lock.Lock (same
arguments).  The key reported is the one the library uses (`lock:<name>`),
the holder id the lock's id (the value it stores), the owner party the
thread that called acquire() (kept for the holding: the auto-renewal thread
reports in its name).

Waiting: a blocking acquire() sends `waiting ... start` when its first
attempt found the lock taken, as the other wrappers do: the library calls
its client's blpop() (the wait for the release's signal) only then, and
the lock's client is, once a blocking acquire() has run, a _WatchedClient
around the one it was given, which sends the start of the acquire() that
calls it in this thread.  Every acquire() that acquired sends `waiting ...
ok` (one queued event, written as its 7-field `wait` line).

Lost: a renewal (the auto-renewal thread's or the caller's extend()) that
finds the lock not ours (NotAcquired) is `lost ... renewal`; a release that
finds it not ours is `lost ... expired`.  The exceptions are raised as the
library raises them (the renewal thread ends on it, as it does without the
reporter).  The library's methods are called directly, not through
super(), as redis_py.ReportingLock does (the 5% budget).
"""

import threading
from threading import get_ident

import redis_lock

from . import _sender
from ._holding import _now, holding


def _lease_ns(expire):
    return int(expire * 1e9) if expire else None


# The ReportingRedisLock whose blocking acquire() runs in this thread and
# has sent no start yet (the library's acquire calls blpop() synchronously).
_tls = threading.local()


class _WatchedClient:
    """A lock's Redis client as the library sees it: the real client's
    attributes (a method looked up once, then kept here), but blpop(),
    which sends the `waiting ... start` of the acquire() in this thread
    before it waits.  One per client (_watched), shared by its locks."""

    def __init__(self, client):
        self._lw_client = client

    def __getattr__(self, name):
        v = getattr(self._lw_client, name)
        if callable(v):
            self.__dict__[name] = v
        return v

    def blpop(self, *args, **kwargs):
        lk = getattr(_tls, "acquiring", None)
        if lk is not None:
            _tls.acquiring = None
            lk._lw_busy()
        return self._lw_client.blpop(*args, **kwargs)


def _watched(client):
    """client's _WatchedClient, kept on the client itself: the two refer
    to each other, a cycle the collector frees with the client (a table
    keyed by clients would keep every client alive through its value)."""
    try:
        d = client.__dict__
    except AttributeError:   # no instance dict: one of its own for each lock
        return _WatchedClient(client)
    w = d.get("_lw_watched")
    if w is None:
        w = d["_lw_watched"] = _WatchedClient(client)
    return w


class ReportingRedisLock(redis_lock.Lock):
    """redis_lock.Lock reporting to the lockwatch agent."""

    # the holding: the "ok" event its acquire queued, or a Holding once
    # extended or lost
    _lw_hold = None
    # the running acquire(): its owner party, and whether it sent its start
    _lw_party = None
    _lw_started = False

    def acquire(self, blocking=True, timeout=None):
        rep = _sender.active or _sender.get()
        if rep is None:
            return redis_lock.Lock.acquire(self, blocking, timeout)
        party = get_ident()
        self._lw_started = False
        if blocking:
            if self._client.__class__ is not _WatchedClient:
                self._client = _watched(self._client)
            self._lw_party = party
            _tls.acquiring = self
        t0 = _now()
        try:
            got = redis_lock.Lock.acquire(self, blocking, timeout)
        except BaseException:
            _tls.acquiring = None
            rep.put(("end", self._name, party, self._id, t0, _now(), "error", self._lw_started))
            raise
        t1 = _now()
        if blocking:
            _tls.acquiring = None
        if got:
            ev = ("ok", self._name, party, self._id, t0, t1)
            q = rep.q
            if len(q) < rep.fast_below:
                q.append(ev)
            else:
                rep.put(ev)
            self._lw_hold = ev
        else:
            rep.put(("end", self._name, party, self._id, t0, t1, "timeout", self._lw_started))
        return got

    def _lw_busy(self):
        """The first attempt found the lock taken (the library is about to
        wait for its signal): the `waiting ... start`, once."""
        rep = _sender.active or _sender.get()
        if rep is None or self._lw_started:
            return
        self._lw_started = True
        rep.put(("start", self._name, self._lw_party, self._id))

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
