// SPDX-License-Identifier: BSD-3-Clause
// Environment parsing, the bounded queue, batching and signing on the wire,
// failed sends, and the process never kept alive (loopback UDP, no agent,
// no Redis).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const dgram = require('node:dgram');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const config = require('../lib/config');
const { Reporter } = require('../lib/reporter');
const wire = require('../lib/wire');

process.removeAllListeners('warning');
process.on('warning', () => {});

function sink() {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    s.msgs = [];
    s.on('message', (m) => s.msgs.push(m));
    s.bind(0, '127.0.0.1', () => resolve(s));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('destinations', () => {
  assert.deepStrictEqual(config.splitDestinations('127.0.0.1:9717, [::1]:9718,bad,host:0,x:99999,a:1'),
    [{ host: '127.0.0.1', port: 9717 }, { host: '::1', port: 9718 }, { host: 'a', port: 1 }]);
  const many = Array.from({ length: 12 }, (_, i) => `h${i}:1`).join(',');
  assert.strictEqual(config.splitDestinations(many).length, 8);
});

test('environment', () => {
  assert.strictEqual(config.load({}, { LOCKWATCH_SAMPLES: 'off' }).enabled, false);
  assert.strictEqual(config.load({}, { LOCKWATCH_SAMPLES: '' }).enabled, false);
  const c = config.load({}, {});
  assert.deepStrictEqual(c.destinations, [{ host: '127.0.0.1', port: 9717 }]);
  assert.strictEqual(c.process, `${os.hostname()}:${process.pid}`);
  assert.strictEqual(config.load({}, { LOCKWATCH_OWNER: 'pod-7' }).process, `pod-7:${process.pid}`);
  assert.notStrictEqual(config.load({}, { LOCKWATCH_OWNER: 'x'.repeat(201) }).process, 'x'.repeat(201));
  assert.strictEqual(config.load({ samples: 'off' }, { LOCKWATCH_SAMPLES: '1.2.3.4:5' }).enabled, false);
});

// A trial: `OFF` was taken for a destination (skipped with a warning), and
// LOCKWATCH_KEY_FILE set but empty sent unsigned datagrams silently.
test('OFF is off, without a word; a key file variable set but empty is said once', async () => {
  const said = [];
  const onWarning = (w) => said.push(w.message);
  process.on('warning', onWarning);
  for (const v of ['OFF', ' Off ']) assert.strictEqual(config.load({}, { LOCKWATCH_SAMPLES: v }).enabled, false);
  await sleep(20);
  assert.deepStrictEqual(said.filter((m) => /off/i.test(m)), []);
  const c = config.load({}, { LOCKWATCH_SAMPLES: '127.0.0.1:9', LOCKWATCH_KEY_FILE: '' });
  // blank is empty too (a red-team: "  " was then opened as a file)
  assert.strictEqual(config.load({}, { LOCKWATCH_SAMPLES: '127.0.0.1:9', LOCKWATCH_KEY_FILE: '  ' }).keyFile, null);
  config.load({}, { LOCKWATCH_SAMPLES: 'off', LOCKWATCH_KEY_FILE: '' });
  config.load({}, { LOCKWATCH_SAMPLES: '127.0.0.1:9' });
  await sleep(20);
  process.removeListener('warning', onWarning);
  assert.deepStrictEqual([c.enabled, c.keyFile], [true, null]);
  assert.deepStrictEqual(said.filter((m) => m.includes('LOCKWATCH_KEY_FILE')),
    ['LOCKWATCH_KEY_FILE is set but empty; datagrams go unsigned',
      'LOCKWATCH_KEY_FILE is set but empty; datagrams go unsigned']);
});

// A worker thread has its own module state, party counter included: its
// owners must not be the main thread's (`host:pid/1` in both).
test('a worker thread is a process part of its own', async () => {
  const { Worker } = require('node:worker_threads');
  const cfgPath = require.resolve('../lib/config');
  const src = `const { parentPort } = require('node:worker_threads');
    const c = require(${JSON.stringify(cfgPath)});
    parentPort.postMessage([c.load({}, {}).process, c.load({}, { LOCKWATCH_OWNER: 'pod-7' }).process]);`;
  const w = new Worker(src, { eval: true });
  const id = w.threadId;   // -1 once it has ended
  const [dflt, named] = await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
  await w.terminate();
  assert.strictEqual(dflt, `${os.hostname()}:${process.pid}.w${id}`);
  assert.strictEqual(named, `pod-7:${process.pid}.w${id}`);
  assert.notStrictEqual(dflt, config.load({}, {}).process);
});

test('key file', async () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'lwrep-'));
  const f = path.join(d, 'k');
  fs.writeFileSync(f, '0123456789abcdef0123\r\n\n');
  // load() only names it: the reporter reads it when it starts (readKey)
  const c = config.load({}, { LOCKWATCH_KEY_FILE: f });
  assert.deepStrictEqual([c.enabled, c.keyFile, c.key], [true, f, null]);
  assert.strictEqual((await config.readKey(f)).toString(), '0123456789abcdef0123');
  fs.writeFileSync(f, 'short\n');
  assert.strictEqual(await config.readKey(f), null);
  assert.strictEqual(await config.readKey(path.join(d, 'none')), null);
  // the first line only, read no further than a longest key needs
  fs.writeFileSync(f, 'k'.repeat(4096) + '\r\n' + 'x'.repeat(10000));
  assert.strictEqual((await config.readKey(f)).toString(), 'k'.repeat(4096));
  fs.writeFileSync(f, 'k'.repeat(4096) + '\r');
  assert.strictEqual((await config.readKey(f)).toString(), 'k'.repeat(4096));
  fs.writeFileSync(f, 'k'.repeat(4097) + '\n');
  assert.strictEqual(await config.readKey(f), null);
  fs.writeFileSync(f, 'k'.repeat(100000));
  assert.strictEqual(await config.readKey(f), null);
  fs.rmSync(d, { recursive: true });
});

