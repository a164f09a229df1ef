/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waitstate.h - the waiting table kept across an agent restart
 * ([samples] state_file; docs/deadlocks.md "Across a restart").
 *
 * Owners caught in a deadlock send nothing more, so a table forgotten at a
 * restart would never learn the deadlock again.  The agent writes the
 * table to a file every WAITSTATE_SAVE_MS (when it changed; else it only
 * touches the file) and when it stops, and reads it back when it starts,
 * unless the file was last current more than WAITSTATE_MAX_DOWN_MS ago:
 * the lines sent while the agent was down are lost, and a table older
 * than that may hold waits and holdings that ended meanwhile (a wait
 * given up, its owner's end line lost, can close a false cycle with a
 * later holder of its key; the shorter the time down, the less likely).
 *
 * The file is text, one header line and one line per pair, least recently
 * updated first, each field percent-encoded as the line protocol's:
 *
 *   lockwatch-waiting 1 <unix-ms written>
 *   <age-ms> lw1 waiting <key> <owner> <holder|-> start|ok
 *
 * the part after the age being a `waiting` line of docs/line-protocol.md
 * (samples_parse_line() reads it back).  A pair's age is how long before
 * the write its latest line came; read back, the time the agent was down
 * is added, so "held since" and the graph's vouching keep their times.
 * Tombstones and source numbers are not kept: restored pairs have no
 * source (they are the first a full table evicts).
 *
 * Pure code but for waitstate_save_file() and waitstate_load_file();
 * the caller holds whatever lock guards the table.
 */
#ifndef LOCKWATCH_WAITSTATE_H
#define LOCKWATCH_WAITSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/waits/waiting.h"
#include "common/strbuf.h"

#define WAITSTATE_MAGIC "lockwatch-waiting "   /* how the file starts, any version */
#define WAITSTATE_SAVE_MS 10000             /* how often the agent writes it */
#define WAITSTATE_MAX_DOWN_MS 60000         /* an older file is not read back */
#define WAITSTATE_FILE_MAX (32u << 20)      /* bytes: WAITING_MAX of the longest pairs */

/* Append the header and a line per pair of t to sb; mono_ms and wall_ms
 * are now on the monotonic and the Unix clock. */
void waitstate_render(const struct waiting_table *t, struct strbuf *sb, int64_t mono_ms,
                      int64_t wall_ms);

struct waitstate_read {
    size_t restored;            /* pairs set */
    size_t unwatched;           /* pairs left out: keep() said no */
    size_t skipped;             /* lines that did not parse or set no pair */
    int64_t down_ms;            /* from the write to now, on the Unix clock */
};

/* Whether a pair of this key is read back (NULL: every pair). */
typedef bool (*waitstate_keep_fn)(const char *key, size_t len, void *arg);

/*
 * Restore the pairs of text (len bytes, modified in place) into t, their
 * times moved to the monotonic clock of mono_ms by the time since the
 * write (wall_ms less the header's), those of keys keep() takes.  0, or
 * -1 with err set when the whole text is refused: not such a file,
 * another version, current (written, or touched at touched_ms) more than
 * max_down_ms ago, or written more than a minute in the future (the
 * clock stepped).  A bad pair line is skipped
 * and counted.
 */
int waitstate_restore(struct waiting_table *t, char *text, size_t len, int64_t mono_ms,
                      int64_t wall_ms, int64_t touched_ms, int64_t max_down_ms,
                      waitstate_keep_fn keep, void *arg, struct waitstate_read *r,
                      char *err, size_t errlen);

/* The file touched, not written again: its table has not changed since
 * the last write, and its modification time says it is still current
 * (waitstate_load_file's mtime_ms, which a read takes as the time it was
 * written when later than the header's).  0, or -1 with err. */
int waitstate_touch_file(const char *path, char *err, size_t errlen);

/* Write buf to path whole or not at all: a temporary file beside it
 * (mode 0600), synced, renamed over it.  0, or -1 with err. */
int waitstate_save_file(const char *path, const char *buf, size_t len, char *err,
                        size_t errlen);

/* The file's bytes (NUL-terminated; *len without it), at most
 * WAITSTATE_FILE_MAX, malloc'd, and its modification time (Unix ms); NULL
 * with err (errno ENOENT: none).  Only a regular file is read. */
char *waitstate_load_file(const char *path, size_t *len, int64_t *mtime_ms, char *err,
                          size_t errlen);

#endif
