/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.h - open a connection to one Redis node of a configured target.
 *
 * The scanner, lockctl and the agent's release endpoint all connect to a
 * node the same way: TCP connect within connect_timeout, every command
 * within command_timeout, AUTH with the target's user and password (read
 * from password_file; never from the URL or argv), SELECT of the URL's
 * database, and for a rediss:// URL the TLS handshake first (tls.h: the
 * certificate checked against tls_server_name, else the URL's host).
 * This file knows nothing of modes: which node a sentinel or
 * cluster target means is target.h's question, asked above this file.
 * Error texts name what failed and the address, and never contain the
 * password, e.g.
 *     connect to 127.0.0.1:6379: Connection refused
 *     AUTH on 127.0.0.1:6379 refused: WRONGPASS invalid username-password pair
 *     EVALSHA on 127.0.0.1:6379: timed out after 2000 ms (command_timeout)
 */
#ifndef LOCKWATCH_REDISCONN_H
#define LOCKWATCH_REDISCONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <hiredis.h>
#include <stdbool.h>

#include "conf/config.h"

struct cluster_node;           /* cluster.h */

/*
 * Connect to t's host and port, whatever t's mode, set the command
 * timeout, AUTH, SELECT, and CLIENT NO-TOUCH ON where the server knows it
 * (7.2+; ignored before).  Returns a context the caller frees with
 * redisFree(), or NULL with err set.  To open a sentinel or cluster
 * target by what its mode means, use target_open() (target.h).
 * Thread-safe; err may be NULL.
 */
redisContext *redisconn_open(const struct target_conf *t, char *err, size_t errlen);

/*
 * *out = a copy of t aimed at the one node host:port, to open with
 * redisconn_open() and to name in messages (shallow: strings are shared
 * with t, which must outlive it).  The mode is kept: it says what the
 * node belongs to (a cluster node still answers with redirections and
 * keeps one script's keys in one slot), and opening a node never resolves
 * anything again.
 */
void redisconn_node(const struct target_conf *t, const char *host, int port,
                    struct target_conf *out);

/*
 * Does the node run an LFU maxmemory-policy, under which OBJECT IDLETIME
 * is an error (so a reader must not ask for it)?  One INFO memory
 * (maxmemory_policy); 1 LFU, 0 not or unknown (INFO refused by an ACL:
 * the caller asks for IDLETIME and takes an error reply as "unknown"),
 * -1 when the connection failed.
 */
int redisconn_lfu(redisContext *c);

/* The same for an INFO memory reply read some other way (a pipeline): 1
 * LFU, 0 not or unknown (an error reply). */
int redisconn_lfu_reply(const redisReply *rep);

/* Is an OBJECT IDLETIME error reply (len bytes at str) the one an LFU
 * policy gives ("...LFU maxmemory policy..."): stop asking. */
bool redisconn_lfu_error(const char *str, size_t len);

/* ms milliseconds as the struct timeval hiredis' timeouts take. */
struct timeval redisconn_tv(int64_t ms);

/*
 * Describe why a command named what failed on c (redisCommand returned
 * NULL, or redisGetReply failed): a command timeout says so with the
 * configured value, anything else gives hiredis' text.
 */
void redisconn_error(const redisContext *c, const struct target_conf *t,
                     const char *what, char *err, size_t errlen);

/*
 * Run one command (binary-safe argv).  Returns the reply, which the caller
 * frees; NULL with err set when the connection failed (then c must be
 * dropped: its state is unknown).  An error reply is returned as is.
 */
redisReply *redisconn_command(redisContext *c, const struct target_conf *t,
                              const char *what, int argc, const char **argv,
                              const size_t *argvlen, char *err, size_t errlen);

/*
 * Reply limits: what replies may make the process hold, whoever sends
 * them.  A reply of more than REDISCONN_REPLY_BYTES_MAX bytes on the
 * wire, or that makes more than REDISCONN_REPLY_OBJECTS_MAX reply objects
 * (array elements, strings, integers; an array header announcing more is
 * refused before anything is allocated for it), fails the read with a
 * message naming the limit.  And all the replies being read at once, on
 * every thread, share REDISCONN_BUDGET_BYTES, each charged its bytes on
 * the wire and REDISCONN_OBJECT_COST per object (an object costs about
 * that whatever its size on the wire: a 4-byte ":1\r\n" too): a read
 * that would go past it fails naming the budget.  So several hostile
 * targets together cannot take the agent past ~50 MiB of replies in the
 * making, while one legitimate large reply (the largest is a SCAN page:
 * scan_count keys, e.g. 600 keys of 16 KiB) still fits.
 */
