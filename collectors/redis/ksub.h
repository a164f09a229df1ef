/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ksub.h - keyspace notifications: the server's setting, the subscriber
 * connection, and the channel names it delivers.
 *
 * Follow mode (collectors/follow/) learns which lock keys changed
 * from Redis' keyspace notifications: a PSUBSCRIBE to
 * __keyspace@<db>__:<pattern> for each of the target's patterns (and the
 * client registry keys) delivers, per write to a matching key, a message
 * on __keyspace@<db>__:<key> whose payload is the event ("set", "hset",
 * "expire", "del", "expired", ...).  What the lock formats' clients do
 * (SET, SET PX, DEL, PEXPIRE, PERSIST, HSET, HINCRBY, HDEL, RENAME, and
 * the same from Lua), and what Redis does to them (expire, evict), is
 * covered by the classes K (keyspace channel), g (generic: del, expire,
 * persist, rename_from/_to), $ (string: set, setrange, ...), h (hash:
 * hset, hincrby, hdel, ...), l (list: the fair-lock queues and signal
 * lists that are helper keys), z (sorted set: redis-semaphore's
 * semaphores, permit sets), x (expired) and e (evicted).  s (sets) and t
 * (streams) are needed too, though no lock format writes them: a scan
 * lists any key under a pattern, so a set or stream written there, or a
 * lock overwritten by SUNIONSTORE, must be announced for the followed
 * view to be the scanned one.  The minimal notify-keyspace-events is
 * "Kg$lshzxet", which is "KA" (A = g$lshzxet).
 *
 * The subscriber is its own connection (a subscribed RESP2 connection
 * runs no other command), opened like any other (conn.h), read with a
 * poll() timeout so its owner can stop it, within limits of its own, as
 * any client may PUBLISH on a keyspace channel: a message of over
 * KSUB_MESSAGE_MAX bytes on the wire or KSUB_OBJECTS_MAX reply objects
 * ends the subscription (the reader never holds more of one), and a key
 * over the owner's cap is handed on without its bytes, so no publisher
 * sizes the agent's memory.  Pub/sub is at-most-once: a
 * lost connection (restart, failover, client-output-buffer-limit pubsub)
 * loses what was in flight, and the caller must scan again; a connection
 * dropped on the way without a close (a proxy, NAT or conntrack entry
 * gone) loses everything from then on, silently, so the owner proves the
 * subscriber with a PING every so often (ksub_ping()).  The agent never
 * changes the server's configuration.
 */
#ifndef LOCKWATCH_KSUB_H
#define LOCKWATCH_KSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <hiredis.h>

#include "conf/config.h"

/* The notify-keyspace-events classes follow mode needs, in the order
 * messages name them. */
#define KSUB_FLAGS_NEEDED "Kg$lshzxet"

/* The subscriber's reply limits: a pmessage is an array of 4 strings (the
 * pattern, at most ~1 KiB, the channel, the event), a confirmation of 3. */
#define KSUB_MESSAGE_MAX   (1u << 20)
#define KSUB_OBJECTS_MAX   16

/* The event classes of a notify-keyspace-events setting, one bit each:
 * bit i is KSUB_CLASSES[i] (g generic, $ string, l list, s set, h hash,
 * z sorted set, x expired, e evicted, t stream). */
#define KSUB_CLASSES "g$lshzxet"
#define KSUB_CLASS(letter) (1u << (unsigned)(strchr(KSUB_CLASSES, (letter)) - KSUB_CLASSES))

/*
 * The class bit (KSUB_CLASS()) of the event a keyspace notification
 * names ("set": '$', "hincrby": 'h', "del": 'g', ...: Redis 7.0's event
 * names), or 0 for a name of no class follow mode knows (a module's).
 * Pure.
 */
unsigned ksub_event_class(const char *event, size_t len);

/* "'$' (string), 'h' (hash)" for the classes set in bits, into buf
 * (NUL-terminated, cut at size). */
