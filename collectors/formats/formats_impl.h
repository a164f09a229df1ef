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
 * The formats, in claim order: X(name, id, columns...).  Row id's family
 * file defines fmt_<id>_claims() and fmt_<id>_decode(); this list makes
 * their declarations below, enum fmt_id, and formats_table in formats.c.
 * The columns are designated initializers of struct lock_format
 * (formats.h says what each means); a column left out is 0, "missing",
 * and formats_row_check() (tests/unit/test_formats.c) names it.  A new
 * format is one row here and one file beside this one (CONTRIBUTING.md).
 * The order is the disambiguation policy (formats.c); "unknown" must stay
 * last.
 *
 *   redisson-rw, redisson   redisson.c
 *   redisson-fair, -fenced, -permit-semaphore   redisson_kin.c (never
 *                           claimed from a value: the scanner gives a
 *                           lock one of them by its helper keys, .kin)
 *   redisson-semaphore      redisson_rsemaphore.c (claimed by no value:
 *                           the target's semaphore_patterns say)
 *   liblockwatch            liblockwatch.c
 *   shedlock                shedlock.c
 *   redis-py                redispy.c
 *   node-redlock            noderedlock.c
 *   redsync                 redsync.c
 *   python-redis-lock       pyredislock.c
 *   redis-semaphore         node_redis_semaphore.c
 *   pottery                 pottery.c
 *   spring                  spring.c
 *   plain, unknown          plain.c
 */
#define RS_CHANNEL                                                             \
    FMT_WAKE("redisson", "redisson_lock__channel", "redisson_lock__channel__", "0")
#define RS_RELEASE  "redisson redisson-v2 redisson-queue redisson-timeout"
#define SC_CHANNEL  FMT_WAKE("redisson-sc", "redisson_sc", NULL, "the new count")
#define FMT_COLUMNS_POLL                                                       \
    .helpers = FMT_HELPERS_NONE, .kin = FMT_KIN_NONE, .waiters = FMT_WAITERS_NONE, \
    .semaphore = FMT_SEM_NO, FMT_WAKE_NONE

#define LOCK_FORMATS(X)                                                        \
    X("redisson-rw", redisson_rw, .holds = FMT_HOLDS_HASH,                     \
      .helpers = FMT_HELPER(HELPER_RW_TIMEOUT) | FMT_HELPER(HELPER_UNLOCK_LATCH), \
      .kin = FMT_KIN_NONE, .waiters = FMT_WAITERS_CHANNEL, .semaphore = FMT_SEM_NO, \
      FMT_WAKE("redisson-rw", "redisson_rwlock", "redisson_rwlock__", "0 and 1"), \
      .release = "redisson-rw redisson-rw-v2",                                 \
      .release_wakes = FMT_RWAKES_MODE, .proves = FMT_PROVES_LAYOUT,           \
      .registry = true)                                                        \
    X("redisson", redisson, .holds = FMT_HOLDS_HASH,                           \
      .helpers = FMT_HELPER(HELPER_UNLOCK_LATCH), .kin = FMT_KIN_NONE,         \
      .waiters = FMT_WAITERS_QUEUE, .semaphore = FMT_SEM_NO, RS_CHANNEL, \
      .release = RS_RELEASE,                                                   \
      .release_wakes = FMT_RWAKES_ALL, .proves = FMT_PROVES_LAYOUT,            \
      .registry = true)                                                        \
    X("redisson-fair", redisson_fair, .holds = FMT_HOLDS_HASH,                 \
      .helpers = FMT_HELPER(HELPER_FAIR_QUEUE) | FMT_HELPER(HELPER_FAIR_TIMEOUT) | \
                 FMT_HELPER(HELPER_UNLOCK_LATCH),                              \
      .kin = FMT_KIN(FMT_ROW_BIT(redisson), FMT_HELPER(HELPER_FAIR_QUEUE) |    \
                     FMT_HELPER(HELPER_FAIR_TIMEOUT), false),                  \
      .waiters = FMT_WAITERS_QUEUE, .semaphore = FMT_SEM_NO, RS_CHANNEL, \
      .release = RS_RELEASE,                                                   \
      .release_wakes = FMT_RWAKES_ALL, .proves = FMT_PROVES_NOTHING,           \
      .registry = true)                                                        \
    X("redisson-fenced", redisson_fenced, .holds = FMT_HOLDS_HASH,             \
      .helpers = FMT_HELPER(HELPER_FENCE_TOKEN) | FMT_HELPER(HELPER_UNLOCK_LATCH), \
      .kin = FMT_KIN(FMT_ROW_BIT(redisson), FMT_HELPER(HELPER_FENCE_TOKEN), false), \
      .waiters = FMT_WAITERS_QUEUE, .semaphore = FMT_SEM_NO, RS_CHANNEL, \
      .release = "redisson redisson-v2",                                       \
      .release_wakes = FMT_RWAKES_ALL, .proves = FMT_PROVES_NOTHING,           \
      .registry = true)                                                        \
    X("redisson-permit-semaphore", redisson_psem, .holds = FMT_HOLDS_STRING,   \
      .helpers = FMT_HELPER(HELPER_PERMIT_TIMEOUT),                            \
      .kin = FMT_KIN(FMT_ROW_BIT(plain) | FMT_ROW_BIT(redisson_sem),           \
                     FMT_HELPER(HELPER_PERMIT_TIMEOUT), true),                 \
      .waiters = FMT_WAITERS_CHANNEL, .semaphore = FMT_SEM_PERMITS,            \
      SC_CHANNEL, .release = "permits redisson-sc",                            \
      .release_wakes = FMT_RWAKES_ALL,                                         \
      .proves = FMT_PROVES_NOTHING)                                            \
    X("redisson-semaphore", redisson_sem, .holds = FMT_HOLDS_STRING,           \
      .helpers = FMT_HELPERS_NONE, .kin = FMT_KIN_NONE,                        \
      .waiters = FMT_WAITERS_CHANNEL, .semaphore = FMT_SEM_COUNT,              \
      SC_CHANNEL, .release = "redisson-sc",                                    \
      .release_wakes = FMT_RWAKES_ALL, .proves = FMT_PROVES_NOTHING)           \
    X("liblockwatch", lw1, .holds = FMT_HOLDS_STRING,                          \
      .helpers = FMT_HELPER(HELPER_CLIENT_REGISTRY), .kin = FMT_KIN_NONE,      \
      .waiters = FMT_WAITERS_CHANNEL, .semaphore = FMT_SEM_NO,                 \
      FMT_WAKE("liblockwatch", "lockwatch_lock__channel", NULL, "0"),  \
      .release = "liblockwatch",                                               \
      .release_wakes = FMT_RWAKES_ALL, .proves = FMT_PROVES_LAYOUT)            \
    X("shedlock", shedlock, .holds = FMT_HOLDS_STRING, FMT_COLUMNS_POLL,       \
      .release = "",                                                           \
      .release_wakes = FMT_RWAKES_NONE, .proves = FMT_PROVES_LAYOUT)           \
    X("redis-py", redispy, .holds = FMT_HOLDS_STRING, FMT_COLUMNS_POLL,        \
      .release = "",                                                           \
      .release_wakes = FMT_RWAKES_NONE, .proves = FMT_PROVES_DECLARED)         \
    X("node-redlock", noderedlock, .holds = FMT_HOLDS_STRING, FMT_COLUMNS_POLL, \
      .release = "",                                                           \
      .release_wakes = FMT_RWAKES_NONE, .proves = FMT_PROVES_SHAPE)            \
    X("redsync", redsync, .holds = FMT_HOLDS_STRING, FMT_COLUMNS_POLL,         \
      .release = "",                                                           \
      .release_wakes = FMT_RWAKES_NONE, .proves = FMT_PROVES_SHAPE)            \
    X("python-redis-lock", pyredislock, .holds = FMT_HOLDS_STRING,             \
      .helpers = FMT_HELPER(HELPER_SIGNAL_LIST), .kin = FMT_KIN_NONE,          \
      .waiters = FMT_WAITERS_NONE, .semaphore = FMT_SEM_NO, FMT_WAKE_NONE, \
      .release = "signal",                                                     \
      .release_wakes = FMT_RWAKES_ALL, .proves = FMT_PROVES_SHAPE)             \
    X("redis-semaphore", node_redis_semaphore, .holds = FMT_HOLDS_STRING | FMT_HOLDS_ZSET, \
      FMT_COLUMNS_POLL, .release = "",                                         \
      .release_wakes = FMT_RWAKES_NONE, .proves = FMT_PROVES_SHAPE)            \
    X("pottery", pottery, .holds = FMT_HOLDS_STRING, FMT_COLUMNS_POLL,         \
      .release = "",                                                           \
      .release_wakes = FMT_RWAKES_NONE, .proves = FMT_PROVES_SHAPE)            \
    X("spring", spring, .holds = FMT_HOLDS_STRING, FMT_COLUMNS_POLL,           \
      .release = "",                                                           \
      .release_wakes = FMT_RWAKES_ALL, .proves = FMT_PROVES_DECLARED)          \
    X("plain", plain, .holds = FMT_HOLDS_STRING, FMT_COLUMNS_POLL,             \
      .release = "liblockwatch signal redisson-sc permits",                    \
      .release_wakes = FMT_RWAKES_NONE,                                        \
      .proves = FMT_PROVES_FALLBACK)                                           \
    X("unknown", unknown, .holds = FMT_HOLDS_HASH | FMT_HOLDS_ZSET | FMT_HOLDS_OTHER, \
      FMT_COLUMNS_POLL, .release = FMT_RELEASE_DETECT,                         \
      .release_wakes = FMT_RWAKES_NONE, .proves = FMT_PROVES_NOTHING)

/* enum fmt_id: FMT_ID_<id>, a row's index in formats_table; FMT_ROW_BIT()
 * names a set of rows (the kin column's "from"). */
#define FMT_ENUM(name, id, ...) FMT_ID_##id,
enum fmt_id { LOCK_FORMATS(FMT_ENUM) FMT_ID_COUNT };
#undef FMT_ENUM
#define FMT_ROW_BIT(id) (1u << FMT_ID_##id)
_Static_assert(FMT_ID_COUNT <= 32, "FMT_ROW_BIT() needs a row to fit an unsigned");

#define FMT_DECLARE(name, id, ...)                                             \
    bool fmt_##id##_claims(const struct raw_lock *raw);                        \
    int fmt_##id##_decode(const struct raw_lock *raw, struct lock_view *view);
LOCK_FORMATS(FMT_DECLARE)
#undef FMT_DECLARE

#endif
