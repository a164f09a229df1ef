// SPDX-License-Identifier: BSD-3-Clause
package lwinterop;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.redisson.Config;
import org.redisson.Redisson;
import org.redisson.RedissonClient;
import org.redisson.core.RLock;

/**
 * Redisson 2.x (org.redisson.core API, the pre-2016-07 channel names
 * redisson_lock__channel__{name} and redisson_rwlock__{name}) driven by the scenario
 * protocol (Driver).  argv: redis://127.0.0.1:PORT.  Kinds: rlock read write;
 * ops: lock [lease=ms] trylock [wait=ms] unlock.  Answers carry thread=N like
 * RedissonClientMain, and the ready line carries id=<the client's UUID>.
 */
public final class RedissonLegacyMain {
    private static RedissonClient client;

    static RLock lockOf(String kind, String name) {
        switch (kind) {
            case "rlock": return client.getLock(name);
            case "read": return client.getReadWriteLock(name).readLock();
            case "write": return client.getReadWriteLock(name).writeLock();
            default: throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    static String handle(String actor, String op, String kind, String name, Map<String, String> opt) throws Exception {
        long lease = Driver.optLong(opt, "lease", -1);
        RLock l = lockOf(kind, name);
        String who = "thread=" + Thread.currentThread().getId();
        switch (op) {
            case "lock":
                if (lease > 0) l.lock(lease, TimeUnit.MILLISECONDS); else l.lock();
                return who + " holds=" + l.getHoldCount();
            case "trylock":
                if (!l.tryLock(Driver.optLong(opt, "wait", 0), TimeUnit.MILLISECONDS))
                    throw new IllegalStateException("busy");
                return who + " holds=" + l.getHoldCount();
            case "unlock": l.unlock(); return who;
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    public static void main(String[] args) throws Exception {
        Config cfg = new Config();
        cfg.useSingleServer().setAddress(args[0].replaceFirst("^redis://", ""));
        client = Redisson.create(cfg);
        // the client's UUID: the id every RedissonLock of this client carries (<uuid>:<thread>)
        Object probe = client.getLock("lwinterop-probe");
        Field f = Class.forName("org.redisson.RedissonLock").getDeclaredField("id");
        f.setAccessible(true);
        Driver.serve(RedissonLegacyMain::handle, "redisson "
                + Driver.jarVersion(Redisson.class) + " id=" + f.get(probe));
        client.shutdown();
    }
}
