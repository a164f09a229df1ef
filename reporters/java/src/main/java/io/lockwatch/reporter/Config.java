// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import java.util.function.Consumer;

/**
 * What a Reporter is made from. {@link #fromEnv()} reads the variables every
 * lockwatch reporter shares (docs/reporters.md): LOCKWATCH_SAMPLES
 * ("host:port[,host:port...]", up to 8; empty or "off" in any case: report
 * nothing),
 * LOCKWATCH_KEY_FILE (sign every datagram with that key) and LOCKWATCH_OWNER
 * (the &lt;process&gt; part of owner ids; default hostname:pid).
 */
public final class Config {
    static final String DEFAULT_SAMPLES = "127.0.0.1:9717";

    String samples = DEFAULT_SAMPLES;
    String keyFile;
    String owner;
    int queueCapacity = 8192;
    Consumer<String> tap;

    /** The environment's configuration. */
    public static Config fromEnv() {
        Config c = new Config();
        String s = System.getenv("LOCKWATCH_SAMPLES");
        if (s != null) c.samples = s;
        c.keyFile = System.getenv("LOCKWATCH_KEY_FILE");   // "": said, see keyFile()
        c.owner = emptyToNull(System.getenv("LOCKWATCH_OWNER"));
        return c;
    }

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    /** Destinations, as LOCKWATCH_SAMPLES; "" or "off" (in any case) turns reporting off. */
    public Config samples(String v) { samples = v; return this; }
    /**
     * The shared key's file, as LOCKWATCH_KEY_FILE; null: unsigned; blank
     * (a template's unset value): unsigned with one warning, since an agent
     * with a key rejects such datagrams.
     */
    public Config keyFile(String v) { keyFile = v; return this; }
    /** The &lt;process&gt; part of owner ids, as LOCKWATCH_OWNER; null: hostname:pid. */
    public Config owner(String v) { owner = v; return this; }
    /** Lines the queue holds before it drops (default 8192). */
    public Config queueCapacity(int v) { queueCapacity = v; return this; }
    /**
     * Called on the caller's thread with every line the reporter queues or
     * would queue (tests, debugging); it must be quick and must not throw.
     */
    public Config tap(Consumer<String> v) { tap = v; return this; }
}
