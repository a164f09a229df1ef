// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.RandomAccessFile;
import java.lang.reflect.Proxy;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * Wrapping a lock where it is locked makes the process's reporter
 * (Reporter.get()) on the locking thread: the key file and the agent's name
 * are the reporter's sending thread's to read and resolve, never the
 * locking thread's (docs/reporters.md "Configuration"). The key file is a
 * FIFO, whose read blocks until the test writes the key; the resolver
 * blocks until released and records the threads that call it.
 */
class FirstLockCallTest {
    static final String HOST = "agent.lockwatch.test";
    static final String KEY = "lockwatch test key: not a secret";

    @TempDir Path dir;
    private DatagramSocket sink;
    private Path fifo;
    private Thread keyWriter;
    private final List<Thread> resolvedOn = new CopyOnWriteArrayList<>();
    private final CountDownLatch resolving = new CountDownLatch(1);
    private final CountDownLatch releaseName = new CountDownLatch(1);
    private boolean resolvable = true;
    private final ExecutorService locker = Executors.newSingleThreadExecutor();
    private Supplier<Config> savedDefaults;
    private BiFunction<String, Integer, InetSocketAddress> savedResolver;

    @BeforeEach
    void firstUse() throws Exception {
        sink = new DatagramSocket(0, InetAddress.getLoopbackAddress());
        sink.setSoTimeout(5000);
        fifo = dir.resolve("key");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor());
        savedDefaults = Reporter.defaults;
        savedResolver = Reporter.resolver;
        BiFunction<String, Integer, InetSocketAddress> real = savedResolver;
        Reporter.resolver = (host, port) -> {
            if (!host.equals(HOST)) return real.apply(host, port);
            resolvedOn.add(Thread.currentThread());
            resolving.countDown();
            try {
                releaseName.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return resolvable ? new InetSocketAddress(InetAddress.getLoopbackAddress(), sink.getLocalPort())
                              : InetSocketAddress.createUnresolved(host, port);
        };
        Reporter.defaultReporter = null;
    }

    /** The process's settings: the agent by name, and the FIFO as key file when keyed. */
    private void environment(boolean keyed) {
        String samples = HOST + ":" + sink.getLocalPort();
        String keyFile = keyed ? fifo.toString() : null;
        Reporter.defaults = () -> new Config().samples(samples).keyFile(keyFile).owner("web-1");
    }

    /** Writes the key into the FIFO, once a reader opens it (on a thread of its own). */
    private void releaseKey() {
        keyWriter = new Thread(() -> {
            try {
                Files.writeString(fifo, KEY + "\n");
            } catch (Exception e) {
                // the test's end opened it to unblock this write
            }
        }, "key-writer");
        keyWriter.setDaemon(true);
        keyWriter.start();
    }

    @AfterEach
    void restore() throws Exception {
        releaseName.countDown();
        if (keyWriter == null) releaseKey();
        // whoever is blocked on the FIFO, reader or writer: an O_RDWR open never blocks and frees both
        try (RandomAccessFile unblock = new RandomAccessFile(fifo.toFile(), "rw")) {
            keyWriter.join(2000);
        }
        locker.shutdownNow(); // a locker still in Reporter.get() must be out before the next test
        assertTrue(locker.awaitTermination(5, TimeUnit.SECONDS));
        Reporter r = Reporter.defaultReporter;
        if (r != null) r.close();
        Reporter.defaultReporter = null;
        Reporter.defaults = savedDefaults;
        Reporter.resolver = savedResolver;
        sink.close();
    }

    /** An RLock whose lock calls do nothing (no Redis). */
    private static RLock fakeLock() {
        return (RLock) Proxy.newProxyInstance(RLock.class.getClassLoader(), new Class<?>[] {RLock.class}, (p, m, a) -> {
            switch (m.getName()) {
                case "getName": return "lock:first";
                case "tryLock": return true;
                default: return null;
            }
        });
    }

