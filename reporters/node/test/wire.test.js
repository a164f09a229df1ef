// SPDX-License-Identifier: BSD-3-Clause
// lw1 encoding, batching and signing (no Redis, no network).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const wire = require('../lib/wire');

const KEY = Buffer.from('lockwatch test key: not a secret');
const BODY = 'lw1 waiting lock:order:1001 web-1%3A4242%2F7 ' +
  'lw1:web-1:4242:7:1767225599000:00112233aabbccdd start\n' +
  'lw1 wait lock:order:1001 1500 ok\n';

test('the test vector of docs/line-protocol.md', () => {
  const d = wire.sign(KEY, Buffer.from(BODY), 1767225600);
  assert.strictEqual(d.toString(), 'lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225600\n' + BODY);
  assert.strictEqual(d.toString().split('\n')[0].length + 1, wire.MAC_LINE_LEN);
  const lines = [
    wire.line(['waiting', 'lock:order:1001', 7, 'lw1:web-1:4242:7:1767225599000:00112233aabbccdd', 'start'],
      'web-1%3A4242%2F'),
    wire.line(['wait', 'lock:order:1001', 1500, 'ok'], 'x/'),
  ];
  assert.strictEqual(lines.join('\n') + '\n', BODY);
});

test('percent-encoding', () => {
  assert.strictEqual(wire.pct('lock:a b%c'), 'lock:a%20b%25c');
  assert.strictEqual(wire.pct('k\u00e9'), 'k%C3%A9');
  assert.strictEqual(wire.pct(Buffer.from([0, 0x7f, 0x7e])), '%00%7F~');
  assert.strictEqual(wire.pct(42), '42');
  assert.strictEqual(wire.holderField(null), '-');
  assert.strictEqual(wire.holderField('-'), '%2D');
});

test('lines', () => {
  assert.strictEqual(wire.line(['hold', 'k', 12.4, 3, 'tok'], 'h:1/'), 'lw1 hold k 12 h:1/3 tok');
  assert.strictEqual(wire.line(['lost', 'k', 3, 'tok', 99, null, 'renewal'], 'h:1/'),
    'lw1 lost k h:1/3 tok 99 - renewal');
  assert.strictEqual(wire.line(['lost', 'k', 3, 'tok', 99, 5, 'expired'], 'h:1/'),
    'lw1 lost k h:1/3 tok 99 5 expired');
  assert.strictEqual(wire.line(['wait', 'k', -3, 'timeout'], ''), 'lw1 wait k 0 timeout');
  assert.strictEqual(wire.line(['wait', 'k', 2 ** 60, 'ok'], ''), 'lw1 wait k 9007199254740992 ok');
  assert.throws(() => wire.line(['nope'], ''));
});

test('emit: an acquire call is its wait line, with owner and holder when it acquired or sent a start', () => {
  const out = [];
  wire.emit(['acquired', 'k', 3, 'tok', 15.4, 'timeout', true], 'h:1/', out);
  wire.emit(['acquired', 'k', 3, 'tok', 15.6, 'ok', false], 'h:1/', out);
  wire.emit(['acquired', 'k', 3, 'tok', 15.6, 'timeout', false], 'h:1/', out);
  wire.emit(['waiting', 'k', 3, null, 'start'], 'h:1/', out);
  wire.emit(['hold', 'k', 12, 3, 'tok'], 'h:1/', out);
  wire.emit(['lost', 'k', 3, 'tok', 99, null, 'renewal'], 'h:1/', out);
  assert.deepStrictEqual(out, ['lw1 wait k 15 timeout h:1/3 tok',
    'lw1 wait k 16 ok h:1/3 tok', 'lw1 wait k 16 timeout',
    'lw1 waiting k h:1/3 - start', 'lw1 hold k 12 h:1/3 tok',
    'lw1 lost k h:1/3 tok 99 - renewal']);
});

