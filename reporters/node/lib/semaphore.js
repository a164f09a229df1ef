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
// Hold: from the acquire's return to the release() call.  Lost: the
// library's refresh failing calls onLockLost, reported `renewal` before
// the application's callback (or the library's default, which throws)
// runs; a release after the reporter's lease clock ran out with no
// successful refresh is `expired`.
'use strict';

const { Holding, reportStart, reportAcquire, party, now } = require('./holding');
const { performance } = require('node:perf_hooks');
const reporter = require('./reporter');

// The lease clock in wall-clock ms, read from performance.now() (one clock
// read per event, and no wall-clock step moves it).
const ORIGIN = performance.timeOrigin;

// The library calls this._onLockLost(err) when a refresh fails: report the
// loss, then the application's callback (or the library's default, which
// throws).
function onLockLost(err) {
  const h = this._lwHolding;
  const rep = h ? reporter.get() : null;
  if (rep !== null) {
    const t = now();
    h.reportLost(rep, 'renewal', t, ORIGIN + t);
  }
  const appLost = this._lwAppLost;
  if (appLost) return appLost.call(this, err);
  throw err;   // the library's default
}

// The abort signal the library's attempt loop gets: the caller's (inner,
// or none), delegated to, and a note of the first failed attempt (busy():
// the `waiting ... start`, once).  One object per acquire, no closure.
class AttemptSignal {
  constructor(lock, rep, owner, inner) {
    this.lock = lock;
    this.rep = rep;
    this.owner = owner;
    this.inner = inner;
    this.started = false;
  }

  busy() {
    if (this.started) return;
    this.started = true;
    try {
      reportStart(this.rep, this.lock._key, this.owner, this.lock._identifier);
    } catch (_) { /* never in the library's way */ }
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
// tryAcquire chains one then() onto the library's promise (no async
// function around it): the holding is set before the caller can release,
// and a rejection reaches the caller, handled or not, as it would without
// the reporter.  release() reports the hold when it is called and returns
// the library's own promise: the library's release reports nothing back
// (a key already gone or another's resolves as a release does), so there
// is nothing to wait for, and the lock path keeps no second promise.
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
      const signal = new AttemptSignal(this, rep, party(), abortSignal);
      const t0 = now();
      return super.tryAcquire(signal).then((got) => {
        const t1 = now();
        reportAcquire(rep, this._key, signal.owner, this._identifier, signal.started, t0, t1, got ? 'ok' : 'timeout');
        if (got) {
          this._lwHolding = new Holding(this._key, signal.owner, this._identifier, t1,
            ORIGIN + t1 + this._acquireOptions.lockTimeout);
        }
        return got;
      }, (err) => {
        // aborted by the caller's signal (an AbortController, a deadline's
        // AbortSignal.timeout()): it gave up waiting, not an error
        const gaveUp = abortSignal != null && abortSignal.aborted;
        reportAcquire(rep, this._key, signal.owner, this._identifier, signal.started, t0, now(), gaveUp ? 'timeout' : 'error');
        throw err;
      });
    }

    async _refresh() {
      const ok = await super._refresh();
      const h = this._lwHolding;
      if (ok && h) h.leaseEnd = ORIGIN + now() + this._acquireOptions.lockTimeout;
      return ok;
    }

    release() {
      const h = this._lwHolding;
      const rep = h ? reporter.get() : null;
      if (rep === null) return super.release();
      this._lwHolding = null;
      const t = now();
      if (ORIGIN + t > h.leaseEnd) h.reportLost(rep, 'expired', t, ORIGIN + t);
      h.reportHold(rep, t);
      return super.release();
    }
  }
  // The class keeps the name it was declared with: naming it after Base at
  // run time (Object.defineProperty on 'name', or a computed key) gave the
  // constructor a map V8's fast `new` does not take, and every Mutex made
  // cost about 1 us more (a third of the reporter's cost per lock cycle).
  return Reporting;
}

module.exports = { withReporting };
