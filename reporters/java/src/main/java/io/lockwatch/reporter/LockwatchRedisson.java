// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * Reporting locks from a RedissonClient: {@code LockwatchRedisson.wrap(redisson)}
 * then getLock / getFairLock / getSpinLock / getReadWriteLock as on the
 * client, or {@link #wrap(RLock, RedissonClient)} for a lock already made;
 * getLockReactive / getFairLockReactive / getReadWriteLockReactive for
 * Redisson's reactive locks (the client's reactive() view), and
 * getLockRx / getFairLockRx / getReadWriteLockRx for its RxJava 3 locks
 * (the client's rxJava() view).
 * The holder ids need the client's id (RedissonClient.getId(), the
 * connection manager's id that prefixes Redisson's hash fields).
 */
public final class LockwatchRedisson {
    private final RedissonClient client;
    private final Reporter rep;
    private final String id;

    private LockwatchRedisson(RedissonClient client, Reporter rep) {
        this.client = client;
        this.rep = rep;
        this.id = client.getId();
    }

    /** Wraps the client with the process's reporter ({@link Reporter#get()}). */
    public static LockwatchRedisson wrap(RedissonClient client) {
        return new LockwatchRedisson(client, Reporter.get());
    }

    /** Wraps the client with the given reporter. */
    public static LockwatchRedisson wrap(RedissonClient client, Reporter rep) {
        return new LockwatchRedisson(client, rep);
    }

    /** Wraps one lock of the client (a write lock is told by its class). */
    public static RLock wrap(RLock lock, RedissonClient client) {
        return wrap(lock, client, Reporter.get());
    }

    /** Wraps one lock of the client with the given reporter. */
    public static RLock wrap(RLock lock, RedissonClient client, Reporter rep) {
        if (lock instanceof ReportingRLock) return lock;
        String suffix = lock.getClass().getSimpleName().equals("RedissonWriteLock") ? ":write" : "";
        return new ReportingRLock(lock, rep, client.getId(), suffix);
    }

    public RLock getLock(String name) { return new ReportingRLock(client.getLock(name), rep, id, ""); }
    public RLock getFairLock(String name) { return new ReportingRLock(client.getFairLock(name), rep, id, ""); }
    public RLock getSpinLock(String name) { return new ReportingRLock(client.getSpinLock(name), rep, id, ""); }
    public ReportingReadWriteLock getReadWriteLock(String name) {
        return new ReportingReadWriteLock(client.getReadWriteLock(name), rep, id);
    }

    // Redisson's reactive locks (RedissonClient.reactive()), reporting as
    // the async methods do: the owner is the thread id a call names, or the
    // subscribing thread's.
    public ReportingRLockReactive getLockReactive(String name) {
        return new ReportingRLockReactive((ReportingRLock) getLock(name), client.reactive().getLock(name));
    }
    public ReportingRLockReactive getFairLockReactive(String name) {
        return new ReportingRLockReactive((ReportingRLock) getFairLock(name), client.reactive().getFairLock(name));
    }
    public ReportingReadWriteLockReactive getReadWriteLockReactive(String name) {
        return new ReportingReadWriteLockReactive(getReadWriteLock(name), client.reactive().getReadWriteLock(name));
    }

    // Redisson's RxJava 3 locks (RedissonClient.rxJava()), reporting as the
    // reactive ones do.
    public ReportingRLockRx getLockRx(String name) {
        return new ReportingRLockRx((ReportingRLock) getLock(name), client.rxJava().getLock(name));
    }
    public ReportingRLockRx getFairLockRx(String name) {
        return new ReportingRLockRx((ReportingRLock) getFairLock(name), client.rxJava().getFairLock(name));
    }
    public ReportingReadWriteLockRx getReadWriteLockRx(String name) {
        return new ReportingReadWriteLockRx(getReadWriteLock(name), client.rxJava().getReadWriteLock(name));
    }

    /** The wrapped client. */
    public RedissonClient unwrap() { return client; }
    /** The reporter the locks report to. */
    public Reporter reporter() { return rep; }
}
