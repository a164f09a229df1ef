/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peerhealth.c - the down/up judgement of a shard peer from its /healthz
 * checks (agent/peerhealth.h): PEER_DOWN_CHECKS failures in a row make it
 * down, the first success makes it up.
 */
#include "agent/peerhealth.h"

#include <stdio.h>

bool
peer_health_record(struct peer_health *h, bool ok, const char *err, int64_t now_ms)
{
    bool was = h->down;

    h->checks++;
    if (ok) {
        h->fails = 0;
        h->failing_since_ms = 0;
        h->down = false;
        h->err[0] = '\0';
        return was;
    }
    if (h->fails == 0)
        h->failing_since_ms = now_ms;
    if (h->fails < PEER_DOWN_CHECKS)
        h->fails++;
    snprintf(h->err, sizeof(h->err), "%s", err != NULL && err[0] != '\0' ? err : "no answer");
    h->down = h->fails >= PEER_DOWN_CHECKS;
    return h->down != was;
}
