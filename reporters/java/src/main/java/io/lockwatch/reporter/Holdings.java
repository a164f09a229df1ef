// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import java.util.HashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What each thread holds, as the wrappers saw it: per thread, per lock
 * (its key and holder kind), the holding's start, its reentrancy depth, its
 * lease's end and whether its loss was reported. It is shared by every
 * wrapper of a reporter, so two wrappers of the same lock agree on the
 * holding, and reentrant acquires (Redisson, Spring) report their wait but
 * no waiting lines, and one hold at the outermost release.
 *
 * A thread's state ({@link Mine}) also keeps its owner id and the escaped
 * "&lt;owner&gt; &lt;holder&gt;" pair of its last lock, so that a lock call
 * neither builds nor escapes them again (one thread-local look-up a call).
 *
 * Holdings taken through Redisson's async methods, whose owner is the
 * thread id the call names and whose replies complete on Redisson's own
 * threads, live in {@link #async} instead, by lock and thread id; a
 * synchronous call looks there only while it is not empty.
 *
 * The &lt;process&gt; part of the owner ids is fixed once for the reporter's
 * life. It is known at once, except outside Linux without a host name in
 * the environment, where the sending thread asks the JDK (which may ask
 * DNS) and {@link #settle}s it: a lock call that needs it before then
 * takes the fallback ({@link #process()}), so that every owner id of the
 * process names the same &lt;process&gt; and no lock call waits for DNS.
 */
final class Holdings {
    static final class Holding {
        final String pair; // "<owner> <holder>", escaped (Lines.pair)
        final long acquiredNanos;
        final String asyncKey; // its key in Holdings.async; null: in its thread's Mine
        long leaseEndNanos; // 0: not known (a watchdog renews it)
        int depth = 1;
        boolean lost;

        Holding(String pair, long acquiredNanos, long leaseEndNanos) {
            this(pair, acquiredNanos, leaseEndNanos, null);
        }

        Holding(String pair, long acquiredNanos, long leaseEndNanos, String asyncKey) {
            this.pair = pair;
            this.acquiredNanos = acquiredNanos;
            this.leaseEndNanos = leaseEndNanos;
            this.asyncKey = asyncKey;
        }

        /** Microseconds past the lease's end at now; 0 before it; -1 when not known. */
        long overrunUs(long now) {
            if (leaseEndNanos == 0) return -1;
            return now <= leaseEndNanos ? 0 : (now - leaseEndNanos) / 1000;
        }
    }

    /** One thread's holdings, owner id and last pair. */
    static final class Mine {
        final HashMap<String, Holding> held = new HashMap<>();
        final long threadId;
        final String owner;
        private String lastPrefix;
        private String lastSuffix;
        private boolean lastPerThread;
        private String lastPair;

        Mine(String process) {
            threadId = Thread.currentThread().getId();
            owner = process + "/" + threadId;
        }

        /**
         * The escaped pair of this thread's owner and the holder id
         * prefix + suffix, or prefix + thread id + suffix when perThread
         * (Redisson's "&lt;client id&gt;:&lt;thread id&gt;"); made again only when the
         * lock's holder id differs from the last one's.
         */
        String pair(String prefix, String suffix, boolean perThread) {
            if (lastPair != null && perThread == lastPerThread && prefix.equals(lastPrefix) && suffix.equals(lastSuffix)) return lastPair;
            String holder = perThread ? prefix + threadId + suffix : prefix + suffix;
            lastPair = Lines.pair(owner, holder);
            lastPrefix = prefix;
            lastSuffix = suffix;
            lastPerThread = perThread;
            return lastPair;
        }
    }

    private final ThreadLocal<Mine> mine;
    private final AtomicReference<String> process;
    private final String fallback;
    /** The async methods' holdings, by {@link #asyncKey}. */
    final ConcurrentHashMap<String, Holding> async = new ConcurrentHashMap<>();

    /** process: null when not known yet (settled later, else fallback). */
    Holdings(String process, String fallback) {
        this.process = new AtomicReference<>(process);
        this.fallback = fallback;
        mine = ThreadLocal.withInitial(() -> new Mine(process()));
    }

    /** The &lt;process&gt; part of owner ids, fixed to the fallback when not known yet. */
    String process() {
        String p = process.get();
        if (p != null) return p;
        process.compareAndSet(null, fallback);
        return process.get();
    }

    /** Whether the &lt;process&gt; part is fixed already. */
    boolean settled() { return process.get() != null; }

    /** Fixes the &lt;process&gt; part, unless a lock call fixed it first. */
    void settle(String p) { process.compareAndSet(null, p); }

    static String asyncKey(String stateId, long threadId) {
        return stateId + '\u0000' + threadId;
    }

    /** The calling thread's state. */
    Mine mine() { return mine.get(); }
}
