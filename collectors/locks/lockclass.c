/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockclass.c - lock classes: from a key to the bounded name its metrics
 * are kept under.
 *
 * Three pieces, all on the scan's hot path (one call each per key, up to a
 * million keys a pass):
 *  - class_of(): the first [classes] glob that matches, else the key with
 *    its id-like ':'-segments replaced by '*';
 *  - class_glob_match(): Redis' SCAN MATCH dialect, so a [classes] glob
 *    means what the same text means in `patterns`;
 *  - class_set: the per-target interning table that caps the classes at
 *    CLASS_MAX and folds the rest into "other".
 *
 * Keys are hostile input (any client can write any bytes, of any length),
 * so nothing here recurses, allocates per key, or costs more than
 * pattern length x key length; see class_glob_match() for why.
 */
#include "collectors/locks/lockclass.h"

#include "common/keytext.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* --- class_of ------------------------------------------------------------ */

#define SEGMENT_ID_LEN  32      /* a longer segment is an id, whatever it is */
#define SEGMENT_HEX_MIN 8
#define CUT_MARK        "..."

/*
 * A bounded writer: keeps the first cap bytes of what is put and notes
 * when more was offered, so the end can say "..." instead of stopping
 * mid-name without a trace.
 */
struct outbuf {
    char *p;
    size_t cap;                 /* bytes available before the NUL */
    size_t n;
    bool cut;
};

static void
out_put(struct outbuf *o, const char *s, size_t len)
{
    if (o->cut)
        return;
    if (len > o->cap - o->n) {
        len = o->cap - o->n;
        o->cut = true;
    }
    /* A NUL from the key is kept here (o->n counts it) and becomes
     * U+FFFD in out_finish(), as every other byte that is not text. */
    memcpy(o->p + o->n, s, len);
    o->n += len;
}

/* Cut o to its cap with the marker. */
static void
out_cut(struct outbuf *o)
{
    size_t dots = o->cap < sizeof(CUT_MARK) - 1 ? o->cap : sizeof(CUT_MARK) - 1;

    memcpy(o->p + o->cap - dots, CUT_MARK, dots);
    o->n = o->cap;
}

/*
 * Class names are labels: they leave here as valid UTF-8, each invalid
 * byte and each control byte but '\n' replaced by U+FFFD.  Done at the source so that two keys differing
 * only in invalid bytes give one class, not two classes that render as
 * the same series twice.
 */
static size_t
out_finish(struct outbuf *o)
{
    char *tmp;
    size_t need, len;

    if (o->cut)
        out_cut(o);
    o->p[o->n] = '\0';
    need = keytext_sanitize_label(NULL, 0, o->p, o->n);
    if (need == o->n)
        return o->n;            /* valid already: the common case */
    tmp = malloc(need + 1);
    if (tmp == NULL) {
        /* cannot sanitise: fall back to a name that is surely valid */
        o->n = 0;
        o->cut = false;
        out_put(o, CLASS_OTHER, strlen(CLASS_OTHER));
        o->p[o->n] = '\0';
        return o->n;
    }
    keytext_sanitize_label(tmp, need + 1, o->p, o->n);
    len = need;
    if (len > o->cap) {
        size_t dots = sizeof(CUT_MARK) - 1;

        len = keytext_utf8_prefix(tmp, need, o->cap > dots ? o->cap - dots : 0);
        memcpy(o->p, tmp, len);
        memcpy(o->p + len, CUT_MARK, o->cap - len < dots ? o->cap - len : dots);
        len += o->cap - len < dots ? o->cap - len : dots;
    } else {
        memcpy(o->p, tmp, len);
    }
    free(tmp);
    o->n = len;
    o->p[o->n] = '\0';
    return o->n;
}

static bool
is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
           (c >= 'A' && c <= 'F');
}

static bool
is_uuid(const char *s, size_t len)
{
    if (len != 36)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return false;
        } else if (!is_hex((unsigned char)s[i])) {
            return false;
        }
    }
    return true;
}

