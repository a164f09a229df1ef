// SPDX-License-Identifier: BSD-3-Clause
// The wrappers' lines around fake libraries shaped like node-redlock 4 and
// redis-semaphore 5 (the real ones run in tests/interop/reporters/node).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const reporter = require('../lib/reporter');
const { instrumentRedlock } = require('../lib/redlock');
const { withReporting } = require('../lib/semaphore');
const wire = require('../lib/wire');

process.removeAllListeners('warning');
process.on('warning', () => {});

function capture() {
  const r = reporter.configure({ samples: '127.0.0.1:9' });
  const evs = [];
  r.tap = (ev) => evs.push(ev);
  return evs;
}

class LockError extends Error { constructor(m) { super(m); this.name = 'LockError'; } }

// Bluebird-like enough: then() and nodeify().
function bb(p) {
  const then = p.then.bind(p);
  p.then = (a, b) => bb(then(a, b));
  p.nodeify = (cb) => { if (cb) then((v) => cb(null, v), (e) => cb(e)); return p; };
  return p;
}

class FakeRedlock {
  constructor() { this.retryCount = 10; this.held = new Map(); }
  _lock() {}
  lockWithOptions(resource, ttl) {
    if (this.held.has(resource)) return bb(Promise.reject(new LockError('Exceeded 10 attempts')));
    const lock = { redlock: this, resource, value: 'v-' + resource, expiration: Date.now() + ttl };
    lock.unlock = (cb) => this.unlock(lock, cb);
    this.held.set(resource, lock.value);
    return bb(Promise.resolve(lock));
  }
  unlock(lock) {
    const mine = this.held.get(lock.resource) === lock.value;
    lock.expiration = 0;
    if (mine) this.held.delete(lock.resource);
    return bb(mine ? Promise.resolve() : Promise.reject(new LockError('Unable to fully release')));
  }
  extend(lock, ttl) {
    if (lock.expiration < Date.now()) return bb(Promise.reject(new LockError('already expired')));
    if (this.held.get(lock.resource) !== lock.value) return bb(Promise.reject(new LockError('Exceeded')));
    lock.expiration = Date.now() + ttl;
    return bb(Promise.resolve(lock));
  }
}

// The events as the lines they become on the wire (lib/wire.js emit()),
// each shortened to its kind and outcome / reason: `waiting:ok`, `wait:ok`,
// `hold`, `lost:renewal`; a 7-field wait is its waiting end and its wait
// (docs/line-protocol.md), `waiting:ok`, `wait:ok`.
const lines = (evs) => { const out = []; for (const e of evs) wire.emit(e, 'h:1/', out); return out; };
const kinds = (evs) => lines(evs).flatMap((l) => {
  const f = l.split(' ');
  if (f[1] === 'wait') return f.length === 7 ? [`waiting:${f[4]}`, `wait:${f[4]}`] : [`wait:${f[4]}`];
  return [f[1] === 'waiting' ? `waiting:${f[5]}` : f[1] === 'lost' ? `lost:${f[7]}` : f[1]];
});

test('redlock: acquire, release, timeout', async () => {
  const evs = capture();
  const rl = instrumentRedlock(new FakeRedlock());
  const lock = await rl.acquire('lock:a', 1000);
  await assert.rejects(rl.acquire('lock:a', 1000), { name: 'LockError' });
  await lock.unlock();
  assert.deepStrictEqual(kinds(evs), ['waiting:start', 'waiting:ok', 'wait:ok',
    'waiting:start', 'waiting:timeout', 'wait:timeout', 'hold']);
  assert.strictEqual(evs[0][3], null);
  assert.strictEqual(evs[1][3], 'v-lock:a');
  assert.strictEqual(evs[4][4], 'v-lock:a');
  assert.strictEqual(evs[4][3], evs[0][2]);
});

