/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * optvalue_impl.h - the small helpers the value types share
 * (conf/optvalue.c, conf/optpairs.c); internal to conf/.
 */
#ifndef LOCKWATCH_OPTVALUE_IMPL_H
#define LOCKWATCH_OPTVALUE_IMPL_H

#include <stddef.h>

/* Write a refusal's reason into why (len bytes, may be 0). */
void optvalue_whyf(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "a, b or c" from a NULL-terminated list, cut at len. */
void optvalue_join_names(const char *const *names, char *buf, size_t len);

/* The field at offset off of a section's struct. */
static inline void *
optvalue_field(void *base, size_t off)
{
    return (char *)base + off;
}

static inline const void *
optvalue_cfield(const void *base, size_t off)
{
    return (const char *)base + off;
}

#endif
