/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * formats.h - the table of lock formats.
 *
 * A scan reads each key's type, PTTL and a bounded part of its value into a
 * raw_lock; formats_decode() walks the table in order and lets the first
 * format that claims the key decode it into a lock_view: who holds it, how
 * many times (reentrancy), and where the format encodes them the holder's
 * host, pid and acquisition time.  The order of the table settles
 * ambiguity (a value that two formats could have written goes to the more
 * specific one).  Adding a format is one new row (formats_impl.h: its
 * columns, below, carry all it does differently) and one new file in
 * collectors/formats/.
 *
 * Decoders are pure: no I/O, no allocation, no global state.  Everything
 * they produce is bounded; what does not fit is counted, not lost silently.
 */
#ifndef LOCKWATCH_FORMATS_H
#define LOCKWATCH_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/lw1.h"

/* RAW_ZSET's members and scores are read into fields (name = member,
 * value = score as Redis prints it). */
enum raw_type { RAW_NONE, RAW_STRING, RAW_HASH, RAW_OTHER, RAW_ZSET };

/* Bounds on what the scanner reads per key. */
#define RAW_VALUE_MAX   512     /* bytes of a string value read (GETRANGE) */
#define RAW_FIELDS_MAX  64      /* hash fields (zset members) read */
#define HOLDERS_MAX     8       /* holders kept per lock */
#define HOLDERS_LAST    7       /* HOLDERS_MAX - 1, spelled for a ZRANGE stop */
#define HOLDER_ID_MAX   160     /* bytes of a holder id kept */
#define HOST_MAX        64

struct raw_field {
    const char *name;
    size_t namelen;
    const char *value;
    size_t valuelen;
};

struct raw_lock {
    const char *key;
    size_t keylen;
    enum raw_type type;
    long long pttl;             /* ms; -1 no TTL */
    /* RAW_STRING */
    const char *value;
    size_t valuelen;
    bool value_truncated;       /* the value is longer than what was read */
    /* RAW_HASH */
    const struct raw_field *fields;
    size_t nfields;
    bool fields_truncated;      /* the hash has more fields than were read */
    /* RAW_HASH: its "mode" field read on its own (HMGET key mode), since a
     * hash cut by the read cap may not show it among the fields read.
     * mode_read false: not asked; true with mode NULL: the hash has none. */
    bool mode_read;
    const char *mode;
    size_t modelen;
    /* The scan's time (Unix ms), 0 when unknown: a decoder may use it to
     * reject an encoded acquisition time no real holder could have. */
    int64_t now_ms;
};

struct lock_holder {
    char id[HOLDER_ID_MAX];     /* token, or "<uuid>:<thread>"; NUL-terminated */
    size_t idlen;               /* bytes in id (may hold NUL bytes) */
    bool id_truncated;
    long count;                 /* reentrant hold count; 1 for plain locks */
};

struct lock_view {
    struct lock_holder holders[HOLDERS_MAX];
    size_t nholders;            /* kept in holders[] */
    size_t holders_total;       /* found, may exceed HOLDERS_MAX */
    long max_count;             /* highest hold count over all holders */
    char mode[8];               /* "read"/"write" for rw locks, else "" */
    /* identity, where the format encodes it */
    char host[HOST_MAX];        /* "" when unknown */
    long pid;                   /* 0 when unknown */
    long long thread;           /* -1 when unknown */
    int64_t acquired_ms;        /* Unix ms; 0 when unknown */
    /* The decoder claimed the key on a read that does not show its whole
     * layout (a hash cut by the read cap): the row is a guess, whatever
     * its proves column says (lockfacts_decode()). */
    bool partial;
};

