// SPDX-License-Identifier: BSD-3-Clause
// The lw1 line protocol on the wire (docs/line-protocol.md): percent-encoding
// of keys, owners and holder ids, the text of each line (as a string, and
// as bytes written into a datagram's buffer for the lock path), and the
// `lw1 mac` signature.  Pure functions: the unit tests check them against
// the protocol's test vector; lib/reporter.js fills and sends datagrams.
'use strict';

const crypto = require('node:crypto');

const MAX_DATAGRAM = 1432;
// To a loopback address: the most the agent reads of one datagram
// (docs/line-protocol.md "Datagrams").
const LOOPBACK_DATAGRAM = 8192;
// "lw1 mac " + 32 hex + " " + unix seconds (10 digits until 2286) + "\n"
const MAC_LINE_LEN = 8 + 32 + 1 + 10 + 1;
const MAX_US = 9007199254740992;

const HEX = '0123456789ABCDEF';

// A string that needs no encoding: printable ASCII but '%' (a loop: a
// regular expression costs more on the lock path).
function plain(s) {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e || c === 0x25) return false;
  }
  return true;
}

// A field as bytes: printable ASCII but '%' stays, every other byte %XX.
function pct(v) {
  const s = typeof v === 'string' ? v : Buffer.isBuffer(v) ? null : String(v);
  if (s !== null && plain(s)) return s;
  const b = s !== null ? Buffer.from(s, 'utf8') : v;
  let out = '';
  for (const c of b) {
    if (c >= 0x21 && c <= 0x7e && c !== 0x25) out += String.fromCharCode(c);
    else out += '%' + HEX[c >> 4] + HEX[c & 15];
  }
  return out;
}

// A holder id: `-` when not known; an id that really is `-` as %2D.
function holderField(v) {
  if (v === null || v === undefined || v === '') return '-';
  if (v === '-') return '%2D';
  return pct(v);
}

function us(v) {
  if (!(v > 0)) return '0';
  return '' + (v < MAX_US ? Math.round(v) : MAX_US);
}

// One event (an array, see Reporter.put) as a line without its terminator.
// prefix: the encoded `<process>/` of owner ids.
function line(ev, prefix) {
  switch (ev[0]) {
    case 'wait':
      return `lw1 wait ${pct(ev[1])} ${us(ev[2])} ${ev[3]}`;
    case 'waitend':   // key, us, outcome, party, holder: the waiting end and the wait in one line
      return `lw1 wait ${pct(ev[1])} ${us(ev[2])} ${ev[3]} ${prefix}${pct(ev[4])} ${holderField(ev[5])}`;
    case 'hold':
      return `lw1 hold ${pct(ev[1])} ${us(ev[2])} ${prefix}${pct(ev[3])} ${holderField(ev[4])}`;
    case 'waiting':
      return `lw1 waiting ${pct(ev[1])} ${prefix}${pct(ev[2])} ${holderField(ev[3])} ${ev[4]}`;
    case 'lost':
      return `lw1 lost ${pct(ev[1])} ${prefix}${pct(ev[2])} ${holderField(ev[3])} ${us(ev[4])} ` +
        `${ev[5] === null || ev[5] === undefined ? '-' : us(ev[5])} ${ev[6]}`;
    default:
      throw new Error(`unknown event ${ev[0]}`);
  }
}

// The lock path's lines are written as bytes straight into a datagram's
// buffer (lib/reporter.js waitLine, waitEndLine, waitingLine, holdLine): no line string
// is built.  Fields that repeat are kept encoded as bytes and copied with
// one TypedArray set() each: keys in a map keyed by the raw key (bounded:
// emptied when full), behind the last key seen; owner parties that are
// counter numbers are written as digits, other parties (runAs) come from a
// map.  A holder id, new with each acquire, is kept as its encoded (ASCII)
// string, the last one seen (an acquire's waiting and wait lines and its
// hold name the same one), and written with latin1Write().
const CACHE_MAX = 4096;
const bytes = (s) => Buffer.from(s, 'latin1');
let keys = new Map();     // key -> encoded key (bytes)
let lastKey = null;
let lastKeyEnc = null;
let parties = new Map();  // party -> encoded party (bytes)
let lastHolder = null;
let lastHolderEnc = '-';

