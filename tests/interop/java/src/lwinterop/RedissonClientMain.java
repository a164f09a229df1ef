// SPDX-License-Identifier: BSD-3-Clause
package lwinterop;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson driven by the scenario protocol (Driver).  argv: redis://127.0.0.1:PORT
 * Kinds: rlock fair spin fenced read write (RLock flavours: lock trylock unlock forceunlock),
 * semaphore (init permits=N, acquire, release), pexp (RPermitExpirableSemaphore:
 * init permits=N, acquire lease=ms, release [the actor's last permit]).
 * lock/acquire take lease=ms (absent: the watchdog), trylock takes wait=ms.
 */
public final class RedissonClientMain {
    private static RedissonClient client;
    private static final Map<String, String> permits = new ConcurrentHashMap<>();

    static RLock lockOf(String kind, String name) throws Exception {
        switch (kind) {
            case "rlock": return client.getLock(name);
            case "fair": return client.getFairLock(name);
            case "spin": return client.getSpinLock(name);
            case "read": return client.getReadWriteLock(name).readLock();
            case "write": return client.getReadWriteLock(name).writeLock();
            case "fenced": {
                // RFencedLock exists since 3.19; found by name so one source builds on every version
                Method m = client.getClass().getMethod("getFencedLock", String.class);
                return (RLock) m.invoke(client, name);
            }
            default: throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    static String handle(String actor, String op, String kind, String name, Map<String, String> opt) throws Exception {
        long lease = Driver.optLong(opt, "lease", -1);
        if (kind.equals("semaphore")) {
            RSemaphore s = client.getSemaphore(name);
            switch (op) {
                case "init": return "set=" + s.trySetPermits((int) Driver.optLong(opt, "permits", 1));
                case "acquire": s.acquire(); return "available=" + s.availablePermits();
                case "tryacquire": return "acquired=" + s.tryAcquire(Driver.optLong(opt, "wait", 0), TimeUnit.MILLISECONDS);
                case "release": s.release(); return "available=" + s.availablePermits();
                default: throw new IllegalArgumentException("semaphore: unknown op " + op);
            }
        }
        if (kind.equals("pexp")) {
            RPermitExpirableSemaphore s = client.getPermitExpirableSemaphore(name);
            switch (op) {
                case "init": return "set=" + s.trySetPermits((int) Driver.optLong(opt, "permits", 1));
                case "acquire": {
                    String id = lease > 0 ? s.acquire(lease, TimeUnit.MILLISECONDS) : s.acquire();
                    permits.put(actor + "/" + name, id);
                    return "permit=" + id;
                }
                case "release": {
                    String id = permits.remove(actor + "/" + name);
                    if (id == null) throw new IllegalStateException("actor holds no permit of " + name);
                    s.release(id);
                    return "permit=" + id;
                }
                default: throw new IllegalArgumentException("pexp: unknown op " + op);
            }
        }
        RLock l = lockOf(kind, name);
        String who = "thread=" + Thread.currentThread().getId();
        switch (op) {
            case "lock":
                if (lease > 0) l.lock(lease, TimeUnit.MILLISECONDS); else l.lock();
                return who + " holds=" + l.getHoldCount();
            case "trylock": {
                boolean ok = lease > 0
                        ? l.tryLock(Driver.optLong(opt, "wait", 0), lease, TimeUnit.MILLISECONDS)
                        : l.tryLock(Driver.optLong(opt, "wait", 0), TimeUnit.MILLISECONDS);
                if (!ok) throw new IllegalStateException("busy");
                return who + " holds=" + l.getHoldCount();
            }
            case "unlock": l.unlock(); return who;
            case "forceunlock": return "deleted=" + l.forceUnlock();
            case "held": return "locked=" + l.isLocked() + " mine=" + l.isHeldByCurrentThread();
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    public static void main(String[] args) throws Exception {
        Config cfg = new Config();
        // 600 threads taking a read lock at once queue for these 8 connections.  On a loaded
        // machine the wait passed Redisson's 1.5 s retry interval, and Redisson 3.16.8's retry
        // path then failed a command or, once in CI, never completed it (a reader hung for
        // 120 s).  Ten seconds keeps every wait of this harness off the retry path.
        cfg.useSingleServer().setAddress(args[0]).setConnectionMinimumIdleSize(2).setConnectionPoolSize(8)
           .setTimeout(10000).setRetryInterval(10000);
        client = Redisson.create(cfg);
        String version = Driver.jarVersion(Redisson.class);
        Driver.serve(RedissonClientMain::handle, "redisson " + version + " id=" + client.getId());
        client.shutdown();
    }
}
