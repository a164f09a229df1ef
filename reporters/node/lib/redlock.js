// SPDX-License-Identifier: BSD-3-Clause
// node-redlock (4.x) reporting: instrumentRedlock(redlock) replaces the
// instance's own acquire/lock, acquireWithOptions/lockWithOptions,
// release/unlock, extend and disposer with reporting versions that call the
// library's, and adds using() (redlock 4 has none: it is redlock 5's shape,
// built from the library's acquire, extend and release only).  Patching the
// instance, not wrapping it, matters: a Lock's own lock.unlock() and
// lock.extend() call lock.redlock.unlock/extend, so they are reported too.
//
// Holder id: the lock's value (redlock makes it inside acquire; the
// `waiting ... start` line, sent when an attempt finds the lock taken, has
// it, as has the `waiting ... ok` of every acquire that got the lock).
// Outcome: a LockError (attempts exhausted) is `timeout` when a server said
// the lock was taken, `error` when none did and a server failed (redlock 4
// turns Redis errors into a LockError too once its attempts are spent).
// Lease clock: lock.expiration.  Lost:
// an extend that fails is `renewal` (`expired` when the lock's expiration
// had already passed), a release that fails is `expired`; the library's
// LockError still reaches the caller.  A multi-resource lock reports each
// resource as its own key.
'use strict';

const { Holding, reportStart, reportAcquire, party, runAs, now } = require('./holding');
const reporter = require('./reporter');

const INSTRUMENTED = Symbol('lockwatch.instrumented');
// On a Lock: its Holding (one resource) or [Holding per resource]
const HOLDING = Symbol('lockwatch.holding');
const EMPTY = Object.freeze({});

function keysOf(resource) {
  return Array.isArray(resource) ? resource : [resource];
}

function holdingsOf(hs) {
  return Array.isArray(hs) ? hs : [hs];
}

// p, with fn(err, value) called once it settles (never throwing into the
// library): the promise the caller gets settles as p does, after fn, so the
// holding is on the Lock before the caller can release it, and a rejection
// the caller leaves unhandled is reported unhandled as without the reporter.
function watch(p, fn) {
  return p.then((v) => {
    try { fn(null, v); } catch (_) { /* never in the library's way */ }
    return v;
  }, (e) => {
    try { fn(e || new Error('rejected')); } catch (_) { /* never in the library's way */ }
    throw e;
  });
}

function isLockError(err) {
  return err !== null && typeof err === 'object' && err.name === 'LockError';
}

