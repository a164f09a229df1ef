// SPDX-License-Identifier: BSD-3-Clause
// redis-semaphore (5.x) reporting: withReporting(Base) makes a subclass of
// its Mutex or Semaphore that reports acquires (tryAcquire, which acquire
// also goes through: reported once), releases and lost leases, and changes
// nothing else.  Key: the library's Redis key (`mutex:<key>`,
// `semaphore:<key>`); holder id: the lock's identifier.  `waiting ...
// start` goes out when the first attempt finds the lock taken, as
// liblockwatch and the redlock wrapper do (an acquire that gets the lock at
// once costs no start line): the library's attempt loop calls the abort
// signal's throwIfAborted() before each attempt and, after an attempt that
// failed, waits with delay(retryInterval, signal), which reads
// signal.aborted first; the wrapper passes an AttemptSignal (below) that
// says so, and otherwise answers as the caller's signal (or none) would.
// Lost: the library's refresh
// failing calls onLockLost, reported `renewal` before the application's
// callback (or the library's default, which throws) runs; a release after
// the reporter's lease clock ran out with no successful refresh is
// `expired`.
'use strict';

const { Holding, reportStart, reportAcquire, party, now } = require('./holding');
const reporter = require('./reporter');

// The library calls this._onLockLost(err) when a refresh fails: report the
// loss, then the application's callback (or the library's default, which
// throws).
function onLockLost(err) {
  const h = this._lwHolding;
  const rep = h ? reporter.get() : null;
  if (rep !== null) h.reportLost(rep, 'renewal');
  const appLost = this._lwAppLost;
  if (appLost) return appLost.call(this, err);
  throw err;   // the library's default
}

// The abort signal the library's attempt loop gets: the caller's (inner,
// or none), delegated to, and a note of the first failed attempt.
class AttemptSignal {
  constructor(inner, onBusy) {
    this.inner = inner;
    this.onBusy = onBusy;
  }

  busy() {
    const f = this.onBusy;
    if (f !== null) {
      this.onBusy = null;
      try { f(); } catch (_) { /* never in the library's way */ }
    }
  }

  throwIfAborted() {
    if (this.inner) this.inner.throwIfAborted();
  }

  get aborted() {
    this.busy();    // delay() after a failed attempt reads it first
    return this.inner ? this.inner.aborted : false;
  }

  get reason() {
    return this.inner ? this.inner.reason : undefined;
  }

  addEventListener(type, fn, opts) {
    this.busy();
    if (this.inner) this.inner.addEventListener(type, fn, opts);
  }

  removeEventListener(type, fn, opts) {
    if (this.inner) this.inner.removeEventListener(type, fn, opts);
  }
}

// optionsIndex: where the options argument sits in Base's constructor
// (Mutex(client, key, options): 2; Semaphore(client, key, limit, options): 3).
// The options are not copied: the constructor swaps the library's
// _onLockLost (the application's callback or the default) for onLockLost
// above; optionsIndex stays for the API's sake.
//
// tryAcquire and release chain one then() onto the library's promise (no
// async function around it): the holding is set before the caller can
// release, and a rejection reaches the caller, handled or not, as it would
// without the reporter.
function withReporting(Base, optionsIndex) {   // eslint-disable-line no-unused-vars
  class Reporting extends Base {
    // Four named parameters, not a rest parameter: spreading one costs a
    // lock path that makes a Mutex per acquire.
    constructor(client, key, a, b) {
      super(client, key, a, b);
      this._lwAppLost = this._onLockLost;
      this._onLockLost = onLockLost;
      this._lwHolding = null;
    }

    tryAcquire(abortSignal) {
      const rep = reporter.get();
      if (rep === null) return super.tryAcquire(abortSignal);
      const key = this._key;
      const holder = this._identifier;
      const owner = party();
      let started = false;
      const signal = new AttemptSignal(abortSignal, () => {
        started = true;
        reportStart(rep, key, owner, holder);
      });
      const t0 = now();
      return super.tryAcquire(signal).then((got) => {
        const t1 = now();
        reportAcquire(rep, key, owner, holder, started, t0, t1, got ? 'ok' : 'timeout');
        if (got) this._lwHolding = new Holding(key, owner, holder, t1, Date.now() + this._acquireOptions.lockTimeout);
        return got;
      }, (err) => {
        reportAcquire(rep, key, owner, holder, started, t0, now(), 'error');
        throw err;
      });
    }

    async _refresh() {
      const ok = await super._refresh();
      const h = this._lwHolding;
      if (ok && h) h.leaseEnd = Date.now() + this._acquireOptions.lockTimeout;
      return ok;
    }

    release() {
      const h = this._lwHolding;
      const rep = h ? reporter.get() : null;
      if (rep === null) return super.release();
      this._lwHolding = null;
      if (Date.now() > h.leaseEnd) h.reportLost(rep, 'expired');
      return super.release().then((v) => {
        h.reportHold(rep);
        return v;
      }, (err) => {
        h.reportHold(rep);
        throw err;
      });
    }
  }
  Object.defineProperty(Reporting, 'name', { value: `Reporting${Base.name}` });
  return Reporting;
}

module.exports = { withReporting };
