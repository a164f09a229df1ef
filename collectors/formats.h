/*
 * formats.h - the table of lock formats.
 *
 * A scan reads each key's type, PTTL and a bounded part of its value into a
 * raw_lock; formats_decode() walks the table in order and lets the first
 * format that claims the key decode it into a lock_view: who holds it, how
 * many times (reentrancy), and where the format encodes them the holder's
 * host, pid and acquisition time.  The order of the table settles
 * ambiguity (a value that two formats could have written goes to the more
 * specific one).  Adding a format is one new row and one new file in
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

enum raw_type { RAW_NONE, RAW_STRING, RAW_HASH, RAW_OTHER };

/* Bounds on what the scanner reads per key. */
#define RAW_VALUE_MAX   512     /* bytes of a string value read (GETRANGE) */
#define RAW_FIELDS_MAX  64      /* hash fields read */
#define HOLDERS_MAX     8       /* holders kept per lock */
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
};

struct lock_format {
    const char *name;           /* "plain", "redisson", ... (metric label) */
    bool (*claims)(const struct raw_lock *raw);
    /* Fill *view (zeroed by the caller).  0, or -1 when the key is not a
     * lock after all (the next format is tried). */
    int (*decode)(const struct raw_lock *raw, struct lock_view *view);
    const char *wake_lua;       /* fragment for the guarded release, or NULL */
};

/* The table, in claim order, and its length.  The last row is "unknown". */
extern const struct lock_format formats_table[];
extern const size_t formats_count;

/*
 * Decode raw with the first format that claims it.  Always returns a row
 * (the "unknown" row when no other claims it) and fills *view; for
 * "unknown" the view has no holders.
 */
const struct lock_format *formats_decode(const struct raw_lock *raw,
                                         struct lock_view *view);

/* Index of a row in formats_table (for compact storage). */
size_t formats_index(const struct lock_format *fmt);

#endif