/*
 * What a decoded view promises, whatever the format:
 *  - holders[i].id holds holders[i].idlen bytes exactly as Redis stored them
 *    (any bytes: NUL, newline, invalid UTF-8), followed by a NUL so the
 *    common case can be printed; idlen <= HOLDER_ID_MAX - 1.  id_truncated
 *    is set when the id was cut here or the scanner read only part of the
 *    value (raw->value_truncated).  Render ids with their length, never
 *    with strlen().
 *  - holders_total counts every holder found in what the scanner read; a
 *    hash read with fields_truncated may have more.
 *  - host is printable ASCII (0x21..0x7e) or "".
 *  - acquired_ms is 0 or within [FORMATS_TIME_MIN_MS, FORMATS_TIME_MAX_MS):
 *    decoders reject encoded times outside it.  It comes from the holder's
 *    clock, which may be ahead of ours: clamp it to "now" before using it
 *    as the start of an age.
 *  - pid, thread and host describe the holder when the format encodes
 *    them and there is exactly one holder; otherwise 0, -1 and "".
 */
/* The lw1 token's range (common/lw1.h), held to by every format. */
#define FORMATS_TIME_MIN_MS  LW1_TIME_MIN_MS          /* 2000-01-01T00:00:00Z */
#define FORMATS_TIME_MAX_MS  LW1_TIME_MAX_MS          /* 2100-01-01T00:00:00Z */

/*
 * A row is the whole of a format: every place that behaves differently per
 * format asks one of these columns, never the row's name (STYLE.md: curl's
 * transfer engine never asks "is this FTP?").  A column left out of a row
 * is 0, which every column reserves for "missing": formats_row_check()
 * names the first one missing, and tests/unit/test_formats.c fails on it.
 */

/* What the row's key holds (a bit set of these). */
#define FMT_HOLDS_STRING  (1u << 0)
#define FMT_HOLDS_HASH    (1u << 1)
#define FMT_HOLDS_ZSET    (1u << 2)
#define FMT_HOLDS_OTHER   (1u << 3)   /* any other type ("unknown") */

/* A set of helper kinds (enum helper_kind, below): 1u << kind each.  Bit 0
 * (HELPER_NONE) says "none" so that an empty set is not a missing column. */
#define FMT_HELPER(kind)  (1u << (kind))
#define FMT_HELPERS_NONE  FMT_HELPER(HELPER_NONE)

/* Where the row's waiters show in Redis (collectors/scan/waiters.c and
 * lockctl show count them there). */
enum fmt_waiters {
    FMT_WAITERS_UNSET,
    FMT_WAITERS_NONE,           /* its clients poll: nothing to count */
    FMT_WAITERS_CHANNEL,        /* subscribers of its wake channel (FMT_WAKE) */
    FMT_WAITERS_QUEUE,          /* the same, and the length of its fair-queue
                                 * helper (a Redisson FairLock's waiters) */
};

/* How the judge (collectors/locks/lockstate.c) treats the row. */
enum fmt_semaphore {
    FMT_SEM_UNSET,
    FMT_SEM_NO,                 /* a lock: leaked, long and reentrant apply */
    FMT_SEM_COUNT,              /* a count of permits, no TTL by design: the
                                 * one "holder" is the count, so never
                                 * leaked and never long */
    FMT_SEM_PERMITS,            /* permits in use are its holders (read from
                                 * a helper), no TTL by design: never
                                 * leaked; a permit held too long is long */
};

/* What a forced release (lockctl release, the release API) does for the
 * row's waiters: lockctl's prompt and outcome sentence say it.  How it
 * wakes them is the release row's business (collectors/release/lua/
 * formats.lua): a wake channel (FMT_WAKE), python-redis-lock's signal
 * list, Spring's registry channel. */
enum fmt_release_wakes {
    FMT_RWAKES_UNSET,
    FMT_RWAKES_NONE,            /* its clients poll: the DEL is all they need */
    FMT_RWAKES_ALL,             /* every release wakes its waiters */
    FMT_RWAKES_MODE,            /* when the key goes, and when a release with
                                 * holders left turns it from write to read
                                 * (redisson-rw) */
};