test('a key file that cannot be read turns the reporter off once it is tried, its queued lines counted', async () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'lwrep-'));
  const r = new Reporter(config.load({ samples: '127.0.0.1:9', keyFile: path.join(d, 'none') }), { flushMs: 10000 });
  assert.strictEqual(r.enabled, true);
  r.put(['wait', 'k', 1, 'ok']);
  await r.ready();
  assert.strictEqual(r.enabled, false);
  assert.deepStrictEqual([r.stats().queued, r.stats().droppedSendFailed, r.stats().pending], [1, 1, 0]);
  r.put(['wait', 'k', 1, 'ok']);
  assert.strictEqual(r.stats().queued, 1);
  r.close();
  fs.rmSync(d, { recursive: true });
});

async function reporterTo(s, extra = {}, opts = {}) {
  const { port } = s.address();
  const r = new Reporter({ enabled: true, destinations: [{ host: '127.0.0.1', port }], key: null,
    process: 'h:1', ...extra }, { flushMs: 10000, ...opts });
  await r.ready();
  return r;
}

test('batches lines into datagrams, 8192 bytes to a loopback agent', async () => {
  const s = await sink();
  const r = await reporterTo(s);
  for (let i = 0; i < 1000; i++) r.put(['wait', `lock:k:${i}`, i, 'ok']);
  r.put(['wait', 'x'.repeat(9000), 1, 'ok']);    // longer than a datagram: alone
  r.put(['wait', 'lock:k:last', 1, 'ok']);
  r.flush();
  await sleep(100);
  const lines = Buffer.concat(s.msgs).toString().trim().split('\n');
  const sizes = s.msgs.map((m) => m.length);
  assert.ok(sizes.length >= 4, sizes);
  assert.ok(sizes.filter((n) => n > 8192).length === 1 && sizes.some((n) => n > 8000 && n <= 8192), sizes);
  assert.ok(s.msgs.every((m) => m[m.length - 1] === 0x0a));
  assert.strictEqual(lines.length, 1002);
  assert.strictEqual(lines[5], 'lw1 wait lock:k:5 5 ok');
  assert.strictEqual(lines[1000], `lw1 wait ${'x'.repeat(9000)} 1 ok`);
  assert.strictEqual(lines[1001], 'lw1 wait lock:k:last 1 ok');
  const st = r.stats();
  assert.deepStrictEqual([st.queued, st.sent, st.datagrams], [1002, 1002, s.msgs.length]);
  r.close();
  s.close();
});

