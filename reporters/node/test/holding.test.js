// SPDX-License-Identifier: BSD-3-Clause
// Owner parties: runAs() routines, nested and overlapping (no Redis).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { party, runAs, als } = require('../lib/holding');

const tick = () => new Promise((r) => setImmediate(r));

test('an acquire inside runAs() takes its party across awaits; outside, a fresh number', async () => {
  const a = party();
  const b = party();
  assert.strictEqual(typeof a, 'number');
  assert.strictEqual(b, a + 1);
  const seen = await runAs('job-1', async () => {
    const x = party();
    await tick();
    return [x, party()];
  });
  assert.deepStrictEqual(seen, ['job-1', 'job-1']);
  assert.strictEqual(typeof party(), 'number');
});

test('overlapping routines keep their parties when one settles first', async () => {
  let release;
  const gate = new Promise((r) => { release = r; });
  const long = runAs('long', async () => {
    await gate;
    await tick();
    return party();
  });
  assert.strictEqual(await runAs('short', async () => { await tick(); return party(); }), 'short');
  release();
  assert.strictEqual(await long, 'long');
  assert.strictEqual(typeof party(), 'number');
});

test('runAs() returns and throws as fn does, and stops looking once nothing runs', async () => {
  assert.strictEqual(runAs(3, () => party() + 1), 4);
  assert.throws(() => runAs(3, () => { throw new Error('sync'); }), /sync/);
  await assert.rejects(runAs(3, async () => { throw new Error('async'); }), /async/);
  assert.strictEqual(runAs(5, () => runAs(6, () => party()) + party()), 11);   // nested
  // nothing runs: the storage is disabled (no async hooks for every promise)
  assert.strictEqual(als.getStore(), undefined);
  if ('enabled' in als) assert.strictEqual(als.enabled, false);
  assert.strictEqual(typeof party(), 'number');
});
