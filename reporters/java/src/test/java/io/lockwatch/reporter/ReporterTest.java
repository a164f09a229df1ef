// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystemLoopException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Destinations, key files, batching, signing and the bounded queue, over loopback UDP. */
class ReporterTest {
    @Test
    void parsesDestinations() {
        assertEquals(2, Reporter.parseDests("127.0.0.1:9717, [::1]:9718").size());
        assertEquals(0, Reporter.parseDests("off").size());
        assertEquals(0, Reporter.parseDests("").size());
        assertEquals(0, Reporter.parseDests("no-port").size());
        assertEquals(0, Reporter.parseDests("host.invalid:9717").size());
        assertEquals(8, Reporter.parseDests("127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5,"
                + "127.0.0.1:6,127.0.0.1:7,127.0.0.1:8,127.0.0.1:9").size());
        // two names of one agent: sent once (a trial: every sample counted twice)
        var saved = Reporter.resolver;
        Reporter.resolver = (host, port) -> new InetSocketAddress(host.equals("agent.lockwatch.test") ? "127.0.0.1" : host, port);
        try {
            List<String> warnings = warnings(() -> assertEquals(1,
                    Reporter.parseDests("127.0.0.1:9717, agent.lockwatch.test:9717").size()));
            assertEquals(1, warnings.size(), warnings.toString());
            assertTrue(warnings.get(0).contains("agent.lockwatch.test:9717 is 127.0.0.1:9717 again; sending there once"),
                    warnings.get(0));
        } finally {
            Reporter.resolver = saved;
        }
        assertEquals(2, Reporter.parseDests("127.0.0.1:9717, 127.0.0.1:9718").size());
    }

    @Test
    void offOrUnresolvableReportsNothing() {
        Reporter off = Reporter.create(new Config().samples("off"));
        assertFalse(off.enabled());
        off.emit("lw1 wait k 1 ok");
        assertEquals(0, off.queued());
        // turned off by its sending thread: a line of a call under way then is counted, not kept
        Reporter r = Reporter.create(new Config().samples("host.invalid:9717"));
        assertFalse(r.enabled());
        r.emit("lw1 wait k 1 ok");
        assertEquals(0, r.sent());
        assertEquals(r.queued(), r.droppedSendFailed());
    }

