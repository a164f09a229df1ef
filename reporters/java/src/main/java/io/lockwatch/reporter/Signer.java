// SPDX-License-Identifier: BSD-3-Clause
package io.lockwatch.reporter;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Datagram signing (docs/line-protocol.md "Signed datagrams"): the datagram
 * starts with "lw1 mac &lt;mac&gt; &lt;unix-seconds&gt;\n", the mac being the first
 * 16 bytes of HMAC-SHA-256 with the shared key over every byte after the
 * space that follows it, in lowercase hex. One Signer per sending thread
 * (javax.crypto.Mac is not thread-safe).
 */
final class Signer {
    /** The longest mac line: "lw1 mac " + 32 hex + " " + 20 digits + "\n". */
    static final int MAC_LINE_MAX = 8 + 32 + 1 + 20 + 1;
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private final Mac mac;

    Signer(byte[] key) throws GeneralSecurityException {
        mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(key, "HmacSHA256"));
    }

    /** Returns the signed datagram: the mac line, then body[0..len). */
    byte[] sign(long unixSeconds, byte[] body, int len) {
        byte[] time = (Long.toString(unixSeconds) + "\n").getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[8 + 33 + time.length + len];
        System.arraycopy("lw1 mac ".getBytes(StandardCharsets.US_ASCII), 0, out, 0, 8);
        out[40] = ' ';
        System.arraycopy(time, 0, out, 41, time.length);
        System.arraycopy(body, 0, out, 41 + time.length, len);
        mac.reset();
        mac.update(out, 41, out.length - 41);
        byte[] sum = mac.doFinal();
        for (int i = 0; i < 16; i++) {
            out[8 + 2 * i] = HEX[(sum[i] >> 4) & 15];
            out[9 + 2 * i] = HEX[sum[i] & 15];
        }
        return out;
    }
}