test('a datagram buffer is reused only once its send is done, and never changes a sent line', async () => {
  const s = await sink();
  const r = await reporterTo(s);
  const [fast, slow] = [Buffer.allocUnsafe, Buffer.allocUnsafeSlow];
  let made = 0;
  Buffer.allocUnsafe = (n) => { made++; return fast(n); };
  Buffer.allocUnsafeSlow = (n) => { made++; return slow(n); };
  try {
    let n = 0;
    for (let batch = 0; batch < 20; batch++) {
      // about three datagrams a batch, sent while the next batch is written
      // when the sends have not completed yet, then after they have
      for (let i = 0; i < 900; i++) r.put(['wait', `lock:b${batch}:${i}`, n++, 'ok']);
      r.flush();
      if (batch % 2 === 1) await sleep(5);
    }
    r.flush();
    await sleep(200);
    const got = Buffer.concat(s.msgs).toString('latin1').trim().split('\n');
    assert.strictEqual(got.length, n);
    let k = 0;
    for (let batch = 0; batch < 20; batch++) {
      for (let i = 0; i < 900; i++, k++) assert.strictEqual(got[k], `lw1 wait lock:b${batch}:${i} ${k} ok`);
    }
    assert.ok(s.msgs.length >= 60, s.msgs.length);
    assert.ok(made < s.msgs.length / 2, `${made} buffers made for ${s.msgs.length} datagrams`);
  } finally {
    [Buffer.allocUnsafe, Buffer.allocUnsafeSlow] = [fast, slow];
    r.close();
    s.close();
  }
});

test("the lock path's bytes are the lines of its events", async () => {
  const { Holding, reportStart, reportAcquire } = require('../lib/holding');
  const s = await sink();
  const r = await reporterTo(s, { process: 'web 1:42' });
  const evs = [];
  r.tap = (ev) => evs.push(ev);
  const keys = ['lock:order:1', 'lock:café job', '100%', 'lock:k3', 'lock:order:1'];
  const holders = ['tok-1', null, '-', Buffer.from([0, 0xff, 0x20]), 'x y'];
  const parties = [7, 0, 2 ** 52, 'pod 7/a', 1.5];
  for (let i = 0; i < 300; i++) {
    const j = i % 5;
    keys[3] = i === 3 ? 'k'.repeat(9000) : 'lock:k3';   // once: a line longer than a datagram
    holders[0] = i % 7 === 0 ? 'tok-' + 'h'.repeat(60 + (i % 10)) : 'tok-1';   // both sides of 64 bytes
    reportStart(r, keys[j], parties[j], holders[(j + 1) % 5]);
    reportAcquire(r, keys[j], parties[j], holders[j], i % 2 === 0, 1000, 1000 + i * 0.0137 + (j === 3 ? 1e12 : 0),
      ['ok', 'timeout', 'error'][i % 3]);
    const h = new Holding(keys[j], parties[j], holders[j], 5, i % 2 ? 1000 : null);
    // a line the lock path does not keep (lost) goes out after the events kept before it
    if (i % 7 === 3) h.reportLost(r, 'renewal', 6 + i, 2000 + i);
    h.reportHold(r, 5 + i * 0.5 - (j === 4 ? 1e6 : 0));
  }
  r.flush();
  await sleep(200);
  const want = [];
  for (const e of evs) wire.emit(e, r.prefix, want);
  const got = Buffer.concat(s.msgs).toString('latin1').split('\n');
  assert.strictEqual(got.pop(), '');
  assert.strictEqual(got.length, want.length);
  assert.deepStrictEqual(got, want);
  assert.ok(got.includes('lw1 waiting lock:caf%C3%A9%20job web%201:42/0 %2D start'), got.slice(0, 8));
  assert.ok(got.filter((l) => l.startsWith('lw1 lost ')).length === 43, got.length);
  assert.ok(s.msgs.every((m) => m.length <= 8192 || m.toString('latin1').split('\n').length === 2));
  r.close();
  s.close();
});

