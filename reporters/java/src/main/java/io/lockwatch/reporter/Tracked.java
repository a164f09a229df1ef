// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import io.lockwatch.reporter.Holdings.Holding;

/**
 * The reporting common to every wrapped lock: time an acquire and send its
 * waiting and wait lines, open the thread's holding (or deepen it when
 * reentrant), send the hold at the outermost release, and the lost line at
 * most once per holding. A wrapper names its lock by key and holder kind
 * (stateId) and computes the holder id the library writes to Redis.
 */
final class Tracked {
    /** One call of the wrapped library: true when it acquired. */
    interface Call {
        boolean run() throws InterruptedException;
    }

    final Reporter rep;
    final String key;
    private final String stateId;

    Tracked(Reporter rep, String key, String kind) {
        this.rep = rep;
        this.key = key;
        this.stateId = key + '\u0000' + kind;
    }

    /**
     * Runs one acquire. mayWait: a blocking lock or a try-lock with a wait
     * time (waiting lines are sent unless the thread already holds the lock);
     * leaseNanos: the lease asked for, 0 when a watchdog renews it.
     */
    boolean acquire(String holder, boolean mayWait, long leaseNanos, Call c) throws InterruptedException {
        if (!rep.active()) return c.run();
        Holding h = rep.holdings.get(stateId);
        String owner = h != null ? h.owner : rep.owner(Thread.currentThread().getId());
        boolean waiting = mayWait && h == null;
        if (waiting) rep.emit(Lines.waiting(key, owner, holder, "start"));
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
                    rep.holdings.put(stateId, new Holding(owner, holder, t1, end));
                }
            }
            if (waiting) rep.emit(Lines.waiting(key, owner, holder, o.word));
            rep.emit(Lines.wait(key, (t1 - t0) / 1000, o));
        }
    }

    /** The thread's holding, if it has one (null when the reporter is idle). */
    Holding holding() {
        return rep.active() ? rep.holdings.get(stateId) : null;
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
        rep.emit(Lines.lost(key, h.owner, h.holder, (now - h.acquiredNanos) / 1000, h.overrunUs(now), reason));
    }

    private void endHolding(Holding h, long now) {
        rep.holdings.remove(stateId);
        rep.emit(Lines.hold(key, (now - h.acquiredNanos) / 1000, h.owner, h.holder));
    }
}
