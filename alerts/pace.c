/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pace.c - the spacing between deliveries to one receiver (see pace.h).
 */
#include "alerts/pace.h"

#include <stddef.h>

int64_t
pace_start_at(int64_t interval_ms, const struct pace *last, int64_t due_mono)
{
    int64_t earliest;

    if (last == NULL || interval_ms <= 0 || !last->any)
        return due_mono;
    earliest = last->last_end_mono + interval_ms;
    return earliest > due_mono ? earliest : due_mono;
}

const struct pace *
pace_later(const struct pace *a, const struct pace *b)
{
    if (a == NULL || !a->any)
        return b;
    if (b == NULL || !b->any)
        return a;
    return b->last_end_mono > a->last_end_mono ? b : a;
}

void
pace_ended(struct pace *p, int64_t now_mono)
{
    if (!p->any || now_mono > p->last_end_mono)
        p->last_end_mono = now_mono;
    p->any = true;
}
