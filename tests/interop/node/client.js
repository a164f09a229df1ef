// SPDX-License-Identifier: BSD-3-Clause
// node-redlock and redis-semaphore driven by the scenario protocol of
// tests/interop/README.md.  argv: redis://127.0.0.1:PORT [more redis URLs for
// a multi-node redlock].  Kinds: redlock (Redlock over every URL given),
// mutex (redis-semaphore Mutex), semaphore (redis-semaphore Semaphore,
// limit=N).  Ops: lock [lease=ms] (blocking), trylock, unlock.
'use strict';
const readline = require('readline');
const Redis = require('ioredis');
const Redlock = require('redlock');
const { Mutex, Semaphore } = require('redis-semaphore');

const urls = process.argv.slice(2);
const clients = urls.map((u) => new Redis(u, { maxRetriesPerRequest: 2 }));
const redis = clients[0];
const held = new Map();       // actor/kind/name -> lock object
const chains = new Map();     // actor -> promise of its last command

function emit(actor, op, kind, name, ok, info) {
  process.stdout.write(JSON.stringify({ t: Date.now(), actor, op, kind, name, ok, info }) + '\n');
}

async function run(actor, op, kind, name, opt) {
  const lease = Number(opt.lease || 30000);
  const id = `${actor}/${kind}/${name}`;
  if (op === 'lock' || op === 'trylock') {
    const blocking = op === 'lock';
    if (kind === 'redlock') {
      const rl = new Redlock(clients, { retryCount: blocking ? 100000 : 0,
      });
      const lk = await rl.lock(name, lease);
      held.set(id, lk);
      return `value=${lk.value}`;
    }
    let lk;
    const o = { lockTimeout: lease, acquireTimeout: blocking ? 600000 : 1 };
    if (kind === 'mutex') lk = new Mutex(redis, name, o);
    else if (kind === 'semaphore') lk = new Semaphore(redis, name, Number(opt.limit || 2), o);
    else throw new Error(`unknown kind ${kind}`);
    if (blocking) await lk.acquire();
    else if (!(await lk.tryAcquire())) throw new Error('busy');
    held.set(id, lk);
    return `identifier=${lk.identifier}`;
  }
  if (op === 'unlock') {
    const lk = held.get(id);
    if (!lk) throw new Error('not held by this actor');
    held.delete(id);
    if (kind === 'redlock') await lk.unlock();
    else await lk.release();
    return 'released';
  }
  throw new Error(`unknown op ${op}`);
}

async function main() {
  await Promise.all(clients.map((c) => c.ping()));
  const ver = (p) => require(`${p}/package.json`).version;
  emit('-', 'ready', '-', '-', true,
    `redlock ${ver('redlock')} redis-semaphore ${ver('redis-semaphore')} ioredis ${ver('ioredis')}`);
  const rl = readline.createInterface({ input: process.stdin });
  for await (const raw of rl) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    if (line === 'quit') break;
    const w = line.split(/\s+/);
    if (w.length < 4) { emit('-', 'error', '-', '-', false, `want ACTOR OP KIND NAME: ${line}`); continue; }
    const opt = {};
    for (const x of w.slice(4)) { const i = x.indexOf('='); if (i > 0) opt[x.slice(0, i)] = x.slice(i + 1); }
    const prev = chains.get(w[0]) || Promise.resolve();
    chains.set(w[0], prev.then(() => run(w[0], w[1], w[2], w[3], opt)
      .then((info) => emit(w[0], w[1], w[2], w[3], true, info),
        (e) => emit(w[0], w[1], w[2], w[3], false, `${e.name}: ${e.message}`))));
  }
  await Promise.all(chains.values());
  clients.forEach((c) => c.disconnect());
  process.exit(0);
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
