/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * options.h - the table of lockwatch config options and the value types
 * it is written in.
 *
 * One row per key says where the key lives ([agent], [target NAME], ...),
 * its type, its default (written as it would be in the file, so the same
 * parser reads the file and the defaults), its bounds, where the parsed
 * value is stored in the section's struct, and a line of help.  The loader
 * (config.c, configread.c), the -n dump (config_print) and the man page
 * all walk this table, so adding an option is one row in options.c and one
 * field in config.h.  The value types are a table too (optvalue.c, one
 * row of set/clear/format/describe per enum option_type); the functions
 * below that take a row dispatch through it.
 *
 * [classes] has no row: it is free-form "glob = name" pairs.
 */
#ifndef LOCKWATCH_OPTIONS_H
#define LOCKWATCH_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sections, in the order config_print writes them. */
enum config_section {
    SECTION_AGENT,
    SECTION_TARGET,             /* [target NAME], repeatable */
    SECTION_REDLOCK,            /* [redlock NAME], repeatable */
    SECTION_RULES,
    SECTION_CLASSES,            /* free-form, no option rows */
    SECTION_WEBHOOK,            /* [webhook NAME], repeatable */
    SECTION_UNLOCK,
    SECTION_SAMPLES,
    SECTION_COUNT
};

/*
 * Value types and what each stores at the row's offsets (off, size, off2,
 * off3 are relative to the section's struct: struct config for [agent],
 * [rules] and [unlock], struct target_conf, redlock_conf, webhook_conf for
 * the named sections):
 *   DURATION   int64_t milliseconds at off; "0" or a number with ms s m h d
 *   INT        signed integer of `size` bytes (4 or 8) at off
 *   PERCENT    double fraction (0, 1] at off, written "25%"
 *   BOOL       bool at off; names[] spells false/true for output
 *   STRING     char * at off, never empty
 *   HOSTPORT   char host[size] at off, int port at off2; with OPT_OFF also
 *              "off", which sets the bool at off3
 *   HOSTPORTS  struct hostport * at off, size_t count at off2
 *   REDIS_URL  [target] only: url, user, host, port, db of target_conf
 *   HTTP_URL   char * at off, http:// or https://
 *   LIST       char ** at off, size_t count at off2 (may be 0)
 *   FORMAT_PATTERNS  "glob=format" pairs: char **globs at off, size_t
 *              count at off2, char **formats at off3 (each one of names[])
 *   ENUM       enum of `size` bytes at off; names[] in value order
 *   FILE       char *path at off, char *contents at off2 (a secret: the
 *              file is read at load time, contents are never printed)
 *   PEM        as FILE, for a PEM file (certificate, CA bundle, private
 *              key): read whole at load time, never printed
 *   SHARD      "I/N": int I at off, int N at off2 (0 <= I < N <= max)
 */
enum option_type {
    OPT_DURATION,
    OPT_INT,
    OPT_PERCENT,
    OPT_BOOL,
    OPT_STRING,
    OPT_HOSTPORT,
    OPT_HOSTPORTS,
    OPT_REDIS_URL,
    OPT_HTTP_URL,
    OPT_LIST,
    OPT_FORMAT_PATTERNS,
    OPT_ENUM,
    OPT_FILE,
    OPT_PEM,
    OPT_SHARD,
    OPT_TYPE_COUNT              /* not a type: sizes the table in optvalue.c */
};

/* DURATION bounds are milliseconds; rows spell them with these. */
#define MS_S 1000LL
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)

#define OPT_REQUIRED 0x1u       /* every instance of the section must set it */
#define OPT_OFF      0x2u       /* HOSTPORT: "off" is allowed */

struct config_option {
    enum config_section section;
    const char *key;
    enum option_type type;
    const char *def;            /* default as written in the file; NULL: unset */
    int64_t min, max;           /* DURATION (ms) and INT bounds, inclusive; FILE: min bytes */
    unsigned flags;             /* OPT_* */
    const char *const *names;   /* ENUM values / BOOL spelling, NULL-terminated */
    size_t off, size, off2, off3;
    const char *example;        /* for messages and the man page when def is NULL */
    const char *holds;          /* FILE: what the file holds, "the password" */
    const char *help;           /* one line, for the man page and INI comments */
};

/* The table, in print order within each section.  Read-only. */
extern const struct config_option config_options[];
extern const size_t config_noptions;

/* "agent", "target", ... */
const char *config_section_name(enum config_section s);
/* True for the sections written [kind NAME]. */
bool config_section_named(enum config_section s);

/* "duration", "integer", ... for the man page; "?" for a value that is
 * not a type. */
const char *option_type_name(enum option_type t);

/*
 * What values the option takes, e.g. "a duration from 100ms to 1d" or
 * "standalone, cluster or sentinel", for the man page.  Always
 * NUL-terminates buf (cut when too small).
 */
void option_describe(const struct config_option *o, char *buf, size_t len);

/*
 * Parse VALUE (already trimmed, as inih hands it over) for option O and
 * store it into BASE, the struct of O's section, replacing and freeing any
 * earlier value.  Returns 0, or -1 with why set to "what is wrong (what is
 * allowed)", without the file/line/key prefix.  A value that may hold a
 * secret (a URL with a password) is not repeated in why.  Nothing in BASE
 * changes on failure.
 */
int option_set(const struct config_option *o, void *base, const char *value,
               char *why, size_t whylen);

/*
 * Write O's value in BASE as it would be written in the file (secrets:
 * the file path, never the contents).  compact joins lists with "," rather
 * than ", ".  Returns 1 when written, 0 when the option is unset (nothing
 * to write), -1 when buf is too small (or out of memory); on 0 and -1 buf
 * holds "".
 */
int option_format(const struct config_option *o, const void *base, bool compact,
                  char *buf, size_t len);

/* Free what option_set stored for O in BASE (secrets are wiped first) and
 * zero the fields.  Safe on fields never set. */
void option_clear(const struct config_option *o, void *base);

/* Milliseconds as the shortest exact duration: 90000 -> "90s", 0 -> "0s". */
void option_format_duration(int64_t ms, char *buf, size_t len);

#endif
