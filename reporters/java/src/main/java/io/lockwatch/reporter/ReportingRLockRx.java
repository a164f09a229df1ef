// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import io.reactivex.rxjava3.core.Completable;
import io.reactivex.rxjava3.core.Single;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.redisson.api.ObjectListener;
import org.redisson.api.RFuture;
import org.redisson.api.RLockRx;

/**
 * A Redisson RLockRx (RxJava 3) that reports its lock calls - lock, tryLock,
 * unlock and forceUnlock, every overload - as {@link ReportingRLock}
 * reports its async methods: Redisson's own RxJava lock runs these same
 * async methods of its lock when a Completable or Single is subscribed, and
 * so does this one, through the reporting lock. The owner is the thread id
 * the call names, or the subscribing thread's when it names none (as with
 * Redisson's: pass a thread id of your own to lock and unlock from different
 * threads). Everything else is the wrapped RxJava lock's own. Made by
 * {@link LockwatchRedisson}.
 */
public final class ReportingRLockRx implements RLockRx {
    private final ReportingRLock l;
    private final RLockRx d;

    ReportingRLockRx(ReportingRLock lock, RLockRx delegate) {
        this.l = lock;
        this.d = delegate;
    }

    /** The wrapped RxJava lock. */
    public RLockRx unwrap() { return d; }

    /**
     * The Completable of an async call, made when it is subscribed; disposing
     * it cancels the call's future (as cancelling the reactive lock's Mono does).
     */
    private static Completable completable(Supplier<RFuture<Void>> call) {
        return Completable.create(e -> {
            RFuture<Void> f = call.get();
            e.setCancellable(() -> f.cancel(true));
            f.whenComplete((v, x) -> {
                if (x != null) e.tryOnError(cause(x));
                else e.onComplete();
            });
        });
    }

    /** The Single of an async call, made when it is subscribed; as {@link #completable}. */
    private static <V> Single<V> single(Supplier<RFuture<V>> call) {
        return Single.create(e -> {
            RFuture<V> f = call.get();
            e.setCancellable(() -> f.cancel(true));
            f.whenComplete((v, x) -> {
                if (x != null) e.tryOnError(cause(x));
                else e.onSuccess(v);
            });
        });
    }

    /** The exception a future failed with, out of the CompletionException a later stage wraps it in. */
    private static Throwable cause(Throwable x) {
        return x instanceof CompletionException && x.getCause() != null ? x.getCause() : x;
    }

    @Override public Completable lock() { return completable(l::lockAsync); }
    @Override public Completable lock(long threadId) { return completable(() -> l.lockAsync(threadId)); }
    @Override public Completable lock(long leaseTime, TimeUnit unit) { return completable(() -> l.lockAsync(leaseTime, unit)); }
    @Override public Completable lock(long leaseTime, TimeUnit unit, long threadId) {
        return completable(() -> l.lockAsync(leaseTime, unit, threadId));
    }
    @Override public Single<Boolean> tryLock() { return single(l::tryLockAsync); }
    @Override public Single<Boolean> tryLock(long threadId) { return single(() -> l.tryLockAsync(threadId)); }
    @Override public Single<Boolean> tryLock(long waitTime, TimeUnit unit) { return single(() -> l.tryLockAsync(waitTime, unit)); }
    @Override public Single<Boolean> tryLock(long waitTime, long leaseTime, TimeUnit unit) {
        return single(() -> l.tryLockAsync(waitTime, leaseTime, unit));
    }
    @Override public Single<Boolean> tryLock(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        return single(() -> l.tryLockAsync(waitTime, leaseTime, unit, threadId));
    }
    @Override public Completable unlock() { return completable(l::unlockAsync); }
    @Override public Completable unlock(long threadId) { return completable(() -> l.unlockAsync(threadId)); }
    @Override public Single<Boolean> forceUnlock() { return single(l::forceUnlockAsync); }

    // -- the rest is the wrapped RxJava lock's own --

    @Override public String getName() { return d.getName(); }
    @Override public Single<Integer> getHoldCount() { return d.getHoldCount(); }
    @Override public Single<Boolean> isLocked() { return d.isLocked(); }
    @Override public Single<Boolean> isHeldByThread(long threadId) { return d.isHeldByThread(threadId); }
    @Override public Single<Long> remainTimeToLive() { return d.remainTimeToLive(); }
    @Override public Single<Integer> addListener(ObjectListener listener) { return d.addListener(listener); }
    @Override public Completable removeListener(int listenerId) { return d.removeListener(listenerId); }
}
