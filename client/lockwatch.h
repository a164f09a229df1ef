/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockwatch.h - liblockwatch, a Redis lock client for C that reports how
 * long its callers waited for each lock and how long they held it.
 *
 * This is the only public header.  Everything it declares starts with lw_
 * (LW_ for macros); the handles are opaque.
 *
 * Two kinds of lock, one API:
 *
 *   plain      a string key: SET key <lw1 token> NX PX lease, released and
 *              extended by compare-and-delete / compare-and-pexpire Lua
 *              scripts.  The token names the holder (host, pid, thread,
 *              acquisition time), so lockwatchd can show who holds it.
 *   reentrant  (LW_REENTRANT) Redisson's RLock wire format: a hash whose
 *              field "<client uuid>:<thread id>" counts the holds.  A C
 *              service and a Java service using Redisson's RLock can share
 *              one lock.  The holder's identity goes to a small registry
 *              hash, lockwatch:client:{<client uuid>}.  Nested holds never
 *              shorten the lock: an inner acquire, release or renewal only
 *              ever raises its TTL, never cuts it to a shorter lease.
 *
 * A lock taken with lease_ms == 0 is renewed by the client's watchdog every
 * lease/3 (default lease 30 s) until it is released; if a renewal finds the
 * lock gone or taken over, the lock is marked lost (lw_lock_is_lost) and the
 * on_lost callback runs.  A lock taken with an explicit lease simply expires
 * after it unless lw_extend() is called.
 *
 * Every acquisition reports "lw1 wait <key> <us> <ok|timeout|error>" and
 * every release "lw1 hold <key> <us> <owner> <holder>" to the agent over
 * UDP (see lw_options.agent); an acquire that has to wait also reports
 * "lw1 waiting ... start", and its wait then names owner and holder ("lw1
 * wait <key> <us> <outcome> <owner> <holder>", the waiting's end too); a
 * lock found lost (watchdog, lw_extend, or a release after the lease ran
 * out) reports "lw1 lost ..." (docs/line-protocol.md, docs/reporters.md).
 * LOCKWATCH_KEY_FILE signs every datagram; LOCKWATCH_OWNER names the
 * process in owner ids.
 * Reporting never blocks and never fails a lock call.
 *
 * Threads.  A client handle may be used by any number of threads at once:
 * commands share one Redis connection behind a mutex; the watchdog and each
 * waiting lw_lock() use connections of their own.  A lock handle
 * (lw_lock_t) may be used by one thread at a time (any thread).  There is
 * no global state: two client handles share nothing.
 *
 * Errors.  Functions return an lw_status.  Calls that can fail take a last
 * argument lw_error *err (NULL allowed): on return it holds the status and,
 * unless the status is LW_OK, a one-line message that says what failed, on
 * what, and what to do.  lw_connect() is the one call that may leave a
 * message with LW_OK: a warning, about a setting it ignored (see
 * lw_connect()).  The message lives in the caller's struct, so
 * threads sharing a client never see each other's errors.  The library
 * never aborts, never prints and never raises signals of its own (it sends
 * samples with MSG_NOSIGNAL).  hiredis writes with write(2), which raises
 * SIGPIPE on a connection the server closed (a restart), and SIGPIPE's
 * default action ends the program; so lw_connect() sets SIGPIPE to SIG_IGN
 * when it is at that default (a write then fails with EPIPE, like any
 * broken connection).  A program's own SIGPIPE handler is left alone.
 *
 * Faults.  An acquire whose reply was lost is undone on Redis, so it never
 * leaves a lock nobody owns: after a command timeout by a script sent right
 * behind it on the same connection, which Redis runs as soon as it resumes;
 * after a broken connection first thing on the next one the client opens
 * (the background thread opens it within 250 ms if no call comes first).
 * After Redis restarts, the next call reconnects (scripts loaded again) and
 * works; a waiting lw_lock() keeps waiting across the restart.
 * docs/fencing.md has the details and the limits.
 *
 * Keys are NUL-terminated strings of 1..LW_KEY_MAX bytes.  A sample line
 * carries the key percent-encoded (bytes outside 0x21..0x7e and '%' take
 * three).  Lines go in datagrams of up to 1432 bytes, or 8192 when every
 * destination is a loopback address (docs/line-protocol.md); with one that
 * is not, a line too long for 1432 bytes (a key over about 1.1 KB) goes
 * alone in one of up to 8192 bytes to the destinations on a loopback
 * address.  8192 bytes fit any key of LW_KEY_MAX printable bytes; a line
 * that fits neither is not sent, counted in samples_dropped (the lock call
 * works as ever).
 *
 * Requires hiredis (0.14 or later; TLS needs 1.x with hiredis_ssl).  Link
 * with `pkg-config --libs lockwatch`.  Over TLS, OpenSSL writes with
 * write(2): a program that talks TLS to Redis should ignore SIGPIPE, or a
 * write to a connection the server closed may raise it.
 */
#ifndef LOCKWATCH_H
#define LOCKWATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define LW_API __attribute__((visibility("default")))
#else
#define LW_API
#endif

#define LW_VERSION_MAJOR 0
#define LW_VERSION_MINOR 1
#define LW_VERSION_PATCH 0

/* Longest key accepted, in bytes. */
#define LW_KEY_MAX 4096

/* lw_lock() flags. */
#define LW_REENTRANT 0x1    /* Redisson RLock format, reentrant per thread */
#define LW_FENCING   0x2    /* return a fencing token (lw_lock_fence) */

/* lw_lock() timeout: wait as long as it takes. */
#define LW_WAIT_FOREVER (-1LL)

typedef enum lw_status {
    LW_OK = 0,
    LW_TIMEOUT = 1,     /* lw_lock: not acquired within the timeout */
    LW_BUSY = 2,        /* lw_trylock: held by someone else */
    LW_LOST = 3,        /* the lock is no longer ours: it expired or was
                         * taken over; nothing of the new holder's was
                         * touched */
    LW_ERR = -1         /* anything else (bad argument, Redis unreachable or
                         * answering an error, out of memory): see the
                         * lw_error message */
} lw_status;

#define LW_ERRSTR_SIZE 256

typedef struct lw_error {
    lw_status code;
    char str[LW_ERRSTR_SIZE];   /* "" on LW_OK; NUL-terminated */
} lw_error;

typedef struct lw_client lw_client;
typedef struct lw_lock lw_lock_t;

/*
 * Called from the client's watchdog thread when a watchdog-renewed lock is
 * found lost (gone, or held by someone else; or not renewable for a whole
 * lease because Redis was unreachable).  lw_lock_is_lost(lock) is already
 * true.  The lock object stays valid while the callback runs, and the
 * callback may call lw_unlock() on it (which returns LW_LOST and frees it).
 * Other threads may be using or releasing the same lock meanwhile: the
 * callback can run just after an lw_unlock() of that lock that returned
 * LW_LOST.  It must not block for long (it delays every other renewal of
 * the client) and must not call lw_client_free().  key is the lock's key.
 */
typedef void (*lw_lost_cb)(lw_lock_t *lock, const char *key, void *data);

/*
 * Client options.  Always start from lw_options_init(), then set fields:
 * new fields get safe defaults there.  Strings are copied by lw_connect();
 * the caller keeps ownership of what it passed.
 */
typedef struct lw_options {
    const char *host;           /* Redis host name or address; "127.0.0.1" */
    int port;                   /* 6379 */
    const char *username;       /* ACL user for AUTH, or NULL */
    const char *password;       /* AUTH password, or NULL */
    const char *password_file;  /* or: read the password from this file
                                 * (first line); not with password */
    int db;                     /* SELECT db; 0 */
    int connect_timeout_ms;     /* TCP connect to Redis; 2000 */
    int command_timeout_ms;     /* one command round trip, the whole reply
                                 * (not each read: a server answering a
                                 * byte at a time times out too); 5000 */

    /* Where to send wait/hold samples: "host:port" ("[v6addr]:port"), or
     * several, comma-separated (up to 8; each gets every datagram).
     * NULL: the environment variable LOCKWATCH_SAMPLES ("off" in any
     * case, or empty: no reporting), else LOCKWATCH_AGENT, else
     * "127.0.0.1:9717".
     * Blanks around an entry are trimmed, empty entries skipped, and
     * entries past the eighth ignored with a warning (see lw_connect()).
     * Resolved once, by lw_connect(), which fails on an address that does
     * not parse or resolve, or an unreadable LOCKWATCH_KEY_FILE. */
    const char *agent;
    int report;                 /* nonzero: send samples (default 1) */

    /* Lease for locks taken with lease_ms == 0, renewed by the watchdog
     * every default_lease_ms / 3.  30000 (Redisson's lockWatchdogTimeout). */
    long long default_lease_ms;

    lw_lost_cb on_lost;         /* NULL: no callback (lw_lock_is_lost only) */
    void *on_lost_data;         /* passed to on_lost */

    /* TLS to Redis (a server with tls-port; rediss:// elsewhere).  Only in
     * a liblockwatch built against hiredis 1.x with hiredis_ssl
     * (lw_tls_supported()); otherwise tls = 1 makes lw_connect() fail with
     * LW_ERR saying so.  The files are PEM and read by lw_connect(). */
    int tls;                    /* nonzero: TLS; 0 */
    const char *tls_ca_file;    /* CAs of the server's certificate; NULL
                                 * (and no tls_ca_dir): the system's */
    const char *tls_ca_dir;     /* hashed CA directory (c_rehash); NULL */
    const char *tls_cert_file;  /* client certificate (chain), for servers
                                 * that require one; NULL */
    const char *tls_key_file;   /* its private key; NULL */
    const char *tls_server_name;/* SNI and the name the certificate must
                                 * carry; NULL: host */
    int tls_verify;             /* check the certificate and its name; 1.
                                 * 0 only for tests: anyone on the path can
                                 * pose as the server */
} lw_options;

/* Counters of one client handle, from lw_client_stats(). */
typedef struct lw_stats {
    uint64_t samples_sent;      /* lines handed to the kernel (for at
                                 * least one destination), whether or not
                                 * an agent listens there (the socket is
                                 * unconnected: no refusal comes back) */
    uint64_t samples_dropped;   /* lines lost: socket full (EAGAIN), send
                                 * error, or a line longer than a datagram
                                 * (1432 bytes; 8192 to a loopback agent) */
    uint64_t datagrams_sent;    /* per destination */
    uint64_t wakeups;           /* pub/sub wake-ups seen by waiting lw_lock */
    uint64_t rechecks;          /* waits that ended by the re-check interval
                                 * (a release that did not publish, or none) */
    uint64_t renewals;          /* successful watchdog renewals */
    uint64_t locks_lost;        /* locks the watchdog found lost */
    uint64_t reconnects;        /* command connections opened again after
                                 * one broke or the server closed it */
    uint64_t lost_replies;      /* acquires whose reply never came (command
                                 * timeout, broken connection) */
    uint64_t orphans_undone;    /* of those, settled: undone on Redis (if
                                 * they had taken the lock) */
    uint64_t orphans_dropped;   /* of those, given up: more than 32 waited
                                 * for a connection, or the undo failed; the
                                 * lock, if taken, expires after its lease */
} lw_stats;

/*
 * Fill *opts with the defaults listed in lw_options.  Never fails.
 */
LW_API void lw_options_init(lw_options *opts);

/*
 * Connect to Redis (one connection for commands; the watchdog and waiters
 * connect on demand), load the lock scripts, open the reporting socket and
 * start the client's background thread (watchdog and report flushing).
 * Also picks this client's random UUID v4, the "<uuid>" of its reentrant
 * lock fields and of its registry key, and sets SIGPIPE to SIG_IGN if it is
 * at its default action (see Errors above).
 *
 * Returns a new client, owned by the caller (free with lw_client_free), or
 * NULL with *err filled: invalid options, unreadable password_file,
 * unresolvable agent address, Redis unreachable or refusing AUTH/SELECT.
 * opts may be NULL for all defaults.  A client returned with err->str not
 * empty (err->code LW_OK) comes with a warning: a reporting setting it
 * ignored, as every lockwatch reporter does (docs/reporters.md), e.g. a
 * LOCKWATCH_OWNER over 200 bytes, for which it uses <host>:<pid>.  The
 * library never prints; log it where the program logs.
 */
LW_API lw_client *lw_connect(const lw_options *opts, lw_error *err);

/*
 * Stop the background thread (sending the samples still buffered), close
 * every connection and drop the caller's reference.  Locks still held are
 * not released: the watchdog stops, so they expire after their lease.
 * Their lw_lock_t objects stay valid until lw_unlock(), which then frees
 * them and returns LW_ERR without touching Redis.  No other call on this
 * client may be running or start once lw_client_free() is called.
 * NULL is a no-op.
 */
LW_API void lw_client_free(lw_client *c);

/*
 * Take the lock on key, waiting for at most timeout_ms milliseconds
 * (LW_WAIT_FOREVER: no limit; 0: one attempt).
 *
 *   lease_ms  0: the default lease, renewed by the watchdog until
 *             lw_unlock() (or until the lock is found lost);
 *             > 0: the lock expires after lease_ms unless extended.
 *   flags     LW_REENTRANT: Redisson RLock format; the same thread (OS
 *             thread id) may take it again, and each lw_lock() needs its
 *             own lw_unlock().  Without it, a plain lock (not reentrant:
 *             taking it twice from one thread waits for yourself).
 *             LW_FENCING: also take a fencing token from the counter
 *             lockwatch_fence:{<key>} atomically with the acquisition and
 *             return it as lw_lock_fence(): the counter's next value, but
 *             at least the server's clock in microseconds, so every token
 *             is greater than every token issued for the key before it,
 *             also across a Redis restart without persistence and a
 *             failover to a lagging replica, as long as the servers' clocks
 *             do not go back across the loss (docs/fencing.md).  Tokens are
 *             not dense: compare them, do not count with them.  Release
 *             never deletes the counter.
 *
 * While waiting, the call sleeps on a pub/sub wake-up sent by the releasing
 * client (liblockwatch and Redisson publish one), re-checking at least
 * every 50..250 ms and when the holder's TTL runs out, so a release by a
 * client that does not publish is still noticed quickly.  A wait survives
 * Redis going away: attempts that fail on the connection are re-tried at
 * the re-check interval until the deadline, and the wake-up subscription is
 * opened again, so the lock is taken as soon as Redis is back and it is
 * free.  A silent Redis (paused, overloaded) holds the call at most one
 * command timeout past timeout_ms: subscribing never runs past the
 * deadline, and no attempt starts after it (a first attempt that used up
 * timeout_ms ends the call).  An error names the call and the key.
 *
 * Returns LW_OK and *out = a new lock object (owned by the caller; give it
 * back with lw_unlock), or LW_TIMEOUT (*out = NULL) when the lock was not
 * free within timeout_ms, or LW_ERR with *err filled (also when the
 * deadline passed while Redis was unreachable, and when the key is of
 * another type than the lock's: a waiter that finds it held with no TTL
 * asks its TYPE once, so a list where a plain lock was meant is an error,
 * not a wait that no release ends).  Each call with valid
 * arguments reports one wait sample (outcome ok, timeout or error).
 */
LW_API lw_status lw_lock(lw_client *c, const char *key, long long lease_ms,
                         long long timeout_ms, int flags, lw_lock_t **out,
                         lw_error *err);

/*
 * One attempt at the lock, without waiting.  As lw_lock() with
 * timeout_ms 0, except that a lock held by someone else returns LW_BUSY.
 */
LW_API lw_status lw_trylock(lw_client *c, const char *key, long long lease_ms,
                            int flags, lw_lock_t **out, lw_error *err);

/*
 * Release the lock and free the lock object, whatever the outcome (lock is
 * invalid afterwards).  Only a lock that is still ours is touched: a plain
 * lock is deleted only if it still holds our token; a reentrant lock's hold
 * count is decremented only if our field is still there (the hash is
 * deleted when the count reaches 0).  Releasing publishes a wake-up for
 * waiters: "0" on lockwatch_lock__channel:{<key>} (plain) or on
 * redisson_lock__channel:{<key>} (reentrant, as Redisson does).
 *
 * Returns LW_OK; LW_LOST when the lock had expired or was taken over (the
 * new holder's lock is left alone); LW_ERR when Redis did not answer (a
 * release that timed out on a paused Redis still runs when it resumes, and
 * so does one made while Redis had not answered an earlier command yet: it
 * is sent behind that command, up to 4 at a time per client;
 * otherwise the lock, no longer renewed, expires after its lease) or the
 * client was freed.  Reports one hold sample.  NULL is a no-op returning
 * LW_OK.
 */
LW_API lw_status lw_unlock(lw_lock_t *lock, lw_error *err);

/*
 * Set the lock's remaining time to lease_ms (> 0) if it is still ours (a
 * reentrant lock's is only raised, never cut: other holds share it).
 * The lock's lease becomes lease_ms; a watchdog-renewed lock stays renewed
 * by the watchdog (every default_lease_ms / 3), each renewal setting the
 * longer of lease_ms and the default lease: a longer lease is kept, a
 * shorter one lasts until the next renewal (it may run out before it when
 * shorter than that period).
 * Returns LW_OK, LW_LOST (not ours any more; the lock is marked lost) or
 * LW_ERR.
 */
LW_API lw_status lw_extend(lw_lock_t *lock, long long lease_ms, lw_error *err);

/* The fencing token taken with LW_FENCING (>= 1; see lw_lock), else 0. */
LW_API long long lw_lock_fence(const lw_lock_t *lock);

/*
 * Nonzero once the lock is known lost: the watchdog found it gone or taken
 * over, or lw_extend() returned LW_LOST.  A lock with an explicit lease is
 * not watched: it may expire without this turning nonzero.  Safe to call
 * from any thread while the lock object is valid.
 */
LW_API int lw_lock_is_lost(const lw_lock_t *lock);

/*
 * The holder id stored in Redis: the lw1 token
 * ("lw1:<host>:<pid>.<nonce>:<thread>:<acquired unix ms>:<16 hex>", the
 * nonce 16 hex digits drawn once per process, again in a forked child)
 * for a plain lock, "<uuid>:<thread>" for a reentrant one.  Owned by the
 * lock object.
 */
LW_API const char *lw_lock_token(const lw_lock_t *lock);

/* The lock's key.  Owned by the lock object. */
LW_API const char *lw_lock_key(const lw_lock_t *lock);

/* Microseconds the lw_lock()/lw_trylock() call waited for this lock (the
 * figure it reported). */
LW_API long long lw_lock_waited_us(const lw_lock_t *lock);

/* This client's UUID (36 lowercase characters).  Owned by the client. */
LW_API const char *lw_client_id(const lw_client *c);

/* Copy the client's counters into *out.  Safe from any thread. */
LW_API void lw_client_stats(const lw_client *c, lw_stats *out);

/* A static, human-readable text for a status: "ok", "timed out waiting
 * for the lock", "lock held by someone else", "lock lost (expired or taken
 * over)", "error" ("unknown status" for any other value).  The lw_error
 * message says more. */
LW_API const char *lw_strerror(lw_status status);

/* The library version, "MAJOR.MINOR.PATCH". */
LW_API const char *lw_version(void);

/* 1 when this liblockwatch has TLS (lw_options.tls), else 0. */
LW_API int lw_tls_supported(void);

#ifdef __cplusplus
}
#endif

#endif /* LOCKWATCH_H */
