// SPDX-License-Identifier: BSD-3-Clause
// The reporter: a bounded array the lock path pushes event arrays onto, and a
// flush that turns them into lw1 lines, packs them into datagrams of at most
// 1432 bytes, signs them when a key is set and hands them to dgram.
//
// Why this shape: the lock path must cost next to nothing (the 5% budget of
// docs/reporters.md), so put() only pushes a small array; formatting,
// encoding, signing and the sends happen in flush(), run by an unref'd
// 200 ms interval, or by an unref'd setImmediate once 256 events are
// pending (a busy process sends full datagrams without waiting for the
// interval).  The sockets are unref'd too: the reporter never keeps the
// process alive.  A full queue drops the event and counts it; a failed send
// (the callback's error, or an 'error' event) drops the datagram and counts
// its lines; nothing is retried, thrown or rejected into the application.
'use strict';

const dgram = require('node:dgram');
const dns = require('node:dns');
const net = require('node:net');
const config = require('./config');
const wire = require('./wire');

const QUEUE_CAPACITY = 8192;
const FLUSH_MS = 200;
const FLUSH_SOON = 256;

class Reporter {
  constructor(cfg, { capacity = QUEUE_CAPACITY, flushMs = FLUSH_MS, start = true } = {}) {
    this.config = cfg;
    this.enabled = cfg.enabled;
    this.capacity = capacity;
    this._q = [];
    this._prefix = wire.pct(cfg.process) + '/';
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
    this._q.length = 0;
    this.close();
  }

  // The only method the lock path calls: never blocks, never throws.
  put(ev) {
    if (!this.enabled) return;
    if (this.tap !== null) {
      try { this.tap(ev); } catch (_) { /* a test hook never breaks a lock call */ }
    }
    const q = this._q;
    if (q.length >= this.capacity) {
      this.counts.droppedQueueFull++;
      return;
    }
    q.push(ev);
    if (q.length === FLUSH_SOON) this.sendSoon();
  }

  // A lost line was queued: send what is queued on the next turn of the
  // event loop rather than at the interval (the agent times a lease overrun
  // by the line's arrival).
  sendSoon() {
    if (!this.enabled || this._soon !== null || this._timer === null) return;
    this._soon = setImmediate(() => { this._soon = null; this.flush(); });
    this._soon.unref();
  }

  // Send everything queued now (the interval, beforeExit, tests).
  flush() {
    try {
      if (this._pendingLookups > 0 || this._q.length === 0) return;
      const evs = this._q;
      this._q = [];
      this.counts.queued += evs.length;
      const lines = [];
      for (const ev of evs) {
        try { wire.emit(ev, this._prefix, lines); } catch (_) { this.counts.droppedSendFailed++; }
      }
      const key = this.config.key;
      const budget = wire.MAX_DATAGRAM - (key ? wire.MAC_LINE_LEN : 0);
      for (const d of wire.packCounted(lines, budget)) {
        const body = key ? wire.sign(key, d.body, Math.floor(Date.now() / 1000)) : d.body;
        this._send(body, d.lines);
      }
    } catch (_) { /* never throw into a timer either */ }
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
    return { ...this.counts, pending: this._q.length };
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