    @Test
    void readsKeyFiles(@TempDir Path dir) throws Exception {
        Path k = dir.resolve("k");
        Files.writeString(k, "0123456789abcdef0123\n\n");
        assertEquals(20, Reporter.readKey(k.toString()).length);
        Files.writeString(k, "short\n");
        Path finalK = k;
        assertTrue(org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                () -> Reporter.readKey(finalK.toString())).getMessage().contains("16 to 4096"));
        Reporter r = Reporter.create(new Config().samples("127.0.0.1:9").keyFile(k.toString()));
        assertFalse(r.enabled(), "a short key turns reporting off");
    }

    /** The reporter's log messages while body runs. */
    private static List<String> warnings(Runnable body) {
        Logger log = Logger.getLogger("io.lockwatch.reporter");
        List<String> warnings = new ArrayList<>();
        Handler h = new Handler() {
            @Override public void publish(LogRecord rec) { warnings.add(rec.getMessage()); }
            @Override public void flush() {}
            @Override public void close() {}
        };
        log.addHandler(h);
        try {
            body.run();
        } finally {
            log.removeHandler(h);
        }
        return warnings;
    }

    /** A trial: "OFF" was taken for a destination, an empty key file variable was silent. */
    @Test
    void offInAnyCaseAndAnEmptyKeyFileSaid() {
        List<String> off = warnings(() -> {
            for (String v : List.of("OFF", " Off ")) {
                assertFalse(Reporter.create(new Config().samples(v)).enabled(), v);
                assertEquals(0, Reporter.parseDests(v).size(), v);
            }
        });
        assertEquals(List.of(), off);
        List<String> said = warnings(() -> {
            Reporter r = Reporter.create(new Config().samples("127.0.0.1:9").keyFile(""));
            assertTrue(r.enabled(), "an empty key file leaves reporting on, unsigned");
            r.close();
        });
        assertEquals(List.of("lockwatch: LOCKWATCH_KEY_FILE is set but empty; datagrams go unsigned"), said);
    }

    @Test
    void saysWhyAKeyFileCannotBeRead(@TempDir Path dir) {
        String missing = dir.resolve("missing").toString();
        List<String> warnings = warnings(() -> {
            Reporter r = Reporter.create(new Config().samples("127.0.0.1:9").keyFile(missing));
            assertFalse(r.enabled(), "a missing key file turns reporting off");
        });
        assertEquals(List.of("lockwatch: LOCKWATCH_KEY_FILE " + missing + ": no such file; reporting off"), warnings);
        // the path once, then what is wrong
        assertEquals("permission denied", Reporter.why(new AccessDeniedException("/k"), "/k"));
        assertEquals("Not a directory", Reporter.why(new FileSystemException("/k", null, "Not a directory"), "/k"));
        assertEquals("file system loop", Reporter.why(new FileSystemLoopException("/k"), "/k"));
    }

    /**
     * LOCKWATCH_OWNER is 1 to 200 bytes (docs/reporters.md), counted in
     * UTF-8 as the agent counts an owner's bytes: 200 "é" are 200 chars but
     * 400 bytes, and a longer one is the default with one warning.
     */
    @Test
    void anOwnerLongerThan200BytesIsTheDefault() {
        String pid = ":" + ProcessHandle.current().pid();
        List<String> warnings = warnings(() -> {
            for (String owner : List.of("a".repeat(200), "é".repeat(100), "é".repeat(99) + "ab")) {
                assertEquals(owner + pid, Reporter.create(new Config().samples("off").owner(owner)).process(), owner);
            }
        });
        assertEquals(List.of(), warnings);
        warnings = warnings(() -> {
            for (String owner : List.of("a".repeat(201), "é".repeat(200), "é".repeat(100) + "a")) {
                String p = Reporter.create(new Config().samples("off").owner(owner)).process();
                assertTrue(p.endsWith(pid), "a " + owner.getBytes(StandardCharsets.UTF_8).length
                        + "-byte owner is hostname:pid, not " + p);
            }
        });
        assertEquals(3, warnings.size(), warnings.toString());
        assertTrue(warnings.get(0).contains("longer than 200 bytes"), warnings.get(0));
    }

    private static List<String> receive(DatagramSocket s, int lines) throws Exception {
        List<String> got = new ArrayList<>();
        byte[] buf = new byte[9000];
        int n = 0;
        while (n < lines) {
            DatagramPacket p = new DatagramPacket(buf, buf.length);
            s.receive(p);
            assertTrue(p.getLength() <= Reporter.LOOPBACK_DATAGRAM, "datagram of " + p.getLength() + " bytes");
            String dg = new String(p.getData(), 0, p.getLength(), StandardCharsets.US_ASCII);
            got.add(dg);
            for (String l : dg.split("\n")) if (!l.startsWith("lw1 mac ")) n++;
        }
        return got;
    }

    @Test
    void batchesIntoDatagramsOf8192BytesToLoopback(@TempDir Path dir) throws Exception {
        try (DatagramSocket s = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            s.setSoTimeout(5000);
            Path k = dir.resolve("k");
            Files.writeString(k, "lockwatch test key: not a secret\n");
            try (Reporter r = Reporter.create(new Config().samples("127.0.0.1:" + s.getLocalPort()).keyFile(k.toString()))) {
                for (int i = 0; i < 1000; i++) r.emit(Lines.wait("lock:k:" + i, i, Lines.Outcome.OK));
                List<String> dgs = receive(s, 1000);
                assertTrue(dgs.size() > 1);
                assertTrue(dgs.stream().anyMatch(d -> d.length() > Reporter.MAX_DATAGRAM), "filled past 1432 bytes");
                byte[] key = Reporter.readKey(k.toString());
                for (String dg : dgs) {
                    assertTrue(dg.startsWith("lw1 mac "));
                    int nl = dg.indexOf('\n');
                    long t = Long.parseLong(dg.substring(41, nl));
                    byte[] body = dg.substring(nl + 1).getBytes(StandardCharsets.US_ASCII);
                    assertEquals(dg, new String(new Signer(key).sign(t, body, body.length), StandardCharsets.US_ASCII));
                }
                assertTrue(r.flush(2000));
                assertEquals(1000, r.sent());
            }
        }
    }

    @Test
    void datagramsAre8192BytesOnlyWhenEveryDestinationIsLoopback() throws Exception {
        java.util.function.Function<String[], Integer> size = as -> {
            List<InetSocketAddress> ds = new ArrayList<>();
            for (String a : as) {
                try {
                    ds.add(new InetSocketAddress(InetAddress.getByName(a), 9));
                } catch (java.net.UnknownHostException e) {
                    throw new AssertionError(e);
                }
            }
            return Reporter.datagramSize(ds);
        };
        assertEquals(8192, size.apply(new String[] {"127.0.0.1"}));
        assertEquals(8192, size.apply(new String[] {"127.3.2.1", "::1"}));
        assertEquals(8192, size.apply(new String[] {"::ffff:127.0.0.1"}));
        assertEquals(1432, size.apply(new String[] {"127.0.0.1", "192.0.2.1"}));
        assertEquals(1432, size.apply(new String[] {"fe80::1"}));
    }

    @Test
    void flushesAPartialDatagramSoon() throws Exception {
        try (DatagramSocket s = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            s.setSoTimeout(2000);
            try (Reporter r = Reporter.create(new Config().samples("127.0.0.1:" + s.getLocalPort()))) {
                long t0 = System.nanoTime();
                r.emit("lw1 wait k 1 ok");
                assertEquals(List.of("lw1 wait k 1 ok\n"), receive(s, 1));
                assertTrue(System.nanoTime() - t0 < 1_000_000_000L);
            }
        }
    }

    @Test
    void aFullQueueDropsAndCounts() throws Exception {
        try (Reporter r = Reporter.create(new Config().samples("127.0.0.1:9").queueCapacity(4))) {
            for (int i = 0; i < 20000; i++) r.emit("lw1 wait k 1 ok");
            assertEquals(20000, r.queued() + r.droppedQueueFull());
            assertTrue(r.droppedQueueFull() > 0);
        }
    }

    @Test
    void senderThreadIsADaemon() {
        try (Reporter r = Reporter.create(new Config().samples("127.0.0.1:9"))) {
            boolean found = false;
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().equals("lockwatch-reporter")) {
                    found = true;
                    assertTrue(t.isDaemon());
                }
            }
            assertTrue(found);
        }
    }
}