test('the lock path fills datagrams of at most 1432 bytes, with whole lines', () => {
  const r = new Reporter({ enabled: true, destinations: [], key: null, process: 'h:1' }, { start: false });
  for (let i = 0; i < 200; i++) {
    r.waitEndLine('lock:k' + (i % 3), 1000 + i, 'ok', i, 'tok-' + i);
    r.holdLine('lock:k' + (i % 3), 2000 + i, i, 'tok-' + i);
  }
  r._drain();
  r._fullDatagram();
  const text = r._full.map((d) => d.toString('latin1'));
  assert.ok(r._full.length > 1 && r._full.every((d) => d.length <= 1432), r._full.map((d) => d.length));
  assert.ok(text.every((t) => t.endsWith('\n')));
  const lines = text.join('').split('\n');
  lines.pop();
  assert.strictEqual(lines.length, 400);
  assert.strictEqual(lines[398], 'lw1 wait lock:k1 1199 ok h:1/199 tok-199');
  assert.strictEqual(lines[399], 'lw1 hold lock:k1 2199 h:1/199 tok-199');
});

test('to a destination not on loopback: datagrams of at most 1432 bytes, signed too', () => {
  const key = Buffer.alloc(16, 1);
  for (const k of [null, key]) {
    // not started: no destination settled yet, so the budget is 1432's
    const r = new Reporter({ enabled: true, destinations: [], key: k, process: 'h:1' }, { start: false });
    for (let i = 0; i < 30; i++) r.line('x'.repeat(100));
    r.line('b'.repeat(2000));
    r.line('c');
    r._fullDatagram();
    const dgs = r._full;
    const sizes = dgs.map((d) => (k ? wire.sign(k, d, 1767225600) : d).length);
    assert.ok(sizes.filter((n) => n > 1432).length === 1 && dgs.some((d) => d.length === 2001), sizes);
    assert.ok(sizes[0] <= 1432 && sizes[0] + 101 > 1432, sizes);   // filled as far as a line fits
    assert.strictEqual(dgs.reduce((n, d) => n + d.toString().split('\n').length - 1, 0), 32);
    assert.deepStrictEqual(r._fullN.reduce((a, b) => a + b, 0), 32);
  }
});

test('datagrams are 8192 bytes only when every destination is loopback', () => {
  const { isLoopback } = require('../lib/reporter');
  for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) assert.ok(isLoopback(a), a);
  for (const a of ['10.0.0.1', '192.168.1.1', '::2', 'fe80::1', '1.127.0.0']) assert.ok(!isLoopback(a), a);
});

test('a lost line is sent at once, not at the interval', async () => {
  const { Holding } = require('../lib/holding');
  const s = await sink();
  const r = await reporterTo(s);            // a 10 s interval
  r.put(['wait', 'lock:k:1', 5, 'ok']);
  new Holding('lock:k:1', '1', 'tok-1', 0, null).reportLost(r, 'renewal');
  await sleep(200);
  const lines = Buffer.concat(s.msgs).toString().trim().split('\n');
  assert.strictEqual(lines.length, 2);
  assert.ok(lines[1].startsWith('lw1 lost lock:k:1 '), lines[1]);
  r.close();
  s.close();
});

test('signs every datagram', async () => {
  const s = await sink();
  const key = Buffer.from('lockwatch test key: not a secret');
  const r = await reporterTo(s, { key });
  for (let i = 0; i < 500; i++) r.put(['hold', 'lock:k', i, 1, 'tok']);
  r.flush();
  await sleep(100);
  assert.ok(s.msgs.length > 1);
  for (const m of s.msgs) {
    assert.ok(m.length <= 8192);
    const nl = m.indexOf(0x0a);
    const unix = Number(m.subarray(0, nl).toString().split(' ')[3]);
    assert.deepStrictEqual(wire.sign(key, m.subarray(nl + 1), unix), m);
  }
  r.close();
  s.close();
});

test('a full queue drops and counts', async () => {
  const s = await sink();
  const r = await reporterTo(s, {}, { capacity: 10 });
  for (let i = 0; i < 25; i++) r.put(['wait', 'k', i, 'ok']);
  assert.strictEqual(r.stats().droppedQueueFull, 15);
  r.flush();
  await sleep(50);
  assert.strictEqual(r.stats().sent, 10);
  r.close();
  s.close();
});

