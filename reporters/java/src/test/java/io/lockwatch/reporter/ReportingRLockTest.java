// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RReadWriteLock;
import org.springframework.integration.support.locks.LockRegistry;

/** The wrappers' lines, on fake locks (no Redis): reentrancy, outcomes, lost on release. */
class ReportingRLockTest {
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final Reporter rep = Reporter.create(new Config().samples("off").owner("p").tap(Taps.into(lines)));

    /** An RLock whose lock calls do nothing; unlock throws when told to; tryLock answers 'free'. */
    private static RLock fake(boolean[] unlockFails, boolean free) {
        return (RLock) Proxy.newProxyInstance(RLock.class.getClassLoader(), new Class<?>[] {RLock.class}, (p, m, a) -> {
            switch (m.getName()) {
                case "getName": return "lock:order:1";
                case "tryLock": return free;
                case "unlock":
                    if (unlockFails[0]) throw new IllegalMonitorStateException("attempt to unlock lock, not locked by current thread");
                    return null;
                default: return null;
            }
        });
    }

    @Test
    void reportsWaitHoldAndReentrancy() throws Exception {
        boolean[] fails = {false};
        RLock l = new ReportingRLock(fake(fails, true), rep, "cm-id", "");
        long tid = Thread.currentThread().getId();
        l.lock();
        l.lock(); // reentrant: the 5-field wait, no waiting end
        l.unlock();
        l.unlock();
        assertEquals(4, lines.size(), lines.toString());
        assertEquals("lw1 waiting lock:order:1 p/" + tid + " cm-id:" + tid + " start", lines.get(0));
        // the waiting end and the wait in one line
        assertTrue(lines.get(1).matches("lw1 wait lock:order:1 \\d+ ok p/" + tid + " cm-id:" + tid), lines.get(1));
        assertTrue(lines.get(2).matches("lw1 wait lock:order:1 \\d+ ok"), lines.get(2));
        assertTrue(lines.get(3).matches("lw1 hold lock:order:1 \\d+ p/" + tid + " cm-id:" + tid), lines.get(3));
        assertEquals(1, lines.stream().filter(s -> s.startsWith("lw1 hold")).count());
    }

    @Test
    void tryLockOutcomes() throws Exception {
        RLock taken = new ReportingRLock(fake(new boolean[] {false}, false), rep, "cm", ":write");
        assertFalse(taken.tryLock());
        assertFalse(taken.tryLock(10, TimeUnit.MILLISECONDS));
        // no start, not acquired: no waiting end, the 5-field wait
        assertTrue(lines.get(0).matches("lw1 wait lock:order:1 \\d+ timeout"), lines.get(0));
        assertTrue(lines.get(1).endsWith(":write start"), lines.get(1));
        long tid = Thread.currentThread().getId();
        assertTrue(lines.get(2).matches("lw1 wait lock:order:1 \\d+ timeout p/" + tid + " cm:" + tid + ":write"), lines.get(2));
        assertEquals(3, lines.size(), lines.toString());
    }

    /** An interrupted wait is the caller giving up: a timeout, not an error; the interrupt reaches it. */
    @Test
    void anInterruptedWaitIsATimeout() {
        RLock l = new ReportingRLock((RLock) Proxy.newProxyInstance(RLock.class.getClassLoader(),
                new Class<?>[] {RLock.class}, (p, m, a) -> {
                    if (m.getName().equals("getName")) return "lock:order:1";
                    if (m.getName().equals("lockInterruptibly")) throw new InterruptedException();
                    return null;
                }), rep, "cm", "");
        assertThrows(InterruptedException.class, l::lockInterruptibly);
        long tid = Thread.currentThread().getId();
        assertEquals(2, lines.size(), lines.toString());
        assertTrue(lines.get(1).matches("lw1 wait lock:order:1 \\d+ timeout p/" + tid + " cm:" + tid), lines.get(1));
        assertTrue(ReportingRLock.gaveUp(new java.util.concurrent.CompletionException(new java.util.concurrent.CancellationException())));
        assertFalse(ReportingRLock.gaveUp(new IllegalStateException("Redis down")));
    }

    /** The waiting rule: every acquire that acquired sends its waiting ok (in its wait), start only one that may wait. */
    @Test
    void everyAcquireThatAcquiredSendsWaitingOk() throws Exception {
        long tid = Thread.currentThread().getId();
        String pair = " p/" + tid + " cm:" + tid;
        RLock l = new ReportingRLock(fake(new boolean[] {false}, true), rep, "cm", "");
        assertTrue(l.tryLock()); // no wait time: ok, no start
        l.unlock();
        assertTrue(lines.get(0).matches("lw1 wait lock:order:1 \\d+ ok" + pair), lines.get(0));
        assertTrue(lines.get(1).startsWith("lw1 hold lock:order:1 "), lines.get(1));
        lines.clear();
        assertTrue(l.tryLock(1, TimeUnit.SECONDS));
        l.unlock();
        l.lockInterruptibly();
        l.unlock();
        l.lock(5, TimeUnit.SECONDS);
        l.unlock();
        for (int i = 0; i < 3; i++) {
            assertEquals("lw1 waiting lock:order:1" + pair + " start", lines.get(3 * i), lines.toString());
            assertTrue(lines.get(3 * i + 1).matches("lw1 wait lock:order:1 \\d+ ok" + pair), lines.get(3 * i + 1));
        }
        assertEquals(9, lines.size(), lines.toString());
    }

