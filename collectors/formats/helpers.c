/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * helpers.c - keys that belong to a lock without being one (formats.h,
 * "Helper keys").
 *
 * Every rule here is a key name shape a real client writes beside its
 * lock, specific enough (a fixed prefix, a client uuid, 32 hex digits, a
 * Redis Cluster hash tag) that a lock of another library does not take
 * it.  Redisson builds its names with prefixName() ("<prefix>:<name>" when
 * the name holds '{', else "<prefix>:{<name>}") and suffixName() (the
 * same tag, then ":<suffix>"); what is between is the "tag", and the lock
 * it belongs to is the tag without its braces when Redisson added them.
 * Pure: no I/O, no allocation; every parse stays inside keylen.
 */
#include <string.h>

#include "collectors/formats/formats_impl.h"
#include "common/keytext.h"
#include "common/prefixname.h"

/* How a reader names a lock's helper to look it up (probe) when the scan
 * did not see it: Redisson's prefixName() or suffixName() of the lock.
 * Only the helpers whose presence changes a lock's row (formats_kin()) are
 * probed, and of the fair lock's two only the queue: its timeout set
 * lives and dies with it. */
enum probe_style { NOT_PROBED, PROBE_PREFIXED, PROBE_SUFFIXED };

static const struct {
    const char *name;
    const char *what;
    enum probe_style probe;
    const char *affix;          /* the probe's prefix or suffix */
    bool holders;               /* its members are the lock's holders */
} kinds[HELPER_KINDS] = {
    [HELPER_NONE] = { "none", "not a helper key", NOT_PROBED, NULL, false },
    [HELPER_FAIR_QUEUE] = { "fair-queue",
        "the waiting queue of Redisson fair lock", PROBE_PREFIXED, "redisson_lock_queue",
        false },
    [HELPER_FAIR_TIMEOUT] = { "fair-timeout",
        "the waiters' timeout set of Redisson fair lock", NOT_PROBED, NULL, false },
    [HELPER_FENCE_TOKEN] = { "fence-token",
        "the fencing token counter of Redisson fenced lock", PROBE_PREFIXED,
        "redisson_lock_token", false },
    [HELPER_UNLOCK_LATCH] = { "unlock-latch",
        "an unlock latch (Redisson's idempotent unlock) of lock", NOT_PROBED, NULL, false },
    [HELPER_RW_TIMEOUT] = { "rwlock-timeout",
        "a reader's timeout key of Redisson read/write lock", NOT_PROBED, NULL, false },
    [HELPER_PERMIT_TIMEOUT] = { "permit-timeout",
        "the expiring permits of Redisson permit-expirable semaphore", PROBE_SUFFIXED,
        "timeout", true },
    [HELPER_SIGNAL_LIST] = { "signal-list",
        "the waiters' signal list of python-redis-lock lock", NOT_PROBED, NULL, false },
    [HELPER_CLIENT_REGISTRY] = { "client-registry",
        "liblockwatch's client registry of the client holding lock(s) as", NOT_PROBED, NULL,
        false },
};

size_t
formats_helper_lock_name(enum helper_kind k, const char *key, size_t keylen, char *out,
                         size_t cap)
{
    bool braced;
    size_t slen, need, n = 0;

    if ((unsigned)k >= HELPER_KINDS || kinds[k].probe == NOT_PROBED || key == NULL)
        return 0;
    if (kinds[k].probe == PROBE_PREFIXED)
        return prefix_name(out, cap, kinds[k].affix, key, keylen);
    /* suffixName(): the tag, then ":<suffix>" */
    braced = memchr(key, '{', keylen) != NULL;
    slen = strlen(kinds[k].affix);
    need = keylen + slen + 1 + (braced ? 0 : 2);
    if (out == NULL || need >= cap)
        return need;
    if (!braced)
        out[n++] = '{';
    memcpy(out + n, key, keylen);
    n += keylen;
    if (!braced)
        out[n++] = '}';
    out[n++] = ':';
    memcpy(out + n, kinds[k].affix, slen);
    n += slen;
    out[n] = '\0';
    return n;
}

