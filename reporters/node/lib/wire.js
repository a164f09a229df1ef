// SPDX-License-Identifier: BSD-3-Clause
// The lw1 line protocol on the wire (docs/line-protocol.md): percent-encoding
// of keys, owners and holder ids (and the encodings the reporter caches),
// the text of each line, and the `lw1 mac` signature.  Pure functions but
// the caches: the unit tests check them against the protocol's test
// vector; lib/reporter.js fills and sends datagrams.
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

// The lines, from fields already encoded (k a key, o an owner, h a holder
// field, u microseconds as us() writes them, out an outcome), without
// their terminator: what line() and the reporter's batches (lib/reporter.js
// _drain) both write.
const waitText = (k, u, out) => `lw1 wait ${k} ${u} ${out}`;
const waitEndText = (k, u, out, o, h) => `lw1 wait ${k} ${u} ${out} ${o} ${h}`;
const waitingText = (k, o, h, out) => `lw1 waiting ${k} ${o} ${h} ${out}`;
const holdText = (k, u, o, h) => `lw1 hold ${k} ${u} ${o} ${h}`;

// Bytes into a datagram buffer b at off (b has room); each returns the end.
// What the reporter's batches (lib/reporter.js _drain) write lines with:
// loops in JavaScript, no native call or string per field.

// ASCII string s (an encoded field: one character, one byte).
function putAscii(b, off, s) {
  const n = s.length;
  for (let j = 0; j < n; j++) b[off + j] = s.charCodeAt(j);
  return off + n;
}

// Bytes src (a head, the owner prefix).
function putBytes(b, off, src) {
  const n = src.length;
  for (let j = 0; j < n; j++) b[off + j] = src[j];
  return off + n;
}

// The digits of integer v (0 <= v <= MAX_US).
function putUint(b, off, v) {
  let n = 1;
  for (let t = v; t >= 10; t = Math.floor(t / 10)) n++;
  let p = off + n;
  do {
    const q = Math.floor(v / 10);
    b[--p] = 48 + (v - q * 10);
    v = q;
  } while (v > 0);
  return off + n;
}

// Microseconds as us() writes them.
function putUs(b, off, v) {
  if (!(v > 0)) {
    b[off] = 48;
    return off + 1;
  }
  return putUint(b, off, v < MAX_US ? Math.round(v) : MAX_US);
}

// An encoded party (encParty()): a counter's number, or a string.
function putParty(b, off, o) {
  return typeof o === 'number' ? putUint(b, off, o) : putAscii(b, off, o);
}

// One event (an array, see Reporter.put) as a line without its terminator.
// prefix: the encoded `<process>/` of owner ids.
function line(ev, prefix) {
  switch (ev[0]) {
    case 'wait':
      return waitText(pct(ev[1]), us(ev[2]), ev[3]);
    case 'waitend':   // key, us, outcome, party, holder: the waiting end and the wait in one line
      return waitEndText(pct(ev[1]), us(ev[2]), ev[3], prefix + pct(ev[4]), holderField(ev[5]));
    case 'hold':
      return holdText(pct(ev[1]), us(ev[2]), prefix + pct(ev[3]), holderField(ev[4]));
    case 'waiting':
      return waitingText(pct(ev[1]), prefix + pct(ev[2]), holderField(ev[3]), ev[4]);
    case 'lost':
      return `lw1 lost ${pct(ev[1])} ${prefix}${pct(ev[2])} ${holderField(ev[3])} ${us(ev[4])} ` +
        `${ev[5] === null || ev[5] === undefined ? '-' : us(ev[5])} ${ev[6]}`;
    default:
      throw new Error(`unknown event ${ev[0]}`);
  }
}

// The encodings of the reporter's batches, cached: keys in a map keyed by
// the raw key (bounded: emptied when full), behind the last key seen; owner
// parties that are counter numbers need none (a number in a template is its
// digits), others (runAs) come from a map; a holder id, new with each
// acquire, is kept as the last one seen (an acquire's lines and its hold
// name the same one, often one after the other).
const CACHE_MAX = 4096;
let keys = new Map();     // key -> encoded key
let lastKey = null;
let lastKeyEnc = null;
let parties = new Map();  // party -> encoded party
let lastHolder = null;
let lastHolderEnc = '-';

function encKey(key) {
  if (key === lastKey) return lastKeyEnc;
  let k = keys.get(key);
  if (k === undefined) {
    k = pct(key);
    if (keys.size >= CACHE_MAX) keys = new Map();
    keys.set(key, k);
  }
  lastKey = key;
  lastKeyEnc = k;
  return k;
}

function encParty(party) {
  if (typeof party === 'number' && party >= 0 && party < MAX_US && Number.isInteger(party)) return party;
  let o = parties.get(party);
  if (o === undefined) {
    o = pct(String(party));
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
  encKey, encParty, encHolder, waitText, waitEndText, waitingText, holdText,
  putAscii, putBytes, putUint, putUs, putParty,
};
