/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * failalloc.c - the linker's --wrap targets for malloc, calloc, realloc
 * and strdup, failing the allocation failalloc_arm() chose (failalloc.h).
 * The __wrap_ and __real_ names are the linker's, reserved or not.
 */
#include "tests/unit/failalloc.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static _Thread_local struct {
    unsigned long fail_at, calls;
    const char *strdup_of;
    bool injected;
} inj;

void
failalloc_arm(unsigned long nth, const char *strdup_of)
{
    inj.fail_at = nth;
    inj.calls = 0;
    inj.strdup_of = strdup_of;
    inj.injected = false;
}

bool
failalloc_disarm(void)
{
    inj.fail_at = 0;
    inj.strdup_of = NULL;
    return inj.injected;
}

static bool
fail(void)
{
    inj.injected = true;
    errno = ENOMEM;
    return true;
}

static bool
inject(void)
{
    if (inj.fail_at == 0 || ++inj.calls != inj.fail_at)
        return false;
    return fail();
}

void *
__wrap_malloc(size_t n)
{
    return inject() ? NULL : __real_malloc(n);
}

void *
__wrap_calloc(size_t n, size_t size)
{
    return inject() ? NULL : __real_calloc(n, size);
}

void *
__wrap_realloc(void *p, size_t n)
{
    return inject() ? NULL : __real_realloc(p, n);
}

char *
__wrap_strdup(const char *s)
{
    if (inj.strdup_of != NULL && strcmp(s, inj.strdup_of) == 0 && fail())
        return NULL;
    return inject() ? NULL : __real_strdup(s);
}
