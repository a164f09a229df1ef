/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client_impl.h - liblockwatch's insides, shared by the client sources and the unit
 * tests.  Never installed: the public API is lockwatch.h alone.
 *
 * Naming: lw_ is public (exported with LW_API), lwc_ is internal and
 * hidden (the library is built with -fvisibility=hidden); the lwc_ prefix
 * also keeps these symbols apart from lockwatchd's core archive, which the
 * unit tests link together with liblockwatch.a.
 *
 * Locking order, where two are held at once: cmd_mu before bg.mu.  No
 * network I/O (other than a non-blocking UDP send) ever happens under
 * bg.mu or pool_mu.
 */
#ifndef LOCKWATCH_CLIENT_IMPL_H
#define LOCKWATCH_CLIENT_IMPL_H

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <hiredis.h>

#include "lockwatch.h"
#include "common/clock.h"
#include "common/prefixname.h"
#include "common/lw1.h"
#include "common/lw1mac.h"

/* --- bounds ------------------------------------------------------------ */

#define LWC_HOST_MAX     LW1_HOST_MAX   /* token host field, bytes */
#define LWC_UUID_LEN     36
#define LWC_TOKEN_MAX    160    /* an lw1 token is at most LW1_TOKEN_LEN_MAX */
#define LWC_RANDOM_HEX   LW1_RANDOM_HEX
#define LWC_DGRAM_MAX    1432   /* one UDP payload (SPEC: keep <= 1432) */
#define LWC_DGRAM_LOOPBACK_MAX 8192 /* one to a loopback agent (line-protocol.md
                                 * "Datagrams"): a batch when every
                                 * destination is on loopback; else a line
                                 * too long for a batch goes alone, that
                                 * long at most, to the loopback ones */
#define LWC_FLUSH_US     100000 /* a buffered sample waits at most this */
#define LWC_DEST_MAX     8      /* LOCKWATCH_SAMPLES destinations */
#define LWC_OWNER_MAX    200    /* bytes of LOCKWATCH_OWNER */
/* "lw1 mac <32 hex> <unix seconds>\n": room kept in a signed datagram */
#define LWC_MAC_LINE_MAX (LW1_MAC_COVER_OFF + LW1_MAC_TIME_DIGITS + 1)
#define LWC_POOL_MAX     4      /* idle pub/sub connections kept per client */
#define LWC_RENEW_BATCH  128    /* renewals pipelined per round trip */
#define LWC_PASSWORD_MAX 1024
#define LWC_LEASE_MIN_MS 30     /* a shorter lease cannot be renewed in time */
#define LWC_LEASE_MAX_MS (1LL << 40)
#define LWC_TIMEOUT_MAX_MS 86400000   /* connect/command timeouts: a day */
#define LWC_LIMBO_MAX    32     /* lost acquires awaiting undo on a new
                                 * connection; more are counted, dropped */
#define LWC_QUEUE_MAX    4      /* releases queued behind a silent Redis */
#define LWC_SYNC_MAX     (16 + 2 * LWC_QUEUE_MAX)   /* replies read to find
                                 * a settle marker */
#define LWC_IDLE_CHECK_US 1000  /* a command connection idle this long is
                                 * checked for a close before it is used */

/* Re-check interval of a waiting lw_lock(): starts here, doubles up to the
 * cap.  A release that publishes wakes the waiter at once; this only bounds
 * how late a silent release (redis-py, redlock, a TTL running out) is seen. */
#define LWC_RECHECK_MIN_US 50000
#define LWC_RECHECK_MAX_US 250000

#define LWC_REGISTRY_PREFIX "lockwatch:client:"
#define LWC_FENCE_PREFIX    "lockwatch_fence"
#define LWC_PLAIN_CHANNEL   "lockwatch_lock__channel"
#define LWC_RLOCK_CHANNEL   "redisson_lock__channel"

/* --- errors and time (client.c) ---------------------------------------- */

/* SIGPIPE to SIG_IGN if it is at its default action (client.c says why). */
void lwc_sigpipe_ignore_default(void);