/* Does this ':'-segment look like an id rather than part of a name? */
static bool
segment_is_id(const char *s, size_t len)
{
    bool digits = true, hex = true;

    if (len == 0)
        return false;
    if (len > SEGMENT_ID_LEN)
        return true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c < '0' || c > '9')
            digits = false;
        if (!is_hex(c))
            hex = false;
    }
    /* A UUID is longer than SEGMENT_ID_LEN today; the check stays so the
     * rule does not silently depend on that. */
    return digits || (hex && len >= SEGMENT_HEX_MIN) || is_uuid(s, len);
}

size_t
class_of(const char *key, size_t keylen, const struct class_rule *rules,
         size_t nrules, char *out, size_t outlen)
{
    struct outbuf o;

    if (out == NULL || outlen == 0)
        return 0;
    o.p = out;
    o.cap = outlen - 1;
    o.n = 0;
    o.cut = false;
    if (key == NULL) {
        key = "";
        keylen = 0;
    }

    for (size_t i = 0; rules != NULL && i < nrules; i++) {
        if (rules[i].glob == NULL || rules[i].name == NULL)
            continue;
        if (class_glob_match(rules[i].glob, key, keylen)) {
            out_put(&o, rules[i].name, strlen(rules[i].name));
            return out_finish(&o);
        }
    }

    size_t start = 0;
    for (;;) {
        const char *colon = keylen > start ? memchr(key + start, ':', keylen - start) : NULL;
        size_t end = colon != NULL ? (size_t)(colon - key) : keylen;

        if (segment_is_id(key + start, end - start))
            out_put(&o, "*", 1);
        else
            out_put(&o, key + start, end - start);
        if (colon == NULL || o.cut)
            break;
        out_put(&o, ":", 1);
        start = end + 1;
    }
    return out_finish(&o);
}

/* --- class_glob_match ----------------------------------------------------- */

/*
 * Why not Redis' own recursive matcher: it recurses once per '*' and, on a
 * miss, retries every suffix, which is exponential in the number of stars
 * (Redis caps the nesting; we would rather not fail such globs).  Here the
 * glob is seen as segments between stars.  Every element of a segment
 * (a byte, '?', '[...]', '\x') matches exactly one byte, so a segment has
 * a fixed length and greedy matching is exact: the first segment must match
 * the start, the last the end, and each middle one may take its leftmost
 * occurrence.  No recursion; at most glob length x key length steps, and
 * literal middle segments use memmem(), which is linear.
 */

/*
 * Length in glob bytes of the element at p (p < end); *star says it is a
 * '*'.  A '[' with no closing ']' runs to the end of the glob, as in Redis.
 */
static size_t
elem_len(const char *p, const char *end, bool *star)
{
    const char *q;

    *star = *p == '*';
    switch (*p) {
    case '\\':
        return end - p >= 2 ? 2 : 1;
    case '[':
        q = p + 1;
        if (q < end && *q == '^')
            q++;
        while (q < end) {
            if (*q == '\\' && end - q >= 2)
                q += 2;
            else if (*q == ']')
                return (size_t)(q + 1 - p);
            else if (end - q >= 3 && q[1] == '-')
                q += 3;
            else
                q++;
        }
        return (size_t)(end - p);
    default:
        return 1;
    }
}

/* Does the (non-star) element at p match byte c?  end as for elem_len(). */
static bool
elem_match(const char *p, const char *end, unsigned char c)
{
    const char *q;
    bool neg, match = false;

    switch (*p) {
    case '?':
        return true;
    case '\\':
        return end - p >= 2 ? (unsigned char)p[1] == c : c == '\\';
    case '[':
        q = p + 1;
        neg = q < end && *q == '^';
        if (neg)
            q++;
        while (q < end && *q != ']') {
            if (*q == '\\' && end - q >= 2) {
                if ((unsigned char)q[1] == c)
                    match = true;
                q += 2;
            } else if (end - q >= 3 && q[1] == '-') {
                unsigned char lo = (unsigned char)q[0], hi = (unsigned char)q[2];

                if (lo > hi) {
                    unsigned char t = lo;

                    lo = hi;
                    hi = t;
                }
                if (c >= lo && c <= hi)
                    match = true;
                q += 3;
            } else {
                if ((unsigned char)*q == c)
                    match = true;
                q++;
            }
        }
        return match != neg;
    default:
        return (unsigned char)*p == c;
    }
}

