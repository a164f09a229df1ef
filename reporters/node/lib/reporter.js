// SPDX-License-Identifier: BSD-3-Clause
// The reporter: the lock path's events kept raw and written as lw1 lines in
// batches into the datagram being filled (at most 1432 bytes, or 8192 when
// every destination is a loopback address), full datagrams sent in bursts,
// signed when a key is set, through dgram.
//
// Why this shape: the lock path must cost next to nothing (the 5% budget of
// docs/reporters.md), so it does the least work an event can cost: the
// wrappers hand the reporter the key, owner and holder id as the library
// has them, and it keeps them in arrays made once (waitLine, waitEndLine,
// waitingLine, holdLine: a few stores).  Every EVENTS_BATCH events, and
// before any other line or send, _drain() writes their lines byte by byte
// into the datagram being filled, from encodings cached in lib/wire.js, in
// one loop rather than a line at a time between the library's work and
// the kernel's (40% less than writing each line's bytes as it came, by
// native calls: 0.29-0.42 us a lock cycle against 0.54-0.71 us, batches of
// 64 events in a loop), and without a string per line (no line string
// outlives its batch: strings kept until their datagram was sent survived
// the young generation's collections and cost more than everything else
// the reporter did).  Datagrams to a loopback agent are 8192 bytes (the size
// the agent reads; loopback has no 1500-byte MTU), so there are fewer
// sends: a send wakes the agent, and on a small host that is a large
// cost.  Full datagrams wait in a short list and go out in bursts (a burst
// of sends costs less per datagram than sends spread out): an unref'd
// setImmediate sends them once BURST are full, and the unref'd 200 ms
// interval sends whatever is there, the partly filled datagram included.
// The sockets are unref'd too: the reporter never keeps the process alive.
// A full queue (capacity lines pending, kept events included) drops the
// line and counts it; a failed send (the callback's error) drops the
// datagram and counts its lines; nothing is retried, thrown or rejected
// into the application.
//
// Starting does no I/O on the caller's stack, which may be the
// application's first lock call (get()): the key file is read
// (config.readKey, fs.promises) and each destination's name resolved
// (dns.lookup) asynchronously, off the event loop, and until both are done
// lines queue (bounded) and nothing is sent.  A bad key file, or no
// destination that resolved, then turns reporting off, the queued lines
// counted droppedSendFailed.  Nothing waits for that step: ready() resolves
// when it is done or after READY_MS, whichever comes first.
'use strict';

const dgram = require('node:dgram');
const dns = require('node:dns');
const net = require('node:net');
const config = require('./config');
const wire = require('./wire');

const QUEUE_CAPACITY = 8192;
const FLUSH_MS = 200;
const READY_MS = 5000;   // the longest ready() waits for the settings (glibc's timeout for one DNS query)
const BURST = 4;   // full datagrams that start a send
const SPARE_MAX = 8;   // datagram buffers kept for reuse once sent
const EVENTS_BATCH = 64;   // lock-path events kept before their lines are written
const EV_WAIT = 0;
const EV_WAITEND = 1;
const EV_WAITING = 2;
const EV_HOLD = 3;
const HEAD_WAIT = Buffer.from('lw1 wait ');
const HEAD_HOLD = Buffer.from('lw1 hold ');
const HEAD_WAITING = Buffer.from('lw1 waiting ');

// " <owner> <holder>": pre the encoded `<process>/`, o the encoded party, h
// the encoded holder id.
function putOwnerHolder(b, off, pre, o, h) {
  b[off++] = 32;
  off = wire.putBytes(b, off, pre);
  off = wire.putParty(b, off, o);
  b[off++] = 32;
  return wire.putAscii(b, off, h);
}

