// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.redisson.api.ObjectListener;
import org.redisson.api.RFuture;
import org.redisson.api.RLockReactive;
import reactor.core.publisher.Mono;

/**
 * A Redisson RLockReactive that reports its lock calls - lock, tryLock,
 * unlock and forceUnlock, every overload - as {@link ReportingRLock}
 * reports its async methods: Redisson's own reactive lock runs these same
 * async methods of its lock when a Mono is subscribed, and so does this one,
 * through the reporting lock. The owner is the thread id the call names, or
 * the subscribing thread's when it names none (as with Redisson's: pass a
 * thread id of your own to lock and unlock from different threads).
 * Everything else is the wrapped reactive lock's own. Made by
 * {@link LockwatchRedisson}.
 */
public final class ReportingRLockReactive implements RLockReactive {
    private final ReportingRLock l;
    private final RLockReactive d;

    ReportingRLockReactive(ReportingRLock lock, RLockReactive delegate) {
        this.l = lock;
        this.d = delegate;
    }

    /** The wrapped reactive lock. */
    public RLockReactive unwrap() { return d; }

    /** The Mono of an async call, made when it is subscribed. */
    private static <V> Mono<V> mono(Supplier<RFuture<V>> call) {
        return Mono.fromCompletionStage(call::get);
    }

    @Override public Mono<Void> lock() { return mono(l::lockAsync); }
    @Override public Mono<Void> lock(long threadId) { return mono(() -> l.lockAsync(threadId)); }
    @Override public Mono<Void> lock(long leaseTime, TimeUnit unit) { return mono(() -> l.lockAsync(leaseTime, unit)); }
    @Override public Mono<Void> lock(long leaseTime, TimeUnit unit, long threadId) {
        return mono(() -> l.lockAsync(leaseTime, unit, threadId));
    }
    @Override public Mono<Boolean> tryLock() { return mono(l::tryLockAsync); }
    @Override public Mono<Boolean> tryLock(long threadId) { return mono(() -> l.tryLockAsync(threadId)); }
    @Override public Mono<Boolean> tryLock(long waitTime, TimeUnit unit) { return mono(() -> l.tryLockAsync(waitTime, unit)); }
    @Override public Mono<Boolean> tryLock(long waitTime, long leaseTime, TimeUnit unit) {
        return mono(() -> l.tryLockAsync(waitTime, leaseTime, unit));
    }
    @Override public Mono<Boolean> tryLock(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        return mono(() -> l.tryLockAsync(waitTime, leaseTime, unit, threadId));
    }
    @Override public Mono<Void> unlock() { return mono(l::unlockAsync); }
    @Override public Mono<Void> unlock(long threadId) { return mono(() -> l.unlockAsync(threadId)); }
    @Override public Mono<Boolean> forceUnlock() { return mono(l::forceUnlockAsync); }

    // -- the rest is the wrapped reactive lock's own --

    @Override public String getName() { return d.getName(); }
    @Override public Mono<Integer> getHoldCount() { return d.getHoldCount(); }
    @Override public Mono<Boolean> isLocked() { return d.isLocked(); }
    @Override public Mono<Boolean> isHeldByThread(long threadId) { return d.isHeldByThread(threadId); }
    @Override public Mono<Long> remainTimeToLive() { return d.remainTimeToLive(); }
    @Override public Mono<Integer> addListener(ObjectListener listener) { return d.addListener(listener); }
    @Override public Mono<Void> removeListener(int listenerId) { return d.removeListener(listenerId); }
}
