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

    static String wait(String key, long us, Outcome o) {
        StringBuilder b = new StringBuilder(32 + key.length());
        b.append("lw1 wait ");
        escape(b, key);
        return b.append(' ').append(Math.max(0, us)).append(' ').append(o.word).toString();
    }

    /** phase: "start" or an outcome's word. */
    static String waiting(String key, String owner, String holder, String phase) {
        StringBuilder b = new StringBuilder(48 + key.length() + owner.length());
        b.append("lw1 waiting ");
        escape(b, key);
        b.append(' ');
        escape(b, owner);
        b.append(' ');
        escape(b, holder);
        return b.append(' ').append(phase).toString();
    }

    static String hold(String key, long us, String owner, String holder) {
        StringBuilder b = new StringBuilder(48 + key.length() + owner.length());
        b.append("lw1 hold ");
        escape(b, key);
        b.append(' ').append(Math.max(0, us)).append(' ');
        escape(b, owner);
        b.append(' ');
        escape(b, holder);
        return b.toString();
    }

    /** overrunUs &lt; 0 is written "-" (the lease's end is not known). */
    static String lost(String key, String owner, String holder, long heldUs, long overrunUs, String reason) {
        StringBuilder b = new StringBuilder(64 + key.length() + owner.length());
        b.append("lw1 lost ");
        escape(b, key);
        b.append(' ');
        escape(b, owner);
        b.append(' ');
        escape(b, holder);
        b.append(' ').append(Math.max(0, heldUs)).append(' ');
        if (overrunUs < 0) b.append('-');
        else b.append(overrunUs);
        return b.append(' ').append(reason).toString();
    }
}