    @Test
    void readWriteLocksSendWaitingOkWithTheirHolderIds() {
        long tid = Thread.currentThread().getId();
        RLock inner = fake(new boolean[] {false}, true);
        RReadWriteLock rw = (RReadWriteLock) Proxy.newProxyInstance(RReadWriteLock.class.getClassLoader(),
                new Class<?>[] {RReadWriteLock.class}, (p, m, a) -> m.getName().endsWith("Lock") ? inner : null);
        // code typed against Redisson's interface takes it
        RReadWriteLock l = new ReportingReadWriteLock(rw, rep, "cm");
        assertTrue(l.writeLock().tryLock());
        assertTrue(l.readLock().tryLock()); // another holder kind: not reentrant
        assertTrue(lines.get(0).matches("lw1 wait lock:order:1 \\d+ ok p/" + tid + " cm:" + tid + ":write"), lines.get(0));
        assertTrue(lines.get(1).matches("lw1 wait lock:order:1 \\d+ ok p/" + tid + " cm:" + tid), lines.get(1));
        assertTrue(l.writeLock().tryLock()); // reentrant: the 5-field wait only
        assertTrue(lines.get(2).matches("lw1 wait lock:order:1 \\d+ ok"), lines.get(2));
        assertEquals(3, lines.size(), lines.toString());
    }

    @Test
    void lostWhenUnlockIsRefusedAfterTheLockWasTaken() throws Exception {
        boolean[] fails = {false};
        RLock l = new ReportingRLock(fake(fails, true), rep, "cm", "");
        l.lock(50, TimeUnit.MILLISECONDS);
        Thread.sleep(80);
        fails[0] = true;
        assertThrows(IllegalMonitorStateException.class, l::unlock);
        String lost = lines.get(lines.size() - 2);
        assertTrue(lost.startsWith("lw1 lost lock:order:1 "), lost);
        assertTrue(lost.endsWith(" expired"));
        long overrun = Long.parseLong(lost.split(" ")[6]);
        assertTrue(overrun >= 20_000, lost);
        assertTrue(lines.get(lines.size() - 1).startsWith("lw1 hold "));
        // an unlock without a holding (never locked here) reports nothing
        int n = lines.size();
        assertThrows(IllegalMonitorStateException.class, l::unlock);
        assertEquals(n, lines.size());
    }

    @Test
    void springRegistryReportsAndFindsExpiration() {
        boolean[] expired = {false};
        Lock inner = (Lock) Proxy.newProxyInstance(Lock.class.getClassLoader(), new Class<?>[] {Lock.class}, (p, m, a) -> {
            if (m.getName().equals("unlock") && expired[0])
                throw new java.util.ConcurrentModificationException("Lock was released in the store due to expiration. The integrity ...");
            return m.getName().equals("tryLock") ? Boolean.TRUE : null;
        });
        LockRegistry reg = key -> inner;
        ReportingLockRegistry r = new ReportingLockRegistry(reg, rep);
        Lock l = r.obtain("job");
        l.lock();
        expired[0] = true;
        assertThrows(java.util.ConcurrentModificationException.class, l::unlock);
        assertTrue(lines.get(0).startsWith("lw1 waiting job "));
        assertTrue(lines.get(0).endsWith(" - start"), "holder unknown: " + lines.get(0));
        assertTrue(lines.get(1).matches("lw1 wait job \\d+ ok \\S+ -"), lines.get(1));
        assertTrue(lines.get(2).matches("lw1 lost job \\S+ - \\d+ - expired"), lines.get(2));
        assertTrue(lines.get(3).startsWith("lw1 hold job "));
    }

    @Test
    void springLocksSendWaitingOkOnEveryAcquire() throws Exception {
        boolean[] free = {true};
        Lock inner = (Lock) Proxy.newProxyInstance(Lock.class.getClassLoader(), new Class<?>[] {Lock.class},
                (p, m, a) -> m.getName().equals("tryLock") ? (Object) free[0] : null);
        Lock l = new ReportingLockRegistry(key -> inner, rep).obtain("job");
        String pair = " p/" + Thread.currentThread().getId() + " -";
        assertTrue(l.tryLock());
        l.unlock();
        assertTrue(lines.get(0).matches("lw1 wait job \\d+ ok" + pair), lines.get(0));
        assertTrue(l.tryLock(1, TimeUnit.SECONDS));
        l.unlock();
        l.lockInterruptibly();
        l.unlock();
        for (int i = 0; i < 2; i++) {
            assertEquals("lw1 waiting job" + pair + " start", lines.get(2 + 3 * i), lines.toString());
            assertTrue(lines.get(3 + 3 * i).matches("lw1 wait job \\d+ ok" + pair), lines.get(3 + 3 * i));
        }
        assertEquals(8, lines.size(), lines.toString());
        // not acquired: no start sent, no waiting end (the 5-field wait); with a wait time: start, then the wait that ends it
        lines.clear();
        free[0] = false;
        assertFalse(l.tryLock());
        assertFalse(l.tryLock(1, TimeUnit.MILLISECONDS));
        assertTrue(lines.get(0).matches("lw1 wait job \\d+ timeout"), lines.toString());
        assertEquals("lw1 waiting job" + pair + " start", lines.get(1));
        assertTrue(lines.get(2).matches("lw1 wait job \\d+ timeout" + pair), lines.get(2));
        assertEquals(3, lines.size(), lines.toString());
    }

    @Test
    void idleReporterPassesCallsThrough() {
        Reporter off = Reporter.create(new Config().samples("off"));
        boolean[] fails = {true};
        RLock l = new ReportingRLock(fake(fails, true), off, "cm", "");
        l.lock();
        assertThrows(IllegalMonitorStateException.class, l::unlock);
        assertEquals(0, off.queued());
    }
}
