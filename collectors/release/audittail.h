/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * audittail.h - the audit stream's releases on the timeline: the agent
 * reads what was appended to a target's [unlock] audit_stream since it
 * last looked and pushes a force_release event (collectors/events/) for
 * each release that ran (outcome "released"), so a lockctl release, run
 * in another process, is on the agent's timeline too (docs/events.md).
 *
 * A release this process ran itself (the agent's POST
 * /api/v1/locks/release) is pushed by release_run() with what only it
 * knows (whether the key went, the holder's age), and its entry id is
 * remembered (release_audit_pushed()), so the tail skips it.
 *
 * The tail starts at the stream's newest entry when it first reads it:
 * the history before the agent started is lockctl audit's, not the
 * timeline's.  One XREAD COUNT AUDIT_TAIL_BATCH per poll; a stream the
 * agent's user may not read (NOPERM) is said once and no longer asked.
 */
#ifndef LOCKWATCH_AUDITTAIL_H
#define LOCKWATCH_AUDITTAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis.h>

#include "collectors/events/events.h"
#include "conf/config.h"

#define AUDIT_TAIL_BATCH 128    /* entries read a poll */
#define AUDIT_ID_MAX     64

struct audit_tail {
    char last_id[AUDIT_ID_MAX]; /* the newest entry read; "" before the first poll */
    bool refused;               /* the stream may not be read: not asked again */
};

/*
 * Read what is new on t's audit stream and push its releases.  Opens its
 * own connection (target_open(): the stream's node), within the caller's
 * redisconn scope.  0, 1 when the stream may not be read (NOPERM: err
 * says so once, at->refused set), -1 with err set.
 */
/* What the caller knew of a release's holder: its age in ms when the
 * release ran at at_ms (Unix ms), 0 when not known. */
typedef int64_t audit_age_fn(void *arg, const char *key, size_t keylen, const char *holder,
                             size_t holderlen, int64_t at_ms);

/* age (or NULL): asked for each release whose entry names no age the
 * releaser knew (lockctl asks the agent only when a guard needs it). */
int audit_tail_poll(struct audit_tail *at, const struct target_conf *t, const char *stream,
                    audit_age_fn *age, void *arg, char *err, size_t errlen);

/* The string value of field name in an audit entry's flat name/value
 * array reply, or NULL (lockctl audit reads entries with it too). */
const redisReply *audit_field(const redisReply *kv, const char *name);

/*
 * One audit entry's fields (a flat array reply: name, value, ...) as the
 * force_release event of target; detail is the caller's buffer
 * (EVENT_TEXT_MAX bytes) the event points into, its key and holder point
 * into fields (the holder's bytes as the entry has them).  false when
 * the entry is no release that ran (an expire, a refusal) or is one this
 * process pushed already.  Pure but for release_audit_pushed().
 */
bool audit_entry_event(const redisReply *fields, const char *id, const char *target,
                       struct event_in *in, char *detail);

#endif