#define REDISCONN_REPLY_BYTES_MAX   (32u << 20)
#define REDISCONN_REPLY_OBJECTS_MAX (256u << 10)
#define REDISCONN_BUDGET_BYTES      (48u << 20)
#define REDISCONN_OBJECT_COST       64u

/*
 * A scope: the one deadline every read of this thread keeps to while it
 * is entered (a scan's scan_timeout, lockctl's --timeout, a release's
 * deadline), the command timeout between bytes, and a stop flag seen
 * within REDISCONN_STOP_TICK_MS.  It is per thread because everything
 * below a scan (the stream, cluster discovery, sentinel questions, the
 * registry look-up) reads through redisconn_get_reply() without knowing
 * whose work it is; a cluster shard's thread enters its run's scope.
 * Outside any scope a read waits as hiredis does (command_timeout per
 * read), still within the reply limits.
 */
#define REDISCONN_STOP_TICK_MS 200

/*
 * The nodes found silent: a scope may keep a set of the nodes that let a
 * whole wait go by without a byte (a read past idle_ms, or a TCP connect
 * past connect_timeout).  While a node is in it, opening it again
 * (redisconn_open()) fails at once, naming that wait: so one operation -
 * a scan's pass with its retry, the follow-mode check before it - waits
 * for a stopped or cut-off node once, not once per reconnect, sentinel
 * round or retry, and a view read from it is failed within scan_interval
 * + command_timeout of its last good read (README "The last proof").
 * Connections already open are left to their own reads (one that answers
 * is its own proof), and other nodes are still asked: a failover's new
 * primary is found in the same pass.  A reader whose silence says
 * nothing of the node's other connections (a subscriber, which a
 * middlebox may drop alone) reads in a scope without the set.  An entry
 * holds keep_ms (the scanner's: scan_interval + command_timeout, the time a
 * view is vouched for: a second wait would outlast it), and the owner
 * turns the set at the end of each pass and forgets the older turn's
 * entries at the start of the next: the reads between two passes (follow
 * mode's check, the audit stream's tail) skip what the pass before found
 * silent, and the pass after skips only what those reads found silent,
 * asking every other node again.
 * Shared by a cluster pass's threads: it takes its own mutex.
 */
#define REDISCONN_SILENT_MAX 16

struct redisconn_silent {
    pthread_mutex_t mu;
    int64_t keep_ms;            /* an entry holds this long (0: until cleared) */
    unsigned turn;              /* redisconn_silent_turn() calls so far */
    size_t n;
    struct {
        char host[256];
        int port;
        int64_t since_mono;     /* when the wait that found it silent ended */
        int64_t waited_ms;      /* how long that wait was */
        unsigned turn;          /* the set's turn when it was found */
    } node[REDISCONN_SILENT_MAX];   /* beyond: not kept (each waits again) */
};

void redisconn_silent_init(struct redisconn_silent *s);
void redisconn_silent_clear(struct redisconn_silent *s);
/* A pass is over: the entries so far are of the turn before. */
void redisconn_silent_turn(struct redisconn_silent *s);
/* A pass begins: forget the entries of the turns before the last. */
void redisconn_silent_forget(struct redisconn_silent *s);
void redisconn_silent_destroy(struct redisconn_silent *s);

/* Is host:port in the silent set of this thread's scope? */
bool redisconn_is_silent(const char *host, int port);

struct redisconn_scope {
    int64_t deadline_ms;        /* monotonic (clock_deadline()); INT64_MAX: none */
    int64_t idle_ms;            /* the longest wait for the next byte (command_timeout) */
    const atomic_int *stop;     /* non-zero: give up; NULL: never asked */
    char what[80];              /* names the deadline in the error, e.g.
                                 * "scan_timeout (60000 ms)" */
    struct redisconn_silent *silent;    /* the nodes found silent; NULL: none kept */
    /* A cluster's nodes known to be the target's (the agent's discovery):
     * target_open() discovers through them as cluster_discover()'s hints,
     * so a URL's node now in another cluster is not taken for it.  NULL:
     * none known (the URL's node answers alone).  known_check: they were
     * told by another process (lockctl's agent, over HTTP), which may not
     * choose where to connect: the URL's node answers alone, and a cluster
     * that is not theirs (cluster_kin()) is an error. */
    const struct cluster_node *known;
    size_t nknown;
    bool known_check;
};

