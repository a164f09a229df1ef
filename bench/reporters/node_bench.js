// SPDX-License-Identifier: BSD-3-Clause
// The timed part of bench/reporters/node (run by it with NODE_PATH set to
// what tests/interop/reporters/node/fetch built): uncontended acquire +
// release cycles through the bare library and through the reporter
// (reporting to SINK), interleaved: R rounds, each running N cycles of both
// variants in alternating order.  Prints JSON: per library, the seconds per
// cycle of each round for both variants, wall clock and process CPU (the
// CPU is the steadier figure on a busy machine).
'use strict';

const Redis = require('ioredis');
const Redlock = require('redlock');
const semaphore = require('redis-semaphore');
const lw = require('lockwatch-reporter');

async function main() {
  const [port, sink, rounds, n] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4]), Number(process.argv[5])];
  lw.configure({ samples: sink });
  const client = new Redis({ port });
  const bareRl = new Redlock([client], { retryCount: 0 });
  const repRl = lw.instrumentRedlock(new Redlock([client], { retryCount: 0 }));
  const redlock = (rl) => async () => {
    for (let i = 0; i < n; i++) {
      const lock = await rl.acquire('bench:node:redlock', 10000);
      await lock.unlock();
    }
  };
  const mutex = (M) => async () => {
    for (let i = 0; i < n; i++) {
      const m = new M(client, 'bench:node:mutex', { lockTimeout: 10000 });
      await m.acquire();
      await m.release();
    }
  };
  const libs = {
    'node-redlock': [redlock(bareRl), redlock(repRl)],
    'redis-semaphore Mutex': [mutex(semaphore.Mutex), mutex(lw.Mutex)],
  };
  const out = {};
  for (const [name, [bare, rep]] of Object.entries(libs)) {
    await bare();
    await rep();
    const res = { bare: [], reporter: [], again: [], bare_cpu: [], reporter_cpu: [], again_cpu: [] };
    // "again": the bare library a second time, the run's own noise (A/A)
    const variants = [['bare', bare], ['reporter', rep], ['again', bare]];
    for (let i = 0; i < rounds; i++) {
      const order = variants.slice(i % 3).concat(variants.slice(0, i % 3));
      if (i % 2) order.reverse();
      for (const [label, fn] of order) {
        const c0 = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        await fn();
        res[label].push(Number(process.hrtime.bigint() - t0) / 1e9 / n);
        const c = process.cpuUsage(c0);
        res[`${label}_cpu`].push((c.user + c.system) / 1e6 / n);
      }
    }
    out[name] = res;
  }
  lw.flush();
  out.stats = lw.stats();
  client.disconnect();
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
