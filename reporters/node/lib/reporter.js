// SPDX-License-Identifier: BSD-3-Clause
// The reporter: the lock path's lw1 lines written straight into the bytes of
// the datagram being filled (at most 1432 bytes, or 8192 when every
// destination is a loopback address), full datagrams sent in bursts, signed
// when a key is set, through dgram.
//
// Why this shape: the lock path must cost next to nothing (the 5% budget of
// docs/reporters.md), so it does the least work a line can cost: the
// wrappers write each line's bytes straight into the datagram's buffer
// (waitLine, waitEndLine, waitingLine, holdLine; lib/wire.js) from fields encoded once
// and cached (a line that would not fit starts the next datagram).  No
// event object is queued and no string is built: strings concatenated per
// line, then kept until their datagram was sent, cost more than everything
// else the reporter does (they survive the young generation's collections
// and are copied by each, then flattened).  Datagrams to a loopback agent are
// 8192 bytes (the size the agent reads; loopback has no 1500-byte MTU), so
// there are fewer sends: a send wakes the agent, and on a small host that
// is the largest cost left.  Full datagrams wait in a short list and go out
// in bursts (a burst of sends costs less per datagram than sends spread
// out): an unref'd setImmediate sends them once BURST are full, and the
// unref'd 200 ms interval sends whatever is there, the partly filled
// datagram included.  The sockets are unref'd too: the reporter
// never keeps the process alive.  A full queue (capacity lines pending)
// drops the line and counts it; a failed send (the callback's error, or an
// 'error' event) drops the datagram and counts its lines; nothing is
// retried, thrown or rejected into the application.
'use strict';

const dgram = require('node:dgram');
const dns = require('node:dns');
const net = require('node:net');
const config = require('./config');
const wire = require('./wire');

const QUEUE_CAPACITY = 8192;
const FLUSH_MS = 200;
const BURST = 4;   // full datagrams that start a send
const SPARE_MAX = 8;   // datagram buffers kept for reuse once sent

class Reporter {
  constructor(cfg, { capacity = QUEUE_CAPACITY, flushMs = FLUSH_MS, start = true } = {}) {
    this.config = cfg;
    this.enabled = cfg.enabled;
    this.capacity = capacity;
    this._n = 0;             // lines pending (full datagrams and _buf)
    this._full = [];         // full datagrams' bytes, not sent yet
    this._fullN = [];        // and their line counts
    // The datagram being filled: _off bytes of _buf, _curN lines.  Its size
    // is the budget (the datagram less the mac line when signing), raised
    // once every destination turns out to be a loopback address.
    this._budget = datagramBudget(wire.MAX_DATAGRAM, cfg.key);
    this._buf = Buffer.allocUnsafeSlow(this._budget);
    this._spare = [];        // sent datagrams' buffers, for reuse (SPARE_MAX)
    this._off = 0;
    this._curN = 0;
    this._soonAll = false;   // the scheduled send sends everything (sendSoon)
    this._runSoon = () => this._sendScheduled();
    this.prefix = wire.pct(cfg.process) + '/';   // encoded `<process>/` of owner ids
    this.prefixBytes = Buffer.from(this.prefix, 'latin1');
    this._targets = [];      // {sock, connected}: connected UDP sockets
    this._pendingLookups = 0;
    this._timer = null;
    this._soon = null;
    this.counts = { queued: 0, sent: 0, datagrams: 0, droppedQueueFull: 0, droppedSendFailed: 0 };
    // Test hook: called with each event on the lock path when set
    // (tests/interop/reporters/node records the waits it reports).
    this.tap = null;
    this._ready = null;
    this.ready = () => this._ready || Promise.resolve();
    if (!this.enabled || !start) return;
    // ready(): resolves once every destination is connected or given up
    this._ready = new Promise((resolve) => { this._readyResolve = resolve; });
    for (const d of cfg.destinations) this._resolve(d);
    this._timer = setInterval(() => this.flush(), flushMs);
    this._timer.unref();
    // beforeExit: the loop ran dry; exit: process.exit(), where only
    // synchronous work runs, but a send on a connected socket is handed to
    // the kernel at once (libuv tries it before queueing), so it goes.
    this._onExit = () => this.flush();
    process.on('beforeExit', this._onExit);
    process.on('exit', this._onExit);
  }

