/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peerhealth.h - whether another shard's agent counts as down, from the
 * results of its checks (agent/peers.h runs them): down only after
 * PEER_DOWN_CHECKS checks in a row have failed (one lost answer is not a
 * dead peer), up again at the first check that succeeds.  A check
 * succeeds when the peer's GET /api/v1/shard says it is the shard the
 * config names it for (peer_answer_check()): a URL that answers as
 * another shard (shard_peers in another order than the shards', or a
 * URL of the wrong agent) or as no lockwatch agent does not watch that
 * shard's targets, however healthy it is.  Pure: the caller gives each
 * result and the monotonic time it came at.
 */
#ifndef LOCKWATCH_PEERHEALTH_H
#define LOCKWATCH_PEERHEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEER_CHECK_MS 10000     /* a check of every peer this often */
#define PEER_TIMEOUT_MS 2000    /* each check's whole budget, connect included */
#define PEER_DOWN_CHECKS 3      /* failed checks in a row that make it down */
#define PEER_PATH "/api/v1/shard"   /* what a check GETs of a peer's base URL */
#define PEER_BODY_MAX (4 << 20)    /* an answer's bytes read; a longer one fails */

struct peer_health {
    int fails;                  /* checks failed in a row; 0 after a success */
    int64_t failing_since_ms;   /* monotonic ms of the first of them; 0: none */
    bool down;                  /* fails >= PEER_DOWN_CHECKS */
    uint64_t checks;            /* results recorded */
    char err[160];              /* why the last check failed; "" after a success */
};

/* Record one check's result at monotonic now_ms (err: why it failed,
 * ignored when ok).  Returns true when it changed down. */
bool peer_health_record(struct peer_health *h, bool ok, const char *err, int64_t now_ms);

/*
 * Is body (len bytes, a 200's answer of PEER_PATH) that of shard I of N?
 * When not, why into err (errlen bytes): not a lockwatch agent's answer,
 * or the shard it answers as.
 */
bool peer_answer_check(const char *body, size_t len, int shard, int total, char *err,
                       size_t errlen);

#endif
