// SPDX-License-Identifier: BSD-3-Clause
// The timed part of bench/reporters/python-node for Node (run by it with
// NODE_PATH set to what tests/interop/reporters/node/fetch built):
// uncontended acquire + release cycles through the bare library, through
// the reporter (reporting to SINK) and through the bare library again (A/A),
// interleaved: R rounds, each running N cycles of every variant in rotating
// order.  Prints JSON: per library, the seconds per cycle of each round for
// every variant, wall clock and process CPU (the CPU is the steadier figure
// on a busy machine).
//
//   node node_bench.js PORT SINK R N [one|each]
//
// one (the default): all in this process, where the library's code sees
// both the bare and the reporting shapes and its inline caches serve both.
// each: every variant runs in a process of its own, as an application runs
// one of them, the processes taking turns (one runs while the others wait
// for their next round).  On one CPU `each` measured no lower than `one`
// (docs/reporters.md "Overhead").
'use strict';

const { fork } = require('node:child_process');

const VARIANTS = ['bare', 'reporter', 'again'];   // again: the bare library a second time
const LIBS = ['node-redlock', 'redis-semaphore Mutex'];

// The cycles of one library through one variant: an async function running
// n acquire + release cycles.
function cycles(lib, reporting, port, sink, n) {
  const Redis = require('ioredis');
  const lw = require('lockwatch-reporter');
  const client = new Redis({ port });
  let run;
  if (lib === 'node-redlock') {
    const Redlock = require('redlock');
    const rl = new Redlock([client], { retryCount: 0 });
    if (reporting) lw.instrumentRedlock(rl);
    run = async () => {
      for (let i = 0; i < n; i++) {
        const lock = await rl.acquire('bench:node:redlock', 10000);
        await lock.unlock();
      }
    };
  } else {
    const M = reporting ? lw.Mutex : require('redis-semaphore').Mutex;
    run = async () => {
      for (let i = 0; i < n; i++) {
        const m = new M(client, 'bench:node:mutex', { lockTimeout: 10000 });
        await m.acquire();
        await m.release();
      }
    };
  }
  return { run, client };
}

// One round: [wall seconds per cycle, process CPU seconds per cycle].
async function timed(fn, n) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e9 / n;
  const c = process.cpuUsage(c0);
  return [wall, (c.user + c.system) / 1e6 / n];
}

function emptyResult() {
  const res = {};
  for (const v of VARIANTS) { res[v] = []; res[`${v}_cpu`] = []; }
  return res;
}

// Round i's order of the variants: rotated, and reversed every other round.
function order(i) {
  const o = VARIANTS.slice(i % 3).concat(VARIANTS.slice(0, i % 3));
  return i % 2 ? o.reverse() : o;
}

// A child: one variant, the libraries' cycles run on the parent's word.
function child(variant, port, sink, n) {
  const lw = require('lockwatch-reporter');
  const reporting = variant === 'reporter';
  if (reporting) lw.configure({ samples: sink });
  const runs = {};
  for (const lib of LIBS) runs[lib] = cycles(lib, reporting, port, sink, n);
  process.on('message', async (m) => {
    if (m.lib === undefined) {   // the end
      if (reporting) lw.flush();
      for (const lib of LIBS) runs[lib].client.disconnect();
      process.send({ stats: reporting ? lw.stats() : null }, () => process.exit(0));
      return;
    }
    process.send({ t: await timed(runs[m.lib].run, n) });
  });
  process.send({ ready: true });
}

function ask(proc, msg) {
  return new Promise((resolve, reject) => {
    const onExit = (code) => reject(new Error(`a bench process exited (${code})`));
    proc.once('exit', onExit);
    proc.once('message', (m) => { proc.off('exit', onExit); resolve(m); });
    if (msg !== null) proc.send(msg);
  });
}

async function eachProcess(port, sink, rounds, n) {
  const procs = {};
  for (const v of VARIANTS) {
    procs[v] = fork(__filename, ['--child', v, String(port), sink, String(n)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  }
  await Promise.all(VARIANTS.map((v) => ask(procs[v], null)));
  const out = {};
  for (const lib of LIBS) {
    for (let w = 0; w < 2; w++) for (const v of VARIANTS) await ask(procs[v], { lib });   // warm up
    const res = emptyResult();
    for (let i = 0; i < rounds; i++) {
      for (const v of order(i)) {
        const { t } = await ask(procs[v], { lib });
        res[v].push(t[0]);
        res[`${v}_cpu`].push(t[1]);
      }
    }
    out[lib] = res;
  }
  for (const v of VARIANTS) {
    const m = await ask(procs[v], {});
    if (v === 'reporter') out.stats = m.stats;
  }
  return out;
}

async function oneProcess(port, sink, rounds, n) {
  const lw = require('lockwatch-reporter');
  lw.configure({ samples: sink });
  const out = {};
  const clients = [];
  for (const lib of LIBS) {
    const bare = cycles(lib, false, port, sink, n);
    const rep = cycles(lib, true, port, sink, n);
    clients.push(bare.client, rep.client);
    const fns = { bare: bare.run, reporter: rep.run, again: bare.run };
    await bare.run();
    await rep.run();
    const res = emptyResult();
    for (let i = 0; i < rounds; i++) {
      for (const v of order(i)) {
        const t = await timed(fns[v], n);
        res[v].push(t[0]);
        res[`${v}_cpu`].push(t[1]);
      }
    }
    out[lib] = res;
  }
  lw.flush();
  out.stats = lw.stats();
  for (const c of clients) c.disconnect();
  return out;
}

async function main() {
  const a = process.argv.slice(2);
  if (a[0] === '--child') {
    child(a[1], Number(a[2]), a[3], Number(a[4]));
    return;
  }
  const [port, sink, rounds, n, mode] = [Number(a[0]), a[1], Number(a[2]), Number(a[3]), a[4] || 'one'];
  if (mode !== 'each' && mode !== 'one') throw new Error(`mode: each or one, not ${mode}`);
  const out = mode === 'each' ? await eachProcess(port, sink, rounds, n) : await oneProcess(port, sink, rounds, n);
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
