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

/* The value of one hex digit, or -1. */

/* Unsigned decimals are parsed with lw1_parse_udec() (common/lw1.h, via
 * formats.h): one rule for the agent's decoders and the client library. */

/* Days from 1970-01-01 to the given proleptic Gregorian date. */
int64_t fmt_days_from_civil(int64_t y, unsigned m, unsigned d);

/* True when ms is an acquisition time a decoder may report. */
bool fmt_time_plausible(int64_t ms);

/* Family files: collectors/formats/redisson.c */
bool fmt_redisson_rw_claims(const struct raw_lock *raw);
int fmt_redisson_rw_decode(const struct raw_lock *raw, struct lock_view *view);
bool fmt_redisson_claims(const struct raw_lock *raw);
int fmt_redisson_decode(const struct raw_lock *raw, struct lock_view *view);

/* collectors/formats/liblockwatch.c */
bool fmt_lw1_claims(const struct raw_lock *raw);
int fmt_lw1_decode(const struct raw_lock *raw, struct lock_view *view);

/* collectors/formats/shedlock.c */
bool fmt_shedlock_claims(const struct raw_lock *raw);
int fmt_shedlock_decode(const struct raw_lock *raw, struct lock_view *view);

/* collectors/formats/redispy.c */
bool fmt_redispy_claims(const struct raw_lock *raw);
int fmt_redispy_decode(const struct raw_lock *raw, struct lock_view *view);

/* collectors/formats/plain.c: "plain" and the catch-all "unknown" */
bool fmt_plain_claims(const struct raw_lock *raw);
int fmt_plain_decode(const struct raw_lock *raw, struct lock_view *view);
bool fmt_unknown_claims(const struct raw_lock *raw);
int fmt_unknown_decode(const struct raw_lock *raw, struct lock_view *view);

#endif