bool
formats_helper_holds_holders(enum helper_kind k)
{
    return (unsigned)k < HELPER_KINDS && kinds[k].holders;
}

const char *
formats_helper_name(enum helper_kind k)
{
    return (unsigned)k < HELPER_KINDS ? kinds[k].name : "none";
}

const char *
formats_helper_what(enum helper_kind k)
{
    return (unsigned)k < HELPER_KINDS ? kinds[k].what : kinds[HELPER_NONE].what;
}

static bool
has_prefix(const char *key, size_t keylen, const char *lit, size_t *n)
{
    *n = strlen(lit);
    return keylen > *n && memcmp(key, lit, *n) == 0;
}

static bool
has_brace(const char *s, size_t len)
{
    return len > 0 && memchr(s, '{', len) != NULL;
}

/* A Redisson tag names its lock: "{X}" with no other '{' in X is X, as
 * prefixName() added the braces; any other tag is the name itself. */
static void
set_tag_owner(struct helper_key *out, const char *tag, size_t len)
{
    if (len >= 2 && tag[0] == '{' && tag[len - 1] == '}' && !has_brace(tag + 1, len - 2)) {
        out->owner = tag + 1;
        out->ownerlen = len - 2;
    } else {
        out->owner = tag;
        out->ownerlen = len;
    }
    out->style = HELPER_OWNER_REDISSON;
}

static bool
all_hex(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (keytext_hexval((unsigned char)s[i]) < 0)
            return false;
    return true;
}

/* "<tag>:<uuid>:<tid>:rwlock_timeout:<n>": the tag's length, or 0. */
static size_t
rw_timeout_tag(const char *key, size_t keylen)
{
    static const char lit[] = ":rwlock_timeout:";
    const size_t litlen = sizeof(lit) - 1;
    size_t end = keylen, tid_end, tid_start;

    while (end > 0 && key[end - 1] >= '0' && key[end - 1] <= '9')
        end--;
    if (end == keylen || end < litlen || memcmp(key + end - litlen, lit, litlen) != 0)
        return 0;
    tid_end = end - litlen;
    tid_start = tid_end;
    while (tid_start > 0 && key[tid_start - 1] >= '0' && key[tid_start - 1] <= '9')
        tid_start--;
    if (tid_start == tid_end)
        return 0;
    if (tid_start > 0 && key[tid_start - 1] == '-')
        tid_start--;
    /* ":<uuid>:" before the thread id */
    if (tid_start < FMT_UUID_LEN + 3 || key[tid_start - 1] != ':' ||
        key[tid_start - 2 - FMT_UUID_LEN] != ':' ||
        !fmt_is_uuid(key + tid_start - 1 - FMT_UUID_LEN, FMT_UUID_LEN, true))
        return 0;
    return tid_start - 2 - FMT_UUID_LEN;
}