class Reporter {
  constructor(cfg, { capacity = QUEUE_CAPACITY, flushMs = FLUSH_MS, readyMs = READY_MS, start = true } = {}) {
    this.config = cfg;
    this.enabled = cfg.enabled;
    this.capacity = capacity;
    // The key: cfg.key, or read from cfg.keyFile when the reporter starts.
    // With a key file, lines are written for a signed datagram from the
    // start: the key turns out good, or reporting off.
    this._key = cfg.key || null;
    this._signs = this._key !== null || !!cfg.keyFile;
    this._n = 0;             // lines pending (full datagrams, _buf, kept events)
    this._full = [];         // full datagrams' bytes, not sent yet
    this._fullN = [];        // and their line counts
    // The datagram being filled: _off bytes of _buf, _curN lines.  Its size
    // is the budget (the datagram less the mac line when signing), raised
    // once every destination turns out to be a loopback address.
    this._budget = datagramBudget(wire.MAX_DATAGRAM, this._signs);
    this._buf = Buffer.allocUnsafeSlow(this._budget);
    this._spare = [];        // sent datagrams' buffers, for reuse (SPARE_MAX)
    this._off = 0;
    this._curN = 0;
    // The lock path's events not written yet (_event, _drain): kind, us,
    // key, outcome, owner party, holder id.
    this._evN = 0;
    this._evKind = new Uint8Array(EVENTS_BATCH);
    this._evUs = new Float64Array(EVENTS_BATCH);
    this._evKey = new Array(EVENTS_BATCH).fill(null);
    this._evOut = new Array(EVENTS_BATCH).fill(null);
    this._evParty = new Array(EVENTS_BATCH).fill(null);
    this._evHolder = new Array(EVENTS_BATCH).fill(null);
    this._soonAll = false;   // the scheduled send sends everything (sendSoon)
    this._runSoon = () => this._sendScheduled();
    this.prefix = wire.pct(cfg.process) + '/';   // encoded `<process>/` of owner ids
    this._prefixBytes = Buffer.from(this.prefix, 'latin1');
    this._targets = [];      // {sock, connected}: connected UDP sockets
    this._dests = new Set();   // `address|port` of each, resolved
    // Steps still to settle before anything is sent: a lookup and connect
    // per destination, the key file's read.
    this._pending = 0;
    this._keyBad = false;
    this._closed = false;    // close()d: nothing is sent, whatever settles later
    this._timer = null;
    this._soon = null;
    this.counts = { queued: 0, sent: 0, datagrams: 0, droppedQueueFull: 0, droppedSendFailed: 0 };
    // Test hook: called with each event on the lock path when set
    // (tests/interop/reporters/node records the waits it reports).
    this.tap = null;
    this._ready = null;
    this.ready = () => this._ready || Promise.resolve();
    if (!this.enabled || !start) return;
    // ready(): resolves once every destination is connected or given up and
    // the key file read, or after readyMs, the reporter still waiting for
    // them (enabled: lines queue)
    this._ready = new Promise((resolve) => { this._readyResolve = resolve; });
    this._readyTimer = setTimeout(this._readyResolve, readyMs);
    this._readyTimer.unref();
    this._timer = setInterval(() => this.flush(), flushMs);
    this._timer.unref();
    // beforeExit: the loop ran dry; exit: process.exit(), where only
    // synchronous work runs, but a send on a connected socket is handed to
    // the kernel at once (libuv tries it before queueing), so it goes.
    this._onExit = () => this.flush();
    process.on('beforeExit', this._onExit);
    process.on('exit', this._onExit);
    this._pending = 1;       // until every step below has begun
    if (this._key === null && cfg.keyFile) this._readKey(cfg.keyFile);
    for (const d of cfg.destinations) this._resolve(d);
    this._settled();
  }