/* What a value that the row claims proves. */
enum fmt_proves {
    FMT_PROVES_UNSET,
    FMT_PROVES_LAYOUT,          /* a structure only that client writes: the
                                 * label and any time or host read from it
                                 * are facts */
    FMT_PROVES_SHAPE,           /* a shape other clients may write too: the
                                 * label is a guess (format_source
                                 * "guessed"), any time read from it is
                                 * not believed unless corroborated, and
                                 * the release is plain compare-and-delete */
    FMT_PROVES_DECLARED,        /* a shape so common (a uuid4, 32 hex that
                                 * may be a uuid1) that the row claims a
                                 * value only where the target's
                                 * format_patterns declare it: detection
                                 * skips it (formats_decode()) */
    FMT_PROVES_FALLBACK,        /* any string the rows above left: the
                                 * holder token and nothing else.  A count
                                 * under the target's semaphore_patterns is
                                 * a semaphore instead (formats_semaphore()) */
    FMT_PROVES_NOTHING,         /* claims no value: the row is given by helper
                                 * keys (.kin), by semaphore_patterns, or is
                                 * "unknown" */
};

/* Where a lock's row came from (the API's format_source; chosen by
 * collectors/locks/lockfacts.c from the row's proves column and the
 * target's format_patterns). */
enum fmt_source {
    FMT_SOURCE_GUESSED,         /* a shape other clients write too */
    FMT_SOURCE_PROVEN,          /* a layout only that client writes (or a
                                 * helper key it writes beside the lock) */
    FMT_SOURCE_DECLARED,        /* the target's format_patterns (or
                                 * semaphore_patterns) say so */
};

/* "guessed", "proven", "declared" (the API's words); "guessed" for any
 * other value. */
const char *formats_source_name(enum fmt_source s);

/* "YYYY-MM-DDTHH:MM:SS[.f to .fffffffff]Z" at the start of s (len bytes):
 * the bytes it takes, *ms the Unix ms (finer digits checked, not kept); 0
 * when it is not such a time.  No locale, no time zone: ShedLock values,
 * and the agent's API times as lockctl reads them (startsAt). */
size_t formats_parse_iso_utc(const char *s, size_t len, int64_t *ms);

/*
 * Wake-ups after a forced release (SPEC "Guarded release"): the pub/sub
 * channel a format's waiters listen on.  channel is its prefix;
 * formats_wake_channel() builds the channel for a key the way Redisson
 * does, so it hashes to the lock's cluster slot and can be passed to the
 * release script as a KEY (SPUBLISH inside a script needs that).  legacy
 * is the prefix of Redisson 2.x's name, "<legacy>{<key>}", also woken and
 * counted.  role is the release script's companion role for the channel
 * (guard.lua; "<role>-v2" for the legacy name; rows sharing a channel
 * share the role).  message and sharded say what the release script
 * (collectors/release/lua/formats.lua) publishes there and whether it
 * SPUBLISHes too in a cluster: they describe, the Lua row does.  A row
 * whose clients poll, or wake some other way (python-redis-lock's signal
 * list, Spring's registry channel: the release row does those), has
 * FMT_WAKE_NONE (role "").
 */
#define FMT_WAKE(role, channel, legacy, message)                              \
    .wake_role = role, .wake_channel = channel, .wake_legacy = legacy,        \
    .wake_message = message, .wake_sharded = true
#define FMT_WAKE_NONE .wake_role = ""

/*
 * Kin: a row no value claims, that a lock of another row becomes when it
 * has certain helper keys (formats_kin()).  from is the set of rows it is
 * made from (FMT_ROW_BIT()), helpers the kinds that make it; count says
 * that a lock of a from row is only looked at for them when its one holder
 * is a decimal (a count of permits).  Rows without kin have from == 0 and
 * set.  Where several kin rows fit, the later row in the table wins.
 */
struct fmt_kin {
    unsigned from;
    unsigned helpers;
    bool count;
    bool set;
};
#define FMT_KIN_NONE { 0, 0, false, true }
#define FMT_KIN(from, helpers, count) { from, helpers, count, true }

/* The release column: the companions (space-separated roles of
 * collectors/release/release.c) the format's row of the release table
 * uses; "" for none.  FMT_RELEASE_DETECT: the format has no release row;
 * the script picks one by what it sees (every companion is passed). */
extern const char fmt_release_detect[];
#define FMT_RELEASE_DETECT fmt_release_detect

