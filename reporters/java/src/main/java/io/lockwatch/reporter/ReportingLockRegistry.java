// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import io.lockwatch.reporter.Holdings.Holding;
import java.lang.reflect.Field;
import java.util.ConcurrentModificationException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration LockRegistry that decorates another: obtain() returns
 * a java.util.concurrent.locks.Lock that reports lock / lockInterruptibly /
 * tryLock with a wait time (waiting start, then the wait with owner and
 * holder, which is the waiting ok, timeout or error too), tryLock() (the
 * wait, with owner and holder when it acquired), unlock (the hold), and,
 * when the registry says "Lock was released in the store due to
 * expiration" on unlock, lost (expired) before the hold, the exception
 * thrown as before; renewLock failing for a lock the thread holds reports
 * lost (renewal).
 *
 * For a RedisLockRegistry the key is the Redis key ("&lt;registry key&gt;:&lt;lock
 * key&gt;") and the holder id its client id, both read from its private
 * fields once (Spring exposes neither): a registry whose fields cannot be
 * read reports under the lock key and holder "-". The lease is its
 * expireAfter unless a renewal scheduler is set.
 */
public final class ReportingLockRegistry implements ExpirableLockRegistry, RenewableLockRegistry {
    private final LockRegistry d;
    private final Reporter rep;
    private final String prefix;   // "<registry key>:" or ""
    private final String clientId; // "" when not known
    private volatile long leaseNanos; // 0 when not known (a renewal scheduler renews it)

    public ReportingLockRegistry(LockRegistry delegate) {
        this(delegate, Reporter.get());
    }

    public ReportingLockRegistry(LockRegistry delegate, Reporter rep) {
        this.d = delegate;
        this.rep = rep;
        Object registryKey = field(delegate, "registryKey");
        Object id = field(delegate, "clientId");
        Object expire = field(delegate, "expireAfter");
        Object renewal = field(delegate, "renewalTaskScheduler");
        prefix = registryKey instanceof String ? registryKey + ":" : "";
        clientId = id instanceof String ? (String) id : "";
        leaseNanos = expire instanceof Long && renewal == null ? TimeUnit.MILLISECONDS.toNanos((Long) expire) : 0;
    }

    private static Object field(Object o, String name) {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                continue;
            } catch (Exception | LinkageError e) {
                return null; // not readable here (a module, a security manager)
            }
        }
        return null;
    }

    /** The wrapped registry. */
    public LockRegistry unwrap() { return d; }

    /** The Redis client id the holder ids carry ("" when not known). */
    public String clientId() { return clientId; }

    /** The holder id is the registry's client id, the same for every thread. */
    private Tracked tracked(Object lockKey) {
        return new Tracked(rep, prefix + lockKey, "", clientId, "", false);
    }

    @Override
    public Lock obtain(Object lockKey) {
        return new ReportingLock(d.obtain(lockKey), tracked(lockKey), leaseNanos);
    }

    @Override
    public void expireUnusedOlderThan(long age) {
        if (!(d instanceof ExpirableLockRegistry)) throw new UnsupportedOperationException("the wrapped registry does not expire locks");
        ((ExpirableLockRegistry) d).expireUnusedOlderThan(age);
    }

    @Override
    public void renewLock(Object lockKey) {
        if (!(d instanceof RenewableLockRegistry)) throw new UnsupportedOperationException("the wrapped registry does not renew locks");
        Tracked t = tracked(lockKey);
        Holding h = t.holding();
        try {
            ((RenewableLockRegistry) d).renewLock(lockKey);
        } catch (IllegalStateException e) {
            if (h != null) t.lostOnRenewal(h);
            throw e;
        }
        if (h != null && leaseNanos > 0) h.leaseEndNanos = System.nanoTime() + leaseNanos;
    }

    @Override
    public void setRenewalTaskScheduler(org.springframework.scheduling.TaskScheduler scheduler) {
        if (!(d instanceof RenewableLockRegistry)) throw new UnsupportedOperationException("the wrapped registry does not renew locks");
        ((RenewableLockRegistry) d).setRenewalTaskScheduler(scheduler);
        leaseNanos = 0; // renewed in the background from now on: its end is not known here
    }

    /** The reporting Lock that obtain() returns. */
    static final class ReportingLock implements Lock {
        private final Lock l;
        private final Tracked t;
        private final long lease;

        ReportingLock(Lock l, Tracked t, long lease) {
            this.l = l;
            this.t = t;
            this.lease = lease;
        }

        @Override
        public void lock() {
            if (!t.rep.active()) {
                l.lock();
                return;
            }
            try {
                t.acquire(true, lease, () -> {
                    l.lock();
                    return true;
                });
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // not reached: lock() does not throw it
            }
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            t.acquire(true, lease, () -> {
                l.lockInterruptibly();
                return true;
            });
        }

        @Override
        public boolean tryLock() {
            if (!t.rep.active()) return l.tryLock();
            try {
                return t.acquire(false, lease, l::tryLock);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false; // not reached: tryLock() does not throw it
            }
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            return t.acquire(time > 0, lease, () -> l.tryLock(time, unit));
        }

        @Override
        public void unlock() {
            Holding h = t.holding();
            try {
                l.unlock();
            } catch (ConcurrentModificationException | IllegalStateException e) {
                String m = e.getMessage();
                if (m != null && m.contains("due to expiration")) t.lostOnRelease(h);
                throw e;
            }
            t.released(h);
        }

        @Override
        public Condition newCondition() { return l.newCondition(); }

        @Override
        public String toString() { return "ReportingLock(" + l + ")"; }
    }
}
