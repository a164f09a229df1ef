/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockclass.h - map a lock key to its lock class.
 *
 * Metrics and wait statistics are per class, never per key, so the number
 * of series stays bounded (SPEC "Lock classes").  A key's class is the
 * first matching [classes] glob; otherwise the key with every ':'-separated
 * segment that looks like an id (all digits, a UUID, hex of 8+ characters,
 * or longer than 32 bytes) replaced by '*':  lock:order:1001 -> lock:order:*.
 *
 * class_set bounds the classes of one target to CLASS_MAX; keys whose class
 * would be the next one past the cap count as "other".
 *
 * Keys are untrusted bytes of any length.  Nothing here recurses or
 * allocates per key; class_glob_match() costs at most glob length x key
 * length steps (usually linear), never exponential.
 */
#ifndef LOCKWATCH_LOCKCLASS_H
#define LOCKWATCH_LOCKCLASS_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/config.h"

#define CLASS_MAX       200     /* classes per target, "other" excluded */
#define CLASS_NAME_MAX  128     /* bytes of a derived class name kept */
#define CLASS_OTHER     "other"
#define CLASS_OTHER_INDEX 0     /* "other" is always interned, at index 0 */

/*
 * Write KEY's class into out (NUL-terminated, at most outlen-1 bytes; a
 * name longer than that is cut and ends in "...").  rules may be NULL;
 * the first rule whose glob matches gives its name.  Otherwise the class
 * is derived: the key split on ':', each segment that is all digits, a
 * UUID (8-4-4-4-12 hex, any case), 8+ hex digits or longer than 32 bytes
 * replaced by '*' (empty segments stay empty), joined by ':' again.
 * A NUL byte in the key becomes '?' (out is a C string) and the result
 * is valid UTF-8: each invalid byte becomes U+FFFD, so keys that differ
 * only in invalid bytes share a class (and a series).  Quotes, backslashes
 * and newlines are kept: render the name with label escaping.  Returns
 * the length written (0 when outlen is 0).
 */
size_t class_of(const char *key, size_t keylen,
                const struct class_rule *rules, size_t nrules,
                char *out, size_t outlen);

/*
 * Shell-style glob over slen bytes of s (binary-safe), the dialect of Redis'
 * SCAN MATCH (stringmatchlen, case-sensitive): '*' any run, '?' any byte,
 * '[abc]', '[^abc]', '[a-z]' (reversed ranges work), '\x' a literal x,
 * also inside brackets; an unclosed '[' runs to the end of the glob.  Two
 * deliberate differences, both at the edges: bytes >= 0x80 in a range
 * compare as unsigned (Redis compares plain chars, signed on x86), and a
 * glob of only stars matches the empty string (Redis' matcher says no,
 * though SCAN short-cuts a lone "*" to match every key).  Checked against
 * redis-server 7.0 on random globs over "ab*?[]^-\".
 */
bool class_glob_match(const char *glob, const char *s, size_t slen);

/* Does KEY match one of the target's exclude_patterns (class_glob_match)?
 * Such a key is never read, listed, counted or released. */
bool lock_key_excluded(const struct target_conf *t, const char *key, size_t keylen);

/* Does KEY match one of the target's semaphore_patterns?  Such a key
 * holding a decimal integer is a Redisson RSemaphore (formats_semaphore()). */
bool lock_key_semaphore(const struct target_conf *t, const char *key, size_t keylen);

/*
 * A bounded set of class names, interned in insertion order: "other" at
 * CLASS_OTHER_INDEX, then up to CLASS_MAX more.  A hash table, so interning
 * costs one hash and a probe or two (a scan interns once per key).  The
 * set owns copies of its names; it is not thread-safe (one per scan).
 */
struct class_set;

/* A new set holding only "other"; NULL when out of memory. */
struct class_set *class_set_new(void);
/* Free the set and its names; NULL is fine. */
void class_set_free(struct class_set *set);
/* Index of name (adding a copy if there is room); CLASS_OTHER_INDEX when
 * the set is full or name is NULL.  Returns -1 only on allocation failure
 * (or a NULL set). */
int class_set_intern(struct class_set *set, const char *name);
/*
 * Keep places for names (n of them; NULL entries and "other" skipped):
 * the classes of the view before.  A name not among them is folded into
 * "other" once the set's names and the preferred ones not interned yet
 * fill CLASS_MAX, so a class keeps its place from pass to pass whatever
 * order a pass meets its keys in (one key's class is not "lock:x" in one
 * view and "other" in the next).  A preferred name no key of the pass has
 * is dropped with the set.  Once, before any intern; 0, or -1 on ENOMEM.
 */
int class_set_prefer(struct class_set *set, char *const *names, size_t n);
/* Index of name if the set holds it, else -1 (nothing is added). */
int class_set_find(const struct class_set *set, const char *name);
/* Names in the set, "other" included: 1 .. CLASS_MAX + 1. */
size_t class_set_count(const struct class_set *set);
/* The name at idx, valid until class_set_free(); NULL past the end. */
const char *class_set_name(const struct class_set *set, size_t idx);
/*
 * How many class_set_intern() calls were folded into "other" because the
 * set was full: keys, not distinct names (counting distinct names would
 * need an unbounded set of exactly the names we refuse to keep).
 */
size_t class_set_overflowed(const struct class_set *set);
/* A key kept in "other" (a holding counted there before, which keeps its
 * class while it lasts: collectors/scan/tracker.h), counted as folded in
 * and its own class not added: CLASS_OTHER_INDEX, or -1 for a NULL set. */
int class_set_keep_other(struct class_set *set);

#endif
