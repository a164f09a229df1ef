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
 */
#ifndef LOCKWATCH_LOCKCLASS_H
#define LOCKWATCH_LOCKCLASS_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/config.h"

#define CLASS_MAX       200     /* classes per target, "other" excluded */
#define CLASS_NAME_MAX  128     /* bytes of a derived class name kept */
#define CLASS_OTHER     "other"

/*
 * Write KEY's class into out (NUL-terminated, at most outlen-1 bytes; a
 * derived name longer than that is cut and ends in "...").  rules may be
 * NULL.  Returns the length written.
 */
size_t class_of(const char *key, size_t keylen,
                const struct class_rule *rules, size_t nrules,
                char *out, size_t outlen);

/* Shell-style glob ('*', '?', '[...]', '\' escapes) over a byte string,
 * the same dialect as Redis' SCAN MATCH. */
bool class_glob_match(const char *glob, const char *s, size_t slen);

/* A bounded set of class names, interned in insertion order. */
struct class_set;

struct class_set *class_set_new(void);
void class_set_free(struct class_set *set);
/* Index of name (adding it if there is room); the index of "other" when
 * the set is full.  Returns -1 only on allocation failure. */
int class_set_intern(struct class_set *set, const char *name);
size_t class_set_count(const struct class_set *set);
const char *class_set_name(const struct class_set *set, size_t idx);
/* How many distinct names were folded into "other". */
size_t class_set_overflowed(const struct class_set *set);

#endif
