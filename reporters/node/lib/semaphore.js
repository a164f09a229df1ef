// SPDX-License-Identifier: BSD-3-Clause
// redis-semaphore (5.x) reporting: withReporting(Base) makes a subclass of
// its Mutex or Semaphore that reports acquires (tryAcquire, which acquire
// also goes through: reported once), releases and lost leases, and changes
// nothing else.  Key: the library's Redis key (`mutex:<key>`,
// `semaphore:<key>`); holder id: the lock's identifier (known before the
// call, so `waiting ... start` carries it).  Lost: the library's refresh
// failing calls onLockLost, reported `renewal` before the application's
// callback (or the library's default, which throws) runs; a release after
// the reporter's lease clock ran out with no successful refresh is
// `expired`.
'use strict';

const { Holding, reportAcquire, party, now } = require('./holding');
const reporter = require('./reporter');

// optionsIndex: where the options argument sits in Base's constructor
// (Mutex(client, key, options): 2; Semaphore(client, key, limit, options): 3).
function withReporting(Base, optionsIndex) {
  class Reporting extends Base {
    constructor(...args) {
      const opts = Object.assign({}, args[optionsIndex] || {});
      const appLost = opts.onLockLost;
      opts.onLockLost = function onLockLost(err) {
        const h = this._lwHolding;
        const rep = h ? reporter.get() : null;
        if (rep !== null) h.reportLost(rep, 'renewal');
        if (appLost) return appLost.call(this, err);
        throw err;   // the library's default
      };
      args[optionsIndex] = opts;
      super(...args);
      this._lwHolding = null;
    }

    async tryAcquire(abortSignal) {
      const rep = reporter.get();
      if (rep === null) return super.tryAcquire(abortSignal);
      const key = this._key;
      const holder = this._identifier;
      const owner = party();
      rep.put(['waiting', key, owner, holder, 'start']);
      const t0 = now();
      let got;
      try {
        got = await super.tryAcquire(abortSignal);
      } catch (err) {
        reportAcquire(rep, key, owner, holder, true, t0, now(), 'error');
        throw err;
      }
      const t1 = now();
      reportAcquire(rep, key, owner, holder, true, t0, t1, got ? 'ok' : 'timeout');
      if (got) this._lwHolding = new Holding(key, owner, holder, t1, Date.now() + this._acquireOptions.lockTimeout);
      return got;
    }

    async _refresh() {
      const ok = await super._refresh();
      const h = this._lwHolding;
      if (ok && h) h.leaseEnd = Date.now() + this._acquireOptions.lockTimeout;
      return ok;
    }

    async release() {
      const h = this._lwHolding;
      const rep = h ? reporter.get() : null;
      if (rep === null) return super.release();
      this._lwHolding = null;
      if (Date.now() > h.leaseEnd) h.reportLost(rep, 'expired');
      try {
        return await super.release();
      } finally {
        h.reportHold(rep);
      }
    }
  }
  Object.defineProperty(Reporting, 'name', { value: `Reporting${Base.name}` });
  return Reporting;
}

module.exports = { withReporting };
