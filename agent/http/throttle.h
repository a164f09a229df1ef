/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * throttle.h - release-token guessing, slowed and logged per client
 * address (POST /api/v1/locks/release).
 *
 * A bearer token can be guessed only by asking; every wrong token is one
 * guess.  After THROTTLE_FAILS wrong tokens from one address within
 * THROTTLE_WINDOW_MS, that address gets 429 with Retry-After for
 * THROTTLE_BLOCK_MS, whatever it sends (a right token too: otherwise the
 * block would still answer the guess).  The table of addresses is bounded
 * (THROTTLE_SLOTS); a new address when it is full takes the slot of the
 * oldest unblocked one (counted as evicted), so a flood of addresses cannot
 * grow memory, and a blocked address keeps its slot while others remain.
 * IPv6 addresses are counted per /64, which one host usually owns whole.
 *
 * Every attempt is logged, rate-limited: the first wrong token of an
 * address in each window, the block, and when the block ends how many
 * requests it refused; at most THROTTLE_LOG_PER_MIN such lines a minute
 * overall, the rest counted in a line once the minute is over.
 *
 * Thread safety: one mutex, held for a table look-up.
 */
#ifndef LOCKWATCH_THROTTLE_H
#define LOCKWATCH_THROTTLE_H

#include <stdint.h>

struct sockaddr;

#define THROTTLE_SLOTS        1024
#define THROTTLE_FAILS        20
#define THROTTLE_WINDOW_MS    (60 * 1000)
#define THROTTLE_BLOCK_MS     (60 * 1000)
#define THROTTLE_LOG_PER_MIN  20

struct throttle;

/* Counters for /metrics (lockwatch_release_auth_failures_total). */
struct throttle_stats {
    uint64_t wrong_token;       /* 401/403 answers */
    uint64_t rate_limited;      /* 429 answers */
    uint64_t evicted;           /* addresses dropped from the full table */
};

struct throttle *throttle_new(void);
void throttle_free(struct throttle *t);

/* May this address try a token now?  0: yes; else the seconds it must wait
 * (the 429's Retry-After, >= 1), the refusal counted.  addr NULL or not
 * IPv4/IPv6: always yes (nothing to key it on). */
int64_t throttle_check(struct throttle *t, const struct sockaddr *addr, int64_t now_mono_ms);

/* A wrong or missing token from addr: counted, logged, maybe blocked. */
void throttle_fail(struct throttle *t, const struct sockaddr *addr, int64_t now_mono_ms);

void throttle_stats(struct throttle *t, struct throttle_stats *out);

#endif
