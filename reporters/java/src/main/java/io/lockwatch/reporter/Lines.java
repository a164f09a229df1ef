// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import java.nio.charset.StandardCharsets;

/**
 * The lw1 lines of docs/line-protocol.md. Keys, owners and holder ids are
 * percent-encoded: every byte of their UTF-8 form outside 0x21-0x7e, and
 * '%', is written %XX; an id that is not known is "-", and an id that
 * really is "-" is written %2D. Every line is plain ASCII, so the sender
 * copies its chars as bytes.
 */
final class Lines {
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    /** Outcome words of wait and waiting lines, indexed by Outcome.ordinal(). */
    enum Outcome {
        OK("ok"), TIMEOUT("timeout"), ERROR("error");
        final String word;
        Outcome(String word) { this.word = word; }
    }

    static final String RENEWAL = "renewal";
    static final String EXPIRED = "expired";

    private Lines() {}

    static void escape(StringBuilder b, String s) {
        if (s == null || s.isEmpty()) {
            b.append('-');
            return;
        }
        if (s.equals("-")) {
            b.append("%2D");
            return;
        }
        int n = s.length();
        int i = 0;
        while (i < n) {
            char c = s.charAt(i);
            if (c < 0x21 || c > 0x7e || c == '%') break;
            i++;
        }
        if (i == n) { // the common case: nothing to escape
            b.append(s);
            return;
        }
        byte[] raw = s.getBytes(StandardCharsets.UTF_8);
        for (byte x : raw) {
            int c = x & 0xff;
            if (c < 0x21 || c > 0x7e || c == '%') {
                b.append('%').append(HEX[c >> 4]).append(HEX[c & 15]);
            } else {
                b.append((char) c);
            }
        }
    }

    /** "&lt;owner&gt; &lt;holder&gt;", escaped: the pair of a waiting, 7-field wait, hold or lost line. */
    static String pair(String owner, String holder) {
        StringBuilder b = new StringBuilder(64);
        escape(b, owner);
        b.append(' ');
        escape(b, holder);
        return b.toString();
    }

    /**
     * The constant start of one key's lines ("lw1 wait &lt;key&gt; " ...), escaped
     * once per lock: a lock call only appends its numbers and its pair.
     */
    static final class Heads {
        final String wait;
        final String waiting;
        final String hold;
        final String lost;

        Heads(String key) {
            StringBuilder b = new StringBuilder(key.length() + 2);
            // a key is never empty in the protocol: an empty one is written
            // as nothing, a line the agent counts invalid (as the other
            // reporters' is), never as "-", the lock named "-"
            if (!key.isEmpty()) escape(b, key);
            String k = b.append(' ').toString();
            wait = "lw1 wait " + k;
            waiting = "lw1 waiting " + k;
            hold = "lw1 hold " + k;
            lost = "lw1 lost " + k;
        }
    }

    static String wait(Heads h, long us, Outcome o) {
        return h.wait + Math.max(0, us) + ' ' + o.word;
    }

    /**
     * The 7-field wait, "... &lt;outcome&gt; &lt;owner&gt; &lt;holder&gt;": an acquire's
     * waiting end and its wait in one line (docs/line-protocol.md).
     */
    static String waitEnd(Heads h, long us, Outcome o, String pair) {
        return h.wait + Math.max(0, us) + ' ' + o.word + ' ' + pair;
    }

    /** phase: "start" or an outcome's word. */
    static String waiting(Heads h, String pair, String phase) {
        return h.waiting + pair + ' ' + phase;
    }

    static String hold(Heads h, long us, String pair) {
        return h.hold + Math.max(0, us) + ' ' + pair;
    }

    /** overrunUs &lt; 0 is written "-" (the lease's end is not known). */
    static String lost(Heads h, String pair, long heldUs, long overrunUs, String reason) {
        return h.lost + pair + ' ' + Math.max(0, heldUs) + ' ' + (overrunUs < 0 ? "-" : Long.toString(overrunUs)) + ' ' + reason;
    }

    // the same from a key, an owner and a holder (tests)

    static String wait(String key, long us, Outcome o) {
        return wait(new Heads(key), us, o);
    }

    static String waitEnd(String key, long us, Outcome o, String owner, String holder) {
        return waitEnd(new Heads(key), us, o, pair(owner, holder));
    }

    static String waiting(String key, String owner, String holder, String phase) {
        return waiting(new Heads(key), pair(owner, holder), phase);
    }

    static String hold(String key, long us, String owner, String holder) {
        return hold(new Heads(key), us, pair(owner, holder));
    }

    static String lost(String key, String owner, String holder, long heldUs, long overrunUs, String reason) {
        return lost(new Heads(key), pair(owner, holder), heldUs, overrunUs, reason);
    }
}