test('redlock: a lost lease found by extend and by release', async () => {
  const evs = capture();
  const rl = instrumentRedlock(new FakeRedlock());
  const lock = await rl.acquire('lock:b', 1000);
  rl.held.set('lock:b', 'someone else');
  await assert.rejects(lock.extend ? lock.extend(1000) : rl.extend(lock, 1000), { name: 'LockError' });
  await assert.rejects(rl.release(lock), { name: 'LockError' });
  assert.deepStrictEqual(kinds(evs).slice(3), ['lost:renewal', 'hold']);
  assert.strictEqual(evs[2][5], 0);
});

test('redlock: using() extends and reports one owner for nested locks', async () => {
  const evs = capture();
  const rl = instrumentRedlock(new FakeRedlock());
  const r = await rl.using('lock:c', 300, { automaticExtensionThreshold: 200 }, async (signal) => {
    await new Promise((res) => setTimeout(res, 250));
    const inner = await rl.acquire('lock:d', 1000);
    await inner.unlock();
    return signal.aborted ? 'aborted' : 'done';
  });
  assert.strictEqual(r, 'done');
  const owners = new Set(evs.filter((e) => e[0] === 'waiting' || e[0] === 'hold').map((e) => e[0] === 'hold' ? e[3] : e[2]));
  assert.strictEqual(owners.size, 1);
  assert.ok(!kinds(evs).some((k) => k.startsWith('lost')));
});

test('redlock: using() aborts and reports lost when an extension fails', async () => {
  const evs = capture();
  const rl = instrumentRedlock(new FakeRedlock());
  const r = await rl.using('lock:e', 300, { automaticExtensionThreshold: 200 }, async (signal) => {
    rl.held.set('lock:e', 'thief');
    await new Promise((res) => setTimeout(res, 250));
    return signal.aborted ? 'aborted' : 'done';
  });
  assert.strictEqual(r, 'aborted');
  assert.ok(kinds(evs).includes('lost:renewal'));
});

// redis-semaphore 5's attempt loop (lib/mutex/acquire.js, lib/utils
// delay()): throwIfAborted() before each attempt, delay(retryInterval,
// signal) after a failed one; `busy` attempts fail before one succeeds
// (when ok), at most 3.
function fakeDelay(ms, signal) {
  return new Promise((resolve, reject) => {
    const onAbort = () => { clearTimeout(t); reject(signal.reason); };
    const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort);
  });
}

class FakeMutex {
  constructor(client, key, options = {}) {
    this._key = `mutex:${key}`;
    this._identifier = 'id-' + key;
    this._acquireOptions = { lockTimeout: options.lockTimeout || 10000 };
    this._onLockLost = options.onLockLost;
    this.ok = true;
    this.busy = 0;
  }
  async acquire(signal) { if (!(await this.tryAcquire(signal))) throw new Error('timeout'); }
  async tryAcquire(signal) {
    for (let attempt = 1; attempt <= 3; attempt++) {
      signal?.throwIfAborted();
      if (this.ok && this.busy === 0) return true;
      if (this.busy > 0) this.busy--;
      await fakeDelay(5, signal);
    }
    return false;
  }
  async _refresh() { return this.ok; }
  async release() {}
  async loseIt() { if (!(await this._refresh())) this._onLockLost(new Error('Lost')); }
}

test('redis-semaphore: acquire once through acquire(), lost via onLockLost, expired release', async () => {
  const evs = capture();
  const M = withReporting(FakeMutex, 2);
  let appSaw = null;
  const m = new M(null, 'x', { lockTimeout: 50, onLockLost(err) { appSaw = err.message; } });
  m.busy = 1;     // the first attempt finds it taken: a start, with the identifier
  await m.acquire();
  m.ok = false;
  await m.loseIt();
  assert.strictEqual(appSaw, 'Lost');
  await new Promise((res) => setTimeout(res, 80));
  await m.release();
  assert.deepStrictEqual(kinds(evs), ['waiting:start', 'waiting:ok', 'wait:ok', 'lost:renewal', 'hold']);
  assert.strictEqual(evs[0][3], 'id-x');
  // got at once: no start, the ok all the same
  const m2 = new M(null, 'y', { lockTimeout: 30 });
  m2.ok = true;
  await m2.acquire();
  await new Promise((res) => setTimeout(res, 60));
  await m2.release();
  assert.deepStrictEqual(kinds(evs).slice(5), ['waiting:ok', 'wait:ok', 'lost:expired', 'hold']);
  const m3 = new M(null, 'z', {});
  m3.ok = false;
  await assert.rejects(m3.acquire());
  assert.deepStrictEqual(kinds(evs).slice(9), ['waiting:start', 'waiting:timeout', 'wait:timeout']);
  // the library's default onLockLost still throws
  const m4 = new M(null, 'w', {});
  await m4.acquire();
  m4.ok = false;
  await assert.rejects(m4.loseIt(), /Lost/);
});

