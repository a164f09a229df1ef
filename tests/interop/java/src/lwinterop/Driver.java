// SPDX-License-Identifier: BSD-3-Clause
package lwinterop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The scenario protocol shared by every interop client (tests/interop/README.md).
 * One command a line on stdin: ACTOR OP KIND NAME [key=value ...].  Each actor is a
 * thread of its own (a lock held by actor "a" is held by a's thread), created at its
 * first command; an actor runs its commands in order, so a blocking acquire blocks
 * that actor only.  Every command ends in exactly one JSON line on stdout:
 *   {"t":<epoch ms>,"actor":"a","op":"lock","kind":"rlock","name":"lock:x","ok":true,"info":"..."}
 * "quit" on a line of its own (or end of input) exits after the running commands.
 */
public final class Driver {
    /** What a client does for one command: returns info text, throws on failure. */
    public interface Handler {
        String run(String actor, String op, String kind, String name, Map<String, String> opt) throws Exception;
    }

    private static final Object OUT = new Object();

    public static void emit(String actor, String op, String kind, String name, boolean ok, String info) {
        StringBuilder b = new StringBuilder(160);
        b.append("{\"t\":").append(System.currentTimeMillis())
         .append(",\"actor\":").append(q(actor)).append(",\"op\":").append(q(op))
         .append(",\"kind\":").append(q(kind)).append(",\"name\":").append(q(name))
         .append(",\"ok\":").append(ok).append(",\"info\":").append(q(info)).append('}');
        synchronized (OUT) {
            System.out.println(b);
            System.out.flush();
        }
    }

    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    /** The version of the jar a class came from, read from the jar's file name (some jars
     *  carry no Implementation-Version): ".../shedlock-core-6.10.0.jar" gives "6.10.0". */
    public static String jarVersion(Class<?> c) {
        try {
            String f = new java.io.File(c.getProtectionDomain().getCodeSource().getLocation().toURI()).getName();
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("-([0-9][^-]*)\\.jar$").matcher(f);
            return m.find() ? m.group(1) : f;
        } catch (Exception e) {
            return "?";
        }
    }

    public static long optLong(Map<String, String> opt, String k, long dflt) {
        String v = opt.get(k);
        return v == null ? dflt : Long.parseLong(v);
    }

    public static void serve(Handler h, String ready) throws Exception {
        Map<String, BlockingQueue<String[]>> actors = new ConcurrentHashMap<>();
        Map<String, Thread> threads = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        emit("-", "ready", "-", "-", true, ready);
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#")) continue;
            if (line.equals("quit")) break;
            String[] w = line.split("\\s+");
            if (w.length < 4) {
                emit("-", "error", "-", "-", false, "want ACTOR OP KIND NAME: " + line);
                continue;
            }
            BlockingQueue<String[]> qu = actors.computeIfAbsent(w[0], a -> {
                BlockingQueue<String[]> nq = new LinkedBlockingQueue<>();
                Thread t = new Thread(() -> actorLoop(h, a, nq), "actor-" + a);
                t.setDaemon(true);
                t.start();
                threads.put(a, t);
                return nq;
            });
            qu.add(w);
        }
        for (BlockingQueue<String[]> qu : actors.values()) qu.add(new String[0]);
        for (Thread t : threads.values()) t.join(5000);
        System.exit(0);
    }

    private static void actorLoop(Handler h, String actor, BlockingQueue<String[]> qu) {
        while (true) {
            String[] w;
            try {
                w = qu.take();
            } catch (InterruptedException e) {
                return;
            }
            if (w.length == 0) return;
            Map<String, String> opt = new HashMap<>();
            for (int i = 4; i < w.length; i++) {
                int eq = w[i].indexOf('=');
                if (eq > 0) opt.put(w[i].substring(0, eq), w[i].substring(eq + 1));
            }
            try {
                String info = h.run(actor, w[1], w[2], w[3], opt);
                emit(actor, w[1], w[2], w[3], true, info);
            } catch (Throwable e) {
                emit(actor, w[1], w[2], w[3], false, e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
    }
}
