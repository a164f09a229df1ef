// SPDX-License-Identifier: BSD-3-Clause
// The application side of tests/interop/reporters/node/test: runs with
// NODE_PATH=<what ./fetch built>/node_modules (ioredis 5.4.2, redlock 4.2.0,
// redis-semaphore 5.8.0, lockwatch-reporter) and prints one JSON object.
//
//   workload.js contend LIB PORT SECONDS PREFIX  8 async tasks on 4 locks
//       (LIB redlock or mutex); per key the acquires made and the waits the
//       reporter reported (its tap), in microseconds
//   workload.js lost PORT PREFIX                  five forced lost leases
//   workload.js down PORT TARGET N                lock calls with the reporter
//       aimed at TARGET vs without it: results and per-call times
//   workload.js redisdown PORT KEY                a node-redlock acquire
//       (retryCount 2) on ioredis pointed at PORT, where no Redis listens:
//       what it threw and the tap's events
'use strict';

const Redis = require('ioredis');
const Redlock = require('redlock');
const semaphore = require('redis-semaphore');
const lw = require('lockwatch-reporter');

const NAMES = ['orders', 'payments', 'users', 'stock'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tapWaits() {
  const waits = {};
  lw.reporter().tap = (ev) => {
    // an acquire call's event: ['acquired', key, party, holder, us, outcome, mayWait]
    if (ev[0] === 'acquired') (waits[ev[1]] = waits[ev[1]] || []).push(Math.round(ev[4]));
  };
  return waits;
}

function rng(seed) {  // small deterministic PRNG per task
  let s = seed * 2654435761 % 4294967296 || 1;
  return () => { s = (s * 1664525 + 1013904223) % 4294967296; return s / 4294967296; };
}

async function contend(lib, port, seconds, prefix) {
  const waits = tapWaits();
  const client = new Redis({ port, lazyConnect: false });
  const acquires = {};
  const errors = [];
  const stopAt = Date.now() + seconds * 1000;
  const keys = NAMES.map((n) => `${prefix}:${n}`);
  const redlock = lw.instrumentRedlock(new Redlock([client], { retryCount: -1, retryDelay: 2, retryJitter: 1 }));
  async function task(i) {
    const rnd = rng(i + 1);
    try {
      while (Date.now() < stopAt) {
        const key = keys[Math.floor(rnd() * keys.length)];
        if (lib === 'redlock') {
          const lock = await redlock.acquire(key, 10000);
          acquires[key] = (acquires[key] || 0) + 1;
          await sleep(rnd() * 2);
          await lock.unlock();
        } else {
          const m = new lw.Mutex(client, key, { lockTimeout: 10000, acquireTimeout: 60000, retryInterval: 2 });
          await m.acquire();
          acquires[`mutex:${key}`] = (acquires[`mutex:${key}`] || 0) + 1;
          await sleep(rnd() * 2);
          await m.release();
        }
      }
    } catch (e) {
      errors.push(String(e));
    }
  }
  await Promise.all(Array.from({ length: 8 }, (_, i) => task(i)));
  lw.flush();
  await sleep(100);
  client.disconnect();
  return { acquires, waits, errors, stats: lw.stats() };
}

async function lost(port, prefix) {
  const client = new Redis({ port });
  const other = new Redis({ port });
  const redlock = lw.instrumentRedlock(new Redlock([client], { retryCount: 0 }));
  const out = {};
  const caught = async (p) => { try { await p; return 'no error'; } catch (e) { return e.name || String(e); } };

  // a: a lease runs out, another client takes the key, release finds it lost
  let k = `${prefix}:release`;
  let lock = await redlock.acquire(k, 300);
  await sleep(600);
  await other.set(k, 'someone-else', 'PX', 5000, 'NX');
  out.release = await caught(lock.unlock());

  // b: another client takes the key over; extend finds it lost
  k = `${prefix}:extend`;
  lock = await redlock.acquire(k, 5000);
  await other.set(k, 'someone-else', 'PX', 5000);
  out.extend = await caught(lock.extend(5000));
  out.extend_release = await caught(lock.unlock());

  // c: using() with its automatic extension: taken over before the extension
  k = `${prefix}:using`;
  out.using = await redlock.using(k, 1000, { automaticExtensionThreshold: 500 }, async (signal) => {
    await other.set(k, 'someone-else', 'PX', 5000);
    for (let i = 0; i < 40 && !signal.aborted; i++) await sleep(50);
    return signal.aborted ? 'aborted' : 'not aborted';
  });

  // d: redis-semaphore's refresh finds the mutex taken over: onLockLost
  k = `${prefix}:refresh`;
  let lostSeen = null;
  const m = new lw.Mutex(client, k, { lockTimeout: 1000, refreshInterval: 200,
    onLockLost(err) { lostSeen = err.constructor.name; } });
  await m.acquire();
  await other.set(`mutex:${k}`, 'someone-else', 'PX', 5000);
  for (let i = 0; i < 40 && lostSeen === null; i++) await sleep(50);
  out.refresh = lostSeen;
  await m.release();

  // e: no refresh, the lease runs out, released late
  k = `${prefix}:late`;
  const m2 = new lw.Mutex(client, k, { lockTimeout: 300, refreshInterval: 0 });
  await m2.acquire();
  await sleep(600);
  out.late = await caught(m2.release());

  lw.flush();
  await sleep(100);
  client.disconnect();
  other.disconnect();
  out.stats = lw.stats();
  return out;
}

async function down(port, target, n) {
  lw.configure({ samples: target });
  const client = new Redis({ port });
  const plainRl = new Redlock([client], { retryCount: 0 });
  const rl = lw.instrumentRedlock(new Redlock([client], { retryCount: 0 }));
  const busy = await plainRl.acquire('lwrep:node:down:busy', 60000);
  const times = { with: [], without: [] };
  const results = { with: [], without: [] };
  const outcome = async (p) => { try { await p; return 'ok'; } catch (e) { return e.name; } };
  for (let i = 0; i < n; i++) {
    for (const mode of (i % 2 === 0 ? ['with', 'without'] : ['without', 'with'])) {
      const r = mode === 'with' ? rl : plainRl;
      const M = mode === 'with' ? lw.Mutex : semaphore.Mutex;
      const t0 = process.hrtime.bigint();
      const lock = await r.acquire('lwrep:node:down', 5000);
      await lock.unlock();
      const a = await outcome(r.acquire('lwrep:node:down:busy', 5000));
      const m = new M(client, 'lwrep:node:down', { lockTimeout: 5000, acquireTimeout: 5 });
      const b = await m.tryAcquire();
      await m.release();
      times[mode].push(Number(process.hrtime.bigint() - t0) / 1e9);
      results[mode].push([a, b]);
    }
  }
  await busy.unlock();
  client.disconnect();
  return { times, same: JSON.stringify(results.with) === JSON.stringify(results.without),
    results: results.with.slice(0, 1), stats: lw.stats() };
}

async function redisDown(port, key) {
  const events = [];
  lw.reporter().tap = (ev) => events.push(ev);
  // commands fail at once while there is no connection, as a service with
  // enableOfflineQueue off sees Redis down
  const client = new Redis({ port, enableOfflineQueue: false });
  client.on('error', () => {});
  const rl = lw.instrumentRedlock(new Redlock([client], { retryCount: 2, retryDelay: 20, retryJitter: 0 }));
  let caught = 'no error';
  try { await rl.acquire(key, 1000); } catch (e) { caught = e.name; }
  client.disconnect();
  lw.flush();
  await sleep(100);
  return { caught, events, stats: lw.stats() };
}

async function main() {
  const [mode, ...a] = process.argv.slice(2);
  let res;
  if (mode === 'contend') res = await contend(a[0], Number(a[1]), Number(a[2]), a[3]);
  else if (mode === 'lost') res = await lost(Number(a[0]), a[1]);
  else if (mode === 'down') res = await down(Number(a[0]), a[1], Number(a[2]));
  else if (mode === 'redisdown') res = await redisDown(Number(a[0]), a[1]);
  else throw new Error(`unknown mode ${mode}`);
  process.stdout.write(JSON.stringify(res));
}

main().catch((e) => { console.error(e); process.exit(1); });