function encKey(key) {
  if (key === lastKey) return lastKeyEnc;
  let k = keys.get(key);
  if (k === undefined) {
    k = bytes(pct(key));
    if (keys.size >= CACHE_MAX) keys = new Map();
    keys.set(key, k);
  }
  lastKey = key;
  lastKeyEnc = k;
  return k;
}

// null: the party is a counter number, written as digits (writeDigits).
function encParty(party) {
  if (typeof party === 'number' && party >= 0 && party < MAX_US && Number.isInteger(party)) return null;
  let o = parties.get(party);
  if (o === undefined) {
    o = bytes(pct(String(party)));
    if (parties.size >= CACHE_MAX) parties = new Map();
    parties.set(party, o);
  }
  return o;
}

function encHolder(v) {
  if (v !== lastHolder) {
    lastHolderEnc = holderField(v);
    lastHolder = v;
  }
  return lastHolderEnc;
}

const WAIT = bytes('lw1 wait ');
const WAITING = bytes('lw1 waiting ');
const HOLD = bytes('lw1 hold ');
// An outcome as it ends a line: ` <outcome>`
const OUTCOME = { ok: bytes(' ok'), timeout: bytes(' timeout'), error: bytes(' error'), start: bytes(' start') };
const DIGITS_MAX = 16;    // MAX_US

// Bytes b at off; returns the end.  A loop for short fields (the line's
// head, a key, the owner prefix): TypedArray set() is a call into the
// runtime that cost more than the loop on the lock path.
const COPY_LOOP_MAX = 64;
function copyInto(buf, off, b) {
  const n = b.length;
  if (n > COPY_LOOP_MAX) {
    buf.set(b, off);
    return off + n;
  }
  for (let i = 0; i < n; i++) buf[off + i] = b[i];
  return off + n;
}

// An ASCII string (a holder id) at off; returns the end.  A loop for the
// usual length: a holder id is 20-40 characters, and latin1Write(), a call
// into the runtime, cost more than the loop in the lock path (about 0.4 us
// a call there, measured inside a real acquire + release).
const ASCII_LOOP_MAX = 64;
function writeAscii(buf, off, s) {
  const n = s.length;
  if (n > ASCII_LOOP_MAX) return off + buf.latin1Write(s, off);
  for (let i = 0; i < n; i++) buf[off + i] = s.charCodeAt(i);
  return off + n;
}

// A non-negative integer below 2^53 as decimal digits.
function writeDigits(buf, off, n) {
  let len = 1;
  for (let t = n; t >= 10; t = Math.floor(t / 10)) len++;
  let p = off + len;
  do {
    const q = Math.floor(n / 10);
    buf[--p] = 48 + n - q * 10;
    n = q;
  } while (n > 0);
  return off + len;
}

// Microseconds as us() writes them.
function writeUs(buf, off, v) {
  return writeDigits(buf, off, !(v > 0) ? 0 : v < MAX_US ? Math.round(v) : MAX_US);
}

// `<process>/<party>`: prefix the encoded `<process>/` (bytes), p
// encParty(party).
function writeOwner(buf, off, prefix, party, p) {
  off = copyInto(buf, off, prefix);
  return p === null ? writeDigits(buf, off, party) : copyInto(buf, off, p);
}

// The most bytes each line can take (its \n included), and its writer;
// k, h, p: encKey, encHolder, encParty; out: OUTCOME[outcome].
const waitMax = (k) => 9 + k.length + 1 + DIGITS_MAX + 8 + 1;
function writeWait(buf, off, k, us, out) {
  off = copyInto(buf, off, WAIT);
  off = copyInto(buf, off, k);
  buf[off++] = 32;
  off = writeUs(buf, off, us);
  off = copyInto(buf, off, out);
  buf[off++] = 10;
  return off;
}

