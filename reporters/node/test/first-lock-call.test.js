// SPDX-License-Identifier: BSD-3-Clause
// The first lock call starts the reporter (docs/reporters.md
// "Configuration"): it never waits for the key file to be read or the
// agent's name to be resolved.  Lines queue (bounded) until the settings
// apply, then go out (signed when there is a key); a key file that turns
// out bad turns reporting off with one warning, the queued lines counted
// droppedSendFailed.  A named pipe with no writer stands for a key file on
// a hung NFS mount; a dns.lookup that has not answered for a resolver that
// does not.  No Redis: node-redlock 4 with a server of its own shape when
// NODE_PATH finds it, else a fake of the same shape.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const dgram = require('node:dgram');
const dns = require('node:dns');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, spawn } = require('node:child_process');
const reporter = require('../lib/reporter');
const { instrumentRedlock } = require('../lib/redlock');
const wire = require('../lib/wire');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const INDEX = path.join(__dirname, '..', 'index.js');
const KEY = 'first lock call: a test key, not a secret';

function sink() {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    s.msgs = [];
    s.on('message', (m) => s.msgs.push(m));
    s.bind(0, '127.0.0.1', () => resolve(s));
  });
}

// redlock(lw): a redlock instance, instrumented by lw: node-redlock 4 with a
// server that sets every key (the lock and unlock scripts' reply is the
// count of keys), else a fake with the methods the wrapper calls.  Run in
// this process, and, as its source, in a node of its own.
function redlock(lw) {
  let Redlock = null;
  try { Redlock = require('redlock'); } catch (e) { if (e.code !== 'MODULE_NOT_FOUND') throw e; }
  if (Redlock !== null) {
    const server = { evalsha(hash, args, cb) { setImmediate(() => cb(null, args[0])); } };
    return lw.instrumentRedlock(new Redlock([server], { retryCount: 0 }));
  }
  class FakeRedlock {
    constructor() { this.retryCount = 0; }
    _lock() {}
    lockWithOptions(resource, ttl) {
      const lock = { redlock: this, resource, value: 'v-' + resource, expiration: Date.now() + ttl };
      lock.unlock = () => this.unlock(lock);
      return Promise.resolve(lock);
    }
    unlock() { return Promise.resolve(); }
  }
  return lw.instrumentRedlock(new FakeRedlock());
}

// Run script in a node of its own with env; resolves {out, err, code,
// signal} once it exits, its stdout lines passed to onLine as they come.  A
// guard (not a measure: the script needs a fraction of it) ends a script
// that hangs.
function runNode(script, env, onLine) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => {
      const before = out.split('\n').length - 1;
      out += b;
      const lines = out.split('\n');
      for (let i = before; i < lines.length - 1; i++) onLine(lines[i], child);
    });
    child.stderr.on('data', (b) => { err += b; });
    const guard = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      resolve({ out, err, code, signal });
    });
  });
}

function fifo() {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'lwrep-first-'));
  const f = path.join(d, 'key');
  execFileSync('mkfifo', [f]);
  return { d, f };
}

// The datagrams' lines, each datagram checked to be signed with key.
function signedLines(msgs, key) {
  const lines = [];
  for (const m of msgs) {
    const nl = m.indexOf(0x0a);
    const head = m.subarray(0, nl).toString().split(' ');
    assert.strictEqual(head[1], 'mac', `a datagram not signed: ${m}`);
    assert.deepStrictEqual(wire.sign(key, m.subarray(nl + 1), Number(head[3])), m, 'signed with the key');
    lines.push(...m.subarray(nl + 1).toString().trim().split('\n'));
  }
  return lines;
}

const FIRST_CALL = `
  const lw = require(${JSON.stringify(INDEX)});
  ${redlock}
  (async () => {
    const rl = redlock(lw);
    const lock = await rl.acquire('lock:first:1', 10000);   // the first lock call
    await lock.unlock();
    console.log(JSON.stringify({ released: true, enabled: lw.reporter() !== null, stats: lw.stats() }));
    // nothing else: the process ends once the reporter is done
    process.on('exit', () => console.log(JSON.stringify({ exit: true, stats: lw.stats() })));
  })();`;

// FIRST_CALL in a node of its own, sending to sink s, with a named pipe
// as LOCKWATCH_KEY_FILE that gets keyText only once the first acquire and
// release have completed (its read never returns before: the pipe has no
// writer).  Resolves {released: what the script printed then (with
// seenBefore: the datagrams s had by then), exit: what it printed at its
// exit, err: its stderr}.
async function firstCallBeforeTheKey(s, keyText, env = {}) {
  const { d, f } = fifo();
  let released = null;
  let wrote = null;
  try {
    const r = await runNode(FIRST_CALL, { LOCKWATCH_SAMPLES: `127.0.0.1:${s.address().port}`, LOCKWATCH_KEY_FILE: f, ...env },
      (line) => {
        const m = JSON.parse(line);
        if (!m.released) return;
        released = { ...m, seenBefore: s.msgs.length };
        // the key now: opening the pipe for writing completes once the
        // reporter's read has it open
        wrote = fs.promises.writeFile(f, keyText);
      });
    assert.ok(released !== null,
      `the first acquire and release did not complete while the key file had no writer (${r.signal || r.code}): ${r.err}`);
    await wrote;
    assert.strictEqual(r.code, 0, r.err);
    return { released, exit: JSON.parse(r.out.trim().split('\n').pop()), err: r.err };
  } finally {
    fs.rmSync(d, { recursive: true });
  }
}

