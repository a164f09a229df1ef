// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.reactivex.rxjava3.core.Completable;
import io.reactivex.rxjava3.core.Single;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RLockRx;
import org.redisson.misc.CompletableFutureWrapper;

/** Redisson's RxJava lock through the wrapper, on fake locks (no Redis). */
class ReportingRLockRxTest {
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

    /** An RxJava lock of another name, whose isLocked says yes: what the wrapper passes through. */
    private static RLockRx fakeRx() {
        return (RLockRx) Proxy.newProxyInstance(RLockRx.class.getClassLoader(),
                new Class<?>[] {RLockRx.class}, (p, m, a) -> switch (m.getName()) {
                    case "isLocked" -> Single.just(true);
                    case "getName" -> "rx:name";
                    default -> null;
                });
    }

    private ReportingRLockRx lock() {
        return new ReportingRLockRx(new ReportingRLock(fake(), rep, "cm-id", ""), fakeRx());
    }

    @Test
    void nothingHappensUntilSubscribed() {
        ReportingRLockRx l = lock();
        Completable c = l.lock(7);
        assertTrue(calls.isEmpty());
        assertTrue(lines.isEmpty());
        c.blockingAwait();
        assertEquals(List.of("lockAsync"), calls);
        assertEquals("lw1 waiting lock:order:1 p/7 cm-id:7 start", lines.get(0));
    }

    @Test
    void lockAndUnlockReportTheWaitAndTheHold() {
        ReportingRLockRx l = lock();
        l.lock(7).blockingAwait();
        l.unlock(7).blockingAwait();
        assertEquals(3, lines.size(), lines.toString());
        assertTrue(lines.get(1).matches("lw1 wait lock:order:1 \\d+ ok p/7 cm-id:7"), lines.get(1));
        assertTrue(lines.get(2).matches("lw1 hold lock:order:1 \\d+ p/7 cm-id:7"), lines.get(2));
        assertTrue(rep.holdings.async.isEmpty());
    }

    @Test
    void aThreadIdNamedByNoCallIsTheSubscribingThreads() {
        ReportingRLockRx l = lock();
        long me = Thread.currentThread().getId();
        assertTrue(l.tryLock().blockingGet());
        l.unlock().blockingAwait();
        assertEquals(List.of("tryLockAsync", "unlockAsync"), calls);
        assertTrue(lines.get(0).matches("lw1 wait lock:order:1 \\d+ ok p/" + me + " cm-id:" + me), lines.get(0));
        assertTrue(lines.get(1).endsWith(" p/" + me + " cm-id:" + me), lines.get(1));
    }

    @Test
    void aRefusedUnlockIsALostLeaseAndTheErrorReachesTheSubscriber() {
        ReportingRLockRx l = lock();
        l.lock(30, java.util.concurrent.TimeUnit.MILLISECONDS, 9).blockingAwait();
        next.add(CompletableFuture.failedFuture(new IllegalMonitorStateException("not locked by current thread")));
        assertThrows(IllegalMonitorStateException.class, () -> l.unlock(9).blockingAwait());
        assertTrue(lines.stream().anyMatch(s -> s.startsWith("lw1 lost lock:order:1 p/9 cm-id:9 ") && s.endsWith(" expired")), lines.toString());
        assertTrue(lines.get(lines.size() - 1).startsWith("lw1 hold lock:order:1 "), lines.toString());
    }

    @Test
    void aFailedTryLockIsATimeoutAndTheRestIsTheWrappedLocks() {
        ReportingRLockRx l = lock();
        next.add(CompletableFuture.completedFuture(Boolean.FALSE));
        assertFalse(l.tryLock(3).blockingGet());
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.get(0).matches("lw1 wait lock:order:1 \\d+ timeout"), lines.get(0));
        assertTrue(l.isLocked().blockingGet());
        assertEquals("rx:name", l.getName());
        assertEquals(List.of("tryLockAsync"), calls); // isLocked did not go through the lock
    }

    @Test
    void disposingAPendingLockCancelsTheCall() {
        ReportingRLockRx l = lock();
        CompletableFuture<Object> pending = new CompletableFuture<>();
        next.add(pending);
        io.reactivex.rxjava3.disposables.Disposable s = l.lock(7).subscribe();
        assertEquals(List.of("lockAsync"), calls);
        s.dispose();
        assertTrue(pending.isCancelled());
        assertTrue(lines.get(lines.size() - 1).matches("lw1 wait lock:order:1 \\d+ timeout p/7 cm-id:7"), lines.toString());
    }

    @Test
    void anErrorWrappedByALaterStageReachesTheSubscriberUnwrapped() {
        ReportingRLockRx l = lock();
        next.add(CompletableFuture.failedFuture(new java.util.concurrent.CompletionException(new IllegalStateException("x"))));
        assertThrows(IllegalStateException.class, () -> l.tryLock(1, 2, java.util.concurrent.TimeUnit.SECONDS, 5).blockingGet());
    }
}
