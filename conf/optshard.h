/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * optshard.h - the SHARD value type ("I/N": this agent is shard I of N,
 * 0 <= I < N), internal to conf/ (a row of optvalue.c's table).
 *
 * set stores int I at o->off and int N at o->off2; N is at most o->max.
 * 0, or -1 with why set to "what is wrong (what is allowed)" and nothing
 * changed.  clear makes it 0/1 (one shard: every target).  format writes
 * "I/N".
 */
#ifndef LOCKWATCH_OPTSHARD_H
#define LOCKWATCH_OPTSHARD_H

#include <stddef.h>

struct config_option;
struct strbuf;

int optshard_set(const struct config_option *o, void *base, const char *v, char *why,
                 size_t len);
void optshard_clear(const struct config_option *o, void *base);
int optshard_format(const struct config_option *o, const void *base, const char *sep,
                    struct strbuf *sb);
void optshard_describe(const struct config_option *o, char *buf, size_t len);

#endif