function instrumentRedlock(rl) {
  if (rl[INSTRUMENTED]) return rl;
  const proto = Object.getPrototypeOf(rl);
  const origLock = proto._lock && proto.lockWithOptions ? proto.lockWithOptions : null;
  const origUnlock = proto.unlock;
  const origExtend = proto.extend;
  const origExec = typeof proto._executeScript === 'function' ? proto._executeScript : null;

  // `waiting ... start` goes out when the first attempt finds the lock taken,
  // as liblockwatch does (an acquire that gets the lock at once costs no
  // waiting lines), and then knows the holder id: the first attempt's
  // scripts are sent synchronously from inside the library's acquire, while
  // attemptCtx names the call; their replies say whether it got the lock.
  // Taken is a reply without error that is not the count of keys set; an
  // error reply is a server that failed (Redis down, a script error): no
  // start (nothing waits for a holder), and, when no server ever says the
  // lock is taken, the call's LockError is an `error`.  A call whose replies
  // so far were errors, and none said taken, is in `unsure` by its lock
  // value (the same in every attempt), so that its retries' replies, which
  // come through _executeScript with attemptCtx null, are seen too: a retry
  // that finds the lock taken sends the start then, and the call is a
  // `timeout`.  A call gets there only after an error reply: the path of an
  // acquire that gets the lock, and of one that finds it taken, is as it was.
  let attemptCtx = null;
  const unsure = new Map();
  function startWaiting(ctx, holder) {
    ctx.started = true;
    ctx.holder = holder;
    for (const k of ctx.keys) reportStart(ctx.rep, k, ctx.owner, holder);
  }
  // A reply that did not set the keys, before any said taken: an error, or
  // the lock taken.
  function notSet(ctx, holder, err) {
    if (err) {
      if (!ctx.errored) {
        ctx.errored = true;
        ctx.holder = holder;
        unsure.set(holder, ctx);
      }
      return;
    }
    if (ctx.errored) unsure.delete(holder);
    startWaiting(ctx, holder);
  }
  function executeScript(server, name, args, callback) {
    let ctx = attemptCtx;
    if (ctx === null) {
      // a retry (or an unlock, an extend): watched only for an unsure call
      if (unsure.size === 0 || name !== 'lockScript') return origExec.call(rl, server, name, args, callback);
      ctx = unsure.get(args[args.length - 2]);
      if (ctx === undefined) return origExec.call(rl, server, name, args, callback);
    } else if (name !== 'lockScript') {
      return origExec.call(rl, server, name, args, callback);
    }
    const holder = args[args.length - 2];
    return origExec.call(rl, server, name, args, (err, result) => {
      if (!ctx.started && (err || !(result === ctx.n || result === String(ctx.n)))) {
        try { notSet(ctx, holder, err); } catch (_) { /* never in the library's way */ }
      }
      callback(err, result);
    });
  }

  // The lock path: no per-call map (the holding rides on the Lock itself),
  // one closure and one derived promise per call (watch()).
  function acquire(resource, ttl, options, callback) {
    if (typeof options === 'function') { callback = options; options = undefined; }
    const rep = reporter.get();
    if (rep === null) return origLock.call(rl, resource, ttl, options || EMPTY, callback);
    const multi = Array.isArray(resource);
    const owner = party();
    const retries = (options && options.retryCount) || rl.retryCount;
    // ctx.started: a `waiting ... start` was sent (a server said taken);
    // ctx.errored: a server failed (see executeScript)
    let ctx = null;
    if (retries !== 0) {
      ctx = { rep, keys: multi ? resource : [resource], owner, n: multi ? resource.length : 1, started: false, errored: false, holder: null };
      if (!origExec) startWaiting(ctx, null);
    }
    const t0 = now();
    let p;
    attemptCtx = ctx;
    try {
      p = origLock.call(rl, resource, ttl, options || EMPTY);
    } finally {
      attemptCtx = null;
    }
    p = watch(p, (err, lock) => {
      const t1 = now();
      const started = ctx !== null && ctx.started;
      if (ctx !== null && ctx.errored && !started) unsure.delete(ctx.holder);
      if (err) {
        // a LockError no server's "taken" explains: the servers failed
        const outcome = isLockError(err) && (started || ctx === null || !ctx.errored) ? 'timeout' : 'error';
        const holder = started ? ctx.holder : null;
        for (const k of keysOf(resource)) reportAcquire(rep, k, owner, holder, started, t0, t1, outcome);
        return;
      }
      if (!multi) {
        reportAcquire(rep, resource, owner, lock.value, started, t0, t1, 'ok');
        lock[HOLDING] = new Holding(resource, owner, lock.value, t1, lock.expiration);
        return;
      }
      const hs = [];
      for (const k of resource) {
        reportAcquire(rep, k, owner, lock.value, started, t0, t1, 'ok');
        hs.push(new Holding(k, owner, lock.value, t1, lock.expiration));
      }
      lock[HOLDING] = hs;
    });
    return callback ? p.nodeify(callback) : p;
  }

  function unlock(lock, callback) {
    const hs = lock ? lock[HOLDING] : undefined;
    const rep = hs ? reporter.get() : null;
    if (rep === null) return origUnlock.call(rl, lock, callback);
    lock[HOLDING] = null;
    const p = watch(origUnlock.call(rl, lock), (err) => {
      const t = now();
      if (err) {
        const wall = Date.now();
        for (const h of holdingsOf(hs)) { h.reportLost(rep, 'expired', t, wall); h.reportHold(rep, t); }
        return;
      }
      if (!Array.isArray(hs)) hs.reportHold(rep, t);
      else for (const h of hs) h.reportHold(rep, t);
    });
    return callback ? p.nodeify(callback) : p;
  }

  function extend(lock, ttl, callback) {
    const hs = lock ? lock[HOLDING] : undefined;
    const rep = hs ? reporter.get() : null;
    if (rep === null) return origExtend.call(rl, lock, ttl, callback);
    const expiredAlready = lock.expiration < Date.now();
    const p = origExtend.call(rl, lock, ttl).then((l) => {
      for (const h of holdingsOf(hs)) h.leaseEnd = lock.expiration;
      return l;
    }, (err) => {
      const t = now();
      const wall = Date.now();
      for (const h of holdingsOf(hs)) h.reportLost(rep, expiredAlready ? 'expired' : 'renewal', t, wall);
      throw err;
    });
    return callback ? p.nodeify(callback) : p;
  }

  // redlock 5's using(): acquire, extend automatically `threshold` ms before
  // the lease ends, run routine(signal), release.  A failed extension aborts
  // the signal (signal.error is the LockError) and is reported `lost`.
  // The routine runs as one owner: locks taken inside it share its party.
  function using(resource, ttl, settings, routine) {
    if (typeof settings === 'function') { routine = settings; settings = {}; }
    const threshold = settings && settings.automaticExtensionThreshold !== undefined
      ? settings.automaticExtensionThreshold : 500;
    return runAs(party(), async () => {
      const lock = await acquire(resource, ttl, settings || {});
      const controller = new AbortController();
      const signal = controller.signal;
      let timer = null;
      let extending = null;
      const schedule = () => {
        timer = setTimeout(() => {
          extending = extend(lock, ttl).then(schedule, (err) => {
            signal.error = err;
            controller.abort(err);
          });
        }, Math.max(0, lock.expiration - Date.now() - threshold));
      };
      schedule();
      try {
        return await routine(signal);
      } finally {
        clearTimeout(timer);
        if (extending) await extending.catch(() => {});
        // a lost lock is released too (its hold line; the loss is already
        // reported and the routine saw the signal): that failure is not thrown
        if (signal.aborted) await unlock(lock).catch(() => {});
        else await unlock(lock);
      }
    });
  }

  function disposer(resource, ttl, errorHandler) {
    errorHandler = errorHandler || function () {};
    return acquire(resource, ttl, {}).disposer((lock) => unlock(lock).catch(errorHandler));
  }

  if (!origLock) throw new TypeError('instrumentRedlock: not a node-redlock 4 instance');
  rl.acquire = rl.lock = (resource, ttl, callback) => acquire(resource, ttl, undefined, callback);
  rl.acquireWithOptions = rl.lockWithOptions = acquire;
  rl.release = rl.unlock = unlock;
  rl.extend = extend;
  rl.disposer = disposer;
  rl.using = using;
  if (origExec) rl._executeScript = executeScript;
  Object.defineProperty(rl, INSTRUMENTED, { value: true });
  return rl;
}

module.exports = { instrumentRedlock };
