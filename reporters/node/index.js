// SPDX-License-Identifier: BSD-3-Clause
// lockwatch-reporter: report lock waits, holds, waiting and lost events of
// node-redlock and redis-semaphore to a lockwatch agent over UDP, in the lw1
// line protocol (docs/line-protocol.md, docs/reporters.md).  The libraries
// are peer dependencies, loaded only when their wrapper is asked for.
'use strict';

const reporter = require('./lib/reporter');
const { instrumentRedlock } = require('./lib/redlock');
const { withReporting } = require('./lib/semaphore');
const { runAs } = require('./lib/holding');

let mutex = null;
let semaphore = null;

module.exports = {
  instrumentRedlock,
  withReporting,
  // redis-semaphore's Mutex and Semaphore, reporting (loaded on first use).
  get Mutex() {
    if (mutex === null) mutex = withReporting(require('redis-semaphore').Mutex, 2);
    return mutex;
  },
  get Semaphore() {
    if (semaphore === null) semaphore = withReporting(require('redis-semaphore').Semaphore, 3);
    return semaphore;
  },
  runAs,
  configure: (opts) => reporter.configure(opts),
  stats: () => (reporter.current() || reporter.configure()).stats(),
  flush: () => { const r = reporter.current(); if (r) r.flush(); },
  reporter: () => reporter.get(),
};
