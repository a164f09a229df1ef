// SPDX-License-Identifier: BSD-3-Clause
package lwinterop;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.redis.spring.RedisLockProvider;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;

/**
 * ShedLock (shedlock-provider-redis-spring over Jedis) and Spring Integration's
 * RedisLockRegistry driven by the scenario protocol (Driver).
 * argv: PORT [shedlock environment, default "default"] [registry key, default "lock:spring"].
 * Kinds: shedlock (lock lease=ms: lockAtMostFor; unlock), spring (RedisLockRegistry:
 * lock [blocking], trylock wait=ms, unlock).
 */
public final class SpringClientMain {
    private static RedisLockProvider shed;
    private static RedisLockRegistry registry;
    private static final Map<String, SimpleLock> shedHeld = new ConcurrentHashMap<>();

    static String handle(String actor, String op, String kind, String name, Map<String, String> opt) throws Exception {
        long lease = Driver.optLong(opt, "lease", 30000);
        if (kind.equals("shedlock")) {
            switch (op) {
                case "lock": {
                    Optional<SimpleLock> l = shed.lock(new LockConfiguration(Instant.now(), name,
                            Duration.ofMillis(lease), Duration.ZERO));
                    if (l.isEmpty()) throw new IllegalStateException("busy");
                    shedHeld.put(actor + "/" + name, l.get());
                    return "locked";
                }
                case "unlock": {
                    SimpleLock l = shedHeld.remove(actor + "/" + name);
                    if (l == null) throw new IllegalStateException("not held by this actor");
                    l.unlock();
                    return "unlocked";
                }
                default: throw new IllegalArgumentException("shedlock: unknown op " + op);
            }
        }
        if (kind.equals("spring")) {
            Lock l = registry.obtain(name);
            switch (op) {
                case "lock": l.lock(); return "thread=" + Thread.currentThread().getId();
                case "trylock":
                    if (!l.tryLock(Driver.optLong(opt, "wait", 0), TimeUnit.MILLISECONDS))
                        throw new IllegalStateException("busy");
                    return "thread=" + Thread.currentThread().getId();
                case "unlock": l.unlock(); return "unlocked";
                default: throw new IllegalArgumentException("spring: unknown op " + op);
            }
        }
        throw new IllegalArgumentException("unknown kind " + kind);
    }

    public static void main(String[] args) throws Exception {
        RedisStandaloneConfiguration rc = new RedisStandaloneConfiguration("127.0.0.1", Integer.parseInt(args[0]));
        JedisConnectionFactory cf = new JedisConnectionFactory(rc);
        cf.afterPropertiesSet();
        cf.start();
        String env = args.length > 1 ? args[1] : "default";
        String regKey = args.length > 2 ? args[2] : "lock:spring";
        shed = new RedisLockProvider(cf, env);
        registry = new RedisLockRegistry(cf, regKey, 30000);
        Driver.serve(SpringClientMain::handle, "shedlock "
                + Driver.jarVersion(RedisLockProvider.class)
                + " spring-integration-redis "
                + Driver.jarVersion(RedisLockRegistry.class)
                + " env=" + env + " registry=" + regKey);
        registry.destroy();
        cf.destroy();
    }
}