const ownerMax = (prefix, p) => prefix.length + (p === null ? DIGITS_MAX : p.length);

// ` <owner> <holder>\n`, the end of the lines that name both.
function writeOwnerHolder(buf, off, prefix, party, p, h) {
  buf[off++] = 32;
  off = writeOwner(buf, off, prefix, party, p);
  buf[off++] = 32;
  off = writeAscii(buf, off, h);
  buf[off++] = 10;
  return off;
}

// `lw1 wait <key> <us> <outcome> <owner> <holder>`: an acquire's waiting
// end and its wait in one line (docs/line-protocol.md).
const waitEndMax = (k, prefix, p, h) => waitMax(k) + 1 + ownerMax(prefix, p) + 1 + h.length;
function writeWaitEnd(buf, off, k, us, out, prefix, party, p, h) {
  off = copyInto(buf, off, WAIT);
  off = copyInto(buf, off, k);
  buf[off++] = 32;
  off = writeUs(buf, off, us);
  off = copyInto(buf, off, out);
  return writeOwnerHolder(buf, off, prefix, party, p, h);
}

const waitingMax = (k, prefix, p, h) => 12 + k.length + 1 + ownerMax(prefix, p) + 1 + h.length + 8 + 1;
function writeWaiting(buf, off, k, prefix, party, p, h, out) {
  off = copyInto(buf, off, WAITING);
  off = copyInto(buf, off, k);
  buf[off++] = 32;
  off = writeOwner(buf, off, prefix, party, p);
  buf[off++] = 32;
  off = writeAscii(buf, off, h);
  off = copyInto(buf, off, out);
  buf[off++] = 10;
  return off;
}

const holdMax = (k, prefix, p, h) => 9 + k.length + 1 + DIGITS_MAX + 1 + ownerMax(prefix, p) + 1 + h.length + 1;
function writeHold(buf, off, k, us, prefix, party, p, h) {
  off = copyInto(buf, off, HOLD);
  off = copyInto(buf, off, k);
  buf[off++] = 32;
  off = writeUs(buf, off, us);
  return writeOwnerHolder(buf, off, prefix, party, p, h);
}

// Append the line(s) of one event to out (the events Reporter.put takes and
// the test hook gets).  An `acquired` event (an acquire call that returned:
// key, party, holder, us, outcome, started) is its `wait` line, as the lock
// path writes it: with owner and holder, which makes it the call's waiting
// end too, when the call acquired (`ok`, whether or not it waited: the
// agent ties the holder id Redis shows to its owner through it,
// docs/line-protocol.md) or when it sent a `start`; without, otherwise.
function emit(ev, prefix, out) {
  switch (ev[0]) {
    case 'acquired':
      if (ev[6] || ev[5] === 'ok') out.push(line(['waitend', ev[1], ev[4], ev[5], ev[2], ev[3]], prefix));
      else out.push(line(['wait', ev[1], ev[4], ev[5]], prefix));
      return;
    default:
      out.push(line(ev, prefix));
  }
}

// The signed datagram: `lw1 mac <32 hex> <unix>\n` + body, the MAC being
// HMAC-SHA-256(key, `<unix>\n` + body) cut to 16 bytes.
function sign(key, body, unixSeconds) {
  const signed = Buffer.concat([Buffer.from(`${unixSeconds}\n`), body]);
  const mac = crypto.createHmac('sha256', key).update(signed).digest('hex').slice(0, 32);
  return Buffer.concat([Buffer.from(`lw1 mac ${mac} `), signed]);
}

module.exports = {
  MAX_DATAGRAM, LOOPBACK_DATAGRAM, MAC_LINE_LEN, pct, holderField, us, line, emit, sign,
  encKey, encParty, encHolder, OUTCOME, waitMax, writeWait, waitEndMax, writeWaitEnd, waitingMax, writeWaiting,
  holdMax, writeHold,
};
