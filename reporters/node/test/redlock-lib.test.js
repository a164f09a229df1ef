// SPDX-License-Identifier: BSD-3-Clause
// The redlock wrapper around node-redlock 4 itself: ioredis pointed at a
// closed port (Redis down), and servers of redlock's own shape (an object
// with evalsha()) that fail, find the lock taken or set it, for
// multi-server redlock.  No Redis needed; node-redlock and ioredis are
// found through NODE_PATH (tests/interop/reporters/node/test runs this with
// the pinned ones: NODE_PATH=<tests/interop/reporters/node/fetch's
// DIR>/node_modules); without them these tests are skipped.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const net = require('node:net');
const reporter = require('../lib/reporter');
const { instrumentRedlock } = require('../lib/redlock');

process.removeAllListeners('warning');
process.on('warning', () => {});

function optional(name) {
  try { return require(name); } catch (_) { return null; }
}
const Redlock = optional('redlock');
const Redis = optional('ioredis');
const skipRedlock = Redlock === null ? 'node-redlock 4 not found (NODE_PATH)' : false;
const skipIoredis = skipRedlock || (Redis === null ? 'ioredis not found (NODE_PATH)' : false);

function capture() {
  const r = reporter.configure({ samples: '127.0.0.1:9' });
  const evs = [];
  r.tap = (ev) => evs.push(ev);
  return evs;
}

// The tap's events as [kind, outcome / phase, started]: `waiting start`
// and each call's end (`acquired`, with whether a start went out).
const summary = (evs) => evs.map((e) => (e[0] === 'waiting' ? ['waiting', e[4]] : [e[0], e[5], e[6]]));

async function closedPort() {
  const srv = net.createServer();
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

test('node-redlock 4 on ioredis with Redis down: outcome error, no waiting start', { skip: skipIoredis }, async () => {
  const evs = capture();
  const port = await closedPort();
  // what a trial used: Redis not there, retryCount 2; commands fail at once
  // (enableOfflineQueue off) or once a reconnection failed (maxRetriesPerRequest 0)
  for (const opts of [{ enableOfflineQueue: false }, { maxRetriesPerRequest: 0 }]) {
    const client = new Redis({ port, ...opts });
    client.on('error', () => {});
    const rl = instrumentRedlock(new Redlock([client], { retryCount: 2, retryDelay: 5, retryJitter: 0 }));
    const clientErrors = [];
    rl.on('clientError', (e) => clientErrors.push(e));
    try {
      await assert.rejects(rl.acquire('lock:order:down', 1000), { name: 'LockError' });
    } finally {
      client.disconnect();
    }
    assert.ok(clientErrors.length >= 3, `redlock saw the Redis errors (${clientErrors.length})`);
    assert.deepStrictEqual(summary(evs), [['acquired', 'error', false]], JSON.stringify(opts));
    evs.length = 0;
  }
});

// A server of redlock's shape: evalsha(hash, args, cb) answering each call
// with the next of `replies` (the last one repeated): 'err', 'taken' (0)
// or 'ok' (the count of keys, as the lock script returns it).
function server(...replies) {
  return {
    evalsha(hash, args, cb) {
      const r = replies.length > 1 ? replies.shift() : replies[0];
      const n = args[0];
      setImmediate(() => (r === 'err' ? cb(new Error('Connection is closed.'))
        : cb(null, r === 'ok' ? n : 0)));
    },
  };
}

test('node-redlock 4, three servers: errors and no "taken" are an error; one "taken" a timeout with its start', { skip: skipRedlock }, async () => {
  const evs = capture();
  const opts = { retryCount: 2, retryDelay: 5, retryJitter: 0 };
  // two servers fail, one sets the key: no quorum, and nothing said taken
  let rl = instrumentRedlock(new Redlock([server('err'), server('err'), server('ok')], opts));
  await assert.rejects(rl.acquire('lock:m', 1000), { name: 'LockError' });
  assert.deepStrictEqual(summary(evs), [['acquired', 'error', false]]);
  // one fails, one finds the lock taken, one sets it: someone holds it
  evs.length = 0;
  rl = instrumentRedlock(new Redlock([server('err'), server('taken'), server('ok')], opts));
  await assert.rejects(rl.acquire(['lock:m1', 'lock:m2'], 1000), { name: 'LockError' });
  assert.deepStrictEqual(summary(evs), [['waiting', 'start'], ['waiting', 'start'],
    ['acquired', 'timeout', true], ['acquired', 'timeout', true]]);
  assert.deepStrictEqual(evs.map((e) => e[1]), ['lock:m1', 'lock:m2', 'lock:m1', 'lock:m2']);
});

test('node-redlock 4: retries after a failed first attempt are watched (the start when one finds the lock taken)', { skip: skipRedlock }, async () => {
  const evs = capture();
  const opts = { retryCount: 3, retryDelay: 5, retryJitter: 0 };
  // the first attempt fails on every server, the second finds the lock taken
  // (a lock attempt and the unlock of its failure each reach evalsha)
  let rl = instrumentRedlock(new Redlock([server('err', 'err', 'taken')], opts));
  await assert.rejects(rl.acquire('lock:r', 1000), { name: 'LockError' });
  assert.deepStrictEqual(summary(evs), [['waiting', 'start'], ['acquired', 'timeout', true]]);
  assert.strictEqual(evs[0][3], evs[1][3]);   // the start names the call's lock value
  assert.match(evs[0][3], /^[0-9a-f]{32}$/);
  // the first attempt fails, the second gets the lock: ok, no start
  evs.length = 0;
  rl = instrumentRedlock(new Redlock([server('err', 'err', 'ok')], opts));
  const lock = await rl.acquire('lock:r', 1000);
  assert.deepStrictEqual(summary(evs), [['acquired', 'ok', false]]);
  assert.strictEqual(evs[0][3], lock.value);
  // a call that gets the lock at once, or finds it taken, after them: as ever
  evs.length = 0;
  rl = instrumentRedlock(new Redlock([server('ok')], opts));
  await rl.acquire('lock:r2', 1000);
  rl = instrumentRedlock(new Redlock([server('taken')], opts));
  await assert.rejects(rl.acquire('lock:r3', 1000), { name: 'LockError' });
  assert.deepStrictEqual(summary(evs), [['acquired', 'ok', false], ['waiting', 'start'], ['acquired', 'timeout', true]]);
});