/* Debug tracing of the lost-reply machinery: built only with -DLWC_TRACE. */
#ifdef LWC_TRACE
#include <stdio.h>
#include <unistd.h>
#define LWC_T(fmt, ...) fprintf(stderr, "lwc %lld pid %ld tid %lld: " fmt "\n", \
                                (long long)clock_mono_us(), (long)getpid(), \
                                lwc_gettid(), __VA_ARGS__)
#else
#define LWC_T(fmt, ...) ((void)0)
#endif

/* Fill *err (may be NULL) and return status. */
lw_status lwc_seterr(lw_error *err, lw_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lwc_clearerr(lw_error *err);
/* Append a warning to w ("; " after an earlier one; cut at LW_ERRSTR_SIZE):
 * a setting lw_connect() ignored, which it leaves in the caller's err on
 * success, since the library never prints. */
void lwc_addwarn(lw_error *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Put "<call> <key>: " in front of err's message (a long key is cut), so a
 * lower layer's message says which call on which key failed. */
void lwc_err_prefix(lw_error *err, const char *call, const char *key,
                    size_t keylen);

/* --- Lua scripts (scripts.c) ------------------------------------------- */

enum lwc_script_id {
    LWC_PLAIN_ACQUIRE_FENCED,
    LWC_PLAIN_RELEASE,
    LWC_PLAIN_EXTEND,
    LWC_RLOCK_ACQUIRE,
    LWC_RLOCK_RELEASE,
    LWC_RLOCK_EXTEND,
    LWC_SETTLE,
    LWC_SCRIPT_COUNT
};

struct lwc_script {
    const char *name;
    const char *src;
};

extern const struct lwc_script lwc_scripts[LWC_SCRIPT_COUNT];

/* --- the client --------------------------------------------------------- */

/* A datagram being filled: '\n'-terminated lines, at most limit bytes
 * (0: LWC_DGRAM_MAX; lwc_batch_room() of the destinations). */
struct lwc_batch {
    char buf[LWC_DGRAM_LOOPBACK_MAX];
    size_t len;
    size_t limit;
    unsigned lines;
};

/* One LOCKWATCH_SAMPLES destination, its own socket (its own family). */
struct lwc_dest {
    int fd;
    bool loopback;                  /* 127.0.0.0/8 or ::1 */
    struct sockaddr_storage addr;
    socklen_t addrlen;
};

struct lwc_report {
    struct lwc_dest dest[LWC_DEST_MAX];
    size_t ndest;                   /* 0: reporting off */
    bool loopback;                  /* a destination is on loopback */
    unsigned char key[LW1_KEY_MAX]; /* LOCKWATCH_KEY_FILE; wiped at close */
    size_t keylen;                  /* 0: datagrams go unsigned */
    char owner[3 * LWC_OWNER_MAX + 24]; /* <process> of owner ids, encoded, and
                                         * ":<pid>" */
    size_t ownerlen;
    struct lwc_batch batch;         /* under bg.mu */
    char sbuf[LWC_DGRAM_LOOPBACK_MAX];  /* a signed datagram, under bg.mu: in
                                     * the client, not on the stack of the
                                     * lock call that fills a batch */
    int64_t flush_us;               /* batch is sent by then (LWC_FLUSH_US after
                                     * its first line); 0 empty */
};

/* The client's background thread: watchdog renewals, registry refresh,
 * report flushing (watchdog.c). */
struct lwc_bg {
    pthread_mutex_t mu;
    pthread_cond_t cond;            /* on CLOCK_MONOTONIC */
    pthread_t thread;
    bool started;
    bool stop;
    struct lw_lock *watched;        /* renewed locks, doubly linked */
    size_t nwatched;
    struct lw_lock *reentrant;      /* live reentrant locks (registry) */
    size_t nreentrant;
    int64_t next_tick_us;           /* 0: no renewal tick armed */
    int64_t settle_us;              /* 0, or when to open the command
                                     * connection to undo the limbo */
    int64_t sleep_until_us;         /* the thread sleeps until then
                                     * (INT64_MAX: until signalled); 0 while
                                     * it is awake and will look again */
    redisContext *redis;            /* the thread's own connection */
    struct lwc_report rep;
};

struct lwc_stats {
    atomic_uint_fast64_t samples_sent, samples_dropped, datagrams_sent;
    atomic_uint_fast64_t wakeups, rechecks, renewals, locks_lost;
    atomic_uint_fast64_t reconnects, lost_replies, orphans_undone,
                         orphans_dropped;
};

/* An acquire whose reply was lost (settle.c): what undoing it needs. */
struct lwc_orphan {
    bool used;
    bool rlock;                     /* reentrant: cut the field's count */
    long long tid;
    char holder[LWC_TOKEN_MAX];
    size_t holderlen;
    char *names;                    /* key '\0' wake channel '\0' (owned) */
    size_t keylen, channellen;
};

struct lw_client {
    /* settings, fixed after lw_connect() */
    char *host;
    int port;
    char *username;
    char *password;
    int db;
    struct timeval connect_tv, command_tv;
    long long default_lease_ms;
    lw_lost_cb on_lost;
    void *on_lost_data;
    /* TLS (tls.c): an SSL_CTX *, NULL without TLS; the name verified */
    void *tls_ctx;
    char *tls_name;
    bool tls_verify;

    /* identity */
    char id[LWC_UUID_LEN + 1];
    char hostname[LWC_HOST_MAX + 1];
    long pid;
    char registry_key[sizeof(LWC_REGISTRY_PREFIX) + LWC_UUID_LEN + 2];

    /* script SHA1s from SCRIPT LOAD; "" means use EVAL */
    char sha[LWC_SCRIPT_COUNT][41];

    /* the command connection, shared by all threads */
    pthread_mutex_t cmd_mu;
    redisContext *cmd;

    /* lost replies on it (settle.c), under cmd_mu: a settle script was
     * sent after a command that timed out, and every reply up to the one
     * that echoes cmd_marker is stale */
    int64_t cmd_used_us;            /* when the last command on it ended */
    bool cmd_sync;
    int cmd_queued;                 /* releases queued behind the settle */
    char cmd_marker[sizeof("lwc-settle:") + LWC_UUID_LEN + 1 + 20];
    size_t cmd_markerlen;
    uint64_t marker_seq;
    struct lwc_orphan lost;         /* the acquire just failed, if any */
    struct lwc_orphan settling;     /* the one the pending settle undoes */
    struct lwc_orphan limbo[LWC_LIMBO_MAX]; /* to undo on a new connection */

    /* idle pub/sub connections for waiters (wait.c) */
    pthread_mutex_t pool_mu;
    redisContext *pool[LWC_POOL_MAX];
    size_t npool;

    struct lwc_bg bg;
    struct lwc_stats stats;

    bool sync_ready;                /* the mutexes and cond are initialised */
    atomic_int refs;                /* caller + one per live lock object */
    atomic_bool closed;             /* lw_client_free() was called */
};

void lwc_client_unref(lw_client *c);

/* --- lock kinds (plain.c, reentrant.c) ---------------------------------- */

struct lw_lock;

/*
 * One row per lock format.  attempt() makes one try at the lock on ctx (the
 * command connection, held by the caller): LW_OK (lock filled in), LW_BUSY
 * (with want_pttl, *pttl = the holder's PTTL in ms, -1 none, -2 gone), or
 * LW_ERR.  release() returns LW_OK, LW_LOST or LW_ERR.  The extend script
 * takes KEYS[1] = key, ARGV[1] = holder id, ARGV[2] = lease ms and returns
 * 1 (extended) or 0 (not ours); the watchdog uses it too.
 */
struct lwc_kind {
    const char *name;
    const char *redis_type;         /* what TYPE says of its key: "string" */
    const char *channel_prefix;
    enum lwc_script_id extend_script;
    lw_status (*attempt)(lw_client *c, redisContext *ctx, struct lw_lock *lk,
                         bool want_pttl, long long *pttl, lw_error *err);
    lw_status (*release)(lw_client *c, redisContext *ctx, struct lw_lock *lk,
                         lw_error *err);
};

extern const struct lwc_kind lwc_kind_plain;
extern const struct lwc_kind lwc_kind_reentrant;

struct lw_lock {
    lw_client *client;
    const char *call;               /* "lw_lock" or "lw_trylock": errors
                                     * name it */
    const struct lwc_kind *kind;
    bool fencing;
    bool watchdog;                  /* renewed by the watchdog */
    long long lease_ms;             /* current lease */
    long long fence;                /* 0: none */
    long long tid;                  /* the acquiring thread */
    long holds;                     /* reentrant hold count after acquiring */
    int64_t acquired_mono_us;
    int64_t acquired_unix_ms;
    int64_t waited_us;
    int64_t renewed_mono_us;        /* last successful renewal or
                                     * lw_extend (under bg.mu) */
    atomic_int lost;
    atomic_int refs;                /* the caller + the watchdog while busy */

    /* under client->bg.mu */
    struct lw_lock *wprev, *wnext;  /* watched list */
    bool watched;
    struct lw_lock *rprev, *rnext;  /* live reentrant list */
    bool registered;

    char holder[LWC_TOKEN_MAX];     /* lw1 token or "<uuid>:<tid>" */
    size_t holderlen;
    const char *key;                /* these three point into names[] */
    size_t keylen;
    const char *channel;
    size_t channellen;
    const char *fence_key;
    size_t fence_keylen;
    char names[];
};

/* How long past lk's lease end now_us is (0 before it): lease end is its
 * last renewal plus its lease (lock.c). */
int64_t lwc_lease_overrun(lw_client *c, const struct lw_lock *lk, int64_t now_us);

/* One attempt on the command connection (lock.c).  On LW_ERR, *transient
 * (when not NULL) says whether it was the connection (Redis down, paused,
 * restarting), so a waiter may keep trying. */
lw_status lwc_attempt(lw_client *c, struct lw_lock *lk, bool want_pttl,
                      long long *pttl, bool *transient, lw_error *err);
/* The {ok, n, fence} reply of an acquire script: LW_OK (holds and fence
 * set), LW_BUSY (*pttl = n when pttl is not NULL) or LW_ERR. */
lw_status lwc_acquire_result(const redisReply *r, struct lw_lock *lk,
                             long long *pttl, lw_error *err);
/* A waiter that finds the key held with no TTL asks once whether it is a
 * key of this kind at all (lock.c): LW_OK when it is (or is gone), LW_ERR
 * naming the type when it is another (a list where a plain lock was
 * meant: no holder will ever release it), or on a connection error
 * (*transient as lwc_attempt says it). */
lw_status lwc_check_type(lw_client *c, struct lw_lock *lk, bool *transient, lw_error *err);
void lwc_lock_unref(struct lw_lock *lk);
void lwc_mark_lost(struct lw_lock *lk);

/* --- Redis connections (conn.c) ----------------------------------------- */

/* A new connection with AUTH and SELECT done, or NULL with *err.  Its
 * connect and command timeouts are the client's, cut to what is left
 * until deadline_us (monotonic; INT64_MAX: not cut): a waiter's own
 * connection never holds its lw_lock() past the deadline. */
redisContext *lwc_redis_connect(const lw_client *c, const char *what,
                                int64_t deadline_us, lw_error *err);
/* tv, cut to what is left until deadline_us (INT64_MAX: tv), >= 1 ms. */
struct timeval lwc_tv_within(struct timeval tv, int64_t deadline_us);
/* The command connection, locked; connects if needed (loading the scripts
 * and undoing lost acquires), drops one the server closed, and first reads
 * the stale replies of a command that timed out.  NULL with *err (then
 * unlocked). */
redisContext *lwc_cmd_get(lw_client *c, lw_error *err);
/* Unlock it.  After a command timeout the connection is kept and a settle
 * sent on it (settle.c); a broken one is dropped (reconnect next time). */
void lwc_cmd_put(lw_client *c, redisContext *ctx);
/* A reply, or NULL with *err (the connection is then unusable). */
/* The next reply on ctx, as redisGetReply(), but the connection's timeout
 * bounds the whole reply, not each read (conn.c). */
int lwc_get_reply(redisContext *ctx, void **out);
redisReply *lwc_command(redisContext *ctx, int argc, const char **argv,
                        const size_t *lens, const char *what, lw_error *err);
/* *err for a call on ctx that failed: "<what>: " and the timeout that
 * passed (named as such) or the connection's error.  LW_ERR. */
lw_status lwc_conn_error(const redisContext *ctx, const char *what, lw_error *err);
/* Run a script by EVALSHA, falling back to EVAL on NOSCRIPT. */
redisReply *lwc_eval(lw_client *c, redisContext *ctx, enum lwc_script_id id,
                     int nkeys, int nargs, const char **kv, const size_t *kvlen,
                     lw_error *err);
/* Append the same to ctx's output buffer (for pipelines).  0 or -1. */
int lwc_eval_append(lw_client *c, redisContext *ctx, enum lwc_script_id id,
                    int nkeys, int nargs, const char **kv, const size_t *kvlen);
/* SCRIPT LOAD every script; a script that fails to load keeps sha ""
 * (EVAL is used).  -1 with *err when the connection broke or the server
 * wants a password. */
int lwc_scripts_load(lw_client *c, redisContext *ctx, lw_error *err);
/* The same on a new connection after lw_connect(): the SHA1s are known
 * (a script's SHA1 is its source's), so only the server's cache is
 * filled, and nothing other threads read is written.  0 or -1. */
int lwc_scripts_reload(lw_client *c, redisContext *ctx, lw_error *err);

/* --- lost replies (settle.c) -------------------------------------------- */

/* With cmd_mu held: the acquire lk just sent got no reply. */
void lwc_orphan_note(lw_client *c, const struct lw_lock *lk);
/* With cmd_mu held, c->cmd in error state: keep it (a timeout: send a
 * settle) or drop it (broken: what needs undoing goes to the limbo). */
void lwc_settle_after_error(lw_client *c);
/* Nothing held: when the command connection waits for a silent Redis (a
 * settle pending), append lk's release behind it, so Redis runs it in order
 * when it resumes (at most LWC_QUEUE_MAX at a time).  true when queued. */
bool lwc_release_queue(lw_client *c, const struct lw_lock *lk);
/* With cmd_mu held and c->cmd set: read the stale replies up to the
 * pending settle's, or drop a connection the server closed.  0: in step,
 * or c->cmd dropped (connect afresh); -1 (with *err): Redis still silent. */
int lwc_settle_sync(lw_client *c, lw_error *err);
/* With cmd_mu held, on a new c->cmd: undo what the limbo holds. */
void lwc_limbo_replay(lw_client *c);
/* From the background thread, nothing held: connect the command connection
 * if the limbo holds something, so it is undone without waiting for the
 * program's next call; asks for another try while some is left. */
void lwc_limbo_retry(lw_client *c);
/* Free what the orphan slots own (client teardown). */
void lwc_orphans_free(lw_client *c);
bool lwc_reply_is_noscript(const redisReply *r);
/* Copy an error reply's text into *err as LW_ERR, naming what. */
lw_status lwc_reply_error(const redisReply *r, const char *what, lw_error *err);

/* --- identity and names (token.c) --------------------------------------- */

struct lwc_token {
    char host[LWC_HOST_MAX + 1];
    long pid;
    bool has_nonce;         /* "<pid>.<nonce>"; false only for older tokens read */
    uint64_t nonce;         /* the process's, lwc_process_nonce() */
    long long thread;
    int64_t acquired_ms;
    uint64_t random;
};

int lwc_random(void *buf, size_t n);
/* This process's nonce: 64 random bits drawn once per process start (again
 * in a forked child), which make a token's party one process's though a
 * restarted container's pid and thread ids recur.  0, or -1 when no random
 * bytes could be read (the next call tries again). */
int lwc_process_nonce(uint64_t *out);
void lwc_uuid4_format(char out[LWC_UUID_LEN + 1], const unsigned char raw[16]);
int lwc_uuid4(char out[LWC_UUID_LEN + 1]);
/* Copy in to out as [A-Za-z0-9._-]{1,63}: other bytes become '-'; empty
 * becomes "localhost".  out has room for LWC_HOST_MAX + 1 bytes. */
size_t lwc_host_sanitize(char out[LWC_HOST_MAX + 1], const char *in);
void lwc_hostname(char out[LWC_HOST_MAX + 1]);
long long lwc_gettid(void);
/* Decimal digits of v into out (no NUL); returns the count (<= 20). */
size_t lwc_fmt_u64(char *out, uint64_t v);
/* Format an lw1 token; its length, or -1 when a field is out of range or
 * cap is too small.  out is NUL-terminated. */
int lwc_token_format(char *out, size_t cap, const struct lwc_token *t);
/* Parse one (strict: exactly the grammar lwc_token_format writes). */
int lwc_token_parse(const char *s, size_t len, struct lwc_token *t);

/* Companion names (channels, fence counters, the registry key):
 * prefix_name() of common/prefixname.h, Redisson's prefixName(). */

/* --- options (client.c) -------------------------------------------------- */

lw_status lwc_options_check(const lw_options *o, lw_error *err);

/* tls.c: build c's TLS context from o (nothing when o->tls is 0; LW_ERR
 * with the reason in a build without TLS); run the handshake on a freshly
 * connected ctx (nothing without TLS); free the context. */
lw_status lwc_tls_setup(lw_client *c, const lw_options *o, lw_error *err);
lw_status lwc_tls_connect(const lw_client *c, redisContext *ctx, const char *what,
                          lw_error *err);
void lwc_tls_free(lw_client *c);

/* --- reporting (report.c) ------------------------------------------------ */

/* Percent-encode key (bytes < 0x21, > 0x7e and '%' as %XX); writes at most
 * cap bytes (no NUL) and returns the length it needs. */
size_t lwc_key_encode(char *out, size_t cap, const char *key, size_t keylen);
/* One '\n'-terminated line; its length, or 0 when it exceeds cap. */
size_t lwc_line_wait(char *out, size_t cap, const char *key, size_t keylen,
                     uint64_t us, lw_status outcome);
size_t lwc_line_hold(char *out, size_t cap, const char *key, size_t keylen,
                     uint64_t us);
/* Bytes of lines a batch to rep's destinations holds (docs/reporters.md
 * "Batching"): a datagram of LWC_DGRAM_MAX, or of LWC_DGRAM_LOOPBACK_MAX
 * when every destination is on loopback, less the mac line when signed. */
size_t lwc_batch_room(const struct lwc_report *rep);
/* 0 appended; 1 does not fit now (send, reset, retry); -1 never fits. */
int lwc_batch_append(struct lwc_batch *b, const char *line, size_t len);
void lwc_batch_reset(struct lwc_batch *b);
/* The entry at *p of a comma-separated list (agent, LOCKWATCH_SAMPLES) as
 * *s, *len, blanks around it trimmed (*len 0: an empty entry); *p moves past
 * its comma, to NULL after the last.  false when *p is NULL. */
bool lwc_list_next(const char **p, const char **s, size_t *len);
/* The destination of len bytes at s (a list's entry) as host and port, or
 * LW_ERR with err naming it and from (where the list came from). */
lw_status lwc_dest_parse(const char *s, size_t len, const char *from, char *host,
                         size_t hostcap, int *port, lw_error *err);
/* "host:port" or "[v6]:port" -> host (NUL-terminated) and port; 0 or -1. */
int lwc_parse_hostport(const char *s, char *host, size_t hostcap, int *port);

/* Open reporting; a setting it ignores (LOCKWATCH_OWNER too long) is a
 * warning in warn, what it cannot work with an error in err. */
lw_status lwc_report_open(lw_client *c, const char *agent, bool on,
                          lw_error *err, lw_error *warn);
void lwc_report_close(lw_client *c);
void lwc_report_wait(lw_client *c, const char *key, size_t keylen, int64_t us,
                     lw_status outcome);
/* The hold of lk, released (or found lost) now: the 6-field line. */
void lwc_report_hold(lw_client *c, const struct lw_lock *lk, int64_t us);
/* lk's wait begins (start) or ends with outcome: "lw1 waiting" lines. */
void lwc_report_waiting(lw_client *c, const struct lw_lock *lk, bool start,
                        lw_status outcome);
/* The end of a wait that sent its start: its waiting end and its wait as
 * the one 7-field line "lw1 wait <key> <us> <outcome> <owner> <holder>". */
void lwc_report_wait_end(lw_client *c, const struct lw_lock *lk, int64_t us,
                         lw_status outcome);
/* lk found lost: renewal (a renewal/extension said not ours) or expired
 * (lease ran out while held); overrun_us < 0: not known. */
void lwc_report_lost(lw_client *c, const struct lw_lock *lk, bool renewal,
                     int64_t held_us, int64_t overrun_us);
/* The sample lines with an owner (unit-tested): owner is the encoded
 * owner field, holder raw bytes (holderlen 0: "-").  Length, or 0 when the
 * line exceeds cap. */
size_t lwc_line_hold_owned(char *out, size_t cap, const char *key, size_t keylen,
                           uint64_t us, const char *owner, size_t ownerlen,
                           const char *holder, size_t holderlen);
size_t lwc_line_wait_owned(char *out, size_t cap, const char *key, size_t keylen,
                           uint64_t us, lw_status outcome, const char *owner,
                           size_t ownerlen, const char *holder, size_t holderlen);
size_t lwc_line_waiting(char *out, size_t cap, const char *key, size_t keylen,
                        const char *owner, size_t ownerlen, const char *holder,
                        size_t holderlen, bool start, lw_status outcome);
size_t lwc_line_lost(char *out, size_t cap, const char *key, size_t keylen,
                     const char *owner, size_t ownerlen, const char *holder,
                     size_t holderlen, uint64_t held_us, int64_t overrun_us, bool renewal);
/* Put the mac line for the batch body at unix time now_s in front of it,
 * into out (room cap); the datagram's length, or 0. */
size_t lwc_sign(const unsigned char *key, size_t keylen, const char *body, size_t len,
                int64_t now_s, char *out, size_t cap);
/* Send the batch now; called with bg.mu held. */
void lwc_report_flush_locked(lw_client *c);

/* --- background thread (watchdog.c) ------------------------------------- */

int lwc_bg_init(lw_client *c);
void lwc_bg_destroy(lw_client *c);
lw_status lwc_bg_start(lw_client *c, lw_error *err);
void lwc_bg_stop(lw_client *c);
void lwc_bg_track(lw_client *c, struct lw_lock *lk);
void lwc_bg_untrack(lw_client *c, struct lw_lock *lk);
/* Stop renewing lk (it stays in the registry list). */
void lwc_bg_unwatch(lw_client *c, struct lw_lock *lk);
/* With bg.mu held: is another live reentrant lock held by the same thread
 * on the same key? */
bool lwc_bg_same_hold_locked(lw_client *c, const struct lw_lock *lk);
/* With bg.mu held: make sure the thread wakes by deadline_us. */
void lwc_bg_arm_locked(lw_client *c, int64_t deadline_us);

/* --- waiting (wait.c) ----------------------------------------------------- */

/* Retry lk until it is ours or deadline_us (monotonic, clock_deadline_us();
 * INT64_MAX: never) passes, sleeping on pub/sub wake-ups in between.
 * LW_OK, LW_TIMEOUT or LW_ERR. */
lw_status lwc_wait_acquire(lw_client *c, struct lw_lock *lk, int64_t deadline_us,
                           lw_error *err);
void lwc_pool_close(lw_client *c);

#endif