test('redis-semaphore: the caller\'s abort signal still aborts the wait, ended as a timeout (it gave up)', async () => {
  const evs = capture();
  const M = withReporting(FakeMutex, 2);
  const m = new M(null, 'ab', {});
  m.ok = false;
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error('stop waiting')), 7);
  await assert.rejects(m.acquire(ac.signal), /stop waiting/);
  assert.deepStrictEqual(kinds(evs), ['waiting:start', 'waiting:timeout', 'wait:timeout']);
  // aborted before it began: the library's throwIfAborted() throws the reason, no start
  await assert.rejects(new M(null, 'ab2', {}).acquire(ac.signal), /stop waiting/);
  assert.deepStrictEqual(kinds(evs).slice(3), ['wait:timeout']);
});

// Like redlock 4: the first attempt's script is sent synchronously from
// inside lockWithOptions through this._executeScript; a retry comes later.
class ScriptedRedlock extends FakeRedlock {
  _executeScript(server, name, args, cb) {
    setImmediate(() => cb(null, this.held.has(args[1]) ? 0 : 1));
  }
  lockWithOptions(resource, ttl) {
    const value = 'v' + Math.random();
    return bb(new Promise((resolve, reject) => {
      const attempt = (n) => this._executeScript(null, 'lockScript', [1, resource, value, ttl], (err, r) => {
        if (r === 1) {
          this.held.set(resource, value);
          const lock = { redlock: this, resource, value, expiration: Date.now() + ttl };
          lock.unlock = (cb) => this.unlock(lock, cb);
          return resolve(lock);
        }
        if (n >= 3) return reject(new LockError('Exceeded 3 attempts'));
        setTimeout(() => attempt(n + 1), 5);
      });
      attempt(1);
    }));
  }
}

test('redlock: waiting start only when the first attempt finds the lock taken', async () => {
  const evs = capture();
  const rl = instrumentRedlock(new ScriptedRedlock());
  const a = await rl.acquire('lock:s', 1000);
  // no wait, no start; the ok (with the value Redis shows) all the same
  assert.deepStrictEqual(kinds(evs), ['waiting:ok', 'wait:ok']);
  assert.match(lines(evs)[0], new RegExp(`^lw1 wait lock:s \\d+ ok h:1/${evs[0][2]} ${a.value}$`));
  setTimeout(() => a.unlock(), 8);
  const b = await rl.acquire('lock:s', 1000);
  assert.deepStrictEqual(kinds(evs), ['waiting:ok', 'wait:ok', 'waiting:start', 'hold', 'waiting:ok', 'wait:ok']);
  const start = evs.find((e) => e[0] === 'waiting');
  assert.strictEqual(start[3], b.value);
  assert.strictEqual(lines(evs)[3].split(' ')[6], b.value);
  await b.unlock();
});

// Redis failing: each attempt's reply is the next of `replies` (the last
// one repeated): 'err' an error (Redis down), 'taken' 0, 'ok' the count.
class FailingRedlock extends ScriptedRedlock {
  constructor(replies) { super(); this.replies = replies; }
  _executeScript(server, name, args, cb) {
    const r = this.replies.length > 1 ? this.replies.shift() : this.replies[0];
    setImmediate(() => (r === 'err' ? cb(new Error('Connection is closed.')) : cb(null, r === 'ok' ? 1 : 0)));
  }
}