/* Elements in the star-free glob span [p, stop). */
static size_t
seg_count(const char *p, const char *stop, const char *end)
{
    size_t n = 0;
    bool star;

    while (p < stop) {
        p += elem_len(p, end, &star);
        n++;
    }
    return n;
}

/* Does the star-free span [p, stop) match the bytes at s (long enough)? */
static bool
seg_match_at(const char *p, const char *stop, const char *end,
             const unsigned char *s)
{
    bool star;

    while (p < stop) {
        if (!elem_match(p, end, *s++))
            return false;
        p += elem_len(p, end, &star);
    }
    return true;
}

static bool
seg_is_literal(const char *p, const char *stop)
{
    for (; p < stop; p++)
        if (*p == '?' || *p == '[' || *p == '\\')
            return false;
    return true;
}

bool
class_glob_match(const char *glob, const char *str, size_t slen)
{
    const unsigned char *s;
    const char *end, *first_star = NULL, *last_star = NULL, *p;
    size_t head, tail, pos, limit;
    bool star;

    if (glob == NULL || (str == NULL && slen > 0))
        return false;
    s = (const unsigned char *)(str != NULL ? str : "");
    end = glob + strlen(glob);
    for (p = glob; p < end; ) {
        size_t n = elem_len(p, end, &star);

        if (star) {
            if (first_star == NULL)
                first_star = p;
            last_star = p;
        }
        p += n;
    }

    if (first_star == NULL)
        return seg_count(glob, end, end) == slen &&
               seg_match_at(glob, end, end, s);

    head = seg_count(glob, first_star, end);
    tail = seg_count(last_star + 1, end, end);
    if (head > slen || tail > slen - head)
        return false;
    if (!seg_match_at(glob, first_star, end, s) ||
        !seg_match_at(last_star + 1, end, end, s + slen - tail))
        return false;

    pos = head;
    limit = slen - tail;
    p = first_star + 1;
    while (p < last_star) {
        const char *seg = p;
        size_t n = 0;

        while (p < last_star) {
            size_t len = elem_len(p, end, &star);

            if (star)
                break;
            p += len;
            n++;
        }
        if (n == 0) {
            p++;                /* a run of stars is one star */
            continue;
        }
        if (n > limit - pos)
            return false;
        if (seg_is_literal(seg, p)) {
            const unsigned char *hit = memmem(s + pos, limit - pos, seg, n);

            if (hit == NULL)
                return false;
            pos = (size_t)(hit - s) + n;
        } else {
            size_t at = pos;

            while (!seg_match_at(seg, p, end, s + at)) {
                if (at == limit - n)
                    return false;
                at++;
            }
            pos = at + n;
        }
    }
    return true;
}

/* --- class_set ------------------------------------------------------------ */

/*
 * Open addressing over a fixed power-of-two table at most half full, so a
 * lookup is a hash and one or two probes; the set never grows past
 * CLASS_MAX + 1 names, so it never needs to resize.
 */
#define CLASS_SLOTS 512
_Static_assert(CLASS_SLOTS >= 2 * (CLASS_MAX + 1) &&
               (CLASS_SLOTS & (CLASS_SLOTS - 1)) == 0,
               "class_set table must be a power of two, at most half full");

struct class_set {
    char *names[CLASS_MAX + 1];         /* [CLASS_OTHER_INDEX] = "other" */
    uint64_t hashes[CLASS_MAX + 1];
    size_t count;
    size_t overflowed;
    uint16_t slots[CLASS_SLOTS];        /* name index + 1; 0 = empty */
    struct class_set *prior;            /* class_set_prefer()'s names; NULL */
    size_t prior_pending;               /* of them, not interned yet */
};