struct lock_format {
    const char *name;           /* "plain", "redisson", ... (metric label) */
    bool (*claims)(const struct raw_lock *raw);
    /* Fill *view (zeroed by the caller).  0, or -1 when the key is not a
     * lock after all (the next format is tried). */
    int (*decode)(const struct raw_lock *raw, struct lock_view *view);
    unsigned holds;             /* FMT_HOLDS_* */
    unsigned helpers;           /* helper kinds its clients write beside it */
    struct fmt_kin kin;
    enum fmt_waiters waiters;
    enum fmt_semaphore semaphore;
    const char *wake_role;      /* FMT_WAKE(): "" for none, NULL missing */
    const char *wake_channel;   /* prefix, or NULL: no wake channel */
    const char *wake_legacy;    /* Redisson 2.x prefix, or NULL */
    const char *wake_message;   /* what a release publishes there */
    bool wake_sharded;          /* SPUBLISHed as well in a cluster */
    const char *release;        /* companions, or FMT_RELEASE_DETECT */
    enum fmt_release_wakes release_wakes;
    enum fmt_proves proves;
    /* Holder ids are a Redisson client's "<uuid>:<tid>" (":write"): the
     * client registry (lockwatch:client:{<uuid>}) may know when and where
     * it took the lock (collectors/scan/registry.c). */
    bool registry;
};

/* The first column row f lacks ("release", "waiters", ...), or NULL when
 * it has them all and they agree with each other (a waiters source
 * without a wake channel, a row claimed by no value with no kin, ...). */
const char *formats_row_check(const struct lock_format *f);

/*
 * The table, in claim order, and its length.  The last row is "unknown".
 *
 *   redisson-rw   hash: field mode = read|write, read holders <uuid>:<tid>,
 *                 write holder <uuid>:<tid>:write, each -> hold count.
 *                 view.mode is set; holder ids are the field names.
 *                 Read/write is decided by the "mode" field alone: a hash
 *                 without one is not an RW lock, whatever its size.  A
 *                 hash cut by the read cap (more fields than one HSCAN
 *                 gives, so Redis keeps it as a hashtable and "mode" may
 *                 not be among those read) is decided by its mode read on
 *                 its own (raw.mode_read: the scanner and lockctl send
 *                 HMGET key mode beside HSCAN).
 *                 Wakes with "1" on redisson_rwlock:{<key>} (wakes all).
 *   redisson      hash: every field <uuid>:<tid> (lowercase uuid, tid an
 *                 optionally negative decimal) -> positive hold count.
 *                 thread = tid.  Wakes with "0" on
 *                 redisson_lock__channel:{<key>}.  A hash cut by the read
 *                 cap without a "mode" (an RLock has one holder, never 65)
 *                 is claimed too, as a guess (view.partial), with every
 *                 field a holder: holders_total counts them all.
 *   liblockwatch  string: an lw1 token (below); host, pid, thread and
 *                 acquired_ms from the token.
 *   shedlock      string: ADDED:<ISO-8601 UTC>@<hostname>[:<uuid>]; host
 *                 (cut to HOST_MAX-1 bytes) and acquired_ms.
 *   redis-py      string: 32 lowercase hex that is a uuid1 (char[12] '1',
 *                 char[16] in [89ab]) with a time in range and, when the
 *                 scan's time is known (raw.now_ms), at most ~3 years
 *                 before it and a day after; acquired_ms
 *                 from its timestamp.  host = "mac:xx:xx:xx:xx:xx:xx" when
 *                 the node field is a real MAC (multicast bit clear); ""
 *                 when Python fell back to a random node.  A random 32-hex
 *                 token (node-redlock, redis-semaphore) passes this test
 *                 about 1 in 77,000 times: at a million locks a dozen
 *                 random tokens would get an age of months.  So the row is
 *                 FMT_PROVES_DECLARED: only where format_patterns say so.
 *   node-redlock  string: 32 lowercase hex (randomBytes(16), or an
 *                 undeclared uuid1().hex); no time, no host.
 *   redsync       string: 24 standard base64 ending "==" (16 bytes).
 *   python-redis-lock  string under "lock:": 24 base64, no padding (18
 *                 bytes); its "lock-signal:<name>" list is a helper key.
 *   redis-semaphore  string under "mutex:": a lowercase v4 UUID, maybe
 *                 "-<suffix>"; or a zset under "semaphore:" whose members
 *                 (each a holder) score a Unix ms (the last refresh: no
 *                 acquisition time).
 *   pottery       string under "redlock:": a lowercase v4 UUID.
 *   spring        string: a lowercase v4 UUID (RedisLockRegistry's clientId),
 *                 which sherlock, aioredlock and most hand-rolled locks
 *                 write too: FMT_PROVES_DECLARED, only where declared; an
 *                 undeclared uuid4 is "plain".
 *   redisson-semaphore  claims no value: a string holding a decimal under
 *                 the target's semaphore_patterns (formats_semaphore());
 *                 the holder is the count (permits available).
 *   redisson-fair, redisson-fenced, redisson-permit-semaphore  claim no
 *                 value: the scan gives a "redisson" or "plain" lock one of
 *                 them by its helper keys (formats_kin(), below).
 *   plain         any other string: one holder, id = the value, count 1.
 *   unknown       everything else (other types, hashes that fit no
 *                 decoder, RAW_NONE); no holders.
 *
 * Holder ids are what the guarded release compares: the whole string
 * value for string formats, the field name for hash formats.
 */
