// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RLockReactive;
import org.redisson.misc.CompletableFutureWrapper;
import reactor.core.publisher.Mono;

/** Redisson's reactive lock through the wrapper, on fake locks (no Redis). */
class ReportingRLockReactiveTest {
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final Reporter rep = Reporter.create(new Config().samples("off").owner("p").tap(Taps.into(lines)));
    /** The fake lock's async calls, by name, in order. */
    private final List<String> calls = new CopyOnWriteArrayList<>();
    private final List<CompletableFuture<Object>> next = new ArrayList<>();

    private RLock fake() {
        return (RLock) Proxy.newProxyInstance(RLock.class.getClassLoader(), new Class<?>[] {RLock.class}, (p, m, a) -> {
            String n = m.getName();
            if (n.equals("getName")) return "lock:order:1";
            if (n.endsWith("Async")) {
                calls.add(n);
                CompletableFuture<Object> f = next.isEmpty()
                        ? CompletableFuture.completedFuture(n.startsWith("tryLock") || n.startsWith("force") ? Boolean.TRUE : null)
                        : next.remove(0);
                return new CompletableFutureWrapper<>(f);
            }
            return null;
        });
    }

    /** A reactive lock of another name, whose isLocked says yes: what the wrapper passes through. */
    private static RLockReactive fakeReactive() {
        return (RLockReactive) Proxy.newProxyInstance(RLockReactive.class.getClassLoader(),
                new Class<?>[] {RLockReactive.class}, (p, m, a) -> switch (m.getName()) {
                    case "isLocked" -> Mono.just(true);
                    case "getName" -> "reactive:name";
                    default -> null;
                });
    }

    private ReportingRLockReactive lock() {
        return new ReportingRLockReactive(new ReportingRLock(fake(), rep, "cm-id", ""), fakeReactive());
    }

    @Test
    void nothingHappensUntilSubscribed() {
        ReportingRLockReactive l = lock();
        Mono<Void> m = l.lock(7);
        assertTrue(calls.isEmpty());
        assertTrue(lines.isEmpty());
        m.block();
        assertEquals(List.of("lockAsync"), calls);
        assertEquals("lw1 waiting lock:order:1 p/7 cm-id:7 start", lines.get(0));
    }

    @Test
    void lockAndUnlockReportTheWaitAndTheHold() {
        ReportingRLockReactive l = lock();
        l.lock(7).block();
        l.unlock(7).block();
        assertEquals(3, lines.size(), lines.toString());
        assertTrue(lines.get(1).matches("lw1 wait lock:order:1 \\d+ ok p/7 cm-id:7"), lines.get(1));
        assertTrue(lines.get(2).matches("lw1 hold lock:order:1 \\d+ p/7 cm-id:7"), lines.get(2));
        assertTrue(rep.holdings.async.isEmpty());
    }

    @Test
    void aThreadIdNamedByNoCallIsTheSubscribingThreads() {
        ReportingRLockReactive l = lock();
        long me = Thread.currentThread().getId();
        assertTrue(l.tryLock().block());
        l.unlock().block();
        assertEquals(List.of("tryLockAsync", "unlockAsync"), calls);
        assertTrue(lines.get(0).matches("lw1 wait lock:order:1 \\d+ ok p/" + me + " cm-id:" + me), lines.get(0));
        assertTrue(lines.get(1).endsWith(" p/" + me + " cm-id:" + me), lines.get(1));
    }

    @Test
    void aRefusedUnlockIsALostLeaseAndTheErrorReachesTheSubscriber() {
        ReportingRLockReactive l = lock();
        l.lock(30, java.util.concurrent.TimeUnit.MILLISECONDS, 9).block();
        next.add(CompletableFuture.failedFuture(new IllegalMonitorStateException("not locked by current thread")));
        assertThrows(IllegalMonitorStateException.class, () -> l.unlock(9).block());
        assertTrue(lines.stream().anyMatch(s -> s.startsWith("lw1 lost lock:order:1 p/9 cm-id:9 ") && s.endsWith(" expired")), lines.toString());
        assertTrue(lines.get(lines.size() - 1).startsWith("lw1 hold lock:order:1 "), lines.toString());
    }

    @Test
    void aFailedTryLockIsATimeoutAndTheRestIsTheWrappedLocks() {
        ReportingRLockReactive l = lock();
        next.add(CompletableFuture.completedFuture(Boolean.FALSE));
        assertFalse(l.tryLock(3).block());
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.get(0).matches("lw1 wait lock:order:1 \\d+ timeout"), lines.get(0));
        assertTrue(l.isLocked().block());
        assertEquals("reactive:name", l.getName());
        assertEquals(List.of("tryLockAsync"), calls); // isLocked did not go through the lock
    }
}
