// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * Sends lockwatch samples over UDP without ever blocking, throwing into or
 * slowing the application (docs/reporters.md). The lock path formats a line
 * and offers it to a bounded queue (a full queue drops the line and counts
 * it); one daemon thread packs the lines into datagrams of at most 1432
 * bytes (the mac line included; 8192 when every destination is a loopback
 * address: fewer sends, each of which wakes the agent), signs them when a
 * key is set, and sends
 * each to every destination on a non-blocking channel when the next line
 * would not fit or every 200 ms; the lock path wakes it only when a few
 * datagrams' worth of lines wait ({@link #WAKE_AT}). A failed send drops
 * the datagram and counts its lines; nothing is retried. A reporter whose configuration cannot work
 * (no destination resolves, an unreadable key) is off, with one warning.
 *
 * <p>The sending thread also reads the key file and resolves the
 * destinations' names, before it sends anything: {@link #get()} is called
 * when a lock is wrapped, which may be where it is locked
 * ({@code wrap(client.getLock(n), client).lock()}), so the first call must
 * not wait for DNS or the disk. Lines queue meanwhile, bounded as ever;
 * when that step turns reporting off, what was queued is dropped and
 * counted as failed sends, and the wrappers go back to the library alone.
 * Nobody waits for that step without a bound (a resolver that does not
 * answer, a key file on a hung NFS mount may never return): {@link #create}
 * waits up to {@link #startWaitMs}, {@link #close()} (the shutdown hook) up
 * to {@link #CLOSE_WAIT_MS}; a close that gives up drops what is queued,
 * counted as failed sends, and the thread, a daemon, ends without sending
 * once the resolver returns ({@link #phase}).
 */
public final class Reporter implements AutoCloseable {
    /** The largest datagram sent, mac line included. */
    public static final int MAX_DATAGRAM = 1432;
    /**
     * The largest datagram sent when every destination is a loopback
     * address: the most the agent reads of one (docs/line-protocol.md
     * "Datagrams"); loopback has no 1500-byte MTU.
     */
    public static final int LOOPBACK_DATAGRAM = 8192;
    /** How often a partial datagram is sent, in milliseconds. */
    public static final long FLUSH_MS = 200;
    private static final Logger LOG = Logger.getLogger("io.lockwatch.reporter");
    /**
     * The queue length at which the lock path wakes the sending thread
     * (a few datagrams' worth, far below the queue's 8192). Waking it for
     * every line would cost a thread switch per lock call, most of the
     * reporter's price on a busy machine; below this the 200 ms tick sends.
     */
    static final int WAKE_AT = 256;
    /**
     * The longest close() waits for the sending thread to resolve the names:
     * the flush at exit is best effort, about a second (docs/reporters.md).
     */
    static final long CLOSE_WAIT_MS = 1000;
    /**
     * The longest create() and process() wait for it: glibc's timeout for one
     * DNS query (resolv.conf {@code timeout:}, 5 s), so a resolver that
     * answers, even slowly, is waited for and a stuck one is not (tests
     * shorten it).
     */
    static volatile long startWaitMs = 5000;
    /** The sending thread's {@link #phase}s. */
    private static final int STARTING = 0, RUNNING = 1, ABANDONED = 2;
    /** The process's reporter (package-private: tests make it again). */
    static volatile Reporter defaultReporter;
    /** Where {@link #get()} reads its configuration: the environment (tests set another). */
    static volatile Supplier<Config> defaults = Config::fromEnv;
    /**
     * How a destination's name is resolved: on the sending thread only
     * (tests replace it, to see which thread calls it).
     */
    static volatile BiFunction<String, Integer, InetSocketAddress> resolver = InetSocketAddress::new;

    private final Consumer<String> tap;
    private final ConcurrentLinkedQueue<String> queue; // lock-free: the lock path never waits for the sender
    private final AtomicInteger queueLen = new AtomicInteger(); // its length (CLQ.size() walks the queue)
    private final int queueCapacity;
    private final Config config; // what the sending thread applies (start())
    // the sending thread's, set by start(): it alone sends
    private List<InetSocketAddress> dests = List.of();
    private Signer signer;
    private DatagramChannel channel;
    private final Thread sender;
    private final CountDownLatch ready = new CountDownLatch(1); // start() done
    // The thread sends only once it moved this from STARTING to RUNNING; a
    // close() that gave up waiting for it moves it to ABANDONED first.
    private final AtomicInteger phase = new AtomicInteger(STARTING);
    private volatile boolean closed;
    private volatile boolean off; // start() found it cannot send: the lock path stops
    private volatile boolean urgent; // sendSoon(): the partial datagram goes at once
    final Holdings holdings;

    private final AtomicLong queued = new AtomicLong();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong datagrams = new AtomicLong();
    private final AtomicLong droppedFull = new AtomicLong();
    private final AtomicLong droppedSend = new AtomicLong();

    /**
     * The process's reporter, made from the environment on first use; a
     * shutdown hook sends what it has queued when the JVM exits. It never
     * waits for the key file or DNS (its sending thread reads and resolves
     * them): the first use may be on a thread about to lock.
     */
    public static Reporter get() {
        Reporter r = defaultReporter;
        if (r == null) {
            synchronized (Reporter.class) {
                r = defaultReporter;
                if (r == null) {
                    defaultReporter = r = new Reporter(defaults.get());
                    if (r.sender != null) { // at exit, send what is queued (best effort, up to a second)
                        Reporter closing = r;
                        try {
                            Runtime.getRuntime().addShutdownHook(new Thread(closing::close, "lockwatch-reporter-exit"));
                        } catch (IllegalStateException | SecurityException e) {
                            // already shutting down, or not allowed: nothing to flush into
                        }
                    }
                }
            }
        }
        return r;
    }

    /**
     * A reporter of its own (tests, several agents); most code uses
     * {@link #get()}. Returns once its sending thread has read the key file
     * and resolved the names (the application's start waits, not a lock call),
     * or after 5 s when it has not (or when interrupted, the interrupt kept):
     * {@link #enabled()} is then true, lines queue, and they go once it is
     * done (or are dropped and counted if it turns reporting off).
     */
    public static Reporter create(Config c) {
        Reporter r = new Reporter(c);
        r.awaitReady(startWaitMs);
        return r;
    }

    /** Reads the settings only: the key file and the names are the sending thread's (start()). */
    private Reporter(Config c) {
        tap = c.tap;
        config = c;
        String proc = c.owner;
        // 1 to 200 bytes in UTF-8, as the agent counts an owner's (not
        // UTF-16 chars: 200 "é" are 400 bytes)
        if (proc == null || proc.isEmpty() || proc.getBytes(StandardCharsets.UTF_8).length > 200) {
            if (proc != null && !proc.isEmpty()) LOG.warning("lockwatch: LOCKWATCH_OWNER longer than 200 bytes, using hostname:pid");
            String h = hostnameWithoutDns();
            proc = h != null ? h + ":" + ProcessHandle.current().pid() : null;
        } else {
            // the pid too: several JVMs may share one name (a pod's), and
            // each is an owner of its own
            proc = proc + ":" + ProcessHandle.current().pid();
        }
        holdings = new Holdings(proc, "localhost:" + ProcessHandle.current().pid());
        queueCapacity = Math.max(1, c.queueCapacity);
        String spec = c.samples == null ? "" : c.samples.trim();
        if (spec.isEmpty() || spec.equalsIgnoreCase("off")) {
            queue = null;
            sender = null;
            ready.countDown();
            return;
        }
        queue = new ConcurrentLinkedQueue<>();
        sender = new Thread(this::run, "lockwatch-reporter");
        sender.setDaemon(true); // never keeps the JVM alive
        sender.start();
    }

    /**
     * The sending thread's first step: read the key file, resolve the
     * destinations, open the channel, and outside Linux ask the JDK for the
     * host's name. False (one warning, reporting off, what was queued
     * dropped and counted) when that cannot work. The key comes first: a
     * bad one turns reporting off without asking DNS.
     */
    private boolean start() {
        Config c = config;
        if (c.keyFile != null && c.keyFile.isBlank()) {
            LOG.warning("lockwatch: LOCKWATCH_KEY_FILE is set but empty; datagrams go unsigned");
        } else if (c.keyFile != null) {
            try {
                signer = new Signer(readKey(c.keyFile));
            } catch (Exception e) {
                LOG.warning("lockwatch: LOCKWATCH_KEY_FILE " + c.keyFile + ": " + why(e, c.keyFile) + "; reporting off");
                return turnOff();
            }
        }
        List<InetSocketAddress> ds = parseDests(c.samples);
        if (ds.isEmpty()) return turnOff();
        try {
            channel = DatagramChannel.open();
            channel.configureBlocking(false);
        } catch (IOException e) {
            LOG.warning("lockwatch: UDP socket: " + e.getMessage() + "; reporting off");
            return turnOff();
        }
        dests = ds;
        if (!holdings.settled()) holdings.settle(hostnameFromJdk() + ":" + ProcessHandle.current().pid());
        return true;
    }

    /** Reporting off once lines may have been queued: the lock path stops, what waits is counted. */
    private boolean turnOff() {
        off = true;
        dropQueued();
        return false;
    }

    /** Drops what is queued, counting it as failed sends. */
    private void dropQueued() {
        while (queue.poll() != null) {
            queueLen.decrementAndGet();
            droppedSend.incrementAndGet();
        }
    }

    /**
     * Waits up to ms until the sending thread has applied the settings (the
     * application asking, never a lock call); false when it has not. An
     * interrupt ends the wait, and is kept.
     */
    private boolean awaitReady(long ms) {
        if (Thread.currentThread() == sender) return true;
        try {
            return ready.await(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return ready.getCount() == 0;
        }
    }

    /**
     * The host's name where the system gives it without DNS: from the
     * kernel (Linux), else from the environment (COMPUTERNAME on Windows,
     * HOSTNAME where it is exported); null when neither says.
     */
    static String hostnameWithoutDns() {
        try {
            String h = Files.readString(Paths.get("/proc/sys/kernel/hostname")).trim();
            if (!h.isEmpty()) return h;
        } catch (IOException | RuntimeException e) {
            // not Linux: the environment, else the sending thread asks the JDK
        }
        for (String v : new String[] {"COMPUTERNAME", "HOSTNAME"}) {
            String h = System.getenv(v);
            if (h != null && !h.trim().isEmpty()) return h.trim();
        }
        return null;
    }

    /** The host's name from the JDK: getLocalHost() may ask DNS (the sending thread only). */
    private static String hostnameFromJdk() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return "localhost";
        }
    }

    /** LOOPBACK_DATAGRAM when every destination is a loopback address, else MAX_DATAGRAM. */
    static int datagramSize(List<InetSocketAddress> ds) {
        for (InetSocketAddress d : ds) {
            if (d.getAddress() == null || !d.getAddress().isLoopbackAddress()) return MAX_DATAGRAM;
        }
        return LOOPBACK_DATAGRAM;
    }

    /** Resolves every destination once, on the sending thread: the lock path never does DNS. */
    static List<InetSocketAddress> parseDests(String spec) {
        List<InetSocketAddress> out = new ArrayList<>();
        if (spec == null) return out;
        spec = spec.trim();
        if (spec.isEmpty() || spec.equalsIgnoreCase("off")) return out;
        for (String part : spec.split(",")) {
            part = part.trim();
            if (part.isEmpty()) continue;
            if (out.size() == 8) {
                LOG.warning("lockwatch: more than 8 destinations in LOCKWATCH_SAMPLES, " + part + " ignored");
                continue;
            }
            int colon = part.lastIndexOf(':');
            String host = colon > 0 ? part.substring(0, colon) : "";
            if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
            int port = -1;
            try {
                if (colon > 0) port = Integer.parseInt(part.substring(colon + 1));
            } catch (NumberFormatException e) {
                port = -1;
            }
            if (host.isEmpty() || port < 1 || port > 65535) {
                LOG.warning("lockwatch: destination " + part + " is not host:port; not reporting there");
                continue;
            }
            InetSocketAddress a = resolver.apply(host, port);
            if (a.isUnresolved()) {
                LOG.warning("lockwatch: destination " + part + " does not resolve; not reporting there");
                continue;
            }
            if (out.contains(a)) {
                // two names of one agent would count every sample twice
                LOG.warning("lockwatch: destination " + part + " is " + a.getAddress().getHostAddress() + ":" + port
                        + " again; sending there once");
                continue;
            }
            out.add(a);
        }
        return out;
    }

    /** The key file's first line, trailing newlines dropped, 16 to 4096 bytes. */
    static byte[] readKey(String path) throws IOException {
        byte[] b = Files.readAllBytes(Paths.get(path));
        int n = 0;
        while (n < b.length && b[n] != '\n') n++;
        while (n > 0 && b[n - 1] == '\r') n--;
        if (n < 16 || n > 4096) throw new IOException("the key is " + n + " bytes, not 16 to 4096");
        byte[] k = new byte[n];
        System.arraycopy(b, 0, k, 0, n);
        return k;
    }

    /**
     * What went wrong reading the key, in words: the file exceptions' own
     * message is often just the path, which the warning already names.
     */
    static String why(Exception e, String path) {
        if (e instanceof NoSuchFileException) return "no such file";
        if (e instanceof AccessDeniedException) return "permission denied";
        if (e instanceof FileSystemException && ((FileSystemException) e).getReason() != null) {
            return ((FileSystemException) e).getReason(); // "Not a directory", ...
        }
        String m = e.getMessage();
        if (m != null && !m.isEmpty() && !m.equals(path)) return m;
        // no better text: the class's name in words (FileSystemLoopException: "file system loop")
        String name = e.getClass().getSimpleName().replaceFirst("Exception$", "");
        return name.replaceAll("([a-z0-9])([A-Z])", "$1 $2").toLowerCase(Locale.ROOT);
    }

    /** Whether this reporter sends anything (or may: its thread still resolving the names). */
    public boolean enabled() { return sender != null && !closed && !off; }

    /** Whether a lock call has anything to report to (sending or a tap). */
    boolean active() { return (sender != null && !closed && !off) || tap != null; }

    /**
     * The &lt;process&gt; part of owner ids, once the sending thread has
     * settled it (waiting up to 5 s: past that, what a lock call would take,
     * {@code localhost:<pid>}, kept for the reporter's life).
     */
    public String process() {
        if (awaitReady(startWaitMs) && !holdings.settled()) {
            holdings.settle(hostnameFromJdk() + ":" + ProcessHandle.current().pid());
        }
        return holdings.process();
    }

    /** Lines put in the queue. */
    public long queued() { return queued.get(); }
    /** Lines sent in a datagram that at least one destination took. */
    public long sent() { return sent.get(); }
    /** Datagrams sent (one per destination). */
    public long datagrams() { return datagrams.get(); }
    /** Lines dropped because the queue was full. */
    public long droppedQueueFull() { return droppedFull.get(); }
    /** Lines dropped because no destination took their datagram. */
    public long droppedSendFailed() { return droppedSend.get(); }

    /** Queues one line without waiting; a full queue drops it and counts it. */
    void emit(String line) {
        Consumer<String> t = tap;
        if (t != null) {
            try {
                t.accept(line);
            } catch (RuntimeException ignored) {
                // a tap never breaks a lock call
            }
        }
        if (sender == null || closed) return;
        if (off) { // a call under way when reporting turned off: counted, not kept
            queued.incrementAndGet();
            droppedSend.incrementAndGet();
            return;
        }
        int n = queueLen.incrementAndGet();
        if (n > queueCapacity) {
            queueLen.decrementAndGet();
            droppedFull.incrementAndGet();
            return;
        }
        queue.offer(line);
        queued.incrementAndGet();
        if (off) dropQueued(); // turned off while this line was queued
        else if (n == WAKE_AT) LockSupport.unpark(sender);
    }

    /**
     * Sends what is queued now rather than at the next tick: after a lost
     * line, whose arrival the agent times a lease overrun by.
     */
    void sendSoon() {
        if (sender == null || closed) return;
        urgent = true;
        LockSupport.unpark(sender);
    }

    /** Waits up to timeoutMs until every line queued so far was sent or dropped (tests). */
    public boolean flush(long timeoutMs) throws InterruptedException {
        if (sender == null) return true;
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (System.nanoTime() < end) {
            if (queue.isEmpty() && sent.get() + droppedSend.get() >= queued.get()) return true;
            Thread.sleep(10);
        }
        return false;
    }

    /**
     * Sends what is queued (best effort, up to a second once the sending
     * thread has resolved the names) and stops the sending thread. It waits
     * for the names up to a second too (and not once interrupted, the
     * interrupt kept): past that, what is queued is dropped and counted as
     * failed sends, and the thread, left resolving, ends without sending.
     */
    @Override
    public void close() {
        if (sender == null || closed) return;
        closed = true;
        LockSupport.unpark(sender);
        if (!awaitReady(CLOSE_WAIT_MS) && phase.compareAndSet(STARTING, ABANDONED)) {
            dropQueued();
            return;
        }
        try {
            sender.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // -- the sending thread --

    private void run() {
        boolean on = false;
        try {
            on = start();
        } catch (RuntimeException | Error e) { // never into the application: off, as a bad setting is
            LOG.warning("lockwatch: " + e + "; reporting off");
            turnOff();
        } finally {
            ready.countDown(); // whatever happened: nobody waits for ever
        }
        if (!on) return;
        if (!phase.compareAndSet(STARTING, RUNNING)) { // close() gave up waiting: nothing is sent
            closeChannel();
            return;
        }
        Signer signer = this.signer;
        int room = datagramSize(dests) - (signer != null ? Signer.MAC_LINE_MAX : 0);
        byte[] buf = new byte[Math.max(room, 4200)];
        int len = 0;
        int lines = 0;
        long nextFlush = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FLUSH_MS);
        for (;;) {
            boolean stopping = closed;
            boolean now0 = urgent; // read before the queue: its lines are polled below
            urgent = false;
            String line;
            while ((line = queue.poll()) != null) { // full datagrams go as they fill
                queueLen.decrementAndGet();
                int n = line.length() + 1;
                if (lines > 0 && len + n > room) {
                    send(signer, buf, len, lines);
                    len = 0;
                    lines = 0;
                }
                if (n > buf.length) buf = new byte[n];
                ascii(line, buf, len);
                len += n;
                buf[len - 1] = '\n';
                lines++;
                if (len >= room) { // a line longer than a datagram goes alone
                    send(signer, buf, len, lines);
                    len = 0;
                    lines = 0;
                }
            }
            long now = System.nanoTime();
            if (stopping || now0 || now - nextFlush >= 0) { // the tick: the partial datagram goes too
                if (lines > 0) send(signer, buf, len, lines);
                len = 0;
                lines = 0;
                nextFlush = now + TimeUnit.MILLISECONDS.toNanos(FLUSH_MS);
                if (stopping) break;
            }
            // until the tick, or until the lock path says WAKE_AT lines wait
            LockSupport.parkNanos(this, nextFlush - now);
        }
        closeChannel();
    }

    private void closeChannel() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing a UDP channel has nothing to report
        }
    }

    private void send(Signer signer, byte[] buf, int len, int lines) {
        byte[] dg = signer != null ? signer.sign(System.currentTimeMillis() / 1000, buf, len) : buf;
        int dgLen = signer != null ? dg.length : len;
        boolean ok = false;
        for (InetSocketAddress d : dests) {
            try {
                if (channel.send(ByteBuffer.wrap(dg, 0, dgLen), d) > 0) {
                    ok = true;
                    datagrams.incrementAndGet();
                }
            } catch (IOException | RuntimeException e) {
                // dropped and counted below: never retried
            }
        }
        if (ok) sent.addAndGet(lines);
        else droppedSend.addAndGet(lines);
    }

    /** Copies an ASCII line's chars into buf at off, a byte each (an array copy, not a loop). */
    @SuppressWarnings("deprecation")
    private static void ascii(String line, byte[] buf, int off) {
        line.getBytes(0, line.length(), buf, off);
    }

    static String ascii(byte[] b) { return new String(b, StandardCharsets.US_ASCII); }
}
