// SPDX-License-Identifier: BSD-3-Clause
// The reporter: a bounded array the lock path pushes event arrays onto, and a
// flush that turns them into lw1 lines, packs them into datagrams of at most
// 1432 bytes, signs them when a key is set and hands them to dgram.
//
// Why this shape: the lock path must cost next to nothing (the 5% budget of
// docs/reporters.md), so it does the least work a line can cost: the
// wrappers build each line from fields they encoded once per acquire
// (lib/holding.js) and line() appends it to the datagram being filled (a
// string; a line that would not fit starts the next one).  No event object
// is queued and nothing is formatted twice.  Full datagrams wait in a short
// list and go out in bursts (a burst of sends costs less per datagram than
// sends spread out): an unref'd setImmediate sends them once BURST are
// full, and the unref'd 200 ms interval sends whatever is there, the partly
// filled datagram included.  The sockets are unref'd too: the reporter
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

class Reporter {
  constructor(cfg, { capacity = QUEUE_CAPACITY, flushMs = FLUSH_MS, start = true } = {}) {
    this.config = cfg;
    this.enabled = cfg.enabled;
    this.capacity = capacity;
    this._n = 0;             // lines pending (full datagrams and _cur)
    this._full = [];         // full datagrams' text, not sent yet
    this._fullN = [];        // and their line counts
    this._cur = '';          // lines of the datagram being filled
    this._curN = 0;          // and their count
    this._budget = cfg.key ? wire.MAX_DATAGRAM - wire.MAC_LINE_LEN : wire.MAX_DATAGRAM;
    this._soonAll = false;   // the scheduled send sends everything (sendSoon)
    this._runSoon = () => this._sendScheduled();
    this.prefix = wire.pct(cfg.process) + '/';   // encoded `<process>/` of owner ids
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
    this._onExit = () => this.flush();
    process.on('beforeExit', this._onExit);
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
        sock.connect(d.port, address, () => { target.connected = true; this._targets.push(target); this._settled(); });
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
    this._readyResolve();
  }

  _disable() {
    this.enabled = false;
    this._full = [];
    this._fullN = [];
    this._cur = '';
    this._curN = 0;
    this._n = 0;
    this.close();
  }

  // One line (ASCII, no terminator) onto the datagram being filled: what
  // the lock path calls (lib/holding.js).  Never blocks, never throws.
  line(ln) {
    if (!this.enabled) return;
    if (this._n >= this.capacity) {
      this.counts.droppedQueueFull++;
      return;
    }
    this._n++;
    this.counts.queued++;
    if (this._curN > 0 && this._cur.length + ln.length + 1 > this._budget) {
      this._full.push(this._cur);
      this._fullN.push(this._curN);
      this._cur = ln + '\n';
      this._curN = 1;
      if (this._full.length >= BURST && this._soon === null) this._schedule();
      return;
    }
    this._cur += ln + '\n';
    this._curN++;
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
    for (let i = 0; i < full.length; i++) this._sendText(full[i], fullN[i]);
  }

  // Send everything queued now (the interval, sendSoon, beforeExit, tests).
  flush() {
    try {
      if (this._pendingLookups > 0) return;
      this._sendFull();
      if (this._curN > 0) {
        const cur = this._cur;
        const nl = this._curN;
        this._cur = '';
        this._curN = 0;
        this._n = 0;
        this._sendText(cur, nl);
      }
    } catch (_) { /* never throw into a timer either */ }
  }

  // One datagram's lines (ASCII: everything else is percent-encoded),
  // signed when a key is set.
  _sendText(text, nl) {
    const key = this.config.key;
    const body = Buffer.from(text, 'latin1');
    this._send(key ? wire.sign(key, body, Math.floor(Date.now() / 1000)) : body, nl);
  }

  _send(body, nl) {
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
    if (this._onExit) { process.removeListener('beforeExit', this._onExit); this._onExit = null; }
    this.flush();
  }

  stats() {
    return { ...this.counts, pending: this._n };
  }
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

module.exports = { Reporter, get, configure, current: current_, QUEUE_CAPACITY };