test('the first acquire and release complete while the key file has no writer; the queued lines go out signed once the key is written', { skip: process.platform === 'win32' }, async () => {
  const s = await sink();
  try {
    const { released, exit } = await firstCallBeforeTheKey(s, KEY + '\n', { LOCKWATCH_OWNER: 'first-call' });
    // before the key: reporting on, the lines queued, nothing sent
    assert.strictEqual(released.enabled, true);
    assert.strictEqual(released.seenBefore, 0);
    assert.deepStrictEqual([released.stats.queued, released.stats.sent, released.stats.pending], [2, 0, 2]);
    // after it: the same lines, signed with it
    for (let i = 0; i < 100 && s.msgs.length === 0; i++) await sleep(20);
    const lines = signedLines(s.msgs, Buffer.from(KEY));
    assert.strictEqual(lines.length, 2, lines.join('\n'));
    assert.match(lines[0], /^lw1 wait lock:first:1 \d+ ok first-call:\d+\/\d+ \S+$/);
    assert.match(lines[1], /^lw1 hold lock:first:1 \d+ first-call:\d+\/\d+ \S+$/);
    assert.deepStrictEqual([exit.stats.queued, exit.stats.droppedQueueFull, exit.stats.droppedSendFailed], [2, 0, 0]);
  } finally {
    s.close();
  }
});

test('a key file found bad once read: reporting off with one warning, the queued lines counted droppedSendFailed', { skip: process.platform === 'win32' }, async () => {
  const s = await sink();
  try {
    const { released, exit, err } = await firstCallBeforeTheKey(s, 'short\n');   // under 16 bytes
    assert.deepStrictEqual([released.enabled, released.stats.pending], [true, 2]);
    assert.deepStrictEqual([exit.stats.queued, exit.stats.sent, exit.stats.droppedSendFailed, exit.stats.pending],
      [2, 0, 2, 0]);
    const warnings = err.split('\n').filter((l) => l.includes('LOCKWATCH_KEY_FILE'));
    assert.strictEqual(warnings.length, 1, err);
    assert.match(warnings[0], /16 to 4096 bytes; reporting off/);
    assert.strictEqual(s.msgs.length, 0);
  } finally {
    s.close();
  }
});

// A resolver that has not answered: the lookup's callback held back (an
// address passes: dgram's connect() looks it up too).
function holdLookups() {
  const orig = dns.lookup;
  const held = [];
  dns.lookup = (host, ...rest) => {
    if (net.isIP(host)) return orig(host, ...rest);
    held.push({ host, cb: rest[rest.length - 1] });
  };
  return { held, restore: () => { dns.lookup = orig; } };
}

// One acquire and release of key, through redlock() in this process.
async function lockCycle(key) {
  const lock = await redlock({ instrumentRedlock }).acquire(key, 10000);
  await lock.unlock();
}

test("the agent's name resolves off the lock path: lines queue until the lookup answers", async () => {
  const s = await sink();
  const dnsHeld = holdLookups();
  try {
    const r = reporter.configure({ samples: `lockwatch-agent.test:${s.address().port}` });
    await lockCycle('lock:dns:1');   // the first lock call
    assert.deepStrictEqual(dnsHeld.held.map((h) => h.host), ['lockwatch-agent.test']);
    assert.strictEqual(reporter.get(), r);
    r.flush();
    assert.deepStrictEqual([r.stats().pending, r.stats().sent], [2, 0]);
    dnsHeld.held[0].cb(null, '127.0.0.1', 4);
    await r.ready();
    r.flush();
    for (let i = 0; i < 100 && s.msgs.length === 0; i++) await sleep(20);
    const lines = Buffer.concat(s.msgs).toString().trim().split('\n');
    assert.strictEqual(lines.length, 2, lines.join('\n'));
    assert.match(lines[0], /^lw1 wait lock:dns:1 /);
    assert.match(lines[1], /^lw1 hold lock:dns:1 /);
    r.close();
  } finally {
    dnsHeld.restore();
    s.close();
  }
});

test('a reporter closed before its settings apply drops what it queued (counted) and sends nothing after', async () => {
  const s = await sink();
  const dnsHeld = holdLookups();
  try {
    const r = reporter.configure({ samples: `lockwatch-agent.test:${s.address().port}` });
    await lockCycle('lock:closed:1');
    const next = reporter.configure({ samples: 'off' });   // closes r
    assert.strictEqual(reporter.get(), null);
    assert.deepStrictEqual([r.stats().queued, r.stats().pending, r.stats().droppedSendFailed], [2, 0, 2]);
    dnsHeld.held[0].cb(null, '127.0.0.1', 4);
    await r.ready();
    r.flush();
    await sleep(100);
    assert.strictEqual(s.msgs.length, 0);
    assert.strictEqual(r.stats().sent, 0);
    next.close();
  } finally {
    dnsHeld.restore();
    s.close();
  }
});

test('ready() resolves within its bound while the settings are still to apply, the reporter enabled', async () => {
  const dnsHeld = holdLookups();
  try {
    const r = reporter.configure({ samples: 'lockwatch-agent.test:9' }, { readyMs: 1 });
    // a guard, not a measure: ready() is bounded by readyMs
    const got = await Promise.race([r.ready().then(() => 'ready'), sleep(10000).then(() => 'still waiting')]);
    assert.strictEqual(got, 'ready');
    assert.strictEqual(r.enabled, true);
    assert.strictEqual(reporter.get(), r);
    r.close();
  } finally {
    dnsHeld.restore();
  }
});
