/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lostview.c - changes of server between two views, and the bounded,
 * oldest-first list of the locks lost (lostview.h).
 */
#include "collectors/locks/lostview.h"

#include <string.h>

#include "common/keyhash.h"

static const struct {
    const char *name, *words, *prep;
} causes[LOST_CAUSE_COUNT] = {
#define X(id, name, words, prep) [LOST_##id] = { name, words, prep },
    LOST_CAUSES(X)
#undef X
};

/* worst first */
static const enum lost_cause cause_rank[LOST_CAUSE_COUNT] = {
    LOST_FAILOVER, LOST_RESTART, LOST_FLUSH, LOST_SWAPDB,
};

const char *
lost_cause_name(enum lost_cause c)
{
    return (unsigned)c < LOST_CAUSE_COUNT ? causes[c].name : "unknown";
}

const char *
lost_cause_words(enum lost_cause c, const char **prep)
{
    if ((unsigned)c >= LOST_CAUSE_COUNT) {
        *prep = "of";
        return "a change";
    }
    *prep = causes[c].prep;
    return causes[c].words;
}

enum lost_cause
lost_cause_worse(enum lost_cause a, enum lost_cause b)
{
    size_t i;

    for (i = 0; i < LOST_CAUSE_COUNT; i++)
        if (cause_rank[i] == a || cause_rank[i] == b)
            return cause_rank[i];
    return a;
}

bool
lost_server_changed(const struct server_id *was, const char *was_node,
                    const struct server_id *now, const char *now_node,
                    enum lost_cause *cause)
{
    if (!was->have || !now->have)
        return false;
    if (strcmp(was->run_id, now->run_id) != 0) {
        *cause = strcmp(was_node, now_node) != 0 ? LOST_FAILOVER : LOST_RESTART;
        return true;
    }
    /* the same process holding another's data: a full sync as a replica
     * (REPLICAOF), or a promotion; counted as a failover */
    if (serverinfo_resynced(was->replid, was->replica, now->replid, now->replid2,
                            now->replica)) {
        *cause = LOST_FAILOVER;
        return true;
    }
    /* statistics reset (CONFIG RESETSTAT): a flush may hide behind it */
    if (was->flushes != now->flushes || now->info_calls < was->info_calls) {
        *cause = LOST_FLUSH;
        return true;
    }
    if (was->swaps != now->swaps) {
        *cause = LOST_SWAPDB;
        return true;
    }
    return false;
}

bool
lost_same_holder(const struct snap_lock *l, uint32_t holder_hash)
{
    size_t i;

    if (l->nholders == 0)
        return true;
    for (i = 0; i < l->nholders; i++)
        if (l->holders[i].truncated ||
            (uint32_t)keyhash(l->holders[i].id, l->holders[i].id_len) == holder_hash)
            return true;
    return false;
}

/* Copy up to size bytes of p (n) into out; true when cut. */
static bool
copy_cut(char *out, size_t size, uint16_t *outlen, const char *p, size_t n)
{
    size_t take = n < size ? n : size;

    memcpy(out, p, take);
    *outlen = (uint16_t)take;
    return take < n;
}

int
lost_note(struct snap_lost *out, const struct snap_lock *l, bool taken)
{
    struct snap_lost_lock *e;
    size_t at;

    out->count++;
    /* the place among the named, oldest hold first */
    for (at = 0; at < out->nlisted; at++)
        if (l->first_seen_ms < out->listed[at].first_seen_ms)
            break;
    if (at >= LOST_LIST_MAX)
        return -1;
    if (out->nlisted < LOST_LIST_MAX)
        out->nlisted++;
    memmove(&out->listed[at + 1], &out->listed[at],
            (out->nlisted - 1 - at) * sizeof(out->listed[0]));
    e = &out->listed[at];
    memset(e, 0, sizeof(*e));
    e->key_cut = copy_cut(e->key, sizeof(e->key), &e->key_len, l->key, l->key_len) ||
        (l->flags & SNAP_KEY_TRUNCATED);
    if (l->nholders > 0)
        e->holder_cut = copy_cut(e->holder, sizeof(e->holder), &e->holder_len,
                                 l->holders[0].id, l->holders[0].id_len) ||
            l->holders[0].truncated;
    e->taken = taken;
    e->first_seen_ms = l->first_seen_ms;
    return (int)at;
}
