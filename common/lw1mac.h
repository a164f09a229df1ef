/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lw1mac.h - the signature of a sample datagram, shared by the writer
 * (client/report.c) and the reader (collectors/waits/sampleauth.c) so the
 * two cannot disagree on which bytes are covered (docs/line-protocol.md
 * "Signed datagrams"):
 *
 *     lw1 mac <32 lowercase hex> <unix-seconds>\n<lines>
 *
 * The mac is HMAC-SHA-256 with the shared key over every byte after the
 * space that follows it (the time, its "\n" and every line), cut to its
 * first LW1_MAC_BYTES bytes: 128 bits are far beyond what an attacker can
 * guess within the 60 s a timestamp is accepted, and the line stays short
 * (52 bytes of the 1432 a datagram should hold).
 *
 * Header-only (static inline) for the same reason as lw1.h: liblockwatch
 * links nothing of the agent.  Both sides link libcrypto.  Pure: no I/O.
 */
#ifndef LOCKWATCH_LW1MAC_H
#define LOCKWATCH_LW1MAC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/lw1.h"

#define LW1_MAC_PREFIX      "lw1 mac "
#define LW1_MAC_PREFIX_LEN  8
#define LW1_MAC_BYTES       16
#define LW1_MAC_HEX         (2 * LW1_MAC_BYTES)
/* Where the covered bytes start: after "lw1 mac ", the hex and a space. */
#define LW1_MAC_COVER_OFF   (LW1_MAC_PREFIX_LEN + LW1_MAC_HEX + 1)
#define LW1_MAC_WINDOW_S    60          /* seconds either way of our clock */
#define LW1_MAC_TIME_DIGITS 11          /* unix seconds until year 5138 */

/* The truncated mac of len bytes at p.  0, or -1 if libcrypto fails. */
static inline int
lw1_mac(const void *key, size_t keylen, const void *p, size_t len,
        unsigned char out[LW1_MAC_BYTES])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    if (HMAC(EVP_sha256(), key, (int)keylen, p, len, md, &mdlen) == NULL ||
        mdlen < LW1_MAC_BYTES)
        return -1;
    memcpy(out, md, LW1_MAC_BYTES);
    return 0;
}

/* The mac as the line writes it: 32 lowercase hex digits, no NUL. */
static inline void
lw1_mac_hex(const unsigned char mac[LW1_MAC_BYTES], char out[LW1_MAC_HEX])
{
    static const char hex[] = "0123456789abcdef";

    for (size_t i = 0; i < LW1_MAC_BYTES; i++) {
        out[2 * i] = hex[mac[i] >> 4];
        out[2 * i + 1] = hex[mac[i] & 15];
    }
}

#endif