  // Resolve (once) and connect one UDP socket per destination: a connected
  // socket sends without an address lookup per datagram, which would cost
  // more than the rest of a flush.  Until every destination is connected
  // (or given up), flush() waits and lines stay queued (bounded).
  _resolve(d) {
    this._pending++;
    const done = (err, address, family) => {
      if (this._closed) {
        this._settled();
        return;
      }
      if (err) {
        config.warn(`LOCKWATCH_SAMPLES: ${d.host}:${d.port}: ${err.code || err.message}; not sending there`);
        this._settled();
        return;
      }
      // two names of one agent would count every sample twice
      const where = `${address}|${d.port}`;
      if (this._dests.has(where)) {
        config.warn(`LOCKWATCH_SAMPLES: ${d.host}:${d.port} is ${address}:${d.port} again; sending there once`);
        this._settled();
        return;
      }
      this._dests.add(where);
      try {
        const sock = dgram.createSocket(family === 6 ? 'udp6' : 'udp4');
        const target = { sock, connected: false };
        // The port's refusal (ICMP) of a datagram already counted sent:
        // Linux reports it to a connected socket once, to whichever comes
        // first, the event loop's read of the socket (this 'error' event:
        // a listener, so that it never throws, and no count) or the next
        // send, which then fails with ECONNREFUSED and does not transmit
        // its datagram (its callback's error: counted droppedSendFailed).
        // On loopback the refusal is back before send() returns, so with
        // nothing at the port about every other datagram of a burst fails
        // (docs/reporters.md "Never throw").
        sock.on('error', () => {});
        sock.unref();
        sock.connect(d.port, address, () => {
          if (this._closed) {
            sock.close();
            this._settled();
            return;
          }
          target.connected = true;
          target.loopback = isLoopback(address);
          this._targets.push(target);
          this._settled();
        });
      } catch (e) {
        config.warn(`LOCKWATCH_SAMPLES: ${d.host}:${d.port}: ${e.message}; not sending there`);
        this._settled();
      }
    };
    const fam = net.isIP(d.host);
    if (fam) {
      done(null, d.host, fam);
      return;
    }
    try {
      dns.lookup(d.host, done);
    } catch (e) {
      done(e);
    }
  }

  // The key file, read asynchronously (config.readKey: one warning when it
  // is bad, and reporting turns off once every step has settled).
  _readKey(path) {
    this._pending++;
    const done = (key) => {
      if (key === null) this._keyBad = true;
      else this._key = key;
      this._settled();
    };
    config.readKey(path).then(done, () => done(null));
  }

  // A step settled; once all have, sending begins, or reporting turns off.
  _settled() {
    this._pending--;
    if (this._pending > 0) return;
    clearTimeout(this._readyTimer);
    if (!this._closed) {
      if (this._keyBad || this._targets.length === 0) this._disable();
      else if (this._targets.every((t) => t.loopback)) this._budget = datagramBudget(wire.LOOPBACK_DATAGRAM, this._signs);
    }
    this._readyResolve();
  }

  // Reporting off: what is queued is dropped (counted as failed sends).
  _disable() {
    for (const t of this._targets) {
      try { t.sock.close(); } catch (_) { /* closed already */ }
    }
    this._targets = [];
    this._drop();
    this.close();
  }

  _drop() {
    this.counts.droppedSendFailed += this._n;
    this.enabled = false;
    this._full = [];
    this._fullN = [];
    this._off = 0;
    this._curN = 0;
    this._n = 0;
    this._evN = 0;
    this._evKey.fill(null);
    this._evParty.fill(null);
    this._evHolder.fill(null);
  }

  // Room for a line of at most max bytes in the datagram being filled: the
  // offset to write it at in this._buf, then _commit(end); or -1, the line
  // dropped (reporting off, or the queue full: counted).
  _reserve(max) {
    if (!this.enabled) return -1;
    if (this._n >= this.capacity) {
      this.counts.droppedQueueFull++;
      return -1;
    }
    return this._room(max);
  }

  // The offset of max bytes free in the datagram being filled (a full one
  // goes on the list first).  A line longer than a datagram gets a buffer
  // of its own and goes alone.
  _room(max) {
    if (this._off + max > this._buf.length) {
      if (this._curN > 0) this._fullDatagram();
      if (max > this._buf.length) this._buf = Buffer.allocUnsafeSlow(max);
    }
    return this._off;
  }

