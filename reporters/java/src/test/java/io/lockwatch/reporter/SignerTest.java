// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The test vector of docs/line-protocol.md "Signed datagrams". */
class SignerTest {
    @Test
    void signsTheTestVector() throws Exception {
        byte[] key = "lockwatch test key: not a secret".getBytes(StandardCharsets.US_ASCII);
        String body = "lw1 waiting lock:order:1001 web-1%3A4242%2F7 lw1:web-1:4242:7:1767225599000:00112233aabbccdd start\n"
                + "lw1 wait lock:order:1001 1500 ok\n";
        byte[] b = body.getBytes(StandardCharsets.US_ASCII);
        byte[] dg = new Signer(key).sign(1767225600L, b, b.length);
        assertEquals("lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225600\n" + body, new String(dg, StandardCharsets.US_ASCII));
    }
}