static uint64_t
name_hash(const char *s, size_t len)
{
    /* FNV-1a: short class names, no adversary who gains by colliding
     * (the table holds at most CLASS_MAX + 1 names either way). */
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* The slot holding name, or the empty slot where it would go. */
static size_t
find_slot(const struct class_set *set, const char *name, uint64_t h)
{
    size_t i = (size_t)h & (CLASS_SLOTS - 1);

    for (;;) {
        uint16_t v = set->slots[i];

        if (v == 0)
            return i;
        if (set->hashes[v - 1] == h && strcmp(set->names[v - 1], name) == 0)
            return i;
        i = (i + 1) & (CLASS_SLOTS - 1);
    }
}

/* Add name at the next index; the caller checked there is room. */
static int
add_name(struct class_set *set, const char *name, size_t len, uint64_t h,
         size_t slot)
{
    char *copy = malloc(len + 1);

    if (copy == NULL)
        return -1;
    memcpy(copy, name, len + 1);
    set->names[set->count] = copy;
    set->hashes[set->count] = h;
    set->slots[slot] = (uint16_t)(set->count + 1);
    return (int)set->count++;
}

struct class_set *
class_set_new(void)
{
    struct class_set *set = calloc(1, sizeof(*set));
    size_t len = sizeof(CLASS_OTHER) - 1;
    uint64_t h = name_hash(CLASS_OTHER, len);

    if (set == NULL)
        return NULL;
    if (add_name(set, CLASS_OTHER, len, h, find_slot(set, CLASS_OTHER, h)) !=
        CLASS_OTHER_INDEX) {
        free(set);
        return NULL;
    }
    return set;
}

void
class_set_free(struct class_set *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->count; i++)
        free(set->names[i]);
    class_set_free(set->prior);
    free(set);
}

int
class_set_prefer(struct class_set *set, char *const *names, size_t n)
{
    if (set == NULL || set->prior != NULL || (set->prior = class_set_new()) == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (names[i] != NULL && class_set_intern(set->prior, names[i]) < 0)
            return -1;
    set->prior_pending = set->prior->count - 1;
    return 0;
}

int
class_set_intern(struct class_set *set, const char *name)
{
    size_t len, slot;
    uint64_t h;

    if (set == NULL)
        return -1;
    if (name == NULL)
        return CLASS_OTHER_INDEX;
    len = strlen(name);
    h = name_hash(name, len);
    slot = find_slot(set, name, h);
    if (set->slots[slot] != 0)
        return set->slots[slot] - 1;
    /* a preferred name has its place kept; a new one takes a free place
     * only, not one a preferred name has yet to claim */
    if (set->prior != NULL && class_set_find(set->prior, name) > CLASS_OTHER_INDEX &&
        set->prior_pending > 0)
        set->prior_pending--;
    else if (set->count + set->prior_pending >= CLASS_MAX + 1) {
        set->overflowed++;
        return CLASS_OTHER_INDEX;
    }
    return add_name(set, name, len, h, slot);
}

int
class_set_find(const struct class_set *set, const char *name)
{
    size_t slot;

    if (set == NULL || name == NULL)
        return -1;
    slot = find_slot(set, name, name_hash(name, strlen(name)));
    return set->slots[slot] != 0 ? set->slots[slot] - 1 : -1;
}

size_t
class_set_count(const struct class_set *set)
{
    return set != NULL ? set->count : 0;
}

const char *
class_set_name(const struct class_set *set, size_t idx)
{
    if (set == NULL || idx >= set->count)
        return NULL;
    return set->names[idx];
}

int
class_set_keep_other(struct class_set *set)
{
    if (set == NULL)
        return -1;
    set->overflowed++;
    return CLASS_OTHER_INDEX;
}

size_t
class_set_overflowed(const struct class_set *set)
{
    return set != NULL ? set->overflowed : 0;
}

bool
lock_key_excluded(const struct target_conf *t, const char *key, size_t keylen)
{
    for (size_t i = 0; t != NULL && i < t->nexclude_patterns; i++)
        if (class_glob_match(t->exclude_patterns[i], key, keylen))
            return true;
    return false;
}

bool
lock_key_semaphore(const struct target_conf *t, const char *key, size_t keylen)
{
    for (size_t i = 0; t != NULL && i < t->nsemaphore_patterns; i++)
        if (class_glob_match(t->semaphore_patterns[i], key, keylen))
            return true;
    return false;
}
