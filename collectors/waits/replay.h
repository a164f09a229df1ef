/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replay.h - the signed datagrams seen lately, so that a copy of one
 * (captured off the wire and sent again: no key needed) is rejected.
 *
 * A signed datagram is accepted while its time is within
 * LW1_MAC_WINDOW_S of the agent's clock either way, so a copy of it can
 * be accepted up to 2 x LW1_MAC_WINDOW_S after the first.  Its mac
 * covers its time and every byte, so a mac seen again within that long
 * is the same datagram again.  The macs are kept in two generations of
 * REPLAY_PERIOD_S each (a mac stays at least that long); each is an
 * open-addressing table that grows from REPLAY_SLOTS_MIN slots to
 * REPLAY_SLOTS_MAX (16 bytes a slot: at most 2 x 16 MiB, about 6,500
 * datagrams a second for two minutes).  Past that a mac is not kept and
 * its datagram is taken unchecked, and counted: a full table must not cost
 * genuine samples, and only genuine datagrams fill it (a copy is found, a
 * forgery fails the mac first).
 *
 * The ingest thread asks only of datagrams with a line that names an
 * owner: owner-less lines alone (a try-lock's 5-field timeouts) may come
 * twice, bytes and all, in one second.  Single-threaded: the ingest
 * thread owns it.
 */
#ifndef LOCKWATCH_REPLAY_H
#define LOCKWATCH_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "common/lw1mac.h"

#define REPLAY_PERIOD_S     (2 * LW1_MAC_WINDOW_S + 1)
#define REPLAY_SLOTS_MIN    1024
#define REPLAY_SLOTS_MAX    (1u << 20)

enum replay_verdict {
    REPLAY_NEW,         /* not seen: kept now */
    REPLAY_SEEN,        /* seen within the period: a copy */
    REPLAY_FULL,        /* not seen, and no room to keep it */
};

struct replay;

/* slots_max: each generation's largest table (a power of two, at least
 * REPLAY_SLOTS_MIN; REPLAY_SLOTS_MAX in the agent, smaller in tests).
 * NULL when out of memory. */
struct replay *replay_new(size_t slots_max);
void replay_free(struct replay *r);

/* Look mac up, as of now_s (a monotonic clock's seconds), and keep it if
 * new.  Out of memory to grow is REPLAY_FULL too. */
enum replay_verdict replay_note(struct replay *r, const unsigned char mac[LW1_MAC_BYTES],
                                int64_t now_s);

/* The macs kept now (tests, and the bound above). */
size_t replay_count(const struct replay *r);

#endif
