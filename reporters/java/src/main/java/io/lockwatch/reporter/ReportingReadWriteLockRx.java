// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import org.redisson.api.RLockRx;
import org.redisson.api.RReadWriteLockRx;

/**
 * A Redisson RReadWriteLockRx's two locks, each a
 * {@link ReportingRLockRx} over the read or write lock of a
 * {@link ReportingReadWriteLock} (the holder ids and key are theirs).
 */
public final class ReportingReadWriteLockRx implements RReadWriteLockRx {
    private final RReadWriteLockRx d;
    private final ReportingRLockRx read;
    private final ReportingRLockRx write;

    ReportingReadWriteLockRx(ReportingReadWriteLock lock, RReadWriteLockRx delegate) {
        d = delegate;
        read = new ReportingRLockRx((ReportingRLock) lock.readLock(), delegate.readLock());
        write = new ReportingRLockRx((ReportingRLock) lock.writeLock(), delegate.writeLock());
    }

    @Override public RLockRx readLock() { return read; }
    @Override public RLockRx writeLock() { return write; }
    /** The wrapped RxJava read/write lock. */
    public RReadWriteLockRx unwrap() { return d; }
}
