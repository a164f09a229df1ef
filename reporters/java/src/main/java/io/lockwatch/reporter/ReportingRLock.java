// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import io.lockwatch.reporter.Holdings.Holding;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.function.Supplier;
import org.redisson.api.ObjectListener;
import org.redisson.api.RFuture;
import org.redisson.api.RLock;
import org.redisson.misc.CompletableFutureWrapper;

/**
 * A Redisson RLock that reports its synchronous lock calls: lock,
 * lockInterruptibly and tryLock with a wait time (they may wait: waiting
 * start, then the wait with owner and holder, which is the waiting ok,
 * timeout or error too), tryLock() (the wait, with owner and holder when it
 * acquired), unlock (the hold at the outermost release of a reentrant
 * holding), and an unlock that Redisson refuses with
 * IllegalMonitorStateException after this thread took the lock (its
 * lease ran out, maybe someone else has it now): lost (expired), then the
 * hold, and the exception is thrown as before.
 * The async methods (lockAsync, tryLockAsync, unlockAsync, forceUnlockAsync)
 * are reported the same way, the owner being the thread id the call names
 * (the calling thread's when it names none); the future they return
 * completes after the report, with the library's value or exception, and
 * cancelling it cancels the library's.
 * The holder id is Redisson's hash field, "&lt;client id&gt;:&lt;thread id&gt;"
 * (":write" appended for a write lock). Everything else is the wrapped
 * lock's own, unreported. Made by {@link LockwatchRedisson}.
 */
public final class ReportingRLock implements RLock {
    private final RLock d;
    private final Tracked t;

    ReportingRLock(RLock delegate, Reporter rep, String clientId, String holderSuffix) {
        this.d = delegate;
        this.t = new Tracked(rep, delegate.getName(), holderSuffix, clientId + ":", holderSuffix, true);
    }

    /** The wrapped lock. */
    public RLock unwrap() { return d; }

    private static long leaseNanos(long leaseTime, TimeUnit unit) {
        return leaseTime > 0 ? unit.toNanos(leaseTime) : 0;
    }

    private void uninterruptibly(long leaseNanos, Runnable r) {
        try {
            t.acquire(true, leaseNanos, () -> {
                r.run();
                return true;
            });
        } catch (InterruptedException e) {
            // lock() does not throw it: the call above cannot either
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void lock() {
        if (!t.rep.active()) {
            d.lock();
            return;
        }
        uninterruptibly(0, d::lock);
    }

    @Override
    public void lock(long leaseTime, TimeUnit unit) {
        if (!t.rep.active()) {
            d.lock(leaseTime, unit);
            return;
        }
        uninterruptibly(leaseNanos(leaseTime, unit), () -> d.lock(leaseTime, unit));
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        t.acquire(true, 0, () -> {
            d.lockInterruptibly();
            return true;
        });
    }

    @Override
    public void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
        t.acquire(true, leaseNanos(leaseTime, unit), () -> {
            d.lockInterruptibly(leaseTime, unit);
            return true;
        });
    }

    @Override
    public boolean tryLock() {
        if (!t.rep.active()) return d.tryLock();
        try {
            return t.acquire(false, 0, d::tryLock);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false; // not reached: tryLock() does not throw it
        }
    }

    @Override
    public boolean tryLock(long waitTime, TimeUnit unit) throws InterruptedException {
        return t.acquire(waitTime > 0, 0, () -> d.tryLock(waitTime, unit));
    }

    @Override
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return t.acquire(waitTime > 0, leaseNanos(leaseTime, unit), () -> d.tryLock(waitTime, leaseTime, unit));
    }

    @Override
    public void unlock() {
        Holding h = t.holding();
        try {
            d.unlock();
        } catch (IllegalMonitorStateException e) {
            t.lostOnRelease(h);
            throw e;
        }
        t.released(h);
    }

    @Override
    public boolean forceUnlock() {
        Holding h = t.holding();
        boolean r = d.forceUnlock();
        t.forced(h);
        return r;
    }

    // -- the async methods --

    private static long currentThreadId() {
        return Thread.currentThread().getId();
    }

    private RFuture<Void> lockAsync(long leaseNanos, long threadId, Supplier<RFuture<Void>> call) {
        if (!t.rep.active()) return call.get();
        return acquireAsync(t.new Async(true, leaseNanos, threadId), call, v -> true);
    }

    private RFuture<Boolean> tryLockAsync(boolean mayWait, long leaseNanos, long threadId, Supplier<RFuture<Boolean>> call) {
        if (!t.rep.active()) return call.get();
        return acquireAsync(t.new Async(mayWait, leaseNanos, threadId), call, Boolean.TRUE::equals);
    }

    private static <V> RFuture<V> acquireAsync(Tracked.Async a, Supplier<RFuture<V>> call,
                                               java.util.function.Predicate<V> acquired) {
        RFuture<V> f;
        try {
            f = call.get();
        } catch (RuntimeException e) {
            a.done(Lines.Outcome.ERROR);
            throw e;
        }
        return after(f, (v, e) -> a.done(e != null ? gaveUp(e) ? Lines.Outcome.TIMEOUT : Lines.Outcome.ERROR
                : acquired.test(v) ? Lines.Outcome.OK : Lines.Outcome.TIMEOUT));
    }