enum helper_kind
formats_helper(const char *key, size_t keylen, enum raw_type type, struct helper_key *out)
{
    struct helper_key dummy;
    size_t n, tag;

    if (out == NULL)
        out = &dummy;
    memset(out, 0, sizeof(*out));
    if (key == NULL || keylen == 0)
        return HELPER_NONE;

    if (has_prefix(key, keylen, "redisson_lock_queue:", &n) && has_brace(key + n, keylen - n)) {
        out->kind = HELPER_FAIR_QUEUE;
        set_tag_owner(out, key + n, keylen - n);
    } else if (has_prefix(key, keylen, "redisson_lock_timeout:", &n) &&
               has_brace(key + n, keylen - n)) {
        out->kind = HELPER_FAIR_TIMEOUT;
        set_tag_owner(out, key + n, keylen - n);
    } else if (has_prefix(key, keylen, "redisson_lock_token:", &n) &&
               has_brace(key + n, keylen - n)) {
        out->kind = HELPER_FENCE_TOKEN;
        set_tag_owner(out, key + n, keylen - n);
    } else if (has_prefix(key, keylen, "redisson_unlock_latch:", &n) && keylen > n + 33 &&
               key[keylen - 33] == ':' && all_hex(key + keylen - 32, 32) &&
               has_brace(key + n, keylen - 33 - n)) {
        out->kind = HELPER_UNLOCK_LATCH;
        set_tag_owner(out, key + n, keylen - 33 - n);
    } else if (has_prefix(key, keylen, "lock-signal:", &n)) {
        /* python-redis-lock: the lock is "lock:<name>" */
        out->kind = HELPER_SIGNAL_LIST;
        out->style = HELPER_OWNER_LOCK_PREFIX;
        out->owner = key + n;
        out->ownerlen = keylen - n;
    } else if (has_prefix(key, keylen, "lockwatch:client:{", &n) &&
               keylen == n + FMT_UUID_LEN + 1 && key[keylen - 1] == '}' &&
               fmt_is_uuid(key + n, FMT_UUID_LEN, false)) {
        out->kind = HELPER_CLIENT_REGISTRY;
        out->style = HELPER_OWNER_CLIENT;
        out->owner = key + n;
        out->ownerlen = FMT_UUID_LEN;
    } else if ((tag = rw_timeout_tag(key, keylen)) > 0 && has_brace(key, tag)) {
        out->kind = HELPER_RW_TIMEOUT;
        set_tag_owner(out, key, tag);
    } else if (type == RAW_ZSET && keylen > 8 && memcmp(key + keylen - 8, ":timeout", 8) == 0 &&
               has_brace(key, keylen - 8)) {
        /* generic enough to need its type: only a zset is this */
        out->kind = HELPER_PERMIT_TIMEOUT;
        set_tag_owner(out, key, keylen - 8);
    }
    return out->kind;
}

/*
 * Owner hashes: one per (style, owner bytes), the style mixed in so a
 * Redisson tag and a python-redis-lock name that happen to be equal do not
 * meet.
 */
static const uint64_t style_salt[] = {
    [HELPER_OWNER_REDISSON] = UINT64_C(0x9e3779b97f4a7c15),
    [HELPER_OWNER_LOCK_PREFIX] = UINT64_C(0xc2b2ae3d27d4eb4f),
    [HELPER_OWNER_CLIENT] = UINT64_C(0x165667b19e3779f9),
};

uint64_t
formats_owner_hash(enum helper_owner_style style, uint64_t (*hash)(const void *, size_t),
                   const char *owner, size_t len)
{
    return hash(owner, len) ^ style_salt[style];
}

size_t
formats_lock_owner_hashes(const char *key, size_t keylen, const char *const *ids,
                          const size_t *idlens, size_t nids,
                          uint64_t (*hash)(const void *, size_t),
                          uint64_t out[FORMATS_OWNER_HASHES_MAX])
{
    size_t n = 0;

    out[n++] = formats_owner_hash(HELPER_OWNER_REDISSON, hash, key, keylen);
    /* a lock named "{X}" has the helpers of X's tag too (Redisson names
     * them alike) */
    if (keylen >= 2 && key[0] == '{' && key[keylen - 1] == '}' && !has_brace(key + 1, keylen - 2))
        out[n++] = formats_owner_hash(HELPER_OWNER_REDISSON, hash, key + 1, keylen - 2);
    if (keylen > 5 && memcmp(key, "lock:", 5) == 0)
        out[n++] = formats_owner_hash(HELPER_OWNER_LOCK_PREFIX, hash, key + 5, keylen - 5);
    /* the client registry of the holders' uuids ("<uuid>:<tid>...") */
    for (size_t i = 0; i < nids && i < HOLDERS_MAX; i++) {
        bool dup = false;

        if (idlens[i] <= FMT_UUID_LEN || ids[i][FMT_UUID_LEN] != ':' ||
            !fmt_is_uuid(ids[i], FMT_UUID_LEN, false))
            continue;
        for (size_t j = 0; j < i && !dup; j++)
            dup = idlens[j] > FMT_UUID_LEN && memcmp(ids[j], ids[i], FMT_UUID_LEN) == 0;
        if (!dup)
            out[n++] = formats_owner_hash(HELPER_OWNER_CLIENT, hash, ids[i], FMT_UUID_LEN);
    }
    return n;
}