extern const struct lock_format formats_table[];
extern const size_t formats_count;

/*
 * Decode raw with the first format that claims it, skipping the rows only
 * a declaration gives (FMT_PROVES_DECLARED).  Always returns a row (the
 * "unknown" row when no other claims it) and fills *view; for "unknown"
 * the view has no holders.
 */
const struct lock_format *formats_decode(const struct raw_lock *raw,
                                         struct lock_view *view);

/*
 * Decode raw as row fmt (a declared format, format_patterns): 0 with *view
 * filled when the row claims the value, -1 (view reset) when the value
 * contradicts it or fmt claims no value at all (FMT_PROVES_NOTHING).
 */
int formats_decode_as(const struct lock_format *fmt, const struct raw_lock *raw,
                      struct lock_view *view);

/* May a target's format_patterns name row fmt: does it claim values?
 * (conf/options.c lists the names; test_formats checks they agree.) */
bool formats_declarable(const struct lock_format *fmt);

/* Index of a row in formats_table (for compact storage).  fmt must point
 * into formats_table. */
size_t formats_index(const struct lock_format *fmt);

/* The row named NAME ("redisson", ...), or NULL. */
const struct lock_format *formats_by_name(const char *name);

/*
 * Write the channel on which fmt's waiters for lock KEY listen into out
 * (keylen bytes of key, any bytes; out gets the channel bytes plus a NUL).
 * Redisson's rule (RedissonObject.prefixName): "<prefix>:<key>" when the
 * key already contains '{', else "<prefix>:{<key>}".  Returns the channel
 * length, or -1 when fmt has no wake channel or out is too small.
 */
long formats_wake_channel(const struct lock_format *fmt,
                          const char *key, size_t keylen,
                          char *out, size_t outlen);

/*
 * Helper keys: keys a client writes beside its lock that are not locks
 * (formats_helper() knows the shapes):
 *
 *   fair-queue       redisson_lock_queue:<tag>              Redisson FairLock waiters (list)
 *   fair-timeout     redisson_lock_timeout:<tag>            their deadlines (zset)
 *   fence-token      redisson_lock_token:<tag>              FencedLock token counter (string)
 *   unlock-latch     redisson_unlock_latch:<tag>:<32 hex>   idempotent unlock (string, ~20 s)
 *   rwlock-timeout   <tag>:<uuid>:<tid>:rwlock_timeout:<n>  one per read hold of an RW lock
 *   permit-timeout   <tag>:timeout (zset only)              PermitExpirableSemaphore permits
 *   signal-list      lock-signal:<name>                     python-redis-lock's wake list;
 *                                                           its lock is lock:<name>
 *   client-registry  lockwatch:client:{<uuid>}              liblockwatch's registry of one
 *                                                           client; belongs to its locks
 *
 * <tag> is what Redisson's prefixName()/suffixName() put there: "{X}" for
 * a lock X without '{', else the lock name itself; every Redisson tag holds
 * a '{'.  A helper key is never a lock, a leak or a class member, and never
 * a release/expire target: the scanner counts it to its lock
 * ("helper_keys"), release refuses it naming its lock.
 */
