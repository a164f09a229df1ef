// SPDX-License-Identifier: BSD-3-Clause
package lwreporter;

import io.lockwatch.reporter.Config;
import io.lockwatch.reporter.LockwatchRedisson;
import io.lockwatch.reporter.Reporter;
import io.lockwatch.reporter.ReportingLockRegistry;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;

/**
 * The Java reporter's interop program: drives the real Redisson and Spring
 * Integration RedisLockRegistry through io.lockwatch.reporter against a real
 * redis-server, one mode per check of tests/interop/reporters/java/test
 * (tests/interop/reporters/checks.py), and the bench of
 * bench/reporters/run. Prints one JSON object. Modes as the Go program's:
 * contend, down, lost, burst, bench (flags -mode -redis -secs -n -rounds -key;
 * bench also -warm -reporter), and pause (-key, -watchdog: Redisson's lockWatchdogTimeout in ms), a
 * watchdog holder the test pauses with SIGSTOP (checks.py lease()).
 */
public final class ReporterCheck {
    private static final Map<String, String> flags = new HashMap<>();
    private static RedissonClient redisson;
    private static JedisConnectionFactory cf;

    private static String flag(String name, String def) { return flags.getOrDefault(name, def); }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i + 1 < args.length; i += 2) flags.put(args[i].replaceFirst("^-+", ""), args[i + 1]);
        String[] hp = flag("redis", "127.0.0.1:6379").split(":");
        org.redisson.config.Config cfg = new org.redisson.config.Config();
        cfg.useSingleServer().setAddress("redis://" + hp[0] + ":" + hp[1]).setConnectionMinimumIdleSize(4).setConnectionPoolSize(16);
        cfg.setLockWatchdogTimeout(Long.parseLong(flag("watchdog", "30000")));
        redisson = Redisson.create(cfg);
        cf = new JedisConnectionFactory(new RedisStandaloneConfiguration(hp[0], Integer.parseInt(hp[1])));
        cf.afterPropertiesSet();
        cf.start();
        int rc = 0;
        try {
            switch (flag("mode", "contend")) {
                case "contend": contend(); break;
                case "down": down(); break;
                case "lost": lost(); break;
                case "burst": burst(); break;
                case "bench": bench(); break;
                case "pause": pause(); break;
                default: System.err.println("unknown mode"); rc = 2;
            }
        } finally {
            redisson.shutdown();
            cf.destroy();
        }
        System.exit(rc);
    }

    private static RedisLockRegistry registry(String key, long expireMs) {
        RedisLockRegistry r = new RedisLockRegistry(cf, key, expireMs);
        r.setIdleBetweenTries(Duration.ofMillis(1));
        return r;
    }

    // -- JSON, by hand (no library on the class path for it) --

    private static String json(Object o) {
        if (o instanceof Map) {
            StringBuilder b = new StringBuilder("{");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                if (b.length() > 1) b.append(',');
                b.append('"').append(e.getKey()).append("\":").append(json(e.getValue()));
            }
            return b.append('}').toString();
        }
        if (o instanceof String) return "\"" + ((String) o).replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
        return String.valueOf(o);
    }

    private static Map<String, Object> stats(Reporter r) {
        Map<String, Object> m = new TreeMap<>();
        m.put("Queued", r.queued());
        m.put("Sent", r.sent());
        m.put("Datagrams", r.datagrams());
        m.put("DroppedFull", r.droppedQueueFull());
        m.put("DroppedSend", r.droppedSendFailed());
        return m;
    }

    static long p99(List<Long> v) {
        if (v.isEmpty()) return 0;
        long[] s = v.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(s);
        return s[(int) Math.ceil(0.99 * s.length) - 1];
    }

    static double p99f(List<Double> v) {
        double[] s = v.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(s);
        return s.length == 0 ? 0 : s[(int) Math.ceil(0.99 * s.length) - 1];
    }

    /** v's elements i, i + 2, i + 4 ... */
    static List<Double> every(List<Double> v, int i) {
        List<Double> out = new ArrayList<>();
        for (; i < v.size(); i += 2) out.add(v.get(i));
        return out;
    }

    static double median(List<Double> v) {
        double[] s = v.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(s);
        if (s.length == 0) return 0;
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    /**
     * The waits the reporter sent, per key, and its lost/waiting lines (its
     * tap): a 7-field wait is a wait and a waiting end (docs/line-protocol.md).
     */
    static final class Tap {
        final Map<String, List<Long>> us = new HashMap<>();
        int lost, waiting;

        synchronized void line(String l) {
            String[] f = l.split(" ");
            switch (f[1]) {
                case "wait":
                    us.computeIfAbsent(f[2], k -> new ArrayList<>()).add(Long.parseLong(f[3]));
                    if (f.length == 7) waiting++;
                    break;
                case "lost": lost++; break;
                case "waiting": waiting++; break;
                default: break;
            }
        }
    }

    interface Op { void run() throws Exception; }

    private static void contend() throws Exception {
        Tap tap = new Tap();
        Reporter rep = Reporter.create(Config.fromEnv().tap(tap::line));
        LockwatchRedisson lw = LockwatchRedisson.wrap(redisson, rep);
        ReportingLockRegistry spring = new ReportingLockRegistry(registry("rep:java:spring", 30000), rep);
        String[] keys = {"rep:java:redisson:plain", "rep:java:redisson:fair", "rep:java:redisson:write", "rep:java:spring:alpha"};
        Lock[] locks = {lw.getLock(keys[0]), lw.getFairLock(keys[1]), lw.getReadWriteLock(keys[2]).writeLock(), spring.obtain("alpha")};
        long end = System.nanoTime() + (long) (Double.parseDouble(flag("secs", "12")) * 1e9);
        Map<String, Integer> made = new HashMap<>();
        Map<String, List<Long>> measured = new HashMap<>();
        AtomicInteger failures = new AtomicInteger();
        List<String> failed = new ArrayList<>(); // the first few, to say what failed
        List<Thread> threads = new ArrayList<>();
        for (int g = 0; g < 8; g++) {
            String k = keys[g % 4];
            Lock l = locks[g % 4];
            // one of the plain lock's two threads takes it through Redisson's
            // async methods (lockAsync / unlockAsync), the other synchronously
            boolean async = g == 4;
            // and one of the fair lock's through Redisson's reactive lock,
            // with a thread id of its own, as reactive code passes one
            org.redisson.api.RLockReactive reactive = g == 5 ? lw.getFairLockReactive(k) : null;
            long reactiveId = 1_000_000L + g;
            Thread t = new Thread(() -> {
                List<Long> mine = new ArrayList<>();
                int count = 0;
                // the async and reactive waits end when the library's future
                // or Mono completes (on Redisson's thread, where the code that
                // follows them runs), not when this thread wakes from join/block
                long[] t1 = new long[1];
                while (System.nanoTime() < end) {
                    long t0 = System.nanoTime();
                    t1[0] = 0;
                    try {
                        if (async) ((RLock) l).lockAsync().toCompletableFuture().thenRun(() -> t1[0] = System.nanoTime()).join();
                        else if (reactive != null) reactive.lock(reactiveId).doOnSuccess(v -> t1[0] = System.nanoTime()).block();
                        else l.lock();
                    } catch (java.util.concurrent.CompletionException e) {
                        failure(failures, failed, k, "lockAsync", e.getCause() instanceof RuntimeException r ? r : e);
                        continue;
                    } catch (RuntimeException e) {
                        failure(failures, failed, k, "lock", e);
                        continue;
                    } finally {
                        mine.add(((t1[0] != 0 ? t1[0] : System.nanoTime()) - t0) / 1000);
                        count++;
                    }
                    try {
                        TimeUnit.MICROSECONDS.sleep(200 + ThreadLocalRandom.current().nextInt(1800));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    try {
                        if (async) ((RLock) l).unlockAsync().toCompletableFuture().join();
                        else if (reactive != null) reactive.unlock(reactiveId).block();
                        else l.unlock();
                    } catch (java.util.concurrent.CompletionException e) {
                        failure(failures, failed, k, "unlockAsync", e.getCause() instanceof RuntimeException r ? r : e);
                    } catch (RuntimeException e) {
                        failure(failures, failed, k, "unlock", e);
                    }
                }
                synchronized (made) {
                    made.merge(k, count, Integer::sum);
                    measured.computeIfAbsent(k, x -> new ArrayList<>()).addAll(mine);
                }
            }, "worker-" + g);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) t.join();
        boolean flushed = rep.flush(5000);
        rep.close();
        Map<String, Object> out = new TreeMap<>();
        for (String k : keys) {
            Map<String, Object> pk = new TreeMap<>();
            pk.put("acquires", made.getOrDefault(k, 0));
            List<Long> sent = tap.us.getOrDefault(k, List.of());
            pk.put("reported", sent.size());
            pk.put("reported_p99_us", p99(sent));
            pk.put("measured_p99_us", p99(measured.getOrDefault(k, List.of())));
            out.put(k, pk);
        }
        Map<String, Object> res = new TreeMap<>();
        res.put("keys", out);
        res.put("failures", failures.get());
        synchronized (failed) {
            res.put("failed", String.join("; ", failed));
        }
        res.put("library_failures", LIBRARY_FAILURES.get());
        synchronized (LIBRARY_FAILED) {
            res.put("library_failed", String.join("; ", LIBRARY_FAILED));
        }
        res.put("flushed", flushed);
        res.put("stats", stats(rep));
        res.put("waiting", tap.waiting);
        System.out.println(json(res));
    }

    /**
     * A lock call that threw. Redisson's own Redis errors (a RedisException:
     * under this churn Redisson 3.52 now and then gives up on its pub/sub
     * subscription lock after 7.5 s: once in three 20 s runs with reporting
     * on, none in three with it off, so not proven either way) are the
     * library's, passed on by the reporter and reported as error waits,
     * counted apart; anything else counts against the reporter.
     */
    private static void failure(AtomicInteger n, List<String> failed, String key, String call, RuntimeException e) {
        if (e instanceof org.redisson.client.RedisException) {
            LIBRARY_FAILURES.incrementAndGet();
            synchronized (LIBRARY_FAILED) {
                if (LIBRARY_FAILED.size() < 5) LIBRARY_FAILED.add(key + " " + call + ": " + e);
            }
            return;
        }
        n.incrementAndGet();
        synchronized (failed) {
            if (failed.size() < 5) failed.add(key + " " + call + ": " + e);
        }
    }

    private static final AtomicInteger LIBRARY_FAILURES = new AtomicInteger();
    private static final List<String> LIBRARY_FAILED = new ArrayList<>();

    private static double timed(Op op) throws Exception {
        long t0 = System.nanoTime();
        op.run();
        return (System.nanoTime() - t0) / 1e3;
    }

    private static void down() throws Exception {
        long t0 = System.nanoTime();
        Reporter rep = Reporter.get(); // from the environment, as an application would
        double start = (System.nanoTime() - t0) / 1e3;
        RLock bare = redisson.getLock("rep:java:down:bare");
        RLock wrapped = LockwatchRedisson.wrap(redisson, rep).getLock("rep:java:down:wrapped");
        Lock sbare = registry("rep:java:down:sbare", 30000).obtain("a");
        Lock swrapped = new ReportingLockRegistry(registry("rep:java:down:swrapped", 30000), rep).obtain("a");
        List<Double> tb = new ArrayList<>(), tw = new ArrayList<>();
        int eb = 0, ew = 0;
        int n = Integer.parseInt(flag("n", "300"));
        for (int i = 0; i < n; i++) {
            for (Lock[] pair : new Lock[][] {{bare, wrapped}, {sbare, swrapped}}) {
                try {
                    tb.add(timed(() -> { pair[0].lock(); pair[0].unlock(); }));
                } catch (Exception e) {
                    eb++;
                }
                try {
                    tw.add(timed(() -> { pair[1].lock(); pair[1].unlock(); }));
                } catch (Exception e) {
                    ew++;
                }
            }
        }
        Map<String, Object> res = new TreeMap<>();
        res.put("ops", tb.size());
        res.put("errors_bare", eb);
        res.put("errors_wrapped", ew);
        res.put("median_bare_us", median(tb));
        res.put("median_wrapped_us", median(tw));
        res.put("p99_bare_us", p99f(tb));
        res.put("p99_wrapped_us", p99f(tw));
        res.put("max_bare_us", tb.stream().mapToDouble(Double::doubleValue).max().orElse(0));
        res.put("max_wrapped_us", tw.stream().mapToDouble(Double::doubleValue).max().orElse(0));
        res.put("enabled", rep.enabled());
        res.put("start_us", start);
        res.put("stats", stats(rep));
        System.out.println(json(res));
    }

    private static void lost() throws Exception {
        Tap tap = new Tap();
        Reporter rep = Reporter.create(Config.fromEnv().tap(tap::line));
        LockwatchRedisson lw = LockwatchRedisson.wrap(redisson, rep);
        Map<String, Object> res = new TreeMap<>();

        // Redisson: a 300 ms lease (no watchdog) runs out, another thread takes
        // the lock; the first one's unlock is refused: lost (expired)
        RLock first = lw.getLock("rep:java:lost:redisson");
        first.lock(300, TimeUnit.MILLISECONDS);
        Thread.sleep(600);
        Thread other = new Thread(() -> lw.getLock("rep:java:lost:redisson").lock(5, TimeUnit.SECONDS), "other");
        other.start();
        other.join();
        try {
            first.unlock();
            res.put("redisson_unlock", "returned");
        } catch (IllegalMonitorStateException e) {
            res.put("redisson_unlock", "IllegalMonitorStateException");
        }
        redisson.getLock("rep:java:lost:redisson").forceUnlock();

        // the same through Redisson's async methods: lockAsync with a 300 ms
        // lease, another thread takes the lock, unlockAsync is refused
        int lostBefore;
        synchronized (tap) {
            lostBefore = tap.lost;
        }
        RLock firstAsync = lw.getLock("rep:java:lost:redisson-async");
        firstAsync.lockAsync(300, TimeUnit.MILLISECONDS).toCompletableFuture().join();
        Thread.sleep(600);
        Thread otherAsync = new Thread(() -> lw.getLock("rep:java:lost:redisson-async").lock(5, TimeUnit.SECONDS), "other-async");
        otherAsync.start();
        otherAsync.join();
        try {
            firstAsync.unlockAsync().toCompletableFuture().join();
            res.put("redisson_unlock_async", "returned");
        } catch (java.util.concurrent.CompletionException e) {
            Throwable c = e.getCause();
            res.put("redisson_unlock_async", c == null ? "CompletionException" : c.getClass().getSimpleName());
        }
        synchronized (tap) {
            res.put("redisson_async_lost_lines", tap.lost - lostBefore);
        }
        redisson.getLock("rep:java:lost:redisson-async").forceUnlock();
        Map<String, Object> expect = new TreeMap<>();
        expect.put("redisson_unlock", "IllegalMonitorStateException");
        expect.put("redisson_unlock_async", "IllegalMonitorStateException");
        expect.put("redisson_async_lost_lines", 1);
        res.put("expect", expect);

        // Spring: a 300 ms expireAfter runs out, another registry takes it;
        // renewLock finds it gone (lost renewal), unlock says "released in
        // the store due to expiration" (the hold; the loss was sent once)
        ReportingLockRegistry r1 = new ReportingLockRegistry(registry("rep:java:lost", 300), rep);
        ReportingLockRegistry r2 = new ReportingLockRegistry(registry("rep:java:lost", 5000), rep);
        Lock l1 = r1.obtain("spring");
        l1.lock();
        Thread.sleep(600);
        Lock l2 = r2.obtain("spring");
        res.put("spring_other_took", l2.tryLock(2, TimeUnit.SECONDS));
        try {
            r1.renewLock("spring");
            res.put("spring_renew", "returned");
        } catch (RuntimeException e) {
            res.put("spring_renew", e.getClass().getSimpleName());
        }
        try {
            l1.unlock();
            res.put("spring_unlock", "returned");
        } catch (RuntimeException e) {
            res.put("spring_unlock", e.getClass().getSimpleName());
        }
        l2.unlock();
        rep.flush(5000);
        rep.close();
        res.put("lost_lines", tap.lost);
        res.put("waiting_lines", tap.waiting);
        res.put("stats", stats(rep));
        System.out.println(json(res));
    }

    /**
     * A Redisson watchdog holder for the lease check: lock() on -key (no
     * lease: the watchdog renews it every lockWatchdogTimeout / 3), print
     * {"held":true}, wait for a line on stdin (the test pauses this JVM with
     * SIGSTOP meanwhile, and another client takes the lock once the lease
     * ran out), then unlock: refused, the reporter sends lost (expired) and
     * the hold at once. Prints the unlock's Unix ms and its outcome.
     */
    private static void pause() throws Exception {
        Reporter rep = Reporter.get();
        RLock l = LockwatchRedisson.wrap(redisson, rep).getLock(flag("key", "rep:java:pause"));
        l.lock();
        Map<String, Object> res = new TreeMap<>();
        res.put("held", true);
        System.out.println(json(res));
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        long t = System.currentTimeMillis();
        try {
            l.unlock();
            res.put("unlock", "returned");
        } catch (IllegalMonitorStateException e) {
            res.put("unlock", "IllegalMonitorStateException");
        }
        rep.flush(5000);
        res.put("unlock_ms", t);
        res.put("stats", stats(rep));
        System.out.println(json(res));
    }

    private static void burst() throws Exception {
        Reporter rep = Reporter.get();
        RLock l = LockwatchRedisson.wrap(redisson, rep).getLock(flag("key", "rep:java:burst"));
        int n = Integer.parseInt(flag("n", "50"));
        int errs = 0;
        for (int i = 0; i < n; i++) {
            try {
                l.lock();
                l.unlock();
            } catch (RuntimeException e) {
                errs++;
            }
        }
        rep.flush(5000);
        rep.close();
        Map<String, Object> res = new TreeMap<>();
        res.put("acquires", n);
        res.put("errors", errs);
        res.put("stats", stats(rep));
        System.out.println(json(res));
    }

    private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();

    /** Microseconds per call: wall, then this thread's CPU, then the whole process's CPU (into cpu). */
    private static double round(int n, Op op, List<Double> cpu) throws Exception {
        long c0 = THREADS.getCurrentThreadCpuTime(), p0 = OS.getProcessCpuTime();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) op.run();
        double us = (System.nanoTime() - t0) / 1e3 / n;
        if (cpu != null) {
            cpu.add((THREADS.getCurrentThreadCpuTime() - c0) / 1e3 / n);
            cpu.add((OS.getProcessCpuTime() - p0) / 1e3 / n);
        }
        return us;
    }

    private static double round(int n, Op op) throws Exception {
        return round(n, op, null);
    }

    /**
     * The overhead bench: -n calls per round, -rounds round pairs, -warm
     * calls of each kind first (not counted); -reporter env (the reporter of
     * the environment, the default), tap (lines made and handed to a tap
     * that drops them, nothing queued) or off (the wrappers only): the last
     * two tell where a cost is.
     */
    private static void bench() throws Exception {
        String how = flag("reporter", "env");
        Reporter rep = how.equals("env") ? Reporter.get()
                : Reporter.create(Config.fromEnv().samples("off").tap(how.equals("tap") ? l -> { } : null));
        int n = Integer.parseInt(flag("n", "300"));
        // the warm-up: as many calls of each kind, enough for the JIT to compile
        // the reporter's path and Redisson's (300 left them interpreted or at
        // C1 in the first rounds; 5,000 still left Redisson's calls slower)
        int warm = Integer.parseInt(flag("warm", "20000"));
        int rounds = Integer.parseInt(flag("rounds", "40"));
        RLock bare = redisson.getLock("rep:java:bench:bare");
        RLock wrapped = LockwatchRedisson.wrap(redisson, rep).getLock("rep:java:bench:wrapped");
        Lock sbare = registry("rep:java:bench:sbare", 30000).obtain("a");
        Lock swrapped = new ReportingLockRegistry(registry("rep:java:bench:swrapped", 30000), rep).obtain("a");
        Map<String, Object> res = new TreeMap<>();
        String[] names = {"redisson", "spring"};
        Lock[][] pairs = {{bare, wrapped}, {sbare, swrapped}};
        for (int p = 0; p < 2; p++) {
            Lock b = pairs[p][0], w = pairs[p][1];
            Op ob = () -> { b.lock(); b.unlock(); };
            Op ow = () -> { w.lock(); w.unlock(); };
            round(warm, ob); // JIT warm-up, not counted
            round(warm, ow);
            List<Double> tb = new ArrayList<>(), tw = new ArrayList<>(), ratio = new ArrayList<>();
            List<Double> cb = new ArrayList<>(), cw = new ArrayList<>(); // per round: thread CPU, process CPU
            // rounds alternate which kind goes first; the ratio is the median
            // of each pair's ratio, so the machine's drift cancels in a pair
            for (int r = 0; r < rounds; r++) {
                double xb, xw;
                if (r % 2 == 0) {
                    xb = round(n, ob, cb);
                    xw = round(n, ow, cw);
                } else {
                    xw = round(n, ow, cw);
                    xb = round(n, ob, cb);
                }
                tb.add(xb);
                tw.add(xw);
                ratio.add(xw / xb);
            }
            Map<String, Object> m = new TreeMap<>();
            m.put("bare_us", median(tb));
            m.put("wrapped_us", median(tw));
            m.put("ratio", median(ratio));
            m.put("bare_thread_cpu_us", median(every(cb, 0)));
            m.put("wrapped_thread_cpu_us", median(every(cw, 0)));
            m.put("bare_process_cpu_us", median(every(cb, 1)));
            m.put("wrapped_process_cpu_us", median(every(cw, 1)));
            res.put(names[p], m);
        }
        rep.flush(5000);
        res.put("ops_per_round", n);
        res.put("rounds", rounds);
        res.put("enabled", rep.enabled());
        res.put("stats", stats(rep));
        System.out.println(json(res));
    }
}