    /** A future cancelled, or a wait interrupted: the caller gave up (timeout), not an error. */
    static boolean gaveUp(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof java.util.concurrent.CancellationException || c instanceof InterruptedException) return true;
        }
        return false;
    }

    private <V> RFuture<V> releaseAsync(long threadId, boolean forced, Supplier<RFuture<V>> call) {
        Tracked.AsyncRelease r = t.releaseAsync(threadId, forced);
        RFuture<V> f = call.get();
        return r == null ? f : after(f, (v, e) -> r.done(e));
    }

    /**
     * The future the caller gets for the library's f: it completes as f did,
     * after report ran (which never throws into it), and cancelling it
     * cancels f.
     */
    private static <V> RFuture<V> after(RFuture<V> f, java.util.function.BiConsumer<V, Throwable> report) {
        Out<V> out = new Out<>(f);
        f.whenComplete((v, e) -> {
            try {
                report.accept(v, e);
            } catch (Throwable ignored) {
                // never in the library's way
            }
            if (e != null) out.completeExceptionally(e);
            else out.complete(v);
        });
        return new CompletableFutureWrapper<>(out);
    }

    private static final class Out<V> extends CompletableFuture<V> {
        private final RFuture<V> lib;

        Out(RFuture<V> lib) {
            this.lib = lib;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            boolean r = lib.cancel(mayInterruptIfRunning);
            if (r) super.cancel(mayInterruptIfRunning);
            return r;
        }
    }

    @Override public RFuture<Void> lockAsync() { return lockAsync(0, currentThreadId(), d::lockAsync); }
    @Override public RFuture<Void> lockAsync(long threadId) { return lockAsync(0, threadId, () -> d.lockAsync(threadId)); }
    @Override public RFuture<Void> lockAsync(long leaseTime, TimeUnit unit) {
        return lockAsync(leaseNanos(leaseTime, unit), currentThreadId(), () -> d.lockAsync(leaseTime, unit));
    }
    @Override public RFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) {
        return lockAsync(leaseNanos(leaseTime, unit), threadId, () -> d.lockAsync(leaseTime, unit, threadId));
    }
    @Override public RFuture<Boolean> tryLockAsync() { return tryLockAsync(false, 0, currentThreadId(), d::tryLockAsync); }
    @Override public RFuture<Boolean> tryLockAsync(long threadId) {
        return tryLockAsync(false, 0, threadId, () -> d.tryLockAsync(threadId));
    }
    @Override public RFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) {
        return tryLockAsync(waitTime > 0, 0, currentThreadId(), () -> d.tryLockAsync(waitTime, unit));
    }
    @Override public RFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return tryLockAsync(waitTime > 0, leaseNanos(leaseTime, unit), currentThreadId(),
                () -> d.tryLockAsync(waitTime, leaseTime, unit));
    }
    @Override public RFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        return tryLockAsync(waitTime > 0, leaseNanos(leaseTime, unit), threadId,
                () -> d.tryLockAsync(waitTime, leaseTime, unit, threadId));
    }
    @Override public RFuture<Void> unlockAsync() { return releaseAsync(currentThreadId(), false, d::unlockAsync); }
    @Override public RFuture<Void> unlockAsync(long threadId) {
        return releaseAsync(threadId, false, () -> d.unlockAsync(threadId));
    }
    @Override public RFuture<Boolean> forceUnlockAsync() { return releaseAsync(currentThreadId(), true, d::forceUnlockAsync); }

    // -- the rest is the wrapped lock's own --

    @Override public String getName() { return d.getName(); }
    @Override public Condition newCondition() { return d.newCondition(); }
    @Override public boolean isLocked() { return d.isLocked(); }
    @Override public boolean isHeldByThread(long threadId) { return d.isHeldByThread(threadId); }
    @Override public boolean isHeldByCurrentThread() { return d.isHeldByCurrentThread(); }
    @Override public int getHoldCount() { return d.getHoldCount(); }
    @Override public long remainTimeToLive() { return d.remainTimeToLive(); }
    @Override public int addListener(ObjectListener listener) { return d.addListener(listener); }
    @Override public void removeListener(int listenerId) { d.removeListener(listenerId); }
    @Override public RFuture<Integer> addListenerAsync(ObjectListener listener) { return d.addListenerAsync(listener); }
    @Override public RFuture<Void> removeListenerAsync(int listenerId) { return d.removeListenerAsync(listenerId); }
    @Override public RFuture<Boolean> isHeldByThreadAsync(long threadId) { return d.isHeldByThreadAsync(threadId); }
    @Override public RFuture<Integer> getHoldCountAsync() { return d.getHoldCountAsync(); }
    @Override public RFuture<Boolean> isLockedAsync() { return d.isLockedAsync(); }
    @Override public RFuture<Long> remainTimeToLiveAsync() { return d.remainTimeToLiveAsync(); }

    @Override public String toString() { return "ReportingRLock(" + d + ")"; }
}
