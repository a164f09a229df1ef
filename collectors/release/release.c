/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * release.c - run the guarded release / expire script and read its answer.
 *
 * The guards live in the script, never here: between a check in C and a
 * DEL sent afterwards the lock could change hands, and deleting the new
 * holder's lock is exactly the accident this exists to prevent.  What is
 * left for C is the plumbing: the script text and its SHA, the arguments
 * (the lock, the companions its wake-ups need, the target's patterns),
 * EVALSHA with an EVAL fallback, the reply, and in cluster mode the audit
 * entry, which cannot share the script with a lock in another slot.
 *
 * Companions are a table: each row names a role the script knows and how
 * its key is derived from the lock's.  Which one the script uses depends
 * on what it finds (a hash with a "mode" field wakes RW-lock waiters, an
 * lw1 token liblockwatch's), so all that apply to the key are passed.
 *
 * A release that deleted a lock (no holder left) is a force_release event
 * on the timeline of this process (collectors/events/): the agent's
 * POST /api/v1/locks/release shows in its /api/v1/events, with the
 * audit's who (operator, reason, entry id), never a secret.
 */
#include "collectors/release/release.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/events/events.h"
#include "collectors/formats/formats.h"
#include "collectors/locks/lockstate.h"
#include "collectors/redis/cluster.h"
#include "collectors/redis/conn.h"
#include "collectors/redis/target.h"
#include "collectors/release/aclhint.h"
#include "common/clock.h"
#include "common/keytext.h"
#include "common/prefixname.h"
#include "collectors/locks/lockclass.h"

extern const char collectors_release_lua_guard_lua[];
extern const char collectors_release_lua_formats_lua[];
extern const char collectors_release_lua_release_lua[];
extern const char collectors_release_lua_expire_lua[];

#define AUDIT_ROLE "audit"

/* ---- outcomes -------------------------------------------------------------- */

#define TOO_YOUNG_WHY ", but the holder is younger than that (age = the larger of OBJECT " \
                      "IDLETIME and the holder age known); nothing was changed"

static const struct outcome_row {
    const char *code;
    bool done, refused;
    const char *message;
} outcomes[RELEASE_OUTCOME_COUNT] = {
    [RELEASE_RELEASED] = { "released", true, false,
        "released: that holder's hold was removed (the key deleted when no holder was "
        "left), waiters woken where its format has a wake-up, the release audited" },
    [RELEASE_EXPIRED] = { "expired", true, false,
        "expired: the lock now has the TTL given; the change was audited" },
    [RELEASE_WOULD_RELEASE] = { "would_release", false, false,
        "dry run: every guard holds, a release would delete the lock; nothing was changed" },
    [RELEASE_WOULD_EXPIRE] = { "would_expire", false, false,
        "dry run: every guard holds, an expire would set the TTL; nothing was changed" },
    [RELEASE_REFUSED_PATTERN] = { "pattern", false, true,
        "refused: the key matches none of the target's lock patterns, so it is not a "
        "lock lockwatch may touch; nothing was changed" },
    [RELEASE_REFUSED_GONE] = { "gone", false, true,
        "refused: there is no such key (released or expired already?); nothing was changed" },
    [RELEASE_REFUSED_HOLDER] = { "holder_changed", false, true,
        "refused: the holder changed - the lock is not held by the holder you gave (a "
        "mistyped holder, or it changed hands since you looked); nothing was changed. "
        "Look again with lockctl show KEY" },
    [RELEASE_REFUSED_WRONGTYPE] = { "wrongtype", false, true,
        "refused: the key is not a lock lockwatch can do that to (not a string or hash "
        "lock, nor a semaphore of a known format; expire leaves a semaphore, and a bare "
        "number that may be one's count, alone); nothing was changed" },
    [RELEASE_REFUSED_NOT_LEAKED] = { "not_leaked", false, true,
        "refused: only if leaked (--if-leaked, if_leaked), but the lock has a TTL (it will "
        "expire on its own); nothing was changed" },
    [RELEASE_REFUSED_TOO_YOUNG] = { "too_young", false, true,
        "refused: --if-older-than" TOO_YOUNG_WHY },
    [RELEASE_REFUSED_HAS_TTL] = { "has_ttl", false, true,
        "refused: the lock already has a TTL; expire only gives a TTL to a lock that has "
        "none (a leak). Nothing was changed" },
    [RELEASE_REFUSED_EXCLUDED] = { "excluded", false, true,
        "refused: the key matches the target's exclude_patterns, so it is not a lock "
        "lockwatch may touch; nothing was changed" },
    [RELEASE_REFUSED_HELPER] = { "helper_key", false, true,
        "refused: the key is a helper key of a lock (its queue, timeout set, token counter, "
        "reader timeout key or signal list), not a lock; releasing or expiring it alone "
        "would break that lock. Release the lock itself; nothing was changed" },
    [RELEASE_ERROR] = { "error", false, false,
        "error: the release could not run (see the error); nothing is known to have changed" },
};

/* The messages the HTTP API words otherwise (a request's http): a
 * condition named by its JSON field, not by lockctl's option. */
static const char *const http_messages[RELEASE_OUTCOME_COUNT] = {
    [RELEASE_REFUSED_TOO_YOUNG] = "refused: if_older_than" TOO_YOUNG_WHY,
};

const char *
release_outcome_str(enum release_outcome o)
{
    return (unsigned)o < RELEASE_OUTCOME_COUNT ? outcomes[o].code : "error";
}

int
release_outcome_parse(const char *s, size_t n)
{
    for (size_t i = 0; i < RELEASE_OUTCOME_COUNT; i++)
        if (strlen(outcomes[i].code) == n && memcmp(outcomes[i].code, s, n) == 0)
            return (int)i;
    return -1;
}

const char *
release_outcome_message(enum release_outcome o)
{
    return (unsigned)o < RELEASE_OUTCOME_COUNT ? outcomes[o].message
                                               : outcomes[RELEASE_ERROR].message;
}

bool
release_outcome_refused(enum release_outcome o)
{
    return (unsigned)o < RELEASE_OUTCOME_COUNT && outcomes[o].refused;
}

bool
release_outcome_done(enum release_outcome o)
{
    return (unsigned)o < RELEASE_OUTCOME_COUNT && outcomes[o].done;
}

/* ---- refusals without Redis --------------------------------------------------- */

int
release_precheck(const struct target_conf *t, const char *key, size_t keylen, char *why,
                 size_t whylen)
{
    struct helper_key hk;
    char shown[KEYTEXT_PERCENT_MAX(120)], owner[KEYTEXT_PERCENT_MAX(120)];

    if (why != NULL && whylen > 0)
        why[0] = '\0';
    /* a key outside the patterns is the script's to refuse (and audit) */
    if (key == NULL || t == NULL || !lockstate_in_patterns(t, key, keylen))
        return -1;
    keytext_percent(shown, sizeof(shown), key, keylen > 120 ? 120 : keylen);
    if (lock_key_excluded(t, key, keylen)) {
        if (why != NULL)
            snprintf(why, whylen, "refused: %s%s matches the target's exclude_patterns (not "
                     "a lock); nothing was changed", shown, keylen > 120 ? "..." : "");
        return RELEASE_REFUSED_EXCLUDED;
    }
    if (formats_helper(key, keylen, RAW_NONE, &hk) == HELPER_NONE)
        return -1;
    keytext_percent(owner, sizeof(owner), hk.owner, hk.ownerlen > 120 ? 120 : hk.ownerlen);
    if (why != NULL)
        snprintf(why, whylen, "refused: %s%s is %s %s%s%s%s, not a lock: releasing or "
                 "expiring it alone would break that lock; release the lock itself. Nothing "
                 "was changed", shown, keylen > 120 ? "..." : "", formats_helper_what(hk.kind),
                 hk.style == HELPER_OWNER_LOCK_PREFIX ? "lock:" : "", owner,
                 hk.ownerlen > 120 ? "..." : "",
                 hk.style == HELPER_OWNER_CLIENT ? " (every lock of that client)" : "");
    return RELEASE_REFUSED_HELPER;
}

/* ---- the script ------------------------------------------------------------ */

int
release_script(enum release_action action, char **text, size_t *len, char sha[41])
{
    const char *parts[3] = {
        collectors_release_lua_guard_lua, collectors_release_lua_formats_lua,
        action == RELEASE_ACTION_EXPIRE ? collectors_release_lua_expire_lua
                                        : collectors_release_lua_release_lua,
    };
    size_t plen[3], total = 0, at = 0;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char *t;

    for (int i = 0; i < 3; i++)
        total += (plen[i] = strlen(parts[i])) + (i > 0);
    t = malloc(total + 1);
    if (t == NULL)
        return -1;
    for (int i = 0; i < 3; i++) {
        if (i > 0)
            t[at++] = '\n';
        memcpy(t + at, parts[i], plen[i]);
        at += plen[i];
    }
    t[at] = '\0';
    if (EVP_Digest(t, total, md, &mdlen, EVP_sha1(), NULL) != 1 || mdlen != 20) {
        free(t);
        errno = ENOMEM;
        return -1;
    }
    for (unsigned int i = 0; i < mdlen; i++) {
        sha[2 * i] = "0123456789abcdef"[md[i] >> 4];
        sha[2 * i + 1] = "0123456789abcdef"[md[i] & 15];
    }
    sha[40] = '\0';
    *text = t;
    *len = total;
    return 0;
}

/* ---- connections ------------------------------------------------------------- */

unsigned
release_key_slot(const char *key, size_t keylen)
{
    return cluster_keyslot(key, keylen);
}

/* ---- arguments --------------------------------------------------------------- */

/*
 * The companions of a lock, by role.  PREFIXED rows follow Redisson's
 * prefixName(): "<prefix>:{<key>}", or "<prefix>:<key>" when the key
 * already has a '{' (so the companion shares the lock's slot).  LEGACY
 * rows are the names of Redisson 2.x, "<prefix>{<key>}" always.  SUFFIXED
 * rows follow suffixName(): "{<key>}:<suffix>", or "<key>:<suffix>" for
 * a key with a '{'.  RENAMED rows exist only for keys starting with
 * `from`, which is replaced by the prefix (python-redis-lock: lock:<name>
 * -> lock-signal:<name>).  A wake channel is not spelled here: `wake`
 * names the role of a format row's wake column (formats.h), whose
 * channel (or, for LEGACY, Redisson 2.x name) is the prefix.
 */
enum companion_kind { PREFIXED, LEGACY, SUFFIXED, RENAMED };

static const struct companion {
    const char *role;           /* as guard.lua and formats.lua name it */
    enum companion_kind kind;
    const char *wake;           /* a wake column's role, or NULL */
    const char *prefix;         /* or the suffix (SUFFIXED) */
    const char *from;           /* RENAMED */
} companions[] = {
    { "redisson",         PREFIXED, "redisson",     NULL, NULL },
    { "redisson-v2",      LEGACY,   "redisson",     NULL, NULL },
    { "redisson-rw",      PREFIXED, "redisson-rw",  NULL, NULL },
    { "redisson-rw-v2",   LEGACY,   "redisson-rw",  NULL, NULL },
    { "liblockwatch",     PREFIXED, "liblockwatch", NULL, NULL },
    { "redisson-queue",   PREFIXED, NULL, "redisson_lock_queue", NULL },
    { "redisson-timeout", PREFIXED, NULL, "redisson_lock_timeout", NULL },
    { "redisson-sc",      PREFIXED, "redisson-sc",  NULL, NULL },
    { "permits",          SUFFIXED, NULL, "timeout", NULL },
    { "signal",           RENAMED,  NULL, "lock-signal:", "lock:" },
};

#define NCOMPANIONS (sizeof(companions) / sizeof(companions[0]))
#define ARGV_FIXED  13          /* ARGV[1..13] before the patterns */

/*
 * The release table on the C side is the format table's release column
 * (formats.h): per format, the companions its row in formats.lua uses.
 * A request whose format has no release row (FMT_RELEASE_DETECT, or no
 * format at all) passes every companion that applies and no format, and
 * the script picks the row by what it sees; one whose format has a row
 * passes the format, and the script releases the lock as that.
 * tests/unit/test_release.c checks that every row with a release column
 * has its formats.lua row and that formats.lua has no other.
 */
static const struct lock_format *
release_row(const char *format)
{
    const struct lock_format *f = formats_by_name(format);

    return f != NULL && f->release != NULL && f->release != FMT_RELEASE_DETECT ? f : NULL;
}

/* The row a request releases as (release.h).  A guessed format (a shape
 * others write too, or "unknown": no decoder knew it) never picks a
 * release that does more than compare-and-delete: a row with companions
 * (wake-ups, queues, permits), or none (the script would pick by type: a
 * hash as Redisson's), falls back to the fallback row ("plain": compare
 * the string value and delete it; a hash or zset is then refused as of the
 * wrong type). */
const struct lock_format *
release_row_for(const char *format, bool guessed)
{
    const struct lock_format *f = release_row(format);

    if (!guessed || (f != NULL && f->release[0] == '\0'))
        return f;
    for (size_t i = 0; i < formats_count; i++)
        if (formats_table[i].proves == FMT_PROVES_FALLBACK)
            return &formats_table[i];
    return NULL;
}

bool
release_format_known(const char *format)
{
    return release_row(format) != NULL;
}

const char *
release_companion_unknown(void)
{
    for (size_t i = 0; i < formats_count; i++) {
        const struct lock_format *f = &formats_table[i];
        const char *p = f->release;

        while (p != NULL && f->release != FMT_RELEASE_DETECT && *p != '\0') {
            size_t n = strcspn(p, " "), j;

            for (j = 0; j < NCOMPANIONS; j++)
                if (strlen(companions[j].role) == n && memcmp(companions[j].role, p, n) == 0)
                    break;
            if (j == NCOMPANIONS)
                return f->name;
            p += n + (p[n] == ' ');
        }
        if (f->wake_role != NULL && f->wake_role[0] != '\0') {
            bool found = false;

            for (size_t j = 0; j < NCOMPANIONS; j++)
                found |= companions[j].wake != NULL &&
                    strcmp(companions[j].wake, f->wake_role) == 0;
            if (!found)
                return f->name;
        }
    }
    return NULL;
}

/* Whether row f (NULL: no format) uses companion c. */
static bool
format_uses(const struct lock_format *f, const struct companion *c)
{
    size_t n = strlen(c->role);
    const char *p;

    if (f == NULL)
        return true;
    for (p = f->release; (p = strstr(p, c->role)) != NULL; p += n)
        if ((p == f->release || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* A new owned string of n bytes (plus NUL) in a, or NULL. */
static char *
own(struct release_args *a, size_t n)
{
    char *p = malloc(n + 1);

    if (p == NULL)
        return NULL;
    p[n] = '\0';
    a->owned[a->nowned++] = p;
    return p;
}

static int
push(struct release_args *a, const char *p, size_t n)
{
    a->argv[a->argc] = p;
    a->argvlen[a->argc++] = n;
    return 0;
}

static int
push_int(struct release_args *a, int64_t v)
{
    char *p = own(a, 24);

    if (p == NULL)
        return -1;
    snprintf(p, 25, "%" PRId64, v);
    return push(a, p, strlen(p));
}

/* The companion key of row c for the lock key, or NULL when the row does
 * not apply to this key (or on ENOMEM: *oom). */
static char *
companion_key(struct release_args *a, const struct companion *c, const char *key,
              size_t keylen, size_t *outlen, bool *oom)
{
    const char *prefix = c->prefix;
    size_t plen, need;
    char *p;

    if (c->wake != NULL) {
        const struct lock_format *f = formats_wake_row(c->wake);

        prefix = f == NULL ? NULL : c->kind == LEGACY ? f->wake_legacy : f->wake_channel;
        if (prefix == NULL)
            return NULL;
    }
    plen = strlen(prefix);
    if (c->kind == RENAMED) {
        size_t flen = strlen(c->from);

        if (keylen <= flen || memcmp(key, c->from, flen) != 0)
            return NULL;
        if ((p = own(a, plen + keylen - flen)) == NULL)
            goto oom;
        memcpy(p, prefix, plen);
        memcpy(p + plen, key + flen, keylen - flen);
        *outlen = plen + keylen - flen;
        return p;
    }
    if (c->kind == LEGACY || c->kind == SUFFIXED) {
        bool braced = c->kind == SUFFIXED && memchr(key, '{', keylen) != NULL;

        need = plen + keylen + (braced ? 1 : c->kind == SUFFIXED ? 3 : 2);
        if ((p = own(a, need)) == NULL)
            goto oom;
        *outlen = 0;
        if (c->kind == LEGACY) {
            memcpy(p, prefix, plen);
            *outlen = plen;
            p[(*outlen)++] = '{';
            memcpy(p + *outlen, key, keylen);
            *outlen += keylen;
            p[(*outlen)++] = '}';
        } else {
            if (!braced)
                p[(*outlen)++] = '{';
            memcpy(p + *outlen, key, keylen);
            *outlen += keylen;
            if (!braced)
                p[(*outlen)++] = '}';
            p[(*outlen)++] = ':';
            memcpy(p + *outlen, prefix, plen);
            *outlen += plen;
        }
        return p;
    }
    need = prefix_name(NULL, 0, prefix, key, keylen);
    if ((p = own(a, need)) == NULL)
        goto oom;
    *outlen = prefix_name(p, need + 1, prefix, key, keylen);
    return p;
oom:
    *oom = true;
    return NULL;
}

void
release_args_free(struct release_args *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->nowned; i++)
        free(a->owned[i]);
    free(a->owned);
    free(a->argv);
    free(a->argvlen);
    memset(a, 0, sizeof(*a));
}

int
release_build_args(const struct target_conf *t, const char *audit_stream,
                   const struct release_request *req, const char *sha,
                   struct release_args *a)
{
    const char *ckey[NCOMPANIONS + 1];
    size_t cklen[NCOMPANIONS + 1];
    char roles[256], *r4;
    size_t ncomp = 0, rlen = 0, max_args, i;
    bool cluster = t->mode == TARGET_CLUSTER, oom = false;
    unsigned slot = cluster ? release_key_slot(req->key, req->keylen) : 0;
    int64_t now = req->now_ms;
    const struct lock_format *f = release_row_for(req->format, req->format_guessed);

    memset(a, 0, sizeof(*a));
    max_args = 3 + 1 + NCOMPANIONS + 1 + ARGV_FIXED + t->npatterns + 1;
    a->argv = calloc(max_args, sizeof(*a->argv));
    a->argvlen = calloc(max_args, sizeof(*a->argvlen));
    a->owned = calloc(NCOMPANIONS + 16, sizeof(*a->owned));
    if (a->argv == NULL || a->argvlen == NULL || a->owned == NULL)
        goto oom;

    /* Companions: the audit stream (standalone only: in a cluster it is
     * in another slot and the caller writes the entry), then every wake
     * companion that applies and, in a cluster, shares the lock's slot. */
    roles[0] = '\0';
    if (!cluster && !req->dry_run && audit_stream != NULL && audit_stream[0] != '\0') {
        ckey[ncomp] = audit_stream;
        cklen[ncomp++] = strlen(audit_stream);
        rlen += (size_t)snprintf(roles + rlen, sizeof(roles) - rlen, "%s", AUDIT_ROLE);
    }
    /* a key outside the patterns is refused before any companion is
     * touched: none is passed (an ACL need not cover names made of it) */
    if (req->action == RELEASE_ACTION_RELEASE &&
        lockstate_in_patterns(t, req->key, req->keylen)) {
        for (i = 0; i < NCOMPANIONS; i++) {
            size_t n = 0;
            char *k;

            if (!format_uses(f, &companions[i]))
                continue;
            k = companion_key(a, &companions[i], req->key, req->keylen, &n, &oom);

            if (oom)
                goto oom;
            if (k == NULL || (cluster && release_key_slot(k, n) != slot))
                continue;
            ckey[ncomp] = k;
            cklen[ncomp++] = n;
            rlen += (size_t)snprintf(roles + rlen, sizeof(roles) - rlen, "%s%s",
                                     rlen ? " " : "", companions[i].role);
        }
    }

    push(a, "EVALSHA", 7);
    push(a, sha, strlen(sha));
    if (push_int(a, (int64_t)(1 + ncomp)) == -1)
        goto oom;
    push(a, req->key, req->keylen);
    for (i = 0; i < ncomp; i++)
        push(a, ckey[i], cklen[i]);
    a->nkeys = (int)(1 + ncomp);

    if (now <= 0)
        now = clock_now_ms();
    push(a, req->holder, req->holderlen);                               /* 1 */
    push(a, req->if_leaked ? "1" : "0", 1);                             /* 2 */
    /* 3, and 4: "A", or "A:B:P:S" (B counts only while PTTL is P, +- S) */
    if (push_int(a, req->if_older_than_ms > 0 ? req->if_older_than_ms : 0) == -1 ||
        (r4 = own(a, 72)) == NULL)
        goto oom;
    snprintf(r4, 73, req->lease_age_ms > 0 ? "%lld:%lld:%lld:%lld" : "%lld", (long long)
             (req->known_age_ms > 0 ? req->known_age_ms : 0), (long long)req->lease_age_ms,
             req->lease_pttl < 0 ? -1LL : req->lease_pttl, (long long)req->lease_slack_ms);
    push(a, r4, strlen(r4));                                            /* 4 */
    push(a, req->dry_run ? "1" : "0", 1);                               /* 5 */
    push(a, cluster ? "1" : "0", 1);                                    /* 6 */
    if (push_int(a, now) == -1)                                         /* 7 */
        goto oom;
    push(a, req->operator_name ? req->operator_name : "",
         req->operator_name ? strlen(req->operator_name) : 0);          /* 8 */
    push(a, req->reason ? req->reason : "", req->reason ? strlen(req->reason) : 0); /* 9 */
    push(a, t->name ? t->name : "", t->name ? strlen(t->name) : 0);     /* 10 */
    if (push_int(a, req->action == RELEASE_ACTION_EXPIRE ? req->ttl_ms : 0) == -1)
        goto oom;                                                       /* 11 */
    {
        char *r = own(a, rlen);

        if (r == NULL)
            goto oom;
        memcpy(r, roles, rlen);
        push(a, r, rlen);                                               /* 12 */
    }
    if (push_int(a, (int64_t)t->npatterns) == -1)                       /* 13 */
        goto oom;
    for (i = 0; i < t->npatterns; i++)
        push(a, t->patterns[i], strlen(t->patterns[i]));
    if (f != NULL)                                                      /* 14+n */
        push(a, f->name, strlen(f->name));
    return 0;
oom:
    release_args_free(a);
    errno = ENOMEM;
    return -1;
}

/* ---- running ----------------------------------------------------------------- */

static void
set_err(struct release_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
set_err(struct release_result *res, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(res->err, sizeof(res->err), fmt, ap);
    va_end(ap);
}

static bool
is_str(const redisReply *r)
{
    return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS;
}

/* A reply string into a fixed buffer of cap bytes, cut and NUL-ended. */
static void
reply_text(char *out, size_t cap, const redisReply *e)
{
    size_t n = e->len < cap ? e->len : cap - 1;

    memcpy(out, e->str, n);
    out[n] = '\0';
}

/* The shape of the script's reply: 's' a string, 'i' an integer. */
static const char REPLY_SHAPE[] = "ssiissisii";

/* Read the script's { outcome, type, pttl, idle_s, old, audit_id,
 * wake_errors, format, left, purged }.  0, or -1 when it is not that
 * shape. */
static int
parse_reply(const redisReply *r, struct release_result *res)
{
    int o;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != sizeof(REPLY_SHAPE) - 1)
        return -1;
    for (size_t i = 0; i < r->elements; i++)
        if (REPLY_SHAPE[i] == 's' ? !is_str(r->element[i])
            : r->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
    o = release_outcome_parse(r->element[0]->str, r->element[0]->len);
    if (o < 0 || o == RELEASE_ERROR)
        return -1;
    res->outcome = (enum release_outcome)o;
    reply_text(res->type, sizeof(res->type), r->element[1]);
    res->pttl_ms = r->element[2]->integer;
    res->idle_s = r->element[3]->integer;
    res->oldlen = r->element[4]->len < RELEASE_OLD_MAX ? r->element[4]->len : RELEASE_OLD_MAX;
    if (res->oldlen > 0)
        memcpy(res->old, r->element[4]->str, res->oldlen);
    reply_text(res->audit_id, sizeof(res->audit_id), r->element[5]);
    res->wake_errors = r->element[6]->integer;
    reply_text(res->format, sizeof(res->format), r->element[7]);
    res->holders_left = r->element[8]->integer;
    res->purged = r->element[9]->integer;
    return 0;
}

/*
 * Cluster mode: the audit entry the script could not write (the stream
 * is in another slot).  Written after the change, so a failure here
 * leaves a change without its entry: reported, never hidden.
 */
static void
cluster_audit(const struct target_conf *t, const char *stream,
              const struct release_request *req, struct release_result *res)
{
    const char *argv[40];
    size_t len[40];
    char now[24], pttl[24], ttl[24], age[24];
    int n = 0;
    redisReply *r = NULL;
    redisContext *c;
    struct target_conf node;
    char err[RELEASE_ERR_MAX];

#define ARG(p, l) (argv[n] = (p), len[n] = (l), n++)
#define ARGS(s) ARG((s), strlen(s))
    snprintf(now, sizeof(now), "%" PRId64, req->now_ms);
    /* the PTTL before the change, as the script audits it: an expire
     * only ever applies to a lock without a TTL */
    snprintf(pttl, sizeof(pttl), "%lld", res->outcome == RELEASE_EXPIRED ? -1LL
             : res->pttl_ms);
    snprintf(ttl, sizeof(ttl), "%" PRId64, req->ttl_ms);
    snprintf(age, sizeof(age), "%" PRId64, req->known_age_ms > 0 ? req->known_age_ms : 0);
    ARGS("XADD"); ARGS(stream); ARGS("MAXLEN"); ARGS("~"); ARGS("10000"); ARGS("*");
    ARGS("time"); ARGS(now);
    ARGS("operator"); ARGS(req->operator_name ? req->operator_name : "");
    ARGS("reason"); ARGS(req->reason ? req->reason : "");
    ARGS("action"); ARGS(req->action == RELEASE_ACTION_EXPIRE ? "expire" : "release");
    ARGS("target"); ARGS(t->name ? t->name : "");
    ARGS("key"); ARG(req->key, req->keylen);
    ARGS("holder"); ARG(req->holder, req->holderlen);
    ARGS("type"); ARGS(res->type);
    ARGS("pttl"); ARGS(pttl);
    ARGS("old"); ARG(res->old, res->oldlen);
    ARGS("outcome"); ARGS(release_outcome_str(res->outcome));
    ARGS("format"); ARGS(res->format);
    ARGS("age"); ARGS(age);
    if (req->action == RELEASE_ACTION_EXPIRE) {
        ARGS("ttl");
        ARGS(ttl);
    }
#undef ARG
#undef ARGS
    /* the stream's own node: it hashes to its own slot */
    c = target_open(t, stream, strlen(stream), NULL, &node, err, sizeof(err));
    if (c != NULL)
        r = redisconn_command(c, &node, "XADD", n, argv, len, err, sizeof(err));
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        res->audit_failed = true;
        set_err(res, "%s, but its audit entry (XADD %s) failed: %.250s",
                release_outcome_str(res->outcome), stream,
                r == NULL ? err : r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        if (r != NULL && r->type == REDIS_REPLY_ERROR)
            aclhint_add(t, "the audit entry", r->str, r->len, res->err, sizeof(res->err));
    } else {
        snprintf(res->audit_id, sizeof(res->audit_id), "%s", r->str);
    }
    if (r != NULL)
        freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
}

#define RELEASE_REDIRECTS_MAX 2     /* MOVED/ASK hops followed */
#define RELEASE_TRYAGAIN_MAX  20    /* TRYAGAIN retries, ... */
#define RELEASE_TRYAGAIN_WAIT_MS 100    /* ... this far apart */

/*
 * EVALSHA the script on c (t names the node), EVAL when the server does
 * not have it cached (restart, SCRIPT FLUSH, failover: EVAL caches it for
 * the next EVALSHA).  asking: an ASK redirection led here, so each try is
 * preceded by ASKING.  Returns the reply, or NULL with err set.
 */
static redisReply *
run_script(redisContext *c, const struct target_conf *t, struct release_args *a,
           const char *sha, const char *script, size_t slen, bool asking, const char **what,
           char *err, size_t errlen)
{
    const char *asking_argv[1] = { "ASKING" };
    redisReply *r;
    int k;

    for (k = 0; k < 2; k++) {
        *what = k == 0 ? "EVALSHA" : "EVAL";
        a->argv[0] = *what;
        a->argvlen[0] = strlen(*what);
        a->argv[1] = k == 0 ? sha : script;
        a->argvlen[1] = k == 0 ? 40 : slen;
        if (asking) {
            r = redisconn_command(c, t, "ASKING", 1, asking_argv, NULL, err, errlen);
            if (r == NULL)
                return NULL;
            freeReplyObject(r);
        }
        r = redisconn_command(c, t, *what, a->argc, a->argv, a->argvlen, err, errlen);
        if (r == NULL || k == 1 || r->type != REDIS_REPLY_ERROR ||
            strncmp(r->str, "NOSCRIPT", 8) != 0)
            return r;
        freeReplyObject(r);
    }
    return NULL;
}

/* The audit ids of the releases pushed below, for the audit tail
 * (audittail.c), which must not push them again. */
static pthread_mutex_t pushed_mu = PTHREAD_MUTEX_INITIALIZER;
static char pushed_ids[RELEASE_PUSHED_KEPT][64];
static size_t pushed_next;

static void
remember_pushed(const char *id)
{
    pthread_mutex_lock(&pushed_mu);
    snprintf(pushed_ids[pushed_next], sizeof(pushed_ids[0]), "%s", id);
    pushed_next = (pushed_next + 1) % RELEASE_PUSHED_KEPT;
    pthread_mutex_unlock(&pushed_mu);
}

bool
release_audit_pushed(const char *id)
{
    bool found = false;

    if (id == NULL || id[0] == '\0')
        return false;
    pthread_mutex_lock(&pushed_mu);
    for (size_t i = 0; i < RELEASE_PUSHED_KEPT && !found; i++)
        found = strcmp(pushed_ids[i], id) == 0;
    pthread_mutex_unlock(&pushed_mu);
    return found;
}

/* The timeline's force_release event of a release that deleted the lock:
 * the holder's bytes (the ring keeps them as they are), the audit's who
 * and why, the holder's age when the caller knew it (IDLETIME is no age:
 * a renewal resets it). */
static void
push_event(const struct target_conf *t, const struct release_request *rq,
           const struct release_result *res)
{
    char detail[EVENT_TEXT_MAX];
    struct event_in in;

    if (rq->action != RELEASE_ACTION_RELEASE || rq->dry_run || res->outcome != RELEASE_RELEASED)
        return;
    /* the audit tail skips it: a release that left holders is no event */
    if (res->audit_id[0] != '\0')
        remember_pushed(res->audit_id);
    if (res->holders_left != 0)
        return;
    snprintf(detail, sizeof(detail), "released by %s (%s lock)%s%s%s%s%s",
             rq->operator_name != NULL && rq->operator_name[0] ? rq->operator_name : "?",
             res->format[0] ? res->format : "unknown",
             rq->reason != NULL && rq->reason[0] ? ": " : "",
             rq->reason != NULL ? rq->reason : "",
             res->audit_id[0] ? "; audit entry " : "", res->audit_id,
             res->wake_errors > 0 ? "; some waiters could not be woken" : "");
    memset(&in, 0, sizeof(in));
    in.kind = EVENT_FORCE_RELEASE;
    in.target = t->name;
    in.key = rq->key;
    in.keylen = rq->keylen;
    in.holder = rq->holder;
    in.holderlen = rq->holder != NULL ? rq->holderlen : 0;
    in.detail = detail;
    in.seconds = rq->known_age_ms > 0 ? (double)rq->known_age_ms / 1000.0 : -1;
    events_push(&in);
}

enum release_outcome
release_run(redisContext *c, const struct target_conf *t, const char *audit_stream,
            const struct release_request *req, struct release_result *res)
{
    struct release_args a;
    struct release_request rq = *req;
    char sha[41], *script = NULL;
    size_t slen = 0;
    redisReply *r = NULL;
    const char *what = "EVALSHA";
    struct target_conf hop, next;
    redisContext *hc = c, *own = NULL;
    char host[256];
    unsigned slot;
    bool ask = false;
    int hops, port, tries = 0;

    memset(res, 0, sizeof(*res));
    memset(&a, 0, sizeof(a));
    res->outcome = RELEASE_ERROR;
    res->pttl_ms = -2;
    res->idle_s = -1;
    res->holders_left = -1;
    if (rq.now_ms <= 0)
        rq.now_ms = clock_now_ms();
    {
        int pre = release_precheck(t, rq.key, rq.keylen, res->err, sizeof(res->err));

        if (pre >= 0) {
            res->outcome = (enum release_outcome)pre;
            goto out;
        }
    }
    if (release_script(rq.action, &script, &slen, sha) == -1 ||
        release_build_args(t, audit_stream, &rq, sha, &a) == -1) {
        set_err(res, "out of memory");
        goto out;
    }
    hop = *t;
    for (hops = 0;; hops++) {
        r = run_script(hc, &hop, &a, sha, script, slen, ask, &what, res->err,
                       sizeof(res->err));
        /* TRYAGAIN: the slot is being migrated and not every KEY is on one
         * side yet; a slot migration takes moments, so wait a little */
        while (r != NULL && r->type == REDIS_REPLY_ERROR && tries++ < RELEASE_TRYAGAIN_MAX &&
               strncmp(r->str, "TRYAGAIN", 8) == 0) {
            struct timespec ts = { 0, RELEASE_TRYAGAIN_WAIT_MS * 1000000L };

            freeReplyObject(r);
            nanosleep(&ts, NULL);
            r = run_script(hc, &hop, &a, sha, script, slen, ask, &what, res->err,
                           sizeof(res->err));
        }
        if (r == NULL || hops == RELEASE_REDIRECTS_MAX || t->mode != TARGET_CLUSTER ||
            !cluster_parse_redirect(r, &ask, &slot, host, sizeof(host), &port))
            break;
        /* The slot moved (MOVED) or is moving (ASK) since the caller found
         * its node: run the script where the cluster says, once more. */
        freeReplyObject(r);
        r = NULL;
        redisconn_node(t, host[0] != '\0' ? host : hop.host, port, &next);
        if (own != NULL)
            redisFree(own);
        if ((own = redisconn_open(&next, res->err, sizeof(res->err))) == NULL)
            goto out;
        hop = next;
        hc = own;
    }
    if (r == NULL)
        goto out;
    if (r->type == REDIS_REPLY_ERROR) {
        set_err(res, "%s on %s:%d: %.*s", what, hop.host, hop.port,
                (int)(r->len > 250 ? 250 : r->len), r->str);
        aclhint_add(t, "the release script", r->str, r->len, res->err, sizeof(res->err));
        goto out;
    }
    if (parse_reply(r, res) == -1) {
        res->outcome = RELEASE_ERROR;
        set_err(res, "%s on %s:%d: unexpected reply from the release script", what,
                hop.host, hop.port);
        goto out;
    }
    if (t->mode == TARGET_CLUSTER && !rq.dry_run && audit_stream != NULL &&
        audit_stream[0] != '\0')
        cluster_audit(t, audit_stream, &rq, res);
    push_event(t, &rq, res);
out:
    if (r != NULL)
        freeReplyObject(r);
    if (own != NULL)
        redisFree(own);
    release_args_free(&a);
    free(script);
    return res->outcome;
}

/* ---- JSON -------------------------------------------------------------------- */

static json_t *
json_text(const char *p, size_t n, bool escaped)
{
    size_t need = escaped ? KEYTEXT_PERCENT_MAX(n) : KEYTEXT_SANITIZED_MAX(n), len;
    char *tmp = malloc(need);
    json_t *j;

    if (tmp == NULL)
        return NULL;
    len = escaped ? keytext_percent(tmp, need, p, n) : keytext_sanitize(tmp, need, p, n);
    j = json_stringn(tmp, len);
    free(tmp);
    return j;
}

/* A refusal release_precheck() explained in res->err. */
static bool
refused_why(const struct release_result *res)
{
    return (res->outcome == RELEASE_REFUSED_EXCLUDED || res->outcome == RELEASE_REFUSED_HELPER) &&
           res->err[0] != '\0';
}

/* The "message" of the JSON: the precheck's sentence, or the outcome's in
 * the words of whoever asked. */
static const char *
result_message(const struct release_request *req, const struct release_result *res)
{
    if (refused_why(res))
        return res->err;
    if (req->http && (unsigned)res->outcome < RELEASE_OUTCOME_COUNT &&
        http_messages[res->outcome] != NULL)
        return http_messages[res->outcome];
    return release_outcome_message(res->outcome);
}

json_t *
release_result_json(const char *target, const struct release_request *req,
                    const struct release_result *res)
{
    json_t *o = json_object();
    bool err = res->outcome == RELEASE_ERROR;

    if (o == NULL)
        return NULL;
    if (json_object_set_new(o, "target", json_string(target ? target : "")) == -1 ||
        json_object_set_new(o, "action", json_string(req->action == RELEASE_ACTION_EXPIRE
                                                     ? "expire" : "release")) == -1 ||
        json_object_set_new(o, "key", json_text(req->key, req->keylen, false)) == -1 ||
        json_object_set_new(o, "key_escaped", json_text(req->key, req->keylen, true)) == -1 ||
        json_object_set_new(o, "holder", json_text(req->holder, req->holderlen, false)) == -1 ||
        json_object_set_new(o, "holder_escaped",
                            json_text(req->holder, req->holderlen, true)) == -1 ||
        json_object_set_new(o, "outcome", json_string(release_outcome_str(res->outcome))) == -1 ||
        json_object_set_new(o, "done", json_boolean(release_outcome_done(res->outcome))) == -1 ||
        json_object_set_new(o, "refused",
                            json_boolean(release_outcome_refused(res->outcome))) == -1 ||
        json_object_set_new(o, "dry_run", json_boolean(req->dry_run)) == -1 ||
        json_object_set_new(o, "message", json_string(result_message(req, res))) == -1 ||
        json_object_set_new(o, "type", err || res->type[0] == '\0' ? json_null()
                            : json_string(res->type)) == -1 ||
        json_object_set_new(o, "pttl_ms", err || res->pttl_ms == -2 ? json_null()
                            : json_integer(res->pttl_ms)) == -1 ||
        json_object_set_new(o, "idle_seconds", res->idle_s < 0 ? json_null()
                            : json_integer(res->idle_s)) == -1 ||
        json_object_set_new(o, "old", json_text(res->old, res->oldlen, false)) == -1 ||
        json_object_set_new(o, "old_escaped", json_text(res->old, res->oldlen, true)) == -1 ||
        json_object_set_new(o, "audit_id", res->audit_id[0] ? json_string(res->audit_id)
                            : json_null()) == -1 ||
        json_object_set_new(o, "wake_errors", json_integer(res->wake_errors)) == -1 ||
        json_object_set_new(o, "format", res->format[0] ? json_string(res->format)
                            : json_null()) == -1)
        goto fail;
    if (res->outcome == RELEASE_RELEASED &&
        (json_object_set_new(o, "holders_left", res->holders_left < 0 ? json_null()
                             : json_integer(res->holders_left)) == -1 ||
         json_object_set_new(o, "deleted", json_boolean(res->holders_left == 0)) == -1 ||
         json_object_set_new(o, "purged_waiters", json_integer(res->purged)) == -1))
        goto fail;
    if (req->action == RELEASE_ACTION_EXPIRE &&
        json_object_set_new(o, "ttl_ms", json_integer(req->ttl_ms)) == -1)
        goto fail;
    if (res->err[0] != '\0' && !refused_why(res) &&
        json_object_set_new(o, "error", json_text(res->err, strlen(res->err), false)) == -1)
        goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}
