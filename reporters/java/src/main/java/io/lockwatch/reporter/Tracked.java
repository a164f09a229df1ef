// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import io.lockwatch.reporter.Holdings.Holding;
import io.lockwatch.reporter.Holdings.Mine;

/**
 * The reporting common to every wrapped lock: time an acquire and send its
 * waiting and wait lines, open the thread's holding (or deepen it when
 * reentrant), send the hold at the outermost release, and the lost line at
 * most once per holding. A wrapper names its lock by key and holder kind
 * (stateId) and says how the library makes the holder id it writes to
 * Redis: holderPrefix + holderSuffix, with the thread's id between them
 * when perThread (Redisson). The lines' constant parts are made once here
 * (Lines.Heads), the owner and holder once per thread (Holdings.Mine).
 */
final class Tracked {
    /** One call of the wrapped library: true when it acquired. */
    interface Call {
        boolean run() throws InterruptedException;
    }

    final Reporter rep;
    final String key;
    private final String stateId;
    private final Lines.Heads heads;
    private final String holderPrefix;
    private final String holderSuffix;
    private final boolean perThread;

    Tracked(Reporter rep, String key, String kind, String holderPrefix, String holderSuffix, boolean perThread) {
        this.rep = rep;
        this.key = key;
        this.stateId = key + '\u0000' + kind;
        this.heads = new Lines.Heads(key);
        this.holderPrefix = holderPrefix;
        this.holderSuffix = holderSuffix;
        this.perThread = perThread;
    }

    /**
     * Runs one acquire. mayWait: a blocking lock or a try-lock with a wait
     * time (it sends waiting start first); leaseNanos: the lease asked for, 0
     * when a watchdog renews it. Every acquire that is not reentrant and
     * acquired sends waiting ok (the agent ties the holder id to the owner
     * by it, docs/line-protocol.md); one that sent start and did not acquire
     * sends waiting timeout or error. A reentrant acquire sends its wait only.
     */
    boolean acquire(boolean mayWait, long leaseNanos, Call c) throws InterruptedException {
        if (!rep.active()) return c.run();
        Mine m = rep.holdings.mine();
        Holding h = m.held.get(stateId);
        String pair = h != null ? h.pair : m.pair(holderPrefix, holderSuffix, perThread);
        boolean started = mayWait && h == null;
        if (started) rep.emit(Lines.waiting(heads, pair, "start"));
        Lines.Outcome o = Lines.Outcome.ERROR;
        long t0 = System.nanoTime();
        try {
            boolean ok = c.run();
            o = ok ? Lines.Outcome.OK : Lines.Outcome.TIMEOUT;
            return ok;
        } finally {
            long t1 = System.nanoTime();
            if (o == Lines.Outcome.OK) {
                long end = leaseNanos > 0 ? t1 + leaseNanos : 0;
                if (h != null) {
                    h.depth++;
                    h.leaseEndNanos = end; // a reentrant acquire sets the lease anew
                } else {
                    m.held.put(stateId, new Holding(pair, t1, end));
                }
            }
            if (h == null && (started || o == Lines.Outcome.OK)) rep.emit(Lines.waiting(heads, pair, o.word));
            rep.emit(Lines.wait(heads, (t1 - t0) / 1000, o));
        }
    }

    /** The thread's holding, if it has one (null when the reporter is idle). */
    Holding holding() {
        return rep.active() ? rep.holdings.mine().held.get(stateId) : null;
    }

    /** After a successful release: the hold, at the outermost one. */
    void released(Holding h) {
        if (h == null || --h.depth > 0) return;
        endHolding(h, System.nanoTime());
    }

    /** A release found the lock not ours: lost (expired), then the hold. */
    void lostOnRelease(Holding h) {
        if (h == null) return;
        long now = System.nanoTime();
        lost(h, now, Lines.EXPIRED);
        endHolding(h, now);
        rep.sendSoon();
    }

    /** A renewal found the lock not ours: lost (renewal); the hold comes at the release. */
    void lostOnRenewal(Holding h) {
        if (h == null) return;
        lost(h, System.nanoTime(), Lines.RENEWAL);
        rep.sendSoon();
    }

    /** A forced release (forceUnlock) ends the thread's holding whatever its depth. */
    void forced(Holding h) {
        if (h != null) endHolding(h, System.nanoTime());
    }

    private void lost(Holding h, long now, String reason) {
        if (h.lost) return;
        h.lost = true;
        rep.emit(Lines.lost(heads, h.pair, (now - h.acquiredNanos) / 1000, h.overrunUs(now), reason));
    }

    private void endHolding(Holding h, long now) {
        rep.holdings.mine().held.remove(stateId);
        rep.emit(Lines.hold(heads, (now - h.acquiredNanos) / 1000, h.pair));
    }
}