void ksub_class_names(unsigned bits, char *buf, size_t size);

/*
 * Do the notify-keyspace-events flags (len bytes, as CONFIG GET returns
 * them) cover KSUB_FLAGS_NEEDED?  When not, missing gets the classes
 * that are not there (e.g. "Kx"), NUL-terminated.  Pure.
 */
bool ksub_flags_cover(const char *flags, size_t len, char *missing, size_t msize);

/*
 * The key of a keyspace channel "__keyspace@<db>__:<key>" (len bytes):
 * 0 with *key pointing into ch; -1 when ch is not a keyspace channel of
 * database db.  Pure.
 */
int ksub_channel_key(const char *ch, size_t len, int db, const char **key, size_t *keylen);

/*
 * CONFIG GET notify-keyspace-events on c: 1 when it covers what follow
 * mode needs, 0 when not (flags holds the server's value, missing what
 * to add), -1 when the server did not say (err: an ACL that denies
 * CONFIG, a managed Redis that renames it, a broken connection; *lost
 * tells the last apart: c must then be dropped).
 */
int ksub_server_flags(redisContext *c, const struct target_conf *node, char *flags,
                      size_t fsize, char *missing, size_t msize, bool *lost, char *err,
                      size_t errlen);

struct ksub;

/*
 * Open a subscriber to node (conn.h's redisconn_open: AUTH, SELECT, the
 * timeouts) and PSUBSCRIBE __keyspace@<db>__:<pattern> for each of the
 * npatterns patterns, waiting for every confirmation; it hands on keys
 * of at most key_max bytes (below KSUB_MESSAGE_MAX to mean anything).
 * NULL with err set: *refused true when the server refused (an error
 * reply to PSUBSCRIBE: err names the ACL additions it needs), false when
 * it may work another time (no connection, a timeout, BUSY, LOADING,
 * TRYAGAIN, MASTERDOWN).
 */
struct ksub *ksub_open(const struct target_conf *node, char *const *patterns,
                       size_t npatterns, size_t key_max, bool *refused, char *err,
                       size_t errlen);

/* One event: the key (keylen bytes) and the event name (evlen bytes),
 * both only valid during the call.  key is NULL when keylen is over the
 * subscriber's key_max: the event is lost (the caller must scan). */
typedef void ksub_event_fn(void *arg, const char *key, size_t keylen, const char *event,
                           size_t evlen);

/*
 * Wait up to timeout_ms for messages and hand each to fn.  0 (including
 * when nothing came), -1 with err set when the connection is gone, -2
 * when a message broke the subscriber's limits (err names the limit);
 * after either it must be closed.  Messages on other channels are
 * ignored, and so are "keymiss" events (class m: the owner's own reads
 * of a key gone would each announce another).
 */
int ksub_read(struct ksub *k, int timeout_ms, ksub_event_fn *fn, void *arg, char *err,
              size_t errlen);

/*
 * Prove the subscriber, from the thread that reads it, every tick: a PING
 * goes when none is unanswered and the last went every_ms ago or more;
 * its answer comes after every notification the server queued before it
 * (ksub_read() takes it).  1 with err set when one has had no answer for
 * the node's command_timeout though messages keep coming (behind: Redis
 * sends faster than the owner takes); -1 with err set when nothing came
 * meanwhile (a connection a proxy, NAT or firewall dropped without
 * closing it delivers nothing, and says nothing), when it is still behind
 * after ten times command_timeout, or when the write failed: it must be
 * closed.  0 otherwise.
 */
int ksub_ping(struct ksub *k, int64_t every_ms, char *err, size_t errlen);

/* When (clock_mono_ms()) the last answered PING went: every notification
 * sent before then has been handed on.  0 before the first answer. */
int64_t ksub_proven_mono(const struct ksub *k);

void ksub_close(struct ksub *k);

#endif