  // Lines were written up to end: _commit() counts a new one, _wrote(end,
  // lines) also kept events' lines, counted when they were kept.
  _commit(end) {
    this._n++;
    this.counts.queued++;
    this._wrote(end, 1);
  }

  _wrote(end, lines) {
    this._off = end;
    this._curN += lines;
    if (this._buf.length > this._budget) this._fullDatagram();
  }

  // The lock path's lines (lib/holding.js): key, owner party and holder id
  // as the library has them, us a number, out the outcome (waitEndLine: an
  // acquire's waiting end and wait in one line).  Each is kept as an event
  // (a few stores into arrays made once) and written with the next
  // EVENTS_BATCH (_drain).  Never block, never throw.
  waitLine(key, us, out) {
    this._event(EV_WAIT, key, us, out, null, null);
  }

  waitEndLine(key, us, out, party, holder) {
    this._event(EV_WAITEND, key, us, out, party, holder);
  }

  waitingLine(key, party, holder, out) {
    this._event(EV_WAITING, key, 0, out, party, holder);
  }

  holdLine(key, us, party, holder) {
    this._event(EV_HOLD, key, us, null, party, holder);
  }

  _event(kind, key, us, out, party, holder) {
    if (!this.enabled) return;
    if (this._n >= this.capacity) {
      this.counts.droppedQueueFull++;
      return;
    }
    const i = this._evN;
    this._evKind[i] = kind;
    this._evUs[i] = us;
    this._evKey[i] = key;
    this._evOut[i] = out;
    this._evParty[i] = party;
    this._evHolder[i] = holder;
    this._n++;
    this.counts.queued++;
    this._evN = i + 1;
    if (this._evN === EVENTS_BATCH) this._drain();
  }

  // The kept events' lines, written byte by byte into the datagram being
  // filled: cached encodings (lib/wire.js: every field is ASCII once
  // encoded) copied in a loop, numbers as their digits, no string made per
  // line (a string per datagram, written with one latin1Write(), cost 15%
  // more of the reporter's time a lock cycle, and left garbage).  The
  // events were counted in _n when kept; one whose fields cannot be
  // encoded is dropped and counted.  A line that may not fit an empty
  // datagram goes as text (_writeText: alone when longer than one).
  _drain() {
    const n = this._evN;
    if (n === 0) return;
    this._evN = 0;
    const pre = this._prefixBytes;
    for (let i = 0; i < n; i++) {
      const kind = this._evKind[i];
      let k = null;
      let o = 0;
      let h = '';
      try {
        k = wire.encKey(this._evKey[i]);
        if (kind !== EV_WAIT) {
          o = wire.encParty(this._evParty[i]);
          h = wire.encHolder(this._evHolder[i]);
        }
      } catch (_) {
        k = null;
      }
      this._evKey[i] = null;
      this._evParty[i] = null;
      this._evHolder[i] = null;
      if (k === null) {
        this._n--;
        this.counts.droppedSendFailed++;
        continue;
      }
      // at most: the head, digits, the outcome and blanks in 64
      const max = 64 + k.length + (kind === EV_WAIT ? 0
        : pre.length + (typeof o === 'number' ? 20 : o.length) + h.length);
      if (this._off + max > this._buf.length) {
        if (this._curN > 0) this._fullDatagram();
        if (max > this._buf.length) {   // longer than a datagram: as text (_room)
          this._writeText(this._lineText(kind, i, k, o, h), 1);
          continue;
        }
      }
      this._wrote(this._putLine(kind, i, k, o, h, pre), 1);
    }
  }

