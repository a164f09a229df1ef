// SPDX-License-Identifier: BSD-3-Clause
// The lw1 line protocol on the wire (docs/line-protocol.md): percent-encoding
// of keys, owners and holder ids, the text of each line, packing lines into
// datagrams of at most 1432 bytes, and the `lw1 mac` signature.  Pure
// functions: the unit tests check them against the protocol's test vector,
// and the reporter's flush is their only other caller.
'use strict';

const crypto = require('node:crypto');

const MAX_DATAGRAM = 1432;
// "lw1 mac " + 32 hex + " " + unix seconds (10 digits until 2286) + "\n"
const MAC_LINE_LEN = 8 + 32 + 1 + 10 + 1;
const MAX_US = 9007199254740992;

const HEX = '0123456789ABCDEF';

// A field as bytes: printable ASCII but '%' stays, every other byte %XX.
function pct(v) {
  const s = typeof v === 'string' ? v : Buffer.isBuffer(v) ? null : String(v);
  if (s !== null && /^[\x21-\x24\x26-\x7e]*$/.test(s)) return s;
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

// Encoded lines into datagram bodies of at most budget bytes, each line
// ended by \n; a line longer than the budget goes alone.  Lines are ASCII
// (everything else is percent-encoded), so a string's length is its size.
// Returns [{body: Buffer, lines: count}].
function packCounted(lines, budget = MAX_DATAGRAM) {
  const out = [];
  let cur = '';
  let n = 0;
  for (const ln of lines) {
    if (n && cur.length + ln.length + 1 > budget) {
      out.push({ body: Buffer.from(cur, 'latin1'), lines: n });
      cur = '';
      n = 0;
    }
    cur += ln + '\n';
    n++;
  }
  if (n) out.push({ body: Buffer.from(cur, 'latin1'), lines: n });
  return out;
}

function pack(lines, budget = MAX_DATAGRAM) {
  return packCounted(lines, budget).map((d) => d.body);
}

// Keys, owners and holder ids repeat: their encoded forms are cached so the
// flush's cost per line stays small.  Keys in a map keyed by the raw key
// (bounded: emptied when full), behind the last key seen; owners that are
// the wrappers' counter numbers need no encoding (digits), other parties
// (runAs) in a map per prefix; holder ids only as the last one seen (an
// acquire's waiting and wait lines and its hold name the same one, and a
// fresh id per acquire would only churn a map).
const CACHE_MAX = 4096;
let keys = new Map();     // key -> encoded key
let lastKey = null;
let lastKeyEnc = '';
let owners = new Map();   // party -> encoded `<process>/<party>` (per prefix)
let ownersPrefix = null;
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

function encOwner(party, prefix) {
  if (typeof party === 'number') return prefix + party;
  if (prefix !== ownersPrefix) { owners = new Map(); ownersPrefix = prefix; }
  let o = owners.get(party);
  if (o === undefined) {
    o = prefix + pct(party);
    if (owners.size >= CACHE_MAX) owners = new Map();
    owners.set(party, o);
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

// Append the line(s) of one event to out.  An `acquired` event (an acquire
// call that returned: key, party, holder, us, outcome, started) is its
// `waiting <outcome>` line and its `wait` line, so the lock path queues one
// array for both.  The waiting line goes out when the call acquired (`ok`,
// whether or not it waited: the agent ties the holder id Redis shows to its
// owner through it, docs/line-protocol.md) or when it sent a `start`.
function emit(ev, prefix, out) {
  switch (ev[0]) {
    case 'acquired':
      if (ev[6] || ev[5] === 'ok') out.push('lw1 waiting ' + encKey(ev[1]) + ' ' + encOwner(ev[2], prefix) + ' ' + encHolder(ev[3]) + ' ' + ev[5]);
      out.push('lw1 wait ' + encKey(ev[1]) + ' ' + us(ev[4]) + ' ' + ev[5]);
      return;
    case 'waiting':
      out.push('lw1 waiting ' + encKey(ev[1]) + ' ' + encOwner(ev[2], prefix) + ' ' + encHolder(ev[3]) + ' ' + ev[4]);
      return;
    case 'hold':
      out.push('lw1 hold ' + encKey(ev[1]) + ' ' + us(ev[2]) + ' ' + encOwner(ev[3], prefix) + ' ' + encHolder(ev[4]));
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
  MAX_DATAGRAM, MAC_LINE_LEN, pct, holderField, us, line, emit, pack, packCounted, sign,
  encKey, encOwner, encHolder,
};
