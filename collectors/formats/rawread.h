/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawread.h - a key's value replies (GETRANGE; HLEN + HSCAN;
 * ZCARD + ZRANGE WITHSCORES) as a raw_lock.
 *
 * The scanner and lockctl read a lock the same way and must decode it the
 * same way: the value cut at RAW_VALUE_MAX bytes, at most RAW_FIELDS_MAX
 * hash fields, truncation flagged, and holders past the field cap counted
 * from HLEN.  The raw_lock points into the replies: keep them alive while
 * it is used.  It sits with the decoders because it fills their input
 * (formats.h); collectors/redis/, a layer below, knows connections only.
 */
#ifndef LOCKWATCH_RAWREAD_H
#define LOCKWATCH_RAWREAD_H

#include <hiredis.h>
#include <stdbool.h>

#include "collectors/formats/formats.h"

/* A TYPE reply as the decoders' type (RAW_NONE for a key that is gone
 * or an error). */
enum raw_type rawread_type(const redisReply *rep);

/* A GETRANGE reply: fill raw's value.  false when rep is not a string. */
bool rawread_string(const redisReply *rep, struct raw_lock *raw);

/* An HSCAN reply: fill raw's fields from fields[RAW_FIELDS_MAX].  false
 * when rep is not an HSCAN reply; raw->nfields 0 when the hash is gone. */
bool rawread_hash(const redisReply *rep, struct raw_field *fields, struct raw_lock *raw);

/* An HMGET key mode reply (sent beside HSCAN: a hash cut by the read cap
 * may not show "mode" among the fields read): fill raw's mode.  An error
 * reply (refused, or a key that changed type) leaves it unread. */
void rawread_mode(const redisReply *rep, struct raw_lock *raw);

/* RAW_FIELDS_MAX - 1 spelled for a command line: ZRANGE's stop. */
#define RAW_FIELDS_LAST 63

/* A ZRANGE key 0 RAW_FIELDS_MAX-1 WITHSCORES reply (RESP2): fill raw's
 * fields with members and scores; zcard (ZCARD, -1 unknown) says whether
 * there were more.  false when rep is not such a reply. */
bool rawread_zset(const redisReply *rep, struct raw_field *fields, struct raw_lock *raw,
                  long long zcard);

/* The decoders saw only the first RAW_FIELDS_MAX fields: the rest of an
 * HLEN of hlen (-1 unknown) are holders too. */
void rawread_count_cut_holders(struct lock_view *view, const struct raw_lock *raw,
                               long long hlen);

#endif
