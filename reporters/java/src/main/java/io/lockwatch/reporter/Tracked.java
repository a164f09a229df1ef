// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import io.lockwatch.reporter.Holdings.Holding;
import io.lockwatch.reporter.Holdings.Mine;
import java.util.concurrent.CompletionException;

/**
 * The reporting common to every wrapped lock: time an acquire and send its
 * waiting start and its end (one wait line, with owner and holder when it
 * is the waiting end too), open the thread's holding (or deepen it when
 * reentrant), send the hold at the outermost release, and the lost line at
 * most once per holding. A wrapper names its lock by key and holder kind
 * (stateId) and says how the library makes the holder id it writes to
 * Redis: holderPrefix + holderSuffix, with the thread's id between them
 * when perThread (Redisson). The lines' constant parts are made once here
 * (Lines.Heads), the owner and holder once per thread (Holdings.Mine).
 *
 * Redisson's async methods name their owner by thread id and complete on
 * Redisson's threads: Async and AsyncRelease report them the same way,
 * their holdings in Holdings.async (ReportingRLock makes the futures; this
 * class names no Redisson type, so that the Spring wrapper needs none).
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
     * acquired sends its waiting ok (the agent ties the holder id to the
     * owner by it, docs/line-protocol.md); one that sent start and did not
     * acquire sends its waiting timeout or error: either as the 7-field wait
     * (ended). A reentrant acquire, or a try-lock that sent no start and did
     * not acquire, sends the 5-field wait.
     */
    boolean acquire(boolean mayWait, long leaseNanos, Call c) throws InterruptedException {
        if (!rep.active()) return c.run();
        Mine m = rep.holdings.mine();
        Holding h = m.held.get(stateId);
        if (h == null && !rep.holdings.async.isEmpty()) h = rep.holdings.async.get(Holdings.asyncKey(stateId, m.threadId));
        String pair = h != null ? h.pair : m.pair(holderPrefix, holderSuffix, perThread);
        boolean started = mayWait && h == null;
        if (started) rep.emit(Lines.waiting(heads, pair, "start"));
        Lines.Outcome o = Lines.Outcome.ERROR;
        long t0 = System.nanoTime();
        try {
            boolean ok = c.run();
            o = ok ? Lines.Outcome.OK : Lines.Outcome.TIMEOUT;
            return ok;
        } catch (InterruptedException e) {
            o = Lines.Outcome.TIMEOUT; // the caller gave up waiting, as a deadline would
            throw e;
        } finally {
            long t1 = System.nanoTime();
            if (o == Lines.Outcome.OK) {
                long end = leaseNanos > 0 ? t1 + leaseNanos : 0;
                if (h != null) {
                    deepen(h, end); // a reentrant acquire sets the lease anew
                } else {
                    m.held.put(stateId, new Holding(pair, t1, end));
                }
            }
            ended(h, pair, started, (t1 - t0) / 1000, o);
        }
    }

    /**
     * The line of an acquire that returned or failed: its wait, with owner
     * and holder (its waiting end too, the 7-field wait) when it sent a
     * start or acquired and is not reentrant (h, the holding it found,
     * null); the 5-field wait otherwise.
     */
    private void ended(Holding h, String pair, boolean started, long us, Lines.Outcome o) {
        if (started || (h == null && o == Lines.Outcome.OK)) rep.emit(Lines.waitEnd(heads, us, o, pair));
        else rep.emit(Lines.wait(heads, us, o));
    }

    /** The thread's holding, if it has one (null when the reporter is idle). */
    Holding holding() {
        if (!rep.active()) return null;
        Mine m = rep.holdings.mine();
        Holding h = m.held.get(stateId);
        if (h == null && !rep.holdings.async.isEmpty()) h = rep.holdings.async.get(Holdings.asyncKey(stateId, m.threadId));
        return h;
    }

    /** After a successful release: the hold, at the outermost one. */
    void released(Holding h) {
        if (h == null || shallower(h) > 0) return;
        endHolding(h, System.nanoTime());
    }

    private static void deepen(Holding h, long leaseEndNanos) {
        synchronized (h) {
            h.depth++;
            h.leaseEndNanos = leaseEndNanos;
        }
    }

    private static int shallower(Holding h) {
        synchronized (h) {
            return --h.depth;
        }
    }

    // -- Redisson's async methods --

    /** The escaped pair of owner &lt;process&gt;/threadId and its holder id. */
    private String pairOf(long threadId) {
        String holder = perThread ? holderPrefix + threadId + holderSuffix : holderPrefix + holderSuffix;
        return Lines.pair(rep.holdings.process() + "/" + threadId, holder);
    }

    /** The holding of thread id threadId: the calling thread's own, or one taken by an async call. */
    private Holding holdingOf(long threadId) {
        if (threadId == Thread.currentThread().getId()) {
            Holding h = rep.holdings.mine().held.get(stateId);
            if (h != null) return h;
        }
        return rep.holdings.async.isEmpty() ? null : rep.holdings.async.get(Holdings.asyncKey(stateId, threadId));
    }

    /**
     * An async acquire (Redisson's *Async methods; ReportingRLock makes the
     * future) for thread id threadId, reported as acquire() reports a
     * synchronous one: made when the call is (its waiting start), done()
     * when it completed (on Redisson's thread).
     */
    final class Async {
        final Holding h;
        final String pair;
        final boolean started;
        final long leaseNanos;
        final long threadId;
        final long t0;

        Async(boolean mayWait, long leaseNanos, long threadId) {
            this.h = holdingOf(threadId);
            this.pair = h != null ? h.pair : pairOf(threadId);
            this.started = mayWait && h == null;
            this.leaseNanos = leaseNanos;
            this.threadId = threadId;
            if (started) rep.emit(Lines.waiting(heads, pair, "start"));
            this.t0 = System.nanoTime();
        }

        void done(Lines.Outcome o) {
            long t1 = System.nanoTime();
            if (o == Lines.Outcome.OK) {
                long end = leaseNanos > 0 ? t1 + leaseNanos : 0;
                if (h != null) {
                    deepen(h, end);
                } else {
                    String k = Holdings.asyncKey(stateId, threadId);
                    Holding old = rep.holdings.async.putIfAbsent(k, new Holding(pair, t1, end, k));
                    if (old != null) deepen(old, end);
                }
            }
            ended(h, pair, started, (t1 - t0) / 1000, o);
        }
    }

    /**
     * An async release for thread id threadId (forced: forceUnlockAsync,
     * which ends the holding whatever its depth), or null when there is no
     * holding to report: the hold at the outermost one, lost (expired) then
     * the hold when the library refused it (IllegalMonitorStateException).
     * A holding in the calling thread's own map is taken off it now, on its
     * thread (a release that then fails with a Redis error leaves it one
     * level shallower); an async one on completion.
     */
    AsyncRelease releaseAsync(long threadId, boolean forced) {
        Holding h = rep.active() ? holdingOf(threadId) : null;
        if (h == null) return null;
        boolean endsNow = false;
        if (h.asyncKey == null && (forced || shallower(h) <= 0)) {
            rep.holdings.mine().held.remove(stateId);
            endsNow = true;
        }
        return new AsyncRelease(h, forced, endsNow);
    }

    final class AsyncRelease {
        private final Holding h;
        private final boolean forced;
        private final boolean endsNow;

        AsyncRelease(Holding h, boolean forced, boolean endsNow) {
            this.h = h;
            this.forced = forced;
            this.endsNow = endsNow;
        }

        /** The release completed: e null when it released, else what it failed with. */
        void done(Throwable e) {
            long now = System.nanoTime();
            if (e == null) {
                if (h.asyncKey == null ? endsNow : forced || shallower(h) <= 0) endHolding(h, now);
            } else if (refused(e)) {
                lost(h, now, Lines.EXPIRED);
                endHolding(h, now);
                rep.sendSoon();
            }
        }
    }

    private static boolean refused(Throwable e) {
        while (e instanceof CompletionException && e.getCause() != null) e = e.getCause();
        return e instanceof IllegalMonitorStateException;
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
        synchronized (h) {
            if (h.lost) return;
            h.lost = true;
        }
        rep.emit(Lines.lost(heads, h.pair, (now - h.acquiredNanos) / 1000, h.overrunUs(now), reason));
    }

    private void endHolding(Holding h, long now) {
        if (h.asyncKey != null) rep.holdings.async.remove(h.asyncKey, h);
        else rep.holdings.mine().held.remove(stateId, h);
        rep.emit(Lines.hold(heads, (now - h.acquiredNanos) / 1000, h.pair));
    }
}
