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

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <hiredis.h>
#include <stdbool.h>

#include "conf/config.h"

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

#endif
