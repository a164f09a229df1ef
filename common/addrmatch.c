/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * addrmatch.c - do two getaddrinfo() answers share an address?
 */
#include "common/addrmatch.h"

#include <string.h>

bool
addrinfo_meet(const struct addrinfo *a, const struct addrinfo *b)
{
    const struct addrinfo *x, *y;

    for (x = a; x != NULL; x = x->ai_next)
        for (y = b; y != NULL; y = y->ai_next)
            if (x->ai_addrlen == y->ai_addrlen &&
                memcmp(x->ai_addr, y->ai_addr, x->ai_addrlen) == 0)
                return true;
    return false;
}