enum helper_kind {
    HELPER_NONE,
    HELPER_FAIR_QUEUE,
    HELPER_FAIR_TIMEOUT,
    HELPER_FENCE_TOKEN,
    HELPER_UNLOCK_LATCH,
    HELPER_RW_TIMEOUT,
    HELPER_PERMIT_TIMEOUT,
    HELPER_SIGNAL_LIST,
    HELPER_CLIENT_REGISTRY,
    HELPER_KINDS
};

/* How a helper names its lock. */
enum helper_owner_style {
    HELPER_OWNER_REDISSON,      /* owner = the lock's name */
    HELPER_OWNER_LOCK_PREFIX,   /* owner = the lock's name after "lock:" */
    HELPER_OWNER_CLIENT,        /* owner = a client uuid: every lock it holds */
};

struct helper_key {
    enum helper_kind kind;
    enum helper_owner_style style;
    const char *owner;          /* ownerlen bytes inside the key */
    size_t ownerlen;
};

/*
 * Is KEY (keylen bytes) a helper key?  type is its TYPE when known
 * (RAW_NONE: unknown; the permit-timeout shape needs RAW_ZSET).  Fills
 * *out (may be NULL) and returns the kind, HELPER_NONE when it is not one.
 */
enum helper_kind formats_helper(const char *key, size_t keylen, enum raw_type type,
                                struct helper_key *out);

/*
 * A registry row's holder id (".registry": "<uuid>:<tid>", ":write" after
 * a writer's) split for its client registry, lockwatch:client:{<uuid>},
 * whose field at:<tid>:<key> is the holder's acquisition time: uuid gets
 * the 36 characters and a NUL, *tid the thread's digits inside id.  False
 * when id is not that shape.  The scanner (collectors/scan/registry.c) and
 * lockctl show read the registry with it.
 */
#define FORMATS_UUID_LEN 36
bool formats_registry_holder(const char *id, size_t len, char uuid[FORMATS_UUID_LEN + 1],
                             const char **tid, size_t *tidlen);

/* Does the scanner read a zset's members (ZCARD + ZRANGE) for KEY?  Only
 * for the zset format there is (redis-semaphore's "semaphore:<key>"):
 * other zsets under the patterns are "unknown" unread, so the agent's ACL
 * needs +zcard +zrange only where such semaphores live. */
bool formats_reads_zset(const char *key, size_t keylen);

/* The row a lock decoded as fmt becomes given the kinds of its helper
 * keys (a bit set, 1u << kind): the last row whose kin column names fmt
 * and one of those kinds ("redisson" with a fence-token helper is
 * "redisson-fenced", with a fair-queue or fair-timeout one
 * "redisson-fair"; "plain" or "redisson-semaphore" with a permit-timeout
 * one "redisson-permit-semaphore").  Otherwise fmt itself. */
const struct lock_format *formats_kin(const struct lock_format *fmt, unsigned helper_kinds);

/*
 * The helper keys a reader looks up for a lock of row fmt whose helpers it
 * may not have seen (outside the patterns), in the order they are to be
 * applied: the probe-able kinds (formats_helper_lock_name()) that would
 * make it a kin row, the later kin row's first, and those of fmt's own
 * kin that hold its holders (a permit semaphore's permits).  count: the
 * lock's one holder is a decimal (kin rows with .count need it).  Fills
 * out, returns how many.
 */
size_t formats_kin_probes(const struct lock_format *fmt, bool count,
                          enum helper_kind out[HELPER_KINDS]);

/* The name of lock KEY's helper of kind k into out (cap bytes, NUL-ended
 * when it fits), Redisson's prefixName() or suffixName() of the key;
 * returns the name's length (>= cap: did not fit), or 0 for a kind that
 * is not named from its lock alone (it is then never probed). */
size_t formats_helper_lock_name(enum helper_kind k, const char *key, size_t keylen,
                                char *out, size_t cap);