  // Resolve (once) and connect one UDP socket per destination: a connected
  // socket sends without an address lookup per datagram, which would cost
  // more than the rest of a flush.  Until every destination is connected
  // (or given up), flush() waits and lines stay queued (bounded).
  _resolve(d) {
    this._pendingLookups++;
    const done = (err, address, family) => {
      if (err) {
        config.warn(`LOCKWATCH_SAMPLES: ${d.host}:${d.port}: ${err.code || err.message}; not sending there`);
        this._settled();
        return;
      }
      try {
        const sock = dgram.createSocket(family === 6 ? 'udp6' : 'udp4');
        const target = { sock, connected: false };
        sock.on('error', () => { this.counts.droppedSendFailed++; });
        sock.unref();
        sock.connect(d.port, address, () => {
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

  _settled() {
    this._pendingLookups--;
    if (this._pendingLookups > 0) return;
    if (this._targets.length === 0) this._disable();
    else if (this._targets.every((t) => t.loopback)) this._budget = datagramBudget(wire.LOOPBACK_DATAGRAM, this.config.key);
    this._readyResolve();
  }

  _disable() {
    this.enabled = false;
    this._full = [];
    this._fullN = [];
    this._off = 0;
    this._curN = 0;
    this._n = 0;
    this.close();
  }

  // Room for a line of at most max bytes in the datagram being filled: the
  // offset to write it at in this._buf, then _commit(end); or -1, the line
  // dropped (reporting off, or the queue full: counted).  A line longer
  // than a datagram gets a buffer of its own and goes alone.
  _reserve(max) {
    if (!this.enabled) return -1;
    if (this._n >= this.capacity) {
      this.counts.droppedQueueFull++;
      return -1;
    }
    if (this._off + max > this._buf.length) {
      if (this._curN > 0) this._fullDatagram();
      if (max > this._buf.length) this._buf = Buffer.allocUnsafeSlow(max);
    }
    return this._off;
  }

  _commit(end) {
    this._off = end;
    this._curN++;
    this._n++;
    this.counts.queued++;
    if (this._buf.length > this._budget) this._fullDatagram();
  }

  // The lock path's lines (lib/holding.js; waitEndLine: an acquire's
  // waiting end and wait in one line), from lib/wire.js's cached
  // encodings: k encKey, h encHolder, out wire.OUTCOME[outcome].  Never
  // block, never throw.
  waitLine(k, us, out) {
    const off = this._reserve(wire.waitMax(k));
    if (off >= 0) this._commit(wire.writeWait(this._buf, off, k, us, out));
  }

  waitEndLine(k, us, out, party, h) {
    const p = wire.encParty(party);
    const off = this._reserve(wire.waitEndMax(k, this.prefixBytes, p, h));
    if (off >= 0) this._commit(wire.writeWaitEnd(this._buf, off, k, us, out, this.prefixBytes, party, p, h));
  }

  waitingLine(k, party, h, out) {
    const p = wire.encParty(party);
    const off = this._reserve(wire.waitingMax(k, this.prefixBytes, p, h));
    if (off >= 0) this._commit(wire.writeWaiting(this._buf, off, k, this.prefixBytes, party, p, h, out));
  }

  holdLine(k, us, party, h) {
    const p = wire.encParty(party);
    const off = this._reserve(wire.holdMax(k, this.prefixBytes, p, h));
    if (off >= 0) this._commit(wire.writeHold(this._buf, off, k, us, this.prefixBytes, party, p, h));
  }

  // One line (ASCII: everything else percent-encoded; no terminator): what
  // put() and the rare lines use.
  line(ln) {
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
    if (this._pendingLookups > 0 || this._full.length === 0) return;
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
      if (this._pendingLookups > 0) return;
      if (this._curN > 0) this._fullDatagram();
      this._sendFull();
    } catch (_) { /* never throw into a timer either */ }
  }

  // One datagram's lines, signed when a key is set.
  // (A signed datagram is a copy: the lines' buffer is free at once.)
  _sendBody(body, nl) {
    const key = this.config.key;
    if (!key) {
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
  // in flight; they never keep the process alive).
  close() {
    if (this._timer !== null) { clearInterval(this._timer); this._timer = null; }
    if (this._onExit) {
      process.removeListener('beforeExit', this._onExit);
      process.removeListener('exit', this._onExit);
      this._onExit = null;
    }
    this.flush();
  }

  stats() {
    return { ...this.counts, pending: this._n };
  }
}

// What lines may fill of a datagram of max bytes (the mac line's share
// kept free when signing).
function datagramBudget(max, key) {
  return key ? max - wire.MAC_LINE_LEN : max;
}

// 127.0.0.0/8, ::1 and IPv4-mapped loopback: no 1500-byte MTU on the way.
function isLoopback(address) {
  return /^127\./.test(address) || address === '::1' || /^::ffff:127\./i.test(address);
}

let current = null;

// The process's reporter, made from the environment on first use; null when
// reporting is off (the wrappers then only call the library).
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
    cfg = { enabled: false, destinations: [], key: null, process: config.defaultProcess() };
  }
  current = new Reporter(cfg, reporterOpts);
  if (old !== null) old.close();
  return current;
}

function current_() { return current; }

module.exports = { Reporter, get, configure, current: current_, isLoopback, QUEUE_CAPACITY };