test('redlock: Redis failing is an error with no waiting start; a retry that finds the lock taken starts the wait then', async () => {
  const evs = capture();
  // every attempt fails: the LockError is an error, and nothing waited for a holder
  await assert.rejects(instrumentRedlock(new FailingRedlock(['err'])).acquire('lock:down', 1000), { name: 'LockError' });
  assert.deepStrictEqual(kinds(evs), ['wait:error']);
  assert.strictEqual(lines(evs)[0].split(' ').length, 5);
  // a failed first attempt, then the lock taken: the start goes out with the retry, a timeout
  evs.length = 0;
  await assert.rejects(instrumentRedlock(new FailingRedlock(['err', 'taken'])).acquire('lock:down', 1000), { name: 'LockError' });
  assert.deepStrictEqual(kinds(evs), ['waiting:start', 'waiting:timeout', 'wait:timeout']);
  assert.match(evs[0][3], /^v0\./);
  assert.strictEqual(evs[1][3], evs[0][3]);
  // a failed first attempt, then the lock got: ok, no start
  evs.length = 0;
  const rl = instrumentRedlock(new FailingRedlock(['err', 'ok']));
  const lock = await rl.acquire('lock:down', 1000);
  assert.deepStrictEqual(kinds(evs), ['waiting:ok', 'wait:ok']);
  assert.strictEqual(evs[0][3], lock.value);
  await lock.unlock();
  // the same instance, Redis back: a first attempt that finds the lock taken starts at once
  evs.length = 0;
  rl.replies = ['taken', 'taken', 'ok'];
  await rl.acquire('lock:down', 1000);
  assert.deepStrictEqual(kinds(evs), ['waiting:start', 'waiting:ok', 'wait:ok']);
});

test('redlock: retryCount 0 sends waiting ok when it acquired, no waiting line when it did not', async () => {
  const evs = capture();
  const rl = instrumentRedlock(new ScriptedRedlock());
  rl.retryCount = 0;
  const a = await rl.acquire('lock:t', 1000);
  await assert.rejects(rl.acquire('lock:t', 1000), { name: 'LockError' });
  await a.unlock();
  assert.deepStrictEqual(kinds(evs), ['waiting:ok', 'wait:ok', 'wait:timeout', 'hold']);
  assert.strictEqual(lines(evs)[0].split(' ')[6], a.value);
  assert.strictEqual(lines(evs)[1].split(' ').length, 5);   // no owner, no holder: no waiting end
});

test('redlock: a multi-resource lock sends waiting ok for each of its keys', async () => {
  const evs = capture();
  const rl = instrumentRedlock(new FakeRedlock());
  rl.retryCount = 0;
  const lock = await rl.acquire(['lock:m1', 'lock:m2'], 1000);
  await lock.unlock();
  // kind, key and (waits that end a waiting) holder of each line
  assert.deepStrictEqual(lines(evs).map((l) => l.split(' ')).map((f) => [f[1], f[2], f[1] === 'wait' ? f[6] : '']), [
    ['wait', 'lock:m1', lock.value], ['wait', 'lock:m2', lock.value],
    ['hold', 'lock:m1', ''], ['hold', 'lock:m2', '']]);
  assert.deepStrictEqual(kinds(evs).slice(0, 4), ['waiting:ok', 'wait:ok', 'waiting:ok', 'wait:ok']);
});

// The subclass keeps the name it was declared with: naming it at run time
// (Object.defineProperty on 'name', a computed class name) made V8 build
// each instance on its slow path, about 1 us more a Mutex (docs/reporters.md
// "Overhead").  The property is the one a class declaration makes.
test('redis-semaphore: the reporting class is not renamed at run time', () => {
  class Base { constructor(c, k) { this._key = k; } }
  const d = Object.getOwnPropertyDescriptor(withReporting(Base, 2), 'name');
  assert.deepStrictEqual(d, { value: 'Reporting', writable: false, enumerable: false, configurable: true });
});