  // Kept event i's line (with its \n) into the datagram being filled, at
  // _off, from its encoded key k, party o and holder h; returns its end.
  _putLine(kind, i, k, o, h, pre) {
    const b = this._buf;
    let off = this._off;
    if (kind === EV_WAITING) {
      off = wire.putBytes(b, off, HEAD_WAITING);
      off = wire.putAscii(b, off, k);
      off = putOwnerHolder(b, off, pre, o, h);
      b[off++] = 32;
      off = wire.putAscii(b, off, this._evOut[i]);
    } else {
      off = wire.putBytes(b, off, kind === EV_HOLD ? HEAD_HOLD : HEAD_WAIT);
      off = wire.putAscii(b, off, k);
      b[off++] = 32;
      off = wire.putUs(b, off, this._evUs[i]);
      if (kind !== EV_HOLD) {
        b[off++] = 32;
        off = wire.putAscii(b, off, this._evOut[i]);
      }
      if (kind !== EV_WAIT) off = putOwnerHolder(b, off, pre, o, h);
    }
    b[off++] = 10;
    return off;
  }

  // The same line as text (a line longer than a datagram).
  _lineText(kind, i, k, o, h) {
    if (kind === EV_WAIT) return wire.waitText(k, wire.us(this._evUs[i]), this._evOut[i]) + '\n';
    const oo = this.prefix + o;
    if (kind === EV_WAITEND) return wire.waitEndText(k, wire.us(this._evUs[i]), this._evOut[i], oo, h) + '\n';
    if (kind === EV_HOLD) return wire.holdText(k, wire.us(this._evUs[i]), oo, h) + '\n';
    return wire.waitingText(k, oo, h, this._evOut[i]) + '\n';
  }

  // text (lines whole lines, ASCII) into the datagram being filled, which
  // has room for it.
  _writeText(text, lines) {
    const off = this._room(text.length);
    this._wrote(off + this._buf.latin1Write(text, off), lines);
  }

  // One line (ASCII: everything else percent-encoded; no terminator): what
  // put() and the rare lines use.
  line(ln) {
    this._drain();   // after the events kept before it
    const off = this._reserve(ln.length + 1);
    if (off < 0) return;
    const end = off + this._buf.latin1Write(ln, off);
    this._buf[end] = 10;
    this._commit(end + 1);
  }

  // The datagram being filled is full (or flushed): on the list, and a
  // buffer for the next, one whose datagram was sent when there is one (a
  // fresh buffer for every datagram cost the lock path more than writing
  // its lines: memory the cache has not seen, and more for the collector).
  _fullDatagram() {
    const body = this._buf.subarray(0, this._off);
    const n = this._curN;
    const spare = this._spare.pop();
    this._buf = spare !== undefined ? spare : Buffer.allocUnsafeSlow(this._budget);
    this._off = 0;
    this._curN = 0;
    this._full.push(body);
    this._fullN.push(n);
    if (this._full.length >= BURST && this._soon === null) this._schedule();
  }

  // A datagram was sent (or given up): its buffer for reuse, when it has
  // the size datagrams have now.
  _recycle(body) {
    const b = body.buffer;
    if (b.byteLength === this._budget && this._spare.length < SPARE_MAX) {
      this._spare.push(Buffer.from(b, 0, b.byteLength));
    }
  }

  // One event as an array (see lib/wire.js emit(); what tests and the
  // rare lines use): its line(s), and the test hook.
  put(ev) {
    if (!this.enabled) return;
    if (this.tap !== null) {
      try { this.tap(ev); } catch (_) { /* a test hook never breaks a lock call */ }
    }
    const lines = [];
    try { wire.emit(ev, this.prefix, lines); } catch (_) { this.counts.droppedSendFailed++; }
    for (let i = 0; i < lines.length; i++) this.line(lines[i]);
  }

  // A lost line was queued: send what is queued on the next turn of the
  // event loop rather than at the interval (the agent times a lease overrun
  // by the line's arrival).
  sendSoon() {
    this._soonAll = true;
    this._schedule();
  }

  _schedule() {
    if (!this.enabled || this._soon !== null || this._timer === null) return;
    this._soon = setImmediate(this._runSoon);
    this._soon.unref();
  }

