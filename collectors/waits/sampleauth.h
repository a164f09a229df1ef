/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sampleauth.h - the check of a sample datagram's signature ([samples]
 * key_file; docs/line-protocol.md "Signed datagrams").
 *
 * With a key, a datagram must start with "lw1 mac <mac> <unix-seconds>\n",
 * the mac must be lw1mac.h's over the rest, and the time within
 * LW1_MAC_WINDOW_S of ours; anything else rejects the datagram whole, for
 * one of a few reasons (the label values of
 * lockwatch_samples_rejected_total).  Without a key a leading mac line is
 * skipped unchecked, so reporters may sign before the agent has the key.
 * Pure: no locks, no I/O, nothing allocated.
 */
#ifndef LOCKWATCH_SAMPLEAUTH_H
#define LOCKWATCH_SAMPLEAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sampleauth_verdict {
    SAMPLEAUTH_UNSIGNED,        /* no mac line */
    SAMPLEAUTH_BAD_MAC,         /* malformed mac line, or a wrong mac */
    SAMPLEAUTH_STALE,           /* right mac, time outside the window */
    SAMPLEAUTH_TRUNCATED,       /* longer than our buffer: cannot check */
    SAMPLEAUTH_REPLAY,          /* a copy of one accepted lately (the
                                 * caller's replay.h, not this check) */
    SAMPLEAUTH_REJECTS,         /* count of the reasons above */
    SAMPLEAUTH_OK = SAMPLEAUTH_REJECTS
};

/*
 * Check the datagram of len bytes at buf (truncated: the kernel cut it).
 * key/keylen: the shared key, keylen 0 when none is set.  now_s: our wall
 * clock, unix seconds.  SAMPLEAUTH_OK with *skip = the bytes of the mac
 * line (its "\n" included; 0 when there is none) that the caller must not
 * parse as a sample line, or the reason to reject the datagram.
 */
enum sampleauth_verdict sampleauth_check(const void *key, size_t keylen,
                                         const char *buf, size_t len, bool truncated,
                                         int64_t now_s, size_t *skip);

/* "unsigned", "bad_mac", "stale", "truncated", "replay" (the metric's
 * label values). */
const char *sampleauth_reason_str(enum sampleauth_verdict v);

/* The mac of a datagram sampleauth_check() took with a key, into mac
 * (LW1_MAC_BYTES). */
void sampleauth_mac_of(const char *buf, unsigned char *mac);

/*
 * Write into out (room for outlen bytes) the signed datagram of body
 * (body_len bytes) at unix time now_s: its mac line, then body.  Its
 * length, or 0 when outlen is too small or libcrypto fails.  For tests
 * and benches; liblockwatch signs with common/lw1mac.h directly.
 */
size_t sampleauth_sign(const void *key, size_t keylen, const char *body, size_t body_len,
                       int64_t now_s, char *out, size_t outlen);

#endif
