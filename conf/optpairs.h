/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * optpairs.h - the FORMAT_PATTERNS value type ("glob=format" pairs),
 * internal to conf/ (a row of optvalue.c's table).
 *
 * set stores char **globs at o->off, the count at o->off2 and char
 * **formats at o->off3, each format one of o->names; 0, or -1 with why
 * set to "what is wrong (the names allowed)" and nothing changed.  clear
 * frees both arrays.  format writes the pairs blank-separated.
 */
#ifndef LOCKWATCH_OPTPAIRS_H
#define LOCKWATCH_OPTPAIRS_H

#include <stddef.h>

struct config_option;
struct strbuf;

int optpairs_set(const struct config_option *o, void *base, const char *v, char *why,
                 size_t len);
void optpairs_clear(const struct config_option *o, void *base);
int optpairs_format(const struct config_option *o, const void *base, const char *sep,
                    struct strbuf *sb);
void optpairs_describe(const struct config_option *o, char *buf, size_t len);

#endif