  _sendScheduled() {
    this._soon = null;
    if (this._soonAll) {
      this._soonAll = false;
      this.flush();
      return;
    }
    try { this._sendFull(); } catch (_) { /* never throw into a timer */ }
  }

  // Send the full datagrams (not the one being filled).
  _sendFull() {
    if (this._pending > 0 || this._full.length === 0) return;
    const full = this._full;
    const fullN = this._fullN;
    this._full = [];
    this._fullN = [];
    this._n = this._curN;
    for (let i = 0; i < full.length; i++) this._sendBody(full[i], fullN[i]);
  }

  // Send everything queued now (the interval, sendSoon, beforeExit, tests).
  flush() {
    try {
      if (this._pending > 0) return;
      this._drain();
      if (this._curN > 0) this._fullDatagram();
      this._sendFull();
    } catch (_) { /* never throw into a timer either */ }
  }

  // One datagram's lines, signed when a key is set.
  // (A signed datagram is a copy: the lines' buffer is free at once.)
  _sendBody(body, nl) {
    const key = this._key;
    if (key === null) {
      this._send(body, nl, body);
      return;
    }
    const signed = wire.sign(key, body, Math.floor(Date.now() / 1000));
    this._recycle(body);
    this._send(signed, nl, null);
  }

  // Send body to every destination; lines: the buffer to reuse once every
  // send is done, or null.
  _send(body, nl, lines) {
    let pending = this._targets.length;
    let ok = false;
    if (pending === 0) {
      this.counts.droppedSendFailed += nl;
      return;
    }
    const done = (err) => {
      if (!err) ok = true;
      if (--pending === 0) {
        if (ok) { this.counts.sent += nl; this.counts.datagrams++; } else this.counts.droppedSendFailed += nl;
        if (lines !== null) this._recycle(lines);
      }
    };
    for (const t of this._targets) {
      try {
        t.sock.send(body, done);
      } catch (e) {
        done(e);
      }
    }
  }

  // Flush and stop the interval (the unref'd sockets stay for the sends
  // in flight; they never keep the process alive).  Closed before its
  // settings applied (configure() replaced it), the reporter cannot send
  // and does not wait: what is queued is dropped (counted as failed sends),
  // and nothing is sent once they apply.
  close() {
    if (this._timer !== null) { clearInterval(this._timer); this._timer = null; }
    if (this._onExit) {
      process.removeListener('beforeExit', this._onExit);
      process.removeListener('exit', this._onExit);
      this._onExit = null;
    }
    if (this._pending > 0) {
      this._closed = true;
      this._drop();
      return;
    }
    this.flush();
  }

  stats() {
    return { ...this.counts, pending: this._n };
  }
}

// What lines may fill of a datagram of max bytes (the mac line's share
// kept free when signing).
function datagramBudget(max, signs) {
  return signs ? max - wire.MAC_LINE_LEN : max;
}

// 127.0.0.0/8, ::1 and IPv4-mapped loopback: no 1500-byte MTU on the way.
function isLoopback(address) {
  return /^127\./.test(address) || address === '::1' || /^::ffff:127\./i.test(address);
}

let current = null;

// The process's reporter, made from the environment on first use (without
// waiting for its settings: see Reporter); null when reporting is off (the
// wrappers then only call the library).
function get() {
  if (current === null) configure();
  return current.enabled ? current : null;
}

// (Re)make the process's reporter: options {samples, keyFile, owner}
// override the environment.  Returns it.
function configure(opts = {}, reporterOpts = {}) {
  const old = current;
  let cfg;
  try {
    cfg = config.load(opts);
  } catch (e) {
    config.warn(`lockwatch reporter: ${e.message}; off`);
    cfg = { enabled: false, destinations: [], keyFile: null, key: null, process: config.defaultProcess() };
  }
  current = new Reporter(cfg, reporterOpts);
  if (old !== null) old.close();
  return current;
}

function current_() { return current; }

module.exports = { Reporter, get, configure, current: current_, isLoopback, QUEUE_CAPACITY };
