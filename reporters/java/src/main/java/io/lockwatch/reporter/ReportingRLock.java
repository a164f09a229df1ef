// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import io.lockwatch.reporter.Holdings.Holding;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import org.redisson.api.ObjectListener;
import org.redisson.api.RFuture;
import org.redisson.api.RLock;

/**
 * A Redisson RLock that reports its synchronous lock calls: lock,
 * lockInterruptibly and tryLock with a wait time (they may wait: waiting
 * start, then waiting ok, timeout or error, then the wait), tryLock()
 * (waiting ok when it acquired, then the wait), unlock (the hold at the
 * outermost release of a reentrant holding), and an unlock that Redisson
 * refuses with IllegalMonitorStateException after this
 * thread took the lock (its lease ran out, maybe someone else has it now):
 * lost (expired), then the hold, and the exception is thrown as before.
 * The holder id is Redisson's hash field, "&lt;client id&gt;:&lt;thread id&gt;"
 * (":write" appended for a write lock). The async methods and everything
 * else are the wrapped lock's own, unreported. Made by {@link LockwatchRedisson}.
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
    @Override public RFuture<Boolean> forceUnlockAsync() { return d.forceUnlockAsync(); }
    @Override public RFuture<Void> unlockAsync() { return d.unlockAsync(); }
    @Override public RFuture<Void> unlockAsync(long threadId) { return d.unlockAsync(threadId); }
    @Override public RFuture<Boolean> tryLockAsync() { return d.tryLockAsync(); }
    @Override public RFuture<Void> lockAsync() { return d.lockAsync(); }
    @Override public RFuture<Void> lockAsync(long threadId) { return d.lockAsync(threadId); }
    @Override public RFuture<Void> lockAsync(long leaseTime, TimeUnit unit) { return d.lockAsync(leaseTime, unit); }
    @Override public RFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) { return d.lockAsync(leaseTime, unit, threadId); }
    @Override public RFuture<Boolean> tryLockAsync(long threadId) { return d.tryLockAsync(threadId); }
    @Override public RFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) { return d.tryLockAsync(waitTime, unit); }
    @Override public RFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) { return d.tryLockAsync(waitTime, leaseTime, unit); }
    @Override public RFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId) { return d.tryLockAsync(waitTime, leaseTime, unit, threadId); }
    @Override public RFuture<Boolean> isHeldByThreadAsync(long threadId) { return d.isHeldByThreadAsync(threadId); }
    @Override public RFuture<Integer> getHoldCountAsync() { return d.getHoldCountAsync(); }
    @Override public RFuture<Boolean> isLockedAsync() { return d.isLockedAsync(); }
    @Override public RFuture<Long> remainTimeToLiveAsync() { return d.remainTimeToLiveAsync(); }

    @Override public String toString() { return "ReportingRLock(" + d + ")"; }
}
