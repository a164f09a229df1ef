/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keyhash.h - the keyed hash by which the scanner (and lockctl list) tell
 * keys and holders apart within a pass.
 *
 * Keys are chosen by whoever may write under the lock pattern.  With an
 * unkeyed hash they could craft a second key of the same hash, which a
 * table keyed by it takes for a duplicate, and so hide a lock.  keyhash()
 * is SipHash-2-4 under a 128-bit key drawn from the kernel's random source
 * once per process, so a collision cannot be aimed: it is as likely as
 * 2^-64 per pair of keys, whatever the keys.  The values differ from run
 * to run; nothing may store them or show them (keytext_hash, unkeyed and
 * stable, is the one for a truncated label's suffix).
 */
#ifndef LOCKWATCH_KEYHASH_H
#define LOCKWATCH_KEYHASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of the len bytes at p under key (16 bytes, the reference
 * byte order): the pure function, for the tests' reference vectors. */
uint64_t keyhash_siphash(const uint8_t key[16], const void *p, size_t len);

/* SipHash-2-4 under this process' random key; never 0 (so 0 can mark an
 * empty slot).  Thread-safe; the key is drawn on the first call. */
uint64_t keyhash(const void *p, size_t len);

#endif
