/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * formats_impl.h - what the format decoders share, private to
 * collectors/formats/formats.c and the files in collectors/formats/.
 *
 * Each family file defines its rows' claims()/decode() functions and wake
 * fragments; formats.c puts them in the table and holds the small parsing
 * helpers below.  Every helper takes a pointer and a length and never reads
 * past it: values from Redis are not NUL-terminated.
 */
#ifndef LOCKWATCH_FORMATS_IMPL_H
#define LOCKWATCH_FORMATS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/formats/formats.h"

/* Length of a canonical textual UUID, 8-4-4-4-12. */
#define FMT_UUID_LEN 36

/* Zero *view and mark the fields whose "unknown" is not 0 (thread = -1). */
void fmt_view_reset(struct lock_view *view);

/*
 * Count one holder in view: holders_total and max_count always, the id
 * (cut to HOLDER_ID_MAX - 1 bytes) only while there is room in holders[].
 * truncated says the id given is already incomplete.
 */
void fmt_add_holder(struct lock_view *view, const char *id, size_t idlen,
                    bool truncated, long count);

/* Copy up to HOST_MAX - 1 bytes of host into view->host. */
void fmt_set_host(struct lock_view *view, const char *host, size_t len);

/* 36 bytes of 8-4-4-4-12 hex; lowercase_only rejects A-F. */
bool fmt_is_uuid(const char *s, size_t len, bool lowercase_only);

/* 36 bytes of a lowercase RFC 4122 version 4 UUID (what Java's
 * UUID.randomUUID().toString(), Node's crypto.randomUUID() and Python's
 * str(uuid.uuid4()) write). */
bool fmt_is_uuid4(const char *s, size_t len);

/* len bytes of standard base64 (A-Z a-z 0-9 + /) followed by exactly pad
 * '=' bytes (counted in len). */
bool fmt_is_base64(const char *s, size_t len, size_t pad);

/* 32 lowercase hex digits. */
bool fmt_is_hex32(const char *s, size_t len);

/* A string value read whole (not cut by the read cap). */
bool fmt_whole_string(const struct raw_lock *raw);

/* Decode a string row whose holder is the whole value: one holder, count
 * 1, nothing else known; -1 unless claims(raw). */
int fmt_decode_token(const struct raw_lock *raw, struct lock_view *view,
                     bool (*claims)(const struct raw_lock *));

/* Does the key start with the literal prefix (and hold more after it)? */
bool fmt_key_has_prefix(const struct raw_lock *raw, const char *prefix);

/* Unsigned decimals are parsed with lw1_parse_udec() (common/lw1.h, via
 * formats.h): one rule for the agent's decoders and the client library. */

/* Days from 1970-01-01 to the given proleptic Gregorian date. */
int64_t fmt_days_from_civil(int64_t y, unsigned m, unsigned d);

/* True when ms is an acquisition time a decoder may report. */
bool fmt_time_plausible(int64_t ms);

/*
 * The formats, in claim order: X(name, id, wake channel prefix or NULL).
 * Row id's family file defines fmt_<id>_claims() and fmt_<id>_decode();
 * this list makes their declarations below and formats_table in
 * formats.c.  A new format is one row here and one file beside this one
 * (CONTRIBUTING.md).  The order is the disambiguation policy (formats.c);
 * "unknown" must stay last.
 *
 *   redisson-rw, redisson   redisson.c
 *   redisson-fair, -fenced, -permit-semaphore   redisson_kin.c (never
 *                           claimed from a value: the scanner gives a
 *                           lock one of them by its helper keys)
 *   liblockwatch            liblockwatch.c
 *   shedlock                shedlock.c
 *   redis-py                redispy.c
 *   node-redlock            noderedlock.c
 *   redsync                 redsync.c
 *   python-redis-lock       pyredislock.c
 *   redis-semaphore         redissemaphore.c
 *   pottery                 pottery.c
 *   spring                  spring.c
 *   plain, unknown          plain.c
 */
#define LOCK_FORMATS(X)                                              \
    X("redisson-rw",  redisson_rw, "redisson_rwlock")                 \
    X("redisson",     redisson,    "redisson_lock__channel")          \
    X("redisson-fair", redisson_fair, "redisson_lock__channel")       \
    X("redisson-fenced", redisson_fenced, "redisson_lock__channel")   \
    X("redisson-permit-semaphore", redisson_psem, "redisson_sc")      \
    X("liblockwatch", lw1,         "lockwatch_lock__channel")         \
    X("shedlock",     shedlock,    NULL)                              \
    X("redis-py",     redispy,     NULL)                              \
    X("node-redlock", noderedlock, NULL)                              \
    X("redsync",      redsync,     NULL)                              \
    X("python-redis-lock", pyredislock, NULL)                         \
    X("redis-semaphore", redissemaphore, NULL)                        \
    X("pottery",      pottery,     NULL)                              \
    X("spring",       spring,      NULL)                              \
    X("plain",        plain,       NULL)                              \
    X("unknown",      unknown,     NULL)

#define FMT_DECLARE(name, id, wake)                                  \
    bool fmt_##id##_claims(const struct raw_lock *raw);              \
    int fmt_##id##_decode(const struct raw_lock *raw, struct lock_view *view);
LOCK_FORMATS(FMT_DECLARE)
#undef FMT_DECLARE

#endif
