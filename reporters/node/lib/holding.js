// SPDX-License-Identifier: BSD-3-Clause
// What every wrapper reports around one acquire and one holding, whatever the
// library: the waiting/wait lines of an acquire call, the hold line of a
// release, and the lost line (at most once per holding) with a lease clock
// (wall-clock ms, as the libraries keep theirs: redlock's lock.expiration).
// The lock path's events go to the reporter's waitLine, waitEndLine,
// waitingLine and holdLine with the key, owner and holder id as the library
// has them (it keeps them and writes their lines in batches); the test
// hook (tap) gets the same event as an array (lib/wire.js emit() turns one
// into the same lines).
//
// Owner party: an AsyncLocalStorage store set by the wrappers' using() and
// runAs() (enabled only while one runs); an acquire outside one gets a
// fresh number from a per-process counter, kept by its holding (so its
// release and loss name the same owner).
'use strict';

const { AsyncLocalStorage } = require('node:async_hooks');
const { performance } = require('node:perf_hooks');

const als = new AsyncLocalStorage();
let nextParty = 0;
// runAs() routines in flight.  An AsyncLocalStorage carries their party
// across awaits, but on Node 20 and older, while one is enabled, async
// hooks run for every promise the process makes (a redis-semaphore lock
// cycle cost 20-30% more CPU, the bare library's included); so it is
// disabled again when the last routine settles, and party() does not
// look at it while none runs.
let running = 0;

function party() {
  if (running === 0) return ++nextParty;
  const s = als.getStore();
  return s !== undefined ? s : ++nextParty;
}

function settled() {
  if (--running === 0) als.disable();
}

// Run fn with `p` as the owner party of every acquire inside it (until it
// returns, or the promise it returns settles).  What it returns or throws
// reaches the caller unchanged (a promise through one then()).
function runAs(p, fn) {
  running++;
  let r;
  try {
    r = als.run(p, fn);
  } catch (e) {
    settled();
    throw e;
  }
  if (r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function') {
    return r.then((v) => {
      settled();
      return v;
    }, (e) => {
      settled();
      throw e;
    });
  }
  settled();
  return r;
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
    const us = (t - this.acquiredAt) * 1000;
    if (rep.tap !== null) tap(rep, ['hold', this.key, us, this.party, this.holder]);
    rep.holdLine(this.key, us, this.party, this.holder);
  }
}

function tap(rep, ev) {
  try { rep.tap(ev); } catch (_) { /* a test hook never breaks a lock call */ }
}

// `waiting ... start`: an acquire call that may wait began (or, redlock,
// its first attempt found the lock taken).
function reportStart(rep, key, owner, holder) {
  if (rep.tap !== null) tap(rep, ['waiting', key, owner, holder, 'start']);
  rep.waitingLine(key, owner, holder, 'start');
}

// The line of an acquire call that returned (outcome ok/timeout) or failed:
// its `wait`, with owner and holder (its waiting end too) when it acquired,
// waited or not, or sent a start (as lib/wire.js emit() does with the
// tap's `acquired` event).
function reportAcquire(rep, key, owner, holder, started, t0, t1, outcome) {
  const us = (t1 - t0) * 1000;
  if (rep.tap !== null) tap(rep, ['acquired', key, owner, holder, us, outcome, started]);
  if (started || outcome === 'ok') rep.waitEndLine(key, us, outcome, owner, holder);
  else rep.waitLine(key, us, outcome);
}

module.exports = { Holding, reportStart, reportAcquire, party, runAs, now, als };