// A trial: "127.0.0.1:P,localhost:P" counted every sample twice.
test('two names of one agent are sent to once', async () => {
  const s = await sink();
  const port = s.address().port;
  const said = [];
  const onWarning = (w) => said.push(w.message);
  process.on('warning', onWarning);
  const r = new Reporter(config.load({ samples: `127.0.0.1:${port}, 127.0.0.1:${port}` }), { flushMs: 10000 });
  await r.ready();
  r.put(['wait', 'lock:once', 1, 'ok']);
  r.flush();
  await sleep(100);
  process.removeListener('warning', onWarning);
  assert.strictEqual(s.msgs.length, 1);
  assert.ok(said.some((m) => m.includes(`127.0.0.1:${port} is 127.0.0.1:${port} again; sending there once`)), said);
  r.close();
  s.close();
});

test('an unresolvable destination turns the reporter off, never throws', async () => {
  const r = new Reporter(config.load({ samples: 'no-such-host.invalid:9717' }), { flushMs: 10000 });
  r.put(['wait', 'k', 1, 'ok']);
  await r.ready();
  assert.strictEqual(r.enabled, false);
  assert.strictEqual(r.stats().droppedSendFailed, 1);   // queued meanwhile
  r.put(['wait', 'k', 1, 'ok']);
  r.flush();
  r.close();
});

test('a closed port: sends fail quietly, each line counted once', async () => {
  const s = await sink();
  const { port } = s.address();
  s.close();
  const r = new Reporter({ enabled: true, destinations: [{ host: '127.0.0.1', port }], key: null, process: 'h' },
    { flushMs: 10000 });
  await r.ready();
  for (let i = 0; i < 20; i++) { r.put(['wait', 'k', 1, 'ok']); r.flush(); await sleep(10); }
  await sleep(20);
  let st = r.stats();
  assert.strictEqual(st.queued, 20);
  // every line counted once: sent (the kernel took it) or dropped (a send
  // that failed); the port's refusals (ICMP, as 'error' events) add nothing
  assert.strictEqual(st.sent + st.droppedSendFailed, 20, JSON.stringify(st));
  // Linux (docs/reporters.md "Never throw"): a refusal the event loop read
  // before the next send fails nothing; within a burst the next send gets
  // it and fails (its datagram not sent)
  if (process.platform === 'linux') assert.strictEqual(st.droppedSendFailed, 0, JSON.stringify(st));
  for (let i = 0; i < 2000; i++) r.put(['wait', 'k'.repeat(100), 1, 'ok']);
  r.flush();   // about 30 full datagrams, sent back to back
  await sleep(20);
  st = r.stats();
  assert.strictEqual(st.sent + st.droppedSendFailed, 2020, JSON.stringify(st));
  if (process.platform === 'linux') assert.ok(st.droppedSendFailed > 0 && st.sent > 20, JSON.stringify(st));
  r.close();
});

test('the reporter never keeps the process alive', () => {
  const idx = path.join(__dirname, '..', 'index.js');
  const t0 = Date.now();
  execFileSync(process.execPath, ['-e', `
    const lw = require(${JSON.stringify(idx)});
    const r = lw.configure({ samples: '127.0.0.1:9' });
    r.put(['wait', 'k', 1, 'ok']);`], { timeout: 5000 });
  assert.ok(Date.now() - t0 < 3000);
});

test('process.exit() still sends what is queued', async () => {
  const s = await sink();
  const idx = path.join(__dirname, '..', 'index.js');
  const { execFile } = require('node:child_process');
  await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', `
      const lw = require(${JSON.stringify(idx)});
      const r = lw.configure({ samples: '127.0.0.1:${s.address().port}' });
      r.ready().then(() => {
        r.put(['wait', 'lock:exit:1', 7, 'timeout']);
        process.exit(1);       // a script giving up: no beforeExit
      });`], { timeout: 5000 }, (err) => (err && err.code !== 1 ? reject(err) : resolve()));
  });
  try {
    for (let i = 0; i < 50 && s.msgs.length === 0; i++) await sleep(10);
    assert.strictEqual(Buffer.concat(s.msgs).toString(), 'lw1 wait lock:exit:1 7 timeout\n');
  } finally {
    s.close();
  }
});
