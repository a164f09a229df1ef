/*
 * redisconn.h - open a connection to a configured Redis target.
 *
 * The scanner, lockctl and the agent's release endpoint all connect the
 * same way: TCP connect within connect_timeout, every command within
 * command_timeout, AUTH with the target's user and password (read from
 * password_file; never from the URL or argv), SELECT of the URL's
 * database.  Error texts name what failed and the address, and never
 * contain the password, e.g.
 *     connect to 127.0.0.1:6379: Connection refused
 *     AUTH on 127.0.0.1:6379 refused: WRONGPASS invalid username-password pair
 *     EVALSHA on 127.0.0.1:6379: timed out after 2000 ms (command_timeout)
 */
#ifndef LOCKWATCH_REDISCONN_H
#define LOCKWATCH_REDISCONN_H

#include <stddef.h>
#include <hiredis.h>

#include "conf/config.h"

/*
 * Connect to t's host and port, set the command timeout, AUTH, SELECT,
 * and CLIENT NO-TOUCH ON where the server knows it (7.2+; ignored before).
 * Returns a context the caller frees with redisFree(), or NULL with err
 * set.  mode = sentinel connects to the primary the sentinels name now
 * (collectors/redis/sentinel.h); mode = cluster connects to t's address, one
 * node (cluster_open_for_key() in collectors/redis/cluster.h finds a key's).
 * Thread-safe; err may be NULL.
 */
redisContext *redisconn_open(const struct target_conf *t, char *err, size_t errlen);

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