    private static RedissonClient fakeClient() {
        return (RedissonClient) Proxy.newProxyInstance(RedissonClient.class.getClassLoader(),
                new Class<?>[] {RedissonClient.class}, (p, m, a) -> m.getName().equals("getId") ? "cm-id" : null);
    }

    /** Wraps where it locks, Redisson's way and Spring's; returns the locking thread. */
    private Thread wrapAndLock() {
        RLock l = LockwatchRedisson.wrap(fakeLock(), fakeClient());
        l.lock();
        l.unlock();
        ReentrantLock inner = new ReentrantLock();
        Lock s = new ReportingLockRegistry(key -> inner).obtain("job");
        s.lock();
        s.unlock();
        return Thread.currentThread();
    }

    /** The locking thread, once it returned: within 5 s, or the test fails. */
    private Thread lockedWithin5s() throws Exception {
        Future<Thread> f = locker.submit(this::wrapAndLock);
        try {
            return f.get(5, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("the first lock call waited for the key file or the agent's name");
        }
    }

    private List<String> received(int n, byte[] key) throws Exception {
        List<String> got = new ArrayList<>();
        byte[] buf = new byte[9000];
        while (got.size() < n) {
            DatagramPacket p = new DatagramPacket(buf, buf.length);
            sink.receive(p);
            String dg = new String(p.getData(), 0, p.getLength(), StandardCharsets.US_ASCII);
            int nl = dg.indexOf('\n');
            long t = Long.parseLong(dg.substring(41, nl));
            byte[] body = dg.substring(nl + 1).getBytes(StandardCharsets.US_ASCII);
            assertEquals(dg, new String(new Signer(key).sign(t, body, body.length), StandardCharsets.US_ASCII));
            for (String l : dg.substring(nl + 1).split("\n")) got.add(l.replaceFirst("^(lw1 (wait|hold) \\S+) \\d+ ", "$1 <us> "));
        }
        return got;
    }

    @Test
    void wrapAndLockReturnWhileTheKeyIsReadAndTheNameResolves() throws Exception {
        environment(true);
        Thread me = lockedWithin5s();
        Reporter r = Reporter.defaultReporter;
        assertTrue(resolvedOn.isEmpty(), "resolved before the key was read");
        assertEquals(6, r.queued());
        assertEquals(0, r.sent());
        releaseKey();
        assertTrue(resolving.await(5, TimeUnit.SECONDS), "the reporter never resolved the agent's name");
        assertEquals(1, resolvedOn.size());
        assertNotEquals(me, resolvedOn.get(0));
        assertEquals("lockwatch-reporter", resolvedOn.get(0).getName());
        assertTrue(r.enabled());
        assertEquals(0, r.sent());
        releaseName.countDown();
        long tid = me.getId();
        String owner = "web-1:" + ProcessHandle.current().pid() + "/" + tid;
        assertEquals(List.of(
                "lw1 waiting lock:first " + owner + " cm-id:" + tid + " start",
                "lw1 wait lock:first <us> ok " + owner + " cm-id:" + tid,
                "lw1 hold lock:first <us> " + owner + " cm-id:" + tid,
                "lw1 waiting job " + owner + " - start",
                "lw1 wait job <us> ok " + owner + " -",
                "lw1 hold job <us> " + owner + " -"), received(6, KEY.getBytes(StandardCharsets.US_ASCII)));
        assertEquals(1, resolvedOn.size());
    }

    /** fn on a thread of its own returns within 10 s, or the test fails: it waited for the resolver. */
    private <T> T returnsWithin10s(String what, Callable<T> fn) throws Exception {
        ExecutorService ex = Executors.newSingleThreadExecutor();
        try {
            return ex.submit(fn).get(10, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(what + " waited for the resolver");
        } finally {
            ex.shutdownNow();
        }
    }

    /** The process's reporter, 6 lines queued, its thread resolving the agent's name until released. */
    private Reporter queuedWhileResolving() throws Exception {
        environment(false);
        lockedWithin5s();
        assertTrue(resolving.await(5, TimeUnit.SECONDS));
        return Reporter.defaultReporter;
    }

    /**
     * The agent's name never resolves (a DNS server that does not answer, a
     * key file on a hung NFS mount): close(), which the shutdown hook calls,
     * waits for it up to a second, then drops what was queued, counted as
     * failed sends; the sending thread, a daemon, sends nothing once the
     * resolver returns. Interrupted, close() stops waiting at once and keeps
     * the interrupt.
     */
    @Test
    void closeDoesNotWaitForAHungResolver() throws Exception {
        Reporter r = queuedWhileResolving();
        Thread sender = resolvedOn.get(0);
        assertTrue(sender.isDaemon(), "the sending thread keeps the JVM alive");
        returnsWithin10s("close()", () -> {
            r.close();
            return null;
        });
        assertEquals(6, r.queued());
        assertEquals(6, r.droppedSendFailed());
        assertEquals(0, r.sent());
        releaseName.countDown(); // the name resolves after all: nothing is sent
        sender.join(5000);
        assertFalse(sender.isAlive());
        sink.setSoTimeout(300);
        assertThrows(SocketTimeoutException.class, () -> sink.receive(new DatagramPacket(new byte[9000], 9000)));
        assertEquals(0, r.sent());
    }

    @Test
    void anInterruptedCloseReturnsAndKeepsTheInterrupt() throws Exception {
        Reporter r = queuedWhileResolving();
        assertTrue(returnsWithin10s("an interrupted close()", () -> {
            Thread.currentThread().interrupt();
            r.close();
            return Thread.interrupted();
        }), "close() swallowed the interrupt");
        assertEquals(6, r.droppedSendFailed());
        releaseName.countDown(); // the thread ends before the sink it resolves to closes
        resolvedOn.get(0).join(5000);
        assertEquals(0, r.sent());
    }

    /** create() returns after its bound while the name still resolves, the reporter enabled. */
    @Test
    void createDoesNotWaitForAHungResolver() throws Exception {
        long saved = Reporter.startWaitMs;
        Reporter.startWaitMs = 200;
        try {
            Reporter r = returnsWithin10s("create()", () -> Reporter.create(
                    new Config().samples(HOST + ":" + sink.getLocalPort()).owner("web-1")));
            assertTrue(r.enabled(), "disabled while its name is still resolving");
            releaseName.countDown();
            r.close();
        } finally {
            Reporter.startWaitMs = saved;
        }
    }

    @Test
    void anUnresolvableNameGivesOneWarningAndCountsWhatWasQueued() throws Exception {
        resolvable = false;
        environment(false);
        List<String> warnings = new CopyOnWriteArrayList<>();
        Handler h = new Handler() {
            @Override public void publish(LogRecord rec) { warnings.add(rec.getMessage()); }
            @Override public void flush() {}
            @Override public void close() {}
        };
        Logger log = Logger.getLogger("io.lockwatch.reporter");
        log.addHandler(h);
        try {
            Thread me = lockedWithin5s();
            Reporter r = Reporter.defaultReporter;
            assertTrue(resolving.await(5, TimeUnit.SECONDS));
            assertNotEquals(me, resolvedOn.get(0));
            assertEquals(6, r.queued());
            releaseName.countDown();
            assertTrue(r.flush(5000)); // what was queued: dropped and counted
            assertFalse(r.enabled());
            assertFalse(r.active(), "the wrappers go back to the library alone");
            assertEquals(6, r.queued());
            assertEquals(6, r.droppedSendFailed());
            assertEquals(0, r.sent());
        } finally {
            log.removeHandler(h);
        }
        assertEquals(1, warnings.size(), warnings.toString());
        assertTrue(warnings.get(0).contains(HOST), warnings.get(0));
    }
}
