/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawread.h - a key's value replies (GETRANGE, HLEN + HSCAN) as a raw_lock.
 *
 * The scanner and lockctl read a lock the same way and must decode it the
 * same way: the value cut at RAW_VALUE_MAX bytes, at most RAW_FIELDS_MAX
 * hash fields, truncation flagged, and holders past the field cap counted
 * from HLEN.  The raw_lock points into the replies: keep them alive while
 * it is used.
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

/* The decoders saw only the first RAW_FIELDS_MAX fields: the rest of an
 * HLEN of hlen (-1 unknown) are holders too. */
void rawread_count_cut_holders(struct lock_view *view, const struct raw_lock *raw,
                               long long hlen);

#endif