/* Enter scope s for this thread (s must outlive it); returns the scope
 * it replaces, to give back to redisconn_scope_leave(). */
const struct redisconn_scope *redisconn_scope_enter(const struct redisconn_scope *s);
void redisconn_scope_leave(const struct redisconn_scope *prev);
/* The cluster nodes this thread's scope knows (*n of them), or NULL;
 * *check: only to check the URL's answer against (known_check). */
const struct cluster_node *redisconn_scope_known(size_t *n, bool *check);

/*
 * The next reply on c (after redisAppendCommand*()), as redisGetReply()
 * but within this thread's scope and the reply limits: 0 with *rep set,
 * or -1 with c->err and c->errstr saying why (the scope's deadline, a
 * stop, a limit, or hiredis' own error; a silent server reads as
 * hiredis' EAGAIN, which redisconn_error() words as command_timeout).
 * After -1 the connection is mid-reply: drop it.  Costs nothing while
 * replies are already buffered; a wait adds one poll() per read.
 */
int redisconn_get_reply(redisContext *c, redisReply **rep);

/* c's error is a timeout: no byte came, or none could be written, within
 * the socket's timeout (hiredis says EAGAIN). */
bool redisconn_timed_out(const redisContext *c);

/*
 * A connection kept between uses that its peer closed while it waited:
 * the server's idle timeout (CONFIG SET timeout), a proxy's or load
 * balancer's, or an operator's CLIENT KILL.  The next command on it fails
 * at once, on the error that says so; that is no outage, and the caller
 * opens the node again and sends the command once more (a server really
 * down then refuses the connect, as fast as before).  The reasons are the
 * reason label of lockwatch_reconnects_total, a bounded set:
 *
 *   eof          the peer closed it (a FIN: "Server closed the connection")
 *   reset        ECONNRESET: it was gone when the command came
 *   broken_pipe  EPIPE: the write found it gone
 *
 * A timeout, a refusal, a limit or any other error is none of them: the
 * caller fails as it did.
 */
#define REDISCONN_CLOSED_REASONS(X)                                         \
    X(EOF, "eof")                                                           \
    X(RESET, "reset")                                                       \
    X(PIPE, "broken_pipe")

enum redisconn_closed {
#define X(id, name) REDISCONN_CLOSED_##id,
    REDISCONN_CLOSED_REASONS(X)
#undef X
    REDISCONN_CLOSED_COUNT
};

/* The label of reason r ("eof", ...). */
const char *redisconn_closed_name(enum redisconn_closed r);

/* Does c's error say the peer closed it (above)?  true with *why set. */
bool redisconn_closed(const redisContext *c, enum redisconn_closed *why);

/*
 * A connection whose replies come unasked (follow mode's subscriber: a
 * subscribed connection is sent messages, never answers) reads with this
 * rather than with hiredis' own loop, within limits of its caller's:
 * one read of what the socket has (as redisBufferRead(); with read
 * false, none), then each reply that completes to fn.  A reply still
 * incomplete after max_bytes on the wire (so the reader never holds
 * more of one than that and one 16 KiB read), or that makes more than
 * max_objects reply objects (an array header announcing more is refused
 * before anything is allocated for it; hiredis 1.x's maxelements is set
 * to the same), and replies that would go past the shared
 * REDISCONN_BUDGET_BYTES, fail the read with a message naming the limit
 * in c->errstr: -2.  -1 when the connection failed (hiredis' text), 0
 * otherwise.  After -1 or -2, drop c.  The reader gives back its unused
 * buffer once it is empty (maxbuf).
 */
typedef void redisconn_push_fn(void *arg, const redisReply *rep);
int redisconn_read_pushed(redisContext *c, bool read, size_t max_bytes, size_t max_objects,
                          redisconn_push_fn *fn, void *arg);

/* Install the reply-object guard on c (redisconn_open() does). */
void redisconn_guard(redisContext *c);

#endif
