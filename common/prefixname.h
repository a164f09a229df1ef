/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prefixname.h - the name of a lock's companion key or channel, as
 * Redisson's prefixName() (RedissonObject.java) makes it.
 *
 * The lock name goes in braces, "<prefix>:{<key>}", unless it already
 * contains a '{', in which case "<prefix>:<key>" keeps the key's own hash
 * tag.  Either way the companion hashes to the lock's cluster slot, so one
 * script may touch both, and a Redisson lock's channel is exactly the one
 * its waiters listen on.  The decoders' wake channels, the guarded
 * release's companions and liblockwatch's channels and fence counters are
 * all named here.  Header-only (static inline): liblockwatch links nothing
 * of the agent.
 */
#ifndef LOCKWATCH_PREFIXNAME_H
#define LOCKWATCH_PREFIXNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Write the name for key (keylen bytes, not NUL-terminated; NULL when 0)
 * under prefix (a C string) into out, NUL-terminated, when cap holds it
 * and its NUL; otherwise write nothing but out[0] = '\0' (out not NULL,
 * cap > 0).
 * Returns the name's length without the NUL either way, like snprintf:
 * prefix_name(NULL, 0, ...) asks the size.
 */
static inline size_t
prefix_name(char *out, size_t cap, const char *prefix, const char *key, size_t keylen)
{
    bool braced = keylen > 0 && memchr(key, '{', keylen) != NULL;
    size_t plen = strlen(prefix);
    size_t need = plen + 1 + keylen + (braced ? 0 : 2);
    size_t n;

    if (out == NULL || need >= cap || keylen > (size_t)PTRDIFF_MAX / 2) {
        if (out != NULL && cap > 0)
            out[0] = '\0';
        return need;
    }
    memcpy(out, prefix, plen);
    n = plen;
    out[n++] = ':';
    if (!braced)
        out[n++] = '{';
    if (keylen > 0)
        memcpy(out + n, key, keylen);
    n += keylen;
    if (!braced)
        out[n++] = '}';
    out[n] = '\0';
    return n;
}

#endif