/* Does a helper of kind k hold its lock's holders (a permit-timeout zset:
 * its members are the permits in use)? */
bool formats_helper_holds_holders(enum helper_kind k);

/* The row whose wake column has companion role ROLE ("redisson", ...):
 * the first in table order, or NULL. */
const struct lock_format *formats_wake_row(const char *role);

/*
 * A Redisson RSemaphore (a key in the target's semaphore_patterns): the
 * row with FMT_SEM_COUNT ("redisson-semaphore") with *view filled (one holder, the count, as
 * the guarded release compares it) when raw is a string holding a whole
 * decimal integer; NULL (view untouched) otherwise: the key keeps the row
 * formats_decode() gives it.
 */
const struct lock_format *formats_semaphore(const struct raw_lock *raw, struct lock_view *view);

/* A FMT_SEM_COUNT lock's permits available, from its holder id: true and
 * *out set, false for any other row or an id not a decimal. */
bool formats_permits_available(const struct lock_format *fmt, const char *id, size_t idlen,
                               long long *out);

/* "fair-queue", ... ; and a phrase for messages, to be followed by the
 * owning lock's name ("the waiting queue of Redisson fair lock"). */
const char *formats_helper_name(enum helper_kind k);
const char *formats_helper_what(enum helper_kind k);

/* The hash by which a helper finds its lock: hash (the scanner's keyhash)
 * of the owner bytes, mixed with the style. */
uint64_t formats_owner_hash(enum helper_owner_style style,
                            uint64_t (*hash)(const void *, size_t),
                            const char *owner, size_t len);

/* Every owner hash a helper of lock KEY can have, given the ids of its
 * holders (nids of them, at most HOLDERS_MAX looked at); their count. */
#define FORMATS_OWNER_HASHES_MAX (3 + HOLDERS_MAX)
size_t formats_lock_owner_hashes(const char *key, size_t keylen, const char *const *ids,
                                 const size_t *idlens, size_t nids,
                                 uint64_t (*hash)(const void *, size_t),
                                 uint64_t out[FORMATS_OWNER_HASHES_MAX]);

/*
 * The lw1 token: the value liblockwatch writes for a plain lock (SET key
 * token NX PX ttl) and the contract between the client library and the
 * "liblockwatch" row.  One line of printable ASCII, fields split by ':':
 *
 *     lw1:<host>:<pid>.<nonce>:<thread>:<acquired_unix_ms>:<random>
 *
 *   host      [A-Za-z0-9._-]{1,63}: gethostname() with every other byte
 *             replaced by '-' and cut to 63 bytes (so it never holds ':')
 *   pid       getpid(), decimal, 1..10 digits, no sign, no leading zero
 *   nonce     16 lowercase hex digits drawn once per process (again in a
 *             forked child): with host, pid and thread, the party the
 *             wait-for graph ties a lock taken at once to its thread's
 *             waits by (collectors/graph/pairs.c); host, pid and thread
 *             alone recur (a restarted container is pid 1 again).  The
 *             older form, "<pid>" without ".<nonce>", is still read: its
 *             party is host, pid and thread
 *   thread    the OS thread id (gettid()), decimal, 1..19 digits, no sign,
 *             no leading zero unless it is "0"
 *   acquired  Unix ms (CLOCK_REALTIME) when the lock was first taken,
 *             decimal, no leading zero, within [FORMATS_TIME_MIN_MS,
 *             FORMATS_TIME_MAX_MS); renewals keep the token unchanged
 *   random    16 lowercase hex digits (64 random bits, so two acquisitions
 *             never share a token)
 *
 * e.g. "lw1:web-3.example.com:4211.5b2e9c0d71a4f836:4230:1795666320123:
 * 9f86d081884c7d65" (one line).  At most 4+64+28+20+14+16 = 146 bytes, so
 * it always fits a holder id.  A value that breaks any rule is not ours
 * and decodes as "plain".  The rules are lw1_token_parse() of
 * common/lw1.h (LW1_PREFIX, LW1_HOST_MAX, LW1_NONCE_HEX, LW1_RANDOM_HEX),
 * the parser liblockwatch itself reads tokens back with.
 */

#endif
