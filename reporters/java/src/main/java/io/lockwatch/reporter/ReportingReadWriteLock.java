// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import org.redisson.api.RLock;
import org.redisson.api.RReadWriteLock;

/**
 * A Redisson RReadWriteLock's two locks, each a {@link ReportingRLock}: the
 * read lock's holder id is Redisson's "&lt;client id&gt;:&lt;thread id&gt;", the write
 * lock's the same with ":write" (the hash fields Redisson writes). Both
 * report under the read/write lock's key.  An RReadWriteLock (Redisson 3.52's:
 * its two locks), so code typed against Redisson's interface takes it.
 */
public final class ReportingReadWriteLock implements RReadWriteLock {
    private final RReadWriteLock d;
    private final ReportingRLock read;
    private final ReportingRLock write;

    ReportingReadWriteLock(RReadWriteLock delegate, Reporter rep, String clientId) {
        d = delegate;
        read = new ReportingRLock(delegate.readLock(), rep, clientId, "");
        write = new ReportingRLock(delegate.writeLock(), rep, clientId, ":write");
    }

    @Override public RLock readLock() { return read; }
    @Override public RLock writeLock() { return write; }
    /** The wrapped read/write lock. */
    public RReadWriteLock unwrap() { return d; }
}
