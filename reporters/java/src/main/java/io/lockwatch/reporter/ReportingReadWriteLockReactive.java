// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import org.redisson.api.RLockReactive;
import org.redisson.api.RReadWriteLockReactive;

/**
 * A Redisson RReadWriteLockReactive's two locks, each a
 * {@link ReportingRLockReactive} over the read or write lock of a
 * {@link ReportingReadWriteLock} (the holder ids and key are theirs).
 */
public final class ReportingReadWriteLockReactive implements RReadWriteLockReactive {
    private final RReadWriteLockReactive d;
    private final ReportingRLockReactive read;
    private final ReportingRLockReactive write;

    ReportingReadWriteLockReactive(ReportingReadWriteLock lock, RReadWriteLockReactive delegate) {
        d = delegate;
        read = new ReportingRLockReactive((ReportingRLock) lock.readLock(), delegate.readLock());
        write = new ReportingRLockReactive((ReportingRLock) lock.writeLock(), delegate.writeLock());
    }

    @Override public RLockReactive readLock() { return read; }
    @Override public RLockReactive writeLock() { return write; }
    /** The wrapped reactive read/write lock. */
    public RReadWriteLockReactive unwrap() { return d; }
}
