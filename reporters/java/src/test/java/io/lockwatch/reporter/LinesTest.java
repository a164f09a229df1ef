// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** Line formatting and percent-encoding (docs/line-protocol.md). */
class LinesTest {
    @Test
    void escapesKeysAsTheProtocolSays() {
        assertEquals("lw1 wait lock:order:1001 1500 ok", Lines.wait("lock:order:1001", 1500, Lines.Outcome.OK));
        assertEquals("lw1 wait lock:caf%C3%A9%20job 7 timeout", Lines.wait("lock:café job", 7, Lines.Outcome.TIMEOUT));
        assertEquals("lw1 wait 100%25 0 error", Lines.wait("100%", -3, Lines.Outcome.ERROR));
        // a lock named "": a line the agent counts invalid, not the lock "-"
        // (a trial: its samples counted under "-")
        assertEquals("lw1 wait  5 ok", Lines.wait("", 5, Lines.Outcome.OK));
        assertEquals("lw1 hold  12 o tok", Lines.hold("", 12, "o", "tok"));
        assertEquals("lw1 wait %2D 5 ok", Lines.wait("-", 5, Lines.Outcome.OK));
    }

    @Test
    void formatsEveryVerb() {
        assertEquals("lw1 waiting k web-1:42/7 - start", Lines.waiting("k", "web-1:42/7", null, "start"));
        assertEquals("lw1 waiting k o %2D ok", Lines.waiting("k", "o", "-", "ok"));
        // the 7-field wait: owner and holder encoded as the waiting line's, "-" an unknown holder
        assertEquals("lw1 wait k 1500 ok web-1:42/7 -", Lines.waitEnd("k", 1500, Lines.Outcome.OK, "web-1:42/7", null));
        assertEquals("lw1 wait k 0 timeout o%20x %2D", Lines.waitEnd("k", -3, Lines.Outcome.TIMEOUT, "o x", "-"));
        assertEquals("lw1 hold k 12 o id:7", Lines.hold("k", 12, "o", "id:7"));
        assertEquals("lw1 lost k o h 10 - expired", Lines.lost("k", "o", "h", 10, -1, Lines.EXPIRED));
        assertEquals("lw1 lost k o h 10 0 renewal", Lines.lost("k", "o", "h", 10, 0, Lines.RENEWAL));
    }
}
