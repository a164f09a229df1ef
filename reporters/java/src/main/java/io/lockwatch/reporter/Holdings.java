// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import java.util.HashMap;

/**
 * What each thread holds, as the wrappers saw it: per thread, per lock
 * (its key and holder kind), the holding's start, its reentrancy depth, its
 * lease's end and whether its loss was reported. It is shared by every
 * wrapper of a reporter, so two wrappers of the same lock agree on the
 * holding, and reentrant acquires (Redisson, Spring) report their wait but
 * no waiting lines, and one hold at the outermost release.
 */
final class Holdings {
    static final class Holding {
        final String owner;
        final String holder;
        final long acquiredNanos;
        long leaseEndNanos; // 0: not known (a watchdog renews it)
        int depth = 1;
        boolean lost;

        Holding(String owner, String holder, long acquiredNanos, long leaseEndNanos) {
            this.owner = owner;
            this.holder = holder;
            this.acquiredNanos = acquiredNanos;
            this.leaseEndNanos = leaseEndNanos;
        }

        /** Microseconds past the lease's end at now; 0 before it; -1 when not known. */
        long overrunUs(long now) {
            if (leaseEndNanos == 0) return -1;
            return now <= leaseEndNanos ? 0 : (now - leaseEndNanos) / 1000;
        }
    }

    private final ThreadLocal<HashMap<String, Holding>> held = ThreadLocal.withInitial(HashMap::new);

    Holding get(String id) { return held.get().get(id); }

    void put(String id, Holding h) { held.get().put(id, h); }

    void remove(String id) { held.get().remove(id); }
}
