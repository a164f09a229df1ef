/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replay.c - the signed datagrams seen lately (replay.h).
 *
 * A mac is HMAC output: its first eight bytes are as good a hash as any,
 * and a sender cannot choose them without the key.  An all-zero slot is
 * empty; an all-zero mac (one in 2^128) is never kept, only accepted.
 */
#include "collectors/waits/replay.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct gen {
    unsigned char (*slot)[LW1_MAC_BYTES];
    size_t nslots;      /* a power of two; 0: none allocated yet */
    size_t used;
};

struct replay {
    struct gen gen[2];  /* [cur] takes new macs; the other is the period before */
    int cur;
    int64_t started_s;  /* when gen[cur] began */
    bool started;
    size_t slots_max;
};

static const unsigned char zero[LW1_MAC_BYTES];

static size_t
home(const unsigned char *mac, size_t nslots)
{
    uint64_t h;

    memcpy(&h, mac, sizeof(h));
    return (size_t)h & (nslots - 1);
}

static bool
gen_has(const struct gen *g, const unsigned char *mac)
{
    size_t i;

    if (g->nslots == 0)
        return false;
    for (i = home(mac, g->nslots);; i = (i + 1) & (g->nslots - 1)) {
        if (memcmp(g->slot[i], zero, LW1_MAC_BYTES) == 0)
            return false;
        if (memcmp(g->slot[i], mac, LW1_MAC_BYTES) == 0)
            return true;
    }
}

static void
gen_put(struct gen *g, const unsigned char *mac)
{
    size_t i = home(mac, g->nslots);

    while (memcmp(g->slot[i], zero, LW1_MAC_BYTES) != 0)
        i = (i + 1) & (g->nslots - 1);
    memcpy(g->slot[i], mac, LW1_MAC_BYTES);
    g->used++;
}

/* Room for one more: grow at half full, up to slots_max, where the table
 * may fill to three quarters.  false: no room. */
static bool
gen_room(struct gen *g, size_t slots_max)
{
    struct gen n;
    size_t i;

    if (g->nslots != 0 && (g->used + 1) * 2 <= g->nslots)
        return true;
    if (g->nslots >= slots_max)
        return (g->used + 1) * 4 <= g->nslots * 3;
    n.nslots = g->nslots == 0 ? REPLAY_SLOTS_MIN : g->nslots * 2;
    n.used = 0;
    if ((n.slot = calloc(n.nslots, sizeof(*n.slot))) == NULL)
        return g->nslots != 0 && (g->used + 1) * 4 <= g->nslots * 3;
    for (i = 0; i < g->nslots; i++)
        if (memcmp(g->slot[i], zero, LW1_MAC_BYTES) != 0)
            gen_put(&n, g->slot[i]);
    free(g->slot);
    *g = n;
    return true;
}

static void
gen_clear(struct gen *g)
{
    free(g->slot);
    memset(g, 0, sizeof(*g));
}

struct replay *
replay_new(size_t slots_max)
{
    struct replay *r = calloc(1, sizeof(*r));

    if (r != NULL)
        r->slots_max = slots_max < REPLAY_SLOTS_MIN ? REPLAY_SLOTS_MIN : slots_max;
    return r;
}

void
replay_free(struct replay *r)
{
    if (r == NULL)
        return;
    gen_clear(&r->gen[0]);
    gen_clear(&r->gen[1]);
    free(r);
}

/* The current generation is a period old: it becomes the one before, and
 * the one before that goes (both, after two periods of nothing). */
static void
rotate(struct replay *r, int64_t now_s)
{
    if (!r->started) {
        r->started = true;
        r->started_s = now_s;
        return;
    }
    if (now_s - r->started_s < REPLAY_PERIOD_S)
        return;
    if (now_s - r->started_s >= 2 * REPLAY_PERIOD_S)
        gen_clear(&r->gen[r->cur]);
    r->cur = 1 - r->cur;
    gen_clear(&r->gen[r->cur]);
    r->started_s = now_s;
}

enum replay_verdict
replay_note(struct replay *r, const unsigned char mac[LW1_MAC_BYTES], int64_t now_s)
{
    struct gen *g;

    rotate(r, now_s);
    if (memcmp(mac, zero, LW1_MAC_BYTES) == 0)
        return REPLAY_NEW;
    if (gen_has(&r->gen[0], mac) || gen_has(&r->gen[1], mac))
        return REPLAY_SEEN;
    g = &r->gen[r->cur];
    if (!gen_room(g, r->slots_max))
        return REPLAY_FULL;
    gen_put(g, mac);
    return REPLAY_NEW;
}

size_t
replay_count(const struct replay *r)
{
    return r->gen[0].used + r->gen[1].used;
}
