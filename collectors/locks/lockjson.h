/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockjson.h - lock data as JSON values (jansson), one way for every
 * producer: the agent's API, lockctl --json and the alert payloads.
 *
 * Keys and holders are bytes, so they come in two forms: sanitised UTF-8
 * for people ("key") and percent-encoded, lossless, for programs
 * ("key_escaped").  Each function returns a new reference, or NULL when
 * out of memory (json_object_set_new() then sets nothing).
 */
#ifndef LOCKWATCH_LOCKJSON_H
#define LOCKWATCH_LOCKJSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

json_t *lockjson_text(const char *p, size_t n);      /* sanitised UTF-8 */
json_t *lockjson_escaped(const char *p, size_t n);   /* percent-encoded */
json_t *lockjson_time(int64_t unix_ms);              /* RFC 3339 UTC, ms; null when <= 0 */
json_t *lockjson_states(uint8_t states);             /* ["held", "leaked", ...] */

/*
 * The json_dumps() flag every producer adds to JSON_COMPACT or JSON_INDENT:
 * reals at 15 significant digits, so a time counted in ms prints as it was
 * meant (an age of 72556 ms as 72.556), not with the 17 digits jansson
 * prints by default on bookworm's 2.14 (72.555999999999997).  15 digits
 * give back any decimal of up to 15 digits exactly: ms up to 31,000 years.
 */
#define LOCKJSON_REALS JSON_REAL_PRECISION(15)

#endif
