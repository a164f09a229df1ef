// SPDX-License-Identifier: BSD-3-Clause
// What every wrapper reports around one acquire and one holding, whatever the
// library: the waiting/wait lines of an acquire call, the hold line of a
// release, and the lost line (at most once per holding) with a lease clock
// (wall-clock ms, as the libraries keep theirs: redlock's lock.expiration).
//
// Owner party: an AsyncLocalStorage store set by the wrappers' using(); an
// acquire outside one gets a fresh number from a per-process counter, kept
// by its holding (so its release and loss name the same owner).
'use strict';

const { AsyncLocalStorage } = require('node:async_hooks');
const { performance } = require('node:perf_hooks');

const als = new AsyncLocalStorage();
let nextParty = 0;

function party() {
  const s = als.getStore();
  return s !== undefined ? s : ++nextParty;
}

// Run fn with `p` as the owner party of every acquire inside it.
function runAs(p, fn) {
  return als.run(p, fn);
}

const now = () => performance.now();

class Holding {
  constructor(key, owner, holder, acquiredAt, leaseEndMs) {
    this.key = key;
    this.party = owner;
    this.holder = holder;
    this.acquiredAt = acquiredAt;     // performance.now()
    this.leaseEnd = leaseEndMs;       // Date.now() ms, or null: no lease known
    this.lost = false;
  }

  reportLost(rep, reason, t = now(), wall = Date.now()) {
    if (this.lost) return;
    this.lost = true;
    const overrun = this.leaseEnd === null ? null : Math.max(0, wall - this.leaseEnd) * 1000;
    rep.put(['lost', this.key, this.party, this.holder, (t - this.acquiredAt) * 1000, overrun, reason]);
    if (typeof rep.sendSoon === 'function') rep.sendSoon();   // at once (docs/reporters.md)
  }

  reportHold(rep, t = now()) {
    rep.put(['hold', this.key, (t - this.acquiredAt) * 1000, this.party, this.holder]);
  }
}

// The lines of an acquire call that returned (outcome ok/timeout) or failed:
// `waiting <outcome>` (when it acquired or sent a start) and `wait`.  One
// queued event for both (lib/wire.js emit()).
function reportAcquire(rep, key, owner, holder, started, t0, t1, outcome) {
  rep.put(['acquired', key, owner, holder, (t1 - t0) * 1000, outcome, started]);
}

module.exports = { Holding, reportAcquire, party, runAs, now, als };
