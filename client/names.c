/*
 * names.c - the names of a lock's companions: its wake channel, its fence
 * counter.
 *
 * They follow Redisson's prefixName() (RedissonObject.java): the lock name
 * goes in braces, "<prefix>:{<key>}", unless it already contains a '{', in
 * which case "<prefix>:<key>" keeps the key's own hash tag.  Either way the
 * companion hashes to the lock's cluster slot, so one script may touch both;
 * and for reentrant locks the channel is exactly the one Redisson's waiters
 * listen on.
 */
#include <string.h>

#include "client_impl.h"

size_t
lwc_prefixed_name(char *out, size_t cap, const char *prefix, const char *key,
                  size_t keylen)
{
    bool braced = memchr(key, '{', keylen) != NULL;
    size_t plen = strlen(prefix);
    size_t need = plen + 1 + keylen + (braced ? 0 : 2);
    size_t n = 0;

    if (cap < need + 1) {
        if (cap > 0)
            out[0] = '\0';
        return need;
    }
    memcpy(out, prefix, plen);
    n = plen;
    out[n++] = ':';
    if (!braced)
        out[n++] = '{';
    memcpy(out + n, key, keylen);
    n += keylen;
    if (!braced)
        out[n++] = '}';
    out[n] = '\0';
    return n;
}
