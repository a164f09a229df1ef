// SPDX-License-Identifier: BSD-3-Clause
// Where the reporter sends and how it signs: LOCKWATCH_SAMPLES,
// LOCKWATCH_KEY_FILE and LOCKWATCH_OWNER (docs/reporters.md
// "Configuration"), read once; `off` in any case turns reporting off.  A destination that does not parse or does not
// resolve, or a key file that cannot be used, is one process warning
// (process.emitWarning) and turns that destination, or the reporter, off;
// nothing here throws into the application.  load() does no I/O: names are
// resolved (dns.lookup) and the key file read (readKey, fs.promises) once,
// asynchronously, when the reporter starts (lib/reporter.js: lines queue
// meanwhile), never on the lock path, which may be what starts it (a key
// file on a hung NFS mount must not stop the application's first lock call,
// nor the event loop).
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const { threadId } = require('node:worker_threads');

const DEFAULT_SAMPLES = '127.0.0.1:9717';
const MAX_DESTINATIONS = 8;
const KEY_MIN = 16;
const KEY_MAX = 4096;
const OWNER_MAX = 200;

function warn(msg) {
  try {
    process.emitWarning(msg, { code: 'LOCKWATCH_REPORTER' });
  } catch (_) { /* never throw */ }
}

// `host:port[,host:port...]` -> [{host, port}], IPv6 as [addr]:port.
function splitDestinations(text) {
  const out = [];
  for (let part of text.split(',')) {
    part = part.trim();
    if (!part) continue;
    let host;
    let portText;
    if (part.startsWith('[')) {
      const end = part.indexOf(']');
      if (end < 0 || part[end + 1] !== ':') {
        warn(`LOCKWATCH_SAMPLES: ${part}: expected [addr]:port; skipped`);
        continue;
      }
      host = part.slice(1, end);
      portText = part.slice(end + 2);
    } else {
      const i = part.lastIndexOf(':');
      if (i <= 0) {
        warn(`LOCKWATCH_SAMPLES: ${part}: expected host:port; skipped`);
        continue;
      }
      host = part.slice(0, i);
      portText = part.slice(i + 1);
    }
    const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : 0;
    if (!(port > 0 && port < 65536)) {
      warn(`LOCKWATCH_SAMPLES: ${part}: bad port; skipped`);
      continue;
    }
    if (out.length === MAX_DESTINATIONS) {
      warn(`LOCKWATCH_SAMPLES: more than ${MAX_DESTINATIONS} destinations; the rest are ignored`);
      break;
    }
    out.push({ host, port });
  }
  return out;
}

// The key from the key file's bytes: its first line, trailing newlines
// dropped, or null (one warning).
function keyOf(data, path) {
  let end = data.indexOf(0x0a);
  if (end < 0) end = data.length;
  if (end > 0 && data[end - 1] === 0x0d) end--;
  const key = data.subarray(0, end);
  if (key.length < KEY_MIN || key.length > KEY_MAX) {
    warn(`LOCKWATCH_KEY_FILE: ${path}: the key must be ${KEY_MIN} to ${KEY_MAX} bytes; reporting off`);
    return null;
  }
  return Buffer.from(key);
}

// A promise of the key file's key, or of null (one warning; it never
// rejects).  Read asynchronously, off the event loop, and no further than
// the first line needs (at most KEY_MAX + 2 bytes: a longer first line is
// too long whatever follows).
async function readKey(path) {
  const buf = Buffer.alloc(KEY_MAX + 2);
  let n = 0;
  let fh = null;
  try {
    fh = await fs.promises.open(path, 'r');
    while (n < buf.length && buf.subarray(0, n).indexOf(0x0a) < 0) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, null);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
  } catch (e) {
    warn(`LOCKWATCH_KEY_FILE: ${path}: ${e.message}; reporting off`);
    return null;
  } finally {
    if (fh !== null) fh.close().catch(() => {});
  }
  return keyOf(buf.subarray(0, n), path);
}

// The `<process>` part of owner ids: `<name>:<pid>`, name LOCKWATCH_OWNER or
// the hostname (a name that several processes share, a pod's with a
// cluster's workers, stays one owner per process), and in a worker thread
// `.w<threadId>` (each worker has its own module state and party counter:
// its parties would otherwise be the main thread's).
function processOf(name) {
  return `${name}:${process.pid}${threadId !== 0 ? `.w${threadId}` : ''}`;
}

function defaultProcess() {
  return processOf(os.hostname());
}

// {enabled, destinations: [{host, port}], keyFile, key, process} from the
// options, falling back to env.  The key is null: the reporter reads keyFile
// (readKey) when it starts, and turns itself off when it is bad.
function load(opts = {}, env = process.env) {
  const samples = opts.samples !== undefined ? opts.samples
    : env.LOCKWATCH_SAMPLES !== undefined ? env.LOCKWATCH_SAMPLES : DEFAULT_SAMPLES;
  let keyFile = opts.keyFile !== undefined ? opts.keyFile : env.LOCKWATCH_KEY_FILE || null;
  const owner = opts.owner !== undefined ? opts.owner : env.LOCKWATCH_OWNER || null;
  let proc = defaultProcess();
  if (owner) {
    if (Buffer.byteLength(owner) > OWNER_MAX) warn(`LOCKWATCH_OWNER is longer than ${OWNER_MAX} bytes; using ${proc}`);
    else proc = processOf(owner);
  }
  const text = String(samples).trim();
  if (text === '' || text.toLowerCase() === 'off') return { enabled: false, destinations: [], keyFile: null, key: null, process: proc };
  // set but empty (a template's unset value): unsigned, which an agent
  // with a key rejects, so said once
  if (typeof keyFile === 'string' && keyFile.trim() === '') keyFile = null;
  if (opts.keyFile === undefined && env.LOCKWATCH_KEY_FILE !== undefined && env.LOCKWATCH_KEY_FILE.trim() === '') {
    warn('LOCKWATCH_KEY_FILE is set but empty; datagrams go unsigned');
  }
  const destinations = splitDestinations(text);
  return { enabled: destinations.length > 0, destinations, keyFile: keyFile || null, key: null, process: proc };
}

module.exports = { load, splitDestinations, readKey, defaultProcess, warn, DEFAULT_SAMPLES };
