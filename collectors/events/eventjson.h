/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * eventjson.h - the ring of lock events (events.h) as JSON: one event,
 * and one page of them as GET /api/v1/events answers (docs/events.md).
 *
 * An event's bytes are shown as the lock API shows a lock's: the key
 * sanitised to UTF-8 ("key") and percent-encoded, lossless
 * ("key_escaped"), with "key_cut" when the ring kept only its first
 * EVENT_KEY_MAX bytes; the holder the same way ("holder",
 * "holder_escaped", "holder_cut": EVENT_HOLDER_MAX); target, class and
 * detail sanitised (collectors/locks/lockjson.h), so no key can break
 * the JSON.
 *
 * A page is bounded: at most EVENTS_MAX events (?limit=, default
 * EVENTS_PAGE_DEFAULT), each at most a few dozen KiB.  Without ?after= it
 * holds the newest matching events; with it, the oldest matching events
 * newer than that seq, and "next_after" is what to ask next.  "gap" says
 * events newer than after were pushed out of the ring before this read
 * (or the agent restarted, its seqs starting again at 1: the page then
 * reads from the start).
 */
#ifndef LOCKWATCH_EVENTJSON_H
#define LOCKWATCH_EVENTJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "collectors/events/events.h"

#define EVENTS_PAGE_DEFAULT 100

struct events_query {
    bool has_after;             /* ?after= given */
    uint64_t after;
    int kind;                   /* enum event_kind, -1: any */
    const char *target;         /* NULL: any */
    size_t limit;               /* 1..EVENTS_MAX */
};

/* One event: {seq, time, time_ms, kind, severity, target, key,
 * key_escaped, key_cut, holder, holder_escaped, holder_cut, class, detail,
 * seconds}; NULL on ENOMEM. */
json_t *event_json(const struct event *e);

/* One page from the process's ring: {count, last_seq, next_after, more,
 * gap, dropped, events}; NULL on ENOMEM. */
json_t *events_page_json(const struct events_query *q);

#endif
