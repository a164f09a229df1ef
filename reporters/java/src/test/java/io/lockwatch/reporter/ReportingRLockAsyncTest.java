// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RFuture;
import org.redisson.api.RLock;
import org.redisson.misc.CompletableFutureWrapper;

/** Redisson's async lock methods through the wrapper, on a fake lock (no Redis). */
class ReportingRLockAsyncTest {
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final Reporter rep = Reporter.create(new Config().samples("off").owner("p").tap(Taps.into(lines)));

    /** What the fake's async calls return next, in order; when none is queued, a completed success. */
    private final List<CompletableFuture<Object>> next = new ArrayList<>();
    private final List<CompletableFuture<Object>> given = new ArrayList<>();

    private RLock fake() {
        return (RLock) Proxy.newProxyInstance(RLock.class.getClassLoader(), new Class<?>[] {RLock.class}, (p, m, a) -> {
            String n = m.getName();
            if (n.equals("getName")) return "lock:order:1";
            if (n.endsWith("Async")) {
                CompletableFuture<Object> f = next.isEmpty()
                        ? CompletableFuture.completedFuture(n.startsWith("tryLock") || n.startsWith("force") ? Boolean.TRUE : null)
                        : next.remove(0);
                given.add(f);
                return new CompletableFutureWrapper<>(f);
            }
            return null;
        });
    }

    private static String head(String s) {
        String[] f = s.split(" ");
        return f[0] + " " + f[1];
    }

    @Test
    void lockAndUnlockAsyncReportAsTheSynchronousOnesDo() throws Exception {
        RLock l = new ReportingRLock(fake(), rep, "cm-id", "");
        l.lockAsync(77).get();
        l.lockAsync(77).get(); // reentrant: the 5-field wait, no waiting end
        l.unlockAsync(77).get();
        l.unlockAsync(77).get();
        assertEquals(4, lines.size(), lines.toString());
        assertEquals("lw1 waiting lock:order:1 p/77 cm-id:77 start", lines.get(0));
        assertTrue(lines.get(1).matches("lw1 wait lock:order:1 \\d+ ok p/77 cm-id:77"), lines.get(1));
        assertTrue(lines.get(2).matches("lw1 wait lock:order:1 \\d+ ok"), lines.get(2));
        assertTrue(lines.get(3).matches("lw1 hold lock:order:1 \\d+ p/77 cm-id:77"), lines.get(3));
        assertTrue(rep.holdings.async.isEmpty());
    }

    @Test
    void tryLockAsyncThatFindsTheLockTakenIsATimeout() throws Exception {
        RLock l = new ReportingRLock(fake(), rep, "cm-id", "");
        next.add(CompletableFuture.completedFuture(Boolean.FALSE));
        assertFalse(l.tryLockAsync(5).get());
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.get(0).matches("lw1 wait lock:order:1 \\d+ timeout"), lines.get(0));
        next.add(CompletableFuture.completedFuture(Boolean.FALSE));
        assertFalse(l.tryLockAsync(10, 20, TimeUnit.MILLISECONDS, 5).get()); // a wait time: start, then the wait that ends it
        assertEquals(List.of("lw1 waiting", "lw1 wait"), lines.subList(1, 3).stream().map(ReportingRLockAsyncTest::head).toList());
        assertTrue(lines.get(2).matches("lw1 wait lock:order:1 \\d+ timeout p/5 cm-id:5"), lines.get(2));
        assertEquals(3, lines.size(), lines.toString());
        assertTrue(rep.holdings.async.isEmpty());
    }

    @Test
    void theCallersFutureCompletesAfterTheReport() throws Exception {
        RLock l = new ReportingRLock(fake(), rep, "cm-id", "");
        CompletableFuture<Object> lib = new CompletableFuture<>();
        next.add(lib);
        RFuture<Void> f = l.lockAsync(9);
        List<String> seen = new ArrayList<>();
        CompletableFuture<Void> then = f.toCompletableFuture().thenRun(() -> seen.addAll(lines));
        assertEquals(1, lines.size(), "only the start before the reply: " + lines);
        lib.complete(null);
        then.get(2, TimeUnit.SECONDS);
        assertEquals(2, seen.size(), "the caller's continuation sees the wait that ends it: " + seen);
        assertTrue(rep.holdings.async.containsKey(Holdings.asyncKey("lock:order:1\u0000", 9)));
    }

    @Test
    void cancellingTheCallersFutureCancelsTheLibrarys() {
        RLock l = new ReportingRLock(fake(), rep, "cm-id", "");
        next.add(new CompletableFuture<>());
        RFuture<Void> f = l.lockAsync();
        assertTrue(f.cancel(true));
        assertTrue(given.get(0).isCancelled(), "the library's acquire is cancelled");
        assertTrue(f.isCancelled());
        long tid = Thread.currentThread().getId();
        assertTrue(lines.get(lines.size() - 1).matches("lw1 wait lock:order:1 \\d+ timeout p/" + tid + " cm-id:" + tid), lines.toString());
        assertTrue(rep.holdings.async.isEmpty());
    }

    @Test
    void anUnlockAsyncRefusedReportsLostThenTheHoldAndFailsAsTheLibrarys() throws Exception {
        RLock l = new ReportingRLock(fake(), rep, "cm-id", "");
        l.lockAsync(3).get();
        IllegalMonitorStateException refused = new IllegalMonitorStateException("attempt to unlock lock, not locked by current thread");
        next.add(CompletableFuture.failedFuture(refused));
        ExecutionException e = assertThrows(ExecutionException.class, () -> l.unlockAsync(3).get());
        assertInstanceOf(IllegalMonitorStateException.class, e.getCause());
        RFuture<Void> again = l.lockAsync(3);
        again.join();
        assertTrue(lines.get(2).startsWith("lw1 lost lock:order:1 p/3 cm-id:3 "), lines.toString());
        assertTrue(lines.get(2).endsWith(" expired"), lines.get(2));
        assertTrue(lines.get(3).matches("lw1 hold lock:order:1 \\d+ p/3 cm-id:3"), lines.get(3));
        next.add(CompletableFuture.failedFuture(new IllegalStateException("connection lost")));
        assertThrows(ExecutionException.class, () -> l.unlockAsync(3).get());
        assertEquals(0, lines.stream().skip(4).filter(s -> s.startsWith("lw1 hold") || s.startsWith("lw1 lost")).count(),
                "a Redis error leaves the holding open: " + lines);
    }

    @Test
    void synchronousAndAsyncCallsOfOneThreadShareItsHolding() throws Exception {
        RLock l = new ReportingRLock(fake(), rep, "cm-id", "");
        long tid = Thread.currentThread().getId();
        l.lock();
        l.unlockAsync().get();
        l.lockAsync().get();
        l.unlock();
        l.lockAsync().get();
        l.forceUnlockAsync().get();
        assertEquals(3, lines.stream().filter(s -> s.startsWith("lw1 hold")).count(), lines.toString());
        assertEquals(3, lines.stream().filter(s -> s.matches("lw1 wait lock:order:1 \\d+ ok p/" + tid + " cm-id:" + tid)).count(),
                lines.toString());
        assertTrue(rep.holdings.async.isEmpty());
        assertEquals(null, rep.holdings.mine().held.get("lock:order:1\u0000"));
    }
}
